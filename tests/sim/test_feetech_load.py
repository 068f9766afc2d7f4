"""The simulated Feetech bus carries its arm (issue 38): Present_Load holds the arm against gravity, with the part
the gripper holds; a part between the jaws stops a closing gripper, which then pushes on it up to its torque limit;
the servos heat under load and cut their output above max_temperature, as Feetech's STS3215 does.

The payload's share is checked against a lever arm worked out here (the part's weight times the tool point's
horizontal distance from the shoulder_lift axis), not against armctl's statics."""

from __future__ import annotations

import math

import numpy as np
import pytest

from armctl.errors import ConfigError
from armctl.model.arm import load_arm
from armctl.model.kinematics import tool_point
from armctl.model.statics import G_M_S2, gravity_torque
from armctl.sim import scene
from armctl.sim.feetech_load import CONTACT_PAST_MID_DEG
from armctl.sim.feetechsim import FeetechSim, FeetechSimOptions
from armctl.sim.truth import DEFAULT_PART_DENSITY_G_CM3, Part, load_truth

LOAD_STEP = 1000.0  # Present_Load counts 0.1 % of stall torque


def _so101(**opts) -> FeetechSim:
    sim = FeetechSim(FeetechSimOptions(arm="so101", **opts))
    scene.register(sim)
    return sim


def _drive(sim, goals: dict[int, float], t_s: float) -> None:
    """Goals (steps) and torque on for those servos, as a host writes them; then ``t_s`` simulated seconds pass."""
    for i, v in goals.items():
        s = sim.servo(i)
        s.write(42, int(round(v)).to_bytes(2, "little"))
        if not s.torque_on:
            s.write(40, b"\x01")
    sim.pump(sim.now + t_s)


def _load(sim, servo_id: int) -> float:
    s = sim.servo(servo_id)
    s.refresh()
    return s.get("present_load") / LOAD_STEP  # the register as the host decodes it (sign bit 10)


def _stall_nm(sim) -> float:
    return sim.arm.drive.servo(1).stall_nm  # the SO-101's STS3215 at 7.4 V


def test_holding_the_arm_reads_its_gravity_torque_in_the_load_register():
    sim = _so101()
    here = {s.id: s.present_steps() for s in sim.servos}
    _drive(sim, here, 0.5)
    q = sim.true_q_rad()
    tau = gravity_torque(sim.true_arm, q)
    for k, s in enumerate(sim.cal.joints):
        want = tau[k] * s.direction / _stall_nm(sim)
        assert _load(sim, s.id) == pytest.approx(want, abs=1.5e-3), s.name
    assert abs(_load(sim, 2)) > 0.2  # the shoulder holds the outstretched arm: about a quarter of its torque
    for s in sim.servos:  # torque off: nothing held
        s.write(40, b"\x00")
    sim.pump(sim.now + 0.1)
    assert all(_load(sim, s.id) == 0 for s in sim.servos)


def _open_at_a_part(sim, mass_kg: float | None):
    """The gripper open, a part between the jaws (its top at the tool point); returns (part, gripper cal)."""
    g, grip = sim.cal.gripper, sim.arm.gripper
    here = {s.id: s.present_steps() for s in sim.servos}
    _drive(sim, {**here, g.id: float(g.value(grip.open_rad))}, 1.0)
    tip = sim.true_tool_m()
    part = sim.scene_arm.add_part(Part(1, 0.03, tip[0], tip[1], 0.0, tip[2] - 0.03, mass_kg=mass_kg))
    return part, g


def test_a_gripper_closing_on_a_part_stops_there_and_pushes_up_to_its_torque_limit():
    sim = _so101()
    part, g = _open_at_a_part(sim, 0.2)
    grip = sim.arm.gripper
    shoulder_before = _load(sim, 2)
    servo = sim.servo(g.id)
    servo.write(48, (300).to_bytes(2, "little"))  # Torque_Limit 30 %
    closed = float(g.value(grip.closed_rad))
    loads = []
    for k in range(1, 9):  # the goal walks toward closed: once the jaws meet the part the load rises with it
        start = servo.present_steps()
        goal = start + (closed - start) * min(1.0, k / 4)
        _drive(sim, {g.id: goal}, 0.05)
        loads.append(abs(_load(sim, g.id)))
    contact = float(g.value((grip.open_rad + grip.closed_rad) / 2 - math.radians(CONTACT_PAST_MID_DEG)))
    assert servo.present_steps() == pytest.approx(contact, abs=1)  # stopped by the part, far from closed
    assert abs(servo.present_steps() - closed) > 300
    assert sim.scene_arm.held() is part
    assert loads[-1] == pytest.approx(0.3, abs=1e-3) and max(loads) <= 0.3 + 1e-9  # up to the cap, no more
    assert not servo.overloaded and servo.error_bits() == 0
    # the shoulder now also carries the 200 g part: its weight times the tool's horizontal lever about the axis
    q = sim.true_q_rad()
    tool = tool_point(sim.true_arm, q)
    d = np.array([math.cos(q[0]), math.sin(q[0]), 0.0])
    lever = float((tool - sim.true_arm.base_offset_m * d) @ d)
    extra = 0.2 * G_M_S2 * lever / _stall_nm(sim)
    assert abs(_load(sim, 2)) - abs(shoulder_before) == pytest.approx(extra, abs=3e-3)
    _drive(sim, {g.id: float(g.value(grip.open_rad))}, 1.0)  # opening is free, and lets the part go
    assert sim.scene_arm.held() is None and _load(sim, g.id) == 0


def test_a_gripper_closing_on_nothing_closes_fully_without_load():
    sim = _so101()
    g, grip = sim.cal.gripper, sim.arm.gripper
    _drive(sim, {g.id: float(g.value(grip.open_rad))}, 1.0)
    closed = float(g.value(grip.closed_rad))
    _drive(sim, {g.id: closed}, 1.0)
    assert sim.servo(g.id).present_steps() == round(closed) and _load(sim, g.id) == 0


def test_a_blocked_servo_heats_and_cuts_its_output_over_max_temperature():
    sim = FeetechSim(FeetechSimOptions(ids=[1], temp_c=45.0))
    s = sim.servo(1)
    sim.set_stops(1, 2000, 2100)
    s.write(48, (700).to_bytes(2, "little"))  # 70 %: under the overload protection's 80 %
    _drive(sim, {1: 2600}, 5.0)
    assert s.load == 700 and 45 < s.temp_c < 50 and s.error_bits() == 0
    sim.pump(sim.now + 200.0)  # steady 45 + 40 x 0.7 = 73 degC: it passes 70 on the way
    assert s.hot_cut and s.load == 0 and s.torque_on  # output off, the register still says on
    sim.pump(sim.now + 1.0)
    s.refresh()
    assert s.get("status") & 0x04 and s.get("present_temperature") >= 70
    sim.pump(sim.now + 300.0)  # cooled under the limit: the bit clears, the output stays off until torque is written
    assert s.temp_c < 70 and not s.error_bits() & 0x04 and s.hot_cut and s.load == 0
    s.write(40, b"\x01")
    sim.pump(sim.now + 1.0)
    assert not s.hot_cut and s.load == 700


def test_part_masses_in_the_truth_file(tmp_path):
    arm = load_arm("so101")
    path = tmp_path / "t.yaml"
    path.write_text("parts:\n  - {marker: 1, x_mm: 150, y_mm: 0, mass_g: 250}\n  - {marker: 2, x_mm: 200, y_mm: 0}\n")
    heavy, plain = load_truth(path, arm).parts
    assert heavy.mass() == pytest.approx(0.25)
    assert plain.mass() == pytest.approx(DEFAULT_PART_DENSITY_G_CM3 * 27 / 1000)  # a 30 mm printed cube: 20 g
    path.write_text("parts:\n  - {marker: 1, x_mm: 150, y_mm: 0, mass_g: -5}\n")
    with pytest.raises(ConfigError, match=r"t.yaml:2, key 'parts\[0\].mass_g': -5 is out of range: must be > 0"):
        load_truth(path, arm)
