"""Playback for boards with no queue of their own (StandardFirmata, the PCA9685): the host plays every
20 ms frame at its time, writing the interpolated value of each servo that changed.

A subclass writes one frame's changes (``_write_frame``) and keeps ``current`` (address -> value now
output, None = none yet); the frame clock, interpolation, progress and the controlled stop are here.
"""

from __future__ import annotations

import time
from abc import abstractmethod

from armctl.bus.backend import FRAME_S, Backend


class HostTimed(Backend):
    """A Backend whose ``move`` blocks while the host times each frame (``caps.timed_moves`` is False)."""

    current: dict[int, float | None]

    def _init_timing(self, clock=time.monotonic, sleep=time.sleep) -> None:
        self._clock, self._sleep = clock, sleep
        self._next_frame_t: float | None = None
        self._played = 0

    @abstractmethod
    def _write_frame(self, values: dict[int, float]) -> None:
        """Output ``values`` (address -> servo value) now, and record them in ``current``."""

    def move(self, frames: int, values: dict[int, float | None]) -> None:
        """Writes each frame's interpolated values at its frame time (blocks while playing); a servo with no
        value yet (``current`` None) jumps to nowhere: it is skipped until something sets it."""
        starts = dict(self.current)
        now = self._clock()
        if self._next_frame_t is None or self._next_frame_t < now - FRAME_S:
            self._next_frame_t = now  # starting (or after a stall): restart the frame clock
        for i in range(1, frames + 1):
            self._waiting()
            delay = self._next_frame_t - self._clock()
            if delay > 0:
                self._sleep(delay)
            changed = {}
            for addr, end in values.items():
                if end is None or starts.get(addr) is None:
                    continue
                v = starts[addr] + (end - starts[addr]) * i / frames
                if v != self.current.get(addr):
                    changed[addr] = v
            if changed:
                self._write_frame(changed)
            self._next_frame_t += FRAME_S
            self._played += 1

    def set_goal(self, values: dict[int, float | None]) -> None:
        """Teleoperation, one step: the values that changed are written now, with no frame clock (the caller
        paces the steps and keeps each under the speed limits)."""
        changed = {a: v for a, v in values.items() if v is not None and v != self.current.get(a)}
        if changed:
            self._write_frame(changed)
        self._next_frame_t = None
        self._played += 1

    def drain(self, *, timeout_s: float | None = None) -> None:
        self._waiting()
        delay = (self._next_frame_t or 0) - self._clock()
        if delay > 0:
            self._sleep(delay)

    def stop(self) -> None:
        """Nothing is queued on the board: the servos hold the last value written."""
        self._next_frame_t = None

    def played_frames(self) -> int:
        return self._played
