"""The planner's fast paths give numpy's own answers bit for bit: the per-joint row reductions (motion.rows),
continuous without np.unwrap, line_caps_and_profile against caps_from_joints + profile_for, and
plan_move's one trapezoid for an unbound line against the second pass it replaced."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from armctl.model.arm import load_arm
from armctl.motion import LineMove, branch_ik, plan_line_path, plan_move, speed_profile
from armctl.motion.lines import TWO_PI, continuous
from armctl.motion.rows import row_any, row_max, row_min
from armctl.motion.timing import caps_from_joints, line_caps_and_profile, profile_for, sample_times

RNG = np.random.default_rng(25)


def _arrays():
    for k in (1, 2, 7, 500):
        for m in (1, 2, 3, 6):
            x = RNG.normal(size=(k, m))
            yield x
            y = x.copy()
            y[RNG.integers(0, k), RNG.integers(0, m)] = np.nan
            yield y
            yield np.round(x)  # ties between columns


def test_rows_are_numpys_reductions():
    for x in _arrays():
        assert row_max(x).tobytes() == x.max(axis=1).tobytes()
        assert row_min(x).tobytes() == x.min(axis=1).tobytes()
        b = x > 0.3
        assert np.array_equal(row_any(b), np.any(b, axis=-1))
    pose = np.array([0.1, -2.0, 3.0])
    assert bool(row_any(pose > 2.5)) and not bool(row_any(pose > 5.0))  # one pose: a 0-d answer


def test_continuous_is_np_unwrap():
    for trial in range(400):
        k, m = int(RNG.integers(1, 60)), int(RNG.integers(1, 4))
        q = np.cumsum(RNG.normal(0.0, [0.01, 0.6, 3.0][trial % 3], (k, m)), axis=0)
        if trial % 5 == 0:
            q[RNG.integers(0, k)] = -0.0
        if trial % 9 == 0 and k > 1:
            q[-1] = q[-2] + math.pi  # exactly half a turn: np.unwrap's own path
        q0 = RNG.normal(0.0, 6.0, m)
        u = np.unwrap(q, axis=0)
        want = u + TWO_PI * np.round((q0 - u[0]) / TWO_PI)
        assert continuous(q, q0).tobytes() == want.tobytes()


LINES = [
    ("seed-2link", (0.30, -0.50), (0.30, 0.50), None),
    ("seed-3link", (0.50, -0.50), (0.50, 0.50), -math.pi / 4),
    ("seed-3link", (0.60, 0.10), (0.25, 0.45), 0.3),
]


@pytest.mark.parametrize("accel_div", [1.0, 64.0])
@pytest.mark.parametrize("name,a,b,phi", LINES)
def test_line_caps_and_profile_match_the_two_calls(name, a, b, phi, accel_div):
    arm = load_arm(name)
    arm = dataclasses.replace(arm, max_accel_given_rad_s2=arm.max_accel_rad_s2 / accel_div)
    q0 = branch_ik(arm, np.array([a]), None if phi is None else np.array([phi]), -1.0)[0][0]
    path = plan_line_path(arm, q0, LineMove(b, segment_m=0.002))
    base, acc = 0.3 / path.speed_scale, 1.5 / path.speed_scale
    cap, profile = line_caps_and_profile(path.s, path.q, arm.max_speed_rad_s, base, arm.max_accel_rad_s2, acc)
    cap_ref, _ = caps_from_joints(path.s, path.q, arm.max_speed_rad_s, base)
    profile_ref = profile_for(path.s, path.q, arm.max_accel_rad_s2, cap_ref, acc)
    assert cap.tobytes() == cap_ref.tobytes()
    assert (profile is speed_profile) == (profile_ref is speed_profile)
    v, t = profile(path.s, cap, acc)
    v_ref, t_ref = profile_ref(path.s, cap_ref, acc)
    assert v.tobytes() == v_ref.tobytes() and t.tobytes() == t_ref.tobytes()


@pytest.mark.parametrize("speed", [0.05, 0.1, 2.0])
@pytest.mark.parametrize("name,a,b,phi", LINES)
def test_slowed_is_the_free_trapezoids_answer(name, a, b, phi, speed):
    """plan_move's 'slowed' against the free trapezoid timed on its own (the second pass it no longer makes
    when nothing caps the speed): a fast line is slowed by the joints, a slow one is not."""
    arm = load_arm(name)
    q0 = branch_ik(arm, np.array([a]), None if phi is None else np.array([phi]), -1.0)[0][0]
    move = LineMove(b, segment_m=0.002, speed_m_s=speed, accel_m_s2=20.0 if speed > 1 else 0.5)
    mp = plan_move(arm, move, q0, 0.0)
    path = mp.path
    base, acc = speed / path.speed_scale, move.accel_m_s2 / path.speed_scale
    free = speed_profile(path.s, np.full(len(path.s), base), acc)[1][-1]
    assert mp.slowed == bool(sample_times(float(free), 0.02)[0][-1] < mp.t_s[-1] - 1e-9)
    if speed == 2.0:
        assert mp.slowed
