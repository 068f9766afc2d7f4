"""lerobot_robot_armctl's actions (plugins/lerobot_robot_armctl/.../actions.py) on the simulated MeArm, without
LeRobot: an action inside every limit is followed; one outside a joint's limits, out of reach or into a keep-out
zone is refused, the arm holds where it is, the refusal is counted and logged once per run of them; malformed
actions are one line. ``ArmFeatures.pose`` inverts the recorded values (LeRobot's SO-101 units included)."""

from __future__ import annotations

import importlib.util
import logging
import math
import time
from pathlib import Path

import numpy as np
import pytest

import armctl
from armctl.calibration.servo import find_calibration, load_calibration
from armctl.dataset.recorder import arm_features
from armctl.errors import BadInputError
from armctl.model.arm import load_arm
from armctl.model.kinematics import tool_point

ROOT = Path(__file__).resolve().parents[2]
ACTIONS = ROOT / "plugins" / "lerobot_robot_armctl" / "lerobot_robot_armctl" / "actions.py"


def _load_actions():
    spec = importlib.util.spec_from_file_location("armctl_lerobot_actions", ACTIONS)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


actions = _load_actions()


def start(robot, map="joints"):  # noqa: A002
    return actions.follow_actions(robot, map=map)


def commanded_deg(src):
    return np.degrees(src.q_cmd)


def wait_at(src, q_deg, tol=0.3, timeout=8.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if np.max(np.abs(commanded_deg(src) - q_deg)) < tol:
            return
        time.sleep(0.02)
    raise AssertionError(f"commanded {commanded_deg(src)} never reached {q_deg}")


def mearm_action(base, shoulder, elbow, gripper=50.0):
    return {"base.pos": base, "shoulder.pos": shoulder, "elbow.pos": elbow, "gripper.pos": gripper}


def test_accepted_then_refused_actions_hold_and_are_logged_once(caplog):
    caplog.set_level(logging.WARNING, logger="armctl.lerobot")
    with armctl.connect("mearm") as robot:
        src, m = start(robot)
        sent = src.offer(mearm_action(20, 80, 10, 40))
        assert sent == mearm_action(20, 80, 10, 40)
        wait_at(src, [20, 80, 10])
        time.sleep(0.5)  # the servos measured (the simulated board's) catch up
        obs = src.observation()
        assert obs["base.pos"] == pytest.approx(20, abs=0.3) and obs["gripper.pos"] == pytest.approx(40, abs=1)
        for _ in range(5):  # base 120 deg: past its 75 deg limit, five frames in a row
            held = src.offer(mearm_action(120, 80, 10))
            assert held["base.pos"] == pytest.approx(20, abs=0.3)  # what the arm goes to: where it is
        time.sleep(0.3)
        assert np.max(np.abs(commanded_deg(src) - [20, 80, 10])) < 0.3  # held, not clipped to 75
        assert src.held_actions == 5 and src.accepted == 1
        lines = [r.getMessage() for r in caplog.records]
        assert len(lines) == 1 and "base 120.0 deg is outside its limits" in lines[0] and "(1 held so far)" in lines[0]
        src.offer(mearm_action(-10, 70, 0))
        wait_at(src, [-10, 70, 0])
        src.offer(mearm_action(0, 70, 90))  # the elbow now: a second run, a second line
        assert len(caplog.records) == 2 and "elbow" in caplog.records[1].getMessage()
        assert "(6 held so far)" in caplog.records[1].getMessage() and src.held_actions == 6
        assert src.last_refusal.startswith("elbow 90.0 deg")
        m.cancel()


def zoned_mearm(tmp_path, q_deg):
    """The MeArm with a 40 mm box about its tool point at pose ``q_deg``."""
    arm = load_arm("mearm")
    p = tool_point(arm, np.radians(q_deg)) * 1000
    text = (ROOT / "armctl" / "presets" / "mearm.yaml").read_text()
    lo, hi = [round(float(c) - 20) for c in p], [round(float(c) + 20) for c in p]
    text += f"zones:\n  boxes:\n    - {{name: cup, min_mm: {lo}, max_mm: {hi}}}\n"
    path = tmp_path / "mearm.yaml"
    path.write_text(text)
    return path


def test_an_action_into_a_keep_out_zone_is_refused(tmp_path):
    arm_file = zoned_mearm(tmp_path, [30, 45, -30])
    cal = find_calibration("mearm")
    with armctl.connect(arm_file, calibration=cal) as robot:
        src, m = start(robot)
        src.offer(mearm_action(0, 90, 0))
        wait_at(src, [0, 90, 0])
        src.offer(mearm_action(30, 45, -30))
        assert src.held_actions == 1 and "box 'cup'" in src.last_refusal
        time.sleep(0.2)
        assert np.max(np.abs(commanded_deg(src) - [0, 90, 0])) < 0.3
        m.cancel()


def test_tool_actions_reachable_followed_unreachable_refused():
    with armctl.connect("mearm") as robot:
        src, m = start(robot, map="tool")
        assert src.names == ("x", "y", "z", "gripper")
        q = np.radians([25, 70, -10])
        x, y, z = tool_point(robot.arm, q)
        src.offer({"x": x, "y": y, "z": z, "gripper": 100})
        assert src.accepted == 1 and src.held_actions == 0
        wait_at(src, np.degrees(q), tol=0.5)
        assert src.observation()["gripper.pos"] == pytest.approx(100, abs=1)
        src.offer({"x": 0.6, "y": 0.0, "z": 0.0, "gripper": 100})  # 0.6 m: beyond the MeArm's ~0.23 m
        assert src.held_actions == 1 and "out of reach" in src.last_refusal
        src.offer({"x": x, "y": y, "z": z, "gripper": 130})
        assert src.held_actions == 2 and "gripper 130.00 outside 0..100" in src.last_refusal
        time.sleep(0.2)
        assert np.max(np.abs(commanded_deg(src) - np.degrees(q))) < 0.5
        m.cancel()


def test_bad_actions_and_maps_are_one_line():
    arm = load_arm("mearm")
    cal = load_calibration(find_calibration("mearm"))
    src = actions.ActionSource(arm, cal, arm_features(arm, cal), [0, 1.5, 0], 0.0)
    with pytest.raises(BadInputError, match="'elbow.pos', 'gripper.pos' missing"):
        src.offer({"base.pos": 0, "shoulder.pos": 90})
    so101 = {f"{n}.pos": 0.0 for n in ("shoulder_pan", "shoulder_lift", "elbow_flex", "wrist_flex", "gripper")}
    with pytest.raises(BadInputError, match="'base.pos', 'shoulder.pos', 'elbow.pos' missing; extra shoulder_pan.pos"):
        src.offer(so101)  # a dataset recorded on an SO-101, replayed on a MeArm: nothing moves
    with pytest.raises(BadInputError, match="'base.pos': a number, got 'left'"):
        src.offer(mearm_action("left", 90, 0))
    flat = load_arm("seed-2link")
    fcal = load_calibration(find_calibration("seed-2link"))
    with pytest.raises(BadInputError, match="works in a plane"):
        actions.ActionSource(flat, fcal, arm_features(flat, fcal), [0, 0], math.nan, map="tool")
    with pytest.raises(BadInputError, match="'joints' or 'tool'"):
        actions.ActionSource(arm, cal, arm_features(arm, cal), [0, 1.5, 0], 0.0, map="ee")


@pytest.mark.parametrize("name", ["so101", "mearm", "braccio"])
def test_feature_values_and_pose_are_inverse(name):
    arm = load_arm(name)
    cal = load_calibration(find_calibration(name))
    feats = arm_features(arm, cal)
    rng = np.random.default_rng(3)
    for _ in range(20):
        q = rng.uniform(arm.q_min, arm.q_max)
        g = rng.uniform(arm.gripper.closed_rad, arm.gripper.open_rad)
        q2, g2, _ = feats.pose(feats.values(q, g))
        assert np.allclose(q2, q, atol=1e-9) and g2 == pytest.approx(g, abs=1e-9)
    if name == "so101":  # LeRobot's names and units (the gripper over its calibrated range, 0..100)
        assert feats.robot_type == "so_follower" and feats.names[0] == "shoulder_pan.pos"
        lo, hi = cal.gripper.angle_rad(cal.gripper.lo), cal.gripper.angle_rad(cal.gripper.hi)
        assert sorted(float(feats.values(arm.home_rad, g)[-1]) for g in (lo, hi)) == pytest.approx([0, 100])
