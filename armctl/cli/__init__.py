"""The ``armctl`` command line.

Each command group lives in its own module with a ``register(subparsers,
parents)`` function; this module only builds the parser, runs the command and
turns armctl's errors into one line on stderr and an exit code. Only the module
of the command being run is imported (``COMMANDS`` names each command's module
and its one-line help, so ``armctl --help`` needs none of them; the module's
parser takes its line from there too, through ``add_command``). What the
commands share is in ``armctl.cli.common``. Exit codes:

  0 success, 1 internal error, 2 bad input (arguments, files, YAML),
  3 target or motion impossible (unreachable, joint/speed/pulse limit),
  4 link or board error (port, timeout, lost link, protocol), 5 a file could
  not be written, 130 interrupted, 143 SIGTERM, 129 SIGHUP (Windows: 149
  Ctrl-Break, 129 console closed).
"""

from __future__ import annotations

import argparse
import gc
import importlib
import re
import sys

from armctl.core import limits
from armctl.core.paths import preset_names
from armctl.errors import ArmctlError, Terminated

EXIT_OK = 0
EXIT_BAD_INPUT = 2
EXIT_INTERRUPTED = 130  # the others are each error's exit_code (armctl.errors)

# Command modules, in the order their commands appear in --help.
COMMAND_MODULES = [
    "kin", "motion", "device", "pick", "draw", "calibrate", "camera", "teach", "follow", "replay", "web", "ros",
    "ports", "servos",
]  # fmt: skip

# Every command: its module and its line in 'armctl --help', written here only: the placeholder parsers and the
# module's own parser (add_command) both read it, so --help needs no module imported. A new command goes here too.
COMMANDS = {
    "ik": ("kin", "joint angles for a tool point (inverse kinematics)"),
    "fk": ("kin", "tool point for joint angles (forward kinematics)"),
    "workspace": ("kin", "reach, joint limits, speeds and accelerations of the arm"),
    "urdf": ("kin", "write the arm as a URDF with its masses (serial arms: for pinocchio, MuJoCo, RViz)"),
    "plan": ("motion", "plan a YAML program into a timed joint trajectory (checked whole)"),
    "plot": ("motion", "draw a planned program: workspace, path, arm poses, joint speeds"),
    "jog": ("device", "move the tool in a straight line to X Y, or jog it with the keys (no target)"),
    "run": ("device", "run a YAML program on the arm"),
    "home": ("device", "move slowly to the arm's home pose"),
    "status": ("device", "show the board and the pose it holds"),
    "pick": ("pick", "pick the part a camera sees (its ArUco marker) where it lies and place it at X Y [Z]"),
    "draw": ("draw", "draw an SVG or G-code file with a pen (checked whole, then streamed)"),
    "calibrate": ("calibrate", "calibrate the servos (interactive), or record/fit/show/compare/check calibrations"),
    "camera": ("camera", "a camera: print a ChArUco board, find its intrinsics, check the tool over a grid"),
    "teach": ("teach", "guide the arm by hand (bus servos) or jog it (PWM) and record poses into a program"),
    "follow": ("follow", "a leader arm moved by hand drives the arm (teleoperation); record LeRobot datasets"),
    "replay": ("replay", "play a recorded episode's actions (a LeRobot dataset) on the arm, checked whole first"),
    "web": ("web", "the arm in a browser page: click to move"),
    "ros": ("ros", "run the arm as a ROS 2 node: joint_states, trajectories, joint commands"),
    "ports": ("ports", "list the serial ports and identify the board on each"),
    "servos": ("servos", "bus servos: scan every baud and id, set a servo's id or baud, set up an arm's servos"),
}

GLOBAL_DEFAULTS = {
    "arm": "seed-3link",
    "port": None,
    "backend": None,
    "calibration": None,
    "watchdog": 1.0,
    "assume_pose": None,
}


# A negative value, with or without a unit (-40mm, -0.1, -.5, -1e-3, -30deg): a value, never an option (argparse
# alone takes only -40 and -0.1 for numbers, so 'jog 150mm -40mm 50mm' was "unrecognized arguments").
NEGATIVE_VALUE = re.compile(r"^-(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?[a-zA-Z]*$")


class _Parser(argparse.ArgumentParser):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._negative_number_matcher = NEGATIVE_VALUE  # argparse's hook for "looks like a negative number"

    def error(self, message):  # one line, exit code 2, like every other bad input
        self.exit(EXIT_BAD_INPUT, f"{self.prog}: error: {message} (see '{self.prog} --help')\n")


def _global_options(suppress: bool) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(add_help=False)
    d = argparse.SUPPRESS if suppress else None
    g = p.add_argument_group("global options")
    g.add_argument(
        "--arm",
        default=d,
        metavar="NAME|PATH",
        help=f"arm preset name ({', '.join(preset_names())}), arm YAML file or URDF (FILE.urdf, with "
        "FILE.armctl.yaml beside it if any) (default: the program's arm:, else seed-3link)",
    )
    g.add_argument(
        "--tool-link",
        default=d,
        metavar="NAME",
        help="with --arm FILE.urdf: the URDF link that is the tool point (default: the sidecar's tool_link, else "
        "the last link of the longest chain)",
    )
    g.add_argument(
        "--port",
        default=d,
        metavar="URL|PATH",
        help="serial port or pyserial URL of the board, or 'auto': the one board 'armctl ports' finds "
        "(default: the backend's simulated board: armsim:// for hobby servos, feetechsim:// for bus servos, "
        "pca9685sim:// with --backend pca9685)",
    )
    g.add_argument(
        "--backend",
        default=d,
        metavar="NAME",
        help="board protocol: armctl (our firmware or the simulator), firmata (stock StandardFirmata), "
        "feetech (Feetech bus servos), dynamixel (Dynamixel bus servos) or pca9685 (PCA9685 boards on I2C: --port "
        "i2c:///dev/i2c-1?address=0x40); default: pca9685 for an i2c:// port, for a calibration in steps the bus the "
        "arm's servos speak (koch, omx: dynamixel; else feetech), else armctl",
    )
    g.add_argument(
        "--calibration",
        default=d,
        metavar="FILE",
        help="servo calibration YAML (default: ./calibration/<arm>.yaml, else ~/.config/armctl/calibration/"
        "<arm>.yaml, else the example shipped with the arm preset); LeRobot's as it is: FILE.json or lerobot:ID",
    )
    g.add_argument(
        "--watchdog",
        default=d,
        type=_watchdog_s,
        metavar="S",
        help="armctl backend: the board holds its servos and stops if it hears nothing from this "
        "program for S seconds (0.05..65, 0 = off; default 1)",
    )
    g.add_argument(
        "--limit",
        default=d,
        action="append",
        type=_limit_setting,
        metavar="NAME=N",
        help="raise a size limit on input files and plans for this command (repeatable; README 'Limits'): "
        + ", ".join(f"{name} (default {lim.default})" for name, lim in limits.LIMITS.items()),
    )
    g.add_argument(
        "--assume-pose",
        default=d,
        metavar="home|start|NAME|Q0,Q1,..",
        help="where the arm stands, in your word, when armctl cannot know it (servos that lost their pulses, an "
        "Uno reset on open, with no trustworthy stored pose): home, start (run: the program's start pose), NAME "
        "(run: a pose of the program), or the joint angles in degrees (one more value: the gripper's angle)",
    )
    return p


def _limit_setting(text: str) -> dict:
    try:
        return limits.parse_settings(text, where="--limit")
    except ArmctlError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _watchdog_s(text: str) -> float:
    try:
        s = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not (s == 0 or 0.05 <= s <= 65):  # also refuses nan and inf
        raise argparse.ArgumentTypeError(f"{text} s is outside 0.05..65 (or 0 for off)")
    return s


def add_command(sub, name: str, **kwargs) -> argparse.ArgumentParser:
    """The parser of command ``name`` (a command module's ``register``), with its line in --help from ``COMMANDS``
    and its description and epilog shown as written (line breaks kept)."""
    kwargs.setdefault("formatter_class", argparse.RawDescriptionHelpFormatter)
    return sub.add_parser(name, help=COMMANDS[name][1], **kwargs)


def build_parser(command: str | None = "*", *, only: bool = False) -> argparse.ArgumentParser:
    """The ``armctl`` parser. ``command``: the one command whose module is imported and whose
    parser is real ("*": every module, None: none); the others are placeholders that only give
    their line in ``--help`` and swallow their arguments. ``only``: no placeholders, and an error of the top
    level raises _Retry (``_parse``)."""
    parser = (_OneCommandParser if only else _Parser)(
        prog="armctl",
        parents=[_global_options(False)],
        description="Drive a hobby 2- or 3-link servo arm, in a vertical plane or on a rotating base: IK, "
        "planning, streaming to the board (hobby servos, Feetech or Dynamixel bus servos). "
        "Lengths in metres (or with a unit: 500mm, 50cm), angles in degrees.",
        epilog=(
            "exit codes: 0 ok, 2 bad input, 3 unreachable, limit or torque, 4 link/board error, 5 a file could not be "
            "written (read-only, disk full, size limit), 130 interrupted (Ctrl-C), "
            "143 SIGTERM, 129 SIGHUP (Windows: 149 Ctrl-Break, 129 console closed; each after a controlled stop)"
        ),
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    sub.required = True
    parents = [_global_options(True)]
    wanted = COMMANDS[command][0] if command in COMMANDS else None
    for name in COMMAND_MODULES:
        if command == "*" or name == wanted:
            try:
                module = importlib.import_module(f".{name}", __name__)
            except ModuleNotFoundError as exc:
                if exc.name == f"{__name__}.{name}":
                    continue  # that command group is not built yet
                raise
            module.register(sub, parents)
            continue
        if only:
            continue
        for cmd, (mod, _) in COMMANDS.items():
            if mod == name:
                stub = add_command(sub, cmd, add_help=False)
                stub.add_argument("rest", nargs=argparse.REMAINDER)
    return parser


class _Retry(Exception):
    """The one-command parser of ``_parse`` met what only the whole parser answers alike (a bad global option)."""


class _OneCommandParser(_Parser):
    def error(self, message):
        raise _Retry(message)


# The global options that take a value (``--opt VALUE`` or ``--opt=VALUE``): what may stand before the command
# for _parse to find the command itself.
_VALUE_OPTIONS = ("--arm", "--tool-link", "--port", "--backend", "--calibration", "--watchdog", "--limit")
_VALUE_OPTIONS += ("--assume-pose",)


def _command_in(argv: list[str]) -> str | None:
    """The command of ``argv`` when only global options written in full stand before it, else None."""
    i = 0
    while i < len(argv):
        word = argv[i]
        if word in COMMANDS:
            return word
        if word in _VALUE_OPTIONS:
            i += 2
        elif word.split("=", 1)[0] in _VALUE_OPTIONS and "=" in word:
            i += 1
        else:
            return None  # --help, an abbreviation, a typo: the whole parser says what it is
    return None


def _parse(argv: list[str]) -> argparse.Namespace:
    """The parsed arguments. The command's name first, then its module's parser. The quick way (start-up of
    'armctl ik'): a parser with that one command, when the words before it are global options written in full;
    an error of its top level (a bad --watchdog) goes the whole way, so every message is the whole parser's.
    The whole way: placeholders of every command find which one (global options, --help and a wrong command fail
    here, as they would with every module loaded), then the parser with that command's module only."""
    command = _command_in(argv)
    if command is not None:
        try:
            args = build_parser(command, only=True).parse_args(argv)
        except _Retry:
            pass
        else:
            if args.command == command:
                return args
    first, _ = build_parser(None).parse_known_args(argv)
    return build_parser(first.command).parse_args(argv)


def choose_arm(args, program_arm: str | None = None) -> str:
    """The arm to use: ``--arm`` when given, else the program's ``arm:`` key, else the default."""
    if program_arm is not None and not getattr(args, "arm_given", True):
        return program_arm
    return args.arm


def main(argv: list[str] | None = None) -> int:
    """``armctl`` with ``argv`` (None: this process's command line) -> the exit code."""
    collecting = gc.isenabled()
    gc.disable()  # start-up makes modules and a parser, no garbage worth a collection that scans them all
    try:
        args = _parse(sys.argv[1:] if argv is None else argv)
    except SystemExit as exc:  # --help, or a usage error already printed on one line
        return int(exc.code or 0)
    finally:
        if collecting:
            if argv is None:  # the armctl process (not a caller's): what start-up made is never scanned again
                gc.freeze()  # (nor at exit, where a last collection would scan numpy's and ours)
            gc.enable()
    args.arm_given = getattr(args, "arm", None) is not None
    args.backend_given = getattr(args, "backend", None) is not None
    for key, value in GLOBAL_DEFAULTS.items():
        if getattr(args, key, None) is None:
            setattr(args, key, value)
    if getattr(args, "tool_link", None) is not None:  # one arm reference: FILE.urdf#LINK (armctl.model.arm.load_arm)
        if not (args.arm_given and args.arm.endswith(".urdf")):
            _say(f"armctl {args.command}: error: --tool-link applies to an arm from a URDF: give --arm FILE.urdf")
            return EXIT_BAD_INPUT
        args.arm = f"{args.arm}#{args.tool_link}"
    for setting in getattr(args, "limit", None) or []:
        for name, value in setting.items():
            limits.set_limit(name, value)
    restore = _stop_on_signals()
    try:
        return int(args.func(args) or 0)
    except ArmctlError as exc:
        _say(f"armctl {args.command}: error: {exc}")
        return exc.exit_code
    except KeyboardInterrupt as exc:
        hint = getattr(exc, "hint", "")  # where a stopped program was, and how to go on (armctl run)
        exc = _hangup(exc)
        if isinstance(exc, Terminated):
            _say(f"armctl {args.command}: stopped by {exc} (the arm holds its pose{'; ' + hint if hint else ''})")
            return exc.exit_code
        _say(f"armctl {args.command}: interrupted" + (f" ({hint})" if hint else ""))
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        return EXIT_OK
    finally:
        restore()


def _say(line: str) -> None:
    """One line on stderr; a terminal that went away (SIGHUP after SSH closed) is not a second error."""
    try:
        print(line, file=sys.stderr, flush=True)
    except OSError:
        pass


def _stop_on_signals():
    """The OS's stop signals (SIGTERM, SIGHUP; on Windows Ctrl-Break and a closing console:
    ``armctl.core.stopsignals``) become ``Terminated`` (a KeyboardInterrupt): the same controlled stop as Ctrl-C,
    then exit 143, 129 or 149. Only the first one counts, so a second cannot cut the stop short. Returns a
    function that puts the previous handlers back."""
    from armctl.core import stopsignals

    fired = []

    def handler(signum, frame):
        if not fired:
            fired.append(signum)
            raise Terminated(signum)

    undo = stopsignals.install(handler)

    def restore() -> None:
        undo()
        stopsignals.stopped()  # a closing Windows console may now end the process

    return restore


def _hangup(exc: KeyboardInterrupt) -> KeyboardInterrupt:
    """A Ctrl-C that a closing Windows console raised is a hang-up (exit 129), not an interrupt."""
    from armctl.core.stopsignals import HANGUP_EXIT, hung_up

    if hung_up() and not isinstance(exc, Terminated):
        return Terminated(0, name="the console closing", exit_code=HANGUP_EXIT)
    return exc


if __name__ == "__main__":
    sys.exit(main())
