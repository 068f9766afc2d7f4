"""The board side of the armctl protocol as a pure state machine (docs/protocol.md), versions 1 and 2.

``Board`` is what our firmware does, in Python: line assembly, CRC, sequence
numbers, the move queue, frame-timed interpolation in 0.5 us ticks, stop,
enable, watchdog, limits and status. It has no clock of its own: the caller
says what time it is (seconds since boot) with every call, so the simulator can
run it on a scaled clock and the test vectors on a virtual one. Times may be
floats or ``fractions.Fraction`` (exact, with ``frame_s=Fraction(1, 50)``: the
differential test against the firmware, tools/fuzz/, needs exact ties).

The two versions differ only in how widths are written on the wire (version 1: microseconds with an
optional ``.5``; version 2: ticks) and so in how many channels a line can carry; every rule is the same.
"""

from __future__ import annotations

import random
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction

from armctl.bus import codec

DEFAULT_LIMITS_TICKS = codec.LIMITS_TICKS  # 500..2500 us
FIRMWARE_CHANNELS = {1: 4, 2: 8}  # our firmware's channel count in each protocol version
FRAME_MOD = 2**32  # the frame counter is 32 bits on the wire
_HEX = frozenset("0123456789ABCDEFabcdef")


class _Reject(Exception):
    """A sequenced command's arguments are bad: ``reason`` is ARG or RANGE (docs/protocol.md section 4)."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


def _number(text: str) -> int:
    """A canonical decimal: ``0`` or no leading zero, any length (section 1); _Reject(ARG) if malformed."""
    if not (text.isascii() and text.isdigit()) or (len(text) > 1 and text[0] == "0"):
        raise _Reject("ARG")
    return int(text)


def _width(text: str, version: int) -> int | None:
    """A width field in ticks: ``-`` is None, else (version 2) a number of ticks or (version 1) a number of
    microseconds with an optional ``.5``; _Reject(ARG) if malformed.

    ``0`` is a well-formed width (0 us) that no channel's range holds."""
    if text == "-":
        return None
    if version >= 2:
        return _number(text)
    half = text.endswith(".5")
    return _number(text[:-2] if half else text) * 2 + half


def _hex(text: str) -> int:
    """A hex number (the enable mask): ``0`` or no leading zero, any length, either case; _Reject(ARG) if not."""
    if not text or any(c not in _HEX for c in text) or (len(text) > 1 and text[0] == "0"):
        raise _Reject("ARG")
    return int(text, 16)


def _split_checked(line: bytes) -> list[str] | None:
    """The fields of a line whose CRC is good (the line without its newline and one CR).

    Raises codec.CrcError (section 4 step 2); returns None when the CRC is good but the body is not
    ASCII fields separated by single spaces with at least ``<seq> <TYPE>`` (a reject, ARG)."""
    star = line.rfind(b"*")
    tail = line[star + 1 :]
    if star < 1 or len(tail) != 4 or line[star - 1] != 0x20 or any(c not in b"0123456789ABCDEFabcdef" for c in tail):
        raise codec.CrcError(f"no checksum in line {line[:40]!r}")
    if codec.crc16(line[:star]) != int(tail, 16):
        raise codec.CrcError(f"checksum mismatch in line {line[:40]!r}")
    body = line[: star - 1]  # without the space before '*'
    if any(c >= 0x80 for c in body):
        return None
    fields = body.decode("ascii").split(" ")
    if len(fields) < 2 or any(f == "" for f in fields):
        return None
    return fields


@dataclass
class _Move:
    frames: int
    ends: list[int | None]  # ticks; None = '-' (also for every channel disabled since the move was accepted)
    starts: list[int | None] | None = None  # set when the move starts
    done: int = 0


class Board:
    """One simulated board. Times are seconds since boot; frame k begins at k * frame_s.

    ``protocol`` is the version it speaks (default the newest); ``channels`` defaults to our firmware's count
    in that version (4, 8) and may be at most what the version's lines carry (``codec.max_channels``)."""

    def __init__(
        self,
        *,
        protocol: int = codec.PROTOCOL_VERSION,
        channels: int | None = None,
        depth: int = 16,
        firmware: str = "armsim",
        boot: int | None = None,
        frame_s: float | Fraction = codec.FRAME_US * 1e-6,
        on_pulse: Callable[[float, int, int | None], None] | None = None,
    ):
        if protocol not in codec.VERSIONS:
            raise ValueError(f"protocol version {protocol}: the board speaks {', '.join(map(str, codec.VERSIONS))}")
        self.protocol = int(protocol)
        self.channels = FIRMWARE_CHANNELS[self.protocol] if channels is None else int(channels)
        if not 1 <= self.channels <= codec.max_channels(self.protocol):
            raise ValueError(
                f"{self.channels} channels: protocol version {self.protocol} lines carry 1.."
                f"{codec.max_channels(self.protocol)}"
            )
        self.depth = int(depth)
        self.firmware = firmware
        self.frame_s = frame_s if isinstance(frame_s, Fraction) else float(frame_s)
        self.boot = random.getrandbits(16) if boot is None else int(boot) & 0xFFFF
        self.on_pulse = on_pulse
        self.frame = 0
        self.expect = 0
        self.synced = False
        self.mask = (1 << self.channels) - 1
        self.width: list[int | None] = [None] * self.channels
        self.out: list[int | None] = [None] * self.channels
        self.limits = [DEFAULT_LIMITS_TICKS] * self.channels
        self.queue: deque[_Move] = deque()
        self.cur: _Move | None = None
        self.counters = dict.fromkeys(codec.COUNTER_NAMES, 0)
        self.wdog_s = 0.0
        self.wdog_mode = "H"
        self.wdog_deadline: float | None = None
        self._buf = bytearray()
        self._discarding = False
        self.now = 0.0

    # --- time --------------------------------------------------------------------------------------

    def banner(self) -> bytes:
        """The boot event line."""
        return codec.encode(None, "!", "BOOT", self.firmware, self.protocol, f"{self.boot:04X}")

    def next_event_s(self) -> float:
        """Time of the next thing the board does on its own (frame boundary or watchdog)."""
        t = (self.frame + 1) * self.frame_s
        if self.wdog_deadline is not None:
            t = min(t, self.wdog_deadline)
        return t

    def advance_to(self, t: float) -> bytes:
        """Run frame boundaries and the watchdog up to time ``t``; returns event lines sent."""
        out = b""
        while True:
            boundary = (self.frame + 1) * self.frame_s
            wd = self.wdog_deadline
            if wd is not None and wd <= t and wd < boundary:
                out += self._fire_watchdog()
            elif boundary <= t:
                self.frame += 1
                self._boundary()
            else:
                break
        if t >= self.now:  # t, not max(): keeps the caller's number type (exact Fractions stay exact)
            self.now = t
        return out

    def _boundary(self) -> None:
        ended = False
        if self.cur is not None and self.cur.done >= self.cur.frames:
            self.cur, ended = None, True
        if self.cur is None and self.queue:
            self.cur = self.queue.popleft()
            # a channel with no width yet starts at its end width (disabled channels have no end: see _cmd_E)
            self.cur.starts = [
                None if e is None else (self.width[ch] if self.width[ch] is not None else e)
                for ch, e in enumerate(self.cur.ends)
            ]
        elif self.cur is None and ended:
            self.counters["empty"] += 1
        if self.cur is not None:
            m = self.cur
            m.done += 1
            for ch, (s, e) in enumerate(zip(m.starts, m.ends, strict=True)):
                if s is None or e is None:
                    continue
                d = e - s
                step = (2 * abs(d) * m.done + m.frames) // (2 * m.frames)
                self.width[ch] = s + step if d >= 0 else s - step
        t = self.frame * self.frame_s
        for ch in range(self.channels):
            w = self.width[ch] if self.mask >> ch & 1 else None
            if w != self.out[ch]:
                self.out[ch] = w
                if self.on_pulse is not None:
                    self.on_pulse(t, ch, w)

    def _fire_watchdog(self) -> bytes:
        self.queue.clear()
        self.cur = None
        if self.wdog_mode == "O":
            self.width = [None] * self.channels
        self.counters["wdog"] += 1
        self.wdog_s = 0.0
        self.wdog_deadline = None
        return codec.encode(None, "!", "WDOG", self.frame % FRAME_MOD)

    # --- bytes in ----------------------------------------------------------------------------------

    def receive(self, data: bytes, t: float) -> bytes:
        """Bytes arriving at time ``t`` (s); returns every line the board sends in response."""
        out = self.advance_to(t)
        for byte in data:
            if byte == 0x0A:
                line = bytes(self._buf)
                self._buf.clear()
                if self._discarding:
                    self._discarding = False
                    self.counters["long"] += 1
                    out += self._nak("LONG")
                    continue
                # One "\r" before "\n" is allowed (serial monitors send CRLF): "\r\r\n" is a
                # line "\r", a bad checksum; empty lines are ignored.
                if line.endswith(b"\r"):
                    line = line[:-1]
                if line:
                    out += self.handle_line(line, t)
            elif not self._discarding:
                self._buf.append(byte)
                if len(self._buf) >= codec.HOST_LINE_MAX:  # no room left for the "\n"
                    self._buf.clear()
                    self._discarding = True
        return out

    # --- one line ----------------------------------------------------------------------------------

    @property
    def free(self) -> int:
        return self.depth - len(self.queue)

    def _nak(self, reason: str) -> bytes:
        return codec.encode(None, "N", self.expect, self.free, reason)

    def _reject(self, seq, reason: str) -> bytes:
        self.counters["rej"] += 1
        return codec.encode(seq, "R", self.expect, self.free, reason)

    def handle_line(self, line: bytes, t: float) -> bytes:
        """Process one complete line (without its newline and one CR) received at time ``t``, as section 4 says."""
        try:
            fields = _split_checked(line)
        except codec.CrcError:
            self.counters["crc"] += 1
            return self._nak("CRC")
        self._restart_watchdog(t)  # any line with a good CRC, duplicates and rejects too
        if fields is None:
            return self._reject(None, "ARG")
        try:
            seq = _number(fields[0])
        except _Reject:
            seq = None
        if seq is None or seq > 255:
            return self._reject(None, "ARG")
        kind, args = fields[1], fields[2:]
        if kind not in codec.IMMEDIATE and kind not in codec.SEQUENCED:
            return self._reject(seq, "CMD")
        if kind in codec.IMMEDIATE:
            if args:
                return self._reject(seq, "ARG")
            return getattr(self, f"_cmd_{kind}")(seq)
        if not self.synced:
            return self._nak("SYNC")
        d = (self.expect - seq) % codec.SEQ_MOD
        if d > 128:
            self.counters["seq"] += 1
            return self._nak("SEQ")
        if d >= 1:
            self.counters["dup"] += 1
            return codec.encode(seq, "A", self.expect, self.free)
        if kind == "M" and not self.free:
            self.counters["full"] += 1
            return self._nak("FULL")
        try:
            getattr(self, f"_cmd_{kind}")(args)
            reason = None
        except _Reject as exc:
            reason = exc.reason
        self.expect = (self.expect + 1) % codec.SEQ_MOD  # used up, executed or rejected
        if reason:
            return self._reject(seq, reason)
        return codec.encode(seq, "A", self.expect, self.free)

    def _restart_watchdog(self, t: float) -> None:
        if self.wdog_s > 0:
            self.wdog_deadline = t + self.wdog_s

    # --- immediate commands ------------------------------------------------------------------------

    def _cmd_H(self, seq: int) -> bytes:
        self.expect = (seq + 1) % codec.SEQ_MOD
        self.synced = True
        v = self.protocol
        lims = [f"{codec.format_width(lo, version=v)}:{codec.format_width(hi, version=v)}" for lo, hi in self.limits]
        return codec.encode(
            seq,
            "H",
            self.firmware,
            v,
            self.channels,
            self.depth,
            round(self.frame_s * 1e6),
            f"{self.boot:04X}",
            *lims,
        )

    def _cmd_Q(self, seq: int) -> bytes:
        return codec.encode(
            seq,
            "S",
            self.frame % FRAME_MOD,
            self.expect,
            self.free,
            f"{self.mask:X}",
            *(codec.format_width(w, version=self.protocol) for w in self.out),
            self.left_frames,
            *(self.counters[k] % 65536 for k in codec.COUNTER_NAMES),
            f"{self.boot:04X}",
        )

    def _cmd_X(self, seq: int) -> bytes:
        self.queue.clear()
        self.cur = None
        # hold what this frame outputs; a channel disabled during this frame still outputs its last
        # pulse, but it has forgotten its width
        self.width = [w if self.mask >> ch & 1 else None for ch, w in enumerate(self.out)]
        return codec.encode(seq, "A", self.expect, self.free)

    @property
    def left_frames(self) -> int:
        """Frames until the queue is done (rest of the executing move plus every queued one)."""
        left = sum(m.frames for m in self.queue)
        if self.cur is not None:
            left += self.cur.frames - self.cur.done
        return left

    # --- sequenced commands: raise _Reject(reason) ------------------------------------------------

    def _cmd_M(self, args) -> None:
        if len(args) != 1 + self.channels:
            raise _Reject("ARG")
        frames = _number(args[0])  # every argument is parsed (ARG) before any range (RANGE, OFF)
        ends = [_width(a, self.protocol) for a in args[1:]]
        if not 1 <= frames <= 65535:
            raise _Reject("RANGE")
        for ch, e in enumerate(ends):  # channel by channel from 0: the first at fault names the reason
            if e is None:
                continue
            if not self.mask >> ch & 1:
                raise _Reject("OFF")
            lo, hi = self.limits[ch]
            if not lo <= e <= hi:
                raise _Reject("RANGE")
        self.queue.append(_Move(frames, ends))

    def _cmd_E(self, args) -> None:
        if len(args) != 1:
            raise _Reject("ARG")
        mask = _hex(args[0])
        if mask >> self.channels:
            raise _Reject("RANGE")
        # A disabled channel forgets its width, and every move forgets its number for it: no pulse on
        # it until a move accepted after it is enabled again gives it one (docs/protocol.md section 3).
        for ch in range(self.channels):
            if not mask >> ch & 1:
                self.width[ch] = None
                for m in [*self.queue, *([self.cur] if self.cur is not None else [])]:
                    m.ends[ch] = None
                    if m.starts is not None:
                        m.starts[ch] = None
        self.mask = mask

    def _cmd_W(self, args) -> None:
        if len(args) != 2 or args[1] not in ("H", "O"):
            raise _Reject("ARG")
        ms = _number(args[0])
        if ms != 0 and not 20 <= ms <= 65535:
            raise _Reject("RANGE")
        self.wdog_s = Fraction(ms, 1000)  # exact; float + Fraction is a float for the simulator's clock
        self.wdog_mode = args[1]
        self.wdog_deadline = None if ms == 0 else self.now + self.wdog_s

    def _cmd_L(self, args) -> None:
        if len(args) != 3:
            raise _Reject("ARG")
        ch = _number(args[0])
        lo, hi = _width(args[1], self.protocol), _width(args[2], self.protocol)
        if lo is None or hi is None:
            raise _Reject("ARG")
        if ch >= self.channels or not DEFAULT_LIMITS_TICKS[0] <= lo < hi <= DEFAULT_LIMITS_TICKS[1]:
            raise _Reject("RANGE")
        # the channel's width, every queued end and the executing move's end must fit
        widths = [self.width[ch]] + [m.ends[ch] for m in self.queue]
        if self.cur is not None:
            widths.append(self.cur.ends[ch])
        if any(w is not None and not lo <= w <= hi for w in widths):
            raise _Reject("RANGE")
        self.limits[ch] = (lo, hi)
