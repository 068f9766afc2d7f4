"""Statics (armctl.model.statics): the torque each joint must give to hold a pose, from the URDF's <inertial>s,
against pinocchio's computeGeneralizedGravity on the same URDF (the SO-101 preset's, whose links carry the maker's
masses), with a payload at the tool as pinocchio's frame Jacobian carries it: random poses and payloads."""

from __future__ import annotations

import numpy as np
import pytest

from armctl.core.paths import PRESET_DIR
from armctl.errors import BadInputError
from armctl.model.arm import load_arm
from armctl.model.statics import G_M_S2, HAND, body_points, gravity_torque
from armctl.model.urdf.derive import urdf_angles
from tests.helpers import require_module

URDF = PRESET_DIR / "so101.urdf"


def _pinocchio():
    pin = require_module("pinocchio", "pinocchio, the independent statics (pip install pin)")
    model = pin.buildModelFromUrdf(str(URDF))
    model.gravity.linear = np.array([0.0, 0.0, -G_M_S2])  # pinocchio's default is 9.81
    return pin, model, model.createData()


def _pin_torques(pin, model, data, arm, q, payload_kg):
    """pinocchio's holding torques at armctl pose ``q``, per armctl joint in armctl's directions."""
    urdf_q = urdf_angles(arm, q)
    qp = np.zeros(model.nq)
    for j in range(1, model.njoints):
        qp[model.joints[j].idx_q] = urdf_q.get(model.names[j], 0.0)  # the gripper at its zero
    g = pin.computeGeneralizedGravity(model, data, qp).copy()
    pin.computeJointJacobians(model, data, qp)
    pin.updateFramePlacements(model, data)
    J = pin.getFrameJacobian(model, data, model.getFrameId(arm.urdf.tool_link), pin.LOCAL_WORLD_ALIGNED)
    g = g + J[:3].T @ np.array([0.0, 0.0, payload_kg * G_M_S2])
    return np.array([sign * g[model.joints[model.getJointId(name)].idx_v] for name, _, sign in arm.urdf_map])


def test_the_so101_bodies_come_from_its_urdf():
    arm = load_arm("so101")
    names = {b.name: b for b in arm.bodies}
    assert sum(b.mass_kg for b in arm.bodies) == pytest.approx(0.100006 + 0.103 + 0.104 + 0.079 + 0.087 + 0.012)
    assert names["upper_arm_link"].segment == 1 and names["wrist_link"].segment == 3
    assert names["gripper_link"].segment == HAND and names["moving_jaw_so101_v1_link"].segment == HAND
    assert np.allclose(body_points(arm, arm.bodies_q_ref), [b.point_m for b in arm.bodies], atol=1e-12)


def test_gravity_torques_agree_with_pinocchio_at_random_poses_and_payloads():
    pin, model, data = _pinocchio()
    arm = load_arm("so101")
    rng = np.random.default_rng(11)
    worst = 0.0
    for q in rng.uniform(arm.q_min, arm.q_max, size=(300, arm.n)):
        payload = float(rng.uniform(0.0, 0.25))
        mine = gravity_torque(arm, q, payload)
        theirs = _pin_torques(pin, model, data, arm, q, payload)
        worst = max(worst, float(np.max(np.abs(mine - theirs) / np.maximum(np.abs(theirs), 1e-3))))
    print(f"so101 holding torques vs pinocchio, 300 poses: worst {worst:.2e} of the torque")
    assert worst < 0.01  # the 1 %; measured about 1e-7
    # the shoulder_lift at full reach, arm level, no payload: of the order FACTS-realarm.md gives (~0.8 N m)
    level = arm.home_rad.copy()
    level[1:4] = np.radians([0.0, 0.0, 0.0])
    assert 0.3 < abs(gravity_torque(arm, level)[1]) < 1.5


def test_bad_payloads_are_one_line():
    arm = load_arm("so101")
    for bad in (-0.01, float("nan")):
        with pytest.raises(BadInputError, match="payload must be a mass"):
            gravity_torque(arm, arm.home_rad, bad)


def test_fk_gives_the_holding_torques_with_a_payload(capsys):
    import json

    from armctl.cli import main

    assert main(["--arm", "so101", "fk", "0", "0", "0", "0", "0", "--payload", "50g", "--json"]) == 0
    got = json.loads(capsys.readouterr().out)["gravity_torque_nm"]
    arm = load_arm("so101")
    want = gravity_torque(arm, np.radians([0, 0, 0, 0, 0]), 0.05)
    assert got == pytest.approx(want.tolist(), abs=1e-6) and got[1] > got[2] > got[3] > 0
    for bad, why in (("50", "give its unit"), ("-5g", "a mass is 0..10 kg")):
        assert main(["--arm", "so101", "fk", "0", "0", "0", "0", "0", "--payload", bad]) == 2
        assert why in capsys.readouterr().err
    # an arm file without masses gets the estimates (armctl.model.statics.arm_bodies)
    assert main(["--arm", "mearm", "fk", "0", "90", "0", "--payload", "50g", "--json"]) == 0
    got = json.loads(capsys.readouterr().out)["gravity_torque_nm"]
    assert got == pytest.approx(gravity_torque(load_arm("mearm"), np.radians([0, 90, 0]), 0.05).tolist(), abs=1e-6)
