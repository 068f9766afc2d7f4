"""Drawing with the arm: SVG or G-code in, pen strokes on the paper, one plan checked whole.

``load_drawing(path)`` reads an SVG (every shape's outline: paths, lines, rectangles, circles, ellipses,
polygons, with their transforms; parsed by the svgelements library) or G-code (G0/G1/G2/G3 in the XY plane,
G20/G21, G90/G91, the pen down by Z <= 0 or M3/M4, up by Z > 0 or M5; a file with neither draws its G1-G3
moves and travels on G0). ``Paper`` says where it goes: the drawing plane (an arm on a base draws on the table
at a height z; a planar arm draws in its own vertical plane, on a board beside it, with a pen sticking out
sideways), the rectangle it is scaled into (uniformly, centred; none: its own size, centred on the home tool
point), how the pen lifts (the arm raises it ``pen_up_m`` along z, or a servo: ``pen="gripper"``, closed is
down), the speeds and the blend (the corners of a stroke rounded within ``blend_m``, default 0.2 mm: the pen
does not stop at every vertex). ``plan_drawing`` flattens the curves into polylines within ``tolerance_m`` on
the paper, turns the strokes into line moves (pen down, the stroke, pen up, travel) and plans them with
``armctl.motion``: every point reachable, every joint and speed limit, every keep-out zone, before anything
moves. The drawing's right is +x and its up +y in the drawing plane.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from armctl import motion
from armctl.core import limits
from armctl.errors import BadInputError, MotionError, UnreachableError
from armctl.model.kinematics import tool_point

SVG_SUFFIXES = (".svg",)
GCODE_SUFFIXES = (".gcode", ".nc", ".ngc", ".gc", ".g", ".tap")
DEFAULT_TOLERANCE_M = 0.00005  # 0.05 mm: curves flattened to within this on the paper
DEFAULT_PEN_UP_M = 0.010
DEFAULT_SPEED_M_S = 0.040
DEFAULT_BLEND_M = 0.0002  # 0.2 mm: the corners of a stroke are rounded within this (no blob at each vertex)
SVG_PX_MM = 25.4 / 96.0  # SVG user units (CSS px) in mm


def is_drawing(path) -> bool:
    """True for a file armctl draws (SVG or G-code), by its suffix."""
    return Path(str(path)).suffix.lower() in SVG_SUFFIXES + GCODE_SUFFIXES


# ---------------------------------------------------------------------------------------------- primitives


@dataclass
class _Arc:
    """A circular arc (G2/G3) in drawing units: centre, radius, start angle and sweep (rad, + counter-clockwise)."""

    cx: float
    cy: float
    r: float
    a0: float
    sweep: float

    def flatten(self, tol: float, budget: int | None = None) -> np.ndarray:
        step = 2.0 * math.acos(max(-1.0, 1.0 - tol / self.r)) if self.r > tol else math.pi / 2
        n = max(1, math.ceil(abs(self.sweep) / max(step, 1e-9)))
        if budget is not None and n > budget:
            raise _OverBudget
        a = self.a0 + np.linspace(0.0, self.sweep, n + 1)
        return np.stack([self.cx + self.r * np.cos(a), self.cy + self.r * np.sin(a)], axis=-1)[1:]


class _OverBudget(Exception):
    """A curve flattens to more points than the drawing has left (``limits`` 'moves')."""


@dataclass
class _Curve:
    """An svgelements segment (Arc, CubicBezier, QuadraticBezier), flattened by subdivision."""

    seg: object

    def flatten(self, tol: float, budget: int | None = None) -> np.ndarray:
        """Points along the curve after its start, each piece within ``tol`` of the curve: a piece is split in
        half until its quarter points lie within ``tol`` of its chord (at least 4 pieces, at most 18 halvings).
        Done level by level, every piece of a level in one evaluation of the curve (the same pieces and points as
        splitting one piece at a time, in a fraction of the time); _OverBudget past ``budget`` points."""
        cap = math.inf if budget is None else budget
        t0, t1 = np.array([0.0]), np.array([1.0])
        p0 = np.asarray(self.seg.npoint([0.0]), dtype=float).reshape(1, 2)
        p1 = np.asarray(self.seg.npoint([1.0]), dtype=float).reshape(1, 2)
        done_t, done_p = [], []
        depth, kept = 0, 0
        fr = np.array([0.25, 0.5, 0.75])
        while len(t0):
            ts = (t0[:, None] + (t1 - t0)[:, None] * fr[None, :]).ravel()
            mid = np.asarray(self.seg.npoint(ts), dtype=float).reshape(len(t0), 3, 2)
            d = p1 - p0
            n = np.hypot(d[:, 0], d[:, 1])
            rx, ry = mid[:, :, 0] - p0[:, None, 0], mid[:, :, 1] - p0[:, None, 1]
            on_chord = np.abs(rx * d[:, None, 1] - ry * d[:, None, 0]) / np.where(n > 0, n, 1.0)[:, None]
            dev = np.where((n > 0)[:, None], on_chord, np.hypot(rx, ry)).max(axis=1)
            accept = np.full(len(t0), depth >= 2) & ((dev <= tol) | (depth >= 18))
            done_t.append(t0[accept])
            done_p.append(p1[accept])
            kept += int(accept.sum())
            split = ~accept
            if kept + 2 * int(split.sum()) > cap:
                raise _OverBudget
            tm = 0.5 * (t0[split] + t1[split])
            pm = mid[split, 1]
            t0, t1 = np.concatenate([t0[split], tm]), np.concatenate([tm, t1[split]])
            p0, p1 = np.concatenate([p0[split], pm]), np.concatenate([pm, p1[split]])
            depth += 1
        order = np.argsort(np.concatenate(done_t), kind="stable")
        return np.concatenate(done_p)[order]


@dataclass
class Drawing:
    """A drawing as strokes (pen down from start to end); each stroke a start point and primitives: points
    (np arrays, a line to each) or curves with ``flatten(tol)``. Units: ``unit_m`` metres per drawing unit;
    ``y_down``: the drawing's y axis points down (SVG)."""

    source: str
    strokes: list = field(default_factory=list)  # [(start (2,), [primitive, ...]), ...]
    unit_m: float = 0.001
    y_down: bool = False
    speed_m_s: float | None = None  # a G-code file's feed rate, if it gives one
    # per stroke, where it is in the file: (what, lines): what names it ('<path id="A">, subpath 2 of 2'),
    # lines: the G-code line of its start, then of each primitive (None for an SVG)
    origins: list = field(default_factory=list)

    def polylines(self, tol: float) -> list[np.ndarray]:
        """Every stroke as a polyline (k, 2) in drawing units, curves within ``tol`` (drawing units)."""
        return [line for line, _ in self.located_polylines(tol)]

    def located_polylines(self, tol: float) -> list[tuple[np.ndarray, np.ndarray]]:
        """``polylines`` with, per point, the index of the stroke's primitive it ends (-1: the stroke's start)."""
        out = []
        cap = limits.get("moves")
        left = cap
        for i, (start, prims) in enumerate(self.strokes):
            pts = [np.asarray(start, dtype=float)[None, :]]
            of = [np.array([-1])]
            for j, p in enumerate(prims):
                try:
                    pts.append(p[None, :] if isinstance(p, np.ndarray) else p.flatten(tol, left))
                except _OverBudget:
                    pts.append(np.zeros((left + 1, 2)))
                left -= len(pts[-1])
                if left < 0:
                    what = self.origin(i)[0]
                    raise limits.LimitError(
                        f"stroke {i + 1}{f' ({what})' if what else ''}: the drawing's lines and curves come to more "
                        f"than {cap} points",
                        limit="moves",
                        path=self.source,
                    )
                of.append(np.full(len(pts[-1]), j))
            line, prim = np.concatenate(pts), np.concatenate(of)
            keep = np.concatenate([[True], np.hypot(*np.diff(line, axis=0).T) > 1e-12])
            if keep.sum() >= 1:
                out.append((line[keep], prim[keep]))
        return out

    def origin(self, i: int) -> tuple[str, list | None]:
        """Where stroke ``i`` (0-based) is in the file: (what, G-code lines of its start and primitives, or None)."""
        return self.origins[i] if i < len(self.origins) else ("", None)

    def bbox(self) -> tuple[np.ndarray, np.ndarray]:
        """(lo, hi) corners of the drawing (drawing units)."""
        coarse = self.polylines(1e-9 + 1e-4 * max(1e-9, self._extent()))
        allp = np.concatenate(coarse)
        return allp.min(axis=0), allp.max(axis=0)

    def _extent(self) -> float:
        pts = [np.asarray(s, dtype=float) for s, _ in self.strokes]
        for _, prims in self.strokes:
            pts += [p for p in prims if isinstance(p, np.ndarray)]
            pts += [np.array([p.cx, p.cy]) for p in prims if isinstance(p, _Arc)]
            for p in prims:  # a curve's control points: the bbox's coarse flattening is then coarse indeed
                if isinstance(p, _Curve) and hasattr(p.seg, "bbox"):
                    x0, y0, x1, y1 = p.seg.bbox()
                    pts += [np.array([x0, y0]), np.array([x1, y1])]
        a = np.array(pts)
        return float(np.max(a.max(axis=0) - a.min(axis=0))) if len(a) else 1.0


def load_drawing(path) -> Drawing:
    """Read an SVG or a G-code file (by its suffix). BadInputError naming the file (and line) on anything
    that cannot be drawn."""
    p = Path(str(path))
    suffix = p.suffix.lower()
    text = limits.read_bytes(p, what="drawing").decode("utf-8", errors="replace")
    if suffix in SVG_SUFFIXES:
        d = parse_svg(text, str(path))
    elif suffix in GCODE_SUFFIXES:
        d = parse_gcode(text, str(path))
    else:
        raise BadInputError(f"{path}: not a drawing: armctl draws .svg and G-code ({', '.join(GCODE_SUFFIXES)}) files")
    if not d.strokes:
        raise BadInputError(f"{path}: nothing to draw (no shapes with outlines, or no pen-down moves)")
    return d


_GEOMETRY_ATTR = re.compile(r"\b(d|points|x|y|x1|y1|x2|y2|cx|cy|r|rx|ry|width|height|transform)\s*=\s*[\"']([^\"']*)")
_NOT_FINITE = re.compile(r"(?i)(?<![a-z])(nan|inf(inity)?)(?![a-z])")


def parse_svg(text: str, source: str = "<svg>") -> Drawing:
    """Every shape's outline of an SVG document, transforms applied (svgelements), in CSS px."""
    import io

    try:
        import svgelements as se
    except ImportError:
        raise BadInputError("drawing an SVG needs svgelements: pip install -e '.[draw]'") from None
    _svg_size_ok(text, source)  # before svgelements, which takes minutes over a million segments
    for no, line in enumerate(text.splitlines(), 1):  # the parser drops a path's data at a NaN without a word
        for attr, value in _GEOMETRY_ATTR.findall(line):
            if _NOT_FINITE.search(value):
                raise BadInputError(f'{source}:{no}: {attr}="{value}": a coordinate is not a finite number')
    try:
        svg = se.SVG.parse(io.StringIO(text), reify=True)
    except RecursionError:
        raise BadInputError(f"{source}: the SVG's elements are nested more deeply than the parser can read") from None
    except Exception as exc:  # a malformed document: the parser's own words
        raise BadInputError(f"{source}: not a readable SVG: {exc}") from None
    d = Drawing(source=source, unit_m=SVG_PX_MM / 1000.0, y_down=True)
    shape_no = 0
    for el in svg.elements():
        if isinstance(el, se.Text):
            words = (getattr(el, "text", "") or "").strip()
            raise BadInputError(
                f"{source}: text {words!r} cannot be drawn as it is: convert it to paths first "
                "(Inkscape: Path > Object to Path)"
            )
        if not isinstance(el, se.Shape):
            continue
        if el.values.get("visibility") == "hidden" or el.values.get("display") == "none":
            continue
        shape_no += 1
        tag = type(el).__name__.lower()
        name = f'<{tag} id="{el.id}">' if el.id else f"<{tag}>"
        before = len(d.strokes)
        start, prims, first = None, [], None
        for seg in se.Path(el).segments():
            if isinstance(seg, se.Move):
                if start is not None and prims:
                    d.strokes.append((start, prims))
                start = first = np.array([seg.end.x, seg.end.y], dtype=float)
                prims = []
            elif isinstance(seg, se.Close):
                if first is not None:
                    prims.append(first.copy())
            elif isinstance(seg, se.Line):
                if start is None:
                    start = first = np.array([seg.start.x, seg.start.y], dtype=float)
                prims.append(np.array([seg.end.x, seg.end.y], dtype=float))
            else:  # Arc, CubicBezier, QuadraticBezier
                if start is None:
                    start = first = np.array([seg.start.x, seg.start.y], dtype=float)
                prims.append(_Curve(seg))
        if start is not None and prims:
            d.strokes.append((start, prims))
        n = len(d.strokes) - before  # the shape's subpaths that draw
        for k in range(n):
            part = f", subpath {k + 1} of {n}" if n > 1 else ""
            d.origins.append((f"shape {shape_no} {name}{part}", None))
    return d


_SVG_TAG = re.compile(r"<[A-Za-z]")
_SVG_NUMBER = re.compile(r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?")
_SVG_PATH_DATA = re.compile(r"\b(?:d|points)\s*=\s*(?:\"([^\"]*)\"|'([^']*)')")


def _svg_size_ok(text: str, source: str) -> None:
    """Refuse an SVG with more elements, or more path points (two numbers each), than the ``moves`` limit, by
    counting them in the text (regular expressions, in C): no parse of a hostile drawing starts."""
    cap = limits.get("moves")
    elements = len(_SVG_TAG.findall(text))
    if elements > cap:
        raise limits.LimitError(f"the SVG has {elements} elements, more than {cap}", limit="moves", path=source)
    numbers = 0
    for m in _SVG_PATH_DATA.finditer(text):
        for _ in _SVG_NUMBER.finditer(m.group(1) or m.group(2) or ""):  # counted one by one: stops at the cap
            numbers += 1
            if numbers > 2 * cap:
                line = text.count("\n", 0, m.start()) + 1
                raise limits.LimitError(
                    f"the SVG's paths have more than {cap} points", limit="moves", path=source, line=line
                )


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
    return _Arc(float(centre[0]), float(centre[1]), r0, a0, sweep)


# ---------------------------------------------------------------------------------------------- the paper


@dataclass(frozen=True)
class Paper:
    """Where and how to draw (SI units). ``z_m``: the drawing plane's height on an arm with a base (the
    paper on the table); None on a planar arm (it draws in its own plane). ``fit_m``: (w, h, x, y), the
    drawing scaled uniformly into the w x h rectangle whose lower-left corner is (x, y), centred; None:
    its own size, centred on the home tool point. ``pen_up_m``: how far the arm lifts the pen (along z);
    ``pen``: a servo that lifts it instead ("gripper": closed is down, open is up)."""

    z_m: float | None = None
    fit_m: tuple[float, float, float, float] | None = None
    pen_up_m: float = DEFAULT_PEN_UP_M
    pen: str | None = None
    speed_m_s: float | None = None
    tolerance_m: float = DEFAULT_TOLERANCE_M
    segment_m: float = motion.DEFAULT_SEGMENT_M
    blend_m: float = DEFAULT_BLEND_M


def parse_plane(text: str) -> float | None:
    """``xy@Zmm`` (or ``xy@Z`` with a unit) -> Z in metres; ``xy`` -> None."""
    from armctl.core.units import parse_length

    t = text.strip()
    m = re.fullmatch(r"(?i)xy(?:@(.+))?", t)
    if not m:
        raise BadInputError(f"--plane: expected xy@Zmm (the paper's height, e.g. xy@-20mm) or xy, got {text!r}")
    if m.group(1) is None:
        return None
    z = m.group(1)
    return parse_length(z if re.search(r"[a-z]$", z) else f"{z}mm", what="--plane height")


def parse_fit(text: str) -> tuple[float, float, float, float]:
    """``WxH@X,Y`` (mm, or with units) -> (w, h, x, y) in metres."""
    from armctl.core.units import parse_length

    m = re.fullmatch(r"\s*([^x@]+)x([^@]+)@([^,]+),(.+)", text.strip())
    if not m:
        raise BadInputError(
            f"--fit: expected WxH@X,Y in mm (the paper: its size, and its lower-left corner), e.g. 80x60@150,-30; "
            f"got {text!r}"
        )

    def mm(v, what):
        v = v.strip()
        return parse_length(v if re.search(r"[a-z]$", v) else f"{v}mm", what=f"--fit {what}")

    w, h = mm(m.group(1), "width"), mm(m.group(2), "height")
    if w <= 0 or h <= 0:
        raise BadInputError(f"--fit: the paper's width and height must be > 0, got {text!r}")
    return w, h, mm(m.group(3), "x"), mm(m.group(4), "y")


@dataclass
class DrawingPlan:
    """A planned drawing: the motion ``plan``, the strokes on the paper (m, in the drawing plane) and the
    mapping from drawing units to it (``scale`` m per unit, ``offset``, ``y_down``)."""

    plan: motion.Plan
    strokes_m: list
    scale: float
    offset: np.ndarray
    y_down: bool
    z_m: float | None
    pen: str | None
    unit_m: float = 0.001  # metres per drawing unit at the drawing's own size

    @property
    def zoom(self) -> float:
        """How much the drawing was scaled to fit the paper (1: its own size)."""
        return self.scale / self.unit_m

    def to_paper(self, pts) -> np.ndarray:
        """Drawing units (k, 2) -> the drawing plane (m)."""
        p = np.array(pts, dtype=float)
        if self.y_down:
            p[:, 1] = -p[:, 1]
        return p * self.scale + self.offset


def _far_points_refused(arm, drawing: Drawing, scale: float, offset) -> None:
    """UnreachableError for a drawing whose points on the paper lie far beyond anything the arm reaches (ten times
    its reach from the base's axis): its curves are not flattened first (at such a scale that is millions of
    points). Only points the pen passes through count: stroke starts, line ends, curve and arc ends."""
    bound = 10.0 * max(arm.reach_from_axis_m, 1e-3)
    for i, (start, prims) in enumerate(drawing.strokes):
        pts = [np.asarray(start, dtype=float)]
        for p in prims:
            if isinstance(p, np.ndarray):
                pts.append(p)
            elif isinstance(p, _Arc):
                a = p.a0 + p.sweep
                pts.append(np.array([p.cx + p.r * math.cos(a), p.cy + p.r * math.sin(a)]))
            else:
                pts.append(np.asarray(p.seg.npoint([1.0])[0], dtype=float))
        xy = np.array(pts) * np.array([1.0, -1.0 if drawing.y_down else 1.0]) * scale + offset
        far = np.hypot(xy[:, 0], xy[:, 1])
        k = int(np.argmax(far))
        if far[k] > bound:
            what = drawing.origin(i)[0]
            raise UnreachableError(
                f"{drawing.source}: stroke {i + 1}{f' ({what})' if what else ''} passes {far[k]:.4g} m from the "
                f"arm's axis, far beyond its reach ({arm.reach_from_axis_m:.3g} m): give --fit WxH@X,Y to fit the "
                "drawing on the paper"
            )


def _fit(drawing: Drawing, arm, paper: Paper):
    lo, hi = drawing.bbox()
    if drawing.y_down:
        lo, hi = np.array([lo[0], -hi[1]]), np.array([hi[0], -lo[1]])
    size = np.maximum(hi - lo, 1e-12)
    if paper.fit_m is None:
        scale = drawing.unit_m
        centre = tool_point(arm, arm.home_rad)[:2]
    else:
        w, h, x, y = paper.fit_m
        scale = min(w / size[0] if size[0] > 1e-9 else math.inf, h / size[1] if size[1] > 1e-9 else math.inf)
        if not math.isfinite(scale):
            scale = drawing.unit_m
        centre = np.array([x + w / 2, y + h / 2])
    offset = centre - scale * (lo + hi) / 2
    return scale, offset


def plan_drawing(arm, drawing: Drawing, paper: Paper) -> DrawingPlan:
    """Plan ``drawing`` on ``arm`` as ``paper`` says: every stroke a pen-down line, the strokes joined by
    pen-up travel, from above the first stroke's start. Raises BadInputError for options that do not fit
    the arm, MotionError (UnreachableError, JointLimitError, ZoneError) for what the arm cannot draw,
    naming the stroke."""
    pen = paper.pen
    if pen is not None and pen != "gripper":
        raise BadInputError(f"--pen: the servo that lifts the pen: 'gripper' (closed: pen down), got {pen!r}")
    if pen == "gripper" and arm.gripper is None:
        raise BadInputError(f"--pen gripper: arm '{arm.name}' has no gripper servo")
    if not arm.has_base:
        if paper.z_m is not None:
            raise BadInputError(
                f"--plane: arm '{arm.name}' works in a vertical plane and draws in it (the paper is a board "
                "beside it): give --plane xy or leave it out"
            )
        if pen is None:
            if arm.gripper is None:
                raise BadInputError(
                    f"arm '{arm.name}' draws in its own plane and lifts the pen with a servo; it has no gripper"
                )
            pen = "gripper"
    z = paper.z_m
    if arm.has_base and z is None:
        table = [zn.level for zn in (arm.zones.zones if arm.zones else ()) if zn.kind == "table"]
        if not table:
            raise BadInputError(
                f"arm '{arm.name}' draws on the table: give the paper's height, --plane xy@Zmm (z of the "
                "paper; or a table_z_mm zone in the arm file)"
            )
        z = max(table)
    scale, offset = _fit(drawing, arm, paper)
    _far_points_refused(arm, drawing, scale, offset)  # before curves are flattened at this scale
    located = drawing.located_polylines(paper.tolerance_m / scale)
    polys = [p for p, _ in located]
    dp = DrawingPlan(
        plan=None,
        strokes_m=[],
        scale=scale,
        offset=offset,
        y_down=drawing.y_down,
        z_m=z,
        pen=pen,
        unit_m=drawing.unit_m,
    )
    strokes = [dp.to_paper(p) for p in polys]
    dp.strokes_m = strokes
    speed = paper.speed_m_s or drawing.speed_m_s or DEFAULT_SPEED_M_S
    lift = np.array([0.0, 0.0, paper.pen_up_m]) if (arm.has_base and pen is None) else None

    def at(p2, up=False):
        if not arm.has_base:
            return tuple(float(v) for v in p2)
        p = np.array([p2[0], p2[1], z])
        if up and lift is not None:
            p = p + lift
        return tuple(float(v) for v in p)

    g_up = g_down = None
    if pen == "gripper":
        g_up, g_down = arm.gripper.open_rad, arm.gripper.closed_rad
    moves, labels = [], []

    def line(target, label, v, blend=paper.blend_m):
        moves.append(
            motion.LineMove(target, speed_m_s=v, segment_m=paper.segment_m, blend_m=blend, stop=blend <= 0, label=label)
        )
        labels.append(label)

    def stroke_name(i: int) -> str:
        what = drawing.origin(i)[0]
        return f"{drawing.source}: stroke {i + 1} of {len(strokes)}" + (f" ({what})" if what else "")

    def point_name(i: int, k: int) -> str:
        """Point ``k`` of stroke ``i``: its index, where it is in the drawing (mm) and, in G-code, its line."""
        pts, prim = located[i]
        x, y = pts[k] * drawing.unit_m * 1000.0
        lines = drawing.origin(i)[1]
        line = f", line {lines[int(prim[k]) + 1]}" if lines else ""
        return f"point {k} of {len(pts) - 1} at ({x:.2f}, {y:.2f}) mm in the drawing{line}"

    first = at(strokes[0][0], up=True)
    try:
        q0 = motion.solve_pose(arm, first, None, arm.home_rad)
    except MotionError as exc:  # the same error, fields kept, said to be the first stroke's
        raise motion.located(exc, f"{stroke_name(0)}: its start, {point_name(0, 0)}") from None
    for i, s in enumerate(strokes):
        name = stroke_name(i)
        if i:
            line(at(s[0], up=True), f"{name}: travel (pen up) to its {point_name(i, 0)}", 2 * speed)
        down = f"{name}: pen down at its {point_name(i, 0)}"
        if lift is not None:
            line(at(s[0]), down, speed, blend=0.0)  # the pen lands at rest, where the stroke starts
        else:
            moves.append(motion.GripperMove(g_down, label=down))
            labels.append(down)
        for k, p in enumerate(s[1:], 1):  # blended through the stroke's corners; at rest at its end
            blend = paper.blend_m if k < len(s) - 1 else 0.0
            line(at(p), f"{name}: {point_name(i, k)}", speed, blend=blend)
        up = f"{name}: pen up at its {point_name(i, len(s) - 1)}"
        if lift is not None:
            line(at(s[-1], up=True), up, speed)
        else:
            moves.append(motion.GripperMove(g_up, label=up))
            labels.append(up)
    g_start = g_up if pen == "gripper" else None
    dp.plan = motion.plan_moves(arm, moves, q_start=q0, gripper_start=g_start, labels=labels)
    return dp


def pen_down_mask(dp: DrawingPlan) -> np.ndarray:
    """Per sample of ``dp.plan.trajectory``: True while the pen draws (a stroke's points, not pen down/up
    or travel)."""
    tr = dp.plan.trajectory
    drawing = np.array([": point " in s for s in tr.steps], dtype=bool)
    return drawing[tr.step] if len(drawing) else np.zeros(len(tr), dtype=bool)


__all__ = [
    "Drawing",
    "DrawingPlan",
    "Paper",
    "is_drawing",
    "load_drawing",
    "parse_fit",
    "parse_gcode",
    "parse_plane",
    "parse_svg",
    "pen_down_mask",
    "plan_drawing",
]
