"""Play a planned Trajectory on a board backend.

``prepare`` turns the trajectory into servo pulses through the calibration
(refusing any pulse outside min/max before anything is sent); ``Streamer``
connects the pose the board is in to the trajectory's start with a slow joint
ramp, then streams the pulses as timed moves (samples that lie on one straight
line in pulse space become one multi-frame move), with a progress line,
Ctrl-C as a controlled stop and a lost link reported with the program step.

Where the start pose comes from (no jump at start):
- our firmware / the simulator: the pulses the board is already putting out
  (it kept them since the last run); for servos without pulses (after power-up)
  the last pose this host stored for the port, else the arm's home pose, is
  declared and set, then the ramp starts from there;
- StandardFirmata: the same declared pose; attaching a servo pulses 1500 us
  until the first write, which follows immediately, one servo at a time.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from . import motion
from .arm import Arm
from .bus.backend import FRAME_S, Backend
from .calibration import Calibration
from .errors import LinkError, MotionError, StopRequested
from .trajectory import Trajectory

RAMP_SPEED_FRACTION = 0.25
MAX_SEGMENT_FRAMES = 25
TICK_US = 0.5


@dataclass
class Pulses:
    """Pulses (us) of a trajectory: ``us`` (N, c) in channel order ``channels``; NaN = no change."""

    channels: tuple[int, ...]
    us: np.ndarray
    step: np.ndarray
    steps: list[str]
    frames_per_sample: int


def prepare(traj: Trajectory, cal: Calibration) -> Pulses:
    """Pulses for every sample of ``traj``; PulseLimitError (a MotionError) if any is outside min/max."""
    us = [cal.joints_to_us(traj.q_rad)]
    channels = [s.channel for s in cal.joints]
    if cal.gripper is not None and np.all(np.isfinite(traj.gripper_rad)):
        us.append(np.asarray(cal.gripper_to_us(traj.gripper_rad))[:, None])
        channels.append(cal.gripper.channel)
    fps = max(1, round(traj.period_s / FRAME_S))
    us = np.round(np.concatenate(us, axis=1) / TICK_US) * TICK_US  # the board's resolution
    return Pulses(tuple(channels), us, np.asarray(traj.step), list(traj.steps), fps)


def segments(
    us: np.ndarray, *, frames_per_sample: int = 1, max_frames: int = MAX_SEGMENT_FRAMES, tol_us: float = TICK_US
) -> list[tuple[int, int]]:
    """Cut samples ``us`` (N, c) into moves: list of (end sample index, frames). Samples that lie within
    ``tol_us`` of the straight line between a move's ends are merged into it."""
    out = []
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
        out.append((b, (b - a) * frames_per_sample))
        a = b
    return out


# --- the board's stored pulse limits ---------------------------------------------------------------------

FACTORY_LIMITS_US = (500.0, 2500.0)


def board_limits_us(cal_servo) -> tuple[float, float]:
    """The limits (us, 0.5 us steps) a board should store for a servo: its min/max rounded inward."""
    return (math.ceil(cal_servo.min_us * 2 - 1e-6) / 2, math.floor(cal_servo.max_us * 2 + 1e-6) / 2)


def sync_board_limits(backend: Backend, cal: Calibration) -> list[int]:
    """Check the board's stored pulse limits against the calibration before anything moves.

    A channel still at the factory range (500..2500 us: never calibrated) gets the calibration's
    min/max written to it; any other difference raises BoardLimitsError (exit 4) naming the channel,
    both ranges and the fix. Boards without stored limits (Firmata) pass. Returns the channels written.
    """
    from .bus.backend import BoardLimitsError

    info = backend.info
    if info is None or not info.limits_us:
        return []
    written = []
    for s in cal.servos:
        if s.channel >= len(info.limits_us):
            raise BoardLimitsError(
                f"the board has {info.channels} channels; servo {s.name!r} needs channel {s.channel}"
            )
        want = board_limits_us(s)
        have = tuple(float(v) for v in info.limits_us[s.channel])
        if have == want:
            continue
        if have == FACTORY_LIMITS_US:
            backend.set_limits(s.channel, *want)
            written.append(s.channel)
            continue
        raise BoardLimitsError(
            f"the board stores {have[0]:g}..{have[1]:g} us for channel {s.channel} ({s.name}) but the calibration "
            f"{cal.source} says {want[0]:g}..{want[1]:g} us: run 'armctl calibrate --push-limits' to write this "
            "calibration's limits to the board, or pass the calibration that matches it"
        )
    return written


# --- the last pose the host stored for a port --------------------------------------------------------------


def state_dir() -> Path:
    """Where armctl keeps small state files ($ARMCTL_STATE_DIR, else ~/.cache/armctl)."""
    base = os.environ.get("ARMCTL_STATE_DIR")
    if base:
        return Path(base)
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "armctl"


def _pose_file(port: str, arm_name: str) -> Path:
    key = hashlib.sha1(f"{port}|{arm_name}".encode()).hexdigest()[:12]
    return state_dir() / f"pose-{arm_name}-{key}.json"


def load_last_pose(port: str, arm: Arm) -> tuple[np.ndarray, float] | None:
    """The joint angles (rad) and gripper angle (rad) last stored for ``port``, or None."""
    try:
        data = json.loads(_pose_file(port, arm.name).read_text())
        q = np.array(data["q_rad"], dtype=float)
        if q.shape == (arm.n,) and np.all(np.isfinite(q)):
            return q, float(data.get("gripper_rad", float("nan")))
    except (OSError, ValueError, KeyError, TypeError):
        pass
    return None


def save_last_pose(port: str, arm: Arm, q_rad, gripper_rad: float) -> None:
    """Remember the pose the arm was left in on ``port`` (best effort)."""
    path = _pose_file(port, arm.name)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps({"q_rad": [float(v) for v in q_rad], "gripper_rad": float(gripper_rad)}))
        tmp.replace(path)
    except OSError:
        pass


# --- the streamer ---------------------------------------------------------------------------------------


class Progress:
    """One progress line on stderr, rewritten in place: percent, program step, time left."""

    def __init__(self, *, enabled: bool, stream=sys.stderr, min_interval_s: float = 0.2):
        self.enabled, self.stream, self.min_interval_s = enabled, stream, min_interval_s
        self._last = -math.inf
        self._width = 0

    def update(self, fraction: float, label: str, left_s: float, *, force: bool = False) -> None:
        now = time.monotonic()
        if not self.enabled or (not force and now - self._last < self.min_interval_s):
            return
        self._last = now
        text = f"[{100 * fraction:5.1f}%] {label}  {left_s:5.1f} s left"
        self.stream.write("\r" + text.ljust(self._width))
        self._width = len(text)
        self.stream.flush()

    def done(self) -> None:
        if self.enabled and self._width:
            self.stream.write("\n")
            self.stream.flush()


@dataclass
class StreamResult:
    frames: int
    commands: int
    ramp_frames: int
    stopped: bool = False


def _snap_to_limits(q: float, lo: float, hi: float, servo) -> float:
    """A joint angle read back from a pulse, moved onto its limit when it lies outside by less than one
    pulse step: a pose commanded right at a limit comes back from the board's 0.5 us resolution up to
    half a step beyond it, and the next move would refuse to start from there."""
    step = math.radians(TICK_US / servo.us_per_deg)
    if lo - step <= q < lo:
        return float(lo)
    if hi < q <= hi + step:
        return float(hi)
    return q


class Streamer:
    """Plays pulses on an open backend. ``arm`` and ``cal`` describe the servos."""

    def __init__(
        self,
        backend: Backend,
        arm: Arm,
        cal: Calibration,
        *,
        progress: Progress | None = None,
        port_key: str | None = None,
        stop_event=None,
        on_tick=None,
    ):
        """``stop_event`` (a threading.Event): setting it from any thread makes ``play`` do a controlled
        stop and raise StopRequested, within a few ms; ``on_tick(streamer)`` is called every few ms while
        playing (live pose, watchdogs) and may raise StopRequested too."""
        self.backend, self.arm, self.cal = backend, arm, cal
        self.progress = progress or Progress(enabled=False)
        self.port_key = port_key or backend.port
        self.current_step = "connecting"
        self.stop_event, self.on_tick = stop_event, on_tick
        self.playing: list[Pulses] = []  # what play() is streaming: the ramp (if any), then the trajectory
        self.declared = False  # play() set a start pose first (one frame before the first part)
        self._progress_total = self._progress_skip = 0  # frames to play, frames before them (start pose)

    # -- where the arm is now -----------------------------------------------------------------------------

    def start_pose(self) -> tuple[np.ndarray, float, dict[int, float]]:
        """(q_rad, gripper_rad, widths to declare) for the pose the arm is in now (see module doc)."""
        arm, cal = self.arm, self.cal
        stored = load_last_pose(self.port_key, arm)
        q_decl = stored[0] if stored is not None else np.array(arm.home_rad)
        g_decl = stored[1] if stored is not None else (arm.gripper.open_rad if arm.gripper else float("nan"))
        if arm.gripper is not None and not math.isfinite(g_decl):
            g_decl = arm.gripper.open_rad
        board = self.backend.info.widths_us if self.backend.info is not None else ()
        declare: dict[int, float] = {}
        q = np.array(q_decl, dtype=float)
        for i, s in enumerate(cal.joints):
            w = board[s.channel] if s.channel < len(board) else None
            if w is not None:
                q[i] = _snap_to_limits(float(s.angle_rad(w)), arm.q_min[i], arm.q_max[i], s)
            else:
                declare[s.channel] = float(np.round(s.pulse_us(q[i]) / TICK_US) * TICK_US)
        g = g_decl
        if cal.gripper is not None and arm.gripper is not None:
            w = board[cal.gripper.channel] if cal.gripper.channel < len(board) else None
            if w is not None:
                g = float(cal.gripper.angle_rad(w))
            else:
                declare[cal.gripper.channel] = float(np.round(cal.gripper.pulse_us(g) / TICK_US) * TICK_US)
        cal.check_us(np.array([s.pulse_us(q[i]) for i, s in enumerate(cal.joints)]))
        return q, g, declare

    def plan_from_here(self, moves) -> Trajectory:
        """Plan ``moves`` (motion.LineMove, JointMove, GripperMove...) from the pose the arm is in now;
        ``moves`` may also be a function of that pose, ``moves(q_rad)`` -> list of moves."""
        q0, g0, _ = self.start_pose()
        gripper = g0 if math.isfinite(g0) else None
        if callable(moves):
            moves = moves(q0)
        return motion.plan_moves(self.arm, list(moves), q_start=q0, gripper_start=gripper).trajectory

    def ramp(self, q0, g0, traj: Trajectory) -> Trajectory | None:
        """A slow joint move from (q0, g0) to the trajectory's first sample, or None if already there."""
        q1, g1 = traj.q_rad[0], float(traj.gripper_rad[0])
        moves = []
        if np.max(np.abs(q1 - q0)) > 1e-4:
            moves.append(motion.JointMove(tuple(q1), speed_fraction=RAMP_SPEED_FRACTION, label="ramp to start"))
        if self.arm.gripper is not None and math.isfinite(g1) and abs(g1 - g0) > 1e-4:
            moves.append(motion.GripperMove(g1, speed_fraction=RAMP_SPEED_FRACTION, label="ramp gripper"))
        if not moves:
            return None
        if not self.arm.within_limits(q0):
            raise MotionError(
                "the arm is outside its joint limits now "
                f"({', '.join(f'{math.degrees(v):.1f}' for v in q0)} deg); move it by hand or "
                "check the calibration"
            )
        try:
            plan = motion.plan_moves(
                self.arm, moves, q_start=q0, gripper_start=g0 if math.isfinite(g0) else None, period_s=traj.period_s
            )
        except MotionError as exc:
            raise MotionError(f"cannot ramp from the current pose to the start: {exc}") from None
        t = plan.trajectory
        t.steps = ["ramp to start"]
        t.step = np.zeros(len(t.t_s), dtype=int)
        return t

    # -- play -----------------------------------------------------------------------------------------

    def play(self, traj: Trajectory, pulses: Pulses | None = None) -> StreamResult:
        """Connect-ramp, then stream ``traj``; returns what was sent. Ctrl-C stops and re-raises."""
        pulses = pulses or prepare(traj, self.cal)
        sync_board_limits(self.backend, self.cal)
        q0, g0, declare = self.start_pose()
        ramp = self.ramp(q0, g0, traj)
        parts = ([(prepare(ramp, self.cal), "ramp")] if ramp is not None else []) + [(pulses, "main")]
        self.playing, self.declared = [p for p, _ in parts], bool(declare)
        total = sum((len(p.us) - 1) * p.frames_per_sample for p, _ in parts)
        sent = commands = 0
        ramp_frames = (len(parts[0][0].us) - 1) * parts[0][0].frames_per_sample if ramp is not None else 0
        self.current_step = "connecting"
        self._progress_total, self._progress_skip = total, (1 if declare else 0)
        self.backend.on_wait = self._tick
        try:
            self._tick()
            if declare:
                self.current_step = "setting the start pose"
                self.backend.move(1, declare)
                commands += 1
            for p, _ in parts:
                for end, frames in segments(p.us, frames_per_sample=p.frames_per_sample):
                    self.current_step = p.steps[int(p.step[end])] if p.steps else "motion"
                    widths = {ch: (None if not math.isfinite(v) else float(v)) for ch, v in zip(p.channels, p.us[end])}
                    self._tick()
                    self.backend.move(frames, widths)
                    commands += 1
                    sent += frames
                    self._show_progress()
            self.backend.drain()
            self.progress.update(1.0, "done", 0.0, force=True)
        except (KeyboardInterrupt, StopRequested):
            self.backend.on_wait = None
            self.progress.done()
            self._controlled_stop()
            raise
        except LinkError as exc:
            self.progress.done()
            raise type(exc)(f"{exc} (during {self.current_step}; nothing more was sent)") from None
        finally:
            self.backend.on_wait = None
        self.progress.done()
        self.remember()
        return StreamResult(frames=sent, commands=commands, ramp_frames=ramp_frames)

    def _tick(self) -> None:
        if self.stop_event is not None and self.stop_event.is_set():
            raise StopRequested("stopped on request")
        if self.on_tick is not None:
            self.on_tick(self)
        self._show_progress()

    def _show_progress(self) -> None:
        # Also called while the host waits for the board (queue full, draining),
        # so the line keeps moving after the last command has been sent.
        total = self._progress_total
        if not total:
            return
        done = min(total, max(0, self.backend.played_frames() - self._progress_skip))
        self.progress.update(done / total, self.current_step, (total - done) * FRAME_S)

    def _controlled_stop(self) -> None:
        try:
            self.backend.stop()
            self.remember()
        except LinkError:
            pass

    def remember(self) -> None:
        """Store the pose the board is holding as this port's last pose."""
        try:
            st = self.backend.status()
        except LinkError:
            return
        q = []
        for s in self.cal.joints:
            w = st.widths_us[s.channel] if s.channel < len(st.widths_us) else None
            if w is None:
                return
            q.append(float(s.angle_rad(w)))
        g = float("nan")
        if self.cal.gripper is not None and self.cal.gripper.channel < len(st.widths_us):
            w = st.widths_us[self.cal.gripper.channel]
            if w is not None:
                g = float(self.cal.gripper.angle_rad(w))
        save_last_pose(self.port_key, self.arm, q, g)
