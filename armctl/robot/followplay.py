"""Leader-follower playback (``Robot.follow``): the motion runner (``armctl.robot.runner``) feeds the follower frame
by frame from its leader (``armctl.teleop.follow.Teleop``), inside its joint limits, speed limits and keep-out zones."""

from __future__ import annotations

import math
import time

import numpy as np

from armctl.bus.backend import FRAME_S
from armctl.errors import LinkError, MotionError, StopRequested
from armctl.model.zones import first_violation
from armctl.motion.torque import StreamCheck
from armctl.robot.pose import on_grid, on_grid_toward
from armctl.robot.runcontrol import RAMP_SPEED_FRACTION
from armctl.robot.stream import StreamResult
from armctl.teleop.tooltarget import speed_step

FOLLOW_RAMP_DONE_DEG = 1.0  # a follow's start ramp ends once every joint is this close to the leader's pose
FOLLOW_QUEUE_FRAMES = 2  # a follow keeps at most this many frames queued on boards that play timed moves
FOLLOW_CATCH_UP_FRAMES = 5  # a follow this many frames late starts its schedule again from now
#: steps a stop may find unfinished on a board of 20 ms frames: the queue's, one more for the host's estimate of
#: the board's clock, one more for margin
FOLLOW_UNFINISHED_STEPS = FOLLOW_QUEUE_FRAMES + 2


def play_follow(runner, m) -> StreamResult:
    """Feed the follower frame by frame from its leader (``m.teleop``): each frame the leader's pose (inside
    the limits and reach), reached by a step no longer than each joint's speed limit allows in the time since
    the last one (a quarter of it until the follower has caught up with the leader: the start ramp). Stops
    under control (the follower holds) on a stop request, Ctrl-C, a lost leader or link, by the exception that
    ended it; a stream of tool targets also ends when it is exhausted and the follower stands at its last pose
    (what was sent played: the result)."""
    owner = runner.owner
    owner.backend.sync_limits(owner.calibration)
    q0, g0, declare, held = runner.pose.start_state()
    be = owner.backend

    def check_stop() -> None:  # (what the board's waits call: no journal, no calls served)
        if m.cancelled():
            raise StopRequested(f"{m.label}: stopped ({m.stop_reason})")

    be.on_wait = check_stop
    try:
        if declare:
            be.move(1, declare)
        m.teleop.start(q0, g0)
        start = [h if h is not None else declare.get(s.channel) for h, s in zip(held, owner.calibration.servos)]
        play = FollowPlayback(runner, m, q0, g0, start)
        runner.journal.start()
        while not play.done():
            runner.tick(m)
            play.frame(check_stop)
        be.drain()
        frames = m.teleop.status.frames
        return StreamResult(frames, frames, 0)
    except BaseException:
        be.on_wait = None
        try:
            be.stop()
        except LinkError:
            pass
        raise
    finally:
        be.on_wait = None


class FollowPlayback:
    """One follow as it plays (``play_follow``): what was last commanded, the frame schedule and the start ramp,
    and one frame's steps: wait for it, its joints (inside the range and the keep-out zones), gripper and held
    servos, each within its speed limit, sent; then the lag checked and the pose journaled."""

    def __init__(self, runner, m, q0, g0: float, start: list):
        owner = runner.owner
        self.runner, self.m, self.start = runner, m, start
        self.be, self.cal, self.arm, self.tp = owner.backend, owner.calibration, owner.arm, m.teleop
        arm, cal, tp = self.arm, self.cal, self.tp
        self.q_cmd, self.g_cmd = np.array(q0, dtype=float), float(g0)
        self.vmax = np.asarray(arm.max_speed_rad_s, dtype=float)
        self.gmax = arm.gripper.max_speed_rad_s if arm.gripper is not None else 0.0
        self.framed = self.be.caps.timed_moves
        self.period = tp.period_s
        self.zones = arm.zones or None  # keep-out zones: every step checked (the motion between frames too)
        self.torque = StreamCheck(arm)  # the servos' torque: every goal and step checked (armctl.motion.torque)
        # held servos of both arms (the SO-101's wrist roll, --map joints): the follower's turns as far from
        # where its calibration holds it as the leader's is from its own, at no more than its speed
        lheld = {h.name for h in getattr(getattr(tp.leader, "calibration", None), "held", ())}
        self.held = [h for h in cal.held if h.name in lheld] if tp.map == "joints" else []
        held_now = self.be.held_steps() if self.held else {}
        self.h_cmd = {h.id: float(round(held_now.get(h.id, h.position_steps))) for h in self.held}
        self.h_seam: dict[int, tuple[float, float]] = {}  # per held servo: the leader's last offset, whole turns added
        self.ramping, self.last_sent = True, None
        self.same, self.last_values = 0, None  # the last step sent, and how many in a row sent the very same values
        self.t_next = time.monotonic()

    def frame(self, check_stop) -> None:
        """One frame: wait for it, step towards the leader's pose, send (unless the board's queue is full)."""
        now = self.wait(check_stop)
        target = self.tp.target()
        dt = (
            FRAME_S
            if self.framed
            else (self.period if self.last_sent is None else min(now - self.last_sent, self.period))
        )
        frac = RAMP_SPEED_FRACTION if self.ramping else 1.0
        if not self.room():
            return  # the board plays 20 ms frames: one more when it has room
        values, q_new, zoned = self.joints(target, self.vmax * dt * frac, dt)
        g_new = self.gripper(target, values, self.gmax * dt * frac)
        self.held_servos(target, values, dt, frac)
        self.send(target, values, q_new, g_new, now)
        self.check_lag(target, zoned)
        self.journal(values, now)

    def wait(self, check_stop) -> float:
        """Until the next frame is due, or the leader has news (armctl ros' joint_commands: read at once); the
        time it was."""
        woken = False
        while (wait := self.t_next - time.monotonic()) > 0:
            woken = self.tp.wait_news(min(wait, 0.01))
            check_stop()
            if woken:
                break
        now = time.monotonic()
        period = self.period
        if not woken:  # on schedule (a late frame is caught up at once), unless far behind (a stall): from now
            late = self.t_next > now - FOLLOW_CATCH_UP_FRAMES * period
            self.t_next = self.t_next + period if late else now + period
        return now

    def done(self) -> bool:
        """True once the source has ended (a stream of tool targets) and the follower sent the same step twice:
        it stands where the last target put it."""
        return self.tp.finished and self.same >= 2

    def room(self) -> bool:
        """True if the board has room for one more step (boards of 20 ms frames keep at most a few queued)."""
        be = self.be
        queued = be.queued_frames() if self.framed else 0.0
        if self.tp.news and self.same >= FOLLOW_UNFINISHED_STEPS and queued >= 1 and be.drop_waiting():
            # news while the follower stands still: in place of the steps queued (all of them this very pose,
            # so a stop leaves the servos there whichever played), not a frame or two behind them
            queued = 0.0
        return queued < FOLLOW_QUEUE_FRAMES

    def joints(self, target, lim, dt: float):
        """The joints' step towards ``target``, at most ``lim`` (rad) each (a frame of ``dt`` s), inside the range,
        out of the keep-out zones, to a target the servos can hold (``armctl.motion.torque.StreamCheck``): (servo
        values by address, the joint angles they give, True if a zone or the torque held the joints)."""
        cal, q_cmd = self.cal, self.q_cmd
        q_new = speed_step(q_cmd, target.q_rad, lim)
        values = {}
        prev = cal.joints_to_values(q_cmd, check=False)
        for s, p, v in zip(cal.joints, prev, cal.joints_to_values(q_new, check=False)):
            # inside the range; a servo that starts outside it (measured there) comes back at the speed limit
            values[s.channel] = on_grid_toward(s, float(p), min(max(float(v), min(s.lo, p)), max(s.hi, p)))
        q_new = np.array([float(s.angle_rad(values[s.channel])) for s in cal.joints])
        zones = self.zones
        why = self.torque.why(q_cmd, target.q_rad, dt)  # a target that asks a servo too much
        zoned = bool(why) or (
            zones is not None and first_violation(self.arm, zones, np.vstack([q_cmd, q_new])) is not None
        )
        if zoned:  # the step would take a link into a keep-out zone: the joints hold (the gripper goes on)
            q_new = q_cmd
            for s, v in zip(cal.joints, cal.joints_to_values(q_cmd, check=False)):
                values[s.channel] = on_grid(s, min(max(float(v), s.lo), s.hi))
            why = why or "held at a keep-out zone"
            target.clamped = why + (f" ({target.clamped})" if target.clamped else "")
        return values, q_new, zoned

    def gripper(self, target, values: dict, glim: float) -> float:
        """The gripper's step towards ``target``, at most ``glim`` (rad), into ``values``; the angle it gives."""
        g_cmd, gs = self.g_cmd, self.cal.gripper
        if gs is None or not math.isfinite(target.gripper_rad) or not math.isfinite(g_cmd):
            return g_cmd
        g_new = g_cmd + min(max(target.gripper_rad - g_cmd, -glim), glim)
        g_was = float(gs.value(g_cmd))
        want_g = min(max(float(gs.value(g_new)), min(gs.lo, g_was)), max(gs.hi, g_was))
        values[gs.channel] = on_grid_toward(gs, g_was, want_g)
        return float(gs.angle_rad(values[gs.channel]))

    def held_servos(self, target, values: dict, dt: float, frac: float) -> None:
        """The held servos' steps towards the leader's, each at most ``frac`` of its speed for ``dt`` s, into
        ``values``."""
        h_cmd, h_seam = self.h_cmd, self.h_seam
        for h in self.held:
            d = target.held_steps.get(h.name)
            if d is not None:
                # more than half a turn between two reads: the leader's servo crossed its 0/4095 (turned by
                # hand past it) and reads from the other end; the follower's cannot follow across its own
                # (its position loop never passes it): it waits at its end until the leader comes back,
                # never turning the long way round to the other one
                last = h_seam.get(h.id)
                turns = 0.0 if last is None else last[1]
                if last is not None and abs(d - last[0]) > 2048:
                    turns -= math.copysign(4096.0, d - last[0])
                h_seam[h.id] = (d, turns)
                want = min(max(h.position_steps + d + turns, 0.0), 4095.0)
                if turns:
                    target.clamped = f"{h.name} held at its end (the leader's is past its 0/4095)"
                hlim = h.speed_steps_s * dt * frac
                step = math.trunc(min(max(want - h_cmd[h.id], -hlim), hlim))  # whole steps, within the limit
                h_cmd[h.id] += step
                values[h.id] = h_cmd[h.id]
            target.held_cmd_steps[h.name] = h_cmd[h.id]

    def send(self, target, values: dict, q_new, g_new: float, now: float) -> None:
        """Send the step, and tell the motion and the teleoperation what was sent."""
        be = self.be
        t_cmd = time.monotonic()  # the command leaves for the servos now
        be.set_goal(values)
        self.same = self.same + 1 if values == self.last_values else 1
        self.last_values, self.last_sent = values, now
        self.q_cmd, self.g_cmd = q_new, g_new
        self.m.commanded(q_new, g_new)
        measured = be.last_measured() if be.caps.measures_positions else {}
        self.tp.sent(t_cmd, q_new, g_new, target, measured)

    def check_lag(self, target, zoned: bool) -> None:
        """End the start ramp once caught up; after it, MotionError if a joint lags more than ``max_lag_deg``."""
        tp, q_cmd = self.tp, self.q_cmd
        lag = np.abs(target.q_rad - q_cmd)
        if self.ramping and np.max(lag, initial=0.0) < math.radians(FOLLOW_RAMP_DONE_DEG):
            self.ramping = tp.status.ramping = False
        elif not self.ramping and not zoned and tp.max_lag_rad is not None and np.max(lag) > tp.max_lag_rad:
            i = int(np.argmax(lag))
            raise MotionError(
                f"{self.m.label}: joint {i + 1} ({self.arm.joint_names[i]}) lagged the leader by "
                f"{math.degrees(lag[i]):.1f} deg, more than --max-lag-deg {math.degrees(tp.max_lag_rad):g} "
                "(the leader moved faster than the follower's speed limits); the follower was stopped"
            )

    def journal(self, values: dict, now: float) -> None:
        """Now and then, the pose sent into the crash journal (not clean: the board may play on)."""
        journal = self.runner.journal
        if journal.due(now):
            vals = [values.get(s.channel, v) for s, v in zip(self.cal.servos, self.start)]
            if not any(v is None for v in vals[: self.arm.n]):
                journal.store_pose(vals, clean=False, hold_in_s=self.be.queued_frames() * FRAME_S)
