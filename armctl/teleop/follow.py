"""Leader-follower teleoperation: where the follower should be for each read of the leader (``Teleop``).

``Robot.follow`` plays it (``armctl.robot.followplay``): every frame it asks ``Teleop.target()`` for the pose the leader
means, already inside the follower's joint limits and reach, then steps the follower towards it no faster
than its joint speed limits (a quarter of them during the start ramp) and tells ``Teleop.sent()`` what it
commanded. Two mappings:

- ``joints`` (the same model, SO-101 -> SO-101): each joint angle of the leader (through the leader's
  calibration) is the follower's (through the follower's); a joint past the follower's limit is held at it; a
  wrist roll read across +-180 (LeRobot's roll spans the whole turn) is taken at the turn nearest the follower's.
  Servos both calibrations hold (a wrist roll the sidecar holds) turn as far from their held positions as the
  leader's.
- ``tool`` (any pair: an SO-101 leader moving a MeArm): the leader's tool point (its forward kinematics),
  taken about its shoulder, times ``scale`` (default: the follower's reach over the leader's), plus
  ``offset_m``, about the follower's shoulder, is the follower's tool point (its IK, nearest the pose it is
  in; a 3-link follower also takes the leader's tool pitch when the leader has one); a point out of reach is
  moved to the nearest point the follower reaches. The gripper follows by fraction of its range. A follower with
  a wrist roll takes the leader's roll (a leader without one: it keeps its own), solved as a stream's tool target
  is (``armctl.teleop.tooltarget.tool_goal``).

``ToolStream``: end-effector targets from Python (``Robot.follow(source)``), each solved by ``tool_frame``.

A target moved to fit (a limit, the reach) is *clamped*: ``status()`` says so, and by how much.
"""

from __future__ import annotations

import math
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from armctl.errors import BadInputError, MotionError
from armctl.model.arm import Arm
from armctl.model.kinematics import tool_pitch, tool_point
from armctl.model.validate import must_be_positive, not_a_number, not_finite
from armctl.teleop.tooltarget import ToolTarget, as_tool_target, tool_frame, tool_goal

MAPS = ("joints", "tool")
RATE_RANGE_HZ = (1.0, 200.0)
READ_TIMES_S = 60.0  # Teleop.read_times keeps the leader's read times of this long at the rate asked


@dataclass
class Target:
    """A follower pose for one read of the leader: ``q_rad``, ``gripper_rad`` (NaN: none), ``clamped`` (why the
    leader's pose was moved to fit, "" if not), ``leader_t_s`` (when the leader was read)."""

    q_rad: np.ndarray
    gripper_rad: float
    clamped: str
    leader_t_s: float
    #: the leader's held servos (the SO-101's wrist roll), by name: steps from the position its calibration holds
    #: them at (its zero); a follower of the same model turns its own that far from its own (--map joints)
    held_steps: dict = field(default_factory=dict)
    #: the follower's held servos as commanded this frame, by name (steps), filled in by ``Robot.follow``
    held_cmd_steps: dict = field(default_factory=dict)


@dataclass
class FollowStatus:
    """The live state of a follow: loop rate (Hz, over the last second), each joint's lag behind the leader's
    target (deg), the gripper's, whether the target is clamped (and why), frames, the ramp, clamps so far."""

    rate_hz: float = 0.0
    lag_deg: dict[str, float] = field(default_factory=dict)
    clamped: str = ""
    frames: int = 0
    ramping: bool = True
    clamped_frames: int = 0
    leader_reads: int = 0

    def line(self) -> str:
        """One status line: rate, the joint that lags most, clamp."""
        lag = max(self.lag_deg.items(), key=lambda kv: abs(kv[1]), default=("-", 0.0))
        text = f"{self.rate_hz:5.1f} Hz  lag " + " ".join(f"{v:+5.1f}" for v in self.lag_deg.values())
        text += f" deg (most: {lag[0]})"
        if self.ramping:
            text += "  ramping"
        if self.clamped:
            text += f"  CLAMPED: {self.clamped}"
        return text


class Teleop:
    """The mapping from a leader (``armctl.teleop.leader.Leader``, or anything with ``arm`` and ``read()``) to a
    follower ``arm``, and the state of a follow (what ``Robot.follow`` feeds frame by frame)."""

    def __init__(
        self,
        leader,
        follower: Arm,
        *,
        map: str = "joints",  # noqa: A002 - the option's name
        rate_hz: float = 50.0,
        scale: float | None = None,
        offset_m=None,
        max_lag_deg: float | None = None,
        on_frame: Callable[[float, np.ndarray, float, Target, dict], None] | None = None,
    ):
        if map not in MAPS:
            raise BadInputError(f"--map: 'joints' or 'tool', got {map!r}")
        self._pace(follower, rate_hz, max_lag_deg, on_frame)
        la, fa = leader.arm, follower
        if map == "joints":
            if la.joint_names != fa.joint_names or (la.gripper is None) != (fa.gripper is None):
                raise BadInputError(
                    f"--map joints: the leader is a {la.name!r} ({', '.join(la.joint_names)}) and the follower a "
                    f"{fa.name!r} ({', '.join(fa.joint_names)}): joint to joint needs the same model; use --map tool"
                )
            if scale is not None or offset_m is not None:
                raise BadInputError(
                    "--scale and --offset are for --map tool (the tool point); --map joints copies joints"
                )
        if la.dim != fa.dim:
            raise BadInputError(
                f"the leader {la.name!r} and the follower {fa.name!r}: one stands on a rotating base and the other "
                "works in a plane; their tool points do not map"
            )
        if scale is None:
            scale = fa.reach_max / la.reach_max
        self.scale = _finite(scale, "--scale")
        if self.scale <= 0:
            raise must_be_positive("--scale", repr(scale))
        off = np.zeros(fa.dim) if offset_m is None else np.asarray(offset_m, dtype=float).reshape(-1)
        if len(off) != fa.dim or not np.all(np.isfinite(off)):
            raise BadInputError(f"--offset: {fa.dim} finite lengths for arm {fa.name!r}, got {offset_m!r}")
        self.offset_m = off
        self.leader, self.map = leader, map

    def _pace(self, follower: Arm, rate_hz, max_lag_deg, on_frame) -> None:
        """The follow's rate, lag limit and status (checked: BadInputError naming the option)."""
        rate_hz = _finite(rate_hz, "--rate")
        if not RATE_RANGE_HZ[0] <= rate_hz <= RATE_RANGE_HZ[1]:
            raise BadInputError(f"--rate: {rate_hz:g} Hz is outside {RATE_RANGE_HZ[0]:g}..{RATE_RANGE_HZ[1]:g} Hz")
        if max_lag_deg is not None:
            max_lag_deg = _finite(max_lag_deg, "--max-lag-deg")
            if max_lag_deg <= 0:
                raise must_be_positive("--max-lag-deg", repr(max_lag_deg))
        self.max_lag_rad = None if max_lag_deg is None else math.radians(max_lag_deg)
        self.arm = follower
        self.rate_hz = rate_hz
        self.period_s = 1.0 / rate_hz
        self.on_frame = on_frame
        self.status = FollowStatus(lag_deg={n: 0.0 for n in follower.joint_names})
        self._ticks: deque[float] = deque(maxlen=int(rate_hz * 2) + 2)
        #: when the leader was read, every frame (the loop's own rate; a board of 20 ms frames may take fewer
        #: commands than that), the last minute's worth at the rate asked (full after the first minute: a long
        #: follow runs flat from then on)
        self.read_times: deque[float] = deque(maxlen=int(rate_hz * READ_TIMES_S))
        self._q_follow: np.ndarray | None = None
        #: the last ``target()`` read a leader's reading that was news (leaders that say so: ``wait_news``)
        self.news = False

    #: True once the follow has nothing more to follow (a leader never ends; a stream of tool targets does)
    finished = False

    def start(self, q_rad, gripper_rad: float) -> None:
        """The follower is at ``q_rad`` (where the ramp starts)."""
        self._q_follow = np.array(q_rad, dtype=float)

    def wait_news(self, timeout_s: float) -> bool:
        """Wait up to ``timeout_s``; True as soon as the leader has a reading not yet read, for a leader that says
        so (an ``arrived`` event, set on each reading: ``armctl.ros``' joint_commands); others are read on the
        follow's clock only (False after the wait)."""
        news = getattr(self.leader, "arrived", None)
        if news is None:
            time.sleep(timeout_s)
            return False
        return news.wait(timeout_s)

    def target(self) -> Target:
        """Read the leader once; the follower pose it means (clamped to fit). LinkError if the leader is lost."""
        news = getattr(self.leader, "arrived", None)
        self.news = news is not None and news.is_set()  # this reading is one the follow has not seen
        if news is not None:
            news.clear()  # what arrives from now on is news
        r = self.leader.read()
        self.status.leader_reads += 1
        self.read_times.append(r.t_s)
        arm = self.arm
        clamped = ""
        if self.map == "joints":
            lq = np.array(r.q_rad, dtype=float)
            k = arm.roll_index
            if k is not None and self._q_follow is not None:  # a leader's roll read across +-180: the nearer turn
                lq[k] = self._q_follow[k] + math.remainder(lq[k] - self._q_follow[k], 2 * math.pi)
            q = np.clip(lq, arm.q_min, arm.q_max)
            if np.any(np.abs(q - lq) > 1e-9):
                i = int(np.argmax(np.abs(q - r.q_rad)))
                clamped = (
                    f"{arm.joint_names[i]} at its limit {math.degrees(q[i]):.1f} deg (leader {math.degrees(lq[i]):.1f})"
                )
            if not arm.within_limits(q):
                q, why = self._inside(q)
                clamped = clamped or why
        else:
            q, clamped = self._tool_target(r)
        g = math.nan
        if arm.gripper is not None:
            g = r.gripper_rad
            lg = self.leader.arm.gripper
            if self.map == "tool" and lg is not None and math.isfinite(g):
                frac = (g - lg.closed_rad) / (lg.open_rad - lg.closed_rad)
                frac = min(max(frac, 0.0), 1.0)
                g = arm.gripper.closed_rad + frac * (arm.gripper.open_rad - arm.gripper.closed_rad)
            if math.isfinite(g):
                lo, hi = sorted((arm.gripper.closed_rad, arm.gripper.open_rad))
                g = min(max(g, lo), hi)
        held = {}
        lcal = getattr(self.leader, "calibration", None)
        if self.map == "joints" and lcal is not None:
            held = {h.name: r.steps[h.id] - h.position_steps for h in lcal.held if h.id in r.steps}
        return Target(np.asarray(q, dtype=float), float(g), clamped, r.t_s, held)

    def _inside(self, q) -> tuple[np.ndarray, str]:
        """``q`` moved inside the coupled limits (a parallelogram's link angle): the farthest point towards it on
        the line from the follower's last pose, which is inside (the limits are convex there)."""
        q0 = self._q_follow if self._q_follow is not None else np.array(self.arm.home_rad)
        lo, hi = 0.0, 1.0
        for _ in range(30):
            mid = 0.5 * (lo + hi)
            if self.arm.within_limits(q0 + (q - q0) * mid):
                lo = mid
            else:
                hi = mid
        return q0 + (q - q0) * lo, "at the linkage's limit"

    def _tool_target(self, r) -> tuple[np.ndarray, str]:
        from armctl import motion
        from armctl.model import workspace

        la, fa = self.leader.arm, self.arm
        p = tool_point(la, r.q_rad)
        point = fa.tool_frame_origin_m + self.scale * (p - la.tool_frame_origin_m) + self.offset_m
        phi = float(tool_pitch(la, r.q_rad)) if (fa.n_links == 3 and la.n_links == 3) else None
        q_near = self._q_follow if self._q_follow is not None else np.array(fa.home_rad)
        if fa.roll is not None:  # the leader's roll carried over (none: the follower keeps its own)
            roll = None if la.roll is None else float(r.q_rad[la.roll_index])
            goal, _, why = tool_goal(fa, ToolTarget(*point, pitch=phi, roll=roll), q_near)
            return goal, why
        try:
            return motion.solve_pose(fa, point, phi, q_near), ""
        except MotionError:
            pass
        try:
            near = workspace.nearest_reachable(fa, point, phi, q_near)
            q = near.q_rad if near.q_rad is not None else motion.solve_pose(fa, near.point_m, phi, q_near)
            if phi is not None and not fa.within_limits(q):
                raise MotionError("outside the limits")
            why = f"tool point {near.shortfall_m * 1000:.0f} mm out of reach"
            return np.asarray(q, dtype=float), why
        except MotionError:
            pass
        if phi is not None:  # no pose with the leader's pitch: the point alone
            try:
                return motion.solve_pose(fa, point, None, q_near), "tool pitch out of reach"
            except MotionError:
                pass
        return q_near.copy(), "out of reach: held"

    def sent(self, t_s: float, q_rad, gripper_rad: float, target: Target, measured: dict) -> None:
        """The follower was commanded ``q_rad`` (and the gripper) at ``t_s`` for ``target``; ``measured``: its
        servos' angles if it measures them ({} otherwise). Updates the status; calls ``on_frame``."""
        self._q_follow = np.array(q_rad, dtype=float)
        st = self.status
        st.frames += 1
        self._ticks.append(t_s)
        if len(self._ticks) > 1 and self._ticks[-1] > self._ticks[0]:
            st.rate_hz = (len(self._ticks) - 1) / (self._ticks[-1] - self._ticks[0])
        lag = target.q_rad - self._q_follow
        st.lag_deg = {n: math.degrees(v) for n, v in zip(self.arm.joint_names, lag)}
        st.clamped = target.clamped
        if target.clamped:
            st.clamped_frames += 1
        if self.on_frame is not None:
            self.on_frame(t_s, self._q_follow, gripper_rad, target, measured)


def _finite(v, what: str) -> float:
    try:
        f = float(v)
    except (TypeError, ValueError):
        raise not_a_number(what, v) from None
    if not math.isfinite(f):
        raise not_finite(what, v)
    return f


class ToolStream(Teleop):
    """A follow fed end-effector targets (``ToolTarget``s, or dicts with keys x, y, z[, pitch, roll, gripper]) from
    an iterable or a generator (``Robot.follow(source)``): each frame the next target, solved by ``tool_frame``
    nearest the pose last commanded (the follow then steps there within the speed limits); the gripper by
    fraction of its range. ``finished`` once the source is exhausted: the follow ends when the follower has
    reached the last target's pose. A generator may block to pace itself (the frame waits for it). On a board that
    plays queued 20 ms frames (50 a second) a faster stream is taken at the board's pace: the targets between are
    passed over, as a leader's reads are."""

    def __init__(self, source, follower: Arm, *, rate_hz: float = 100.0, max_lag_deg=None, on_frame=None):
        if not follower.has_base:
            raise BadInputError(
                f"tool targets (x, y, z) need an arm on a rotating base; {follower.name!r} works in a plane"
            )
        if isinstance(source, (ToolTarget, dict, str)):
            raise BadInputError(f"follow: one tool target is no stream of them: give a list ([target]), got {source!r}")
        try:
            self._source = iter(source)
        except TypeError:
            raise BadInputError(
                f"follow: a leader arm (armctl.open_leader) or an iterable of tool targets, got {source!r}"
            ) from None
        self._pace(follower, rate_hz, max_lag_deg, on_frame)
        self.leader, self.map = None, "tool"
        self.finished = False
        self._last: Target | None = None

    def target(self) -> Target:
        """The next tool target's pose (its goal: ``tool_frame``'s ``goal_rad``), clamped to fit; once the source
        is exhausted, the last one again (``finished``). BadInputError for a malformed target."""
        q_last = self._q_follow if self._q_follow is not None else np.array(self.arm.home_rad)
        raw = None
        if not self.finished:
            try:
                raw = next(self._source)
            except StopIteration:
                self.finished = True
        now = time.monotonic()
        self.status.leader_reads += 1
        self.read_times.append(now)
        if raw is None:
            last = self._last
            return Target(q_last.copy(), math.nan, "", now) if last is None else last
        t = as_tool_target(raw)
        frame = tool_frame(self.arm, t, q_last, self.period_s)
        g = math.nan
        grip = self.arm.gripper
        if grip is not None and t.gripper is not None:
            g = grip.closed_rad + t.gripper * (grip.open_rad - grip.closed_rad)
        self._last = Target(frame.goal_rad, g, frame.clamped, now)
        return self._last


def follow_source(source, follower: Arm, *, map=None, rate_hz=None, scale=None, offset_m=None, **kw):  # noqa: A002
    """What ``Robot.follow(source)`` follows: a ``Teleop`` for a leader arm (anything with ``arm`` and ``read()``;
    ``map`` default "joints", ``rate_hz`` 50), a ``ToolStream`` for an iterable of tool targets (``rate_hz``
    default 100; no ``scale`` or ``offset``); and the follow's label's words for it."""
    if hasattr(source, "read") and hasattr(source, "arm"):
        rate = 50.0 if rate_hz is None else rate_hz
        tp = Teleop(source, follower, map=map or "joints", rate_hz=rate, scale=scale, offset_m=offset_m, **kw)
        return tp, f"the {source.arm.name} on {getattr(source, 'port', '?')}"
    if map not in (None, "tool"):
        raise BadInputError(f"map={map!r}: tool targets are followed by the tool (map='tool' or leave it out)")
    if scale is not None or offset_m is not None:
        raise BadInputError("scale and offset are for a leader arm (map='tool'); tool targets are used as given")
    return ToolStream(source, follower, rate_hz=100.0 if rate_hz is None else rate_hz, **kw), "tool targets"
