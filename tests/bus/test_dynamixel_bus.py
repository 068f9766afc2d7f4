"""The Dynamixel client (``DynamixelBus``) against the simulated X-series bus (``dynamixelsim://``): ping and each
servo's model, registers by name and in their units, sync and bulk reads, torque, reboot, and the errors, each a
LinkError naming the port and the servo."""

from __future__ import annotations

import dataclasses
import time

import pytest

from armctl.bus.dynamixel.client import DynamixelBus, ServoFault, ServoNoReply, UnknownModel, scaled
from armctl.bus.dynamixel.protocol import BULK_READ, HW_OVERLOAD, SYNC_READ, SYNC_WRITE
from armctl.bus.servobus import ServoBadReply
from armctl.errors import BadInputError, LinkError

MIXED = "dynamixelsim://?ids=1-3&model=xl330,1:xl430&start=1000,2000,3000"


@pytest.fixture
def bus():
    with DynamixelBus(MIXED, retries=1) as b:
        yield b


def test_ping_gives_each_servos_model_and_its_own_table(bus):
    assert bus.check_ids([1, 2, 3]) == {1: 1060, 2: 1200, 3: 1200}  # XL430-W250, XL330-M288
    assert bus.model_of(1).name == "xl430-w250" and bus.model_of(2).name == "xl330-m288"
    # address 126 is Present_Load on the XL430 (no current sensing), Present_Current on the XL330
    assert set(bus.read_many(1, ["present_current"])) == {"present_current"}
    assert bus.bulk_read({1: ["present_load"], 2: ["present_current"]}) == {
        1: {"present_load": 0},
        2: {"present_current": 0},
    }
    assert bus.read(2, "current_limit") == 1750 and not bus.has_register("current_limit", 1)


def test_registers_by_name_and_in_their_units(bus):
    bus.check_ids([1, 2, 3])
    assert bus.read_many(3, ["present_position", "present_temperature"]) == {
        "present_position": 3000,
        "present_temperature": 25,
    }
    units = bus.read_units(1, ["present_input_voltage", "present_velocity", "present_position"])
    assert units == {
        "present_input_voltage": (pytest.approx(11.1), "V"),
        "present_velocity": (0.0, "rpm"),
        "present_position": (1000.0, "step"),
    }
    bus.write_units(2, "profile_velocity", 22.9)  # rpm
    assert bus.read(2, "profile_velocity") == 100
    assert scaled("2.69 mA", 100) == (pytest.approx(269.0), "mA") and scaled("degC", 40) == (40.0, "degC")
    with pytest.raises(BadInputError, match="register profile_velocity: 99999 is outside 0..32767"):
        bus.write(2, "profile_velocity", 99999)  # refused before it is sent
    with pytest.raises(ServoFault, match=r"servo 2: data limit error .*reported on write goal_current"):
        bus.write(2, "goal_current", 9999)  # over the servo's current limit: the servo refuses it


def test_sync_write_moves_every_servo_and_sync_read_reads_them_in_one_packet(bus):
    bus.check_ids([1, 2, 3])
    bus.set_torque([1, 2, 3], True)
    assert [bus.read(i, "torque_enable") for i in (1, 2, 3)] == [1, 1, 1]
    bus.write_positions({1: 1100, 2: 2100, 3: 2900})
    deadline = time.monotonic() + 3
    while bus.read_positions([1, 2, 3]) != {1: 1100, 2: 2100, 3: 2900} and time.monotonic() < deadline:
        time.sleep(0.02)
    assert bus.read_positions([1, 2, 3]) == {1: 1100, 2: 2100, 3: 2900}
    states = bus.read_states([1, 2, 3])
    assert states[2].voltage_v == pytest.approx(5.0) and states[1].voltage_v == pytest.approx(11.1)
    assert states[3].position_steps == 2900 and not states[3].moving and states[3].errors == "no error"
    codes = [p.code for _, p in bus.serial.sim.log]
    assert codes.count(SYNC_WRITE) == 1 and SYNC_READ in codes
    bus.bulk_read({1: ["present_position"], 3: ["present_velocity", "present_position"]})
    assert bus.serial.sim.log[-1][1].code == BULK_READ
    bus.set_torque([1, 2, 3], False)
    assert [bus.read(i, "torque_enable") for i in (1, 2, 3)] == [0, 0, 0]


def test_a_missing_servo_is_named_with_the_port():
    with DynamixelBus("dynamixelsim://?ids=1-3&missing=2", retries=0) as b:
        with pytest.raises(ServoNoReply, match=r"dynamixelsim://\?ids=1-3&missing=2: servo 2 of \[1, 2, 3\] did not"):
            b.check_ids([1, 2, 3])
        assert isinstance(ServoNoReply("x"), LinkError)


def test_a_garbled_servo_is_a_bad_reply_and_the_wrong_baud_no_reply():
    with DynamixelBus("dynamixelsim://?ids=1-2&garble=2", retries=1) as b:
        with pytest.raises(ServoBadReply, match="servo 2: corrupt reply to ping"):
            b.ping(2)
    with DynamixelBus("dynamixelsim://?ids=1&baud=1000000", retries=0, timeout_s=0.01) as b:
        with pytest.raises(ServoNoReply, match="that it runs at 57600 baud"):
            b.ping(1)


@pytest.mark.parametrize("kind", ["dynamixel", "feetech"])
def test_an_answer_whose_header_was_hit_is_corrupt_not_silence(kind):
    """A flipped bit anywhere in the answer, its header included (seeds 31, 46, .. hit Dynamixel's FD 00),
    is a corrupt reply: the servo was heard."""
    from armctl.bus.feetech.client import FeetechBus

    bus_class = DynamixelBus if kind == "dynamixel" else FeetechBus
    for seed in range(50):
        with bus_class(f"{kind}sim://?ids=1-2&garble=2&seed={seed}", retries=0) as b:
            with pytest.raises(ServoBadReply, match="servo 2: corrupt reply to ping"):
                b.ping(2)


def test_a_hardware_alert_is_a_fault_naming_the_servo_and_reboot_clears_it():
    with DynamixelBus("dynamixelsim://?ids=1-2&model=xl330", retries=1) as b:
        b.check_ids([1, 2])
        b.serial.sim.servo(2).hw_errors |= HW_OVERLOAD
        with pytest.raises(ServoFault, match=r"servo 2: hardware alert: overload error \(reboot the servo") as exc:
            b.read_positions([1, 2])
        assert exc.value.servo_ids == (2,)
        b.reboot(2)
        assert b.read_positions([1, 2]) == {1: 2048, 2: 2048}


def test_a_model_armctl_does_not_know_is_one_line():
    with DynamixelBus("dynamixelsim://?ids=1", retries=0) as b:
        servo = b.serial.sim.servo(1)
        servo.model = dataclasses.replace(servo.model, number=9999)  # a model number no table has
        with pytest.raises(UnknownModel, match="servo 1 is Dynamixel model number 9999, which armctl does not know"):
            b.check_ids([1])
