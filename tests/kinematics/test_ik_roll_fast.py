"""The roll arm's IK at a given pitch in closed form (``armctl.ik.roll._fast``, what a 100 Hz stream of tool targets
solves each frame) against the general path (``ik.roll.solve`` with the fast path off): the same pose for random
targets and start poses, every answer on its target; and near the base axis, the pose of the side nearer the start.
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
def test_the_closed_form_gives_the_general_paths_pose(monkeypatch, spread_deg, seed):
    arm = roll_arm(-200, 200)
    rng = np.random.default_rng(seed)
    fast = general = 0
    for _ in range(400):
        q = arm.q_min + (arm.q_max - arm.q_min) * rng.uniform(0.02, 0.98, arm.n)
        p, phi = tool_point(arm, q), float(tool_pitch(arm, q))
        q0 = np.clip(q + np.radians(rng.normal(0, spread_deg, arm.n)), arm.q_min, arm.q_max)
        hit = roll_ik._fast(arm, p, phi, q0.tolist(), float(q[-1]), "dls", 1e-9)
        a = ik.solve(arm, p, phi=phi, roll=float(q[-1]), q0=q0)
        with monkeypatch.context() as m:
            m.setattr(roll_ik, "_fast", lambda *args: None)
            b = ik.solve(arm, p, phi=phi, roll=float(q[-1]), q0=q0)
        assert a.ok == b.ok
        np.testing.assert_allclose(a.q, b.q, atol=1e-9)
        if a.ok:
            assert a.error_m < 1e-9 and float(np.linalg.norm(tool_point(arm, a.q) - p)) < 1e-9
            assert abs(math.remainder(float(tool_pitch(arm, a.q)) - phi, 2 * math.pi)) < 1e-9
        fast += hit is not None
        general += hit is None
    assert fast > 200  # (most start poses reach forward, away from the base axis)


def test_next_to_the_base_axis_the_nearer_sides_pose_is_taken():
    """The tool crossing over the base axis: the target just past it is reached by the arm reaching back by a hair
    (the base where it is), not by the base swung round to face it."""
    arm = roll_arm()
    q_before = np.radians([-10.0, 123.0, -52.0, 21.6, -14.0])
    u = [float(roll_ik._plane_u(roll_ik.plain(arm), arm, list(q), q[-1])[0]) for q in (q_before,)]
    assert abs(u[0]) < roll_ik.NEAR_AXIS_M
    for d in np.radians(np.linspace(0.2, 3.0, 8)):
        q = q_before + np.array([0.0, d, 0.0, 0.0, 0.0])  # the lift on: the tool over the axis and past it
        res = ik.solve(arm, tool_point(arm, q), phi=float(tool_pitch(arm, q)), roll=float(q[-1]), q0=q_before)
        assert res.ok
        assert np.max(np.abs(res.q - q)) < 1e-6, np.degrees(res.q)
