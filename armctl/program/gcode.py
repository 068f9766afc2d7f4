"""Reading a G-code drawing: G0/G1/G2/G3 in the XY plane, G20/G21, G90/G91, the pen down by Z <= 0 or M3/M4, up by
Z > 0 or M5 (a file with neither draws its G1-G3 moves and travels on G0), as ``Drawing`` strokes in mm; every
stroke and primitive keeps its line."""

from __future__ import annotations

import math
import re

import numpy as np

from armctl.core import limits
from armctl.errors import BadInputError
from armctl.program.strokes import Arc, Drawing

_WORD = re.compile(r"([A-Za-z])\s*([-+]?(?:\d+\.?\d*|\.\d+))")
_IGNORED_G = {4, 17, 40, 49, 54, 61, 64, 80, 94}
_IGNORED_M = {0, 1, 2, 6, 7, 8, 9, 30}


# A pen command (M3/M4/M5) or a Z word outside comments: "(...)" on its line before it is closed, or after ";".
_GCODE_PEN = re.compile(r"(?im)^(?:[^;(\n]|\([^)\n]*\))*?\b(?:M0*[345]\b|Z\s*[-+.\d])")


def parse_gcode(text: str, source: str = "<gcode>") -> Drawing:
    """G0/G1/G2/G3 in the XY plane into strokes (mm). Pen: Z <= 0 or M3/M4 down, Z > 0 or M5 up; a file
    with no Z and no M3/M5 draws G1-G3 and travels on G0. Unknown commands are refused with their line."""
    reader = _Reader(source, uses_pen=_GCODE_PEN.search(text) is not None)  # one scan in C, not a pass in Python
    for no, raw in enumerate(_lines(text), 1):  # line by line: a huge file is refused without a list of it
        reader.line(no, raw)
    reader.end_stroke()
    reader.d.speed_m_s = reader.feed
    return reader.d


class _Reader:
    """A G-code file read line by line: the modal state (units, absolute, motion mode, pen, feed), the position
    and the stroke being drawn."""

    def __init__(self, source: str, uses_pen: bool):
        self.source, self.uses_pen = source, uses_pen
        self.d = Drawing(source=source, unit_m=0.001)
        self.pos = np.zeros(2)
        self.scale = 1.0  # mm per unit (G20: 25.4)
        self.absolute = True
        self.mode = None
        self.pen = False
        self.stroke = None  # (start, prims)
        self.feed = None
        self.zpos = None  # the pen's Z (mm): <= 0 is down
        self.lines_of: list[int] = []  # the line of the stroke's start, then of each of its primitives
        self.pos_line = 0  # the line that moved to pos
        self.prims, self.max_moves = 0, limits.get("moves")

    def bad(self, no: int, why: str) -> BadInputError:
        return BadInputError(f"{self.source}:{no}: {why}")

    def end_stroke(self) -> None:
        """The stroke being drawn, if it drew anything, into the drawing; no stroke after."""
        if self.stroke is not None and self.stroke[1]:
            self.d.strokes.append(self.stroke)
            self.d.origins.append((f"lines {self.lines_of[0]}-{self.lines_of[-1]}", list(self.lines_of)))
        self.stroke = None

    def line(self, no: int, raw: str) -> None:
        line = _strip(raw).strip()
        if not line or line.startswith("%"):
            return
        words = _WORD.findall(line)
        rest = _WORD.sub("", line).strip()
        if rest:
            raise self.bad(no, f"cannot read {rest!r} (G-code words are a letter and a number)")
        vals, pen_cmd, move = self.words(no, words)
        self.modes(no, vals, pen_cmd, move)
        if "X" in vals or "Y" in vals:
            self.move_to(no, vals)
        elif any(k in vals for k in "IJR"):
            raise self.bad(no, "an arc (I, J or R) needs its end point X/Y")

    def words(self, no: int, words: list) -> tuple[dict, bool | None, int | None]:
        """(the values of X Y Z I J R F, the pen command, the motion G code) of a line's words; G20/G21 and G90/G91
        take effect at once."""
        vals: dict[str, float] = {}
        pen_cmd = move = None
        for letter, num in words:
            letter = letter.upper()
            v = float(num)
            if letter == "G":
                move = self.g_word(no, v, move)
            elif letter == "M":
                pen_cmd = _m_word(no, v, pen_cmd, self.bad)
            elif letter in "XYZIJRF":
                if letter in vals:
                    raise self.bad(no, f"{letter} given twice")
                vals[letter] = v
            elif letter not in "NSTP":  # line numbers, spindle speed, tool, dwell time: nothing to draw
                raise self.bad(no, f"{letter}{num}: unknown word")
        return vals, pen_cmd, move

    def g_word(self, no: int, v: float, move: int | None) -> int | None:
        code = round(v, 1)
        if code in (0, 1, 2, 3):
            return int(code)
        if code in (20, 21):
            self.scale = 25.4 if code == 20 else 1.0
        elif code in (90, 91):
            self.absolute = code == 90
        elif code in (18, 19):
            raise self.bad(no, f"G{code:g}: armctl draws in the XY plane (G17) only")
        elif code not in _IGNORED_G:
            raise self.bad(no, f"G{code:g} is not a command armctl draws (G0-G3, G20/G21, G90/G91)")
        return move

    def modes(self, no: int, vals: dict, pen_cmd: bool | None, move: int | None) -> None:
        """The feed, the pen (M3/M5, Z, or the motion mode when the file has neither) and the motion mode; a change
        of the pen ends the stroke."""
        if "F" in vals:
            if vals["F"] <= 0:
                raise self.bad(no, f"F{vals['F']:g}: a feed rate must be > 0")
            self.feed = vals["F"] * self.scale / 60000.0  # mm/min -> m/s
        new_pen = self.pen if pen_cmd is None else pen_cmd
        if "Z" in vals:
            z = vals["Z"] * self.scale
            self.zpos = z if self.absolute else (self.zpos or 0.0) + z
            new_pen = self.zpos <= 0.0
        if move is not None:
            self.mode = move
        if not self.uses_pen and self.mode is not None:
            new_pen = self.mode != 0
        if new_pen != self.pen:
            self.end_stroke()
            self.pen = new_pen

    def move_to(self, no: int, vals: dict) -> None:
        """A G0-G3 move to the line's X/Y: a primitive of the stroke while the pen is down."""
        if self.mode is None:
            raise self.bad(no, "X/Y before any G0/G1/G2/G3")
        x = vals.get("X", self.pos[0] / self.scale if self.absolute else 0.0) * self.scale
        y = vals.get("Y", self.pos[1] / self.scale if self.absolute else 0.0) * self.scale
        end = np.array([x, y]) if self.absolute else self.pos + np.array([x, y])
        for k in ("X", "Y", "I", "J", "R"):
            if k in vals and not math.isfinite(vals[k]):
                raise self.bad(no, f"{k} must be a finite number")
        self.prims += 1
        if self.prims > self.max_moves:
            raise limits.LimitError(f"more than {self.max_moves} moves", limit="moves", path=self.source, line=no)
        prim = end.copy()
        if self.mode in (2, 3):
            prim = _gcode_arc(self.pos, end, vals, self.scale, self.mode == 3, lambda why: self.bad(no, why))
        if self.pen:
            if self.stroke is None:
                self.stroke = (self.pos.copy(), [])
                self.lines_of = [self.pos_line]
            self.stroke[1].append(prim)
            self.lines_of.append(no)
        self.pos, self.pos_line = end, no


def _m_word(no: int, v: float, pen_cmd: bool | None, bad) -> bool | None:
    code = int(v)
    if code in (3, 4):
        return True
    if code == 5:
        return False
    if code not in _IGNORED_M:
        raise bad(no, f"M{code} is not a command armctl draws with (M3/M4 pen down, M5 pen up)")
    return pen_cmd


def _lines(text: str):
    """The lines of ``text``, one at a time (no list of a million lines, no copy of the text)."""
    start = 0
    while start < len(text):
        end = text.find("\n", start)
        if end < 0:
            end = len(text)
        yield text[start:end]
        start = end + 1


def _strip(line: str) -> str:
    """A G-code line without its comments: ``(...)`` and ``; ...``."""
    return re.sub(r"\([^)]*\)", " ", line.split(";", 1)[0])


def _gcode_arc(p0, p1, vals, scale, ccw: bool, bad):
    if "R" in vals:
        r = abs(vals["R"]) * scale
        chord = p1 - p0
        c = math.hypot(*chord)
        if c == 0 or c > 2 * r + 1e-9:
            raise bad(f"an arc of radius {r:g} mm cannot join points {c:g} mm apart")
        h = math.sqrt(max(r * r - c * c / 4, 0.0))
        mid = (p0 + p1) / 2
        n = np.array([-chord[1], chord[0]]) / c
        # G2/G3 with R > 0: the shorter arc; R < 0: the longer one
        sign = (1.0 if ccw else -1.0) * (1.0 if vals["R"] > 0 else -1.0)
        centre = mid + sign * h * n
    else:
        if "I" not in vals and "J" not in vals:
            raise bad("an arc (G2/G3) needs I/J (the centre from the start) or R")
        centre = p0 + np.array([vals.get("I", 0.0), vals.get("J", 0.0)]) * scale
    r0 = math.hypot(*(p0 - centre))
    r1 = math.hypot(*(p1 - centre))
    if r0 <= 0 or abs(r1 - r0) > max(0.005 * r0, 0.01):
        raise bad(f"the arc's end is {abs(r1 - r0):.3f} mm off its circle (start radius {r0:.3f} mm)")
    a0 = math.atan2(p0[1] - centre[1], p0[0] - centre[0])
    a1 = math.atan2(p1[1] - centre[1], p1[0] - centre[0])
    sweep = a1 - a0
    if ccw:
        while sweep <= 1e-12:
            sweep += 2 * math.pi
    else:
        while sweep >= -1e-12:
            sweep -= 2 * math.pi
    return Arc(float(centre[0]), float(centre[1]), r0, a0, sweep)
