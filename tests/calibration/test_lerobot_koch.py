"""LeRobot's calibration of a Koch v1.1 (koch_follower, koch_leader; LeRobot >= 0.3's layout, written as LeRobot writes
it: draccus, a JSON object per motor, 4-space indent) read as the SO-101's: each joint's angle is LeRobot's degrees
(about the middle of the recorded range) fed into the koch URDF; the Dynamixel homing offset (present = actual +
offset, up to +-1,044,479) kept only to compare with the servo; drive_mode the servo's own (the leader's reversed
elbow), not applied again; shoulder_pan and wrist_roll recorded 0..4095 (never swept) with their zero the middle;
lerobot:ID found under robots/koch_follower/ and teleoperators/koch_leader/; bad files one line, exit 2."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import armctl
from armctl.calibration.lerobot import open_calibration
from armctl.model.arm import load_arm
from armctl.model.urdf.derive import urdf_angles

ROOT = Path(armctl.__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "lerobot"

#: a follower's calibration as LeRobot's KochFollower.calibrate() ends it: half-turn homings (2047 - the position
#: at the middle, in extended position mode: beyond a Feetech's 11 bits), the pan and roll 0..4095, drive_mode 0
FOLLOWER = {
    "shoulder_pan": {"id": 1, "drive_mode": 0, "homing_offset": -1024, "range_min": 0, "range_max": 4095},
    "shoulder_lift": {"id": 2, "drive_mode": 0, "homing_offset": 3120, "range_min": 1010, "range_max": 3090},
    "elbow_flex": {"id": 3, "drive_mode": 0, "homing_offset": -6190, "range_min": 1105, "range_max": 2993},
    "wrist_flex": {"id": 4, "drive_mode": 0, "homing_offset": 95, "range_min": 905, "range_max": 3201},
    "wrist_roll": {"id": 5, "drive_mode": 0, "homing_offset": -40, "range_min": 0, "range_max": 4095},
    "gripper": {"id": 6, "drive_mode": 0, "homing_offset": 1407, "range_min": 2027, "range_max": 3447},
}
#: a leader's: KochLeader.calibrate() reverses elbow_flex in the servo (drive_mode 1)
LEADER = {**FOLLOWER, "elbow_flex": {**FOLLOWER["elbow_flex"], "drive_mode": 1}}


def write_like_lerobot(path: Path, motors: dict) -> Path:
    """``draccus.dump(calibration, f, indent=4)`` of LeRobot's ``Robot._save_calibration``: the same JSON."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(motors, indent=4))
    return path


def lerobot_deg(steps: float, m: dict) -> float:
    """LeRobot's DEGREES of a raw position: (raw - mid) * 360 / 4095 (MotorsBus._normalize; no drive_mode)."""
    return (steps - (m["range_min"] + m["range_max"]) / 2) * 360 / 4095


@pytest.fixture
def hf(tmp_path, monkeypatch):
    root = tmp_path / "hf" / "calibration"
    write_like_lerobot(root / "robots" / "koch_follower" / "my_koch.json", FOLLOWER)
    write_like_lerobot(root / "teleoperators" / "koch_leader" / "my_leader.json", LEADER)
    so = json.loads((FIXTURES / "so_follower" / "my_arm.json").read_text())
    write_like_lerobot(root / "robots" / "so_follower" / "my_so.json", so)
    monkeypatch.setenv("HF_LEROBOT_CALIBRATION", str(root))
    return root


@pytest.mark.parametrize(("arm_name", "spec", "motors"), [
    ("koch", "lerobot:my_koch", FOLLOWER),
    ("koch-leader", "lerobot:my_leader", LEADER),
])  # fmt: skip
def test_joint_angles_are_lerobots_degrees_through_the_koch_urdf(hf, arm_name, spec, motors):
    arm = load_arm(arm_name)
    cal, path, notes = open_calibration(spec, arm)
    assert notes == [] and path.parent.parent.name in ("robots", "teleoperators")
    cal.check_arm(arm)  # steps_follow_urdf: every direction the URDF's sign, the leader's reversed elbow too
    assert [s.name for s in cal.joints] == list(arm.joint_names) and [s.id for s in cal.joints] == [1, 2, 3, 4, 5]
    for k, ((name, offset_rad, sign), servo) in enumerate(zip(arm.urdf_map, cal.joints)):
        m = motors[name]
        assert servo.homing_offset == m["homing_offset"] and servo.direction == sign
        if name in ("shoulder_pan", "wrist_roll"):  # 0..4095: the middle is the zero, the range the URDF's limits
            ends = sorted(2047.5 + sign * 4095 / 360 * math.degrees(a) for a in (arm.q_min[k], arm.q_max[k]))
            assert (servo.min_steps, servo.max_steps) == (max(0, math.ceil(ends[0])), min(4095, math.floor(ends[1])))
        else:
            assert (servo.min_steps, servo.max_steps) == (m["range_min"], m["range_max"])
        for steps in np.linspace(max(servo.min_steps, m["range_min"]), min(servo.max_steps, m["range_max"]), 7):
            q = math.degrees(float(servo.angle_rad(steps)))
            assert q == pytest.approx(math.degrees(offset_rad) + sign * lerobot_deg(steps, m), abs=1e-9)
            assert float(servo.value(math.radians(q))) == pytest.approx(steps, abs=1e-9)


def test_the_urdf_angles_are_lerobots_degrees(hf):
    """At any raw positions, armctl's joint angles through the koch URDF's map are LeRobot's degrees."""
    arm = load_arm("koch")
    cal, _, _ = open_calibration("lerobot:my_koch", arm)
    rng = np.random.default_rng(2)
    for _ in range(20):
        raw = [rng.uniform(s.min_steps, s.max_steps) for s in cal.joints]
        q = np.array([float(s.angle_rad(r)) for s, r in zip(cal.joints, raw)])
        got = urdf_angles(arm, q)
        for s, r in zip(cal.joints, raw):
            assert math.degrees(got[s.name]) == pytest.approx(lerobot_deg(r, FOLLOWER[s.name]), abs=1e-9)


def test_the_gripper_is_lerobots_percent_whatever_its_drive_mode(hf, tmp_path):
    """LeRobot's Dynamixel bus never applies drive_mode (the servo reverses itself): 0 % at range_min is closed."""
    arm = load_arm("koch")
    closed, opened = math.degrees(arm.gripper.closed_rad), math.degrees(arm.gripper.open_rad)
    for mode in (0, 1):
        motors = {**FOLLOWER, "gripper": {**FOLLOWER["gripper"], "drive_mode": mode}}
        path = write_like_lerobot(
            tmp_path / "hf" / "calibration" / "robots" / "koch_follower" / f"g{mode}.json", motors
        )
        g = open_calibration(path, arm)[0].gripper
        m = motors["gripper"]
        for steps in np.linspace(m["range_min"], m["range_max"], 5):
            pct = (steps - m["range_min"]) / (m["range_max"] - m["range_min"]) * 100
            assert math.degrees(float(g.angle_rad(steps))) == pytest.approx(closed + pct / 100 * (opened - closed))
        assert (g.id, g.min_steps, g.max_steps, g.homing_offset) == (6, 2027, 3447, 1407)


@pytest.mark.parametrize(("arm_name", "spec", "fragment"), [
    ("koch", "robots/so_follower/my_so.json", "a calibration of LeRobot's so_follower, not of a Koch v1.1 arm"),
    ("so101", "robots/koch_follower/my_koch.json", "a calibration of LeRobot's koch_follower, not of an SO-100/SO-101"),
    ("koch", "lerobot:my_so", "no LeRobot calibration 'my_so' under"),
    ("omx", "robots/koch_follower/my_koch.json", "not of an OpenManipulator-X"),
    ("koch", str(FIXTURES / "legacy" / "main_follower.json"), "a legacy LeRobot calibration (before June 2025)"),
    ("koch", "big", "elbow_flex.homing_offset: expected a whole number in -1044479..1044479"),
])  # fmt: skip
def test_bad_koch_calibrations_get_one_line_and_exit_2(hf, tmp_path, arm_name, spec, fragment):
    if spec == "big":
        motors = {**FOLLOWER, "elbow_flex": {**FOLLOWER["elbow_flex"], "homing_offset": 1_100_000}}
        spec = str(write_like_lerobot(hf / "robots" / "koch_follower" / "big.json", motors))
    elif spec.startswith("robots/"):
        spec = str(hf / spec)
    run = subprocess.run(
        [sys.executable, "-m", "armctl", "--arm", arm_name, "--calibration", spec, "status"],
        capture_output=True, text=True, timeout=120, cwd=tmp_path,
        env={**__import__("os").environ, "PYTHONPATH": str(ROOT), "HF_LEROBOT_CALIBRATION": str(hf)},
    )  # fmt: skip
    assert run.returncode == 2 and run.stdout == "", run
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1 and fragment in lines[0] and "Traceback" not in run.stderr, run.stderr


def test_from_lerobot_lists_the_koch_ids(hf, tmp_path):
    """``armctl --arm koch calibrate --from-lerobot`` looks where LeRobot keeps a Koch's calibrations."""
    run = subprocess.run(
        [sys.executable, "-m", "armctl", "--arm", "koch", "calibrate", "--from-lerobot"],
        capture_output=True, text=True, timeout=120, cwd=tmp_path,
        env={**__import__("os").environ, "PYTHONPATH": str(ROOT), "HF_LEROBOT_CALIBRATION": str(hf)},
    )  # fmt: skip
    assert run.returncode == 2, run
    assert "my_koch (in robots/koch_follower); my_leader (in teleoperators/koch_leader)" in run.stderr, run.stderr
