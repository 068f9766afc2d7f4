"""Two servos on one address are refused wherever a calibration comes from (armctl's YAML, LeRobot's JSON, one made
in code): one line naming the file, both servos and the id (bus servos) or channel or pin (PWM), exit 2, before
any port is opened: for the follower (``--calibration``) and the leader (``follow --leader-calibration``)."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import armctl
from armctl.calibration.files import load_calibration
from armctl.calibration.lerobot import open_calibration
from armctl.errors import ConfigError
from armctl.model.arm import load_arm
from tests.calibration.test_lerobot_koch import FOLLOWER, LEADER

ROOT = Path(armctl.__file__).resolve().parents[1]
PRESETS = ROOT / "armctl" / "presets" / "calibration"
HELD = "{name: cam, id: 6, position_steps: 2048}"  # a held servo on the gripper's id


def _json(path: Path, motors: dict, **ids) -> Path:
    """LeRobot's calibration ``motors`` with the motors named in ``ids`` moved to those ids."""
    path.write_text(json.dumps({k: {**m, "id": ids.get(k, m["id"])} for k, m in motors.items()}, indent=4))
    return path


def _armctl(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "ARMCTL_STATE_DIR": str(tmp_path / "state")}
    return subprocess.run(
        [sys.executable, "-m", "armctl", *args], capture_output=True, text=True, timeout=120, cwd=tmp_path, env=env
    )


def test_a_lerobot_calibration_with_two_motors_on_one_id_is_refused(tmp_path):
    path = _json(tmp_path / "koch.json", FOLLOWER, elbow_flex=2)
    with pytest.raises(ConfigError) as err:
        open_calibration(str(path), load_arm("koch"))
    assert str(err.value) == f"{path}: servos 'shoulder_lift' and 'elbow_flex' share id 2"


def test_an_so101_lerobot_calibration_with_the_gripper_on_a_joints_id_is_refused(tmp_path):
    motors = json.loads((ROOT / "tests" / "lerobot" / "so_follower" / "my_arm.json").read_text())
    path = _json(tmp_path / "so.json", motors, gripper=motors["wrist_roll"]["id"])
    with pytest.raises(ConfigError, match=rf"servos 'wrist_roll' and 'gripper' share id {motors['wrist_roll']['id']}"):
        open_calibration(str(path), load_arm("so101"))


@pytest.mark.parametrize(
    ("preset", "old", "new", "words"),
    [
        ("koch.yaml", "elbow_flex, id: 3", "elbow_flex, id: 2", "servos 'shoulder_lift' and 'elbow_flex' share id 2"),
        ("so101.yaml", "arm: so101", f"arm: so101\nhold:\n  - {HELD}", "'gripper' and 'cam' share id 6"),
        ("mearm.yaml", "pin: 10", "pin: 9", "share pin 9"),  # two PWM servos on one Arduino pin
        ("mearm.yaml", "channel: 1", "channel: 0", "share channel 0"),
    ],
)  # fmt: skip
def test_a_yaml_with_two_servos_on_one_id_channel_or_pin_is_refused(tmp_path, preset, old, new, words):
    text = (PRESETS / preset).read_text()
    assert old in text
    path = tmp_path / preset
    path.write_text(text.replace(old, new, 1))
    with pytest.raises(ConfigError, match=words) as err:
        load_calibration(path)
    assert str(err.value).startswith(str(path))


def test_a_calibration_changed_in_code_is_checked_too():
    cal = load_calibration(PRESETS / "koch.yaml")
    joints = (*cal.joints[:2], dataclasses.replace(cal.joints[2], id=cal.joints[1].id), *cal.joints[3:])
    with pytest.raises(ConfigError, match=rf"servos '{cal.joints[1].name}' and '{cal.joints[2].name}' share id"):
        dataclasses.replace(cal, joints=joints)


def test_armctl_refuses_the_follower_calibration_with_exit_2_and_opens_nothing(tmp_path):
    path = _json(tmp_path / "koch.json", FOLLOWER, elbow_flex=2)
    run = _armctl(tmp_path, "--arm", "koch", "--calibration", str(path), "status")
    assert run.returncode == 2, run
    assert run.stderr.strip().splitlines() == [
        f"armctl status: error: {path}: servos 'shoulder_lift' and 'elbow_flex' share id 2"
    ]
    assert not any((tmp_path / "state").rglob("*.json")), "a simulated bus was opened and its state saved"


@pytest.mark.parametrize("kind", ["json", "yaml"])
def test_follow_refuses_the_leader_calibration_with_exit_2(tmp_path, kind):
    follower = _json(tmp_path / "follower.json", FOLLOWER)
    if kind == "json":
        leader = _json(tmp_path / "leader.json", LEADER, elbow_flex=2)
    else:
        leader = tmp_path / "leader.yaml"
        text = (PRESETS / "koch-leader.yaml").read_text()
        leader.write_text(text.replace("elbow_flex, id: 3", "elbow_flex, id: 2"))
    leader_bus = tmp_path / "leader-bus.json"
    port = f"dynamixelsim://?ids=1-6&baud=1000000&state={leader_bus}"
    args = ["--arm", "koch", "--calibration", str(follower), "follow", "--leader", port, "--duration", "1"]
    run = _armctl(tmp_path, *args, "--leader-calibration", str(leader))
    assert run.returncode == 2, run
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1 and f"{leader}: servos 'shoulder_lift' and 'elbow_flex' share id 2" in lines[0], lines
    assert not leader_bus.exists() and not any((tmp_path / "state").rglob("*.json")), "a port was opened"
