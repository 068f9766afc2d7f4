"""What the ROS 2 node takes, checked whole before anything moves: joint trajectories, joint commands and tool goals
as plain Python values (the node copies them out of the messages), so this module needs no rclpy.

Joint names and angles (``RosJoints``): on an arm derived from a URDF (``--arm so101``, ``FILE.urdf``) the URDF's
joint names and angles (its zeros and signs, ``Arm.urdf_map`` through ``model.urdf``), every joint of the URDF's
chain (the SO-101's ``wrist_roll`` the last; a joint the sidecar holds at its fixed angle) and the gripper under
the URDF's gripper joint; on other arms armctl's names (base first) and angles, then ``gripper``. Radians, times in
seconds.
A trajectory is a list of points, each with ``positions`` (one per name, in the order of ``joint_names``) and
``time_from_start``; it starts where the arm is commanded to be when it is accepted (``header.stamp`` is not used),
and its positions are joined by straight lines in joint space (velocities and accelerations in the message are
checked for length and NaN, not used). Every point must lie inside the joint limits; a segment that would turn a
joint faster than its speed limit is slowed (``too_fast="retime"``: its time is stretched to what the fastest joint
needs) or refused (``too_fast="refuse"``); a trajectory that asks a servo for more torque than the arm's
``torque_use`` of its stall torque (``armctl.motion.torque``) is refused. Refusals are ``Refused``: the reason, the
message field (``points[2].positions[1]``) and the first failing point.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from armctl.errors import BadInputError, TorqueLimitError
from armctl.model.arm import Arm
from armctl.model.kinematics import limit_excess, limit_names, tool_frame
from armctl.model.urdf import derive as urdf
from armctl.motion import MAX_MOVE_S, SPEED_MARGIN
from armctl.motion.torque import check_torque, kgcm, need_words
from armctl.motion.trajectory import DEFAULT_PERIOD_S, Trajectory

GRIPPER_JOINT = "gripper"
TOO_FAST = ("retime", "refuse")
LIMIT_TOL_RAD = 1e-9
HELD_TOL_RAD = math.radians(0.5)  # a held joint (no joint of armctl's model) may be commanded this near its angle
# a value this little beyond a limit is taken as the limit: a measured pose echoed back (a joint_trajectory_controller
# holds the state it reads; an STS3215 reads in 0.088 deg steps, the SO-101's open gripper as 60.03 deg)
ECHO_TOL_RAD = math.radians(0.2)


class Refused(BadInputError):
    """A message refused before anything moved: ``reason`` (one line), ``field`` (the message field at fault, e.g.
    ``points[2].positions[1]``), ``point`` (index of the first failing point, or None), ``kind`` (``malformed``,
    ``limit``, ``too_fast``, ``torque``)."""

    def __init__(self, reason: str, *, field: str, point: int | None = None, kind: str = "malformed"):
        super().__init__(f"{field}: {reason}")
        self.reason, self.field, self.point, self.kind = reason, field, point, kind

    def to_dict(self) -> dict:
        return {"reason": str(self), "field": self.field, "point": self.point, "kind": self.kind}


@dataclass(frozen=True)
class RosJoints:
    """The arm's joints as the topics carry them: ``names`` = the arm's joints (armctl's order), then the ``held``
    joints ({name: fixed angle, rad}), then the gripper (``gripper``: its name, or None); ``urdf``: the angles are
    the URDF's (else armctl's)."""

    arm: Arm
    joints: tuple
    held: dict
    gripper: str | None
    urdf: bool

    @property
    def names(self) -> list[str]:
        return list(self.joints) + list(self.held) + ([self.gripper] if self.gripper else [])

    @property
    def gripper_col(self) -> int:
        """The gripper's column in ``names`` (after the joints and the held joints)."""
        return len(self.joints) + len(self.held)

    def to_ros(self, q) -> np.ndarray:
        """armctl joint angles (rad) -> the topics' (rad, one per joint in ``joints``)."""
        q = np.asarray(q, dtype=float)
        return np.array(list(urdf.urdf_angles(self.arm, q).values())) if self.urdf else np.array(q)

    def from_ros(self, r) -> np.ndarray:
        """The topics' joint angles (rad, one per joint in ``joints``) -> armctl's."""
        r = np.asarray(r, dtype=float)
        return urdf.armctl_angles(self.arm, dict(zip(self.joints, r))) if self.urdf else np.array(r)

    def velocities_to_ros(self, dq) -> np.ndarray:
        dq = np.asarray(dq, dtype=float)
        return np.array(list(urdf.urdf_velocities(self.arm, dq).values())) if self.urdf else np.array(dq)

    def positions(self, q, gripper_rad: float) -> list[float]:
        """One ``joint_states`` position per name: the joints, the held joints, the gripper (NaN: not known)."""
        out = [float(v) for v in self.to_ros(q)] + [float(v) for v in self.held.values()]
        return out + ([float(gripper_rad)] if self.gripper else [])

    def velocities(self, dq, dg: float) -> list[float]:
        out = [float(v) for v in self.velocities_to_ros(dq)] + [0.0] * len(self.held)
        return out + ([float(dg)] if self.gripper else [])

    def limits_rad(self, k: int) -> tuple[float, float]:
        """Joint ``k``'s range in the topics' angles (rad)."""
        lo, hi = self.to_ros(self.arm.q_min)[k], self.to_ros(self.arm.q_max)[k]
        return (float(min(lo, hi)), float(max(lo, hi)))


def ros_joints(arm: Arm) -> RosJoints:
    """How ``arm``'s joints appear on the topics (see the module docstring)."""
    has_g = arm.gripper is not None
    if arm.urdf_map is None:
        return RosJoints(arm, tuple(arm.joint_names), {}, GRIPPER_JOINT if has_g else None, False)
    held = {name: math.radians(deg) for name, deg in getattr(arm.urdf, "held_deg", {}).items()}
    gripper = (arm.gripper_urdf_joint or GRIPPER_JOINT) if has_g else None
    return RosJoints(arm, tuple(name for name, _, _ in arm.urdf_map), held, gripper, True)


def joint_names(arm: Arm) -> list[str]:
    """The names the node publishes and takes (``RosJoints.names``)."""
    return ros_joints(arm).names


def frame_name(arm: Arm) -> str:
    """The frame of ``tool_point`` and ``tool_goal`` (before the namespace): a URDF arm's root link, else
    ``base_link`` (armctl's frame: the base axis at the origin, z from the surface the arm stands on)."""
    return arm.urdf.root_link if arm.urdf is not None else "base_link"


def _columns(arm: Arm, names, field: str = "joint_names", *, need_all: bool = True) -> list[int]:
    """For each name its column in ``RosJoints.names`` (the joints, the held joints, the gripper); Refused for
    unknown, repeated or missing ones."""
    view = ros_joints(arm)
    known = view.names
    cols: list[int] = []
    for i, name in enumerate(names):
        if not isinstance(name, str) or name not in known:
            raise Refused(f"unknown joint {name!r} (this arm's joints: {', '.join(known)})", field=f"{field}[{i}]")
        col = known.index(name)
        if col in cols:
            raise Refused(f"joint {name!r} named twice", field=f"{field}[{i}]")
        cols.append(col)
    if need_all:
        missing = [n for n in view.joints if known.index(n) not in cols]
        if missing:
            raise Refused(f"missing joint(s) {', '.join(missing)} (every joint of the arm is needed)", field=field)
    return cols


def _values(values, count: int, field: str, names, point: int | None, *, optional: bool = False) -> np.ndarray:
    """``values`` as floats: exactly ``count`` of them (or none if ``optional``), all finite."""
    vals = list(values)
    if optional and not vals:
        return np.zeros(0)
    if len(vals) != count:
        raise Refused(f"{len(vals)} values for {count} joint names", field=field, point=point)
    out = np.array(vals, dtype=float)
    bad = np.flatnonzero(~np.isfinite(out))
    if len(bad):
        j = int(bad[0])
        raise Refused(f"{out[j]} for joint {names[j]!r}: must be a finite number", field=f"{field}[{j}]", point=point)
    return out


def _onto_limits(arm: Arm, q: np.ndarray, g: float) -> tuple[np.ndarray, float]:
    """``q`` and ``g`` with each value at most ECHO_TOL_RAD beyond its joint's range put on the range's end."""
    q = np.asarray(q, dtype=float)
    lo, hi = np.asarray(arm.q_min, dtype=float), np.asarray(arm.q_max, dtype=float)
    near = (q >= lo - ECHO_TOL_RAD) & (q <= hi + ECHO_TOL_RAD)
    q = np.where(near, np.clip(q, lo, hi), q)
    if arm.gripper is not None and math.isfinite(g):
        glo, ghi = sorted((arm.gripper.closed_rad, arm.gripper.open_rad))
        if glo - ECHO_TOL_RAD <= g <= ghi + ECHO_TOL_RAD:
            g = min(max(g, glo), ghi)
    return q, g


def _limits(arm: Arm, q: np.ndarray, g: float, cols, names, field: str, point: int | None) -> None:
    """Refused naming the first joint of ``q`` (armctl's angles; the gripper ``g``) outside its limits, with the
    angle and the limits as the topics give them."""
    ex = limit_excess(arm, q)
    if np.any(ex > LIMIT_TOL_RAD):
        k = int(np.argmax(ex > LIMIT_TOL_RAD))
        if k < arm.n and k in cols:
            j = cols.index(k)
            view = ros_joints(arm)
            lo, hi = (math.degrees(v) for v in view.limits_rad(k))
            at = math.degrees(view.to_ros(q)[k])
            raise Refused(
                f"joint {names[j]!r} at {at:.2f} deg is outside its limits {lo:g}..{hi:g} deg",
                field=f"{field}[{j}]",
                point=point,
                kind="limit",
            )
        raise Refused(f"{limit_names(arm)[k]} is outside its limits", field=field, point=point, kind="limit")
    gr = arm.gripper
    if gr is not None and math.isfinite(g):
        lo, hi = sorted((gr.closed_rad, gr.open_rad))
        if not lo - LIMIT_TOL_RAD <= g <= hi + LIMIT_TOL_RAD:
            j = cols.index(ros_joints(arm).gripper_col)
            raise Refused(
                f"gripper at {math.degrees(g):.2f} deg is outside {math.degrees(lo):g}..{math.degrees(hi):g} deg",
                field=f"{field}[{j}]",
                point=point,
                kind="limit",
            )


def _apply(arm: Arm, cols, vals, names, field: str, point: int | None, q_prev, g_prev: float):
    """The values of one message (the topics' angles, in ``cols``) over the pose (``q_prev``, armctl's angles;
    ``g_prev``) -> (armctl joint angles, gripper); Refused for a held joint moved off its fixed angle."""
    view = ros_joints(arm)
    r = view.to_ros(q_prev)
    g = g_prev
    held = list(view.held.items())
    for j, (c, v) in enumerate(zip(cols, vals)):
        if c < arm.n:
            r[c] = v
        elif c == view.gripper_col:
            g = float(v)
        else:
            name, at = held[c - arm.n]
            if abs(v - at) > HELD_TOL_RAD:
                raise Refused(
                    f"joint {name!r} at {math.degrees(v):.2f} deg: armctl holds it at {math.degrees(at):g} deg (no "
                    f"joint of its model of arm {arm.name!r}); keep it within {math.degrees(HELD_TOL_RAD):g} deg",
                    field=f"{field}[{j}]",
                    point=point,
                    kind="limit",
                )
    return view.from_ros(r), g


# --- joint commands (sensor_msgs/JointState positions) -------------------------------------------------------


def check_command(arm: Arm, names, positions) -> tuple[np.ndarray, float]:
    """A ``joint_commands`` message -> (armctl joint angles (rad), gripper (rad, NaN if not given)); every joint of
    the arm is needed, held joints and the gripper are optional; Refused if malformed or outside the limits."""
    if not list(names):
        raise Refused("empty: name every joint of the arm", field="name")
    cols = _columns(arm, names, "name")
    vals = _values(positions, len(cols), "position", names, None)
    q, g = _onto_limits(arm, *_apply(arm, cols, vals, names, "position", None, arm.home_rad, math.nan))
    _limits(arm, q, g, cols, list(names), "position", None)
    return q, g


def command_offset(arm: Arm, q, gripper_rad: float, q_now, gripper_now: float | None) -> tuple[float, str]:
    """How far a command (armctl's angles; gripper NaN: not commanded) lies from the pose (``q_now``,
    ``gripper_now``): (the largest difference over the joints and the gripper, rad; the joint's name on the
    topics)."""
    view = ros_joints(arm)
    d = np.abs(np.asarray(q, dtype=float) - np.asarray(q_now, dtype=float))
    k = int(np.argmax(d))
    worst, name = float(d[k]), view.joints[k]
    if view.gripper and gripper_now is not None and math.isfinite(gripper_rad) and math.isfinite(gripper_now):
        dg = abs(gripper_rad - gripper_now)
        if dg > worst:
            worst, name = dg, view.gripper
    return worst, name


# --- joint trajectories (trajectory_msgs/JointTrajectory) ----------------------------------------------------


@dataclass
class TrajectoryPoint:
    """One point as the node copies it from the message: positions, velocities, accelerations (rad, rad/s,
    rad/s^2; the last two may be empty) and ``time_from_start`` (s)."""

    positions: list
    time_from_start: float
    velocities: list = ()
    accelerations: list = ()


@dataclass
class CheckedTrajectory:
    """A trajectory ready to play: the sampled ``trajectory`` (from the start pose), whether segments were slowed
    (``retimed``, with the duration asked for and the one played)."""

    trajectory: Trajectory
    retimed: bool
    asked_s: float
    duration_s: float


def check_trajectory(
    arm: Arm,
    names,
    points: list[TrajectoryPoint],
    q_start,
    gripper_start: float,
    *,
    too_fast: str = "retime",
    period_s: float = DEFAULT_PERIOD_S,
) -> CheckedTrajectory:
    """Check a whole trajectory and sample it at ``period_s`` from (``q_start``, ``gripper_start``): the first point
    at time 0 is where it starts (the Robot ramps there slowly if the arm is elsewhere), else the segment from the
    start pose to the first point is part of it. Refused (nothing moves) for malformed messages, points outside
    the limits, and segments faster than a joint's speed limit with ``too_fast="refuse"``."""
    if too_fast not in TOO_FAST:
        raise BadInputError(f"too_fast: 'retime' or 'refuse', got {too_fast!r}")
    names = list(names)
    if not names:
        raise Refused("empty: name the joints the points give positions for", field="joint_names")
    cols = _columns(arm, names)
    if not points:
        raise Refused("no points", field="points")
    has_g = arm.gripper is not None and ros_joints(arm).gripper_col in cols
    Q, G, T, which = _knots(arm, names, cols, points, q_start, gripper_start, has_g)
    T2, retimed = _retimed(arm, Q, G, T, which, has_g, too_fast)
    traj = _sampled(arm, Q, G, T2, period_s)
    _torque(arm, traj, T2, which, _knot_accels(arm, cols, points, which))
    return CheckedTrajectory(traj, retimed, float(T[-1]), float(traj.t_s[-1]))


def _knot_accels(arm: Arm, cols, points: list[TrajectoryPoint], which: list) -> np.ndarray:
    """Each knot's joint accelerations (rad/s^2, armctl's joints, (k, n)): its point's ``accelerations`` (0 where the
    point gives none; the start pose 0)."""
    view = ros_joints(arm)
    zero = view.from_ros(np.zeros(arm.n))
    out = np.zeros((len(which), arm.n))
    for i, k in enumerate(which):
        acc = [] if k is None else list(points[k].accelerations)
        if acc:
            r = np.zeros(arm.n)
            for c, v in zip(cols, acc):
                if c < arm.n:
                    r[c] = float(v)
            out[i] = view.from_ros(r) - zero  # an acceleration turns as the angles do, without their offsets
    return out


def _torque(arm: Arm, traj: Trajectory, T2, which: list, knot_acc) -> None:
    """Refused (kind ``torque``) where the sampled trajectory asks a servo for more than the arm's ``torque_use`` of
    its stall torque (``armctl.motion.torque``), naming the point it is on its way to. Its points are joined by
    straight lines: the holding torque at every sample, and at each point the acceleration the message gives for it
    (a change of speed at a point is the servos' to smooth when it gives none)."""
    qdd = np.zeros_like(traj.q_rad)
    scale = (len(traj) - 1) / float(T2[-1]) if T2[-1] > 0 else 0.0  # samples per second of the knots' time
    for t, a in zip(T2, knot_acc):
        qdd[min(int(round(t * scale)), len(traj) - 1)] = a
    try:
        check_torque(arm, traj, qdd=qdd)
    except TorqueLimitError as exc:
        k = min(int(round(exc.t_s / traj.period_s)), len(traj) - 1)
        t = float(traj.t_s[k]) * (float(T2[-1]) / float(traj.t_s[-1]) if traj.t_s[-1] > 0 else 0.0)
        i = min(max(int(np.searchsorted(T2, t - 1e-12)), 1), len(T2) - 1) if len(T2) > 1 else 0
        p = which[i] if which[i] is not None else 0
        j = exc.joint
        words = need_words(arm, j, exc.need_nm, exc.hold_nm, exc.payload_kg)
        where = "at it" if scale and abs(t - float(T2[i])) * scale < 0.5 else "on the way to it"
        raise Refused(
            f"{arm.joint_names[j]} needs {kgcm(exc.need_nm)} kg.cm {where}, t = {t:.2f} s, {words}",
            field=f"points[{p}].positions",
            point=p,
            kind="torque",
        ) from None


def _knots(arm: Arm, names: list, cols, points: list[TrajectoryPoint], q_start, gripper_start: float, has_g: bool):
    """The trajectory's knots from the start pose: (positions (k, n), gripper (k,), times (k,), the point each
    knot is, None for the start pose). Refused for a malformed point or one outside the limits."""
    knots_q, knots_g, knots_t, which = [np.asarray(q_start, dtype=float)], [float(gripper_start)], [0.0], [None]
    last_t = None
    for k, p in enumerate(points):
        f = f"points[{k}]"
        pos = _values(p.positions, len(names), f"{f}.positions", names, k)
        _values(p.velocities, len(names), f"{f}.velocities", names, k, optional=True)
        _values(p.accelerations, len(names), f"{f}.accelerations", names, k, optional=True)
        t = _point_time(p, k, last_t)
        last_t = t
        q, g = _onto_limits(arm, *_apply(arm, cols, pos, names, f"{f}.positions", k, knots_q[-1], knots_g[-1]))
        _limits(arm, q, g if has_g else math.nan, cols, names, f"{f}.positions", k)
        if k == 0 and t == 0.0:  # the start itself: the Robot ramps there if the arm is elsewhere
            knots_q[0], knots_g[0] = q, g
            which[0] = 0
            continue
        knots_q.append(q)
        knots_g.append(g)
        knots_t.append(t)
        which.append(k)
    return np.array(knots_q), np.array(knots_g), np.array(knots_t), which


def _point_time(p: TrajectoryPoint, k: int, last_t: float | None) -> float:
    """Point ``k``'s time_from_start (s), refused unless finite, 0 or more, after the point before's and at most
    MAX_MOVE_S."""
    f = f"points[{k}]"
    t = float(p.time_from_start)
    if not math.isfinite(t) or t < 0:
        raise Refused(f"{t} s: must be 0 or more", field=f"{f}.time_from_start", point=k)
    if last_t is not None and not t > last_t:
        raise Refused(
            f"{t:g} s is not after points[{k - 1}]'s {last_t:g} s (times must increase)",
            field=f"{f}.time_from_start",
            point=k,
        )
    if t > MAX_MOVE_S:
        raise Refused(f"{t:g} s: longer than {MAX_MOVE_S:g} s", field=f"{f}.time_from_start", point=k)
    return t


def _retimed(arm: Arm, Q, G, T, which: list, has_g: bool, too_fast: str) -> tuple[np.ndarray, bool]:
    """The knots' times with each segment faster than a speed limit slowed to it (and a margin), and whether any
    was; Refused (kind ``too_fast``) for the first such segment with ``too_fast="refuse"``."""
    vmax = np.asarray(arm.max_speed_rad_s, dtype=float)
    gmax = arm.gripper.max_speed_rad_s if arm.gripper is not None else math.inf
    retimed = False
    t_new = [0.0]
    for i in range(1, len(T)):
        dt = T[i] - T[i - 1]
        dq = np.abs(Q[i] - Q[i - 1])
        need = dq / vmax
        dg = abs(G[i] - G[i - 1]) if has_g and math.isfinite(G[i] - G[i - 1]) else 0.0
        need_g = dg / gmax
        worst = int(np.argmax(need)) if len(need) else 0
        need_dt = max(float(np.max(need, initial=0.0)), need_g)
        if need_dt > dt * (1 + 1e-9):
            if too_fast == "refuse":
                k = which[i]
                if need_g > float(np.max(need, initial=0.0)):
                    what, speed, lim = "gripper", dg / dt, gmax
                else:
                    what, speed, lim = repr(ros_joints(arm).joints[worst]), dq[worst] / dt, vmax[worst]
                raise Refused(
                    f"reaching it in {dt:g} s needs joint {what} at {math.degrees(speed):.1f} deg/s, over its "
                    f"{math.degrees(lim):g} deg/s limit (set the parameter too_fast to 'retime' to slow it down)",
                    field=f"points[{k}].time_from_start",
                    point=k,
                    kind="too_fast",
                )
            dt = need_dt / SPEED_MARGIN
            retimed = True
        t_new.append(t_new[-1] + dt)
    return np.array(t_new), retimed


def _sampled(arm: Arm, Q, G, T2, period_s: float) -> Trajectory:
    """The knots (at times ``T2``) interpolated at ``period_s``, stretched onto whole frames."""
    duration = float(T2[-1])
    frames = max(1, math.ceil(duration / period_s - 1e-9))
    ts = np.arange(frames + 1) * period_s
    tq = ts * (duration / (frames * period_s)) if duration > 0 else np.zeros_like(ts)  # stretched onto whole frames
    if len(T2) == 1:
        q_s = np.repeat(Q[:1], len(ts), axis=0)
        g_s = np.full(len(ts), G[0])
    else:
        q_s = np.column_stack([np.interp(tq, T2, Q[:, j]) for j in range(arm.n)])
        g_s = np.interp(tq, T2, G) if np.all(np.isfinite(G)) else np.full(len(ts), G[0])
    if arm.gripper is None:
        g_s = np.full(len(ts), math.nan)
    return Trajectory(
        t_s=ts,
        q_rad=q_s,
        gripper_rad=g_s,
        step=np.zeros(len(ts), dtype=int),
        steps=["joint_trajectory"],
        period_s=period_s,
    )


# --- tool goals (geometry_msgs/PointStamped) -----------------------------------------------------------------


def check_tool_goal(arm: Arm, x: float, y: float, z: float, frame_id: str, frame: str) -> tuple[float, ...]:
    """A ``tool_goal`` point (m, in ``frame``, REP-103: z up; a URDF arm's root link frame) -> armctl's target:
    (x, y, z) on an arm with a base; (x, z) on a planar arm, whose plane is the frame's x-z plane (y must be 0; a
    URDF arm's: its plane). Refused for another frame, NaN or a point beside a planar arm's plane."""
    if frame_id not in ("", frame):
        raise Refused(f"{frame_id!r}: this node takes points in {frame!r} (no tf here)", field="header.frame_id")
    for name, v in (("x", x), ("y", y), ("z", z)):
        if not math.isfinite(v):
            raise Refused(f"{v}: must be a finite number", field=f"point.{name}")
    if arm.urdf is not None:
        p, beside = arm.urdf.from_urdf_point((x, y, z), planar=arm.dim == 2)
        if beside > 1e-6:
            raise Refused(f"{beside:g} m beside the plane arm {arm.name!r} works in", field="point")
        return tuple(float(v) for v in p)
    if arm.has_base:
        return (float(x), float(y), float(z))
    if abs(y) > 1e-6:
        raise Refused(f"{y:g} m: arm {arm.name!r} works in the x-z plane of {frame!r}; y must be 0", field="point.y")
    return (float(x), float(z))


def tool_point_ros(arm: Arm, tool_m) -> tuple[float, float, float]:
    """armctl's tool point -> (x, y, z) in the node's frame (REP-103: a planar arm's (x, y) is (x, 0, y); a URDF
    arm's: its root link frame)."""
    if arm.urdf is not None:
        return tuple(float(v) for v in arm.urdf.to_urdf_point(tool_m))
    p = [float(v) for v in tool_m]
    return (p[0], p[1], p[2]) if arm.has_base else (p[0], 0.0, p[1])


def frame_rotation(arm: Arm) -> np.ndarray:
    """The rotation from armctl's frame to the node's (3x3): none on an arm with a base (the frames differ by a
    shift); on a planar arm its x along the plane's direction (x, or a URDF arm's), its y up, its z beside the
    plane (as ``tool_point_ros`` places the plane)."""
    if arm.has_base:
        return np.eye(3)
    u = np.asarray(arm.urdf.plane_u, dtype=float) if arm.urdf is not None else np.array([1.0, 0.0, 0.0])
    up = np.array([0.0, 0.0, 1.0])
    return np.column_stack([u, up, np.cross(u, up)])


def quaternion(R) -> tuple[float, float, float, float]:
    """A rotation matrix (3x3) as a unit quaternion (x, y, z, w), w >= 0 (geometry_msgs/Quaternion's order)."""
    R = np.asarray(R, dtype=float)
    tr = float(np.trace(R))
    if tr > 0:
        s = 2.0 * math.sqrt(tr + 1.0)
        q = ((R[2, 1] - R[1, 2]) / s, (R[0, 2] - R[2, 0]) / s, (R[1, 0] - R[0, 1]) / s, 0.25 * s)
    else:
        i = int(np.argmax(np.diag(R)))
        j, k = (i + 1) % 3, (i + 2) % 3
        s = 2.0 * math.sqrt(max(1.0 + R[i, i] - R[j, j] - R[k, k], 0.0))
        v = [0.0, 0.0, 0.0]
        v[i] = 0.25 * s
        v[j] = (R[j, i] + R[i, j]) / s
        v[k] = (R[k, i] + R[i, k]) / s
        q = (v[0], v[1], v[2], (R[k, j] - R[j, k]) / s)
    n = math.sqrt(sum(c * c for c in q))
    sign = -1.0 if q[3] < 0 else 1.0
    return tuple(float(sign * c / n) for c in q)


def tool_pose_ros(arm: Arm, q, tool_m) -> tuple[tuple[float, float, float], tuple[float, float, float, float]]:
    """The ``tool_pose`` message's content at pose ``q`` (armctl's angles, rad) with the tool point ``tool_m``:
    (the point, as ``tool_point_ros``; the tool frame's orientation (x, y, z, w) in the node's frame). A URDF arm
    with a wrist roll: its tool link's frame, as tf gives it; other arms armctl's tool frame (``kinematics.tool_frame``:
    on an arm with a roll x along the tool axis, y along the jaws)."""
    q = np.asarray(q, dtype=float)
    point = tool_point_ros(arm, tool_m)
    if not np.all(np.isfinite(q)):
        return point, (math.nan,) * 4
    return point, quaternion(frame_rotation(arm) @ tool_frame(arm, q))
