"""The printed board is at scale: the PDF's page and the board image drawn on it measure what the spec says (read
back from the file's own numbers), the board image in it is a board OpenCV detects; the PNG's DPI is in the file
and the board and the 100 mm bar measure right at that DPI."""

import re
import struct
import zlib

import numpy as np
import pytest

from armctl.errors import BadInputError
from armctl.vision.board import parse_board
from armctl.vision.boardprint import write_board
from tests.helpers import require_module

cv2 = require_module("cv2", "the camera features need OpenCV (pip install 'armctl[camera]')")

PT_MM = 25.4 / 72


def _detect(gray, spec):
    board = cv2.aruco.CharucoBoard(
        (spec.cols, spec.rows),
        spec.square_m,
        spec.marker_m,
        cv2.aruco.getPredefinedDictionary(getattr(cv2.aruco, f"DICT_{spec.dictionary.upper()}")),
    )
    gray = cv2.copyMakeBorder(gray, 40, 40, 40, 40, cv2.BORDER_CONSTANT, value=255)
    _, ids, _, _ = cv2.aruco.CharucoDetector(board).detectBoard(gray)
    return 0 if ids is None else len(ids)


@pytest.mark.parametrize("text", ["charuco:7x5@30mm/22mm:5x5_100", "charuco:5x4@15mm/11mm:4x4_50"])
def test_pdf_page_and_board_are_exact_millimetres(tmp_path, text):
    spec = parse_board(text)
    data = write_board(spec, tmp_path / "board.pdf", dpi=200).read_bytes()
    assert data.startswith(b"%PDF-") and data.rstrip().endswith(b"%%EOF")
    w_pt, h_pt = map(float, re.search(rb"/MediaBox \[0 0 ([\d.]+) ([\d.]+)\]", data).groups())
    bw, bh = spec.cols * spec.square_m * 1000, spec.rows * spec.square_m * 1000
    assert w_pt * PT_MM == pytest.approx(max(bw, 150) + 20, abs=0.01) and h_pt * PT_MM > bh + 20
    iw, _, _, ih, x, y = map(
        float, re.search(rb"q ([\d.]+) ([\d.]+) ([\d.]+) ([\d.]+) ([\d.]+) ([\d.]+) cm /Im0 Do", data).groups()
    )
    assert (iw * PT_MM, ih * PT_MM) == (pytest.approx(bw, abs=0.01), pytest.approx(bh, abs=0.01))
    assert 0 < x and x + iw < w_pt and 0 < y and y + ih < h_pt  # the board lies inside the page, with a margin
    bar = re.search(rb"0 g ([\d.]+) ([\d.]+) ([\d.]+) ([\d.]+) re f", data)
    assert float(bar.group(3)) * PT_MM == pytest.approx(100.0, abs=0.01)
    assert f"({spec.text}: ".encode() in data  # the spec printed in the margin
    head = re.search(rb"/Width (\d+) /Height (\d+) .*?/Length (\d+) >>\nstream\n", data)
    w, h, n = map(int, head.groups())
    pixels = np.frombuffer(zlib.decompress(data[head.end() : head.end() + n]), np.uint8).reshape(h, w)
    assert w == round(bw / 25.4 * 200)
    assert _detect(pixels, spec) == spec.inner_corners  # the image is the board, every corner found


def _png_chunks(data: bytes) -> dict:
    out, i = {}, 8
    while i < len(data):
        (n,) = struct.unpack(">I", data[i : i + 4])
        kind, body = data[i + 4 : i + 8], data[i + 8 : i + 8 + n]
        assert struct.unpack(">I", data[i + 8 + n : i + 12 + n])[0] == zlib.crc32(kind + body)
        out.setdefault(kind, body)
        i += 12 + n
    return out


def _longest_dark_run(row: np.ndarray) -> int:
    dark = np.concatenate([[0], (row < 128).astype(np.int8), [0]])
    edges = np.flatnonzero(np.diff(dark))
    return int(np.max(edges[1::2] - edges[::2])) if len(edges) else 0


@pytest.mark.parametrize("dpi", [150, 300])
def test_png_carries_its_dpi_and_measures_right(tmp_path, dpi):
    spec = parse_board(None)
    data = write_board(spec, tmp_path / "board.png", dpi=dpi).read_bytes()
    ppx, ppy, unit = struct.unpack(">IIB", _png_chunks(data)[b"pHYs"])
    assert unit == 1 and ppx == ppy and ppx * 0.0254 == pytest.approx(dpi, rel=1e-4)  # whole pixels per metre
    gray = cv2.imdecode(np.frombuffer(data, np.uint8), cv2.IMREAD_GRAYSCALE)
    mm = dpi / 25.4  # pixels per millimetre
    assert gray.shape[1] == round(230 * mm)
    rows = np.flatnonzero((gray < 128).any(axis=1))
    top = rows[0]
    board_rows = rows[rows < top + 150 * mm + 2]
    cols = np.flatnonzero((gray[board_rows] < 128).any(axis=0))
    assert (cols[-1] - cols[0] + 1) / mm == pytest.approx(210, abs=0.15)
    assert (board_rows[-1] - top + 1) / mm == pytest.approx(150, abs=0.15)
    below = gray[int(top + 152 * mm) :]
    bar = max(_longest_dark_run(r) for r in below)
    assert bar / mm == pytest.approx(100, abs=1 / mm)  # to the pixel (each end rounded to one)
    assert _detect(gray[top : board_rows[-1] + 1, cols[0] : cols[-1] + 1], spec) == spec.inner_corners


def test_a_bad_output_or_dpi_is_refused(tmp_path):
    spec = parse_board(None)
    with pytest.raises(BadInputError, match="give a .pdf or .png file"):
        write_board(spec, tmp_path / "board.svg")
    with pytest.raises(BadInputError, match="--dpi 10: give 72..1200"):
        write_board(spec, tmp_path / "board.png", dpi=10)
    with pytest.raises(BadInputError, match="cannot write it"):
        (tmp_path / "file").write_text("")
        write_board(spec, tmp_path / "file" / "board.pdf")  # a file where its folder should be
