"""Below the student API: the board one servo at a time, its stored limits and status, the commanded pose, a
new calibration; for armctl's own tools (calibration, the pendant, the web page) and tests. A ``Robot`` holds
its ``BoardAccess`` as ``robot.board`` and offers each of its methods under the same name."""

from __future__ import annotations

import math
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np

from armctl.bus.backend import Backend, board_limits_us
from armctl.calibration.servo import Calibration
from armctl.errors import BadInputError
from armctl.robot.lifecycle import BOARD_WAIT_S, check_open
from armctl.robot.pose import BoardPose, Pose


class BoardAccess:
    """Below the student API: the board one servo at a time, its stored limits and status, the commanded
    pose, a new calibration; for armctl's own tools (calibration, the pendant, the web page) and tests.

    ``robot`` (its ``arm``, ``calibration``, ``backend``, read when used; ``use_calibration`` sets its
    ``calibration`` and ``calibration_path``), ``runner`` (``armctl.robot.runner.Runner``: every board job goes
    through it) and ``pose`` (``armctl.robot.pose.BoardPose``) are the Robot's own."""

    def __init__(self, robot, runner, pose: BoardPose):
        self.robot, self.runner, self.pose = robot, runner, pose

    def _check_open(self) -> None:
        check_open(self.robot)

    def call(self, fn: Callable[[Backend], object], *, timeout_s: float = BOARD_WAIT_S):
        """Run ``fn(backend)`` with the board to itself: at once if no motion plays, else between two
        frames of the motion playing (so ``fn`` must not talk to the board then: read what the backend
        keeps, or a simulator). Returns what ``fn`` returns. For diagnostics and tests."""
        return self.runner.call(lambda: fn(self.robot.backend), lambda: fn(self.robot.backend), timeout_s)

    def commanded_pose(self) -> Pose:
        """The pose the arm is commanded to be in once the motions still to play are over: where the last of
        them ends, else the pulses the board holds (servos without pulses: the pose they will be set to,
        source ``"assumed"``). Never a measurement: where the next motion starts from, and what a recorded
        pose should store (played again, it commands the very same pulses)."""
        self._check_open()
        runner = self.runner

        def last_pending():
            pending = runner.pending()
            return pending[-1] if pending else None

        m = last_pending()
        if m is None:

            def held():  # a stopped motion lets go of the board once the board holds
                m = last_pending()
                return m if m is not None else self.pose.held_or_assumed()

            m = runner.board(held)
            if isinstance(m, Pose):
                return m
        g = m.end_gripper_rad
        return self.pose.pose(
            m.end_q_rad, g if math.isfinite(g) else None, "commanded", "where the motions still to play end"
        )

    def sample(self) -> tuple[np.ndarray, float, np.ndarray | None, float, int]:
        """What the arm is commanded and measured to do now, for recording: (commanded joint angles (rad),
        commanded gripper (rad, NaN: none), measured joint angles (rad; None where the servos cannot report),
        measured gripper (NaN: none), the index of the program sample playing (-1: none, or the ramp to its
        start)). While a motion plays it is read between two frames, without a word to the board."""
        self._check_open()
        runner = self.runner
        return runner.call(self.pose.sample_idle, lambda: self.pose.sample_playing(runner.player, runner.follow))

    def servo_values(self) -> list[float]:
        """What each servo (joints, then gripper) holds, in servo units (us); servos without pulses are first
        set to the stored pose (else home), clamped into their calibrated range. For calibration."""
        self._check_open()

        def values():
            _, _, declare, held = self.pose.start_state(check=False, clamp=True)
            if declare:
                self.robot.backend.move(1, declare)
            return [h if h is not None else declare[s.channel] for h, s in zip(held, self.robot.calibration.servos)]

        return self.runner.board(values)

    def move_servo(self, index: int, value: float, frames: int) -> None:
        """Queue a move of servo ``index`` (joints 0..n-1, then the gripper) to ``value`` (us: 500..2500, as far as
        the board can send, ``Backend.value_range``; StandardFirmata 544..2500) over ``frames`` 20 ms frames,
        unchecked against the calibration (it is being made): the caller keeps it under the joint's speed limit
        (``armctl.calibration.procedures.Nudger`` does)."""
        self._check_open()
        servo = self.robot.calibration.servos[index]
        lo, hi = self.robot.backend.value_range(servo)  # the servo's whole travel, as far as this board can send
        if not (lo <= value <= hi) or frames < 1:
            why = self.robot.backend.beyond_note(servo, value)
            raise BadInputError(
                f"servo value {value!r} outside {lo:g}..{hi:g} {servo.unit}, or {frames} frames"
                + (f" ({why})" if why else "")
            )
        channel = self.robot.calibration.servos[index].channel
        self.runner.board(lambda: self.robot.backend.move(int(frames), {channel: float(value)}))

    def board_status(self):
        """The board's status (``armctl.bus.backend.BoardStatus``: values it outputs, queue, counters), asked
        once no motion plays."""
        self._check_open()
        return self.runner.board(self.robot.backend.status)

    def hold(self) -> None:
        """Drop whatever the board still has queued and hold the pulses it outputs now."""
        self._check_open()
        self.runner.board(self.robot.backend.stop)

    def settle(self) -> None:
        """Wait until the board has played everything queued."""
        self._check_open()
        self.runner.board(self.robot.backend.drain)

    def board_limits(self) -> list[tuple[float, float]] | None:
        """Each servo's pulse limits (us) stored on the board, joints then gripper; None if the board keeps none."""
        self._check_open()
        info = self.robot.backend.info
        if not self.robot.backend.caps.stores_limits or info is None or not info.limits_us:
            return None
        return [tuple(float(v) for v in info.limits_us[s.channel]) for s in self.robot.calibration.servos]

    def set_board_limits(self, index: int, lo_us: float, hi_us: float) -> None:
        """Store servo ``index``'s pulse limits on the board (BoardLimitsError if it refuses them)."""
        self._check_open()
        channel = self.robot.calibration.servos[index].channel
        self.runner.board(lambda: self.robot.backend.set_limits(channel, lo_us, hi_us))

    def push_limits(self) -> list[tuple[str, int, float, float]]:
        """Write every servo's calibrated min/max (rounded inward to 0.5 us) to the board; returns
        (servo name, address, lo, hi) for each; [] if the board stores no limits."""
        if self.board_limits() is None:
            return []
        out = []
        for i, s in enumerate(self.robot.calibration.servos):
            lo, hi = board_limits_us(s)
            self.set_board_limits(i, lo, hi)
            out.append((s.name, s.channel, lo, hi))
        return out

    def use_calibration(self, cal: Calibration, path: Path | None = None) -> None:
        """Drive the servos by ``cal`` from now on (a new calibration was just made): addressed like the old."""
        self._check_open()
        robot, backend = self.robot, self.robot.backend
        cal.check_arm(robot.arm)
        robot.calibration, notes = backend.fit_calibration(backend.address(cal))
        for note in notes:
            print(f"armctl: note: {note}", file=sys.stderr)
        backend.use_calibration(robot.calibration)
        if backend.cal is not None:  # e.g. clamped to the servos' own limits
            robot.calibration = backend.cal
        if path is not None:
            robot.calibration_path = Path(path)

    def hold_stored_pose(self) -> dict[int, float]:
        """Servos without pulses (a board that reset when its port opened: an Uno) are set to the pose stored
        for this port when the arm was last left: they hold where the arm was, nothing moves. Returns what was
        set ({address: value}); {} when every servo has its pulses, or no pose is stored (home is not set then:
        that would move the arm)."""
        self._check_open()
        if self.pose.store.checked(self.robot.calibration)[0] is None:
            return {}  # none stored, or one that cannot be trusted: setting it could move the arm

        def hold():
            _, _, declare, _ = self.pose.start_state(check=False, clamp=True)
            if declare:
                self.robot.backend.move(1, declare)
                self.robot.backend.drain()
            return declare

        return self.runner.board(hold)
