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
    uses_pen = _GCODE_PEN.search(text) is not None  # one scan in C, not a pass over every line in Python
    d = Drawing(source=source, unit_m=0.001)
    pos = np.zeros(2)
    scale = 1.0  # mm per unit (G20: 25.4)
    absolute = True
    mode = None
    pen = False
    stroke = None  # (start, prims)
    feed = None
    zpos = None  # the pen's Z (mm): <= 0 is down
    lines_of: list[int] = []  # the line of the stroke's start, then of each of its primitives
    pos_line = 0  # the line that moved to pos

    def done(stroke):
        d.strokes.append(stroke)
        d.origins.append((f"lines {lines_of[0]}-{lines_of[-1]}", list(lines_of)))

    def bad(no, why):
        return BadInputError(f"{source}:{no}: {why}")

    prims, max_moves = 0, limits.get("moves")

    for no, raw in enumerate(_lines(text), 1):  # line by line: a huge file is refused without a list of it
        line = _strip(raw).strip()
        if not line or line.startswith("%"):
            continue
        words = _WORD.findall(line)
        rest = _WORD.sub("", line).strip()
        if rest:
            raise bad(no, f"cannot read {rest!r} (G-code words are a letter and a number)")
        vals: dict[str, float] = {}
        pen_cmd = None
        move = None
        for letter, num in words:
            letter = letter.upper()
            v = float(num)
            if letter == "G":
                code = round(v, 1)
                if code in (0, 1, 2, 3):
                    move = int(code)
                elif code == 20:
                    scale = 25.4
                elif code == 21:
                    scale = 1.0
                elif code == 90:
                    absolute = True
                elif code == 91:
                    absolute = False
                elif code in (18, 19):
                    raise bad(no, f"G{code:g}: armctl draws in the XY plane (G17) only")
                elif code not in _IGNORED_G:
                    raise bad(no, f"G{code:g} is not a command armctl draws (G0-G3, G20/G21, G90/G91)")
            elif letter == "M":
                code = int(v)
                if code in (3, 4):
                    pen_cmd = True
                elif code == 5:
                    pen_cmd = False
                elif code not in _IGNORED_M:
                    raise bad(no, f"M{code} is not a command armctl draws with (M3/M4 pen down, M5 pen up)")
            elif letter in "XYZIJRF":
                if letter in vals:
                    raise bad(no, f"{letter} given twice")
                vals[letter] = v
            elif letter in "NSTP":
                continue  # line numbers, spindle speed, tool, dwell time: nothing to draw
            else:
                raise bad(no, f"{letter}{num}: unknown word")
        if "F" in vals:
            if vals["F"] <= 0:
                raise bad(no, f"F{vals['F']:g}: a feed rate must be > 0")
            feed = vals["F"] * scale / 60000.0  # mm/min -> m/s
        new_pen = pen
        if pen_cmd is not None:
            new_pen = pen_cmd
        if "Z" in vals:
            zpos = vals["Z"] * scale if absolute else (zpos or 0.0) + vals["Z"] * scale
            new_pen = zpos <= 0.0
        if move is not None:
            mode = move
        has_xy = "X" in vals or "Y" in vals
        if not uses_pen and mode is not None:
            new_pen = mode != 0
        if new_pen != pen:
            if stroke is not None and stroke[1]:
                done(stroke)
            stroke = None
            pen = new_pen
        if not has_xy:
            if any(k in vals for k in "IJR"):
                raise bad(no, "an arc (I, J or R) needs its end point X/Y")
            continue
        if mode is None:
            raise bad(no, "X/Y before any G0/G1/G2/G3")
        x = vals.get("X", pos[0] / scale if absolute else 0.0) * scale
        y = vals.get("Y", pos[1] / scale if absolute else 0.0) * scale
        end = np.array([x, y]) if absolute else pos + np.array([x, y])
        for k in ("X", "Y", "I", "J", "R"):
            if k in vals and not math.isfinite(vals[k]):
                raise bad(no, f"{k} must be a finite number")
        prims += 1
        if prims > max_moves:
            raise limits.LimitError(f"more than {max_moves} moves", limit="moves", path=source, line=no)
        prim = end.copy()
        if mode in (2, 3):
            prim = _gcode_arc(pos, end, vals, scale, mode == 3, lambda why, no=no: bad(no, why))
        if pen:
            if stroke is None:
                stroke = (pos.copy(), [])
                lines_of = [pos_line]
            stroke[1].append(prim)
            lines_of.append(no)
        pos, pos_line = end, no
    if stroke is not None and stroke[1]:
        done(stroke)
    d.speed_m_s = feed
    return d


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
