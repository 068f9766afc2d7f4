"""pyserial URL handler for a simulated Feetech servo bus: ``feetechsim://``.

Importing ``armctl.bus`` registers it, then ``serial.serial_for_url(url)`` opens a simulated half-duplex
bus of Feetech servos (SO-100/SO-101 style: STS3215, ids 1 to 6) that answers the Feetech protocol byte
for byte (docs/feetech.md). ``python -m armctl.bus.sim_pty 'feetechsim://...'`` serves the same bus on
a pseudo-terminal for programs that need a device path (the vendor's SDK).

URL format::

    feetechsim://[?option=value[&option=value...]]

Options (lists are comma-separated):

- ``ids=I,J,..|A-B``    servo ids on the bus (default 1-6); an id repeated is several servos on that id (as
                        factory-new servos: ``ids=1,1,1,1,1,1``), whose answers collide (the host hears garbage)
- ``model=NAME``        sts3215 (default; any STS/SMS: little-endian, 4096 steps a turn) or scs0009
                        (SCS: big-endian, 1024 steps, no SYNC_READ)
- ``baud=N``            the servos' baud rate (default 1000000; one of 1000000, 500000, 250000, 128000,
                        115200, 76800, 57600, 38400). The link runs at the host's rate; servos at
                        another rate do not understand it
- ``rate=X``            simulated seconds per wall second (default 1; 20 for fast tests)
- ``start=S,S,..``      initial present positions, steps, in ``ids`` order (default: half a turn, 2048)
- ``speed=STEP_S``      top speed, used when goal_speed is 0 (default 3400 step/s, about 300 deg/s); with
                        ``physics=1``: simulated seconds per wall second, as ``rate`` (the servos' speed is then
                        their model's)
- ``accel=STEP_S2``     acceleration when the acceleration register is 0 (default 25400 step/s^2)
- ``volts=V``           supply voltage (default 7.4; outside the servo's 4.0-8.0 V limits every answer
                        carries the voltage error bit)
- ``temp=C``            ambient temperature, degC (default 25)
- ``drop=P``            probability that a packet is lost, each direction (default 0)
- ``corrupt=P``         probability that a packet gets one bit flipped, each direction (default 0)
- ``delay=MS``          added latency per packet, each direction, simulated ms (default 0)
- ``disconnect=N``      the adapter is pulled after N host bytes: later reads and writes raise
- ``seed=S``            random seed for the faults
- ``echo=1``            the host hears its own bytes before the answers (adapters with TX tied to RX)
- ``missing=I,..``      ids that are not on the bus (never answer)
- ``stall=I,..``        jammed servos: with torque on they do not move, push, and end up overloaded
- ``garble=I,..``       servos whose every answer arrives with one bit flipped
- ``stops=I:LO:HI,..``  mechanical stops of servo I, encoder steps (present + homing offset)
- ``state=PATH``        keep the servos' EEPROM (written with lock 0), positions and RAM (torque, goal:
                        they stay powered between runs) in this file
- ``plug=I,..``        with ``state``: servos with these ids that the state file does not have are
                        plugged in (new, at half a turn); armctl's default port lists the calibration's ids
- ``offsets=I:V,..``    servo I's homing offset (EEPROM, steps: present = actual - offset), as a
                        calibration (LeRobot's) left it; set at power-on, over the state file's
- ``limits=I:LO:HI,..`` servo I's min/max position limits (EEPROM, steps), likewise
- ``hand=FILE.csv``     a hand moves the servos: CSV rows ``t_s,id,steps`` (an optional header line
                        ``t_s,id,steps``, ``#`` comments). ``t_s``: simulated seconds since the bus was
                        powered (the port opened; on the pty, the server started); ``steps``: encoder
                        steps, present position + homing offset (with offset 0, what the servo reads).
                        A servo with torque off is where the hand holds it, interpolated linearly between
                        its rows (``present_speed`` and ``moving`` follow), untouched before its first row
                        and left where the last one put it; with torque on it resists (the rows are
                        ignored until the torque goes off again, when it goes where the hand holds it).
                        Mechanical ``stops`` still bound it; a ``stall``ed servo does not turn.
- ``connected=FILE``    the servos plugged in now, by their place in ``ids`` (1: the first), re-read before each
                        packet: numbers or ranges (``3``, ``1-6``), or ``all``; a missing or empty file: none
                        (``armctl.sim.connected``; to plug servos in one at a time, as ``armctl servos setup`` asks)
- ``arm=NAME|PATH``     the arm the servos move (``cal=PATH``: its calibration, default the arm's), which
                        makes the simulator offer where the arm really is (``true_tool_m``, the scene)
- ``truth=FILE.yaml``   with ``arm``: how the real arm differs from what armctl believes (``armctl.sim.truth``:
                        zero offsets, link lengths, bow, backlash, parts), applied between each servo's shaft
                        (what its present position reads) and its joint
- ``physics=1&scene=FILE.yaml``  with ``arm``: the servos move a physics plant (MuJoCo, ``armctl[physics]``;
                        ``armctl.sim.physics``): the arm from armctl's model with its servos' torque and speed, the
                        scene file's table, parts and cameras. The goal (within the angle limits) is the servo's
                        target, ``torque_limit`` its torque (torque off: limp); the present position, speed and
                        load are the plant's; ``status --json`` gives ``world``. Not with ``truth``

``baud`` is the servos' rate; the link runs at the rate the host sets (the port's ``baudrate``, or on the
pty any rate the client sets), and servos at another rate stay silent.

The opened port has ``.sim`` (a ``FeetechSim``): its servos, test hooks (``turn_by_hand``,
``set_stops``, ``power_cycle``) and the log of the packets the servos took in (the last ``feetechsim.LOG_PACKETS``).
"""

from __future__ import annotations

import urllib.parse
from pathlib import Path

from armctl.bus.feetech.protocol import BAUD_RATES, MAX_ID, get_series
from armctl.calibration.lerobot import open_calibration
from armctl.calibration.servo import STEPS_PER_TURN
from armctl.errors import BadInputError
from armctl.sim.feetechsim import FeetechSim, FeetechSimOptions, read_hand_file
from armctl.sim.simurl import BUS_OPTIONS, BadSimURL, BusSimSerial, check_bus_options, parse_options
from armctl.sim.simurl import id_list as _ids

EXPECTED = (
    "expected a URL like feetechsim://[?ids=1-6&rate=20&drop=0.01] with options ids, model, baud, rate, start, "
    "speed, accel, volts, temp, drop, corrupt, delay, disconnect, seed, echo, missing, stall, garble, stops, state, "
    "plug, offsets, limits, hand, connected, arm, cal, truth, physics, scene"
)


_OPTIONS = {**BUS_OPTIONS, "plug": ("plug", _ids), "physics": ("physics", int), "scene": ("scene", str)}


def _bad(message: str) -> BadSimURL:
    return BadSimURL(f"feetechsim option {message}; {EXPECTED}")


def parse_url(url: str) -> FeetechSimOptions:
    """FeetechSimOptions from a ``feetechsim://`` URL; SerialException with the expected form if it is wrong."""
    opts, where = parse_options(url, "feetechsim", _OPTIONS, FeetechSimOptions(), EXPECTED)
    if where:
        raise BadSimURL(f"feetechsim URL {url!r} has a host or path; {EXPECTED}")
    if opts.physics == 1 and "speed" in urllib.parse.parse_qs(urllib.parse.urlsplit(url).query):
        opts.rate, opts.speed_steps_s = opts.speed_steps_s, FeetechSimOptions.speed_steps_s  # physics' speed
    try:
        series = get_series(opts.model)
    except BadInputError:
        raise _bad(f"model={opts.model!r} is not a Feetech model (sts3215, sts3250, scs0009, sts, scs)") from None
    _check_ids(opts)
    _check_link(opts)
    _check_servos(opts, series.steps_per_turn - 1)
    if opts.hand is not None:
        _read_hand(opts, series.steps_per_turn)
    return opts


def _check_ids(opts: FeetechSimOptions) -> None:
    """The servos' ids (and those missing, stalling, garbling): 0..MAX_ID, at least one; repeated (servos sharing an
    id) only without an arm (whose calibration gives each joint its own id)."""
    for name in ("ids", "missing", "stall", "garble"):
        ids = getattr(opts, name)
        if any(not 0 <= i <= MAX_ID for i in ids):
            raise _bad(f"{name}: ids must be 0..{MAX_ID}")
    if not opts.ids:
        raise _bad("ids: at least one id")
    if len(set(opts.ids)) != len(opts.ids) and opts.arm is not None:
        raise _bad("ids: an id repeated (servos sharing it) is not for a bus moving an arm")
    if opts.start_steps is not None and len(opts.start_steps) > len(opts.ids):
        raise _bad(f"start: {len(opts.start_steps)} positions for {len(opts.ids)} ids")


def _check_link(opts: FeetechSimOptions) -> None:
    """The bus and the servos' physics: baud rate, faults, rates, speeds, supply, temperature, delay."""
    if opts.baud not in BAUD_RATES:
        raise _bad(f"baud={opts.baud} is not a Feetech baud rate {BAUD_RATES}")
    check_bus_options(opts, _bad)


def _check_servos(opts: FeetechSimOptions, top: int) -> None:
    """Per servo: mechanical stops and angle limits inside 0..``top`` steps, homing offsets inside -2047..2047."""
    for servo_id, (lo, hi) in opts.stops.items():
        if not 0 <= lo <= hi <= top:
            raise _bad(f"stops: servo {servo_id} needs 0 <= LO <= HI <= {top} steps")
    for servo_id, value in opts.offsets.items():
        if abs(value) > 2047:
            raise _bad(f"offsets: servo {servo_id}'s homing offset {value} is outside -2047..2047")
    for servo_id, (lo, hi) in opts.limits.items():
        if not 0 <= lo <= hi <= top:
            raise _bad(f"limits: servo {servo_id} needs 0 <= LO <= HI <= {top} steps")


def _read_hand(opts: FeetechSimOptions, steps_per_turn: int) -> None:
    """``opts.hand_track`` from the hand file (the servos a hand turns); its ids on the bus unless a state file
    gives the bus."""
    try:
        opts.hand_track = read_hand_file(opts.hand, steps_per_turn)
    except ValueError as exc:
        raise BadSimURL(f"feetechsim option hand={opts.hand}: {exc}") from None
    stray = sorted(set(opts.hand_track) - set(opts.ids))
    if stray and opts.state is None:
        raise BadSimURL(f"feetechsim option hand={opts.hand}: id {stray[0]} is not on the bus (ids {opts.ids})")


class Serial(BusSimSerial):
    """A simulated Feetech bus behind a pyserial port (see the module docstring for the URL)."""

    scheme = "feetechsim"
    sim_class = FeetechSim

    def from_url(self, url):
        return parse_url(url)


open_simulator = Serial.open_url


def simulator_url(arm, cal_path, state_path) -> str:
    """A simulated bus with the calibration's servos, starting at the arm's home pose."""
    cal = open_calibration(cal_path, arm)[0]  # an armctl YAML, or LeRobot's JSON
    angles = [*arm.home_rad, *([arm.gripper.open_rad] if arm.gripper is not None and cal.gripper else [])]
    start = [round(float(s.value(a))) % STEPS_PER_TURN for s, a in zip(cal.servos, angles)]
    start += [round(h.position_steps) for h in cal.held]  # a held servo stands where it is held
    query = {"ids": ",".join(str(s.id) for s in (*cal.servos, *cal.held)), "state": str(state_path)}
    if not Path(state_path).is_file():  # else the servos stand (and hold) where the last run left them
        query["start"] = ",".join(map(str, start))
    else:  # a servo the file lacks (the calibration gained one) is plugged in
        query["plug"] = query["ids"]
    servos = (*cal.servos, *cal.held)
    offsets = [f"{s.id}:{s.homing_offset}" for s in servos if s.homing_offset is not None]
    # A new bus (no state file yet): its EEPROM as LeRobot's calibration left it. After that the servos keep
    # what was written to them, as real ones do: a calibration file edited since (or ids swapped) no longer
    # matches them, and armctl refuses it (exit 4) as it would on a real bus.
    if offsets and not Path(state_path).is_file():
        query["offsets"] = ",".join(offsets)
        query["limits"] = ",".join(
            f"{s.id}:{round(s.min_steps)}:{round(s.max_steps)}" for s in cal.servos if s.homing_offset is not None
        )
    return "feetechsim://?" + urllib.parse.urlencode(query, safe=",/:")
