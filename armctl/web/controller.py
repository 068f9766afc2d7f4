"""The arm behind the web page: one worker thread owns the open backend and does every board I/O.

HTTP threads call ``submit`` (a move, home, gripper) and ``stop``; the worker
plans each command from the pose the arm is in (``Streamer.plan_from_here``,
the CLI's planner, limits and pulse checks), answers the command's future
(accepted, or the reason nothing moved), then streams it with the CLI's
``Streamer``. ``stop`` sets the running motion's stop event: the streamer sees
it within a few ms (it is polled inside the backend's waits) and does the same
controlled stop as Ctrl-C. A newer command also stops the running one first.

``state()`` is a snapshot for the page (degrees, millimetres, microseconds at
this edge); ``wait_change`` lets server-sent-event streams sleep until it changes.
"""

from __future__ import annotations

import math
import threading
import time
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass, field

import numpy as np

from ..arm import Arm
from ..calibration import Calibration
from ..errors import ArmctlError, LinkError, StopRequested
from ..kinematics import fk, joint_positions, manipulability
from ..motion import GripperMove, JointMove, solve_pose
from ..session import home_move, jog_move, pose_report
from ..stream import Streamer, prepare

PUBLISH_PERIOD_S = 0.04  # live pose while moving: 25 updates a second
IDLE_POLL_S = 0.1  # pose poll when idle (keeps the board's watchdog fed, shows servos settling)


@dataclass
class Command:
    """A motion for the worker: ``moves(q_rad)`` builds the moves from the pose the arm is in."""

    kind: str  # "move", "home", "gripper", "stop"
    label: str
    moves: Callable | None = None
    target_m: tuple[float, float] | None = None
    future: Future = field(default_factory=Future)


def line_or_joint(target_m, phi_rad: float | None, speed_m_s: float, mode: str, arm: Arm):
    """The moves of a click: a straight line (``jog``) or a joint move to the IK pose nearest the current one."""
    if mode == "line":
        return lambda q0: [jog_move(target_m, phi_rad, speed_m_s)]

    def joint(q0):
        q = solve_pose(arm, np.asarray(target_m, dtype=float), phi_rad, q0)
        return [JointMove(tuple(q), label=f"joint move to ({target_m[0]:g}, {target_m[1]:g}) m")]

    return joint


class Controller:
    """Owns ``backend`` (already open) for the arm ``arm`` with calibration ``cal`` (in the backend's channels)."""

    def __init__(
        self,
        arm: Arm,
        cal: Calibration,
        backend,
        *,
        port_key: str,
        watchdog: Callable[[], str | None] | None = None,
    ):
        self.arm, self.cal, self.backend, self.port_key = arm, cal, backend, port_key
        self.watchdog = watchdog  # returns a reason to stop (the page went silent), or None
        self._lock = threading.Lock()
        self._changed = threading.Condition(self._lock)
        self._queue: deque[Command] = deque()
        self._motion_stop: threading.Event | None = None
        self._stop_reason = "stop button"
        self._stop_t: float | None = None
        self._closing = False
        self._version = 0
        self._last_publish = 0.0
        self._state: dict = {"moving": False, "progress": 0.0, "step": "", "message": "connected", "error": False}
        self._thread = threading.Thread(target=self._run, name="armctl-web-arm", daemon=True)

    # --- called from HTTP threads ----------------------------------------------------------------------

    def start(self) -> None:
        self._publish_pose(self._read_pose(settle=False))
        self._thread.start()

    def close(self) -> None:
        """Stop any motion, end the worker (the caller closes the backend)."""
        self.stop("server shutting down")
        with self._lock:
            self._closing = True
            self._changed.notify_all()
        self._thread.join(timeout=5.0)

    def submit(self, cmd: Command) -> Future:
        """Queue ``cmd`` after stopping whatever moves now; older queued motions are dropped."""
        with self._lock:
            for old in self._queue:
                if old.kind != "stop":
                    old.future.set_exception(StopRequested("superseded by a newer command"))
            self._queue = deque(c for c in self._queue if c.kind == "stop")
            if self._motion_stop is not None:
                self._stop_reason, self._stop_t = "a new target", time.monotonic()
                self._motion_stop.set()
            self._queue.append(cmd)
            self._changed.notify_all()
        return cmd.future

    def stop(self, reason: str = "stop button") -> Future:
        """Controlled stop now (same as Ctrl-C in the CLI): drop queued motions, hold the pose."""
        cmd = Command("stop", reason)
        with self._lock:
            for old in self._queue:
                old.future.set_exception(StopRequested(f"stopped ({reason})"))
            self._queue.clear()
            self._stop_t = time.monotonic()
            if self._motion_stop is not None:
                self._stop_reason = reason
                self._motion_stop.set()
            self._queue.append(cmd)
            self._changed.notify_all()
        return cmd.future

    def call(self, fn: Callable) -> Future:
        """Run ``fn(backend)`` on the worker thread (between commands); its result in the future."""
        cmd = Command("call", "call", moves=fn)
        with self._lock:
            self._queue.append(cmd)
            self._changed.notify_all()
        return cmd.future

    def state(self) -> tuple[dict, int]:
        """(a copy of the page's state, its version)."""
        with self._lock:
            return dict(self._state), self._version

    def wait_change(self, version: int, timeout_s: float) -> tuple[dict, int]:
        """Wait up to ``timeout_s`` for a state newer than ``version``; returns (state, version)."""
        with self._lock:
            if self._version == version:
                self._changed.wait(timeout_s)
            return dict(self._state), self._version

    # --- state -----------------------------------------------------------------------------------------

    def _update(self, **changes) -> None:
        with self._lock:
            self._state.update(changes)
            self._version += 1
            self._changed.notify_all()

    def _read_pose(self, *, settle: bool) -> tuple[np.ndarray | None, float, str]:
        rep = pose_report(self.backend, self.arm, self.cal, settle=settle)
        if rep["q_deg"] is None:
            return None, math.nan, rep["measured"]
        g = rep.get("gripper_deg")
        return np.radians(rep["q_deg"]), math.radians(g) if g is not None else math.nan, rep["measured"]

    def _publish_pose(self, pose) -> None:
        q, g, measured = pose
        if q is None:
            self._update(q_deg=None, measured=measured)
            return
        us = [float(v) for v in self.cal.joints_to_us(q, check=False)]
        if self.cal.gripper is not None and math.isfinite(g):
            us.append(float(self.cal.gripper_to_us(g, check=False)))
        self._last_publish = time.monotonic()
        self._update(
            q_deg=[math.degrees(v) for v in q],
            gripper_deg=math.degrees(g) if math.isfinite(g) else None,
            joints_mm=(joint_positions(self.arm.links_m, q) * 1000).tolist(),
            tool_mm=(fk(self.arm.links_m, q) * 1000).tolist(),
            phi_deg=math.degrees(float(np.sum(q))),
            manipulability_m2=float(manipulability(self.arm.links_m, q)),
            pulses_us=us,
            measured=measured,
        )

    def _playing_pose(self, streamer: Streamer):
        """Pose the board is playing now, from its played-frame count (boards we cannot watch directly)."""
        f = self.backend.played_frames() - (1 if streamer.declared else 0)
        us = streamer.playing[-1].us[-1]
        for p in streamer.playing:
            n = (len(p.us) - 1) * p.frames_per_sample
            if f <= n:
                us = p.us[min(len(p.us) - 1, max(0, f // p.frames_per_sample))]
                break
            f -= n
        q = self.cal.us_to_joints(us[: self.arm.n])
        g = self.cal.gripper.angle_rad(us[self.arm.n]) if len(us) > self.arm.n else math.nan
        return q, float(g), "pulses the board is playing (estimate)"

    def _progress(self, streamer: Streamer) -> float:
        total = sum((len(p.us) - 1) * p.frames_per_sample for p in streamer.playing)
        done = self.backend.played_frames() - (1 if streamer.declared else 0)
        return float(min(1.0, max(0.0, done / max(total, 1))))

    def _on_tick(self, streamer: Streamer) -> None:
        """Called every few ms inside the streamer's waits: the page's watchdog, ``call``s, and the live pose."""
        with self._lock:
            calls = [c for c in self._queue if c.kind == "call"]
            self._queue = deque(c for c in self._queue if c.kind != "call")
        for c in calls:
            try:
                c.future.set_result(c.moves(self.backend))
            except Exception as exc:  # noqa: BLE001 - handed to the caller
                c.future.set_exception(exc)
        if self.watchdog is not None:
            reason = self.watchdog()
            if reason:
                with self._lock:
                    self._stop_reason, self._stop_t = reason, time.monotonic()
                raise StopRequested(reason)
        if time.monotonic() - self._last_publish < PUBLISH_PERIOD_S:
            return
        sim = getattr(self.backend, "sim", None)
        pose = self._read_pose(settle=False) if sim is not None else self._playing_pose(streamer)
        self._publish_pose(pose)
        self._update(progress=self._progress(streamer), step=streamer.current_step)

    # --- the worker --------------------------------------------------------------------------------------

    def _next(self) -> Command | None:
        with self._lock:
            if not self._queue and not self._closing:
                self._changed.wait(IDLE_POLL_S)
            if self._closing:
                return None
            if not self._queue:
                return Command("poll", "poll")
            cmd = self._queue.popleft()
            self._motion_stop = threading.Event() if cmd.kind not in ("stop", "call") else None
            return cmd

    def _run(self) -> None:
        while True:
            cmd = self._next()
            if cmd is None:
                return
            try:
                if cmd.kind == "poll":
                    self._publish_pose(self._read_pose(settle=False))
                elif cmd.kind == "call":
                    cmd.future.set_result(cmd.moves(self.backend))
                elif cmd.kind == "stop":
                    self._do_stop(cmd)
                else:
                    self._do_motion(cmd)
            except LinkError as exc:
                self._update(moving=False, message=f"link error: {exc}", error=True, link_error=str(exc))
                if not cmd.future.done():
                    cmd.future.set_exception(exc)
            except Exception as exc:  # keep the worker alive; report the bug on the page
                self._update(moving=False, message=f"internal error: {exc!r}", error=True)
                if not cmd.future.done():
                    cmd.future.set_exception(exc)
            finally:
                with self._lock:
                    self._motion_stop = None

    def _do_stop(self, cmd: Command) -> None:
        self.backend.stop()  # idempotent: the board drops its queue and holds the pulses it outputs
        cmd.future.set_result({"stopped": True})
        self._publish_pose(self._read_pose(settle=False))
        self._update(moving=False, message=f"stopped ({cmd.label}); holding the pose", error=False)

    def _do_motion(self, cmd: Command) -> None:
        st = self.backend.status()
        if self.backend.info is not None:
            self.backend.info.widths_us = st.widths_us  # start_pose() reads the pulses held now
        streamer = Streamer(self.backend, self.arm, self.cal, port_key=self.port_key)
        streamer.stop_event, streamer.on_tick = self._motion_stop, self._on_tick
        try:
            traj = streamer.plan_from_here(cmd.moves)
            pulses = prepare(traj, self.cal)  # every pulse checked before anything moves
        except ArmctlError as exc:
            cmd.future.set_exception(exc)
            self._update(message=f"{cmd.label}: not moved: {exc}", error=True)
            return
        cmd.future.set_result({"duration_s": float(traj.duration_s), "samples": len(traj)})
        self._update(
            moving=True,
            progress=0.0,
            step=cmd.label,
            target_mm=None if cmd.target_m is None else [v * 1000 for v in cmd.target_m],
            message=f"{cmd.label} ({traj.duration_s:.2f} s)",
            error=False,
        )
        try:
            streamer.play(traj, pulses)
        except StopRequested:
            with self._lock:
                reason, t_req = self._stop_reason, self._stop_t
            ms = None if t_req is None else (time.monotonic() - t_req) * 1000
            self._publish_pose(self._read_pose(settle=False))
            self._update(
                moving=False,
                message=f"stopped ({reason}); holding the pose",
                error=False,
                stop_latency_ms=ms,
            )
            return
        finally:
            self._update(moving=False)
        self._publish_pose(self._read_pose(settle=False))
        self._update(progress=1.0, step="", message=f"done: {cmd.label}", error=False)


def gripper_command(arm: Arm, close: bool) -> Command:
    """The gripper move of the page's open/close buttons, at the gripper's speed limit."""
    angle = arm.gripper.closed_rad if close else arm.gripper.open_rad
    label = "close the gripper" if close else "open the gripper"
    return Command("gripper", label, moves=lambda q0: [GripperMove(angle, label=label)])


def home_command(arm: Arm) -> Command:
    """The page's home button: the CLI's ``home`` move."""
    return Command("home", "home", moves=lambda q0: [home_move(arm)], target_m=tuple(fk(arm.links_m, arm.home_rad)))
