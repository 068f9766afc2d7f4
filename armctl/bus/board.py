"""The board side of the armctl protocol as a pure state machine (docs/protocol.md).

``Board`` is what our firmware does, in Python: line assembly, CRC, sequence
numbers, the move queue, frame-timed interpolation in 0.5 us ticks, stop,
enable, watchdog, limits and status. It has no clock of its own: the caller
says what time it is (seconds since boot) with every call, so the simulator can
run it on a scaled clock and the test vectors on a virtual one.
"""

from __future__ import annotations

import random
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

from . import codec

DEFAULT_LIMITS_TICKS = (1000, 5000)  # 500..2500 us


@dataclass
class _Move:
    frames: int
    ends: tuple[int | None, ...]
    starts: tuple[int | None, ...] = ()
    done: int = 0


class Board:
    """One simulated board. Times are seconds since boot; frame k begins at k * frame_s."""

    def __init__(
        self,
        *,
        channels: int = 4,
        depth: int = 16,
        firmware: str = "armsim",
        boot: int | None = None,
        frame_s: float = codec.FRAME_US * 1e-6,
        on_pulse: Callable[[float, int, int | None], None] | None = None,
    ):
        self.channels = int(channels)
        self.depth = int(depth)
        self.firmware = firmware
        self.frame_s = float(frame_s)
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
        return codec.encode(None, "!", "BOOT", self.firmware, codec.PROTOCOL_VERSION, f"{self.boot:04X}")

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
        self.now = max(self.now, t)
        return out

    def _boundary(self) -> None:
        ended = False
        if self.cur is not None and self.cur.done >= self.cur.frames:
            self.cur, ended = None, True
        if self.cur is None and self.queue:
            self.cur = self.queue.popleft()
            starts = []
            for ch, e in enumerate(self.cur.ends):
                if e is None or not self.mask >> ch & 1:
                    starts.append(None)
                else:
                    starts.append(self.width[ch] if self.width[ch] is not None else e)
            self.cur.starts = tuple(starts)
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
        return codec.encode(None, "!", "WDOG", self.frame)

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
                # One "\r" before "\n" is allowed (serial monitors send CRLF); split_line
                # strips it, as the firmware does: strip it here too and "\r\r\n" would pass.
                if line not in (b"", b"\r"):
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
        """Process one complete line (without its newline) received at time ``t``."""
        try:
            fields = codec.split_line(line)
        except codec.CrcError:
            self.counters["crc"] += 1
            return self._nak("CRC")
        except Exception:
            # Good CRC, but no readable "<seq> <TYPE>" head.
            self._restart_watchdog(t)
            return self._reject(None, "ARG")
        self._restart_watchdog(t)
        seq, kind, args = fields.seq, fields.kind, fields.args
        if seq is None:
            return self._reject(None, "ARG")
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
        reason = getattr(self, f"_cmd_{kind}")(args)
        self.expect = (self.expect + 1) % codec.SEQ_MOD
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
        lims = [f"{codec.format_width(lo)}:{codec.format_width(hi)}" for lo, hi in self.limits]
        return codec.encode(
            seq,
            "H",
            self.firmware,
            codec.PROTOCOL_VERSION,
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
            self.frame,
            self.expect,
            self.free,
            f"{self.mask:X}",
            *(codec.format_width(w) for w in self.out),
            self.left_frames,
            *(self.counters[k] % 65536 for k in codec.COUNTER_NAMES),
            f"{self.boot:04X}",
        )

    def _cmd_X(self, seq: int) -> bytes:
        self.queue.clear()
        self.cur = None
        self.width = list(self.out)
        return codec.encode(seq, "A", self.expect, self.free)

    @property
    def left_frames(self) -> int:
        """Frames until the queue is done (rest of the executing move plus every queued one)."""
        left = sum(m.frames for m in self.queue)
        if self.cur is not None:
            left += self.cur.frames - self.cur.done
        return left

    # --- sequenced commands: return a reject reason or None ----------------------------------------

    def _cmd_M(self, args) -> str | None:
        if len(args) != 1 + self.channels:
            return "ARG"
        try:
            frames = codec.parse_uint(args[0], 0, 10**9)
            ends = tuple(codec.parse_width(a) for a in args[1:])
        except ValueError:
            return "ARG"
        if not 1 <= frames <= 65535:
            return "RANGE"
        for ch, e in enumerate(ends):
            if e is None:
                continue
            if not self.mask >> ch & 1:
                return "OFF"
            lo, hi = self.limits[ch]
            if not lo <= e <= hi:
                return "RANGE"
        self.queue.append(_Move(frames, ends))
        return None

    def _cmd_E(self, args) -> str | None:
        if len(args) != 1 or not 1 <= len(args[0]) <= 2 or any(c not in "0123456789ABCDEFabcdef" for c in args[0]):
            return "ARG"
        mask = int(args[0], 16)
        if mask >> self.channels:
            return "RANGE"
        for ch in range(self.channels):
            if not mask >> ch & 1:
                self.width[ch] = None
        self.mask = mask
        return None

    def _cmd_W(self, args) -> str | None:
        if len(args) != 2 or args[1] not in ("H", "O"):
            return "ARG"
        try:
            ms = codec.parse_uint(args[0], 0, 10**9)
        except ValueError:
            return "ARG"
        if ms != 0 and not 20 <= ms <= 65535:
            return "RANGE"
        self.wdog_s = ms / 1000.0
        self.wdog_mode = args[1]
        self.wdog_deadline = None if ms == 0 else self.now + self.wdog_s
        return None

    def _cmd_L(self, args) -> str | None:
        if len(args) != 3:
            return "ARG"
        try:
            ch = codec.parse_uint(args[0], 0, 255)
            lo, hi = codec.parse_width(args[1]), codec.parse_width(args[2])
        except ValueError:
            return "ARG"
        if lo is None or hi is None:
            return "ARG"
        if ch >= self.channels or not 1000 <= lo < hi <= 5000:
            return "RANGE"
        widths = [self.width[ch]] + [m.ends[ch] for m in self.queue]
        if self.cur is not None:
            widths.append(self.cur.ends[ch])
        if any(w is not None and not lo <= w <= hi for w in widths):
            return "RANGE"
        self.limits[ch] = (lo, hi)
        return None
