"""``armctl --arm koch|koch-leader|omx ...`` from the command line: the presets are listed and described, jog on the
simulated bus (no port) to the point asked, pick the Dynamixel backend by their servos (``Drive.protocol``), and the
SO-101 keeps Feetech. Until the Dynamixel backend is registered (issue 40 item 1) the jogs run on the Feetech
simulator (``--backend feetech``: the same calibration in steps); the test without ``--backend`` needs it."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from armctl.bus import backend as backends
from armctl.bus.feetech.backend import FeetechBackend
from armctl.calibration.servo import find_calibration, load_calibration
from armctl.cli import main
from armctl.model.arm import load_arm
from armctl.robot.opening import resolve
from tests.helpers import require


def _run(capsys, *argv) -> tuple[int, str, str]:
    try:
        rc = main(list(argv))
    except SystemExit as exc:
        rc = exc.code
    out, err = capsys.readouterr()
    return rc, out, err


def test_help_lists_the_presets(capsys):
    rc, out, _ = _run(capsys, "--help")
    assert rc == 0
    flat = "".join(out.split())  # argparse wraps "koch-leader" at its hyphen
    for name in ("koch,", "koch-leader,", "omx,"):
        assert name in flat


@pytest.mark.parametrize(("arm", "urdf", "servo"), [
    ("koch", "koch.urdf", "an XL430-W250 gives 15.3 kg.cm at 12 V"),
    ("koch-leader", "koch-leader.urdf", "an XL330-M077 gives 2.19 kg.cm at 5 V"),
    ("omx", "omx.urdf", "an XM430-W350 gives 41.8 kg.cm at 12 V"),
])  # fmt: skip
def test_workspace_describes_the_preset(capsys, arm, urdf, servo):
    rc, out, err = _run(capsys, "--arm", arm, "workspace")
    assert rc == 0, err
    assert f"arm {arm} (" in out and urdf in out and servo in out
    if arm != "koch-leader":  # a leader's XL330-M077s (moved by hand) hold it in some poses only
        assert "every servo holds the arm in 100.0% of the poses" in out


@pytest.mark.parametrize(("arm", "target", "extra"), [
    ("omx", ("0.22", "0.05", "0.12"), ()),
    ("koch", ("0.16", "-0.04", "0.04"), ("--down",)),
])  # fmt: skip
def test_jog_on_the_simulated_bus(capsys, arm, target, extra):
    rc, out, err = _run(capsys, "--arm", arm, "--backend", "feetech", "jog", *target, *extra, "--json")
    assert rc == 0, err
    got = json.loads(out)
    assert np.allclose(got["tool_m"], [float(t) for t in target], atol=1e-3), got
    if "--down" in extra:
        assert got["phi_deg"] == pytest.approx(-90, abs=0.5)
    rc, out, err = _run(capsys, "--arm", arm, "--backend", "feetech", "status", "--json")
    assert rc == 0, err
    assert np.allclose(json.loads(out)["tool_m"], [float(t) for t in target], atol=2e-3)  # the encoders' 0.088 deg


@pytest.mark.parametrize("arm", ["koch", "omx"])
def test_the_pick_and_place_example_checks_and_plans(capsys, arm):
    """examples/pick_and_place_<arm>.yaml: every pose reachable with the jaws down, the speeds and the servos'
    torque within the preset's figures (``run --dry-run``: checked and planned whole, no port opened)."""
    example = Path(__file__).resolve().parents[2] / "examples" / f"pick_and_place_{arm}.yaml"
    rc, out, err = _run(capsys, "--backend", "feetech", "run", str(example), "--dry-run")
    assert rc == 0, err
    assert "torque: at most" in out + err


@pytest.mark.parametrize("arm", ["koch", "koch-leader", "omx"])
def test_the_dynamixel_presets_pick_the_dynamixel_backend(monkeypatch, arm):
    monkeypatch.setitem(backends._BACKENDS, "dynamixel", FeetechBackend)  # a stand-in: only the choice is tested
    assert resolve(arm, None, None, None)[3] is FeetechBackend
    monkeypatch.delitem(backends._BACKENDS, "dynamixel")
    assert resolve("so101", None, None, None)[3] is FeetechBackend  # the SO-101's STS3215s keep Feetech
    assert load_arm(arm).drive.protocol == "dynamixel"


def test_jog_on_the_dynamixel_simulator(capsys):
    require("dynamixel" in backends.backend_names(), "the dynamixel backend (issue 40 item 1)")
    rc, out, err = _run(capsys, "--arm", "omx", "jog", "0.22", "0.05", "0.12", "--json")
    assert rc == 0, err
    assert np.allclose(json.loads(out)["tool_m"], [0.22, 0.05, 0.12], atol=1e-3)


def test_the_koch_follows_a_koch_leader_on_the_simulated_bus(tmp_path, capsys):
    """A hand moves a simulated koch-leader (its example calibration); the koch follower ends where the leader is."""
    cal = load_calibration(find_calibration("koch-leader"))
    poses = [(0, [0, 82.2, -80.7, -1.5, 0], -60), (1.5, [20, 70, -70, -10, 30], -20)]
    rows = ["t_s,id,steps"]
    for t, q, g in poses:
        rows += [f"{t},{s.id},{float(s.value(math.radians(a))):.2f}" for s, a in zip(cal.joints, q)]
        rows.append(f"{t},{cal.gripper.id},{float(cal.gripper.value(math.radians(g))):.2f}")
    hand = tmp_path / "hand.csv"
    hand.write_text("\n".join(rows) + "\n")
    leader = f"dynamixelsim://?hand={hand}&model=xl330-m077&baud=1000000"
    rc, out, err = _run(capsys, "--arm", "koch", "follow", "--leader", leader, "--duration", "4", "--json")
    assert rc == 0 and json.loads(out)["leader_arm"] == "koch-leader", err  # the koch's leader by default
    rc, out, err = _run(capsys, "--arm", "koch", "status", "--json")
    assert rc == 0, err
    got = json.loads(out)
    assert np.allclose(got["q_deg"], poses[-1][1], atol=0.5), got["q_deg"]
    assert got["gripper_deg"] == pytest.approx(-20, abs=0.5)


def test_a_leader_on_a_bus_its_servos_do_not_speak_is_one_line(capsys):
    """A koch-leader (Dynamixels) on a simulated Feetech bus, an SO-101 leader on a Dynamixel one: refused, exit 2."""
    for leader, leader_arm, words in (
        ("feetechsim://?ids=1-6", "koch-leader", "simulates Feetech bus servos, but the leader arm 'koch-leader'"),
        ("dynamixelsim://?ids=1-6", "so101", "simulates Dynamixel bus servos, but the leader arm 'so101'"),
    ):
        rc, out, err = _run(capsys, "--arm", "koch", "follow", "--leader", leader, "--leader-arm", leader_arm)
        assert rc == 2 and err.count("\n") == 1 and words in err, err


def test_an_arm_on_a_simulated_bus_its_servos_do_not_speak_is_one_line(capsys):
    """The OMX (Dynamixels) on feetechsim://, the SO-101 (Feetech) on dynamixelsim://: refused at once, exit 2, with
    the simulator to use; it was a timeout on every baud rate (exit 4) naming the first servo."""
    for arm, port, words in (
        ("omx", "feetechsim://", "feetechsim:// simulates Feetech bus servos, which the dynamixel backend does not"),
        ("so101", "dynamixelsim://", "dynamixelsim:// simulates Dynamixel bus servos, which the feetech backend"),
    ):
        rc, out, err = _run(capsys, "--arm", arm, "--port", port, "jog", "0.2", "0", "0.1")
        assert rc == 2 and err.count("\n") == 1 and words in err, err
        assert "--port feetechsim://" in err or "--port dynamixelsim://" in err, err


def test_a_target_on_the_base_axis_says_so(capsys):
    """(0, 0, z): the base angle is undefined there; the line said 'the nearest reachable point (0, 0, z) is 0.0 mm
    away', contradicting itself."""
    rc, out, err = _run(capsys, "--arm", "koch", "jog", "0", "0", "0.05")
    assert rc == 3 and err.count("\n") == 1 and "on the base's axis" in err and "0.0 mm away" not in err, err
