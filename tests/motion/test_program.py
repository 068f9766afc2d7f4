"""Programs: the YAML format, whole-program checks, and the plan/plot commands (armctl.program, armctl.cli)."""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from armctl.cli import main
from armctl.errors import ConfigError, MotionError
from armctl.model.arm import load_arm
from armctl.model.kinematics import fk
from armctl.program import expand, load_program, load_program_text, plan_program
from tests.helpers import require_module

ROOT = Path(__file__).resolve().parents[2]
ARM2 = load_arm("seed-2link")
ARM3 = load_arm("seed-3link")


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def write(tmp_path, text, name="prog.yaml"):
    p = tmp_path / name
    p.write_text(text)
    return p


def assert_safe(arm, tr):
    q = tr.q_rad
    assert np.all(q >= arm.q_min - 1e-9) and np.all(q <= arm.q_max + 1e-9)
    assert np.all(np.abs(np.diff(q, axis=0)) / tr.period_s <= arm.max_speed_rad_s * (1 + 1e-9))
    if arm.gripper is not None:
        assert np.all(np.abs(np.diff(tr.gripper_rad)) / tr.period_s <= arm.gripper.max_speed_rad_s * (1 + 1e-9))


# --------------------------------------------------------------------------- the examples


@pytest.mark.parametrize(("name", "arm"), [("pick_and_place.yaml", ARM3), ("pick_and_place_2link.yaml", ARM2)])
def test_examples_plan_safely(name, arm):
    plan = plan_program(load_program(ROOT / "examples" / name), arm)
    tr = plan.trajectory
    assert_safe(arm, tr)
    assert np.allclose(tr.t_s, np.arange(len(tr)) * 0.02)
    s = plan.summary()
    assert s["max_path_deviation_m"] < 1e-4
    # three picks and three places
    closes = [mp for mp in plan.moves if mp.kind == "gripper" and mp.gripper_rad[-1] < mp.gripper_rad[0]]
    assert len(closes) == 3


def test_pick_and_place_grips_at_the_parts_and_releases_on_the_stack():
    prog = load_program(ROOT / "examples" / "pick_and_place.yaml")
    plan = plan_program(prog, ARM3)
    where = {"close": [], "open": []}
    for mp in plan.moves:
        if mp.kind == "gripper" and len(mp.t_s) > 1:
            key = "close" if mp.gripper_rad[-1] < mp.gripper_rad[0] else "open"
            where[key].append(fk(ARM3.links_m, mp.q_rad[-1]))
    assert np.allclose(where["close"], [prog.poses[f"part{i}"].xy_m for i in (1, 2, 3)], atol=1e-9)
    assert np.allclose(where["open"], [prog.poses[f"stack{i}"].xy_m for i in (1, 2, 3)], atol=1e-9)
    for mp in plan.moves:  # the gripper points straight down all the time it is in the lines
        if mp.kind == "line":
            assert np.allclose(np.degrees(np.sum(mp.q_rad, axis=1)), -90.0, atol=1e-6)


def test_loops_unroll_with_labels():
    prog = load_program_text(
        """
poses:
  a: {xy_mm: [450, 100]}
  b: {xy_mm: [450, 150]}
steps:
  - repeat: 2
    steps:
      - for_each: {p: [a, b]}
        steps:
          - {name: go, line: $p}
  - wait_s: 0.1
""",
        "loop.yaml",
    )
    flat = expand(prog)
    assert [f.title for f in flat] == [
        "step 1.1.1 'go' (line 10; pass 1 of 2; p=a)",
        "step 1.1.1 'go' (line 10; pass 1 of 2; p=b)",
        "step 1.1.1 'go' (line 10; pass 2 of 2; p=a)",
        "step 1.1.1 'go' (line 10; pass 2 of 2; p=b)",
        "step 2 (line 11)",
    ]
    plan = plan_program(prog, ARM2)
    assert plan.trajectory.steps == [f.title for f in flat]


def test_units_offsets_and_joint_poses():
    prog = load_program_text(
        """
settings: {speed_m_s: 0.05, segment_m: 0.004, period_ms: 10}
poses:
  p: {xy_m: [0.45, 0.1]}
  j: {q_deg: [30, -60]}
start: j
steps:
  - {line: p, offset_mm: [0, -50], accel_m_s2: 1.0}
  - {line: j}
""",
        "u.yaml",
    )
    plan = plan_program(prog, ARM2)
    tr = plan.trajectory
    assert tr.period_s == 0.01
    assert np.allclose(tr.q_rad[0], np.radians([30, -60]))
    assert np.allclose(tr.q_rad[-1], np.radians([30, -60]), atol=1e-9)
    assert np.allclose(fk(ARM2.links_m, plan.moves[0].q_rad[-1]), (0.45, 0.05), atol=1e-12)
    # cut at 4 mm at most, and finer where a joint would step more than 1 deg (the default bound)
    length = np.hypot(*(fk(ARM2.links_m, np.radians([30, -60])) - (0.45, 0.05)))
    assert plan.moves[0].segments >= math.ceil(length / 0.004 - 1e-9)
    pts = plan.moves[0].points_m
    assert np.all(np.hypot(*np.diff(pts, axis=0).T) <= 0.004 + 1e-12)


# --------------------------------------------------------------------------- bad programs through the CLI

GOOD = """\
poses:
  a: {xy_mm: [450, 100]}
  b: {xy_mm: [500, 0]}
steps:
  - line: a
  - line: b
"""

BAD = {
    "unknown pose": (GOOD.replace("  - line: b", "  - line: bb"), 2, 6, "unknown pose 'bb'; did you mean 'b'?"),
    "negative speed": (
        GOOD.replace("  - line: b", "  - {line: b, speed_mm_s: -5}"),
        2,
        6,
        "step 2: speed_mm_s: -5 is out of range: must be > 0",
    ),
    "wrong type": (
        GOOD.replace("  - line: b", "  - {line: b, speed_mm_s: fast}"),
        2,
        6,
        "expected a number, found 'fast'",
    ),
    "yaml syntax": (GOOD.replace("  b: {xy_mm: [500, 0]}", "  b: {xy_mm: [500, 0]"), 2, None, "YAML syntax error"),
    "empty program": ("", 2, 1, "the program is empty"),
    "no steps": ("poses:\n  a: {xy_mm: [450, 100]}\nsteps: []\n", 2, 3, "the program has no steps"),
    "two actions": (GOOD.replace("  - line: b", "  - {line: b, joint: a}"), 2, 6, "exactly one of"),
    "unknown key": (
        GOOD.replace("  - line: b", "  - {line: b, sped_mm_s: 5}"),
        2,
        6,
        "unknown key 'sped_mm_s' for a line step; did you mean 'speed_mm_s'?",
    ),
    "bad pose": (GOOD.replace("{xy_mm: [500, 0]}", "{xy_mm: [500]}"), 2, 3, "expected 2 numbers"),
    "phi on 2 links": (
        GOOD.replace("{xy_mm: [500, 0]}", "{xy_mm: [500, 0], phi_deg: 10}"),
        2,
        3,
        "phi_deg, which needs a 3-link arm",
    ),
    "q pose out of limits": (
        GOOD.replace("{xy_mm: [500, 0]}", "{q_deg: [95, 0]}"),
        3,
        6,
        "step 2: joint 1 (shoulder) would be at 95.0 deg in pose 'b' (line 3), outside its limits",
    ),
    "unbound variable": (GOOD.replace("  - line: b", "  - line: $p"), 2, 6, "'$p' is not a for_each variable"),
    # speeds, sizes and counts that would time a move wrongly, hang or fill the memory
    "speed too small to time": (
        GOOD.replace("  - line: b", "  - {line: b, speed_mm_s: 0.000000001}"),
        3,
        6,
        "step 2: the speed or acceleration of this line is too small to time it",
    ),
    "move too long": (
        GOOD.replace("  - line: b", "  - {line: b, accel_mm_s2: 0.0000000001}"),
        3,
        6,
        "s, more than the 3600 s one move may take",
    ),
    "wait too long": (GOOD + "  - wait_s: 100000000000.0\n", 3, 7, "this wait would take 1e+11 s"),
    "segment too small": (
        GOOD.replace("  - line: b", "  - {line: b, segment_mm: 0.000001}"),
        2,
        6,
        "segment_mm: 1e-06 is out of range: must be >= 0.01",
    ),
    "joint step too small": (
        "settings: {max_joint_step_deg: 0.0000001}\n" + GOOD,
        2,
        1,
        "max_joint_step_deg': 1e-07 is out of range",
    ),
    "repeat count typo": (
        GOOD.replace("  - line: b", "  - repeat: 1000000000\n    steps: [{line: b}, {line: a}]"),
        2,
        7,
        "more than 25000 moves; check the repeat counts",
    ),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_programs_fail_with_file_line_and_no_output(case, tmp_path, capsys):
    text, code, line, message = BAD[case]
    p = write(tmp_path, text)
    csv_out = tmp_path / "out.csv"
    got, out, err = run(capsys, "--arm", "seed-2link", "plan", str(p), "--csv", str(csv_out))
    assert got == code
    assert out == ""
    assert not csv_out.exists()
    assert err.count("\n") == 1 and err.startswith("armctl plan: error: ")
    assert message in err
    assert f"{p}:{line}" in err if line else str(p) in err


def test_unreachable_target_in_step_7(tmp_path, capsys):
    text = """\
poses:
  a: {xy_mm: [450, 100]}
  b: {xy_mm: [500, 0]}
  far: {xy_mm: [760, 0]}
steps:
  - gripper: open
  - line: a
  - wait_s: 0.2
  - line: b
  - gripper: close
  - joint: a
  - {name: too far, line: far}
  - line: a
"""
    p = write(tmp_path, text)
    code, out, err = run(capsys, "--arm", "seed-2link", "plan", str(p))
    assert code == 3 and out == ""
    assert f"{p}:12: step 7 'too far': target (0.7600, 0.0000) m is 60.0 mm beyond the outer reach" in err
    assert err.count("\n") == 1


def test_joint_limit_crossed_mid_line(tmp_path, capsys):
    text = """\
poses:
  low: {q_deg: [-30, -40]}
  high: {xy_mm: [200, 600]}
start: low
steps:
  - {line: high, speed_mm_s: 80}
"""
    p = write(tmp_path, text)
    code, out, err = run(capsys, "--arm", "seed-2link", "plan", str(p), "--json")
    assert code == 3 and out == ""
    assert f"{p}:6: step 1: joint 1 (shoulder) would cross its limit 90 deg" in err
    assert "% along the line, at (" in err and "via point" in err


def test_unreachable_inside_a_loop_names_the_pass(tmp_path, capsys):
    text = """\
poses:
  a: {xy_mm: [450, 100]}
  b: {xy_mm: [720, 0]}
steps:
  - for_each: {p: [a, b]}
    steps:
      - joint: $p
"""
    p = write(tmp_path, text)
    code, _, err = run(capsys, "--arm", "seed-2link", "plan", str(p))
    assert code == 3
    assert f"{p}:7: step 1.1 (p=b): to pose 'b' (line 3): target" in err


def test_arm_mismatch(tmp_path, capsys):
    p = write(tmp_path, "arm: seed-2link\n" + GOOD)
    code, _, err = run(capsys, "--arm", "seed-3link", "plan", str(p))
    assert code == 2 and "run with --arm seed-2link" in err and f"{p}:1" in err


def test_program_arm_may_be_an_arm_file_next_to_the_program(tmp_path, capsys):
    (tmp_path / "arms").mkdir()
    text = (ROOT / "armctl" / "presets" / "seed-2link.yaml").read_text()
    (tmp_path / "arms" / "mine.yaml").write_text(text.replace("name: seed-2link", "name: my-arm"))
    p = write(tmp_path, "arm: arms/mine.yaml\n" + GOOD)
    code, out, err = run(capsys, "plan", str(p), "--json")  # found relative to the program, not the cwd
    assert code == 0, err
    assert len(json.loads(out)["samples"][0]["q_deg"]) == 2
    code, _, err = run(capsys, "--arm", str(tmp_path / "arms" / "mine.yaml"), "plan", str(p), "--summary")
    assert code == 0, err
    code, _, err = run(capsys, "--arm", "seed-2link", "plan", str(p))  # a preset is not the program's arm file
    assert code == 2 and f"run with --arm {tmp_path / 'arms' / 'mine.yaml'}" in err and f"{p}:1" in err


def test_program_arm_is_used_when_no_arm_is_given(capsys):
    example = Path(__file__).parents[2] / "examples" / "pick_and_place_2link.yaml"
    code, out, err = run(capsys, "plan", str(example), "--json")
    assert code == 0, err
    assert len(json.loads(out)["samples"][0]["q_deg"]) == 2


def test_missing_file(capsys):
    code, out, err = run(capsys, "plan", "/nonexistent/prog.yaml")
    assert code == 2 and out == "" and "file not found" in err


# --------------------------------------------------------------------------- outputs


def test_plan_json_and_csv(tmp_path, capsys):
    p = write(tmp_path, GOOD)
    code, out, _ = run(capsys, "--arm", "seed-2link", "plan", str(p), "--json")
    assert code == 0
    doc = json.loads(out)
    assert set(doc["summary"]) >= {
        "duration_s",
        "segments",
        "peak_joint_speed_deg_s",
        "joint_speed_limit_deg_s",
        "max_path_deviation_m",
    }
    s0, s1 = doc["samples"][0], doc["samples"][-1]
    assert set(s0) >= {"t_s", "q_deg", "tool_m"}
    assert s0["t_s"] == 0 and s0["q_deg"] == pytest.approx([45, -90])
    assert s1["tool_m"] == pytest.approx([0.5, 0.0], abs=1e-6)
    assert s1["t_s"] == pytest.approx(doc["summary"]["duration_s"])
    assert all(
        pk <= lim * (1 + 1e-9)
        for pk, lim in zip(
            doc["summary"]["peak_joint_speed_deg_s"], doc["summary"]["joint_speed_limit_deg_s"], strict=True
        )
    )

    csv_path = tmp_path / "plan.csv"
    code, out, _ = run(capsys, "--arm", "seed-2link", "plan", str(p), "--csv", str(csv_path))
    assert code == 0 and "duration" in out
    lines = csv_path.read_text().splitlines()
    assert lines[0] == "t_s,shoulder_deg,elbow_deg,gripper_deg,x_m,y_m,step"
    assert len(lines) == len(doc["samples"]) + 1

    code, out, _ = run(capsys, "--arm", "seed-2link", "plan", str(p))
    assert code == 0 and out.splitlines()[0].split() == [
        "t_s",
        "shoulder_deg",
        "elbow_deg",
        "gripper_deg",
        "x_m",
        "y_m",
        "step",
    ]
    assert "peak" in out and "worst path deviation" in out


def test_plot_writes_png(tmp_path, capsys):
    out_png = tmp_path / "p.png"
    code, out, err = run(capsys, "plot", str(ROOT / "examples" / "pick_and_place.yaml"), "-o", str(out_png))
    assert code == 0, err
    assert out_png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_plot_without_matplotlib_names_the_extra(tmp_path, capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    out_png = tmp_path / "p.png"
    code, out, err = run(capsys, "plot", str(ROOT / "examples" / "pick_and_place.yaml"), "-o", str(out_png))
    assert code == 2 and not out_png.exists()
    assert "pip install -e '.[plot]'" in err and err.count("\n") == 1


def test_plot_rejects_other_formats(tmp_path, capsys):
    code, _, err = run(capsys, "plot", str(ROOT / "examples" / "pick_and_place.yaml"), "-o", str(tmp_path / "x.jpg"))
    assert code == 2 and ".png or .svg" in err


# --------------------------------------------------------------------------- properties


@st.composite
def random_program(draw):
    """A 2-link program over random poses inside the limits (elbow down, like home)."""
    n = draw(st.integers(2, 5))
    poses, steps = [], []
    for i in range(n):
        q1 = draw(st.floats(-80, 80))
        q2 = draw(st.floats(-130, -20))
        x, y = fk(ARM2.links_m, np.radians([q1, q2]))
        poses.append(f"  p{i}: {{xy_mm: [{1000 * x:.3f}, {1000 * y:.3f}]}}")
    for _ in range(draw(st.integers(1, 6))):
        kind = draw(st.sampled_from(["line", "joint", "gripper", "wait"]))
        target = draw(st.integers(0, n - 1))
        if kind == "line":
            steps.append(
                f"  - {{line: p{target}, speed_mm_s: {draw(st.floats(10, 400)):.1f}, "
                f"accel_mm_s2: {draw(st.floats(100, 3000)):.0f}}}"
            )
        elif kind == "joint":
            steps.append(f"  - {{joint: p{target}, speed_pct: {draw(st.floats(5, 100)):.1f}}}")
        elif kind == "gripper":
            steps.append(f"  - gripper: {draw(st.sampled_from(['open', 'close']))}")
        else:
            steps.append(f"  - wait_s: {draw(st.floats(0, 0.3)):.2f}")
    return "poses:\n" + "\n".join(poses) + "\nsteps:\n" + "\n".join(steps) + "\n"


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(random_program())
def test_random_programs_are_safe_and_rest_at_both_ends(text):
    prog = load_program_text(text, "random.yaml")
    try:
        plan = plan_program(prog, ARM2)
    except MotionError:
        assume(False)
        return
    tr = plan.trajectory
    assert_safe(ARM2, tr)
    assert np.allclose(tr.q_rad[0], ARM2.home_rad)
    # every move starts and ends at rest: the first and last frame of each move barely move
    for mp in plan.moves:
        if len(mp.q_rad) > 2 and mp.kind in ("line", "joint"):
            first = np.abs(mp.q_rad[1] - mp.q_rad[0]) / tr.period_s
            last = np.abs(mp.q_rad[-1] - mp.q_rad[-2]) / tr.period_s
            assert np.all(first < 0.35 * ARM2.max_speed_rad_s) and np.all(last < 0.35 * ARM2.max_speed_rad_s)
    # the tool ends where the last line/joint move sends it
    last = [f for f in expand(prog) if f.step.action in ("line", "joint")]
    if last:
        assert np.allclose(fk(ARM2.links_m, tr.q_rad[-1]), prog.poses[last[-1].step.target].xy_m, atol=1e-9)


def test_config_error_is_not_a_motion_error():
    with pytest.raises(ConfigError):
        load_program_text("steps:\n  - {line: nowhere}\n")


def test_s_curve_setting():
    text = "settings: {profile: s_curve, jerk_time_ms: 150}\n" + GOOD
    plan = plan_program(load_program_text(text, "s.yaml"), ARM2)
    trap = plan_program(load_program_text(GOOD, "t.yaml"), ARM2)
    assert plan.trajectory.duration_s > trap.trajectory.duration_s
    assert_safe(ARM2, plan.trajectory)
    with pytest.raises(ConfigError, match="only applies with 'profile: s_curve'"):
        load_program_text("settings: {jerk_time_ms: 150}\n" + GOOD, "bad.yaml")


def test_plot_to_a_missing_directory_is_one_line(tmp_path, capsys):
    require_module("matplotlib", "plots are drawn with matplotlib (armctl[plot])")
    out_png = tmp_path / "no-such-dir" / "pick.png"
    code, out, err = run(capsys, "plot", str(ROOT / "examples" / "pick_and_place.yaml"), "-o", str(out_png))
    assert code == 2 and out == "" and err.count("\n") == 1 and f"cannot write {out_png}" in err
