"""Encode and decode lines of the armctl serial protocol (docs/protocol.md).

Pure functions, shared by the host backend and the simulated board. A pulse
width travels as microseconds with an optional ``.5``; inside it is an integer
number of ticks of 0.5 us. ``None`` stands for ``-`` (no change / no width).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import ProtocolError

PROTOCOL_VERSION = 1
TICKS_PER_US = 2
FRAME_US = 20000
HOST_LINE_MAX = 64  # bytes including "\n"
BOARD_LINE_MAX = 128
SEQ_MOD = 256
IMMEDIATE = frozenset("HQX")
SEQUENCED = frozenset("MEWL")
NAK_REASONS = ("CRC", "SEQ", "LONG", "FULL", "SYNC")
REJECT_REASONS = ("ARG", "CMD", "RANGE", "OFF")


def crc16(data: bytes, crc: int = 0xFFFF) -> int:
    """CRC-16/CCITT-FALSE (poly 0x1021, init 0xFFFF, no reflection, no final XOR)."""
    for byte in data:
        crc ^= byte << 8
        for _ in range(8):
            crc = ((crc << 1) ^ 0x1021) & 0xFFFF if crc & 0x8000 else (crc << 1) & 0xFFFF
    return crc


def format_width(ticks: int | None) -> str:
    """Wire text of a width in 0.5 us ticks: 2901 -> '1450.5', None -> '-'."""
    if ticks is None:
        return "-"
    ticks = int(ticks)
    return f"{ticks // 2}.5" if ticks % 2 else str(ticks // 2)


def parse_width(text: str) -> int | None:
    """Ticks (0.5 us) from wire text '1450.5' -> 2901; '-' -> None; ValueError if malformed."""
    if text == "-":
        return None
    whole, dot, frac = text.partition(".")
    if not whole.isdigit() or not whole.isascii() or (dot and frac != "5"):
        raise ValueError(f"malformed width {text!r}")
    return int(whole) * 2 + (1 if dot else 0)


def parse_uint(text: str, lo: int, hi: int) -> int:
    """A plain decimal integer in lo..hi; ValueError otherwise."""
    if not text.isdigit() or not text.isascii() or len(text) > 10:
        raise ValueError(f"malformed number {text!r}")
    value = int(text)
    if not lo <= value <= hi:
        raise ValueError(f"{value} outside {lo}..{hi}")
    return value


def encode(seq: int | None, kind: str, *args) -> bytes:
    """One complete line: ``<seq> <kind> <args> *<CRC>\\n``; seq None is '-'."""
    fields = ["-" if seq is None else str(int(seq)), kind, *(str(a) for a in args)]
    body = (" ".join(fields) + " ").encode("ascii")
    return body + b"*%04X\n" % crc16(body)


@dataclass(frozen=True)
class Line:
    """A checked line split into fields: ``seq`` (None for '-'), ``kind``, ``args``."""

    seq: int | None
    kind: str
    args: tuple[str, ...]


class CrcError(ProtocolError):
    """A line whose checksum is missing or wrong."""


def split_line(raw: bytes) -> Line:
    """Check the CRC of one line (with or without its trailing newline) and split it.

    Raises CrcError for a missing/bad checksum, ProtocolError for a line that
    checks but has no ``<seq> <kind>`` head.
    """
    data = raw.rstrip(b"\n")
    if data.endswith(b"\r"):
        data = data[:-1]
    star = data.rfind(b"*")
    if star < 1 or len(data) - star != 5 or data[star - 1 : star] != b" ":
        raise CrcError(f"no checksum in line {raw[:40]!r}")
    try:
        crc = int(data[star + 1 :].decode("ascii"), 16)
    except (UnicodeDecodeError, ValueError):
        raise CrcError(f"malformed checksum in line {raw[:40]!r}") from None
    if not all(c in b"0123456789abcdefABCDEF" for c in data[star + 1 :]):
        raise CrcError(f"malformed checksum in line {raw[:40]!r}")
    body = data[:star]
    if crc16(body) != crc:
        raise CrcError(f"checksum mismatch in line {raw[:40]!r}")
    try:
        fields = body.decode("ascii").split(" ")
    except UnicodeDecodeError:
        raise ProtocolError(f"non-ASCII line {raw[:40]!r}") from None
    fields = fields[:-1]  # the body ends with the space before '*'
    if len(fields) < 2 or any(f == "" for f in fields):
        raise ProtocolError(f"malformed line {raw[:40]!r}")
    head = fields[0]
    if head == "-":
        seq = None
    else:
        try:
            seq = parse_uint(head, 0, SEQ_MOD - 1)
        except ValueError:
            raise ProtocolError(f"bad sequence number in line {raw[:40]!r}") from None
    return Line(seq, fields[1], tuple(fields[2:]))


# --- host command builders -------------------------------------------------------------------------


def hello(seq: int) -> bytes:
    """Handshake line."""
    return encode(seq, "H")


def query(seq: int) -> bytes:
    """Status query line."""
    return encode(seq, "Q")


def stop(seq: int) -> bytes:
    """Stop line: flush the board's queue and hold."""
    return encode(seq, "X")


def move(seq: int, frames: int, ticks) -> bytes:
    """Move line: reach ``ticks`` (0.5 us each, None = no change) linearly over ``frames`` 20 ms frames."""
    if not 1 <= int(frames) <= 65535:
        raise ValueError(f"frames {frames} outside 1..65535")
    return encode(seq, "M", int(frames), *(format_width(t) for t in ticks))


def enable(seq: int, mask: int) -> bytes:
    """Enable line: channels whose bit is set in ``mask`` may pulse."""
    return encode(seq, "E", f"{int(mask):X}")


def watchdog(seq: int, timeout_s: float, *, mode: str = "H") -> bytes:
    """Watchdog line: after ``timeout_s`` seconds of silence hold (``H``) or stop pulses (``O``); 0 = off."""
    ms = int(round(timeout_s * 1000))
    if ms != 0 and not 20 <= ms <= 65535:
        raise ValueError(f"watchdog {ms} ms outside 20..65535")
    return encode(seq, "W", ms, mode)


def limits(seq: int, channel: int, lo_ticks: int, hi_ticks: int) -> bytes:
    """Limits line: channel pulse range, in ticks."""
    return encode(seq, "L", int(channel), format_width(lo_ticks), format_width(hi_ticks))


# --- board replies ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Ack:
    seq: int
    expect: int
    free: int


@dataclass(frozen=True)
class Nak:
    expect: int
    free: int
    reason: str


@dataclass(frozen=True)
class Reject:
    seq: int | None
    expect: int
    free: int
    reason: str


@dataclass(frozen=True)
class Hello:
    seq: int
    firmware: str
    protocol: int
    channels: int
    depth: int
    frame_us: int
    boot: int
    limits_ticks: tuple[tuple[int, int], ...]


@dataclass(frozen=True)
class Status:
    seq: int
    frame: int
    expect: int
    free: int
    mask: int
    widths_ticks: tuple[int | None, ...]
    left_frames: int
    counters: dict
    boot: int


@dataclass(frozen=True)
class Event:
    name: str
    args: tuple[str, ...]


COUNTER_NAMES = ("crc", "seq", "dup", "rej", "full", "long", "empty", "wdog")


def parse_reply(raw: bytes):
    """Decode one board line into Ack, Nak, Reject, Hello, Status or Event.

    Raises CrcError or ProtocolError (with the line) for anything else.
    """
    line = split_line(raw)
    a = line.args
    try:
        if line.kind == "A" and len(a) == 2 and line.seq is not None:
            return Ack(line.seq, parse_uint(a[0], 0, 255), parse_uint(a[1], 0, 65535))
        if line.kind == "N" and len(a) == 3:
            return Nak(parse_uint(a[0], 0, 255), parse_uint(a[1], 0, 65535), a[2])
        if line.kind == "R" and len(a) == 3:
            return Reject(line.seq, parse_uint(a[0], 0, 255), parse_uint(a[1], 0, 65535), a[2])
        if line.kind == "H" and len(a) >= 6 and line.seq is not None:
            nch = parse_uint(a[2], 1, 64)
            if len(a) != 6 + nch:
                raise ValueError(f"expected {nch} channel limits")
            lims = []
            for item in a[6:]:
                lo, _, hi = item.partition(":")
                lims.append((parse_width(lo), parse_width(hi)))
            return Hello(
                line.seq,
                a[0],
                parse_uint(a[1], 0, 65535),
                nch,
                parse_uint(a[3], 1, 65535),
                parse_uint(a[4], 1, 10**6),
                int(a[5], 16),
                tuple(lims),
            )
        if line.kind == "S" and line.seq is not None and len(a) >= 4:
            nch = len(a) - 4 - 1 - len(COUNTER_NAMES) - 1
            if nch < 1:
                raise ValueError("too few fields")
            widths = tuple(parse_width(w) for w in a[4 : 4 + nch])
            rest = a[4 + nch :]
            counters = {k: parse_uint(v, 0, 65535) for k, v in zip(COUNTER_NAMES, rest[1:-1], strict=True)}
            return Status(
                line.seq,
                parse_uint(a[0], 0, 2**32 - 1),
                parse_uint(a[1], 0, 255),
                parse_uint(a[2], 0, 65535),
                int(a[3], 16),
                widths,
                parse_uint(rest[0], 0, 2**32 - 1),
                counters,
                int(rest[-1], 16),
            )
        if line.kind == "!" and line.seq is None and a:
            return Event(a[0], a[1:])
    except ValueError as exc:
        raise ProtocolError(f"malformed {line.kind!r} reply {raw[:60]!r}: {exc}") from None
    raise ProtocolError(f"unexpected board line {raw[:60]!r}")


def main(argv=None) -> int:
    """``python -m armctl.bus.codec "0 H"`` prints the line with its CRC (for typing in a serial monitor)."""
    import sys

    args = sys.argv[1:] if argv is None else argv
    for text in args:
        body = (text.strip() + " ").encode("ascii")
        print(f"{body.decode()}*{crc16(body):04X}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
