"""A simulated PCA9685 on a simulated I2C bus: ``pca9685sim://``, the board the ``pca9685`` backend drives
when no Raspberry Pi (or no chip) is there.

URL format (the host-side options ``address`` and ``osc_hz`` are those of ``i2c://``)::

    pca9685sim://[?option=value[&option=value...]]

- ``address=0x40[,0x41..]``  the chips on the bus, as the host addresses them (default 0x40)
- ``osc_hz=HZ``             the host's oscillator trim (default 25000000)
- ``chip_osc_hz=HZ``        the simulated chips' true oscillator (default: ``osc_hz``): a board whose
                            oscillator runs off its nominal 25 MHz
- ``state=PATH``            keep the chips' registers in this file, as a powered chip keeps them while its
                            host restarts (delete the file: a power cycle)
- ``log=PATH``              append each output change (at the I2C STOP that latches it) as a CSV row
                            ``t_s,address,channel,width_us`` (width empty: no pulses)
- ``chips=0x40[,..]``       the addresses chips really answer at (default: ``address``): a host looking at
                            another address than the board's pads say
- ``other=0xNN[,..]``       devices at these addresses that answer but are no PCA9685 (a sensor, an EEPROM)
- ``strict=1|0``            refuse what the datasheet forbids (default 1): writing PRE_SCALE while awake,
                            TestMode, reserved registers, RESTART less than 500 us after waking, ON = OFF
- ``arm=NAME|PATH``         the arm whose hobby servos the outputs drive (``cal=PATH``: its calibration, default
                            the arm's; channel k is output k % 16 of the k // 16-th ``address``); each servo
                            slews at ``slew=DEG_S`` (default 400) toward its pulse, and the simulator offers
                            where the arm really is (``true_tool_m``, the scene)
- ``truth=FILE.yaml``       with ``arm``: how the real arm differs from what armctl believes
                            (``armctl.sim.truth``: zero offsets, link lengths, bow, backlash, parts)
- ``physics=1&scene=FILE.yaml``  with ``arm``: the servos move a physics plant (MuJoCo, ``armctl[physics]``;
                            ``armctl.sim.physics``): a pulse is the servo's target, the arm where the plant has it
                            (the scene, the cameras, ``status --json``'s ``world``). Real time: the host times
                            the frames. Not with ``truth``

The chip model (``Chip``) follows datasheet Rev. 4: reset values, the register pointer and its
auto-increment (AI) with the wrap past 0x45 and 0xFE, PRE_SCALE writable only in SLEEP, the 500 us
oscillator start, RESTART, ALL_LED fan-out, outputs latched at STOP (MODE2 OCH = 0), and the LED All Call
address 0x70. ``SimI2CBus`` is the bus the backend talks to (write, write-then-read, probe), and
``BlinkaBus`` wraps it in the object CircuitPython drivers take as ``i2c`` (so Adafruit's own driver can be
run against the same model in tests).
"""

from __future__ import annotations

import json
import math
import time
import urllib.parse
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path

from armctl.bus import pca9685_chip as hw
from armctl.bus.pca9685.i2c import I2CBus, I2CNack, parse_addresses
from armctl.bus.simulators import BadSimURL
from armctl.sim import scene
from armctl.sim.physics.servos import physics_world, pwm_servo
from armctl.sim.pwm_servo import PwmServo
from armctl.sim.simurl import parse_options
from armctl.sim.truth import TrueArmView, simulated_arm, true_arm

ALL_CALL_ADDRESS = 0x70
#: write transactions a chip keeps (``Chip.writes``) and output changes the bus keeps (``SimI2CBus.log``), the
#: newest: a long follow or stream writes every 20 ms frame, and the simulator must run flat (a few MB full)
WRITES_KEPT = 10_000
LOG_KEPT = 20_000
GENERAL_CALL = 0x00
SWRST_BYTE = 0x06

EXPECTED = (
    "expected a URL like pca9685sim://?address=0x40&osc_hz=25000000 with options address, osc_hz, chip_osc_hz, "
    "state, log, chips, other, strict, arm, cal, truth, slew, physics, scene"
)


class DatasheetViolation(RuntimeError):
    """The host did something the PCA9685 datasheet forbids (the strict model refuses it)."""


def _reset_registers() -> bytearray:
    regs = bytearray(256)
    regs[hw.MODE1] = hw.RESET_MODE1
    regs[hw.MODE2] = hw.RESET_MODE2
    regs[hw.SUBADR1 : hw.ALLCALLADR + 1] = bytes((0xE2, 0xE4, 0xE8, 0xE0))
    for ch in range(hw.CHANNELS):
        regs[hw.channel_reg(ch) + 3] = hw.FULL_BIT  # full off: no pulses after power-on
    regs[hw.PRE_SCALE] = hw.RESET_PRESCALE
    return regs


def _readable(reg: int) -> bool:
    return reg <= hw.LAST_LED_REG or reg >= hw.ALL_LED


class Chip:
    """One PCA9685: 256 register bytes, the register pointer, the outputs as latched at the last STOP."""

    def __init__(self, address: int, *, osc_hz: float = hw.OSC_HZ, strict: bool = True, clock=time.monotonic):
        self.address = address
        self.osc_hz = osc_hz
        self.strict = strict
        self.clock = clock
        self.regs = _reset_registers()
        self.pointer = 0
        self.awake_at: float | None = None  # when SLEEP was last cleared
        self.violations: list[str] = []
        #: the write transactions, the last ``WRITES_KEPT``: (time, bytes incl. the pointer)
        self.writes: deque[tuple[float, bytes]] = deque(maxlen=WRITES_KEPT)
        self.outputs: list[float | None] = [None] * hw.CHANNELS  # latched widths, us

    # --- state -------------------------------------------------------------------------------------------

    def power_on(self) -> None:
        """Power-on reset (also the software reset): every register to its reset value, outputs off."""
        self.regs = _reset_registers()
        self.pointer = 0
        self.awake_at = None
        self.outputs = [None] * hw.CHANNELS

    def load(self, regs: list[int]) -> None:
        """Registers as a powered chip kept them (the ``state`` file): awake if SLEEP is clear."""
        self.regs = bytearray(regs)
        self.awake_at = None if self.regs[hw.MODE1] & hw.SLEEP else -1e9
        self.outputs = self._effective_outputs()

    @property
    def sleeping(self) -> bool:
        """True while the oscillator is off (SLEEP set, or cleared less than 500 us ago)."""
        return self.awake_at is None or self.clock() - self.awake_at < hw.OSC_START_S

    @property
    def prescale(self) -> int:
        return self.regs[hw.PRE_SCALE]

    def width_us(self, channel: int) -> float | None:
        """The pulse channel ``channel`` outputs by its registers (us at the chip's true oscillator)."""
        base = hw.channel_reg(channel)
        _, _, counts = hw.decode_channel(bytes(self.regs[base : base + 4]))
        return None if counts is None else counts * hw.count_us(self.prescale, self.osc_hz)

    def _effective_outputs(self) -> list[float | None]:
        if self.regs[hw.MODE1] & hw.SLEEP or self.regs[hw.MODE1] & hw.RESTART:
            return [None] * hw.CHANNELS  # oscillator off, or stopped by a sleep until RESTART
        return [self.width_us(ch) for ch in range(hw.CHANNELS)]

    # --- the bus side ------------------------------------------------------------------------------------

    def _violate(self, what: str) -> None:
        self.violations.append(what)
        if self.strict:
            raise DatasheetViolation(f"PCA9685 at 0x{self.address:02x}: {what}")

    def _next(self, reg: int) -> int:
        if not self.regs[hw.MODE1] & hw.AI:
            return reg
        if reg == hw.LAST_LED_REG:
            return 0x00
        if reg >= hw.ALL_LED:
            return 0x00 if reg >= hw.PRE_SCALE else reg + 1  # past PRE_SCALE (or TestMode) to MODE1
        return reg + 1

    def write(self, data: bytes) -> None:
        """One write transaction (after the address byte): the first byte sets the pointer, the rest are
        written from there on. Raises I2CNack for a reserved register."""
        if not data:
            return  # an address-only write (a probe)
        self.writes.append((self.clock(), bytes(data)))
        reg = data[0]
        if not _readable(reg):
            self.violations.append(f"register 0x{reg:02x} is reserved")  # the chip says so itself: a NACK
            raise I2CNack(self.address, f"register 0x{reg:02x} is reserved (not acknowledged)")
        self.pointer = reg
        for value in data[1:]:
            self._write_reg(self.pointer, value)
            self.pointer = self._next(self.pointer)

    def _write_reg(self, reg: int, value: int) -> None:
        mode1 = self.regs[hw.MODE1]
        if reg == hw.TEST_MODE:
            self._violate("TestMode (0xFF) written: reserved")
            return
        if reg == hw.PRE_SCALE:
            if not mode1 & hw.SLEEP:
                self._violate(f"PRE_SCALE written ({value}) while awake: the chip ignores it (set SLEEP first)")
                return
            self.regs[reg] = max(value, hw.PRESCALE_RANGE[0])
            return
        if reg == hw.MODE1:
            self._write_mode1(value)
            return
        if reg >= hw.ALL_LED:
            offset = reg - hw.ALL_LED
            for ch in range(hw.CHANNELS):
                self.regs[hw.channel_reg(ch) + offset] = value
            self.regs[hw.MODE1] &= ~hw.RESTART & 0xFF
            return
        if reg in (hw.SUBADR1, hw.SUBADR1 + 1, hw.SUBADR1 + 2, hw.ALLCALLADR):
            value &= 0xFE  # bit 0 is read-only
        elif reg == hw.MODE2 or (reg >= hw.LED0 and (reg - hw.LED0) % 4 in (1, 3)):
            value &= 0x1F  # MODE2 and LEDn_ON_H/OFF_H: bits 7:5 reserved, read 0
        self.regs[reg] = value
        if hw.LED0 <= reg <= hw.LAST_LED_REG:
            self.regs[hw.MODE1] &= ~hw.RESTART & 0xFF  # a PWM write (then STOP) clears a pending restart

    def _write_mode1(self, value: int) -> None:
        old = self.regs[hw.MODE1]
        now = self.clock()
        if value & hw.EXTCLK and not old & hw.SLEEP:
            self._violate("EXTCLK set while awake (only in SLEEP)")
            value &= ~hw.EXTCLK
        new = value & ~hw.RESTART & 0xFF
        restart_pending = bool(old & hw.RESTART)
        if value & hw.RESTART:
            if self.awake_at is None or old & hw.SLEEP:
                self._violate("RESTART written while asleep")
            elif now - self.awake_at < hw.OSC_START_S:
                self._violate(
                    f"RESTART written {1e6 * (now - self.awake_at):.0f} us after waking (the oscillator needs 500 us)"
                )
            restart_pending = False  # writing 1 restarts the channels and clears the bit
        if new & hw.SLEEP and not old & hw.SLEEP:
            self.awake_at = None
            if any(o is not None for o in self.outputs):
                restart_pending = True  # sleeping with channels active sets RESTART
        elif not new & hw.SLEEP and (old & hw.SLEEP or self.awake_at is None):
            self.awake_at = now
        self.regs[hw.MODE1] = new | (hw.RESTART if restart_pending else 0)

    def read(self, n: int) -> bytes:
        """Read ``n`` bytes from the pointer on (auto-incrementing under AI); write-only registers read 0."""
        out = bytearray()
        for _ in range(n):
            reg = self.pointer
            out.append(0 if hw.ALL_LED <= reg < hw.PRE_SCALE else self.regs[reg])
            self.pointer = self._next(reg)
        return bytes(out)

    def stop(self) -> list[tuple[int, float | None]]:
        """An I2C STOP: the outputs take the registers' values (OCH = 0). Returns the channels that changed
        (channel, width us or None), and checks that no active channel has ON = OFF."""
        for ch in range(hw.CHANNELS):
            base = hw.channel_reg(ch)
            on, off, _ = hw.decode_channel(bytes(self.regs[base : base + 4]))
            if not (on | off) & (hw.FULL_BIT << 8) and on == off and (on or off):
                self._violate(f"channel {ch}: ON and OFF are both {on} (never equal)")
        new = self._effective_outputs()
        changed = [(ch, w) for ch, (w, old) in enumerate(zip(new, self.outputs)) if w != old]
        self.outputs = new
        return changed


@dataclass
class SimOptions:
    addresses: list[int] = field(default_factory=lambda: [0x40])
    osc_hz: float = hw.OSC_HZ
    chip_osc_hz: float | None = None
    state: str | None = None
    log: str | None = None
    others: list[int] = field(default_factory=list)
    strict: bool = True
    chips: list[int] | None = None
    arm: str | None = None
    cal: str | None = None
    truth: str | None = None
    slew_deg_s: float = 400.0
    physics: int = 0  # 1: the servos move a physics plant (armctl.sim.physics), the world of ``scene``
    scene: str | None = None  # the physics scene file (armctl.sim.physics.scenefile)


def _bit(text: str) -> bool:
    if text not in ("0", "1"):
        raise ValueError(text)
    return text == "1"


_OPTIONS = {
    "address": ("addresses", parse_addresses),
    "osc_hz": ("osc_hz", float),
    "chip_osc_hz": ("chip_osc_hz", float),
    "state": ("state", str),
    "log": ("log", str),
    "other": ("others", parse_addresses),
    "chips": ("chips", parse_addresses),
    "strict": ("strict", _bit),
    "arm": ("arm", str),
    "cal": ("cal", str),
    "truth": ("truth", str),
    "slew": ("slew_deg_s", float),
    "physics": ("physics", int),
    "scene": ("scene", str),
}


def parse_url(url: str) -> SimOptions:
    """The options of a ``pca9685sim://`` URL; BadSimURL, a ValueError (naming the option and the URL's form),
    if bad."""
    parts = urllib.parse.urlsplit(url)
    if parts.scheme == "pca9685sim" and (parts.netloc + parts.path).strip("/"):
        raise BadSimURL(f"pca9685sim:// takes no host or path; {EXPECTED}")
    opts, _ = parse_options(url, "pca9685sim", _OPTIONS, SimOptions(), EXPECTED)
    for hz in (opts.osc_hz, opts.chip_osc_hz):
        if hz is not None and not 1e6 <= hz <= 50e6:
            raise BadSimURL(f"pca9685sim: an oscillator of {hz:g} Hz is not a PCA9685's (1..50 MHz); {EXPECTED}")
    if not (opts.slew_deg_s > 0 and math.isfinite(opts.slew_deg_s)):
        raise BadSimURL(f"pca9685sim option slew must be > 0 deg/s; {EXPECTED}")
    return opts


class SimI2CBus(TrueArmView, I2CBus):
    """A simulated I2C bus with PCA9685 chips (and optionally other devices) on it."""

    def __init__(self, opts: SimOptions, url: str = "pca9685sim://", clock=time.monotonic):
        self.url = url
        self.path = url
        self.opts = opts
        self.clock = clock
        self.t0 = clock()
        osc = opts.chip_osc_hz or opts.osc_hz
        present = opts.addresses if opts.chips is None else opts.chips
        self.chips = {a: Chip(a, osc_hz=osc, strict=opts.strict, clock=clock) for a in present}
        self.others = set(opts.others) - set(self.chips)
        #: the outputs' changes, the last ``LOG_KEPT``: (t_s, address, channel, width_us); ``log=FILE`` keeps them all
        self.log: deque[tuple[float, int, int, float | None]] = deque(maxlen=LOG_KEPT)
        self._log_file = None
        self._load_state()
        self._make_servos()
        if opts.log:
            self._log_file = open(opts.log, "a", encoding="ascii", buffering=1)  # noqa: SIM115

    # --- state file --------------------------------------------------------------------------------------

    def _load_state(self) -> None:
        if not self.opts.state or not Path(self.opts.state).is_file():
            return
        try:
            saved = json.loads(Path(self.opts.state).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return  # unreadable: as after a power cycle
        for key, regs in saved.get("chips", {}).items():
            chip = self.chips.get(int(key, 0))
            if chip is not None and isinstance(regs, list) and len(regs) == 256:
                chip.load(regs)

    def _save_state(self) -> None:
        if not self.opts.state:
            return
        from armctl.core.paths import atomic_write

        data = {"chips": {f"0x{a:02x}": list(c.regs) for a, c in self.chips.items()}}
        atomic_write(self.opts.state, json.dumps(data), durable=False)

    # --- the arm the outputs drive (with ``arm``) -------------------------------------------------------------

    def _make_servos(self) -> None:
        o = self.opts
        self.arm, self.cal, self.truth = simulated_arm(o.arm, o.cal, o.truth, unit="us", scheme="pca9685sim")
        self.true_arm = true_arm(self.arm, self.truth)
        self.scene_arm = None  # the scene's view of this arm while the bus is open (armctl.sim.scene)
        self.servos: dict[int, PwmServo] = {}
        self.physics = physics_world(o, self.arm, self.cal)  # None: the kinematic servo model
        if self.arm is None:
            return
        true_servos = self.truth.servos(self.cal) if self.truth is not None else {}
        grip = [self.arm.gripper.open_rad] if self.arm.gripper is not None else []
        n = self.arm.n
        for i, (s, angle) in enumerate(zip(self.cal.servos, [*self.arm.home_rad, *grip])):
            servo = pwm_servo(self.physics, i if i < n else None, s, 1.0, 1.0, 0.0, o.slew_deg_s * s.us_per_deg)
            held = self._output(s.channel)  # a chip that kept its registers: the servo stands at its pulse
            servo.p_us = float(s.pulse_us(angle)) if held is None else held
            servo.truth = true_servos.get(s.channel)
            self.servos[s.channel] = servo
        if self.physics is not None:  # the plant's arm at rest where the servos stand
            q = [self.servos[s.channel].hidden_rad(self.servos[s.channel].p_us) for s in self.cal.servos]
            self.physics.start(q[:n], q[n] if len(q) > n else None)

    def world(self) -> dict | None:
        """The physics plant's world now (``PhysicsWorld.world``), None without ``physics=1``."""
        if self.physics is None:
            return None
        self.physics.advance(self.now)
        return self.physics.world()

    def _output(self, channel: int) -> float | None:
        i, n = divmod(channel, hw.CHANNELS)
        chip = self.chips.get(self.opts.addresses[i]) if i < len(self.opts.addresses) else None
        return None if chip is None else chip.outputs[n]

    def _drive(self, t: float, address: int, ch: int, width: float | None) -> None:
        """An output changed at ``t``: the servo on it heads for the new pulse (holds where it is without one)."""
        if address not in self.opts.addresses:
            return
        servo = self.servos.get(self.opts.addresses.index(address) * hw.CHANNELS + ch)
        if servo is not None:
            if self.scene_arm is not None:  # the scene sees the motion so far before it changes
                self.scene_arm.observe(t)
            servo.command(t, width)

    @property
    def now(self) -> float:
        """Seconds since the bus was opened (the simulated servos' time)."""
        return self.clock() - self.t0

    def sim_time_s(self) -> float:
        return self.now

    def _true_servo_rad(self, servo_cal, t: float) -> float:
        return self.servos[servo_cal.channel].angle_rad(t)

    # --- the bus ------------------------------------------------------------------------------------------

    def _targets(self, address: int) -> list[Chip]:
        if address in self.chips:
            return [self.chips[address]]
        if address == ALL_CALL_ADDRESS:
            return [c for c in self.chips.values() if c.regs[hw.MODE1] & hw.ALLCALL]
        return []

    def _stop(self, chips: list[Chip]) -> None:
        t = self.clock() - self.t0
        for chip in chips:
            for ch, width in chip.stop():
                self._drive(t, chip.address, ch, width)
                self.log.append((t, chip.address, ch, width))
                if self._log_file is not None:
                    w = "" if width is None else f"{width:.3f}"
                    self._log_file.write(f"{t:.6f},0x{chip.address:02x},{ch},{w}\n")
        if chips:
            self._save_state()

    def write(self, address: int, data: bytes) -> None:
        if address == GENERAL_CALL and bytes(data) == bytes((SWRST_BYTE,)):
            for chip in self.chips.values():
                chip.power_on()
            self._stop(list(self.chips.values()))
            return
        chips = self._targets(address)
        if not chips:
            if address in self.others:
                return
            raise I2CNack(address, "no device answered")
        for chip in chips:
            chip.write(data)
        self._stop(chips)

    def write_read(self, address: int, data: bytes, n: int) -> bytes:
        if address in self.others:
            return bytes([0xFF] * n)  # a device that is no PCA9685: its registers read otherwise
        chip = self.chips.get(address)
        if chip is None:
            raise I2CNack(address, "no device answered")
        chip.write(data)
        out = chip.read(n)
        self._stop([chip])
        return out

    def probe(self, address: int) -> bool:
        return address in self.chips or address in self.others or bool(self._targets(address))

    def close(self) -> None:
        scene.drop(self)
        self._save_state()
        if self._log_file is not None:
            self._log_file.close()
            self._log_file = None


def open_simulator(url: str) -> SimI2CBus:
    """The simulated bus of a ``pca9685sim://`` URL; ValueError (naming the option) if it is bad."""
    opts = parse_url(url)
    bad = [a for a in opts.addresses if not 0x40 <= a <= 0x7F]
    if bad:
        raise BadSimURL(f"0x{bad[0]:02x} is no PCA9685 address (0x40..0x7F)")
    try:
        bus = SimI2CBus(opts, url)
    except BadSimURL:
        raise
    except ValueError as exc:  # the arm, its calibration or its truth file: bad input
        raise BadSimURL(f"pca9685sim: {exc}") from exc
    scene.register(bus, bus.sim_time_s)  # with an arm: live in the scene until closed
    return bus


def simulator_url(arm, cal_path, state_path) -> str:
    """The simulated chip, keeping its registers in ``state_path``."""
    # quoted: a state folder may hold spaces, "+", "&" or "#" (a Windows user name, say)
    return "pca9685sim://?" + urllib.parse.urlencode({"state": str(state_path)}, safe="/:")


class BlinkaBus:
    """The simulated bus as the ``i2c`` object CircuitPython drivers (adafruit_pca9685, ServoKit) take:
    ``try_lock``/``unlock``/``writeto``/``readfrom_into``/``writeto_then_readfrom``."""

    def __init__(self, bus: SimI2CBus):
        self.bus = bus
        self._locked = False

    def try_lock(self) -> bool:
        if self._locked:
            return False
        self._locked = True
        return True

    def unlock(self) -> None:
        self._locked = False

    def writeto(self, address, buffer, *, start=0, end=None):
        data = bytes(buffer[start:end])
        if not self.bus.probe(address):
            raise OSError(121, "Remote I/O error")
        self.bus.write(address, data)

    def readfrom_into(self, address, buffer, *, start=0, end=None):
        end = len(buffer) if end is None else end
        chip = self.bus.chips[address]
        buffer[start:end] = chip.read(end - start)

    def writeto_then_readfrom(
        self, address, buffer_out, buffer_in, *, out_start=0, out_end=None, in_start=0, in_end=None
    ):
        in_end = len(buffer_in) if in_end is None else in_end
        data = self.bus.write_read(address, bytes(buffer_out[out_start:out_end]), in_end - in_start)
        buffer_in[in_start:in_end] = data
