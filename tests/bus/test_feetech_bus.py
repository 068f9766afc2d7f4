"""Feetech bus layer: protocol encoding, the simulated bus (transport-free, timed exactly), our client
against the simulator through the feetechsim:// URL and on a pty, and the faults (one line naming the servo).

The vendor SDK against the same simulator is in test_feetech_sdk.py.
"""

from __future__ import annotations

import subprocess
import sys
import time

import pytest
from hypothesis import given
from hypothesis import strategies as st

from armctl.bus import feetech as ft
from armctl.bus.feetech.client import (
    SCS,
    STS,
    FeetechBus,
    Packet,
    ServoBadReply,
    ServoFault,
    ServoNoReply,
    take_packet,
)
from armctl.errors import BadInputError, LinkError, ProtocolError
from armctl.sim.feetechsim import FeetechSim, FeetechSimOptions

IDS = [1, 2, 3, 4, 5, 6]


# --- protocol ---------------------------------------------------------------------------------------


def test_packets_match_hand_computed_bytes():
    # checksums worked out by hand: ~(sum of id, length, instruction, params) & 0xFF
    assert ft.ping_packet(1) == bytes.fromhex("ff ff 01 02 01 fb")
    assert ft.read_packet(1, 56, 2) == bytes.fromhex("ff ff 01 04 02 38 02 be")
    assert ft.write_packet(3, 40, b"\x01") == bytes.fromhex("ff ff 03 04 03 28 01 cc")
    assert ft.sync_write_packet(42, 2, {1: b"\x00\x08", 2: b"\xff\x0f"}) == bytes.fromhex(
        "ff ff fe 0a 83 2a 02 01 00 08 02 ff 0f 2f"
    )
    assert ft.sync_read_packet(56, 2, [1, 2]) == bytes.fromhex("ff ff fe 06 82 38 02 01 02 3c")


def test_sign_magnitude_and_byte_order():
    goal, load, offset = STS.register("goal_position"), STS.register("present_load"), STS.register("homing_offset")
    assert STS.encode(goal, 0x1234) == b"\x34\x12"  # STS: little-endian
    assert SCS.encode(SCS.register("goal_position"), 0x1234) == b"\x12\x34"  # SCS: big-endian
    assert STS.encode(goal, -100) == (0x8000 | 100).to_bytes(2, "little")  # bit 15 is the sign
    assert STS.encode(offset, -2047) == (0x0800 | 2047).to_bytes(2, "little")  # bit 11
    assert STS.decode(load, (0x0400 | 50).to_bytes(2, "little")) == -50  # bit 10
    assert STS.decode(goal, STS.encode(goal, -32767)) == -32767
    assert STS.encode(goal, 2048.0) == STS.encode(goal, 2048)


@pytest.mark.parametrize(
    ("name", "value", "match"),
    [
        ("homing_offset", 2048, r"homing_offset: 2048 is outside -2047\.\.2047"),
        ("id", 256, r"register id: 256 is outside 0\.\.255"),
        ("goal_position", 1.5, r"goal_position: 1\.5 is not an integer"),
        ("goal_speed", -40000, r"goal_speed: -40000 is outside"),
    ],
)
def test_out_of_range_values_are_refused_naming_the_register(name, value, match):
    with pytest.raises(BadInputError, match=match):
        STS.encode(STS.register(name), value)


def test_unknown_register_lists_the_known_ones():
    with pytest.raises(BadInputError, match=r"unknown STS register 'goal_pos'; known: .*goal_position"):
        STS.register("goal_pos")
    with pytest.raises(BadInputError, match="unknown Feetech servo series 'xl320'"):
        FeetechBus("feetechsim://", series="xl320")


# Addresses and sizes as LeRobot's src/lerobot/motors/feetech/tables.py lists them (its names on the
# right): an independent check of our table.
LEROBOT_STS = {
    "model_number": (3, 2),  # Model_Number
    "id": (5, 1),
    "baud_rate": (6, 1),
    "return_delay": (7, 1),
    "response_level": (8, 1),  # Response_Status_Level
    "min_angle_limit": (9, 2),  # Min_Position_Limit
    "max_angle_limit": (11, 2),  # Max_Position_Limit
    "max_temperature": (13, 1),
    "max_voltage": (14, 1),
    "min_voltage": (15, 1),
    "max_torque": (16, 2),
    "phase": (18, 1),
    "p_gain": (21, 1),
    "d_gain": (22, 1),
    "i_gain": (23, 1),
    "homing_offset": (31, 2),
    "operating_mode": (33, 1),
    "protective_torque": (34, 1),
    "protection_time": (35, 1),
    "overload_torque": (36, 1),
    "torque_enable": (40, 1),
    "acceleration": (41, 1),
    "goal_position": (42, 2),
    "goal_time": (44, 2),
    "goal_speed": (46, 2),  # Goal_Velocity
    "torque_limit": (48, 2),
    "lock": (55, 1),
    "present_position": (56, 2),
    "present_speed": (58, 2),  # Present_Velocity
    "present_load": (60, 2),
    "present_voltage": (62, 1),
    "present_temperature": (63, 1),
    "status": (65, 1),
    "moving": (66, 1),
    "present_current": (69, 2),
    "velocity_p_gain": (37, 1),  # Velocity_closed_loop_P_proportional_coefficient
    "over_current_protection_time": (38, 1),
    "velocity_i_gain": (39, 1),  # Velocity_closed_loop_I_integral_coefficient
    "goal_position_2": (71, 2),
    "moving_velocity_threshold": (80, 1),  # Moving_Velocity and Moving_Velocity_Threshold
    "dts": (81, 1),
    "velocity_unit_factor": (82, 1),
    "hts": (83, 1),
    "max_velocity_limit": (84, 1),  # Maximum_Velocity_Limit
    "max_acceleration": (85, 1),  # Maximum_Acceleration
    "acceleration_multiplier": (86, 1),  # "Acceleration_Multiplier " (with a trailing space)
}
LEROBOT_SIGN_BITS = {"present_load": 10, "homing_offset": 11, "goal_position": 15, "goal_speed": 15}


def test_register_table_agrees_with_lerobot():
    for name, (address, size) in LEROBOT_STS.items():
        reg = STS.register(name)
        assert (reg.address, reg.size) == (address, size), name
    for name, bit in LEROBOT_SIGN_BITS.items():
        assert STS.register(name).sign_bit == bit, name
    assert SCS.register("lock").address == 48  # SCS moves the lock flag
    assert "homing_offset" not in SCS.registers


def test_take_packet_resyncs_over_junk_and_bad_checksums():
    good = ft.encode_packet(2, 0, b"\x00\x08")
    bad = bytearray(ft.encode_packet(1, 0, b"\x10\x00"))
    bad[-1] ^= 0x01
    buf = bytearray(b"\x00\x13" + b"\xff" + bytes(bad) + good + good[:3])
    first = take_packet(buf)
    assert isinstance(first, ft.BadPacket) and first.id == 1
    assert take_packet(buf) == Packet(2, 0, b"\x00\x08")
    assert take_packet(buf) is None and bytes(buf) == good[:3]  # an unfinished packet waits for more


@given(
    st.integers(0, 0xFD),
    st.integers(0, 255),
    st.binary(max_size=40),
    st.data(),
)
def test_any_packet_round_trips_and_no_single_bit_flip_passes_for_it(servo_id, code, params, data):
    raw = ft.encode_packet(servo_id, code, params)
    assert take_packet(bytearray(raw)) == Packet(servo_id, code, params)
    flipped = bytearray(raw)
    where = data.draw(st.integers(2, len(raw) - 1))  # past the header
    flipped[where] ^= 1 << data.draw(st.integers(0, 7))
    framing_kept = where != 3 and flipped[2] != 0xFF  # neither the length nor a third header byte
    seen = []
    while (item := take_packet(flipped)) is not None:
        seen.append(item)
    assert Packet(servo_id, code, params) not in seen
    if framing_kept:  # the frame keeps its length: the checksum must catch the flip
        assert isinstance(seen[0], ft.BadPacket)


# --- the simulator, transport-free (simulated time is exact) --------------------------------------------


def _sim(**kw) -> FeetechSim:
    return FeetechSim(FeetechSimOptions(**kw))


def _talk(sim: FeetechSim, packet: bytes, t: float, *, wait_s: float = 0.01) -> list:
    """Send ``packet`` at ``t`` (or when the last exchange ended, if later) and take what comes in 10 ms."""
    t = max(t, sim.now)
    sim.host_write(packet, t)
    buf = bytearray(sim.host_read(t + wait_s))
    out = []
    while (item := take_packet(buf)) is not None:
        out.append(item)
    return out


def _write(sim, servo_id, name, value, t):
    reg = sim.series.register(name)
    return _talk(sim, ft.write_packet(servo_id, reg.address, sim.series.encode(reg, value)), t)


def _read(sim, servo_id, name, t):
    reg = sim.series.register(name)
    (reply,) = _talk(sim, ft.read_packet(servo_id, reg.address, reg.size), t)
    assert reply.id == servo_id
    return sim.series.decode(reg, reply.params)


def test_reply_timing_follows_baud_and_return_delay():
    sim = _sim()
    sim.host_write(ft.ping_packet(1), 1.0)  # 6 bytes at 1 Mbaud: on the wire until 1.00006
    assert sim.host_read(1.0 + 119e-6) == b""  # the 6-byte answer follows at once: done at 1.00012
    assert sim.host_read(1.0 + 121e-6) == ft.encode_packet(1, 0)
    _write(sim, 1, "return_delay", 250, 2.0)  # 500 us
    sim.host_write(ft.ping_packet(1), 3.0)
    assert sim.host_read(3.0 + 619e-6) == b""
    assert sim.host_read(3.0 + 621e-6) == ft.encode_packet(1, 0)


def test_sync_read_answers_in_the_listed_order_and_skips_absent_ids():
    sim = _sim(start_steps=[100, 200, 300, 400, 500, 600], missing=[4])
    replies = _talk(sim, ft.sync_read_packet(56, 2, [6, 4, 1, 3]), 1.0)
    assert [(p.id, STS.decode(STS.register("present_position"), p.params)) for p in replies] == [
        (6, 600),
        (1, 100),
        (3, 300),
    ]


def test_a_servo_at_another_baud_rate_does_not_answer():
    sim = _sim(baud=115200)
    sim.host_baud = 1_000_000
    assert _talk(sim, ft.ping_packet(1), 1.0) == []
    sim.host_baud = 115200
    assert [p.id for p in _talk(sim, ft.ping_packet(1), 2.0)] == [1]


def test_broadcast_ping_and_write_reach_every_servo():
    sim = _sim(ids=[3, 1, 2])
    assert [p.id for p in _talk(sim, ft.ping_packet(ft.BROADCAST_ID), 1.0)] == [1, 2, 3]
    assert _talk(sim, ft.write_packet(ft.BROADCAST_ID, 41, b"\x07"), 2.0) == []  # nobody answers a broadcast
    assert [sim.servo(i).get("acceleration") for i in (1, 2, 3)] == [7, 7, 7]


def test_reg_write_waits_for_action_and_response_level_0_silences_writes():
    sim = _sim()
    assert [p.id for p in _talk(sim, ft.write_packet(2, 41, b"\x09", instruction=ft.REG_WRITE), 1.0)] == [2]
    assert _read(sim, 2, "acceleration", 1.1) == 0 and _read(sim, 2, "reg_write_pending", 1.2) == 1
    _talk(sim, ft.action_packet(), 1.3)
    assert _read(sim, 2, "acceleration", 1.4) == 9 and _read(sim, 2, "reg_write_pending", 1.5) == 0
    assert len(_write(sim, 2, "response_level", 0, 2.0)) == 1  # answered (the level applies afterwards)
    assert _write(sim, 2, "acceleration", 3, 2.1) == []
    assert _read(sim, 2, "acceleration", 2.2) == 3  # reads are still answered


def test_motion_honours_goal_speed_and_acceleration():
    sim = _sim(start_steps=[1000])
    _write(sim, 1, "goal_speed", 1000, 0.5)
    _write(sim, 1, "torque_enable", 1, 0.6)
    _write(sim, 1, "goal_position", 3000, 1.0)
    p = _read(sim, 1, "present_position", 2.0)  # ~1 s at 1000 step/s after a 0.04 s ramp at 25400 step/s^2
    assert 1975 <= p <= 1985
    assert _read(sim, 1, "present_speed", 2.1) == 1000 and _read(sim, 1, "moving", 2.2) == 1
    assert _read(sim, 1, "present_position", 4.0) == 3000 and _read(sim, 1, "moving", 4.1) == 0
    # the acceleration register: 10 x 100 step/s^2 from rest -> 0.5 * 1000 * 0.5^2 = 125 steps in 0.5 s
    _write(sim, 1, "acceleration", 10, 4.5)
    _write(sim, 1, "goal_position", 1000, 5.0)
    assert 3000 - 127 <= _read(sim, 1, "present_position", 5.5) <= 3000 - 123
    assert _read(sim, 1, "present_speed", 5.6) == pytest.approx(-600, abs=2)  # sign bit 15: moving down


def test_angle_limits_clamp_the_goal_and_a_mechanical_stop_loads_the_servo():
    sim = _sim(stops={2: (500.0, 3500.0)})
    for servo_id in (1, 2):
        _write(sim, servo_id, "max_angle_limit", 3000, 0.5)
        _write(sim, servo_id, "torque_enable", 1, 0.5)
    _write(sim, 1, "goal_position", 3900, 1.0)
    assert _read(sim, 1, "present_position", 3.0) == 3000 and _read(sim, 1, "present_load", 3.0) == 0
    _write(sim, 2, "max_angle_limit", 4095, 3.0)
    _write(sim, 2, "goal_position", 3600, 3.0)  # 100 steps past the stop at 3500
    assert _read(sim, 2, "present_position", 5.0) == 3500
    assert _read(sim, 2, "present_load", 5.0) == 1000 and _read(sim, 2, "moving", 5.0) == 0
    _write(sim, 2, "torque_limit", 400, 5.0)
    assert _read(sim, 2, "present_load", 5.1) == 400
    _write(sim, 2, "goal_position", 3520, 5.2)  # 20 steps in: 20 x 20 = 400 -> 40 %
    _write(sim, 2, "torque_limit", 1000, 5.2)
    assert _read(sim, 2, "present_load", 5.3) == 400


def test_a_jammed_servo_overloads_after_the_protection_time():
    sim = _sim(stall=[2])
    _write(sim, 2, "protection_time", 50, 0.0)  # 0.5 s
    _write(sim, 2, "torque_enable", 1, 1.0)
    (reply,) = _write(sim, 2, "goal_position", 3000, 1.0)
    assert reply.code == 0
    assert _read(sim, 2, "present_load", 1.4) == 1000
    (ping,) = _talk(sim, ft.ping_packet(2), 1.45)
    assert ping.code == 0  # not yet
    (ping,) = _talk(sim, ft.ping_packet(2), 1.6)
    assert ping.code == 0x20  # overload
    assert _read(sim, 2, "present_load", 1.7) == 200  # protective torque 20 %
    assert _read(sim, 2, "status", 1.7) == 0x20 and _read(sim, 2, "present_position", 1.7) == 2048
    assert _read(sim, 2, "present_temperature", 10.0) > 25
    (reply,) = _write(sim, 2, "torque_enable", 0, 10.0)  # writing the torque clears the overload
    assert reply.code == 0


def test_torque_off_holds_still_and_turns_by_hand():
    sim = _sim()
    _write(sim, 1, "goal_position", 100, 1.0)
    assert _read(sim, 1, "present_position", 2.0) == 2048  # torque off: a goal does not drive
    assert sim.turn_by_hand(1, 1000)
    assert _read(sim, 1, "present_position", 2.1) == 1000
    _write(sim, 1, "torque_enable", 1, 2.2)  # torque on drives to the goal register
    assert _read(sim, 1, "present_position", 3.0) == 100
    assert not sim.turn_by_hand(1, 500)  # torque on: it resists
    assert _read(sim, 1, "present_position", 3.1) == 100


def test_homing_offset_and_torque_128_shift_the_reading():
    sim = _sim(start_steps=[1000])
    _write(sim, 1, "homing_offset", -200, 1.0)
    assert _read(sim, 1, "present_position", 1.1) == 1200  # present = actual - offset
    _write(sim, 1, "torque_enable", 128, 1.2)
    assert _read(sim, 1, "present_position", 1.3) == 2048
    assert _read(sim, 1, "homing_offset", 1.3) == 1000 - 2048
    assert _read(sim, 1, "torque_enable", 1.3) == 0  # 128 is a command, not a torque state


def test_eeprom_survives_a_power_cycle_only_when_written_unlocked(tmp_path):
    state = tmp_path / "bus.json"
    sim = _sim(state=str(state))
    _write(sim, 1, "lock", 1, 1.0)
    _write(sim, 1, "min_angle_limit", 100, 1.0)
    assert _read(sim, 1, "min_angle_limit", 1.1) == 100  # takes effect at once...
    _write(sim, 2, "id", 9, 1.0)  # unlocked: kept
    sim.power_cycle()
    assert _read(sim, 1, "min_angle_limit", 2.0) == 0  # ...but is not kept
    assert [p.id for p in _talk(sim, ft.ping_packet(9), 2.0)] == [9]
    assert _talk(sim, ft.ping_packet(2), 2.1) == []
    again = _sim(state=str(state), ids=[1, 2], missing=[5])  # a new run on the same state file: EEPROM as kept
    assert sorted(s.id for s in again.servos) == [1, 3, 4, 6, 9]
    again.save_state()  # an unplugged servo is still in the file
    assert sorted(s.id for s in _sim(state=str(state)).servos) == [1, 3, 4, 5, 6, 9]


def test_echo_comes_before_the_answer():
    sim = _sim(echo=True)
    request = ft.ping_packet(3)
    sim.host_write(request, 1.0)
    assert sim.host_read(1.01) == request + ft.encode_packet(3, 0)


def test_duplicate_ids_collide():
    sim = _sim(ids=[1, 2])
    _write(sim, 2, "id", 1, 1.0)
    sim.host_write(ft.ping_packet(1), 2.0)
    heard = bytearray(sim.host_read(2.01))
    assert heard  # both answer ...
    replies = []
    while (item := take_packet(heard)) is not None:
        replies.append(item)
    # ... over each other: no clean answer to the ping (id 1, no error, no parameters). A flipped length byte
    # can leave a packet waiting for more, or take the next packet's first byte and still sum right.
    assert not any(isinstance(r, ft.Packet) and (r.id, r.code, r.params) == (1, 0, b"") for r in replies)


# --- our client against the simulator (feetechsim:// URL) ---------------------------------------------


def _settle(bus: FeetechBus, ids, goal: dict[int, int], *, sim_s: float = 10.0) -> dict[int, int]:
    """Positions once every servo is at its goal and stopped (or after ``sim_s`` simulated seconds)."""
    sim = bus.serial.sim
    end = sim.now + sim_s
    while True:
        states = bus.read_states(ids)
        pos = {i: s.position_steps for i, s in states.items()}
        if (pos == goal and not any(s.moving for s in states.values())) or sim.now > end:
            return pos
        time.sleep(0.002)


def test_client_round_trip_one_sync_write_and_one_sync_read_per_frame():
    with FeetechBus("feetechsim://?rate=20") as bus:
        assert bus.check_ids(IDS) == dict.fromkeys(IDS, 777)
        assert bus.read_positions(IDS) == dict.fromkeys(IDS, 2048)
        bus.set_torque(IDS, True)
        sim = bus.serial.sim
        before = len(sim.log)
        goal = {i: 1000 + 300 * i for i in IDS}
        bus.write_positions(goal)
        bus.read_positions(IDS)
        frame = [p for _, p in list(sim.log)[before:]]
        assert [p.code for p in frame] == [ft.SYNC_WRITE, ft.SYNC_READ]  # one packet each way for six servos
        assert _settle(bus, IDS, goal) == goal
        states = bus.read_states(IDS)
        assert {s.voltage_v for s in states.values()} == {7.4}
        assert {s.temperature_c for s in states.values()} == {25}
        assert not any(s.moving for s in states.values())
        assert bus.counters["retries"] == 0 and bus.counters["timeouts"] == 0


def test_client_reads_and_writes_registers_by_name():
    with FeetechBus("feetechsim://") as bus:
        bus.write_many(3, {"acceleration": 20, "goal_position": 1500, "goal_time": 0, "goal_speed": 800})
        assert bus.read_many(3, ["acceleration", "goal_position", "goal_speed"]) == {
            "acceleration": 20,
            "goal_position": 1500,
            "goal_speed": 800,
        }
        bus.sync_write("homing_offset", {1: -100, 2: 100})
        assert bus.sync_read("present_position", [1, 2]) == {1: 2148, 2: 1948}
        bus.reg_write(4, "acceleration", 5)
        assert bus.read(4, "acceleration") == 0
        bus.action()
        assert bus.read(4, "acceleration") == 5
        with pytest.raises(BadInputError, match="not adjacent"):
            bus.write_many(3, {"acceleration": 1, "goal_speed": 1})
        with pytest.raises(BadInputError, match="present_position is read-only"):
            bus.write(3, "present_position", 1)
        with pytest.raises(BadInputError, match=r"servo id 300 is outside 0\.\.252"):
            bus.read(300, "id")


def test_torque_off_lets_the_arm_be_guided_and_read():
    with FeetechBus("feetechsim://?rate=20") as bus:
        sim = bus.serial.sim
        bus.set_torque(IDS, True)
        bus.set_torque([2], False)
        assert sim.turn_by_hand(2, 777) and not sim.turn_by_hand(3, 777)
        assert bus.read_positions([2, 3]) == {2: 777, 3: 2048}
        bus.torque_off_all()
        bus.read_positions(IDS)  # the broadcast has reached them
        assert not any(s.torque_on for s in sim.servos)


def test_scs_series_is_big_endian_and_reads_one_by_one_without_sync_read():
    with FeetechBus("feetechsim://?model=scs0009&ids=1-3", series="scs") as bus:
        assert bus.check_ids([1, 2, 3]) == dict.fromkeys([1, 2, 3], 1284)
        bus.sync_write("goal_position", {1: 0x0102})
        bus.ping(1)  # the sync write is on the wire before this
        sim = bus.serial.sim
        sync = [p for _, p in sim.log if p.code == ft.SYNC_WRITE][-1]
        assert sync.params == bytes([42, 2, 1, 0x01, 0x02])  # high byte first
        before = len(sim.log)
        assert bus.read_positions([1, 2, 3]) == dict.fromkeys([1, 2, 3], 512)
        assert [p.code for _, p in list(sim.log)[before:]] == [ft.READ] * 3


# --- faults: one line naming the servo ----------------------------------------------------------------


def _one_line(exc) -> str:
    text = str(exc)
    assert "\n" not in text and len(text) < 300
    return text


def test_a_missing_servo_is_named():
    with FeetechBus("feetechsim://?missing=4&rate=20", timeout_s=0.02) as bus:
        with pytest.raises(ServoNoReply) as err:
            bus.check_ids(IDS)
        assert err.value.servo_ids == (4,)
        assert "servo 4 of [1, 2, 3, 4, 5, 6] did not answer a ping" in _one_line(err.value)
        with pytest.raises(ServoNoReply, match=r"servo 4: no reply to sync read present_position within 20 ms"):
            bus.read_positions(IDS)
        assert bus.counters["retries"] >= 2
        with pytest.raises(LinkError, match="servo 4: no reply to torque on"):
            bus.set_torque(IDS, True)
        assert sum(s.torque_on for s in bus.serial.sim.servos) == 5  # the others were still switched


def test_a_corrupt_reply_is_named():
    with FeetechBus("feetechsim://?garble=3&seed=1", timeout_s=0.02) as bus:
        with pytest.raises(ServoBadReply) as err:
            bus.read_positions(IDS)
        assert isinstance(err.value, ProtocolError) and err.value.servo_ids == (3,)
        assert "servo 3: corrupt reply to sync read present_position" in _one_line(err.value)
        with pytest.raises(ServoBadReply, match=r"servo 3: corrupt reply to read goal_position"):
            bus.read(3, "goal_position")
        assert bus.read(2, "goal_position") == 2048


def test_a_stalled_servo_is_named():
    with FeetechBus("feetechsim://?stall=2&rate=20") as bus:
        bus.write(2, "protection_time", 20)  # 0.2 s above the overload torque
        bus.set_torque(IDS, True)
        bus.write_positions(dict.fromkeys(IDS, 3000))
        sim, loads = bus.serial.sim, []
        with pytest.raises(ServoFault) as err:
            while sim.now < 10.0:
                loads.append(bus.read_states(IDS)[2].load_fraction)
        assert err.value.servo_ids == (2,) and err.value.bits == 0x20
        assert "servo 2: overload (status error bits 0x20, reported on sync read" in _one_line(err.value)
        assert max(loads) == 1.0  # pushing with all it has before the protection cuts in
        bus.check_errors = False
        state = bus.read_states(IDS)[2]
        assert state.errors == "overload" and state.load_fraction == pytest.approx(0.2)
        assert state.position_steps == 2048
        bus.set_torque([2], False)  # allowed, and clears it
        bus.check_errors = True
        assert bus.ping(2) == 0


def test_lost_and_corrupt_packets_are_retried():
    with FeetechBus("feetechsim://?drop=0.05&corrupt=0.05&seed=3&rate=5", timeout_s=0.02, retries=6) as bus:
        for k in range(40):
            bus.write_positions(dict.fromkeys(IDS, 2048))
            assert bus.read_positions(IDS) == dict.fromkeys(IDS, 2048)
            assert bus.read(1 + k % 6, "present_voltage") == 74
        assert bus.counters["retries"] > 0 and bus.counters["corrupt"] > 0


def test_an_answer_that_came_while_the_client_was_not_running_still_counts(monkeypatch):
    with FeetechBus("feetechsim://", timeout_s=0.01, retries=0) as bus:
        send = bus._send

        def descheduled_after_sending(packet):  # a loaded machine: woken long after the deadline
            on_wire = send(packet)
            time.sleep(0.05)
            return on_wire

        monkeypatch.setattr(bus, "_send", descheduled_after_sending)
        assert bus.read_positions(IDS) == dict.fromkeys(IDS, 2048)
        assert bus.read(3, "present_voltage") == 74
        assert bus.counters["timeouts"] == 0


def test_link_faults_are_link_errors():
    with FeetechBus("feetechsim://?delay=80", timeout_s=0.02, retries=0) as bus:
        with pytest.raises(ServoNoReply, match="servo 1: no reply to ping within 20 ms"):
            bus.ping(1)
    with FeetechBus("feetechsim://?disconnect=30") as bus:
        bus.ping(1)
        with pytest.raises(LinkError, match="Feetech bus failed: feetechsim: disconnected after 30 bytes"):
            for _ in range(10):
                bus.ping(1)
    with FeetechBus("feetechsim://", baudrate=115200, timeout_s=0.02, retries=0) as bus:
        with pytest.raises(ServoNoReply, match="that it runs at 115200 baud"):
            bus.ping(1)
    with pytest.raises(LinkError, match="not open"):
        FeetechBus("feetechsim://").ping(1)


def test_echo_adapters():
    with FeetechBus("feetechsim://?echo=1", echo=True) as bus:
        bus.write_positions({1: 1000})
        assert bus.read_positions(IDS)[1] == 2048
    with FeetechBus("feetechsim://", echo=True, timeout_s=0.02) as bus:
        with pytest.raises(ProtocolError, match="differs for the packet sent .* an adapter that does not echo"):
            bus.ping(1)


@pytest.mark.parametrize(
    ("url", "match"),
    [
        ("feetechsim://?speeed=3", r"unknown feetechsim option 'speeed'.*feetechsim://\[\?ids=1-6"),
        ("feetechsim://?baud=9600", r"baud=9600 is not a Feetech baud rate"),
        ("feetechsim://?ids=", r"ids: at least one id"),
        ("feetechsim://?ids=1,1&arm=so101", r"ids: an id repeated .* not for a bus moving an arm"),
        ("feetechsim://?stops=1:900:100", r"stops: servo 1 needs 0 <= LO <= HI <= 4095"),
        ("feetechsim://?model=xl320", r"model='xl320' is not a Feetech model"),
        ("feetechsim://?drop=2", r"drop must be a probability"),
        ("feetechsim://?start=1,2,3,4,5,6,7", r"start: 7 positions for 6 ids"),
        ("feetechsim://bus?rate=2", r"has a host or path"),
    ],
)
def test_bad_simulator_urls_say_the_expected_form(url, match):  # bad input (exit 2), not a link failure
    with pytest.raises(BadInputError, match=match):
        FeetechBus(url).open()


def test_bad_client_options():
    with pytest.raises(BadInputError, match="baud rate 9600 is not one a Feetech servo runs at"):
        FeetechBus("feetechsim://", baudrate=9600)
    with pytest.raises(BadInputError, match="timeout_s"):
        FeetechBus("feetechsim://", timeout_s=0)


# --- on a pty, served by python -m armctl.bus.sim_pty ---------------------------------------------------


def test_client_on_the_pty(pty_bus):
    path = pty_bus("feetechsim://?start=100,200,300,400,500,600")
    assert path.startswith("/dev/")
    with FeetechBus(path) as bus:
        assert bus.check_ids(IDS) == dict.fromkeys(IDS, 777)
        assert bus.read_positions(IDS) == {i: 100 * i for i in IDS}
        bus.set_torque(IDS, True)
        bus.write_positions(dict.fromkeys(IDS, 1000))
        deadline = time.monotonic() + 10
        while bus.read_positions(IDS) != dict.fromkeys(IDS, 1000) and time.monotonic() < deadline:
            time.sleep(0.01)
        assert bus.read_positions(IDS) == dict.fromkeys(IDS, 1000)
    with FeetechBus(path, baudrate=500_000, timeout_s=0.02, retries=0) as bus:  # the pty's rate is the link's
        with pytest.raises(ServoNoReply, match="runs at 500000 baud"):
            bus.ping(1)


def test_pty_goes_away_when_the_link_is_pulled(pty_bus):
    path = pty_bus("feetechsim://?disconnect=20")
    with FeetechBus(path, timeout_s=0.02, retries=0) as bus:
        bus.ping(1)
        with pytest.raises(LinkError):
            for _ in range(20):
                bus.ping(1)


@pytest.mark.parametrize(
    ("argv", "fragment"),
    [
        (["feetechsim://?bogus=1"], "unknown feetechsim option 'bogus'"),
        (["armsim://?rate=abc"], "rate='abc' is not valid"),
        (["http://example"], "not a simulator URL"),
        (["a", "b"], "unrecognized arguments"),
    ],
)
def test_sim_pty_bad_arguments_are_one_line_and_exit_2(argv, fragment):
    run = subprocess.run(
        [sys.executable, "-m", "armctl.bus.sim_pty", *argv], capture_output=True, text=True, timeout=30
    )
    assert run.returncode == 2 and run.stdout == "", run
    assert "Traceback" not in run.stderr and fragment in run.stderr.strip().splitlines()[-1], run.stderr


def test_sim_pty_help():
    run = subprocess.run([sys.executable, "-m", "armctl.bus.sim_pty", "--help"], capture_output=True, text=True)
    assert run.returncode == 0 and "feetechsim://" in run.stdout and run.stderr == ""


def test_voltage_sags_and_temperature_rises_under_load():
    """A servo pushing on a stop reports its load, a supply that sags under it and a temperature that rises
    toward its steady state (time constant about a minute); an idle one reads the supply and the room."""
    sim = _sim(ids=[1, 2], volts=7.4, temp_c=25.0)
    sim.set_stops(2, 1900, 2100)
    _write(sim, 2, "torque_enable", 1, 0.0)
    _write(sim, 2, "goal_position", 2200, 0.0)  # 100 steps past the stop: pushes at 100 % (capped)
    load = _read(sim, 2, "present_load", 1.0)
    assert 500 <= abs(load) <= 1000
    assert _read(sim, 2, "present_voltage", 1.0) < 74 and _read(sim, 1, "present_voltage", 1.0) == 74
    t30 = _read(sim, 2, "present_temperature", 30.0)
    t300 = _read(sim, 2, "present_temperature", 300.0)
    assert 25 < t30 < t300 <= 25 + 40 and _read(sim, 1, "present_temperature", 300.0) == 25
