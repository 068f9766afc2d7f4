"""Blending joint moves (armctl.motion.blend_joint_moves): a joint move into the joint move or line after it,
and a line into a joint move, overlapped in time so the arm does not stop at the shared pose; every limit on
the sampled trajectory, the tool within blend_mm of both moves' own tool paths, faster than stopping, and
nothing changed at blend 0 or where a step says stop."""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, example, given, settings
from hypothesis import strategies as st

from armctl.errors import ConfigError, MotionError
from armctl.model.arm import load_arm
from armctl.model.kinematics import tool_point
from armctl.motion import JointMove, LineMove, plan_moves
from armctl.motion.torque import carrying
from armctl.program import load_program, load_program_text, plan_program, with_blend

ROOT = Path(__file__).resolve().parents[2]
ARM3 = load_arm("seed-3link")


def dense(q, sub):
    f = np.linspace(0.0, 1.0, sub + 1)[:-1]
    qq = (q[:-1, None, :] + f[None, :, None] * np.diff(q, axis=0)[:, None, :]).reshape(-1, q.shape[1])
    return np.concatenate([qq, q[-1:]])


def distance_to_path(points, path):
    """Each point's distance to the polyline ``path`` (an independent oracle: brute force over all segments)."""
    a, b = path[:-1], path[1:]
    d = b - a
    dd = np.maximum((d * d).sum(-1), 1e-300)
    out = []
    for p in np.array_split(points, max(1, len(points) // 200)):
        u = np.clip(((p[:, None, :] - a[None]) * d[None]).sum(-1) / dd[None], 0.0, 1.0)
        out.append(np.linalg.norm(p[:, None, :] - (a[None] + u[..., None] * d[None]), axis=-1).min(axis=1))
    return np.concatenate(out)


def assert_blended_ok(arm, blended, stopped, blend_m, moves=None):
    """Limits on the sampled trajectory, deviation from the unblended tool path, same end, not slower."""
    q, T = blended.trajectory.q_rad, blended.trajectory.period_s
    assert np.all(np.abs(np.diff(q, axis=0)) / T <= arm.max_speed_rad_s * (1 + 1e-9))
    assert np.all(np.abs(np.diff(q, 2, axis=0)) / T**2 <= arm.max_accel_rad_s2 * (1 + 1e-9))
    assert all(arm.within_limits(x) for x in q)
    # each move's samples against the unblended path of that move and two either side (a short move's samples
    # can go wholly to the next: overlaps chain), 8 points between samples
    qs, steps_b, steps_s = stopped.trajectory.q_rad, blended.trajectory.step, stopped.trajectory.step
    for i in np.unique(steps_b):
        mine = np.nonzero(steps_b == i)[0]
        near = np.nonzero(np.abs(steps_s - i) <= 2)[0]
        ref = tool_point(arm, dense(qs[max(near[0] - 1, 0) : near[-1] + 1], 8))
        pts = tool_point(arm, dense(q[max(mine[0] - 1, 0) : mine[-1] + 1], 8))
        assert distance_to_path(pts, ref).max() <= blend_m + 1e-9
    assert np.allclose(q[-1], stopped.trajectory.q_rad[-1], atol=1e-12)
    assert blended.trajectory.duration_s <= stopped.trajectory.duration_s + 1e-9
    if moves is not None:  # joint moves' own speed share and acceleration hold wherever only joint moves play
        top_v = max(m.speed_fraction for m in moves if isinstance(m, JointMove))
        top_a = max(m.accel_rad_s2 for m in moves if isinstance(m, JointMove))
        if all(isinstance(m, JointMove) for m in moves):
            assert np.all(np.abs(np.diff(q, axis=0)) / T <= top_v * arm.max_speed_rad_s * (1 + 1e-9))
            assert np.all(np.abs(np.diff(q, 2, axis=0)) / T**2 <= top_a * (1 + 1e-9))


VIA = [(45, -90, -45), (20, -60, -50), (0, -30, -60), (-20, 10, -70)]


def via_moves(blend, **kw):
    return [JointMove(tuple(np.radians(v)), blend_m=blend, **kw) for v in VIA[1:]]


def test_joint_via_points_blend_faster_within_blend():
    q0 = np.radians(VIA[0])
    stopped = plan_moves(ARM3, via_moves(0.0), q_start=q0)
    moves = via_moves(0.005)
    blended = plan_moves(ARM3, moves, q_start=q0)
    assert blended.trajectory.duration_s < stopped.trajectory.duration_s - 0.2
    assert_blended_ok(ARM3, blended, stopped, 0.005, moves)
    # the arm no longer comes to rest at the via poses
    speed = np.abs(np.diff(blended.trajectory.q_rad, axis=0)).max(axis=1)
    assert np.count_nonzero(speed[5:-5] == 0.0) == 0


def test_joint_blend_zero_and_stop_are_todays_plan_exactly():
    q0 = np.radians(VIA[0])
    a = plan_moves(ARM3, [JointMove(tuple(np.radians(v))) for v in VIA[1:]], q_start=q0).trajectory
    b = plan_moves(ARM3, via_moves(0.0), q_start=q0).trajectory
    c = plan_moves(ARM3, via_moves(0.005, stop=True), q_start=q0).trajectory
    assert np.array_equal(a.q_rad, b.q_rad) and np.array_equal(a.q_rad, c.q_rad)


def test_line_into_joint_into_line():
    """A line up, a joint move across, a line down (a pick-and-place's via points): the joint move starts
    before the line has stopped and the next line before the joint move has; the lines' own samples stay on
    their lines."""
    up = LineMove((0.48, -0.17), phi_rad=-math.pi / 2, speed_m_s=0.1, accel_m_s2=0.5)
    q_top = plan_moves(ARM3, [JointMove(tuple(np.radians((40, -80, -50))))], q_start=ARM3.home_rad).trajectory
    q0 = q_top.q_rad[-1]
    from armctl.motion import solve_pose

    q_over = solve_pose(ARM3, (0.34, -0.17), -math.pi / 2, q0)
    down = LineMove((0.34, -0.25), phi_rad=-math.pi / 2, speed_m_s=0.06, accel_m_s2=0.5)

    def moves(b):
        return [dataclasses.replace(up, blend_m=b), JointMove(tuple(q_over), blend_m=b), down]

    stopped = plan_moves(ARM3, moves(0.0), q_start=q0)
    blended = plan_moves(ARM3, moves(0.005), q_start=q0)
    assert blended.trajectory.duration_s < stopped.trajectory.duration_s
    assert_blended_ok(ARM3, blended, stopped, 0.005)
    assert blended.summary()["max_path_deviation_m"] < 1e-4  # the lines' samples are on their lines


@pytest.mark.parametrize(
    "example",
    ["pick_and_place.yaml", "pick_and_place_2link.yaml", "pick_and_place_mearm.yaml", "pick_and_place_so101.yaml"],
)
def test_example_programs_blend_their_joint_moves(example):
    prog = load_program(ROOT / "examples" / example)
    arm = load_arm(prog.arm_name or "seed-3link")
    stopped = plan_program(prog, arm)
    blended = plan_program(with_blend(prog, 5.0), arm)
    assert_blended_ok(arm, blended, stopped, 0.005)
    # (blending the lines alone gave 0.977 on pick_and_place.yaml)
    assert blended.trajectory.duration_s < 0.97 * stopped.trajectory.duration_s


def test_program_joint_step_blend_and_stop_keys():
    text = """
poses:
  a: {q_deg: [45, -90, -45]}
  b: {q_deg: [20, -60, -50]}
  c: {q_deg: [0, -30, -60]}
start: a
settings: {blend_mm: 5}
steps:
  - {joint: b, stop: true}
  - {joint: c}
  - {joint: b, blend_mm: 0}
  - {joint: a}
"""
    prog = load_program_text(text)
    assert prog.steps[0].stop and prog.steps[2].blend_m == 0.0
    plan = plan_program(prog, ARM3)
    q = plan.trajectory.q_rad
    at_rest = np.nonzero(np.abs(np.diff(q, axis=0)).max(axis=1) == 0.0)[0]
    b, c = np.radians((20, -60, -50)), np.radians((0, -30, -60))
    hits_b = np.nonzero(np.abs(q - b).max(axis=1) < 1e-12)[0]
    hits_c = np.nonzero(np.abs(q - c).max(axis=1) < 1e-12)[0]
    assert len(hits_b) >= 2  # b reached exactly: after step 1 (stop) and step 3 (blend 0)
    assert len(hits_c) == 0  # c passed without stopping (step 2 blends into step 3)
    assert len(at_rest) > 0
    with pytest.raises(ConfigError, match="stop"):
        load_program_text(text.replace("stop: true", "stop: maybe"))
    with pytest.raises(ConfigError, match="blend_mm"):
        load_program_text(text.replace("blend_mm: 0", "blend_mm: -2"))


@example(
    seq=[(0.0, 0.0, 0.0, False), (0.0, 0.0, 25.0, False), (0.0, 0.0, 0.0, False)], blend=0.015625, speed=0.5, jerk=0.0
)
# two lines meeting at full reach: their blended chain came out two samples slower than stopping between them
@example(seq=[(0.0, 0.0, 0.0, True), (0.0, -1.625, 0.0, True)], blend=0.0010265446643422482, speed=1.0, jerk=0.0)
# a joint move overlapped at both ends (by the line before and the line after, 36 of its 37 steps each): the
# second overlap was measured from the first one's blended samples, not the unblended paths: 15.629 mm at 15.625
@example(
    seq=[(0.0, 0.0, 0.0, True), (6.0, 0.0, 0.0, True), (0.0, -47.0, 0.0, False), (0.0, 0.0, 0.0, True)],
    blend=0.015625,
    speed=1.0,
    jerk=0.0,
)
@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(
        st.tuples(st.floats(-80, 80), st.floats(-80, 80), st.floats(-80, 80), st.booleans()), min_size=2, max_size=5
    ),
    st.floats(0.0005, 0.02),
    st.floats(0.2, 1.0),
    st.sampled_from([0.0, 0.1]),
)
def test_random_joint_and_line_sequences(seq, blend, speed, jerk):
    """Random joint moves and lines (trapezoid or S-curve): every limit on the samples, the tool within blend of
    the unblended tool path, never slower. (Lines that only turn the tool, or barely move it, are left to the
    known failures below.)"""
    q0 = ARM3.home_rad
    pts = [tool_point(ARM3, np.radians(v[:3])) for v in seq]
    assume(all(np.linalg.norm(a - b) > 0.01 for a, b in zip(pts, pts[1:], strict=False)))

    def moves(b):
        out = []
        for a, c, d, is_line in seq:
            q = np.radians((a, c, d))
            if is_line:
                out.append(
                    LineMove(
                        tuple(tool_point(ARM3, q)),
                        phi_rad=float(np.sum(q)),  # (given: a free angle's profile search is slow to refuse)
                        speed_m_s=0.1,
                        accel_m_s2=0.5,
                        blend_m=b,
                        jerk_time_s=jerk,
                    )
                )
            else:
                out.append(JointMove(tuple(q), speed_fraction=speed, blend_m=b, jerk_time_s=jerk))
        return out

    arm = carrying(ARM3, check=False)  # the blends' path and limits (a blend may ask more torque: test_torque.py)
    try:
        stopped = plan_moves(arm, moves(0.0), q_start=q0)
    except MotionError:
        assume(False)
    blended = plan_moves(arm, moves(blend), q_start=q0)
    assert_blended_ok(ARM3, blended, stopped, blend)


def test_free_angle_line_turning_at_a_knot_keeps_joint_acceleration():
    """A free tool angle's profile (piecewise linear) turns at a knot: the joints' speeds change within one
    sample there. Found by the property test above: 1.72x the elbow's acceleration limit on this line, planned
    alone (no blending). The sampled accelerations are now checked and the line slowed there."""
    q0 = np.radians((47.354028128359786, 79.99999999999999, 0.0))
    target = tuple(tool_point(ARM3, np.radians((0.0, -51.87637523445349, 0.0))))
    plan = plan_moves(ARM3, [LineMove(target, speed_m_s=0.1, accel_m_s2=0.5)], q_start=q0)
    q, T = plan.trajectory.q_rad, plan.trajectory.period_s
    assert np.all(np.abs(np.diff(q, 2, axis=0)) / T**2 <= ARM3.max_accel_rad_s2 * (1 + 1e-9))
    assert np.linalg.norm(tool_point(ARM3, q[-1]) - np.asarray(target)) < 1e-9


def _known(seq, blend, speed):
    moves = []
    for a, c, d, is_line in seq:
        q = np.radians((a, c, d))
        if is_line:
            moves.append(LineMove(tuple(tool_point(ARM3, q)), phi_rad=float(np.sum(q)), blend_m=blend))
        else:
            moves.append(JointMove(tuple(q), speed_fraction=speed, blend_m=blend))
    return moves


def test_known_joint_into_tool_turning_lines_joint_acceleration():
    """Near full reach, a line that turns back the way the line before came: each ends and starts at rest,
    but the last step into rest (0.38 of the shoulder's limit) and the first step out of it (0.63) added up
    to 1.01x on the shared sample (the stopped plan too); a rest sample now splits them."""
    seq = [(0.0, 0.0, 2.0, False), (1.0, 0.0, 0.0, True), (0.0, 0.0, 3.0, True)]
    stopped = plan_moves(ARM3, _known(seq, 0.0, 1.0), q_start=ARM3.home_rad)
    blended = plan_moves(ARM3, _known(seq, 0.015625, 1.0), q_start=ARM3.home_rad)
    assert_blended_ok(ARM3, blended, stopped, 0.015625)


def test_known_tool_turning_lines_blend_slower():
    """The stopped plan was one sample faster only by reversing the shoulder at 1.24x its acceleration limit
    where the two lines meet at rest; with the rest sample that junction needs, blending is not slower."""
    seq = [(0.0, 0.0, 2.0, True), (0.0, 0.0, 0.0, True)]
    stopped = plan_moves(ARM3, _known(seq, 0.0, 1.0), q_start=ARM3.home_rad)
    blended = plan_moves(ARM3, _known(seq, 0.0005, 1.0), q_start=ARM3.home_rad)
    assert_blended_ok(ARM3, blended, stopped, 0.0005)
    q, T = stopped.trajectory.q_rad, stopped.trajectory.period_s  # the plan without a blend holds the limit too
    assert np.all(np.abs(np.diff(q, 2, axis=0)) / T**2 <= ARM3.max_accel_rad_s2 * (1 + 1e-9))
