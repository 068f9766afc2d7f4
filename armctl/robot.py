"""The open arm: ``connect()`` gives a ``Robot`` that owns the arm model, its calibration in the backend's
own addressing, the open backend, the port (and its lock) and the pose the arm holds.

    import armctl
    with armctl.connect("seed-3link") as robot:       # no port: the simulated arm
        robot.move_to(0.5, 0.2, phi=math.radians(-30))
        robot.gripper("close")
        print(robot.where())

Every motion is planned and checked whole (reach, joint limits, joint speed limits, every servo pulse
against the calibration) before anything moves, from the pose the arm is in, **read fresh from the
board before every move**: the pulses our firmware and the simulator output, the last ones written to
Firmata. Servos without pulses (a board that reset when its port opened) are first set to the pose
stored for the port when the arm was last left (``armctl.state``), else the home pose; then a slow
joint ramp (a quarter of each speed limit) takes the arm to where the motion starts.

Motions run one at a time in the order given. ``wait=False`` returns a ``Motion`` at once (the plan is
checked before it returns); ``stop()`` is safe from any thread or a signal handler and stops under
control within a frame plus the board's queue. All units SI: metres, radians, seconds.
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import gc
import math
import numbers
import os
import signal
import sys
import threading
import time
import urllib.parse
import weakref
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from concurrent.futures import wait as futures_wait
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from . import motion, stopsignals
from .arm import Arm, load_arm
from .bus.backend import FRAME_S, Backend, BoardLimitsError, backend_class, check_simulator_port, scheme_backend
from .bus.portlock import PortLock
from .calibration import Calibration
from .errors import BadInputError, JointLimitError, LinkError, MotionError, StopRequested, UnreachableError
from .kinematics import tool_pitch, tool_point
from .lerobot import open_calibration
from .paths import state_dir
from .restart import step_start as restart_step_start
from .runcontrol import HOLD_RAMP_S, RunControl, check_override
from .state import LiveStore, PoseStore, RunRecord, RunStore, program_digest
from .stream import Player, Pulses, StreamResult, prepare
from .trajectory import Trajectory
from .zones import first_violation

DEFAULT_ARM = "seed-3link"
RAMP_SPEED_FRACTION = 0.25  # of each joint's limit: from wherever the arm is to where a motion starts
HOME_SPEED_FRACTION = 0.25
FACTORY_LIMITS_US = (500.0, 2500.0)  # a board's stored limits before anyone calibrated it
BOARD_WAIT_S = 10.0  # longest wait for the board to be free (another thread's motion stopping)
TURN_RAD = 2.0 * math.pi
MAX_SPEED_M_S = 2.0  # a tool speed above this is a unit mistake (mm/s given where m/s go), not a wish
FAR_REACHES = 100.0  # a target this many reaches away is millimetres given as metres, not a miss
JOURNAL_PERIOD_S = 0.02  # while moving, the pose the board would stop in is journaled once a frame
FOLLOW_RAMP_DONE_DEG = 1.0  # a follow's start ramp ends once every joint is this close to the leader's pose
FOLLOW_QUEUE_FRAMES = 2  # a follow keeps at most this many frames queued on boards that play timed moves
FOLLOW_CATCH_UP_FRAMES = 5  # a follow this many frames late starts its schedule again from now
#: A blended motion (``move_to(..., blend=)``) waits this long for the next one to be queued before it starts,
#: so that a loop queuing lines with ``wait=False`` gets them planned as one chain through rounded corners.
BLEND_GATHER_S = 0.05
MAX_BLEND_M = 0.5


# --- what the Robot reports ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Pose:
    """Where the arm is: joint angles (rad, base first on a base arm), tool point (m: x, y; x, y, z on a
    base arm), tool angle (rad; on a base arm the pitch from the horizontal), gripper (rad).

    ``source`` says how it is known: ``"measured"`` (servo positions measured by the hardware or the
    simulator), ``"commanded"`` (the pulses the board outputs, or for boards that cannot report them the
    last ones sent) or ``"assumed"`` (servos without pulses yet: the pose stored for this port when the
    arm was last left, else home; the first motion starts by setting it). ``detail`` says it in words;
    ``values`` are the servo values (us) of the pose per servo, joints then gripper (None: the servo has
    none): what the board outputs, or for a measured pose the values that mean it by the calibration.
    """

    q_rad: np.ndarray
    tool_m: np.ndarray
    phi_rad: float
    gripper_rad: float | None
    source: str
    detail: str
    values: tuple[float | None, ...] = ()

    @property
    def measured(self) -> bool:
        """True if measured by the hardware or the simulator (not taken from commanded pulses)."""
        return self.source == "measured"

    @property
    def q_deg(self) -> list[float]:
        """Joint angles in degrees."""
        return [math.degrees(v) for v in self.q_rad]

    @property
    def tool_mm(self) -> list[float]:
        """Tool point in millimetres."""
        return [float(v) * 1000 for v in self.tool_m]

    def to_dict(self) -> dict:
        """JSON-ready: ``tool_m``, ``q_deg``, ``phi_deg``, ``gripper_deg``, ``source``, ``detail``, ``values``."""
        return {
            "tool_m": [float(v) for v in self.tool_m],
            "q_deg": self.q_deg,
            "phi_deg": math.degrees(self.phi_rad),
            "gripper_deg": None if self.gripper_rad is None else math.degrees(self.gripper_rad),
            "source": self.source,
            "detail": self.detail,
            "values": list(self.values),
        }

    def __repr__(self) -> str:
        where = ", ".join(f"{v:.1f}" for v in self.tool_mm)
        joints = ", ".join(f"{v:.1f}" for v in self.q_deg)
        g = "" if self.gripper_rad is None else f", gripper={math.degrees(self.gripper_rad):.1f} deg"
        return (
            f"Pose(tool=({where}) mm, phi={math.degrees(self.phi_rad):.1f} deg, joints=[{joints}] deg{g}, "
            f"{self.source})"
        )

    def _repr_html_(self) -> str:
        """A small table in Jupyter: the tool point (mm), tool angle and joints (deg), gripper, source."""
        from html import escape

        axes = "xyz"[: len(self.tool_mm)]
        rows = [(f"tool {a}", f"{v:.1f} mm") for a, v in zip(axes, self.tool_mm)]
        rows.append(("tool angle (phi)", f"{math.degrees(self.phi_rad):.1f} deg"))
        rows += [(f"joint {i + 1}", f"{v:.2f} deg") for i, v in enumerate(self.q_deg)]
        if self.gripper_rad is not None:
            rows.append(("gripper", f"{math.degrees(self.gripper_rad):.1f} deg"))
        rows.append(("source", f"{self.source}: {self.detail}"))
        body = "".join(
            f"<tr><th style='text-align:left'>{escape(k)}</th><td style='text-align:right'>{escape(v)}</td></tr>"
            for k, v in rows
        )
        return f"<table class='armctl-pose'><caption>Pose</caption>{body}</table>"

    def __str__(self) -> str:
        where = ", ".join(f"{v:.1f}" for v in self.tool_mm)
        g = "" if self.gripper_rad is None else f", gripper {math.degrees(self.gripper_rad):.1f} deg"
        joints = " ".join(f"{v:.2f}" for v in self.q_deg)
        return f"tool at ({where}) mm, joints {joints} deg{g} ({self.source}: {self.detail})"


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
        robot: Robot,
        label: str,
        trajectory: Trajectory,
        pulses: Pulses,
        gen: int,
        *,
        moves=None,
        after: Motion | None = None,
    ):
        self.robot, self.label, self.trajectory, self._pulses, self._gen = robot, label, trajectory, pulses, gen
        self._future: Future = Future()
        self._cancelled = False
        self.started = threading.Event()
        # Planned from where ``after`` ends: if that one does not end there (cancelled, stopped, failed, or
        # itself re-planned), this one is planned again from where the arm is, never towards a dropped target.
        self._moves, self._after = moves, after
        self.replanned = False
        self.program: ProgramRun | None = None  # a program run: its progress is recorded as it plays
        self._step_recorded = -1
        # blended chains (move_to(..., blend=)): the first motion plays the chain; the others follow its fate
        self._head: Motion | None = None
        self._chain: list[Motion] = []

    @property
    def done(self) -> bool:
        """True once the motion has finished, failed or been stopped."""
        return self._future.done()

    def cancel(self) -> None:
        """Stop this motion under control if it is playing (the arm holds where it is); drop it if queued.
        A motion blended into a chain with the ones before it stops the whole chain."""
        self._cancelled = True
        if self._head is not None:
            self._head._cancelled = True

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
        return self._cancelled or self._gen < self.robot._stop_gen

    @property
    def stop_reason(self) -> str:
        """Why it was stopped: ``cancel()``, or the reason given to the first ``Robot.stop`` after it was made."""
        if self._gen < self.robot._stop_gen:
            return self.robot._stop_reasons.get(self._gen + 1, "stop requested")
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
            why = _interrupted(self.robot)
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

    def __repr__(self) -> str:
        state = "done" if self.done else ("cancelled" if self.cancelled() else "pending")
        return f"<Motion {self.label!r} {self.trajectory.duration_s:.2f} s {state}>"


class FollowMotion(Motion):
    """A motion fed frame by frame from a leader arm (``Robot.follow``): it has no end of its own; it runs until
    ``cancel()``, ``Robot.stop()``, Ctrl-C, a lost leader or a lost link. ``teleop`` is its
    ``armctl.follow.Teleop`` (live ``status``); ``end_q_rad`` is the pose last commanded."""

    def __init__(self, robot: Robot, label: str, trajectory: Trajectory, pulses: Pulses, gen: int, teleop):
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

    @property
    def end_q_rad(self) -> np.ndarray:
        """The joint angles (rad) last commanded (where the follower holds once the follow stops)."""
        return self._q_now

    @property
    def end_gripper_rad(self) -> float:
        """The gripper angle (rad, NaN without a gripper) last commanded."""
        return self._g_now


# --- the board's stored limits ---------------------------------------------------------------------------------


def board_limits_us(servo) -> tuple[float, float]:
    """The limits (us, 0.5 us steps) a board should store for a servo: its min/max rounded inward."""
    r = servo.resolution
    return (math.ceil(servo.lo / r - 1e-6) * r, math.floor(servo.hi / r + 1e-6) * r)


def _snap_to_limits(q: float, lo: float, hi: float, servo) -> float:
    """A joint angle read back from a pulse, moved onto its limit when it lies outside by less than one
    pulse step: a pose commanded right at a limit comes back from the board's 0.5 us resolution up to
    half a step beyond it, and the next move would refuse to start from there."""
    step = math.radians(servo.resolution / servo.per_deg)
    if lo - step <= q < lo:
        return float(lo)
    if hi < q <= hi + step:
        return float(hi)
    return q


# --- the default port --------------------------------------------------------------------------------------


def default_port(arm: Arm, cal_path: Path, backend: type[Backend]) -> str:
    """The simulated board of ``backend`` for ``arm``, keeping its servos in the state folder between runs;
    BadInputError if that backend has no simulator (give --port)."""
    url = backend.simulator_url(arm, cal_path, state_dir() / f"{backend.simulator}-{arm.name}.json")
    if url is None:
        raise BadInputError(f"the {backend.name} backend has no simulated board: give --port (a device path)")
    return url


def sim_port_for(port: str, arm: Arm, cal_path: Path) -> str:
    """An armsim:// URL without an arm gets the robot's arm and calibration, so the simulation matches."""
    parts = urllib.parse.urlsplit(port)
    if parts.scheme != "armsim" or parts.netloc or parts.path.strip("/"):
        return port
    query = urllib.parse.parse_qs(parts.query)
    extra = {}
    if "arm" not in query:
        extra["arm"] = arm.ref
    if "cal" not in query:
        extra["cal"] = str(cal_path)
    if not extra:
        return port
    sep = "&" if parts.query else ""
    return f"armsim://?{parts.query}{sep}{urllib.parse.urlencode(extra, safe=',/')}"


# --- connect -----------------------------------------------------------------------------------------------


def connect(
    arm: str | Path | Arm = DEFAULT_ARM,
    port: str | None = None,
    backend: str | None = None,
    calibration: str | Path | Calibration | None = None,
    *,
    wire_log: str | Path | None = None,
    watchdog_s: float = 1.0,
    calibrating: bool = False,
    progress: Callable[[float, str, float], None] | None = None,
) -> Robot:
    """Open the arm and return its ``Robot`` (use it in a ``with`` block, or call ``close()``).

    - ``arm``: a preset name (``seed-2link``, ``seed-3link``), an arm YAML file, a URDF (``FILE.urdf``, or
      ``FILE.urdf#TOOL_LINK``; see ``armctl.urdf``), or an ``Arm``.
    - ``port``: a device path (``/dev/ttyACM0``) or any pyserial URL (``socket://host:7000``,
      ``spy://...``, ``armsim://?rate=20``, ``feetechsim://``); None: the backend's simulated board, which
      keeps its pose between runs.
    - ``backend``: the board's protocol: ``"armctl"`` (our firmware or the simulator), ``"firmata"`` (stock
      StandardFirmata, 57600 baud, device paths only) or ``"feetech"`` (Feetech STS/SCS bus servos, 1 Mbaud);
      None: ``"feetech"`` if the calibration is in steps (bus servos), else ``"armctl"``.
    - ``calibration``: a calibration file or ``Calibration``; default: ``./calibration/<arm>.yaml``, the
      user's calibration folder, else the example shipped with the preset. LeRobot's calibration is used as
      it is: ``"lerobot:ID"`` (found where LeRobot keeps it) or its ``.json`` file (``armctl.lerobot``).
    - ``wire_log``: a file that receives every byte sent and received, with times.
    - ``watchdog_s``: our firmware holds its servos and drops its queue after this long without a word
      from us (0 turns it off); ``calibrating``: Firmata servos are attached with 500..2500 us.
    - ``progress(fraction, step, seconds_left)``: called a few times a second while a motion plays.

    The port is opened exclusively: a second ``connect`` to it (from this or any other process) raises
    LinkError naming the holder. Errors: ConfigError (files), BadInputError, LinkError.
    """
    arm_obj, cal, cal_path, cls, url = _resolve(arm, port, backend, calibration)
    lock = PortLock(url)
    _acquire(lock)
    store = PoseStore(url, arm_obj)
    try:
        try:
            store.open()
        except OSError as exc:
            raise BadInputError(
                f"cannot write the state folder {store.path.parent}: {exc.strerror or exc} (set ARMCTL_STATE_DIR to "
                "a writable folder)"
            ) from None
        _let_a_dead_run_finish(store)
        addressed = cls.address(cal)
        be = cls.create(url, addressed, wire_log=wire_log, watchdog_s=watchdog_s, calibrating=calibrating)
        be.open()
        if isinstance(getattr(be, "cal", None), Calibration):  # e.g. clamped to bus servos' own limits
            addressed = be.cal
        for note in getattr(be, "notes", ()):
            print(f"armctl: note: {note}", file=sys.stderr)
    except BaseException:
        store.close()
        lock.release()
        raise
    return Robot(arm_obj, addressed, be, url, calibration_path=cal_path, lock=lock, progress=progress, store=store)


def _resolve(arm, port, backend, calibration):
    """(Arm, Calibration, its path, backend class, port URL) as ``connect`` opens them: the one place that
    says which port an arm, a port and a calibration mean (``Watch`` finds the same pose files by it)."""
    arm_obj = arm if isinstance(arm, Arm) else load_arm(arm)
    if isinstance(calibration, Calibration):
        cal, cal_path = calibration, Path(calibration.source)
    else:  # an armctl YAML, or LeRobot's (lerobot:ID, FILE.json) as the armctl calibration it means
        cal, cal_path, notes = open_calibration(calibration, arm_obj)
        for note in notes:
            print(f"armctl: note: {note}", file=sys.stderr)
    cal.check_arm(arm_obj)
    if backend is None:  # by the port (an I2C bus), else by the kind of servo the calibration describes
        backend = scheme_backend(port) or ("feetech" if cal.unit == "steps" else "armctl")
    cls = backend if isinstance(backend, type) and issubclass(backend, Backend) else backend_class(backend)
    if cal.unit != cls.servo_unit:
        kind = {"us": "hobby (PWM) servos", "steps": "serial bus servos"}
        raise BadInputError(
            f"the {cls.name} backend drives {kind.get(cls.servo_unit, cls.servo_unit)}, but calibration "
            f"{cal_path} is for {kind.get(cal.unit, cal.unit)}: pass --backend for that board, or its calibration"
        )
    if port is not None and not str(port).strip():
        raise BadInputError("--port: empty; give a device path or URL, or leave it out for the simulated arm")
    if port is not None:
        check_simulator_port(str(port), cls)  # a simulator of other servos would only time out
    if port is None and isinstance(arm, Arm) and Path(arm.source).suffix not in (".yaml", ".yml", ".urdf"):
        raise BadInputError("the simulated arm needs an arm preset or file; this Arm was built in code: pass port=")
    url = sim_port_for(str(port), arm_obj, cal_path) if port is not None else default_port(arm_obj, cal_path, cls)
    return arm_obj, cal, cal_path, cls, url


def _acquire(lock: PortLock) -> None:
    """Take the port's lock. Held in this very process: a Robot nobody holds any more may only wait for the
    garbage collector (then its finalizer lets go); one still held is named, with what to do."""
    try:
        lock.acquire()
        return
    except LinkError as exc:
        first = str(exc)
    deadline = time.monotonic() + 1.0  # a dropped Robot's worker thread lets go of it within 0.1 s
    while True:
        gc.collect()
        try:
            lock.acquire()
            return
        except LinkError:
            pass
        why, named = _held_here(lock.key)
        late = time.monotonic() > deadline
        if why is None:  # no Robot here holds it: another process, or ours being finalized in its worker thread
            if late or f"pid {os.getpid()} " not in first:
                raise LinkError(first)
        elif named or late:
            raise LinkError(why)
        time.sleep(0.05)


def _held_here(key) -> tuple[str | None, bool]:
    """What to say when a Robot of this process holds the port ``key`` (None: another process does), and
    whether a variable holds it. Only a string goes out: an exception that kept the Robot alive would keep the
    port it is about."""
    for robot in list(_OPEN):
        if robot._closed or robot._lock is None or robot._lock.key != key:
            continue
        names = _names_of(robot)
        var = names[0] if names else "robot"
        held = f" (the variable {', '.join(repr(n) for n in names)})" if names else ""
        return (
            f"port {robot.port!r} is in use by pid {os.getpid()}, this process: it is already open by the Robot of arm "
            f"{robot.arm.name!r}{held}, made by an earlier connect() (in a notebook: a cell run before): use that one, "
            "or close it first: "
            f"{var}.close() (or `del {var}`), then connect again; `with armctl.connect(...) as robot:` closes it "
            "for you"
        ), bool(names)
    return None, False


def _names_of(obj) -> list[str]:
    """The names that hold ``obj`` in the frames that called armctl (a notebook's or a script's globals)."""
    names: list[str] = []
    frame = sys._getframe(1)
    while frame is not None:
        if not frame.f_globals.get("__name__", "").startswith("armctl"):
            for scope in (frame.f_locals, frame.f_globals):
                for k, v in list(scope.items()):
                    if v is obj and not k.startswith("_") and k not in names:
                        names.append(k)
        frame = frame.f_back
    return names


def _let_a_dead_run_finish(store: PoseStore) -> None:
    """After an unclean end, the board may still be playing what the dead run sent (until its queue or its
    watchdog runs out). Opening a real Uno's port resets it: not before the journaled pose is reached."""
    stored = store.load()
    if stored is not None and not stored.clean:
        wait = stored.time_s + stored.hold_in_s - time.time()
        if wait > 0:
            time.sleep(min(wait + 2 * FRAME_S, 66.0))


# --- watching an arm another process drives ------------------------------------------------------------------

WATCH_STALE_S = 0.5  # a live pose older than this, not marked clean: its writer stopped writing (killed)


class Watch:
    """An arm that another armctl drives (a ``run``, a script, ``armctl web``), watched without opening its port:
    ``where()`` reads the pose that process publishes in the state folder once a frame while it moves (the pose
    the board plays now), else the pose stored when the arm was last left. Takes no port lock and no file lock,
    so it never keeps the driver out; ``driver()`` names the process that holds the port (None: nobody).
    Same arguments as ``connect`` (they say which port, arm and calibration to watch)."""

    def __init__(self, arm=DEFAULT_ARM, port: str | None = None, backend=None, calibration=None):
        self.arm, self.calibration, self.calibration_path, cls, self.port = _resolve(arm, port, backend, calibration)
        self.backend_name = cls.name
        self._live = LiveStore(self.port, self.arm)
        self._stored = PoseStore(self.port, self.arm)
        lock = PortLock(self.port)
        self._holder_path = None if lock.path is None else lock.holder_path

    def driver(self) -> str | None:
        """Who holds the port now, as its lock's holder file says (``pid N (command)``), or None if nobody does
        (the holder removes it as it lets go)."""
        if self._holder_path is None:
            return None
        try:
            return self._holder_path.read_text(encoding="utf-8", errors="replace").strip() or "another armctl"
        except OSError:
            return None

    def where(self) -> Pose:
        """The pose the driving process reports (source ``"watched"``), else the stored one, else home."""
        live, stored = self._live.load(), self._stored.load()
        age = math.inf if live is None else time.time() - live.time_s
        if live is not None and (stored is None or live.time_s >= stored.time_s or not live.clean):
            got, what = (
                live,
                "the pose the armctl driving it plays now" if not live.clean else "held, as its driver left it",
            )
        elif stored is not None:
            got, what, age = stored, "the pose stored when the arm was last left", math.inf
        else:
            q = np.array(self.arm.home_rad)
            return self._pose(q, None, (), "assumed", "nothing published for this port yet: the home pose")
        g = got.gripper_rad if math.isfinite(got.gripper_rad) else None
        moving = not got.clean and age < WATCH_STALE_S
        if not got.clean and not moving:
            what = "the last pose its driver published (it stopped publishing: killed, or the link dropped)"
        return self._pose(got.q_rad, g, got.values, "watched", what, moving=moving)

    def _pose(self, q, g, values, source: str, detail: str, *, moving: bool = False) -> Pose:
        self.moving = moving
        q = np.asarray(q, dtype=float)
        return Pose(
            q_rad=q,
            tool_m=tool_point(self.arm, q),
            phi_rad=math.remainder(float(tool_pitch(self.arm, q)), TURN_RAD),
            gripper_rad=g,
            source=source,
            detail=detail,
            values=tuple(values),
        )

    moving = False  #: True while the last ``where()`` found the driver moving the arm

    def __repr__(self) -> str:
        return f"<Watch {self.arm.name!r} on {self.port}>"


# --- Ctrl-C --------------------------------------------------------------------------------------------------


def _interrupted(robot: Robot) -> str:
    """After Ctrl-C: stop every motion of ``robot`` under control (queued ones too), wait until the board holds,
    and say so in one line (the KeyboardInterrupt's message)."""
    queued = len(robot._queue)
    robot.stop("interrupted (Ctrl-C)")
    deadline = time.monotonic() + BOARD_WAIT_S
    with robot._cv:
        while robot.moving and time.monotonic() < deadline:
            robot._cv.wait(0.05)
    where = ""
    try:
        where = " at (" + ", ".join(f"{v:.1f}" for v in robot.where().tool_mm) + ") mm"
    except Exception:  # noqa: BLE001 - the stop is what matters; the pose is a courtesy
        pass
    dropped = f"; {queued} motion(s) queued with wait=False dropped" if queued else ""
    return f"Ctrl-C: {robot.arm.name} stopped under control and holds its pose{where}{dropped}"


def _one_line_interrupt(method):
    """A motion verb whose Ctrl-C stops the arm under control and raises KeyboardInterrupt with one line, not the
    traceback through armctl's playback (SIGTERM/SIGHUP, the CLI's ``Terminated``, pass through as they are)."""

    @functools.wraps(method)
    def verb(self, *args, **kwargs):
        __tracebackhide__ = True  # noqa: F841 - IPython and pytest hide this frame
        try:
            return method(self, *args, **kwargs)
        except KeyboardInterrupt as exc:
            if type(exc) is not KeyboardInterrupt:
                raise
            why = str(exc) if str(exc).startswith("Ctrl-C:") else _interrupted(self)
        raise KeyboardInterrupt(why)

    return verb


_SIGINT_BEFORE: list = []  # the SIGINT handler ours runs after (set once, in the main thread)


def _stop_all(reason: str) -> None:
    for robot in list(_OPEN):
        if not robot._closed and robot.moving:
            robot.stop(reason)


def _sigint(signum, frame) -> None:
    """Ctrl-C while motions play in the background (``wait=False``): stop them under control, then do what
    Ctrl-C did before (Python's: raise KeyboardInterrupt)."""
    _stop_all("interrupted (Ctrl-C)")
    before = _SIGINT_BEFORE[0] if _SIGINT_BEFORE else signal.default_int_handler
    if callable(before):
        before(signum, frame)
    else:
        raise KeyboardInterrupt


def _ipython_interrupt(shell, etype, value, tb, tb_offset=None):
    """IPython (a Jupyter kernel) swaps SIGINT handlers around each cell: its KeyboardInterrupt, wherever it lands
    in the cell, stops the motions playing in the background too, then shows as it would have."""
    _stop_all("interrupted (Ctrl-C)")
    shell.showtraceback((etype, value, tb), tb_offset=tb_offset)


def _watch_ctrl_c() -> None:
    """Make Ctrl-C reach motions that play in the background: chain our SIGINT handler in front of the one in
    place (only from the main thread, and not where Ctrl-C is ignored); in IPython also its interrupt."""
    ipython = sys.modules.get("IPython")
    shell = ipython.get_ipython() if ipython is not None and hasattr(ipython, "get_ipython") else None
    if shell is not None and not getattr(shell, "custom_exceptions", ()):  # leave another handler alone
        shell.set_custom_exc((KeyboardInterrupt,), _ipython_interrupt)
    if threading.current_thread() is not threading.main_thread():
        return
    current = signal.getsignal(signal.SIGINT)
    if current is _sigint or current in (signal.SIG_IGN, None):
        return
    try:
        signal.signal(signal.SIGINT, _sigint)
    except ValueError:  # pragma: no cover - not the main interpreter
        return
    _SIGINT_BEFORE[:] = [current]


# --- the Robot ---------------------------------------------------------------------------------------------


_OPEN: weakref.WeakSet[Robot] = weakref.WeakSet()


@atexit.register
def _close_at_exit() -> None:
    """A script that ends with a Robot still open (no ``with``, no ``close()``) would leave a motion to be
    cut off mid-stream by the interpreter: stop it under control and release the port instead."""
    for robot in list(_OPEN):
        if robot._closed:
            continue
        if robot.moving:
            print(
                f"armctl: the program ended while the arm on {robot.port} was moving: stopped under control "
                "(wait() for a motion, or close() the Robot, to end where you meant)",
                file=sys.stderr,
            )
        try:
            robot.close()
        except Exception:  # noqa: BLE001 - exiting: nothing left to tell
            pass


def _let_go(
    backend: Backend, store: PoseStore, lock: PortLock | None, live: PoseStore | None = None, runs=None
) -> None:
    """A Robot that became unreachable without ``close()``: close its board and release its port, so the same
    process (a notebook) can connect again. No motion plays (a playing motion holds the Robot); the board holds
    the pose it was last sent, which was stored when that motion ended."""
    try:
        backend.close()
    except Exception:  # noqa: BLE001 - a finalizer has nobody to tell
        pass
    finally:
        store.close()
        if live is not None:
            live.close()
        if runs is not None:
            runs.close()
        if lock is not None:
            lock.release()


class _BoardAccess:
    """Below the student API: the board one servo at a time, its stored limits and status, the commanded
    pose, a new calibration; for armctl's own tools (calibration, the pendant, the web page) and tests."""


class Robot(_BoardAccess):
    """The open arm, made by ``armctl.connect()``. SI units: metres, radians, seconds.

        import math, armctl
        with armctl.connect("mearm") as robot:               # no port: the simulated arm
            robot.move_to(0.15, 0.04, 0.02, speed=0.05)      # x, y, z in metres; 50 mm/s
            robot.gripper("close")
            robot.move_to(0.12, -0.06, 0.05, path="joint")   # every joint at once
            robot.home()
            print(robot.where())                             # a Pose: tool_m, q_rad, phi_rad, gripper_rad
            robot.plot()                                     # a matplotlib figure (inline in Jupyter)

    The student API: ``move_to(x, y[, z], phi=, speed=, path=, wait=)``, ``move_joints(q, degrees=)``,
    ``home()``, ``gripper("open"|"close"|angle)``, ``run(program)``, ``where()``, ``plan_to(x, y[, z])``
    (a Trajectory; ``.plot()`` draws it), ``plot()``, ``stop()``, ``release()``, ``close()`` (or a ``with``
    block). ``wait=False`` returns a ``Motion`` at once (``wait()``, ``done``, ``cancel()``). Ctrl-C stops the
    arm under control and raises KeyboardInterrupt. Errors: ``armctl.UnreachableError`` (``shortfall_m``),
    ``armctl.JointLimitError``, ``armctl.BadInputError``, ``armctl.LinkError``, ...

    Attributes: ``arm``, ``calibration`` (in the backend's addressing: each servo's ``channel`` is its address
    on this board), ``calibration_path``, ``backend`` (open), ``port`` (URL), ``info`` (what the board said at
    connect), ``progress`` (callback or None). Board access for armctl's own tools is listed last
    (inherited from ``_BoardAccess``)."""

    def __init__(
        self,
        arm: Arm,
        calibration: Calibration,
        backend: Backend,
        port: str,
        *,
        calibration_path: Path,
        lock: PortLock | None = None,
        progress: Callable[[float, str, float], None] | None = None,
        store: PoseStore | None = None,
    ):
        self.arm, self.calibration, self.backend, self.port = arm, calibration, backend, port
        self.calibration_path, self.progress = calibration_path, progress
        self._lock = lock
        self._io = threading.Lock()  # whoever does board I/O holds it
        self._io_owner: int | None = None
        self._cv = threading.Condition()
        self._queue: deque[Motion] = deque()
        self._active: Motion | None = None
        self._player: Player | None = None
        self._calls: deque[tuple[Callable, Future]] = deque()
        self._worker: threading.Thread | None = None
        self._stop_gen = 0  # stop() bumps it; motions made before are cancelled (lock-free: signal handlers)
        self._stop_reasons: dict[int, str] = {}  # generation -> the reason of the stop that started it
        self._closed = False
        self._store = store or PoseStore(port, arm)
        self._runs = RunStore(port, arm)
        self._live = LiveStore(port, arm)  # the pose played now, for watchers (armctl web --watch)
        self._journaled = 0.0
        #: Feed hold, resume and speed override of whatever plays (``pause``, ``resume``, ``speed_override``).
        self.control = RunControl()
        stored = self._store.load()
        #: One line if the last run on this port ended without a clean stop (it was killed, the PC lost
        #: power, the USB link dropped mid-motion): the pose it journaled is where this run starts from.
        self.recovered: str | None = None
        _OPEN.add(self)  # closed at exit if the script forgot to
        # A Robot nobody holds any more (a notebook cell run again, a variable reassigned) lets go of its port.
        # Not at exit: _close_at_exit stops a motion first.
        self._finalizer = weakref.finalize(self, _let_go, backend, self._store, lock, self._live, self._runs)
        self._finalizer.atexit = False
        if stored is not None and not stored.clean:
            age = time.time() - stored.time_s
            when = f" {age:.0f} s ago" if 0 <= age < 36000 else ""
            self.recovered = (
                f"the last run on this port ended without a clean stop{when} (killed, or the link or the PC went "
                "down): starting from the pose it journaled while moving"
            )

    @property
    def info(self):
        """What the board said at connect (``armctl.bus.backend.BoardInfo``: firmware, channels, limits)."""
        return self.backend.info

    def __enter__(self) -> Robot:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<Robot {self.arm.name!r} on {self.port} ({self.backend.name})>"

    # --- the board, one user at a time -------------------------------------------------------------------

    def _take_board(self, timeout_s: float = BOARD_WAIT_S) -> None:
        if not self._io.acquire(timeout=timeout_s):
            raise LinkError(f"the board on {self.port} stayed busy for {timeout_s:g} s")
        self._io_owner = threading.get_ident()

    def _give_board(self) -> None:
        self._io_owner = None
        self._io.release()

    @contextlib.contextmanager
    def _board(self, timeout_s: float = BOARD_WAIT_S):
        """The board to this thread (waiting for a motion in another thread to end), as a ``with`` block."""
        self._check_open()
        self._take_board(timeout_s)
        try:
            yield self.backend
        finally:
            self._give_board()

    def call(self, fn: Callable[[Backend], object], *, timeout_s: float = BOARD_WAIT_S):
        """Run ``fn(backend)`` with the board to itself: at once if no motion plays, else between two
        frames of the motion playing (so ``fn`` must not talk to the board then: read what the backend
        keeps, or a simulator). Returns what ``fn`` returns. For diagnostics and tests."""
        return self._on_board(lambda: fn(self.backend), lambda: fn(self.backend), timeout_s)

    def _on_board(self, idle: Callable, playing: Callable, timeout_s: float = BOARD_WAIT_S):
        """``idle()`` with the board free, or ``playing()`` on the thread that plays a motion (no I/O)."""
        if self._io_owner == threading.get_ident():  # called from inside our own motion (a callback)
            return playing()
        fut: Future = Future()
        entry = (playing, fut)
        self._calls.append(entry)
        deadline = time.monotonic() + timeout_s
        while True:
            if self._io.acquire(timeout=0.005):
                self._io_owner = threading.get_ident()
                try:
                    if fut.done():
                        return fut.result()
                    try:
                        self._calls.remove(entry)
                    except ValueError:
                        return fut.result()
                    return idle()
                finally:
                    self._give_board()
            if fut.done():
                return fut.result()
            if time.monotonic() > deadline:
                try:
                    self._calls.remove(entry)
                except ValueError:
                    return fut.result()
                raise LinkError(f"the board on {self.port} did not answer within {timeout_s:g} s")

    def _serve_calls(self) -> None:
        while self._calls:
            try:
                fn, fut = self._calls.popleft()
            except IndexError:
                return
            if fut.set_running_or_notify_cancel():
                try:
                    fut.set_result(fn())
                except Exception as exc:  # noqa: BLE001 - handed to the caller
                    fut.set_exception(exc)

    # --- where the arm is ------------------------------------------------------------------------------

    def where(self, *, settle: bool = False) -> Pose:
        """Where the arm is now (a ``Pose``): measured if the board can measure (the simulator, bus
        servos), else the pulses it outputs (or was last sent). ``settle``: first wait (up to 10 s) for
        the servos to reach their pulses. While a motion plays: the pose of the frame being played."""
        self._check_open()
        return self._on_board(lambda: self._pose_idle(settle), self._pose_playing)

    def plot(self, *, title: str = ""):
        """A matplotlib figure of the arm where it is now over its reach (an arm on a base: a top view at the
        tool's height beside a side view): shown inline in Jupyter, ``.savefig("arm.png")`` writes it.
        Needs matplotlib (``pip install -e '.[plot]'``)."""
        from .plot import pose_figure

        return pose_figure(self.arm, self.where().q_rad, title=title)

    def _angles(self, values) -> np.ndarray:
        """Joint angles (rad) for servo values (joints first), each snapped onto its limit when it lies
        beyond by less than one pulse step (see ``_snap_to_limits``)."""
        arm = self.arm
        return np.array(
            [
                _snap_to_limits(float(s.angle_rad(v)), arm.q_min[i], arm.q_max[i], s)
                for i, (s, v) in enumerate(zip(self.calibration.joints, values))
            ]
        )

    def _pose_from(self, values, source: str, detail: str) -> Pose:
        """The pose that servo ``values`` (joints, then gripper; servo units) mean by the calibration."""
        cal, arm = self.calibration, self.arm
        g = None
        if cal.gripper is not None and len(values) > arm.n and values[arm.n] is not None:
            g = float(cal.gripper.angle_rad(values[arm.n]))
        return self._pose(self._angles(values), g, source, detail, values)

    def _pose(self, q, g: float | None, source: str, detail: str, values=()) -> Pose:
        arm, cal = self.arm, self.calibration
        if not values:  # measured angles: the servo values that mean them
            values = [float(s.value(a)) for s, a in zip(cal.joints, q)]
            if cal.gripper is not None:
                values.append(None if g is None else float(cal.gripper.value(g)))
        return Pose(
            q_rad=np.asarray(q, dtype=float),
            tool_m=tool_point(arm, q),
            phi_rad=math.remainder(float(tool_pitch(arm, q)), TURN_RAD),  # -pi..pi: 384.5 deg is 24.5
            gripper_rad=g,
            source=source,
            detail=detail,
            values=tuple(None if v is None else float(v) for v in values),
        )

    def _measured_pose(self, settle: bool) -> Pose | None:
        """The measured pose, if the backend measures (values: what the servos are commanded, if known)."""
        if not self.backend.caps.measures_positions:
            return None
        got = self.backend.measured(settle_s=10.0 if settle else 0.0)
        servos = self.calibration.servos
        angles = [got.get(s.channel) for s in servos]
        if any(a is None for a in angles[: self.arm.n]):
            return None
        g = angles[self.arm.n] if len(angles) > self.arm.n else None
        return self._pose(angles[: self.arm.n], g, "measured", self.backend.measured_by)

    def _pose_idle(self, settle: bool) -> Pose:
        measured = self._measured_pose(settle)
        if measured is not None:
            return measured
        q, g, declare, held = self._start_state(check=False)
        if not declare:
            detail = "pulses the board outputs" if self.backend.caps.reports_pulses else "pulses last sent"
            return self._pose_from(held, "commanded", detail)
        stored = self._store.load() is not None
        servos = self.calibration.servos
        values = [held[i] if held[i] is not None else declare[s.channel] for i, s in enumerate(servos)]
        why = "the pose stored when this arm was last left here" if stored else "the home pose"
        return self._pose_from(values, "assumed", f"servos without pulses yet: {why}")

    def _pose_playing(self) -> Pose:
        measured = self._measured_pose(False)
        if measured is not None:
            return measured
        player = self._player
        by_ch = player.playing_values() if player is not None else {}
        values = [by_ch.get(s.channel) for s in self.calibration.servos]
        if any(v is None for v in values[: self.arm.n]):
            return self._pose_idle(False)
        return self._pose_from(values, "commanded", "pulses the board is playing (estimate)")

    def sample(self) -> tuple[np.ndarray, float, np.ndarray | None, float, int]:
        """What the arm is commanded and measured to do now, for recording: (commanded joint angles (rad),
        commanded gripper (rad, NaN: none), measured joint angles (rad; None where the servos cannot report),
        measured gripper (NaN: none), the index of the program sample playing (-1: none, or the ramp to its
        start)). While a motion plays it is read between two frames, without a word to the board."""
        self._check_open()
        return self._on_board(self._sample_idle, self._sample_playing)

    def _sample_from(self, values: dict, index: int):
        cal, n = self.calibration, self.arm.n
        if any(values.get(s.channel) is None for s in cal.joints):  # servos without pulses yet: nothing to record
            q, g = np.full(n, np.nan), math.nan
        else:
            q = np.array([float(s.angle_rad(values[s.channel])) for s in cal.joints])
            gv = values.get(cal.gripper.channel) if cal.gripper is not None else None
            g = float(cal.gripper.angle_rad(gv)) if gv is not None else math.nan
        got = self.backend.last_measured() if self.backend.caps.measures_positions else {}
        qm = gm = None
        if got and all(s.channel in got for s in cal.joints):
            qm = np.array([got[s.channel] for s in cal.joints])
            gm = got.get(cal.gripper.channel) if cal.gripper is not None else None
        return q, g, qm, (math.nan if gm is None else float(gm)), index

    def _sample_playing(self):
        player = self._player
        if player is None:
            m = self._active
            if isinstance(m, FollowMotion):
                q, g = m.end_q_rad, m.end_gripper_rad
                cal = self.calibration
                values = {s.channel: float(s.value(a)) for s, a in zip(cal.joints, q)}
                if cal.gripper is not None and math.isfinite(g):
                    values[cal.gripper.channel] = float(cal.gripper.value(g))
                return self._sample_from(values, -1)
            return self._sample_idle()
        frame = player.frames_played()
        values = player.values_at(frame)
        i, tau = player.position_at(frame)  # (time-scaled while held or overridden: frames are not samples)
        part = player.parts[i] if player.parts else None
        index = -1 if part is None or (len(player.parts) > 1 and i == 0) else min(len(part.us) - 1, int(tau))
        return self._sample_from(values, int(index))

    def _sample_idle(self):
        held = self._held()
        values = {s.channel: h for s, h in zip(self.calibration.servos, held) if h is not None}
        return self._sample_from(values, -1)

    def _held(self) -> list[float | None]:
        """What each servo (joints, then gripper) holds now, in servo units; None where it has nothing."""
        st = self.backend.status()
        held = [st.values[s.channel] if s.channel < len(st.values) else None for s in self.calibration.servos]
        if not self.backend.caps.reports_pulses and self.backend.caps.measures_positions:
            measured = self.backend.measured()  # bus servos: where each one is, is what it holds
            held = [
                h if h is not None or measured.get(s.channel) is None else float(s.value(measured[s.channel]))
                for h, s in zip(held, self.calibration.servos)
            ]
        return held

    def _start_state(self, *, check: bool = True, clamp: bool = False):
        """(q_rad, gripper_rad, values to declare {address: units}, held values per servo) for the pose the
        arm is in now, read fresh from the board. Servos without pulses get the stored pose (its servo
        values, else its angles; else home) declared. ``check``: PulseLimitError if a declared pulse lies
        outside the calibration; ``clamp``: move it inside instead (calibrating)."""
        arm, cal = self.arm, self.calibration
        servos = cal.servos
        held = self._held()
        stored = self._store.load()
        want = [None] * len(servos)  # per servo: the angle to declare if it has no pulse, or a stored value
        q_decl = stored.q_rad if stored is not None else np.array(arm.home_rad)
        g_decl = stored.gripper_rad if stored is not None else float("nan")
        if arm.gripper is not None and not math.isfinite(g_decl):
            g_decl = arm.gripper.open_rad
        stored_values = stored.values if stored is not None and len(stored.values) == len(servos) else ()
        declare: dict[int, float] = {}
        for i, s in enumerate(servos):
            if held[i] is not None:
                continue
            if stored_values and stored_values[i] is not None:
                v = float(stored_values[i])  # what the servo physically held: exact, whatever the calibration
                want[i] = self._on_grid(s, min(max(v, s.lo), s.hi) if clamp else v)
            else:
                angle = q_decl[i] if i < arm.n else (g_decl if math.isfinite(g_decl) else 0.0)
                want[i] = self._declared_value(s, angle, clamp)
            declare[s.channel] = want[i]
        values = [h if h is not None else w for h, w in zip(held, want)]
        q = self._angles(values)
        g = float("nan")
        if cal.gripper is not None and arm.gripper is not None:
            g = float(cal.gripper.angle_rad(values[len(cal.joints)]))
        if check:
            self._check_current(q, values)
            cal.check_values(np.array([s.value(q[i]) for i, s in enumerate(cal.joints)]))
        return q, g, declare, held

    def _check_current(self, q, values) -> None:
        """JointLimitError naming the first joint that is now (measured, or as the board holds it) outside its
        calibrated range or the arm's limits: no target can fix that, the arm has to be put back first."""
        arm, measured = self.arm, self.backend.caps.measures_positions
        fix = "check the calibration"
        if measured:
            fix = "move it back by hand (torque off: robot.release(), armctl teach)"
        for i, s in enumerate(self.calibration.joints):
            v, deg = values[i], math.degrees(q[i])
            lo, hi = math.degrees(arm.q_min[i]), math.degrees(arm.q_max[i])
            if v is not None and not s.lo - 1e-6 <= v <= s.hi + 1e-6:
                where = f"{v:.0f} {s.unit}, outside the calibrated {s.lo:g}..{s.hi:g} {s.unit}"
            elif not lo - 1e-9 <= deg <= hi + 1e-9:
                where = f"outside its limits {lo:g}..{hi:g} deg"
            else:
                continue
            raise JointLimitError(
                f"the arm is outside its joint limits now: joint {i + 1} ({s.name}) is at {deg:.1f} deg ({where}); "
                f"{fix}, then move again",
                joint=i,
                q=np.asarray(q),
            )

    @staticmethod
    def _declared_value(servo, angle: float, clamp: bool) -> float:
        v = float(servo.value(angle))
        if clamp:
            v = min(max(v, servo.lo), servo.hi)
        return Robot._on_grid(servo, v)

    @staticmethod
    def _on_grid(servo, value: float) -> float:
        """``value`` on the servo's resolution (our firmware's 0.5 us, a bus servo's step)."""
        return float(np.round(value / servo.resolution) * servo.resolution)

    @staticmethod
    def _on_grid_toward(servo, prev: float, value: float) -> float:
        """``value`` on the servo's resolution, rounded towards ``prev`` (the value the servo holds): a step
        cut to the speed limit never grows past it by the rounding."""
        r = servo.resolution
        base = float(np.round(prev / r) * r)
        n = (value - base) / r
        n = math.floor(n + 1e-9) if n >= 0 else math.ceil(n - 1e-9)
        return base + n * r

    # --- planning ------------------------------------------------------------------------------------------

    def _expected_start(self) -> tuple[np.ndarray, float, Motion | None]:
        """The pose a new motion starts from, and the motion it follows: the end of the last motion still to
        play, else the pose the arm is in now (read from the board; no motion)."""
        with self._cv:
            pending = [m for m in (self._active, *self._queue) if m is not None and not m.cancelled()]
        if pending:
            return np.array(pending[-1].end_q_rad), pending[-1].end_gripper_rad, pending[-1]
        with self._board():
            q, g, _, _ = self._start_state()
        return q, g, None

    def _plan(self, moves, label: str, start=None) -> tuple[Trajectory, Pulses, Motion | None]:
        """Plan ``moves`` (a list, or a function of the start pose giving one) from ``start`` (q, gripper),
        default the expected start; with the motion it follows (None: planned from the board's pose)."""
        q0, g0, after = self._expected_start() if start is None else (*start, None)
        if callable(moves):
            moves = moves(q0)
        plan = motion.plan_moves(self.arm, moves, q_start=q0, gripper_start=g0 if math.isfinite(g0) else None)
        traj = plan.trajectory
        traj.plan = plan  # trajectory.plot() draws it
        return traj, prepare(traj, self.calibration), after  # every pulse checked before anything moves

    def plan_to(
        self,
        x: float,
        y: float,
        z: float | None = None,
        *,
        phi: float | None = None,
        speed: float | None = None,
        accel: float | None = None,
    ) -> Trajectory:
        """The straight-line trajectory ``move_to`` would play, from where the arm is (or will be, after the
        motions still to play), without moving: for previews and plots. Raises what ``move_to`` raises."""
        self._check_open()
        return self._plan([self._line(x, y, z, phi, speed, accel, None)], "plan")[0]

    def _line(self, x, y, z, phi, speed, accel, label, blend=None) -> motion.LineMove:
        target = self._point(x, y, z)
        if phi is not None:
            phi = self._radians(phi, "phi")
            if self.arm.n_links != 3:
                raise BadInputError(
                    f"phi (a tool angle) needs a 3-link arm; {self.arm.name!r} has {self.arm.n_links} links"
                )
        kw = {}
        if speed is not None:
            kw["speed_m_s"] = self._positive(speed, "speed")
            if kw["speed_m_s"] > MAX_SPEED_M_S:
                raise BadInputError(
                    f"speed: {speed:g} m/s is faster than {MAX_SPEED_M_S:g} m/s; speeds here are in m/s: mm/s given "
                    f"as m/s? {speed:g} mm/s is speed={speed / 1000:g}"
                )
        if accel is not None:
            kw["accel_m_s2"] = self._positive(accel, "accel")
        if blend is not None:
            b = self._number(blend, "blend")
            if not 0.0 <= b <= MAX_BLEND_M:
                raise BadInputError(f"blend: {b:g} m: give 0 .. {MAX_BLEND_M:g} m (metres, as every length here)")
            kw["blend_m"] = b
        label = label or f"move to ({', '.join(f'{v:g}' for v in target)}) m"
        return motion.LineMove(tuple(target), phi_rad=phi, label=label, **kw)

    @staticmethod
    def _number(v, what: str) -> float:
        # (a number, not a string or a bool: "0.5" and True are mistakes in a program, not values)
        if not isinstance(v, numbers.Real) or isinstance(v, (bool, np.bool_)):
            raise BadInputError(f"{what}: expected a number, got {v!r}")
        f = float(v)
        if not math.isfinite(f):
            raise BadInputError(f"{what}: must be a finite number, got {v!r}")
        return f

    @classmethod
    def _radians(cls, v, what: str) -> float:
        """An angle in radians: more than a turn either way is refused (degrees given where radians go)."""
        f = cls._number(v, what)
        if abs(f) > TURN_RAD + 1e-9:
            raise BadInputError(
                f"{what}: {f:g} rad is more than a turn; angles here are in radians: degrees given as radians? "
                f"{f:g} deg is math.radians({f:g}) = {math.radians(f):.4g} (or degrees=True where the method takes it)"
            )
        return f

    def _positive(self, v, what: str) -> float:
        f = self._number(v, what)
        if f <= 0:
            raise BadInputError(f"{what}: must be > 0, got {v!r}")
        return f

    def _point(self, x, y, z=None) -> tuple[float, ...]:
        if self.arm.has_base and z is None:
            raise BadInputError(
                f"arm {self.arm.name!r} stands on a rotating base: give z (the height, m) too: move_to(x, y, z)"
            )
        if not self.arm.has_base and z is not None:
            raise BadInputError(f"arm {self.arm.name!r} works in a vertical plane (no base): give x and y, not z")
        if z is None:
            point = self._number(x, "x"), self._number(y, "y")
        else:
            point = self._number(x, "x"), self._number(y, "y"), self._number(z, "z")
        self._check_not_far(point)
        return point

    def _check_not_far(self, point) -> None:
        """UnreachableError with a hint for a target more than FAR_REACHES reaches away (millimetres given as
        metres: move_to(500, 200) meant 0.5, 0.2)."""
        arm = self.arm
        reach = arm.reach_max + abs(arm.base_offset_m) + abs(arm.shoulder_height_m)
        dist = math.hypot(*point)
        if dist <= FAR_REACHES * reach:
            return
        from .workspace import shortfall

        got = ", ".join(f"{v:g}" for v in point)
        meant = ", ".join(f"{v / 1000:g}" for v in point)
        raise UnreachableError(
            f"target ({got}) m is {dist:g} m away, {dist / reach:.0f} times the reach of arm {arm.name!r} "
            f"({1000 * reach:.0f} mm): millimetres given as metres? lengths here are in metres: "
            f"({got}) mm is ({meant})",
            target=np.array(point),
            shortfall_m=shortfall(arm, np.array(point)),
        )

    # --- moving ------------------------------------------------------------------------------------------

    @_one_line_interrupt
    def move_to(
        self,
        x: float,
        y: float,
        z: float | None = None,
        *,
        phi: float | None = None,
        speed: float | None = None,
        accel: float | None = None,
        path: str = "line",
        label: str | None = None,
        wait: bool = True,
        blend: float | None = None,
        reach_q=None,
    ) -> Motion:
        """Move the tool point to (``x``, ``y``) m, or (``x``, ``y``, ``z``) on an arm with a rotating base (z
        is required there and refused on a planar arm): in a straight line at ``speed`` m/s (default 0.1) with
        ``accel`` m/s^2 (default 0.5), slowed wherever a joint would pass its speed limit; ``path="joint"``
        instead moves every joint at once to the IK pose nearest the start. ``phi``: the tool angle (rad) at
        the target, 3-link arms. ``blend`` (m, lines only): with ``wait=False``, consecutive blended lines are
        played as one motion that passes each shared corner within that distance without stopping (it rests
        only at the last line queued; see docs/programs.md, "Blending"). Raises UnreachableError (with
        ``shortfall_m``), JointLimitError (also PulseLimitError), MotionError, BadInputError before anything
        moves; LinkError if the link fails. ``reach_q`` (rad, lines): the pose the caller solved for the target
        (``motion.solve_pose``), checked instead of solving the end again."""
        self._check_open()
        gen = self._stop_gen
        if path not in ("line", "joint"):
            raise BadInputError(f"path: 'line' or 'joint', got {path!r}")
        if blend is not None and path != "line":
            raise BadInputError("blend applies to straight lines (path='line'), not to joint moves")
        line = self._line(x, y, z, phi, speed, accel, label, blend)
        if reach_q is not None:
            line = replace(line, reach_q_rad=tuple(float(v) for v in reach_q))
        if path == "line":
            return self._go([line], line.label, gen, wait)
        joint_label = label or line.label.replace("move to", "joint move to")

        def joint_move(q0):
            q = motion.solve_pose(self.arm, np.array(line.target_m), line.phi_rad, q0)
            return [motion.JointMove(tuple(q), label=joint_label)]

        return self._go(joint_move, joint_label, gen, wait)

    @_one_line_interrupt
    def move_joints(self, q, *, degrees: bool = False, speed_fraction: float = 0.5, wait: bool = True) -> Motion:
        """Move every joint at once to ``q`` (rad, or degrees with ``degrees=True``), all starting and
        stopping together, at ``speed_fraction`` (0..1] of the joint speed limits. JointLimitError outside
        the limits, BadInputError for the wrong number of angles."""
        self._check_open()
        gen = self._stop_gen
        check = self._number if degrees else self._radians
        items = list(q) if isinstance(q, (list, tuple)) else np.atleast_1d(q).tolist()
        vals = [check(v, f"joint {i + 1}") for i, v in enumerate(items)]
        if len(vals) != self.arm.n:
            raise BadInputError(f"expected {self.arm.n} joint angles for arm {self.arm.name!r}, got {len(vals)}")
        speed_fraction = self._number(speed_fraction, "speed_fraction")
        if not 0 < speed_fraction <= 1:
            raise BadInputError(f"speed_fraction: must be in (0, 1], got {speed_fraction!r}")
        q_rad = np.radians(vals) if degrees else np.array(vals)
        deg = " ".join(f"{math.degrees(v):g}" for v in q_rad)
        move = motion.JointMove(tuple(q_rad), speed_fraction=speed_fraction, label=f"joint move to {deg} deg")
        return self._go([move], move.label, gen, wait)

    @_one_line_interrupt
    def home(self, *, wait: bool = True) -> Motion:
        """Move slowly (a quarter of each joint's speed limit) to the arm's home pose."""
        self._check_open()
        gen = self._stop_gen
        move = motion.JointMove(tuple(self.arm.home_rad), speed_fraction=HOME_SPEED_FRACTION, label="home")
        return self._go([move], "home", gen, wait)

    @_one_line_interrupt
    def gripper(self, state: str | float, *, degrees: bool = False, wait: bool = True) -> Motion:
        """Open or close the gripper (``"open"``, ``"close"``/``"closed"``) or turn it to an angle (rad, or
        degrees with ``degrees=True``), at its speed limit; the arm holds still."""
        self._check_open()
        gen = self._stop_gen
        g = self.arm.gripper
        if g is None:
            raise BadInputError(f"arm {self.arm.name!r} has no gripper")
        if isinstance(state, str):
            word = state.strip().lower()
            if word not in ("open", "close", "closed"):
                raise BadInputError(f"gripper: 'open', 'close' or an angle, got {state!r}")
            angle, label = (g.open_rad, "open the gripper") if word == "open" else (g.closed_rad, "close the gripper")
        else:
            angle = self._number(state, "gripper angle") if degrees else self._radians(state, "gripper angle")
            angle = math.radians(angle) if degrees else angle
            label = f"gripper to {math.degrees(angle):g} deg"
        move = motion.GripperMove(angle, label=label)
        return self._go([move], label, gen, wait)

    @_one_line_interrupt
    def run(self, program, *, from_step: int | str | None = None, resume: bool = False, wait: bool = True) -> Motion:
        """Run a program: a YAML file (path), a parsed ``armctl.program.Program``, a plan made by
        ``armctl.program.plan_program``, or a ``ProgramRun`` from ``prepare_run``. It is planned whole first
        (ConfigError, MotionError name the file, line and step); then the arm ramps from where it is to the
        program's start and plays it. Its progress (the step playing, the gripper) is recorded in the state
        folder as it plays, so ``resume=True`` continues an interrupted run of the same program at the step it
        stopped in, with the gripper as it was; ``from_step`` starts at any step (see ``prepare_run``)."""
        self._check_open()
        gen = self._stop_gen
        if isinstance(program, motion.Plan):
            if resume or from_step is not None:
                raise BadInputError("run: resume and from_step need the program (a file or Program), not a plan")
            traj = program.trajectory
            return self._submit("program", traj, prepare(traj, self.calibration), gen, wait, arm=program.arm)
        pr = (
            program
            if isinstance(program, ProgramRun)
            else self.prepare_run(program, from_step=from_step, resume=resume)
        )
        traj = pr.trajectory
        m = Motion(self, Path(pr.program).name, traj, prepare(traj, self.calibration), gen)
        m.program = pr
        m.zoned_arm = pr.plan.arm  # a program's own keep-out zones: its ramp to the start is checked against them
        return self._enqueue(m, wait)

    def prepare_run(self, program, *, from_step: int | str | None = None, resume: bool = False) -> ProgramRun:
        """Plan ``program`` (a file or a parsed ``Program``) to run from where the arm is, without moving.

        ``from_step``: start at that step (a number N counts the steps as ``armctl plan`` does, loops unrolled;
        or a step's name, or its number as written, ``1.5``): the gripper is first set to the state the
        program has there, then a slow joint move (planned and checked) takes the arm to that step's start.
        ``resume``: start at the step the last run of this program on this port was in when it stopped, was
        killed or lost power, with the gripper as it is (an interrupted gripper step goes on from where the
        gripper is; the gripper is never opened on the way). BadInputError if there is nothing to resume, or
        the program file changed since."""
        from .program import Program, load_program, plan_program
        from .restart import at_rest_step, find_step, restart_trajectory

        self._check_open()
        if isinstance(program, (str, Path)):
            program = load_program(program)
        if not isinstance(program, Program):
            raise BadInputError(f"run: expected a program file or Program, got {type(program).__name__}")
        if resume and from_step is not None:
            raise BadInputError("run: give resume or from_step, not both")
        path = str(Path(program.path).resolve())
        try:
            digest = program_digest(path)
        except OSError:
            digest = ""
        plan = plan_program(program, self.arm)
        pr = ProgramRun(path, digest, plan, plan.trajectory)
        k = None
        if from_step is not None:
            k = find_step(program, plan, from_step)
        elif resume:
            rec = self._runs.load()
            name = Path(program.path).name
            if rec is None or (rec.program and rec.program != path and rec.digest != digest):
                raise BadInputError(f"--resume: no interrupted run of {name} on {self.port} to resume")
            if rec.digest != digest:
                raise BadInputError(
                    f"--resume: {name} changed since its run was interrupted at step {rec.step + 1}: give --from-step "
                    "to say where to start"
                )
            if rec.status == "done":
                raise BadInputError(f"--resume: the last run of {name} on {self.port} finished; nothing to resume")
            k = min(max(rec.step, 0), len(plan.trajectory.steps) - 1)
        if k is None:
            pr.describe = f"from step 1 of {pr.steps}"
            return pr
        k = at_rest_step(plan, k)  # a step inside a blended chain: from where the chain starts, at rest
        q0, g0, _ = self._expected_start()
        traj, offset = restart_trajectory(plan, k, q0, g0, keep_gripper=resume, speed_fraction=RAMP_SPEED_FRACTION)
        pr.trajectory, pr.first_step, pr.offset = traj, k, offset
        title = plan.trajectory.steps[k]
        grip = ""
        g_step = float(traj.gripper_rad[max(0, int(np.count_nonzero(traj.step < offset)) - 1)])
        if self.arm.gripper is not None and math.isfinite(g0):
            word = self._gripper_word
            if abs(g_step - g0) > math.radians(2):
                grip = f"; the gripper first goes from {word(g0)} to {word(g_step)}, then the arm moves"
            else:
                grip = f"; the gripper stays {word(g0)}"
        how = "resuming" if resume else "starting"
        pr.describe = f"{how} at step {k + 1} of {pr.steps}: {title}{grip}"
        return pr

    def _gripper_word(self, g: float) -> str:
        """'open', 'closed' or the angle of gripper angle ``g`` (rad)."""
        grip = self.arm.gripper
        if grip is None or not math.isfinite(g):
            return "-"
        if abs(g - grip.open_rad) < math.radians(2):
            return "open"
        if abs(g - grip.closed_rad) < math.radians(2):
            return "closed"
        return f"at {math.degrees(g):.0f} deg"

    def last_run(self):
        """The progress record of the last program run on this port (``armctl.state.RunRecord``), or None."""
        return self._runs.load()

    def follow(
        self,
        leader,
        *,
        map: str = "joints",  # noqa: A002 - the name the issue and the CLI give it
        rate_hz: float = 50.0,
        scale: float | None = None,
        offset=None,
        max_lag_deg: float | None = None,
        on_frame=None,
    ) -> FollowMotion:
        """Follow a leader arm (``armctl.open_leader``) until stopped: returns at once with the ``Motion``
        (``wait()``, ``cancel()``, ``robot.stop()``; its ``teleop.status`` is live). Every ``1/rate_hz`` s the
        leader is read and the follower stepped towards the pose it means (``map``: ``"joints"``, the same model
        joint to joint; ``"tool"``: the tool point, times ``scale`` (default the reach ratio) plus ``offset``
        (m), about the shoulders; see ``armctl.follow``), never faster than its joint speed limits and never
        outside its limits or reach (a pose it cannot take is clamped to the nearest it can, and marked). It
        starts with a slow ramp (a quarter of the speed limits) until it has caught up with the leader.
        ``max_lag_deg``: stop (MotionError) if a joint falls further behind than this after the ramp.
        ``on_frame(t_s, q_rad, gripper_rad, target, measured)`` is called after each command (recording).
        A lost leader stops the follower under control: ``wait()`` raises LinkError naming the leader servo."""
        from .follow import Teleop

        self._check_open()
        gen = self._stop_gen
        teleop = Teleop(
            leader,
            self.arm,
            map=map,
            rate_hz=rate_hz,
            scale=scale,
            offset_m=offset,
            max_lag_deg=max_lag_deg,
            on_frame=on_frame,
        )
        q0, g0, _ = self._expected_start()
        traj = Trajectory(
            t_s=np.zeros(1),
            q_rad=np.array(q0, dtype=float)[None, :],
            gripper_rad=np.array([g0], dtype=float),
            step=np.zeros(1, dtype=int),
            steps=["follow"],
        )
        label = f"follow the {leader.arm.name} on {leader.port}"
        m = FollowMotion(self, label, traj, prepare(traj, self.calibration), gen, teleop)
        with self._cv:
            self._queue.append(m)
            self._start_worker()
            self._cv.notify_all()
        return m

    def _go(self, moves, label: str, gen: int, wait: bool) -> Motion:
        traj, pulses, after = self._plan(moves, label)
        return self._submit(label, traj, pulses, gen, wait, moves=moves, after=after)

    def _submit(
        self, label: str, traj: Trajectory, pulses: Pulses, gen: int, wait: bool, *, moves=None, after=None, arm=None
    ) -> Motion:
        m = Motion(self, label, traj, pulses, gen, moves=moves, after=after)
        m.zoned_arm = arm  # a program's own keep-out zones: its ramp to the start is checked against them too
        return self._enqueue(m, wait)

    def _enqueue(self, m: Motion, wait: bool) -> Motion:
        with self._cv:
            idle = self._active is None and not self._queue
            if wait and idle:
                self._active = m  # runs here, now: nobody may plan from the board's pose meanwhile
            else:
                self._queue.append(m)
                self._start_worker()
                self._cv.notify_all()
        if not (wait and idle):
            _watch_ctrl_c()  # it plays in the background: Ctrl-C must reach it too
        if wait and idle:
            self._run(m)  # here, in the caller's thread: Ctrl-C lands in the playback and stops it there
        if wait:
            m.wait()
        return m

    def stop(self, reason: str = "stop requested") -> None:
        """Controlled stop, from any thread or a signal handler: the motion playing stops within a frame
        plus the board's queue and the arm holds its pose; motions still queued are dropped. Their
        ``wait()`` raises StopRequested. Motions asked for after this call run as usual (a feed hold is
        ended too)."""
        gen = self._stop_gen + 1
        self._stop_reasons[gen] = reason
        self._stop_gen = gen
        self.control.paused = False  # a stop ends a hold too: the next motion plays

    def pause(self) -> None:
        """Feed hold (GRBL's ``!``): the motion playing decelerates along its planned path under the joint limits
        (in about 0.4 s, after what the board already has queued: at most about 0.3 s) and holds; nothing is
        dropped. Safe from any thread or a signal handler. ``resume()`` goes on from where it held."""
        self.control.pause()

    def resume(self) -> None:
        """Go on from where ``pause()`` held (GRBL's ``~``), along the same path."""
        self.control.resume()

    @property
    def paused(self) -> bool:
        """True while a hold was asked for and not resumed."""
        return self.control.paused

    @property
    def speed_override(self) -> float:
        """The speed of every motion as a fraction of its planned speeds, 0.1..2.0 (default 1.0), changed at
        any time, also while a motion plays (it speeds up or slows down along its path). No servo is ever
        stepped faster than its joint's speed limit: above 1.0 a motion already at a limit stays there."""
        return self.control.override

    @speed_override.setter
    def speed_override(self, value: float) -> None:
        self.control.override = check_override(value)

    @property
    def moving(self) -> bool:
        """True while a motion plays or waits to."""
        return self._active is not None or bool(self._queue)

    # --- jogging -------------------------------------------------------------------------------------------

    def commanded_pose(self) -> Pose:
        """The pose the arm is commanded to be in once the motions still to play are over: where the last of
        them ends, else the pulses the board holds (servos without pulses: the pose they will be set to,
        source ``"assumed"``). Never a measurement: where the next motion starts from, and what a recorded
        pose should store (played again, it commands the very same pulses)."""
        self._check_open()

        def last_pending():
            with self._cv:
                pending = [m for m in (self._active, *self._queue) if m is not None and not m.cancelled()]
            return pending[-1] if pending else None

        m = last_pending()
        if m is None:
            with self._board():  # a stopped motion lets go of the board once the board holds
                m = last_pending()
                if m is None:
                    _, _, declare, held = self._start_state(check=False)
                    servos = self.calibration.servos
                    values = [h if h is not None else declare.get(s.channel) for h, s in zip(held, servos)]
                    if declare:
                        return self._pose_from(values, "assumed", "servos without pulses yet: the pose set first")
                    detail = "pulses the board outputs" if self.backend.caps.reports_pulses else "pulses last sent"
                    return self._pose_from(values, "commanded", detail)
        g = m.end_gripper_rad
        return self._pose(
            m.end_q_rad, g if math.isfinite(g) else None, "commanded", "where the motions still to play end"
        )

    # --- running motions -----------------------------------------------------------------------------------

    def _start_worker(self) -> None:
        if self._worker is None or not self._worker.is_alive():
            self._worker = threading.Thread(target=self._work, name=f"armctl-robot-{self.arm.name}", daemon=True)
            self._worker.start()

    def _work(self) -> None:
        while True:
            with self._cv:
                if not self._queue and not self._closed:
                    self._cv.wait(0.1)
                if not self._queue:
                    self._worker = None  # an idle worker lets go of the Robot (its finalizer can run)
                    return
                m = self._queue.popleft()
                self._active = m  # at once, under the lock: a motion is always queued or active until it ends
                chain = self._gather(m)
            if chain:
                self._merge(m, chain)
            self._run(m)

    @staticmethod
    def _blends(m: Motion) -> bool:
        """``m`` is one line asking to blend into the next (``move_to(..., blend=)``)."""
        mv = m._moves
        return (
            isinstance(mv, list)
            and len(mv) == 1
            and isinstance(mv[0], motion.LineMove)
            and mv[0].blend_m > 0
            and not mv[0].stop
            and not m.cancelled()
        )

    def _gather(self, m: Motion) -> list[Motion]:
        """Under the lock: the queued lines that follow ``m`` in one blended chain (left in the queue, so
        that motions asked for meanwhile are still planned from the last one's end), waiting up to
        BLEND_GATHER_S after each for the next to be queued."""
        chain: list[Motion] = []
        last = m
        deadline = time.monotonic() + BLEND_GATHER_S
        while self._blends(last) and not self._closed:
            if len(self._queue) > len(chain):
                nxt = self._queue[len(chain)]
                mv = nxt._moves
                if not (isinstance(mv, list) and len(mv) == 1 and isinstance(mv[0], motion.LineMove)):
                    break
                if nxt.cancelled() or nxt._after is not last:
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
        """Plan ``head`` and the lines ``chain`` after it as one blended motion played by ``head``."""
        moves = [head._moves[0], *(m._moves[0] for m in chain)]
        q0, g0 = head.trajectory.q_rad[0], float(head.trajectory.gripper_rad[0])
        try:
            traj, pulses, _ = self._plan(moves, head.label, start=(q0, g0))
        except (MotionError, ValueError):  # pragma: no cover - each line planned alone already; keep them apart
            return
        with self._cv:
            # take the chain off the queue at the same moment the head takes over its end: the pose the next
            # motion is planned from (the last one's end) never changes
            queued = list(self._queue)[: len(chain)]
            if queued != chain or any(m.cancelled() for m in chain) or head.cancelled():
                return  # cancelled or stopped meanwhile: each plays (or is dropped) alone
            for _ in chain:
                self._queue.popleft()
            head.trajectory, head._pulses, head._moves = traj, pulses, moves
            head._chain = chain
            for m in chain:
                m._head = head

    def _run(self, m: Motion) -> None:
        """Play motion ``m``, already made ``_active`` (this thread takes the board for it); its outcome goes
        to ``m`` once the board is free again (so whoever waits on it finds the Robot idle)."""
        try:
            self._take_board()
        except LinkError as exc:
            with self._cv:
                self._active = None
                self._cv.notify_all()
            m._future.set_exception(exc)
            return
        m.started.set()
        outcome: MoveResult | BaseException | None = None
        try:
            if m.cancelled():
                raise StopRequested(f"{m.label}: not started: {m.stop_reason}")
            t0 = time.monotonic()
            self.backend.reset_tracking()
            result = self._play(m)
            lag = self.backend.tracking_deg()
            outcome = MoveResult(
                label=m.label,
                duration_s=m.trajectory.duration_s,
                frames=result.frames,
                commands=result.commands,
                ramp_frames=result.ramp_frames,
                wall_s=time.monotonic() - t0,
                planned_q_rad=np.array(m.end_q_rad),
                planned_tool_m=tool_point(self.arm, m.end_q_rad),
                tracking_error_deg=None if lag is None else {s.name: lag[s.channel] for s in self.calibration.servos},
            )
        except BaseException as exc:  # noqa: BLE001 - handed to whoever waits on the motion
            if isinstance(exc, StopRequested) and not str(exc).startswith(m.label):
                exc = StopRequested(f"{m.label}: stopped ({m.stop_reason})")
            outcome = exc
        finally:
            if m.program is not None and self._player is not None:
                status = "done" if isinstance(outcome, MoveResult) else "stopped"
                player = self._player
                at = player.stopped_at if player.stopped_at is not None else player.frames_played()
                self._record_step(m, player, at, status, force=True)
            self._player = None
            self._remember()
            with self._cv:
                self._active = None
                self._cv.notify_all()
            self._serve_calls()
            self._give_board()
        for f in m._chain:  # lines blended into this motion end with it
            f.started.set()
            if isinstance(outcome, MoveResult):
                f._future.set_result(outcome)
            else:
                f._future.set_exception(outcome if isinstance(outcome, Exception) else StopRequested(str(outcome)))
        if isinstance(outcome, MoveResult):
            m._future.set_result(outcome)
            return
        m._future.set_exception(outcome)
        if not isinstance(outcome, Exception):  # KeyboardInterrupt in the caller's thread: let it go on
            raise outcome

    def _play(self, m: Motion) -> StreamResult:
        if isinstance(m, FollowMotion):
            return self._play_follow(m)
        self._check_board_limits()
        q0, g0, declare, held = self._start_state()
        if self._start_moved(m):
            # what it was planned after did not end where planned: plan it again from here (a move to the
            # same target, the gripper where the arm is), checked whole as before; never a ramp to a target
            # that was cancelled or stopped short of
            m.trajectory, m._pulses, _ = self._plan(m._moves, m.label, start=(q0, g0))
            m.replanned = True
        parts = [m._pulses]
        arm = getattr(m, "zoned_arm", None)
        ramp = None if self._already_there(m._pulses, held, declare) else self._ramp(q0, g0, m.trajectory, arm)
        if ramp is not None:
            parts.insert(0, prepare(ramp, self.calibration))
        start = [h if h is not None else declare.get(s.channel) for h, s in zip(held, self.calibration.servos)]

        def tick() -> None:
            if m.cancelled():
                raise StopRequested(f"{m.label}: stopped ({m.stop_reason})")
            self._serve_calls()
            self._journal(start, m)

        self._player = Player(
            self.backend,
            tick=tick,
            progress=self.progress,
            control=self.control,
            max_speed=self._max_speed(),
            max_accel=self._max_accel(),
            slew=self._hold_slew(),
        )
        self._journaled = 0.0
        return self._player.play(parts, declare=declare, ramp=ramp is not None)

    def _max_speed(self) -> dict[int, float]:
        """Per servo address: its joint's speed limit in servo units per second (for the speed override)."""
        arm, cal = self.arm, self.calibration
        out = {s.channel: math.degrees(float(v)) * s.per_deg for s, v in zip(cal.joints, arm.max_speed_rad_s)}
        if cal.gripper is not None and arm.gripper is not None:
            out[cal.gripper.channel] = math.degrees(arm.gripper.max_speed_rad_s) * cal.gripper.per_deg
        return out

    def _max_accel(self) -> dict[int, float]:
        """Per joint servo address: its joint's acceleration limit in servo units per second squared."""
        arm, cal = self.arm, self.calibration
        accel = getattr(arm, "max_accel_rad_s2", None)
        if accel is None:
            return {}
        return {s.channel: math.degrees(float(a)) * s.per_deg for s, a in zip(cal.joints, accel)}

    def _hold_slew(self) -> float:
        """How much the playback rate may change in a frame: a hold from full speed takes HOLD_RAMP_S, or longer
        where a joint's acceleration limit needs it (the deceleration adds the rate's change times its speed)."""
        ramp = HOLD_RAMP_S
        accel = getattr(self.arm, "max_accel_rad_s2", None)
        if accel is not None:
            ramp = max(ramp, float(np.max(np.asarray(self.arm.max_speed_rad_s) / np.asarray(accel))))
        return FRAME_S / ramp

    def _play_follow(self, m: FollowMotion) -> StreamResult:
        """Feed the follower frame by frame from its leader (``m.teleop``): each frame the leader's pose (inside
        the limits and reach), reached by a step no longer than each joint's speed limit allows in the time since
        the last one (a quarter of it until the follower has caught up with the leader: the start ramp). Stops
        under control (the follower holds) on a stop request, Ctrl-C, a lost leader or link."""
        self._check_board_limits()
        q0, g0, declare, held = self._start_state()
        be, cal, arm, tp = self.backend, self.calibration, self.arm, m.teleop
        servos = cal.servos
        frames = commands = ramp_frames = 0
        start = [h if h is not None else declare.get(s.channel) for h, s in zip(held, servos)]

        def check_stop() -> None:
            if m.cancelled():
                raise StopRequested(f"{m.label}: stopped ({m.stop_reason})")

        be.on_wait = check_stop
        try:
            if declare:
                be.move(1, declare)
                commands += 1
            tp.start(q0, g0)
            q_cmd, g_cmd = np.array(q0, dtype=float), float(g0)
            vmax = np.asarray(arm.max_speed_rad_s, dtype=float)
            gmax = arm.gripper.max_speed_rad_s if arm.gripper is not None else 0.0
            framed = be.caps.timed_moves
            period = tp.period_s
            zones = arm.zones or None  # keep-out zones: every step checked (the motion between frames too)
            # held servos of both arms (the SO-101's wrist roll, --map joints): the follower's turns as far from
            # where its calibration holds it as the leader's is from its own, at no more than its speed
            lheld = {h.name for h in getattr(getattr(tp.leader, "calibration", None), "held", ())}
            held = [h for h in cal.held if h.name in lheld] if tp.map == "joints" else []
            held_now = be.held_steps() if held and hasattr(be, "held_steps") else {}
            h_cmd = {h.id: float(round(held_now.get(h.id, h.position_steps))) for h in held}
            ramping, last_sent = True, None
            t_next = time.monotonic()
            self._journaled = 0.0
            while True:
                check_stop()
                self._serve_calls()
                while (wait := t_next - time.monotonic()) > 0:
                    time.sleep(min(wait, 0.01))
                    check_stop()
                now = time.monotonic()
                # on schedule (a late frame is caught up at once), unless far behind (a stall): then from now
                t_next = t_next + period if t_next > now - FOLLOW_CATCH_UP_FRAMES * period else now + period
                target = tp.target()
                if framed and be.queued_frames() >= FOLLOW_QUEUE_FRAMES:
                    continue  # the board plays 20 ms frames: one more when it has room
                dt = FRAME_S if framed else (period if last_sent is None else min(now - last_sent, period))
                frac = RAMP_SPEED_FRACTION if ramping else 1.0
                lim = vmax * dt * frac
                q_new = q_cmd + np.clip(target.q_rad - q_cmd, -lim, lim)
                values = {}
                prev = cal.joints_to_values(q_cmd, check=False)
                for s, p, v in zip(cal.joints, prev, cal.joints_to_values(q_new, check=False)):
                    values[s.channel] = self._on_grid_toward(s, float(p), min(max(float(v), s.lo), s.hi))
                q_new = np.array([float(s.angle_rad(values[s.channel])) for s in cal.joints])
                zoned = zones is not None and first_violation(arm, zones, np.vstack([q_cmd, q_new])) is not None
                if zoned:  # the step would take a link into a keep-out zone: the joints hold (the gripper goes on)
                    q_new = q_cmd
                    for s, v in zip(cal.joints, cal.joints_to_values(q_cmd, check=False)):
                        values[s.channel] = self._on_grid(s, min(max(float(v), s.lo), s.hi))
                    target.clamped = "held at a keep-out zone" + (f" ({target.clamped})" if target.clamped else "")
                g_new = g_cmd
                if cal.gripper is not None and math.isfinite(target.gripper_rad) and math.isfinite(g_cmd):
                    glim = gmax * dt * frac
                    g_new = g_cmd + min(max(target.gripper_rad - g_cmd, -glim), glim)
                    gs = cal.gripper
                    want_g = min(max(float(gs.value(g_new)), gs.lo), gs.hi)
                    values[gs.channel] = self._on_grid_toward(gs, float(gs.value(g_cmd)), want_g)
                    g_new = float(gs.angle_rad(values[gs.channel]))
                for h in held:
                    d = target.held_steps.get(h.name)
                    if d is not None:
                        want = min(max(h.position_steps + d, 0.0), 4095.0)
                        hlim = h.speed_steps_s * dt * frac
                        step = math.trunc(min(max(want - h_cmd[h.id], -hlim), hlim))  # whole steps, within the limit
                        h_cmd[h.id] += step
                        values[h.id] = h_cmd[h.id]
                    target.held_cmd_steps[h.name] = h_cmd[h.id]
                t_cmd = time.monotonic()  # the command leaves for the servos now
                be.set_goal(values)
                commands += 1
                frames += 1
                ramp_frames += ramping
                last_sent = now
                q_cmd, g_cmd = q_new, g_new
                m._q_now, m._g_now = q_cmd, g_cmd
                measured = be.last_measured() if be.caps.measures_positions else {}
                tp.sent(t_cmd, q_cmd, g_cmd, target, measured)
                lag = np.abs(target.q_rad - q_cmd)
                if ramping and np.max(lag, initial=0.0) < math.radians(FOLLOW_RAMP_DONE_DEG):
                    ramping = tp.status.ramping = False
                elif not ramping and not zoned and tp.max_lag_rad is not None and np.max(lag) > tp.max_lag_rad:
                    i = int(np.argmax(lag))
                    raise MotionError(
                        f"{m.label}: joint {i + 1} ({arm.joint_names[i]}) lagged the leader by "
                        f"{math.degrees(lag[i]):.1f} deg, more than --max-lag-deg {math.degrees(tp.max_lag_rad):g} "
                        "(the leader moved faster than the follower's speed limits); the follower was stopped"
                    )
                if now - self._journaled >= JOURNAL_PERIOD_S:
                    self._journaled = now
                    vals = [values.get(s.channel, v) for s, v in zip(servos, start)]
                    if not any(v is None for v in vals[: arm.n]):
                        self._store_pose(vals, clean=False, hold_in_s=be.queued_frames() * FRAME_S)
        except BaseException:
            be.on_wait = None
            try:
                be.stop()
            except LinkError:
                pass
            raise
        finally:
            be.on_wait = None
        return StreamResult(frames=frames, commands=commands, ramp_frames=ramp_frames)

    @staticmethod
    def _start_moved(m: Motion) -> bool:
        """True if ``m`` was planned from the end of a motion that did not end there."""
        prev = m._after
        if prev is None or m._moves is None:
            return False
        if not prev._future.done():  # it ran in another thread, which hands over its outcome just after the board
            futures_wait([prev._future], timeout=BOARD_WAIT_S)
        return prev.replanned or not prev._future.done() or prev._future.exception() is not None

    def _journal(self, start: list, m: Motion | None = None) -> None:
        """Once a frame while playing: store, marked unclean, the pose the board would stop in if this program
        died now (what it was sent, played on for ``backend.runs_on_frames``; see ``armctl.state``)."""
        now = time.monotonic()
        player = self._player
        if player is None or now - self._journaled < JOURNAL_PERIOD_S:
            return
        self._journaled = now
        played = player.frames_played()
        # the board's watchdog runs from the last byte it heard: with the queue full the host may have been
        # quiet for a third of it already, and the board stops that much sooner than "now + watchdog"
        runs_on = max(0.0, self.backend.runs_on_frames - self.backend.silent_frames())
        frame = min(player.frames_sent, played + runs_on)
        if m is not None and m.program is not None:
            self._record_step(m, player, int(frame), "running")
        by_ch = player.values_at(frame)
        values = [by_ch.get(s.channel, v) for s, v in zip(self.calibration.servos, start)]
        if any(v is None for v in values[: self.arm.n]):
            return
        self._store_pose(values, clean=False, hold_in_s=(frame - played) * FRAME_S)
        now_ch = player.values_at(played)
        self._store_pose(
            [now_ch.get(s.channel, v) for s, v in zip(self.calibration.servos, start)], clean=False, live=True
        )

    def _record_step(self, m: Motion, player: Player, frame: int, status: str, *, force: bool = False) -> None:
        """Record (fsynced, so it survives a power cut) the program step that sent frame ``frame`` plays, when
        it changes (``force``: always, e.g. at the end, with ``status``)."""
        pr = m.program
        part, idx = player.step_at(frame) if player.parts else (0, 0)
        if len(player.parts) > 1 and part == 0:  # the ramp to the start
            k = pr.first_step
        else:
            k = max(pr.first_step, idx - pr.offset)
        if k == m._step_recorded and not force:
            return
        m._step_recorded = k
        start = restart_step_start(pr.plan.trajectory, k)
        rec = RunRecord(pr.program, pr.digest, k, pr.steps, status, float(pr.plan.trajectory.gripper_rad[start]))
        try:
            self._runs.save(rec)
        except OSError:
            pass

    def _store_pose(self, values, *, clean: bool, hold_in_s: float = 0.0, live: bool = False) -> None:
        """Store the pose servo ``values`` mean (best effort: the state folder was writable at connect, and the
        motion matters more than its record); ``live``: publish it as the pose played now (for watchers)."""
        q = [float(s.angle_rad(v)) for s, v in zip(self.calibration.joints, values)]  # no fk: this runs 50 Hz
        grip = self.calibration.gripper
        g = (
            math.nan
            if grip is None or len(values) <= self.arm.n or values[self.arm.n] is None
            else grip.angle_rad(values[self.arm.n])
        )
        try:
            if live:
                self._live.save(q, float(g), values, clean=clean)
            else:
                self._store.save(q, float(g), values, clean=clean, durable=clean, hold_in_s=hold_in_s)
        except OSError:
            pass

    def _already_there(self, pulses: Pulses, held, declare: dict) -> bool:
        """True if the board holds (or is about to be set to) exactly the first pulses of ``pulses``."""
        now = {
            s.channel: (h if h is not None else declare.get(s.channel)) for h, s in zip(held, self.calibration.servos)
        }
        return all(
            not math.isfinite(v) or (now.get(ch) is not None and abs(now[ch] - v) < 1e-6)
            for ch, v in zip(pulses.channels, pulses.us[0])
        )

    def _ramp(self, q0, g0: float, traj: Trajectory, arm=None) -> Trajectory | None:
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
                f"({', '.join(f'{math.degrees(v):.1f}' for v in q0)} deg); move it by hand or check the calibration"
            )
        try:
            plan = motion.plan_moves(
                arm or self.arm,
                moves,
                q_start=q0,
                gripper_start=g0 if math.isfinite(g0) else None,
                period_s=traj.period_s,
            )
        except MotionError as exc:  # the same error (a ZoneError stays one), said to be the ramp's
            raise motion._located(exc, "cannot ramp from the current pose to the start") from None
        t = plan.trajectory
        t.steps = ["ramp to start"]
        t.step = np.zeros(len(t.t_s), dtype=int)
        return t

    def _check_board_limits(self) -> None:
        """The board's stored pulse limits against the calibration, before anything moves: a channel at the
        factory range (never calibrated) gets the calibration's; any other difference raises
        BoardLimitsError (exit 4) naming the channel, both ranges and the fix."""
        info = self.backend.info
        if not self.backend.caps.stores_limits or info is None or not info.limits_us:
            return
        cal = self.calibration
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
                self.backend.set_limits(s.channel, *want)
                continue
            raise BoardLimitsError(
                f"the board stores {have[0]:g}..{have[1]:g} us for channel {s.channel} ({s.name}) but the calibration "
                f"{cal.source} says {want[0]:g}..{want[1]:g} us: run 'armctl calibrate --push-limits' to write this "
                "calibration's limits to the board, or pass the calibration that matches it"
            )

    def _remember(self) -> None:
        """Store the pose the board holds as this port's last pose, clean (for a board that forgets it on
        reset). Servos without pulses: nothing is stored, the journal of an unclean end stays."""
        try:
            held = self._held()
        except LinkError:
            return
        if not any(v is None for v in held[: self.arm.n]):
            self._store_pose(held, clean=True)
            self._store_pose(held, clean=True, live=True)

    # --- servos one by one (calibration) ---------------------------------------------------------------

    def servo_values(self) -> list[float]:
        """What each servo (joints, then gripper) holds, in servo units (us); servos without pulses are first
        set to the stored pose (else home), clamped into their calibrated range. For calibration."""
        self._check_open()
        with self._board():
            _, _, declare, held = self._start_state(check=False, clamp=True)
            if declare:
                self.backend.move(1, declare)
            return [h if h is not None else declare[s.channel] for h, s in zip(held, self.calibration.servos)]

    def move_servo(self, index: int, value: float, frames: int) -> None:
        """Queue a move of servo ``index`` (joints 0..n-1, then the gripper) to ``value`` (us, 500..2500) over
        ``frames`` 20 ms frames, unchecked against the calibration (it is being made): the caller keeps it
        under the joint's speed limit (``armctl.calibrate.Nudger`` does)."""
        self._check_open()
        servo = self.calibration.servos[index]
        lo, hi = servo.full_range
        if not (lo <= value <= hi) or frames < 1:
            raise BadInputError(f"servo value {value!r} outside {lo:g}..{hi:g} {servo.unit}, or {frames} frames")
        with self._board():
            self.backend.move(int(frames), {self.calibration.servos[index].channel: float(value)})

    def release(self) -> None:
        """Let the servos go limp so the arm can be guided by hand (bus servos: torque off). The next motion
        starts from wherever the arm was left, measured. BadInputError on boards that cannot do it."""
        self._check_open()
        if not self.backend.caps.releases:
            raise BadInputError(
                f"the {self.backend.name} backend cannot let its servos go limp and still say where they are"
            )
        with self._board():
            self.backend.release()

    def hold_stored_pose(self) -> dict[int, float]:
        """Servos without pulses (a board that reset when its port opened: an Uno) are set to the pose stored
        for this port when the arm was last left: they hold where the arm was, nothing moves. Returns what was
        set ({address: value}); {} when every servo has its pulses, or no pose is stored (home is not set then:
        that would move the arm)."""
        self._check_open()
        if self._store.load() is None:
            return {}
        with self._board():
            _, _, declare, _ = self._start_state(check=False, clamp=True)
            if declare:
                self.backend.move(1, declare)
                self.backend.drain()
        return declare

    def board_status(self):
        """The board's status (``armctl.bus.backend.BoardStatus``: values it outputs, queue, counters), asked
        once no motion plays."""
        self._check_open()
        with self._board():
            return self.backend.status()

    def hold(self) -> None:
        """Drop whatever the board still has queued and hold the pulses it outputs now."""
        with self._board():
            self.backend.stop()

    def settle(self) -> None:
        """Wait until the board has played everything queued."""
        with self._board():
            self.backend.drain()

    def board_limits(self) -> list[tuple[float, float]] | None:
        """Each servo's pulse limits (us) stored on the board, joints then gripper; None if the board keeps none."""
        self._check_open()
        info = self.backend.info
        if not self.backend.caps.stores_limits or info is None or not info.limits_us:
            return None
        return [tuple(float(v) for v in info.limits_us[s.channel]) for s in self.calibration.servos]

    def set_board_limits(self, index: int, lo_us: float, hi_us: float) -> None:
        """Store servo ``index``'s pulse limits on the board (BoardLimitsError if it refuses them)."""
        with self._board():
            self.backend.set_limits(self.calibration.servos[index].channel, lo_us, hi_us)

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
        self.calibration = self.backend.address(cal)
        self.backend.use_calibration(self.calibration)
        if isinstance(getattr(self.backend, "cal", None), Calibration):  # e.g. clamped to the servos' own limits
            self.calibration = self.backend.cal
        if path is not None:
            self.calibration_path = Path(path)

    # --- closing -------------------------------------------------------------------------------------------

    def _check_open(self) -> None:
        if self._closed:
            raise LinkError(f"the robot on {self.port} is closed")

    def close(self) -> None:
        """Stop any motion under control (the arm holds its pose), remember the pose, release the port."""
        if self._closed:
            return
        self._finalizer.detach()
        self.stop("closing")
        with self._cv:
            self._closed = True
            self._cv.notify_all()
        worker = self._worker
        if worker is not None and worker is not threading.current_thread():
            worker.join(timeout=BOARD_WAIT_S)
        try:
            self._take_board(timeout_s=2.0)
            owned = True
        except LinkError:
            owned = False
        try:
            if owned:
                self._remember()
            self.backend.close()
        finally:
            self._store.close()
            self._runs.close()
            self._live.close()
            if owned:
                self._give_board()
            if self._lock is not None:
                self._lock.release()


# The board access armctl's own tools use lives in the base class, so help(armctl.Robot) lists the student API
# first and these after it ("inherited from _BoardAccess"); they stay where they are written, and keep working.
_BOARD_ACCESS = (
    "call",
    "commanded_pose",
    "servo_values",
    "move_servo",
    "board_status",
    "hold",
    "settle",
    "board_limits",
    "set_board_limits",
    "push_limits",
    "use_calibration",
    "sample",
)
for _name in _BOARD_ACCESS:
    setattr(_BoardAccess, _name, Robot.__dict__[_name])
    delattr(Robot, _name)
del _name
