"""The line codec: CRC, widths, encode/decode round trips."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from armctl.bus import codec
from armctl.errors import LinkError, ProtocolError


def test_crc_check_value():
    assert codec.crc16(b"123456789") == 0x29B1


def test_documented_example():
    assert codec.hello(0) == b"0 H *8EE8\n"


@pytest.mark.parametrize(("text", "ticks"), [("1500", 3000), ("1450.5", 2901), ("-", None), ("0", 0)])
def test_width_text(text, ticks):
    assert codec.parse_width(text) == ticks
    assert codec.format_width(ticks) == text


@pytest.mark.parametrize("text", ["1500.0", "1500.25", "+1500", "1.5e3", "", "15 00", "١٢"])
def test_malformed_width(text):
    with pytest.raises(ValueError):
        codec.parse_width(text)


@given(
    st.integers(0, 255),
    st.integers(1, 65535),
    st.lists(st.one_of(st.none(), st.integers(1000, 5000)), min_size=4, max_size=4),
)
def test_move_round_trip(seq, frames, ticks):
    line = codec.move(seq, frames, ticks)
    assert len(line) <= codec.HOST_LINE_MAX
    parsed = codec.split_line(line)
    assert parsed.seq == seq and parsed.kind == "M"
    assert int(parsed.args[0]) == frames
    assert [codec.parse_width(a) for a in parsed.args[1:]] == ticks


def test_every_single_bit_flip_is_detected():
    line = codec.encode(1, "M", 1, "1500", "-", "-", "-")
    star = line.index(b"*")
    checked = 0
    for pos in range(len(line) - 1):  # every byte but the final newline
        for bit in range(8):
            corrupt = bytearray(line)
            corrupt[pos] ^= 1 << bit
            if pos > star and bytes(corrupt).lower() == line.lower():
                continue  # the checksum's hex digits may be either case: 'F' -> 'f' is the same number
            with pytest.raises(ProtocolError):
                codec.split_line(bytes(corrupt))
            checked += 1
    assert checked >= 8 * (len(line) - 1) - 4


def test_replies_parse():
    assert codec.parse_reply(codec.encode(3, "A", 4, 15)) == codec.Ack(3, 4, 15)
    assert codec.parse_reply(codec.encode(None, "N", 4, 15, "CRC")) == codec.Nak(4, 15, "CRC")
    h = codec.parse_reply(codec.encode(0, "H", "armsim", 1, 2, 16, 20000, "3F2A", "500:2500", "600.5:2400"))
    assert h.limits_ticks == ((1000, 5000), (1201, 4800)) and h.boot == 0x3F2A and h.channels == 2
    s = codec.parse_reply(codec.encode(5, "S", 412, 5, 16, "F", "1500", "-", 3, *range(8), "3F2A"))
    assert s.widths_ticks == (3000, None) and s.left_frames == 3 and s.counters["wdog"] == 7


@pytest.mark.parametrize("raw", [b"hello\n", b"\x00\xff\n", b"0 Z 1 *0000\n", codec.encode(0, "H", "x")])
def test_garbage_is_a_link_error(raw):
    with pytest.raises(LinkError):
        codec.parse_reply(raw)


def test_command_line_prints_crc(capsys):
    codec.main(["0 H"])
    assert capsys.readouterr().out.strip() == "0 H *8EE8"
