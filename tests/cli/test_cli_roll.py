"""The wrist roll on the command line: ``fk ... QROLL``, ``ik --roll``, ``ik --down --yaw``, the tool's orientation
in ``fk/ik/status --json``, a ``roll_deg`` column in ``ik --targets``, ``jog --roll`` (an arm file with a roll, its
tool point off the roll axis: tests/cli/roll_arm.py)."""

from __future__ import annotations

import io
import json
import math
import sys
from pathlib import Path

import numpy as np
import pytest

from armctl.cli import main
from tests.cli.roll_arm import write_roll_arm


@pytest.fixture
def arm_file(tmp_path):
    return str(write_roll_arm(tmp_path))


def run(capsys, *argv, stdin=None, monkeypatch=None):
    if stdin is not None:
        monkeypatch.setattr(sys, "stdin", io.StringIO(stdin))
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def js(capsys, *argv):
    code, out, err = run(capsys, *argv)
    assert code == 0, err
    return json.loads(out)


def rpy_matrix(roll: float, pitch: float, yaw: float) -> np.ndarray:
    """URDF's rpy as a rotation: Rz(yaw) Ry(pitch) Rx(roll) (degrees), composed here from the three turns."""
    r, p, y = np.radians([roll, pitch, yaw])
    rx = np.array([[1, 0, 0], [0, math.cos(r), -math.sin(r)], [0, math.sin(r), math.cos(r)]])
    ry = np.array([[math.cos(p), 0, math.sin(p)], [0, 1, 0], [-math.sin(p), 0, math.cos(p)]])
    rz = np.array([[math.cos(y), -math.sin(y), 0], [math.sin(y), math.cos(y), 0], [0, 0, 1]])
    return rz @ ry @ rx


def check_frame(d: dict) -> np.ndarray:
    """``tool_R`` is a rotation and ``tool_rpy_deg`` says the same one; returns tool_R."""
    R = np.array(d["tool_R"])
    assert R.shape == (3, 3)
    assert np.allclose(R @ R.T, np.eye(3), atol=1e-12) and np.linalg.det(R) == pytest.approx(1.0)
    assert np.allclose(rpy_matrix(*d["tool_rpy_deg"]), R, atol=1e-7)
    return R


# --- fk ----------------------------------------------------------------------------------------------------------


def test_fk_takes_the_roll_last_and_gives_the_tool_frame(capsys, arm_file):
    a = js(capsys, "--arm", arm_file, "fk", 10, 80, -80, -60, 0, "--json")
    b = js(capsys, "--arm", arm_file, "fk", 10, 80, -80, -60, 30, "--json")
    assert a["roll_deg"] == 0.0 and b["roll_deg"] == 30.0 and b["q_deg"][-1] == 30.0
    Ra, Rb = check_frame(a), check_frame(b)
    # the tool axis (x) does not turn with the roll; the jaws' line (y) turns 30 deg about it, right-handed
    assert np.allclose(Ra[:, 0], Rb[:, 0], atol=1e-12)
    x, y0 = Ra[:, 0], Ra[:, 1]
    c, s = math.cos(math.radians(30)), math.sin(math.radians(30))
    assert np.allclose(Rb[:, 1], c * y0 + s * np.cross(x, y0), atol=1e-12)
    # the tool point 12.6 mm off the roll axis moves on a circle about it: a chord of 2 r sin(15 deg)
    chord = 2 * math.hypot(0.012, 0.004) * math.sin(math.radians(15))
    assert np.linalg.norm(np.subtract(a["tool_m"], b["tool_m"])) == pytest.approx(chord, abs=1e-12)
    code, out, err = run(capsys, "--arm", arm_file, "fk", 10, 80, -80, -60, 30)
    assert code == 0 and "roll 30.00 deg" in out and "tool rpy" in out


def test_fk_arity_names_the_roll_and_a_roll_outside_its_limits_is_exit_3(capsys, arm_file):
    code, out, err = run(capsys, "--arm", arm_file, "fk", 10, 80, -80, -60)
    assert code == 2 and out == "" and err.count("\n") == 1
    assert "arm 'rollarm' has 5 joints (base first, the wrist roll last), got 4 angles" in err
    code, out, err = run(capsys, "--arm", arm_file, "fk", 10, 80, -80, -60, 170)  # as any joint: fk's exit 3
    assert code == 3 and out == "" and err.count("\n") == 1 and "wrist_roll" in err


@pytest.mark.parametrize(
    ("arm", "q"), [("seed-3link", [30, -60, -20]), ("seed-2link", [30, -60]), ("mearm", [20, 90, 10])]
)
def test_fk_json_orientation_on_arms_without_a_roll(capsys, arm, q):
    d = js(capsys, "--arm", arm, "fk", *q, "--json")
    R = check_frame(d)
    assert "roll_deg" not in d
    if arm.startswith("seed"):  # planar: the tool frame turned about z by the tool angle (sum of the joints)
        phi = math.radians(sum(q))
        assert np.allclose(R[:, 0], [math.cos(phi), math.sin(phi), 0.0], atol=1e-12)
        assert np.allclose(R[:, 2], [0, 0, 1], atol=1e-12)
    else:  # on a base, the MeArm's hand held level: its x along the base direction, horizontal
        b = math.radians(q[0])
        assert np.allclose(R[:, 0], [math.cos(b), math.sin(b), 0.0], atol=1e-12)


# --- ik --roll, --down, --yaw -----------------------------------------------------------------------------------


def test_ik_at_a_roll_agrees_with_the_fk(capsys, arm_file):
    target = [0.2, 0.1, 0.05]
    d = js(capsys, "--arm", arm_file, "ik", *target, "--phi", -60, "--roll", 45, "--json")
    assert d["ok"] and d["roll_deg"] == pytest.approx(45.0) and d["q_deg"][-1] == pytest.approx(45.0)
    f = js(capsys, "--arm", arm_file, "fk", *d["q_deg"], "--json")
    assert np.allclose(f["tool_m"], target, atol=1e-9) and f["phi_deg"] == pytest.approx(-60.0, abs=1e-6)
    assert np.allclose(f["tool_R"], d["tool_R"], atol=1e-9) and f["tool_rpy_deg"] == pytest.approx(d["tool_rpy_deg"])
    # the roll's whole turn inside its limits (-157..163): -200 deg is 160 deg
    d = js(capsys, "--arm", arm_file, "ik", *target, "--phi", -60, "--roll", -200, "--json")
    assert d["ok"] and d["roll_deg"] == pytest.approx(160.0)
    # no --roll: the roll of the start pose is kept
    d = js(capsys, "--arm", arm_file, "ik", *target, "--from", 0, 90, -90, -45, 25, "--json")
    assert d["ok"] and d["roll_deg"] == pytest.approx(25.0)


@pytest.mark.parametrize("target", [(0.2, 0.1, 0.05), (0.15, 0.15, 0.02), (0.22, -0.12, 0.03)])
@pytest.mark.parametrize("yaw", [0.0, 35.0, -60.0, 90.0, 135.0])
def test_ik_down_yaw_closes_the_jaws_along_the_yaw(capsys, arm_file, target, yaw):
    """--down --yaw: the tool axis straight down and the jaws' line (the tool frame's y) horizontal at the yaw
    (mod 180: the line has no direction), the tool point on the target; checked on the FK of the answer."""
    d = js(capsys, "--arm", arm_file, "ik", *target, "--down", "--yaw", yaw, "--json")
    assert d["ok"] and d["phi_deg"] == -90.0 and d["yaw_deg"] == yaw and d["error_m"] < 1e-9
    R = check_frame(d)
    # armctl fk of the printed angles (rounded to 1e-6 deg) says the same
    f = js(capsys, "--arm", arm_file, "fk", *d["q_deg"], "--json")
    assert np.allclose(f["tool_m"], target, rtol=0, atol=1e-8) and np.allclose(f["tool_R"], R, rtol=0, atol=1e-7)
    assert np.allclose(R[:, 0], [0, 0, -1], atol=1e-9)
    jaw = R[:, 1]
    assert abs(jaw[2]) < 1e-9
    off = (math.degrees(math.atan2(jaw[1], jaw[0])) - yaw + 90) % 180 - 90
    assert abs(off) < 1e-6
    assert -157 <= d["roll_deg"] <= 163


def test_ik_down_yaw_takes_the_roll_nearest_the_current_one(capsys, arm_file):
    """Two rolls half a turn apart close the jaws along the same line: the one nearest the start pose's roll."""
    target = (0.2, 0.1, 0.05)
    for start_roll in (-120.0, -30.0, 60.0, 150.0):
        start = [0, 90, -90, -45, start_roll]
        d = js(capsys, "--arm", arm_file, "ik", *target, "--down", "--yaw", 20, "--from", *start, "--json")
        other = d["roll_deg"] - 180 if d["roll_deg"] > 0 else d["roll_deg"] + 180
        assert d["ok"] and abs(d["roll_deg"] - start_roll) <= abs(other - start_roll) + 1e-6, (start_roll, d)
    code, out, err = run(capsys, "--arm", arm_file, "ik", *target, "--down", "--yaw", 20)
    assert code == 0 and "the jaws along yaw 20 deg" in out


def test_ik_down_alone_keeps_the_roll(capsys, arm_file):
    d = js(capsys, "--arm", arm_file, "ik", 0.2, 0.1, 0.05, "--down", "--from", 0, 90, -90, -45, 40, "--json")
    assert d["ok"] and d["roll_deg"] == pytest.approx(40.0) and d["phi_deg"] == -90.0
    assert np.allclose(np.array(d["tool_R"])[:, 0], [0, 0, -1], atol=1e-9)
    d = js(capsys, "--arm", "braccio", "ik", 0.23, 0.01, -0.08, "--down", "--json")  # 3 links on a base, no roll
    assert d["ok"] and "roll_deg" not in d and np.allclose(np.array(d["tool_R"])[:, 0], [0, 0, -1], atol=1e-9)


@pytest.mark.parametrize(
    ("argv", "fragment"),
    [
        (["--arm", "mearm", "ik", 0.15, 0.04, 0.02, "--roll", 10], "--roll: arm 'mearm' has no wrist roll"),
        (["--arm", "{arm}", "ik", 0.2, 0.1, 0.05, "--roll", 170], "outside the limits of 'wrist_roll'"),
        (["--arm", "{arm}", "ik", 0.2, 0.1, 0.05, "--roll", 400], "--roll: 400 deg is more than a turn"),
        (["--arm", "{arm}", "ik", 0.2, 0.1, 0.05, "--roll", "nan"], "--roll: 'nan' is not a finite number"),
        (["--arm", "{arm}", "ik", 0.2, 0.1, 0.05, "--roll=-inf"], "--roll: '-inf' is not a finite number"),
        (["--arm", "{arm}", "ik", 0.2, 0.1, 0.05, "--down", "--yaw", "nan"], "--yaw: 'nan' is not a finite"),
        (["--arm", "{arm}", "ik", 0.2, 0.1, 0.05, "--yaw", 30], "--yaw needs --down"),
        (["--arm", "{arm}", "ik", 0.2, 0.1, 0.05, "--down", "--phi", -80], "--down or --phi, not both"),
        (["--arm", "{arm}", "ik", 0.2, 0.1, 0.05, "--down", "--yaw", 5, "--roll", 5], "--yaw or --roll"),
        (["--arm", "braccio", "ik", 0.23, 0.01, -0.08, "--down", "--yaw", 30], "--yaw: arm 'braccio' has no wrist"),
        (["ik", 0.5, 0.4, "--down"], "--down: arm 'seed-3link' has no rotating base"),
        (["--arm", "mearm", "ik", 0.15, 0.04, 0.02, "--down"], "--down needs a 3-link arm"),
        (["--arm", "{arm}", "ik", "--targets", "-", "--roll", 5], "--roll does not apply to --targets"),
    ],
)
def test_bad_roll_inputs_are_one_line_exit_2(capsys, arm_file, argv, fragment):
    code, out, err = run(capsys, *[arm_file if a == "{arm}" else a for a in argv])
    assert code == 2 and out == "" and err.count("\n") == 1 and "Traceback" not in err
    assert fragment in err, err


# --- ik --targets with roll_deg -----------------------------------------------------------------------------------


def test_targets_with_a_roll_column(capsys, monkeypatch, arm_file, tmp_path):
    text = "x,y,z,roll_deg\n0.2,0.1,0.05,30\n0.15,0.15,0.02\n0.2,0.1,0.05,-200\n"
    start = ["--from", 0, 90, -90, -45, 12]
    code, out, err = run(capsys, "--arm", arm_file, "ik", "--targets", "-", *start, stdin=text, monkeypatch=monkeypatch)
    lines = out.splitlines()
    assert code == 0, err
    assert lines[0] == "x_m,y_m,z_m,ok,q1_deg,q2_deg,q3_deg,q4_deg,q5_deg,roll_deg,error_m,shortfall_m"
    rolls = [float(ln.split(",")[9]) for ln in lines[1:]]
    assert rolls == pytest.approx([30.0, 12.0, 160.0])  # a row without one keeps the start pose's roll
    assert [float(ln.split(",")[8]) for ln in lines[1:]] == pytest.approx(rolls)
    # phi then roll by default, an empty field not given; JSON rows carry roll_deg; the FK agrees
    f = tmp_path / "t.csv"
    f.write_text("0.2,0.1,0.05,-90,30\n0.2,0.1,0.05,,45\n0.2,0.1,0.05,-90\n")
    code, out, err = run(capsys, "--arm", arm_file, "ik", "--targets", f, "--json")
    rows = json.loads(out)
    assert code == 0 and [r["roll_deg"] for r in rows] == pytest.approx([30.0, 45.0, 0.0])
    assert [r.get("phi_deg") for r in rows] == [-90.0, None, -90.0]
    for r in rows:
        fk = js(capsys, "--arm", arm_file, "fk", *r["q_deg"], "--json")
        assert np.allclose(fk["tool_m"], r["target_m"], atol=1e-9) and fk["roll_deg"] == pytest.approx(r["roll_deg"])


@pytest.mark.parametrize(
    ("arm", "text", "fragment"),
    [
        ("{arm}", "0.2,0.1,0.05\n0.2,0.1,0.05,,170\n", "t.csv:2: roll_deg: roll 170.0 deg is outside the limits"),
        ("{arm}", "x,y,z,roll_deg\n0.2,0.1,0.05\n0.2,0.1,0.05,nan\n", "t.csv:3: roll_deg: 'nan' is not a finite"),
        ("{arm}", "x,y,z,roll_deg,tilt\n0.2,0.1,0.05,1\n", "t.csv:1: header column 'tilt'"),
        ("{arm}", "0.2,0.1,0.05,1,2,3\n", "t.csv:1: expected 'x,y,z[,phi_deg[,roll_deg]]'"),
        ("braccio", "x,y,z,roll_deg\n0.2,0.1,0.05,1\n", "t.csv:1: a roll_deg column, but arm 'braccio' has no wrist"),
        ("braccio", "0.2,0.1,0.05,-90,30\n", "t.csv:1: expected 'x,y,z' or 'x,y,z,phi_deg'"),
    ],
)
def test_targets_roll_mistakes_name_the_line(capsys, arm_file, tmp_path, arm, text, fragment):
    f = tmp_path / "t.csv"
    f.write_text(text)
    code, out, err = run(capsys, "--arm", arm_file if arm == "{arm}" else arm, "ik", "--targets", f)
    assert code == 2 and out == "" and err.count("\n") == 1 and fragment in err, err


def test_targets_roll_column_in_bulk_as_row_by_row(capsys, monkeypatch, arm_file, tmp_path):
    """Many rows in small blocks and chunks (numpy's reader and the line parser mixed): the same answers as
    ``ik X Y Z [--phi] [--roll]`` one at a time."""
    from armctl.cli import ik_targets

    monkeypatch.setattr(ik_targets, "BLOCK_BYTES", 200)
    monkeypatch.setattr(ik_targets, "SOLVE_ROWS", 5)
    rng = np.random.default_rng(3)
    lines, want = ["x_m,y_m,z_m,roll_deg,phi_deg"], []
    for i in range(24):
        t = [round(v, 4) for v in (rng.uniform(0.15, 0.22), rng.uniform(-0.1, 0.1), rng.uniform(0.02, 0.08))]
        roll = round(float(rng.uniform(-150, 150)), 3) if i % 3 else None
        phi = -90.0 if i % 4 == 0 else None
        tail = [("" if roll is None else f"{roll}")] + ([f"{phi}"] if phi is not None else [])
        unit = "200mm" if i % 7 == 0 else None
        lines.append(",".join([unit or str(t[0]), *map(str, t[1:]), *tail]).rstrip(","))
        t[0] = 0.2 if unit else t[0]
        want.append((t, roll, phi))
    f = tmp_path / "t.csv"
    f.write_text("\n".join(lines) + "\n")
    code, out, err = run(capsys, "--arm", arm_file, "ik", "--targets", f, "--json")
    rows = json.loads(out)
    assert code in (0, 3) and len(rows) == len(want), err
    for r, (t, roll, phi) in zip(rows, want):
        argv = ["--arm", arm_file, "ik", *t, "--json", "--method", "dls"]
        argv += [] if roll is None else ["--roll", roll]
        argv += [] if phi is None else ["--phi", phi]
        if phi is None:
            argv += ["--from", 0, 90, -90, -45, 0]  # (without a tool angle: the IK from home, as the batch)
        code, out, _ = run(capsys, *argv)
        one = json.loads(out)
        assert r["target_m"] == pytest.approx(t) and r["ok"] == one["ok"]
        assert r["q_deg"] == pytest.approx(one["q_deg"], abs=1e-6) and r["roll_deg"] == pytest.approx(one["roll_deg"])


# --- status --json, jog --roll --------------------------------------------------------------------------------


def test_status_json_gives_the_tool_orientation(capsys):
    from armctl.model.arm import load_arm
    from armctl.model.kinematics import tool_pose

    for arm in ("seed-3link", "mearm"):
        st = js(capsys, "--arm", arm, "--port", "armsim://?rate=50&seed=1", "status", "--json")
        R = check_frame(st)
        assert np.allclose(R, tool_pose(load_arm(arm), np.radians(st["q_deg"]))[:3, :3], atol=1e-9)
        assert "roll_deg" not in st


def test_jog_passes_the_roll_to_the_robot(capsys, monkeypatch, arm_file):
    """``jog X Y Z --roll DEG`` asks ``Robot.move_to(..., roll=rad)`` (the Robot solves the end at that roll)."""
    from armctl.cli import device
    from armctl.model.arm import load_arm

    calls = []

    class FakeRobot:
        def move_to(self, *target, **kw):
            calls.append((target, kw))

        @staticmethod
        def where():  # the arm at home, its roll at -150 deg
            from types import SimpleNamespace

            return SimpleNamespace(known=True, q_rad=np.radians([0, 90, -90, -45, -150]))

    def fake_drive(args, arm, cal, act, wants_progress=False):
        act(FakeRobot())
        return {"duration_s": 1.0}

    monkeypatch.setattr(device, "setup", lambda args: (load_arm(args.arm), None))
    monkeypatch.setattr(device, "drive", fake_drive)
    code, out, err = run(capsys, "--arm", arm_file, "jog", 0.2, 0.1, 0.05, "--roll", -200, "--phi", -90)
    assert code == 0, err
    ((target, kw),) = calls
    assert target == pytest.approx((0.2, 0.1, 0.05)) and kw["roll"] == pytest.approx(math.radians(-200))
    assert kw["phi"] == pytest.approx(-math.pi / 2) and kw["reach_q"][-1] == pytest.approx(math.radians(160))
    calls.clear()
    assert run(capsys, "--arm", arm_file, "jog", 0.2, 0.1, 0.05)[0] == 0
    assert "roll" not in calls[0][1]  # no --roll: the roll is kept
    # --down --yaw: straight down, the roll that closes the jaws along the yaw (its pose checked: reach_q)
    calls.clear()
    assert run(capsys, "--arm", arm_file, "jog", 0.2, 0.1, 0.05, "--down", "--yaw", 35)[0] == 0
    ((target, kw),) = calls
    from armctl.model.kinematics import tool_pose

    T = tool_pose(load_arm(arm_file), np.array(kw["reach_q"]))
    assert kw["phi"] == pytest.approx(-math.pi / 2)
    assert np.allclose(T[:3, 3], target, atol=1e-9) and np.allclose(T[:3, 0], [0, 0, -1], atol=1e-9)
    assert math.degrees(math.atan2(T[1, 1], T[0, 1])) % 180 == pytest.approx(35.0, abs=1e-6)
    # the roll handed to the Robot: the one nearest the arm's own (-150 deg), not home's (0: the reach_q's)
    from armctl import ik

    assert abs(math.degrees(kw["roll"]) + 150) < 90 and abs(math.degrees(kw["reach_q"][-1]) + 150) > 90
    T = tool_pose(load_arm(arm_file), ik.solve(load_arm(arm_file), target, phi=-math.pi / 2, roll=kw["roll"]).q)
    assert math.degrees(math.atan2(T[1, 1], T[0, 1])) % 180 == pytest.approx(35.0, abs=1e-6)
    for argv, fragment in (
        (["--arm", arm_file, "jog", 0.2, 0.1, 0.05, "--roll", 170], "--roll: roll 170.0 deg is outside"),
        (["--arm", arm_file, "jog", 0.2, 0.1, 0.05, "--roll", "nan"], "--roll: 'nan' is not a finite number"),
        (["--arm", "mearm", "jog", 0.15, 0.04, 0.02, "--roll", 5], "--roll: arm 'mearm' has no wrist roll"),
        (["--arm", arm_file, "jog", "--roll", 5], "--roll needs a target"),
        (["--arm", arm_file, "jog", "--down"], "--down needs a target"),
        (["--arm", arm_file, "jog", 0.2, 0.1, 0.05, "--yaw", 5], "--yaw needs --down"),
    ):
        calls.clear()
        code, out, err = run(capsys, *argv)
        assert code == 2 and err.count("\n") == 1 and fragment in err and not calls, err


def test_jog_roll_on_the_simulated_arm_then_status(capsys, arm_file):
    """jog --roll turns the jaws on the board (the simulated servos measured); status --json says where the tool
    points: its frame the FK's of the angles it reports, its roll_deg their last."""
    from armctl.model.arm import load_arm
    from armctl.model.kinematics import tool_pose

    cal = str(Path(arm_file).with_name("rollcal.yaml"))
    base = ["--arm", arm_file, "--calibration", cal, "--port", "armsim://?rate=50&seed=1"]
    out = js(capsys, *base, "jog", 0.2, 0.1, 0.05, "--roll", 45, "--phi", -90, "--speed", 200, "--json")
    assert out["roll_deg"] == pytest.approx(45.0, abs=0.2) and out["q_deg"][-1] == pytest.approx(45.0, abs=0.2)
    assert out["error_m"] < 1e-3
    st = js(capsys, *base, "status", "--json")
    R = check_frame(st)
    assert st["roll_deg"] == pytest.approx(st["q_deg"][-1], abs=1e-6)
    assert np.allclose(R, tool_pose(load_arm(arm_file), np.radians(st["q_deg"]))[:3, :3], atol=1e-9)


def test_ik_down_yaw_no_roll_inside_narrow_limits(capsys, tmp_path):
    """A roll that turns only -20..20 deg: a yaw it cannot reach either way round is one line, exit 2; one it can
    is reached with the roll inside."""
    from tests.cli.roll_arm import ROLL_ARM_YAML

    f = tmp_path / "narrow.yaml"
    f.write_text(ROLL_ARM_YAML.replace("min_deg: -157, max_deg: 163", "min_deg: -20, max_deg: 20"))
    target = (0.2, 0.0, 0.05)  # on the x axis: the base at 0, the roll for yaw Y is about 100 - Y deg (jaw 10 deg)
    code, out, err = run(capsys, "--arm", f, "ik", *target, "--down", "--yaw", 10)
    assert code == 2 and out == "" and err.count("\n") == 1
    assert "no roll inside the limits of 'wrist_roll' [-20.0, 20.0] deg turns the jaws to yaw 10.0 deg" in err
    d = js(capsys, "--arm", f, "ik", *target, "--down", "--yaw", 95, "--json")
    assert d["ok"] and abs(d["roll_deg"]) <= 20
    jaw = np.array(d["tool_R"])[:, 1]
    assert abs((math.degrees(math.atan2(jaw[1], jaw[0])) - 95 + 90) % 180 - 90) < 1e-6


@pytest.mark.parametrize("yaw", [0.0, 35.0, -60.0, 120.0])
def test_so101_down_yaw_agrees_with_the_makers_urdf(capsys, yaw):
    """On the SO-101 preset (the maker's URDF), ``ik X Y Z --down --yaw Y``'s angles through yourdfpy (an independent
    URDF library): gripper_frame_link on the target, the roll axis vertical, the jaws' closing line (across the
    gripper joint's axis and the roll axis: the moving jaw turns about it) at table yaw Y (mod 180)."""
    from armctl.model.arm import load_arm
    from armctl.model.urdf.derive import urdf_angles
    from tests.helpers import require

    try:
        import yourdfpy
    except ImportError:  # pragma: no cover - the test extra installs it
        yourdfpy = None
    require(yourdfpy is not None, "yourdfpy (pip install -e '.[test]')")
    arm = load_arm("so101")
    target = (0.2, 0.05, 0.02)
    d = js(capsys, "--arm", "so101", "ik", *target, "--down", "--yaw", yaw, "--json")
    assert d["ok"] and d["yaw_deg"] == yaw
    robot = yourdfpy.URDF.load(
        str(arm.urdf.path), load_meshes=False, load_collision_meshes=False, build_scene_graph=True
    )
    cfg = dict(urdf_angles(arm, np.radians(d["q_deg"])), gripper=0.0)
    robot.update_cfg({n: cfg[n] for n in robot.actuated_joint_names})

    def world(link: str) -> np.ndarray:
        return robot.get_transform(link, robot.base_link)

    def axis(joint: str) -> np.ndarray:
        j = robot.joint_map[joint]
        return world(j.child)[:3, :3] @ np.asarray(j.axis, dtype=float)

    tool = world("gripper_frame_link")[:3, 3]
    assert np.allclose(tool, arm.urdf.to_urdf_point(target), atol=1e-7)  # (q_deg printed to 1e-6 deg)
    roll_axis = axis("wrist_roll")
    assert abs(abs(roll_axis[2]) - 1.0) < 1e-9
    line = np.cross(roll_axis, axis("gripper"))
    assert abs(line[2]) < 1e-7
    assert abs((math.degrees(math.atan2(line[1], line[0])) - yaw + 90) % 180 - 90) < 1e-5
