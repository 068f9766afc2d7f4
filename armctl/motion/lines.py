"""Line moves cut into segments and solved point by point on the start's branch (LinePath, plan_line_path)."""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

from armctl.errors import MotionError, UnreachableError
from armctl.ik.branch import arm_branch_ik, planar_branch_ik
from armctl.ik.redundancy import REACH_TOL_M, best_free_pose, free_angle_profile, line_pitch
from armctl.model.arm import Arm
from armctl.model.kinematics import tool_point, unwind, wrap
from armctl.model.workspace import check_reachable
from armctl.motion.moves import DEFAULT_MAX_JOINT_STEP_RAD, MIN_SEGMENT_M, MIN_TIMING_SEGMENTS, TWO_PI, LineMove
from armctl.motion.poses import branch_of, pose_roll, solve_pose
from armctl.motion.refusals import limit_error, outside_limits, where_along
from armctl.motion.rows import row_max


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
    arm: Arm | None = None  # the arm (``arm_branch_ik`` solves it; None: the planar serial chain of ``links``)
    side: float = 1.0  # base arms: +1 the base points at the tool, -1 half a turn from it
    profile: tuple | None = None  # free tool angle: (u knots, phi offsets from phi0) of a piecewise-linear profile
    roll0: float = 0.0  # an arm with a wrist roll: the roll at the start (rad), turning by droll along the line
    droll: float = 0.0

    def roll_at(self, u):
        """The roll (rad) at fractions ``u`` of the line (an arm with a wrist roll): linear from the start's."""
        return self.roll0 + np.asarray(u, dtype=float) * self.droll

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
            q, _ = planar_branch_ik(self.links, pts, phi, self.elbow)
        else:
            q, _ = arm_branch_ik(
                self.arm,
                pts,
                None if self.arm.n_links == 2 else phi,
                self.side,
                self.elbow,
                float(ref[0, 0]),
                self.roll_at(u),
            )
        return unwind(q, ref)


def plan_line_path(arm: Arm, q0, move: LineMove, *, max_joint_step_rad: float = DEFAULT_MAX_JOINT_STEP_RAD) -> LinePath:
    """Cut a line move into segments and solve each point; raise MotionError if it cannot be done.

    ``q0``: start pose (rad). Errors say where along the line (percent and
    point) the problem is.
    """
    q0 = np.asarray(q0, dtype=float)
    if len(move.target_m) != arm.dim:
        from armctl.ik import check_target

        check_target(arm, move.target_m)
    if arm.n_links == 2:
        if move.phi_rad is not None:
            raise MotionError("a tool angle (phi) needs a 3-link arm; this arm has 2 links")
        return _line_path(arm, q0, move, None, max_joint_step_rad)
    if move.end_q_rad is not None:
        return _line_path(arm, q0, move, line_pitch(arm, move.end_q_rad), max_joint_step_rad)
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
    r_end = pose_roll(arm, move.roll_rad, q0)
    if float(np.linalg.norm(target - tool_point(arm, q0))) <= 1e-9:
        return _line_path(arm, q0, move, line_pitch(arm, q0), max_joint_step_rad)  # already there: keep the angle
    first = None
    phi_ik = None
    try:
        q_ik = solve_pose(arm, target, None, q0, criterion="nearest", roll=r_end)
        phi_ik = line_pitch(arm, q_ik)
        return _line_path(arm, q0, replace(move, reach_q_rad=tuple(q_ik)), phi_ik, max_joint_step_rad)
    except MotionError as exc:
        first = exc
    side, elbow = branch_of(arm, q0)
    best = best_free_pose(arm, target, branches=[(side, elbow)], roll=r_end)
    if best is not None:
        try:
            return _line_path(arm, q0, move, best[1], max_joint_step_rad)
        except MotionError as exc:
            first = first or exc
    for grid_deg, steps in ((1.0, 1), (0.5, 2)):
        profile = free_angle_profile(
            arm, q0, target, side, elbow, grid_deg=grid_deg, steps_per_5mm=steps, roll_end=r_end
        )
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
    path = _empty_path(arm, q0, move, phi_end, profile)
    length = path.length
    if length <= 0.0:
        return path

    # At least MIN_TIMING_SEGMENTS, so even a sub-millimetre move gets a proper speed ramp.
    k = max(MIN_TIMING_SEGMENTS, math.ceil(length / move.segment_m - 1e-9))
    s = np.linspace(0.0, length, k + 1)
    q, pts, excess = _solve_points(path, s)
    _check_in_reach(s, pts, excess, length, arm.n_links)
    q = continuous(q, q0)
    s, q, pts = _refine(path, s, q, pts, q0, max_joint_step_rad)
    _check_path_limits(arm, move, s, q, pts, length)
    q[0] = q0  # where the arm is (closed form loses ~1e-8 rad right at full extension)
    path.s, path.q, path.points = s, q, pts
    return path


def _empty_path(arm: Arm, q0, move: LineMove, phi_end: float | None, profile) -> LinePath:
    """The line's LinePath before its points are solved (only the start): the end checked reachable, the
    length (a pure turn of the tool counted), the branch to stay on."""
    start = tool_point(arm, q0)
    end = np.asarray(move.target_m, dtype=float)
    n = arm.n_links
    phi0 = line_pitch(arm, q0)
    dphi = 0.0 if phi_end is None else float(wrap(phi_end - phi0))
    turn = abs(dphi)
    if profile is not None:
        dphi = float(profile[1][-1])
        turn = float(np.sum(np.abs(np.diff(profile[1]))))
    r_end = pose_roll(arm, move.roll_rad, q0)
    roll0 = 0.0 if r_end is None else float(q0[arm.roll_index])
    droll = 0.0 if r_end is None else r_end - roll0
    if arm.layered:
        if not _reaches(arm, move.reach_q_rad, end, None if n == 2 else phi0 + dphi, r_end):  # (solved by the caller)
            solve_pose(arm, end, None if n == 2 else phi0 + dphi, q0, roll=r_end)  # the end reachable inside the limits
    else:
        check_reachable(arm, end, None if n == 2 else phi0 + dphi)
    dist = float(np.linalg.norm(end - start)) if arm.has_base else float(np.hypot(*(end - start)))
    # A pure turn of the tool (its angle, its roll) counts as the distance the tool tip's last link sweeps.
    turn = max(turn, abs(droll))
    length = max(dist, float(arm.links_m[-1]) * turn) if n == 3 else dist
    side, elbow = branch_of(arm, q0)
    rel = float(arm.chain_angles(q0)[1])
    if abs(rel) < 1e-9 and move.end_q_rad is not None:
        side, elbow = branch_of(arm, np.asarray(move.end_q_rad, dtype=float))
    return LinePath(
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
        arm=arm,
        side=side,
        profile=profile,
        roll0=roll0,
        droll=droll,
    )


def _check_in_reach(s, pts, excess, length: float, n: int) -> None:
    """UnreachableError at the first point the IK misses by more than REACH_TOL_M."""
    bad_reach = excess > REACH_TOL_M
    if np.any(bad_reach):
        i = int(np.argmax(bad_reach))
        raise UnreachableError(
            f"the line leaves the reach of the arm {where_along(s[i] / length, pts[i])} "
            f"(by {1000 * excess[i]:.1f} mm{' with the tool angle turning' if n == 3 else ''}); "
            "add a via point or change the target",
            target=tuple(pts[i]),
            shortfall_m=float(excess[i]),
        )


def _refine(path: LinePath, s, q, pts, q0, max_joint_step_rad: float):
    """(s, q, pts) with every segment whose joint step exceeds ``max_joint_step_rad`` cut into enough pieces;
    MotionError where a segment already under MIN_SEGMENT_M still jumps (a singularity or a branch change)."""
    length = path.length
    for _ in range(40):
        step = row_max(np.abs(np.diff(q, axis=0)))
        too_big = step > max_joint_step_rad
        if not np.any(too_big):
            break
        seg_len = np.diff(s)
        jump = too_big & (seg_len < MIN_SEGMENT_M)
        if np.any(jump):
            i = int(np.argmax(jump))
            raise MotionError(
                f"the joints would jump by {math.degrees(step[i]):.0f} deg {where_along(s[i] / length, pts[i])} "
                "(the line crosses a singularity or needs the other elbow branch); "
                "use a joint move there or add a via point"
            )
        # Cut each offending segment into enough pieces for the bound (at least halves).
        pieces = np.where(too_big, np.maximum(2, np.ceil(step / max_joint_step_rad)), 1).astype(int)
        idx = np.nonzero(too_big)[0]
        extra = [np.linspace(s[i], s[i + 1], pieces[i] + 1)[1:-1] for i in idx]
        s = np.sort(np.concatenate([s, *extra]))
        q, pts, _ = _solve_points(path, s)
        q = continuous(q, q0)
    else:  # pragma: no cover - 40 rounds of refinement means a discontinuity
        raise MotionError("the line could not be cut fine enough to keep joint steps small")
    return s, q, pts


def _check_path_limits(arm: Arm, move: LineMove, s, q, pts, length: float) -> None:
    """JointLimitError at the first point outside the joint limits (naming how far the joint goes); MotionError
    if the line would end on another branch than the joint pose ``move.end_q_rad`` asks for."""
    outside = outside_limits(arm, q)
    if np.any(outside):
        i = int(np.argmax(outside))
        far = np.where(q[i] > arm.q_max, q.max(axis=0), q.min(axis=0))
        raise limit_error(
            arm,
            q[i],
            where_along(s[i] / length, pts[i]),
            peak=far,
            hint="split the line with a via point or a joint move, or move the target",
        )
    if move.end_q_rad is not None and np.abs(wrap(q[-1] - np.asarray(move.end_q_rad))).max() > 1e-6:
        raise MotionError("a line move to this joint pose would end on the other elbow branch; use a joint move")


def _reaches(arm: Arm, q, end, phi: float | None, roll: float | None = None) -> bool:
    """True if joint angles ``q`` (None: none given) put the tool on ``end`` [at tool angle ``phi``] inside
    every joint limit: the end is reachable (``solve_pose`` would find a pose; which one it is does not matter)."""
    if q is None:
        return False
    q = np.asarray(q, dtype=float)
    if q.shape != (arm.n,) or not arm.within_limits(q):
        return False
    if float(np.linalg.norm(tool_point(arm, q) - end)) > 1e-9:
        return False
    if roll is not None and abs(float(q[arm.roll_index]) - roll) > 1e-9:
        return False
    return phi is None or abs(float(wrap(line_pitch(arm, q) - phi))) <= 1e-9


def _solve_points(path: LinePath, s):
    u = s / path.length
    pts = path.start + u[:, None] * (path.end - path.start)
    phi = path.phi_at(u)
    if path.arm is None:
        q, excess = planar_branch_ik(path.links, pts, phi, path.elbow)
    else:
        q, excess = arm_branch_ik(
            path.arm,
            pts,
            None if path.arm.n_links == 2 else phi,
            path.side,
            path.elbow,
            float(path.q[0, 0]),
            path.roll_at(u),
        )
    return q, pts, excess


def continuous(q, q0):
    """Unwrap each joint along the path, anchored on the start pose ``q0``."""
    dq = np.diff(q, axis=0)
    if len(dq) and float(np.abs(dq).max()) < math.pi:
        # no step of half a turn or more (the usual path): np.unwrap's correction is 0 everywhere, and its
        # answer is q with +0.0 added after the first row (as here, sign of zero included), without its mod
        q = q.copy()
        q[1:] += 0.0
    else:
        q = np.unwrap(q, axis=0)
    return q + TWO_PI * np.round((q0 - q[0]) / TWO_PI)
