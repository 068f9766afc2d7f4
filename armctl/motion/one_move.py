"""Planning one move (line, joint, gripper, wait) into timed samples, checked against the arm's keep-out zones."""

from __future__ import annotations

import math

import numpy as np

from armctl.errors import MotionError
from armctl.model.arm import Arm
from armctl.model.kinematics import base_split, tool_point, turns_inside
from armctl.model.workspace import fmt_point
from armctl.motion.lines import plan_line_path
from armctl.motion.moves import DEFAULT_MAX_JOINT_STEP_RAD, GripperMove, JointMove, LineMove, Move, MovePlan, Wait
from armctl.motion.refusals import limit_error, located, outside_limits, where_along
from armctl.motion.timing import check_duration, line_caps_and_profile, sample_times, speed_profile, timed
from armctl.motion.trajectory import DEFAULT_PERIOD_S


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
        raise located(exc, move.label) from None


def check_zones(arm: Arm, mp: MovePlan) -> None:
    """Raise ZoneError if the planned move ``mp`` takes a link into one of ``arm.zones`` anywhere along it
    (between samples too), naming the zone, the link and where along the move."""
    if not arm.zones or mp.kind not in ("line", "joint") or len(mp.t_s) < 2:
        return
    from armctl.model.zones import first_violation, refusal

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
        where = where_along(min(frac, 1.0), p)
        hint = "add a via point around it, or move the target"
    else:
        frac = t / mp.duration_s if mp.duration_s > 0 else 0.0
        where = f"{100.0 * frac:.0f}% through the joint move (t = {t:.2f} s, tool at {fmt_point(p)} m)"
        hint = "move through a pose above it first"
    raise refusal(arm, arm.zones, v, where, fraction=min(frac, 1.0), hint=hint)


def _hold(q0, g0, duration, period, kind, label) -> MovePlan:
    check_duration(duration, kind)
    k = max(1, math.ceil(duration / period - 1e-9)) if duration > 0 else 0
    t = np.arange(k + 1) * period
    return MovePlan(
        kind=kind, label=label, t_s=t, q_rad=np.repeat(q0[None, :], k + 1, axis=0), gripper_rad=np.full(k + 1, g0)
    )


def _plan_move(arm, move, q0, g0, period, max_step) -> MovePlan:
    if isinstance(move, Wait):
        return _hold(q0, g0, move.duration_s, period, "wait", move.label)
    if isinstance(move, GripperMove):
        return _plan_gripper(arm, move, q0, g0, period)
    if isinstance(move, JointMove):
        return _plan_joint(arm, move, q0, g0, period)
    if isinstance(move, LineMove):
        turn = _base_turn_first(arm, move, q0)
        if turn is not None:
            return _line_from_axis(arm, move, q0, g0, period, max_step, turn)
        return _plan_line(arm, move, q0, g0, period, max_step)
    raise TypeError(f"not a move: {move!r}")


def _plan_gripper(arm: Arm, move: GripperMove, q0, g0: float, period: float) -> MovePlan:
    """The gripper at its speed limit (share ``speed_fraction``), the arm held."""
    if arm.gripper is None:
        raise MotionError(f"arm '{arm.name}' has no gripper")
    dg = move.angle_rad - g0
    if abs(dg) < 1e-12:
        return _hold(q0, g0, 0.0, period, "gripper", move.label)
    gl = arm.gripper.max_speed_rad_s
    s = np.linspace(0.0, 1.0, 65)
    t, g, _ = timed(
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


def _plan_joint(arm: Arm, move: JointMove, q0, g0: float, period: float) -> MovePlan:
    """All joints on a straight line in joint space, starting and stopping together."""
    limit = arm.max_speed_rad_s
    q1 = np.asarray(move.q_rad, dtype=float)
    if not arm.within_limits(q1):
        raise limit_error(arm, q1, "at the end of the joint move", hint="change the pose")
    dq = q1 - q0
    span = float(np.abs(dq).max())
    if span < 1e-12:
        return _hold(q0, g0, 0.0, period, "joint", move.label)
    s = np.linspace(0.0, 1.0, 129)
    moving = np.abs(dq) > 0
    cap = float(np.min(move.speed_fraction * limit[moving] / np.abs(dq[moving])))
    acc = move.accel_rad_s2 / span
    acc = min(acc, float(np.min(arm.max_accel_rad_s2[moving] / np.abs(dq[moving]))))  # each joint's limit
    t, q, _ = timed(
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


def _plan_line(arm: Arm, move: LineMove, q0, g0: float, period: float, max_step: float) -> MovePlan:
    """A straight tool line: its path (IK per point), timed under the tool's and the joints' limits, the samples
    checked against the joint limits."""
    limit = arm.max_speed_rad_s
    path = plan_line_path(arm, q0, move, max_joint_step_rad=max_step)
    if path.length <= 0:
        return _hold(q0, g0, 0.0, period, "line", move.label)
    base = move.speed_m_s / path.speed_scale if path.speed_scale > 0 else move.speed_m_s
    acc = move.accel_m_s2 / path.speed_scale if path.speed_scale > 0 else move.accel_m_s2
    accel_limit = arm.max_accel_rad_s2
    cap, profile = line_caps_and_profile(path.s, path.q, limit, base, accel_limit, acc)
    trapezoids: list[float] = []
    t, q, _ = timed(
        path.s,
        cap,
        acc,
        path.at,
        limit,
        period,
        label_kind="line",
        jerk_time_s=move.jerk_time_s,
        profile=profile,
        accel_limit=accel_limit,
        durations=trapezoids,
    )
    slowed = _line_slowed(move, path, cap, profile, base, acc, trapezoids, t, period)
    q[0], q[-1] = path.q[0], path.q[-1]
    _check_line_samples(arm, path, q)
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


def _line_slowed(move: LineMove, path, cap, profile, base: float, acc: float, trapezoids, t, period: float) -> bool:
    """Slowed if the joint speed (or acceleration) limits made the move longer than the Cartesian limits alone
    would. Where no joint capped the speed and no acceleration limit could bind, the first profile ``timed``
    drew was that very trapezoid (same s, caps, acceleration): its duration, not a second pass."""
    if profile is speed_profile and float(cap.min()) >= base:
        free = trapezoids[0] + move.jerk_time_s
    else:
        free = speed_profile(path.s, np.full(len(path.s), base), acc)[1][-1] + move.jerk_time_s
    return bool(sample_times(float(free), period)[0][-1] < t[-1] - 1e-9)


def _check_line_samples(arm: Arm, path, q) -> None:
    """JointLimitError at the first sample of a line outside the joint limits (a joint peaking between two
    segment points)."""
    outside = outside_limits(arm, q)
    if np.any(outside):
        i = int(np.argmax(outside))
        p = tool_point(arm, q[i])
        raise limit_error(
            arm,
            q[i],
            where_along(float(np.hypot(*(p - path.start))) / max(path.length, 1e-300), p),
            hint="split the line with a via point or a joint move, or move the target",
        )


def _base_turn_first(arm: Arm, move: LineMove, q0) -> list[float] | None:
    """A line that starts on the base axis and leaves it: base angles (nearest first, inside the limits)
    that point the arm along the line (or half a turn from it) if the base must turn before the line
    starts (turning it there does not move the tool); None if it need not."""
    if not arm.has_base or len(move.target_m) != 3:
        return None
    start = tool_point(arm, q0)
    end = np.asarray(move.target_m, dtype=float)
    d = end[:2] - start[:2]
    az, along = base_split(float(d[0]), float(d[1]))  # the line's direction seen from above
    if base_split(float(start[0]), float(start[1]))[1] > 1e-9 or along <= 1e-9:
        return None
    if abs(math.remainder(q0[0] - az, math.pi)) < 1e-9:
        return None
    out = []
    for flip in (0.0, math.pi):
        out += turns_inside(az + flip, float(arm.q_min[0]), float(arm.q_max[0]))
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
