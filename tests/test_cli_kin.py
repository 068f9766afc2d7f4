"""The ik, fk and workspace commands as a user runs them: output, errors, exit codes."""

import io
import json
import math
import subprocess
import sys

import pytest

from armctl.cli import main


def run(capsys, *argv, stdin=None, monkeypatch=None):
    if stdin is not None:
        monkeypatch.setattr(sys, "stdin", io.StringIO(stdin))
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_ik_text_and_json(capsys):
    code, out, err = run(capsys, "ik", "0.5", "0.4")
    assert code == 0 and out.startswith("q = [") and err == ""
    code, out, _ = run(capsys, "ik", "500mm", "40cm", "--json")
    d = json.loads(out)
    assert code == 0 and d["ok"] and d["method"] == "dls" and len(d["q_deg"]) == 3
    assert d["error_m"] < 1e-6 and d["iterations"] >= 0 and "shortfall_m" not in d


def test_ik_each_method_and_start_pose(capsys):
    for method in ("analytic", "newton", "broyden", "dls"):
        code, out, _ = run(
            capsys, "--arm", "seed-2link", "ik", "0.5", "0.4", "--method", method, "--from", "45", "-90", "--json"
        )
        d = json.loads(out)
        assert code == 0 and d["method"] == method
        assert d["q_deg"] == pytest.approx([59.0991, -48.1897], abs=1e-3)


def test_ik_with_tool_angle(capsys):
    code, out, _ = run(capsys, "ik", "0.5", "0.4", "--phi", "30", "--json")
    d = json.loads(out)
    assert code == 0 and sum(d["q_deg"]) == pytest.approx(30.0) and d["phi_deg"] == 30.0


def test_unreachable_exit_3_with_shortfall(capsys):
    code, out, err = run(capsys, "ik", "1.2", "0", "--json")
    d = json.loads(out)
    assert code == 3 and not d["ok"] and d["shortfall_m"] == pytest.approx(0.30)
    assert err.count("\n") == 1 and "300.0 mm outside the reach" in err
    code, out, err = run(capsys, "ik", "1.2", "0")
    assert code == 3 and out == "" and "armctl ik: error: target (1.2000, 0.0000) m" in err


@pytest.mark.parametrize(
    "argv, fragment",
    [
        (["ik", "nan", "0.1"], "X: cannot read 'nan'"),
        (["ik", "0.5", "inf"], "Y: cannot read 'inf'"),
        (["ik", "1e308", "1e308"], "X: '1e308' is 1e+308 m, beyond any arm"),
        (["ik", "0.5", "1e400"], "Y: '1e400' is inf m, beyond any arm"),
        (["jog", "2km", "0"], "X: cannot read '2km'"),
        (["jog", "1001", "0"], "X: '1001' is 1e+03 m, beyond any arm"),
        (["ik", "0.5"], "missing target"),
        (["ik", "0.5", "0.4", "--method", "magic"], "invalid choice: 'magic'"),
        (["ik", "0.5", "0.4", "--from", "1", "2"], "--from: arm 'seed-3link' has 3 joints, got 2"),
        (["--arm", "seed-2link", "ik", "0.5", "0.4", "--phi", "10"], "--phi needs a 3-link arm"),
        (["ik", "0.5", "0.4", "--phi", "nan"], "--phi: 'nan' is not a finite number"),
        (["fk", "10", "20"], "has 3 joints, got 2 angles"),
        (["fk", "10", "x", "3"], "fk angle 2: 'x' is not a number"),
        (["--arm", "nope", "workspace"], "no arm preset or file named 'nope'"),
        (["ik", "0.5", "0.4", "--targets", "t.csv"], "either X Y or --targets"),
    ],
)
def test_bad_input_exit_2_one_line(capsys, argv, fragment):
    code, out, err = run(capsys, *argv)
    assert code == 2 and out == ""
    assert fragment in err and err.count("\n") == 1


def test_fk_outside_limits_exit_3(capsys):
    code, out, err = run(capsys, "fk", "0", "170", "0")
    assert code == 3 and out == "" and "joint 2 (elbow) at 170.00 deg is outside its limits" in err


def test_fk_json(capsys):
    code, out, _ = run(capsys, "--arm", "seed-2link", "fk", "0", "90", "--json")
    d = json.loads(out)
    assert code == 0 and d["tool_m"] == pytest.approx([0.4, 0.3])
    assert d["manipulability"] == pytest.approx(0.12) and len(d["joints_m"]) == 3


def test_workspace(capsys):
    code, out, _ = run(capsys, "--arm", "seed-2link", "workspace", "--json")
    d = json.loads(out)
    assert code == 0 and d["reach_max_m"] == pytest.approx(0.7) and d["reach_min_m"] == pytest.approx(0.1)
    assert [j["max_speed_deg_s"] for j in d["joints"]] == [120, 150]
    code, out, _ = run(capsys, "workspace")
    assert code == 0 and "reach annulus" in out


def test_batch_targets_from_stdin_and_file(capsys, monkeypatch, tmp_path):
    code, out, err = run(capsys, "ik", "--targets", "-", stdin="x,y\n0.5,0.4\n0.6,0.1,20\n", monkeypatch=monkeypatch)
    lines = out.strip().splitlines()
    assert code == 0 and lines[0].startswith("x_m,y_m,ok,q1_deg") and len(lines) == 3
    row = lines[2].split(",")
    assert row[2] == "1" and sum(float(v) for v in row[3:6]) == pytest.approx(20.0, abs=1e-4)
    f = tmp_path / "t.csv"
    f.write_text("0.5,0.4\n2,0\n")
    code, out, err = run(capsys, "ik", "--targets", str(f), "--json")
    rows = json.loads(out)
    assert code == 3 and rows[0]["ok"] and not rows[1]["ok"] and rows[1]["shortfall_m"] == pytest.approx(1.1)
    assert "1 of 2 targets not reached" in err


def test_batch_bad_line_names_file_and_line(capsys, tmp_path):
    f = tmp_path / "t.csv"
    f.write_text("0.5,0.4\n\n0.5,abc\n")
    code, out, err = run(capsys, "ik", "--targets", str(f))
    assert code == 2 and out == "" and f"{f}:3: y: cannot read 'abc'" in err
    f.write_text("")
    code, out, err = run(capsys, "ik", "--targets", str(f))
    assert code == 2 and "no targets" in err
    code, out, err = run(capsys, "ik", "--targets", str(tmp_path / "missing.csv"))
    assert code == 2 and "cannot read" in err


def test_batch_targets_mistakes_are_one_line_with_the_line(capsys, monkeypatch, tmp_path):
    f = tmp_path / "t.csv"
    f.write_bytes(b"0.5,0.4\n\xff\xfe0.6,0.1\n")
    code, out, err = run(capsys, "ik", "--targets", str(f))
    assert code == 2 and out == "" and err.count("\n") == 1 and f"{f}: cannot read: not UTF-8" in err
    f.write_text("0.5,0.4\n# a comment\n0.6,0.1,20\n")
    code, out, err = run(capsys, "--arm", "seed-2link", "ik", "--targets", str(f))
    assert code == 2 and out == "" and f"{f}:3: phi_deg given but arm 'seed-2link' has 2 links" in err
    # --phi would be silently ignored for every target: refused instead
    code, out, err = run(capsys, "ik", "--targets", "-", "--phi", "20", stdin="0.5,0.4\n", monkeypatch=monkeypatch)
    assert code == 2 and out == "" and "--phi does not apply to --targets" in err


def test_help_for_every_command_explains_units():
    for cmd in ("ik", "fk", "workspace"):
        out = subprocess.run([sys.executable, "-m", "armctl", cmd, "--help"], capture_output=True, text=True)
        assert out.returncode == 0 and "example" in out.stdout


def test_console_script_runs():
    out = subprocess.run(["armctl", "ik", "0.5", "0.4", "--json"], capture_output=True, text=True)
    assert out.returncode == 0 and json.loads(out.stdout)["ok"]
    assert math.isfinite(json.loads(out.stdout)["error_m"])


def test_malformed_arm_yaml_exit_2_names_file_and_line(capsys, tmp_path):
    bad = tmp_path / "arm.yaml"
    bad.write_text("name: x\nlinks_m: [0.4, 0.3\njoints: []\n")
    code, out, err = run(capsys, "--arm", str(bad), "ik", "0.5", "0.4")
    assert code == 2 and out == "" and err.count("\n") == 1
    assert f"{bad}:" in err and "YAML syntax error" in err
