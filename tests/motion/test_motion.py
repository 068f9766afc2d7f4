"""Motion planning: speed profiles, joint moves, line moves, limits and jumps (armctl.motion)."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from armctl.errors import JointLimitError, MotionError, UnreachableError
from armctl.model.arm import Arm, load_arm
from armctl.model.kinematics import fk
from armctl.motion import (
    GripperMove,
    JointMove,
    LineMove,
    Wait,
    branch_ik,
    line_deviation,
    plan_line_path,
    plan_move,
    plan_moves,
    speed_profile,
)

ARM2 = load_arm("seed-2link")
ARM3 = load_arm("seed-3link")
PERIOD = 0.02


def sample_speeds(q, period=PERIOD):
    return np.abs(np.diff(q, axis=0)) / period


def assert_safe(arm: Arm, q):
    """Every sample inside the angle limits and every sample-to-sample speed inside the speed limits."""
    assert np.all(q >= arm.q_min - 1e-9) and np.all(q <= arm.q_max + 1e-9)
    if len(q) > 1:
        assert np.all(sample_speeds(q) <= arm.max_speed_rad_s * (1 + 1e-9))


# --------------------------------------------------------------------------- speed profile


def test_speed_profile_is_a_trapezoid_under_cap_and_accel():
    s = np.linspace(0.0, 1.0, 1001)
    v, t = speed_profile(s, np.full(len(s), 0.2), 0.5)
    assert v[0] == 0 and v[-1] == 0
    assert v.max() == pytest.approx(0.2)
    assert np.all(np.diff(v**2) / np.diff(s) <= 2 * 0.5 + 1e-9)  # |dv^2/ds| = 2 a
    assert np.all(-np.diff(v**2) / np.diff(s) <= 2 * 0.5 + 1e-9)
    # 1 m at 0.2 m/s with 0.4 s ramps at each end: 5 s cruise-equivalent + 0.4 s.
    assert t[-1] == pytest.approx(1.0 / 0.2 + 0.2 / 0.5, rel=1e-3)


def test_speed_profile_short_move_is_a_triangle():
    s = np.linspace(0.0, 0.01, 101)
    v, t = speed_profile(s, np.full(len(s), 1.0), 0.5)
    assert v.max() == pytest.approx(math.sqrt(0.5 * 0.01), rel=1e-3)
    assert t[-1] == pytest.approx(2 * math.sqrt(0.01 / 0.5), rel=1e-3)


def test_speed_profile_dips_under_a_local_cap():
    s = np.linspace(0.0, 1.0, 1001)
    cap = np.full(len(s), 0.2)
    cap[480:520] = 0.05
    v, _ = speed_profile(s, cap, 0.5)
    assert np.all(v <= cap + 1e-12)
    assert v[500] == pytest.approx(0.05)
    assert v[200] == pytest.approx(0.2) and v[800] == pytest.approx(0.2)


# --------------------------------------------------------------------------- joint moves


def test_joint_move_all_joints_start_and_stop_together_and_slowest_sets_time():
    q0 = np.radians([0.0, -90.0])
    q1 = np.radians([60.0, -80.0])  # the shoulder has far more to do
    mp = plan_move(ARM2, JointMove(tuple(q1), speed_fraction=1.0, accel_rad_s2=math.radians(360)), q0, 0.0)
    assert np.allclose(mp.q_rad[0], q0) and np.allclose(mp.q_rad[-1], q1)
    frac = (mp.q_rad - q0) / (q1 - q0)  # progress of each joint
    assert np.allclose(frac[:, 0], frac[:, 1], atol=1e-12)
    assert np.all(np.diff(frac[:, 0]) >= -1e-12)
    # Shoulder: 60 deg at 120 deg/s with 360 deg/s^2 ramps -> 60/120 + 120/360 s.
    assert mp.duration_s == pytest.approx(0.5 + 1 / 3, abs=PERIOD + 0.01)
    peak = np.degrees(sample_speeds(mp.q_rad)).max(axis=0)
    assert peak[0] == pytest.approx(120, rel=0.03)
    assert_safe(ARM2, mp.q_rad)


def test_joint_move_outside_limits_is_refused():
    with pytest.raises(JointLimitError, match="joint 1"):
        plan_move(ARM2, JointMove(tuple(np.radians([100.0, 0.0]))), ARM2.home_rad, 0.0)


def test_gripper_move_and_wait():
    g = ARM3.gripper
    mp = plan_move(ARM3, GripperMove(g.closed_rad), ARM3.home_rad, g.open_rad)
    assert mp.gripper_rad[0] == g.open_rad and mp.gripper_rad[-1] == pytest.approx(g.closed_rad)
    assert np.all(np.abs(np.diff(mp.gripper_rad)) / PERIOD <= g.max_speed_rad_s * (1 + 1e-9))
    assert np.all(mp.q_rad == ARM3.home_rad)
    w = plan_move(ARM3, Wait(0.5), ARM3.home_rad, 0.1)
    assert w.duration_s == pytest.approx(0.5) and np.all(w.gripper_rad == 0.1)


# --------------------------------------------------------------------------- line moves


def test_line_move_follows_the_line_and_ends_on_target():
    mp = plan_move(ARM2, LineMove((0.45, 0.2)), ARM2.home_rad, 0.0)
    start = fk(ARM2.links_m, ARM2.home_rad)
    assert np.allclose(fk(ARM2.links_m, mp.q_rad[-1]), (0.45, 0.2), atol=1e-12)
    assert line_deviation(ARM2, mp.q_rad, start, (0.45, 0.2)) < 2e-5
    assert mp.segments == math.ceil(np.hypot(*(np.array((0.45, 0.2)) - start)) / 0.002 - 1e-9)
    assert_safe(ARM2, mp.q_rad)


def test_line_move_3link_turns_phi_linearly():
    q0 = ARM3.home_rad
    mp = plan_move(ARM3, LineMove((0.5, -0.2), phi_rad=math.radians(-60)), q0, 0.0)
    assert np.sum(mp.q_rad[-1]) == pytest.approx(math.radians(-60))
    assert np.allclose(fk(ARM3.links_m, mp.q_rad[-1]), (0.5, -0.2), atol=1e-12)
    # phi moves monotonically from -90 to -60 deg
    phi = np.degrees(np.sum(mp.q_rad, axis=1))
    assert np.all(np.diff(phi) >= -1e-9)
    assert_safe(ARM3, mp.q_rad)


def test_line_move_3link_without_phi_uses_ik_near_start():
    mp = plan_move(ARM3, LineMove((0.55, 0.1)), ARM3.home_rad, 0.0)
    assert np.allclose(fk(ARM3.links_m, mp.q_rad[-1]), (0.55, 0.1), atol=1e-9)
    assert_safe(ARM3, mp.q_rad)


def test_line_crossing_a_joint_limit_names_the_joint_and_where():
    with pytest.raises(JointLimitError, match=r"joint 1 \(shoulder\) would cross its limit 90 deg \d+% along"):
        plan_move(ARM2, LineMove((0.2, 0.6), label="step 3"), np.radians([-30, -40]), 0.0)


def test_unreachable_target_reports_shortfall():
    with pytest.raises(UnreachableError) as exc:
        plan_move(ARM2, LineMove((0.8, 0.0), label="step 7"), ARM2.home_rad, 0.0)
    assert exc.value.shortfall_m == pytest.approx(0.1)
    assert str(exc.value).startswith("step 7: ")


def test_jump_through_a_singularity_is_refused():
    # Equal links: the tool can pass through the base, where the shoulder would flip by 180 deg.
    arm = Arm.from_lengths([0.3, 0.3])
    q0 = branch_ik(arm, np.array([[0.2, 0.0]]), None, 1.0)[0][0]
    with pytest.raises(MotionError, match="jump"):
        plan_line_path(arm, q0, LineMove((-0.2, 0.0)))


def test_segments_respect_length_and_joint_step_bounds():
    path = plan_line_path(
        ARM2, np.radians([-60, 60]), LineMove((0.3, 0.5), segment_m=0.005), max_joint_step_rad=math.radians(0.5)
    )
    assert np.all(np.diff(path.s) <= 0.005 + 1e-12)
    assert np.all(np.abs(np.diff(path.q, axis=0)) <= math.radians(0.5) + 1e-12)
    plain_cut = math.ceil(np.hypot(*(path.end - path.start)) / 0.005)
    assert len(path.s) - 1 > plain_cut  # refined beyond the plain cut where the joints move fast
    assert np.allclose(fk(ARM2.links_m, path.q), path.points, atol=1e-12)


def test_near_full_extension_is_slower_not_faster():
    """The same 100 mm radial line is slower when it ends near full reach (seed 001's table)."""
    move = dict(speed_m_s=0.3, accel_m_s2=50.0)
    # joint acceleration limits far out of the way: this is about the speed limits alone
    arm = dataclasses.replace(ARM2, max_accel_given_rad_s2=np.full(ARM2.n, 1e6))

    def radial(r0, r1):
        q0 = branch_ik(arm, np.array([[r0, 0.0]]), None, -1.0)[0][0]
        mp = plan_move(arm, LineMove((r1, 0.0), **move), q0, 0.0)
        assert_safe(arm, mp.q_rad)
        tool = fk(arm.links_m, mp.q_rad)
        v = np.hypot(*np.diff(tool, axis=0).T) / PERIOD
        to_go = r1 - 0.5 * (tool[1:, 0] + tool[:-1, 0])  # distance left to the end of the line (m)
        return mp, v, to_go

    bent, v_bent, go_bent = radial(0.30, 0.40)
    straight, v_straight, go_straight = radial(0.59, 0.69)
    assert straight.duration_s > bent.duration_s
    assert straight.slowed and not bent.slowed
    assert v_straight.max() <= 0.3 * (1 + 1e-6) and v_bent.max() <= 0.3 * (1 + 1e-6)
    # 3..10 mm before the end, the nearly straight arm moves the tool clearly slower.
    near = lambda go: (go > 0.003) & (go < 0.010)  # noqa: E731
    assert v_straight[near(go_straight)].max() < 0.85 * v_bent[near(go_bent)].min()
    assert np.degrees(sample_speeds(straight.q_rad)).max(axis=0)[1] > 0.9 * 150  # the elbow runs at its limit


# --------------------------------------------------------------------------- properties


@st.composite
def random_line(draw, arm):
    """A start pose inside the limits and a target from another pose on the same elbow branch."""
    u0 = draw(st.lists(st.floats(0.02, 0.98), min_size=arm.n, max_size=arm.n))
    u1 = draw(st.lists(st.floats(0.02, 0.98), min_size=arm.n, max_size=arm.n))
    q0 = arm.q_min + np.array(u0) * (arm.q_max - arm.q_min)
    q1 = arm.q_min + np.array(u1) * (arm.q_max - arm.q_min)
    q1[1] = math.copysign(abs(q1[1]), q0[1] if q0[1] != 0 else 1.0)
    speed = draw(st.floats(0.02, 0.5))
    accel = draw(st.floats(0.1, 5.0))
    seg = draw(st.sampled_from([0.001, 0.002, 0.005]))
    phi = float(np.sum(q1)) if arm.n == 3 and draw(st.booleans()) else None
    return q0, LineMove(tuple(fk(arm.links_m, q1)), phi_rad=phi, speed_m_s=speed, accel_m_s2=accel, segment_m=seg)


def check_line_plan(arm, q0, move, mp):
    assert_safe(arm, mp.q_rad)
    # starts at the start pose, ends on the target, at rest at both ends
    assert np.allclose(mp.q_rad[0], q0, atol=1e-9)
    assert np.allclose(fk(arm.links_m, mp.q_rad[-1]), move.target_m, atol=1e-9)
    if len(mp.q_rad) < 2:  # already there: nothing to do
        return
    tool = fk(arm.links_m, mp.q_rad)
    step = np.hypot(*np.diff(tool, axis=0).T)
    assert step[0] <= move.accel_m_s2 * PERIOD**2 * 1.01 + 1e-9
    assert step[-1] <= move.accel_m_s2 * PERIOD**2 * 1.01 + 1e-9
    # never faster than asked along the line
    assert np.all(step / PERIOD <= move.speed_m_s * (1 + 1e-6) + 1e-9) or move.phi_rad is not None
    # the tool stays on the line at the samples and between them (joints interpolated linearly)
    start = fk(arm.links_m, q0)
    assert line_deviation(arm, mp.q_rad, start, move.target_m, sub=8) < 2e-4


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_random_lines_2link_stay_safe_and_on_the_line(data):
    q0, move = data.draw(random_line(ARM2))
    try:
        mp = plan_move(ARM2, move, q0, 0.0)
    except MotionError:
        assume(False)
        return
    check_line_plan(ARM2, q0, move, mp)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_random_lines_3link_stay_safe_and_on_the_line(data):
    q0, move = data.draw(random_line(ARM3))
    try:
        mp = plan_move(ARM3, move, q0, 0.0)
    except MotionError:
        assume(False)
        return
    check_line_plan(ARM3, q0, move, mp)


def test_plan_moves_chains_moves_into_one_trajectory():
    moves = [LineMove((0.45, 0.2), label="a"), Wait(0.2, label="b"), JointMove(tuple(ARM2.home_rad), label="c")]
    plan = plan_moves(ARM2, moves)
    tr = plan.trajectory
    assert np.allclose(tr.t_s, np.arange(len(tr)) * PERIOD)
    assert tr.steps == ["a", "b", "c"]
    assert list(np.unique(tr.step)) == [0, 1, 2]
    assert np.allclose(tr.q_rad[0], ARM2.home_rad) and np.allclose(tr.q_rad[-1], ARM2.home_rad)
    assert tr.duration_s == pytest.approx(sum(mp.duration_s for mp in plan.moves))
    assert_safe(ARM2, tr.q_rad)
    s = plan.summary()
    assert s["segments"] == plan.moves[0].segments + 1
    assert all(
        p <= lim * (1 + 1e-9) for p, lim in zip(s["peak_joint_speed_deg_s"], s["joint_speed_limit_deg_s"], strict=True)
    )


def test_a_sub_millimetre_line_still_ramps():
    """Regression: a 0.7 mm line was one segment with no interior point, timed as a one-frame jump."""
    q0 = np.array([0.0, -0.45099035])
    target = tuple(fk(ARM2.links_m, q0) + np.array([-0.0003, -0.00066]))
    mp = plan_move(ARM2, LineMove(target, speed_m_s=0.5, accel_m_s2=1.0), q0, 0.0)
    step = np.hypot(*np.diff(fk(ARM2.links_m, mp.q_rad), axis=0).T)
    assert len(mp.t_s) > 3
    assert step[0] <= 1.0 * PERIOD**2 and step[-1] <= 1.0 * PERIOD**2


def test_s_curve_limits_jerk_and_keeps_the_path():
    q0 = ARM2.home_rad
    trap = plan_move(ARM2, LineMove((0.45, 0.2), accel_m_s2=0.5), q0, 0.0)
    smooth = plan_move(ARM2, LineMove((0.45, 0.2), accel_m_s2=0.5, jerk_time_s=0.2), q0, 0.0)

    def jerk(mp):
        tool = fk(ARM2.links_m, mp.q_rad)
        v = np.hypot(*np.diff(tool, axis=0).T) / PERIOD
        a = np.diff(v) / PERIOD
        return np.abs(np.diff(a)).max() / PERIOD, np.abs(a).max(), v.max()

    j_trap, a_trap, v_trap = jerk(trap)
    j_s, a_s, v_s = jerk(smooth)
    assert j_s <= 0.5 / 0.2 * 1.3  # jerk about accel / jerk time
    assert j_trap > 5 * j_s  # the trapezoid's acceleration steps
    assert a_s <= 0.5 * 1.05 and v_s <= 0.1 * (1 + 1e-6) and v_trap <= 0.1 * (1 + 1e-6)
    assert smooth.duration_s == pytest.approx(trap.duration_s + 0.2, abs=2 * PERIOD)
    assert np.allclose(smooth.q_rad[-1], trap.q_rad[-1])
    assert line_deviation(ARM2, smooth.q_rad, fk(ARM2.links_m, q0), (0.45, 0.2)) < 2e-5
    assert_safe(ARM2, smooth.q_rad)
