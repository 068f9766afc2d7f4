"""The arm behind the web page: a thin layer over the ``Robot`` that the HTTP threads share.

``submit`` plans a command at once on the Robot (the CLI's planner, limits and pulse checks) and answers
its future with the plan (or the reason nothing moved); the Robot plays it in the background. A newer
command stops the running one first. ``stop`` is the Robot's controlled stop (same as Ctrl-C in the CLI).
A watcher thread publishes the pose (25 times a second while moving, 10 when idle, which also keeps the
board's watchdog fed) and stops the arm when the controlling page goes silent (``watchdog``).

``state()`` is a snapshot for the page (degrees, millimetres, microseconds at this edge) with its version.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass

from armctl.errors import ArmctlError, LinkError, MotionError, StopRequested
from armctl.model.arm import Arm
from armctl.model.kinematics import arm_manipulability, arm_points, tool_point
from armctl.robot.robot import Motion, Pose, Robot
from armctl.web.feed import ChangeFeed
from armctl.web.reach_map import click_pose

PUBLISH_PERIOD_S = 0.04  # live pose while moving: 25 updates a second
IDLE_POLL_S = 0.1  # pose poll when idle (keeps the board's watchdog fed, shows servos settling)
WATCH_PERIOD_S = 0.01  # how often the page's watchdog is checked while moving


class ArmBusy(ArmctlError):
    """The arm is moving: what was asked needs it still (recording its pose)."""


@dataclass
class Command:
    """A motion for the Robot: ``start(robot)`` plans it and hands it over (returns the Motion)."""

    kind: str  # "move", "home", "gripper"
    label: str
    start: Callable[[Robot], Motion]
    target_m: tuple[float, ...] | None = None
    note: str = ""  # what the page should know of how it was done (set by ``start``)


def move_command(
    target_m, phi_rad: float | None, speed_m_s: float, mode: str, label: str, *, roll: float | None = None
) -> Command:
    """A click: a straight line (``mode="line"``, as ``armctl jog``) or a joint move (``"joint"``) to the pose
    ``reach_map.click_pose`` takes, the check the page's shading is made of. A line the planner refuses from
    where the arm is (a limit or the reach's hole on the way, a pulse the calibration refuses) becomes a joint
    move to that pose, said in the state's message: a click inside the shading is never refused. ``roll`` (rad):
    the wrist roll to turn to (an arm with one; None keeps it)."""
    point = tuple(float(v) for v in target_m)  # (x, y), or (x, y, z) on a base arm

    def start(r: Robot) -> Motion:
        q = click_pose(r.arm, r.calibration, point, phi_rad, r.where().q_rad, roll=roll)
        if mode == "line":
            try:
                return r.move_to(
                    *point, phi=phi_rad, speed=speed_m_s, path="line", label=label, wait=False, reach_q=q, roll=roll
                )
            except MotionError as exc:
                why = str(exc).removeprefix(f"{label}: ")
                cmd.note = f"no straight line from here ({why}): a joint move instead"
        return r.move_joints(q, wait=False)

    cmd = Command("move", label, start, target_m=point)
    return cmd


def gripper_command(arm: Arm, close: bool) -> Command:
    """The gripper move of the page's open/close buttons, at the gripper's speed limit."""
    label = "close the gripper" if close else "open the gripper"
    return Command("gripper", label, lambda r: r.gripper("close" if close else "open", wait=False))


def home_command(arm: Arm) -> Command:
    """The page's home button: the CLI's ``home`` move."""
    return Command("home", "home", lambda r: r.home(wait=False), target_m=tuple(tool_point(arm, arm.home_rad)))


def program_command(prog, from_step=None) -> Command:
    """The page's Run program button: the program (parsed and planned already), as ``armctl run`` plays it,
    with the same feed hold, resume and override (``Controller.pause``, ``resume``, ``override``)."""
    label = f"program {prog.path}" + (f" from step {from_step}" if from_step is not None else "")
    return Command("program", label, lambda r: r.run(prog, from_step=from_step, wait=False))


class Controller(ChangeFeed):
    """Shares the open ``robot`` between the page's HTTP threads (the caller closes the robot)."""

    def __init__(self, robot: Robot, *, watchdog: Callable[[], str | None] | None = None, recorder=None):
        self.robot, self.arm, self.cal = robot, robot.arm, robot.calibration
        self.watchdog = watchdog  # returns a reason to stop (the page went silent), or None
        self.recorder = recorder  # an armctl.program.recording.Recorder (armctl web --record FILE), or None
        self._submit_lock = threading.Lock()  # one command planned at a time
        self._motion: Motion | None = None
        self._stop_t: float | None = None
        self._closing = threading.Event()
        self._progress = (0.0, "")
        self._init_feed({"moving": False, "progress": 0.0, "step": "", "message": "connected", "error": False})
        self._recorded: list[str] = []
        if recorder is not None:
            self._state.update(recorded=[], record_next=recorder.next_name(), can_undo=False)
        self._thread = threading.Thread(target=self._watch, name="armctl-web-watch", daemon=True)
        robot.progress = self._on_progress

    # --- called from HTTP threads ----------------------------------------------------------------------

    def start(self) -> None:
        self._publish()
        self._thread.start()

    def close(self) -> None:
        """Stop any motion, end the watcher (the caller closes the robot)."""
        self.stop("server shutting down")
        self._closing.set()
        self._thread.join(timeout=5.0)

    def submit(self, cmd: Command) -> Future:
        """Stop whatever moves now, then plan ``cmd`` and hand it to the Robot. The future has the plan
        ({duration_s, samples}) or the error that kept anything from moving."""
        fut: Future = Future()
        with self._submit_lock:
            if self.robot.moving:
                self._stop_t = time.monotonic()
                self.robot.stop("a new target")
            try:
                m = cmd.start(self.robot)
            except ArmctlError as exc:
                fut.set_exception(exc)
                if not isinstance(exc, LinkError):
                    self._update(message=f"{cmd.label}: not moved: {exc}", error=True)
                else:
                    self._link_error(exc)
                return fut
            with self._lock:
                self._motion = m
            self._progress = (0.0, cmd.label)
            self._update(
                moving=True,
                progress=0.0,
                step=cmd.label,
                target_mm=None if cmd.target_m is None else [v * 1000 for v in cmd.target_m],
                message=f"{cmd.label} ({m.trajectory.duration_s:.2f} s)" + (f": {cmd.note}" if cmd.note else ""),
                error=False,
            )
            m.add_done_callback(self._motion_over)
        fut.set_result({"duration_s": round(float(m.trajectory.duration_s), 6), "samples": len(m.trajectory)})
        return fut

    def stop(self, reason: str = "stop button") -> Future:
        """Controlled stop now (same as Ctrl-C in the CLI): the arm holds its pose. The future is answered
        once the motion has stopped."""
        fut: Future = Future()
        with self._lock:
            m = self._motion
        self._stop_t = time.monotonic()
        self.robot.stop(reason)
        if m is not None:
            try:
                m.wait(timeout=5.0)
            except (ArmctlError, TimeoutError):
                pass
        else:
            self._update(message=f"stopped ({reason}); holding the pose", error=False, moving=False)
        fut.set_result({"stopped": True})
        return fut

    def pause(self) -> dict:
        """Feed hold of what plays (the Robot's ``pause``): it decelerates along its path and holds."""
        self.robot.pause()
        self._update(control=self.robot.control.to_dict(), message="holding: Resume goes on", error=False)
        return self.robot.control.to_dict()

    def resume(self) -> dict:
        """Go on from where the hold stopped."""
        self.robot.resume()
        self._update(control=self.robot.control.to_dict(), message="resumed", error=False)
        return self.robot.control.to_dict()

    def override(self, fraction: float) -> dict:
        """Set the speed override (0.1..2.0 of the planned speeds; never past a joint speed limit)."""
        self.robot.speed_override = fraction
        self._update(control=self.robot.control.to_dict())
        return self.robot.control.to_dict()

    def record(self, name: str | None) -> dict:
        """Record the pose the arm holds into the program file (``armctl.program.recording``): the commanded pose,
        with a joint move to it. ``name`` None: the next free name. Refused (ArmctlError, nothing written)
        while the arm moves, for a bad or taken name, or when not recording."""
        from armctl.errors import BadInputError
        from armctl.program.recording import gripper_state

        if self.recorder is None:
            raise BadInputError("not recording: start the server with 'armctl web --record FILE.yaml'")
        with self._submit_lock:  # no move starts while the pose is read and written
            if self.robot.moving:
                raise ArmBusy("the arm is moving: record once it stops")
            pose = self.robot.commanded_pose()
            rec = self.recorder.record(
                name or self.recorder.next_name(), pose.q_rad, gripper=gripper_state(self.arm, pose.gripper_rad)
            )
        self._recorded.append(rec.name)
        where = ", ".join(f"{v:.1f}" for v in pose.tool_mm)
        note = "" if rec.kept_layout else " (written anew: its comments could not be kept)"
        self._update_record(f"recorded '{rec.name}' at ({where}) mm in {rec.path.name}{note}")
        return {
            "name": rec.name,
            "tool_mm": pose.tool_mm,
            "steps": list(rec.steps),
            "poses": rec.poses,
            "file": str(rec.path),
            "kept_layout": rec.kept_layout,
        }

    def undo_record(self) -> dict:
        """Take back the last pose recorded by this server (the file's text before it)."""
        from armctl.errors import BadInputError

        if self.recorder is None:
            raise BadInputError("not recording: start the server with 'armctl web --record FILE.yaml'")
        name = self.recorder.undo()
        if name in self._recorded:
            self._recorded.remove(name)
        self._update_record(f"took back '{name}' from {self.recorder.path.name}")
        return {"name": name, "file": str(self.recorder.path)}

    def _update_record(self, message: str) -> None:
        self._update(
            recorded=list(self._recorded),
            record_next=self.recorder.next_name(),
            can_undo=self.recorder.can_undo,
            message=message,
            error=False,
        )

    def call(self, fn: Callable) -> Future:
        """``fn(backend)`` with the board to itself (between frames while moving); its result in the future."""
        fut: Future = Future()
        try:
            fut.set_result(self.robot.call(fn))
        except Exception as exc:  # noqa: BLE001 - handed to the caller
            fut.set_exception(exc)
        return fut

    def note_refusal(self, message: str, target_mm=None) -> None:
        """Keep the last request the server refused (422: nothing moved) in the state: ``refusal`` = {message,
        target_mm, at_s (Unix time)}, so a page that missed the reply (or another one watching) sees it."""
        refusal = {"message": message, "target_mm": target_mm, "at_s": round(time.time(), 3)}
        self._update(refusal=refusal, message=message, error=True)

    # --- state -----------------------------------------------------------------------------------------

    def _link_error(self, exc: LinkError) -> None:
        self._update(moving=False, message=f"link error: {exc}", error=True, link_error=str(exc))

    def _on_progress(self, fraction: float, step: str, left_s: float) -> None:
        self._progress = (fraction, step)  # published with the pose

    def _publish(self) -> None:
        try:
            pose: Pose = self.robot.where()
        except LinkError as exc:
            self._link_error(exc)
            return
        q, g = pose.q_rad, pose.gripper_rad
        values = [v for v in pose.values if v is not None]
        extra = {}
        if self.robot.moving:
            extra = {"progress": float(min(1.0, max(0.0, self._progress[0]))), "step": self._progress[1]}
        self._update(
            q_deg=pose.q_deg,
            gripper_deg=None if g is None else math.degrees(g),
            joints_mm=(arm_points(self.arm, q) * 1000).tolist(),
            tool_mm=pose.tool_mm,
            phi_deg=math.degrees(pose.phi_rad),
            roll_deg=None if pose.roll_rad is None else math.degrees(pose.roll_rad),
            manipulability_m2=float(arm_manipulability(self.arm, q)),  # (m^3 on a base arm)
            pulses_us=values,
            measured=pose.detail,
            source=pose.source,
            control=self.robot.control.to_dict(),
            **extra,
        )

    def _motion_over(self, m: Motion) -> None:
        err = m.error
        with self._lock:
            if self._motion is m:
                self._motion = None
        if isinstance(err, StopRequested):
            t_req = self._stop_t
            ms = None if t_req is None else (time.monotonic() - t_req) * 1000
            self._update(
                moving=self.robot.moving,
                message=f"stopped ({m.stop_reason}); holding the pose",
                error=False,
                stop_latency_ms=ms,
            )
        elif isinstance(err, LinkError):
            self._link_error(err)
        elif err is not None:
            self._update(moving=False, message=f"{m.label}: {err}", error=True)
        else:
            self._update(moving=self.robot.moving, progress=1.0, step="", message=f"done: {m.label}", error=False)

    # --- the watcher -------------------------------------------------------------------------------------

    def _watch(self) -> None:
        last = 0.0
        was_moving = False
        while not self._closing.wait(WATCH_PERIOD_S):
            moving = self.robot.moving
            if moving and self.watchdog is not None:
                reason = self.watchdog()
                if reason:
                    self._stop_t = time.monotonic()
                    self.robot.stop(reason)
            now = time.monotonic()
            period = PUBLISH_PERIOD_S if moving else IDLE_POLL_S
            if now - last >= period or moving != was_moving:
                self._publish()
                last = now
            was_moving = moving
