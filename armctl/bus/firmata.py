"""Backend for stock StandardFirmata through pymata4.

Firmata has no timed commands, so the host does the timing: every 20 ms
frame it writes the interpolated pulse (microseconds, ``servo_write``) of each
channel that changed. Channels are Arduino pins here (the calibration's ``pin``).

**Below 544 us.** StandardFirmata hands a servo pin's value to the Arduino Servo
library's ``write(value)``, which takes a value below 544 (``MIN_PULSE_WIDTH``)
as an angle in degrees, mapped onto the attach range: 508 "us" would come out
near 2,500 us, the far end. So this board sends nothing below 544 us
(``sendable``): ``connect`` narrows a calibration that reaches lower to 544 us
with one note (``Backend.fit_calibration``), the calibration's nudges stop there,
and ``_servo_write`` never writes less. Our firmware sends 500..2500 us.

**Attach limits.** Servos are attached with limits around the calibrated range
(``set_pin_mode_servo``) so the firmware clamps too, as a second net behind the
host's clamp. ``Servo::attach(pin, min, max)`` keeps them as ``int8_t`` counts
of 4 us (min = 544 - 4 k, max = 2400 - 4 k, k in -128..127: 36..1056 us and
1892..2912 us); any other value wraps (1250 us would become 224 us). What is sent
is ``attach_limits``: the nearest values the library holds that never cut into
the calibrated range (so it never moves a servo elsewhere than armctl says),
less than 4 us wider where the range is inside the library's windows, else the
tightest the library can hold (1056 us, 1892 us).

**Pins.** Any digital pin the board reports can carry a servo: on an Uno D2-D13
and the analog pins A0-A5 as digital pins 14-19 (StandardFirmata attaches a
servo to any digital pin, though its capability report lists servo only for
D2-D13; pymata4 writes pins from 16 on with the extended analog message).
D0/D1 are the serial link itself and are refused, as is a pin the board does
not have. D13 works but carries the board's LED: StandardFirmata blinks its
version there at every reset, which a servo on D13 takes for pulses.

Stock Firmata cannot avoid one thing: attaching a servo starts 1500 us pulses
before any position is written. We attach each servo and write its declared
start pulse right after, one servo at a time, so the 1500 us lasts at most a
frame or two (a twitch toward the servo centre, not a full move); a calibration
whose start/home pose is near 1500 us makes even that twitch small.

**Start-up.** Opening a Uno's port resets it; StandardFirmata then blinks its
version on pin 13 for about 2 s before it reads the serial port, and announces
itself (protocol version, then firmware name and version). pymata4 sleeps a
fixed ``arduino_wait`` (4 s by default) after opening. Here the port is opened
the same way, but the wait ends as soon as the board answers (``wait_for_firmata``:
its own announcement, or the answer to a version query sent from
``QUERY_AFTER_S`` on, once a second): about 2.2 s on a freshly reset board,
half a second on one that did not reset. ``arduino_wait_s`` is the longest wait.
"""

from __future__ import annotations

import contextlib
import math
import sys
import time
from collections import deque
from dataclasses import dataclass

from armctl.bus.backend import PULSE_RANGE_US, BoardInfo, BoardStatus, Capabilities, WireLog, readdress
from armctl.bus.hosttimed import HostTimed
from armctl.errors import LinkError

FIRMATA_BAUD = 57600
SERIAL_PINS = (0, 1)  # D0/D1: the UART the host talks over
REPORT_VERSION, START_SYSEX, END_SYSEX, REPORT_FIRMWARE = 0xF9, 0xF0, 0xF7, 0x79
#: Asks for the protocol version and the firmware's name and version.
VERSION_QUERY = bytes([REPORT_VERSION, START_SYSEX, REPORT_FIRMWARE, END_SYSEX])
#: Nothing is sent, and nothing read is trusted, before this long after opening: a reset Uno's pulse and
#: its bootloader's hand-over come first (a board that did not reset answers the first query).
QUERY_AFTER_S = 0.5
QUERY_PERIOD_S = 1.0
WRITES_KEPT = 1000  # servo_writes FirmataBackend.writes keeps, the newest (20 s of five servos at 50 Hz)
QUIET_S = 0.05  # after the first answer, read until the line is this quiet (answers to earlier queries)
#: The Servo library (Servo.h): write(v) takes v < MIN_PULSE_WIDTH as degrees; attach keeps its limits as int8_t
#: counts of 4 us from these two.
MIN_PULSE_WIDTH, MAX_PULSE_WIDTH, LIMIT_STEP_US = 544, 2400, 4
ANALOG_MAX = 0x3FFF  # a Firmata analog message carries 14 bits


def attach_limits(lo_us: float, hi_us: float) -> tuple[int, int]:
    """(min, max) us to attach a servo with, for the calibrated range ``lo_us``..``hi_us`` (lo_us >= 544): values
    the Servo library holds exactly (544 - 4 k and 2400 - 4 k, k an int8_t), the nearest that keep all of the range:
    min <= lo_us and hi_us <= max, by less than 4 us where the library can come that near, else its tightest
    (min 1056, max 1892). The host's clamp stays the calibrated range; this is the firmware's second net."""
    k_min = min(127, max(-128, math.ceil((MIN_PULSE_WIDTH - lo_us) / LIMIT_STEP_US - 1e-9)))
    k_max = min(127, max(-128, math.floor((MAX_PULSE_WIDTH - hi_us) / LIMIT_STEP_US + 1e-9)))
    return MIN_PULSE_WIDTH - LIMIT_STEP_US * k_min, MAX_PULSE_WIDTH - LIMIT_STEP_US * k_max


def library_limits(min_us: int, max_us: int) -> tuple[int, int]:
    """The (min, max) us the Servo library clamps to after ``attach(pin, min_us, max_us)``: its int8_t counts,
    ``(544 - min) / 4`` truncated toward zero and wrapped to -128..127 (the same for max from 2400)."""

    def held(base: int, value: int) -> int:
        k = int((base - value) / LIMIT_STEP_US)  # C's integer division truncates toward zero
        k = (k + 128) % 256 - 128  # stored in an int8_t
        return base - LIMIT_STEP_US * k

    return held(MIN_PULSE_WIDTH, int(min_us)), held(MAX_PULSE_WIDTH, int(max_us))


# --- recognising StandardFirmata ---------------------------------------------------------------------------


@dataclass
class FirmataVersion:
    """What a Firmata board said about itself: protocol version ("2.5"), firmware name and version."""

    protocol: str | None = None
    firmware: str | None = None
    firmware_version: str | None = None

    def describe(self) -> str:
        """One line: "StandardFirmata.ino 2.5 (Firmata protocol 2.5)"."""
        name = f"{self.firmware} {self.firmware_version}" if self.firmware else "Firmata"
        return f"{name} (Firmata protocol {self.protocol})" if self.protocol else name


class FirmataListener:
    """Finds Firmata's version reports in the bytes a board sends (``feed``); other messages are skipped.
    ``version`` once one came; ``reports``: how many firmware reports came (one per query, and one the
    board sends unasked when it starts); ``at_boundary`` while no message is cut in half."""

    def __init__(self):
        self.version: FirmataVersion | None = None
        self.reports = 0
        self._buf = bytearray()

    @property
    def at_boundary(self) -> bool:
        """True if no message read so far is waiting for its rest."""
        return not self._buf

    def feed(self, data: bytes) -> None:
        """Take more bytes from the board."""
        self._buf += data
        buf = self._buf
        while buf:
            b = buf[0]
            if b == REPORT_VERSION:
                if len(buf) < 3:
                    return
                if buf[1] < 0x80 and buf[2] < 0x80:
                    self._found().protocol = f"{buf[1]}.{buf[2]}"
                del buf[:3]
            elif b == START_SYSEX:
                end = buf.find(bytes([END_SYSEX]))
                if end < 0:
                    if len(buf) > 256:  # not a sysex after all
                        del buf[:1]
                        continue
                    return
                body = bytes(buf[1:end])
                del buf[: end + 1]
                if len(body) >= 3 and body[0] == REPORT_FIRMWARE and all(c < 0x80 for c in body[1:]):
                    v = self._found()
                    self.reports += 1
                    v.firmware_version = f"{body[1]}.{body[2]}"
                    chars = body[3:]
                    v.firmware = "".join(chr(lo | (hi << 7)) for lo, hi in zip(chars[::2], chars[1::2]))
            elif 0x80 <= b < 0xF0 and b & 0xF0 in (0x90, 0xE0):  # digital / analog report: 2 data bytes
                if len(buf) < 3:
                    return
                del buf[:3]
            else:
                del buf[:1]  # anything else: skipped a byte at a time

    def _found(self) -> FirmataVersion:
        if self.version is None:
            self.version = FirmataVersion()
        return self.version


def wait_for_firmata(
    ser, *, max_s: float, clock=time.monotonic, sleep=time.sleep
) -> tuple[FirmataVersion | None, float]:
    """Wait until StandardFirmata answers on the open port ``ser`` (a pyserial port at 57600 baud, opened
    just now: a Uno is resetting): its own announcement, or the answer to ``VERSION_QUERY``, sent from
    ``QUERY_AFTER_S`` on, once a second. Once it answered, the answers to earlier queries are read too, so
    whoever reads next starts at a message boundary. Returns (what it said or None after ``max_s``, the
    seconds waited)."""
    t0 = clock()
    listener = FirmataListener()
    queried = False
    next_query = t0 + QUERY_AFTER_S
    quiet_since = None
    while True:
        now = clock()
        if now - t0 > max_s:
            return listener.version, now - t0
        if now >= next_query:
            if not queried:
                ser.reset_input_buffer()  # from before the reset: not trusted
                listener = FirmataListener()
            ser.write(VERSION_QUERY)
            queried, next_query = True, now + QUERY_PERIOD_S
        n = ser.in_waiting
        data = ser.read(n) if n else b""
        if data:
            if queried:
                listener.feed(data)
            quiet_since = None
        elif listener.version is not None and listener.at_boundary:
            quiet_since = quiet_since or now
            if now - quiet_since >= QUIET_S:
                return listener.version, now - t0
        if not data:
            sleep(0.002)


def _fast_start(pymata_class):
    """pymata4's board class, but started by ``wait_for_firmata`` instead of a fixed ``arduino_wait`` sleep
    (which stays the longest wait). Needs pymata4's ``_manual_open`` (1.x); other versions start as they do."""
    if not hasattr(pymata_class, "_manual_open"):
        return pymata_class

    class FastStartPymata(pymata_class):
        def _manual_open(self):
            import serial

            self.serial_port = serial.Serial(self.com_port, self.baud_rate, timeout=1, writeTimeout=0)
            version, waited = wait_for_firmata(self.serial_port, max_s=self.arduino_wait)
            self.armctl_start = (version, waited)
            if version is None:
                self.serial_port.close()
                raise RuntimeError(f"no answer from a Firmata board within {self.arduino_wait:g} s")

    return FastStartPymata


class FirmataBackend(HostTimed):
    """StandardFirmata on ``port`` (a device path; pymata4 cannot open pyserial URLs)."""

    name = "firmata"
    caps = Capabilities()  # host-timed writes; it reports neither pulses nor positions, stores no limits
    sendable = (float(MIN_PULSE_WIDTH), float(ANALOG_MAX))
    sendable_why = (
        f"StandardFirmata's Servo.write() takes a value below {MIN_PULSE_WIDTH} as an angle in degrees, not "
        "microseconds; our firmware, --backend armctl, sends down to 500 us"
    )

    @classmethod
    def address(cls, cal):
        """Firmata addresses servos by Arduino pin: the calibration's ``pin``."""
        return readdress(cal, "pin")

    @classmethod
    def create(cls, port: str, cal, *, wire_log=None, watchdog_s: float = 1.0, calibrating: bool = False):
        """StandardFirmata on ``port``; each servo attached around its calibrated min/max (``attach_limits``;
        544..2500 us while calibrating). Firmata has no watchdog."""
        ranges = {s.channel: (PULSE_RANGE_US if calibrating else (s.lo, s.hi)) for s in cal.servos}
        return cls(port, pins_range_us=ranges, wire_log=wire_log)

    def __init__(
        self,
        port: str,
        *,
        pins_range_us: dict[int, tuple[float, float]],
        baudrate: int = FIRMATA_BAUD,
        arduino_wait_s: float = 4.0,
        wire_log: str | None = None,
        pymata_factory=None,
        clock=time.monotonic,
        sleep=time.sleep,
    ):
        self.port = port
        floor, top = self.sendable  # the write path's clamp: never below 544 us, whatever it is given
        self.ranges = {p: (max(float(lo), floor), min(float(hi), top)) for p, (lo, hi) in pins_range_us.items()}
        self.baudrate = baudrate
        self.arduino_wait_s = arduino_wait_s
        self.wire_log_path = wire_log
        self._factory = pymata_factory
        self._init_timing(clock, sleep)
        self.board = None
        self.log: WireLog | None = None
        self.info: BoardInfo | None = None
        self.current: dict[int, float | None] = dict.fromkeys(self.ranges)
        self.attached: set[int] = set()
        #: (time, pin, us) of the last ``WRITES_KEPT`` servo_writes (a ring: a long follow writes every frame)
        self.writes: deque[tuple[float, int, int]] = deque(maxlen=WRITES_KEPT)

    def open(self) -> BoardInfo:
        factory = self._factory
        if factory is None:
            try:
                from pymata4 import pymata4
            except ImportError as exc:  # pragma: no cover - a declared dependency
                raise LinkError(f"the firmata backend needs pymata4: {exc}") from None
            factory = _fast_start(pymata4.Pymata4)
        if "://" in self.port:
            raise LinkError(f"the firmata backend needs a device path (pymata4 opens it itself), not {self.port!r}")
        self.log = WireLog(self.wire_log_path) if self.wire_log_path else None
        try:
            with contextlib.redirect_stdout(sys.stderr):  # pymata4 prints progress on stdout
                self.board = factory(
                    com_port=self.port,
                    baud_rate=self.baudrate,
                    arduino_wait=self.arduino_wait_s,
                    shutdown_on_exception=False,
                )
        except (RuntimeError, OSError, Exception) as exc:
            raise LinkError(
                f"cannot talk Firmata on {self.port}: {exc} (StandardFirmata at {self.baudrate} baud?)"
            ) from None
        self._check_pins()
        self.info = BoardInfo(
            firmware="StandardFirmata",
            protocol="firmata",
            channels=max(self.ranges) + 1,
            depth=0,
            limits_us=(),
            values=(),
        )
        return self.info

    def _check_pins(self) -> None:
        """LinkError naming the first servo pin the board cannot drive (the serial pins, or a pin it does not
        report); the board is left alone (nothing is attached)."""
        reported = getattr(self.board, "digital_pins", None)
        count = len(reported) if reported else None  # pymata4's pin discovery (a fake board may have none)
        for pin in sorted(self.ranges):
            if pin in SERIAL_PINS:
                why = f"D{pin} is the serial link to the host"
            elif count is not None and pin >= count:
                why = f"the board reports pins 0..{count - 1}"
            else:
                continue
            self.close()
            raise LinkError(
                f"servo pin {pin} on {self.port}: {why}; give the servo another pin in the calibration (an Uno: "
                "D2-D13, or A0-A5 as pins 14-19)"
            )

    def _servo_write(self, pin: int, us: float) -> None:
        """Write ``us`` (whole us) to ``pin``, clamped to its range: the last guard, never below 544 us."""
        lo, hi = self.ranges[pin]
        value = min(max(int(round(us)), math.ceil(lo)), math.floor(hi))
        try:
            self.board.servo_write(pin, value)
        except Exception as exc:
            raise LinkError(f"lost the Firmata link on {self.port}: {exc}") from None
        self.writes.append((self._clock(), pin, value))
        if self.log:
            self.log.record(">", b"servo_write pin %d %d us" % (pin, value))

    def attach(self, pin: int, start_us: float) -> None:
        """Attach the servo on ``pin`` and write its start pulse at once (see the module note on 1500 us)."""
        lo, hi = attach_limits(*self.ranges[pin])
        try:
            self.board.set_pin_mode_servo(pin, lo, hi)
        except Exception as exc:
            raise LinkError(f"lost the Firmata link on {self.port}: {exc}") from None
        self._servo_write(pin, start_us)
        self.attached.add(pin)
        self.current[pin] = start_us

    def move(self, frames: int, values: dict[int, float | None]) -> None:
        """Host-timed (``HostTimed.move``); a servo's first position attaches it there."""
        for pin, us in values.items():
            if us is not None and pin not in self.attached:
                self.attach(pin, us)  # first position of this servo: it starts there
        super().move(frames, values)

    def set_goal(self, values: dict[int, float | None]) -> None:
        """Teleoperation (``HostTimed.set_goal``); a servo's first position attaches it there."""
        for pin, us in values.items():
            if us is not None and pin not in self.attached:
                self.attach(pin, us)
        super().set_goal(values)

    def _write_frame(self, values: dict[int, float]) -> None:
        for pin, us in values.items():
            self._servo_write(pin, us)
            self.current[pin] = us

    def status(self) -> BoardStatus:
        pins = range(max(self.ranges) + 1)
        return BoardStatus(values=tuple(self.current.get(p) for p in pins), left_frames=0, counters={})

    def close(self) -> None:
        """Release the port and leave the servos holding their last pulse.

        Not pymata4's ``shutdown()``: it sends a system reset, StandardFirmata then detaches every
        servo and the arm drops. Stopping pymata4's threads and closing the port (pymata4 1.15
        internals) leaves the board running; a real Uno resets only when a port is opened (DTR).
        """
        board, self.board = self.board, None
        if board is None:
            return
        board.shutdown_flag = True
        try:
            board._stop_threads()
            board.serial_port.close()
        except Exception:
            with contextlib.suppress(Exception), contextlib.redirect_stdout(sys.stderr):
                board.shutdown()  # not the pymata4 we know: the orderly way, even if it resets
        if self.log is not None:
            self.log.close()
