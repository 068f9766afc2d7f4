"""Motion, programs and the Robot on arms with a rotating base (x, y, z targets) and parallelogram linkages.

Lines are straight in space, every sample keeps every limit (the base's speed and the coupled link
angle too), the base turns before a line that starts on its axis, a line through the axis is refused,
programs take ``xyz_mm``, and the Robot's ``move_to(x, y, z)`` lands where it should on the simulated arm.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

import armctl
from armctl import motion
from armctl.errors import BadInputError, ConfigError, JointLimitError, MotionError, UnreachableError
from armctl.model.arm import Arm, load_arm
from armctl.model.kinematics import limit_excess, tool_point
from armctl.program import load_program, load_program_text, plan_program
from tests.helpers import require_module

ROOT = Path(__file__).resolve().parents[2]
MEARM = load_arm("mearm")
FAST = "armsim://?rate=20&seed=1"


def _distance_to_segment(p, a, b):
    d = b - a
    u = np.clip(((p - a) @ d) / (d @ d), 0.0, 1.0)
    return np.linalg.norm(p - (a + u[:, None] * d), axis=1)


def _check_limits(arm, traj):
    assert np.all(limit_excess(arm, traj.q_rad) <= 1e-9), "a sample outside a limit (the coupled ones too)"
    speed = np.abs(np.diff(traj.q_rad, axis=0)) / traj.period_s
    assert np.all(speed <= arm.max_speed_rad_s * (1 + 1e-9)), "a joint faster than its limit (the base too)"


# --------------------------------------------------------------------------------------------- motion


@pytest.mark.parametrize(
    "target",
    [(0.12, 0.08, 0.0), (0.18, -0.08, -0.03), (0.15, 0.0, 0.06), (0.09, 0.17, 0.02)],
)
def test_a_line_is_straight_in_space_and_ends_on_target(target):
    q0 = MEARM.home_rad
    plan = motion.plan_moves(MEARM, [motion.LineMove(target, speed_m_s=0.08)], q_start=q0)
    traj = plan.trajectory
    start, end = tool_point(MEARM, q0), np.array(target)
    assert np.linalg.norm(tool_point(MEARM, traj.q_rad[-1]) - end) < 1e-9
    # every sample, and the segment points the planner solved, on the line
    assert _distance_to_segment(tool_point(MEARM, traj.q_rad), start, end).max() < 1e-9
    assert _distance_to_segment(plan.moves[0].points_m, start, end).max() < 1e-12
    assert plan.summary()["max_path_deviation_m"] < 2e-5  # between samples, joints interpolated linearly
    _check_limits(MEARM, traj)


def test_a_slow_base_slows_the_line_down():
    fast = motion.plan_moves(MEARM, [motion.LineMove((0.1, 0.14, 0.02), speed_m_s=0.3)]).trajectory
    slow_base = Arm.from_lengths(
        MEARM.links_m,
        base=True,
        linkage="parallelogram",
        link_angle_deg=[30, 150],
        base_offset_m=MEARM.base_offset_m,
        q_min_deg=np.degrees(MEARM.q_min),
        q_max_deg=np.degrees(MEARM.q_max),
        max_speed_deg_s=[20, 120, 120],
        home_deg=np.degrees(MEARM.home_rad),
    )
    plan = motion.plan_moves(slow_base, [motion.LineMove((0.1, 0.14, 0.02), speed_m_s=0.3)])
    assert plan.trajectory.duration_s > 1.5 * fast.duration_s
    assert plan.summary()["slowed_by_joint_limits"]
    _check_limits(slow_base, plan.trajectory)


def test_coupled_limits_stop_a_line_with_the_link_angle_named():
    # both ends inside every limit; in between, the elbow would fold past the 30 deg the parallelogram allows
    q0 = np.radians([0, 103.74, -42.49])
    end = (0.0843, 0.0, 0.0382)
    assert MEARM.within_limits(q0) and MEARM.within_limits(motion.solve_pose(MEARM, end, None, q0))
    with pytest.raises(JointLimitError, match="angle between upper arm and forearm would cross its limit 30 deg"):
        motion.plan_moves(MEARM, [motion.LineMove(end)], q_start=q0)


def test_a_line_through_the_base_axis_is_refused():
    arm = Arm.from_lengths(
        [0.2, 0.2], base=True, q_min_deg=[-180, -10, -170], q_max_deg=[180, 190, 170], home_deg=[0, 60, -90]
    )
    q0 = motion.solve_pose(arm, (0.1, 0.0, 0.2), None, arm.home_rad)
    with pytest.raises(MotionError, match="jump"):
        motion.plan_moves(arm, [motion.LineMove((-0.1, 0.0, 0.2))], q_start=q0)


def test_a_line_from_the_base_axis_turns_the_base_first():
    arm = Arm.from_lengths(
        [0.2, 0.2], base=True, q_min_deg=[-180, -10, -170], q_max_deg=[180, 190, 170], home_deg=[0, 60, -90]
    )
    q0 = motion.solve_pose(arm, (0.0, 0.0, 0.25), None, np.radians([-40, 60, -90]))
    assert math.isclose(q0[0], math.radians(-40))  # on the axis: the base stays where it was
    end = np.array([0.1, 0.1, 0.25])
    plan = motion.plan_moves(arm, [motion.LineMove(tuple(end))], q_start=q0)
    traj = plan.trajectory
    pts = tool_point(arm, traj.q_rad)
    assert _distance_to_segment(pts, tool_point(arm, q0), end).max() < 1e-9  # the tool never leaves the line
    assert math.isclose(traj.q_rad[-1][0], math.radians(45), abs_tol=1e-9)
    turning = np.flatnonzero(np.abs(np.diff(traj.q_rad[:, 0])) > 0)
    assert np.all(np.linalg.norm(pts[: turning[-1]] - pts[0], axis=1) < 1e-9)  # first only the base turns
    _check_limits(arm, traj)


def test_unreachable_line_end_names_the_shortfall():
    with pytest.raises(UnreachableError) as info:
        motion.plan_moves(MEARM, [motion.LineMove((0.4, 0.0, 0.0))])
    assert info.value.shortfall_m > 0.15 and "mearm" in str(info.value)


def test_targets_need_as_many_coordinates_as_the_arm():
    with pytest.raises(BadInputError, match=r"\(x, y, z\)"):
        motion.plan_moves(MEARM, [motion.LineMove((0.15, 0.02))])


# --------------------------------------------------------------------------------------------- programs


@pytest.mark.parametrize(
    ("program", "arm"),
    [
        ("pick_and_place_mearm.yaml", "mearm"),
        ("pick_and_place_eezybot.yaml", "eezybot-mk2"),
        ("pick_and_place_braccio.yaml", "braccio"),
    ],
)
def test_example_programs_plan_and_pick_where_they_say(program, arm):
    prog = load_program(ROOT / "examples" / program)
    a = load_arm(arm)
    plan = plan_program(prog, a)
    traj = plan.trajectory
    _check_limits(a, traj)
    where = {"close": [], "open": []}
    for mp in plan.moves:
        if mp.kind == "gripper" and len(mp.t_s) > 1:
            closing = mp.gripper_rad[-1] < mp.gripper_rad[0]
            where["close" if closing else "open"].append(tool_point(a, mp.q_rad[-1]))
    picks = [p.point_m for name, p in prog.poses.items() if name.startswith("part")]
    assert np.allclose(where["close"], picks, atol=1e-9)
    assert plan.summary()["max_path_deviation_m"] < 5e-5


def test_program_offsets_are_three_values_on_a_base_arm():
    prog = load_program_text(
        "arm: mearm\nposes:\n  p: {xyz_mm: [160, 20, -20]}\nsteps:\n"
        "  - {joint: p, offset_mm: [0, 0, 30]}\n  - {line: p}\n  - {line: p, offset_m: [0.01, -0.02, 0.03]}\n"
    )
    plan = plan_program(prog, MEARM)
    ends = [tool_point(MEARM, mp.q_rad[-1]) for mp in plan.moves]
    assert np.allclose(ends, [[0.16, 0.02, 0.01], [0.16, 0.02, -0.02], [0.17, 0.0, 0.01]], atol=1e-9)


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ("arm: mearm\nposes:\n  p: {xy_mm: [150, 20]}\nsteps:\n  - {line: p}\n", "write xyz_mm: \\[x, y, z\\]"),
        ("arm: seed-3link\nposes:\n  p: {xyz_m: [0.5, 0.1, 0]}\nsteps:\n  - {line: p}\n", "write xy_m: \\[x, y\\]"),
        ("arm: mearm\nposes:\n  p: {xyz_mm: [150, 20, 0]}\nsteps:\n  - {line: p, offset_mm: [0, 1]}\n", "dz"),
        ("arm: mearm\nposes:\n  p: {q_deg: [0, 90]}\nsteps:\n  - {joint: p}\n", "has 3 joints"),
        ("arm: mearm\nposes:\n  p: {xyz_mm: [150, 0, 0], phi_deg: 10}\nsteps:\n  - {line: p}\n", "phi_deg"),
        ("poses:\n  p: {xy_mm: [150, 0], xyz_mm: [150, 0, 0]}\nsteps:\n  - {line: p}\n", "one of"),
    ],
)
def test_program_points_that_do_not_fit_the_arm(text, match):
    with pytest.raises(ConfigError, match=match):
        prog = load_program_text(text)
        plan_program(prog, MEARM if "seed" not in text else load_arm("seed-3link"))


# --------------------------------------------------------------------------------------------- the Robot


def test_move_to_xyz_lands_within_a_millimetre_measured_from_the_servos():
    with armctl.connect("mearm", FAST) as robot:
        start = robot.where()
        assert len(start.tool_m) == 3 and start.q_deg == pytest.approx([0, 90, 0], abs=0.05)
        res = robot.move_to(0.16, -0.05, 0.01, speed=0.1).result
        pose = robot.where(settle=True)
        assert np.linalg.norm(pose.tool_m - [0.16, -0.05, 0.01]) < 1e-3
        assert res.planned_tool_m == pytest.approx([0.16, -0.05, 0.01])
        robot.move_to(0.12, 0.1, 0.03, path="joint")
        assert np.linalg.norm(robot.where(settle=True).tool_m - [0.12, 0.1, 0.03]) < 1e-3
        traj = robot.plan_to(0.15, 0.0, 0.0)
        assert np.allclose(tool_point(robot.arm, traj.q_rad[-1]), [0.15, 0, 0], atol=1e-9)
        assert "tool at (" in str(pose) and str(pose).count(",") >= 2


def test_move_to_wants_z_on_a_base_arm_and_refuses_it_on_a_planar_one():
    with armctl.connect("mearm", FAST) as robot:
        before = robot.where().values
        with pytest.raises(BadInputError, match="give z"):
            robot.move_to(0.15, 0.02)
        with pytest.raises(UnreachableError):
            robot.move_to(0.5, 0.0, 0.0)
        assert robot.where().values == before
    with armctl.connect("seed-3link", FAST) as robot:
        with pytest.raises(BadInputError, match="not z"):
            robot.move_to(0.5, 0.2, 0.1)


def test_plot_draws_top_and_side_views(tmp_path):
    require_module("matplotlib", "plots are drawn with matplotlib (armctl[plot])")
    from matplotlib.image import imread

    from armctl.motion.plot import plot_plan

    plan = plan_program(load_program(ROOT / "examples" / "pick_and_place_mearm.yaml"), MEARM)
    out = tmp_path / "mearm.png"
    plot_plan(plan, out, title="mearm")
    img = imread(out)
    assert img.shape[0] > 0.65 * img.shape[1]  # taller than a planar arm's: top view above side view
    planar = tmp_path / "seed.png"
    plot_plan(plan_program(load_program(ROOT / "examples" / "pick_and_place.yaml"), load_arm("seed-3link")), planar)
    assert imread(planar).shape[0] < 0.6 * imread(planar).shape[1]
