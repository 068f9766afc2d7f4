"""The questions the rest of armctl asks an arm instead of asking its kind (issue 35): the point's coordinates,
the chain's joints, the tool point, pitch and side of the base axis, on each preset kind: planar 2-link, planar
3-link, an arm on a base, a parallelogram (on a base and planar)."""

import math

import numpy as np
import pytest

from armctl.model.arm import Arm, load_arm


def _planar_parallelogram() -> Arm:
    return Arm.from_lengths([0.08, 0.08], linkage="parallelogram", link_angle_deg=[30, 150], home_deg=[60, 0])


def _chain_uv(links, c):
    """(u, v) of a serial chain's tip, summed link by link (the test's own arithmetic)."""
    a = np.cumsum(c)
    return sum(ln * math.cos(t) for ln, t in zip(links, a)), sum(ln * math.sin(t) for ln, t in zip(links, a))


def test_planar_two_link():
    arm = load_arm("seed-2link")
    q = np.radians([30.0, 45.0])
    l1, l2 = arm.links_m
    x = l1 * math.cos(q[0]) + l2 * math.cos(q[0] + q[1])
    y = l1 * math.sin(q[0]) + l2 * math.sin(q[0] + q[1])
    assert arm.point_words == ("x", "y") and arm.dim == 2
    assert np.allclose(arm.tool_point(q), [x, y])
    assert float(arm.tool_pitch(q)) == pytest.approx(math.radians(75.0))
    assert np.allclose(arm.points(q), [[0, 0], [l1 * math.cos(q[0]), l1 * math.sin(q[0])], [x, y]])
    assert np.array_equal(arm.chain_angles(q), q)
    assert float(arm.base_side(q)) == 1.0 and float(arm.base_side(-q)) == 1.0  # no base: one side only
    assert arm.chain_start == 0 and arm.chain_names == arm.joint_names and arm.coupled_joints is None
    assert np.array_equal(arm.tool_frame_origin_m, [0.0, 0.0])


def test_planar_three_link():
    arm = load_arm("seed-3link")
    q = np.radians([20.0, -35.0, 50.0])
    assert arm.point_words == ("x", "y")
    assert np.allclose(arm.tool_point(q), _chain_uv(arm.links_m, q))
    assert float(arm.tool_pitch(q)) == pytest.approx(math.radians(35.0))
    assert arm.points(q).shape == (4, 2)
    assert np.allclose(arm.points(q)[-1], arm.tool_point(q))
    assert arm.chain_start == 0 and arm.chain_names == arm.joint_names and arm.coupled_joints is None


def test_base_arm():
    arm = load_arm("braccio")  # a 3-link serial chain on a base, the shoulder 0.07 m above z = 0
    assert arm.has_base and not arm.parallelogram and arm.n_links == 3
    assert arm.point_words == ("x", "y", "z") and arm.dim == 3
    assert arm.chain_start == 1 and arm.chain_names == arm.joint_names[1:] and arm.coupled_joints is None
    assert np.array_equal(arm.tool_frame_origin_m, [0.0, 0.0, arm.shoulder_height_m])
    b = math.radians(40.0)
    c = np.radians([60.0, -30.0, -20.0])
    q = np.concatenate([[b], c])
    u, v = _chain_uv(arm.links_m, c)
    u += arm.base_offset_m
    assert np.allclose(arm.tool_point(q), [u * math.cos(b), u * math.sin(b), v + arm.shoulder_height_m])
    assert np.array_equal(arm.chain_angles(q), c)
    assert float(arm.base_side(q)) == 1.0
    assert float(arm.tool_pitch(q)) == pytest.approx(math.radians(10.0))
    assert arm.points(q).shape == (6, 3)  # the base's foot, the axis at shoulder height, shoulder, 2 elbows, tool
    # the chain folded back over the base axis: the tool is on the far side, its pitch counted from there
    back = np.concatenate([[b], np.radians([150.0, 20.0, 0.0])])
    assert _chain_uv(arm.links_m, back[1:])[0] + arm.base_offset_m < 0
    assert float(arm.base_side(back)) == -1.0
    assert float(arm.tool_pitch(back)) == pytest.approx(math.radians(180.0 - 170.0))


def test_parallelogram_on_a_base():
    arm = load_arm("mearm")
    assert arm.parallelogram and arm.has_base
    assert arm.coupled_joints == (1, 2) and arm.chain_start == 1 and arm.chain_names == arm.joint_names[1:]
    q = np.radians([-25.0, 70.0, 10.0])  # base, shoulder, the forearm's angle from the horizontal
    assert np.allclose(arm.chain_angles(q), np.radians([70.0, -60.0]))
    # the forearm's own angle is the tool's pitch: the linkage holds it whatever the shoulder does
    assert float(arm.tool_pitch(q)) == pytest.approx(math.radians(10.0))
    u, v = _chain_uv(arm.links_m, np.radians([70.0, -60.0]))
    u += arm.base_offset_m
    b = q[0]
    assert np.allclose(arm.tool_point(q), [u * math.cos(b), u * math.sin(b), v + arm.shoulder_height_m])
    assert float(arm.base_side(q)) == 1.0


def test_planar_parallelogram():
    arm = _planar_parallelogram()
    assert arm.parallelogram and not arm.has_base
    assert arm.point_words == ("x", "y") and arm.coupled_joints == (0, 1) and arm.chain_start == 0
    q = np.radians([80.0, 20.0])
    assert np.allclose(arm.chain_angles(q), np.radians([80.0, -60.0]))
    assert float(arm.tool_pitch(q)) == pytest.approx(math.radians(20.0))
    assert np.allclose(arm.tool_point(q), _chain_uv(arm.links_m, np.radians([80.0, -60.0])))
    assert np.array_equal(arm.tool_frame_origin_m, [0.0, 0.0])


@pytest.mark.parametrize("name", ["seed-2link", "seed-3link", "braccio", "mearm"])
def test_batches_answer_row_by_row(name):
    arm = load_arm(name)
    rng = np.random.default_rng(7)
    q = rng.uniform(arm.chain.q_min.min(), arm.chain.q_max.max(), size=(6, arm.n))
    for f in (arm.tool_point, arm.tool_pitch, arm.points, arm.chain_angles, arm.base_side):
        rows = np.array([f(row) for row in q])
        assert np.allclose(f(q), rows)
    assert arm.base_side(q).shape == (6,)
