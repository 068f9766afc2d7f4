"""Dynamixel Protocol 2.0 packets: the e-manual's examples byte for byte, CRC, byte stuffing, the parser's resync,
the X-series control tables."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from armctl.bus.dynamixel import protocol as p
from armctl.errors import BadInputError


def h(text: str) -> bytes:
    return bytes.fromhex(text)


# The e-manual's Protocol 2.0 examples (instruction and status packets, CRC included).
EXAMPLES = [
    (lambda: p.ping_packet(1), "FF FF FD 00 01 03 00 01 19 4E"),
    (lambda: p.encode_status(1, 0, h("06 04 26")), "FF FF FD 00 01 07 00 55 00 06 04 26 65 5D"),
    (lambda: p.read_packet(1, 132, 4), "FF FF FD 00 01 07 00 02 84 00 04 00 1D 15"),
    (lambda: p.encode_status(1, 0, h("A6 00 00 00")), "FF FF FD 00 01 08 00 55 00 A6 00 00 00 8C C0"),
    (lambda: p.write_packet(1, 116, h("00 02 00 00")), "FF FF FD 00 01 09 00 03 74 00 00 02 00 00 CA 89"),
    (lambda: p.sync_read_packet(132, 4, [1, 2]), "FF FF FD 00 FE 09 00 82 84 00 04 00 01 02 CE FA"),
    (
        lambda: p.sync_write_packet(116, 4, {1: h("96 00 00 00"), 2: h("AA 00 00 00")}),
        "FF FF FD 00 FE 11 00 83 74 00 04 00 01 96 00 00 00 02 AA 00 00 00 82 87",
    ),
]


@pytest.mark.parametrize(("build", "wire"), EXAMPLES)
def test_emanual_examples(build, wire):
    assert build() == h(wire)
    pkt = p.take_packet(bytearray(h(wire)))
    assert isinstance(pkt, p.Packet)


def test_crc_table_is_the_0x8005_table():
    assert p.CRC_TABLE[:4] == (0x0000, 0x8005, 0x800F, 0x000A)
    assert p.CRC_TABLE[255] == 0x0202
    assert p.crc16(h("FF FF FD 00 01 03 00 01")) == 0x4E19


def test_stuffing_adds_fd_after_the_header_pattern_and_counts_it():
    wire = p.write_packet(1, 0x200, h("FF FF FD 01"))
    assert h("FF FF FD FD 01") in wire
    assert int.from_bytes(wire[5:7], "little") == len(wire) - 7  # the length counts the added byte
    pkt = p.take_packet(bytearray(wire))
    assert pkt == p.Packet(1, p.WRITE, h("00 02 FF FF FD 01"))


@given(st.binary(max_size=64))
def test_stuffing_round_trip(payload):
    stuffed = p.stuff(payload)
    assert p.unstuff(stuffed) == payload
    # no unstuffed FF FF FD is left in a stuffed payload (it would read as a header)
    i = stuffed.find(p.STUFF_PATTERN)
    while i >= 0:
        assert stuffed[i + 3 : i + 4] == b"\xfd"
        i = stuffed.find(p.STUFF_PATTERN, i + 4)


@given(st.binary(max_size=40), st.integers(0, 252), st.binary(max_size=40))
def test_any_status_survives_framing(garbage, servo_id, params):
    buf = bytearray(garbage.replace(b"\xff", b"") + p.encode_status(servo_id, 0x80 | 7, params))
    assert p.take_packet(buf) == p.Packet(servo_id, 0x87, params, status=True)
    assert buf == bytearray()


def test_parser_resyncs_on_garbage_and_reports_bad_crc():
    good = p.encode_status(2, 0, h("01 02"))
    bad = bytearray(p.encode_status(1, 0, h("03 04")))
    bad[-3] ^= 0x10
    buf = bytearray(h("00 FF FF 13 FF FF FD") + bytes(bad) + good)
    first = p.take_packet(buf)
    assert isinstance(first, p.BadPacket) and first.id == 1
    assert p.take_packet(buf) == p.Packet(2, 0, h("01 02"), status=True)
    assert p.take_packet(buf) is None


def test_parser_waits_for_more_bytes_and_keeps_a_partial_header():
    wire = p.ping_packet(3)
    buf = bytearray(b"\x00\x01" + wire[:2])
    assert p.take_packet(buf) is None and buf == bytearray(wire[:2])
    buf += wire[2:9]
    assert p.take_packet(buf) is None
    buf += wire[9:]
    assert p.take_packet(buf) == p.Packet(3, p.PING, b"")


def test_impossible_length_is_a_bad_packet_and_the_next_packet_is_found():
    buf = bytearray(h("FF FF FD 00 01 01 00") + p.ping_packet(4))
    assert isinstance(p.take_packet(buf), p.BadPacket)
    assert p.take_packet(buf) == p.Packet(4, p.PING, b"")


def test_bulk_and_sync_params_decode_what_they_encode():
    wire = p.bulk_write_packet([(1, 116, h("01 02 03 04")), (2, 64, h("01"))])
    pkt = p.take_packet(bytearray(wire))
    assert p.parse_params(pkt.code, pkt.params) == [
        p.Access(1, 116, 4, h("01 02 03 04")),
        p.Access(2, 64, 1, h("01")),
    ]
    pkt = p.take_packet(bytearray(p.bulk_read_packet([(3, 132, 4), (1, 126, 2)])))
    assert p.parse_params(pkt.code, pkt.params) == [p.Access(3, 132, 4), p.Access(1, 126, 2)]
    pkt = p.take_packet(bytearray(p.sync_write_packet(104, 4, {5: h("FF FF FF FF")})))
    assert p.parse_params(pkt.code, pkt.params) == [p.Access(5, 104, 4, h("FF FF FF FF"))]
    with pytest.raises(ValueError):
        p.parse_params(p.SYNC_WRITE, h("74 00 04 00 01 02"))


def test_errors_in_words():
    assert p.describe_error(0x87) == "access error, hardware alert"
    assert p.describe_error(0) == "no error"
    assert p.describe_hardware_errors(0x24) == "overheating error, overload error"


@pytest.mark.parametrize(
    ("name", "number", "current_ma", "current_position"),
    [
        ("xl330-m077", 1190, 1.0, True),
        ("xl330-m288", 1200, 1.0, True),
        ("xl430-w250", 1060, None, False),
        ("xc430-w150", 1070, None, False),
        ("xm430-w350", 1020, 2.69, True),
        ("xm540-w270", 1120, 2.69, True),
    ],
)
def test_models(name, number, current_ma, current_position):
    model = p.get_model(name)
    assert p.get_model(number) is model and p.get_model(name.upper() + "-T") is model
    assert model.current_ma == current_ma
    assert model.has_current_position_mode == current_position
    regs = model.registers
    assert regs["model_number"].default == number
    for reg_name, address, size in [
        ("id", 7, 1),
        ("baud_rate", 8, 1),
        ("operating_mode", 11, 1),
        ("homing_offset", 20, 4),
        ("torque_enable", 64, 1),
        ("goal_position", 116, 4),
        ("present_position", 132, 4),
        ("present_temperature", 146, 1),
    ]:
        assert (regs[reg_name].address, regs[reg_name].size) == (address, size)
    assert ("present_current" in regs) == (current_ma is not None)
    assert ("present_load" in regs) == (current_ma is None)
    assert regs["id"].eeprom and not regs["torque_enable"].eeprom


def test_signed_values_are_twos_complement():
    model = p.XL430_W250
    goal = model.register("goal_velocity")
    assert model.encode(goal, -1) == h("FF FF FF FF")
    assert model.decode(goal, h("FE FF FF FF")) == -2
    assert model.decode(model.register("present_load"), h("18 FC")) == -1000
    with pytest.raises(BadInputError, match="homing_offset"):
        model.encode(model.register("homing_offset"), 2_000_000)
    with pytest.raises(BadInputError, match="unknown Dynamixel model"):
        p.get_model("ax12")
    with pytest.raises(BadInputError, match="no register"):
        model.register("goal_current")


def test_baud_table():
    assert p.BAUD_RATES[1] == p.DEFAULT_BAUD == 57_600
    assert p.BAUD_RATES[3] == 1_000_000 and p.BAUD_RATES[7] == 4_500_000
    assert max(p.XL330_M288.baud_rates) == 6 and max(p.XM430_W350.baud_rates) == 7
