"""LeRobot's own KochFollower writes a calibration (``_save_calibration``) and reads raw positions through it
(``DynamixelMotorsBus._normalize``, DEGREES for the body, 0..100 % for the gripper); armctl, given that file, reads
the same positions as the same URDF joint angles (the koch preset) and the same gripper opening. In the LeRobot
virtualenv; ``dynamixel_sdk`` is stood in for when the virtualenv lacks it (no bus is opened: only LeRobot's
calibration and normalisation code runs)."""

from __future__ import annotations

import json
import math
import subprocess

import numpy as np
import pytest

from armctl.calibration.lerobot import open_calibration
from armctl.model.arm import load_arm
from armctl.model.urdf.derive import urdf_angles
from tests.calibration.test_lerobot_koch import FOLLOWER
from tests.lerobot.conftest import lerobot_env

LEROBOT_SIDE = r"""
import json, sys, types
try:
    import dynamixel_sdk  # noqa: F401
except ImportError:  # the serial SDK only: LeRobot's bus builds its handlers, never uses them here
    sys.modules["dynamixel_sdk"] = types.SimpleNamespace(
        PortHandler=lambda *a: None, PacketHandler=lambda *a: None, GroupSyncRead=lambda *a: None,
        GroupSyncWrite=lambda *a: None, COMM_SUCCESS=0)
from pathlib import Path
from lerobot.motors import MotorCalibration
from lerobot.robots.koch_follower import KochFollower, KochFollowerConfig
out, spec = Path(sys.argv[1]), json.loads(sys.argv[2])
robot = KochFollower(KochFollowerConfig(port="/dev/null", id="my_koch", calibration_dir=out, use_degrees=True))
robot.calibration = {n: MotorCalibration(**m) for n, m in spec["cal"].items()}
robot._save_calibration()
robot.bus.calibration = robot.calibration
ids = {n: robot.bus.motors[n].id for n in spec["raw"]}
print(json.dumps({n: [robot.bus._normalize({ids[n]: r})[ids[n]] for r in raws] for n, raws in spec["raw"].items()}))
"""


def test_armctl_reads_a_koch_calibration_as_lerobot_does(venv_bin, tmp_path):
    arm = load_arm("koch")
    rng = np.random.default_rng(8)
    raw = {n: [int(v) for v in rng.integers(m["range_min"], m["range_max"] + 1, 6)] for n, m in FOLLOWER.items()}
    run = subprocess.run(
        [venv_bin / "python", "-c", LEROBOT_SIDE, str(tmp_path), json.dumps({"cal": FOLLOWER, "raw": raw})],
        capture_output=True, text=True, timeout=300, env=lerobot_env(),
    )  # fmt: skip
    assert run.returncode == 0, run.stderr[-2000:]
    lerobot = json.loads(run.stdout.strip().splitlines()[-1])
    written = tmp_path / "my_koch.json"
    assert json.loads(written.read_text()) == FOLLOWER  # LeRobot's file holds what it was given
    cal, _, _ = open_calibration(written, arm)
    servos = {s.name: s for s in cal.joints}
    closed, opened = math.degrees(arm.gripper.closed_rad), math.degrees(arm.gripper.open_rad)
    for k in range(6):
        q = np.array([float(servos[n].angle_rad(raw[n][k])) for n in arm.joint_names])
        urdf_deg = {n: math.degrees(v) for n, v in urdf_angles(arm, q).items()}
        for n in arm.joint_names:
            assert urdf_deg[n] == pytest.approx(lerobot[n][k], abs=1e-6), (n, raw[n][k])
        g = math.degrees(float(cal.gripper.angle_rad(raw["gripper"][k])))
        assert g == pytest.approx(closed + lerobot["gripper"][k] / 100 * (opened - closed), abs=1e-6)
