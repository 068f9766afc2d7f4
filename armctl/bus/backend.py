"""The one interface every board backend offers, and the port opener they share.

A backend speaks in servo **channels** and pulse widths in **microseconds**
(float; None = leave this channel alone). Timing is in 20 ms servo frames:
``move(frames, widths)`` reaches ``widths`` linearly over ``frames`` frames,
right after the previous move. Lifecycle: ``open()`` (connects and checks the
board), ``close()``, or a ``with`` block.
"""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field

import serial

from ..errors import BadInputError, LinkError
from . import __name__ as _bus  # noqa: F401  (registers armsim:// with pyserial)

FRAME_S = 0.020


@dataclass
class BoardInfo:
    """What the board told us at connect."""

    firmware: str
    protocol: int | str
    channels: int
    depth: int
    boot: int | None = None
    limits_us: tuple[tuple[float, float], ...] = ()
    widths_us: tuple[float | None, ...] = ()  # pulses the board outputs right now (None: none)


@dataclass
class BoardStatus:
    """A status snapshot: widths output now (us, None = no pulses), queue and counters."""

    widths_us: tuple[float | None, ...]
    left_frames: int = 0
    counters: dict = field(default_factory=dict)
    frame: int | None = None


class Backend(ABC):
    """A board we can stream timed servo pulses to."""

    name = "backend"
    info: BoardInfo | None = None
    port: str = ""
    #: Called every few ms from inside the blocking waits of ``move`` and ``drain`` (set by the streamer);
    #: it may raise to abandon the wait, e.g. on a stop request from another thread.
    on_wait: Callable[[], None] | None = None

    def _waiting(self) -> None:
        if self.on_wait is not None:
            self.on_wait()

    @abstractmethod
    def open(self) -> BoardInfo:
        """Open the port, handshake, return the board's description. LinkError on any failure."""

    @abstractmethod
    def close(self) -> None:
        """Release the port (safe to call twice)."""

    @abstractmethod
    def move(self, frames: int, widths_us: dict[int, float | None]) -> None:
        """Queue a linear move over ``frames`` 20 ms frames to ``widths_us`` (channel -> us)."""

    @abstractmethod
    def drain(self, *, timeout_s: float | None = None) -> None:
        """Block until every queued move has been played."""

    @abstractmethod
    def stop(self) -> None:
        """Controlled stop: drop queued moves, hold the current pulses."""

    @abstractmethod
    def status(self) -> BoardStatus:
        """Current pulses and counters."""

    def played_frames(self) -> int:
        """Frames of queued motion played so far (for progress), best estimate."""
        return 0

    def set_limits(self, channel: int, lo_us: float, hi_us: float) -> None:
        """Store ``channel``'s safe pulse range (us) on the board, which then refuses widths outside it.

        Boards that cannot store limits (StandardFirmata: the range is given when a servo is
        attached) do nothing here; ``info.limits_us`` is empty for them.
        """
        return None

    def __enter__(self):
        self.open()
        return self

    def __exit__(self, *exc):
        self.close()
        return False


class BoardLimitsError(LinkError):
    """The board's stored pulse limits differ from the host's calibration, or the board refused new ones."""


class WireLog:
    """Writes every byte sent (``>``) and received (``<``) with its time, one chunk per line."""

    def __init__(self, path):
        try:
            self.f = open(path, "w", encoding="ascii", errors="backslashreplace")  # noqa: SIM115
        except OSError as exc:  # before the port is opened: nothing has been sent
            raise BadInputError(f"--wire-log {path}: cannot write: {exc.strerror or exc}") from None
        self.t0 = time.monotonic()
        self.f.write("# armctl wire log: seconds since open, direction (> host to board, < board to host), bytes\n")

    def record(self, direction: str, data: bytes) -> None:
        if data:
            self.f.write(f"{time.monotonic() - self.t0:10.6f} {direction} {data!r}\n")

    def close(self) -> None:
        if not self.f.closed:
            self.f.close()


def open_port(url: str, *, baudrate: int, timeout_s: float = 0.0) -> serial.SerialBase:
    """Open ``url`` (a path or any pyserial URL, armsim:// included); LinkError naming the port if it fails."""
    try:
        return serial.serial_for_url(url, baudrate=baudrate, timeout=timeout_s, write_timeout=2.0)
    except (serial.SerialException, OSError, ValueError) as exc:
        raise LinkError(f"cannot open port {url!r}: {exc}") from None
