"""The Robot on Dynamixel X-series bus servos (``--backend dynamixel``), against the simulated bus (dynamixelsim://).

No jump at start (the servos stand off the calibration's home: the first goal each is sent is where it is), a
program lands within 1 mm measured by the servos, a stalled joint and a servo's overload alert each stop with one
line naming the joint, a missing servo is refused before anything moves, release turns every torque off, the
servos' own position limits and homing offsets are read (never written unless asked: then with the Dynamixel sign),
the gripper closes until contact with its current capped in current-based position mode, and the CLI jogs.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import armctl
from armctl.bus.dynamixel.client import DynamixelBus
from armctl.bus.dynamixel.protocol import CURRENT_POSITION_MODE, HW_OVERLOAD, SYNC_WRITE, WRITE
from armctl.calibration.servo import find_calibration, load_calibration
from armctl.cli import main
from armctl.errors import LinkError
from tests.robot.test_feetech_robot import BUS_CAL, PROGRAM  # seed-3link on bus servos 1, 2, 3 and 6
from tests.robot.test_servo_watch import ARM  # seed-3link with its servos' models (for the load limit)

ROOT = Path(__file__).resolve().parents[2]
START = {1: 2560, 2: 3072, 3: 1536, 6: 2183}  # 45, -90, -45 deg: off the calibration's zeros (2048)


@pytest.fixture
def bus_cal(tmp_path):
    path = tmp_path / "seed-3link-dxl.yaml"
    path.write_text(BUS_CAL)
    return path


def _port(extra: str = "") -> str:
    start = ",".join(str(v) for v in START.values())
    return f"dynamixelsim://?ids=1,2,3,6&start={start}&baud=1000000" + (f"&{extra}" if extra else "")


def _connect(cal, extra: str = ""):
    return armctl.connect("seed-3link", _port(extra), calibration=cal, backend="dynamixel")


def _goals(sim) -> dict[int, list[int]]:
    """Every goal position the servos were sent (WRITE or SYNC_WRITE at 116), in order, per id."""
    out: dict[int, list[int]] = {}
    for _, p in sim.log:
        address = int.from_bytes(p.params[:2], "little")
        if p.code == WRITE and address == 116:
            out.setdefault(p.id, []).append(int.from_bytes(p.params[2:6], "little", signed=True))
        elif p.code == SYNC_WRITE and address == 116:
            data = p.params[4:]
            for k in range(0, len(data), 5):
                out.setdefault(data[k], []).append(int.from_bytes(data[k + 1 : k + 5], "little", signed=True))
    return out


def test_no_jump_at_start_and_a_program_lands_within_a_millimetre(bus_cal):
    with _connect(bus_cal) as robot:
        assert robot.backend.name == "dynamixel" and robot.backend.info.firmware == "dynamixel XL430-W250"
        sim = robot.backend.bus.serial.sim
        assert robot.where().q_deg == pytest.approx([45, -90, -45], abs=0.1)
        assert not any(sim.servo(i).torque_on for i in START)  # nothing moved, nothing held at open
        robot.move_to(0.5, 0.2, speed=0.3)
        goals = _goals(sim)
        for i in (1, 2, 3):
            assert abs(goals[i][0] - START[i]) <= 1, (i, goals[i][:3])  # the first goal: where the servo was
            assert max(abs(b - a) for a, b in zip(goals[i], goals[i][1:])) < 40  # then small steps, no jump
        assert np.hypot(*(robot.where(settle=True).tool_m - (0.5, 0.2))) < 1e-3
        robot.run(PROGRAM)
        assert np.hypot(*(robot.where(settle=True).tool_m - [0.52, -0.19])) < 1e-3
        writes = [p for _, p in sim.log if p.code in (WRITE, SYNC_WRITE)]
        assert min(int.from_bytes(p.params[:2], "little") for p in writes) >= 64  # EEPROM (below 64) left alone
        servos = robot.backend.status().servos  # what each servo reports of itself
        assert servos[2]["voltage_v"] == pytest.approx(11.1) and servos[2]["temperature_c"] >= 25
        assert servos[1]["torque"] and servos[1]["position_steps"] == round(servos[1]["goal_steps"])
        assert abs(servos[1]["load_fraction"]) < 0.1 and servos[1]["errors"] == "no error"


def test_a_stalled_joint_stops_with_one_line_naming_it(bus_cal, capsys):
    argv = ["--calibration", str(bus_cal), "--backend", "dynamixel", "--port", _port("stall=1")]
    assert main([*argv, "jog", "0.5", "0.2", "--speed", "100"]) == 4
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "servo 1 (shoulder) is stalled" in err, err


def test_an_overload_alert_stops_the_arm_naming_the_joint_and_the_error(bus_cal):
    with _connect(bus_cal) as robot:
        sim = robot.backend.bus.serial.sim
        robot.move_to(0.5, 0.2, speed=0.3)
        elbow = sim.servo(2)
        elbow.hw_errors |= HW_OVERLOAD  # what the servo sets after a second over its current limit ...
        elbow.mem[64] = 0  # ... and its shutdown turns its torque off
        with pytest.raises(LinkError, match=r"servo 2 \(elbow\): hardware alert: overload error") as exc:
            robot.move_to(0.55, 0.0, speed=0.3)
        assert str(exc.value).count("\n") == 0


def test_a_missing_servo_is_refused_before_anything_moves(bus_cal):
    with pytest.raises(LinkError, match=r"servo 3 .*did not answer a ping"):
        _connect(bus_cal, "missing=3")


def test_release_turns_every_torque_off_and_the_arm_is_measured_as_moved_by_hand(bus_cal):
    with _connect(bus_cal) as robot:
        sim = robot.backend.bus.serial.sim
        robot.move_to(0.5, 0.2, speed=0.3)
        assert all(sim.servo(i).torque_on for i in (1, 2, 3))
        robot.release()
        assert not any(sim.servo(i).torque_on for i in START)
        sim.turn_by_hand(1, 2048)
        assert robot.where().q_deg[0] == pytest.approx(0.0, abs=0.1)


def test_the_servos_position_limits_clamp_the_range_in_position_mode_only(bus_cal):
    with _connect(bus_cal, "limits=1:1800:2900") as robot:
        shoulder = robot.backend.cal.joints[0]
        assert (shoulder.min_steps, shoulder.max_steps) == (1800, 2900)
        assert any("clamped to the servo's own limits 1800..2900" in n for n in robot.backend.notes)
    state = Path(os.environ.get("TMPDIR", "/tmp")) / f"dxl-limits-{os.getpid()}.json"
    try:  # the same servo in extended position mode (LeRobot's Koch joints): its limits do not bind
        with DynamixelBus(_port(f"limits=1:1800:2900&state={state}"), baudrate=1_000_000) as bus:
            bus.write(1, "operating_mode", 4)
        with _connect(bus_cal, f"limits=1:1800:2900&state={state}") as robot:
            assert robot.backend.cal.joints[0].min_steps == 1024 and not robot.backend.notes
    finally:
        state.unlink(missing_ok=True)


def test_homing_offsets_are_read_checked_and_written_only_when_asked_with_dynamixels_sign(bus_cal, tmp_path):
    cal = tmp_path / "offset.yaml"
    cal.write_text(BUS_CAL.replace("{name: shoulder, id: 1,", "{name: shoulder, id: 1, homing_offset: 100,"))
    with pytest.raises(LinkError, match=r"servo 1 \(shoulder\) carries homing offset \+0 in its EEPROM, but cal"):
        _connect(cal)
    with _connect(cal, "offsets=1:100") as robot:
        sim, be = robot.backend.bus.serial.sim, robot.backend
        assert be.homing_offsets[1] == 100 and sim.servo(1).get("homing_offset") == 100  # nothing written at open
        before = be.bus.read(1, "present_position")
        assert be.add_homing_offsets({1: 30}) == {1: 70}  # Present_Position = actual + Homing_Offset
        assert be.bus.read(1, "present_position") == before - 30


def test_the_gripper_closes_until_contact_with_its_current_capped(tmp_path):
    """An SO-101 (its gripper closes until contact, its torque capped) built of XL330s, the gripper in current-based
    position mode as LeRobot sets a Koch's: Goal_Current is the cap; a part (a stop) holds it short of closed."""
    state = tmp_path / "servos.json"
    port = f"dynamixelsim://?ids=1-6&model=xl330&baud=1000000&state={state}"
    with DynamixelBus(port, baudrate=1_000_000) as bus:
        bus.write(6, "operating_mode", CURRENT_POSITION_MODE)
    with armctl.connect("so101", port, backend="dynamixel") as robot:
        sim, be = robot.backend.bus.serial.sim, robot.backend
        grip = sim.servo(6)
        robot.gripper("open")
        opened = grip.present_steps()
        closed = robot.calibration.gripper.value(robot.arm.gripper.closed_rad)
        part = (opened + closed) / 2  # a part between the jaws
        lo, hi = sorted((part, opened))
        sim.set_stops(6, grip._shaft(lo), grip._shaft(hi))
        robot.gripper("close")  # no stall error: the part is met
        cap = robot.arm.gripper.max_load_pct / 100
        assert grip.get("goal_current") == round(cap * 1750)  # the cap, in the servo's RAM (of its current limit)
        assert abs(grip.load) == pytest.approx(cap, abs=0.02)  # pushing on the part with the capped current
        assert be.watch.contact == pytest.approx(grip.present_steps(), abs=2)
        assert abs(grip.present_steps() - closed) > 100 and grip.torque_on
        robot.gripper("open")
        assert be.watch.contact is None


def test_the_cli_jogs_a_dynamixel_arm():
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    port = "dynamixelsim://?ids=1-6&model=xl430,6:xl330"
    argv = ["--arm", "so101", "--backend", "dynamixel", "--port", port, "jog", "0.2", "0", "0.15"]
    out = subprocess.run([sys.executable, "-m", "armctl", *argv], capture_output=True, text=True, env=env, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "jogged to (0.2, 0, 0.15) m" in out.stdout and "measured: servo encoders" in out.stdout, out.stdout
    assert "servo 6 (gripper): it runs in position mode (Operating_Mode 3)" in out.stderr  # no current cap: said
    assert "at 57600 baud one frame's goals and positions take 27 ms on the wire" in out.stderr  # the factory's baud


def test_a_blocked_joint_over_max_load_pct_stops_the_arm_in_one_line(tmp_path, capsys):
    """The load watched is Present_Current over the servo's Current_Limit (XM430s: they sense current)."""
    arm, cal = tmp_path / "arm.yaml", tmp_path / "cal.yaml"
    arm.write_text(ARM.replace("GRIP", "") + "max_load_pct: 50\n")
    cal.write_text(BUS_CAL)
    port = _port("model=xm430&stops=1:2555:2700")  # an obstacle 0.4 deg on from where the shoulder starts
    argv = ["--arm", str(arm), "--calibration", str(cal), "--backend", "dynamixel", "--port", port]
    assert main([*argv, "jog", "0.62", "-0.1", "--speed", "100"]) == 4
    err = capsys.readouterr().err
    assert err.count("\n") == 1, err
    assert "servo 1 (shoulder) reports" in err and "above max_load_pct 50% for 3 frames" in err, err


def test_a_koch_follows_a_koch_leader_of_dynamixels(tmp_path, capsys):
    """The leader's bus is the one its servos speak (the koch-leader's XL330s: Dynamixel, found at 57600 here), the
    follower's too: the follower ends where a hand left the leader."""
    cal = load_calibration(find_calibration("koch-leader"))
    rows = ["t_s,id,steps"]
    for t, q, g in ((0, [0, 82.2, -80.7, -1.5, 0], -60), (1.0, [20, 70, -70, -10, 30], -20)):
        rows += [f"{t},{s.id},{float(s.value(math.radians(a))):.2f}" for s, a in zip(cal.joints, q)]
        rows.append(f"{t},{cal.gripper.id},{float(cal.gripper.value(math.radians(g))):.2f}")
    hand = tmp_path / "hand.csv"
    hand.write_text("\n".join(rows) + "\n")
    leader = f"dynamixelsim://?hand={hand}&model=xl330"
    argv = ["--arm", "koch", "follow", "--leader", leader, "--leader-arm", "koch-leader", "--duration", "3"]
    assert main(argv) == 0, capsys.readouterr().err
    capsys.readouterr()
    assert main(["--arm", "koch", "status", "--json"]) == 0
    got = json.loads(capsys.readouterr().out)
    assert np.allclose(got["q_deg"], [20, 70, -70, -10, 30], atol=0.5), got["q_deg"]


def test_a_servo_over_max_temp_c_stops_the_arm_in_one_line(tmp_path, capsys):
    arm, cal = tmp_path / "arm.yaml", tmp_path / "cal.yaml"
    arm.write_text(ARM.replace("GRIP", "") + "max_temp_c: 60\n")
    cal.write_text(BUS_CAL)
    argv = ["--arm", str(arm), "--calibration", str(cal), "--backend", "dynamixel", "--port", _port("temp=65")]
    assert main([*argv, "jog", "0.62", "-0.1"]) == 4  # Present_Temperature 65 degC in a hot room
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "servo 1 (shoulder) is at 65 degC, above max_temp_c 60" in err, err
