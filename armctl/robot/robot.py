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
stored for the port when the arm was last left (``armctl.robot.state``), else the home pose; then a slow
joint ramp (a quarter of each speed limit) takes the arm to where the motion starts.

Motions run one at a time in the order given. ``wait=False`` returns a ``Motion`` at once (the plan is
checked before it returns); ``stop()`` is safe from any thread or a signal handler and stops under
control within a frame plus the board's queue. All units SI: metres, radians, seconds.

The Robot is a facade over collaborators with one job each: ``armctl.robot.opening`` (what an arm, a port and a
calibration mean), ``lifecycle`` (the port lock, finalizers, close at exit), ``runner`` (the one
thread that owns the board and plays the motions), ``armctl.robot.pose`` (the pose as read from the board),
``journal`` (the crash journal), ``armctl.model.validate`` (edge checks), ``handles`` (``Motion``).
"""

from __future__ import annotations

import math
import weakref
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import numpy as np

from armctl import motion
from armctl.bus.backend import Backend, board_limits_us  # noqa: F401 - board_limits_us: re-exported
from armctl.bus.portlock import PortLock
from armctl.calibration.servo import Calibration
from armctl.errors import BadInputError
from armctl.model import validate
from armctl.model.arm import Arm
from armctl.motion.trajectory import Trajectory
from armctl.robot.boardaccess import BoardAccess
from armctl.robot.camera import attach_camera
from armctl.robot.handles import FollowMotion, Motion, MoveResult, ProgramRun  # noqa: F401 - re-exported
from armctl.robot.interrupts import one_line_interrupt, watch_ctrl_c, watch_errors
from armctl.robot.journal import Journal
from armctl.robot.lifecycle import BOARD_WAIT_S, OPEN_ROBOTS, check_open, let_go, open_board
from armctl.robot.moves import PAYLOAD_PROPERTIES, gripper_move, joint_moves_to, line_move, standing
from armctl.robot.opening import DEFAULT_ARM, default_port, resolve, sim_port_for  # noqa: F401 - re-exported
from armctl.robot.pose import BoardPose, Pose, assumed_pose
from armctl.robot.restart import prepare_run as plan_run
from armctl.robot.runcontrol import RunControl, check_override
from armctl.robot.runner import Runner
from armctl.robot.state import PoseStore
from armctl.robot.stream import Pulses, prepare
from armctl.robot.watch import Watch  # noqa: F401 - re-exported

HOME_SPEED_FRACTION = 0.25


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
    assume_pose=None,
    camera: str | None = None,
    camera_file: str | Path | None = None,
) -> Robot:
    """Open the arm and return its ``Robot`` (use it in a ``with`` block, or call ``close()``).

    - ``arm``: a preset name (``seed-2link``, ``seed-3link``), an arm YAML file, a URDF (``FILE.urdf``, or
      ``FILE.urdf#TOOL_LINK``; see ``armctl.model.urdf.derive``), or an ``Arm``.
    - ``port``: a device path (``/dev/ttyACM0``) or any pyserial URL (``socket://host:7000``,
      ``spy://...``, ``armsim://?rate=20``, ``feetechsim://``); None: the backend's simulated board, which
      keeps its pose between runs.
    - ``backend``: the board's protocol: ``"armctl"`` (our firmware or the simulator), ``"firmata"`` (stock
      StandardFirmata, 57600 baud, device paths only) or ``"feetech"`` (Feetech STS/SCS bus servos, 1 Mbaud);
      None: a calibration in steps, the arm's servos' bus (``Drive.protocol``: "dynamixel", else "feetech"); "armctl"
    - ``calibration``: a calibration file or ``Calibration``; default: ``./calibration/<arm>.yaml``, the
      user's calibration folder, else the example shipped with the preset. LeRobot's calibration is used as
      it is: ``"lerobot:ID"`` (found where LeRobot keeps it) or its ``.json`` file (``armctl.calibration.lerobot``).
    - ``wire_log``: a file that receives every byte sent and received, with times.
    - ``watchdog_s``: our firmware holds its servos and drops its queue after this long without a word
      from us (0 turns it off); ``calibrating``: Firmata servos are attached with 544..2500 us.
    - ``progress(fraction, step, seconds_left)``: called a few times a second while a motion plays.
    - ``assume_pose``: where the arm stands, in your word: ``"home"`` or the joint angles (rad; one more value:
      the gripper's angle). Needed when the pose is unknown: servos that lost their pulses (an Uno resets when
      its port opens) on a board that cannot read where they are (PWM servos), with no stored pose armctl can
      trust (``robot.pose_unknown`` says why). Without it the first motion raises PoseUnknownError and nothing
      moves. It wins over a stored pose; servos that still hold their pulses keep them.
    - ``camera``: a camera that sees the arm (``0``, a folder of pictures, ``simcam://``: ``armctl.robot.camera``),
      with its intrinsics from ``camera_file`` (default: the one ``armctl camera calibrate`` saved): ``robot.find``,
      programs' ``pick: {marker: ID}``, and an unknown pose seen by it rather than assumed.

    The port is opened exclusively: a second ``connect`` to it (from this or any other process) raises
    LinkError naming the holder. Errors: ConfigError (files), BadInputError, LinkError.
    """
    watch_errors()  # at a prompt: armctl's errors as one line and the user's own frames
    arm_obj, cal, cal_path, cls, url = resolve(arm, port, backend, calibration)
    assumed = assumed_pose(arm_obj, assume_pose)  # a bad one fails before the port is opened
    lock, store, be, addressed = open_board(
        url, cls, cal, arm_obj, wire_log=wire_log, watchdog_s=watchdog_s, calibrating=calibrating
    )
    robot = Robot(
        arm_obj,
        addressed,
        be,
        url,
        calibration_path=cal_path,
        lock=lock,
        progress=progress,
        store=store,
        assumed=assumed,
    )
    if camera is not None:
        attach_camera(robot, camera, camera_file, seen_pose=assume_pose is None)
    return robot


class Robot:
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
    connect), ``progress`` (callback or None), ``board`` (``armctl.robot.boardaccess.BoardAccess``).

    Board access, for armctl's own tools (calibration, the pendant, the web page) and tests, each the same method
    of ``robot.board``: ``call(fn)``, ``commanded_pose()``, ``sample()``, ``servo_values()``, ``move_servo()``,
    ``board_status()``, ``hold()``, ``settle()``, ``board_limits()``, ``set_board_limits()``, ``push_limits()``,
    ``use_calibration()``, ``hold_stored_pose()``."""

    payload_kg, torque_check = PAYLOAD_PROPERTIES  # what the jaws carry (kg), the torque check: armctl.robot.moves

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
        assumed=None,
    ):
        self.arm, self.calibration, self.backend, self.port = arm, calibration, backend, port
        self.camera = None  #: the camera that sees the arm (``armctl.robot.camera.ArmCamera``), or None
        self.calibration_path, self.progress = calibration_path, progress
        self._lock, self._closed = lock, False
        #: Feed hold, resume and speed override of whatever plays (``pause``, ``resume``, ``speed_override``).
        self.control = RunControl()
        # its collaborators: the state files, the pose as read from the board, the thread that owns the board
        self._journal = Journal(self, port, store)
        self._pose = BoardPose(self, self._journal.store, assumed)
        #: The one thread that owns the board and plays the motions (``armctl.robot.runner``), for armctl's modules.
        self.runner = Runner(self, self._pose, self._journal)
        #: The board itself, below the student API (``armctl.robot.boardaccess``); its methods are the Robot's too.
        self.board = BoardAccess(self, self.runner, self._pose)
        #: One line if the last run on this port ended without a clean stop (it was killed, the PC lost
        #: power, the USB link dropped mid-motion): the pose it journaled is where this run starts from.
        self.recovered: str | None = self._journal.recovered()
        OPEN_ROBOTS.add(self)  # closed at exit if the script forgot to
        # A Robot nobody holds any more (a cell run again) lets go of its port; not at exit (_close_at_exit stops first)
        store, live, runs = self._journal.files
        self._finalizer = weakref.finalize(self, let_go, backend, store, lock, live, runs)
        self._finalizer.atexit = False

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

    # --- where the arm is ------------------------------------------------------------------------------

    def where(self, *, settle: bool = False) -> Pose:
        """Where the arm is now (a ``Pose``): measured if the board can measure (the simulator, bus
        servos), else the pulses it outputs (or was last sent). ``settle``: first wait (up to 10 s) for
        the servos to reach their pulses. While a motion plays: the pose of the frame being played."""
        self._check_open()
        return self.runner.call(lambda: self._pose.idle(settle), lambda: self._pose.playing(self.runner.player))

    @property
    def pose_unknown(self) -> str:
        """Why the pose is unknown ("" when it is known): servos without pulses on a board that cannot read where
        they are, and no stored pose to trust (the file and what is wrong with it). Until ``assume_pose``, every
        motion raises PoseUnknownError and nothing moves."""
        self._check_open()
        return self.runner.board(self._pose.unknown)

    def assume_pose(self, pose="home") -> None:
        """Your word that the arm stands at ``pose`` (``"home"`` or the joint angles, rad; one more value: the
        gripper's angle): servos without pulses are set to it by the next motion, which ramps from there at a
        quarter of each speed limit. BadInputError for a pose outside the limits."""
        self._check_open()
        self._pose.assumed = assumed_pose(self.arm, pose)

    def plot(self, *, title: str = ""):
        """A matplotlib figure of the arm where it is now over its reach (an arm on a base: a top view at the
        tool's height beside a side view): shown inline in Jupyter, ``.savefig("arm.png")`` writes it.
        Needs matplotlib (``pip install -e '.[plot]'``)."""
        from armctl.motion.plot import pose_figure

        return pose_figure(self.arm, self.where().q_rad, title=title)

    # --- planning ------------------------------------------------------------------------------------------

    def plan_to(
        self,
        x: float,
        y: float,
        z: float | None = None,
        *,
        phi: float | None = None,
        speed: float | None = None,
        accel: float | None = None,
        roll: float | None = None,
    ) -> Trajectory:
        """The straight-line trajectory ``move_to`` would play, from where the arm is (or will be, after the
        motions still to play), without moving: for previews and plots. Raises what ``move_to`` raises."""
        self._check_open()
        return self._plan([line_move(self.arm, x, y, z, phi, speed, accel, None, roll=roll)])[0]

    def _plan(self, moves) -> tuple[Trajectory, Pulses, Motion | None]:
        """Plan ``moves`` (a list, or a function of the start pose giving one) from where the arm will be when
        they start; with the motion they follow (None: planned from the board's pose)."""
        q0, g0, after = self.runner.expected_start()
        return (*self.runner.plan(moves, q0, g0), after)

    # --- moving ------------------------------------------------------------------------------------------

    @one_line_interrupt
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
        roll: float | None = None,
    ) -> Motion:
        """Move the tool point to (``x``, ``y``) m, or (``x``, ``y``, ``z``) on an arm with a rotating base (z
        is required there and refused on a planar arm): in a straight line at ``speed`` m/s (default 0.1) with
        ``accel`` m/s^2 (default 0.5), slowed wherever a joint would pass its speed limit; ``path="joint"``
        instead moves every joint at once to the IK pose nearest the start. ``phi``: the tool angle (rad) at
        the target, 3-link arms. ``blend`` (m): with ``wait=False``, consecutive blended moves (lines, joint
        moves) are played as one motion that passes each shared corner within that distance without stopping
        (it rests only at the last move queued; see docs/programs.md, "Blending"). Raises UnreachableError (with
        ``shortfall_m``), JointLimitError (also PulseLimitError), MotionError, BadInputError before anything
        moves; LinkError if the link fails. ``reach_q`` (rad, lines): the pose the caller solved for the target
        (``motion.solve_pose``), checked instead of solving the end again. ``roll`` (rad, arms with a wrist roll):
        the jaws turned about the tool axis (0: the URDF's zero), taken at the whole turn nearest the roll the arm
        has inside its limits; None keeps the roll (no surprise turns)."""
        self._check_open()
        gen = self.runner.stop_gen
        if path not in ("line", "joint"):
            raise BadInputError(f"path: 'line' or 'joint', got {path!r}")
        line = line_move(self.arm, x, y, z, phi, speed, accel, label, blend, roll)
        if reach_q is not None:
            line = replace(line, reach_q_rad=tuple(float(v) for v in reach_q))
        if path == "line":
            return self._go([line], line.label, gen, wait)
        joint_label = label or line.label.replace("move to", "joint move to")
        joint_move = joint_moves_to(self.arm, line, joint_label)
        if line.blend_m > 0:  # solved now, from where it starts: a blended chain is planned from its moves
            return self._go(joint_move(self.runner.expected_start()[0]), joint_label, gen, wait)
        return self._go(joint_move, joint_label, gen, wait)

    @one_line_interrupt
    def move_joints(
        self,
        q,
        *,
        degrees: bool = False,
        speed_fraction: float = 0.5,
        wait: bool = True,
        blend: float | None = None,
    ) -> Motion:
        """Move every joint at once to ``q`` (rad, or degrees with ``degrees=True``), all starting and
        stopping together, at ``speed_fraction`` (0..1] of the joint speed limits. ``blend`` (m) as for
        ``move_to``. JointLimitError outside the limits, BadInputError for the wrong number of angles."""
        self._check_open()
        gen = self.runner.stop_gen
        q_rad = validate.joint_angles(self.arm, q, degrees=degrees)
        speed_fraction = validate.fraction(speed_fraction, "speed_fraction")
        deg = " ".join(f"{math.degrees(v):g}" for v in q_rad)
        kw = {} if blend is None else {"blend_m": validate.blend(blend)}
        move = motion.JointMove(tuple(q_rad), speed_fraction=speed_fraction, label=f"joint move to {deg} deg", **kw)
        return self._go([move], move.label, gen, wait)

    @one_line_interrupt
    def home(self, *, wait: bool = True) -> Motion:
        """Move slowly (a quarter of each joint's speed limit) to the arm's home pose."""
        self._check_open()
        gen = self.runner.stop_gen
        move = motion.JointMove(tuple(self.arm.home_rad), speed_fraction=HOME_SPEED_FRACTION, label="home")
        return self._go([move], "home", gen, wait)

    @one_line_interrupt
    def gripper(self, state: str | float, *, degrees: bool = False, wait: bool = True) -> Motion:
        """Open or close the gripper (``"open"``, ``"close"``/``"closed"``) or turn it to an angle (rad, or
        degrees with ``degrees=True``), at its speed limit; the arm holds still."""
        self._check_open()
        gen = self.runner.stop_gen
        move = gripper_move(self.arm, state, degrees)
        return self._go([move], move.label, gen, wait)

    @one_line_interrupt
    def run(self, program, *, from_step: int | str | None = None, resume: bool = False, wait: bool = True) -> Motion:
        """Run a program: a YAML file (path), a parsed ``armctl.program.Program``, a plan made by
        ``armctl.program.plan_program``, or a ``ProgramRun`` from ``prepare_run``. It is planned whole first
        (ConfigError, MotionError name the file, line and step); then the arm ramps from where it is to the
        program's start and plays it. Its progress (the step playing, the gripper) is recorded in the state
        folder as it plays, so ``resume=True`` continues an interrupted run of the same program at the step it
        stopped in, with the gripper as it was; ``from_step`` starts at any step (see ``prepare_run``)."""
        self._check_open()
        gen = self.runner.stop_gen
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
        self._check_open()
        runner = self.runner
        find = None if self.camera is None else self.camera.find
        return plan_run(
            program,
            self.arm,
            self.port,
            self._journal.runs,
            runner.expected_start,
            from_step=from_step,
            resume=resume,
            find=find,
        )

    def find(self, marker: int, *, size: float = 0.030):
        """Where the part carrying ArUco marker ``marker`` (its black square ``size`` m) lies on the table as the
        camera sees it now: a ``Part`` (``x_m``, ``y_m``, ``z_m``, ``yaw_rad``, ``point_m``; base frame). BadInputError
        without a camera (``connect(camera=)``) or when the marker is not in view."""
        self._check_open()
        if self.camera is None:
            raise BadInputError("find: this robot has no camera: connect(..., camera='simcam://' or 0 or a folder)")
        return self.camera.find(int(marker), validate.positive(size, "size"))

    def last_run(self):
        """The progress record of the last program run on this port (``armctl.robot.state.RunRecord``), or None."""
        return self._journal.runs.load()

    def follow(
        self,
        source,
        *,
        map: str | None = None,  # noqa: A002 - the name the issue and the CLI give it
        rate_hz: float | None = None,
        scale: float | None = None,
        offset=None,
        max_lag_deg: float | None = None,
        on_frame=None,
    ) -> FollowMotion:
        """Follow a leader arm (``armctl.open_leader``) until stopped, or a stream of end-effector targets (an
        iterable or generator of ``armctl.ToolTarget`` or dicts with keys x, y, z[, pitch, roll, gripper]: m,
        rad, gripper 0..1; missing: keep) until it ends: returns at once with the ``Motion`` (``wait()``,
        ``cancel()``, ``robot.stop()``; its ``teleop.status`` is live). Every ``1/rate_hz`` s (a leader: 50, tool
        targets: 100) the leader is read, or the next target taken, and the follower stepped towards the pose it
        means (``map``: ``"joints"``, the same model joint to joint; ``"tool"``: the tool point, times ``scale``
        (default the reach ratio) plus ``offset`` (m), about the shoulders; tool targets: solved nearest the
        last pose, the roll continuous; see ``armctl.teleop.follow``), never faster than its joint speed limits
        and never outside its limits or reach (a pose it cannot take is clamped to the nearest it can, and marked).
        It starts with a slow ramp (a quarter of the speed limits) until it has caught up with the leader.
        ``max_lag_deg``: stop (MotionError) if a joint falls further behind than this after the ramp.
        ``on_frame(t_s, q_rad, gripper_rad, target, measured)`` is called after each command (recording).
        A lost leader stops the follower under control: ``wait()`` raises LinkError naming the leader servo."""
        from armctl.teleop.follow import follow_source

        self._check_open()
        gen = self.runner.stop_gen
        kw = {"map": map, "rate_hz": rate_hz, "scale": scale, "offset_m": offset, "max_lag_deg": max_lag_deg}
        teleop, what = follow_source(source, self.arm, on_frame=on_frame, **kw)
        traj = standing(*self.runner.expected_start()[:2], "follow")
        m = FollowMotion(self, f"follow {what}", traj, prepare(traj, self.calibration), gen, teleop)
        self.runner.submit(m)
        return m

    def _go(self, moves, label: str, gen: int, wait: bool) -> Motion:
        traj, pulses, after = self._plan(moves)
        return self._submit(label, traj, pulses, gen, wait, moves=moves, after=after)

    def _submit(
        self, label: str, traj: Trajectory, pulses: Pulses, gen: int, wait: bool, *, moves=None, after=None, arm=None
    ) -> Motion:
        m = Motion(self, label, traj, pulses, gen, moves=moves, after=after)
        m.zoned_arm = arm
        return self._enqueue(m, wait)

    def _enqueue(self, m: Motion, wait: bool) -> Motion:
        idle = self.runner.submit(m)  # the runner plays it, after the motions before it
        if not (wait and idle):
            watch_ctrl_c()  # it plays in the background: Ctrl-C must reach it too
        if wait and self.runner.on_runner():  # from a done callback: on the runner thread itself
            self.runner.play_here(m)
        if wait:
            m.wait()  # Ctrl-C here stops the arm under control (Motion.wait)
        return m

    # --- stopping, holding --------------------------------------------------------------------------------

    def stop(self, reason: str = "stop requested") -> None:
        """Controlled stop, from any thread or a signal handler: the motion playing stops within a frame
        plus the board's queue and the arm holds its pose; motions still queued are dropped. Their
        ``wait()`` raises StopRequested. Motions asked for after this call run as usual (a feed hold is
        ended too)."""
        self.runner.stop(reason)
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
        return self.runner.moving

    def release(self) -> None:
        """Let the servos go limp so the arm can be guided by hand (bus servos: torque off). The next motion
        starts from wherever the arm was left, measured. BadInputError on boards that cannot do it."""
        self._check_open()
        if not self.backend.caps.releases:
            raise BadInputError(
                f"the {self.backend.name} backend cannot let its servos go limp and still say where they are"
            )
        self.runner.board(self.backend.release)

    # --- board access, below the student API (armctl's own tools, tests): the methods of ``robot.board`` -----------

    def call(self, fn: Callable[[Backend], object], *, timeout_s: float = BOARD_WAIT_S):
        """Run ``fn(backend)`` with the board to itself, between two frames if a motion plays (``board.call``)."""
        return self.board.call(fn, timeout_s=timeout_s)

    def commanded_pose(self) -> Pose:
        """The pose the arm is commanded to be in once the motions still to play end (``board.commanded_pose``)."""
        return self.board.commanded_pose()

    def sample(self) -> tuple[np.ndarray, float, np.ndarray | None, float, int]:
        """What the arm is commanded and measured to do now, for recording (``board.sample``)."""
        return self.board.sample()

    def servo_values(self) -> list[float]:
        """What each servo holds, in servo units, for calibration (``board.servo_values``)."""
        return self.board.servo_values()

    def move_servo(self, index: int, value: float, frames: int) -> None:
        """Move servo ``index`` to ``value`` over ``frames`` frames, uncalibrated (``board.move_servo``)."""
        self.board.move_servo(index, value, frames)

    def board_status(self):
        """The board's status, asked once no motion plays (``board.board_status``)."""
        return self.board.board_status()

    def hold(self) -> None:
        """Drop what the board has queued and hold the pulses it outputs now (``board.hold``)."""
        self.board.hold()

    def settle(self) -> None:
        """Wait until the board has played everything queued (``board.settle``)."""
        self.board.settle()

    def board_limits(self) -> list[tuple[float, float]] | None:
        """Each servo's pulse limits (us) stored on the board, or None (``board.board_limits``)."""
        return self.board.board_limits()

    def set_board_limits(self, index: int, lo_us: float, hi_us: float) -> None:
        """Store servo ``index``'s pulse limits on the board (``board.set_board_limits``)."""
        self.board.set_board_limits(index, lo_us, hi_us)

    def push_limits(self) -> list[tuple[str, int, float, float]]:
        """Write every servo's calibrated range to the board (``board.push_limits``)."""
        return self.board.push_limits()

    def use_calibration(self, cal: Calibration, path: Path | None = None) -> None:
        """Drive the servos by ``cal`` from now on (``board.use_calibration``)."""
        self.board.use_calibration(cal, path)

    def hold_stored_pose(self) -> dict[int, float]:
        """Servos without pulses set to the pose stored for this port; nothing moves (``board.hold_stored_pose``)."""
        return self.board.hold_stored_pose()

    # --- closing -------------------------------------------------------------------------------------------

    @property
    def closed(self) -> bool:
        """True once ``close()`` was called."""
        return self._closed

    def _check_open(self) -> None:
        check_open(self)

    def close(self) -> None:
        """Stop any motion under control (the arm holds its pose), remember the pose, release the port."""
        if self._closed:
            return
        self._finalizer.detach()
        self.stop("closing")
        self._closed = True
        owned = self.runner.close(BOARD_WAIT_S)  # the motions queued end as stopped; then the board is ours
        try:
            if owned:
                self.runner.remember()
            self.backend.close()
        finally:
            self._journal.close()
            if self._lock is not None:
                self._lock.release()
            if self.camera is not None:
                self.camera.close()
