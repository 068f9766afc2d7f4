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
import sys
import weakref
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import numpy as np

from armctl import motion
from armctl.bus.backend import Backend, board_limits_us  # noqa: F401 - board_limits_us: re-exported
from armctl.bus.portlock import PortLock
from armctl.calibration.servo import Calibration
from armctl.errors import BadInputError, LinkError
from armctl.model import validate
from armctl.model.arm import Arm
from armctl.motion.trajectory import Trajectory
from armctl.robot.boardaccess import _BoardAccess
from armctl.robot.handles import FollowMotion, Motion, MoveResult, ProgramRun  # noqa: F401 - re-exported
from armctl.robot.interrupts import _one_line_interrupt, _watch_ctrl_c, _watch_errors
from armctl.robot.journal import Journal
from armctl.robot.lifecycle import _OPEN, BOARD_WAIT_S, _acquire, _let_a_dead_run_finish, _let_go
from armctl.robot.opening import DEFAULT_ARM, _resolve, default_port, sim_port_for  # noqa: F401 - re-exported
from armctl.robot.pose import BoardPose, Pose, assumed_pose
from armctl.robot.restart import gripper_word
from armctl.robot.restart import prepare_run as _prepare_run
from armctl.robot.runcontrol import RunControl, check_override
from armctl.robot.runner import Runner
from armctl.robot.state import PoseStore
from armctl.robot.stream import Pulses, prepare
from armctl.robot.watch import Watch  # noqa: F401 - re-exported

HOME_SPEED_FRACTION = 0.25
# help(armctl.Robot) lists the board access as "inherited from _BoardAccess", after the student API, as it did
# when it was written here
_BoardAccess.__module__ = __name__


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
) -> Robot:
    """Open the arm and return its ``Robot`` (use it in a ``with`` block, or call ``close()``).

    - ``arm``: a preset name (``seed-2link``, ``seed-3link``), an arm YAML file, a URDF (``FILE.urdf``, or
      ``FILE.urdf#TOOL_LINK``; see ``armctl.model.urdf.derive``), or an ``Arm``.
    - ``port``: a device path (``/dev/ttyACM0``) or any pyserial URL (``socket://host:7000``,
      ``spy://...``, ``armsim://?rate=20``, ``feetechsim://``); None: the backend's simulated board, which
      keeps its pose between runs.
    - ``backend``: the board's protocol: ``"armctl"`` (our firmware or the simulator), ``"firmata"`` (stock
      StandardFirmata, 57600 baud, device paths only) or ``"feetech"`` (Feetech STS/SCS bus servos, 1 Mbaud);
      None: ``"feetech"`` if the calibration is in steps (bus servos), else ``"armctl"``.
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

    The port is opened exclusively: a second ``connect`` to it (from this or any other process) raises
    LinkError naming the holder. Errors: ConfigError (files), BadInputError, LinkError.
    """
    _watch_errors()  # at a prompt: armctl's errors as one line and the user's own frames
    arm_obj, cal, cal_path, cls, url = _resolve(arm, port, backend, calibration)
    assumed = assumed_pose(arm_obj, assume_pose)  # a bad one fails before the port is opened
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
        # what this board can send (Firmata: no pulse below 544 us): refused before the port opens, said once open
        addressed, narrowed = be.fit_calibration(addressed)
        be.open()
        if be.cal is not None:  # e.g. clamped to bus servos' own limits
            addressed = be.cal
        for note in (*narrowed, *be.notes):
            print(f"armctl: note: {note}", file=sys.stderr)
    except BaseException:
        store.close()
        lock.release()
        raise
    robot = Robot(arm_obj, addressed, be, url, calibration_path=cal_path, lock=lock, progress=progress, store=store)
    robot._pose.assumed = assumed
    return robot


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
        self._closed = False
        #: Feed hold, resume and speed override of whatever plays (``pause``, ``resume``, ``speed_override``).
        self.control = RunControl()
        # its collaborators: the state files, the pose as read from the board, the thread that owns the board
        self._journal = Journal(self, port, store)
        self._pose = BoardPose(self, self._journal.store)
        self._runner = Runner(self, self._pose, self._journal)
        #: One line if the last run on this port ended without a clean stop (it was killed, the PC lost
        #: power, the USB link dropped mid-motion): the pose it journaled is where this run starts from.
        self.recovered: str | None = self._journal.recovered()
        _OPEN.add(self)  # closed at exit if the script forgot to
        # A Robot nobody holds any more (a notebook cell run again, a variable reassigned) lets go of its port.
        # Not at exit: _close_at_exit stops a motion first.
        store, live, runs = self._journal.files
        self._finalizer = weakref.finalize(self, _let_go, backend, store, lock, live, runs)
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
        return self._runner.call(lambda: self._pose.idle(settle), lambda: self._pose.playing(self._runner.player))

    @property
    def pose_unknown(self) -> str:
        """Why the pose is unknown ("" when it is known): servos without pulses on a board that cannot read where
        they are, and no stored pose to trust (the file and what is wrong with it). Until ``assume_pose``, every
        motion raises PoseUnknownError and nothing moves."""
        self._check_open()
        return self._runner.board(self._pose.unknown)

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
    ) -> Trajectory:
        """The straight-line trajectory ``move_to`` would play, from where the arm is (or will be, after the
        motions still to play), without moving: for previews and plots. Raises what ``move_to`` raises."""
        self._check_open()
        return self._plan([self._line(x, y, z, phi, speed, accel, None)])[0]

    def _plan(self, moves) -> tuple[Trajectory, Pulses, Motion | None]:
        """Plan ``moves`` (a list, or a function of the start pose giving one) from where the arm will be when
        they start; with the motion they follow (None: planned from the board's pose)."""
        q0, g0, after = self._runner.expected_start()
        return (*self._runner.plan(moves, q0, g0), after)

    def _line(self, x, y, z, phi, speed, accel, label, blend=None) -> motion.LineMove:
        target = validate.point(self.arm, x, y, z)
        if phi is not None:
            phi = validate.radians(phi, "phi")
            if self.arm.n_links != 3:
                raise BadInputError(
                    f"phi (a tool angle) needs a 3-link arm; {self.arm.name!r} has {self.arm.n_links} links"
                )
        kw = {}
        if speed is not None:
            kw["speed_m_s"] = validate.tool_speed(speed)
        if accel is not None:
            kw["accel_m_s2"] = validate.positive(accel, "accel")
        if blend is not None:
            kw["blend_m"] = validate.blend(blend)
        label = label or f"move to ({', '.join(f'{v:g}' for v in target)}) m"
        return motion.LineMove(tuple(target), phi_rad=phi, label=label, **kw)

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
        the target, 3-link arms. ``blend`` (m): with ``wait=False``, consecutive blended moves (lines, joint
        moves) are played as one motion that passes each shared corner within that distance without stopping
        (it rests only at the last move queued; see docs/programs.md, "Blending"). Raises UnreachableError (with
        ``shortfall_m``), JointLimitError (also PulseLimitError), MotionError, BadInputError before anything
        moves; LinkError if the link fails. ``reach_q`` (rad, lines): the pose the caller solved for the target
        (``motion.solve_pose``), checked instead of solving the end again."""
        self._check_open()
        gen = self._runner.stop_gen
        if path not in ("line", "joint"):
            raise BadInputError(f"path: 'line' or 'joint', got {path!r}")
        line = self._line(x, y, z, phi, speed, accel, label, blend)
        if reach_q is not None:
            line = replace(line, reach_q_rad=tuple(float(v) for v in reach_q))
        if path == "line":
            return self._go([line], line.label, gen, wait)
        joint_label = label or line.label.replace("move to", "joint move to")

        def joint_move(q0):
            q = motion.solve_pose(self.arm, np.array(line.target_m), line.phi_rad, q0, joint_move=True)
            return [motion.JointMove(tuple(q), label=joint_label, blend_m=line.blend_m)]

        if line.blend_m > 0:  # solved now, from where it starts: a blended chain is planned from its moves
            return self._go(joint_move(self._runner.expected_start()[0]), joint_label, gen, wait)
        return self._go(joint_move, joint_label, gen, wait)

    @_one_line_interrupt
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
        gen = self._runner.stop_gen
        q_rad = validate.joint_angles(self.arm, q, degrees=degrees)
        speed_fraction = validate.fraction(speed_fraction, "speed_fraction")
        deg = " ".join(f"{math.degrees(v):g}" for v in q_rad)
        kw = {} if blend is None else {"blend_m": validate.blend(blend)}
        move = motion.JointMove(tuple(q_rad), speed_fraction=speed_fraction, label=f"joint move to {deg} deg", **kw)
        return self._go([move], move.label, gen, wait)

    @_one_line_interrupt
    def home(self, *, wait: bool = True) -> Motion:
        """Move slowly (a quarter of each joint's speed limit) to the arm's home pose."""
        self._check_open()
        gen = self._runner.stop_gen
        move = motion.JointMove(tuple(self.arm.home_rad), speed_fraction=HOME_SPEED_FRACTION, label="home")
        return self._go([move], "home", gen, wait)

    @_one_line_interrupt
    def gripper(self, state: str | float, *, degrees: bool = False, wait: bool = True) -> Motion:
        """Open or close the gripper (``"open"``, ``"close"``/``"closed"``) or turn it to an angle (rad, or
        degrees with ``degrees=True``), at its speed limit; the arm holds still."""
        self._check_open()
        gen = self._runner.stop_gen
        g = self.arm.gripper
        if g is None:
            raise BadInputError(f"arm {self.arm.name!r} has no gripper")
        if isinstance(state, str):
            word = state.strip().lower()
            if word not in ("open", "close", "closed"):
                raise BadInputError(f"gripper: 'open', 'close' or an angle, got {state!r}")
            angle, label = (g.open_rad, "open the gripper") if word == "open" else (g.closed_rad, "close the gripper")
        else:
            angle = validate.number(state, "gripper angle") if degrees else validate.radians(state, "gripper angle")
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
        gen = self._runner.stop_gen
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
        runner = self._runner
        return _prepare_run(
            program, self.arm, self.port, self._journal.runs, runner.expected_start, from_step=from_step, resume=resume
        )

    def _gripper_word(self, g: float) -> str:
        """'open', 'closed' or the angle of gripper angle ``g`` (rad)."""
        return gripper_word(self.arm, g)

    def last_run(self):
        """The progress record of the last program run on this port (``armctl.robot.state.RunRecord``), or None."""
        return self._journal.runs.load()

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
        (m), about the shoulders; see ``armctl.teleop.follow``), never faster than its joint speed limits and never
        outside its limits or reach (a pose it cannot take is clamped to the nearest it can, and marked). It
        starts with a slow ramp (a quarter of the speed limits) until it has caught up with the leader.
        ``max_lag_deg``: stop (MotionError) if a joint falls further behind than this after the ramp.
        ``on_frame(t_s, q_rad, gripper_rad, target, measured)`` is called after each command (recording).
        A lost leader stops the follower under control: ``wait()`` raises LinkError naming the leader servo."""
        from armctl.teleop.follow import Teleop

        self._check_open()
        gen = self._runner.stop_gen
        kw = {"map": map, "rate_hz": rate_hz, "scale": scale, "offset_m": offset, "max_lag_deg": max_lag_deg}
        teleop = Teleop(leader, self.arm, on_frame=on_frame, **kw)
        q0, g0, _ = self._runner.expected_start()
        traj = Trajectory(
            t_s=np.zeros(1),
            q_rad=np.array(q0, dtype=float)[None, :],
            gripper_rad=np.array([g0], dtype=float),
            step=np.zeros(1, dtype=int),
            steps=["follow"],
        )
        label = f"follow the {leader.arm.name} on {leader.port}"
        m = FollowMotion(self, label, traj, prepare(traj, self.calibration), gen, teleop)
        self._runner.submit(m)
        return m

    def _go(self, moves, label: str, gen: int, wait: bool) -> Motion:
        traj, pulses, after = self._plan(moves)
        return self._submit(label, traj, pulses, gen, wait, moves=moves, after=after)

    def _submit(
        self, label: str, traj: Trajectory, pulses: Pulses, gen: int, wait: bool, *, moves=None, after=None, arm=None
    ) -> Motion:
        m = Motion(self, label, traj, pulses, gen, moves=moves, after=after)
        m.zoned_arm = arm  # a program's own keep-out zones: its ramp to the start is checked against them too
        return self._enqueue(m, wait)

    def _enqueue(self, m: Motion, wait: bool) -> Motion:
        idle = self._runner.submit(m)  # the runner plays it, after the motions before it
        if not (wait and idle):
            _watch_ctrl_c()  # it plays in the background: Ctrl-C must reach it too
        if wait and self._runner.on_runner():  # from a done callback: on the runner thread itself
            self._runner.play_here(m)
        if wait:
            m.wait()  # Ctrl-C here stops the arm under control (Motion.wait)
        return m

    # --- stopping, holding --------------------------------------------------------------------------------

    def stop(self, reason: str = "stop requested") -> None:
        """Controlled stop, from any thread or a signal handler: the motion playing stops within a frame
        plus the board's queue and the arm holds its pose; motions still queued are dropped. Their
        ``wait()`` raises StopRequested. Motions asked for after this call run as usual (a feed hold is
        ended too)."""
        self._runner.stop(reason)
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
        return self._runner.moving

    def release(self) -> None:
        """Let the servos go limp so the arm can be guided by hand (bus servos: torque off). The next motion
        starts from wherever the arm was left, measured. BadInputError on boards that cannot do it."""
        self._check_open()
        if not self.backend.caps.releases:
            raise BadInputError(
                f"the {self.backend.name} backend cannot let its servos go limp and still say where they are"
            )
        self._runner.board(self.backend.release)

    def hold_stored_pose(self) -> dict[int, float]:
        """Servos without pulses (a board that reset when its port opened: an Uno) are set to the pose stored
        for this port when the arm was last left: they hold where the arm was, nothing moves. Returns what was
        set ({address: value}); {} when every servo has its pulses, or no pose is stored (home is not set then:
        that would move the arm)."""
        self._check_open()
        if self._journal.store.checked(self.calibration)[0] is None:
            return {}  # none stored, or one that cannot be trusted: setting it could move the arm

        def hold():
            _, _, declare, _ = self._pose.start_state(check=False, clamp=True)
            if declare:
                self.backend.move(1, declare)
                self.backend.drain()
            return declare

        return self._runner.board(hold)

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
        self._closed = True
        owned = self._runner.close(BOARD_WAIT_S)  # the motions queued end as stopped; then the board is ours
        try:
            if owned:
                self._runner.remember()
            self.backend.close()
        finally:
            self._journal.close()
            if self._lock is not None:
                self._lock.release()
