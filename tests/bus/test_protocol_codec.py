"""The line codec, protocol versions 1 and 2: CRC, widths, encode/decode round trips, line lengths."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from armctl.bus import codec
from armctl.errors import LinkError, ProtocolError
from armctl.sim.board import Board, _Move


def test_crc_check_value():
    assert codec.crc16(b"123456789") == 0x29B1


def test_documented_example():
    assert codec.hello(0) == b"0 H *8EE8\n"


@pytest.mark.parametrize(
    ("version", "text", "ticks"),
    [
        (1, "1500", 3000),
        (1, "1450.5", 2901),
        (1, "-", None),
        (1, "0", 0),
        (2, "3000", 3000),
        (2, "2901", 2901),
        (2, "-", None),
        (2, "0", 0),
    ],
)
def test_width_text(version, text, ticks):
    assert codec.parse_width(text, version=version) == ticks
    assert codec.format_width(ticks, version=version) == text


@pytest.mark.parametrize(
    ("version", "text"),
    [
        *((1, t) for t in ["1500.0", "1500.25", "+1500", "1.5e3", "", "15 00", "١٢"]),
        *((2, t) for t in ["1450.5", "3000.0", "+3000", "3e3", "", "30 00", "١٢", "0x10"]),
    ],
)
def test_malformed_width(version, text):
    with pytest.raises(ValueError):
        codec.parse_width(text, version=version)


def test_unknown_version_is_refused():
    with pytest.raises(ValueError, match="protocol version 3"):
        codec.format_width(3000, version=3)


@given(
    st.sampled_from([(1, 4), (2, 8)]).flatmap(
        lambda vc: st.tuples(
            st.just(vc[0]),
            st.integers(0, 255),
            st.integers(1, 65535),
            st.lists(st.one_of(st.none(), st.integers(1000, 5000)), min_size=vc[1], max_size=vc[1]),
        )
    )
)
def test_move_round_trip(case):
    version, seq, frames, ticks = case
    line = codec.move(seq, frames, ticks, version=version)
    assert len(line) <= codec.longest_move_line(version, len(ticks)) <= codec.HOST_LINE_MAX
    parsed = codec.split_line(line)
    assert parsed.seq == seq and parsed.kind == "M"
    assert int(parsed.args[0]) == frames
    assert [codec.parse_width(a, version=version) for a in parsed.args[1:]] == ticks


def test_version_1_lines_are_the_ones_version_1_boards_always_got():
    # the first move of tests/golden/pick_and_place.moves
    assert codec.move(4, 1, [3666, 4332, 2334, 3600], version=1) == b"4 M 1 1833 2166 1167 1800 *D7DE\n"
    assert codec.limits(6, 0, 1200, 1400, version=1) == b"6 L 0 600 700 *9E48\n"  # tests/vectors/disable_move.txt
    assert codec.move(2, 4, [None] * 6 + [5000, 1000]) == b"2 M 4 - - - - - - 5000 1000 *0823\n"  # v2/channels.txt


def test_channel_counts_each_version_carries():
    """Version 1: 4 channels (a status line with 5 can pass 128 bytes); version 2: 9 (a move line with 10
    passes 64 bytes). The longest lines are what the functions say, measured on real lines."""
    assert codec.max_channels(1) == 4 and codec.max_channels(2) == 9
    assert len(codec.move(255, 65535, [4999] * 8)) == codec.longest_move_line(2, 8) == 58
    assert len(codec.move(255, 65535, [4999] * 9)) == 63
    with pytest.raises(ValueError, match="carries at most 9 channels"):
        codec.move(255, 65535, [4999] * 10)
    assert len(codec.move(255, 65535, [4999] * 4, version=1)) == codec.longest_move_line(1, 4) == 46
    with pytest.raises(ValueError, match="carries at most 4 channels"):
        codec.move(255, 65535, [4999] * 7, version=1)
    for version, channels in ((1, 4), (2, 8), (2, 9)):
        b = Board(protocol=version, channels=channels, depth=255)
        b.frame = 2**32 - 1
        b.out = [4999] * channels
        b.mask = (1 << channels) - 1
        b.counters = dict.fromkeys(codec.COUNTER_NAMES, 65535)
        b.queue.extend(_Move(65535, [None] * channels) for _ in range(255))
        b.cur = _Move(65535, [None] * channels)
        b.expect, b.boot = 255, 0xFFFF
        b.depth = 2 * 255  # free = 255: every field at its widest
        line = b._cmd_Q(255)
        assert len(line) == codec.longest_status_line(version, channels) <= codec.board_line_max(version), line


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
    # a handshake is read in the version it names
    h = codec.parse_reply(codec.encode(0, "H", "armsim", 1, 2, 16, 20000, "3F2A", "500:2500", "600.5:2400"))
    assert h.limits_ticks == ((1000, 5000), (1201, 4800)) and h.boot == 0x3F2A and h.channels == 2
    h = codec.parse_reply(codec.encode(0, "H", "armctl-fw", 2, 2, 16, 20000, "3F2A", "1000:5000", "1201:4800"))
    assert h.limits_ticks == ((1000, 5000), (1201, 4800)) and h.protocol == 2
    h = codec.parse_reply(codec.encode(0, "H", "future", 3, 1, 16, 20000, "3F2A", "x:y"))
    assert h.protocol == 3 and h.limits_ticks == ()  # read far enough to say which version it speaks
    # a status line in the version the board speaks
    s = codec.parse_reply(codec.encode(5, "S", 412, 5, 16, "F", "1500", "-", 3, *range(8), "3F2A"), version=1)
    assert s.widths_ticks == (3000, None) and s.left_frames == 3 and s.counters["wdog"] == 7
    s = codec.parse_reply(codec.encode(5, "S", 412, 5, 16, "FF", "3001", "-", 3, *range(8), "3F2A"), version=2)
    assert s.widths_ticks == (3001, None)
    with pytest.raises(ProtocolError, match="malformed width"):
        codec.parse_reply(codec.encode(5, "S", 412, 5, 16, "F", "1500.5", "-", 3, *range(8), "3F2A"), version=2)


@pytest.mark.parametrize("raw", [b"hello\n", b"\x00\xff\n", b"0 Z 1 *0000\n", codec.encode(0, "H", "x")])
def test_garbage_is_a_link_error(raw):
    with pytest.raises(LinkError):
        codec.parse_reply(raw)


def test_command_line_prints_crc(capsys):
    codec.main(["0 H"])
    assert capsys.readouterr().out.strip() == "0 H *8EE8"
