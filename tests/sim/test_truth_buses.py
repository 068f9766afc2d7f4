"""The truth file on the Feetech bus (feetechsim://) and the PCA9685 (pca9685sim://): the same truth as armsim's."""

from __future__ import annotations

import math
import time

import numpy as np
import pytest

from armctl.bus.pca9685.backend import PCA9685Backend
from armctl.model.arm import load_arm
from armctl.model.kinematics import tool_point, tool_pose
from armctl.sim import scene
from armctl.sim.feetechsim import FeetechSim, FeetechSimOptions
from armctl.sim.protocol_feetechsim import Serial as FeetechPort
from armctl.sim.simurl import BadSimURL
from armctl.sim.truth import true_arm
from tests.sim.test_truth import random_truth, write_truth


def expected_q(cal, names, doc, values) -> np.ndarray:
    """believed + offset + curve % of the range * 4 s (1 - s), for servo values ``values`` (the issue's words)."""
    out = []
    for name, s, v in zip(names, cal.joints, values):
        span = abs(float(s.angle_rad(s.hi)) - float(s.angle_rad(s.lo)))
        x = (v - s.lo) / (s.hi - s.lo)
        bow = doc.get("curve_pct", {}).get(name, 0.0) / 100 * span * 4 * x * (1 - x)
        out.append(float(s.angle_rad(v)) + math.radians(doc.get("zero_offset_deg", {}).get(name, 0.0)) + bow)
    return np.array(out)


def test_feetech_servos_apply_random_truths(tmp_path):
    rng = np.random.default_rng(101)
    for k in range(5):
        probe = FeetechSim(FeetechSimOptions(arm="so101"))
        arm, cal = probe.arm, probe.cal
        doc = random_truth(rng, arm)
        lo, hi = cal.joint_limits_rad()
        q = lo + (hi - lo) * rng.uniform(0.2, 0.8, size=arm.n)
        steps = [round(float(s.value(a))) for s, a in zip(cal.joints, q)]
        ids = [s.id for s in cal.joints]
        path = write_truth(tmp_path / f"t{k}.yaml", doc)
        sim = FeetechSim(FeetechSimOptions(arm="so101", truth=path, ids=ids, start_steps=steps))
        sim.pump(0.5)
        want = expected_q(cal, arm.joint_names, doc, steps)
        assert [sim.servo(i).present_steps() for i in ids] == steps  # the encoder reads the servo's own shaft
        assert np.allclose(sim.true_q_rad(), want, atol=1e-12)
        assert np.allclose(sim.true_tool_m(), tool_point(true_arm(arm, sim.truth), want), atol=1e-12)
        assert np.allclose(sim.true_tool_pose(), tool_pose(sim.true_arm, want), atol=1e-12)
        assert np.linalg.norm(sim.true_tool_m() - tool_point(arm, cal.values_to_joints(steps))) > 1e-3


def test_feetech_backlash_turned_by_hand(tmp_path):
    b = 1.5
    path = write_truth(tmp_path / "t.yaml", {"backlash_deg": {"elbow_flex": b}})
    sim = FeetechSim(FeetechSimOptions(arm="so101", truth=path))
    s = sim.cal.joints[2]
    mid = round((s.lo + s.hi) / 2)
    seen, t = [], 0.0
    for approach in (-100, +100):
        for steps in (mid + approach, mid):
            t += 0.5
            assert sim.turn_by_hand(s.id, steps)  # torque off at power-on: the hand turns it
            sim.pump(t)
        seen.append(sim.true_q_rad()[2])
    believed = float(s.angle_rad(mid))
    assert sorted(math.degrees(v - believed) for v in seen) == pytest.approx([-b / 2, b / 2], abs=1e-9)


def test_feetech_url_options_and_bad_truths(tmp_path):
    with pytest.raises(BadSimURL, match="truth and cal need arm"):
        FeetechPort.open_url(f"feetechsim://?truth={tmp_path / 't.yaml'}")
    bad = tmp_path / "bad.yaml"
    bad.write_text("links_mm: [1, 2]\n", encoding="utf-8")
    with pytest.raises(BadSimURL, match=r"bad.yaml:1.*links_mm.*expected 3 numbers"):
        FeetechPort.open_url(f"feetechsim://?arm=so101&truth={bad}")
    port = FeetechPort.open_url(f"feetechsim://?arm=so101&rate=20&truth={write_truth(tmp_path / 't.yaml', {})}")
    try:
        assert scene.latest().sim is port.sim
        assert scene.latest().true_tool_m().shape == (3,)
    finally:
        port.close()
    assert all(a.sim is not port.sim for a in scene.live_arms())
    plain = FeetechPort.open_url("feetechsim://?rate=20")  # no arm: no true tool, not in the scene
    try:
        assert plain.sim.arm is None and all(a.sim is not plain.sim for a in scene.live_arms())
    finally:
        plain.close()


def _pca(url):
    from armctl.calibration.servo import find_calibration, load_calibration

    cal = load_calibration(find_calibration("mearm", "mearm-pca9685"))
    be = PCA9685Backend.create(url, cal)
    be.open()
    return be, cal


def test_pca9685_servos_apply_random_truths(tmp_path):
    rng = np.random.default_rng(9685)
    for k in range(3):
        be0, cal = _pca("pca9685sim://?arm=mearm&cal=mearm-pca9685")
        arm = be0.i2c.bus.arm
        be0.close()
        doc = random_truth(rng, arm)
        url = f"pca9685sim://?arm=mearm&cal=mearm-pca9685&slew=100000&truth={write_truth(tmp_path / f't{k}.yaml', doc)}"
        be, _ = _pca(url)
        bus = be.i2c.bus
        lo, hi = cal.joint_limits_rad()
        q = lo + (hi - lo) * rng.uniform(0.2, 0.8, size=arm.n)
        be.set_outputs({s.channel: float(s.pulse_us(a)) for s, a in zip(cal.joints, q)})
        widths = [bus.chips[0x40].outputs[s.channel] for s in cal.joints]  # as the chip's counts make them
        want = expected_q(cal, arm.joint_names, doc, widths)
        t = bus.now + 0.01
        assert np.allclose(bus.true_q_rad(t), want, atol=1e-12)
        assert np.allclose(bus.true_tool_m(t), tool_point(bus.true_arm, want), atol=1e-12)
        assert np.allclose(bus.true_tool_pose(t), tool_pose(bus.true_arm, want), atol=1e-12)
        assert scene.latest().sim is bus
        be.close()
        assert all(a.sim is not bus for a in scene.live_arms())


def test_pca9685_backlash_and_bad_truth(tmp_path):
    b = 1.0
    path = write_truth(tmp_path / "t.yaml", {"backlash_deg": {"shoulder": b}})
    be, cal = _pca(f"pca9685sim://?arm=mearm&cal=mearm-pca9685&slew=100000&truth={path}")
    bus, s = be.i2c.bus, cal.joints[1]
    mid = float(np.mean(s.angle_range_rad()))
    seen = []
    for approach in (-0.2, 0.2):
        for a in (mid + approach, mid):
            be.set_outputs({s.channel: float(s.pulse_us(a))})
            time.sleep(0.005)  # (wall time: the servo gets there in 0.1 ms)
        seen.append(bus.true_q_rad(bus.now + 0.01)[1])
    be.close()
    assert math.degrees(seen[1] - seen[0]) == pytest.approx(b, abs=1e-9)
    bad = tmp_path / "bad.yaml"
    bad.write_text("backlash_deg: {shoulder: -1}\n", encoding="utf-8")
    from armctl.errors import BadInputError

    with pytest.raises(BadInputError, match=r"bad.yaml:1.*backlash_deg.shoulder.*>= 0"):
        PCA9685Backend.create(f"pca9685sim://?arm=mearm&truth={bad}", cal).open()


@pytest.mark.parametrize(
    ("arm_name", "port", "backend"),
    [
        ("so101", "feetechsim://?rate=20", None),
        ("mearm", "pca9685sim://?", "pca9685"),
        ("mearm", "armsim://?rate=20&encoders=0", None),
    ],
)
def test_status_true_tool_on_every_simulator(tmp_path, arm_name, port, backend):
    import armctl
    from armctl.cli.device import simulated_true_tool_m

    doc = {"zero_offset_deg": {load_arm(arm_name).joint_names[0]: 5.0}}
    url = f"{port}&truth={write_truth(tmp_path / 't.yaml', doc)}"
    cal = "mearm-pca9685" if backend == "pca9685" else None
    with armctl.connect(arm_name, url, backend=backend, calibration=cal, assume_pose="home") as robot:
        believed = np.asarray(robot.where().tool_m)
        true = np.asarray(simulated_true_tool_m(robot.backend))
        # the base turned 5 deg more than believed: the same radius (to the pulses' counts), 5 deg further round
        assert np.hypot(*true[:2]) == pytest.approx(np.hypot(*believed[:2]), abs=1e-4)
        turned = math.atan2(true[1], true[0]) - math.atan2(believed[1], believed[0])
        assert math.degrees(turned) == pytest.approx(5.0, abs=0.05)
