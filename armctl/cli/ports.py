"""``armctl ports``: the serial ports, and which board answers on each; and ``--port auto`` for every
command that opens a port. The probing itself is ``armctl.bus.probe``."""

from __future__ import annotations

import json
import sys

from armctl.cli import add_command
from armctl.errors import BadInputError, LinkError

EPILOG = """\
Each port that looks like a board (a USB serial device) is opened and asked, in bounded time, for our
firmware's handshake (115200 baud) and for StandardFirmata's version (57600 baud); if neither answers,
Feetech bus servos (ids 0-20) are pinged at 1 Mbaud. I2C buses (/dev/i2c-*) are scanned at 0x40..0x7F for
PCA9685 boards (reads only). Opening an Arduino Uno's port resets it: the probe waits for the board to start
again (up to about 6 s; all ports at once).
A port another armctl holds is reported as in use and not opened.
examples:
  armctl ports
  armctl ports --json
  armctl ports /dev/ttyS0 /dev/pts/3           # probe these (any path), not the listed ones
  armctl ports /dev/i2c-1                       # what answers on an I2C bus (a PCA9685 at 0x40?)
  armctl --port auto status                     # use the one board found"""


DESCRIPTION = (
    "List the serial ports (pyserial list_ports) and identify the board on each: our firmware, "
    "StandardFirmata, or Feetech bus servos; and PCA9685 boards on an I2C bus (/dev/i2c-*)."
)


def register(sub, parents) -> None:
    p = add_command(sub, "ports", parents=parents, epilog=EPILOG, description=DESCRIPTION)
    p.add_argument("ports", nargs="*", metavar="PORT", help="probe these ports instead of the listed ones")
    p.add_argument("--json", action="store_true", help="print JSON: one object per port")
    p.set_defaults(func=cmd_ports)


def _reports(explicit: list[str] | None, *, quiet: bool):
    from armctl.bus.probe import PortInfo, candidates, is_i2c, probe_all
    from armctl.bus.simulators import is_bus_simulator

    listed = [PortInfo(p) for p in explicit] if explicit else candidates()
    if not quiet and any(p.looks_like_board and not (is_i2c(p.device) or is_bus_simulator(p.device)) for p in listed):
        print(
            "armctl ports: opening a port resets an Arduino Uno; waiting for each board to start (up to ~6 s)...",
            file=sys.stderr,
            flush=True,
        )
    return probe_all(listed, on_reset=_hold_stored_pose)


def _hold_stored_pose(device: str, ser, hello) -> str | None:
    """Our firmware reset when the probe opened ``device``: its servos went limp. Set them to the pose armctl
    stored for this port when an arm was last left on it (the newest, whatever the arm): they hold it again,
    nothing moves. Words for the report, or None if no pose is stored."""
    from armctl.bus.probe import set_pulses
    from armctl.calibration.servo import find_calibration, load_calibration
    from armctl.errors import ArmctlError
    from armctl.model.arm import load_arm
    from armctl.robot.state import PoseStore, stored_values_for_port

    for arm_name, _, _ in stored_values_for_port(device):
        try:
            arm, cal = load_arm(arm_name), load_calibration(find_calibration(arm_name))
        except ArmctlError:
            continue
        if cal.unit != "us":
            continue
        stored, why = PoseStore(device, arm).checked(cal)  # the same checks as before a move
        if stored is None:
            return f"servos left without pulses: the pose stored for {arm_name} cannot be trusted ({why})"
        values = stored.values
        if len(values) != len(cal.servos):
            continue
        widths = {s.channel: v for s, v in zip(cal.servos, values) if v is not None}
        if not widths:
            continue
        if set_pulses(ser, hello, widths):
            return f"servos set to the pose stored for {arm_name}"
        return f"could not set the pose stored for {arm_name}: the servos have no pulses"
    return None


def cmd_ports(args) -> int:
    reports = _reports(args.ports or None, quiet=args.json)
    if args.json:
        print(json.dumps([r.to_dict() for r in reports], indent=1))
        return 0
    if not reports:
        print("no serial ports found")
        return 0
    rows = [("port", "usb id", "device", "what answered")]
    for r in reports:
        what = r.detail if r.backend is not None else f"{r.found}: {r.detail}"
        if r.reset_seen:
            what += " [reset on open]"
        rows.append((r.port, r.usb_id or "-", r.description or "-", what))
    widths = [max(len(row[i]) for row in rows) for i in range(3)]
    for row in rows:
        print("  ".join(c.ljust(w) for c, w in zip(row, widths)) + "  " + row[3])
    return 0


def auto_port(args) -> tuple[str, str]:
    """``--port auto``: (port, backend) of the one board found; LinkError (exit 4) naming what was found if
    there is none or more than one, or if ``--backend`` was given and the board runs another firmware."""
    reports = _reports(None, quiet=False)
    boards = [r for r in reports if r.backend is not None]
    if len(boards) != 1:
        seen = ", ".join(f"{r.port} ({r.detail if r.backend else r.found})" for r in reports) or "no serial ports"
        if not boards:
            raise LinkError(f"--port auto: no board found ({seen}); connect one, or give --port PATH")
        raise LinkError(f"--port auto: {len(boards)} boards found ({seen}): choose one with --port PATH")
    board = boards[0]
    if getattr(args, "backend_given", False) and args.backend != board.backend:
        raise LinkError(
            f"--port auto: the board on {board.port} runs {board.detail}, which --backend {board.backend} drives, "
            f"not --backend {args.backend}"
        )
    print(f"armctl {args.command}: --port auto: {board.port}: {board.detail}", file=sys.stderr, flush=True)
    return board.port, board.backend


def resolve_port(args) -> None:
    """Replace ``--port auto`` in ``args`` by the board found (and its backend); anything else stays."""
    if args.port is None or args.port.strip().lower() != "auto":
        return
    if getattr(args, "command", None) is None:
        raise BadInputError("--port auto needs a command that opens the port")
    args.port, args.backend = auto_port(args)
