"""The poses a camera calibration moves the arm through (``camera_poses``): spread over every joint's range and
the reach, each seen from both directions of every joint (backlash), inside the limits, the calibrated ranges and
the keep-out zones, the marker in the camera's view and facing it, plus held-out poses to judge the fit by; in an
order that keeps the motion short."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from armctl.calibration.cameramodel import CameraObservations, marker_corners_m
from armctl.errors import BadInputError
from armctl.model.kinematics import base_side, limit_excess, tool_pose
from armctl.model.zones import pose_refusal

DEFAULT_FOCAL_PX = 600.0
DEFAULT_SIZE = (640, 480)
DEFAULT_HEIGHT_M = 0.6
FACING_DEG = 45.0  # the marker's normal within this of the line to the camera
AXIS_CLEAR_M = 0.03  # on a base arm, the tool at least this far out from the base axis (tool_pose's frame turns
# over where the chain reaches back across the axis: a pose near it may lie on either side of the true arm)
MARGIN_PX = 12.0  # the marker's corners at least this far inside the picture


@dataclass(frozen=True)
class CameraView:
    """Where a camera looks from: ``matrix`` (3x3), ``size`` (width, height) px and ``camera_to_base`` (4x4, the
    camera's frame in the arm's base frame: z along its view)."""

    matrix: np.ndarray
    size: tuple[int, int]
    camera_to_base: np.ndarray

    def pixels(self, points_m) -> tuple[np.ndarray, np.ndarray]:
        """Pixels (..., 2) of base-frame points (..., 3) (no distortion) and their depths (...)."""
        T = np.linalg.inv(self.camera_to_base)
        p = np.einsum("ij,...j->...i", T[:3, :3], points_m) + T[:3, 3]
        uv = np.einsum("ij,...j->...i", self.matrix, p)
        return uv[..., :2] / uv[..., 2:3], p[..., 2]


def default_view(arm, *, height_m: float = DEFAULT_HEIGHT_M, samples: int = 2000, seed: int = 0) -> CameraView:
    """A 640x480 camera of focal 600 px ``height_m`` above the middle of the arm's reach (the mean tool point of
    poses inside the limits, on z = 0), looking straight down, its image x along the base's x."""
    rng = np.random.default_rng(seed)
    q = rng.uniform(arm.q_min, arm.q_max, size=(samples, arm.n))
    q = q[np.all(limit_excess(arm, q) <= 0, axis=-1)]
    mid = np.asarray(arm.tool_point(q), dtype=float).mean(axis=0)
    T = np.eye(4)
    T[:3, :3] = np.diag([1.0, -1.0, -1.0])
    T[:3, 3] = [mid[0], mid[1], height_m]
    w, h = DEFAULT_SIZE
    K = np.array([[DEFAULT_FOCAL_PX, 0, w / 2], [0, DEFAULT_FOCAL_PX, h / 2], [0, 0, 1]])
    return CameraView(K, DEFAULT_SIZE, T)


@dataclass(frozen=True)
class PoseSet:
    """The calibration's motion: ``waypoints_rad`` (M, n) in order, ``observe`` (M,) where the marker is seen,
    ``held_out`` (M,) the sightings kept to judge the fit, ``approach`` (M, n) the sign of each joint's last move
    into the waypoint, ``values`` (M, n) the servo values, ``motion_s`` the motion's time at the speed limits."""

    waypoints_rad: np.ndarray
    observe: np.ndarray
    held_out: np.ndarray
    approach: np.ndarray
    values: np.ndarray
    motion_s: float

    def sightings(self, pixels, matrix, dist, *, marker_m: float = 0.030, sigma_px: float = 0.5):
        """(``CameraObservations``, held-out mask) of the marker's ``pixels`` seen at the observing waypoints, in
        order: (k, 4, 2) corners or (k, 2) centres, k = ``observe.sum()``; for ``calibrate_from_sightings``."""
        sel = self.observe
        obs = CameraObservations(self.values[sel], self.approach[sel], pixels, matrix, dist, marker_m, sigma_px)
        return obs, self.held_out[sel]


def _usable(arm, cal, view: CameraView, q, marker_m: float, margin_rad: float) -> np.ndarray:
    """Which poses (N, n) are inside every limit (with ``margin_rad`` to spare for the approach moves), outside the
    zones, with the whole marker in the picture and facing the camera."""
    lo, hi = _bounds(arm, cal, margin_rad)
    ex = limit_excess(arm, q)
    ok = np.all((q >= lo) & (q <= hi), axis=-1) & np.all(ex[:, arm.n :] <= -2.0 * margin_rad, axis=-1)
    T = tool_pose(arm, q)
    corners = np.einsum("nij,kj->nki", T[:, :3, :3], marker_corners_m(marker_m)) + T[:, None, :3, 3]
    px, depth = view.pixels(corners)
    w, h = view.size
    ok &= np.all((depth > 0.05) & (px[..., 0] > MARGIN_PX) & (px[..., 0] < w - MARGIN_PX), axis=-1)
    ok &= np.all((px[..., 1] > MARGIN_PX) & (px[..., 1] < h - MARGIN_PX), axis=-1)
    to_cam = view.camera_to_base[:3, 3] - T[:, :3, 3]
    cos = np.einsum("ni,ni->n", T[:, :3, 2], to_cam) / np.linalg.norm(to_cam, axis=-1)
    ok &= cos >= math.cos(math.radians(FACING_DEG))
    if arm.has_base:
        ok &= (base_side(arm, q) > 0) & (np.linalg.norm(T[:, :2, 3], axis=-1) >= AXIS_CLEAR_M)
    if arm.zones:
        ok &= np.array([pose_refusal(arm, arm.zones, qi) is None if o else False for qi, o in zip(q, ok)], bool)
    return ok


def _bounds(arm, cal, margin_rad: float) -> tuple[np.ndarray, np.ndarray]:
    """Each joint's usable range (rad): its limits and its servo's calibrated range, ``margin_rad`` inside."""
    clo, chi = cal.joint_limits_rad()
    return np.maximum(arm.q_min, clo) + margin_rad, np.minimum(arm.q_max, chi) - margin_rad


def _spread(q, k: int, lo, hi) -> np.ndarray:
    """``k`` of poses ``q`` far apart over the joints' ranges (farthest-point sampling), as indices."""
    z = (q - lo) / np.maximum(hi - lo, 1e-9)
    chosen = [int(np.argmin(np.linalg.norm(z - 0.5, axis=-1)))]
    d = np.linalg.norm(z - z[chosen[0]], axis=-1)
    while len(chosen) < k:
        i = int(np.argmax(d))
        chosen.append(i)
        d = np.minimum(d, np.linalg.norm(z - z[i], axis=-1))
    return np.array(chosen)


def _move_s(arm, a, b) -> float:
    """Time (s) of a move from ``a`` to ``b`` at the joints' speed and acceleration limits (slowest joint)."""
    d = np.abs(np.asarray(b) - np.asarray(a))
    v, acc = arm.max_speed_rad_s, arm.max_accel_rad_s2
    t = np.where(d > v * v / acc, d / v + v / acc, 2.0 * np.sqrt(d / acc))
    return float(np.max(t))


def _tour(arm, q, start) -> np.ndarray:
    """An order of poses ``q`` that keeps the motion short: the nearest next, in time, from ``start``."""
    left, order, at = list(range(len(q))), [], np.asarray(start)
    while left:
        k = min(left, key=lambda i: _move_s(arm, at, q[i]))
        order.append(k)
        left.remove(k)
        at = q[k]
    return np.array(order, dtype=int)


DRAWS = 4  # batches of random poses drawn at most to find enough the camera sees


def camera_poses(
    arm,
    cal,
    n: int = 160,
    *,
    held_out: int | None = None,
    view: CameraView | None = None,
    marker_m: float = 0.030,
    step_deg: float = 3.0,
    seed: int = 0,
) -> PoseSet:
    """The pose set of a camera calibration (see the module's doc): ``n`` poses each seen twice, approached once
    with a random sign per joint and once with the opposite signs (a ``step_deg`` move beyond it first), then
    ``held_out`` more (default n // 8, at least 6) picked at random where the camera sees the marker, seen once.
    BadInputError if the camera sees too few poses."""
    view = view or default_view(arm)
    held_out = max(6, n // 8) if held_out is None else held_out
    rng = np.random.default_rng(seed)
    step = math.radians(step_deg)
    lo, hi = _bounds(arm, cal, step)
    if np.any(hi <= lo):
        raise BadInputError(f"camera poses: {arm.joint_names[int(np.argmax(hi <= lo))]} has no range to move in")
    q = np.zeros((0, arm.n))
    for _ in range(DRAWS):  # more draws where few poses show the marker (a wrist roll turns it away from the camera)
        more = rng.uniform(lo, hi, size=(max(4000, 100 * (n + held_out)), arm.n))
        q = np.concatenate([q, more[_usable(arm, cal, view, more, marker_m, step)]])
        if len(q) >= 2 * (n + held_out):
            break
    if len(q) < 2 * (n + held_out):
        raise BadInputError(
            f"camera poses: the camera sees the marker in only {len(q)} of the arm's poses; need {2 * (n + held_out)}: "
            "move the camera so that it sees more of the arm's reach"
        )
    fit_idx = _spread(q, n, lo, hi)
    rest = np.setdiff1d(np.arange(len(q)), fit_idx)
    held_idx = rng.choice(rest, held_out, replace=False)  # where the arm is used: anywhere the camera sees it
    pick = q[np.concatenate([fit_idx, held_idx])]
    is_held = np.arange(len(pick)) >= n
    order = _tour(arm, pick, arm.home_rad)
    return _motion(arm, cal, pick[order], is_held[order], step, rng)


def _motion(arm, cal, pick, is_held, step: float, rng) -> PoseSet:
    """Waypoints through ``pick``: to each, a step beyond it then into it (observe), again from the other side
    for fitting poses."""
    wps, observe, held = [], [], []
    for p, h in zip(pick, is_held):
        sign = rng.choice([-1.0, 1.0], size=arm.n)
        for s in (sign,) if h else (sign, -sign):
            wps += [p - s * step, p]
            observe += [False, True]
            held += [False, bool(h)]
    wps = np.array(wps)
    approach = np.ones_like(wps)
    prev = np.asarray(arm.home_rad, dtype=float)
    last = np.ones(arm.n)
    total = 0.0
    for i, w in enumerate(wps):
        d = w - prev
        last = np.where(np.abs(d) > 1e-12, np.sign(d), last)
        approach[i] = last
        total += _move_s(arm, prev, w)
        prev = w
    values = cal.joints_to_values(wps)
    return PoseSet(wps, np.array(observe), np.array(held), approach, values, total)
