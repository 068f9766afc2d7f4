"""What the CLI's commands share: the arm and calibration of the global options, a target's X Y [Z], the open
Robot, the progress line, the report printed after a move, the drive loop (open, act, report), a dataset that
could not be written, bytes on stdout, and saving a calibration.

Every command module takes these from here rather than from another command's module. What one command shares
with another on purpose stays in that command's module: ``armctl.cli.draw``'s drawing options (``armctl plot``),
the keyboard pendant (``armctl jog``, ``armctl teach``), ``armctl.cli.dataset_options`` (``armctl follow``,
``armctl run``). Everything beyond the arm model is imported where it is used, so ``armctl ik`` loads none of the
calibration or streaming stack through this module.
"""

from __future__ import annotations

import math
import shutil
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from armctl.core.units import parse_float, parse_length, parse_mass
from armctl.errors import BadInputError
from armctl.model.arm import Arm, load_arm

if TYPE_CHECKING:
    from armctl.calibration.servo import Calibration


def setup(args, program_arm: str | None = None) -> tuple[Arm, Calibration]:
    """The arm (``--arm``, else the program's ``arm:``, else the default) and its calibration; the arm carrying
    ``--payload`` and without the torque check with ``--no-torque-check`` where the command has them."""
    from armctl.calibration.lerobot import open_calibration
    from armctl.cli import choose_arm

    arm = load_arm(choose_arm(args, program_arm))
    cal, _, notes = open_calibration(args.calibration, arm)  # armctl's YAML, or LeRobot's (lerobot:ID, .json)
    for note in notes:
        print(f"armctl: note: {note}", file=sys.stderr)
    cal.check_arm(arm)
    from armctl.motion.torque import carrying

    off = bool(getattr(args, "no_torque_check", False))  # --payload, --no-torque-check (torque_options)
    return carrying(cal.corrected_arm(arm), payload_arg(args), check=False if off else None), cal


def torque_options(p) -> None:
    """``--payload MASS`` and ``--no-torque-check`` (``armctl.motion.torque``), applied to the arm by ``setup``."""
    p.add_argument(
        "--payload",
        metavar="MASS",
        help="the mass in the jaws, with its unit (50g, 0.05kg): every move is checked against the servos' torque "
        "carrying it (default: the arm file's payload_g; a program's own payload_g unless this is given)",
    )
    p.add_argument(
        "--no-torque-check",
        action="store_true",
        help="do not refuse moves that ask a servo for more torque than the arm's torque_use of its stall torque "
        "(tests, experts: the arm may sag, stall or overheat)",
    )


def payload_arg(args) -> float | None:
    """``--payload`` in kg (None when not given); BadInputError naming it."""
    text = getattr(args, "payload", None)
    return None if text is None else parse_mass(text, what="--payload")


def target_args(args, arm: Arm, example: str) -> tuple[float, ...]:
    """X Y (planar arms) or X Y Z (arms on a base) from ``args.x``, ``args.y``, ``args.z``, in metres; one
    BadInputError line for a missing or extra number."""
    given = [v for v in (args.x, args.y, getattr(args, "z", None)) if v is not None]
    if arm.has_base and len(given) != 3:
        raise BadInputError(
            f"arm '{arm.name}' stands on a rotating base: give X Y Z (x, y on the table, z up), got {len(given)} "
            f"number{'s' if len(given) != 1 else ''}"
        )
    if not arm.has_base and len(given) != 2:
        if len(given) == 3:
            raise BadInputError(
                f"arm '{arm.name}' works in a vertical plane (no base): give X Y, got 3 numbers ({' '.join(given)})"
            )
        raise BadInputError(
            f"missing target: give X Y (e.g. '{example}')" + (", or --targets FILE.csv" if "ik" in example else "")
        )
    return tuple(parse_length(v, what=w) for v, w in zip(given, "XYZ"))


def roll_arg(args, arm: Arm, what: str = "--roll") -> float | None:
    """``--roll DEG`` (the wrist roll about the tool axis, 0 = the URDF zero) in radians, None when not given (the
    roll is kept). BadInputError, one line: an arm without a wrist roll, NaN or inf, a roll no whole turn of which
    lies inside the roll's limits (``armctl.ik.roll.check_roll``)."""
    text = getattr(args, "roll", None)
    if text is None:
        return None
    from armctl.ik.roll import check_roll

    deg = parse_float(text, what=what)
    if abs(deg) > 360:
        raise BadInputError(f"{what}: {deg:g} deg is more than a turn (give -360..360 deg)")
    try:
        return check_roll(arm, math.radians(deg))
    except BadInputError as exc:
        raise BadInputError(f"{what}: {exc}") from None


def orientation_options(p) -> None:
    """``--roll DEG``, ``--down`` and ``--yaw DEG`` (``armctl ik``, ``armctl jog``): read by ``orientation_args``."""
    p.add_argument(
        "--roll",
        metavar="DEG",
        help="arms with a wrist roll: the roll about the tool axis, degrees (0: the URDF's zero; default: kept)",
    )
    p.add_argument(
        "--down",
        action="store_true",
        help="the tool pointing straight down (pitch -90 deg; arms on a base with 3 links), the roll kept",
    )
    p.add_argument(
        "--yaw",
        metavar="DEG",
        help="with --down, arms with a wrist roll: the jaws' closing line at this yaw on the table (degrees from "
        "x); armctl computes the roll for the base angle the point needs",
    )


def orientation_args(args, arm: Arm, target, phi, q0) -> tuple[float | None, float | None, float | None]:
    """(tool pitch, roll, table yaw of the jaws), rad or None, from ``--phi``, ``--roll``, ``--down`` and ``--yaw``:
    ``--down`` is the tool pointing straight down (an arm on a base), ``--down --yaw`` the roll that closes the jaws
    along that yaw (``armctl.ik.roll.grasp_roll``). One BadInputError line for a combination that cannot be."""
    roll = roll_arg(args, arm)
    if args.yaw is not None and not args.down:
        raise BadInputError("--yaw needs --down (the jaws straight down, closing along yaw DEG on the table)")
    if not args.down:
        return phi, roll, None
    if not arm.has_base:
        raise BadInputError(f"--down: arm '{arm.name}' has no rotating base (on a planar arm give --phi -90)")
    if phi is not None:
        raise BadInputError("give --down or --phi, not both (--down is the tool pitched -90 deg)")
    if arm.n_links != 3:
        raise BadInputError(f"--down needs a 3-link arm to point the tool; '{arm.name}' has {arm.n_links} links")
    if args.yaw is None:
        return -math.pi / 2, roll, None
    yaw = math.radians(parse_float(args.yaw, what="--yaw"))
    if arm.roll is None:
        raise BadInputError(f"--yaw: arm '{arm.name}' has no wrist roll")
    if roll is not None:
        raise BadInputError("give --yaw or --roll, not both (--yaw sets the roll)")
    from armctl.ik.roll import grasp_roll

    return -math.pi / 2, grasp_roll(arm, target, yaw, q0), yaw


def tool_orientation(arm: Arm, q) -> dict:
    """The tool's orientation at pose ``q`` (rad) for ``--json``, in the arm frame: ``tool_rpy_deg`` ([roll, pitch,
    yaw] as URDF's rpy), ``tool_R`` (the tool frame's 3x3 rotation, rows; ``kinematics.tool_frame``: a URDF arm's
    tool link frame), and ``roll_deg`` (the wrist roll's angle) on an arm with one; None for each when ``q`` is
    unknown."""
    from armctl.model.kinematics import tool_frame, tool_rpy

    q = None if q is None else np.asarray(q, dtype=float)
    known = q is not None and bool(np.all(np.isfinite(q)))
    R = tool_frame(arm, q) if known else None
    d = {
        "tool_rpy_deg": [round(math.degrees(float(v)), 6) for v in tool_rpy(R)] if known else None,
        "tool_R": [[float(v) for v in row] for row in R] if known else None,
    }
    if arm.roll is not None:
        d["roll_deg"] = round(math.degrees(float(q[arm.roll_index])), 6) if known else None
    return d


def assumed_from_args(args, arm: Arm, *, program=None, plan=None):
    """``--assume-pose`` as ``connect`` takes it: None, ``"home"``, or joint angles (rad, then the gripper's).
    ``start`` and a pose NAME need the ``program`` and its ``plan`` (armctl run). BadInputError otherwise."""
    text = getattr(args, "assume_pose", None)
    if text is None:
        return None
    word = text.strip()
    if word.lower() == "home":
        return "home"
    if plan is not None and word.lower() == "start":
        traj = plan.trajectory
        g = float(traj.gripper_rad[0])
        return [*map(float, traj.q_rad[0]), *([g] if arm.gripper is not None and math.isfinite(g) else [])]
    if program is not None and word in program.poses:
        from armctl.motion import solve_pose

        pose = program.poses[word]
        if pose.q_rad is not None:
            return list(pose.q_rad)
        return list(solve_pose(arm, np.array(pose.point_m), pose.phi_rad, arm.home_rad))
    parts = [p for p in word.split(",") if p.strip()]
    if len(parts) in (arm.n, arm.n + 1) and all(_is_number(p) for p in parts):
        q = [math.radians(parse_float(p, what="--assume-pose")) for p in parts]
        for i, name in enumerate(arm.joint_names):  # said here in the degrees the option takes
            lo, hi = math.degrees(arm.q_min[i]), math.degrees(arm.q_max[i])
            if not lo - 1e-6 <= math.degrees(q[i]) <= hi + 1e-6:
                raise BadInputError(
                    f"--assume-pose: joint {i + 1} ({name}) at {math.degrees(q[i]):g} deg is outside its limits "
                    f"{lo:g}..{hi:g} deg: the arm cannot stand there"
                )
        return q
    names = f", start or a pose of the program ({', '.join(program.poses) or 'none'})" if program is not None else ""
    raise BadInputError(
        f"--assume-pose {text!r}: home{names}, or the {arm.n} joint angles in degrees (q0,q1,..; one more: the "
        "gripper's angle)" + ("" if program is not None else "; start and pose names are for armctl run")
    )


def _is_number(text: str) -> bool:
    try:
        return math.isfinite(float(text))
    except ValueError:
        return False


def ask_pose(robot, args) -> None:
    """The pose of ``robot`` is unknown (``robot.pose_unknown``) and no ``--assume-pose`` was given: on a terminal
    ask whether the arm stands at home; anything but yes (and no terminal) refuses: PoseUnknownError, one line,
    exit 2, nothing moved."""
    from armctl.errors import PoseUnknownError
    from armctl.robot.pose import unknown_line

    why = robot.pose_unknown
    if not why:
        return
    if sys.stdin.isatty() and sys.stderr.isatty():
        print(f"armctl {args.command}: {why}", file=sys.stderr)
        print("the arm's pose is unknown: is it at home? [y/N] ", end="", file=sys.stderr, flush=True)
        if sys.stdin.readline().strip().lower() in ("y", "yes"):
            robot.assume_pose("home")
            return
    raise PoseUnknownError(unknown_line(why), why=why)


def open_robot(args, arm: Arm, cal: Calibration, *, calibrating: bool = False, progress=None, moves: bool = True):
    """``armctl.connect`` with the global options (--port, --backend, --watchdog, --assume-pose) and --wire-log;
    ``--port auto`` is the one board ``armctl ports`` finds. ``moves``: the command moves the arm, so a pose armctl
    cannot know is asked for (``ask_pose``) or refused here, before anything is sent."""
    from armctl.cli.ports import resolve_port
    from armctl.robot.robot import connect

    resolve_port(args)
    assumed = getattr(args, "assumed_q", None) or assumed_from_args(args, arm)
    robot = connect(
        arm,
        args.port,
        args.backend,
        cal,
        wire_log=getattr(args, "wire_log", None),
        watchdog_s=args.watchdog,
        calibrating=calibrating,
        progress=progress,
        assume_pose=assumed,
        camera=getattr(args, "arm_camera", None),
        camera_file=getattr(args, "camera_file", None),
    )
    if robot.recovered:
        print(f"armctl {args.command}: note: {robot.recovered}", file=sys.stderr, flush=True)
    if moves:
        try:
            ask_pose(robot, args)
        except BaseException:
            robot.close()
            raise
    return robot


def arm_camera_options(p) -> None:
    """``--camera-file FILE`` and ``--watch-mm MM``, beside a ``--camera SRC`` that sees the arm."""
    g = p.add_argument_group("a camera that sees the arm (README 'Calibrating with a camera')")
    g.add_argument(
        "--camera-file",
        metavar="FILE",
        help="the camera's intrinsics, as 'armctl camera calibrate' saved them (default: its camera.yaml; the "
        "simulated camera simcam:// knows its own)",
    )
    g.add_argument(
        "--watch-mm",
        metavar="MM",
        default="10",
        help="with --camera: stop the arm when the tool is more than MM off the plan for 0.3 s (default 10; 0: no "
        "watch)",
    )


def camera_watch(args, robot):
    """The camera's watch over what ``robot`` plays (``armctl.robot.camwatch``), as ``--watch-mm`` says: a context
    manager, one that does nothing without a camera, with --watch-mm 0, or with a camera whose place is unknown."""
    import contextlib

    mm = parse_float(getattr(args, "watch_mm", "0") or "0", what="--watch-mm")
    if not 0 <= mm <= 1000:
        raise BadInputError(f"--watch-mm: 0 (no watch) .. 1000 mm, got {mm:g}")
    if mm == 0 or robot.camera is None or robot.camera.cam_to_base is None:
        return contextlib.nullcontext()
    from armctl.robot.camwatch import CameraWatch

    return CameraWatch(robot, watch_mm=mm)


def parse_marker(text: str, what: str = "--marker") -> tuple[int, float]:
    """``ID`` or ``ID:SIZE_MM``: an ArUco marker's id (0..999) and its black square's side (mm, 3..500, default 30)."""
    mid, _, size = str(text).partition(":")
    try:
        marker, size_mm = int(mid), float(size) if size else 30.0
    except ValueError:
        raise BadInputError(f"{what} {text!r}: give ID or ID:SIZE_MM (e.g. 7 or 7:25)") from None
    if not 0 <= marker <= 999 or not 3 <= size_mm <= 500:
        raise BadInputError(f"{what} {text!r}: the id is 0..999, the size 3..500 mm")
    return marker, size_mm


def split_cameras(args) -> None:
    """``--camera`` values: ``NAME=SOURCE`` ones stay in ``args.camera`` (a dataset's cameras); one without ``=``
    is the camera that sees the arm (``args.arm_camera``; BadInputError for two)."""
    given = getattr(args, "camera", None) or []
    given = [given] if isinstance(given, str) else list(given)
    plain = [c for c in given if "=" not in c or "://" in c.split("=", 1)[0]]
    if len(plain) > 1:
        raise BadInputError(f"--camera {plain[1]}: one camera sees the arm (given: {', '.join(plain)})")
    args.camera = [c for c in given if c not in plain]
    args.arm_camera = plain[0] if plain else None


class Progress:
    """One progress line on stderr, rewritten in place: percent, program step, time left."""

    def __init__(self, *, stream=sys.stderr, min_interval_s: float = 0.2, control=None, keys: str = ""):
        self.stream, self.min_interval_s = stream, min_interval_s
        self.control, self.keys = control, keys  # a RunControl: its state (held, override) on the line
        self._last = -math.inf
        self._width = 0

    def __call__(self, fraction: float, label: str, left_s: float) -> None:
        now = time.monotonic()
        if fraction < 1.0 and now - self._last < self.min_interval_s:
            return
        self._last = now
        text = f"[{100 * fraction:5.1f}%] {label}  {left_s:5.1f} s left"
        state = self.control.describe() if self.control is not None else ""
        if state:
            text = f"[{100 * fraction:5.1f}%] [{state}] {label}  {left_s:5.1f} s left"
        elif self.keys and fraction < 1.0:
            text += f"  ({self.keys})"
        # one line: a line longer than the terminal wraps, and the next \r would rewrite only its last part
        text = text[: max(20, shutil.get_terminal_size((120, 24)).columns - 1)]
        self.stream.write("\r" + text.ljust(self._width))
        self._width = len(text)
        self.stream.flush()

    def done(self) -> None:
        if self._width:
            self.stream.write("\n")
            self.stream.flush()
            self._width = 0


def print_report(args, report: dict, headline: str) -> None:
    if args.json:
        import json

        print(json.dumps(report, indent=1))
        return
    print(headline)
    if report.get("source") == "assumed":
        print(f"pose: not known yet ({report['detail']}); the first move sets it, then ramps slowly")
    elif report.get("source") == "unknown":
        print(f"pose: unknown ({report['detail']}); nothing was set: a move needs --assume-pose (where the arm stands)")
    elif report.get("tool_m") is not None:
        where = " ".join(f"{k}={v:.4f} m" for k, v in zip("xyz", report["tool_m"]))
        print(f"tool at {where} ({report['source']}: {report['detail']})")
        print("joints " + " ".join(f"{v:.2f}" for v in report["q_deg"]) + " deg")
        lag = report.get("tracking_error_deg")
        if lag:
            name = max(lag, key=lag.get)
            print(f"tracking: the servos stayed within {lag[name]:.2f} deg of the path (most behind: {name})")


def drive(args, arm: Arm, cal: Calibration, act, *, wants_progress: bool = False) -> dict:
    """Open the arm, ``act(robot)`` -> Motion (played to its end), and report where the arm ended up.
    ``wants_progress``: ``act(robot, progress)`` is given the progress line (None when not on a terminal)."""
    progress = Progress() if sys.stderr.isatty() and not args.json else None
    with open_robot(args, arm, cal, progress=progress) as robot:
        try:
            result = (act(robot, progress) if wants_progress else act(robot)).result
        finally:
            if progress is not None:
                progress.done()
        report = robot.where(settle=True).to_dict()
        report.update(
            {
                "planned_tool_m": [float(v) for v in result.planned_tool_m],
                "duration_s": float(result.duration_s),
                "frames": result.frames,
                "commands": result.commands,
                "ramp_frames": result.ramp_frames,
                "wall_s": result.wall_s,
                "port": robot.port,
                "backend": robot.backend.name,
            }
        )
        if result.tracking_error_deg is not None:
            report["tracking_error_deg"] = result.tracking_error_deg
        world = simulated_world(robot.backend)
        if world is not None:  # a physics simulator: its parts, where those carried should be
            report["world"] = world
        off = np.array(report["tool_m"]) - result.planned_tool_m
        report["error_m"] = float(np.hypot(*off) if len(off) == 2 else np.linalg.norm(off))
        return report


def sim_ports(backend) -> tuple:
    return (
        getattr(backend, "ser", None),  # armctl / firmata boards
        getattr(getattr(backend, "bus", None), "_ser", None),  # a Feetech bus
        getattr(getattr(backend, "i2c", None), "bus", None),  # a PCA9685's I2C bus
    )


def simulated_world(backend) -> dict | None:
    """The physics world of a simulator run with ``physics=1`` (``armctl.sim.scene.LiveArm.world``), now; None
    for any other port."""
    for port in sim_ports(backend):
        live = getattr(getattr(port, "sim", port), "scene_arm", None)
        world = live.world() if live is not None else None
        if world is not None:
            return world
    return None


#: ``armctl run``'s exit code when the run ended but a part it carried is not where it put it (physics)
NOT_PLACED_EXIT = 1


def parts_not_placed(report: dict) -> int:
    """A physics run's parts not where the program put them: one line each on stderr, and NOT_PLACED_EXIT; else 0."""
    lines = (report.get("world") or {}).get("not_placed") or []
    for line in lines:
        print(f"armctl run: {line}", file=sys.stderr)
    return NOT_PLACED_EXIT if lines else 0


def raise_dataset_error(robot, motion, recorder) -> None:
    """The dataset could not be written (a camera gone, a full disk): stop the arm, wait for it, raise why."""
    if recorder is None or recorder.error is None:
        return
    robot.stop("the dataset could not be written")
    try:
        motion.wait()
    except Exception:  # noqa: BLE001 - the recorder's error is the one to report
        pass
    raise recorder.error


def binary_stdout():
    """Standard output for bytes (after whatever was printed as text)."""
    sys.stdout.flush()
    buf = getattr(sys.stdout, "buffer", None)
    if buf is not None:
        return buf

    class _Text:  # a text-only stdout (tests, redirect_stdout): decode
        @staticmethod
        def write(b: bytes) -> None:
            sys.stdout.write(b.decode("utf-8"))

        @staticmethod
        def flush() -> None:
            sys.stdout.flush()

    return _Text


# --- saving a calibration (armctl calibrate, PWM and bus servos) ------------------------------------------


def save_calibration_file(cal: Calibration, out: Path, comment: str) -> Path:
    """save_calibration, with an unwritable place as one line (exit 2) naming it."""
    from armctl.calibration.servo import save_calibration

    try:
        return save_calibration(cal, out, comment=comment)
    except OSError as exc:
        raise BadInputError(
            f"cannot save the calibration to {out}: {exc.strerror or exc}; choose another place with --out FILE"
        ) from None


def saved_line(out: Path) -> str:
    bak = Path(f"{out}.bak")
    return f"saved {out}" + (f" (previous version kept as {bak.name})" if bak.exists() else "")


def calibration_comment(what: str) -> str:
    return f"Calibration {what}, {time.strftime('%Y-%m-%d %H:%M:%S')}."
