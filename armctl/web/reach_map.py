"""The reachable region of the tool point, sampled on a grid inside the joint limits.

A cell is reachable when some pose inside the joint limits puts the tool point
on its centre: closed-form IK on both elbow branches (3 links: for tool angles
sampled every ``phi_step_rad``). Used to shade the workspace on the page; the
planner stays the judge of every move.

With the calibration (``calibrated_reach_map``) the shading is what a click can do: the joint limits are cut
to the calibrated pulse ranges (``calibration.within_calibration``), a cell is shaded only when its centre and
its four corners are reachable, and every shaded cell on the shading's edge is checked at those five points
with ``click_pose``, the very check a click's move makes (the API's reach check, the pose on the cut limits,
the pulses), so that a click anywhere inside the shading is accepted.

On an arm with a rotating base, ``reach_map`` is the side view: the arm's own
vertical plane (distance along the base's direction, height), the same at every
base angle; ``top_map`` is the top view: where on the table (x, y) the tool can
be at some height, inside the base's range.
"""

from __future__ import annotations

import base64
import math
from dataclasses import dataclass, replace
from functools import lru_cache

import numpy as np

from armctl.calibration.servo import Calibration, within_calibration
from armctl.errors import MotionError, UnreachableError
from armctl.model.arm import Arm
from armctl.model.kinematics import base_split_batch, shoulder_uv
from armctl.model.workspace import shortfall
from armctl.motion import branch_ik, solve_pose

TWO_PI = 2.0 * math.pi


@dataclass(frozen=True)
class ReachMap:
    """``cells[row, col]`` is True where the tool can reach; row 0 is the lowest y.

    Cell (row, col) has its centre at ``origin_m + (col + 0.5, row + 0.5) * cell_m`` (m).
    """

    origin_m: tuple[float, float]
    cell_m: float
    cells: np.ndarray
    arm: Arm | None = None  # a base or parallelogram arm: gaps come from its exact reach instead

    def gap_m(self, point_m) -> float:
        """Distance (m) from ``point_m`` to the nearest reachable cell centre, 0 if its own cell is reachable
        (on a base or parallelogram arm: to the nearest point it reaches, ``workspace.shortfall``)."""
        if self.arm is not None:
            from armctl.model.workspace import shortfall

            return shortfall(self.arm, point_m)
        h, w = self.cells.shape
        col = int(math.floor((point_m[0] - self.origin_m[0]) / self.cell_m))
        row = int(math.floor((point_m[1] - self.origin_m[1]) / self.cell_m))
        if 0 <= row < h and 0 <= col < w and self.cells[row, col]:
            return 0.0
        rows, cols = np.nonzero(self.cells)
        if len(rows) == 0:
            return math.inf
        cx = self.origin_m[0] + (cols + 0.5) * self.cell_m
        cy = self.origin_m[1] + (rows + 0.5) * self.cell_m
        return float(np.min(np.hypot(cx - point_m[0], cy - point_m[1])))

    def to_json(self) -> dict:
        """Width, height, origin and cell size (m), and the rows as base64 bits (numpy packbits, row 0 first)."""
        h, w = self.cells.shape
        return {
            "origin_m": list(self.origin_m),
            "cell_m": self.cell_m,
            "width": w,
            "height": h,
            "bits_b64": base64.b64encode(np.packbits(self.cells, axis=1).tobytes()).decode("ascii"),
        }


def _in_limits(arm: Arm, q) -> np.ndarray:
    """(K,) True where the wrapped angles ``q`` (K, n) lie inside the limits, allowing a whole turn either way."""
    ok = np.ones(len(q), dtype=bool)
    for i in range(arm.n):
        a = q[:, i]
        hit = np.zeros(len(q), dtype=bool)
        for turn in (-TWO_PI, 0.0, TWO_PI):
            hit |= (a + turn >= arm.q_min[i] - 1e-9) & (a + turn <= arm.q_max[i] + 1e-9)
        ok &= hit
    return ok


def reachable(arm: Arm, points_m, *, phi_step_rad: float = math.radians(3.0)) -> np.ndarray:
    """(K,) True where some pose inside the joint limits reaches each point of ``points_m`` (K, 2) m (on a
    base arm: points of its vertical plane, distance along the base's direction and height)."""
    p = np.asarray(points_m, dtype=float)
    if arm.layered:
        return _plane_reachable(arm, p, phi_step_rad)
    out = np.zeros(len(p), dtype=bool)
    phis = [None] if arm.n_links == 2 else np.arange(-math.pi, math.pi, phi_step_rad)
    for phi in phis:
        todo = ~out
        if not np.any(todo):
            break
        pts = p[todo]
        ph = None if phi is None else np.full(len(pts), phi)
        hit = np.zeros(len(pts), dtype=bool)
        for elbow in (1.0, -1.0):
            q, excess = branch_ik(arm, pts, ph, elbow)
            hit |= (excess <= 1e-9) & _in_limits(arm, q)
        out[np.flatnonzero(todo)[hit]] = True
    return out


@lru_cache(maxsize=8)
def _cached(_arm_key: tuple, arm: Arm, cell_m: float) -> ReachMap:  # _arm_key: the lru_cache's key for arm
    r = arm.reach_max
    n = int(math.ceil(2 * r / cell_m))
    origin = (-n * cell_m / 2, -n * cell_m / 2)
    c = origin[0] + (np.arange(n) + 0.5) * cell_m
    xx, yy = np.meshgrid(c, c)
    pts = np.stack([xx.ravel(), yy.ravel()], axis=-1)
    rr = np.hypot(pts[:, 0], pts[:, 1])
    inside = (rr <= arm.reach_max + cell_m) & (rr >= arm.reach_min - cell_m)
    cells = np.zeros(len(pts), dtype=bool)
    cells[inside] = reachable(arm, pts[inside])
    return ReachMap(origin, cell_m, cells.reshape(n, n))


def reach_map(arm: Arm, *, cell_m: float = 0.005) -> ReachMap:
    """The reachable region of ``arm`` on a square grid of ``cell_m`` (m) cells covering the outer reach
    (on a base or parallelogram arm: its plane, with cells no larger than 1/150 of its size)."""
    if arm.layered:
        return _layered_map(arm, min(cell_m, _extent(arm) / 150.0))
    key = (tuple(arm.links_m), tuple(arm.q_min), tuple(arm.q_max))
    return _cached(key, arm, cell_m)


def _extent(arm: Arm) -> float:
    """Half the side (m) of a square centred on the base holding all the arm can reach."""
    return arm.extent_m


def _plane_reachable(arm: Arm, p, phi_step_rad: float) -> np.ndarray:
    """Points (K, 2) of a layered arm's plane (from the base axis and z = 0) some pose reaches."""
    from armctl.ik import batch_closed_form

    u, v = shoulder_uv(arm, p[:, 0], p[:, 1])
    start = np.broadcast_to(arm.home_rad, (len(p), arm.n))
    if arm.n_links == 2:
        return batch_closed_form(arm, u, v, start)[1]
    out = np.zeros(len(p), dtype=bool)  # a 3-link chain (serial): its own planar map
    for phi in np.arange(-math.pi, math.pi, phi_step_rad):
        todo = np.flatnonzero(~out)
        if todo.size == 0:
            break
        for elbow in (1.0, -1.0):
            q, excess = branch_ik(arm.chain, np.stack([u[todo], v[todo]], axis=1), np.full(todo.size, phi), elbow)
            out[todo[(excess <= 1e-9) & _in_limits(arm.chain, q)]] = True
    return out


def _grid(extent: float, cell_m: float):
    n = int(math.ceil(2 * extent / cell_m))
    origin = (-n * cell_m / 2, -n * cell_m / 2)
    c = origin[0] + (np.arange(n) + 0.5) * cell_m
    xx, yy = np.meshgrid(c, c)
    return origin, n, np.stack([xx.ravel(), yy.ravel()], axis=-1)


_LAYERED: dict = {}


def _layered_map(arm: Arm, cell_m: float) -> ReachMap:
    key = (id(arm), cell_m, "side")
    hit = _LAYERED.get(key)
    if hit is not None and hit[0] is arm:
        return hit[1]
    origin, n, pts = _grid(_extent(arm), cell_m)
    m = ReachMap(origin, cell_m, _plane_reachable(arm, pts, math.radians(3.0)).reshape(n, n), arm=arm)
    if len(_LAYERED) > 16:
        _LAYERED.clear()
    _LAYERED[key] = (arm, m)
    return m


def top_map(arm: Arm, *, cell_m: float = 0.005, side: ReachMap | None = None) -> ReachMap:
    """Where on the table (x, y) the tool of a base arm can be at some height, inside the base's range,
    on a square grid (the same cell as ``reach_map``); ``side``: the side view to turn (default ``reach_map``)."""
    side = reach_map(arm, cell_m=cell_m) if side is None else side
    cols = np.any(side.cells, axis=0)  # distances along the arm's plane reachable at some height
    origin, n, pts = _grid(_extent(arm), side.cell_m)
    az, rho = base_split_batch(pts[:, 0], pts[:, 1])

    def reaches(u):
        col = np.floor((u - side.origin_m[0]) / side.cell_m).astype(int)
        ok = (col >= 0) & (col < len(cols))
        return ok & cols[np.clip(col, 0, len(cols) - 1)]

    def in_base(a):
        hit = np.zeros(len(a), dtype=bool)
        for turn in (-2 * TWO_PI, -TWO_PI, 0.0, TWO_PI, 2 * TWO_PI):
            hit |= (a + turn >= arm.q_min[0] - 1e-9) & (a + turn <= arm.q_max[0] + 1e-9)
        return hit

    cells = (in_base(az) & reaches(rho)) | (in_base(az + math.pi) & reaches(-rho))
    return ReachMap(origin, side.cell_m, cells.reshape(n, n), arm=arm)


# --- the shading a click can trust -------------------------------------------------------------------------


def click_pose(
    arm: Arm, cal: Calibration, target_m, phi_rad: float | None, q_near, *, cut: Arm | None = None, roll=None
) -> np.ndarray:
    """The pose (rad) a click at ``target_m`` (m; (x, y, z) on a base arm) moves the arm to from near ``q_near``:
    the API's reach check (``workspace``), then the pose ``motion.solve_pose`` takes on the arm whose limits the
    calibration cuts (``within_calibration``: no pulse outside the calibration), checked against the pulses.
    Raises UnreachableError, JointLimitError or PulseLimitError (MotionError) naming why not. ``cut``: the cut
    arm, when the caller has it already; ``roll`` (rad) the wrist roll of the pose (None: ``q_near``'s)."""
    target = np.asarray(target_m, dtype=float)
    short = shortfall(arm, target, phi_rad)
    if short > 1e-9:
        raise UnreachableError(f"{1000 * short:.1f} mm outside the reach", target=tuple(target), shortfall_m=short)
    q = solve_pose(
        within_calibration(arm, cal) if cut is None else cut, target, phi_rad, q_near, joint_move=True, roll=roll
    )
    cal.check_values(cal.joints_to_values(q, check=False), q)
    return q


def _plane_target(arm: Arm, u: float, v: float) -> np.ndarray:
    """A point of the map's plane as a click's target: (x, y), or on a base arm (u, v) at the home base angle."""
    if not arm.has_base:
        return np.array([u, v])
    b = float(arm.home_rad[0])
    return np.array([u * math.cos(b), u * math.sin(b), v])


def _click_ok(arm: Arm, cal: Calibration, cut: Arm, u: float, v: float) -> bool:
    try:
        click_pose(arm, cal, _plane_target(arm, u, v), None, arm.home_rad, cut=cut)
    except MotionError:
        return False
    return True


_CALIBRATED: dict = {}


def calibrated_reach_map(arm: Arm, cal: Calibration, *, cell_m: float = 0.005) -> ReachMap:
    """The shading of the page: the cells a click can reach anywhere in, on ``arm`` driven through ``cal`` (see
    the module docstring). Same grid as ``reach_map``."""
    key = (  # by content: every page of the same arm and calibration (each connect loads them anew)
        arm.source,
        arm.name,
        tuple(arm.links_m),
        tuple(arm.q_min),
        tuple(arm.q_max),
        tuple(arm.home_rad),
        arm.linkage,
        arm.link_angle_rad,
        arm.has_base,
        arm.base_offset_m,
        arm.shoulder_height_m,
        tuple((s.zero, s.per_deg, s.direction, s.lo, s.hi) for s in cal.joints),
        cell_m,
    )
    hit = _CALIBRATED.get(key)
    if hit is not None:
        return hit
    # keep-out zones are drawn over the shading, not cut from it (a zone-free pose for every cell would cost
    # minutes): the edge is checked as a click on the arm without them
    arm = replace(arm, zones=None) if arm.zones is not None else arm
    cut = within_calibration(arm, cal)
    centres = reach_map(cut, cell_m=cell_m)
    h, w = centres.cells.shape
    step = centres.cell_m
    ox, oy = centres.origin_m
    # the corners' grid, (h + 1, w + 1): a corner counts only near a shaded centre (the rest stays False)
    near = np.zeros((h + 1, w + 1), dtype=bool)
    for dr in (0, 1):
        for dc in (0, 1):
            near[dr : dr + h, dc : dc + w] |= centres.cells
    rr, cc = np.nonzero(near)
    corner_ok = np.zeros_like(near)
    pts = np.stack([ox + cc * step, oy + rr * step], axis=-1)
    corner_ok[rr, cc] = reachable(cut, pts)
    cells = centres.cells & corner_ok[:-1, :-1] & corner_ok[:-1, 1:] & corner_ok[1:, :-1] & corner_ok[1:, 1:]
    checked = np.zeros_like(cells)
    corners: dict = {}  # (row, col) of a corner -> a click there is accepted (shared by neighbouring cells)

    def corner(r: int, c: int) -> bool:
        if (r, c) not in corners:
            corners[(r, c)] = _click_ok(arm, cal, cut, ox + c * step, oy + r * step)
        return corners[(r, c)]

    while True:  # a cell dropped from the edge puts its neighbours on it: they are checked in turn
        pad = np.pad(cells, 1)
        edge = cells & ~checked & ~(pad[:-2, 1:-1] & pad[2:, 1:-1] & pad[1:-1, :-2] & pad[1:-1, 2:])
        if not edge.any():
            break
        for r, c in zip(*np.nonzero(edge)):
            checked[r, c] = True
            centre = _click_ok(arm, cal, cut, ox + (c + 0.5) * step, oy + (r + 0.5) * step)
            if not (centre and corner(r, c) and corner(r, c + 1) and corner(r + 1, c) and corner(r + 1, c + 1)):
                cells[r, c] = False
    m = ReachMap(centres.origin_m, step, cells, arm=centres.arm)
    if len(_CALIBRATED) > 8:
        _CALIBRATED.clear()
    _CALIBRATED[key] = m
    return m
