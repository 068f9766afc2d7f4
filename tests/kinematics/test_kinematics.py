"""Forward kinematics, Jacobians, manipulability, workspace checks."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from armctl.errors import JointLimitError, UnreachableError
from armctl.model.arm import Arm, load_arm
from armctl.model.kinematics import (
    fk,
    jacobian,
    joint_positions,
    joint_velocities,
    manipulability,
    tool_angle,
)
from armctl.model.workspace import check_joint_limits, check_reachable, closest_reachable, shortfall
from tests.kinematics.oracles import fd_jacobian

lengths = st.lists(st.floats(0.05, 1.0), min_size=2, max_size=3)
angles = st.floats(-math.pi, math.pi)


def test_fk_known_poses():
    links = [0.4, 0.3, 0.2]
    assert np.allclose(fk(links, [0, 0, 0]), [0.9, 0.0])
    assert np.allclose(fk(links, [math.pi / 2, 0, 0]), [0.0, 0.9])
    assert np.allclose(fk(links, [0, math.pi / 2, -math.pi / 2]), [0.6, 0.3])
    assert math.isclose(tool_angle([0.1, 0.2, 0.3]), 0.6)
    pts = joint_positions(links, [0, math.pi / 2, 0])
    assert np.allclose(pts, [[0, 0], [0.4, 0], [0.4, 0.3], [0.4, 0.5]])


def test_fk_is_vectorised():
    q = np.random.default_rng(0).uniform(-3, 3, (50, 3))
    batch = fk([0.4, 0.3, 0.2], q)
    assert batch.shape == (50, 2)
    assert np.allclose(batch[7], fk([0.4, 0.3, 0.2], q[7]))
    assert jacobian([0.4, 0.3, 0.2], q).shape == (50, 2, 3)


@settings(max_examples=200, deadline=None)
@given(lengths, st.data())
def test_analytic_jacobian_matches_finite_differences(links, data):
    q = [data.draw(angles) for _ in links]
    J = jacobian(links, q)
    assert np.allclose(J, fd_jacobian(lambda q: fk(links, q), q, h=1e-6), atol=1e-8)
    # the step h matters: a coarse step is visibly worse, but still close
    assert np.allclose(J, fd_jacobian(lambda q: fk(links, q), q, h=1e-2), atol=1e-4 * sum(links))


def test_manipulability_2_and_3_links():
    assert math.isclose(manipulability([0.4, 0.3], [0.3, math.pi / 2]), 0.4 * 0.3)  # l1 l2 |sin q2|
    assert manipulability([0.4, 0.3], [0.3, 0.0]) < 1e-12
    q = [0.2, 0.5, -0.4]
    J = jacobian([0.4, 0.3, 0.2], q)
    assert math.isclose(manipulability([0.4, 0.3, 0.2], q), math.sqrt(np.linalg.det(J @ J.T)))


def test_joint_velocities_give_the_tool_velocity():
    links, q, v = [0.4, 0.3, 0.2], [0.3, 0.6, -0.2], np.array([0.1, -0.05])
    qdot = joint_velocities(links, q, v)
    assert np.allclose(jacobian(links, q) @ qdot, v)
    q2 = [0.3, 0.6]
    assert np.allclose(jacobian(links[:2], q2) @ joint_velocities(links[:2], q2, v), v)


def test_reach_annulus_and_shortfall():
    arm3 = load_arm("seed-3link")
    assert arm3.reach_max == pytest.approx(0.9) and arm3.reach_min == 0.0
    arm2 = load_arm("seed-2link")
    assert arm2.reach_max == pytest.approx(0.7) and arm2.reach_min == pytest.approx(0.1)
    assert shortfall(arm3, (1.2, 0.0)) == pytest.approx(0.3)
    assert shortfall(arm2, (0.05, 0.0)) == pytest.approx(0.05)
    assert shortfall(arm2, (0.5, 0.1)) == 0.0
    assert np.allclose(closest_reachable(arm3, (0.0, -2.0)), (0.0, -0.9))
    with pytest.raises(UnreachableError) as info:
        check_reachable(arm3, (1.2, 0.0))
    assert info.value.shortfall_m == pytest.approx(0.3)
    assert "300.0 mm" in str(info.value) and isinstance(info.value, ValueError)
    # with a tool angle, the wrist point must be reachable by the first two links
    assert shortfall(arm3, (0.9, 0.0), phi=0.0) == pytest.approx(0.0)
    assert shortfall(arm3, (0.9, 0.0), phi=math.pi) == pytest.approx(0.4)


def test_joint_limit_check_names_the_joint():
    arm = load_arm("seed-3link")
    check_joint_limits(arm, np.radians([0, 0, 0]))
    with pytest.raises(JointLimitError, match="joint 2 \\(elbow\\) at 140.00 deg"):
        check_joint_limits(arm, np.radians([0, 140, 0]))


def test_arm_from_lengths_rejects_nonsense():
    with pytest.raises(ValueError):
        Arm.from_lengths([0.4])
    with pytest.raises(ValueError):
        Arm.from_lengths([0.4, -0.1])
