"""What armctl ros takes, checked with no rclpy (armctl.ros.messages): trajectories, joint commands, tool goals."""

from __future__ import annotations

import math

import numpy as np
import pytest

from armctl.model.arm import load_arm
from armctl.ros.messages import (
    Refused,
    TrajectoryPoint,
    check_command,
    check_tool_goal,
    check_trajectory,
    command_offset,
    frame_name,
    joint_names,
    ros_joints,
    tool_point_ros,
    tool_pose_ros,
)
from tests.helpers import so101_with_held_roll

SEED = load_arm("seed-3link")
MEARM = load_arm("mearm")
NAMES = ["shoulder", "elbow", "wrist"]


def pts(*rows):
    return [TrajectoryPoint(list(q), t) for q, t in rows]


def test_names_are_armctls_then_the_gripper():
    assert joint_names(SEED) == ["shoulder", "elbow", "wrist", "gripper"]
    assert joint_names(MEARM) == ["base", "shoulder", "elbow", "gripper"]


def test_a_trajectory_inside_the_limits_is_sampled_through_its_points():
    q0 = np.array(SEED.home_rad)
    q1, q2 = q0 + 0.2, np.radians([10.0, -60.0, -30.0])
    c = check_trajectory(SEED, NAMES, pts((q1, 1.0), (q2, 2.5)), q0, math.radians(60))
    t = c.trajectory
    assert not c.retimed and c.duration_s == pytest.approx(2.5)
    assert np.allclose(t.q_rad[0], q0) and np.allclose(t.q_rad[-1], q2)
    assert np.allclose(t.q_rad[50], q1)  # 1.0 s = sample 50 at 20 ms
    assert np.allclose(np.diff(t.t_s), 0.02)
    assert np.all(np.abs(np.diff(t.q_rad, axis=0)) / 0.02 <= SEED.max_speed_rad_s + 1e-9)
    assert np.allclose(t.gripper_rad, math.radians(60))  # not named: held


def test_names_in_any_order_and_the_gripper_as_a_joint():
    q0 = np.array(SEED.home_rad)
    c = check_trajectory(SEED, ["gripper", "wrist", "elbow", "shoulder"], pts(([0.3, -0.5, -1.0, 0.2], 2.0)), q0, 1.0)
    assert np.allclose(c.trajectory.q_rad[-1], [0.2, -1.0, -0.5])
    assert c.trajectory.gripper_rad[-1] == pytest.approx(0.3)


def test_a_first_point_at_time_zero_is_the_start():
    q0 = np.array(SEED.home_rad)
    c = check_trajectory(SEED, NAMES, pts(([0.1, -1.0, -0.5], 0.0), ([0.2, -1.0, -0.5], 1.0)), q0, math.nan)
    assert np.allclose(c.trajectory.q_rad[0], [0.1, -1.0, -0.5])  # the Robot ramps there from q0


def test_too_fast_is_retimed_to_the_speed_limits_or_refused():
    q0 = np.array(SEED.home_rad)
    far = pts((np.radians([-30.0, -90.0, -45.0]), 0.1))
    c = check_trajectory(SEED, NAMES, far, q0, math.nan)
    need = math.radians(75) / SEED.max_speed_rad_s[0]
    assert c.retimed and c.asked_s == pytest.approx(0.1) and c.duration_s >= need
    peak = np.abs(np.diff(c.trajectory.q_rad, axis=0)).max(axis=0) / 0.02
    assert np.all(peak <= SEED.max_speed_rad_s * (1 + 1e-9))
    with pytest.raises(Refused) as e:
        check_trajectory(SEED, NAMES, far, q0, math.nan, too_fast="refuse")
    assert e.value.kind == "too_fast" and e.value.field == "points[0].time_from_start" and e.value.point == 0
    assert "'shoulder'" in e.value.reason and "120 deg/s" in e.value.reason


@pytest.mark.parametrize(
    "names, rows, field, point",
    [
        (NAMES, (([0.1, -1.0, -0.5], 1.0), ([0.2, -1.0, math.nan], 2.0)), "points[1].positions[2]", 1),
        (NAMES, (([0.1, -1.0, math.inf], 1.0),), "points[0].positions[2]", 0),
        (["shoulder", "knee", "wrist"], (([0.1, -1.0, -0.5], 1.0),), "joint_names[1]", None),
        (["shoulder", "shoulder", "wrist"], (([0.1, -1.0, -0.5], 1.0),), "joint_names[1]", None),
        (["shoulder", "elbow"], (([0.1, -1.0], 1.0),), "joint_names", None),
        ([], (([0.1], 1.0),), "joint_names", None),
        (NAMES, (), "points", None),
        (NAMES, (([0.1, -1.0], 1.0),), "points[0].positions", 0),
        (NAMES, (([0.1, -1.0, -0.5], 1.0), ([0.2, -1.0, -0.5], 1.0)), "points[1].time_from_start", 1),
        (NAMES, (([0.1, -1.0, -0.5], 2.0), ([0.2, -1.0, -0.5], 1.0)), "points[1].time_from_start", 1),
        (NAMES, (([0.1, -1.0, -0.5], -1.0),), "points[0].time_from_start", 0),
        (NAMES, (([0.1, -1.0, -0.5], 1.0), ([0.2, -3.0, -0.5], 2.0)), "points[1].positions[1]", 1),
        (NAMES + ["gripper"], (([0.1, -1.0, -0.5, 2.0], 1.0),), "points[0].positions[3]", 0),
    ],
)
def test_malformed_or_impossible_trajectories_are_refused_naming_the_field(names, rows, field, point):
    with pytest.raises(Refused) as e:
        check_trajectory(SEED, names, pts(*rows), SEED.home_rad, math.radians(60))
    assert e.value.field == field and e.value.point == point
    assert str(e.value).startswith(field)


def test_velocities_of_the_wrong_length_are_refused():
    p = [TrajectoryPoint([0.1, -1.0, -0.5], 1.0, velocities=[0.0, 0.0])]
    with pytest.raises(Refused) as e:
        check_trajectory(SEED, NAMES, p, SEED.home_rad, math.nan)
    assert e.value.field == "points[0].velocities"


def test_the_parallelogram_limit_is_checked():
    q_bad = [0.0, math.radians(150), math.radians(-60)]  # upper arm and forearm closer than mearm allows
    with pytest.raises(Refused) as e:
        check_trajectory(MEARM, ["base", "shoulder", "elbow"], pts((q_bad, 3.0)), MEARM.home_rad, math.nan)
    assert e.value.kind == "limit"


def test_joint_commands():
    q, g = check_command(SEED, ["elbow", "shoulder", "wrist"], [-1.0, 0.2, -0.5])
    assert np.allclose(q, [0.2, -1.0, -0.5]) and math.isnan(g)
    q, g = check_command(SEED, NAMES + ["gripper"], [0.2, -1.0, -0.5, 0.5])
    assert g == pytest.approx(0.5)
    for names, pos, field in [
        (NAMES, [0.2, math.nan, -0.5], "position[1]"),
        (NAMES, [0.2, -1.0], "position"),
        (["shoulder", "elbow", "hand"], [0.2, -1.0, -0.5], "name[2]"),
        (["shoulder", "elbow"], [0.2, -1.0], "name"),
        (NAMES, [0.2, -1.0, -3.0], "position[2]"),
    ]:
        with pytest.raises(Refused) as e:
            check_command(SEED, names, pos)
        assert e.value.field == field, (names, pos)


def test_tool_goals_and_points_in_the_nodes_frame():
    assert check_tool_goal(MEARM, 0.15, 0.04, 0.02, "arm2/base_link", "arm2/base_link") == (0.15, 0.04, 0.02)
    assert check_tool_goal(SEED, 0.5, 0.0, 0.2, "", "base_link") == (0.5, 0.2)  # planar: the x-z plane
    for args, field in [
        ((0.5, 0.0, 0.2, "world"), "header.frame_id"),
        ((0.5, 0.1, 0.2, ""), "point.y"),
        ((math.nan, 0.0, 0.2, ""), "point.x"),
    ]:
        with pytest.raises(Refused) as e:
            check_tool_goal(SEED, *args, "base_link")
        assert e.value.field == field
    assert tool_point_ros(SEED, [0.5, 0.2]) == (0.5, 0.0, 0.2)
    assert tool_point_ros(MEARM, [0.1, 0.2, 0.3]) == (0.1, 0.2, 0.3)


# --- a URDF arm: the URDF's names and angles; the first command's distance --------------------------------------

SO101 = load_arm("so101")
SO101_NAMES = ["shoulder_pan", "shoulder_lift", "elbow_flex", "wrist_flex", "wrist_roll", "gripper"]


def test_a_urdf_arm_speaks_the_urdfs_names_and_angles():
    """The SO-101's topics: every URDF joint (the wrist roll driven: minus armctl's roll), the URDF's zeros and signs
    (the FACTS table: URDF q = a0 - armctl with a0 = 76.0 / -73.8 / -5.0 deg for lift/elbow/wrist; the pan is minus
    armctl's)."""
    view = ros_joints(SO101)
    assert view.names == SO101_NAMES and frame_name(SO101) == "base_link"
    q = np.radians([20.0, 50.0, -40.0, 10.0, 25.0])
    got = np.degrees(view.positions(q, math.radians(30.0)))
    assert np.allclose(got, [-20.0, 76.0 - 50.0, -73.8 + 40.0, -5.0 - 10.0, -25.0, 30.0], atol=0.05)
    q2, g = check_command(SO101, SO101_NAMES, list(np.radians(got)))
    assert np.allclose(q2, q) and g == pytest.approx(math.radians(30.0))
    v = ros_joints(SO101).velocities([0.1, 0.2, 0.3, 0.4, 0.6], 0.5)
    assert np.allclose(v, [-0.1, -0.2, -0.3, -0.4, -0.6, 0.5])


def test_a_held_joint_is_named_at_its_angle(tmp_path):
    """A user who holds the SO-101's roll (held_joints): it is on the topics at its fixed angle, and a command may
    move it no further than 0.5 deg from there."""
    arm = so101_with_held_roll(tmp_path)
    view = ros_joints(arm)
    assert view.names == SO101_NAMES
    got = np.degrees(view.positions(np.radians([20.0, 50.0, -40.0, 10.0]), math.radians(30.0)))
    assert np.allclose(got, [-20.0, 76.0 - 50.0, -73.8 + 40.0, -5.0 - 10.0, 0.0, 30.0], atol=0.05)
    assert np.allclose(view.velocities([0.1, 0.2, 0.3, 0.4], 0.5), [-0.1, -0.2, -0.3, -0.4, 0.0, 0.5])
    with pytest.raises(Refused, match="wrist_roll") as e:
        check_command(arm, SO101_NAMES, [0.0, 0.0, 0.0, 0.0, 0.1, 0.5])
    assert e.value.field == "position[4]"
    check_command(arm, SO101_NAMES, [0.0, 0.0, 0.0, 0.0, 0.005, 0.5])  # within 0.5 deg of the held angle


def test_a_urdf_arm_refuses_in_the_urdfs_terms():
    with pytest.raises(Refused, match=r"'shoulder_lift' at 120\.00 deg is outside its limits -100\.\.100 deg"):
        check_command(SO101, SO101_NAMES[:5], list(np.radians([0.0, 120.0, 0.0, 0.0, 0.0])))
    with pytest.raises(Refused, match=r"'wrist_roll' at 170\.00 deg is outside its limits"):
        check_command(SO101, SO101_NAMES[:5], list(np.radians([0.0, 0.0, 0.0, 0.0, 170.0])))
    # a measured open gripper (60.03 deg) sent back is the limit; 0.5 deg beyond is refused
    _, g = check_command(SO101, SO101_NAMES[:5] + ["gripper"], [0.0] * 5 + [math.radians(60.03)])
    assert g == pytest.approx(math.radians(60.0))
    with pytest.raises(Refused, match="gripper"):
        check_command(SO101, SO101_NAMES[:5] + ["gripper"], [0.0] * 5 + [math.radians(60.5)])
    with pytest.raises(Refused, match="unknown joint 'shoulder'"):
        check_command(SO101, ["shoulder", "elbow_flex", "wrist_flex", "shoulder_pan", "wrist_roll"], [0.0] * 5)


def test_a_urdf_arms_trajectory_is_in_urdf_angles():
    urdf_q = [0.5, -0.4, 0.6, 0.3, -1.2]
    c = check_trajectory(SO101, SO101_NAMES[:5], pts((urdf_q, 2.0)), SO101.home_rad, math.nan)
    assert np.allclose(ros_joints(SO101).to_ros(c.trajectory.q_rad[-1]), urdf_q)


def test_a_urdf_arms_tool_point_is_in_its_root_frame():
    tool = np.array([0.2, 0.05, 0.1])
    p = tool_point_ros(SO101, tool)
    assert np.allclose(p, tool + [0.0388353, 0.0, -0.0024])
    assert np.allclose(check_tool_goal(SO101, *p, "", "base_link"), tool)


def test_command_offset_is_the_largest_joint_or_gripper_difference():
    q = np.array(SEED.home_rad)
    assert command_offset(SEED, q + [0.0, 0.2, -0.1], math.nan, q, 0.5) == (pytest.approx(0.2), "elbow")
    assert command_offset(SEED, q, 0.9, q, 0.5) == (pytest.approx(0.4), "gripper")
    assert command_offset(SO101, SO101.home_rad + [0.3, 0, 0, 0, 0], 0.0, SO101.home_rad, None)[1] == "shoulder_pan"
    assert command_offset(SO101, SO101.home_rad + [0, 0, 0, 0, 0.4], 0.0, SO101.home_rad, None)[1] == "wrist_roll"


def _quat_matrix(x, y, z, w) -> np.ndarray:
    return np.array(
        [
            [1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
            [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
            [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)],
        ]
    )


def test_tool_pose_message_carries_the_tool_frame(tmp_path):
    """tool_pose: the point of tool_point and the tool frame as a unit quaternion (w >= 0); on an arm with a wrist
    roll x along the tool axis and y along the jaws (a roll of r turns y by r about x); NaN for an unknown pose."""
    from armctl.model.kinematics import tool_point, tool_pose
    from tests.cli.roll_arm import write_roll_arm

    arm = load_arm(str(write_roll_arm(tmp_path)))
    rng = np.random.default_rng(7)
    for _ in range(50):
        q = rng.uniform(arm.q_min, arm.q_max)
        point, quat = tool_pose_ros(arm, q, tool_point(arm, q))
        assert point == pytest.approx(tuple(tool_point(arm, q)), abs=1e-15)
        assert np.linalg.norm(quat) == pytest.approx(1.0) and quat[3] >= 0
        assert np.allclose(_quat_matrix(*quat), tool_pose(arm, q)[:3, :3], atol=1e-12)
        q2 = q.copy()
        q2[-1] += 0.5 * (q2[-1] < 0) - 0.5 * (q2[-1] >= 0)  # the roll half a radian the other way, inside
        R1, R2 = _quat_matrix(*quat), _quat_matrix(*tool_pose_ros(arm, q2, tool_point(arm, q2))[1])
        assert np.allclose(R1[:, 0], R2[:, 0], atol=1e-12)
        assert float(R1[:, 1] @ R2[:, 1]) == pytest.approx(math.cos(0.5), abs=1e-12)
    assert all(math.isnan(v) for v in tool_pose_ros(arm, np.full(arm.n, np.nan), np.full(3, np.nan))[1])
    # a planar arm: its plane is the x-z plane; the tool's x at the tool angle from x toward z, z along -y
    q = np.radians([30.0, -60.0, -20.0])
    R = _quat_matrix(*tool_pose_ros(SEED, q, tool_point(SEED, q))[1])
    phi = float(np.sum(q))
    assert np.allclose(R[:, 0], [math.cos(phi), 0, math.sin(phi)]) and np.allclose(R[:, 2], [0, -1, 0])
