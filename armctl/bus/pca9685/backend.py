"""Backend for servos on PCA9685 16-channel PWM boards, on an I2C bus of this machine (a Raspberry Pi's
``/dev/i2c-1``) or the simulated chip (``pca9685sim://``).

``--port i2c:///dev/i2c-1?address=0x40&osc_hz=25000000`` (armctl.bus.pca9685.i2c). The calibration is a hobby-servo
calibration (pulses in us); a servo's ``channel`` is the chip's output 0..15 (16..31 on the second address
given, and so on). The chip runs at the calibration's ``pwm_hz`` (default 50 Hz); pulses are written in its
counts (4096 a period: 4.88 us at 50 Hz), each calibrated range checked at open against what the chip
makes at that period.

**Timing.** The chip has no queue: the host writes each 20 ms frame at its time (as with Firmata), every
channel that changed in one auto-increment write per run of neighbouring channels, latched together at
the I2C STOP.

**Safe start.** After power-on every output is fully off: the first pulse a servo sees is the one armctl
writes. At open armctl reads MODE1 and PRE_SCALE first and runs the frequency sequence (SLEEP, PRE_SCALE,
wake, 500 us, RESTART) only when the chip is not already awake at the right period, so a restarted host
does not interrupt the pulses a powered chip is giving; a chip left at another period (another program,
another ``pwm_hz``) has its pulsing channels rewritten in SLEEP to the same widths in the new counts, so
no servo jumps. The chip's registers are read back: ``status``
says what each channel outputs (``source: commanded``), and a restarted armctl starts from there.
Closing leaves the outputs running (the servos hold).
"""

from __future__ import annotations

import time
import urllib.parse
from dataclasses import dataclass

from armctl.bus import pca9685_chip as hw
from armctl.bus.backend import PULSE_RANGE_US, BoardInfo, BoardStatus, Capabilities, WireLog
from armctl.bus.hosttimed import HostTimed
from armctl.bus.pca9685.i2c import I2CBus, I2CNack, LinuxI2C, parse_addresses
from armctl.bus.simulators import is_simulator, open_simulator, scheme_backend
from armctl.errors import BadInputError, LinkError

# --- the port: an I2C bus URL -----------------------------------------------------------------------------


@dataclass
class I2CPort:
    """An opened I2C URL: the bus, the chips' addresses, the oscillator trim."""

    bus: I2CBus
    addresses: list[int]
    osc_hz: float


EXPECTED = "expected i2c:///dev/i2c-N?address=0x40[,0x41]&osc_hz=25000000 or pca9685sim://?address=0x40"


def _host_options(url: str, query: dict) -> tuple[list[int], float]:
    try:
        addresses = parse_addresses(query.get("address", ["0x40"])[-1])
        osc_hz = float(query.get("osc_hz", ["25000000"])[-1])
    except ValueError as exc:
        raise BadInputError(f"port {url!r}: {exc}; {EXPECTED}") from None
    for a in addresses:
        if not 0x40 <= a <= 0x7F:
            raise BadInputError(f"port {url!r}: 0x{a:02x} is no PCA9685 address (0x40..0x7F)")
    if not 1e6 <= osc_hz <= 50e6:
        raise BadInputError(f"port {url!r}: osc_hz={osc_hz:g} is no PCA9685 oscillator (nominal 25000000)")
    return addresses, osc_hz


def open_i2c(url: str) -> I2CPort:
    """Open an ``i2c://`` or ``pca9685sim://`` URL (see the module note). BadInputError for a malformed
    URL (exit 2), LinkError if the bus cannot be opened (exit 4)."""
    parts = urllib.parse.urlsplit(url)
    if is_simulator(url) and scheme_backend(url) == "pca9685":  # pca9685sim://
        try:
            bus = open_simulator(url)
        except ValueError as exc:
            raise BadInputError(f"port {url!r}: {exc}") from None
        return I2CPort(bus, bus.opts.addresses, bus.opts.osc_hz)
    if parts.scheme != "i2c":
        raise BadInputError(f"port {url!r}: the pca9685 backend takes an I2C bus; {EXPECTED}")
    query = urllib.parse.parse_qs(parts.query, keep_blank_values=True)
    unknown = set(query) - {"address", "osc_hz"}
    if unknown:
        raise BadInputError(f"port {url!r}: unknown option {sorted(unknown)[0]!r}; {EXPECTED}")
    device = urllib.parse.unquote(parts.netloc + parts.path)
    if not device:
        raise BadInputError(f"port {url!r}: no bus device; {EXPECTED}")
    if not device.startswith("/"):  # i2c://dev/i2c-1: the host part took "dev"
        raise BadInputError(
            f"port {url!r}: the bus device is a path, after three slashes (i2c:///{device}); {EXPECTED}"
        )
    addresses, osc_hz = _host_options(url, query)
    return I2CPort(LinuxI2C(device), addresses, osc_hz)


class PCA9685Backend(HostTimed):
    """PCA9685 boards on an I2C bus (``i2c://`` or ``pca9685sim://``)."""

    name = "pca9685"
    caps = Capabilities(reports_pulses=True)  # registers read back; host-timed; no stored limits
    simulator = "pca9685sim"

    @classmethod
    def create(cls, port: str, cal, *, wire_log=None, watchdog_s: float = 1.0, calibrating: bool = False):
        """PCA9685 boards at ``port`` driving the servos of ``cal`` (its ``channel``: chip output). No
        watchdog: the chip holds the last pulse. ``calibrating``: 500..2500 us allowed."""
        ranges = {s.channel: (PULSE_RANGE_US if calibrating else (s.lo, s.hi)) for s in cal.servos}
        names = {s.channel: s.name for s in cal.servos}
        return cls(port, ranges_us=ranges, names=names, pwm_hz=cal.pwm_hz, wire_log=wire_log)

    def __init__(
        self,
        port: str,
        *,
        ranges_us: dict[int, tuple[float, float]],
        names: dict[int, str] | None = None,
        pwm_hz: float = 50.0,
        wire_log: str | None = None,
        clock=time.monotonic,
        sleep=time.sleep,
    ):
        self.port = port
        self.ranges = dict(ranges_us)
        self.names = names or {}
        self.pwm_hz = pwm_hz
        self.wire_log_path = wire_log
        self.i2c = None
        self.log: WireLog | None = None
        self.info: BoardInfo | None = None
        self.prescale: int | None = None
        self.current: dict[int, float | None] = dict.fromkeys(self.ranges)
        self._init_timing(clock, sleep)

    # --- addressing and arithmetic ----------------------------------------------------------------------

    def _chip(self, channel: int) -> tuple[int, int]:
        """(I2C address, output 0..15) of servo channel ``channel``."""
        return self.i2c.addresses[channel // hw.CHANNELS], channel % hw.CHANNELS

    @property
    def osc_hz(self) -> float:
        return self.i2c.osc_hz if self.i2c is not None else hw.OSC_HZ

    def value_step(self, channel: int) -> float:
        """One count of the chip's period, in us: 4.88 us at 50 Hz on a 25 MHz oscillator (the period's 1/4096,
        ``pca9685_chip.count_us``), at the prescale armctl runs it at (known before ``open``)."""
        prescale = self.prescale if self.prescale is not None else hw.prescale_for(self.pwm_hz, self.osc_hz)
        return hw.count_us(prescale, self.osc_hz)

    def counts(self, us: float) -> int:
        """The chip's OFF count (ON at 0) for a pulse of ``us`` microseconds."""
        return hw.counts_for_us(us, self.prescale, self.osc_hz)

    def check_ranges(self, prescale: int, osc_hz: float) -> None:
        """BadInputError naming the first servo whose calibrated range the chip cannot make at this period."""
        lo_us, hi_us = hw.us_range(prescale, osc_hz)
        for ch, (lo, hi) in sorted(self.ranges.items()):
            if lo < lo_us or hi > hi_us:
                name = self.names.get(ch, f"channel {ch}")
                raise BadInputError(
                    f"servo {name!r} (PCA9685 channel {ch}): its calibrated {lo:g}..{hi:g} us is outside the "
                    f"{lo_us:.1f}..{hi_us:.0f} us the chip makes at {self.pwm_hz:g} Hz; fix the calibration's range "
                    "or pwm_hz"
                )

    # --- I2C with the wire log ----------------------------------------------------------------------------

    def _write(self, address: int, data: bytes) -> None:
        try:
            self.i2c.bus.write(address, data)
        except LinkError as exc:
            raise LinkError(f"PCA9685 on {self.port}: {exc}") from None
        if self.log:
            self.log.record(">", bytes([address << 1]) + bytes(data))

    def _read(self, address: int, reg: int, n: int) -> bytes:
        try:
            data = self.i2c.bus.write_read(address, bytes([reg]), n)
        except LinkError as exc:
            raise LinkError(f"PCA9685 on {self.port}: {exc}") from None
        if self.log:
            self.log.record(">", bytes([address << 1, reg]))
            self.log.record("<", data)
        return data

    # --- open ---------------------------------------------------------------------------------------------

    def open(self) -> BoardInfo:
        self.i2c = open_i2c(self.port)
        try:
            self.prescale = hw.prescale_for(self.pwm_hz, self.i2c.osc_hz)
        except ValueError as exc:
            self.close()
            raise BadInputError(f"calibration pwm_hz: {exc}") from None
        try:
            self.check_ranges(self.prescale, self.i2c.osc_hz)
            need = 1 + max(self.ranges) // hw.CHANNELS
            if need > len(self.i2c.addresses):
                raise BadInputError(
                    f"the calibration uses channel {max(self.ranges)}, which needs {need} PCA9685 boards; {self.port} "
                    f"names {len(self.i2c.addresses)} (give them all: address=0x40,0x41)"
                )
            for address in self.i2c.addresses:
                self._identify(address)
            self.log = WireLog(self.wire_log_path) if self.wire_log_path else None
            for address in self.i2c.addresses[:need]:
                self._start_chip(address)
            widths = self._read_widths()
        except BaseException:
            self.close()
            raise
        for ch, w in widths.items():
            if ch in self.current and w is not None:
                lo, hi = self.ranges[ch]
                step = hw.count_us(self.prescale, self.osc_hz)
                if lo - step <= w < lo or hi < w <= hi + step:  # a limit, read back to the nearest count
                    w = min(max(w, lo), hi)
                widths[ch] = self.current[ch] = w
        channels = hw.CHANNELS * len(self.i2c.addresses)
        self.info = BoardInfo(
            firmware="PCA9685",
            protocol="i2c",
            channels=channels,
            depth=0,
            values=tuple(widths.get(ch) for ch in range(channels)),
        )
        return self.info

    def _identify(self, address: int) -> None:
        """LinkError if nothing answers at ``address`` or what answers is no PCA9685 (nothing is written)."""
        if self.i2c.bus.busy(address):
            raise LinkError(
                f"I2C address 0x{address:02x} on {self.i2c.bus.path} belongs to a kernel driver (i2cdetect shows UU): "
                "if it is this board's pwm-pca9685 driver, remove its dtoverlay from config.txt and reboot"
            )
        if not self.i2c.bus.probe(address):
            raise LinkError(
                f"no device answers at I2C address 0x{address:02x} on {self.i2c.bus.path}: check the wiring (SDA, SCL, "
                "VCC, GND) and the board's address pads ('armctl ports' lists what answers)"
            )
        prescale = None
        try:  # one register a read: auto-increment may be off (it is after power-on)
            regs = b"".join(self.i2c.bus.write_read(address, bytes([reg]), 1) for reg in range(hw.ALLCALLADR + 1))
            prescale = self.i2c.bus.write_read(address, bytes([hw.PRE_SCALE]), 1)[0]
        except I2CNack:
            regs = b""
        why = hw.identify(regs, prescale)
        if why is not None:
            raise LinkError(f"the device at I2C address 0x{address:02x} on {self.i2c.bus.path} is no PCA9685: {why}")

    def _start_chip(self, address: int) -> None:
        """Wake the chip at the wanted period, with auto-increment; skip the frequency sequence (which
        stops the outputs for a moment) when it already runs at that period."""
        mode1 = self._read(address, hw.MODE1, 1)[0]
        prescale = self._read(address, hw.PRE_SCALE, 1)[0]
        awake = not mode1 & hw.SLEEP and not mode1 & hw.RESTART
        if awake and prescale == self.prescale:
            if not mode1 & hw.AI:
                self._write(address, bytes([hw.MODE1, mode1 | hw.AI]))
            return
        base = mode1 & ~(hw.RESTART | hw.SLEEP) & 0xFF
        kept = {}
        if prescale != self.prescale:
            # the chip gives (or holds for a RESTART) pulses at another period: their counts would mean other
            # widths at ours (20 % longer from 60 Hz to 50 Hz), a jump of every servo; rewrite them, in SLEEP,
            # to the same widths in our counts
            if not mode1 & hw.AI:
                self._write(address, bytes([hw.MODE1, (mode1 & ~hw.RESTART & 0xFF) | hw.AI]))  # to read 64 bytes
            kept = hw.rescale_channels(self._read_registers(address), prescale, self.prescale)
        if not mode1 & hw.SLEEP:
            self._write(address, bytes([hw.MODE1, base | hw.SLEEP | hw.AI]))  # PRE_SCALE is written only in SLEEP
        self._write(address, bytes([hw.PRE_SCALE, self.prescale]))
        for out, counts in sorted(kept.items()):
            self._write(address, bytes([hw.channel_reg(out)]) + hw.channel_bytes(counts))
        self._write(address, bytes([hw.MODE1, base | hw.AI]))  # wake
        self._sleep(2 * hw.OSC_START_S)  # the oscillator starts in 500 us
        if self._read(address, hw.MODE1, 1)[0] & hw.RESTART:
            self._write(address, bytes([hw.MODE1, base | hw.AI | hw.RESTART]))  # resume the channels it had

    def _read_registers(self, address: int) -> bytes:
        """The 64 channel registers of one chip (two reads: some adapters limit a read to 32 bytes; one a
        register on a chip with auto-increment off, such as a board named in the URL that the calibration
        does not use, which armctl leaves as it is)."""
        if not self._read(address, hw.MODE1, 1)[0] & hw.AI:
            return b"".join(self._read(address, hw.LED0 + i, 1) for i in range(4 * hw.CHANNELS))
        return self._read(address, hw.LED0, 32) + self._read(address, hw.LED0 + 32, 32)

    def _read_widths(self) -> dict[int, float | None]:
        out = {}
        for i, address in enumerate(self.i2c.addresses):
            regs = self._read_registers(address)
            for n in range(hw.CHANNELS):
                _, _, counts = hw.decode_channel(regs[4 * n : 4 * n + 4])
                out[i * hw.CHANNELS + n] = None if counts is None else counts * hw.count_us(self.prescale, self.osc_hz)
        return out

    # --- playing ------------------------------------------------------------------------------------------

    def move(self, frames: int, values: dict[int, float | None]) -> None:
        """Host-timed (``HostTimed.move``); a channel with no pulses yet starts at its first value at once
        (the Robot sets servos without pulses to the pose they were left in before it ramps anywhere)."""
        first = {ch: us for ch, us in values.items() if us is not None and self.current.get(ch) is None}
        if first:
            self._write_frame(first)
        super().move(frames, values)

    def _write_frame(self, values: dict[int, float]) -> None:
        """One auto-increment write per run of neighbouring channels of a chip, each latched at its STOP."""
        by_chip: dict[int, dict[int, int]] = {}
        for ch, us in values.items():
            lo, hi = self.ranges.get(ch, (None, None))
            if lo is not None:
                us = min(max(us, lo), hi)
            address, out = self._chip(ch)
            by_chip.setdefault(address, {})[out] = self.counts(us)
            self.current[ch] = us
        for address, outs in by_chip.items():
            run: list[int] = []
            for out in sorted(outs):
                if run and out != run[-1] + 1:
                    self._write_run(address, run, outs)
                    run = []
                run.append(out)
            self._write_run(address, run, outs)

    def _write_run(self, address: int, run: list[int], counts: dict[int, int]) -> None:
        data = bytearray([hw.channel_reg(run[0])])
        for out in run:
            data += hw.channel_bytes(counts[out])
        self._write(address, bytes(data))

    def set_outputs(self, widths_us: dict[int, float | None]) -> None:
        """Set channels at once (no timing): a pulse (us) or None (full off: the servo goes limp)."""
        pulses = {ch: w for ch, w in widths_us.items() if w is not None}
        if pulses:
            self._write_frame(pulses)
        for ch in (ch for ch, w in widths_us.items() if w is None):
            address, out = self._chip(ch)
            self._write(address, bytes([hw.channel_reg(out)]) + hw.channel_bytes(None))
            self.current[ch] = None

    def status(self) -> BoardStatus:
        """The pulses the chips output, read back from their registers; ``counters``: each chip's MODE1 and
        PRE_SCALE and each channel's ON/OFF counts."""
        chips, widths = {}, []
        for i, address in enumerate(self.i2c.addresses):
            mode = self._read(address, hw.MODE1, 1) + self._read(address, hw.MODE2, 1)
            prescale = self._read(address, hw.PRE_SCALE, 1)[0]
            regs = self._read_registers(address)
            outs = []
            for n in range(hw.CHANNELS):
                on, off, counts = hw.decode_channel(regs[4 * n : 4 * n + 4])
                outs.append({"channel": i * hw.CHANNELS + n, "on": on, "off": off})
                sleeping = mode[0] & (hw.SLEEP | hw.RESTART)
                ch = i * hw.CHANNELS + n
                sent = self.current.get(ch)
                if counts is None or sleeping:
                    widths.append(None)
                elif sent is not None and prescale == self.prescale and counts == self.counts(sent):
                    widths.append(sent)  # what we wrote, exactly: the registers hold it to the count
                else:
                    widths.append(counts * hw.count_us(prescale, self.osc_hz))
            chips[f"0x{address:02x}"] = {"mode1": mode[0], "mode2": mode[1], "prescale": prescale, "outputs": outs}
        return BoardStatus(values=tuple(widths), counters={"pca9685": chips, "osc_hz": self.osc_hz})

    def close(self) -> None:
        """Release the bus; the outputs keep running (the servos hold their last pulse)."""
        port, self.i2c = self.i2c, None
        if port is not None:
            port.bus.close()
        if self.log is not None:
            self.log.close()
            self.log = None


# --- finding boards (armctl ports) -----------------------------------------------------------------------


def scan(bus, osc_hz: float = hw.OSC_HZ) -> list[tuple[int, str, bool]]:
    """What answers at 0x40..0x7F on ``bus`` (an ``I2CBus``): (address, description, is_pca9685) for each
    (a PCA9685's frequency at the ``osc_hz`` of the URL).
    A device is probed with a one-byte read; a PCA9685 is told by its mode and sub-address registers, read
    one at a time (the register pointer is set for each read; no register is written)."""
    out = []
    for address in range(hw.ADDRESS_RANGE[0], hw.ADDRESS_RANGE[1] + 1):
        if bus.busy(address):
            out.append((address, "in use by a kernel driver (UU; not probed)", False))
            continue
        try:
            if not bus.probe(address):
                continue
            regs = b"".join(bus.write_read(address, bytes([reg]), 1) for reg in range(hw.ALLCALLADR + 1))
            prescale = bus.write_read(address, bytes([hw.PRE_SCALE]), 1)[0]
        except LinkError:
            out.append((address, "a device (it did not answer a register read)", False))
            continue
        why = hw.identify(regs, prescale)
        if why is not None:
            out.append((address, f"a device that is no PCA9685 ({why})", False))
            continue
        state = "asleep (no pulses)" if regs[hw.MODE1] & hw.SLEEP else "awake"
        hz = osc_hz / (hw.COUNTS * (prescale + 1))
        out.append((address, f"PCA9685, {hz:.1f} Hz (prescale {prescale}), {state}", True))
    # a PCA9685 with LED All Call on also answers at 0x70: not a board of its own
    if any(p for _, _, p in out) and any(a == 0x70 for a, _, _ in out):
        out = [(a, "LED All Call of the PCA9685s" if a == 0x70 else d, p if a != 0x70 else False) for a, d, p in out]
    return out
