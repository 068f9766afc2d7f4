"""Servo pulses for a planned Trajectory, and their playback on a board backend.

``prepare`` turns a trajectory into servo pulses through the calibration (refusing any pulse outside
min/max before anything is sent); ``segments`` merges samples that lie on one straight line in pulse
space into one multi-frame move; ``Player`` streams pulses to an open backend as timed moves, calling a
tick every few ms (stop requests, live pose, progress), stopping under control on Ctrl-C or a stop
request and naming the program step when the link is lost. Where the arm starts and what it ramps from
is the caller's (``armctl.robot``): this module only plays.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import numpy as np

from .bus.backend import FRAME_S, Backend
from .calibration import Calibration
from .errors import LinkError
from .trajectory import Trajectory

MAX_SEGMENT_FRAMES = 25
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
    PulseLimitError (a MotionError) if any is outside its calibrated range."""
    values = [cal.joints_to_values(traj.q_rad)]
    servos = list(cal.joints)
    if cal.gripper is not None and np.all(np.isfinite(traj.gripper_rad)):
        values.append(np.asarray(cal.gripper_value(traj.gripper_rad))[:, None])
        servos.append(cal.gripper)
    fps = max(1, round(traj.period_s / FRAME_S))
    res = np.array([s.resolution for s in servos])
    values = np.round(np.concatenate(values, axis=1) / res) * res  # the board's resolution
    return Pulses(tuple(s.channel for s in servos), values, np.asarray(traj.step), list(traj.steps), fps)


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
    far the playback is."""

    def __init__(
        self,
        backend: Backend,
        *,
        tick: Callable[[], None] | None = None,
        progress: Callable[[float, str, float], None] | None = None,
    ):
        self.backend, self.tick, self.progress = backend, tick, progress
        self.current_step = "connecting"
        self.parts: list[Pulses] = []
        self.declared = False  # a start pose was set first (one frame before the first part)
        self.frames_sent = 0  # frames of the parts sent to the board so far
        self._total = 0
        self._base = 0  # the backend's played frames when this playback began

    def play(self, parts: list[Pulses], *, declare: dict[int, float] | None = None, ramp: bool = False) -> StreamResult:
        """Set ``declare`` (address -> value, one frame), then stream every part in turn and wait until the
        board has played them. ``ramp``: the first part is a ramp to the start (counted apart).

        Ctrl-C or StopRequested from the tick: the board stops under control (drops its queue, holds the
        pulses it outputs), then the exception goes on. LinkError: re-raised naming the step it happened in."""
        self.parts, self.declared = list(parts), bool(declare)
        self._total = sum(p.frames for p in parts)
        self._base = self.backend.played_frames()
        commands = sent = self.frames_sent = 0
        self.current_step = "connecting"
        self.backend.on_wait = self._tick
        try:
            self._tick()
            if declare:
                self.current_step = "setting the start pose"
                self.backend.move(1, declare)
                commands += 1
            for p in parts:
                for end, frames in segments(p.us, frames_per_sample=p.frames_per_sample):
                    self.current_step = p.steps[int(p.step[end])] if p.steps else "motion"
                    values = {ch: (None if not math.isfinite(v) else float(v)) for ch, v in zip(p.channels, p.us[end])}
                    self._tick()
                    self.backend.move(frames, values)
                    commands += 1
                    sent += frames
                    self.frames_sent = sent
            self.backend.drain()
            if self.progress is not None:
                self.progress(1.0, "done", 0.0)
        except LinkError as exc:
            raise type(exc)(f"{exc} (during {self.current_step}; nothing more was sent)") from None
        except BaseException:  # Ctrl-C, a stop request, anything else: the board stops under control
            self.backend.on_wait = None
            try:
                self.backend.stop()
            except LinkError:
                pass
            raise
        finally:
            self.backend.on_wait = None
        return StreamResult(frames=sent, commands=commands, ramp_frames=parts[0].frames if ramp and parts else 0)

    def _tick(self) -> None:
        if self.tick is not None:
            self.tick()
        if self.progress is not None and self._total:
            done = self.frames_played()
            self.progress(done / self._total, self.current_step, (self._total - done) * FRAME_S)

    def frames_played(self) -> int:
        """Frames of the parts played so far (an estimate from what the board acknowledged)."""
        played = self.backend.played_frames() - self._base - (1 if self.declared else 0)
        return min(self._total, max(0, played))

    def playing_values(self) -> dict[int, float]:
        """The pulses of the frame the board is playing now (estimate): channel -> us."""
        return self.values_at(self.frames_played())

    def values_at(self, frame: int) -> dict[int, float]:
        """The pulses of frame ``frame`` of the parts (clamped to their span): channel -> us (channels a part
        leaves alone are left out)."""
        if not self.parts:
            return {}
        f = max(0, int(frame))
        for p in self.parts:
            if f <= p.frames:
                row = p.us[min(len(p.us) - 1, max(0, f // p.frames_per_sample))]
                break
            f -= p.frames
        else:
            p, row = self.parts[-1], self.parts[-1].us[-1]
        return {ch: float(v) for ch, v in zip(p.channels, row) if math.isfinite(v)}
