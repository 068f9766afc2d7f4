"""The roll arm's IK at a given pitch in closed form (``armctl.ik.roll._closed_form``, what a 100 Hz stream of tool
targets solves each frame) against the general path (``ik.roll.solve`` with the closed form off): a pose as near
the start for random targets and start poses, every answer on its target; near the base axis, the pose of the side
nearer the start; beyond the reach, the arm stretched towards the target (``ik.roll.stretched``).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import armctl.ik.roll as roll_ik
from armctl import ik
from armctl.model.kinematics import tool_pitch, tool_point
from tests.teleop.test_tooltarget import roll_arm


@pytest.mark.parametrize(("spread_deg", "seed"), [(5.0, 0), (60.0, 1)])
def test_the_closed_form_gives_a_pose_as_near_as_the_general_paths(monkeypatch, spread_deg, seed):
    arm = roll_arm(-200, 200)
    rng = np.random.default_rng(seed)
    fast = general = 0
    for _ in range(400):
        q = arm.q_min + (arm.q_max - arm.q_min) * rng.uniform(0.02, 0.98, arm.n)
        p, phi = tool_point(arm, q), float(tool_pitch(arm, q))
        q0 = np.clip(q + np.radians(rng.normal(0, spread_deg, arm.n)), arm.q_min, arm.q_max)
        hit = roll_ik._closed_form(arm, p, phi, q0, float(q[-1]), "dls", 1e-9)
        a = ik.solve(arm, p, phi=phi, roll=float(q[-1]), q0=q0)
        with monkeypatch.context() as m:
            m.setattr(roll_ik, "_closed_form", lambda *args: None)
            b = ik.solve(arm, p, phi=phi, roll=float(q[-1]), q0=q0)
        assert a.ok == b.ok
        if a.ok:  # the same pose, or one as near q0 (the elbow's other branch next to straight)
            i = arm.roll_index
            assert np.sum(np.abs(a.q[:i] - q0[:i])) <= np.sum(np.abs(b.q[:i] - q0[:i])) + 1e-9
            assert a.error_m < 1e-9 and float(np.linalg.norm(tool_point(arm, a.q) - p)) < 1e-9
            assert abs(math.remainder(float(tool_pitch(arm, a.q)) - phi, 2 * math.pi)) < 1e-9
        fast += hit is not None
        general += hit is None
    assert fast > 300  # (the closed form answers nearly all)


def test_next_to_the_base_axis_the_nearer_sides_pose_is_taken():
    """The tool crossing over the base axis: the target just past it is reached by the arm reaching back by a hair
    (the base where it is), not by the base swung round to face it."""
    arm = roll_arm()
    q_before = np.radians([-10.0, 123.0, -52.0, 21.6, -14.0])
    assert abs(roll_ik._tool_u(arm, q_before)) < roll_ik.NEAR_AXIS_M
    for d in np.radians(np.linspace(0.2, 3.0, 8)):
        q = q_before + np.array([0.0, d, 0.0, 0.0, 0.0])  # the lift on: the tool over the axis and past it
        res = ik.solve(arm, tool_point(arm, q), phi=float(tool_pitch(arm, q)), roll=float(q[-1]), q0=q_before)
        assert res.ok
        assert np.max(np.abs(res.q - q)) < 1e-6, np.degrees(res.q)


def test_beyond_the_reach_the_arm_stretched_towards_the_target():
    """A target 1..50 mm beyond the chain's reach: ``stretched`` gives the point on the reach straight towards it,
    which the arm reaches at the pitch it gives (the chain straight), missing by exactly the distance beyond."""
    arm = roll_arm()
    r = math.radians(40)
    for k, beyond in enumerate(np.linspace(0.001, 0.05, 6)):
        q = np.radians([-30 + 12 * k, 40 + 5 * k, 0.0, 0.0, 40])
        q[3] = -float(roll_ik.hand_link(arm.roll, float(arm.links_m[-1]), r)[1])  # the hand in line with the chain
        inner = tool_point(arm, q)
        assert roll_ik.stretched(arm, inner - [0.0, 0.0, 1e-6], r) is None  # (within the reach: no answer)
        d = inner - _shoulder_point(arm, q)
        target = inner + d / np.linalg.norm(d) * beyond
        near = roll_ik.stretched(arm, target, r)
        assert near is not None
        res = ik.solve(arm, near[0], phi=near[1], roll=r, q0=q)
        assert res.ok
        assert float(np.linalg.norm(tool_point(arm, res.q) - target)) == pytest.approx(beyond, abs=1e-9)
        np.testing.assert_allclose(res.q, q, atol=1e-5)  # (straight: the pose is sensitive to rounding)


def _shoulder_point(arm, q):
    """The shoulder's axis point, and the tool's lateral offset beside the plane, of pose ``q`` (m): the point the
    stretched chain points away from."""
    length, delta, right = (float(v) for v in roll_ik.hand_link(arm.roll, float(arm.links_m[-1]), float(q[-1])))
    b = float(q[0])
    side = np.array([math.sin(b), -math.cos(b), 0.0]) * right
    return np.array([arm.base_offset_m * math.cos(b), arm.base_offset_m * math.sin(b), arm.shoulder_height_m]) + side


def test_pitch_reaches_says_when_no_pose_has_that_pitch():
    """``pitch_reaches`` is False only where no pose reaches the target at that pitch (the IK finds none either),
    True for every target a pose reaches."""
    arm = roll_arm()
    rng = np.random.default_rng(5)
    refused = 0
    for _ in range(300):
        q = arm.q_min + (arm.q_max - arm.q_min) * rng.uniform(0.02, 0.98, arm.n)
        p, phi, r = tool_point(arm, q), float(tool_pitch(arm, q)), float(q[-1])
        assert roll_ik.pitch_reaches(arm, p, phi, r)
        other = phi + rng.uniform(-math.pi, math.pi)
        if not roll_ik.pitch_reaches(arm, p, other, r):
            refused += 1
            assert not ik.solve(arm, p, phi=other, roll=r, q0=q).ok
    assert refused > 30
