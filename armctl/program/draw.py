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
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from armctl import motion
from armctl.core import limits
from armctl.errors import BadInputError, MotionError, UnreachableError
from armctl.model.kinematics import tool_point
from armctl.program.gcode import parse_gcode
from armctl.program.strokes import Arc, Drawing
from armctl.program.svg import parse_svg

SVG_SUFFIXES = (".svg",)
GCODE_SUFFIXES = (".gcode", ".nc", ".ngc", ".gc", ".g", ".tap")
DEFAULT_TOLERANCE_M = 0.00005  # 0.05 mm: curves flattened to within this on the paper
DEFAULT_PEN_UP_M = 0.010
DEFAULT_SPEED_M_S = 0.040
DEFAULT_BLEND_M = 0.0002  # 0.2 mm: the corners of a stroke are rounded within this (no blob at each vertex)


def is_drawing(path) -> bool:
    """True for a file armctl draws (SVG or G-code), by its suffix."""
    return Path(str(path)).suffix.lower() in SVG_SUFFIXES + GCODE_SUFFIXES


# ---------------------------------------------------------------------------------------------- primitives


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
            elif isinstance(p, Arc):
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
    pen = _pen(arm, paper)
    z = _plane_z(arm, paper)
    scale, offset = _fit(drawing, arm, paper)
    _far_points_refused(arm, drawing, scale, offset)  # before curves are flattened at this scale
    located = drawing.located_polylines(paper.tolerance_m / scale)
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
    dp.strokes_m = [dp.to_paper(p) for p, _ in located]
    moves = _StrokeMoves(arm, drawing, paper, dp, located)
    q0 = moves.start()
    for i in range(len(dp.strokes_m)):
        moves.stroke(i)
    g_start = moves.g_up if pen == "gripper" else None
    dp.plan = motion.plan_moves(arm, moves.moves, q_start=q0, gripper_start=g_start, labels=moves.labels)
    return dp


def _pen(arm, paper: Paper) -> str | None:
    """The servo that lifts the pen (None: the arm lifts it); a planar arm's is its gripper."""
    pen = paper.pen
    if pen is not None and pen != "gripper":
        raise BadInputError(f"--pen: the servo that lifts the pen: 'gripper' (closed: pen down), got {pen!r}")
    if pen == "gripper" and arm.gripper is None:
        raise BadInputError(f"--pen gripper: arm '{arm.name}' has no gripper servo")
    if arm.has_base:
        return pen
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
    return pen


def _plane_z(arm, paper: Paper) -> float | None:
    """The paper's height on an arm with a base: ``paper.z_m``, else the highest table zone of the arm."""
    z = paper.z_m
    if arm.has_base and z is None:
        table = [zn.level for zn in (arm.zones.zones if arm.zones else ()) if zn.kind == "table"]
        if not table:
            raise BadInputError(
                f"arm '{arm.name}' draws on the table: give the paper's height, --plane xy@Zmm (z of the "
                "paper; or a table_z_mm zone in the arm file)"
            )
        z = max(table)
    return z


class _StrokeMoves:
    """The moves of a drawing, stroke by stroke (pen down, the stroke, pen up, travel), each labelled with the
    stroke and the point of the drawing it is."""

    def __init__(self, arm, drawing: Drawing, paper: Paper, dp: DrawingPlan, located: list):
        self.arm, self.drawing, self.paper, self.dp, self.located = arm, drawing, paper, dp, located
        self.speed = paper.speed_m_s or drawing.speed_m_s or DEFAULT_SPEED_M_S
        self.lift = np.array([0.0, 0.0, paper.pen_up_m]) if (arm.has_base and dp.pen is None) else None
        self.g_up = self.g_down = None
        if dp.pen == "gripper":
            self.g_up, self.g_down = arm.gripper.open_rad, arm.gripper.closed_rad
        self.moves, self.labels = [], []

    def at(self, p2, up=False) -> tuple:
        """A point of the paper as a tool point (lifted by the pen's lift when ``up``)."""
        if not self.arm.has_base:
            return tuple(float(v) for v in p2)
        p = np.array([p2[0], p2[1], self.dp.z_m])
        if up and self.lift is not None:
            p = p + self.lift
        return tuple(float(v) for v in p)

    def line(self, target, label: str, v: float, blend: float | None = None) -> None:
        blend = self.paper.blend_m if blend is None else blend
        segment_m = self.paper.segment_m
        self.moves.append(
            motion.LineMove(target, speed_m_s=v, segment_m=segment_m, blend_m=blend, stop=blend <= 0, label=label)
        )
        self.labels.append(label)

    def gripper(self, rad: float, label: str) -> None:
        self.moves.append(motion.GripperMove(rad, label=label))
        self.labels.append(label)

    def stroke_name(self, i: int) -> str:
        what = self.drawing.origin(i)[0]
        return f"{self.drawing.source}: stroke {i + 1} of {len(self.dp.strokes_m)}" + (f" ({what})" if what else "")

    def point_name(self, i: int, k: int) -> str:
        """Point ``k`` of stroke ``i``: its index, where it is in the drawing (mm) and, in G-code, its line."""
        pts, prim = self.located[i]
        x, y = pts[k] * self.drawing.unit_m * 1000.0
        lines = self.drawing.origin(i)[1]
        line = f", line {lines[int(prim[k]) + 1]}" if lines else ""
        return f"point {k} of {len(pts) - 1} at ({x:.2f}, {y:.2f}) mm in the drawing{line}"

    def start(self):
        """The pose above the first stroke's start (the plan starts there)."""
        first = self.at(self.dp.strokes_m[0][0], up=True)
        try:
            return motion.solve_pose(self.arm, first, None, self.arm.home_rad)
        except MotionError as exc:  # the same error, fields kept, said to be the first stroke's
            raise motion.located(exc, f"{self.stroke_name(0)}: its start, {self.point_name(0, 0)}") from None

    def stroke(self, i: int) -> None:
        """Stroke ``i``: travel to it (after the first), pen down, its points, pen up."""
        s, name, speed = self.dp.strokes_m[i], self.stroke_name(i), self.speed
        if i:
            self.line(self.at(s[0], up=True), f"{name}: travel (pen up) to its {self.point_name(i, 0)}", 2 * speed)
        down = f"{name}: pen down at its {self.point_name(i, 0)}"
        if self.lift is not None:
            self.line(self.at(s[0]), down, speed, blend=0.0)  # the pen lands at rest, where the stroke starts
        else:
            self.gripper(self.g_down, down)
        for k, p in enumerate(s[1:], 1):  # blended through the stroke's corners; at rest at its end
            blend = self.paper.blend_m if k < len(s) - 1 else 0.0
            self.line(self.at(p), f"{name}: {self.point_name(i, k)}", speed, blend=blend)
        up = f"{name}: pen up at its {self.point_name(i, len(s) - 1)}"
        if self.lift is not None:
            self.line(self.at(s[-1], up=True), up, speed)
        else:
            self.gripper(self.g_up, up)


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
