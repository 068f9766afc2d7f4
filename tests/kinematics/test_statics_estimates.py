"""Statics of arms without a URDF's <inertial>s (armctl.model.statics): the bodies estimated from the arm file (the
servo table's masses where the servos sit, ``mass_g`` or the printed-link estimate, the gripper at the tool), the
holding torques against closed forms worked by hand for each arm kind (serial on a base, parallelogram, planar,
wrist roll), and the joint-space inertia against the textbook point-mass forms."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from armctl.errors import BadInputError
from armctl.model.arm import load_arm
from armctl.model.statics import (
    G_M_S2,
    HAND,
    JAWS_G,
    PRINTED_LINK_G_PER_MM,
    arm_bodies,
    body_points,
    gravity_torque,
    mass_matrix,
)

PRESETS = ("braccio", "mearm", "eezybot-mk2", "seed-2link", "seed-3link")


def _mass(arm, word):
    return sum(b.mass_kg for b in arm_bodies(arm)[0] if word in b.name)


@pytest.mark.parametrize("name", PRESETS)
def test_every_arm_file_gets_estimated_bodies_from_its_servos_and_links(name):
    arm = load_arm(name)
    bodies, q_ref, estimated = arm_bodies(arm)
    assert estimated and q_ref.shape == (arm.n,)
    servos = sum(s.mass_kg for s in arm.drive.servos) + arm.drive.gripper.mass_kg
    links = PRINTED_LINK_G_PER_MM * float(np.sum(arm.links_m))  # g/mm x mm = g
    want = servos + links + JAWS_G / 1000.0
    assert sum(b.mass_kg for b in bodies) == pytest.approx(want)
    assert _mass(arm, "estimate") == pytest.approx(links + JAWS_G / 1000.0)
    assert np.allclose(body_points(arm, q_ref), [b.point_m for b in bodies], atol=1e-12)
    # the gripper's masses ride at the tool point at every pose
    rng = np.random.default_rng(3)
    for q in rng.uniform(arm.q_min, arm.q_max, size=(20, arm.n)):
        tool = np.append(arm.tool_point(q), [0.0] * (3 - arm.dim))
        jaws = [i for i, b in enumerate(bodies) if b.name.startswith("gripper")]
        assert np.allclose(body_points(arm, q)[jaws], tool, atol=1e-12)


def _plane_masses(arm, payload):
    """(upper arm link, forearm link, at the forearm's end) kg of a 2-link arm file's estimated bodies."""
    links = [b for b in arm_bodies(arm)[0] if "link" in b.name]
    return links[0].mass_kg, links[1].mass_kg, _mass(arm, "gripper") + payload


@pytest.mark.parametrize("name", ["mearm", "eezybot-mk2"])
def test_a_parallelogram_holds_its_forearm_from_the_shoulder(name):
    """Both servos sit at the shoulder; the forearm's joint is its angle from the horizontal: the shoulder holds the
    upper arm and what it carries at the elbow, the forearm's servo the forearm and the hand, each by its own cos."""
    arm = load_arm(name)
    l1, l2 = (float(v) for v in arm.links_m)
    rng = np.random.default_rng(5)
    for q in rng.uniform(arm.q_min, arm.q_max, size=(50, arm.n)):
        payload = float(rng.uniform(0.0, 0.2))
        mu, mf, mt = _plane_masses(arm, payload)
        got = gravity_torque(arm, q, payload)
        want = [
            0.0,
            G_M_S2 * np.cos(q[1]) * (mu * l1 / 2 + (mf + mt) * l1),
            G_M_S2 * np.cos(q[2]) * (mf * l2 / 2 + mt * l2),
        ]
        assert got == pytest.approx(want, abs=1e-8)
        # the inertia: the base turns every mass at its distance from the axis; the plane's two joints couple by
        # the cosine of the angle between upper arm and forearm
        M = mass_matrix(arm, q, payload)
        pts = np.concatenate([body_points(arm, q), [arm.tool_point(q)]])
        masses = np.append([b.mass_kg for b in arm_bodies(arm)[0]], payload)
        m12 = l1 * np.cos(q[2] - q[1]) * (mf * l2 / 2 + mt * l2)
        want_M = [
            [float(masses @ (pts[:, 0] ** 2 + pts[:, 1] ** 2)), 0, 0],
            [0, mu * l1**2 / 4 + (mf + mt) * l1**2, m12],
            [0, m12, mf * l2**2 / 4 + mt * l2**2],
        ]
        assert np.allclose(M, want_M, atol=1e-9)


def _serial_torques(arm, q, payload):
    """A serial chain's holding torques worked in its plane: each joint holds every mass riding on a link beyond it
    at its horizontal distance (the servo of chain joint k+1 at its axis on link k, link k at its middle, the
    gripper at the tool on the last link)."""
    a = np.cumsum(q[arm.chain_joints])
    L = np.asarray(arm.links_m, dtype=float)
    n = arm.n_links
    joints_u = np.concatenate([[0.0], np.cumsum(L * np.cos(a))])  # the shoulder, the elbows, the tool
    servos = [s.mass_kg for s in arm.drive.servos[arm.chain_start :]]
    masses = [(joints_u[k], servos[k], k) for k in range(1, n)]  # (u, kg, the link it rides on, 1-based)
    masses += [(joints_u[k] + L[k] / 2 * np.cos(a[k]), PRINTED_LINK_G_PER_MM * L[k], k + 1) for k in range(n)]
    masses.append((joints_u[-1], arm.drive.gripper.mass_kg + JAWS_G / 1000.0 + payload, n))
    held = [G_M_S2 * sum(m * (u - joints_u[j]) for u, m, link in masses if link >= j + 1) for j in range(n)]
    return [0.0, *held]


def test_a_serial_arm_on_a_base_holds_what_lies_beyond_each_joint():
    arm = load_arm("braccio")
    rng = np.random.default_rng(7)
    for q in rng.uniform(arm.q_min, arm.q_max, size=(50, arm.n)):
        payload = float(rng.uniform(0.0, 0.2))
        assert gravity_torque(arm, q, payload) == pytest.approx(_serial_torques(arm, q, payload), abs=1e-8)
    level = np.zeros(arm.n)
    # the Braccio level at full reach with 50 g: about 0.95 N m at the shoulder (97 g m of masses at their levers);
    # its SR431 stalls at 1.2 N m (12.2 kg.cm), 0.72 at the default torque_use 0.6: it cannot hold that
    assert 0.8 < gravity_torque(arm, level, 0.05)[1] < 1.1


@pytest.mark.parametrize("name", ["seed-2link", "seed-3link"])
def test_a_planar_arm_works_in_a_horizontal_plane(name):
    arm = load_arm(name)
    rng = np.random.default_rng(9)
    qs = rng.uniform(arm.q_min, arm.q_max, size=(30, arm.n))
    assert np.all(gravity_torque(arm, qs, 0.1) == 0.0)
    assert np.all(body_points(arm, qs)[..., 2] == 0.0)
    if arm.n == 2:  # the textbook two-link point-mass inertia
        l1, l2 = (float(v) for v in arm.links_m)
        m_elbow = arm.drive.servos[1].mass_kg
        m_u = PRINTED_LINK_G_PER_MM * l1
        m_f = PRINTED_LINK_G_PER_MM * l2
        m_t = arm.drive.gripper.mass_kg + JAWS_G / 1000.0 + 0.1
        for q in qs:
            c2 = np.cos(q[1])
            pts = [(l2 / 2, m_f), (l2, m_t)]  # on the forearm, distance from the elbow
            m11 = m_u * l1**2 / 4 + m_elbow * l1**2 + sum(m * (l1**2 + r**2 + 2 * l1 * r * c2) for r, m in pts)
            m12 = sum(m * (r**2 + l1 * r * c2) for r, m in pts)
            m22 = sum(m * r**2 for r, m in pts)
            assert np.allclose(mass_matrix(arm, q, 0.1), [[m11, m12], [m12, m22]], atol=1e-9)
    M = mass_matrix(arm, qs)
    assert M.shape == (30, arm.n, arm.n) and np.allclose(M, np.swapaxes(M, -1, -2))
    assert np.all(np.linalg.eigvalsh(M) > 0)


def test_a_wrist_roll_arm_without_inertials_gets_estimates_that_turn_with_the_hand():
    so101 = load_arm("so101")
    arm = dataclasses.replace(so101, bodies=None, bodies_q_ref=None)
    bodies, _, estimated = arm_bodies(arm)
    assert estimated and {b.segment for b in bodies} == {0, 1, 2, 3, HAND}
    assert sum(b.mass_kg for b in bodies) == pytest.approx(
        6 * 0.055 + PRINTED_LINK_G_PER_MM * float(np.sum(arm.links_m)) + JAWS_G / 1000.0
    )
    rng = np.random.default_rng(13)
    qs = rng.uniform(arm.q_min, arm.q_max, size=(40, arm.n))
    jaws = [i for i, b in enumerate(bodies) if b.name.startswith("gripper")]
    assert np.allclose(body_points(arm, qs)[:, jaws], arm.tool_point(qs)[:, None, :], atol=1e-12)
    # estimates of the same order as the maker's masses: the shoulder within a factor 2 of the URDF's
    for q in qs[:10]:
        mine, urdf = gravity_torque(arm, q, 0.05)[1], gravity_torque(so101, q, 0.05)[1]
        assert abs(mine) <= 2 * abs(urdf) + 0.05 and abs(urdf) <= 2 * abs(mine) + 0.05


def test_arm_file_masses_replace_the_estimates(tmp_path):
    text = open(load_arm("braccio").source).read().replace("servo: sr431}", "servo: sr431, mass_g: 80}")
    path = tmp_path / "heavy.yaml"
    path.write_text(text.replace("name: braccio", "name: heavy"))
    arm = load_arm(str(path))
    links = [b for b in arm_bodies(arm)[0] if "(mass_g)" in b.name]
    assert len(links) == 4 and all(b.mass_kg == pytest.approx(0.08) for b in links)
    assert not any("link (estimate" in b.name for b in arm_bodies(arm)[0])
    assert gravity_torque(arm, np.zeros(4))[1] > gravity_torque(load_arm("braccio"), np.zeros(4))[1]


def test_bad_payloads_and_masses_are_one_line():
    arm = load_arm("braccio")
    for bad in (-0.01, float("nan"), float("inf"), 5000.0, "50g"):
        with pytest.raises(BadInputError, match="payload must be a mass"):
            gravity_torque(arm, arm.home_rad, bad)
        with pytest.raises(BadInputError, match="payload must be a mass"):
            mass_matrix(arm, arm.home_rad, bad)
    so101 = load_arm("so101")
    body = so101.bodies[0]
    odd = dataclasses.replace(so101, bodies=(dataclasses.replace(body, mass_kg=-0.1),) + so101.bodies[1:])
    with pytest.raises(BadInputError, match="mass is negative"):
        gravity_torque(odd, odd.home_rad)
