"""Below the student API: the board one servo at a time, its stored limits and status, the commanded pose, a
new calibration; for armctl's own tools (calibration, the pendant, the web page) and tests. ``Robot`` inherits
them, so ``help(armctl.Robot)`` lists the student API first and these after it."""

from __future__ import annotations

import math
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np

from armctl.bus.backend import Backend, board_limits_us
from armctl.calibration.servo import Calibration
from armctl.errors import BadInputError
from armctl.robot.lifecycle import BOARD_WAIT_S
from armctl.robot.pose import Pose


class _BoardAccess:
    """Below the student API: the board one servo at a time, its stored limits and status, the commanded
    pose, a new calibration; for armctl's own tools (calibration, the pendant, the web page) and tests."""

    def call(self, fn: Callable[[Backend], object], *, timeout_s: float = BOARD_WAIT_S):
        """Run ``fn(backend)`` with the board to itself: at once if no motion plays, else between two
        frames of the motion playing (so ``fn`` must not talk to the board then: read what the backend
        keeps, or a simulator). Returns what ``fn`` returns. For diagnostics and tests."""
        return self._runner.call(lambda: fn(self.backend), lambda: fn(self.backend), timeout_s)

    def commanded_pose(self) -> Pose:
        """The pose the arm is commanded to be in once the motions still to play are over: where the last of
        them ends, else the pulses the board holds (servos without pulses: the pose they will be set to,
        source ``"assumed"``). Never a measurement: where the next motion starts from, and what a recorded
        pose should store (played again, it commands the very same pulses)."""
        self._check_open()
        runner = self._runner

        def last_pending():
            pending = runner.pending()
            return pending[-1] if pending else None

        m = last_pending()
        if m is None:

            def held():  # a stopped motion lets go of the board once the board holds
                m = last_pending()
                return m if m is not None else self._pose.held_or_assumed()

            m = runner.board(held)
            if isinstance(m, Pose):
                return m
        g = m.end_gripper_rad
        return self._pose.pose(
            m.end_q_rad, g if math.isfinite(g) else None, "commanded", "where the motions still to play end"
        )

    def sample(self) -> tuple[np.ndarray, float, np.ndarray | None, float, int]:
        """What the arm is commanded and measured to do now, for recording: (commanded joint angles (rad),
        commanded gripper (rad, NaN: none), measured joint angles (rad; None where the servos cannot report),
        measured gripper (NaN: none), the index of the program sample playing (-1: none, or the ramp to its
        start)). While a motion plays it is read between two frames, without a word to the board."""
        self._check_open()
        runner = self._runner
        return runner.call(self._pose.sample_idle, lambda: self._pose.sample_playing(runner.player, runner.follow))

    def servo_values(self) -> list[float]:
        """What each servo (joints, then gripper) holds, in servo units (us); servos without pulses are first
        set to the stored pose (else home), clamped into their calibrated range. For calibration."""
        self._check_open()

        def values():
            _, _, declare, held = self._pose.start_state(check=False, clamp=True)
            if declare:
                self.backend.move(1, declare)
            return [h if h is not None else declare[s.channel] for h, s in zip(held, self.calibration.servos)]

        return self._runner.board(values)

    def move_servo(self, index: int, value: float, frames: int) -> None:
        """Queue a move of servo ``index`` (joints 0..n-1, then the gripper) to ``value`` (us: 500..2500, as far as
        the board can send, ``Backend.value_range``; StandardFirmata 544..2500) over ``frames`` 20 ms frames,
        unchecked against the calibration (it is being made): the caller keeps it under the joint's speed limit
        (``armctl.calibration.procedures.Nudger`` does)."""
        self._check_open()
        servo = self.calibration.servos[index]
        lo, hi = self.backend.value_range(servo)  # the servo's whole travel, as far as this board can send
        if not (lo <= value <= hi) or frames < 1:
            why = self.backend.beyond_note(servo, value)
            raise BadInputError(
                f"servo value {value!r} outside {lo:g}..{hi:g} {servo.unit}, or {frames} frames"
                + (f" ({why})" if why else "")
            )
        channel = self.calibration.servos[index].channel
        self._runner.board(lambda: self.backend.move(int(frames), {channel: float(value)}))

    def board_status(self):
        """The board's status (``armctl.bus.backend.BoardStatus``: values it outputs, queue, counters), asked
        once no motion plays."""
        self._check_open()
        return self._runner.board(self.backend.status)

    def hold(self) -> None:
        """Drop whatever the board still has queued and hold the pulses it outputs now."""
        self._check_open()
        self._runner.board(self.backend.stop)

    def settle(self) -> None:
        """Wait until the board has played everything queued."""
        self._check_open()
        self._runner.board(self.backend.drain)

    def board_limits(self) -> list[tuple[float, float]] | None:
        """Each servo's pulse limits (us) stored on the board, joints then gripper; None if the board keeps none."""
        self._check_open()
        info = self.backend.info
        if not self.backend.caps.stores_limits or info is None or not info.limits_us:
            return None
        return [tuple(float(v) for v in info.limits_us[s.channel]) for s in self.calibration.servos]

    def set_board_limits(self, index: int, lo_us: float, hi_us: float) -> None:
        """Store servo ``index``'s pulse limits on the board (BoardLimitsError if it refuses them)."""
        self._check_open()
        channel = self.calibration.servos[index].channel
        self._runner.board(lambda: self.backend.set_limits(channel, lo_us, hi_us))

    def push_limits(self) -> list[tuple[str, int, float, float]]:
        """Write every servo's calibrated min/max (rounded inward to 0.5 us) to the board; returns
        (servo name, address, lo, hi) for each; [] if the board stores no limits."""
        if self.board_limits() is None:
            return []
        out = []
        for i, s in enumerate(self.calibration.servos):
            lo, hi = board_limits_us(s)
            self.set_board_limits(i, lo, hi)
            out.append((s.name, s.channel, lo, hi))
        return out

    def use_calibration(self, cal: Calibration, path: Path | None = None) -> None:
        """Drive the servos by ``cal`` from now on (a new calibration was just made): addressed like the old."""
        self._check_open()
        cal.check_arm(self.arm)
        self.calibration, notes = self.backend.fit_calibration(self.backend.address(cal))
        for note in notes:
            print(f"armctl: note: {note}", file=sys.stderr)
        self.backend.use_calibration(self.calibration)
        if self.backend.cal is not None:  # e.g. clamped to the servos' own limits
            self.calibration = self.backend.cal
        if path is not None:
            self.calibration_path = Path(path)
