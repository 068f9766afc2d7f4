"""The simulated Feetech bus as LeRobot and a leader arm need it: moved by hand from a file
(``feetechsim://?hand=FILE.csv``), every baud rate a pty is set to (LeRobot's port scan), and every
register of LeRobot's STS table kept and read back."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest
import serial

from armctl.bus import feetech as ft
from armctl.bus.feetech.client import STS, FeetechBus, take_packet
from armctl.errors import BadInputError
from armctl.sim.feetechsim import FeetechSim
from armctl.sim.protocol_feetechsim import parse_url

# LeRobot's SCAN_BAUDRATES (src/lerobot/motors/feetech/tables.py), 14400/128000/250000 set with BOTHER
SCAN_BAUDRATES = [4800, 9600, 14400, 19200, 38400, 57600, 115200, 128000, 250000, 500000, 1000000]


def _talk(sim: FeetechSim, packet: bytes, t: float) -> list:
    t = max(t, sim.now)
    sim.host_write(packet, t)
    buf = bytearray(sim.host_read(t + 0.01))
    out = []
    while (item := take_packet(buf)) is not None:
        out.append(item)
    return out


def _read(sim, servo_id, name, t):
    reg = STS.register(name)
    (reply,) = _talk(sim, ft.read_packet(servo_id, reg.address, reg.size), t)
    return STS.decode(reg, reply.params)


def _write(sim, servo_id, name, value, t):
    reg = STS.register(name)
    return _talk(sim, ft.write_packet(servo_id, reg.address, STS.encode(reg, value)), t)


@pytest.fixture
def hand_file(tmp_path):
    def write(text: str) -> str:
        path = tmp_path / "hand.csv"
        path.write_text(text)
        return str(path)

    return write


# --- hand=FILE.csv ----------------------------------------------------------------------------------


def test_a_torque_off_servo_follows_the_hand_interpolated_in_time(hand_file):
    path = hand_file("t_s,id,steps\n# servo 1 up and back, servo 2 down\n0,1,1000\n1.0,1,2000\n0.5,2,100\n2,1,500\n")
    sim = FeetechSim(parse_url(f"feetechsim://?hand={path}&ids=1-3"))
    assert _read(sim, 2, "present_position", 0.2) == 2048  # not touched yet
    assert _read(sim, 1, "present_position", 0.25) == 1250
    assert _read(sim, 1, "present_speed", 0.5) == 1000  # steps/s, as the hand turns it
    assert _read(sim, 1, "moving", 0.6) == 1
    assert _read(sim, 1, "present_position", 1.5) == 1250  # on its way back to 500
    assert _read(sim, 1, "present_position", 3.0) == 500  # the last row: left there
    assert _read(sim, 1, "moving", 3.0) == 0
    assert _read(sim, 2, "present_position", 3.0) == 100
    assert _read(sim, 3, "present_position", 1.0) == 2048  # no rows: never touched


def test_a_servo_with_torque_on_resists_the_hand_and_follows_it_once_released(hand_file):
    path = hand_file("0,2,2048\n10,2,3048\n")
    sim = FeetechSim(parse_url(f"feetechsim://?hand={path}"))
    _write(sim, 2, "goal_position", 2048, 0.0)
    _write(sim, 2, "torque_enable", 1, 0.01)
    assert _read(sim, 2, "present_position", 5.0) == 2048  # held by its motor
    _write(sim, 2, "torque_enable", 0, 6.0)
    assert _read(sim, 2, "present_position", 7.0) == 2748  # where the hand holds it now


def test_hand_steps_are_encoder_steps_so_a_homing_offset_shifts_the_reading(hand_file):
    path = hand_file("0,1,1500\n")
    sim = FeetechSim(parse_url(f"feetechsim://?hand={path}"))
    _write(sim, 1, "homing_offset", -200, 0.5)
    assert _read(sim, 1, "present_position", 1.0) == 1700  # present = actual - offset


def test_mechanical_stops_bound_the_hand(hand_file):
    path = hand_file("0,1,100\n1,1,4000\n")
    sim = FeetechSim(parse_url(f"feetechsim://?hand={path}&stops=1:1000:3000"))
    assert _read(sim, 1, "present_position", 0.1) == 1000
    assert _read(sim, 1, "present_position", 0.9) == 3000


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ("0,1\n", r"hand=.*hand.csv: .*hand.csv line 1: expected t_s,id,steps"),
        ("0,1,abc\n", r"line 1: expected numbers t_s,id,steps"),
        ("1,1,100\n0.5,1,200\n", r"line 2: time 0.5 s comes before 1 s, the previous row of id 1"),
        ("0,1,5000\n", r"line 1: steps 5000 outside 0..4095"),
        ("-1,1,100\n", r"line 1: time -1 s must be >= 0"),
        ("0,9,100\n", r"id 9 is not on the bus"),
        ("# nothing\n", r"has no rows t_s,id,steps"),
    ],
)
def test_bad_hand_files_are_named_with_the_line(hand_file, text, match):
    path = hand_file(text)
    with pytest.raises(BadInputError, match=match):
        FeetechBus(f"feetechsim://?hand={path}").open()


def test_a_missing_hand_file_is_bad_input(tmp_path):
    with pytest.raises(BadInputError, match=r"hand=.*nope.csv: cannot read"):
        FeetechBus(f"feetechsim://?hand={tmp_path / 'nope.csv'}").open()


def test_the_hand_moves_the_bus_on_a_pty_as_time_goes_by(pty_bus, hand_file):
    path = hand_file("0,1,500\n100,1,3500\n")  # 30 steps a second, for 100 s
    with FeetechBus(pty_bus(f"feetechsim://?hand={path}")) as bus:
        first = bus.read_positions([1])[1]
        t0 = time.monotonic()
        time.sleep(0.5)
        second = bus.read_positions([1])[1]
        elapsed = time.monotonic() - t0
    assert 500 <= first < second <= 500 + 30 * 60
    assert second - first >= 30 * 0.5 - 2 and second - first <= 30 * (elapsed + 0.5) + 2


def test_armctl_teach_records_what_the_hand_file_did(tmp_path, hand_file):
    """teach with no test code: the hand file turns the so101's pan and lift, teach records where they went
    (the example calibration: 4096/360 steps a degree, direction -1, pan zero 2048, lift zero 2913.08)."""
    import os
    import re

    from tests.terminal import Term

    path = hand_file("t_s,id,steps\n0,1,2048\n1.5,1,2400\n0,2,2048\n1.5,2,2200\n")
    out = tmp_path / "taught.yaml"
    want = [-(2400 - 2048) * 360 / 4096, (2200 - 2913.08) * 360 / 4096 * -1]  # -30.94, 62.67 deg
    env = dict(os.environ, ARMCTL_STATE_DIR=str(tmp_path / "state"), TERM="xterm")
    argv = [sys.executable, "-m", "armctl", "--arm", "so101", "--port", f"feetechsim://?hand={path}", "teach"]
    t = Term([*argv, str(out)], cwd=tmp_path, env=env)
    t.wait("torque off: move the arm by hand")
    deadline = time.monotonic() + 30
    while True:  # the hand's moves take 1.5 s from the port's opening
        got = re.findall(r"shoulder_pan\s+(-?[\d.]+) deg\s+shoulder_lift\s+(-?[\d.]+) deg", t.screen())
        if got and [float(v) for v in got[-1]] == pytest.approx(want, abs=0.1):
            break
        assert time.monotonic() < deadline, t.screen()[-400:]
        t._pump(0.1)
    t.send("\r")
    t.wait("name of the pose")
    t.send("there\r")
    t.wait("recorded 'there'")
    t.send("q")
    assert t.finish() == 0, t.screen()
    (q,) = re.findall(r"there: \{q_deg: \[([^\]]+)\]", out.read_text())
    assert [float(v) for v in q.split(",")][:2] == pytest.approx(want, abs=0.1)


def test_sim_pty_refuses_a_bad_hand_file_in_one_line(hand_file):
    path = hand_file("0,1,2,3\n")
    run = subprocess.run(
        [sys.executable, "-m", "armctl.bus.sim_pty", f"feetechsim://?hand={path}"],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert run.returncode == 2 and run.stdout == ""
    assert len(run.stderr.strip().splitlines()) == 1 and "line 1: expected t_s,id,steps" in run.stderr


# --- every baud rate on the pty ---------------------------------------------------------------------


def _pings_at(path: str, baud: int) -> bool:
    with serial.Serial(path, baud, timeout=0) as port:
        for _ in range(3):  # a loaded machine may serve the pty late: ask again before calling it silent
            port.reset_input_buffer()
            port.write(ft.ping_packet(1))
            deadline = time.monotonic() + 0.1 + 40 * 10 / baud
            buf = bytearray()
            while time.monotonic() < deadline:
                buf += port.read(64)
                if take_packet(bytearray(buf)) is not None:
                    return True
                time.sleep(0.002)
    return False


@pytest.mark.parametrize("servo_baud", [1_000_000, 128_000])
def test_the_pty_follows_every_rate_of_lerobots_port_scan(pty_bus, servo_baud):
    """Servos answer only at their own rate, whatever rate (standard or BOTHER) the client sets."""
    path = pty_bus(f"feetechsim://?ids=1&baud={servo_baud}")
    answered = [baud for baud in SCAN_BAUDRATES if _pings_at(path, baud)]
    assert answered == [servo_baud]


# --- every register of LeRobot's STS table ----------------------------------------------------------


def test_every_register_lerobot_writes_is_kept_and_read_back():
    """LeRobot writes Maximum_Acceleration (85) = 254 at every connect: the bytes it sends (FACTS-lerobot
    section 5), then the whole EEPROM tail and factory area written and read back by name."""
    sim = FeetechSim()
    (reply,) = _talk(sim, bytes.fromhex("FFFF06040355FE9F"), 0.1)
    assert reply.id == 6 and reply.code == 0
    assert _read(sim, 6, "max_acceleration", 0.2) == 254
    writable = {
        "velocity_p_gain": 10,
        "over_current_protection_time": 200,
        "velocity_i_gain": 20,
        "moving_velocity_threshold": 50,
        "dts": 32,
        "velocity_unit_factor": 2,
        "hts": 20,
        "max_velocity_limit": 254,
        "acceleration_multiplier": 3,
    }
    with FeetechBus("feetechsim://?ids=1-6") as bus:
        for name, value in writable.items():
            bus.write(1, name, value)
        assert {name: bus.read(1, name) for name in writable} == writable
        raw = bus.read_many(1, ["velocity_p_gain", "over_current_protection_time", "velocity_i_gain"])
        assert raw == {k: writable[k] for k in ("velocity_p_gain", "over_current_protection_time", "velocity_i_gain")}
        assert bus.read(1, "goal_position_2") == 0
        with pytest.raises(BadInputError, match="goal_position_2"):
            bus.write(1, "goal_position_2", 5)  # read-only, as LeRobot marks it
