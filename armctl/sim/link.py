"""The simulated cable between the host and a simulated board (or servo bus), in simulated time.

One ``TimedLink`` per simulator: it loses a chunk (a line, a packet) with probability ``drop``, flips one bit
of it with probability ``corrupt``, delivers it ``delay`` ms late, and after ``disconnect`` host bytes the
cable is pulled (``LinkGone`` from then on). It counts what it did (``faults``) and holds the bytes on their
way to the host. The simulator using it (``SimArm``, ``FeetechSim``) times the bytes on the wire (its baud
rate) and frames them; ``OverLink`` gives it the host's side (``host_read``, ``waiting``,
``drop_pending_output``) that the pyserial port (``simurl.SimSerial``) and the pty server (``pty``) call.
"""

from __future__ import annotations

import math
import random
from bisect import insort
from dataclasses import dataclass


class LinkGone(Exception):
    """The simulated cable (the USB adapter) was pulled (``disconnect=N``)."""


@dataclass
class LinkOptions:
    """The link's options, in a simulator's URL: ``drop`` and ``corrupt`` (probability per chunk, each
    direction), ``delay`` (ms, each direction), ``disconnect`` (the cable is pulled after this many host
    bytes), ``seed`` (of the random faults)."""

    drop: float = 0.0
    corrupt: float = 0.0
    delay_ms: float = 0.0
    disconnect: int | None = None
    seed: int | None = None


class TimedLink:
    """Faults, delay and disconnect of one simulated link (see the module note).

    ``opts``: the simulator's options (``LinkOptions``); ``rng`` draws the faults; ``far``: what is at the
    other end ("board", "servos"), for the names of the fault counters."""

    def __init__(self, opts: LinkOptions, rng: random.Random, far: str):
        self.opts = opts
        self.rng = rng
        self.delay_s = opts.delay_ms / 1000.0
        self.faults = {f"dropped_to_{far}": 0, f"corrupted_to_{far}": 0, "dropped_to_host": 0, "corrupted_to_host": 0}
        self.host_bytes = 0  #: bytes the host sent (up to the disconnect)
        self.gone = False  #: the cable was pulled
        self.to_host: list[tuple[float, int, bytes]] = []  # (arrival s, order, bytes), by arrival
        self._order = 0

    def gone_error(self) -> LinkGone:
        limit = self.opts.disconnect
        return LinkGone(f"disconnected after {limit} bytes (disconnect={limit})")

    def check(self) -> None:
        """LinkGone if the cable was pulled."""
        if self.gone:
            raise self.gone_error()

    def cut(self, data: bytes) -> bytes:
        """What of ``data``, sent by the host now, goes down the cable before ``disconnect`` pulls it (then
        ``gone``: the caller raises ``gone_error()`` once it has sent that much)."""
        limit = self.opts.disconnect
        if limit is not None and self.host_bytes + len(data) >= limit:
            data = data[: max(0, limit - self.host_bytes)]
            self.gone = True
        self.host_bytes += len(data)
        return data

    def fault(self, chunk: bytes, direction: str) -> bytes | None:
        """``chunk`` as it arrives going ``direction`` ("host", or the far end's name): None if lost, else
        with one bit flipped or as sent."""
        o = self.opts
        if o.drop and self.rng.random() < o.drop:
            self.faults[f"dropped_to_{direction}"] += 1
            return None
        if o.corrupt and self.rng.random() < o.corrupt:
            self.faults[f"corrupted_to_{direction}"] += 1
            return self.flip(chunk, 0)
        return chunk

    def flip(self, chunk: bytes, first: int) -> bytes:
        """``chunk`` with one bit flipped, at or after byte ``first``."""
        b = bytearray(chunk)
        b[self.rng.randrange(first, len(b))] ^= 1 << self.rng.randrange(8)
        return bytes(b)

    def deliver(self, queue: list, arrival_s: float, item) -> None:
        """Put ``item`` in ``queue`` (a list of (arrival, order, item)) to arrive at ``arrival_s``; equal
        arrivals keep the order they were sent in."""
        self._order += 1
        insort(queue, (arrival_s, self._order, item))

    def send_to_host(self, data: bytes, done_s: float) -> None:
        """``data``, on the wire until ``done_s``, on its way to the host (faulted, delayed)."""
        faulted = self.fault(data, "host")
        if faulted is not None:
            self.deliver(self.to_host, done_s + self.delay_s, faulted)

    def read(self, t: float, size: int | None = None) -> bytes:
        """The bytes that reached the host by ``t`` (at most ``size``), taken."""
        out = bytearray()
        while self.to_host and self.to_host[0][0] <= t and (size is None or len(out) < size):
            arrival, order, chunk = self.to_host.pop(0)
            if size is not None and len(out) + len(chunk) > size:
                take = size - len(out)
                out += chunk[:take]
                self.to_host.insert(0, (arrival, order, chunk[take:]))
                break
            out += chunk
        return bytes(out)

    def waiting(self, t: float) -> int:
        """Bytes that have reached the host by ``t`` and not been read."""
        return sum(len(c) for a, _, c in self.to_host if a <= t)

    def next_to_host_s(self) -> float:
        """When the next bytes reach the host (inf: none on the way)."""
        return self.to_host[0][0] if self.to_host else math.inf

    def drop_arrived(self, now: float) -> None:
        """Forget the bytes that reached the host by ``now``; those still on the wire arrive later."""
        self.to_host = [item for item in self.to_host if item[0] > now]


class OverLink:
    """The host's side of a simulator behind a ``TimedLink`` (``self.link``): the simulator gives
    ``pump(t)`` (run up to simulated time ``t``) and ``now``."""

    link: TimedLink
    now: float

    def pump(self, t: float) -> None:
        raise NotImplementedError

    @property
    def faults(self) -> dict[str, int]:
        """What the link did: chunks dropped and corrupted, each direction."""
        return self.link.faults

    @property
    def gone(self) -> bool:
        """The cable was pulled (``disconnect``)."""
        return self.link.gone

    @property
    def host_bytes(self) -> int:
        """Bytes the host sent."""
        return self.link.host_bytes

    def host_read(self, t: float, size: int | None = None) -> bytes:
        """Bytes that have reached the host by simulated time ``t`` (at most ``size``)."""
        self.link.check()
        self.pump(t)
        return self.link.read(t, size)

    def waiting(self, t: float) -> int:
        """Bytes that have reached the host by ``t`` and not been read."""
        self.pump(t)
        return self.link.waiting(t)

    def drop_pending_output(self) -> None:
        """Forget bytes that have reached the host and not been read (pyserial's reset_input_buffer).

        Bytes still on the wire (the boot banner right after the port opened) arrive later, as on a real port."""
        self.link.drop_arrived(self.now)
