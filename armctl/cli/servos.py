"""``armctl servos``: give bus servos their ids and baud rates before they go into an arm: ``scan``, ``set-id``,
``set-baud``, ``setup --arm ARM`` (one servo at a time, as LeRobot's ``lerobot-setup-motors``). The work is
``armctl.bus.setup``, over any bus that implements ``armctl.bus.setupbus.SetupBus``."""

from __future__ import annotations

import argparse
import functools
import json
import sys

from armctl.cli import add_command
from armctl.errors import BadInputError, LinkError

EPILOG = """\
A new Feetech servo is id 1 at 1000000 baud, a new Dynamixel id 1 at 57600: servos are set up one at a time,
each alone on the bus, before the arm is assembled. EEPROM writes are confirmed (--yes skips the question),
unlocked and locked again where the series has a lock, and read back; an id that a servo already answers at is
refused (never two servos on one id).
examples:
  armctl servos scan --port /dev/ttyACM0                     # every baud rate, every id
  armctl servos scan --port /dev/ttyACM0 --baud 1000000 --ids 1-10 --json
  armctl servos set-id 1 4 --port /dev/ttyACM0               # servo 1 becomes 4 (found at any baud)
  armctl servos set-baud 500000 --id 4 --port /dev/ttyACM0
  armctl --arm so101 servos setup --port /dev/ttyACM0        # one servo at a time, gripper first
  armctl --backend dynamixel servos scan --port /dev/ttyUSB0 --baud 57600 1000000
  armctl servos scan --port 'feetechsim://?ids=1,1,7&baud=500000'   # simulated: two servos share id 1"""

DESCRIPTION = (
    "Find bus servos and give them ids and baud rates (--backend feetech or dynamixel; default: the bus --arm's servos "
    "speak, else feetech). Without --port: "
    "the backend's simulated bus (feetechsim://, dynamixelsim://: six servos, ids 1-6)."
)


def _timeout_ms(text: str) -> float:
    try:
        ms = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of milliseconds") from None
    if not 0.5 <= ms <= 1000:  # also refuses nan
        raise argparse.ArgumentTypeError(f"{text} ms is outside 0.5..1000")
    return ms


def register(sub, parents) -> None:
    p = add_command(sub, "servos", parents=parents, epilog=EPILOG, description=DESCRIPTION)
    own = argparse.ArgumentParser(add_help=False)
    own.add_argument(
        "--timeout-ms",
        type=_timeout_ms,
        default=4.0,
        metavar="MS",
        help="how long each ping waits for its answer (default 4; an FTDI adapter with its 16 ms latency timer: 20)",
    )
    parents = [*parents, own]
    verbs = p.add_subparsers(dest="verb", metavar="ACTION")
    verbs.required = True
    s = verbs.add_parser("scan", parents=parents, help="every baud rate and id: id, baud, model, firmware")
    s.add_argument("--baud", type=int, nargs="+", metavar="B", help="only these baud rates (default: every one)")
    s.add_argument("--ids", metavar="A-B", help="only these ids (A-B, N or a comma list; default: every id)")
    s.add_argument("--json", action="store_true", help="print JSON: the port and one object per id answering")
    s.set_defaults(func=cmd_scan)
    s = verbs.add_parser("set-id", parents=parents, help="servo OLD becomes NEW (refused if NEW is taken)")
    s.add_argument("old", type=int, metavar="OLD", help="the servo's id now")
    s.add_argument("new", type=int, metavar="NEW", help="its new id")
    s.add_argument("--baud", type=int, metavar="B", help="the baud rate it runs at (default: found at any)")
    s.add_argument("--yes", action="store_true", help="write without asking")
    s.set_defaults(func=cmd_set_id)
    s = verbs.add_parser("set-baud", parents=parents, help="a servo runs at BAUD from now on")
    s.add_argument("baud", type=int, metavar="BAUD", help="the new baud rate")
    s.add_argument("--id", type=int, metavar="N", help="the servo's id (default: the one servo on the bus)")
    s.add_argument("--yes", action="store_true", help="write without asking")
    s.set_defaults(func=cmd_set_baud)
    s = verbs.add_parser("setup", parents=parents, help="each servo of --arm in turn, alone on the bus: id and baud")
    s.add_argument("--baud", type=int, metavar="B", help="the baud rate every servo gets (default: the factory's)")
    s.add_argument(
        "--order",
        choices=("gripper-first", "base-first"),
        default="gripper-first",
        help="from the gripper down to the base (LeRobot's order, default) or as the arm lists its joints",
    )
    s.add_argument(
        "--any-model", action="store_true", help="take any servo model (default: the one the arm has at each joint)"
    )
    s.set_defaults(func=cmd_setup)


def _bus(args):
    from armctl.bus.setup import open_setup_bus
    from armctl.cli.ports import resolve_port

    auto = (args.port or "").strip().lower() == "auto"
    resolve_port(args)  # --port auto: the board found, and its backend
    backend = args.backend if auto or getattr(args, "backend_given", False) else _bus_of(args)
    _check_sim_bus(args.port, backend)
    args.simulated_bus = None if args.port else backend  # (noted once the command worked: ``_noting``)
    return open_setup_bus(backend, args.port, args.timeout_ms / 1000.0)


def _noting(cmd):
    """``cmd``, then, when it worked on the simulated bus (no --port), a note saying which bus that was."""

    @functools.wraps(cmd)
    def run(args) -> int:
        rc = cmd(args)
        backend = getattr(args, "simulated_bus", None)
        if rc == 0 and backend:
            print(
                f"armctl servos: note: no --port: that was a simulated {backend} bus ({backend}sim://, forgotten on "
                "exit); give --port for your servos ('armctl ports' lists the ports)",
                file=sys.stderr,
            )
        return rc

    return run


def _check_sim_bus(port, backend: str) -> None:
    """A simulated bus of the other maker's servos would only time out: one line instead."""
    from armctl.bus.simulators import SIMULATOR_BUSES, url_scheme

    scheme = url_scheme(port)
    sim = SIMULATOR_BUSES.get(scheme)
    if sim is not None and sim[1] != backend:
        raise BadInputError(f"port {scheme}:// simulates {sim[0]} servos: use --backend {sim[1]}, not {backend}")


def _bus_of(args) -> str:
    """The bus with no --backend: a simulator's (dynamixelsim://), else the one --arm's servos speak (koch, omx:
    dynamixel), else feetech."""
    from armctl.bus.simulators import SIMULATOR_BUSES, url_scheme
    from armctl.model.arm import load_arm

    sim = SIMULATOR_BUSES.get(url_scheme(args.port))
    if sim is not None:
        return sim[1]
    if getattr(args, "arm_given", False):
        return load_arm(args.arm).drive.protocol or "feetech"
    return "feetech"


def _ask(question: str, hint: str = "") -> str:
    """One line from stdin after ``question`` on stdout; BadInputError at the end of stdin (``hint`` added)."""
    print(question, end=" ", flush=True)
    line = sys.stdin.readline()
    if not line or not getattr(sys.stdin, "isatty", lambda: False)():
        print(flush=True)  # the answer typed ends its line on a terminal only
    if not line:
        raise BadInputError(f"no answer on stdin (it ended): stopped{hint}")
    return line.strip()


def _confirm(args):
    def confirm(question: str) -> bool:
        hint = ", nothing written (--yes writes without asking)"
        return True if args.yes else _ask(question + " [y/N]", hint).lower() in ("y", "yes")

    return confirm


@_noting
def cmd_scan(args) -> int:
    from armctl.bus.setup import parse_ids, scan

    bus = _bus(args)
    ids = parse_ids(args.ids, bus) if args.ids else None
    with bus:
        found = scan(bus, args.baud, ids)
    where = f"ids {args.ids}" if args.ids else "any id"
    bauds = args.baud or bus.baud_rates
    if not found:
        raise LinkError(f"{bus.port}: no servo answers at {where} at {', '.join(map(str, bauds))} baud")
    if args.json:
        print(json.dumps({"port": bus.port, "backend": bus.backend, "servos": [f.as_dict() for f in found]}, indent=1))
        return 0
    print(f"{'id':>3}  {'baud':>7}  {'model':<10}  firmware")
    for f in found:
        if f.collided:
            print(f"{f.id:>3}  {f.baud:>7}  two servos (or more) on this id: their answers collide")
        else:
            print(f"{f.id:>3}  {f.baud:>7}  {f.model:<10}  {f.firmware}")
    return 0


@_noting
def cmd_set_id(args) -> int:
    from armctl.bus.setup import set_id

    with _bus(args) as bus:
        after = set_id(bus, args.old, args.new, args.baud, _confirm(args))
    print(f"servo {args.old} is now id {after.id} at {after.baud} baud ({after.model}; read back)")
    return 0


@_noting
def cmd_set_baud(args) -> int:
    from armctl.bus.setup import set_baud

    with _bus(args) as bus:
        after = set_baud(bus, args.baud, args.id, _confirm(args))
    print(f"servo {after.id} now runs at {after.baud} baud ({after.model}; read back at {after.baud} baud)")
    return 0


@_noting
def cmd_setup(args) -> int:
    from armctl.bus.setup import check_baud, setup_servos

    joints, models = _arm_joints(args)
    with _bus(args) as bus:
        baud = check_baud(args.baud, bus, "--baud") if args.baud is not None else bus.factory_baud
        done = setup_servos(bus, joints, baud, _prompt, print, None if args.any_model else models)
    print(f"all {len(done)} servos answer at their ids at {baud} baud:")
    for d in done:
        print(f"  {d['joint']:<14} id {d['id']:>3}  {d['model']}  firmware {d['firmware']}")
    return 0


def _prompt(question: str) -> str:
    """A setup prompt's answer; q (quit) stops, nothing more written."""
    answer = _ask(question + " (q quits)")
    if answer.lower() in ("q", "quit"):
        raise BadInputError("servos setup: stopped (q): the servos set up so far keep their new ids")
    return answer


def _arm_joints(args) -> tuple[list[tuple[str, int]], dict[str, str]]:
    """(joint, id) of every bus servo of ``--arm`` (its calibration, or the preset's example), in the asked order,
    and the servo model the arm names at each joint (where it names one)."""
    from armctl.calibration.lerobot import open_calibration
    from armctl.model.arm import load_arm

    if not args.arm_given:
        raise BadInputError("servos setup needs --arm ARM (e.g. so101): its joints' ids come from its calibration")
    arm = load_arm(args.arm)
    cal, path, _ = open_calibration(args.calibration, arm)
    if cal.unit != "steps":
        raise BadInputError(f"--arm {args.arm}: its calibration {path} drives hobby servos, not bus servos")
    joints = [(s.name, s.id) for s in (*cal.servos, *cal.held)]
    named = [arm.drive.servo(i) for i in range(arm.n)] + [arm.drive.gripper if arm.gripper is not None else None]
    models = {s.name: d.model.key for s, d in zip(cal.servos, named) if d is not None}
    return (joints[::-1] if args.order == "gripper-first" else joints), models
