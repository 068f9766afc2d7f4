"""Arms on a rotating base and parallelogram linkages: geometry, reach, IK (single and batch).

The planar chain of every arm is solved by the planar solver (``armctl.ik``); these tests check the
layer around it (``armctl.ik.layered``, ``armctl.model.kinematics``' arm functions, ``armctl.model.workspace``' reach)
against independent computations: forward kinematics written out with rotation matrices, finite
differences, and dense samples of the joint space for the nearest reachable point.
"""

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from armctl import ik
from armctl.errors import BadInputError
from armctl.ik import solve_batch
from armctl.model.arm import Arm, load_arm
from armctl.model.kinematics import (
    arm_jacobian,
    arm_manipulability,
    arm_points,
    chain_angles,
    fk,
    joint_angles,
    limit_excess,
    link_angle,
    tool_pitch,
    tool_point,
)
from armctl.model.workspace import check_reachable, nearest_reachable
from tests.helpers import base_arm_and_pose
from tests.kinematics.oracles import fd_jacobian

PRESETS = {name: load_arm(name) for name in ("mearm", "eezybot-mk2", "braccio")}
SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))


pytestmark = pytest.mark.usefixtures("kernel")  # every test with each IK kernel (conftest.py)


def mearm_like(**kw) -> Arm:
    opts = dict(
        base=True,
        linkage="parallelogram",
        link_angle_deg=[30, 150],
        base_offset_m=0.068,
        shoulder_height_m=0.05,
        q_min_deg=[-90, 0, -75],
        q_max_deg=[90, 150, 75],
        home_deg=[0, 90, 0],
    )
    opts.update(kw)
    return Arm.from_lengths([0.08, 0.08], **opts)


def sample_poses(arm, count, rng):
    """Poses drawn uniformly in the chain's box and base range, kept where every limit holds."""
    ch = arm.chain
    c = rng.uniform(ch.q_min, ch.q_max, (count, arm.n_links))
    b = rng.uniform(arm.q_min[0], arm.q_max[0], count) if arm.has_base else None
    q = joint_angles(arm, c, b)
    return q[np.all(limit_excess(arm, q) <= 0, axis=1)]


def by_matrices(arm, q):
    """Tool point written out independently: rotations about z (base) and y (pitch), link by link."""
    q = np.asarray(q, dtype=float)
    b = q[0] if arm.has_base else 0.0
    c = q[1:] if arm.has_base else q
    if arm.parallelogram:
        pitches = [c[0], c[1]]  # joint 2 is the forearm's own angle from the horizontal
    else:
        pitches = list(np.cumsum(c))
    rz = np.array([[math.cos(b), -math.sin(b), 0], [math.sin(b), math.cos(b), 0], [0, 0, 1]])
    p = np.array([arm.base_offset_m, 0.0, arm.shoulder_height_m])
    for length, pitch in zip(arm.links_m, pitches):
        p = p + length * np.array([math.cos(pitch), 0.0, math.sin(pitch)])
    p = rz @ p
    return p if arm.has_base else p[[0, 2]]


# --------------------------------------------------------------------------------------------- geometry


@SETTINGS
@given(base_arm_and_pose())
def test_tool_point_matches_rotation_matrices(arm_pose):
    arm, q = arm_pose
    assert np.allclose(tool_point(arm, q), by_matrices(arm, q), atol=1e-12)
    pts = arm_points(arm, q)
    assert np.allclose(pts[-1], tool_point(arm, q), atol=1e-12)
    if arm.has_base:  # the foot, the axis at shoulder height, then the shoulder at the offset
        assert np.allclose(pts[0], 0) and np.allclose(pts[1], [0, 0, arm.shoulder_height_m])
        assert math.isclose(np.hypot(*pts[2][:2]), abs(arm.base_offset_m), abs_tol=1e-12)
        lengths = np.linalg.norm(np.diff(pts[2:], axis=0), axis=1)
        assert np.allclose(lengths, arm.links_m)


@SETTINGS
@given(base_arm_and_pose())
def test_jacobian_is_the_derivative_of_the_tool_point(arm_pose):
    arm, q = arm_pose
    fd = fd_jacobian(lambda q: tool_point(arm, q), q, h=1e-6)
    J = arm_jacobian(arm, q)
    assert J.shape == (arm.dim, arm.n)
    assert np.allclose(J, fd, atol=1e-7)
    w = arm_manipulability(arm, q)
    assert math.isclose(w, math.sqrt(max(np.linalg.det(J @ J.T), 0.0)), rel_tol=1e-9, abs_tol=1e-15)


def test_planar_arms_keep_their_exact_geometry():
    arm = load_arm("seed-3link")
    q = np.radians([[45, -90, -45], [10, 20, 30]])
    assert np.array_equal(tool_point(arm, q), fk(arm.links_m, q))  # bit for bit: golden files depend on it
    assert np.array_equal(tool_pitch(arm, q), q.sum(axis=1))
    assert not arm.layered and arm.chain is arm and arm.dim == 2 and arm.n == arm.n_links == 3


def test_parallelogram_angles_and_coupled_limits():
    arm = mearm_like()
    q = np.radians([0, 90, 0])  # upper arm straight up, forearm level: a right angle at the elbow
    assert math.isclose(link_angle(arm, q), math.pi / 2)
    assert np.allclose(chain_angles(arm, q), np.radians([90, -90]))
    assert np.allclose(joint_angles(arm, chain_angles(arm, q), 0.0), q)
    assert np.allclose(tool_point(arm, q), [0.068 + 0.08, 0, 0.05 + 0.08])
    # each joint inside its range, the elbow folded to 20 deg: only the coupled limit is broken
    folded = np.radians([0, 100, -60])
    assert np.all(limit_excess(arm, folded)[:3] <= 0) and limit_excess(arm, folded)[3] > 0
    assert not arm.within_limits(folded) and arm.within_limits(q)


def test_pitch_counts_from_the_outward_horizontal():
    arm = Arm.from_lengths([0.3, 0.2, 0.1], base=True, q_min_deg=[-180, -180, -180, -180], q_max_deg=[180] * 4)
    down = np.radians([30, 60, -60, -90])
    assert math.isclose(tool_pitch(arm, down), -math.pi / 2)
    # the chain reaching back over the base axis: pointing down is still -90, level away from the axis 0
    back = np.radians([30, 150, 0, 0])  # all three links at 150 deg: the tool is behind the axis
    assert tool_point(arm, back)[0] < 0
    assert math.isclose(tool_pitch(arm, back), math.radians(30))


# --------------------------------------------------------------------------------------------- IK


@pytest.mark.parametrize("name", PRESETS)
@pytest.mark.parametrize("method", ik.METHODS)
def test_fk_of_ik_is_the_target_on_presets(name, method):
    arm = PRESETS[name]
    rng = np.random.default_rng(7)
    q = sample_poses(arm, 400, rng)[:120]
    for qi in q:
        p = tool_point(arm, qi)
        res = ik.solve(arm, p, method=method)
        assert res.ok, (name, np.degrees(qi), res)
        assert np.linalg.norm(tool_point(arm, res.q) - p) <= 1e-9
        assert arm.within_limits(res.q)


@SETTINGS
@given(base_arm_and_pose(), st.sampled_from(["dls", "analytic"]))
def test_fk_of_ik_is_the_target_on_random_arms(arm_pose, method):
    arm, q = arm_pose
    p = tool_point(arm, q)
    phi = float(tool_pitch(arm, q)) if arm.n_links == 3 and method == "analytic" else None
    res = ik.solve(arm, p, phi=phi, method=method)
    assert res.ok, res
    assert np.linalg.norm(tool_point(arm, res.q) - p) <= 1e-9
    assert arm.within_limits(res.q)
    if phi is not None:
        assert abs(math.remainder(float(tool_pitch(arm, res.q)) - phi, 2 * math.pi)) < 1e-8


@SETTINGS
@given(base_arm_and_pose(), st.integers(0, 2**31))
def test_never_ok_outside_a_limit_and_the_nearest_point_is_nearest(arm_pose, seed):
    arm, _ = arm_pose
    rng = np.random.default_rng(seed)
    scale = arm.reach_max + 0.2
    for t in rng.uniform(-scale, scale, (5, arm.dim)):
        res = ik.solve(arm, t)
        assert arm.within_limits(res.q), "a pose outside a limit (the coupled ones included)"
        err = float(np.linalg.norm(tool_point(arm, res.q) - t))
        assert math.isclose(err, res.error_m, abs_tol=1e-12)
        if res.ok:
            assert err <= 1e-9 and res.shortfall_m == 0
            continue
        assert res.shortfall_m > 0 and res.reason
        if arm.n_links == 2:
            # exact nearest inside every limit: no sampled pose comes closer
            d = np.linalg.norm(tool_point(arm, sample_poses(arm, 20000, rng)) - t, axis=1)
            assert res.shortfall_m <= d.min() + 1e-9
            assert math.isclose(res.shortfall_m, err, abs_tol=1e-12)


@SETTINGS
@given(base_arm_and_pose())
def test_closed_form_and_dls_agree(arm_pose):
    arm, q = arm_pose
    p = tool_point(arm, q)
    phi = float(tool_pitch(arm, q)) if arm.n_links == 3 else None  # a 3-link chain is redundant without it
    q0 = np.clip(q + 0.05, arm.q_min, arm.q_max)
    closed = ik.solve(arm, p, phi=phi, q0=q0, method="analytic")
    dls = ik.solve(arm, p, phi=phi, q0=q0, method="dls")
    assert closed.ok and dls.ok
    assert np.allclose(closed.q, dls.q, atol=1e-6), (np.degrees(closed.q), np.degrees(dls.q))


@SETTINGS
@given(base_arm_and_pose(), st.integers(0, 2**31))
def test_batch_gives_what_solve_gives(arm_pose, seed):
    arm, q = arm_pose
    rng = np.random.default_rng(seed)
    scale = arm.reach_max + 0.1
    reach = tool_point(arm, sample_poses(arm, 200, rng)[:6])
    targets = np.concatenate([reach, rng.uniform(-scale, scale, (4, arm.dim))])
    batch = solve_batch(arm, targets, q0=q)
    for i, t in enumerate(targets):
        one = ik.solve(arm, t, q0=q)
        assert batch.ok[i] == one.ok
        assert arm.within_limits(batch.q[i])
        if one.ok and arm.n_links == 2:
            assert np.allclose(batch.q[i], one.q, atol=1e-6)
        if one.ok:
            assert batch.error_m[i] <= 1e-9
        else:
            assert math.isclose(batch.shortfall_m[i], one.shortfall_m, abs_tol=1e-9)
    assert ik.solve_batch(arm, targets, q0=q).ok.tolist() == batch.ok.tolist()  # ik.solve_batch dispatches


def test_a_target_on_the_base_axis_keeps_the_base_angle():
    arm = mearm_like(base_offset_m=0.0)
    for base_deg in (-60.0, 0.0, 35.0):
        q0 = np.radians([base_deg, 90, 0])
        res = ik.solve(arm, [0.0, 0.0, 0.05 + 0.12], q0=q0)
        assert res.ok
        assert math.isclose(res.q[0], math.radians(base_deg), abs_tol=1e-12)
        batch = solve_batch(arm, [[0.0, 0.0, 0.17]], q0=q0)
        assert batch.ok[0] and math.isclose(batch.q[0, 0], math.radians(base_deg), abs_tol=1e-12)


def test_the_base_turns_half_a_turn_only_when_it_must():
    # a 3-link serial chain that can reach back over its base axis
    arm = Arm.from_lengths(
        [0.3, 0.25, 0.1],
        base=True,
        q_min_deg=[-90, -10, -150, -150],
        q_max_deg=[90, 190, 150, 150],
        home_deg=[0, 90, -90, 0],
    )
    ahead = [0.3, 0.1, 0.2]
    res = ik.solve(arm, ahead)
    assert res.ok and math.isclose(res.q[0], math.atan2(0.1, 0.3))
    behind = [-0.3, 0.1, 0.2]  # its azimuth (162 deg) is outside the base's +-90: turn half a turn back
    res = ik.solve(arm, behind)
    assert res.ok, res
    assert abs(math.remainder(res.q[0] - (math.atan2(0.1, -0.3) + math.pi), 2 * math.pi)) < 1e-9
    tool = tool_point(arm, res.q)
    assert tool[0] * math.cos(res.q[0]) + tool[1] * math.sin(res.q[0]) < 0  # the chain reaches back over the axis
    assert np.linalg.norm(tool_point(arm, res.q) - behind) <= 1e-9
    # a tool angle keeps its meaning: pointing straight down, wherever the chain reaches from
    res = ik.solve(arm, behind, phi=-math.pi / 2)
    assert res.ok and math.isclose(tool_pitch(arm, res.q), -math.pi / 2, abs_tol=1e-9)


def test_unreachable_reports_the_nearest_point_and_shortfall():
    arm = PRESETS["mearm"]
    far = [0.6, 0.0, 0.0]
    res = ik.solve(arm, far)
    assert not res.ok and "unreachable" in res.reason
    near = nearest_reachable(arm, far)
    assert math.isclose(res.shortfall_m, near.shortfall_m, abs_tol=1e-12)
    assert np.allclose(tool_point(arm, res.q), near.point_m, atol=1e-9)
    # outside the base's range: the nearest point lies in the plane of its end stop
    side = [-0.1, -0.03, 0.0]
    res = ik.solve(arm, side)
    assert not res.ok and arm.within_limits(res.q)
    assert math.isclose(abs(res.q[0]), math.radians(75))
    with pytest.raises(Exception, match="outside the reach of arm 'mearm' inside its joint limits"):
        check_reachable(arm, far)


@pytest.mark.parametrize(
    ("name", "target", "match"),
    [
        ("mearm", [0.1, 0.05], r"takes targets \(x, y, z\), got 2 numbers"),
        ("seed-3link", [0.1, 0.05, 0.2], r"got 3 numbers|two numbers"),
        ("mearm", [0.1, float("nan"), 0.0], "not finite"),
    ],
)
def test_bad_targets_name_the_problem(name, target, match):
    with pytest.raises(BadInputError, match=match):
        ik.solve(load_arm(name), target)


def test_phi_needs_a_three_link_chain():
    with pytest.raises(BadInputError, match="3-link chain"):
        ik.solve(PRESETS["mearm"], [0.15, 0, 0.05], phi=0.0)
    with pytest.raises(BadInputError, match=r"shape \(N, 3\)"):
        solve_batch(PRESETS["mearm"], [[0.15, 0.0]])


def test_a_base_arm_at_a_tool_angle_its_wrist_cannot_take_gets_the_closest_pose_inside_the_limits():
    """so101, tool straight down at a point where the wrist would need more than its limit: the answer
    used to be a pose outside the limits reported "0.0 mm away"."""
    from armctl.ik import solve as planar_and_base_solve

    arm = load_arm("so101")
    r = planar_and_base_solve(arm, (0.22, 0.06, 0.102), phi=math.radians(-90))
    assert not r.ok and r.reason.endswith("at this tool angle")
    assert arm.within_limits(r.q) and r.error_m > 1e-3 and r.shortfall_m == pytest.approx(r.error_m)
