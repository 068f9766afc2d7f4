"""The koch, koch-leader and omx presets agree with their URDFs: armctl's tool point (and, on the Koch's wrist roll,
its tool frame) against an independent URDF FK (yourdfpy, meshes off) of the tool link at random angles inside the
limits, through the derivation's frame shift; the IK round trips; the figures the sidecars give (servos, speeds,
home, gripper) and what the importer derived from the URDFs (directions, zero pose, the OMX's prismatic fingers)."""

from __future__ import annotations

import math
import xml.etree.ElementTree as ET

import numpy as np
import pytest

import armctl.ik
from armctl.core.paths import PRESET_DIR, preset_names
from armctl.errors import ConfigError
from armctl.model.arm import load_arm
from armctl.model.servos import MODELS, PROTOCOLS
from armctl.model.urdf.derive import urdf_angles
from tests.helpers import require
from tests.kinematics.oracles import urdf_fk_disagreement

try:
    import yourdfpy
except ImportError:  # pragma: no cover - the test extra installs it
    yourdfpy = None

PRESETS = ["koch", "koch-leader", "omx"]
KOCH_JOINTS = ("shoulder_pan", "shoulder_lift", "elbow_flex", "wrist_flex", "wrist_roll")


def _yourdfpy(path):
    require(yourdfpy is not None, "yourdfpy (pip install -e '.[test]')")
    return yourdfpy.URDF.load(str(path), load_meshes=False, load_collision_meshes=False, build_scene_graph=True)


def _random_poses(arm, n, seed):
    return np.random.default_rng(seed).uniform(arm.q_min, arm.q_max, size=(n, arm.n))


@pytest.mark.parametrize("name", PRESETS)
def test_the_presets_agree_with_their_urdfs_within_0_1_mm(name):
    arm = load_arm(name)
    robot = _yourdfpy(PRESET_DIR / f"{name}.urdf")
    pos, ang = urdf_fk_disagreement(arm, robot, _random_poses(arm, 400, 11))
    print(f"{name} vs yourdfpy, 400 poses: {pos * 1000:.2e} mm, {ang:.2e} deg")
    assert pos < 1e-4  # the 0.1 mm; the derivation is exact (about 1e-12 m)
    assert pos < 1e-9 and ang < 1e-6


@pytest.mark.parametrize("name", PRESETS)
def test_ik_round_trips(name):
    arm = load_arm(name)
    rng = np.random.default_rng(3)
    worst = 0.0
    qs = _random_poses(arm, 150, 4)
    for q in qs:
        p, pitch = arm.tool_point(q), float(arm.tool_pitch(q))
        q_near = np.clip(q + rng.normal(0, 0.05, arm.n), arm.q_min, arm.q_max)
        roll = float(q[arm.roll_index]) if arm.roll is not None else None
        res = armctl.ik.solve(arm, p, phi=pitch, roll=roll, q0=q_near)
        assert res.ok, (q, res)
        worst = max(worst, float(np.linalg.norm(arm.tool_point(res.q) - p)))
        assert float(arm.tool_pitch(res.q)) == pytest.approx(pitch, abs=1e-9)
    print(f"{name}: IK round trip, {len(qs)} poses: {worst:.2e} m")
    assert worst < 1e-7


def test_the_presets_are_listed():
    assert {"koch", "koch-leader", "omx"} <= set(preset_names())


def test_koch_is_derived_from_the_v1_1_urdf():
    arm = load_arm("koch")
    assert arm.n == 5 and arm.joint_names == KOCH_JOINTS and arm.roll_index == 4 and arm.has_base
    # the URDF's zero pose (LeRobot's middle) in armctl's angles; the pan and roll axes point down and back
    offsets = [round(math.degrees(off), 3) for _, off, _ in arm.urdf_map]
    assert offsets == pytest.approx([0.0, 82.218, -80.679, -1.539, 0.0], abs=1e-3)
    assert [s for _, _, s in arm.urdf_map] == [-1, 1, 1, 1, -1]
    assert np.allclose(arm.home_rad, [off for _, off, _ in arm.urdf_map])  # home: the URDF's zero pose
    # links: shoulder-elbow 109.3 mm, elbow-wrist 100.5 mm, wrist to the tool 103.9 mm; the shoulder 56.3 mm up
    assert arm.links_m * 1000 == pytest.approx([109.307, 100.516, 103.9], abs=1e-3)
    assert arm.shoulder_height_m == pytest.approx(0.0563) and abs(arm.base_offset_m) < 1e-12
    # the tool 1.25 mm off the roll axis, in the plane through the pan axis at roll 0
    assert arm.roll.offset_right_m == pytest.approx(0.00125) and abs(arm.roll.lateral_m) < 5e-6
    assert arm.urdf.steps_follow_urdf and arm.gripper_urdf_joint == "gripper"
    assert math.degrees(arm.gripper.open_rad) == pytest.approx(-60) and arm.gripper.closed_rad == 0.0
    assert arm.gripper.close == "until_contact" and arm.gripper.max_load_pct == 50
    # the arm points along the root's +x at its zero pose: the tool 219 mm ahead of the pan axis, 3 um beside it
    p = arm.tool_point(arm.home_rad)
    assert p[0] == pytest.approx(0.21918) and abs(p[1]) < 5e-6


def test_koch_servos_are_lerobots():
    arm = load_arm("koch")
    models = [s.model.key for s in arm.drive.servos]
    assert models == ["xl430-w250", "xl430-w250", "xl330-m288", "xl330-m288", "xl330-m288"]
    assert [s.volts for s in arm.drive.servos] == [12, 12, 5, 5, 5]
    assert arm.drive.gripper.model.key == "xl330-m288" and arm.drive.protocol == "dynamixel"
    assert math.degrees(arm.max_speed_rad_s[0]) == pytest.approx(120)
    leader = load_arm("koch-leader")
    assert {s.model.key for s in leader.drive.servos} == {"xl330-m077"} and leader.drive.protocol == "dynamixel"
    assert load_arm("so101").drive.protocol == "feetech" and load_arm("mearm").drive.protocol is None


def _joints(path):
    root = ET.parse(path).getroot()
    return [ET.tostring(j) for j in root.findall("joint")], [ET.tostring(lk) for lk in root.findall("link")]


def test_the_koch_leader_has_the_followers_chain():
    """koch-leader.urdf is koch.urdf's chain, joint for joint and link for link (only the robot's name differs)."""
    assert _joints(PRESET_DIR / "koch-leader.urdf") == _joints(PRESET_DIR / "koch.urdf")
    assert load_arm("koch-leader").urdf_map == load_arm("koch").urdf_map


def test_omx_is_robotis_description():
    arm = load_arm("omx")
    assert arm.n == 4 and arm.joint_names == ("joint1", "joint2", "joint3", "joint4") and arm.roll is None
    # joint2's axis 79.38 deg above the horizontal from the shoulder to the elbow (24 mm ahead, 128 mm up)
    offsets = [math.degrees(off) for _, off, _ in arm.urdf_map]
    assert offsets == pytest.approx([0.0, math.degrees(math.atan2(0.128, 0.024)), -79.3803, 0.0], abs=1e-3)
    assert [s for _, _, s in arm.urdf_map] == [1, -1, -1, -1]
    assert arm.links_m * 1000 == pytest.approx([math.hypot(24, 128), 124, 126])
    assert arm.shoulder_height_m == pytest.approx(0.0595)
    # ROBOTIS' home, joint1..4 = 0, -1, 1, 0 rad
    assert urdf_angles(arm, arm.home_rad) == pytest.approx(
        {"joint1": 0, "joint2": -1, "joint3": 1, "joint4": 0}, abs=1e-5
    )
    # the limits are the URDF's (joint2 -1.5..1.5 rad, through sign -1)
    assert arm.q_min[1] == pytest.approx(arm.urdf_map[1][1] - 1.5)
    assert {s.model.key for s in arm.drive.servos} == {"xm430-w350"} and arm.drive.protocol == "dynamixel"
    assert arm.drive.gripper.model.key == "xm430-w350" and arm.drive.servos[0].volts == 12


def test_omx_gripper_is_its_servos_angle_not_the_sliding_finger():
    """The fingers slide (a prismatic URDF joint): armctl's gripper is the servo's angle, 0.2006 mm of finger
    travel a degree, open and closed at the URDF's finger limits; the ROS gripper joint is then not the URDF's."""
    arm = load_arm("omx")
    mm_per_deg = 1.7627e-5 * 4096 / 360 * 1000
    assert math.degrees(arm.gripper.open_rad) * mm_per_deg == pytest.approx(20.0, abs=0.01)
    assert math.degrees(arm.gripper.closed_rad) * mm_per_deg == pytest.approx(-11.0, abs=0.01)
    assert arm.gripper_urdf_joint is None and arm.gripper.max_load_pct == 23


def test_a_prismatic_gripper_needs_naming_and_a_fixed_one_is_refused(tmp_path):
    (tmp_path / "arm.urdf").write_text((PRESET_DIR / "omx.urdf").read_text())
    (tmp_path / "arm.armctl.yaml").write_text("tool_link: end_effector_link\n")  # the fingers are a second branch
    with pytest.raises(ConfigError, match="gripper_left_joint' \\(prismatic, from link 'link5'\\) is a second branch"):
        load_arm(str(tmp_path / "arm.urdf"))
    (tmp_path / "arm.armctl.yaml").write_text(
        "tool_link: end_effector_link\ngripper: {joint: end_effector_joint, open_deg: 1, closed_deg: 0}\n"
    )
    with pytest.raises(ConfigError, match="gripper joint 'end_effector_joint' is fixed"):
        load_arm(str(tmp_path / "arm.urdf"))


@pytest.mark.parametrize(
    ("key", "volts", "nm", "rpm", "grams"),
    [
        ("xl430-w250", 12.0, 1.5, 61, 57.2),
        ("xl330-m288", 5.0, 0.52, 103, 18),
        ("xl330-m077", 5.0, 0.215, 383, 18),
        ("xm430-w350", 12.0, 4.1, 46, 82),
    ],
)
def test_dynamixel_models_give_the_e_manuals_figures(key, volts, nm, rpm, grams):
    from armctl.model.servos import Servo

    s = Servo(MODELS[key], volts)
    assert s.stall_nm == pytest.approx(nm, rel=2e-3)
    assert s.speed_rad_s == pytest.approx(rpm * 2 * math.pi / 60, rel=2e-3)
    assert MODELS[key].mass_g == grams and MODELS[key].protocol == "dynamixel" and MODELS[key].bus


def test_bus_protocols_say_which_way_the_homing_offset_counts():
    assert PROTOCOLS["feetech"].homing_sign == -1 and PROTOCOLS["dynamixel"].homing_sign == 1
    assert PROTOCOLS["dynamixel"].homing_max == 1_044_479 and PROTOCOLS["feetech"].homing_max == 2047
    assert PROTOCOLS["dynamixel"].drive_mode_in_servo and not PROTOCOLS["feetech"].drive_mode_in_servo
    assert MODELS["sts3215"].protocol == "feetech" and MODELS["mg996r"].protocol is None
