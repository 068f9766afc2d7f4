"""The SO-101 drives its wrist roll, derived from the maker's URDF: armctl's tool point and tool frame agree with an
independent URDF FK (yourdfpy, meshes off) of the tool link at random angles inside the limits, through the
derivation's frame shift and its one constant tool-frame rotation; the IK round trips at a roll. On the so101
preset (armctl/presets/so101.urdf and its sidecar) and on the maker's so101_new_calib.urdf as it comes (no sidecar),
also with its tool frame moved 0.5 mm beside the arm's plane, and with pi/2 and pi rounded as the published file
writes them (1.5708, 3.14159: axes off by 4e-6 rad, within the importer's tolerance; about 1e-3 mm off)."""

from __future__ import annotations

import math

import numpy as np
import pytest

import armctl.ik
from armctl.core.paths import PRESET_DIR
from armctl.model.arm import load_arm
from armctl.model.urdf.derive import urdf_angles
from tests.helpers import makers_so101_urdf, require
from tests.kinematics.oracles import urdf_fk_disagreement

try:
    import yourdfpy
except ImportError:  # pragma: no cover - the test extra installs it
    yourdfpy = None

URDF = PRESET_DIR / "so101.urdf"
TOOL = "gripper_frame_link"


def _yourdfpy(path):
    require(yourdfpy is not None, "yourdfpy (pip install -e '.[test]')")
    return yourdfpy.URDF.load(str(path), load_meshes=False, load_collision_meshes=False, build_scene_graph=True)


ARMS = ["preset", "maker", "maker, tool 0.5 mm beside", "maker, published rounding"]


def _arm(which, tmp_path):
    """(the arm, its URDF) of ``which`` in ``ARMS``."""
    if which == "preset":
        return load_arm("so101"), URDF
    path = makers_so101_urdf(tmp_path, tool_beside_m=0.0005 if "beside" in which else 0.0, rounded="round" in which)
    return load_arm(str(path)), path


def _random_poses(arm, n, seed):
    rng = np.random.default_rng(seed)
    return rng.uniform(arm.q_min, arm.q_max, size=(n, arm.n))


def test_the_so101_preset_drives_its_wrist_roll():
    arm = load_arm("so101")
    assert arm.n == 5 and arm.roll is not None and arm.roll_index == 4
    assert arm.joint_names == ("shoulder_pan", "shoulder_lift", "elbow_flex", "wrist_flex", "wrist_roll")
    assert arm.urdf_map[-1] == ("wrist_roll", 0.0, -1)  # the URDF's roll axis points back at the wrist
    assert arm.urdf.held_deg == {}
    # the URDF's limits (-2.74385..2.84121 rad) through sign -1; the sidecar's speed; home 0
    assert arm.q_min[4] == pytest.approx(-2.84121) and arm.q_max[4] == pytest.approx(2.74385)
    assert math.degrees(arm.max_speed_rad_s[4]) == pytest.approx(180)
    assert arm.home_rad[4] == 0.0
    # the hand: the roll axis 2.8 deg above the last link, the tool point 7.9 mm off it, the jaws closing up-down
    assert math.degrees(arm.roll.axis_rad) == pytest.approx(2.84, abs=0.01)
    assert arm.roll.offset_m * 1000 == pytest.approx(7.9, abs=0.01)
    assert abs(arm.roll.lateral_m) < 1e-4
    assert abs(abs(math.degrees(arm.roll.jaw_rad)) - 90) < 5


@pytest.mark.parametrize("which", ARMS)
def test_tool_point_and_frame_agree_with_yourdfpy_at_500_random_poses(which, tmp_path):
    arm, path = _arm(which, tmp_path)
    robot = _yourdfpy(path)
    assert arm.urdf.tool_link == TOOL and arm.roll is not None and arm.n == 5
    if "beside" in which:
        assert arm.roll.lateral_m == pytest.approx(0.0005, abs=2e-5)
    pos, ang = urdf_fk_disagreement(arm, robot, _random_poses(arm, 500, 37))
    print(f"so101 ({which}) vs yourdfpy, 500 poses: {pos * 1000:.2e} mm, {ang:.2e} deg")
    assert pos < 1e-5 and ang < 0.01


def test_the_roll_turns_the_tool_about_the_urdf_axis():
    """A pose with only the roll changed: the URDF's tool link turns about the roll axis by -roll (sign -1)."""
    arm = load_arm("so101")
    robot = _yourdfpy(URDF)
    q = np.array(arm.home_rad, dtype=float)
    for r in (-2.5, -1.0, 0.7, 2.6):
        q[4] = r
        assert urdf_angles(arm, q)["wrist_roll"] == pytest.approx(-r)
        assert urdf_fk_disagreement(arm, robot, [q])[0] < 1e-8


@pytest.mark.parametrize("which", ARMS)
def test_ik_round_trips_at_a_roll(which, tmp_path):
    arm, _ = _arm(which, tmp_path)
    qs = _random_poses(arm, 200, 5)
    rng = np.random.default_rng(6)
    worst = 0.0
    for q in qs:
        p, pitch = arm.tool_point(q), float(arm.tool_pitch(q))
        q_near = np.clip(q + rng.normal(0, 0.05, arm.n), arm.q_min, arm.q_max)
        res = armctl.ik.solve(arm, p, phi=pitch, roll=float(q[4]), q0=q_near)
        assert res.ok, (q, res)
        worst = max(worst, float(np.linalg.norm(arm.tool_point(res.q) - p)))
        assert float(arm.tool_pitch(res.q)) == pytest.approx(pitch, abs=1e-9)
        assert res.q[4] == pytest.approx(q[4], abs=1e-12)
    print(f"so101 ({which}) IK round trip at a roll, {len(qs)} poses: {worst:.2e} m")
    assert worst < 1e-9


def test_the_reported_tool_frame_is_the_urdf_tool_links():
    """``kinematics.tool_frame`` (``--json``'s tool_R, ROS's tool_pose) is the URDF tool link's own rotation."""
    from armctl.model.kinematics import tool_frame

    arm = load_arm("so101")
    robot = _yourdfpy(URDF)
    names = robot.actuated_joint_names
    for q in _random_poses(arm, 50, 5):
        urdf_q = urdf_angles(arm, q)
        robot.update_cfg(np.array([urdf_q.get(n, 0.0) for n in names]))
        T = robot.get_transform(TOOL, robot.base_link)
        assert np.allclose(tool_frame(arm, q), T[:3, :3], atol=1e-9)
