"""What armctl ros takes, checked with no rclpy (armctl.ros.messages): trajectories, joint commands, tool goals."""

from __future__ import annotations

import math

import numpy as np
import pytest

from armctl.arm import load_arm
from armctl.ros.messages import (
    Refused,
    TrajectoryPoint,
    check_command,
    check_tool_goal,
    check_trajectory,
    joint_names,
    tool_point_ros,
)

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
