"""Servo pulses for a planned Trajectory, and their playback on a board backend.

``prepare`` turns a trajectory into servo pulses through the calibration (refusing any pulse outside
min/max before anything is sent); ``segments`` merges samples that lie on one straight line in pulse
space into one multi-frame move; ``Player`` streams pulses to an open backend as timed moves, calling a
tick every few ms (stop requests, live pose, progress), stopping under control on Ctrl-C or a stop
request and naming the program step when the link is lost; with a ``RunControl`` it plays the samples
time-scaled (feed hold, resume, speed override) and keeps the board's queue short so a hold starts soon.
Where the arm starts and what it ramps from is the caller's (``armctl.robot.runner``): this module only plays.
"""

from __future__ import annotations

import math
from array import array
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import numpy as np

from armctl.bus.backend import FRAME_S, Backend
from armctl.calibration.servo import Calibration
from armctl.errors import LinkError, PulseLimitError
from armctl.motion.refusals import located
from armctl.motion.trajectory import Trajectory
from armctl.robot.runcontrol import CONTROLLED_MOVE_FRAMES, HOLD_RAMP_S, LEAD_S, OVERRIDE_MAX

MAX_SEGMENT_FRAMES = 25
RATE_SLEW = FRAME_S / HOLD_RAMP_S  # the most the playback rate changes in a frame (a hold: 1 -> 0 in HOLD_RAMP_S)
CAP_SLACK_SLEW = 0.05  # caps are smoothed backwards for this rate change a frame (a speed cap comes on over 20 frames)
RATE_SEARCH_STEPS = 12  # bisection steps for the fastest rate change a frame that every acceleration limit allows
HOLD_CHUNK_FRAMES = 5  # frames computed at a time while the rate changes
SEGMENT_TOL = 0.5  # servo units: samples this close to a straight line in value space are merged into one move


@dataclass
class Pulses:
    """Servo values of a trajectory (pulses in us, or bus servo steps): ``us`` (N, c) in channel order
    ``channels``; NaN = no change."""

    channels: tuple[int, ...]
    us: np.ndarray
    step: np.ndarray
    steps: list[str]
    frames_per_sample: int

    @property
    def frames(self) -> int:
        """Frames (20 ms) this part takes to play."""
        return (len(self.us) - 1) * self.frames_per_sample


def prepare(traj: Trajectory, cal: Calibration) -> Pulses:
    """Servo values for every sample of ``traj`` (us, or steps for bus servos), on each servo's resolution;
    PulseLimitError (a MotionError) if any is outside its calibrated range, located by the program step's label,
    except on a motion that starts with the arm outside it and only brings it back (``Calibration.check_escape``)."""
    values = [cal.joints_to_values(traj.q_rad, check=False)]
    servos = list(cal.joints)
    gripper = cal.gripper is not None and np.all(np.isfinite(traj.gripper_rad))
    if gripper:
        values.append(np.asarray(cal.gripper_value(traj.gripper_rad, check=False))[:, None])
        servos.append(cal.gripper)
    if not cal.check_escape(servos, np.concatenate(values, axis=1)):  # starts inside: every value inside
        _check_pulses(traj, cal, values[0], values[1][:, 0] if gripper else None)
    fps = max(1, round(traj.period_s / FRAME_S))
    res = np.array([s.resolution for s in servos])
    values = np.round(np.concatenate(values, axis=1) / res) * res  # the board's resolution
    return Pulses(tuple(s.channel for s in servos), values, np.asarray(traj.step), list(traj.steps), fps)


def _check_pulses(traj: Trajectory, cal: Calibration, joint_values, gripper_values) -> None:
    """PulseLimitError for the first sample of ``traj`` that needs a value outside the calibration, located by
    its program step's label (a drawing's stroke and point, a program's step and line)."""
    bad = cal.outside(joint_values)
    if gripper_values is not None:
        bad = bad | cal.outside_gripper(gripper_values)
    if not np.any(bad):
        return
    k = int(np.argmax(bad))
    label = traj.steps[int(traj.step[k])] if len(traj.steps) and len(traj.step) > k else ""
    try:
        cal.check_values(joint_values[k : k + 1], traj.q_rad[k : k + 1])
        if gripper_values is not None:
            cal.gripper_value(traj.gripper_rad[k])
    except PulseLimitError as exc:
        raise located(exc, label) from None


def segments(
    us: np.ndarray, *, frames_per_sample: int = 1, max_frames: int = MAX_SEGMENT_FRAMES, tol_us: float = SEGMENT_TOL
) -> Iterator[tuple[int, int]]:
    """Cut samples ``us`` (N, c) into moves: (end sample index, frames), one at a time as they are sent
    (cutting a long program whole first would leave the board's watchdog without a line). Samples that lie
    within ``tol_us`` of the straight line between a move's ends are merged into it."""
    a, n = 0, len(us)
    max_samples = max(1, max_frames // frames_per_sample)
    while a < n - 1:
        b = a + 1
        while b + 1 < n and b + 1 - a <= max_samples:
            cand = b + 1
            frac = (np.arange(a + 1, cand) - a)[:, None] / (cand - a)
            line = us[a] + (us[cand] - us[a]) * frac
            if np.nanmax(np.abs(line - us[a + 1 : cand]), initial=0.0) > tol_us:
                break
            b = cand
        yield b, (b - a) * frames_per_sample
        a = b


# --- playback ------------------------------------------------------------------------------------------------


@dataclass
class StreamResult:
    """What ``Player.play`` sent: frames of motion, move commands, and the frames of the leading ramp."""

    frames: int
    commands: int
    ramp_frames: int
    stopped: bool = False


class Player:
    """Plays pulses on an open ``backend``.

    ``tick()`` is called every few ms while playing, also from inside the backend's waits (queue full,
    draining); it may raise StopRequested to stop. ``progress(fraction, step, seconds_left)`` is told how
    far the playback is.

    With a ``control`` (``armctl.robot.runcontrol.RunControl``) the playback is a time-scaling of the planned
    samples: it walks along them at the rate the control asks for (feed hold: down to rest and held;
    resume; speed override), every frame's values on the straight line in servo space between two planned
    samples (where the board's own interpolation puts them at full speed), so the tool stays on the planned
    path. The rate changes by at most ``slew`` a frame (``RATE_SLEW``: from the program's speed to rest in
    ``HOLD_RAMP_S``), and by less where the frames it gives would pass ``max_accel`` (address -> servo units
    per second squared, its joint's acceleration limit, checked on the frames themselves: what the plan
    accelerates plus what the rate's change adds); it never lets a servo step faster than ``max_speed``
    (address -> servo units per second) beyond what the plan itself does. The board is sent at most
    ``LEAD_S`` of motion ahead in moves of at most ``CONTROLLED_MOVE_FRAMES`` (one on a board timed from
    the host), so a hold starts within that, not after a long queue or a long merged move. At rate 1 the
    frames sent are those the plain playback sends (its merged moves cut at planned samples)."""

    def __init__(
        self,
        backend: Backend,
        *,
        tick: Callable[[], None] | None = None,
        progress: Callable[[float, str, float], None] | None = None,
        control=None,
        max_speed: dict[int, float] | None = None,
        max_accel: dict[int, float] | None = None,
        slew: float = RATE_SLEW,
    ):
        self.backend, self.tick, self.progress = backend, tick, progress
        self.control, self.max_speed, self.max_accel = control, dict(max_speed or {}), dict(max_accel or {})
        self.slew = float(slew)  # the most the rate changes in a frame
        self.current_step = "connecting"
        self.parts: list[Pulses] = []
        self.declared = False  # a start pose was set first (one frame before the first part)
        self.frames_sent = 0  # frames of the parts sent to the board so far
        self._total = 0
        self._base = 0  # the backend's played frames when this playback began
        # with a control: per frame sent, the part and the (fractional) sample it plays
        self.stopped_at: int | None = None  # the frame playing when a stop came
        self._tl_part: array = array("i")
        self._tl_tau: array = array("d")

    def play(self, parts: list[Pulses], *, declare: dict[int, float] | None = None, ramp: bool = False) -> StreamResult:
        """Set ``declare`` (address -> value, one frame), then stream every part in turn and wait until the
        board has played them. ``ramp``: the first part is a ramp to the start (counted apart).

        Ctrl-C or StopRequested from the tick: the board stops under control (drops its queue, holds the
        pulses it outputs), then the exception goes on. LinkError: re-raised naming the step it happened in."""
        self.parts, self.declared = list(parts), bool(declare)
        self._total = sum(p.frames for p in parts)
        self._base = self.backend.played_frames()
        self._tl_part, self._tl_tau = array("i"), array("d")
        self.commands = self.frames_sent = 0
        self.stopped_at = None
        self.current_step = "connecting"
        self.backend.on_wait = self._tick
        try:
            self._tick()
            if declare:
                self.current_step = "setting the start pose"
                self.backend.move(1, declare)
                self.commands += 1
            if self.control is None:
                self._play_plain(parts)
            else:
                self._play_controlled(parts)
            self.backend.drain()
            if self.progress is not None:
                self.progress(1.0, "done", 0.0)
        except LinkError as exc:
            raise type(exc)(f"{exc} (during {self.current_step}; nothing more was sent)") from None
        except BaseException:  # Ctrl-C, a stop request, anything else: the board stops under control
            self.backend.on_wait = None
            self.stopped_at = self.frames_played()  # (the stop resets the backend's played estimate)
            try:
                self.backend.stop()
            except LinkError:
                pass
            raise
        finally:
            self.backend.on_wait = None
            if self.control is not None:
                self.control.state, self.control.rate = "idle", 0.0
        return StreamResult(
            frames=self.frames_sent, commands=self.commands, ramp_frames=parts[0].frames if ramp and parts else 0
        )

    def _send(self, frames: int, values: dict[int, float | None]) -> None:
        self.backend.move(frames, values)
        self.commands += 1
        self.frames_sent += frames

    def _play_plain(self, parts: list[Pulses]) -> None:
        for p in parts:
            for end, frames in segments(p.us, frames_per_sample=p.frames_per_sample):
                self.current_step = p.steps[int(p.step[end])] if p.steps else "motion"
                values = {ch: (None if not math.isfinite(v) else float(v)) for ch, v in zip(p.channels, p.us[end])}
                self._tick()
                self._send(frames, values)

    # --- time-scaled playback (feed hold, override) -----------------------------------------------------------

    def _caps(self, p: Pulses) -> np.ndarray:
        """Per sample interval of ``p``: the highest rate (1 = as planned) at which no servo steps faster than
        its speed limit, never below 1 (the plan was checked against the limits), smoothed backwards so the
        rate can come down to each cap at ``RATE_SLEW`` a frame before it gets there."""
        n = len(p.us) - 1
        caps = np.full(max(n, 0), np.inf)
        if n <= 0 or not self.max_speed:
            return caps
        step_s = p.frames_per_sample * FRAME_S
        for c, ch in enumerate(p.channels):
            vmax = self.max_speed.get(ch)
            if not vmax:
                continue
            d = np.abs(np.diff(p.us[:, c]))
            d = np.where(np.isfinite(d), d, 0.0)
            with np.errstate(divide="ignore"):
                caps = np.minimum(caps, np.where(d > 0, vmax * step_s / np.maximum(d, 1e-12), np.inf))
            amax = self.max_accel.get(ch)
            if amax and n >= 2:  # accelerations grow with the square of the rate
                a = np.abs(np.diff(p.us[:, c], 2)) / step_s**2
                a = np.where(np.isfinite(a), a, 0.0)
                a = np.maximum(np.concatenate([a, [0.0]]), np.concatenate([[0.0], a]))  # per interval: its ends
                with np.errstate(divide="ignore"):
                    caps = np.minimum(caps, np.where(a > 0, np.sqrt(amax / np.maximum(a, 1e-12)), np.inf))
        caps = np.maximum(caps, 1.0)
        # the rate a frame may cross into the next interval with: at most CAP_SLACK_SLEW above its cap (a frame at a
        # faster rate than the hold's ramp would overrun the next interval's speed limit where it is lower)
        slack = min(self.slew, CAP_SLACK_SLEW) * p.frames_per_sample / OVERRIDE_MAX
        for k in range(n - 2, -1, -1):
            caps[k] = min(caps[k], caps[k + 1] + slack)
        return caps

    def _play_controlled(self, parts: list[Pulses]) -> None:
        ctl = self.control
        ctl.state, rate = "running", None
        lead = max(1.0, LEAD_S / FRAME_S)
        move_frames = CONTROLLED_MOVE_FRAMES if self.backend.caps.timed_moves else 1
        for pi, p in enumerate(parts):
            n = len(p.us) - 1
            if n <= 0:
                continue
            caps = self._caps(p)
            if rate is None:  # a motion starts at rest: at the rate asked for (held at once if paused)
                rate = 0.0 if ctl.paused else min(ctl.override, float(caps[0]))
            fps = p.frames_per_sample
            tau = 0.0  # position along the samples of this part
            while tau < n - 1e-9:
                self.backend.wait_queued(lead)  # a hold starts within what is already on the board
                self._tick()
                k = int(math.floor(tau + 1e-9))
                want = 0.0 if ctl.paused else min(ctl.override, float(caps[min(k, n - 1)]))
                ctl.capped = ctl.override > float(caps[min(k, n - 1)]) + 1e-9
                if rate == 1.0 and want == 1.0 and abs(tau - round(tau)) < 1e-9:
                    # as planned: the very moves the plain playback sends
                    k = int(round(tau))
                    end, frames = next(segments(p.us[k:], frames_per_sample=fps, max_frames=move_frames))
                    self.current_step = p.steps[int(p.step[k + end])] if p.steps else "motion"
                    row = p.us[k + end]
                    for j in range(1, frames + 1):
                        self._tl_part.append(pi)
                        self._tl_tau.append(k + j / fps)
                    self._send(
                        frames, {ch: (None if not math.isfinite(v) else float(v)) for ch, v in zip(p.channels, row)}
                    )
                    tau = float(k + end)
                    ctl.state, ctl.rate = "running", 1.0
                    continue
                if rate <= 0.0 and want <= 0.0:  # held: the board holds the last frame sent
                    # held once the board has played what it was sent (it decelerated to rest along the path)
                    ctl.state, ctl.rate = ("held" if self.frames_played() >= self.frames_sent else "holding"), 0.0
                    self.backend.idle(FRAME_S)
                    continue
                # a few frames at a changing (or overridden) rate, each on the planned path
                tau0, rows, taus = tau, [], []
                for _ in range(HOLD_CHUNK_FRAMES):
                    k = min(int(math.floor(tau + 1e-9)), n - 1)
                    want = 0.0 if ctl.paused else min(ctl.override, float(caps[k]))
                    rate = min(float(caps[k]), self._next_rate(p, tau, rate, min(want, float(caps[k])), rows))
                    if rate < 1e-6:
                        rate = 0.0
                        break
                    if want == 1.0 and abs(rate - 1.0) <= self.slew + 1e-9:
                        # back to the planned speed: onto the next frame of the plan (a step of at most one
                        # planned frame), then the planned moves themselves
                        rate, tau = 1.0, min(float(n), (math.floor(tau * fps + 1e-6) + 1) / fps)
                    else:
                        tau = min(float(n), tau + rate / fps)
                    rows.append(_at(p.us, tau))
                    taus.append(tau)
                    if tau >= n or (rate == 1.0 and abs(tau - round(tau)) < 1e-9):
                        break
                ctl.state = "holding" if ctl.paused else "running"
                ctl.rate = rate
                if not rows:
                    continue
                self.current_step = p.steps[int(p.step[min(n, math.ceil(taus[-1] - 1e-9))])] if p.steps else "motion"
                block = np.vstack([_at(p.us, tau0), np.array(rows)])
                a = 0
                for end, frames in segments(block):
                    for j in range(a + 1, end + 1):
                        self._tl_part.append(pi)
                        self._tl_tau.append(taus[j - 1])
                    values = {ch: (None if not math.isfinite(v) else float(v)) for ch, v in zip(p.channels, block[end])}
                    self._send(frames, values)
                    a = end

    def _sent_row(self, back: int) -> dict[int, float] | None:
        """The values of the frame sent ``back`` frames before the last one (0: the last), channel -> value;
        None before the first."""
        i = len(self._tl_tau) - 1 - back
        if i < 0:
            return None
        p = self.parts[self._tl_part[i]]
        return {ch: float(v) for ch, v in zip(p.channels, _at(p.us, self._tl_tau[i])) if math.isfinite(v)}

    def _next_rate(self, p: Pulses, tau: float, rate: float, want: float, rows: list[np.ndarray]) -> float:
        """The rate of the next frame: toward ``want`` by at most ``slew``, and no further than every joint's
        acceleration limit allows on the frames themselves (the next frame's values against the last two
        sent, ``rows``: those of this chunk not yet sent). If even keeping ``rate`` passes a limit (the plan
        accelerates there as fast as it may), the rate is kept: the plan was checked against the limits."""
        step = max(-self.slew, min(self.slew, want - rate))
        if step == 0.0 or not self.max_accel:
            return max(0.0, rate + step)
        fps, n = p.frames_per_sample, len(p.us) - 1
        chunk = [{ch: float(v) for ch, v in zip(p.channels, r) if math.isfinite(v)} for r in rows[-2:]]
        last = [self._sent_row(1), self._sent_row(0)][len(chunk) :] + chunk
        if len(last) < 2 or last[0] is None or last[1] is None:
            return max(0.0, rate + step)
        prev, cur = last
        lim = [
            (c, ch, self.max_accel[ch] * FRAME_S**2)
            for c, ch in enumerate(p.channels)
            if ch in self.max_accel and ch in prev and ch in cur
        ]

        def ok(r: float) -> bool:
            row = _at(p.us, min(float(n), tau + r / fps))
            return all(abs(row[c] - 2 * cur[ch] + prev[ch]) <= a + 1e-9 for c, ch, a in lim if math.isfinite(row[c]))

        target = max(0.0, rate + step)
        if ok(target):
            return target
        lo, hi = target, rate  # the fastest change that keeps every limit lies between
        if not ok(hi):
            return rate
        for _ in range(RATE_SEARCH_STEPS):
            mid = 0.5 * (lo + hi)
            if ok(mid):
                hi = mid
            else:
                lo = mid
        return hi

    def _tick(self) -> None:
        if self.tick is not None:
            self.tick()
        if self.progress is not None and self._total:
            done = self.program_frames_played()
            left = (self._total - done) * FRAME_S
            if self.control is not None and self.control.override > 0:
                left /= self.control.override
            self.progress(done / self._total, self.current_step, left)

    def frames_played(self) -> int:
        """Frames sent to the board that it has played so far (an estimate from what it acknowledged)."""
        played = self.backend.played_frames() - self._base - (1 if self.declared else 0)
        return min(self.frames_sent if self.control is not None else self._total, max(0, played))

    def position_at(self, frame: int) -> tuple[int, float]:
        """(part index, sample position) that sent frame ``frame`` plays (clamped to what was sent)."""
        if self.control is None or not self._tl_tau:
            f = max(0, int(frame))
            for i, p in enumerate(self.parts):
                if f <= p.frames:
                    return i, f / p.frames_per_sample
                f -= p.frames
            return max(0, len(self.parts) - 1), float(len(self.parts[-1].us) - 1) if self.parts else 0.0
        if frame <= 0:
            return self._tl_part[0], 0.0
        i = min(int(frame), len(self._tl_tau)) - 1
        return self._tl_part[i], self._tl_tau[i]

    def program_frames_played(self) -> float:
        """How far along the planned parts the board is (frames at the planned rate)."""
        if self.control is None:
            return float(self.frames_played())
        i, tau = self.position_at(self.frames_played())
        return sum(p.frames for p in self.parts[:i]) + tau * self.parts[i].frames_per_sample if self.parts else 0.0

    def step_at(self, frame: int) -> tuple[int, int]:
        """(part index, index into that part's ``steps``) of sent frame ``frame``."""
        i, tau = self.position_at(frame)
        p = self.parts[i]
        return i, int(p.step[min(len(p.step) - 1, max(0, math.ceil(tau - 1e-9)))])

    def playing_values(self) -> dict[int, float]:
        """The pulses of the frame the board is playing now (estimate): channel -> us."""
        return self.values_at(self.frames_played())

    def values_at(self, frame: int) -> dict[int, float]:
        """The pulses of sent frame ``frame`` (clamped to what was sent): channel -> us (channels a part
        leaves alone are left out)."""
        if not self.parts:
            return {}
        i, tau = self.position_at(frame)
        p = self.parts[i]
        row = _at(p.us, tau)
        return {ch: float(v) for ch, v in zip(p.channels, row) if math.isfinite(v)}


def _at(us: np.ndarray, tau: float) -> np.ndarray:
    """The values at fractional sample ``tau``: on the straight line between the two samples around it."""
    n = len(us) - 1
    tau = min(max(tau, 0.0), float(n))
    k = min(int(math.floor(tau)), max(n - 1, 0))
    f = tau - k
    if f <= 1e-12 or n == 0:
        return us[k]
    return us[k] + (us[k + 1] - us[k]) * f
