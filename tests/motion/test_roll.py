"""A wrist roll (armctl.model.hand): FK, IK at a roll, lines and joint moves carrying it, the Python API.

The arm here is an arm file with a ``roll:`` whose tool point sits off the roll axis (the SO-101's does, 7.9 mm),
so a roll that were not modelled exactly would show as a tool point off its target.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import yaml

import armctl
from armctl import ik, motion
from armctl.errors import BadInputError, ConfigError
from armctl.model.arm import load_arm, parse_arm
from armctl.model.kinematics import tool_pitch, tool_point, tool_pose
from armctl.motion.moves import JointMove, LineMove

ARM = {
    "name": "rollarm",
    "links_m": [0.12, 0.12, 0.1],
    "base": {"min_deg": -170, "max_deg": 170, "max_speed_deg_s": 90},
    "shoulder_height_m": 0.07,
    "base_offset_m": 0.01,
    "joints": [
        {"min_deg": -10, "max_deg": 170, "max_speed_deg_s": 90},
        {"min_deg": -150, "max_deg": 150, "max_speed_deg_s": 90},
        {"min_deg": -120, "max_deg": 120, "max_speed_deg_s": 90},
    ],
    "roll": {"min_deg": -170, "max_deg": 170, "max_speed_deg_s": 180, "axis_deg": 3, "tool_offset_m": [0.008, 0.001]},
    "home_deg": [0, 90, -90, 0, 0],
}
NAMES = ("base", "joint1", "joint2", "joint3", "wrist_roll")
CAL = "version: 1\narm: rollarm\njoints:\n" + "".join(
    f"  - {{name: {n}, channel: {i}, pin: {p}, zero_us: {z}, us_per_deg: 5.0, direction: 1,"
    " min_us: 600, max_us: 2400}\n"
    for i, (n, p, z) in enumerate(zip(NAMES, (9, 10, 11, 6, 5), (1500, 1000, 1500, 1500, 1500), strict=True))
)


@pytest.fixture(scope="module")
def arm():
    return parse_arm(ARM, "rollarm.yaml")


def _rotation_x(a):
    c, s = math.cos(a), math.sin(a)
    return np.array([[1, 0, 0], [0, c, -s], [0, s, c]])


def test_roll_turns_the_tool_frame_about_its_axis_and_the_tool_point_on_a_circle(arm):
    q = arm.home_rad.copy()
    T0 = tool_pose(arm, q)
    axis = T0[:3, 0]
    for r in np.radians([-150, -40, 30, 90, 170]):
        T = tool_pose(arm, np.r_[q[:-1], r])
        assert np.allclose(T[:3, 0], axis, atol=1e-12)  # the roll axis does not move
        assert np.allclose(T[:3, :3], T0[:3, :3] @ _rotation_x(r), atol=1e-12)  # right-handed about it
        assert np.allclose(T[:3, :3] @ T[:3, :3].T, np.eye(3), atol=1e-12)
    pts = tool_point(arm, np.array([np.r_[q[:-1], r] for r in np.linspace(-3, 3, 61)]))
    along = (pts - pts[0]) @ axis
    assert np.abs(along).max() < 1e-12  # the tool point circles in a plane across the axis ...
    d = np.linalg.norm(pts - pts.mean(axis=0), axis=1)
    assert 0.007 < d.min() and d.max() < 0.0085  # ... about 8 mm from it (the arm file's offset)
    assert abs(float(tool_pitch(arm, q)) - math.radians(3)) < 1e-12  # the pitch is the roll axis's


def test_ik_round_trips_position_pitch_and_roll(arm):
    rng = np.random.default_rng(7)
    worst = 0.0
    for q in rng.uniform(arm.q_min, arm.q_max, size=(300, arm.n)):
        p, ph = tool_point(arm, q), float(tool_pitch(arm, q))
        res = ik.solve(arm, p, phi=ph, roll=q[-1], q0=q)
        assert res.ok, res.reason
        worst = max(worst, float(np.abs(tool_pose(arm, res.q) - tool_pose(arm, q)).max()))
        far = ik.solve(arm, p, phi=ph, roll=q[-1])  # from home: the position, pitch and roll, maybe the other side
        assert far.ok and np.linalg.norm(tool_point(arm, far.q) - p) < 1e-9 and abs(far.q[-1] - q[-1]) < 1e-12
    assert worst < 1e-9


def test_ik_keeps_the_roll_it_has_and_takes_the_nearest_turn(arm):
    q0 = arm.home_rad.copy()
    q0[-1] = math.radians(160)
    target = tool_point(arm, q0) + np.array([0.01, 0.02, -0.03])
    assert ik.solve(arm, target, q0=q0).q[-1] == pytest.approx(q0[-1])
    res = ik.solve(arm, target, q0=q0, roll=math.radians(-195))  # = 165 deg: the turn inside the limits
    assert res.ok and math.degrees(res.q[-1]) == pytest.approx(165)
    with pytest.raises(BadInputError, match="outside the limits of 'wrist_roll'"):
        ik.solve(arm, target, q0=q0, roll=math.radians(175))
    with pytest.raises(BadInputError, match="finite"):
        ik.solve(arm, target, q0=q0, roll=math.nan)
    with pytest.raises(BadInputError, match="no wrist roll"):
        ik.solve(load_arm("braccio"), (0.2, 0.0, 0.1), roll=0.1)


def _speeds(arm, traj):
    dq = np.abs(np.diff(traj.q_rad, axis=0)) / np.diff(traj.t_s)[:, None]
    return (dq / arm.max_speed_rad_s).max(axis=0)


def test_a_line_turns_the_roll_with_the_tool_on_the_line_and_every_joint_under_its_limit(arm):
    q0 = arm.home_rad.copy()
    p0 = tool_point(arm, q0)
    end = p0 + np.array([0.02, 0.05, -0.05])
    plan = motion.plan_moves(arm, [LineMove(tuple(end), roll_rad=math.radians(120))], q_start=q0)
    Q = plan.trajectory.q_rad
    P = tool_point(arm, Q)
    d = (end - p0) / np.linalg.norm(end - p0)
    off = (P - p0) - np.outer((P - p0) @ d, d)
    assert np.linalg.norm(off, axis=1).max() < 1e-9
    assert math.degrees(Q[-1, -1]) == pytest.approx(120) and np.allclose(P[-1], end, atol=1e-9)
    assert np.all(_speeds(arm, plan.trajectory) <= 1.0 + 1e-6)
    # the roll alone: the tool point holds still, the roll turns at no more than its speed limit
    plan = motion.plan_moves(arm, [LineMove(tuple(p0), roll_rad=math.radians(-150))], q_start=q0)
    assert np.linalg.norm(tool_point(arm, plan.trajectory.q_rad) - p0, axis=1).max() < 1e-9
    assert math.degrees(plan.trajectory.q_rad[-1, -1]) == pytest.approx(-150)
    assert _speeds(arm, plan.trajectory)[-1] <= 1.0 + 1e-6


def test_a_line_without_a_roll_keeps_it_and_a_joint_move_is_timed_by_the_roll_too(arm):
    q0 = arm.home_rad.copy()
    q0[-1] = 0.7
    plan = motion.plan_moves(arm, [LineMove(tuple(tool_point(arm, q0) + [0.03, 0.0, 0.0]))], q_start=q0)
    assert np.allclose(plan.trajectory.q_rad[:, -1], 0.7, atol=1e-12)
    q1 = q0.copy()
    q1[-1] = -2.5  # 183 deg of roll at 180 deg/s: the roll sets the move's time
    plan = motion.plan_moves(arm, [JointMove(tuple(q1), speed_fraction=1.0)], q_start=q0)
    assert _speeds(arm, plan.trajectory)[-1] == pytest.approx(1.0, abs=0.05)
    assert plan.trajectory.t_s[-1] >= math.radians(183) / math.radians(180)


def test_a_roll_turning_line_is_not_blended(arm):
    q0 = arm.home_rad.copy()
    p0 = tool_point(arm, q0)
    a = LineMove(tuple(p0 + [0.03, 0.0, 0.0]), blend_m=0.01, roll_rad=0.5)
    b = LineMove(tuple(p0 + [0.03, 0.03, 0.0]))
    plan = motion.plan_moves(arm, [a, b], q_start=q0)
    at_corner = np.argmin(np.linalg.norm(tool_point(arm, plan.trajectory.q_rad) - (p0 + [0.03, 0.0, 0.0]), axis=1))
    assert np.linalg.norm(tool_point(arm, plan.trajectory.q_rad[at_corner]) - (p0 + [0.03, 0.0, 0.0])) < 1e-9


def test_arm_file_roll_section_is_checked():
    bad = dict(ARM, roll=dict(ARM["roll"], tool_offset_m=[0.5, 0]))
    with pytest.raises(ConfigError, match="tool_offset_m"):
        parse_arm(bad, "bad.yaml")
    planar = {k: v for k, v in ARM.items() if k not in ("base", "shoulder_height_m", "base_offset_m")}
    planar["home_deg"] = [90, -90, 0, 0]
    with pytest.raises(ConfigError, match="needs a base and a 3-link serial chain"):
        parse_arm(planar, "planar.yaml")


def test_robot_move_to_roll_on_the_simulated_arm(tmp_path):
    arm_file, cal = tmp_path / "rollarm.yaml", tmp_path / "rollarm.cal.yaml"
    arm_file.write_text(yaml.safe_dump(ARM))
    cal.write_text(CAL)
    with armctl.connect(arm=str(arm_file), calibration=str(cal)) as robot:
        start = robot.where()
        assert start.roll == 0.0 and start.to_dict()["roll_deg"] == 0.0
        x, y, z = start.tool_m
        robot.move_to(x + 0.02, y + 0.03, z - 0.03, roll=math.radians(90))
        there = robot.where()
        assert math.degrees(there.roll) == pytest.approx(90, abs=0.3)  # simulated servos: whole microseconds
        assert np.allclose(there.tool_m, (x + 0.02, y + 0.03, z - 0.03), atol=0.002)
        robot.move_to(x, y, z, path="joint")  # no roll given: the roll stays
        assert math.degrees(robot.where().roll) == pytest.approx(90, abs=0.3)
        for bad, why in ((175, "outside the limits"), (math.nan, "finite")):
            with pytest.raises(BadInputError, match=why):
                robot.move_to(x, y, z, roll=math.radians(bad))
    with armctl.connect(arm="mearm") as robot, pytest.raises(BadInputError, match="no wrist roll"):
        robot.move_to(0.1, 0.0, 0.1, roll=0.1)
