"""pyserial URL handler for the simulated arm: ``armsim://``.

Importing ``armctl.bus`` registers it, then ``serial.serial_for_url(url)`` opens a
simulated board that speaks the armctl protocol (docs/protocol.md) byte for
byte and drives simulated servos of a simulated arm.

URL format::

    armsim://[ARM][?option=value[&option=value...]]

ARM is an arm preset name or file (same as option ``arm``). Options:

- ``arm=NAME|PATH``     arm preset or file (default seed-3link)
- ``cal=PATH``          calibration that defines the servos (default calibration/<arm>.yaml)
- ``rate=X``            simulated seconds per wall second (default 1; 20 for fast tests); with ``physics=1`` it
                        is also named ``speed=X`` (the plant runs X simulated seconds a wall second where the
                        program waits on nobody; as fast as it can when that is slower)
- ``baud=N``            link speed, 10 bits per byte each way (default 115200; 0 = instant)
- ``drop=P``            probability that a line is lost, each direction (default 0)
- ``corrupt=P``         probability that a line gets one bit flipped, each direction (default 0)
- ``delay=MS``          added latency per line, each direction, simulated ms (default 0)
- ``disconnect=N``      the link dies after N host bytes: later reads and writes raise
- ``seed=S``            random seed for faults and the boot id
- ``protocol=1|2``      the protocol version the board speaks (default 2, the newest; 1 is a board
                        from before version 2, e.g. for testing that old boards are still driven)
- ``depth=N``           board queue depth (default 16); ``channels=N`` channel count (default our
                        firmware's: 8 in version 2, 4 in version 1; at most 9 and 4)
- ``slew=DEG_S``        servo speed, deg/s (default 400, i.e. 60 deg in 0.15 s)
- ``offset=D,D,..``     hidden per-servo angle error, deg (joints, then gripper)
- ``scale=F,F,..``      hidden per-servo gain error (true us/deg = calibrated * F)
- ``flip=I,I,..``       servos (0-based) whose true direction is reversed
- ``start=D,D,..``      initial joint angles, deg (default: the arm's home; gripper open)
- ``state=PATH``        keep the servo positions and the board's limits (its EEPROM) in this file
                        between runs
- ``limits=LO:HI,..``   per-channel pulse limits (us) the board boots with (default: from ``state``,
                        else 500:2500)
- ``boot=HEX``          fixed boot id
- ``encoders=0|1``      1 (default): every joint has an encoder, so the board can say where the arm is
                        (``measured_angles``); 0: a real Uno's PWM servos, whose position nothing reads (a
                        board that lost its pulses then knows its pose only from armctl's state file, or
                        the user's word: ``--assume-pose``)
- ``stall=NAME@S``       the servo NAME (a joint's name, or ``gripper``) jams S simulated seconds after the port
                        opened: its horn stays where it is from then on, whatever its pulses (a stalled or
                        slipping hobby servo, for the camera's watch)
- ``truth=FILE.yaml``   how the real arm differs from what armctl believes (``armctl.sim.truth``: zero offsets,
                        link lengths, pulse-to-angle bow, backlash, parts on the table), physically applied:
                        the encoders and the tool read the true angles; ``status --json`` gives ``true_tool_m``
- ``physics=1&scene=FILE.yaml``  the servos move a physics plant (MuJoCo, ``armctl[physics]``;
                        ``armctl.sim.physics``): the arm from armctl's model with its servos' torque and speed, the
                        scene file's table, parts and cameras. A pulse is the servo's target; the encoders, the
                        scene and the cameras (``physicscam://NAME``) see where the plant has the joints;
                        ``status --json`` gives ``world`` (parts, contacts, the part held). Not with ``truth``

The opened port has ``.sim`` (a ``SimArm``: recorded pulses (the last ``armsim.PULSES_KEPT``), true joint
angles, gripper and tool (``true_q_rad``, ``true_gripper_rad``, ``true_tool_m``, ``true_tool_pose``), for tests;
live in ``armctl.sim.scene`` while the port is open) and ``measured_angles()``: what an encoder on each joint
would read (the true angles), which the armctl backend offers as measured positions.
"""

from __future__ import annotations

import math
import time
import urllib.parse

from serial.serialutil import SerialException

from armctl.bus import codec
from armctl.sim.armsim import SimArm, SimOptions
from armctl.sim.link import LinkGone
from armctl.sim.simurl import BadSimURL, SimSerial, parse_options

EXPECTED = (
    "expected a URL like armsim://[ARM][?rate=20&drop=0.01&seed=1] with options arm, cal, rate, baud, drop, "
    "corrupt, delay, disconnect, seed, protocol, depth, channels, slew, offset, scale, flip, start, state, limits, "
    "boot, encoders, stall, truth, physics, scene, speed"
)


def _floats(text: str) -> list[float]:
    return [float(v) for v in text.split(",") if v.strip()]


def _stall(text: str) -> tuple[str, float]:
    """``NAME@SECONDS`` (SECONDS >= 0); ValueError for anything else."""
    name, at, seconds = text.rpartition("@")
    t = float(seconds)
    if not at or not name.strip() or not (math.isfinite(t) and t >= 0):
        raise ValueError(text)
    return name.strip(), t


_OPTIONS = {
    "arm": ("arm", str),
    "cal": ("cal", str),
    "rate": ("rate", float),
    "speed": ("speed", float),  # (physics=1's name of rate)
    "physics": ("physics", int),
    "scene": ("scene", str),
    "baud": ("baud", int),
    "drop": ("drop", float),
    "corrupt": ("corrupt", float),
    "delay": ("delay_ms", float),
    "disconnect": ("disconnect", int),
    "seed": ("seed", int),
    "protocol": ("protocol", int),
    "depth": ("depth", int),
    "channels": ("channels", int),
    "slew": ("slew_deg_s", float),
    "offset": ("offset_deg", _floats),
    "scale": ("scale", _floats),
    "flip": ("flip", lambda s: [int(v) for v in s.split(",") if v.strip()]),
    "start": ("start_deg", _floats),
    "state": ("state", str),
    "boot": ("boot", lambda s: int(s, 16)),
    "encoders": ("encoders", int),
    "truth": ("truth", str),
    "stall": ("stall", _stall),
    "limits": ("limits_us", lambda s: [tuple(float(v) for v in p.split(":", 1)) for p in s.split(",") if p.strip()]),
}


def _speed(opts) -> None:
    """``speed`` is physics=1's name of ``rate``: without physics=1 it is unknown (the kinematic URL is as it was)."""
    if opts.speed is None:
        return
    if opts.physics != 1:
        raise BadSimURL(f"unknown armsim option 'speed' (without physics=1: rate=X); {EXPECTED}")
    opts.rate = opts.speed


def parse_url(url: str) -> SimOptions:
    """SimOptions from an ``armsim://`` URL; BadSimURL with the expected form if it is wrong."""
    opts, arm = parse_options(url, "armsim", _OPTIONS, SimOptions(), EXPECTED)
    _speed(opts)
    if arm:
        opts.arm = arm
    for name in ("drop", "corrupt"):
        if not 0.0 <= getattr(opts, name) <= 1.0:
            raise BadSimURL(f"armsim option {name} must be a probability 0..1; {EXPECTED}")
    for pair in opts.limits_us or []:
        if len(pair) != 2 or not 500 <= pair[0] < pair[1] <= 2500:
            raise BadSimURL(f"armsim option limits: each channel LO:HI with 500 <= LO < HI <= 2500 us; {EXPECTED}")

    def bad(what: str) -> BadSimURL:
        return BadSimURL(f"armsim option {what}; {EXPECTED}")

    if not (opts.rate > 0 and math.isfinite(opts.rate)):
        raise bad("rate (speed) must be > 0")
    if not 0 <= opts.baud <= 10_000_000:
        raise bad(f"baud must be 0 (instant) .. 10000000, got {opts.baud}")
    if not 1 <= opts.depth <= 255:
        raise bad(f"depth must be 1..255 queued moves, got {opts.depth}")
    if opts.protocol not in codec.VERSIONS:
        raise bad(f"protocol must be one of {', '.join(map(str, codec.VERSIONS))}, got {opts.protocol}")
    most = codec.max_channels(opts.protocol)
    if opts.channels is not None and not 1 <= opts.channels <= most:
        raise bad(f"channels must be 1..{most} (what protocol {opts.protocol} lines carry), got {opts.channels}")
    if not (opts.slew_deg_s > 0 and math.isfinite(opts.slew_deg_s)):
        raise bad(f"slew must be > 0 deg/s, got {opts.slew_deg_s:g}")
    if not (0 <= opts.delay_ms <= 60_000):
        raise bad(f"delay must be 0..60000 ms, got {opts.delay_ms:g}")
    if opts.disconnect is not None and opts.disconnect < 0:
        raise bad(f"disconnect must be >= 0 bytes, got {opts.disconnect}")
    for name, values in (("offset", opts.offset_deg), ("scale", opts.scale), ("start", opts.start_deg or [])):
        if not all(math.isfinite(v) for v in values):
            raise bad(f"{name} must be finite numbers")
        if len(values) > 8:
            raise bad(f"{name} gives {len(values)} values: one per servo at most (joints, then the gripper)")
    if opts.encoders not in (0, 1):
        raise bad(f"encoders must be 0 (PWM servos nothing reads, as on a real Uno) or 1, got {opts.encoders}")
    if not all(v > 0 for v in opts.scale):
        raise bad("scale must be > 0 (a servo's true us/deg over the calibrated)")
    return opts


class Serial(SimSerial):
    """A simulated arm behind a pyserial port (see the module docstring for the URL)."""

    scheme = "armsim"
    link_gone = LinkGone

    def _open_sim(self):
        opts = parse_url(self.portstr)
        try:
            return SimArm(opts), opts.rate
        except ValueError as exc:  # a bad arm or calibration (name, kind, channels): bad input
            raise BadSimURL(f"armsim: {exc}") from exc
        except Exception as exc:  # a port that cannot be opened
            raise SerialException(f"armsim: {exc}") from exc

    @property
    def measured_angles(self):
        """``_measured_angles`` (the joint encoders), or None with ``encoders=0``: the backend asks for it
        (``callable``) to know whether this board can read where its servos are."""
        sim = getattr(self, "sim", None)
        return None if sim is not None and not sim.opts.encoders else self._measured_angles

    def _measured_angles(self, *, settle_s: float = 0.0) -> dict[int, float]:
        """Where each simulated joint really is: channel -> angle (rad), hidden ``offset``/``scale``/``flip``
        errors included (an encoder on the joint, not on the servo). With ``settle_s`` > 0, first waits up to
        that long (wall time) for the queue to play out and every servo to reach its pulse."""
        self._check()
        sim = self.sim
        deadline = time.monotonic() + max(0.0, settle_s)
        while True:
            sim.pump(self.sim_time_s())
            left = sim.settle_s()
            if left <= 1e-6 or time.monotonic() >= deadline:
                break
            time.sleep(min(0.05, left / self._rate + 0.001))
        return sim.angles_rad()

    def from_url(self, url):
        return parse_url(url)


open_simulator = Serial.open_url


def simulator_url(arm, cal_path, state_path) -> str:
    """The simulated arm (armsim://) with ``arm`` and its calibration."""
    query = {"arm": arm.ref, "cal": str(cal_path), "state": str(state_path)}
    return f"armsim://?{urllib.parse.urlencode(query, safe=',/')}"
