"""The simulated arm's truth file (armctl.sim.truth): what the simulators physically apply, and bad files."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys

import numpy as np
import pytest

from armctl.errors import ConfigError
from armctl.model.kinematics import tool_point, tool_pose
from armctl.sim.armsim import SimArm, SimOptions
from armctl.sim.protocol_armsim import Serial as ArmsimPort
from armctl.sim.protocol_armsim import parse_url
from armctl.sim.simurl import BadSimURL
from armctl.sim.truth import TrueServo, Truth, load_truth, true_arm

ARMS = ("mearm", "eezybot-mk2", "seed-3link", "braccio")


def write_truth(path, doc: dict) -> str:
    path.write_text(json.dumps(doc), encoding="utf-8")  # JSON is YAML
    return str(path)


def random_truth(rng: np.random.Generator, arm, *, backlash: bool = False) -> dict:
    """A truth as the issue draws them: zeros up to 8 deg, curves up to 3 %, lengths off by up to 3 mm."""
    names = list(arm.joint_names)
    doc = {
        "zero_offset_deg": {n: float(rng.uniform(-8, 8)) for n in names},
        "links_mm": [float(v * 1000 + rng.uniform(-3, 3)) for v in arm.links_m],
        "curve_pct": {n: float(rng.uniform(-3, 3)) for n in names},
    }
    if backlash:
        doc["backlash_deg"] = {n: float(rng.uniform(0, 1.5)) for n in names}
    return doc


def command(sim: SimArm, t: float, values: dict[int, float]) -> None:
    """The board starts pulses of ``values`` (channel -> us) at simulated time ``t``."""
    for ch, us in values.items():
        sim._on_pulse(t, ch, round(us * 2))


def expected_true_q(sim: SimArm, doc: dict, q: np.ndarray) -> np.ndarray:
    """The issue's formula, worked out here: believed + offset + curve % of the range * 4 s (1 - s)."""
    out = []
    for i, (name, s) in enumerate(zip(sim.arm.joint_names, sim.cal.joints)):
        v = round(float(s.pulse_us(q[i])) * 2) / 2  # the board's 0.5 us ticks
        lo, hi = s.min_us, s.max_us
        span = abs(float(s.angle_rad(hi)) - float(s.angle_rad(lo)))
        x = (v - lo) / (hi - lo)
        bow = doc.get("curve_pct", {}).get(name, 0.0) / 100 * span * 4 * x * (1 - x)
        out.append(float(s.angle_rad(v)) + math.radians(doc["zero_offset_deg"].get(name, 0.0)) + bow)
    return np.array(out)


@pytest.mark.parametrize("arm_name", ARMS)
def test_random_truths_move_the_true_tool_where_the_true_arm_puts_it(tmp_path, arm_name):
    rng = np.random.default_rng(36)
    for k in range(5):
        probe = SimArm(SimOptions(arm=arm_name))
        doc = random_truth(rng, probe.arm)
        sim = SimArm(SimOptions(arm=arm_name, truth=write_truth(tmp_path / f"t{k}.yaml", doc), slew_deg_s=1e4))
        lo, hi = sim.cal.joint_limits_rad()
        q = lo + (hi - lo) * rng.uniform(0.2, 0.8, size=sim.arm.n)
        command(sim, 0.1, {s.channel: float(s.pulse_us(q[i])) for i, s in enumerate(sim.cal.joints)})
        want_q = expected_true_q(sim, doc, q)
        t = 1.0
        assert np.allclose(sim.true_q_rad(t), want_q, atol=1e-12)
        truer = true_arm(sim.arm, sim.truth)
        assert np.allclose(truer.links_m * 1000, doc["links_mm"])
        assert np.allclose(sim.true_tool_m(t), tool_point(truer, want_q), atol=1e-12)
        assert np.allclose(sim.true_tool_pose(t), tool_pose(truer, want_q), atol=1e-12)
        believed = tool_point(sim.arm, q)
        assert np.linalg.norm(sim.true_tool_m(t) - believed) > 1e-3  # the truth moved the tool
        sim.now = t
        assert np.allclose(list(sim.angles_rad().values())[: sim.arm.n], want_q)  # the encoders read the truth


def test_bow_is_the_curve_at_mid_pulse_and_zero_at_the_ends(tmp_path):
    sim = SimArm(SimOptions(arm="mearm"))
    arm, cal = sim.arm, sim.cal
    truth = load_truth(write_truth(tmp_path / "t.yaml", {"curve_pct": {"shoulder": 2.0, "elbow": -3.0}}), arm, cal)
    servos = truth.servos(cal)
    for name, pct in (("shoulder", 2.0), ("elbow", -3.0), ("base", 0.0)):
        s = cal.joints[arm.joint_names.index(name)]
        ts = servos[s.channel]
        lo, hi = s.angle_range_rad()
        assert ts.bow_rad(s.min_us) == 0.0 and abs(ts.bow_rad(s.max_us)) < 1e-15
        assert ts.bow_rad((s.min_us + s.max_us) / 2) == pytest.approx(pct / 100 * (hi - lo), abs=1e-15)
        values = np.linspace(s.min_us, s.max_us, 201)
        angles = [ts.angle_rad(float(s.angle_rad(v)), v) for v in values]
        assert np.all(np.diff(angles) * np.sign(np.diff([float(s.angle_rad(v)) for v in values])) > 0)  # monotone
    # and in the simulator, commanded to mid-pulse
    path = write_truth(tmp_path / "t.yaml", {"curve_pct": {"shoulder": 2.0}})
    sim = SimArm(SimOptions(arm="mearm", truth=path, slew_deg_s=1e4))
    s = sim.cal.joints[1]
    mid = (s.min_us + s.max_us) / 2
    command(sim, 0.0, {s.channel: mid})
    lo, hi = s.angle_range_rad()
    assert sim.true_q_rad(1.0)[1] - float(s.angle_rad(mid)) == pytest.approx(0.02 * (hi - lo), abs=1e-12)


def test_backlash_from_below_and_above_differs_by_the_backlash(tmp_path):
    b_deg = 1.2
    path = write_truth(tmp_path / "t.yaml", {"backlash_deg": {"shoulder": b_deg}})
    sim = SimArm(SimOptions(arm="mearm", truth=path, slew_deg_s=200))
    s = sim.cal.joints[1]
    q = float(np.mean(s.angle_range_rad()))
    t = 0.0
    seen = []
    for approach in (-10.0, +10.0, -10.0):
        for target in (q + math.radians(approach), q):
            t += 1.0
            command(sim, t, {s.channel: float(s.pulse_us(target))})
        seen.append(sim.true_q_rad(t + 0.9)[1])
    believed = float(s.angle_rad(round(float(s.pulse_us(q)) * 2) / 2))
    assert math.degrees(seen[1] - seen[0]) == pytest.approx(b_deg, abs=1e-9)  # above minus below
    assert math.degrees(seen[0] - believed) == pytest.approx(-b_deg / 2, abs=1e-9)
    assert seen[2] == pytest.approx(seen[0], abs=1e-12)  # from below again: where it stood from below
    # mid-move: the joint lags by half the play once it turns; reversing, it stands still for b of input
    ts = TrueServo(s, 0.0, 0.0, math.radians(b_deg))
    ts.angle_rad(0.0, 0.0, settle=True)
    assert ts.angle_rad(math.radians(0.5), 0.0) == 0.0  # inside the play: does not move
    assert ts.angle_rad(math.radians(2.0), 0.0) == pytest.approx(math.radians(2.0 - b_deg / 2))


def test_no_truth_and_an_exact_truth_change_nothing(tmp_path):
    plain = SimArm(SimOptions(arm="eezybot-mk2"))
    exact = SimArm(SimOptions(arm="eezybot-mk2", truth=write_truth(tmp_path / "t.yaml", {})))
    assert true_arm(plain.arm, Truth.exact(plain.arm)) is plain.arm
    for sim in (plain, exact):
        command(sim, 0.0, {s.channel: s.pulse_us(0.3) for s in sim.cal.joints[:1]})
    assert np.array_equal(plain.true_tool_m(2.0), exact.true_tool_m(2.0))
    assert np.allclose(plain.true_tool_m(2.0), tool_point(plain.arm, plain.q_rad(2.0)))


def test_hidden_offset_option_composes_with_the_truth(tmp_path):
    path = write_truth(tmp_path / "t.yaml", {"zero_offset_deg": {"elbow": 3.0}})
    both = SimArm(SimOptions(arm="mearm", truth=path, offset_deg=[0, 0, 2.0]))
    plain = SimArm(SimOptions(arm="mearm"))
    # the start pose is held with the hidden offset (its pulse moved by it), not the truth: 3 deg off
    assert math.degrees(both.true_q_rad(0.0)[2] - plain.true_q_rad(0.0)[2]) == pytest.approx(3.0, abs=1e-9)
    # one pulse: the hidden 2 deg and the truth's 3 add up
    command(both, 0.0, {2: plain.cal.joints[2].pulse_us(0.0)})
    command(plain, 0.0, {2: plain.cal.joints[2].pulse_us(0.0)})
    assert math.degrees(both.true_q_rad(1.0)[2] - plain.true_q_rad(1.0)[2]) == pytest.approx(5.0, abs=1e-6)


BAD = [
    ("zero_offset_deg: {base: 1, wrsit: 2}\n", "zero_offset_deg.wrsit", 1, "joints are base, shoulder, elbow"),
    ("curve_pct:\n  gripper: 1\n", "curve_pct.gripper", 2, "unknown joint"),
    ("links_mm: [81.5, 78.2, 10]\n", "links_mm", 1, "expected 2 numbers"),
    ("zero_offset_deg:\n  base: 1\n  elbow: abc\n", "zero_offset_deg.elbow", 3, "expected a number"),
    ("backlash_deg: {shoulder: -0.5}\n", "backlash_deg.shoulder", 1, "must be >= 0"),
    ("# truth\ncurve_pct: {shoulder: .nan}\n", "curve_pct.shoulder", 2, "finite"),
    ("curve_pct: {shoulder: 12}\n", "curve_pct.shoulder", 1, "must be <= 10"),
    ("- 1\n- 2\n", None, 1, "expected a mapping"),
    ("zero_offset_deg: 3\n", "zero_offset_deg", 1, "expected a mapping"),
    ("links_mm: [81.5, 78.2]\nbacklash: {shoulder: 1}\n", "backlash", 2, "unknown key"),
    ("parts:\n  - {marker: 3, x_mm: 10}\n", "parts[0]", 2, "missing required key 'parts[0].y_mm'"),
    ("parts:\n  - {marker: 3.5, x_mm: 10, y_mm: 0}\n", "parts[0].marker", 2, "whole number"),
]


@pytest.mark.parametrize(("text", "key", "line", "why"), BAD)
def test_bad_truth_files_name_the_file_key_and_line(tmp_path, text, key, line, why):
    path = tmp_path / "bad truth.yaml"
    path.write_text(text, encoding="utf-8")
    sim = SimArm(SimOptions(arm="mearm"))
    with pytest.raises(ConfigError) as err:
        load_truth(path, sim.arm, sim.cal)
    msg = str(err.value)
    assert "\n" not in msg and str(path) in msg and f":{line}" in msg and why in msg, msg
    if key is not None:
        assert f"'{key}'" in msg, msg
    with pytest.raises(BadSimURL, match="truth"):  # the URL open fails as bad input, naming the file
        ArmsimPort.open_url(f"armsim://?arm=mearm&truth={path}")
    assert parse_url(f"armsim://?truth={path}").truth == str(path)


def test_missing_truth_file_and_base_offset_on_a_planar_arm(tmp_path):
    sim = SimArm(SimOptions(arm="seed-3link"))
    with pytest.raises(ConfigError, match="no-such.yaml"):
        load_truth(tmp_path / "no-such.yaml", sim.arm, sim.cal)
    path = write_truth(tmp_path / "t.yaml", {"base_offset_mm": 10})
    with pytest.raises(ConfigError, match="base_offset_mm.*no base"):
        load_truth(path, sim.arm, sim.cal)
    mearm = SimArm(SimOptions(arm="mearm", truth=write_truth(tmp_path / "m.yaml", {"base_offset_mm": 12.5})))
    assert mearm.true_arm.base_offset_m == pytest.approx(0.0125)
    assert mearm.true_arm.links_m is mearm.arm.links_m or np.array_equal(mearm.true_arm.links_m, mearm.arm.links_m)


def _armctl(*args, cwd) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in (os.getcwd(), os.environ.get("PYTHONPATH")) if p))
    return subprocess.run(
        [sys.executable, "-m", "armctl", *args], capture_output=True, text=True, cwd=cwd, env=env, timeout=120
    )


def test_cli_status_gives_true_tool_m_and_refuses_a_bad_truth(tmp_path):
    doc = {"zero_offset_deg": {"base": 2.5, "shoulder": -4.0, "elbow": 3.0}, "links_mm": [81.5, 78.2]}
    path = write_truth(tmp_path / "truth.yaml", doc)
    # a PWM arm (nothing reads where it is): homed, then asked where it is
    port = f"armsim://?arm=mearm&encoders=0&rate=20&state={tmp_path / 'sim.json'}&truth={path}"
    home = _armctl("home", "--arm", "mearm", "--port", port, "--assume-pose", "home", cwd=tmp_path)
    assert home.returncode == 0, home.stderr
    out = _armctl("status", "--json", "--arm", "mearm", "--port", port, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout)
    sim = SimArm(SimOptions(arm="mearm", truth=path))
    q = np.radians(report["q_deg"])  # the pose armctl commanded (home, to the board's 0.5 us tick)
    assert np.allclose(q, sim.arm.home_rad, atol=1e-3)
    assert np.allclose(report["tool_m"], tool_point(sim.arm, q), atol=1e-9)  # what armctl believes
    want = tool_point(sim.true_arm, expected_true_q(sim, doc, q))
    assert np.allclose(report["true_tool_m"], want, atol=1e-9)
    assert np.linalg.norm(np.subtract(report["true_tool_m"], report["tool_m"])) > 0.003
    (tmp_path / "bad.yaml").write_text("zero_offset_deg: {elbw: 2}\n", encoding="utf-8")
    bad = _armctl("status", "--arm", "mearm", "--port", "armsim://?arm=mearm&truth=bad.yaml", cwd=tmp_path)
    assert bad.returncode == 2, bad.stderr
    lines = bad.stderr.strip().splitlines()
    assert len(lines) == 1 and "bad.yaml:1" in lines[0] and "zero_offset_deg.elbw" in lines[0], bad.stderr
