"""The simulated world (armctl.sim.scene): live simulated arms, and parts gripped, carried and released."""

from __future__ import annotations

import gc
import math
import weakref

import numpy as np
import pytest

from armctl.sim import scene
from armctl.sim.armsim import SimArm, SimOptions
from armctl.sim.protocol_armsim import Serial as ArmsimPort
from armctl.sim.scene import Part
from tests.sim.test_truth import command, write_truth


def _rot(xy, a):
    c, s = math.cos(a), math.sin(a)
    return np.array([c * xy[0] - s * xy[1], s * xy[0] + c * xy[1]])


def test_a_part_is_gripped_carried_and_released(tmp_path):
    path = write_truth(tmp_path / "t.yaml", {"zero_offset_deg": {"base": 2.5, "shoulder": -4.0}})
    sim = SimArm(SimOptions(arm="mearm", truth=path))
    live = scene.register(sim)
    tip = sim.true_tool_m()
    grip_z = tip[2] - 0.07 + 0.01  # a tall part (70 mm): its top 10 mm under the tool
    near = live.add_part(Part(4, 0.07, tip[0] + 0.006, tip[1] - 0.004, math.radians(20), grip_z))
    far = live.add_part(Part(5, 0.07, tip[0], tip[1] + 0.02, 0.0, grip_z))  # 20 mm off: left there
    base, g = sim.cal.joints[0], sim.cal.gripper
    command(sim, 1.0, {g.channel: g.pulse_us(sim.arm.gripper.closed_rad)})
    sim.pump(2.0)
    before = {p.marker_id: p for p in live.parts_now()}
    assert live.held() is near
    assert before[4].x_m == pytest.approx(near.x_m) and before[4].z_m == pytest.approx(grip_z)
    turn = math.radians(30)
    command(sim, 2.0, {base.channel: base.pulse_us(sim.arm.home_rad[0] + turn)})
    sim.pump(3.0)
    turned = sim.true_q_rad()[0] - sim.true_q_rad(1.9)[0]
    assert math.degrees(turned) == pytest.approx(30, abs=0.05)  # (the board's 0.5 us tick)
    now = {p.marker_id: p for p in live.parts_now()}
    assert np.allclose([now[4].x_m, now[4].y_m], _rot([near.x_m, near.y_m], turned), atol=1e-9)
    assert now[4].yaw_rad == pytest.approx(math.radians(20) + turned)
    assert (now[5].x_m, now[5].y_m) == (far.x_m, far.y_m)
    command(sim, 3.0, {g.channel: g.pulse_us(sim.arm.gripper.open_rad)})
    sim.pump(4.0)
    after = {p.marker_id: p for p in live.parts_now()}
    assert live.held() is None
    assert after[4].z_m == 0.0 and np.allclose([after[4].x_m, after[4].y_m], [now[4].x_m, now[4].y_m])
    command(sim, 4.0, {base.channel: base.pulse_us(sim.arm.home_rad[0])})
    sim.pump(5.0)
    assert live.parts_now()[0].x_m == after[4].x_m  # released: stays where it was put


def test_a_part_out_of_reach_of_the_jaws_is_not_gripped(tmp_path):
    sim = SimArm(SimOptions(arm="mearm"))
    live = scene.register(sim)
    tip = sim.true_tool_m()
    live.add_part(Part(1, 0.03, tip[0], tip[1], 0.0, 0.0))  # on the table: its top 50 mm under the tool
    g = sim.cal.gripper
    command(sim, 1.0, {g.channel: g.pulse_us(sim.arm.gripper.closed_rad)})
    sim.pump(2.0)
    assert live.parts_now()[0].z_m == 0.0 and live.held() is None


def test_truth_parts_and_the_registry_of_live_arms(tmp_path):
    doc = {"parts": [{"marker": 7, "x_mm": 150, "y_mm": -40, "yaw_deg": 30}, {"marker": 2, "x_mm": 0, "y_mm": 90}]}
    path = write_truth(tmp_path / "t.yaml", doc)
    first = ArmsimPort.open_url(f"armsim://?arm=mearm&rate=20&truth={path}")
    second = ArmsimPort.open_url("armsim://?arm=eezybot-mk2&rate=20")
    try:
        assert scene.latest().sim is second.sim
        second.close()
        live = scene.latest()
        assert live.sim is first.sim and live.arm.name == "mearm"
        parts = live.parts_now()
        assert [(p.marker_id, p.size_m, p.x_m, p.y_m) for p in parts] == [(7, 0.03, 0.15, -0.04), (2, 0.03, 0.0, 0.09)]
        assert parts[0].yaw_rad == pytest.approx(math.radians(30))
        pose = live.true_tool_pose()
        assert pose.shape == (4, 4) and np.allclose(pose[:3, 3], live.true_tool_m())
        assert live.true_gripper_rad() == pytest.approx(live.gripper.open_rad)
        assert live.now_s() > 0
    finally:
        first.close()
        second.close()
    assert all(a.sim is not first.sim for a in scene.live_arms())
    sim = SimArm(SimOptions(arm="mearm"))
    live = weakref.ref(scene.register(sim))
    assert scene.latest() is live()
    del sim
    gc.collect()
    assert live() is None and all(a is not None for a in scene.live_arms())  # a simulator nobody holds is gone


def test_the_grip_happens_where_the_tool_is_when_the_jaws_pass_their_midpoint():
    sim = SimArm(SimOptions(arm="mearm"))  # 400 deg/s: the jaws pass mid-way (45 deg) 0.1125 s after the command
    live = scene.register(sim)
    tip = sim.true_tool_m()
    z = tip[2] - 0.07 + 0.01
    at_45 = _rot(tip[:2], math.radians(45))  # the base, turning 60 deg at the same speed, is at 45 deg then
    at_60 = _rot(tip[:2], math.radians(60))
    taken = live.add_part(Part(1, 0.07, at_45[0], at_45[1], 0.0, z))
    left = live.add_part(Part(2, 0.07, at_60[0], at_60[1], 0.0, z))
    base, g = sim.cal.joints[0], sim.cal.gripper
    command(sim, 1.0, {base.channel: base.pulse_us(sim.arm.home_rad[0] + math.radians(60))})
    command(sim, 1.0, {g.channel: g.pulse_us(sim.arm.gripper.closed_rad)})
    sim.pump(2.0)
    parts = live.parts_now()
    assert live.held() is taken
    assert np.allclose([parts[0].x_m, parts[0].y_m], _rot([taken.x_m, taken.y_m], math.radians(15)), atol=2e-4)
    assert (parts[1].x_m, parts[1].y_m) == (left.x_m, left.y_m)
