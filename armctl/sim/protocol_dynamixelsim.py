"""pyserial URL handler for a simulated Dynamixel X-series bus: ``dynamixelsim://``.

Importing ``armctl.bus`` registers it, then ``serial.serial_for_url(url)`` opens a simulated half-duplex bus of
Dynamixel servos (Protocol 2.0; XL430-W250, ids 1 to 6, at the factory's 57600 baud by default) that answers
byte for byte as the e-manual says (``armctl.sim.dynamixelsim``). ``python -m armctl.bus.sim_pty
'dynamixelsim://...'`` serves the same bus on a pseudo-terminal for programs that need a device path (the
vendor's ``dynamixel_sdk``, LeRobot).

URL format::

    dynamixelsim://[?option=value[&option=value...]]

Options (lists are comma-separated):

- ``ids=I,J,..|A-B``    servo ids on the bus (default 1-6); an id repeated is several servos on that id (as
                        factory-new servos: ``ids=1,1,1``), whose answers collide (the host hears garbage)
- ``model=NAME[,ID:NAME..]``  the servos' model (default xl430-w250): xl330-m077, xl330-m288, xl430-w250,
                        xc430-w150, xm430-w350, xm540-w270 (or xl330, xl430, xc430, xm430, xm540); ``ID:NAME``
                        items give one id another model (``model=xl330,1:xl430,2:xl430``)
- ``baud=N``            the servos' baud rate (default 57600, the factory's; one of 9600, 57600, 115200,
                        1000000, 2000000, 3000000, 4000000, 4500000). The link runs at the host's rate
- ``rate=X``            simulated seconds per wall second (default 1)
- ``start=S,S,..``      initial present positions, steps, in ``ids`` order (default 2048)
- ``speed=STEP_S``      top speed when the profile velocity is 0 (default 4000 step/s)
- ``accel=STEP_S2``     acceleration when the profile acceleration is 0 (default 40000 step/s^2)
- ``volts=V``           supply voltage (default: each model's recommended one, 5 V for XL330, 11.1 V for XL430,
                        12 V for the others; outside a servo's voltage limits: input voltage error)
- ``temp=C``            ambient temperature, degC (default 25)
- ``drop=P``, ``corrupt=P``, ``delay=MS``, ``disconnect=N``, ``seed=S``, ``echo=1``: the link, as ``feetechsim``
- ``missing=I,..``      ids that are not on the bus; ``stall=I,..`` jammed servos (they push, then overload);
                        ``garble=I,..`` servos whose every answer arrives with one bit flipped
- ``stops=I:LO:HI,..``  mechanical stops of servo I (shaft steps)
- ``state=PATH``        keep the servos' EEPROM, positions and RAM in this file between runs
- ``offsets=I:V,..``    servo I's homing offset (steps: present = shaft + offset); ``limits=I:LO:HI,..`` its
                        min/max position limits (as a calibration left them); ``modes=I:M,..`` its operating mode
                        (3 position, the factory's; 4 extended position; 5 current-based position, as LeRobot sets
                        a Koch's gripper; 1 velocity; 0 current; 16 PWM), where its model has that mode
- ``hand=FILE.csv``     a hand turns the servos with torque off: rows ``t_s,id,steps`` (present position), as
                        ``feetechsim``'s
- ``connected=FILE``    the servos plugged in now, by their place in ``ids`` (1: the first), re-read before each
                        packet: numbers or ranges, or ``all``; a missing or empty file: none (``armctl.sim.connected``)
- ``arm=NAME|PATH``, ``cal=PATH``, ``truth=FILE.yaml``: the arm the servos move and its truth, as ``feetechsim``

The opened port has ``.sim`` (a ``DynamixelSim``): its servos, test hooks (``turn_by_hand``, ``set_stops``,
``power_cycle``) and the log of the packets the servos took in.
"""

from __future__ import annotations

import urllib.parse
from pathlib import Path

from armctl.bus.dynamixel.protocol import BAUD_RATES, MAX_ID, STEPS_PER_TURN, get_model
from armctl.calibration.lerobot import open_calibration
from armctl.errors import BadInputError
from armctl.sim.dynamixelsim import DynamixelSim, DynamixelSimOptions
from armctl.sim.feetech_servo import read_hand_file
from armctl.sim.simurl import (
    BUS_OPTIONS,
    BadSimURL,
    BusSimSerial,
    check_bus_options,
    parse_options,
    per_id,
)

EXPECTED = (
    "expected a URL like dynamixelsim://[?ids=1-6&model=xl430&baud=57600] with options ids, model, baud, rate, "
    "start, speed, accel, volts, temp, drop, corrupt, delay, disconnect, seed, echo, missing, stall, garble, stops, "
    "state, offsets, limits, modes, hand, connected, arm, cal, truth"
)

_OPTIONS = {**BUS_OPTIONS, "modes": ("modes", per_id(int))}


def _bad(message: str) -> BadSimURL:
    return BadSimURL(f"dynamixelsim option {message}; {EXPECTED}")


def parse_url(url: str) -> DynamixelSimOptions:
    """DynamixelSimOptions from a ``dynamixelsim://`` URL; BadSimURL with the expected form if it is wrong."""
    opts, where = parse_options(url, "dynamixelsim", _OPTIONS, DynamixelSimOptions(), EXPECTED)
    if where:
        raise BadSimURL(f"dynamixelsim URL {url!r} has a host or path; {EXPECTED}")
    _parse_models(opts)
    _check(opts)
    if opts.hand is not None:
        try:
            opts.hand_track = read_hand_file(opts.hand, STEPS_PER_TURN)
        except ValueError as exc:
            raise BadSimURL(f"dynamixelsim option hand={opts.hand}: {exc}") from None
    return opts


def _parse_models(opts: DynamixelSimOptions) -> None:
    """``model=NAME[,ID:NAME..]``: the default model and the per-id ones, each a model armctl knows."""
    default, per = None, {}
    for item in (v.strip() for v in opts.model.split(",")):
        servo_id, colon, name = item.rpartition(":")
        try:
            get_model(name)
        except BadInputError as exc:
            raise _bad(f"model: {exc}") from None
        if not colon:
            default = name
            continue
        try:
            per[int(servo_id)] = name
        except ValueError:
            raise _bad(f"model: {item!r} is not ID:NAME") from None
    opts.model = default or DynamixelSimOptions.model
    opts.models = per


def _check(opts: DynamixelSimOptions) -> None:
    for name in ("ids", "missing", "stall", "garble"):
        if any(not 0 <= i <= MAX_ID for i in getattr(opts, name)):
            raise _bad(f"{name}: ids must be 0..{MAX_ID}")
    if not opts.ids:
        raise _bad("ids: at least one id")
    if len(set(opts.ids)) != len(opts.ids) and opts.arm is not None:
        raise _bad("ids: an id repeated (servos sharing it) is not for a bus moving an arm")
    if opts.start_steps is not None and len(opts.start_steps) > len(opts.ids):
        raise _bad(f"start: {len(opts.start_steps)} positions for {len(opts.ids)} ids")
    bauds = sorted(set(BAUD_RATES.values()))
    if opts.baud not in bauds:
        raise _bad(f"baud={opts.baud} is not a Dynamixel baud rate {bauds}")
    for servo_id in opts.ids:
        model = get_model(opts.models.get(servo_id, opts.model))
        if opts.baud not in model.baud_rates.values():
            raise _bad(f"baud={opts.baud}: servo {servo_id}'s {model.name.upper()} does not run at it")
    check_bus_options(opts, _bad)
    for servo_id, (lo, hi) in opts.limits.items():
        if not 0 <= lo <= hi <= STEPS_PER_TURN - 1:
            raise _bad(f"limits: servo {servo_id} needs 0 <= LO <= HI <= {STEPS_PER_TURN - 1} steps")
    for servo_id, mode in opts.modes.items():
        model = get_model(opts.models.get(servo_id, opts.model))
        if mode not in model.modes:
            raise _bad(f"modes: servo {servo_id}'s {model.name.upper()} has no operating mode {mode} ({model.modes})")
    for servo_id, value in opts.offsets.items():
        if abs(value) > 1_044_479:
            raise _bad(f"offsets: servo {servo_id}'s homing offset {value} is outside -1044479..1044479")


class Serial(BusSimSerial):
    """A simulated Dynamixel bus behind a pyserial port (see the module docstring for the URL)."""

    scheme = "dynamixelsim"
    sim_class = DynamixelSim

    def from_url(self, url):
        return parse_url(url)


open_simulator = Serial.open_url


#: the baud rate of an arm's simulated bus with no port given: LeRobot's Koch and ROBOTIS' OpenManipulator-X run at it
ASSEMBLED_BAUD = 1_000_000


def _known(name: str) -> bool:
    try:
        get_model(name)
    except BadInputError:
        return False
    return True


def simulator_url(arm, cal_path, state_path) -> str:
    """A simulated bus with the calibration's servos, the models the arm names, at ``ASSEMBLED_BAUD``, starting at
    the arm's home pose (their homing offsets and limits as the calibration gives them while no state file exists)."""
    cal = open_calibration(cal_path, arm)[0]
    angles = [*arm.home_rad, *([arm.gripper.open_rad] if arm.gripper is not None and cal.gripper else [])]
    servos = (*cal.servos, *cal.held)
    query = {"ids": ",".join(str(s.id) for s in servos), "state": str(state_path)}
    # the servos the arm names (the Koch's XL430s and XL330s), at the 1 Mbaud an assembled arm runs at
    named = [arm.drive.servo(i) for i in range(arm.n)] + [arm.drive.gripper if arm.gripper is not None else None]
    models = [f"{s.id}:{d.model.key}" for s, d in zip(cal.servos, named) if d is not None and _known(d.model.key)]
    if models:
        query["model"] = ",".join(models)
    query["baud"] = str(ASSEMBLED_BAUD)
    grip = cal.gripper
    gm = named[-1].model.key if named[-1] is not None and _known(named[-1].model.key) else None
    if grip is not None and gm is not None and get_model(gm).has_current_position_mode:
        query["modes"] = f"{grip.id}:5"  # the gripper in current-based position mode, as LeRobot and ROBOTIS set it
    if not Path(state_path).is_file():
        start = [round(float(s.value(a))) for s, a in zip(cal.servos, angles)]
        start += [round(h.position_steps) for h in cal.held]
        query["start"] = ",".join(map(str, start))
        offsets = [f"{s.id}:{s.homing_offset}" for s in servos if s.homing_offset is not None]
        if offsets:
            query["offsets"] = ",".join(offsets)
    return "dynamixelsim://?" + urllib.parse.urlencode(query, safe=",/:")
