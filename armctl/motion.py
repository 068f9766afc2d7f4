"""Motion planning: line and joint moves -> segments -> a timed joint trajectory.

A *line move* takes the tool point along a straight Cartesian line, in the plane
(x, y) or, on an arm with a rotating base, in space (x, y, z) (and, on a 3-link
chain, turns the tool angle phi linearly from its start value to the target's).
The line is cut into segments no longer than ``segment_m``; every segment point
is solved by closed-form IK on the branch the move starts on (the elbow, and on
a base arm the side of the base axis the chain reaches to: the base is atan2 of
the point, or half a turn from it), each angle unwrapped against the previous
point (the exact limit of a warm-started Newton continuation, without its
iterations). A line starting on the base axis first turns the base (the tool
stays put) to the line's direction. Where a joint moves
more than ``max_joint_step_rad`` in one segment, that segment is cut finer; a
change that does not shrink when cut finer is a jump (the path crosses a
singularity or needs the other elbow branch) and is refused with a
``MotionError`` naming where along the line it happens.

A *joint move* interpolates every joint linearly, so all joints start and stop
together; its time is set by the joint that needs longest under its speed and
acceleration limits.

Timing: a speed profile along the path parameter ``s`` under a speed cap and an
acceleration bound (trapezoid: a forward/backward pass over the segment points,
done with cumulative minima, no Python loop). The cap is the move's speed, and
at each segment also what keeps every joint under its speed limit, so the arm
slows down where it is near full extension instead of commanding the
impossible. Every move starts and ends at rest; its duration is rounded up to a
whole number of sample periods (by slowing it slightly) so every move begins
and ends exactly on a sample. The sampled trajectory is then checked against
the joint speed and angle limits and re-timed locally where a sample would
exceed a speed limit.

SI units throughout: metres, radians, seconds.
"""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass, field, replace

import numpy as np

from . import ik
from .arm import Arm
from .branch_ik import _branch_ik, _elbow_of, _fill_axis, _ik_two_link, _wrap, arm_branch_ik, branch_ik  # noqa: F401
from .errors import JointLimitError, MotionError, UnreachableError
from .kinematics import fk, limit_excess, limit_names, link_angle, tool_point
from .redundancy import (  # noqa: F401
    CRITERION_BEST,
    CRITERION_NEAREST,
    CRITERION_PHI,
    REACH_TOL_M,
    _pitch,
    best_free_pose,
    free_angle_profile,
    pose_score,
)
from .trajectory import DEFAULT_PERIOD_S, Trajectory
from .workspace import check_reachable, fmt_point

TWO_PI = 2.0 * math.pi

DEFAULT_SPEED_M_S = 0.10
DEFAULT_ACCEL_M_S2 = 0.50
DEFAULT_SEGMENT_M = 0.002
DEFAULT_JOINT_SPEED_FRACTION = 0.5
DEFAULT_JOINT_ACCEL_RAD_S2 = math.radians(360.0)
DEFAULT_MAX_JOINT_STEP_RAD = math.radians(1.0)
#: Joint speeds are planned against this fraction of each limit; the sampled
#: trajectory is then verified against the full limit.
SPEED_MARGIN = 0.98
#: The fewest segments a line is cut into (the speed profile needs points to ramp on).
MIN_TIMING_SEGMENTS = 16
# The longest one move (or wait) may take: a speed or acceleration so small that a move would take
# longer is a mistake, and sampling it would fill the memory.
MAX_MOVE_S = 3600.0
#: A segment this short that still moves a joint more than the bound is a jump.
MIN_SEGMENT_M = 1e-6
# (REACH_TOL_M, how far a target may lie outside the reach annulus and count as on its edge: armctl.redundancy)


# --------------------------------------------------------------------------- moves


@dataclass(frozen=True)
class LineMove:
    """Straight-line move of the tool point to ``target_m`` (x, y in m; x, y, z on a base arm).

    ``phi_rad``: tool angle at the end (3-link chains only); None keeps the
    redundancy free (the end angle comes from IK near the start pose, then phi
    is interpolated). ``speed_m_s`` and ``accel_m_s2`` bound the tool point's
    speed and acceleration along the line; ``segment_m`` is the longest
    Cartesian segment. ``end_q_rad`` (optional) is the exact pose the move must
    end in (a joint pose used as a line target). ``jerk_time_s`` > 0 turns the
    trapezoid speed profile into an S-curve whose acceleration ramps over that time. ``reach_q_rad`` (optional):
    joint angles the caller solved for ``target_m`` (inside every limit): the planner checks them (FK) instead of
    solving the end again; angles that do not reach the target (or its tool angle) are ignored.
    ``blend_m`` > 0: the tool may pass the corner at the end of this line within that distance of it,
    without stopping, when the next move is a line too (``plan_moves``; see ``blend_chain``); ``stop``
    forces a rest at the end whatever the blend.
    """

    target_m: tuple[float, ...]
    phi_rad: float | None = None
    speed_m_s: float = DEFAULT_SPEED_M_S
    accel_m_s2: float = DEFAULT_ACCEL_M_S2
    segment_m: float = DEFAULT_SEGMENT_M
    end_q_rad: tuple[float, ...] | None = None
    jerk_time_s: float = 0.0
    label: str = ""
    blend_m: float = 0.0
    stop: bool = False
    reach_q_rad: tuple[float, ...] | None = None


@dataclass(frozen=True)
class JointMove:
    """Joint-space move to ``q_rad``; all joints start and stop together.

    ``speed_fraction`` of each joint's speed limit (0..1], ``accel_rad_s2``
    the acceleration bound of every joint (rad/s^2); ``jerk_time_s`` as for LineMove. ``blend_m`` > 0: the
    move after it (a joint move or a line) may start before this one has come to rest, the tool passing within
    that distance of both moves' own paths (``blend_joint_moves``); ``stop`` forces a rest at the end.
    """

    q_rad: tuple[float, ...]
    speed_fraction: float = DEFAULT_JOINT_SPEED_FRACTION
    accel_rad_s2: float = DEFAULT_JOINT_ACCEL_RAD_S2
    jerk_time_s: float = 0.0
    label: str = ""
    blend_m: float = 0.0
    stop: bool = False


@dataclass(frozen=True)
class GripperMove:
    """Move the gripper servo to ``angle_rad`` at its speed limit; the arm holds still."""

    angle_rad: float
    speed_fraction: float = 1.0
    accel_rad_s2: float = math.radians(1800.0)
    label: str = ""


@dataclass(frozen=True)
class Wait:
    """Hold the current pose for ``duration_s`` seconds."""

    duration_s: float
    label: str = ""


Move = LineMove | JointMove | GripperMove | Wait


@dataclass
class MovePlan:
    """One planned move: its samples (local time) and what the summary needs."""

    kind: str
    label: str
    t_s: np.ndarray  # (k+1,) local sample times, 0 .. duration
    q_rad: np.ndarray  # (k+1, n)
    gripper_rad: np.ndarray  # (k+1,)
    points_m: np.ndarray = field(default_factory=lambda: np.zeros((0, 2)))
    segments: int = 0
    line_m: tuple | None = None  # (start point, end point) for line moves
    slowed: bool = False  # joint speed limits made this line move take longer
    path: object = None  # line moves: the LinePath it was planned on (blending re-uses it)
    blended: bool = False  # part of a blended chain (it does not start or end at rest at a shared corner)

    @property
    def duration_s(self) -> float:
        return float(self.t_s[-1])


@dataclass
class Plan:
    """A planned program: the trajectory and per-move details for the summary."""

    trajectory: Trajectory
    moves: list[MovePlan]
    arm: Arm

    def summary(self) -> dict:
        """Duration (s), segment count, peak joint speeds vs limits (deg/s), worst path deviation (m)."""
        return summarize(self.arm, self.trajectory, self.moves)

    def plot(self, *, title: str = "", poses: int = 6):
        """A matplotlib figure of the plan (``armctl.plot.plan_figure``): inline in Jupyter, ``savefig`` writes it."""
        from .plot import plan_figure

        return plan_figure(self, title=title, poses=poses)


def branch_of(arm: Arm, q) -> tuple[float, float]:
    """(side, elbow) of pose ``q``: the sign of the chain's serial elbow angle and, on a base arm, whether
    the tool is on the base's side of its axis (+1) or reached back over it (-1)."""
    if not arm.layered:
        return 1.0, _elbow_of(q)
    from .kinematics import chain_angles

    c = chain_angles(arm, q)
    side = 1.0
    if arm.has_base:
        u = fk(arm.links_m, c)[0] + arm.base_offset_m
        side = 1.0 if u >= 0.0 else -1.0
    return side, (1.0 if c[1] >= 0.0 else -1.0)


# --------------------------------------------------------------------------- errors


def _located(exc: MotionError, label: str) -> MotionError:
    """The same error (class and fields kept) with ``label`` in front of its message."""
    if not label:
        return exc
    out = copy.copy(exc)
    out.args = (f"{label}: {exc.args[0] if exc.args else exc}",)
    return out


def _where(frac: float, point) -> str:
    return f"{100.0 * frac:.0f}% along the line, at {fmt_point(point)} m"


def _limit_error(arm: Arm, q, where: str, *, hint: str, peak=None) -> JointLimitError:
    """JointLimitError for the joint of ``q`` furthest outside its limits.

    ``peak`` (n,): the furthest each joint goes along the move, named when it
    is beyond ``q`` (the first pose out of limits).
    """
    q = np.asarray(q, dtype=float)
    if arm.parallelogram:
        ex = limit_excess(arm, q)
        if int(np.argmax(ex)) == arm.n:  # the coupled limit: the angle between upper arm and forearm
            lo, hi = arm.link_angle_rad
            a = float(link_angle(arm, q))
            what = (
                f"would cross its limit {math.degrees(lo if a < lo else hi):.0f} deg"
                if peak is not None
                else f"would be {math.degrees(a):.1f} deg"
            )
            return JointLimitError(
                f"the angle between upper arm and forearm {what} {where}, outside "
                f"link_angle_deg [{math.degrees(lo):.0f}, {math.degrees(hi):.0f}]; {hint}",
                q=q,
            )
    lo_excess = arm.q_min - q
    hi_excess = q - arm.q_max
    j = int(np.argmax(np.maximum(lo_excess, hi_excess)))
    crossed = arm.q_max[j] if hi_excess[j] > lo_excess[j] else arm.q_min[j]
    if peak is not None:
        what = (
            f"would cross its limit {math.degrees(crossed):.0f} deg {where} "
            f"(and go on to {math.degrees(peak[j]):.1f} deg)"
        )
    else:
        what = f"would be at {math.degrees(q[j]):.1f} deg {where}"
    return JointLimitError(
        f"{limit_names(arm)[j]} {what}, outside its "
        f"limits [{math.degrees(arm.q_min[j]):.0f}, {math.degrees(arm.q_max[j]):.0f}] deg; {hint}",
        joint=j,
        q=np.asarray(q, dtype=float),
    )


def _outside_limits(arm: Arm, q, tol: float = 1e-9) -> np.ndarray:
    if arm.parallelogram:
        return np.any(limit_excess(arm, q) > tol, axis=-1)
    return np.any((q < arm.q_min - tol) | (q > arm.q_max + tol), axis=-1)


# --------------------------------------------------------------------------- IK for move end poses


def solve_pose(arm: Arm, target_m, phi_rad: float | None, q_near, *, criterion: str = "best") -> np.ndarray:
    """Joint angles (rad) reaching ``target_m`` (m) [with tool angle ``phi_rad``], nearest ``q_near``.

    A 3-link chain without a tool angle is redundant: ``criterion="best"`` (default) takes the pose furthest
    inside the joint limits and away from singularity (``best_free_pose``), ``"nearest"`` the one IK finds
    nearest ``q_near``. Raises UnreachableError (with the shortfall) or JointLimitError when no
    solution inside the joint limits exists.
    """
    target = np.asarray(target_m, dtype=float)
    q_near = np.asarray(q_near, dtype=float)
    phi = phi_rad if arm.n_links == 3 else None
    if phi is None and arm.n_links == 3 and criterion == "best" and len(target) == arm.dim:
        best = best_free_pose(arm, target)
        if best is not None:
            return _nearest_turn(best[0], q_near) if not arm.within_limits(best[0]) else best[0]
    if arm.layered:
        return _solve_pose_layered(arm, target, phi, q_near)
    check_reachable(arm, target, phi)
    # 2 links or a given tool angle: the closed-form branch inside the limits nearest q_near;
    # a redundant 3-link arm: DLS from q_near (ik.solve decides, the same as `armctl ik`).
    res = ik.solve(arm, target, phi=phi, q0=q_near)
    if res.ok:
        return np.asarray(res.q, dtype=float)
    if arm.n == 2 or phi is not None:
        q, _ = branch_ik(arm, target[None, :], None if phi is None else np.array([phi]), _elbow_of(q_near))
        raise _limit_error(
            arm,
            _nearest_turn(q[0], q_near),
            f"at ({target[0]:.4f}, {target[1]:.4f}) m",
            hint="neither elbow branch fits; move the target",
        )
    raise JointLimitError(
        f"no pose inside the joint limits reaches ({target[0]:.4f}, {target[1]:.4f}) m "
        f"({res.reason or 'IK failed'}); give the pose a tool angle phi_deg or move it",
        q=np.asarray(res.q, dtype=float),
    )


def _solve_pose_layered(arm: Arm, target, phi, q_near) -> np.ndarray:
    from .ik_arm import check_target

    check_target(arm, target)
    res = ik.solve(arm, target, phi=phi, q0=q_near)
    if res.ok:
        return np.asarray(res.q, dtype=float)
    near = tool_point(arm, res.q)
    if res.reason and res.reason.startswith("unreachable"):
        raise UnreachableError(
            f"target {fmt_point(target)} m is {res.shortfall_m * 1000:.1f} mm outside the reach of arm "
            f"'{arm.name}' inside its joint limits (nearest reachable point {fmt_point(near)} m)",
            target=tuple(float(v) for v in target),
            shortfall_m=res.shortfall_m,
        )
    raise JointLimitError(
        f"no pose inside the joint limits reaches {fmt_point(target)} m: the nearest reachable point "
        f"{fmt_point(near)} m is {res.error_m * 1000:.1f} mm away"
        + ("" if phi is None or arm.n_links != 3 else " at this tool angle")
        + "; move the target",
        q=np.asarray(res.q, dtype=float),
    )


def _nearest_turn(q, ref):
    """``q`` shifted by whole turns per joint to lie nearest ``ref``."""
    return q + TWO_PI * np.round((ref - q) / TWO_PI)


# --------------------------------------------------------------------------- line paths


@dataclass
class LinePath:
    """A line move solved at its segment points."""

    s: np.ndarray  # (K,) path parameter (m of equivalent length), 0 .. length
    q: np.ndarray  # (K, n) joint angles at the points (rad), continuous
    points: np.ndarray  # (K, dim) tool points (m)
    start: np.ndarray
    end: np.ndarray
    phi0: float
    dphi: float
    elbow: float
    length: float
    speed_scale: float  # tool speed per unit ds/dt (|dp|/length)
    links: np.ndarray
    arm: Arm | None = None  # a base or parallelogram arm (None: the planar serial chain of ``links``)
    side: float = 1.0  # base arms: +1 the base points at the tool, -1 half a turn from it
    profile: tuple | None = None  # free tool angle: (u knots, phi offsets from phi0) of a piecewise-linear profile

    def phi_at(self, u):
        """The tool angle (rad) at fractions ``u`` of the line: linear from phi0 to phi0 + dphi, or the profile."""
        u = np.asarray(u, dtype=float)
        if self.profile is None:
            return self.phi0 + u * self.dphi
        return self.phi0 + np.interp(u, self.profile[0], self.profile[1])

    def at(self, s) -> np.ndarray:
        """Joint angles (rad) at path parameters ``s``: exact IK, continuous with the segment points."""
        s = np.asarray(s, dtype=float)
        u = s / self.length if self.length > 0 else np.zeros_like(s)
        pts = self.start + u[:, None] * (self.end - self.start)
        phi = self.phi_at(u)
        ref = np.stack([np.interp(s, self.s, self.q[:, j]) for j in range(self.q.shape[1])], axis=-1)
        if self.arm is None:
            q, _ = _branch_ik(self.links, pts, phi, self.elbow)
        else:
            q, _ = arm_branch_ik(
                self.arm, pts, None if self.arm.n_links == 2 else phi, self.side, self.elbow, float(ref[0, 0])
            )
        return _nearest_turn(q, ref)


def plan_line_path(arm: Arm, q0, move: LineMove, *, max_joint_step_rad: float = DEFAULT_MAX_JOINT_STEP_RAD) -> LinePath:
    """Cut a line move into segments and solve each point; raise MotionError if it cannot be done.

    ``q0``: start pose (rad). Errors say where along the line (percent and
    point) the problem is.
    """
    q0 = np.asarray(q0, dtype=float)
    if len(move.target_m) != arm.dim:
        from .ik_arm import check_target

        check_target(arm, move.target_m)
    if arm.n_links == 2:
        if move.phi_rad is not None:
            raise MotionError("a tool angle (phi) needs a 3-link arm; this arm has 2 links")
        return _line_path(arm, q0, move, None, max_joint_step_rad)
    if move.end_q_rad is not None:
        return _line_path(arm, q0, move, _pitch(arm, move.end_q_rad), max_joint_step_rad)
    if move.phi_rad is not None:
        return _line_path(arm, q0, move, float(move.phi_rad), max_joint_step_rad)
    return _free_angle_path(arm, q0, move, max_joint_step_rad)


def _free_angle_path(arm: Arm, q0, move: LineMove, max_joint_step_rad: float) -> LinePath:
    """A line with a free tool angle (null-space motion), the first of these that stays inside every limit:
    the tool angle turning linearly to the end pose IK finds nearest the start pose (the least joint motion:
    the tool keeps its angle as far as it can); to the best end pose on the start's branch
    (``best_free_pose``: furthest inside the limits and from singularity); along the tool-angle profile
    ``free_angle_profile`` finds (the joints furthest inside their limits all along the line); to end angles
    near the nearest pose's (5 deg steps, up to 90 deg away). Refused (the first error) only when none works."""
    target = np.asarray(move.target_m, dtype=float)
    if float(np.linalg.norm(target - tool_point(arm, q0))) <= 1e-9:
        return _line_path(arm, q0, move, _pitch(arm, q0), max_joint_step_rad)  # already there: keep the angle
    first = None
    phi_ik = None
    try:
        q_ik = solve_pose(arm, target, None, q0, criterion="nearest")
        phi_ik = _pitch(arm, q_ik)
        return _line_path(arm, q0, replace(move, reach_q_rad=tuple(q_ik)), phi_ik, max_joint_step_rad)
    except MotionError as exc:
        first = exc
    side, elbow = branch_of(arm, q0)
    best = best_free_pose(arm, target, branches=[(side, elbow)])
    if best is not None:
        try:
            return _line_path(arm, q0, move, best[1], max_joint_step_rad)
        except MotionError as exc:
            first = first or exc
    for grid_deg, steps in ((1.0, 1), (0.5, 2)):
        profile = free_angle_profile(arm, q0, target, side, elbow, grid_deg=grid_deg, steps_per_5mm=steps)
        if profile is None:
            break
        try:
            return _line_path(arm, q0, move, None, max_joint_step_rad, profile=profile)
        except MotionError as exc:
            first = first or exc
    if phi_ik is None:
        raise first
    for d in sorted(np.radians(np.arange(-90.0, 90.1, 5.0)), key=abs)[1:]:
        try:
            return _line_path(arm, q0, move, phi_ik + float(d), max_joint_step_rad)
        except MotionError as exc:
            first = first or exc
    raise first


def _line_path(
    arm: Arm, q0, move: LineMove, phi_end: float | None, max_joint_step_rad: float, profile=None
) -> LinePath:
    """``profile``: (u knots, tool angle offsets from the start's) of a free tool angle's profile; else the
    tool angle turns linearly to ``phi_end``."""
    start = tool_point(arm, q0)
    end = np.asarray(move.target_m, dtype=float)
    n = arm.n_links
    phi0 = _pitch(arm, q0)
    dphi = 0.0 if phi_end is None else float(_wrap(phi_end - phi0))
    turn = abs(dphi)
    if profile is not None:
        dphi = float(profile[1][-1])
        turn = float(np.sum(np.abs(np.diff(profile[1]))))
    if arm.layered:
        if not _reaches(arm, move.reach_q_rad, end, None if n == 2 else phi0 + dphi):  # (solved by the caller)
            solve_pose(arm, end, None if n == 2 else phi0 + dphi, q0)  # the end reachable inside every limit
    else:
        check_reachable(arm, end, None if n == 2 else phi0 + dphi)
    dist = float(np.linalg.norm(end - start)) if arm.has_base else float(np.hypot(*(end - start)))
    # A pure turn of the tool counts as the distance the tool tip's last link sweeps.
    length = max(dist, float(arm.links_m[-1]) * turn) if n == 3 else dist
    side, elbow = branch_of(arm, q0)
    rel = q0[1] if not arm.layered else float(_chain_elbow(arm, q0))
    if abs(rel) < 1e-9 and move.end_q_rad is not None:
        side, elbow = branch_of(arm, np.asarray(move.end_q_rad, dtype=float))
    path = LinePath(
        s=np.zeros(1),
        q=q0[None, :].copy(),
        points=start[None, :],
        start=start,
        end=end,
        phi0=phi0,
        dphi=dphi,
        elbow=elbow,
        length=length,
        speed_scale=(dist / length) if length > 0 else 0.0,
        links=arm.links_m,
        arm=arm if arm.layered else None,
        side=side,
        profile=profile,
    )
    if length <= 0.0:
        return path

    # At least MIN_TIMING_SEGMENTS, so even a sub-millimetre move gets a proper speed ramp.
    k = max(MIN_TIMING_SEGMENTS, math.ceil(length / move.segment_m - 1e-9))
    s = np.linspace(0.0, length, k + 1)
    q, pts, excess = _solve_points(path, s)
    bad_reach = excess > REACH_TOL_M
    if np.any(bad_reach):
        i = int(np.argmax(bad_reach))
        raise UnreachableError(
            f"the line leaves the reach of the arm {_where(s[i] / length, pts[i])} "
            f"(by {1000 * excess[i]:.1f} mm{' with the tool angle turning' if n == 3 else ''}); "
            "add a via point or change the target",
            target=tuple(pts[i]),
            shortfall_m=float(excess[i]),
        )
    q = _continuous(q, q0)
    for _ in range(40):
        step = np.abs(np.diff(q, axis=0)).max(axis=1)
        too_big = step > max_joint_step_rad
        if not np.any(too_big):
            break
        seg_len = np.diff(s)
        jump = too_big & (seg_len < MIN_SEGMENT_M)
        if np.any(jump):
            i = int(np.argmax(jump))
            raise MotionError(
                f"the joints would jump by {math.degrees(step[i]):.0f} deg {_where(s[i] / length, pts[i])} "
                "(the line crosses a singularity or needs the other elbow branch); "
                "use a joint move there or add a via point"
            )
        # Cut each offending segment into enough pieces for the bound (at least halves).
        pieces = np.where(too_big, np.maximum(2, np.ceil(step / max_joint_step_rad)), 1).astype(int)
        idx = np.nonzero(too_big)[0]
        extra = [np.linspace(s[i], s[i + 1], pieces[i] + 1)[1:-1] for i in idx]
        s = np.sort(np.concatenate([s, *extra]))
        q, pts, excess = _solve_points(path, s)
        q = _continuous(q, q0)
    else:  # pragma: no cover - 40 rounds of refinement means a discontinuity
        raise MotionError("the line could not be cut fine enough to keep joint steps small")
    outside = _outside_limits(arm, q)
    if np.any(outside):
        i = int(np.argmax(outside))
        far = np.where(q[i] > arm.q_max, q.max(axis=0), q.min(axis=0))
        raise _limit_error(
            arm,
            q[i],
            _where(s[i] / length, pts[i]),
            peak=far,
            hint="split the line with a via point or a joint move, or move the target",
        )
    if move.end_q_rad is not None and np.abs(_wrap(q[-1] - np.asarray(move.end_q_rad))).max() > 1e-6:
        raise MotionError("a line move to this joint pose would end on the other elbow branch; use a joint move")
    q[0] = q0  # where the arm is (closed form loses ~1e-8 rad right at full extension)
    path.s, path.q, path.points = s, q, pts
    return path


def _reaches(arm: Arm, q, end, phi: float | None) -> bool:
    """True if joint angles ``q`` (None: none given) put the tool on ``end`` [at tool angle ``phi``] inside
    every joint limit: the end is reachable (``solve_pose`` would find a pose; which one it is does not matter)."""
    if q is None:
        return False
    q = np.asarray(q, dtype=float)
    if q.shape != (arm.n,) or not arm.within_limits(q):
        return False
    if float(np.linalg.norm(tool_point(arm, q) - end)) > 1e-9:
        return False
    return phi is None or abs(float(_wrap(_pitch(arm, q) - phi))) <= 1e-9


def _solve_points(path: LinePath, s):
    u = s / path.length
    pts = path.start + u[:, None] * (path.end - path.start)
    phi = path.phi_at(u)
    if path.arm is None:
        q, excess = _branch_ik(path.links, pts, phi, path.elbow)
    else:
        q, excess = arm_branch_ik(
            path.arm, pts, None if path.arm.n_links == 2 else phi, path.side, path.elbow, float(path.q[0, 0])
        )
    return q, pts, excess


def _chain_elbow(arm: Arm, q) -> float:
    """The chain's serial elbow angle (rad) of pose ``q``."""
    from .kinematics import chain_angles

    return float(chain_angles(arm, q)[1])


def _continuous(q, q0):
    """Unwrap each joint along the path, anchored on the start pose ``q0``."""
    q = np.unwrap(q, axis=0)
    return q + TWO_PI * np.round((q0 - q[0]) / TWO_PI)


# --------------------------------------------------------------------------- speed profiles


def speed_profile(s, cap, accel: float):
    """Fastest speeds at path points ``s`` under speed caps ``cap`` and acceleration ``accel`` (one value, or
    one per segment).

    Starts and ends at rest. Between points the acceleration is constant.
    Returns (v (K,), t (K,)): speed at each point and the time it is passed.
    Units are those of ``s`` (m or rad, or 1 for a normalised path) per second.
    """
    s = np.asarray(s, dtype=float)
    ds = np.diff(s)
    u_cap = np.asarray(cap, dtype=float) ** 2
    u_cap[0] = u_cap[-1] = 0.0
    # ``accel`` may be one bound or one per segment (len(s) - 1): v^2 grows by 2 a ds over each
    reach = np.concatenate([[0.0], np.cumsum(2.0 * accel * ds)])  # v^2 gained accelerating from 0
    fwd = reach + np.minimum.accumulate(u_cap - reach)
    back = reach[-1] - reach
    u = back + np.minimum.accumulate((fwd - back)[::-1])[::-1]
    v = np.sqrt(np.maximum(u, 0.0))
    vsum = v[:-1] + v[1:]
    dt = np.divide(2.0 * ds, vsum, out=np.zeros_like(ds), where=vsum > 0)
    return v, np.concatenate([[0.0], np.cumsum(dt)])


def _s_at(t_query, s, v, t):
    """Path parameter at times ``t_query`` for a profile (s, v, t) with constant accel between points."""
    k = np.clip(np.searchsorted(t, t_query, side="right") - 1, 0, len(s) - 2)
    ds = s[k + 1] - s[k]
    acc = np.divide(v[k + 1] ** 2 - v[k] ** 2, 2.0 * ds, out=np.zeros_like(ds), where=ds > 0)
    tau = np.clip(t_query - t[k], 0.0, t[k + 1] - t[k])
    return np.clip(s[k] + v[k] * tau + 0.5 * acc * tau * tau, s[k], s[k + 1])


def _check_duration(duration: float, kind: str = "move") -> None:
    if not duration <= MAX_MOVE_S:
        raise MotionError(
            f"this {kind} would take {duration:.4g} s, more than the {MAX_MOVE_S:.0f} s one move may take"
            + ("" if kind == "wait" else "; raise its speed or acceleration")
        )


def _sample_times(duration: float, period: float):
    """Sample times covering ``duration`` stretched to whole periods: (local times, profile times)."""
    _check_duration(duration)
    k = max(1, math.ceil(duration / period - 1e-9))
    t_local = np.arange(k + 1) * period
    return t_local, t_local * (duration / (k * period))


def s_curve(s, v, t, jerk_time_s: float):
    """Smooth a trapezoid profile (s, v, t) into an S-curve: (times, path parameter) on a fine grid.

    The speed is averaged over a sliding window of ``jerk_time_s``: the
    acceleration then ramps over that time instead of jumping (jerk <= accel /
    jerk_time_s), the peak speed and acceleration do not grow, and the move
    takes ``jerk_time_s`` longer. Starts and ends at rest, on the same path.
    """
    duration = float(t[-1])
    n = max(2, math.ceil(jerk_time_s / min(jerk_time_s / 16, DEFAULT_PERIOD_S / 4)))
    h = jerk_time_s / n
    steps = max(1, math.ceil(duration / h))
    tf = np.arange(steps + 1) * (duration / steps)
    sf = _s_at(tf, s, v, t)
    sf[-1] = s[-1]
    # a moving average of s(t) over the window is the integral of the window-averaged speed
    padded = np.concatenate([np.zeros(n), sf, np.full(n, s[-1])])
    cs = np.concatenate([[0.0], np.cumsum(padded)])
    sm = (cs[n + 1 :] - cs[1 : len(cs) - n]) / n
    sm = sm[: steps + n + 1]
    return np.arange(len(sm)) * (duration / steps), sm


def _timed(
    s,
    cap,
    accel,
    q_at,
    speed_limit,
    period,
    *,
    label_kind: str,
    jerk_time_s: float = 0.0,
    with_s: bool = False,
    profile=speed_profile,
    keep_caps: bool = False,
    accel_limit=None,
):
    """Time a path and sample it; re-time locally until no sampled joint speed exceeds its limit.

    ``q_at(s)`` gives (K, m) channel angles; ``speed_limit`` (m,) rad/s;
    ``jerk_time_s`` > 0 smooths the trapezoid into an S-curve. ``keep_caps``: the S-curve must keep under the
    speed caps too (a blended chain's corners: averaging the speed over the window lifts it where the caps
    dip, and the turn's v^2 kappa with it), slowed locally where it does not; ``accel_limit`` (m,) rad/s^2: the
    same for each joint's sampled acceleration (nothing changes where every sample is within it).
    Returns (t_local, q_samples, slowed).
    """
    cap = np.array(cap, dtype=float)
    cap0 = cap.copy()
    for _ in range(12):
        v, t = profile(s, cap, accel)
        if not t[-1] > 0 and s[-1] > s[0]:  # speeds so small that v^2 vanished against the rounding of accel*s
            raise MotionError(f"the speed or acceleration of this {label_kind} is too small to time it")
        if jerk_time_s > 0 and t[-1] > 0:
            ts, ss = s_curve(s, v, t, jerk_time_s)
            if keep_caps and _lower_caps_under_smoothing(s, cap, cap0, v, ts, ss):
                continue
            t_local, t_prof = _sample_times(float(ts[-1]), period)
            s_samp = np.interp(t_prof, ts, ss)
        else:
            t_local, t_prof = _sample_times(float(t[-1]), period)
            s_samp = _s_at(t_prof, s, v, t)
        s_samp[0], s_samp[-1] = s[0], s[-1]
        q = q_at(s_samp)
        rate = np.abs(np.diff(q, axis=0)) / period
        ratio = (rate / speed_limit).max(axis=1)
        if accel_limit is not None and len(q) > 2 and not np.any(ratio > 1.0 + 1e-12):
            # a blended run's S-curve (where averaging lifted the speed through a bend, a joint's q_ss s'^2 grows
            # with it), a free tool angle's profile turning at a knot within one sample: slow down around each
            # sample whose sampled acceleration is over the limit
            acc = (np.abs(np.diff(q, 2, axis=0)) / period**2 / accel_limit).max(axis=1)
            over = np.nonzero(acc > 1.0 + 1e-9)[0]
            for i in over:
                lo, hi = np.searchsorted(s, [s_samp[i], s_samp[i + 2]])
                sl = slice(max(lo - 2, 0), min(hi + 2, len(s)))
                cap[sl] = np.minimum(cap[sl], v[sl] * 0.99 / acc[i])
            if len(over):
                continue
        if not np.any(ratio > 1.0 + 1e-12):
            return (t_local, q, False, s_samp) if with_s else (t_local, q, False)
        # Slow the path down where a sample interval was too fast, by that much and a bit.
        for i in np.nonzero(ratio > 1.0 + 1e-12)[0]:
            lo, hi = np.searchsorted(s, [s_samp[i], s_samp[i + 1]])
            sl = slice(max(lo - 1, 0), min(hi + 1, len(s)))
            cap[sl] = np.minimum(cap[sl], v[sl] * 0.99 / ratio[i])
    raise MotionError(f"could not time this {label_kind} under the joint speed limits")  # pragma: no cover


def _lower_caps_under_smoothing(s, cap, cap0, v, ts, ss) -> bool:
    """Where the smoothed profile (``ts``, ``ss``) passes a point of the path faster than the caps ``cap0`` of the
    grid points around it allow, lower ``cap`` there (in place) by that much and a bit. True if any was."""
    vs = np.diff(ss) / np.maximum(np.diff(ts), 1e-300)
    mid = 0.5 * (ss[:-1] + ss[1:])
    k = np.clip(np.searchsorted(s, mid), 1, len(s) - 1)
    allowed = np.maximum(cap0[k - 1], cap0[k])
    ratio = vs / np.maximum(allowed, 1e-300)
    over = np.nonzero(ratio > 1.0 + 1e-9)[0]
    if len(over) == 0:
        return False
    for i in over:
        lo, hi = np.searchsorted(s, [ss[i], ss[i + 1]])
        sl = slice(max(lo - 2, 0), min(hi + 2, len(s)))
        cap[sl] = np.minimum(cap[sl], v[sl] * 0.99 / ratio[i])
    return True


def _caps_from_joints(s, q, speed_limit, base_cap):
    """Per-point speed cap: ``base_cap`` and, per segment, what keeps every joint under its limit."""
    ds = np.diff(s)
    rate = np.abs(np.diff(q, axis=0)) / np.maximum(ds, 1e-300)[:, None]  # rad per unit s
    seg_cap = np.min(SPEED_MARGIN * speed_limit / np.maximum(rate, 1e-300), axis=1)
    seg_cap = np.minimum(seg_cap, base_cap)
    cap = np.full(len(s), float(base_cap))
    cap[:-1] = np.minimum(cap[:-1], seg_cap)
    cap[1:] = np.minimum(cap[1:], seg_cap)
    return cap, bool(np.any(seg_cap < base_cap * (1 - 1e-9)))


def joint_accel_bounds(s, q, accel_limit, cap, accel):
    """Speed caps (per point) and path accelerations (per segment) that keep every joint's acceleration
    within ``accel_limit`` (rad/s^2) on the path (s, q).

    A joint's acceleration is q_s s'' + q_ss s'^2 (q_s, q_ss its first and second derivatives along s).
    The caps leave at most half of each limit to the curvature term (q_ss cap^2 <= A / 2); each segment's
    path acceleration then keeps |q_s| a + |q_ss| cap^2 <= 0.98 A with the segment's largest cap (the
    speed there is never higher). Where nothing binds, ``cap`` and ``accel`` come back unchanged (the same
    objects), so arms whose joints never reach their limits plan exactly as before.
    """
    s = np.asarray(s, dtype=float)
    q = np.asarray(q, dtype=float)
    A = np.asarray(accel_limit, dtype=float)
    if len(s) < 2:
        return cap, accel
    slope, curv = _derivatives(s, q)
    curv = np.abs(curv)
    cap = np.asarray(cap, dtype=float)
    with np.errstate(divide="ignore"):
        v2 = np.min(0.5 * A / np.maximum(curv, 1e-300), axis=1)
    new_cap = cap
    if np.any(v2 < cap * cap):
        new_cap = np.minimum(cap, np.sqrt(v2))
    seg_cap2 = np.maximum(new_cap[:-1], new_cap[1:]) ** 2
    seg_curv = np.maximum(curv[:-1], curv[1:])
    room = SPEED_MARGIN * A[None, :] - seg_curv * seg_cap2[:, None]
    with np.errstate(divide="ignore", invalid="ignore"):
        a_j = np.min(np.where(np.abs(slope) > 1e-300, room / np.abs(slope), np.inf), axis=1)
    a_j = np.maximum(a_j, 1e-9)
    new_acc = accel
    if np.any(a_j < np.asarray(accel)):
        new_acc = np.minimum(accel, a_j)
    return new_cap, new_acc


def _derivatives(s, q):
    """Per segment dq/ds (K-1, m) and per point d2q/ds2 (K, m) of a path sampled at (s, q)."""
    ds = np.diff(s)
    slope = np.diff(q, axis=0) / np.maximum(ds, 1e-300)[:, None]
    curv = np.zeros_like(q)
    if len(ds) > 1:
        curv[1:-1] = 2.0 * np.diff(slope, axis=0) / np.maximum(ds[:-1] + ds[1:], 1e-300)[:, None]
        curv[0], curv[-1] = curv[1], curv[-2]
    return slope, curv


def joint_accel_profile(s, cap, accel, q, accel_limit):
    """Fastest speeds at path points ``s`` (as ``speed_profile``: caps, path acceleration ``accel``, rest at
    both ends) that also keep each joint's acceleration q_s s'' + q_ss s'^2 within ``accel_limit`` (rad/s^2,
    with the planning margin) at both ends of every segment, the path acceleration constant over each.

    The time-optimal profile's two passes (as in TOPP-RA): backwards, the largest squared speed at each point
    from which the rest of the path can still be braked to rest; forwards, the largest acceleration every
    constraint allows, within that bound. The constraints are linear in the squared speeds of a segment's
    two ends, so each step is a few divisions per joint. Returns (v, t).
    """
    s = np.asarray(s, dtype=float)
    K = len(s)
    ds = np.diff(s).tolist()
    slope, curv = _derivatives(s, np.asarray(q, dtype=float))
    A = (SPEED_MARGIN * np.asarray(accel_limit, dtype=float)).tolist()
    acc = np.broadcast_to(np.asarray(accel, dtype=float), (K - 1,)).tolist()
    U = (np.asarray(cap, dtype=float) ** 2).tolist()
    U[0] = U[-1] = 0.0
    sl, cv = slope.tolist(), curv.tolist()
    m = len(A)

    def upper(hi, alpha, beta, a_lim):
        # -a_lim <= alpha x + beta <= a_lim: the upper bound on x it gives
        if alpha > 1e-300:
            return min(hi, (a_lim - beta) / alpha)
        if alpha < -1e-300:
            return min(hi, (-a_lim - beta) / alpha)
        return hi

    ub = [0.0] * K
    for k in range(K - 2, -1, -1):
        un, h = ub[k + 1], 2.0 * ds[k]
        if h <= 0.0:
            ub[k] = min(U[k], un)
            continue
        hi = min(U[k], un + h * acc[k])  # x = u_k; a = (un - x) / h >= -acc
        for j in range(m):
            g = sl[k][j] / h
            hi = upper(hi, cv[k][j] - g, g * un, A[j])  # at the segment's start
            hi = upper(hi, -g, (g + cv[k + 1][j]) * un, A[j])  # at its end
        ub[k] = max(hi, 0.0)
    u = [0.0] * K
    for k in range(K - 1):
        x, h = u[k], 2.0 * ds[k]
        if h <= 0.0:
            u[k + 1] = min(x, ub[k + 1])
            continue
        hi = min(ub[k + 1], x + h * acc[k])  # y = u_{k+1}; a = (y - x) / h <= acc
        for j in range(m):
            g = sl[k][j] / h
            hi = upper(hi, g, (cv[k][j] - g) * x, A[j])
            hi = upper(hi, g + cv[k + 1][j], -g * x, A[j])
        u[k + 1] = max(hi, 0.0)
    v = np.sqrt(np.maximum(np.array(u), 0.0))
    vsum = v[:-1] + v[1:]
    dsa = np.diff(s)
    dt = np.divide(2.0 * dsa, vsum, out=np.zeros_like(dsa), where=vsum > 0)
    return v, np.concatenate([[0.0], np.cumsum(dt)])


def _profile_for(s, q, accel_limit, cap, accel):
    """The speed profile function a path needs: ``speed_profile`` where no joint acceleration limit can
    bind (the very numbers of the planner before joint acceleration limits), else one that keeps
    ``speed_profile``'s answer where it keeps every joint within its limit and otherwise gives
    ``joint_accel_profile``'s."""
    s = np.asarray(s, dtype=float)
    if len(s) < 3:
        return speed_profile
    A = SPEED_MARGIN * np.asarray(accel_limit, dtype=float)
    ds = s[1:] - s[:-1]
    slope = (q[1:] - q[:-1]) / ds[:, None]
    # the most any joint could accelerate anywhere on the path: steepest slope at the largest path
    # acceleration plus sharpest bend at the highest speed cap (a quick bound, all joints at once:
    # where it holds, nothing binds; whole-array reductions, as this runs for every line)
    a_max = accel if isinstance(accel, float) else float(np.max(accel))
    bend = float(np.abs(slope[1:] - slope[:-1]).max()) / (0.5 * float((ds[:-1] + ds[1:]).min()))
    if float(np.abs(slope).max()) * a_max + bend * float(cap.max()) ** 2 <= float(A.min()):
        return speed_profile
    slope, curv = _derivatives(s, q)

    def profile(s_, cap_, acc_):
        v, t = speed_profile(s_, cap_, acc_)
        u = v * v
        a = np.diff(u) / np.maximum(2.0 * np.diff(s_), 1e-300)
        worst = np.maximum(
            np.abs(slope * a[:, None] + curv[:-1] * u[:-1, None]), np.abs(slope * a[:, None] + curv[1:] * u[1:, None])
        )
        if np.all(worst <= A * (1.0 + 1e-9)):
            return v, t
        return joint_accel_profile(s_, cap_, acc_, q, accel_limit)

    return profile


# --------------------------------------------------------------------------- one move


def plan_move(
    arm: Arm,
    move: Move,
    q0,
    g0: float,
    *,
    period_s: float = DEFAULT_PERIOD_S,
    max_joint_step_rad: float = DEFAULT_MAX_JOINT_STEP_RAD,
) -> MovePlan:
    """Plan one move from pose ``q0`` (rad) and gripper angle ``g0`` (rad); errors carry the move's label.
    The whole move is checked against the arm's keep-out zones (``arm.zones``; ZoneError)."""
    try:
        mp = _plan_move(arm, move, np.asarray(q0, dtype=float), float(g0), period_s, max_joint_step_rad)
        check_zones(arm, mp)
        return mp
    except MotionError as exc:
        raise _located(exc, move.label) from None


def check_zones(arm: Arm, mp: MovePlan) -> None:
    """Raise ZoneError if the planned move ``mp`` takes a link into one of ``arm.zones`` anywhere along it
    (between samples too), naming the zone, the link and where along the move."""
    if not arm.zones or mp.kind not in ("line", "joint") or len(mp.t_s) < 2:
        return
    from .zones import first_violation, refusal

    v = first_violation(arm, arm.zones, mp.q_rad)
    if v is None:
        return
    k = min(int(v.at), len(mp.t_s) - 2)
    t = float(mp.t_s[k] + (v.at - k) * (mp.t_s[k + 1] - mp.t_s[k]))
    p = tool_point(arm, v.q)
    if mp.kind == "line" and mp.line_m is not None:
        a, b = (np.asarray(e, dtype=float) for e in mp.line_m)
        length = float(np.linalg.norm(b - a))
        frac = float(np.linalg.norm(p - a)) / length if length > 0 else 0.0
        where = _where(min(frac, 1.0), p)
        hint = "add a via point around it, or move the target"
    else:
        frac = t / mp.duration_s if mp.duration_s > 0 else 0.0
        where = f"{100.0 * frac:.0f}% through the joint move (t = {t:.2f} s, tool at {fmt_point(p)} m)"
        hint = "move through a pose above it first"
    raise refusal(arm, arm.zones, v, where, fraction=min(frac, 1.0), hint=hint)


def _hold(q0, g0, duration, period, kind, label) -> MovePlan:
    _check_duration(duration, kind)
    k = max(1, math.ceil(duration / period - 1e-9)) if duration > 0 else 0
    t = np.arange(k + 1) * period
    return MovePlan(
        kind=kind, label=label, t_s=t, q_rad=np.repeat(q0[None, :], k + 1, axis=0), gripper_rad=np.full(k + 1, g0)
    )


def _plan_move(arm, move, q0, g0, period, max_step) -> MovePlan:
    limit = arm.max_speed_rad_s
    if isinstance(move, Wait):
        return _hold(q0, g0, move.duration_s, period, "wait", move.label)
    if isinstance(move, GripperMove):
        if arm.gripper is None:
            raise MotionError(f"arm '{arm.name}' has no gripper")
        dg = move.angle_rad - g0
        if abs(dg) < 1e-12:
            return _hold(q0, g0, 0.0, period, "gripper", move.label)
        gl = arm.gripper.max_speed_rad_s
        s = np.linspace(0.0, 1.0, 65)
        t, g, _ = _timed(
            s,
            np.full(len(s), move.speed_fraction * gl / abs(dg)),
            move.accel_rad_s2 / abs(dg),
            lambda u: (g0 + u * dg)[:, None],
            np.array([gl]),
            period,
            label_kind="gripper move",
        )
        return MovePlan(
            kind="gripper", label=move.label, t_s=t, q_rad=np.repeat(q0[None, :], len(t), axis=0), gripper_rad=g[:, 0]
        )
    if isinstance(move, JointMove):
        q1 = np.asarray(move.q_rad, dtype=float)
        if not arm.within_limits(q1):
            raise _limit_error(arm, q1, "at the end of the joint move", hint="change the pose")
        dq = q1 - q0
        span = float(np.abs(dq).max())
        if span < 1e-12:
            return _hold(q0, g0, 0.0, period, "joint", move.label)
        s = np.linspace(0.0, 1.0, 129)
        moving = np.abs(dq) > 0
        cap = float(np.min(move.speed_fraction * limit[moving] / np.abs(dq[moving])))
        acc = move.accel_rad_s2 / span
        acc = min(acc, float(np.min(arm.max_accel_rad_s2[moving] / np.abs(dq[moving]))))  # each joint's limit
        t, q, _ = _timed(
            s,
            np.full(len(s), cap),
            acc,
            lambda u: q0 + u[:, None] * dq,
            limit,
            period,
            label_kind="joint move",
            jerk_time_s=move.jerk_time_s,
        )
        q[-1] = q1
        return MovePlan(kind="joint", label=move.label, t_s=t, q_rad=q, gripper_rad=np.full(len(t), g0), segments=1)
    if isinstance(move, LineMove):
        turn = _base_turn_first(arm, move, q0)
        if turn is not None:
            return _line_from_axis(arm, move, q0, g0, period, max_step, turn)
        path = plan_line_path(arm, q0, move, max_joint_step_rad=max_step)
        if path.length <= 0:
            return _hold(q0, g0, 0.0, period, "line", move.label)
        base = move.speed_m_s / path.speed_scale if path.speed_scale > 0 else move.speed_m_s
        acc = move.accel_m_s2 / path.speed_scale if path.speed_scale > 0 else move.accel_m_s2
        cap, _ = _caps_from_joints(path.s, path.q, limit, base)
        profile = _profile_for(path.s, path.q, arm.max_accel_rad_s2, cap, acc)
        t, q, _ = _timed(
            path.s,
            cap,
            acc,
            path.at,
            limit,
            period,
            label_kind="line",
            jerk_time_s=move.jerk_time_s,
            profile=profile,
            accel_limit=arm.max_accel_rad_s2,
        )
        # Slowed if the joint speed (or acceleration) limits made the move longer than the Cartesian limits
        # alone would.
        free = speed_profile(path.s, np.full(len(path.s), base), acc)[1][-1] + move.jerk_time_s
        slowed = bool(_sample_times(float(free), period)[0][-1] < t[-1] - 1e-9)
        q[0], q[-1] = path.q[0], path.q[-1]
        outside = _outside_limits(arm, q)
        if np.any(outside):  # a joint peaking between two segment points
            i = int(np.argmax(outside))
            p = tool_point(arm, q[i])
            raise _limit_error(
                arm,
                q[i],
                _where(float(np.hypot(*(p - path.start))) / max(path.length, 1e-300), p),
                hint="split the line with a via point or a joint move, or move the target",
            )
        return MovePlan(
            kind="line",
            label=move.label,
            t_s=t,
            q_rad=q,
            gripper_rad=np.full(len(t), g0),
            points_m=path.points,
            segments=len(path.s) - 1,
            line_m=(path.start, path.end),
            slowed=slowed,
            path=path,
        )
    raise TypeError(f"not a move: {move!r}")


def _base_turn_first(arm: Arm, move: LineMove, q0) -> list[float] | None:
    """A line that starts on the base axis and leaves it: base angles (nearest first, inside the limits)
    that point the arm along the line (or half a turn from it) if the base must turn before the line
    starts (turning it there does not move the tool); None if it need not."""
    if not arm.has_base or len(move.target_m) != 3:
        return None
    start = tool_point(arm, q0)
    end = np.asarray(move.target_m, dtype=float)
    d = end[:2] - start[:2]
    if math.hypot(start[0], start[1]) > 1e-9 or math.hypot(*d) <= 1e-9:
        return None
    az = math.atan2(d[1], d[0])
    if abs(math.remainder(q0[0] - az, math.pi)) < 1e-9:
        return None
    from .workspace import _turns_inside

    out = []
    for flip in (0.0, math.pi):
        out += _turns_inside(az + flip, float(arm.q_min[0]), float(arm.q_max[0]))
    return sorted(out, key=lambda b: abs(b - q0[0]))


def _line_from_axis(arm: Arm, move: LineMove, q0, g0, period, max_step, bases) -> MovePlan:
    """Turn the base (the tool on its axis stays put), then the line: one move."""
    if not bases:
        raise MotionError(
            "the line starts on the base axis and its direction is outside the base's limits: move the start "
            "off the axis or the target"
        )
    first = None
    for b in bases:
        q1 = np.array(q0, dtype=float)
        q1[0] = b
        try:
            turn = _plan_move(arm, JointMove(tuple(q1), label=move.label), q0, g0, period, max_step)
            line = _plan_move(arm, move, q1, g0, period, max_step)
        except MotionError as exc:
            first = first or exc
            continue
        t = np.concatenate([turn.t_s, turn.t_s[-1] + line.t_s[1:]])
        return MovePlan(
            kind="line",
            label=move.label,
            t_s=t,
            q_rad=np.concatenate([turn.q_rad, line.q_rad[1:]]),
            gripper_rad=np.concatenate([turn.gripper_rad, line.gripper_rad[1:]]),
            points_m=line.points_m,
            segments=line.segments,
            line_m=line.line_m if line.line_m is not None else (tool_point(arm, q0), tool_point(arm, q0)),
            slowed=line.slowed,
        )
    raise first


# --------------------------------------------------------------------------- many moves


def plan_moves(
    arm: Arm,
    moves,
    *,
    q_start=None,
    gripper_start: float | None = None,
    period_s: float = DEFAULT_PERIOD_S,
    max_joint_step_rad: float = DEFAULT_MAX_JOINT_STEP_RAD,
    labels: list[str] | None = None,
) -> Plan:
    """Plan ``moves`` in order from ``q_start`` (rad; default the arm's home) into one Trajectory.

    Every move is planned (and so checked) before anything is returned; the
    first problem raises a MotionError carrying that move's label.
    ``labels``: one label per move for ``Trajectory.steps`` (default the moves' labels).
    """
    moves = list(moves)
    q = np.array(arm.home_rad if q_start is None else q_start, dtype=float)
    if not arm.within_limits(q):
        raise _limit_error(arm, q, "at the start pose", hint="change the start pose")
    if gripper_start is None:
        gripper_start = arm.gripper.open_rad if arm.gripper is not None else float("nan")
    g = float(gripper_start)
    plans = []
    for move in moves:
        mp = plan_move(arm, move, q, g, period_s=period_s, max_joint_step_rad=max_joint_step_rad)
        plans.append(mp)
        q, g = mp.q_rad[-1], float(mp.gripper_rad[-1])
    if any(isinstance(m, LineMove) and m.blend_m > 0 for m in moves):
        plans = blend_chain(arm, moves, plans, period_s=period_s, max_joint_step_rad=max_joint_step_rad)
    if any(isinstance(m, JointMove) and m.blend_m > 0 for m in moves) or any(
        isinstance(m, LineMove) and m.blend_m > 0 and isinstance(n, JointMove) for m, n in zip(moves, moves[1:])
    ):
        plans = blend_joint_moves(arm, moves, plans, period_s=period_s)
    return Plan(
        trajectory=assemble(
            arm,
            plans,
            q_start=np.array(arm.home_rad if q_start is None else q_start),
            gripper_start=float(gripper_start),
            period_s=period_s,
            labels=labels,
        ),
        moves=plans,
        arm=arm,
    )


def assemble(
    arm: Arm, plans: list[MovePlan], *, q_start, gripper_start: float, period_s: float, labels: list[str] | None = None
) -> Trajectory:
    """Join move plans (each starting where the previous ends, at rest) into one sampled Trajectory."""
    qs = [np.asarray(q_start, dtype=float)[None, :]]
    gs = [np.array([gripper_start])]
    steps = [np.array([0])]
    for i, mp in enumerate(plans):
        if len(mp.t_s) < 2:
            continue
        qs.append(mp.q_rad[1:])
        gs.append(mp.gripper_rad[1:])
        steps.append(np.full(len(mp.t_s) - 1, i))
    q = np.concatenate(qs)
    points = [mp.points_m for mp in plans if len(mp.points_m)]
    empty = np.zeros((0, arm.dim))
    return Trajectory(
        t_s=np.arange(len(q)) * period_s,
        q_rad=q,
        gripper_rad=np.concatenate(gs),
        step=np.concatenate(steps),
        steps=list(labels) if labels is not None else [mp.label for mp in plans],
        points_m=np.concatenate(points) if points else empty,
        period_s=period_s,
    )


def _neighbour_lines(moves: list[MovePlan], i: int) -> list:
    """The lines a blended move shares corners with (its samples near a corner belong to either line)."""
    if not moves[i].blended:
        return []
    out = []
    for j in (i - 1, i + 1):
        if 0 <= j < len(moves) and moves[j].blended and moves[j].line_m is not None:
            out.append(moves[j].line_m)
    return out


def line_deviation(arm: Arm, q_samples, start, end, *, sub: int = 4, also=()) -> float:
    """Worst distance (m) of the tool from the segment start-end, at the samples and ``sub`` points
    between each pair of samples (joints interpolated linearly, as a servo does between frames).
    ``also``: more (start, end) segments; the distance is then to the nearest of them (a blended chain's
    samples near a shared corner)."""
    q = np.asarray(q_samples, dtype=float)
    if len(q) < 2:
        return 0.0
    f = np.linspace(0.0, 1.0, sub + 1)[:-1]
    qq = (q[:-1, None, :] + f[None, :, None] * np.diff(q, axis=0)[:, None, :]).reshape(-1, q.shape[1])
    qq = np.concatenate([qq, q[-1:]])
    p = tool_point(arm, qq)
    best = None
    for sa, sb in [(start, end), *also]:
        a, b = np.asarray(sa, dtype=float), np.asarray(sb, dtype=float)
        d = b - a
        dd = float(d @ d)
        u = np.clip(((p - a) @ d) / dd, 0.0, 1.0) if dd > 0 else np.zeros(len(p))
        off = p - (a + u[:, None] * d)
        dist = np.hypot(*off.T) if off.shape[-1] == 2 else np.linalg.norm(off, axis=-1)
        best = dist if best is None else np.minimum(best, dist)
    return float(np.max(best))


def summarize(arm: Arm, traj: Trajectory, moves: list[MovePlan]) -> dict:
    """The plan summary: duration (s), segments, peak sampled joint speeds and limits (deg/s), worst path
    deviation (m) of line moves, and the steps where joint speed limits slowed a line down."""
    q = traj.q_rad
    if len(q) > 1:
        peak = np.abs(np.diff(q, axis=0)).max(axis=0) / traj.period_s
    else:
        peak = np.zeros(arm.n)
    dev = max(
        (
            line_deviation(arm, mp.q_rad, *mp.line_m, also=_neighbour_lines(moves, i))
            for i, mp in enumerate(moves)
            if mp.line_m is not None
        ),
        default=0.0,
    )
    out = {
        "duration_s": traj.duration_s,
        "segments": int(sum(mp.segments for mp in moves)),
        "samples": len(traj),
        "period_s": traj.period_s,
        "joint_names": list(arm.joint_names),
        "peak_joint_speed_deg_s": [round(float(x), 6) for x in np.degrees(peak)],
        "joint_speed_limit_deg_s": [round(float(x), 6) for x in np.degrees(arm.max_speed_rad_s)],
        "max_path_deviation_m": dev,
        "slowed_by_joint_limits": [mp.label.split(": ", 1)[-1] for mp in moves if mp.slowed],
    }
    if arm.gripper is not None and len(traj) > 1:
        peak_g = np.abs(np.diff(traj.gripper_rad)).max() / traj.period_s
        out["peak_gripper_speed_deg_s"] = round(float(np.degrees(peak_g)), 6)
        out["gripper_speed_limit_deg_s"] = round(float(np.degrees(arm.gripper.max_speed_rad_s)), 6)
    return out


# --------------------------------------------------------------------------- blending


#: Share of a line's tool acceleration a rounded corner may spend turning (normal, v^2 kappa) and speeding
#: up or slowing down (tangential): 0.6^2 + 0.8^2 = 1, so the tool's acceleration stays within the bound.
BLEND_NORMAL_SHARE = 0.6
BLEND_TANGENT_SHARE = 0.8
#: A corner turning more than 170 degrees is passed at rest (the tool turns back and stops there anyway).
MAX_BLEND_TURN_COS = math.cos(math.radians(170.0))
#: The rounding is drawn to pass this share of ``blend_m`` from the corner: the servos go from sample to sample
#: in joint space, and that chord can bulge a micrometre past the exact curve (seen: 0.67 um at 0.5 mm).
BLEND_MARGIN = 0.98


def corner_reach(d_in: float, d_out: float, u_in, u_out, blend_m: float) -> float:
    """How far (m) before and after a corner its rounding starts and ends.

    The corner between a line of length ``d_in`` along unit vector ``u_in`` and one of length ``d_out``
    along ``u_out`` is replaced by the quadratic Bezier from C - d u_in to C + d u_out with C as its control
    point; its middle passes C at d sin(theta/2) / 2 (theta the turn), the furthest it gets from C. So
    d = 2 blend / sin(theta/2) (with ``BLEND_MARGIN``), at most half of each line (two roundings never overlap).
    """
    c = float(np.clip(np.dot(u_in, u_out), -1.0, 1.0))
    half = math.sqrt(max(0.0, (1.0 - c) / 2.0))  # sin(theta / 2)
    d = 2.0 * BLEND_MARGIN * blend_m / half if half > 1e-12 else math.inf
    return min(d, 0.5 * d_in, 0.5 * d_out)


def _phi_of(path: LinePath, u):
    return path.phi_at(u)


class ChainPath:
    """Consecutive lines with rounded corners, as one path: the path parameter s runs over the pieces
    (line stretches in each line's own units, corners by arc length, or the tool's turn if longer); the
    tool point and angle at any s, and joint angles by closed-form IK on the chain's branch."""

    def __init__(self, arm: Arm, paths: list[LinePath], moves: list[LineMove]):
        """``paths``: the lines as planned alone; ``moves``: their LineMoves (speed, acceleration, segment
        length, blend distance of the corner at each one's end)."""
        self.arm = arm
        blends = [mv.blend_m for mv in moves[:-1]]
        segment_m = [mv.segment_m for mv in moves]
        speed = [mv.speed_m_s for mv in moves]
        acc = [mv.accel_m_s2 for mv in moves]
        self.paths = paths
        n = len(paths)
        dist = [float(np.linalg.norm(p.end - p.start)) for p in paths]
        dirs = [(p.end - p.start) / d for p, d in zip(paths, dist, strict=True)]
        self.reach = [
            corner_reach(dist[i], dist[i + 1], dirs[i], dirs[i + 1], blends[i]) for i in range(n - 1)
        ]  # d of each corner
        u0 = [0.0] + [self.reach[i - 1] / dist[i] for i in range(1, n)]
        u1 = [1.0 - self.reach[i] / dist[i] for i in range(n - 1)] + [1.0]
        pieces = []  # (kind, index, s0, s1, data)
        s_pts, caps, accs = [], [], []
        s0 = 0.0
        self.bounds = []  # s where each line hands over to the next (the corner's middle)
        for i, p in enumerate(paths):
            # the straight stretch of line i
            ua, ub = u0[i], u1[i]
            eps = 1e-6 / p.length  # no grid points closer than a micrometre (slopes between them are noise)
            if i == 0 or (ub - ua) > eps:  # (between two roundings that meet there is no straight stretch)
                grid_u = p.s / p.length
                inner = grid_u[(grid_u > ua + eps) & (grid_u < ub - eps)]
                uu = np.concatenate([[ua], inner, [ub]])
                ss = s0 + (uu - ua) * p.length
                pieces.append(("line", i, s0, float(ss[-1]), (ua, ub)))
                s_pts.append(ss if not s_pts else ss[1:])
                scale = p.speed_scale if p.speed_scale > 0 else 1.0
                caps.append(np.full(len(ss) - (0 if len(caps) == 0 else 1), speed[i] / scale))
                accs.append(np.full(len(ss) - 1, acc[i] / scale))
                s0 = float(ss[-1])
            if i == n - 1:
                break
            # the rounded corner between line i and line i + 1
            q = paths[i + 1]
            d = self.reach[i]
            c = p.end
            a, b = c - d * dirs[i], c + d * dirs[i + 1]
            ph_a, ph_b = float(_phi_of(p, ub)), float(_phi_of(q, u0[i + 1]))
            ph_c = float(_phi_of(p, 1.0))  # the tool angle at the corner: the control value of its own Bezier
            k = max(MIN_TIMING_SEGMENTS, math.ceil(8 * d / min(segment_m[i], segment_m[i + 1])))
            t = np.linspace(0.0, 1.0, 8 * k + 1)
            pts = _bezier(a, c, b, t)
            arc = np.concatenate([[0.0], np.cumsum(np.linalg.norm(np.diff(pts, axis=0), axis=1))])
            arc_len = float(arc[-1])
            turn = float(self.arm.links_m[-1]) * (abs(ph_c - ph_a) + abs(ph_b - ph_c)) if arm.n_links == 3 else 0.0
            length = max(arc_len, turn, 1e-12)
            scale = arc_len / length
            tt = t[::8]
            ss = s0 + np.interp(tt, t, arc) / max(arc_len, 1e-300) * length
            kappa = _bezier_curvature(a, c, b, tt)
            acc_c = min(acc[i], acc[i + 1])
            v_c = min(speed[i], speed[i + 1])
            with np.errstate(divide="ignore"):
                v_kappa = np.sqrt(BLEND_NORMAL_SHARE * acc_c / np.maximum(kappa, 1e-300))
            vcap = np.minimum(v_c, v_kappa) / (scale if scale > 0 else 1.0)
            pieces.append(("corner", i, s0, float(ss[-1]), (a, c, b, (ph_a, ph_c, ph_b), t, arc, length)))
            s_pts.append(ss[1:])
            caps.append(vcap[1:])
            caps[-2][-1] = min(caps[-2][-1], vcap[0])
            accs.append(np.full(len(ss) - 1, BLEND_TANGENT_SHARE * acc_c / (scale if scale > 0 else 1.0)))
            self.bounds.append(float(np.interp(0.5, tt, ss)))
            s0 = float(ss[-1])
        self.pieces = pieces
        self.s = np.concatenate(s_pts)
        self.cap = np.concatenate(caps)
        self.accel = np.concatenate(accs)
        self.length = float(self.s[-1])
        self.side, self.elbow = paths[0].side, paths[0].elbow
        self.q = None
        pts, phi = self.geometry(self.s)
        self.points = pts
        q, excess = self._ik(pts, phi, float(paths[0].q[0, 0]))
        self.excess = excess
        self.q = _continuous(q, paths[0].q[0])

    def geometry(self, s):
        """Tool points (K, dim) and tool angles (K,) at path parameters ``s``."""
        s = np.asarray(s, dtype=float)
        pts = np.zeros((len(s), len(self.paths[0].start)))
        phi = np.zeros(len(s))
        starts = np.array([pc[2] for pc in self.pieces])
        which = np.clip(np.searchsorted(starts, s, side="right") - 1, 0, len(self.pieces) - 1)
        for j, (kind, i, s0, s1, data) in enumerate(self.pieces):
            m = which == j
            if not np.any(m):
                continue
            f = np.clip((s[m] - s0) / (s1 - s0), 0.0, 1.0) if s1 > s0 else np.zeros(int(m.sum()))
            if kind == "line":
                p = self.paths[i]
                u = data[0] + f * (data[1] - data[0])
                pts[m] = p.start + u[:, None] * (p.end - p.start)
                phi[m] = _phi_of(p, u)
            else:
                a, c, b, (ph_a, ph_c, ph_b), t, arc, _ = data
                tt = np.interp(f * arc[-1], arc, t)
                pts[m] = _bezier(a, c, b, tt)
                # the tool angle along the same quadratic Bezier (its rate along the path is then the
                # lines' at both ends: no jump in any joint's speed where the rounding starts or ends)
                phi[m] = (1 - tt) ** 2 * ph_a + 2 * (1 - tt) * tt * ph_c + tt * tt * ph_b
        return pts, phi

    def _ik(self, pts, phi, base_ref: float):
        arm = self.arm
        ph = None if arm.n_links == 2 else phi
        if not arm.layered:
            return _branch_ik(arm.links_m, pts, ph, self.elbow)
        return arm_branch_ik(arm, pts, ph, self.side, self.elbow, base_ref)

    def at(self, s) -> np.ndarray:
        """Joint angles (rad) at path parameters ``s``, continuous with the grid's."""
        s = np.asarray(s, dtype=float)
        pts, phi = self.geometry(s)
        ref = np.stack([np.interp(s, self.s, self.q[:, j]) for j in range(self.q.shape[1])], axis=-1)
        q, _ = self._ik(pts, phi, float(ref[0, 0]))
        return _nearest_turn(q, ref)


def _bezier(a, c, b, t):
    t = np.asarray(t, dtype=float)[:, None]
    return (1 - t) ** 2 * a + 2 * (1 - t) * t * c + t * t * b


def _bezier_curvature(a, c, b, t):
    t = np.asarray(t, dtype=float)[:, None]
    d1 = 2 * (1 - t) * (c - a) + 2 * t * (b - c)
    d2 = np.broadcast_to(2 * (b - 2 * c + a), d1.shape)
    sp = np.linalg.norm(d1, axis=1)
    if d1.shape[1] == 2:
        cross = np.abs(d1[:, 0] * d2[:, 1] - d1[:, 1] * d2[:, 0])
    else:
        cross = np.linalg.norm(np.cross(d1, d2), axis=1)
    return np.divide(cross, sp**3, out=np.zeros_like(sp), where=sp > 1e-300)


def _blendable(arm: Arm, a: MovePlan, b: MovePlan, move_a) -> bool:
    """Lines ``a`` then ``b`` may share a rounded corner: both plain lines that move the tool, on one branch,
    and ``a`` asks for a blend without a stop."""
    if not (isinstance(move_a, LineMove) and move_a.blend_m > 0 and not move_a.stop):
        return False
    pa, pb = a.path, b.path
    if pa is None or pb is None or a.kind != "line" or b.kind != "line":
        return False
    da, db = np.linalg.norm(pa.end - pa.start), np.linalg.norm(pb.end - pb.start)
    if da < 1e-9 or db < 1e-9:
        return False
    if np.dot(pa.end - pa.start, pb.end - pb.start) / (da * db) < MAX_BLEND_TURN_COS:
        return False  # turning back (nearly) the way it came: the tool stops there anyway
    return pa.side == pb.side and pa.elbow == pb.elbow


def blend_chain(arm: Arm, moves, plans: list[MovePlan], *, period_s: float, max_joint_step_rad: float):
    """Replace runs of consecutive line plans whose moves ask for a blend (``LineMove.blend_m``) by one timed
    motion through rounded corners (``ChainPath``): the tool passes each shared corner within the blend
    distance, under every limit of the lines (tool speed and acceleration, joint speed and acceleration),
    and comes to rest only at the end of the run. A corner that cannot be rounded (it would leave the
    joint limits or jump between branches) is passed at rest, as without a blend. Returns the new plans
    (one per move, each holding its share of the samples: up to the middle of its end corner)."""
    out = list(plans)
    i = 0
    while i < len(plans):
        j = i
        while j + 1 < len(plans) and _blendable(arm, plans[j], plans[j + 1], moves[j]):
            j += 1
        if j > i:
            done = _blend_run(arm, moves[i : j + 1], plans[i : j + 1], period_s, max_joint_step_rad)
            out[i : j + 1] = done
        i = j + 1
    return out


#: How often a blended run is re-planned with tighter roundings where its sampled trajectory strayed further
#: than ``blend_m`` from the lines (a servo's straight steps between samples cut a tight, fast corner).
BLEND_DEVIATION_TRIES = 6
#: At most this many points measured between each pair of samples there (the worst point of a servo's step
#: across a corner lies where it is as far from both lines, anywhere along the step; the points are 1% of the
#: blend distance apart).
BLEND_CHECK_SUB_MAX = 1024


def _blend_run(arm, moves, plans, period, max_step):
    """One run of blendable lines: split where a corner cannot be rounded, time each part; where the tool,
    measured on the sampled trajectory (joints interpolated linearly between samples, as a servo moves),
    strays further from the lines than a corner's blend distance, that rounding is made tighter and the run
    timed again."""
    blends = [mv.blend_m for mv in moves[:-1]]
    asked = list(blends)
    # each line's own deviation between samples, planned alone (a servo's steps on a small arm): a corner may
    # add its blend distance to that, no more
    own = [
        line_deviation(arm, mp.q_rad, *mp.line_m, sub=16) if mp.line_m is not None and len(mp.q_rad) > 1 else 0.0
        for mp in plans
    ]
    last = None
    for _ in range(BLEND_DEVIATION_TRIES):
        tried = [replace(mv, blend_m=b) for mv, b in zip(moves[:-1], blends, strict=True)] + [moves[-1]]
        out, split = _blend_run_once(arm, tried, plans, period, max_step)
        if split:  # cut at a corner that cannot be rounded: each part was planned (and measured) on its own
            return out
        excess = _corner_excess(arm, out, asked, own)
        if not excess:
            return out
        common = [i for i in (last or {}) if i in excess]
        if common and all(excess[i] > 0.99 * last[i] for i in common):
            # tighter roundings did not help: the servo's steps are longer than the lines around the corner (a
            # flattened curve's short lines), their chords cut it whatever the rounding; keep the blend
            return out
        last = excess
        for i, ratio in excess.items():
            blends[i] *= 0.97 / ratio
    return out


def _corner_excess(arm, out: list[MovePlan], blends, own=None) -> dict:
    """Corners (index: deviation / blend > 1) where the sampled trajectory of a blended run strays further from
    the two lines than the corner's blend distance (plus ``own``: each line's deviation planned alone),
    measured with ``line_deviation`` on the samples of the rounding and one either side, finely between
    samples."""
    bad = {}
    for i, b in enumerate(blends):
        a, c = out[i], out[i + 1]
        if b <= 0 or a.line_m is None or c.line_m is None:
            continue
        n = max(2, len(a.q_rad) // 2)
        m = max(2, len(c.q_rad) // 2)
        q = np.concatenate([a.q_rad[-n:], c.q_rad[1:m]])
        # only the rounding (within its reach d of the corner) and a sample either side: elsewhere the samples
        # are on the lines as without a blend (a servo's steps there are the lines' own business)
        (a0, a1), (c0, c1) = (
            (np.asarray(x, dtype=float) for x in a.line_m),
            (np.asarray(x, dtype=float) for x in c.line_m),
        )
        da, dc = float(np.linalg.norm(a1 - a0)), float(np.linalg.norm(c1 - c0))
        if da <= 0 or dc <= 0:
            continue
        d = corner_reach(da, dc, (a1 - a0) / da, (c1 - c0) / dc, b)
        near = np.nonzero(np.linalg.norm(tool_point(arm, q) - a1, axis=1) <= d + 1e-9)[0]
        if len(near) == 0:
            continue
        q = q[max(near[0] - 1, 0) : near[-1] + 2]
        if len(q) < 2:
            continue
        step = float(np.linalg.norm(np.diff(tool_point(arm, q), axis=0), axis=1).max())
        sub = int(min(BLEND_CHECK_SUB_MAX, max(8, math.ceil(step / (0.01 * b)))))
        # the distance to the nearer line changes at most as fast as the tool moves: between two measured
        # points (step / sub apart, nearly) it exceeds the larger by at most half that
        dev = line_deviation(arm, q, *a.line_m, also=[c.line_m], sub=sub) + 0.5 * step / sub
        base = 0.0 if own is None else max(own[i], own[i + 1])
        if dev > b * (1.0 + 1e-9) + base:
            bad[i] = (dev - base) / b
    return bad


def _blend_run_once(arm, moves, plans, period, max_step):
    """One run of blendable lines with the blend distances of ``moves``: split where a corner cannot be
    rounded, time each part."""
    paths = [mp.path for mp in plans]
    try:
        chain = ChainPath(arm, paths, moves)
    except (FloatingPointError, ValueError):  # pragma: no cover - degenerate geometry: keep the stops
        return plans, True

    def split(k):  # cut the run at corner k and blend each side on its own
        left = _blend_run(arm, moves[: k + 1], plans[: k + 1], period, max_step) if k > 0 else plans[:1]
        right = (
            _blend_run(arm, moves[k + 1 :], plans[k + 1 :], period, max_step)
            if len(plans) - k - 1 > 1
            else plans[k + 1 :]
        )
        return list(left) + list(right), True

    bad = _bad_corners(arm, chain, max_step)
    if bad:
        return split(bad[0])
    limit = arm.max_speed_rad_s
    cap, _ = _caps_from_joints(chain.s, chain.q, limit, np.inf)
    cap = np.minimum(cap, chain.cap)
    accel = chain.accel
    profile = _profile_for(chain.s, chain.q, arm.max_accel_rad_s2, cap, accel)
    jerk = max(mv.jerk_time_s for mv in moves)
    try:
        t, q, _, s_samp = _timed(
            chain.s,
            cap,
            accel,
            chain.at,
            limit,
            period,
            label_kind="blended line",
            jerk_time_s=jerk,
            with_s=True,
            profile=profile,
            keep_caps=True,
            accel_limit=arm.max_accel_rad_s2 if jerk > 0 else None,
        )
    except MotionError:  # could not be timed under every limit through the corners: keep the stops
        return plans, True
    q[0], q[-1] = chain.q[0], chain.q[-1]
    if np.any(_outside_limits(arm, q)):
        return plans, True  # a joint peaking between grid points: keep the stops
    if arm.zones:  # a rounded corner that cuts into a keep-out zone is passed at rest (each line was checked)
        from .zones import first_violation

        v = first_violation(arm, arm.zones, q)
        if v is not None:
            s_v = float(np.interp(v.at, np.arange(len(s_samp)), s_samp))
            corners = [(abs(0.5 * (s0 + s1) - s_v), i) for kind, i, s0, s1, _ in chain.pieces if kind == "corner"]
            return split(min(corners)[1]) if corners else (plans, True)
    # which sample belongs to which move: up to the middle of its end corner
    cuts = [0] + [int(np.searchsorted(s_samp, b)) for b in chain.bounds] + [len(q) - 1]
    cuts = [min(max(c, 0), len(q) - 1) for c in cuts]
    for k in range(1, len(cuts)):
        cuts[k] = max(cuts[k], cuts[k - 1])
    g0 = plans[0].gripper_rad[0]
    out = []
    for k, mp in enumerate(plans):
        a, b = cuts[k], cuts[k + 1]
        qq = q[a : b + 1]
        out.append(
            MovePlan(
                kind="line",
                label=mp.label,
                t_s=np.arange(len(qq)) * period,
                q_rad=qq,
                gripper_rad=np.full(len(qq), g0),
                points_m=mp.points_m,
                segments=mp.segments,
                line_m=mp.line_m,
                slowed=False,
                path=mp.path,
                blended=True,
            )
        )
    return out, False


def _bad_corners(arm, chain: ChainPath, max_step: float) -> list[int]:
    """Corners (indices) whose rounding leaves the reach or the joint limits, or makes a joint jump."""
    bad = []
    step = np.abs(np.diff(chain.q, axis=0)).max(axis=1)
    outside = _outside_limits(arm, chain.q)
    for kind, i, s0, s1, _ in chain.pieces:
        if kind != "corner":
            continue
        m = (chain.s >= s0) & (chain.s <= s1)
        idx = np.nonzero(m)[0]
        if np.any(chain.excess[idx] > REACH_TOL_M) or np.any(outside[idx]) or np.any(step[idx[:-1]] > 2.0 * max_step):
            bad.append(i)
    return bad


# --------------------------------------------------------------------------- blending joint moves


def _speed_bound(arm: Arm, move) -> np.ndarray:
    """Each joint's speed bound (rad/s) in a move: its share of the limit in a joint move, the limit on a line."""
    if isinstance(move, JointMove):
        return move.speed_fraction * arm.max_speed_rad_s
    return np.asarray(arm.max_speed_rad_s, dtype=float)


def _accel_bound(arm: Arm, move) -> np.ndarray:
    """Each joint's acceleration bound (rad/s^2) in a move: a joint move's ``accel_rad_s2`` within each joint's
    limit, the limit on a line."""
    if isinstance(move, JointMove):
        return np.minimum(move.accel_rad_s2, arm.max_accel_rad_s2)
    return np.asarray(arm.max_accel_rad_s2, dtype=float)


def _tool_bounds(arm: Arm, move, mp: MovePlan, period: float) -> tuple[float, float]:
    """(speed m/s, acceleration m/s^2) the tool may reach in a move: a line's own, or what the joint move
    reached on its own (its samples; it has no tool limits, and blending must not make it faster)."""
    if isinstance(move, LineMove):
        return move.speed_m_s, move.accel_m_s2
    p = tool_point(arm, mp.q_rad)
    v = float(np.linalg.norm(np.diff(p, axis=0), axis=1).max(initial=0.0)) / period
    a = float(np.linalg.norm(np.diff(p, 2, axis=0), axis=1).max(initial=0.0)) / period**2
    return v, a


def _dense(q, sub: int):
    """``q`` (K, n) with ``sub`` points per interval, joints interpolated linearly (as a servo moves)."""
    f = np.linspace(0.0, 1.0, sub + 1)[:-1]
    qq = (q[:-1, None, :] + f[None, :, None] * np.diff(q, axis=0)[:, None, :]).reshape(-1, q.shape[1])
    return np.concatenate([qq, q[-1:]])


def _distance_to_polyline(points, poly) -> np.ndarray:
    """Distance of each point (M, d) to the polyline ``poly`` (S + 1, d)."""
    a, b = poly[:-1], poly[1:]
    d = b - a
    dd = np.maximum((d * d).sum(-1), 1e-300)
    out = np.full(len(points), np.inf)
    for lo in range(0, len(points), 256):
        p = points[lo : lo + 256]
        u = np.clip(((p[:, None, :] - a[None]) * d[None]).sum(-1) / dd[None], 0.0, 1.0)
        out[lo : lo + 256] = np.linalg.norm(p[:, None, :] - (a[None] + u[..., None] * d[None]), axis=-1).min(axis=1)
    return out


def _joint_corner_overlap(arm: Arm, m1, m2, p1: MovePlan, p2: MovePlan, period: float, blend: float) -> int:
    """How many samples the start of ``p2`` may overlap the end of ``p1`` (both at rest at their shared pose B):
    the trajectory q1(t) + q2(t - t1 + k T) - B, the second move starting k samples before the first ends.
    The largest k for which, on the sampled trajectory, every joint stays inside its limits, under the larger
    speed and acceleration bound of the two moves, the tool no faster and no harder accelerated than either
    move on its own allows, and within ``blend`` of the two moves' own tool paths (measured between samples
    too). 0: no overlap works."""
    q1, q2 = p1.q_rad, p2.q_rad
    n1, n2 = len(q1) - 1, len(q2) - 1
    if n1 < 2 or n2 < 2:
        return 0
    if arm.zones:
        from .zones import first_violation
    b_pose = q2[0]
    vb = np.maximum(_speed_bound(arm, m1), _speed_bound(arm, m2)) * (1 + 1e-9)
    ab = np.maximum(_accel_bound(arm, m1), _accel_bound(arm, m2)) * (1 + 1e-9)
    vt, at = (
        max(x, y) * (1 + 1e-9) for x, y in zip(_tool_bounds(arm, m1, p1, period), _tool_bounds(arm, m2, p2, period))
    )
    # the overlap cannot pass either move's top speed: at most its slowing down (p1) and speeding up (p2)
    r1 = (np.abs(np.diff(q1, axis=0)) / arm.max_speed_rad_s).max(axis=1)
    r2 = (np.abs(np.diff(q2, axis=0)) / arm.max_speed_rad_s).max(axis=1)
    k_dec = n1 - int(np.nonzero(r1 >= r1.max() * (1 - 1e-9))[0][-1])
    k_acc = int(np.nonzero(r2 >= r2.max() * (1 - 1e-9))[0][0]) + 1
    kmax = min(n1 - 1, n2 - 1, k_dec + k_acc)
    if kmax < 1:
        return 0

    def combined(k):
        c = q1[n1 - k :] + (q2[: k + 1] - b_pose)
        return np.concatenate([q1[max(n1 - k - 2, 0) : n1 - k], c, q2[k + 1 : k + 3]])

    def cheap_ok(k):
        w = combined(k)
        if np.any(_outside_limits(arm, w)):
            return False
        if arm.zones and first_violation(arm, arm.zones, w) is not None:
            return False  # the overlap cuts into a keep-out zone (each move was checked alone)
        dq = np.diff(w, axis=0) / period
        if np.any(np.abs(dq) > vb) or np.any(np.abs(np.diff(dq, axis=0)) / period > ab):
            return False
        p = tool_point(arm, w)
        dp = np.diff(p, axis=0) / period
        return bool(
            np.linalg.norm(dp, axis=1).max() <= vt and np.linalg.norm(np.diff(dp, axis=0), axis=1).max() / period <= at
        )

    def deviation_ok(k):
        c = q1[n1 - k :] + (q2[: k + 1] - b_pose)
        # the two moves' own tool paths over the overlap and a sample either side, as a servo plays them
        ref = tool_point(arm, _dense(np.concatenate([q1[max(n1 - k - 1, 0) :], q2[1 : k + 2]]), 4))
        step = float(np.linalg.norm(np.diff(tool_point(arm, c), axis=0), axis=1).max())
        sub = int(min(16, max(4, math.ceil(step / (0.05 * blend)))))
        dev = _distance_to_polyline(tool_point(arm, _dense(c, sub)), ref).max() + 0.5 * step / sub
        return bool(dev <= blend)

    k = kmax
    while k >= 1 and not cheap_ok(k):
        k -= 1
    if k < 1:
        return 0
    if deviation_ok(k):
        return k
    lo, hi = 0, k  # deviation grows with the overlap: the largest k that keeps within blend, by bisection
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if deviation_ok(mid):
            lo = mid
        else:
            hi = mid
    while lo >= 1 and not (cheap_ok(lo) and deviation_ok(lo)):
        lo -= 1
    return lo


def blend_joint_moves(arm: Arm, moves, plans: list[MovePlan], *, period_s: float) -> list[MovePlan]:
    """Blend each joint move into the line or joint move after it (and each line into a joint move after it)
    where the first asks for a blend (``blend_m`` > 0, no ``stop``): the second move starts before the first
    has come to rest, their motions added (``_joint_corner_overlap``: as many samples as keep every limit and
    keep the tool within ``blend_m`` of both moves' own paths). Lines into lines are ``blend_chain``'s. The
    overlapped samples go to the joint move's plan (a line's plan keeps only samples on its line). Returns
    the new plans; nothing changes where no move asks for a blend."""
    out = list(plans)
    for i in range(len(out) - 1):
        m1, m2 = moves[i], moves[i + 1]
        if not isinstance(m1, (LineMove, JointMove)) or not isinstance(m2, (LineMove, JointMove)):
            continue
        if isinstance(m1, LineMove) and isinstance(m2, LineMove):
            continue
        if m1.blend_m <= 0 or m1.stop:
            continue
        p1, p2 = out[i], out[i + 1]
        if p1.kind not in ("line", "joint") or p2.kind not in ("line", "joint"):
            continue
        k = _joint_corner_overlap(arm, m1, m2, p1, p2, period_s, m1.blend_m)
        if k < 1:
            continue
        q1, q2 = p1.q_rad, p2.q_rad
        n1 = len(q1) - 1
        c = q1[n1 - k :] + (q2[: k + 1] - q2[0])
        if isinstance(m2, LineMove):  # the overlap goes to the joint move p1; the line keeps its own samples
            a, b = np.concatenate([q1[: n1 - k], c]), q2[k:]
        else:
            a, b = q1[: n1 - k + 1], np.concatenate([c, q2[k + 1 :]])
        # last word: the joined samples, across the junction, inside every joint's speed and acceleration
        # limit (the overlap's own checks compare with the two moves; a line that only turns the tool can
        # sit at a limit already, and the sum passed it)
        w = np.vstack([a[max(0, len(a) - k - 3) :], b[1 : k + 4]])
        if len(w) >= 3:
            v = np.abs(np.diff(w, axis=0)) / period_s
            acc = np.abs(np.diff(w, 2, axis=0)) / period_s**2
            if np.any(v > arm.max_speed_rad_s * (1 + 1e-9)) or np.any(acc > arm.max_accel_rad_s2 * (1 + 1e-9)):
                continue
        g = float(p1.gripper_rad[-1])
        out[i] = replace(p1, t_s=np.arange(len(a)) * period_s, q_rad=a, gripper_rad=np.full(len(a), g))
        out[i + 1] = replace(p2, t_s=np.arange(len(b)) * period_s, q_rad=b, gripper_rad=np.full(len(b), g))
    return out
