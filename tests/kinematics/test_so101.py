"""The so101 preset: its example calibration and program fit the arm, and the program's picks and places
land within 1 mm on the simulated Feetech bus, measured by the servos' own encoders."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

import armctl
from armctl.calibration.servo import load_calibration
from armctl.cli import main
from armctl.core.paths import PRESET_CALIBRATION_DIR
from armctl.model.arm import load_arm
from armctl.program import load_program

ROOT = Path(__file__).resolve().parents[2]
PROGRAM = ROOT / "examples" / "pick_and_place_so101.yaml"
PORT = "feetechsim://?ids=1-6"  # LeRobot's ids; the wrist roll (5) a joint


def test_the_calibration_reads_2048_at_the_urdf_zero_pose():
    arm = load_arm("so101")
    cal = load_calibration(PRESET_CALIBRATION_DIR / "so101.yaml")
    cal.check_arm(arm)
    assert cal.unit == "steps" and [s.id for s in cal.joints] == [1, 2, 3, 4, 5] and cal.gripper.id == 6
    assert not cal.held  # the wrist roll (5) is a joint
    # the URDF's zero pose in armctl's angles (forearm level, wrist 5 deg down, roll 0), as the importer derives it
    zero = [off for _, off, _ in arm.urdf_map]
    assert np.degrees(zero) == pytest.approx([0, 76.0, -73.8, -5.0, 0.0], abs=0.05)
    steps = cal.joints_to_values(np.array(zero))
    assert steps == pytest.approx([2048] * 5, abs=0.01)
    # steps grow with the URDF angle on every joint (LeRobot's convention): 2048 + 4096/360 * URDF deg
    urdf_deg = np.array([10.0, -20.0, 30.0, -40.0, 50.0])
    steps = cal.joints_to_values(
        np.array([off + s * math.radians(u) for (_, off, s), u in zip(arm.urdf_map, urdf_deg)])
    )
    assert steps == pytest.approx(2048 + 4096 / 360 * urdf_deg, abs=0.01)
    # the ranges in steps are the arm's joint ranges
    lo, hi = cal.joints_to_values(arm.q_min, check=False), cal.joints_to_values(arm.q_max, check=False)
    for s, a, b in zip(cal.joints, lo, hi):
        assert min(a, b) == pytest.approx(s.min_steps, abs=1) and max(a, b) == pytest.approx(s.max_steps, abs=1)


def test_the_example_program_plans(capsys):
    assert main(["plan", str(PROGRAM)]) == 0, capsys.readouterr().err


def test_picks_and_places_land_within_1mm_measured_by_the_servos():
    prog = load_program(PROGRAM)
    targets = [p for p in prog.poses.values() if p.point_m is not None]
    assert len(targets) == 6
    with armctl.connect("so101", PORT) as robot:
        assert robot.backend.name == "feetech"
        assert robot.where().source == "measured"
        for pose in targets:
            x, y, z = pose.point_m
            robot.move_to(x, y, z + 0.03, phi=pose.phi_rad, path="joint")
            robot.move_to(x, y, z, phi=pose.phi_rad, speed=0.1)
            got = robot.where(settle=True)
            assert got.source == "measured"
            assert np.linalg.norm(got.tool_m - pose.point_m) < 1e-3, (pose.name, got)
            assert math.degrees(got.phi_rad) == pytest.approx(-90, abs=0.5), pose.name
