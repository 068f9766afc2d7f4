"""The tool's frame (``kinematics.tool_pose``): a rotation and the tool point, the heading each kind of arm has."""

import numpy as np
import pytest

from armctl.model.arm import load_arm


@pytest.mark.parametrize("name", ["seed-2link", "seed-3link", "mearm", "eezybot-mk2", "braccio", "so101"])
def test_frame_is_a_rotation_at_the_tool_point(name):
    arm = load_arm(name)
    rng = np.random.default_rng(3)
    q = rng.uniform(arm.q_min, arm.q_max, size=(50, arm.n))
    if arm.roll is not None:  # y is the jaws' closing line: level with the roll turning it to the arm's left
        q[:, arm.roll_index] = -arm.roll.jaw_rad
    T = arm.tool_pose(q)
    R = T[:, :3, :3]
    assert np.allclose(R @ np.swapaxes(R, 1, 2), np.eye(3), atol=1e-12)
    assert np.allclose(np.linalg.det(R), 1.0)
    p = arm.tool_point(q)
    assert np.allclose(T[:, : p.shape[1], 3], p)
    assert np.allclose(T[:, 3], [0, 0, 0, 1])
    assert np.allclose(T[:, 2, 1], 0.0)  # y stays level


def test_planar_heading_is_the_tool_angle_and_a_parallelogram_hand_is_level():
    arm = load_arm("seed-3link")
    q = np.radians([30.0, -20.0, 10.0])
    assert np.allclose(arm.tool_pose(q)[:3, 0], [np.cos(np.radians(20)), np.sin(np.radians(20)), 0.0])
    mearm = load_arm("mearm")
    T = mearm.tool_pose(np.radians([40.0, 100.0, -30.0]))
    assert np.allclose(T[:3, 2], [0, 0, 1])  # face up, whatever the shoulder and elbow
    assert np.allclose(T[:3, 0], [np.cos(np.radians(40)), np.sin(np.radians(40)), 0.0])
    so = load_arm("so101")
    q = np.array(so.home_rad, dtype=float)
    pitch = float(so.tool_pitch(q))
    assert np.isclose(so.tool_pose(q)[2, 0], np.sin(pitch))
