"""The Robot on Feetech bus servos, against the simulated bus (feetechsim://).

A program lands within 1 mm, measured by the servos' own encoders; the same program sends the same joint
trajectory to a bus-servo arm as to a PWM one; a missing servo, a corrupt reply and a stalled joint each
stop with one line naming the servo; torque goes on only when a move starts, from where the servo is.
"""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

import numpy as np
import pytest

import armctl
from armctl.bus.feetech.client import SYNC_WRITE, take_packet
from armctl.calibration.servo import load_calibration
from armctl.cli import main
from armctl.core.paths import PRESET_CALIBRATION_DIR
from armctl.errors import LinkError
from tools import hil_compare as hc

ROOT = Path(__file__).resolve().parents[2]

PROGRAM = ROOT / "tests" / "golden" / "small_program.yaml"
BUS_CAL = """version: 1
arm: seed-3link
joints:
  - {name: shoulder, id: 1, zero_steps: 2048, direction: 1, min_steps: 1024, max_steps: 3072}
  - {name: elbow, id: 2, zero_steps: 2048, direction: -1, min_steps: 512, max_steps: 3584}
  - {name: wrist, id: 3, zero_steps: 2048, direction: 1, min_steps: 512, max_steps: 3584}
gripper: {name: gripper, id: 6, zero_steps: 1500, direction: 1, min_steps: 1600, max_steps: 2300}
"""


@pytest.fixture
def bus_cal(tmp_path):
    path = tmp_path / "seed-3link-bus.yaml"
    path.write_text(BUS_CAL)
    return path


def _port(extra: str = "") -> str:
    return "feetechsim://?ids=1,2,3,6&start=2560,3072,1536,2183&rate=1" + (f"&{extra}" if extra else "")


def test_a_program_lands_within_a_millimetre_measured_by_the_servos(bus_cal):
    with armctl.connect("seed-3link", _port(), calibration=bus_cal) as robot:
        assert robot.backend.name == "feetech"  # chosen by the calibration's unit
        start = robot.where()
        assert start.source == "measured" and start.detail == "servo encoders"
        assert start.q_deg == pytest.approx([45, -90, -45], abs=0.1)
        for target in ((0.5, 0.2), (0.62, -0.1), (0.35, 0.3)):
            res = robot.move_to(*target, speed=0.3).result
            pose = robot.where(settle=True)
            assert np.hypot(*(pose.tool_m - target)) < 1e-3, (target, pose)
            assert res.tracking_error_deg is not None and max(res.tracking_error_deg.values()) < 10
        robot.run(PROGRAM)
        end = robot.where(settle=True)
        assert np.hypot(*(end.tool_m - [0.52, -0.19])) < 1e-3


def test_torque_goes_on_when_a_move_starts_from_where_the_servo_is(bus_cal):
    with armctl.connect("seed-3link", _port(), calibration=bus_cal) as robot:
        sim = robot.backend.bus.serial.sim
        assert not any(sim.servo(i).torque_on for i in (1, 2, 3, 6))
        sim.turn_by_hand(1, 2300)  # someone moved the shoulder by hand while the torque was off
        before = robot.where()
        assert before.q_deg[0] == pytest.approx((2300 - 2048) / (4096 / 360), abs=0.1)
        robot.move_to(0.5, 0.0, speed=0.3)  # starts from the measured pose: no jump back to the old one
        assert all(sim.servo(i).torque_on for i in (1, 2, 3))
        goals = [p for _, p in sim.log if p.code == SYNC_WRITE]
        first = goals[0].params  # address, size, then (id, lo, hi) per servo
        shoulder = first[2:][first[2:].index(1) + 1 :][:2]
        assert abs(int.from_bytes(bytes(shoulder), "little") - 2300) <= 2


def test_a_program_sends_the_same_joint_trajectory_to_pwm_and_bus_servos(bus_cal, tmp_path):
    pwm_log, bus_log = tmp_path / "pwm.log", tmp_path / "bus.log"
    with armctl.connect("seed-3link", "armsim://?rate=20&seed=1", wire_log=pwm_log) as robot:
        robot.run(PROGRAM)
        pwm_cal = robot.calibration
    with armctl.connect("seed-3link", _port(), calibration=bus_cal, wire_log=bus_log) as robot:
        robot.run(PROGRAM)
        cal = robot.calibration
    pwm = np.array(
        [[f[s.channel] for s in pwm_cal.joints] for f in hc.commanded_frames(hc.host_bytes_from_wire_log(pwm_log))]
    )
    q_pwm = np.degrees(pwm_cal.values_to_joints(pwm))
    frames = []
    buf = bytearray(hc.host_bytes_from_wire_log(bus_log))
    goals: dict[int, int] = {}
    while (p := take_packet(buf)) is not None:
        if getattr(p, "code", None) == SYNC_WRITE and p.params[0] == 42:  # goal_position
            data = p.params[2:]
            for k in range(0, len(data), 3):
                goals[data[k]] = int.from_bytes(data[k + 1 : k + 3], "little")
            if all(s.id in goals for s in cal.joints):
                frames.append([goals[s.id] for s in cal.joints])
    q_bus = np.degrees(cal.values_to_joints(np.array(frames, dtype=float)))
    n = min(len(q_pwm), len(q_bus))
    assert n > 90 and abs(len(q_pwm) - len(q_bus)) <= 2  # the PWM board is first set where it is (1 frame)
    # frame by frame, to the two boards' resolutions (0.5 us = 0.07 deg, 1 step = 0.09 deg)
    assert np.max(np.abs(q_pwm[-n:] - q_bus[-n:])) < 0.1 + 0.07 + 0.09


@pytest.mark.parametrize(
    ("fault", "fragment"),
    [
        ("missing=2", "servo 2 (elbow)"),
        ("garble=3", "servo 3 (wrist)"),
        ("stall=1", "servo 1 (shoulder) is stalled"),
    ],
)
def test_faults_stop_with_one_line_naming_the_servo(bus_cal, capsys, fault, fragment):
    argv = ["--calibration", str(bus_cal), "--port", _port(fault), "jog", "0.5", "0.2", "--speed", "100"]
    assert main(argv) == 4
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and fragment in err, err


def test_a_missing_servo_is_refused_before_anything_moves(bus_cal):
    with pytest.raises(LinkError, match=r"servo 2 .*did not answer"):
        armctl.connect("seed-3link", _port("missing=2"), calibration=bus_cal)


def test_the_shipped_pwm_calibration_is_refused_on_a_bus(tmp_path, monkeypatch):
    with pytest.raises(armctl.errors.BadInputError, match="feetech backend drives serial bus servos"):
        armctl.connect("seed-3link", _port(), backend="feetech", calibration=PRESET_CALIBRATION_DIR / "seed-3link.yaml")


def test_release_lets_the_arm_be_guided_by_hand(bus_cal):
    with armctl.connect("seed-3link", _port(), calibration=bus_cal) as robot:
        robot.move_to(0.5, 0.1, speed=0.3)
        sim = robot.backend.bus.serial.sim
        robot.release()
        assert not any(sim.servo(i).torque_on for i in (1, 2, 3, 6))
        sim.turn_by_hand(2, 2100)
        assert robot.where().q_deg[1] == pytest.approx(-(2100 - 2048) / (4096 / 360), abs=0.1)
        res = robot.move_to(0.5, 0.1, speed=0.3).result  # from where the hand left it, torque back on
        assert res.ramp_frames == 0 and sim.servo(2).torque_on
        assert np.hypot(*(robot.where(settle=True).tool_m - [0.5, 0.1])) < 1e-3


def test_armsim_pwm_calibration_still_defaults_to_our_protocol(tmp_path, monkeypatch):
    with armctl.connect("seed-3link") as robot:
        assert robot.backend.name == "armctl" and load_calibration(robot.calibration_path).unit == "us"


def test_the_wire_log_has_the_bus_bytes(bus_cal, tmp_path):
    log = tmp_path / "wire.log"
    with armctl.connect("seed-3link", _port(), calibration=bus_cal, wire_log=log) as robot:
        robot.gripper("close")
    sent = [ast.literal_eval(line.split(None, 2)[2]) for line in log.read_text().splitlines() if " > " in line]
    assert sent and all(chunk.startswith(b"\xff\xff") for chunk in sent)


def test_an_arm_moved_out_of_range_by_hand_is_named_and_home_brings_it_back(bus_cal, capsys):
    """The shoulder turned by hand past its calibrated range: a line (jog) is refused with the joint named and
    what to do, not "needs a 3181 steps position... pick another target", and nothing moves; home (a joint move
    that only brings it back, as a keep-out zone is left) is allowed and brings it back in."""
    port = "feetechsim://?ids=1,2,3,6&start=3181,3072,1536,2183&rate=5"
    assert main(["--calibration", str(bus_cal), "--port", port, "jog", "0.5", "0.2"]) == 3
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "pick another target" not in err, err
    assert "outside its joint limits now: joint 1 (shoulder) is at 99.6 deg (3181 steps" in err, err
    assert "armctl home" in err and "this motion is not such a move" in err, err
    with armctl.connect("seed-3link", port, calibration=bus_cal) as robot:
        sim = robot.backend.bus.serial.sim
        assert not sim.servo(1).torque_on  # the jog moved nothing
        robot.home()
        lo, hi = robot.calibration.joints[0].min_steps, robot.calibration.joints[0].max_steps
        assert lo <= sim.servo(1).present_steps() <= hi
        assert robot.backend.goal[1] is not None and lo <= robot.backend.goal[1] <= hi


@pytest.mark.parametrize("seed", [3, 9, 11])
def test_a_program_completes_and_lands_at_5_percent_packet_loss(bus_cal, capsys, seed):
    """drop=0.05: one packet in twenty lost each way. A lost position reply only makes the feedback late,
    a lost goal frame is followed by the next one, and the last goals are sent again until the servos are
    there: the program completes and lands within 1 mm, measured by the servos."""
    port = _port(f"drop=0.05&seed={seed}")
    argv = ["--calibration", str(bus_cal), "--port", port, "run", str(PROGRAM), "--json"]
    assert main(argv) == 0, capsys.readouterr().err
    report = json.loads(capsys.readouterr().out)
    assert report["error_m"] < 1e-3, report
    joints = {k: v for k, v in report["tracking_error_deg"].items() if k != "gripper"}  # the gripper snaps shut
    assert max(joints.values()) < 5, report["tracking_error_deg"]


def test_a_servo_that_stops_answering_mid_motion_is_a_lost_link_named_in_one_line(bus_cal):
    """Unplugged while the program plays: its late replies are tolerated for LOST_FRAMES frames, then the
    motion stops with one line naming the servo (exit 4 on the command line: a LinkError)."""
    from armctl.bus.feetech.backend import LOST_FRAMES

    state = {}

    def progress(fraction, step, left_s):
        if fraction > 0.3 and "sent" not in state:
            sim = state["robot"].backend.bus.serial.sim
            sim.servos.remove(sim.servo(2))  # the elbow's cable comes out
            state["sent"] = sum(1 for _, p in sim.log if p.code == SYNC_WRITE)

    with armctl.connect("seed-3link", _port(), calibration=bus_cal, progress=progress) as robot:
        state["robot"] = robot
        with pytest.raises(LinkError) as info:
            robot.run(PROGRAM)
        sim = robot.backend.bus.serial.sim
        after = sum(1 for _, p in sim.log if p.code == SYNC_WRITE) - state["sent"]
    text = str(info.value)
    assert "\n" not in text and "servo 2 (elbow)" in text and "the link is lost" in text, text
    assert LOST_FRAMES - 2 <= after <= LOST_FRAMES + 3  # the stream went on while its feedback was late


def test_status_in_a_fresh_process_reads_the_goals_and_each_servos_state(tmp_path, monkeypatch, capsys):
    """The servos stay powered between runs: status in a new process shows the goals they hold (read from
    them, not '-') and each servo's position, load, voltage and temperature."""
    assert main(["--arm", "so101", "jog", "0.2", "0.0", "0.15"]) == 0
    capsys.readouterr()
    assert main(["--arm", "so101", "status", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["tool_m"] == pytest.approx([0.2, 0.0, 0.15], abs=1e-3)
    assert [s["name"] for s in report["servos"]] == [
        "shoulder_pan",
        "shoulder_lift",
        "elbow_flex",
        "wrist_flex",
        "wrist_roll",  # a joint, the last
        "gripper",
    ]
    assert "held_at_steps" not in report["servos"][4]
    for s in report["servos"]:
        assert s["torque"] and s["goal_steps"] == pytest.approx(s["position_steps"], abs=2), s
        assert report["widths_us"][report["servo_channels"].index(s["id"])] == s["goal_steps"]
        assert 7.0 < s["voltage_v"] <= 7.4 and 20 <= s["temperature_c"] <= 70 and abs(s["load_fraction"]) <= 1
    assert main(["--arm", "so101", "status"]) == 0
    out = capsys.readouterr().out
    assert " - " not in out.splitlines()[0], out
    assert re.search(r"shoulder_lift\s+id 2\s+position\s+\d+ goal\s+\d+ steps\s+torque on\s+load\s+-?[\d.]+ %", out)
