"""The simulated Dynamixel bus (``dynamixelsim://``) driven in simulated time, byte for byte: the servos' rules
(error numbers, status return levels, ID changes, reg write, factory reset, clear, reboot), their motion (profiles,
operating modes), servos sharing an id and the ``connected`` file, the state file, and bad URLs."""

from __future__ import annotations

import numpy as np
import pytest

from armctl.bus.dynamixel import protocol as p
from armctl.sim.dynamixelsim import DynamixelSim
from armctl.sim.protocol_dynamixelsim import parse_url
from armctl.sim.simurl import BadSimURL


class Bus:
    """A DynamixelSim driven directly: ``ask(packet)`` sends it and returns what came back within 20 ms."""

    def __init__(self, url: str):
        self.sim = DynamixelSim(parse_url(url))
        self.t = 0.0

    def ask(self, packet: bytes, wait_s: float = 0.02) -> list:
        self.sim.host_write(packet, self.t)
        self.t += wait_s
        buf = bytearray(self.sim.host_read(self.t))
        out = []
        while (item := p.take_packet(buf)) is not None:
            out.append(item)
        return out

    def write(self, servo_id: int, name: str, value: int, model=p.XL430_W250) -> int:
        reg = model.register(name)
        (answer,) = self.ask(p.write_packet(servo_id, reg.address, model.encode(reg, value)))
        return answer.code

    def read(self, servo_id: int, name: str, model=p.XL430_W250) -> int:
        reg = model.register(name)
        (answer,) = self.ask(p.read_packet(servo_id, reg.address, reg.size))
        assert answer.code & 0x7F == 0, p.describe_error(answer.code)
        return model.decode(reg, answer.params)

    def run(self, seconds: float) -> None:
        self.t += seconds
        self.sim.pump(self.t)


def test_write_errors_are_the_emanuals_numbers():
    bus = Bus("dynamixelsim://?ids=1")
    assert bus.ask(p.write_packet(1, 132, b"\x00\x00\x00\x00"))[0].code == p.ACCESS_ERROR  # read-only
    assert bus.ask(p.write_packet(1, 14, b"\x00"))[0].code == p.ACCESS_ERROR  # no register there
    assert bus.ask(p.write_packet(1, 116, b"\x00\x08"))[0].code == p.DATA_LENGTH_ERROR  # half a register
    assert bus.ask(p.write_packet(1, 68, b"\x03"))[0].code == p.DATA_RANGE_ERROR  # status return level 0..2
    assert bus.ask(p.write_packet(1, 11, b"\x05"))[0].code == p.DATA_LIMIT_ERROR  # no current mode on an XL430
    assert bus.ask(p.encode_packet(1, 0x7F))[0].code == p.INSTRUCTION_ERROR
    assert bus.ask(p.write_packet(1, 64, b"\x01\x01"))[0].code == 0  # torque and LED in one write


def test_status_return_levels():
    bus = Bus("dynamixelsim://?ids=1")
    assert bus.write(1, "status_return_level", 0) == 0  # answered: the level applies from the next packet
    assert bus.ask(p.write_packet(1, 65, b"\x01")) == []
    assert bus.ask(p.read_packet(1, 65, 1)) == []
    assert len(bus.ask(p.ping_packet(1))) == 1
    assert bus.ask(p.write_packet(p.BROADCAST_ID, 68, b"\x02")) == []  # a broadcast write: never answered
    assert bus.read(1, "led") == 1


def test_an_id_change_answers_from_the_old_id_and_takes_effect():
    bus = Bus("dynamixelsim://?ids=1,2")
    (answer,) = bus.ask(p.write_packet(1, 7, b"\x07"))
    assert (answer.id, answer.code) == (1, 0)
    assert bus.ask(p.ping_packet(1)) == []
    assert bus.ask(p.ping_packet(7))[0].params == bytes((0x24, 0x04, 46))


def test_reg_write_waits_for_action():
    bus = Bus("dynamixelsim://?ids=1,2")
    bus.ask(p.write_packet(1, 65, b"\x01", instruction=p.REG_WRITE))
    assert bus.read(1, "led") == 0 and bus.read(1, "registered_instruction") == 1
    assert bus.ask(p.action_packet()) == []
    assert bus.read(1, "led") == 1 and bus.read(1, "registered_instruction") == 0


def test_a_velocity_based_profile_sets_the_speed():
    bus = Bus("dynamixelsim://?ids=1&start=0")
    bus.write(1, "profile_velocity", 50)  # 50 x 0.229 rpm = 781.5 step/s
    bus.write(1, "torque_enable", 1)
    bus.write(1, "goal_position", 4000)
    bus.run(1.0)
    speed = bus.read(1, "present_velocity")
    assert speed == 50 and 700 < bus.read(1, "present_position") < 860
    bus.run(5.0)
    assert bus.read(1, "present_position") == 4000 and bus.read(1, "moving") == 0


def test_a_time_based_profile_ends_the_move_on_time():
    bus = Bus("dynamixelsim://?ids=1&start=1000")
    bus.write(1, "drive_mode", 4)  # time-based profile
    bus.write(1, "profile_acceleration", 200)  # ms to speed
    bus.write(1, "profile_velocity", 1000)  # ms for the whole move
    bus.write(1, "torque_enable", 1)
    bus.write(1, "goal_position", 3000)
    t0 = bus.t
    bus.run(0.5)
    assert 1800 < bus.read(1, "present_position") < 2200  # half way at half time (a symmetric profile)
    while bus.read(1, "moving"):
        bus.run(0.01)
    assert bus.read(1, "present_position") == 3000
    assert bus.t - t0 == pytest.approx(1.0, abs=0.1)


def test_extended_and_current_based_position_modes():
    bus = Bus("dynamixelsim://?ids=1&model=xm430&start=2048&stall=")
    xm = p.XM430_W350
    assert bus.write(1, "operating_mode", p.CURRENT_POSITION_MODE, xm) == 0
    assert bus.read(1, "goal_current", xm) == 1193  # reset to the current limit
    bus.write(1, "goal_current", 200, xm)
    bus.write(1, "torque_enable", 1, xm)
    bus.write(1, "goal_position", 2048 + 3 * 4096, xm)  # three turns on: multi-turn
    bus.run(5.0)
    assert bus.read(1, "present_position", xm) == 2048 + 3 * 4096
    bus.sim.set_stops(1, -1e9, 2048 + 3 * 4096)
    bus.write(1, "goal_position", 2048 + 4 * 4096, xm)  # pushes on a stop: at most the goal current
    bus.run(0.5)
    assert bus.read(1, "present_current", xm) == 200
    assert bus.read(1, "hardware_error_status", xm) == 0  # current-based position: no overload
    bus.write(1, "torque_enable", 0, xm)
    assert bus.ask(p.clear_packet(1))[0].code == 0
    assert bus.read(1, "present_position", xm) == 2048


def test_the_xl430_has_no_current_based_position_mode_and_reports_load():
    bus = Bus("dynamixelsim://?ids=1")
    assert bus.write(1, "operating_mode", p.EXTENDED_POSITION_MODE) == 0
    assert bus.write(1, "operating_mode", p.CURRENT_POSITION_MODE) == p.DATA_LIMIT_ERROR
    assert bus.read(1, "present_load") == 0


def test_velocity_mode_turns_at_the_goal_velocity():
    bus = Bus("dynamixelsim://?ids=1&start=0")
    bus.write(1, "operating_mode", p.VELOCITY_MODE)
    bus.write(1, "torque_enable", 1)
    assert bus.write(1, "goal_velocity", 300) == p.DATA_LIMIT_ERROR  # over the velocity limit (265)
    bus.write(1, "goal_velocity", -100)  # 22.9 rpm: 1563 step/s
    bus.run(3.0)
    assert bus.read(1, "present_velocity") == -100
    assert bus.read(1, "present_position") < -4000  # past a turn: velocity mode is multi-turn


def test_a_shutdown_servo_refuses_the_torque_until_a_reboot():
    bus = Bus("dynamixelsim://?ids=1&stall=1")
    bus.write(1, "torque_enable", 1)
    bus.write(1, "goal_position", 3000)
    bus.run(1.5)
    assert bus.read(1, "hardware_error_status") == p.HW_OVERLOAD and bus.read(1, "torque_enable") == 0
    assert bus.write(1, "torque_enable", 1) == p.ALERT | p.RESULT_FAIL
    assert bus.ask(p.reboot_packet(1))[0].code == p.ALERT  # answered, then restarted
    assert bus.write(1, "torque_enable", 1) == 0


def test_torque_on_holds_where_the_servo_stands_after_a_new_homing_offset():
    bus = Bus("dynamixelsim://?ids=1&start=1000")
    bus.write(1, "homing_offset", 1047)  # present 2047 now; the goal (set at power-on) still says 1000
    bus.write(1, "torque_enable", 1)
    bus.run(1.0)
    assert bus.read(1, "present_position") == 2047 == bus.read(1, "goal_position")


def test_overheating_cuts_the_torque():
    bus = Bus("dynamixelsim://?ids=1&temp=75")  # above the XL430's 72 degC limit
    bus.write(1, "torque_enable", 1)
    bus.run(0.1)
    assert bus.read(1, "present_temperature") == 75
    assert bus.read(1, "hardware_error_status") == p.HW_OVERHEATING and bus.read(1, "torque_enable") == 0
    assert bus.ask(p.ping_packet(1))[0].code == p.ALERT


def test_input_voltage_error_raises_the_alert_bit():
    bus = Bus("dynamixelsim://?ids=1&model=xl330&volts=7.4")
    (answer,) = bus.ask(p.ping_packet(1))
    assert answer.code == 0x80
    assert bus.read(1, "hardware_error_status", p.XL330_M288) == p.HW_INPUT_VOLTAGE


def test_factory_reset_keeps_what_it_is_told_to():
    bus = Bus("dynamixelsim://?ids=4")
    bus.write(4, "baud_rate", 1)
    bus.write(4, "return_delay_time", 0)
    bus.write(4, "torque_enable", 1)
    assert bus.ask(p.factory_reset_packet(4, p.RESET_ALL_BUT_ID))[0].code == p.ACCESS_ERROR  # torque on
    bus.write(4, "torque_enable", 0)
    assert bus.ask(p.factory_reset_packet(4, p.RESET_ALL_BUT_ID))[0].code == 0
    assert bus.read(4, "return_delay_time") == 250
    assert bus.ask(p.factory_reset_packet(4, p.RESET_ALL))[0].id == 4
    assert bus.ask(p.ping_packet(4)) == [] and len(bus.ask(p.ping_packet(1))) == 1


def test_servos_sharing_an_id_collide_and_the_connected_file_plugs_them_in(tmp_path):
    plugged = tmp_path / "connected"
    bus = Bus(f"dynamixelsim://?ids=1,1,1&connected={plugged}")
    assert bus.ask(p.ping_packet(1)) == []  # no file: nothing plugged in
    plugged.write_text("all")
    bus.sim.host_write(p.ping_packet(1), bus.t)
    bus.t += 0.02
    heard = bytearray(bus.sim.host_read(bus.t))
    assert len(heard) >= 3 * 14  # three answers on the wire at once...
    while (item := p.take_packet(heard)) is not None:
        assert not isinstance(item, p.Packet)  # ...and not one of them readable
    plugged.write_text("2")
    assert bus.ask(p.write_packet(1, 7, b"\x02"))[0].code == 0
    plugged.write_text("1-3")
    assert [a.id for a in bus.ask(p.ping_packet(2))] == [2]


def test_the_state_file_keeps_eeprom_and_position(tmp_path):
    state = tmp_path / "bus.json"
    bus = Bus(f"dynamixelsim://?ids=1&start=1500&state={state}")
    bus.write(1, "id", 9)
    bus.sim.save_state()
    again = Bus(f"dynamixelsim://?ids=1&state={state}")
    assert again.read(9, "present_position") == 1500


def test_a_corrupted_instruction_earns_a_crc_error():
    bus = Bus("dynamixelsim://?ids=1,2")
    bad = bytearray(p.write_packet(2, 65, b"\x01"))
    bad[-1] ^= 0x40
    assert bus.ask(bytes(bad)) == [p.Packet(2, p.CRC_ERROR, b"", status=True)]
    assert bus.read(2, "led") == 0  # not carried out


@pytest.mark.parametrize(
    ("url", "words"),
    [
        ("dynamixelsim://?model=ax12", "unknown Dynamixel model 'ax12'"),
        ("dynamixelsim://?baud=1000", "baud=1000 is not a Dynamixel baud rate"),
        ("dynamixelsim://?model=xl330&baud=4500000", "XL330-M288 does not run at it"),
        ("dynamixelsim://?bogus=1", "unknown dynamixelsim option 'bogus'"),
        ("dynamixelsim://?model=1:xl430,x:xm430", "'x:xm430' is not ID:NAME"),
    ],
)
def test_bad_urls_say_what_is_wrong(url, words):
    with pytest.raises(BadSimURL, match=words):
        parse_url(url)


def test_models_per_id():
    opts = parse_url("dynamixelsim://?ids=1-3&model=xm430,3:xl330-m077")
    assert (opts.model, opts.models) == ("xm430", {3: "xl330-m077"})


def test_the_servos_drive_the_arms_truth(tmp_path):
    """As on feetechsim: the truth file applies between each servo's present position and its joint."""
    from armctl.model.kinematics import tool_point
    from armctl.sim.dynamixelsim import DynamixelSimOptions
    from armctl.sim.truth import true_arm
    from tests.sim.test_truth import random_truth, write_truth
    from tests.sim.test_truth_buses import expected_q

    rng = np.random.default_rng(40)
    probe = DynamixelSim(DynamixelSimOptions(arm="so101"))
    arm, cal = probe.arm, probe.cal
    doc = random_truth(rng, arm)
    lo, hi = cal.joint_limits_rad()
    q = lo + (hi - lo) * rng.uniform(0.2, 0.8, size=arm.n)
    steps = [round(float(s.value(a))) for s, a in zip(cal.joints, q)]
    ids = [s.id for s in cal.joints]
    sim = DynamixelSim(
        DynamixelSimOptions(arm="so101", truth=write_truth(tmp_path / "t.yaml", doc), ids=ids, start_steps=steps)
    )
    sim.pump(0.5)
    want = expected_q(cal, arm.joint_names, doc, steps)
    assert [sim.servo(i).present_steps() for i in ids] == steps
    assert np.allclose(sim.true_q_rad(), want, atol=1e-12)
    assert np.allclose(sim.true_tool_m(), tool_point(true_arm(arm, sim.truth), want), atol=1e-12)


def test_simulator_url_starts_the_calibrations_servos_at_home(tmp_path):
    from armctl.calibration.lerobot import open_calibration
    from armctl.model.arm import load_arm
    from armctl.sim.protocol_dynamixelsim import simulator_url

    arm = load_arm("so101")
    sim = DynamixelSim(parse_url(simulator_url(arm, None, tmp_path / "state.json")))
    cal = open_calibration(None, arm)[0]
    want = [round(float(s.value(a))) for s, a in zip(cal.joints, arm.home_rad)]
    assert [sim.servo(s.id).present_steps() for s in cal.joints] == want
    sim.save_state()
    assert "start=" not in simulator_url(arm, None, tmp_path / "state.json")  # the servos stand where they were left


def test_an_arms_simulated_bus_has_its_servos_at_1_mbaud_and_its_gripper_current_capped(tmp_path):
    """With no port, --arm koch gets the Koch's servos (XL430s at the shoulder, XL330s after) at 1 Mbaud, its
    gripper in current-based position mode as LeRobot sets it; a mode a model lacks is refused."""
    from armctl.model.arm import load_arm
    from armctl.sim.protocol_dynamixelsim import simulator_url

    sim = DynamixelSim(parse_url(simulator_url(load_arm("koch"), None, tmp_path / "state.json")))
    assert sim.opts.baud == 1_000_000
    assert [sim.servo(i).model.name for i in range(1, 7)] == ["xl430-w250"] * 2 + ["xl330-m288"] * 4
    assert [sim.servo(i).get("operating_mode") for i in range(1, 7)] == [3] * 5 + [5]
    with pytest.raises(BadSimURL, match="modes: servo 1's XL430-W250 has no operating mode 5"):
        parse_url("dynamixelsim://?model=xl430&modes=1:5")


def test_pyserial_opens_the_url_once_armctl_bus_is_imported():
    import serial

    import armctl.bus  # noqa: F401  (registers the simulators' schemes)

    port = serial.serial_for_url("dynamixelsim://?ids=3&model=xm540", baudrate=57600, timeout=0.5)
    try:
        port.write(p.ping_packet(3))
        buf = bytearray(port.read(14))
        assert p.take_packet(buf) == p.Packet(3, 0, (1120).to_bytes(2, "little") + b"\x2e", status=True)
        assert port.sim.servo(3).model is p.XM540_W270
    finally:
        port.close()


def test_the_pty_server_refuses_a_bad_url_in_one_line():
    import subprocess
    import sys

    run = subprocess.run(
        [sys.executable, "-m", "armctl.bus.sim_pty", "dynamixelsim://?model=ax12"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert run.returncode == 2 and run.stdout == ""
    assert len(run.stderr.strip().splitlines()) == 1 and "unknown Dynamixel model 'ax12'" in run.stderr
