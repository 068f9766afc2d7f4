"""The motion runner of an open Robot: one thread that owns the board and plays the motions in the order
given, a single-thread executor with two queues of futures.

- motions (``submit``) play one at a time, in order; a blended move waits ``BLEND_GATHER_S`` for the next one
  so that a chain queued with ``wait=False`` is planned and played as one motion;
- calls (``call(idle, playing)``, e.g. ``where()``) are served at once: ``idle()`` when nothing plays,
  else ``playing()`` between two frames of the motion playing (from what the playback keeps, no board I/O);
- board jobs (``board(fn)``, e.g. ``hold()``) wait until no motion plays, then run.

Nothing else talks to the board, so there is no lock to take: the thread runs only while there is work
(an idle runner lets go of the Robot, so its finalizer can run). ``stop()`` is lock-free (a counter), safe
from a signal handler. The runner writes the crash journal as it plays (``armctl.robot.journal``)."""

from __future__ import annotations

import math
import threading
import time
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout

import numpy as np

from armctl import motion
from armctl.errors import LinkError, MotionError, StopRequested
from armctl.model.kinematics import tool_point
from armctl.model.validate import outside_limits_now
from armctl.motion.trajectory import Trajectory
from armctl.robot.followplay import play_follow
from armctl.robot.handles import FollowMotion, Motion, MoveResult
from armctl.robot.lifecycle import BOARD_WAIT_S
from armctl.robot.runcontrol import RAMP_SPEED_FRACTION
from armctl.robot.stream import Player, Pulses, StreamResult, prepare

IDLE_EXIT_S = 0.1  # an idle runner thread ends after this long without work (a new job starts it again)
#: A blended motion (``move_to(..., blend=)``) waits this long for the next one to be queued before it starts,
#: so that a loop queuing lines with ``wait=False`` gets them planned as one chain through rounded corners.
BLEND_GATHER_S = 0.05


class _Call:
    """A job for the runner thread: ``idle()`` with the board free; ``playing()`` between two frames of a motion
    (None: a board job, run only when no motion plays). Its outcome goes to ``future``."""

    __slots__ = ("idle", "playing", "future")

    def __init__(self, idle: Callable, playing: Callable | None):
        self.idle, self.playing, self.future = idle, playing, Future()

    def run(self, fn: Callable) -> None:
        if not self.future.set_running_or_notify_cancel():
            return  # its caller gave up waiting
        try:
            self.future.set_result(fn())
        except Exception as exc:  # noqa: BLE001 - handed to the caller
            self.future.set_exception(exc)


class Runner:
    """Plays ``owner``'s motions (the Robot: ``arm``, ``calibration``, ``backend``, ``port``, ``control``,
    ``progress``, read when used) on its board, reading the pose with ``pose`` (``armctl.robot.pose.BoardPose``) and
    journaling with ``journal`` (``armctl.robot.journal.Journal``)."""

    def __init__(self, owner, pose, journal):
        self.owner, self.pose, self.journal = owner, pose, journal
        self._cv = threading.Condition()
        self._motions: deque[Motion] = deque()
        self._calls: deque[_Call] = deque()  # served at once, also between two frames of a motion
        self._jobs: deque[_Call] = deque()  # served when no motion plays
        self.active: Motion | None = None
        self.player: Player | None = None
        self._thread: threading.Thread | None = None
        self._worker: threading.Thread | None = None  # the last one started, kept after it ends
        self._ident: int | None = None  # the runner thread's, while it runs
        self.stop_gen = 0  # stop() bumps it; motions made before are cancelled (lock-free: signal handlers)
        self.stop_reasons: dict[int, str] = {}  # generation -> the reason of the stop that started it
        self.closed = False

    # --- what callers ask ---------------------------------------------------------------------------------

    @property
    def moving(self) -> bool:
        """True while a motion plays or waits to."""
        return self.active is not None or bool(self._motions)

    @property
    def follow(self) -> FollowMotion | None:
        """The follow playing (fed frame by frame, no ``player``), if one is."""
        m = self.active
        return m if isinstance(m, FollowMotion) else None

    @property
    def thread(self) -> threading.Thread | None:
        """The runner thread last started (it ends once idle for ``IDLE_EXIT_S``: ``is_alive()`` says if it runs)."""
        return self._worker

    @property
    def queued(self) -> int:
        """Motions waiting to play (not counting the one playing)."""
        return len(self._motions)

    def pending(self) -> list[Motion]:
        """The motions still to play (the one playing first), without the cancelled ones."""
        with self._cv:
            return [m for m in (self.active, *self._motions) if m is not None and not m.cancelled()]

    def submit(self, m: Motion) -> bool:
        """Queue motion ``m`` to play after the others; True if nothing played or waited before it."""
        with self._cv:
            self._check_open()
            idle = self.active is None and not self._motions
            self._motions.append(m)
            self._start()
            self._cv.notify_all()
        return idle

    def stop(self, reason: str) -> None:
        """Cancel the motion playing and every one queued (lock-free, from any thread or a signal handler)."""
        gen = self.stop_gen + 1
        self.stop_reasons[gen] = reason
        self.stop_gen = gen

    def on_runner(self) -> bool:
        """True when called from the runner thread (a motion's callback, ``progress``)."""
        return self._ident == threading.get_ident()

    def call(self, idle: Callable, playing: Callable, timeout_s: float = BOARD_WAIT_S):
        """``idle()`` with the board free, or ``playing()`` between two frames of the motion playing (no I/O)."""
        if self.on_runner():  # from inside our own motion (a callback), or one of its done callbacks
            return playing() if self.active is not None else idle()
        return self._wait(self._queue(self._calls, _Call(idle, playing)), timeout_s, "did not answer within")

    def board(self, fn: Callable, timeout_s: float = BOARD_WAIT_S):
        """``fn()`` with the board to itself, once no motion plays (LinkError if that takes over ``timeout_s``)."""
        if self.on_runner():
            if self.active is not None:
                raise LinkError(f"the board on {self.owner.port} is playing a motion: not from its own callback")
            return fn()
        return self._wait(self._queue(self._jobs, _Call(fn, None)), timeout_s, "stayed busy for")

    def wait_idle(self, timeout_s: float) -> None:
        """Wait (at most ``timeout_s``) until no motion plays or waits to."""
        deadline = time.monotonic() + timeout_s
        with self._cv:
            while self.moving and time.monotonic() < deadline:
                self._cv.wait(0.05)

    def close(self, timeout_s: float = BOARD_WAIT_S) -> bool:
        """No more work (the motions queued are dropped as stopped: call ``stop`` first); True once the runner
        thread has ended (or this is it), so the board is the caller's."""
        with self._cv:
            self.closed = True
            self._cv.notify_all()
            thread = self._thread
        if thread is None or thread is threading.current_thread():
            return self.active is None or thread is None
        thread.join(timeout=timeout_s)
        return not thread.is_alive()

    def _check_open(self) -> None:
        if self.closed:
            raise LinkError(f"the robot on {self.owner.port} is closed")

    def _queue(self, q: deque, c: _Call) -> _Call:
        with self._cv:
            self._check_open()
            q.append(c)
            self._start()
            self._cv.notify_all()
        return c

    def _wait(self, c: _Call, timeout_s: float, what: str):
        try:
            return c.future.result(timeout_s)
        except FutureTimeout:
            if not c.future.cancel():  # it is running: it ends soon
                return c.future.result()
            raise LinkError(f"the board on {self.owner.port} {what} {timeout_s:g} s") from None

    # --- the runner thread --------------------------------------------------------------------------------

    def _start(self) -> None:
        """Under the lock: a runner thread, if none runs."""
        if self._thread is None or not self._thread.is_alive():
            self._thread = threading.Thread(target=self._work, name=f"armctl-robot-{self.owner.arm.name}", daemon=True)
            self._worker = self._thread
            self._thread.start()

    def _has_work(self) -> bool:
        return bool(self._calls or self._jobs or self._motions)

    def _work(self) -> None:
        self._ident = threading.get_ident()
        while True:
            with self._cv:
                if not self._has_work() and not self.closed:
                    self._cv.wait(IDLE_EXIT_S)
                if not self._has_work():
                    self._thread = self._ident = None  # an idle runner lets go of the Robot (its finalizer can run)
                    return
            self._step()

    def _step(self) -> None:
        """Do the next job: a call, a board job, else the next motion."""
        with self._cv:
            job = self._calls.popleft() if self._calls else self._jobs.popleft() if self._jobs else None
            if job is None:
                if not self._motions:
                    return
                m = self._motions.popleft()
                self.active = m  # at once, under the lock: a motion is always queued or active until it ends
                chain = self._gather(m)
        if job is not None:
            job.run(job.idle)
            return
        if chain:
            self._merge(m, chain)
        self._run(m)

    def play_here(self, m: Motion) -> None:
        """On the runner thread (a done callback asking for a motion with ``wait=True``): play the queue up to
        and including ``m`` here, as the runner would (waiting for it would wait for ever)."""
        if self.active is not None:
            raise LinkError(f"the board on {self.owner.port} is playing a motion: not from its own callback")
        while not m.done:
            self._step()

    def _serve_calls(self) -> None:
        """Between two frames of a motion: the calls waiting, each its ``playing()``."""
        while self._calls:
            try:
                c = self._calls.popleft()
            except IndexError:
                return
            c.run(c.playing)

    # --- blended chains -----------------------------------------------------------------------------------

    @staticmethod
    def _one_move(m: Motion):
        """The one line or joint move ``m`` plays, or None (several moves, a gripper move, not yet solved)."""
        mv = m.moves
        if isinstance(mv, list) and len(mv) == 1 and isinstance(mv[0], motion.LineMove | motion.JointMove):
            return mv[0]
        return None

    @classmethod
    def _blends(cls, m: Motion) -> bool:
        """``m`` is one line or joint move asking to blend into the next (``move_to(..., blend=)``)."""
        mv = cls._one_move(m)
        return mv is not None and mv.blend_m > 0 and not mv.stop and not m.cancelled()

    def _gather(self, m: Motion) -> list[Motion]:
        """Under the lock: the queued moves that follow ``m`` in one blended chain (left in the queue, so
        that motions asked for meanwhile are still planned from the last one's end), waiting up to
        BLEND_GATHER_S after each for the next to be queued."""
        chain: list[Motion] = []
        last = m
        deadline = time.monotonic() + BLEND_GATHER_S
        while self._blends(last) and not self.closed:
            if len(self._motions) > len(chain):
                nxt = self._motions[len(chain)]
                if self._one_move(nxt) is None:
                    break
                if nxt.cancelled() or nxt.after is not last:
                    break
                chain.append(nxt)
                last = nxt
                deadline = time.monotonic() + BLEND_GATHER_S
                continue
            left = deadline - time.monotonic()
            if left <= 0:
                break
            self._cv.wait(left)
        return chain

    def _merge(self, head: Motion, chain: list[Motion]) -> None:
        """Plan ``head`` and the moves ``chain`` after it as one blended motion played by ``head``."""
        moves = [head.moves[0], *(m.moves[0] for m in chain)]
        q0, g0 = head.trajectory.q_rad[0], float(head.trajectory.gripper_rad[0])
        try:
            traj, pulses = self.plan(moves, q0, g0)
        except (MotionError, ValueError):  # pragma: no cover - each line planned alone already; keep them apart
            return
        with self._cv:
            # take the chain off the queue at the same moment the head takes over its end: the pose the next
            # motion is planned from (the last one's end) never changes
            queued = list(self._motions)[: len(chain)]
            if queued != chain or any(m.cancelled() for m in chain) or head.cancelled():
                return  # cancelled or stopped meanwhile: each plays (or is dropped) alone
            for _ in chain:
                self._motions.popleft()
            head.take_chain(chain, traj, pulses, moves)

    # --- planning -----------------------------------------------------------------------------------------

    def plan(self, moves, q0, g0: float) -> tuple[Trajectory, Pulses]:
        """Plan ``moves`` (a list, or a function of the start pose giving one) from (``q0``, ``g0``); every
        pulse checked before anything moves."""
        if callable(moves):
            moves = moves(q0)
        arm, cal = self.owner.arm, self.owner.calibration
        try:
            plan = motion.plan_moves(
                arm,
                moves,
                q_start=q0,
                gripper_start=g0 if math.isfinite(g0) else None,
                from_outside=self.pose.outside is not None,
            )
            traj = plan.trajectory
            traj.plan = plan  # trajectory.plot() draws it
            return traj, prepare(traj, cal)
        except MotionError as exc:
            raise self._from_outside(exc) from None

    def _from_outside(self, exc: MotionError) -> MotionError:
        """``exc``, a motion refused, said to be one from outside the range if the arm stands outside it."""
        outside = self.pose.outside
        if outside is None or str(exc).startswith("the arm is outside"):
            return exc
        return type(outside)(f"{outside}; and this motion is not such a move: {exc}", joint=outside.joint, q=outside.q)

    def expected_start(self) -> tuple[np.ndarray, float, Motion | None]:
        """The pose a new motion starts from, and the motion it follows: the end of the last motion still to
        play, else the pose the arm is in now (read from the board; no motion)."""
        pending = self.pending()
        if pending:
            return np.array(pending[-1].end_q_rad), pending[-1].end_gripper_rad, pending[-1]
        q, g, _, _ = self.board(self.pose.start_state)
        return q, g, None

    # --- playing ------------------------------------------------------------------------------------------

    def _run(self, m: Motion) -> None:
        """Play motion ``m``, already made ``active``; its outcome goes to ``m`` once it is no longer active (so
        whoever waits on it finds the Robot idle)."""
        m.started.set()
        outcome: MoveResult | BaseException | None = None
        be = self.owner.backend
        try:
            if m.cancelled():
                raise StopRequested(f"{m.label}: not started: {m.stop_reason}")
            t0 = time.monotonic()
            be.reset_tracking()
            result = play_follow(self, m) if isinstance(m, FollowMotion) else self._play(m)
            lag = be.tracking_deg()
            servos = self.owner.calibration.servos
            outcome = MoveResult(
                label=m.label,
                duration_s=m.trajectory.duration_s,
                frames=result.frames,
                commands=result.commands,
                ramp_frames=result.ramp_frames,
                wall_s=time.monotonic() - t0,
                planned_q_rad=np.array(m.end_q_rad),
                planned_tool_m=tool_point(self.owner.arm, m.end_q_rad),
                tracking_error_deg=None if lag is None else {s.name: lag[s.channel] for s in servos},
            )
        except BaseException as exc:  # noqa: BLE001 - handed to whoever waits on the motion
            if isinstance(exc, StopRequested) and not str(exc).startswith(m.label):
                exc = StopRequested(f"{m.label}: stopped ({m.stop_reason})")
            outcome = exc
        finally:
            player = self.player
            if m.program is not None and player is not None:
                status = "done" if isinstance(outcome, MoveResult) else "stopped"
                at = player.stopped_at if player.stopped_at is not None else player.frames_played()
                self.journal.record_step(m, player, at, status, force=True)
            self.player = None
            self.remember()
            with self._cv:
                self.active = None
                self._cv.notify_all()
        m.finish(outcome)

    def remember(self) -> None:
        """Store the pose the board holds as this port's last pose, clean (see ``Journal.remember``)."""
        try:
            held = self.pose.held()
        except LinkError:
            return
        self.journal.remember(held)

    def tick(self, m: Motion) -> None:
        """Between two frames: a stop, the calls waiting."""
        if m.cancelled():
            raise StopRequested(f"{m.label}: stopped ({m.stop_reason})")
        self._serve_calls()

    def _play(self, m: Motion) -> StreamResult:
        owner = self.owner
        owner.backend.sync_limits(owner.calibration)
        q0, g0, declare, held = self.pose.start_state()
        if self._start_moved(m):
            # what it was planned after did not end where planned: plan it again from here (a move to the
            # same target, the gripper where the arm is), checked whole as before; never a ramp to a target
            # that was cancelled or stopped short of
            m.plan_again(*self.plan(m.moves, q0, g0))
        parts = [m.pulses]
        try:
            ramp = (
                None if self._already_there(m.pulses, held, declare) else self._ramp(q0, g0, m.trajectory, m.zoned_arm)
            )
            if ramp is not None:
                parts.insert(0, prepare(ramp, owner.calibration))
        except MotionError as exc:
            raise self._from_outside(exc) from None
        start = [h if h is not None else declare.get(s.channel) for h, s in zip(held, owner.calibration.servos)]

        def tick() -> None:
            self.tick(m)
            self.journal.playing(self.player, start, m)

        self.player = Player(
            owner.backend,
            tick=tick,
            progress=owner.progress,
            control=owner.control,
            max_speed=self._max_speed(),
            max_accel=self._max_accel(),
        )
        self.journal.start()
        return self.player.play(parts, declare=declare, ramp=ramp is not None)

    def _max_speed(self) -> dict[int, float]:
        """Per servo address: its joint's speed limit in servo units per second (for the speed override)."""
        arm, cal = self.owner.arm, self.owner.calibration
        out = {s.channel: math.degrees(float(v)) * s.per_deg for s, v in zip(cal.joints, arm.max_speed_rad_s)}
        if cal.gripper is not None and arm.gripper is not None:
            out[cal.gripper.channel] = math.degrees(arm.gripper.max_speed_rad_s) * cal.gripper.per_deg
        return out

    def _max_accel(self) -> dict[int, float]:
        """Per joint servo address: its joint's acceleration limit in servo units per second squared."""
        arm, cal = self.owner.arm, self.owner.calibration
        return {s.channel: math.degrees(float(a)) * s.per_deg for s, a in zip(cal.joints, arm.max_accel_rad_s2)}

    @staticmethod
    def _start_moved(m: Motion) -> bool:
        """True if ``m`` was planned from the end of a motion that did not end there."""
        prev = m.after
        if prev is None or m.moves is None:
            return False
        return not prev.ended_as_planned(BOARD_WAIT_S)

    def _already_there(self, pulses: Pulses, held, declare: dict) -> bool:
        """True if the board holds (or is about to be set to) exactly the first pulses of ``pulses``."""
        servos = self.owner.calibration.servos
        now = {s.channel: (h if h is not None else declare.get(s.channel)) for h, s in zip(held, servos)}
        return all(
            not math.isfinite(v) or (now.get(ch) is not None and abs(now[ch] - v) < 1e-6)
            for ch, v in zip(pulses.channels, pulses.us[0])
        )

    def _ramp(self, q0, g0: float, traj: Trajectory, zoned=None) -> Trajectory | None:
        """A slow joint move from (q0, g0) to the trajectory's first sample, or None if already there."""
        arm = self.owner.arm
        q1, g1 = traj.q_rad[0], float(traj.gripper_rad[0])
        moves = []
        if np.max(np.abs(q1 - q0)) > 1e-4:
            moves.append(motion.JointMove(tuple(q1), speed_fraction=RAMP_SPEED_FRACTION, label="ramp to start"))
        if arm.gripper is not None and math.isfinite(g1) and abs(g1 - g0) > 1e-4:
            moves.append(motion.GripperMove(g1, speed_fraction=RAMP_SPEED_FRACTION, label="ramp gripper"))
        if not moves:
            return None
        if not arm.within_limits(q0) and self.pose.outside is None:
            degs = ", ".join(f"{math.degrees(v):.1f}" for v in q0)
            raise outside_limits_now(f" ({degs} deg)", "move it by hand or check the calibration", q=q0)
        # measured outside its range: a joint ramp into it only brings it back (each limit is linear in the
        # joint angles, so along a straight joint move its excess only shrinks; check_escape checks the steps)
        try:
            plan = motion.plan_moves(
                zoned or arm,
                moves,
                q_start=q0,
                gripper_start=g0 if math.isfinite(g0) else None,
                period_s=traj.period_s,
                from_outside=self.pose.outside is not None,
            )
        except MotionError as exc:  # the same error (a ZoneError stays one), said to be the ramp's
            raise motion.located(exc, "cannot ramp from the current pose to the start") from None
        t = plan.trajectory
        t.steps = ["ramp to start"]
        t.step = np.zeros(len(t.t_s), dtype=int)
        return t
