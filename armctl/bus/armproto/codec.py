"""Encode and decode lines of the armctl serial protocol (docs/protocol.md), versions 1 and 2.

Pure functions, shared by the host backend and the simulated board. Inside, a pulse width is an
integer number of ticks of 0.5 us; ``None`` stands for ``-`` (no change / no width). On the wire
version 1 writes widths in microseconds with an optional ``.5`` (``1450.5``), version 2 in ticks
(``2901``): that is what lets a version 2 move line carry 8 channels in 64 bytes. Every function
that writes or reads a width takes the ``version`` (keyword, default the newest).
"""

from __future__ import annotations

from dataclasses import dataclass

from armctl.errors import ProtocolError

PROTOCOL_VERSION = 2  # the newest: what our firmware speaks, and the simulator unless told otherwise
VERSIONS = (1, 2)  # what this host speaks
TICKS_PER_US = 2
FRAME_US = 20000
HOST_LINE_MAX = 64  # bytes including "\n": the board's receive buffer, both versions
BOARD_LINE_MAX = 160  # the longest board line of any version (version 1: 128)
_BOARD_LINE_MAX = {1: 128, 2: 160}
LIMITS_TICKS = (1000, 5000)  # every board's widest range: 500..2500 us
SEQ_MOD = 256
IMMEDIATE = frozenset("HQX")
SEQUENCED = frozenset("MEWL")
_CRC_TAIL = len(" *XXXX\n")


def crc16(data: bytes, crc: int = 0xFFFF) -> int:
    """CRC-16/CCITT-FALSE (poly 0x1021, init 0xFFFF, no reflection, no final XOR)."""
    for byte in data:
        crc ^= byte << 8
        for _ in range(8):
            crc = ((crc << 1) ^ 0x1021) & 0xFFFF if crc & 0x8000 else (crc << 1) & 0xFFFF
    return crc


def _check_version(version: int) -> int:
    if version not in VERSIONS:
        raise ValueError(f"protocol version {version!r}: this armctl speaks {', '.join(map(str, VERSIONS))}")
    return version


def format_width(ticks: int | None, *, version: int = PROTOCOL_VERSION) -> str:
    """Wire text of a width in 0.5 us ticks: 2901 -> '2901' (version 2) or '1450.5' (version 1); None -> '-'."""
    if ticks is None:
        return "-"
    ticks = int(ticks)
    if _check_version(version) >= 2:
        return str(ticks)
    return f"{ticks // 2}.5" if ticks % 2 else str(ticks // 2)


def parse_width(text: str, *, version: int = PROTOCOL_VERSION) -> int | None:
    """Ticks (0.5 us) from wire text: '2901' (version 2) or '1450.5' (version 1) -> 2901; '-' -> None;
    ValueError if malformed."""
    if text == "-":
        return None
    if _check_version(version) >= 2:
        if not text.isdigit() or not text.isascii():
            raise ValueError(f"malformed width {text!r}")
        return int(text)
    whole, dot, frac = text.partition(".")
    if not whole.isdigit() or not whole.isascii() or (dot and frac != "5"):
        raise ValueError(f"malformed width {text!r}")
    return int(whole) * 2 + (1 if dot else 0)


def board_line_max(version: int) -> int:
    """The longest line (bytes, with its newline) a board of this protocol version sends."""
    return _BOARD_LINE_MAX[_check_version(version)]


def _widest_width(version: int) -> int:
    """Characters of the longest width a board accepts (500..2500 us): '2499.5' or '5000'."""
    return max(len(format_width(t, version=version)) for t in (LIMITS_TICKS[1] - 1, LIMITS_TICKS[1]))


def longest_move_line(version: int, channels: int) -> int:
    """Bytes of the longest move line for ``channels`` channels: ``255 M 65535 <w> ... *XXXX\\n``."""
    return len("255 M 65535") + channels * (1 + _widest_width(version)) + _CRC_TAIL


def longest_status_line(version: int, channels: int, *, depth: int = 255) -> int:
    """Bytes of the longest status line: every counter at its largest, every channel at its widest."""
    fields = [
        "255",
        "S",
        str(2**32 - 1),  # frame
        "255",  # expect
        str(depth),  # free
        f"{(1 << channels) - 1:X}",  # mask
        *["9" * _widest_width(version)] * channels,
        str((depth + 1) * 65535),  # left: every queued move and the executing one at 65535 frames
        *["65535"] * len(COUNTER_NAMES),
        "FFFF",  # boot
    ]
    return len(" ".join(fields)) + _CRC_TAIL


def max_channels(version: int) -> int:
    """The most channels a board of this version can have: every move line fits the board's 64-byte
    buffer, and (version 1) every status line its 128 bytes (version 2 board lines may be 160)."""
    n = 1
    while longest_move_line(version, n + 1) <= HOST_LINE_MAX and longest_status_line(version, n + 1) <= board_line_max(
        version
    ):
        n += 1
    return n


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


def move(seq: int, frames: int, ticks, *, version: int = PROTOCOL_VERSION) -> bytes:
    """Move line: reach ``ticks`` (0.5 us each, None = no change) linearly over ``frames`` 20 ms frames.

    ValueError if the line would not fit the board's 64-byte buffer (too many channels for ``version``)."""
    if not 1 <= int(frames) <= 65535:
        raise ValueError(f"frames {frames} outside 1..65535")
    line = encode(seq, "M", int(frames), *(format_width(t, version=version) for t in ticks))
    if len(line) > HOST_LINE_MAX:
        raise ValueError(
            f"a move line for {len(ticks)} channels is {len(line)} bytes, over the board's {HOST_LINE_MAX} "
            f"(protocol version {version} carries at most {max_channels(version)} channels)"
        )
    return line


def watchdog(seq: int, timeout_s: float, *, mode: str = "H") -> bytes:
    """Watchdog line: after ``timeout_s`` seconds of silence hold (``H``) or stop pulses (``O``); 0 = off."""
    ms = int(round(timeout_s * 1000))
    if ms != 0 and not 20 <= ms <= 65535:
        raise ValueError(f"watchdog {ms} ms outside 20..65535")
    return encode(seq, "W", ms, mode)


def limits(seq: int, channel: int, lo_ticks: int, hi_ticks: int, *, version: int = PROTOCOL_VERSION) -> bytes:
    """Limits line: channel pulse range, in ticks."""
    return encode(
        seq, "L", int(channel), format_width(lo_ticks, version=version), format_width(hi_ticks, version=version)
    )


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


def parse_reply(raw: bytes, *, version: int = PROTOCOL_VERSION):
    """Decode one board line into Ack, Nak, Reject, Hello, Status or Event.

    ``version`` is the protocol the board speaks (its handshake says which): it decides how widths in a
    status line are written. A handshake reply carries its own version; its limits are read by that one
    (left empty for a version this host does not speak, so the caller can name it).
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
            proto = parse_uint(a[1], 0, 65535)
            nch = parse_uint(a[2], 1, 64)
            if len(a) != 6 + nch:
                raise ValueError(f"expected {nch} channel limits")
            lims = []
            if proto in VERSIONS:
                for item in a[6:]:
                    lo, _, hi = item.partition(":")
                    lims.append((parse_width(lo, version=proto), parse_width(hi, version=proto)))
            return Hello(
                line.seq,
                a[0],
                proto,
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
            widths = tuple(parse_width(w, version=version) for w in a[4 : 4 + nch])
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
    """``python -m armctl.bus.armproto.codec "0 H"`` prints the line with its CRC (for typing in a serial monitor)."""
    import sys

    args = sys.argv[1:] if argv is None else argv
    for text in args:
        body = (text.strip() + " ").encode("ascii")
        print(f"{body.decode()}*{crc16(body):04X}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
