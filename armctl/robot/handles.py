"""What the Robot hands back for a motion: ``Motion`` (``wait()``, ``done``, ``cancel()``), ``FollowMotion``,
``MoveResult`` (what a finished motion did) and ``ProgramRun`` (a program planned to run)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from concurrent.futures import wait as futures_wait
from dataclasses import dataclass

import numpy as np

from armctl import motion
from armctl.core import stopsignals
from armctl.errors import StopRequested
from armctl.motion.trajectory import Trajectory
from armctl.robot.interrupts import interrupted
from armctl.robot.lifecycle import BOARD_WAIT_S
from armctl.robot.stream import Pulses


@dataclass(frozen=True)
class MoveResult:
    """What a finished motion did: its label, planned duration (s, without the ramp to its start), the
    frames and move commands sent, the frames of that ramp, the wall time it took (s), the pose it was
    planned to end in (``planned_q_rad``, ``planned_tool_m``), and on boards that measure while moving (bus
    servos) how far each servo lagged the path."""

    label: str
    duration_s: float
    frames: int
    commands: int
    ramp_frames: int
    wall_s: float
    planned_q_rad: np.ndarray
    planned_tool_m: np.ndarray
    #: servo name -> the farthest (deg) it lagged the commanded path, for boards that measure while moving
    tracking_error_deg: dict[str, float] | None = None


@dataclass
class ProgramRun:
    """A program planned to run on this arm (``Robot.prepare_run``): its ``plan`` (whole), the ``trajectory``
    that will play (all of it, or from step ``first_step``, 0-based, after a lead-in of ``offset`` steps),
    and ``describe``: where it starts and what it does with the gripper first, in words."""

    program: str
    digest: str
    plan: motion.Plan
    trajectory: Trajectory
    first_step: int = 0
    offset: int = 0
    describe: str = ""

    @property
    def steps(self) -> int:
        """How many steps the program has, loops unrolled."""
        return len(self.plan.trajectory.steps)


class Motion:
    """A motion handed to the Robot: ``wait()`` for its result, ``done``, ``cancel()``.

    ``trajectory`` is what was planned (from the pose the arm was expected to be in; if the arm is
    elsewhere when the motion starts, a slow ramp takes it to the start first). A motion planned to follow
    another that then did not end where planned (cancelled, stopped, failed) is planned again from where
    the arm is when it starts (``replanned`` is True): it never goes to the dropped motion's target."""

    def __init__(
        self,
        robot,
        label: str,
        trajectory: Trajectory,
        pulses: Pulses,
        gen: int,
        *,
        moves=None,
        after: Motion | None = None,
    ):
        self.robot, self.label, self.trajectory, self._gen = robot, label, trajectory, gen
        self.pulses = pulses  #: the servo values it plays, frame by frame (``armctl.robot.stream.Pulses``)
        self._future: Future = Future()
        self._cancelled = False
        self.started = threading.Event()
        # Planned from where ``after`` ends: if that one does not end there (cancelled, stopped, failed, or
        # itself re-planned), this one is planned again from where the arm is, never towards a dropped target.
        self.moves, self.after = moves, after  #: what it was planned from (None: a trajectory given whole)
        self.replanned = False
        self.program: ProgramRun | None = None  # a program run: its progress is recorded as it plays
        self.zoned_arm = None  # a program's own keep-out zones: its ramp to the start is checked against them too
        self.step_recorded = -1  #: the program step last recorded in the run record (``Journal.record_step``)
        # blended chains (move_to(..., blend=)): the first motion (the head) plays the chain; the others follow its
        # fate (``take_chain``, ``finish``)
        self.head: Motion | None = None
        self.chain: list[Motion] = []

    @property
    def done(self) -> bool:
        """True once the motion has finished, failed or been stopped."""
        return self._future.done()

    def cancel(self) -> None:
        """Stop this motion under control if it is playing (the arm holds where it is); drop it if queued.
        A motion blended into a chain with the ones before it stops the whole chain."""
        self._cancelled = True
        if self.head is not None:
            self.head.cancel()

    def pause(self) -> None:
        """Feed hold: the arm decelerates along the planned path (under the joint limits) and holds there; the
        rest of the motion stays, and ``resume()`` goes on from where it held. ``wait()`` blocks meanwhile.
        (The hold is the Robot's: the motions queued after this one wait behind it; see ``Robot.pause``.)"""
        if not self.done:
            self.robot.pause()

    def resume(self) -> None:
        """Go on from where ``pause()`` held, along the same path."""
        self.robot.resume()

    @property
    def paused(self) -> bool:
        """True while a hold was asked for and not resumed."""
        return self.robot.control.paused and not self.done

    def cancelled(self) -> bool:
        """True once ``cancel()`` or ``Robot.stop()`` was called for it."""
        return self._cancelled or self._gen < self.robot.runner.stop_gen

    @property
    def stop_reason(self) -> str:
        """Why it was stopped: ``cancel()``, or the reason given to the first ``Robot.stop`` after it was made."""
        runner = self.robot.runner
        if self._gen < runner.stop_gen:
            return runner.stop_reasons.get(self._gen + 1, "stop requested")
        return "cancelled" if self._cancelled else ""

    def wait(self, timeout: float | None = None) -> MoveResult:
        """Block until the motion is over; its MoveResult, or the error that ended it (StopRequested if it
        was stopped). Ctrl-C while waiting stops the arm under control, then raises KeyboardInterrupt.
        TimeoutError if ``timeout`` (s) passes first (the motion goes on)."""
        try:
            return stopsignals.result(self._future, timeout)  # in slices: Windows' untimed waits ignore Ctrl-C
        except FutureTimeout:
            raise TimeoutError(f"{self.label}: still moving after {timeout:g} s") from None
        except KeyboardInterrupt as exc:
            self.robot.stop("interrupted")
            try:
                self._future.exception(BOARD_WAIT_S)
            except (FutureTimeout, KeyboardInterrupt):
                pass
            if type(exc) is not KeyboardInterrupt:  # Terminated (SIGTERM, SIGHUP): the CLI's own exit codes
                raise
            why = interrupted(self.robot)
        raise KeyboardInterrupt(why)  # one line, not the internals it came through

    def add_done_callback(self, fn: Callable[[Motion], None]) -> None:
        """Call ``fn(motion)`` when it is over (from the thread that ran it)."""
        self._future.add_done_callback(lambda _f: fn(self))

    @property
    def result(self) -> MoveResult | None:
        """The MoveResult once finished well, else None."""
        f = self._future
        return f.result() if f.done() and f.exception() is None else None

    @property
    def error(self) -> BaseException | None:
        """What ended the motion if it did not finish (a StopRequested if stopped), else None."""
        f = self._future
        return f.exception() if f.done() else None

    @property
    def end_q_rad(self) -> np.ndarray:
        """Joint angles (rad) the motion is planned to end in."""
        return self.trajectory.q_rad[-1]

    @property
    def end_gripper_rad(self) -> float:
        """Gripper angle (rad, NaN without a gripper) the motion is planned to end in."""
        return float(self.trajectory.gripper_rad[-1])

    # --- what the runner (``armctl.robot.runner``) does with it ---

    def plan_again(self, trajectory: Trajectory, pulses: Pulses) -> None:
        """Play ``trajectory`` (``pulses``) instead: planned again from where the arm is (``replanned``)."""
        self.trajectory, self.pulses, self.replanned = trajectory, pulses, True

    def take_chain(self, chain: list[Motion], trajectory: Trajectory, pulses: Pulses, moves: list) -> None:
        """Play the motions ``chain`` too, blended after this one's move: ``moves`` planned as one ``trajectory``;
        they end as this one does (``finish``)."""
        self.trajectory, self.pulses, self.moves, self.chain = trajectory, pulses, moves, chain
        for m in chain:
            m.head = self

    def ended_as_planned(self, timeout_s: float) -> bool:
        """True once it finished where it was planned to end (not re-planned, stopped or failed), waiting up to
        ``timeout_s`` for its outcome (a motion played by another thread hands it over just after the board)."""
        if not self._future.done():
            futures_wait([self._future], timeout=timeout_s)
        return not self.replanned and self._future.done() and self._future.exception() is None

    def finish(self, outcome: MoveResult | BaseException) -> None:
        """Hand over its outcome, a MoveResult or what ended it, and the same to the motions blended into it."""
        for m in self.chain:  # lines blended into this motion end with it
            m.finish(outcome if isinstance(outcome, MoveResult | Exception) else StopRequested(str(outcome)))
        self.started.set()
        if isinstance(outcome, MoveResult):
            self._future.set_result(outcome)
        else:
            self._future.set_exception(outcome)

    def __repr__(self) -> str:
        state = "done" if self.done else ("cancelled" if self.cancelled() else "pending")
        return f"<Motion {self.label!r} {self.trajectory.duration_s:.2f} s {state}>"


class FollowMotion(Motion):
    """A motion fed frame by frame from a leader arm (``Robot.follow``): it has no end of its own; it runs until
    ``cancel()``, ``Robot.stop()``, Ctrl-C, a lost leader or a lost link. ``teleop`` is its
    ``armctl.teleop.follow.Teleop`` (live ``status``); ``end_q_rad`` is the pose last commanded."""

    def __init__(self, robot, label: str, trajectory: Trajectory, pulses: Pulses, gen: int, teleop):
        super().__init__(robot, label, trajectory, pulses, gen)
        self.teleop = teleop
        self._q_now = np.array(trajectory.q_rad[-1])
        self._g_now = float(trajectory.gripper_rad[-1])
        self._stop_why = ""

    def stop(self, reason: str = "stop requested") -> None:
        """End the follow under control (the follower holds where it is); ``wait()`` then raises StopRequested
        with ``reason``. The same as ``cancel()``, with a reason; other motions of the Robot are not touched."""
        self._stop_why = str(reason)
        self.cancel()

    @property
    def stop_reason(self) -> str:
        """Why it was stopped: ``stop(reason)``, ``cancel()``, or the first ``Robot.stop`` after it was made."""
        if self._stop_why and self._cancelled:
            return self._stop_why
        return super().stop_reason

    def commanded(self, q_rad: np.ndarray, gripper_rad: float) -> None:
        """The follower was sent joint angles ``q_rad`` and gripper angle ``gripper_rad`` (rad) (``end_q_rad``)."""
        self._q_now, self._g_now = q_rad, gripper_rad

    @property
    def end_q_rad(self) -> np.ndarray:
        """The joint angles (rad) last commanded (where the follower holds once the follow stops)."""
        return self._q_now

    @property
    def end_gripper_rad(self) -> float:
        """The gripper angle (rad, NaN without a gripper) last commanded."""
        return self._g_now
