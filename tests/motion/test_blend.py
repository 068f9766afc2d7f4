"""Blended corners and joint acceleration limits (armctl.motion.blend_chain, joint_accel_profile; programs'
blend_mm / stop; run/plan --blend)."""

from __future__ import annotations

import dataclasses
import json
import math

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, example, given, settings
from hypothesis import strategies as st

from armctl.cli import main
from armctl.errors import ConfigError, MotionError
from armctl.model.arm import load_arm, parse_arm
from armctl.model.kinematics import tool_point
from armctl.motion import GripperMove, LineMove, Wait, plan_moves, solve_pose
from armctl.program import load_program_text, plan_program

ARM3 = load_arm("seed-3link")
DOWN = -math.pi / 2


def dense_tool(arm, q, sub=4):
    f = np.linspace(0.0, 1.0, sub + 1)[:-1]
    qq = (q[:-1, None, :] + f[None, :, None] * np.diff(q, axis=0)[:, None, :]).reshape(-1, q.shape[1])
    return tool_point(arm, np.concatenate([qq, q[-1:]]))


def polyline_distance(points, vertices):
    a, b = np.asarray(vertices[:-1], dtype=float), np.asarray(vertices[1:], dtype=float)
    d = b - a
    u = np.clip(((points[:, None, :] - a[None]) * d[None]).sum(-1) / (d * d).sum(-1)[None], 0.0, 1.0)
    return np.linalg.norm(points[:, None, :] - (a[None] + u[..., None] * d[None]), axis=-1).min(axis=1)


def tool_speed(arm, traj):
    p = tool_point(arm, traj.q_rad)
    return np.linalg.norm(np.diff(p, axis=0), axis=1) / traj.period_s


def assert_limits(arm, traj, tool_accel=None):
    """Every sampled joint speed and acceleration within its limit (and the tool's acceleration)."""
    q, T = traj.q_rad, traj.period_s
    assert np.all(np.abs(np.diff(q, axis=0)) / T <= arm.max_speed_rad_s * (1 + 1e-9))
    assert np.all(np.abs(np.diff(q, 2, axis=0)) / T**2 <= arm.max_accel_rad_s2 * 1.01)
    assert arm.within_limits(q.T.reshape(arm.n, -1).T[0])
    if tool_accel is not None:
        p = tool_point(arm, q)
        assert np.linalg.norm(np.diff(p, 2, axis=0), axis=1).max() / T**2 <= tool_accel * 1.01


def polygon(n=100, r=0.1, c=(0.5, 0.0)):
    return [(c[0] + r * math.cos(2 * math.pi * k / n), c[1] + r * math.sin(2 * math.pi * k / n)) for k in range(n + 1)]


def plan_polyline(pts, blend, arm=ARM3, speed=0.1, accel=0.5, phi=DOWN, **kw):
    q0 = solve_pose(arm, pts[0], phi, arm.home_rad)
    moves = [LineMove(p, phi_rad=phi, speed_m_s=speed, accel_m_s2=accel, blend_m=blend, **kw) for p in pts[1:]]
    return plan_moves(arm, moves, q_start=q0)


def test_polygon_blended_within_tolerance_and_near_cruise_speed():
    pts = polygon()
    blend = 0.001
    plan = plan_polyline(pts, blend)
    stop = plan_polyline(pts, 0.0)
    traj = plan.trajectory
    dev = polyline_distance(dense_tool(ARM3, traj.q_rad), pts).max()
    assert dev <= blend
    perimeter = sum(math.dist(a, b) for a, b in zip(pts[:-1], pts[1:], strict=True))
    assert traj.duration_s <= 1.2 * perimeter / 0.1  # the issue's goal, against constant cruise speed
    assert traj.duration_s < 0.5 * stop.trajectory.duration_s
    assert_limits(ARM3, traj, tool_accel=0.5)
    v = tool_speed(ARM3, traj)
    assert v[len(v) // 4 : -len(v) // 4].min() > 0.09  # cruising, not stopping at vertices
    assert np.allclose(traj.q_rad[-1], stop.trajectory.q_rad[-1], atol=1e-9)  # ends exactly where the last line does
    assert plan.summary()["max_path_deviation_m"] <= blend


def test_square_corners_rounded_within_blend_and_stop_true_rests():
    c = (0.5, 0.0)
    pts = [
        (c[0] - 0.05, c[1] - 0.05),
        (c[0] + 0.05, c[1] - 0.05),
        (c[0] + 0.05, c[1] + 0.05),
        (c[0] - 0.05, c[1] + 0.05),
    ]
    blend = 0.005
    plan = plan_polyline(pts, blend)
    tool = dense_tool(ARM3, plan.trajectory.q_rad)
    assert polyline_distance(tool, pts).max() <= blend
    # it did round: the tool does not pass through the corner
    corner = np.asarray(pts[1])
    assert np.linalg.norm(tool - corner, axis=1).min() > 0.5 * blend
    v = tool_speed(ARM3, plan.trajectory)
    assert v[5:-5].min() > 0.01  # no stop between the first and the last point
    assert_limits(ARM3, plan.trajectory, tool_accel=0.5)
    # stop: true on the second line: the arm rests at its end (the third corner is still rounded)
    q0 = solve_pose(ARM3, pts[0], DOWN, ARM3.home_rad)
    moves = [
        LineMove(pts[1], phi_rad=DOWN, blend_m=blend),
        LineMove(pts[2], phi_rad=DOWN, blend_m=blend, stop=True),
        LineMove(pts[3], phi_rad=DOWN, blend_m=blend),
    ]
    p2 = plan_moves(ARM3, moves, q_start=q0)
    tool2 = tool_point(ARM3, p2.trajectory.q_rad)
    assert np.linalg.norm(tool2 - np.asarray(pts[2]), axis=1).min() < 1e-9  # passes the corner exactly
    assert np.linalg.norm(tool2 - np.asarray(pts[1]), axis=1).min() > 0.5 * blend


def test_blend_zero_is_todays_plan_exactly():
    pts = polygon(n=12)
    a = plan_polyline(pts, 0.0).trajectory
    q0 = solve_pose(ARM3, pts[0], DOWN, ARM3.home_rad)
    b = plan_moves(ARM3, [LineMove(p, phi_rad=DOWN, speed_m_s=0.1, accel_m_s2=0.5) for p in pts[1:]], q_start=q0)
    assert np.array_equal(a.q_rad, b.trajectory.q_rad)


def test_gripper_and_wait_end_a_blended_run():
    pts = polygon(n=8)
    q0 = solve_pose(ARM3, pts[0], DOWN, ARM3.home_rad)
    moves = [LineMove(p, phi_rad=DOWN, blend_m=0.003) for p in pts[1:4]]
    moves += [GripperMove(ARM3.gripper.closed_rad), Wait(0.1)]
    moves += [LineMove(p, phi_rad=DOWN, blend_m=0.003) for p in pts[4:7]]
    plan = plan_moves(ARM3, moves, q_start=q0)
    tool = tool_point(ARM3, plan.trajectory.q_rad)
    # the arm reaches pts[3] exactly (rest for the gripper) but rounds pts[1], pts[2], pts[4], pts[5]
    assert np.linalg.norm(tool - np.asarray(pts[3]), axis=1).min() < 1e-9
    for k in (1, 2, 4, 5):
        assert np.linalg.norm(tool - np.asarray(pts[k]), axis=1).min() > 1e-4
    blended = [mp.blended for mp in plan.moves]
    assert blended == [True, True, True, False, False, True, True, True]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(st.tuples(st.floats(0.42, 0.62), st.floats(-0.15, 0.15)), min_size=3, max_size=7),
    st.floats(0.0005, 0.02),
    st.floats(0.05, 0.3),
)
def test_random_polylines_stay_within_blend_and_limits(pts, blend, speed):
    """Random polylines: the sampled tool path stays within blend_mm of the polyline, every limit holds."""
    assume(all(math.dist(a, b) > 0.002 for a, b in zip(pts[:-1], pts[1:], strict=False)))
    try:
        plan = plan_polyline(pts, blend, speed=speed)
    except MotionError:
        assume(False)
    tool = dense_tool(ARM3, plan.trajectory.q_rad)
    assert polyline_distance(tool, pts).max() <= blend + 1e-9
    assert_limits(ARM3, plan.trajectory, tool_accel=0.5)
    assert np.linalg.norm(tool[-1] - np.asarray(pts[-1])) < 1e-9


# --- joint acceleration limits


def test_arm_file_max_accel_and_default():
    assert np.allclose(ARM3.max_accel_rad_s2, 10.0 * ARM3.max_speed_rad_s)
    doc = {
        "name": "a",
        "links_m": [0.4, 0.3],
        "joints": [
            {"min_deg": -90, "max_deg": 90, "max_speed_deg_s": 120, "max_accel_deg_s2": 300},
            {"min_deg": -135, "max_deg": 135, "max_speed_deg_s": 150},
        ],
        "home_deg": [45, -90],
    }
    arm = parse_arm(doc, "a.yaml")
    assert np.allclose(np.degrees(arm.max_accel_rad_s2), [300, 1500])
    doc["joints"][0]["max_accel_deg_s2"] = -1
    with pytest.raises(ConfigError, match="max_accel_deg_s2"):
        parse_arm(doc, "a.yaml")


def test_line_near_full_reach_respects_joint_acceleration():
    """A fast radial line ending near full reach: the Cartesian profile alone would accelerate the joints
    beyond their limits; the planner keeps every sampled joint acceleration within them."""
    arm2 = load_arm("seed-2link")
    slow = dataclasses.replace(arm2, max_accel_given_rad_s2=np.radians([200.0, 200.0]))
    free = dataclasses.replace(arm2, max_accel_given_rad_s2=np.full(2, 1e6))
    q0 = solve_pose(arm2, (0.45, 0.0), None, arm2.home_rad)
    move = LineMove((0.69, 0.0), speed_m_s=0.3, accel_m_s2=3.0)
    fast = plan_moves(free, [move], q_start=q0).trajectory
    peak = (np.abs(np.diff(fast.q_rad, 2, axis=0)) / fast.period_s**2).max()
    assert peak > np.radians(200.0) * 1.5  # the limit would bind
    plan = plan_moves(slow, [move], q_start=q0).trajectory
    assert_limits(slow, plan)
    assert plan.duration_s > fast.duration_s


def test_joint_move_respects_joint_acceleration():
    slow = dataclasses.replace(ARM3, max_accel_given_rad_s2=np.radians([90.0, 90.0, 90.0]))
    from armctl.motion import JointMove

    plan = plan_moves(slow, [JointMove(tuple(np.radians([0.0, -60.0, -30.0])), accel_rad_s2=math.radians(720))])
    assert_limits(slow, plan.trajectory)


# --- programs and the command line

PROGRAM = """
arm: seed-3link
settings: {speed_mm_s: 100, accel_mm_s2: 500, blend_mm: 3}
poses:
  a: {xy_mm: [450, -50], phi_deg: -90}
  b: {xy_mm: [550, -50], phi_deg: -90}
  c: {xy_mm: [550, 50], phi_deg: -90}
  d: {xy_mm: [450, 50], phi_deg: -90}
  e: {xy_mm: [480, 20], phi_deg: -90}
start: a
steps:
  - {line: b}
  - {line: c, blend_mm: 0}
  - {line: d}
  - {line: a, stop: true}
  - {line: e}
"""


def test_program_blend_settings_and_steps():
    prog = load_program_text(PROGRAM)
    assert prog.settings.blend_m == pytest.approx(0.003)
    assert prog.steps[1].blend_m == 0.0 and prog.steps[3].stop
    plan = plan_program(prog, ARM3)
    tool = tool_point(ARM3, plan.trajectory.q_rad)
    at = {
        k: np.linalg.norm(tool - np.array(v) / 1000, axis=1).min()
        for k, v in {"b": (550, -50), "c": (550, 50), "d": (450, 50), "a": (450, -50)}.items()
    }
    assert at["b"] > 1e-4  # rounded (blend 3 mm from the settings)
    assert at["c"] < 1e-9  # step 2 has blend_mm: 0
    assert at["d"] > 1e-4
    assert at["a"] < 1e-9  # start and step 4 (stop: true)
    assert plan.summary()["max_path_deviation_m"] <= 0.003


@pytest.mark.parametrize(
    "bad, what",
    [("blend_mm: -1", "blend_mm"), ("blend_mm: 900", "blend_mm"), ("stop: yes please", "stop")],
)
def test_program_bad_blend_values(bad, what):
    text = PROGRAM.replace("  - {line: b}\n  - {line: c", f"  - {{line: b, {bad}}}\n  - {{line: c", 1)
    with pytest.raises(ConfigError, match=what):
        load_program_text(text)


def test_cli_blend_option(tmp_path, capsys):
    f = tmp_path / "p.yaml"
    f.write_text(PROGRAM.replace(", blend_mm: 3", ""))
    assert main(["plan", str(f), "--json"]) == 0
    plain = json.loads(capsys.readouterr().out)
    assert main(["plan", str(f), "--json", "--blend", "4"]) == 0
    blended = json.loads(capsys.readouterr().out)
    assert blended["summary"]["duration_s"] < plain["summary"]["duration_s"]
    assert 0 < blended["summary"]["max_path_deviation_m"] <= 0.004
    assert main(["run", str(f), "--dry-run", "--blend", "4"]) == 0
    capsys.readouterr()
    assert main(["plan", str(f), "--blend", "-2"]) == 2
    err = capsys.readouterr().err
    assert "--blend" in err and len(err.strip().splitlines()) == 1


# --- the Python API: move_to(..., blend=) chains wait=False lines


def test_robot_move_to_blend_chains_queued_lines():
    import armctl
    from armctl.errors import BadInputError

    square = [(0.52, -0.05), (0.52, 0.0), (0.47, 0.0), (0.47, -0.05)]
    with armctl.connect("seed-3link", "armsim://?rate=20") as robot:
        robot.move_to(0.47, -0.05, phi=DOWN)
        ms = [robot.move_to(x, y, phi=DOWN, speed=0.2, blend=0.004, wait=False) for x, y in square]
        res = ms[-1].wait(30)
        assert all(m.done for m in ms) and ms[0].chain == ms[1:]
        traj = ms[0].trajectory  # the chain, played as one motion
        tool = dense_tool(ARM3, traj.q_rad)
        assert polyline_distance(tool, [(0.47, -0.05), *square]).max() <= 0.004
        assert np.linalg.norm(tool - np.array(square[1]), axis=1).min() > 0.001  # rounded, not stopped
        assert math.dist(robot.where(settle=True).tool_m, square[-1]) < 0.002
        assert res.duration_s == pytest.approx(traj.duration_s)
        with pytest.raises(BadInputError, match="blend"):
            robot.move_to(0.5, 0.0, phi=DOWN, blend=-0.001)
        with pytest.raises(BadInputError, match="blend"):
            robot.move_to(0.5, 0.0, phi=DOWN, blend=-0.002, path="joint", wait=False)
        with pytest.raises(BadInputError, match="blend"):
            robot.move_joints([40, -80, -50], degrees=True, blend=float("nan"), wait=False)


def test_robot_joint_moves_blend_into_the_chain_too():
    """``move_joints(..., blend=)`` and ``move_to(..., path="joint", blend=)`` queued with ``wait=False`` join a
    chain with blended lines: played as one motion, exactly what the planner makes of those moves (within the
    blend of each move's own path, every limit kept), faster than stopping at each shared pose."""
    import armctl
    from tests.motion.test_blend_joint import assert_blended_ok

    via1, via2 = np.radians([20, -60, -50]), np.radians([0, -30, -60])
    p2 = tool_point(ARM3, via2)
    corner = p2 + (0.0, 0.05)
    with armctl.connect("seed-3link", "armsim://?rate=20") as robot:
        robot.home()
        ms = [
            robot.move_joints(via1, blend=0.005, wait=False),
            robot.move_to(*p2, phi=float(np.sum(via2)), path="joint", blend=0.005, wait=False),
            robot.move_to(*corner, speed=0.2, blend=0.005, wait=False),
            robot.move_to(*tool_point(ARM3, via1), speed=0.2, wait=False),
        ]
        ms[-1].wait(30)
        assert all(m.done for m in ms) and ms[0].chain == ms[1:]  # played as one motion
        blended = ms[0].moves
        assert [type(m).__name__ for m in blended] == ["JointMove", "JointMove", "LineMove", "LineMove"]
        assert np.allclose(blended[1].q_rad, via2, atol=1e-6)  # the joint path's pose, solved from its start
        assert math.dist(robot.where(settle=True).tool_m, tool_point(ARM3, via1)) < 0.002
        traj = ms[0].trajectory
    q0 = traj.q_rad[0]
    assert np.allclose(plan_moves(ARM3, blended, q_start=q0).trajectory.q_rad, traj.q_rad, atol=1e-12)
    stopped = plan_moves(ARM3, [dataclasses.replace(m, blend_m=0.0) for m in blended], q_start=q0)

    class Plan:
        trajectory = traj

    assert_blended_ok(ARM3, Plan, stopped, 0.005, blended)
    assert traj.duration_s < stopped.trajectory.duration_s - 0.1
    # the joint move into the joint move, and the lines, overlap: the moves before those corners end sooner
    n_blended, n_stopped = (np.bincount(t.step, minlength=4) for t in (traj, stopped.trajectory))
    assert n_blended[0] < n_stopped[0] - 3 and n_blended[2] + n_blended[3] < n_stopped[2] + n_stopped[3]


def test_blended_corners_with_a_turning_tool_keep_joint_speeds_continuous():
    """Lines whose tool angle changes at every corner: the rounding turns the tool along a Bezier too, so no
    joint's speed jumps where a rounding starts or ends (sampled accelerations within the limits) and the
    chain is not slowed down to a crawl at the corners."""
    pts = [(0.45, -0.1), (0.55, -0.1), (0.55, 0.0), (0.45, 0.0), (0.45, 0.08)]
    phis = [-90.0, -75.0, -60.0, -80.0, -95.0]
    q0 = solve_pose(ARM3, pts[0], math.radians(phis[0]), ARM3.home_rad)
    moves = [
        LineMove(p, phi_rad=math.radians(f), speed_m_s=0.1, accel_m_s2=0.5, blend_m=0.004)
        for p, f in zip(pts[1:], phis[1:], strict=True)
    ]
    plan = plan_moves(ARM3, moves, q_start=q0)
    assert all(mp.blended for mp in plan.moves)
    assert_limits(ARM3, plan.trajectory, tool_accel=0.5)
    v = tool_speed(ARM3, plan.trajectory)
    assert v[10:-10].min() > 0.03
    tool = dense_tool(ARM3, plan.trajectory.q_rad)
    assert polyline_distance(tool, pts).max() <= 0.004


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(st.tuples(st.floats(0.10, 0.17), st.floats(-0.08, 0.08), st.floats(-0.02, 0.06)), min_size=3, max_size=6),
    st.floats(0.001, 0.01),
    st.booleans(),
)
def test_random_polylines_on_a_base_arm(pts, blend, s_curve):
    """The MeArm (a base and a parallelogram): blended polylines in space stay within blend of the polyline,
    every limit holds (the S-curve profile too)."""
    arm = load_arm("mearm")
    assume(all(math.dist(a, b) > 0.002 for a, b in zip(pts[:-1], pts[1:], strict=False)))
    try:
        q0 = solve_pose(arm, pts[0], None, arm.home_rad)
        moves = [
            LineMove(p, speed_m_s=0.05, accel_m_s2=0.3, blend_m=blend, jerk_time_s=0.1 if s_curve else 0.0)
            for p in pts[1:]
        ]
        plan = plan_moves(arm, moves, q_start=q0)
    except MotionError:
        assume(False)
    tool = dense_tool(arm, plan.trajectory.q_rad)
    assert polyline_distance(tool, pts).max() <= blend + 1e-9
    q, T = plan.trajectory.q_rad, plan.trajectory.period_s
    assert np.all(np.abs(np.diff(q, axis=0)) / T <= arm.max_speed_rad_s * (1 + 1e-9))
    assert np.all(np.abs(np.diff(q, 2, axis=0)) / T**2 <= arm.max_accel_rad_s2 * 1.01)
    assert all(arm.within_limits(x) for x in q)
    assert np.linalg.norm(tool[-1] - np.asarray(pts[-1])) < 1e-9


@pytest.mark.parametrize("n", [3, 4, 20])
@pytest.mark.parametrize("jerk", [0.0, 0.1])
def test_fast_tight_corners_within_blend_between_samples_and_tool_accel(n, jerk):
    """Fast corners covered by a few samples: the servo's straight steps between samples cut inside the
    rounding, so the deviation is measured finely between samples (it was 1.05 mm at blend 1 mm on the
    20-gon at 300 mm/s); and the S-curve's averaged speed must not lift the corner speed above v^2 kappa's cap
    (the tool accelerated at 1.57x its limit on the triangle)."""
    pts = polygon(n=n)
    plan = plan_polyline(pts, 0.001, speed=0.3, accel=2.0, jerk_time_s=jerk)
    tool = dense_tool(ARM3, plan.trajectory.q_rad, sub=64)
    assert polyline_distance(tool, pts).max() <= 0.001 + 1e-9
    assert_limits(ARM3, plan.trajectory, tool_accel=2.0)
    stop = plan_polyline(pts, 0.0, speed=0.3, accel=2.0, jerk_time_s=jerk)
    assert plan.trajectory.duration_s < stop.trajectory.duration_s


# corners 0.5044 and 0.5004 mm from the polyline at blend 0.5 mm: the planner let a corner add its lines' own deviation
# between samples (7.7 um, mid-line at full speed) to the blend distance
@example(pts=[(0.55859375, 0.078125), (0.4375, 0.0), (0.42, 0.0)], blend=0.0005, speed=0.28125, jerk=0.0)
@example(pts=[(0.6178197385419284, 0.0), (0.6015625, 0.0), (0.42, 0.13671875)], blend=0.0005, speed=0.25, jerk=0.0)
# a 169 degree turn with the S-curve: the tool at 1.32x its acceleration (the smoothed speed checked against the
# larger cap either side of the rounding's sharpest grid point)
@example(
    pts=[
        (0.5555490133837582, 0.07234732624714321),
        (0.4578383082255584, 0.0),
        (0.586574621210411, 0.060997122223676536),
    ],
    blend=0.0008146020423049757,
    speed=0.31384347151915465,
    jerk=0.1,
)
# a corner tightened 4% came out only 0.7% closer (S-curve re-timing, the servo's chords) while the next went over:
# 0.536 mm at blend 0.52 mm; the re-planning gave up as "did not help"
@example(
    pts=[
        (0.46425072971154474, 0.0959067582824972),
        (0.49899382113942287, 0.07089784682011635),
        (0.5640511339112302, 0.0),
        (0.5909936326717167, -0.009428922223035374),
    ],
    blend=0.0005200264010918852,
    speed=0.33984375,
    jerk=0.1,
)
# a tighter rounding came out further off (0.5105 mm at blend 0.5 mm: its sharper bend cut more by the servo's
# straight steps); the corner is now also slowed so the steps bulge less
@example(
    pts=[
        (0.59375, 0.0625),
        (0.59765625, 0.0),
        (0.5851631524699741, 0.0),
        (0.5, -0.037109375),
        (0.455940160527051, 0.09375),
    ],
    blend=0.0005,
    speed=0.2,
    jerk=0.1,
)
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(st.tuples(st.floats(0.42, 0.62), st.floats(-0.15, 0.15)), min_size=3, max_size=6),
    st.floats(0.0005, 0.01),
    st.floats(0.1, 0.4),
    st.sampled_from([0.0, 0.1]),
)
def test_random_fast_polylines_within_blend_between_samples(pts, blend, speed, jerk):
    """Random fast polylines (2 m/s^2, trapezoid or S-curve): within blend_mm at 32 points between samples,
    every joint limit and the tool acceleration held."""
    assume(all(math.dist(a, b) > 0.002 for a, b in zip(pts[:-1], pts[1:], strict=False)))
    try:
        plan = plan_polyline(pts, blend, speed=speed, accel=2.0, jerk_time_s=jerk)
    except MotionError:
        assume(False)
    tool = dense_tool(ARM3, plan.trajectory.q_rad, sub=32)
    assert polyline_distance(tool, pts).max() <= blend + 1e-9
    assert_limits(ARM3, plan.trajectory, tool_accel=2.0)


@pytest.mark.parametrize("example", ["pick_and_place_mearm.yaml", "pick_and_place_so101.yaml", "pick_and_place.yaml"])
def test_blended_s_curve_holds_joint_acceleration_where_it_binds(example):
    """Blended at 5 mm with the S-curve and every joint's acceleration limit cut to 1/16 (so it binds): the
    averaged speed through a bend must not lift a joint's q_ss s'^2 over its limit (it reached 1.11x on the
    SO-101 program)."""
    from pathlib import Path

    from armctl.program import load_program, with_blend

    prog = with_blend(load_program(Path(__file__).resolve().parents[2] / "examples" / example), 5.0)
    prog = dataclasses.replace(prog, settings=dataclasses.replace(prog.settings, jerk_time_s=0.1))
    arm = load_arm(prog.arm_name or "seed-3link")
    arm = dataclasses.replace(arm, max_accel_given_rad_s2=arm.max_accel_rad_s2 / 16)
    traj = plan_program(prog, arm).trajectory
    q, T = traj.q_rad, traj.period_s
    assert np.all(np.abs(np.diff(q, 2, axis=0)) / T**2 <= arm.max_accel_rad_s2 * (1 + 1e-6))
    assert np.all(np.abs(np.diff(q, axis=0)) / T <= arm.max_speed_rad_s * (1 + 1e-9))
