"""A ChArUco board to print, at scale: ``armctl camera board -o board.pdf|png``.

The page is the board (its squares exactly ``COLS x square`` by ``ROWS x square``) with a white margin, and in the
margin the board's spec and a 100 mm scale bar with 10 mm ticks, to measure after printing: a printer that
scaled the page ("fit to page") is seen at once. The PDF's page is that size (its MediaBox, in points of 1/72
inch), the board drawn as one image placed at its size in millimetres exactly, the text and bar as vector
drawing (Helvetica, no font embedded). The PNG is the same page rasterized at ``dpi`` with that resolution in the
file (its ``pHYs`` chunk), so an image viewer prints it at scale too.
"""

from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from armctl.core.paths import atomic_write
from armctl.errors import BadInputError
from armctl.vision.board import BoardSpec, charuco_board
from armctl.vision.sources import need_cv2

MARGIN_MM = 10.0
BAR_MM = 100.0
MIN_WIDTH_MM = 150.0  # the lines of text below the board fit in this
TEXT_MM = 2.8  # the text's size (8 pt)
MM_PT = 72.0 / 25.4  # points per millimetre
DEFAULT_DPI = 300
DPI_RANGE = (72, 1200)


@dataclass(frozen=True)
class Page:
    """Where things are on the page, millimetres from its bottom-left corner."""

    width: float
    height: float
    board_x: float
    board_y: float
    board_w: float
    board_h: float
    bar_y: float
    lines: tuple[tuple[float, str], ...]  # (baseline y, text)


def page_of(spec: BoardSpec) -> Page:
    """The page of board ``spec`` (see the module docstring)."""
    bw, bh = spec.size_m[0] * 1000, spec.size_m[1] * 1000
    width = max(bw, MIN_WIDTH_MM) + 2 * MARGIN_MM
    height = bh + 2 * MARGIN_MM + 26.0
    sq, mk = spec.square_m * 1000, spec.marker_m * 1000
    lines = (
        (MARGIN_MM + 4.5, "Print at 100% (actual size, not 'fit to page'): the bar above must measure 100 mm."),
        (
            MARGIN_MM + 9.0,
            f"{spec.text}: {spec.cols}x{spec.rows} squares of {sq:g} mm, markers {mk:g} mm, "
            f"DICT_{spec.dictionary.upper()}",
        ),
    )
    bar_y = MARGIN_MM + 15.0
    return Page(width, height, (width - bw) / 2, height - MARGIN_MM - bh, bw, bh, bar_y, lines)


def board_pixels(spec: BoardSpec, dpi: int) -> np.ndarray:
    """The board (squares only) at ``dpi`` dots per inch, gray uint8."""
    w = max(1, round(spec.size_m[0] / 0.0254 * dpi))
    h = max(1, round(spec.size_m[1] / 0.0254 * dpi))
    return charuco_board(spec).generateImage((w, h), marginSize=0, borderBits=1)


def check_dpi(dpi: int) -> int:
    if not DPI_RANGE[0] <= dpi <= DPI_RANGE[1]:
        raise BadInputError(f"--dpi {dpi}: give {DPI_RANGE[0]}..{DPI_RANGE[1]} dots per inch")
    return dpi


def write_board(spec: BoardSpec, path: str | Path, *, dpi: int = DEFAULT_DPI) -> Path:
    """Write the board's page to ``path`` (.pdf or .png, by its suffix). BadInputError for another suffix or a
    place that cannot be written."""
    path = Path(path)
    kind = path.suffix.lower()
    if kind not in (".pdf", ".png"):
        raise BadInputError(f"-o {path}: give a .pdf or .png file")
    check_dpi(dpi)
    data = board_pdf(spec, dpi) if kind == ".pdf" else board_png(spec, dpi)
    try:
        return atomic_write(path, data)
    except OSError as exc:
        raise BadInputError(f"-o {path}: cannot write it: {exc.strerror or exc}") from None


# --- PDF --------------------------------------------------------------------------------------------------------


def _pdf_text(text: str) -> str:
    return text.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")


def _pdf_content(page: Page) -> str:
    def pt(mm: float) -> str:
        return f"{mm * MM_PT:.4f}"

    x0 = (page.width - BAR_MM) / 2
    ops = [f"q {pt(page.board_w)} 0 0 {pt(page.board_h)} {pt(page.board_x)} {pt(page.board_y)} cm /Im0 Do Q"]
    ops.append(f"0 g {pt(x0)} {pt(page.bar_y)} {pt(BAR_MM)} {pt(1.5)} re f")
    ops.append(f"0 G {pt(0.25)} w")
    for i in range(11):  # ticks every 10 mm, above the bar
        x = x0 + 10.0 * i
        ops.append(f"{pt(x)} {pt(page.bar_y + 1.5)} m {pt(x)} {pt(page.bar_y + (4.0 if i % 5 == 0 else 3.0))} l S")
    size = pt(TEXT_MM)
    ops.append(f"BT /F1 {size} Tf {pt(x0 - 1.0)} {pt(page.bar_y + 5.0)} Td (0) Tj ET")
    ops.append(f"BT /F1 {size} Tf {pt(x0 + BAR_MM - 3.0)} {pt(page.bar_y + 5.0)} Td (100 mm) Tj ET")
    for y, text in page.lines:
        ops.append(f"BT /F1 {size} Tf {pt(MARGIN_MM)} {pt(y)} Td ({_pdf_text(text)}) Tj ET")
    return "\n".join(ops) + "\n"


def board_pdf(spec: BoardSpec, dpi: int = DEFAULT_DPI) -> bytes:
    """The PDF of the board's page (one page, exactly its size; see the module docstring)."""
    page = page_of(spec)
    img = board_pixels(spec, dpi)
    content = _pdf_content(page).encode("latin-1")
    pixels = zlib.compress(np.ascontiguousarray(img).tobytes(), 9)
    w_pt, h_pt = page.width * MM_PT, page.height * MM_PT
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        (
            f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 {w_pt:.4f} {h_pt:.4f}] /Contents 4 0 R "
            "/Resources << /XObject << /Im0 5 0 R >> /Font << /F1 6 0 R >> >> >>"
        ).encode(),
        b"<< /Length %d >>\nstream\n" % len(content) + content + b"\nendstream",
        (
            f"<< /Type /XObject /Subtype /Image /Width {img.shape[1]} /Height {img.shape[0]} /ColorSpace /DeviceGray "
            f"/BitsPerComponent 8 /Interpolate false /Filter /FlateDecode /Length {len(pixels)} >>\nstream\n"
        ).encode()
        + pixels
        + b"\nendstream",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>",
    ]
    out = bytearray(b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
    offsets = []
    for i, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % i + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % o for o in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref)
    return bytes(out)


# --- PNG --------------------------------------------------------------------------------------------------------


def board_page_pixels(spec: BoardSpec, dpi: int = DEFAULT_DPI) -> np.ndarray:
    """The board's page rasterized at ``dpi`` (gray uint8; row 0 is the top of the page)."""
    cv2 = need_cv2()
    page = page_of(spec)
    scale = dpi / 25.4

    def px(x_mm: float, y_mm: float) -> tuple[int, int]:  # page mm (from the bottom) -> pixel (from the top)
        return round(x_mm * scale), round((page.height - y_mm) * scale)

    out = np.full((round(page.height * scale), round(page.width * scale)), 255, np.uint8)
    board = board_pixels(spec, dpi)
    x, y = px(page.board_x, page.board_y + page.board_h)
    out[y : y + board.shape[0], x : x + board.shape[1]] = board
    x0 = (page.width - BAR_MM) / 2
    (left, top), (right, bottom) = px(x0, page.bar_y + 1.5), px(x0 + BAR_MM, page.bar_y)
    out[top:bottom, left:right] = 0  # the bar: exactly round(100 mm * dpi / 25.4) pixels long
    thick = max(1, round(0.25 * scale))
    for i in range(11):  # the ticks stand on the bar (they do not widen it)
        xt = x0 + 10.0 * i
        cv2.line(out, px(xt, page.bar_y + 1.5 + 0.5), px(xt, page.bar_y + (4.0 if i % 5 == 0 else 3.0)), 0, thick)
    font_scale = TEXT_MM * 0.72 * scale / cv2.getTextSize("H", cv2.FONT_HERSHEY_SIMPLEX, 1.0, 1)[0][1]  # cap height
    labels = [(x0 - 1.0, page.bar_y + 5.0, "0"), (x0 + BAR_MM - 3.0, page.bar_y + 5.0, "100 mm")]
    for xt, yt, text in labels + [(MARGIN_MM, y, t) for y, t in page.lines]:
        cv2.putText(out, text, px(xt, yt), cv2.FONT_HERSHEY_SIMPLEX, font_scale, 0, thick, cv2.LINE_AA)
    return out


def _png_chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)


def board_png(spec: BoardSpec, dpi: int = DEFAULT_DPI) -> bytes:
    """The PNG of the board's page at ``dpi``, the resolution in its ``pHYs`` chunk (pixels per metre)."""
    cv2 = need_cv2()
    ok, encoded = cv2.imencode(".png", board_page_pixels(spec, dpi))
    if not ok:
        raise BadInputError("OpenCV could not encode the board as PNG")
    raw = encoded.tobytes()
    ppm = round(dpi / 0.0254)
    ihdr_end = 8 + 8 + 13 + 4  # signature, IHDR's length and type, its 13 bytes, its CRC
    return raw[:ihdr_end] + _png_chunk(b"pHYs", struct.pack(">IIB", ppm, ppm, 1)) + raw[ihdr_end:]
