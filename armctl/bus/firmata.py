"""Backend for stock StandardFirmata through pymata4.

Firmata has no timed commands, so the host does the timing: every 20 ms
frame it writes the interpolated pulse (microseconds, ``servo_write`` with a
value >= 544 is taken as us) of each channel that changed. Channels are
Arduino pins here (the calibration's ``pin``). Servos are attached with the
calibrated min/max (``set_pin_mode_servo``) so the firmware clamps too.

Stock Firmata cannot avoid one thing: attaching a servo starts 1500 us pulses
before any position is written. We attach each servo and write its declared
start pulse right after, one servo at a time, so the 1500 us lasts at most a
frame or two (a twitch toward the servo centre, not a full move); a calibration
whose start/home pose is near 1500 us makes even that twitch small.
"""

from __future__ import annotations

import contextlib
import sys
import time

from ..calibration import PULSE_RANGE_US
from ..errors import LinkError
from .backend import FRAME_S, Backend, BoardInfo, BoardStatus, Capabilities, WireLog, readdress

FIRMATA_BAUD = 57600


class FirmataBackend(Backend):
    """StandardFirmata on ``port`` (a device path; pymata4 cannot open pyserial URLs)."""

    name = "firmata"
    caps = Capabilities()  # host-timed writes; it reports neither pulses nor positions, stores no limits

    @classmethod
    def address(cls, cal):
        """Firmata addresses servos by Arduino pin: the calibration's ``pin``."""
        return readdress(cal, "pin")

    @classmethod
    def create(cls, port: str, cal, *, wire_log=None, watchdog_s: float = 1.0, calibrating: bool = False):
        """StandardFirmata on ``port``; each servo attached with its calibrated min/max (500..2500 us while
        calibrating). Firmata has no watchdog."""
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
        self.ranges = dict(pins_range_us)
        self.baudrate = baudrate
        self.arduino_wait_s = arduino_wait_s
        self.wire_log_path = wire_log
        self._factory = pymata_factory
        self._clock, self._sleep = clock, sleep
        self.board = None
        self.log: WireLog | None = None
        self.info: BoardInfo | None = None
        self.current: dict[int, float | None] = dict.fromkeys(self.ranges)
        self.attached: set[int] = set()
        self._next_frame_t: float | None = None
        self._played = 0
        self.writes: list[tuple[float, int, int]] = []  # (time, pin, us) of every servo_write

    def open(self) -> BoardInfo:
        factory = self._factory
        if factory is None:
            try:
                from pymata4 import pymata4
            except ImportError as exc:  # pragma: no cover - a declared dependency
                raise LinkError(f"the firmata backend needs pymata4: {exc}") from None
            factory = pymata4.Pymata4
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
        self.info = BoardInfo(
            firmware="StandardFirmata",
            protocol="firmata",
            channels=max(self.ranges) + 1,
            depth=0,
            limits_us=(),
            widths_us=(),
        )
        return self.info

    def _servo_write(self, pin: int, us: float) -> None:
        value = int(round(us))
        lo, hi = self.ranges[pin]
        value = min(max(value, int(round(lo))), int(round(hi)))
        try:
            self.board.servo_write(pin, value)
        except Exception as exc:
            raise LinkError(f"lost the Firmata link on {self.port}: {exc}") from None
        self.writes.append((self._clock(), pin, value))
        if self.log:
            self.log.record(">", b"servo_write pin %d %d us" % (pin, value))

    def attach(self, pin: int, start_us: float) -> None:
        """Attach the servo on ``pin`` and write its start pulse at once (see the module note on 1500 us)."""
        lo, hi = self.ranges[pin]
        try:
            self.board.set_pin_mode_servo(pin, int(round(lo)), int(round(hi)))
        except Exception as exc:
            raise LinkError(f"lost the Firmata link on {self.port}: {exc}") from None
        self._servo_write(pin, start_us)
        self.attached.add(pin)
        self.current[pin] = start_us

    def move(self, frames: int, widths_us: dict[int, float | None]) -> None:
        """Host-timed: writes each frame's interpolated pulses at its frame time (blocks while playing)."""
        for pin, us in widths_us.items():
            if us is not None and pin not in self.attached:
                self.attach(pin, us)  # first position of this servo: it starts there
        starts = dict(self.current)
        now = self._clock()
        if self._next_frame_t is None or self._next_frame_t < now - FRAME_S:
            self._next_frame_t = now  # starting (or after a stall): restart the frame clock
        for i in range(1, frames + 1):
            self._waiting()
            delay = self._next_frame_t - self._clock()
            if delay > 0:
                self._sleep(delay)
            for pin, end in widths_us.items():
                if end is None or starts.get(pin) is None:
                    continue
                us = starts[pin] + (end - starts[pin]) * i / frames
                if us != self.current[pin]:
                    self._servo_write(pin, us)
                    self.current[pin] = us
            self._next_frame_t += FRAME_S
            self._played += 1

    def drain(self, *, timeout_s: float | None = None) -> None:
        self._waiting()
        delay = (self._next_frame_t or 0) - self._clock()
        if delay > 0:
            self._sleep(delay)

    def stop(self) -> None:
        """Nothing is queued on the board: the servos hold the last pulse written."""
        self._next_frame_t = None

    def status(self) -> BoardStatus:
        pins = range(max(self.ranges) + 1)
        return BoardStatus(widths_us=tuple(self.current.get(p) for p in pins), left_frames=0, counters={})

    def played_frames(self) -> int:
        return self._played

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
