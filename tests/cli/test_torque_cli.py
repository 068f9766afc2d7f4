"""``--payload`` and ``--no-torque-check`` on ``armctl run``, ``jog`` and ``follow``; the torque check's refusal
through the command line: one line naming the joint, the step, the time, the torque needed and the servo's, exit 3,
before anything moves (the simulated arm's pulses unchanged); the shipped examples pass at their default payload and
their dry runs say the most a servo is asked."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from armctl.cli import main

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = sorted((ROOT / "examples").glob("pick_and_place*.yaml"))


def _json(capsys, argv):
    assert main(argv) == 0
    return json.loads(capsys.readouterr().out)


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.name)
def test_every_example_passes_its_dry_run_and_says_the_most_a_servo_is_asked(capsys, example):
    assert main(["run", str(example), "--dry-run"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[1].startswith("torque: at most ") and out[1].endswith("; allowed 60%"), out


def test_a_jog_with_a_part_an_sg90_cannot_hold_is_refused_and_moves_nothing(tmp_path, capsys):
    port = f"armsim://?rate=50&seed=1&state={tmp_path / 'sim.json'}"
    before = _json(capsys, ["--arm", "mearm", "--port", port, "status", "--json"])
    assert main(["--arm", "mearm", "--port", port, "jog", "150mm", "40mm", "20mm", "--payload", "100g"]) == 3
    err = capsys.readouterr().err
    assert err.count("\n") == 1, err
    assert err.startswith("armctl jog: error: elbow needs ")
    assert "in 'jog to (0.15, 0.04, 0.02) m', t = " in err
    assert "with the 100 g part; an SG90 gives 1.8 at 4.8 V (60% of it: 1.08)" in err
    after = _json(capsys, ["--arm", "mearm", "--port", port, "status", "--json"])
    assert after["q_deg"] == before["q_deg"] and after["widths_us"] == before["widths_us"]
    # without the check the same jog goes (an expert's, a test's: the servos may sag)
    args = ["--arm", "mearm", "--port", port, "jog", "150mm", "40mm", "20mm", "--payload", "100g", "--no-torque-check"]
    assert main([*args, "--json"]) == 0
    capsys.readouterr()
    assert _json(capsys, ["--arm", "mearm", "--port", port, "status", "--json"])["q_deg"] != before["q_deg"]


def test_a_run_with_a_heavy_payload_is_refused_before_a_port_opens(tmp_path, capsys):
    state = tmp_path / "sim.json"
    example = str(ROOT / "examples" / "pick_and_place_eezybot.yaml")
    assert main(["--port", f"armsim://?rate=50&seed=1&state={state}", "run", example, "--payload", "1kg"]) == 3
    err = capsys.readouterr().err
    assert err.count("\n") == 1, err
    assert f"{example}:18: elbow needs " in err and "kg.cm at step 1.1 (line 18; " in err
    assert "with the 1000 g part; an MG996R gives 9.4 at 4.8 V (60% of it: 5.64)" in err
    assert not state.exists()  # the simulated board was never opened


@pytest.mark.parametrize("bad", ["50", "-5g", "heavy", "20kg"])
def test_a_bad_payload_is_one_line_and_exit_2(capsys, bad):
    assert main(["run", str(EXAMPLES[0]), "--dry-run", "--payload", bad]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--payload" in err


def test_follow_takes_payload_and_no_torque_check(capsys):
    assert main(["follow", "--help"]) == 0
    text = capsys.readouterr().out
    assert "--payload MASS" in text and "--no-torque-check" in text


def test_an_arm_naming_no_servo_says_once_that_it_is_not_checked(tmp_path, capsys):
    arm = (ROOT / "armctl" / "presets" / "seed-2link.yaml").read_text()
    bare = tmp_path / "bare.yaml"
    bare.write_text(arm.replace(", servo: ds3218", "").replace(", servo: mg996r", ""))
    example = (ROOT / "examples" / "pick_and_place_2link.yaml").read_text()
    prog = tmp_path / "prog.yaml"
    prog.write_text("\n".join(ln for ln in example.splitlines() if not ln.startswith("arm:")))
    cal = str(ROOT / "armctl" / "presets" / "calibration" / "seed-2link.yaml")
    assert main(["--arm", str(bare), "--calibration", cal, "run", str(prog), "--dry-run"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[1] == (
        "torque: arm 'seed-2link' names no servo for its joints (servo: in the arm file): moves are not checked"
    )
    assert main(["--arm", str(bare), "plan", str(prog), "--summary"]) == 0
    assert capsys.readouterr().out.count("names no servo") == 1
