"""The maker's URDF as it comes: ``armctl --arm so101_new_calib.urdf workspace`` with no sidecar and no flag. The
gripper joint (named as one, a branch of its own ending in the jaws), the wrist roll and the tool link (the chain's
end frame) are recognised; each guess is printed once as a note and each is overridden by its sidecar key; a tool
beside the arm's plane by more than 0.1 mm gets a note with its size (refused beyond 1 mm)."""

from __future__ import annotations

import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from armctl.cli import main
from armctl.errors import ConfigError
from armctl.model.arm import load_arm
from armctl.model.urdf import derive
from tests.helpers import makers_so101_urdf

REPO = Path(__file__).resolve().parents[2]


def _run(*argv, tmp_path):
    env = {**os.environ, "PYTHONPATH": str(REPO), "ARMCTL_STATE_DIR": str(tmp_path / "state")}
    env["ARMCTL_CONFIG_DIR"] = str(tmp_path / "config")
    return subprocess.run([sys.executable, "-m", "armctl", *argv], capture_output=True, text=True, env=env, timeout=120)


def test_workspace_on_the_makers_urdf_with_no_sidecar_and_no_flag(tmp_path):
    path = makers_so101_urdf(tmp_path)
    run = _run("--arm", str(path), "workspace", tmp_path=tmp_path)
    assert run.returncode == 0, run.stderr
    notes = [x for x in run.stderr.splitlines() if x.startswith("note: ")]
    assert len(notes) == 3 and len(run.stderr.splitlines()) == 3, run.stderr  # each guess once, nothing else
    assert "joint 'gripper' is taken as the gripper's" in notes[0] and "gripper: {joint: ...}" in notes[0]
    assert "tool link 'gripper_frame_link', the end frame of the chain" in notes[1] and "tool_link:" in notes[1]
    assert "joint 'wrist_roll' is taken as the wrist roll" in notes[2] and "held_joints: {wrist_roll: 0}" in notes[2]
    assert "wrist_roll" in run.stdout and "tool link gripper_frame_link, sidecar none" in run.stdout
    # the same arm as the preset's (its sidecar adds the floor, the speeds, the gripper's angles)
    arm, preset = load_arm(str(path)), load_arm("so101")
    assert arm.joint_names == preset.joint_names and arm.gripper_urdf_joint == "gripper" and arm.gripper is None
    assert arm.links_m == pytest.approx(preset.links_m, abs=1e-12)
    assert arm.roll == preset.roll
    assert [(n, s) for n, _, s in arm.urdf_map] == [(n, s) for n, _, s in preset.urdf_map]


def test_each_guess_is_overridden_in_the_sidecar(tmp_path, capsys):
    path = makers_so101_urdf(tmp_path)
    sidecar = path.with_name("so101_new_calib.armctl.yaml")
    sidecar.write_text("tool_link: gripper_link\nheld_joints: {wrist_roll: 0}\n")
    arm = load_arm(str(path))
    assert arm.n == 4 and arm.roll is None and arm.urdf.tool_link == "gripper_link"
    notes = capsys.readouterr().err
    assert "wrist roll" not in notes and "end frame" not in notes and "taken as the gripper's" in notes
    # a gripper joint with no gripper's name (nor its link's) is no guess: two chains, until the sidecar names it
    plain = tmp_path / "plain"
    plain.mkdir()
    path = makers_so101_urdf(plain)
    path.write_text(
        path.read_text().replace('joint name="gripper"', 'joint name="servo6"').replace("moving_jaw_so101_v1", "part7")
    )
    with pytest.raises(ConfigError, match=r"2 chains are longest \(gripper_frame_link, part7_link\): name the tool"):
        load_arm(str(path))
    path.with_name("so101_new_calib.armctl.yaml").write_text(
        "gripper: {joint: servo6, open_deg: 60, closed_deg: 0}\nmax_speed_deg_s: {wrist_roll: 180}\n"
    )
    arm = load_arm(str(path))
    assert arm.gripper_urdf_joint == "servo6" and arm.gripper is not None and arm.n == 5
    assert math.degrees(arm.roll.jaw_rad) == pytest.approx(math.degrees(load_arm("so101").roll.jaw_rad))
    notes = capsys.readouterr().err
    assert "servo6" not in notes and "wrist roll" not in notes  # named in the sidecar: no guess


def test_two_gripper_named_joints_are_no_guess(tmp_path):
    path = makers_so101_urdf(tmp_path)
    path.write_text(
        path.read_text().replace(
            "</robot>",
            '<link name="jaw2"/><joint name="jaw_b" type="revolute"><parent link="gripper_link"/><child link="jaw2"/>'
            '<axis xyz="0 0 1"/><limit lower="-1" upper="1" effort="1" velocity="1"/></joint></robot>',
        )
    )
    with pytest.raises(ConfigError, match="joints 'gripper', 'jaw_b' are each named as a gripper's: name the grip"):
        load_arm(str(path))


def test_a_tool_beside_the_plane_gets_a_note_with_its_size_and_is_refused_beyond_1mm(tmp_path, capsys):
    path = makers_so101_urdf(tmp_path, tool_beside_m=0.0005)
    arm = load_arm(str(path))
    side = [n for n in arm.urdf.notes if "beside" in n or "of the arm's plane" in n]
    assert len(side) == 1 and f"{arm.roll.lateral_m * 1000:.2f} mm right of the arm's plane" in side[0], side
    assert arm.roll.lateral_m == pytest.approx(0.0005, abs=2e-5)
    assert not [n for n in load_arm("so101").urdf.notes if "of the arm's plane" in n]  # 0.007 mm: no note
    far = tmp_path / "far"
    far.mkdir()
    capsys.readouterr()
    assert main(["--arm", str(makers_so101_urdf(far, tool_beside_m=0.0015)), "workspace"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "mm beside the plane through the yaw axis" in err, err


def test_workspace_prints_the_roll(tmp_path, capsys):
    arm = load_arm("so101")
    lines = derive.describe_lines(arm)
    (roll,) = [x for x in lines if x.startswith("wrist roll")]
    r = arm.roll
    assert f"{math.degrees(r.axis_rad):.2f} deg" in roll and f"{r.offset_up_m * 1000:.2f}" in roll
    assert f"{math.degrees(r.jaw_rad):.1f} deg" in roll
    d = derive.describe(arm)["roll"]
    assert d["joint"] == "wrist_roll" and d["sign"] == -1
    assert d["axis_deg"] == pytest.approx(math.degrees(r.axis_rad)) and d["jaw_deg"] == pytest.approx(-87.2, abs=0.05)
    assert np.allclose(d["tool_offset_mm"], [r.offset_up_m * 1000, r.offset_right_m * 1000])
    assert main(["--arm", "so101", "workspace"]) == 0
    assert roll in capsys.readouterr().out
