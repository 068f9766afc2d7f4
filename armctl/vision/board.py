"""ChArUco boards: the spec the user types (``charuco:7x5@30mm/22mm:5x5_100``), OpenCV's board and its detector.

A spec is ``charuco:COLSxROWS@SQUARE/MARKER[:DICT]``: columns x rows of chessboard squares, the side of a square
and of the ArUco marker inside each white square (with a unit: ``30mm``, ``3cm``, ``0.03m``), and the ArUco
dictionary the markers come from (``4x4_50`` .. ``7x7_1000`` or ``aruco_original``; ``5x5_100``, OpenCV's
``DICT_5X5_100``, when left out). ``parse_board`` reads it without OpenCV; a bad part is one line naming it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from armctl.core.units import parse_length
from armctl.errors import BadInputError
from armctl.vision.sources import need_cv2

DEFAULT_BOARD = "charuco:7x5@30mm/22mm:5x5_100"
DEFAULT_DICTIONARY = "5x5_100"

#: dictionary name -> how many markers it holds (OpenCV's ``cv2.aruco.DICT_<NAME>``)
DICTIONARIES: dict[str, int] = {f"{n}x{n}_{count}": count for n in (4, 5, 6, 7) for count in (50, 100, 250, 1000)}
DICTIONARIES["aruco_original"] = 1024

_SHAPE = re.compile(r"^(\d+)x(\d+)$", re.IGNORECASE)
_UNIT = re.compile(r"[a-z]+$", re.IGNORECASE)
MAX_SQUARES = 100  # along one side: far beyond any printed board


@dataclass(frozen=True)
class BoardSpec:
    """A ChArUco board: ``cols`` x ``rows`` squares of ``square_m``, markers of ``marker_m``, ``dictionary``."""

    cols: int
    rows: int
    square_m: float
    marker_m: float
    dictionary: str = DEFAULT_DICTIONARY

    @property
    def text(self) -> str:
        """The spec as armctl writes it (``charuco:7x5@30mm/22mm:5x5_100``)."""
        return f"charuco:{self.cols}x{self.rows}@{_mm(self.square_m)}/{_mm(self.marker_m)}:{self.dictionary}"

    @property
    def size_m(self) -> tuple[float, float]:
        """The board's width and height (the squares only), metres."""
        return self.cols * self.square_m, self.rows * self.square_m

    @property
    def markers(self) -> int:
        """How many markers the board holds (one in every white square)."""
        return self.cols * self.rows // 2

    @property
    def inner_corners(self) -> int:
        """How many chessboard corners (where four squares meet) the board has: what calibration uses."""
        return (self.cols - 1) * (self.rows - 1)

    def __str__(self) -> str:
        return self.text


def _mm(metres: float) -> str:
    return f"{metres * 1000:.6g}mm"


def parse_board(text: str | None, *, what: str = "--board") -> BoardSpec:
    """The board ``text`` names (see the module docstring; None or "": the default board). BadInputError naming the
    part that is wrong."""
    text = (text or DEFAULT_BOARD).strip()
    form = "charuco:COLSxROWS@SQUARE/MARKER:DICT, e.g. " + DEFAULT_BOARD
    kind, _, rest = text.partition(":")
    if kind.lower() != "charuco" or not rest:
        raise BadInputError(f"{what} {text}: not a board spec; write {form}")
    shape, at, rest = rest.partition("@")
    sizes, _, dictionary = rest.partition(":")
    m = _SHAPE.match(shape.strip())
    if not m or not at:
        raise BadInputError(
            f"{what} {text}: {shape!r} is not COLSxROWS (squares across x down, e.g. 7x5); write {form}"
        )
    cols, rows = int(m.group(1)), int(m.group(2))
    if not (2 <= cols <= MAX_SQUARES and 2 <= rows <= MAX_SQUARES) or cols * rows < 6:
        raise BadInputError(f"{what} {text}: {cols}x{rows} squares: a board has 2..{MAX_SQUARES} squares a side")
    square_m, marker_m = _sizes(text, sizes, what)
    name = _dictionary(text, dictionary, what)
    spec = BoardSpec(cols, rows, square_m, marker_m, name)
    if spec.markers > DICTIONARIES[name]:
        raise BadInputError(
            f"{what} {text}: {cols}x{rows} squares need {spec.markers} markers, dictionary {name} has "
            f"{DICTIONARIES[name]}: choose a larger one (e.g. {name.split('_')[0]}_1000)"
        )
    return spec


def _sizes(text: str, sizes: str, what: str) -> tuple[float, float]:
    """SQUARE/MARKER in metres; each needs a unit (30mm, 3cm, 0.03m), the marker smaller than the square."""
    square, slash, marker = sizes.partition("/")
    if not slash:
        raise BadInputError(f"{what} {text}: {sizes!r} is not SQUARE/MARKER (e.g. 30mm/22mm)")
    out = []
    for part, name in ((square, "square"), (marker, "marker")):
        part = part.strip()
        if not _UNIT.search(part):
            raise BadInputError(f"{what} {text}: {name} size {part!r} has no unit: write e.g. 30mm or 0.03m")
        value = parse_length(part, what=f"{what} {text}: {name} size")
        if not 0.001 <= value <= 1.0:
            raise BadInputError(f"{what} {text}: {name} size {part} is outside 1 mm .. 1 m")
        out.append(value)
    if out[1] >= out[0]:
        raise BadInputError(f"{what} {text}: the marker ({marker}) must be smaller than its square ({square})")
    return out[0], out[1]


def _dictionary(text: str, name: str, what: str) -> str:
    key = name.strip().lower().removeprefix("dict_") or DEFAULT_DICTIONARY
    if key not in DICTIONARIES:
        raise BadInputError(
            f"{what} {text}: {name!r} is not an ArUco dictionary; one of 4x4_50 .. 7x7_1000 (4x4..7x7 bits, 50, 100, "
            "250 or 1000 markers) or aruco_original"
        )
    return key


def charuco_board(spec: BoardSpec):
    """OpenCV's ``CharucoBoard`` of ``spec`` (object points in metres, on z = 0)."""
    from armctl.vision.markers import aruco_dictionary

    cv2 = need_cv2()
    return cv2.aruco.CharucoBoard(
        (spec.cols, spec.rows), spec.square_m, spec.marker_m, aruco_dictionary(spec.dictionary)
    )


def board_image(spec: BoardSpec, px_per_square: int) -> np.ndarray:
    """The board's picture (gray uint8, the squares only, no margin), ``px_per_square`` pixels a square."""
    w, h = spec.cols * px_per_square, spec.rows * px_per_square
    return charuco_board(spec).generateImage((w, h), marginSize=0, borderBits=1)


def charuco_detector(spec: BoardSpec):
    """OpenCV's ChArUco detector for ``spec``: its ``detectBoard(gray)`` gives the chessboard corners it found."""
    return need_cv2().aruco.CharucoDetector(charuco_board(spec))
