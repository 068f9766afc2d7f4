"""Programs on an arm with a wrist roll: ``roll:``, ``grasp: {yaw_deg: Y}`` and a part's yaw (``yaw_deg``, or where
a camera saw it) turn the jaws; a step without them keeps the roll; an arm without a roll refuses them (exit 2,
naming the line) and plans as before."""

from __future__ import annotations

import math

import numpy as np
import pytest

from armctl.cli import main
from armctl.errors import ConfigError
from armctl.model.arm import load_arm
from armctl.model.kinematics import tool_pose
from armctl.program import expand, load_program_text, plan_program, with_parts

# a base, three pitch joints and a roll whose tool point lies off the roll axis (the hard case: the base a point
# needs depends on the roll)
ROLL_ARM = """\
name: rollarm
links_m: [0.116, 0.135, 0.159]
base: {name: shoulder_pan, min_deg: -110, max_deg: 110, max_speed_deg_s: 120}
base_offset_m: 0.0304
shoulder_height_m: 0.119
joints:
  - {name: shoulder_lift, min_deg: -10, max_deg: 180, max_speed_deg_s: 120}
  - {name: elbow_flex, min_deg: -170, max_deg: 20, max_speed_deg_s: 120}
  - {name: wrist_flex, min_deg: -100, max_deg: 95, max_speed_deg_s: 150}
roll: {name: wrist_roll, min_deg: -157, max_deg: 163, max_speed_deg_s: 150, axis_deg: 2.8,
       tool_offset_m: [0.004, 0.006], jaw_deg: 3}
home_deg: [0, 76, -74, -5, 0]
gripper: {open_deg: 60, closed_deg: 0, max_speed_deg_s: 180}
"""


@pytest.fixture
def roll_arm(tmp_path):
    path = tmp_path / "rollarm.yaml"
    path.write_text(ROLL_ARM)
    return load_arm(str(path))


def _jaws(arm, q) -> tuple[float, float]:
    """(the jaws' closing line's table yaw, deg, in [-90, 90); the tool axis's angle from straight down, deg)."""
    R = np.asarray(tool_pose(arm, np.asarray(q)))[:3, :3]
    yaw = math.degrees(math.atan2(R[1, 1], R[0, 1]))
    return (yaw + 90) % 180 - 90, math.degrees(math.acos(-R[2, 0]))


def _mod180(a: float) -> float:
    return abs((a + 90) % 180 - 90)


def _ends(plan) -> list[np.ndarray]:
    return [mp.q_rad[-1] for mp in plan.moves]


def test_roll_and_grasp_are_read_and_a_pick_carries_them_to_its_moves():
    prog = load_program_text(
        "steps:\n"
        "  - {joint: {xyz_mm: [180, 0, 20]}, roll: 30}\n"
        "  - {line: {xyz_mm: [180, 0, 20]}, grasp: {yaw_deg: -60}}\n"
        "  - pick: {xyz_mm: [180, 0, 20], yaw_deg: 35}\n"
        "    grasp: {yaw_deg: 10}\n"
    )
    a, b, c = prog.steps
    assert math.degrees(a.roll_rad) == pytest.approx(30) and a.grasp_yaw_rad is None
    assert math.degrees(b.grasp_yaw_rad) == pytest.approx(-60) and b.roll_rad is None
    assert math.degrees(c.target.yaw_rad) == pytest.approx(35)
    moves = [s for s in c.steps if s.action == "line"]
    assert len(moves) == 3 and all(math.degrees(s.grasp_yaw_rad) == pytest.approx(10) for s in moves)


@pytest.mark.parametrize(
    ("step", "words"),
    [
        ("{joint: p, roll: 30, grasp: {yaw_deg: 5}}", "give roll or grasp, not both"),
        ("{joint: p, grasp: 35}", "grasp takes {yaw_deg: Y}"),
        ("{joint: p, grasp: {yaw: 35}}", "grasp takes {yaw_deg: Y}"),
        ("{joint: p, grasp: {yaw_deg: .nan}}", "grasp takes {yaw_deg: Y}"),
        ("{joint: p, roll: .nan}", "roll: expected a finite number"),
        ("{joint: p, roll: 400}", "roll: 400 is out of range"),
        ("{joint: {q_deg: [0, 76, -74, -5, 0], yaw_deg: 5}}", "a joint pose (q_deg) has no yaw_deg"),
        ("{gripper: open, roll: 30}", "unknown key 'roll' for a gripper step"),
    ],
)
def test_bad_roll_keys_are_refused_with_the_step_and_line(step, words):
    with pytest.raises(ConfigError) as err:
        load_program_text(f"poses:\n  p: {{xyz_mm: [180, 0, 20]}}\nsteps:\n  - gripper: open\n  - {step}\n")
    assert words in str(err.value) and "step 2" in str(err.value) and err.value.line == 5, str(err.value)


@pytest.mark.parametrize(
    ("text", "line", "words"),
    [
        ("steps:\n  - {joint: {xyz_mm: [180, 0, 20]}, roll: 30}\n", 2, "step 1: arm 'mearm' has no wrist roll"),
        ("steps:\n  - gripper: open\n  - pick: {xyz_mm: [180, 0, 20]}\n    grasp: {yaw_deg: 5}\n", 3, "grasp"),
        ("poses:\n  p: {xyz_mm: [180, 0, 20], yaw_deg: 35}\nsteps:\n  - wait_s: 1\n", 2, "pose 'p' (line 2): arm"),
    ],
)
def test_a_roll_on_an_arm_without_one_is_one_line_and_exit_2(tmp_path, capsys, text, line, words):
    path = tmp_path / "prog.yaml"
    path.write_text(text)
    assert main(["--arm", "mearm", "plan", str(path), "--summary"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"prog.yaml:{line}:" in err and words in err and "no wrist roll" in err, err


def test_a_roll_outside_its_limits_and_a_grasp_not_pointing_down_are_refused(roll_arm):
    with pytest.raises(ConfigError, match=r"step 2: roll 170.0 deg is outside the limits of 'wrist_roll'") as err:
        plan_program(
            load_program_text("steps:\n  - wait_s: 1\n  - {joint: {xyz_mm: [180, 0, 20]}, roll: 170}\n"), roll_arm
        )
    assert err.value.line == 3
    ok = load_program_text("steps:\n  - {joint: {xyz_mm: [180, 0, 20], phi_deg: -90}, roll: -200}\n")
    assert math.degrees(plan_program(ok, roll_arm).moves[0].q_rad[-1][4]) == pytest.approx(160)  # a whole turn in
    with pytest.raises(ConfigError, match=r"straight down, but inline pose \(line 2\) gives phi_deg -45"):
        plan_program(
            load_program_text("steps:\n  - {joint: {xyz_mm: [180, 0, 20], phi_deg: -45, yaw_deg: 3}}\n"), roll_arm
        )
    with pytest.raises(ConfigError, match=r"is a joint pose: its roll is the last of its q_deg; remove roll"):
        plan_program(load_program_text("steps:\n  - {joint: {q_deg: [0, 76, -74, -5, 0]}, roll: 10}\n"), roll_arm)


def test_grasp_and_a_parts_yaw_turn_the_jaws_and_a_step_without_them_keeps_the_roll(roll_arm):
    prog = load_program_text(
        "poses:\n"
        "  a: {xyz_mm: [180, -100, 20], yaw_deg: 35}\n"
        "  b: {xyz_mm: [200, 60, 40], phi_deg: -90}\n"
        "steps:\n"
        "  - {joint: a, offset_mm: [0, 0, 30]}\n"  # the part's yaw: 35
        "  - {joint: b, grasp: {yaw_deg: -60}}\n"
        "  - {joint: b, offset_mm: [0, 0, 30]}\n"  # no roll, no yaw: the roll stays
        "  - {joint: {xyz_mm: [150, 120, 30], phi_deg: -90}, grasp: {yaw_deg: 89}}\n"
        "  - {joint: {xyz_mm: [200, -20, 40], phi_deg: -90}, roll: -200}\n"
    )
    q = _ends(plan_program(prog, roll_arm))
    for k, want in ((0, 35), (1, -60), (3, 89)):
        yaw, off_down = _jaws(roll_arm, q[k])
        assert _mod180(yaw - want) < 1e-6 and off_down < 1e-6, (k, yaw, off_down)
    assert q[2][4] == q[1][4]  # kept exactly
    assert math.degrees(q[4][4]) == pytest.approx(160)  # -200 deg is 160 deg, inside the roll's limits


def test_a_cameras_part_yaw_turns_a_roll_arms_jaws_and_is_ignored_without_a_roll(roll_arm):
    text = "steps:\n  - pick: {marker: 4}\n  - place: {xyz_mm: [200, 60, 40]}\n"
    prog = with_parts(load_program_text(text), {4: (0.19, -0.09, 0.015)}, {4: math.radians(-60)})
    q = _ends(plan_program(prog, roll_arm))
    for k in (0, 2, 4):  # above, down, back up: the jaws at the part's yaw, straight down
        yaw, off_down = _jaws(roll_arm, q[k])
        assert _mod180(yaw + 60) < 1e-6 and off_down < 1e-6, (k, yaw)
    assert len(expand(prog)) == 9
    mearm = load_arm("mearm")
    plain = with_parts(load_program_text(text.replace("200, 60, 40", "110, 100, 0")), {4: (0.15, -0.06, 0.0)})
    turned = with_parts(plain, {4: (0.15, -0.06, 0.0)}, {4: 1.0})
    a, b = plan_program(plain, mearm).trajectory, plan_program(turned, mearm).trajectory
    assert np.array_equal(a.q_rad, b.q_rad) and np.array_equal(a.gripper_rad, b.gripper_rad)


def test_lines_turn_the_roll_as_told_and_keep_it_otherwise(roll_arm):
    prog = load_program_text(
        "steps:\n"
        "  - {joint: {xyz_mm: [180, -60, 60]}, roll: 30}\n"  # a free tool angle, the roll given
        "  - {line: {xyz_mm: [200, 40, 40], phi_deg: -90}}\n"  # no roll: the whole line at 30 deg
        "  - {line: {xyz_mm: [200, 40, 20], phi_deg: -90}, grasp: {yaw_deg: 10}}\n"
        "  - {line: {xyz_mm: [170, 0, 30], phi_deg: -90}, roll: -45}\n"
    )
    plan = plan_program(prog, roll_arm)
    traj, i = plan.trajectory, roll_arm.roll_index
    first, second, third, fourth = (traj.q_rad[traj.step == k][:, i] for k in range(4))
    assert math.degrees(first[-1]) == pytest.approx(30)
    assert np.all(second == first[-1])
    yaw, off_down = _jaws(roll_arm, plan.moves[2].q_rad[-1])
    assert _mod180(yaw - 10) < 1e-6 and off_down < 1e-6
    assert math.degrees(fourth[-1]) == pytest.approx(-45)
    assert np.all(np.diff(fourth) <= 1e-12) or np.all(np.diff(fourth) >= -1e-12)  # one way, no detour
