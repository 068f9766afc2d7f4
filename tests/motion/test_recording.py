"""armctl.program.recording: poses recorded into program files (what ``jog --record`` and ``web --record`` write).

A new file is a complete program; an existing one keeps every comment and line, gaining only the pose
and its steps; the result always reads back and plans; ``undo`` restores the text byte for byte. Files
it cannot read, programs for another arm and bad names are refused with the file untouched.
"""

from __future__ import annotations

import math
import shutil
import sys
from pathlib import Path

import numpy as np
import pytest

from armctl.errors import BadInputError, ConfigError, MotionError
from armctl.model.arm import load_arm
from armctl.model.kinematics import fk
from armctl.program import load_program, plan_program
from armctl.program.recording import Recorder, check_name, gripper_state

ROOT = Path(__file__).resolve().parents[2]
ARM = load_arm("seed-3link")
Q1 = np.radians([40.0, -80.0, -45.0])
Q2 = np.radians([30.123456, -70.0, -20.0])


def _added_lines(before: str, after: str) -> list[str]:
    """``after`` must be ``before`` with lines inserted: return those lines (fails otherwise)."""
    a, b = before.splitlines(), after.splitlines()
    added, i = [], 0
    for line in b:
        if i < len(a) and line == a[i]:
            i += 1
        else:
            added.append(line)
    assert i == len(a), "a line of the original file was changed or lost"
    return added


def test_a_new_file_is_a_complete_program_that_plans(tmp_path):
    path = tmp_path / "sub" / "taught.yaml"
    rec = Recorder(path, ARM)
    assert rec.next_name() == "p1" and rec.names == []
    out = rec.record("p1", Q1, gripper="open")
    assert out.poses == 1 and out.kept_layout and out.steps == ("{joint: p1}",)
    r2 = rec.record("place", Q2, gripper="closed")
    assert r2.steps == ("{gripper: close}", "{joint: place}")
    prog = load_program(path)
    assert prog.arm_name == "seed-3link" and list(prog.poses) == ["p1", "place"]
    assert [s.action for s in prog.steps] == ["joint", "gripper", "joint"]
    plan = plan_program(prog, ARM)
    assert np.abs(plan.trajectory.q_rad[-1] - Q2).max() < math.radians(0.001)
    assert rec.next_name() == "p2"
    text = path.read_text()
    assert "# tool (" in text and "phi" in text  # the tool point, for people reading the file


def test_an_existing_program_keeps_every_line_and_comment(tmp_path):
    path = tmp_path / "pick.yaml"
    shutil.copy(ROOT / "examples" / "pick_and_place.yaml", path)
    before = path.read_text()
    rec = Recorder(path, ARM)
    out = rec.record("extra", Q1, gripper="open")
    assert out.kept_layout and out.poses == 8
    added = _added_lines(before, path.read_text())
    assert added == ["  extra: {q_deg: [40, -80, -45]}  # tool (553.7, -135.0) mm, phi -85.0 deg", "  - {joint: extra}"]
    text = path.read_text()
    assert text.index("extra: {q_deg") < text.index("start: park")  # under poses:, after the last one
    assert text.rstrip().endswith("- {joint: extra}")
    plan_program(load_program(path), ARM)


FLOW = "arm: seed-3link\nposes: {a: {q_deg: [45, -90, -45]}}\nsteps: [{joint: a}]\n"
FLOW_AFTER = (
    "arm: seed-3link\nposes: {a: {q_deg: [45, -90, -45]}, b: {q_deg: [40, -80, -45]}}\n"
    "steps: [{joint: a}, {gripper: close}, {joint: b}]\n"
)
NO_POSES = "# head\narm: seed-3link\n\n# the moves\nsteps:\n- {joint: {q_deg: [45, -90, -45]}}  # inline\n\n# end\n"
NO_POSES_ADDED = [
    "poses:",
    "  b: {q_deg: [40, -80, -45]}  # tool (553.7, -135.0) mm, phi -85.0 deg",
    "- {gripper: close}",
    "- {joint: b}",
]
NESTED = (
    "steps:\n  - joint: a\n  - repeat: 2\n    steps:\n      - {joint: a}\n      - wait_s: 0.1\n"
    "poses:\n  a:\n    q_deg: [45, -90, -45]\n\n# trailing\n"
)
NESTED_ADDED = [
    "  - {gripper: close}",
    "  - {joint: b}",
    "  b: {q_deg: [40, -80, -45]}  # tool (553.7, -135.0) mm, phi -85.0 deg",
]


def test_flow_style_gains_the_entries_in_place(tmp_path):
    path = tmp_path / "p.yaml"
    path.write_text(FLOW)
    rec = Recorder(path, ARM)
    assert rec.record("b", Q1, gripper="closed").kept_layout
    assert path.read_text() == FLOW_AFTER
    plan_program(load_program(path), ARM)
    assert rec.undo() == "b" and path.read_text() == FLOW


@pytest.mark.parametrize(
    "program, added",
    [
        (NO_POSES, NO_POSES_ADDED),  # no poses: section; a comment leading into steps; trailing comments
        (NESTED, NESTED_ADDED),  # steps before poses, a loop as the last step, a pose over two lines
    ],
)
def test_block_layouts_gain_only_the_new_lines(tmp_path, program, added):
    path = tmp_path / "p.yaml"
    path.write_text(program)
    rec = Recorder(path, ARM)
    assert rec.record("b", Q1, gripper="closed").kept_layout
    text = path.read_text()
    assert _added_lines(program, text) == added
    prog = load_program(path)
    assert prog.steps[-1].action == "joint" and prog.steps[-1].target == "b"
    plan_program(prog, ARM)
    assert rec.undo() == "b" and path.read_text() == program
    if program is NO_POSES:  # the new section goes above the comment that leads into steps:
        assert text.index("poses:") < text.index("# the moves") < text.index("steps:")


def test_a_layout_it_cannot_edit_is_written_anew_and_says_so(tmp_path):
    path = tmp_path / "p.yaml"
    path.write_text("arm: seed-3link\nposes:\nsteps: [{joint: {q_deg: [45, -90, -45]}}]\n")  # poses: null
    out = Recorder(path, ARM).record("b", Q1)
    assert not out.kept_layout
    prog = load_program(path)
    assert list(prog.poses) == ["b"] and len(prog.steps) == 2


def test_names_yaml_would_read_as_something_else_are_quoted(tmp_path):
    path = tmp_path / "p.yaml"
    rec = Recorder(path, ARM)
    for name in ("yes", "1", "null", "0.5", "on", "a.b-c_1"):
        rec.record(name, Q1)
    assert list(load_program(path).poses) == ["yes", "1", "null", "0.5", "on", "a.b-c_1"]
    assert "'yes': {q_deg" in path.read_text()


@pytest.mark.parametrize("bad", ["", "two words", "$var", "-dash", "x" * 41, "ünï", "a:b", "#c"])
def test_bad_names_are_refused(bad):
    with pytest.raises(BadInputError, match="pose name"):
        check_name(bad)


def test_a_taken_name_or_bad_angles_change_nothing(tmp_path):
    path = tmp_path / "p.yaml"
    rec = Recorder(path, ARM)
    rec.record("a", Q1)
    before = path.read_bytes()
    with pytest.raises(BadInputError, match="already has a pose named 'a'"):
        rec.record("a", Q2)
    with pytest.raises(BadInputError, match="expected 3"):
        rec.record("b", Q1[:2])
    with pytest.raises(BadInputError, match="outside the limits"):
        rec.record("b", np.radians([120.0, 0, 0]))
    assert path.read_bytes() == before


def test_undo_restores_the_text_and_the_absence_of_the_file(tmp_path):
    path = tmp_path / "p.yaml"
    rec = Recorder(path, ARM)
    with pytest.raises(BadInputError, match="nothing to undo"):
        rec.undo()
    rec.record("a", Q1)
    one = path.read_bytes()
    rec.record("b", Q2, gripper="closed")
    assert rec.undo() == "b" and path.read_bytes() == one
    assert rec.undo() == "a" and not path.exists()
    assert not rec.can_undo


def test_undo_leaves_a_file_changed_since_alone(tmp_path):
    path = tmp_path / "p.yaml"
    rec = Recorder(path, ARM)
    rec.record("a", Q1)
    path.write_text(path.read_text() + "# edited by hand\n")
    edited = path.read_bytes()
    with pytest.raises(BadInputError, match="was changed since"):
        rec.undo()
    assert path.read_bytes() == edited


def test_files_it_cannot_read_or_that_are_for_another_arm_are_refused_untouched(tmp_path):
    broken = tmp_path / "broken.yaml"
    broken.write_text("steps: [ {joint: a\n")
    with pytest.raises(ConfigError):
        Recorder(broken, ARM)
    other = tmp_path / "other.yaml"
    shutil.copy(ROOT / "examples" / "pick_and_place_2link.yaml", other)
    with pytest.raises(ConfigError, match="written for arm 'seed-2link'"):
        Recorder(other, ARM)
    bad_move = tmp_path / "bad_move.yaml"
    bad_move.write_text("steps: [{line: {xy_mm: [1000, 0]}}]\n")
    with pytest.raises(MotionError, match="must plan on arm"):
        Recorder(bad_move, ARM)
    assert broken.read_text() == "steps: [ {joint: a\n"


def test_the_gripper_step_follows_the_state_the_program_leaves(tmp_path):
    path = tmp_path / "p.yaml"
    path.write_text("arm: seed-3link\nstart_gripper: closed\nsteps:\n  - wait_s: 0.1\n")
    rec = Recorder(path, ARM)
    assert rec.record("a", Q1, gripper="closed").steps == ("{joint: a}",)
    assert rec.record("b", Q2, gripper="open").steps == ("{gripper: open}", "{joint: b}")
    assert rec.record("c", Q1, gripper="open").steps == ("{joint: c}",)
    two = load_arm("seed-2link")
    assert gripper_state(two, None) is None
    g = ARM.gripper
    assert gripper_state(ARM, g.open_rad - 0.01) == "open" and gripper_state(ARM, g.closed_rad + 0.01) == "closed"


def test_an_arm_file_is_named_relative_to_the_program(tmp_path):
    arm_dir = tmp_path / "arms"
    arm_dir.mkdir()
    text = (ROOT / "armctl" / "presets" / "seed-2link.yaml").read_text().replace("seed-2link", "my-arm")
    (arm_dir / "my-arm.yaml").write_text(text)
    arm = load_arm(str(arm_dir / "my-arm.yaml"))
    path = tmp_path / "progs" / "p.yaml"
    Recorder(path, arm).record("a", np.radians([30.0, -60.0]))
    prog = load_program(path)
    assert prog.arm_name == "../arms/my-arm.yaml"
    plan = plan_program(prog, arm)
    assert fk(arm.links_m, plan.trajectory.q_rad[-1]) == pytest.approx(fk(arm.links_m, np.radians([30, -60])))


def test_files_written_keep_their_mode_and_new_ones_get_the_usual(tmp_path):
    """Saves went through mkstemp and left every program and calibration readable by its owner only."""
    import os
    import stat

    from armctl.core.paths import atomic_write

    new = atomic_write(tmp_path / "new.yaml", "a: 1\n")
    mask = os.umask(0o022)
    os.umask(mask)
    assert stat.S_IMODE(new.stat().st_mode) == 0o666 & ~mask
    shared = tmp_path / "shared.yaml"
    shared.write_text("a: 1\n")
    if sys.platform == "win32":
        return  # Windows keeps only a read-only flag (and will not replace a read-only file)
    shared.chmod(0o664)
    atomic_write(shared, "a: 2\n")
    assert stat.S_IMODE(shared.stat().st_mode) == 0o664 and shared.read_text() == "a: 2\n"
