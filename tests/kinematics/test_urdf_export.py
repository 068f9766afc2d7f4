"""An arm file as a URDF (armctl.model.urdf.export, ``armctl urdf``): pinocchio, reading the exported file, gives the
same holding torques (``computeGeneralizedGravity`` + the payload through the tool's Jacobian) and the same
joint-space inertia (``crba``) as armctl's statics, within 1 %, at random poses and payloads: a Braccio on a base,
a planar 3-link arm, an arm file with ``mass_g``s and a wrist roll off its axis, and the SO-101 written back from its
maker's masses. armctl reads the exported Braccio back as an arm from a URDF with the same kinematics and masses."""

from __future__ import annotations

import numpy as np
import pytest

from armctl.cli import main
from armctl.core.paths import PRESET_DIR
from armctl.errors import BadInputError
from armctl.model.arm import load_arm
from armctl.model.statics import G_M_S2, arm_bodies, gravity_torque, mass_matrix
from armctl.model.urdf.export import TOOL_LINK, urdf_text
from tests.helpers import require_module

ROLL_ARM = """\
name: printed5
links_m: [0.12, 0.11, 0.09]
base: {name: waist, min_deg: -150, max_deg: 150, max_speed_deg_s: 90, servo: mg996r, mass_g: 40}
shoulder_height_m: 0.08
base_offset_m: 0.015
joints:
  - {name: shoulder, min_deg: -10, max_deg: 170, max_speed_deg_s: 60, servo: mg996r, mass_g: 35}
  - {name: elbow, min_deg: -150, max_deg: 30, max_speed_deg_s: 60, servo: mg996r, mass_g: 30}
  - {name: wrist, min_deg: -100, max_deg: 100, max_speed_deg_s: 90, servo: mg90s, mass_g: 12}
roll: {name: twist, min_deg: -90, max_deg: 90, max_speed_deg_s: 120, servo: sg90, mass_g: 8, axis_deg: 10,
       tool_offset_m: [0.01, -0.005]}
home_deg: [0, 90, -90, 0, 0]
gripper: {open_deg: 60, closed_deg: 0, max_speed_deg_s: 180, servo: sg90}
"""


def _arms(tmp_path):
    path = tmp_path / "printed5.yaml"
    path.write_text(ROLL_ARM)
    return [load_arm("braccio"), load_arm("seed-3link"), load_arm(str(path)), load_arm("so101")]


def _pinocchio(arm, tmp_path):
    pin = require_module("pinocchio", "pinocchio, the independent statics (pip install pin)")
    f = tmp_path / f"{arm.name}.urdf"
    f.write_text(urdf_text(arm))
    model = pin.buildModelFromUrdf(str(f))
    model.gravity.linear = np.array([0.0, 0.0, -G_M_S2])  # pinocchio's default is 9.81
    assert [model.names[j] for j in range(1, model.njoints)] == list(arm.joint_names)
    return pin, model, model.createData()


def test_pinocchio_agrees_with_armctls_statics_on_the_exported_urdfs(tmp_path):
    rng = np.random.default_rng(38)
    for arm in _arms(tmp_path):
        pin, model, data = _pinocchio(arm, tmp_path)
        tool = model.getFrameId(TOOL_LINK)
        worst_g = worst_m = 0.0
        for q in rng.uniform(arm.q_min, arm.q_max, size=(100, arm.n)):
            payload = float(rng.uniform(0.0, 0.3))
            pin.computeJointJacobians(model, data, q)
            pin.updateFramePlacements(model, data)
            J = pin.getFrameJacobian(model, data, tool, pin.LOCAL_WORLD_ALIGNED)[:3]
            assert np.allclose(data.oMf[tool].translation[: arm.dim], arm.tool_point(q), atol=1e-9)
            g = pin.computeGeneralizedGravity(model, data, q) + J.T @ np.array([0.0, 0.0, payload * G_M_S2])
            M = pin.crba(model, data, q)
            M = np.triu(M) + np.triu(M, 1).T + payload * J.T @ J
            mine_g, mine_m = gravity_torque(arm, q, payload), mass_matrix(arm, q, payload)
            worst_g = max(worst_g, float(np.max(np.abs(mine_g - g) / np.maximum(np.abs(g), 1e-3))))
            worst_m = max(worst_m, float(np.max(np.abs(mine_m - M)) / np.max(np.abs(M))))
        print(f"{arm.name}: holding torques vs pinocchio worst {worst_g:.1e}, inertia worst {worst_m:.1e}")
        assert worst_g < 0.01 and worst_m < 0.01  # the 1 %; measured about 1e-7 and 1e-8


def test_the_exported_urdf_carries_the_arms_masses_and_reads_back(tmp_path):
    arm = load_arm("braccio")
    path = tmp_path / "braccio.urdf"
    assert main(["--arm", "braccio", "urdf", "-o", str(path)]) == 0
    back = load_arm(str(path))  # armctl's own URDF reader: the same arm, its masses now <inertial>s
    total = sum(b.mass_kg for b in arm_bodies(arm)[0])
    assert sum(b.mass_kg for b in back.bodies) == pytest.approx(total) and not arm_bodies(back)[2]
    rng = np.random.default_rng(2)
    for q in rng.uniform(arm.q_min, arm.q_max, size=(50, arm.n)):
        qb = q + np.array([off for _, off, _ in back.urdf_map])
        assert np.allclose(back.tool_point(qb), arm.tool_point(q), atol=1e-9)
        assert np.allclose(gravity_torque(back, qb, 0.05), gravity_torque(arm, q, 0.05), atol=1e-7)


def test_a_parallelogram_is_refused_in_one_line(capsys):
    with pytest.raises(BadInputError, match="parallelogram"):
        urdf_text(load_arm("eezybot-mk2"))
    assert main(["--arm", "mearm", "urdf"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "cannot write" in err and "URDF tree" in err
    assert main(["--arm", "seed-2link", "urdf"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("<?xml") and out.count("<inertial>") == 3 and 'axis xyz="0 0 1"' in out
    assert (PRESET_DIR / "so101.urdf").exists()


def test_a_urdf_with_a_broken_inertia_is_one_line(tmp_path, capsys):
    text = urdf_text(load_arm("braccio"))
    for bad, why in (('ixx="-1"', "moments >= 0"), ('ixx="lots"', "not a number")):
        path = tmp_path / "bad.urdf"
        path.write_text(text.replace('ixx="0"', bad, 1))
        assert main(["--arm", str(path), "fk", "0", "30", "0", "0"]) == 2
        err = capsys.readouterr().err
        assert why in err and "shoulder_link" in err and err.count("\n") == 1


def test_a_urdf_with_an_absurd_mass_is_one_line(tmp_path, capsys):
    text = urdf_text(load_arm("braccio"))
    path = tmp_path / "heavy.urdf"
    path.write_text(text.replace('<mass value="0.0995"/>', '<mass value="2e6"/>', 1))
    assert main(["--arm", str(path), "workspace"]) == 2
    err = capsys.readouterr().err
    assert "shoulder_link" in err and "not an arm's link" in err and err.count("\n") == 1
    path.write_text(text.replace('rpy="0 0 0"/>\n      <mass', 'rpy="0 x 0"/>\n      <mass', 1))
    assert main(["--arm", str(path), "workspace"]) == 2
    assert "not a number" in capsys.readouterr().err


PLANAR_URDF = """<?xml version="1.0"?>
<robot name="wall2">
  <link name="root"/><link name="upper"/><link name="fore"/><link name="tip"/>
  <joint name="j1" type="revolute"><parent link="root"/><child link="upper"/><origin xyz="0 0 0.1"/>
    <axis xyz="0 -1 0"/><limit lower="-1.5" upper="1.5" effort="1" velocity="1"/></joint>
  <joint name="j2" type="revolute"><parent link="upper"/><child link="fore"/><origin xyz="0.2 0 0"/>
    <axis xyz="0 -1 0"/><limit lower="-2" upper="2" effort="1" velocity="1"/></joint>
  <joint name="tip" type="fixed"><parent link="fore"/><child link="tip"/><origin xyz="0.15 0 0"/></joint>
</robot>
"""


def test_a_planar_arm_from_a_urdf_works_in_its_vertical_plane(tmp_path):
    """armctl reads a planar URDF arm in its vertical plane (its y is the height): gravity asks something of it,
    unlike a planar arm file's level plane; pinocchio agrees on its export."""
    path = tmp_path / "wall2.urdf"
    path.write_text(PLANAR_URDF)
    arm = load_arm(str(path))
    assert not arm.has_base and arm_bodies(arm)[2]  # estimated: the URDF has no <inertial>
    level = np.zeros(arm.n)
    # 0.3 g/mm links at their middles, level: the shoulder holds both, the elbow its forearm
    m1, m2 = 0.3 * 0.2, 0.3 * 0.15
    assert gravity_torque(arm, level) == pytest.approx([G_M_S2 * (m1 * 0.1 + m2 * 0.275), G_M_S2 * m2 * 0.075])
    assert np.all(gravity_torque(load_arm("seed-2link"), level) == 0.0)
    pin, model, data = _pinocchio(arm, tmp_path)
    for q in np.random.default_rng(4).uniform(arm.q_min, arm.q_max, size=(30, arm.n)):
        assert np.allclose(pin.computeGeneralizedGravity(model, data, q), gravity_torque(arm, q), atol=1e-7)
