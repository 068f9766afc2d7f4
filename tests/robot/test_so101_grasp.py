"""Issue 37, done when: a program picks three blocks lying at 0, 35 and -60 deg on the simulated Feetech bus and
the jaws close at each block's yaw within 1 deg; and a part the simulated camera finds is gripped at its yaw.

Checked from outside armctl's model: the goal positions the servos were sent (the simulated bus's log of SYNC
WRITE packets), turned into the URDF's joint angles by LeRobot's convention (2048 steps at the URDF's zero, 4096 a
turn, the steps growing the way the URDF's joints turn; ids 1..5 as LeRobot numbers the SO-101's motors), through
an independent FK: yourdfpy on armctl/presets/so101.urdf. The jaws' closing line is perpendicular to the gripper
joint's axis and to the tool axis (gripper_frame_link's z), projected on the table.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import yaml

import armctl
from armctl.bus.feetech.client import SYNC_WRITE
from armctl.program import load_program_text
from tests.helpers import require_module

ROOT = Path(__file__).resolve().parents[2]
URDF = ROOT / "armctl" / "presets" / "so101.urdf"
SIDECAR = ROOT / "armctl" / "presets" / "so101.armctl.yaml"
GOAL_POSITION = 42  # the STS3215's goal position register
ARM_IDS = {1: "shoulder_pan", 2: "shoulder_lift", 3: "elbow_flex", 4: "wrist_flex", 5: "wrist_roll"}
GRIPPER_ID = 6
BLOCKS = {0: (160, -150, 12), 35: (190, -120, 12), -60: (220, -90, 12)}  # yaw deg: where it lies (mm)

PROGRAM = """\
arm: so101
settings: {speed_mm_s: 150, accel_mm_s2: 800, joint_speed_pct: 100}
poses:
  home: {q_deg: [0, 76, -74, -5, 0]}
  block0: {xyz_mm: [160, -150, 12], yaw_deg: 0}
  block35: {xyz_mm: [190, -120, 12], yaw_deg: 35}
  block-60: {xyz_mm: [220, -90, 12], yaw_deg: -60}
start: home
steps:
  - for_each: {block: [block0, block35, block-60]}
    steps:
      - {joint: $block, offset_mm: [0, 0, 20]}
      - pick: $block
        hover_mm: 20
  - {joint: home}
"""


def _goal_frames(log) -> np.ndarray:
    """Every SYNC WRITE of goal positions in the bus's log, as rows of steps by servo id (ids 1..6)."""
    rows, goals = [], {}
    for _, p in log:
        if p.code != SYNC_WRITE or p.params[0] != GOAL_POSITION:
            continue
        size, data = p.params[1], p.params[2:]
        for k in range(0, len(data), size + 1):
            goals[data[k]] = int.from_bytes(data[k + 1 : k + 3], "little")
        if all(i in goals for i in (*ARM_IDS, GRIPPER_ID)):
            rows.append([goals[i] for i in (*ARM_IDS, GRIPPER_ID)])
    return np.array(rows, dtype=float)


def _closings(frames: np.ndarray) -> list[int]:
    """The frames at which the gripper's goal starts to close (leaves its open value going down)."""
    g = frames[:, -1]
    return [k for k in range(1, len(g)) if g[k] < g[k - 1] and (k < 2 or g[k - 1] >= g[k - 2])]


def _jaws(urdf, steps) -> tuple[np.ndarray, float, float]:
    """(tool point in base_link (m), the closing line's table yaw (deg), the tool axis's angle from straight down
    (deg)) of the arm at goal positions ``steps`` (ids 1..5)."""
    cfg = {name: (s - 2048) * 2 * math.pi / 4096 for name, s in zip(ARM_IDS.values(), steps, strict=True)}
    urdf.update_cfg({**cfg, "gripper": 0.0})
    tool = urdf.get_transform("gripper_frame_link", "base_link")
    jaw = urdf.get_transform("moving_jaw_so101_v1_link", "base_link")
    axis = tool[:3, 2]
    grip_axis = jaw[:3, :3] @ np.asarray(urdf.joint_map["gripper"].axis, dtype=float)
    line = np.cross(grip_axis, axis)
    return tool[:3, 3], math.degrees(math.atan2(line[1], line[0])), math.degrees(math.acos(-axis[2]))


def test_three_blocks_at_0_35_and_minus_60_deg_are_gripped_across_within_1_deg(tmp_path):
    yourdfpy = require_module("yourdfpy", "the independent URDF FK (pip install yourdfpy)")
    urdf = yourdfpy.URDF.load(str(URDF), load_meshes=False, build_scene_graph=True)
    prog = tmp_path / "three_blocks.yaml"
    prog.write_text(PROGRAM)
    assert {p.yaw_rad for p in load_program_text(PROGRAM).poses.values()} == {None, *map(math.radians, BLOCKS)}
    with armctl.connect("so101", "feetechsim://") as robot:
        assert robot.backend.name == "feetech"
        robot.run(prog)
        frames = _goal_frames(robot.backend.bus.serial.sim.log)
    closings = _closings(frames)
    assert len(closings) == 3, closings
    # the frame shift (armctl's x from the pan axis, z from the table) from the maker's files: the pan joint's
    # origin in the URDF, the base's underside in the sidecar
    shift = np.array(
        [urdf.joint_map["shoulder_pan"].origin[0, 3], 0.0, yaml.safe_load(SIDECAR.read_text())["floor_z_m"]]
    )
    for k, (yaw, block) in zip(closings, BLOCKS.items(), strict=True):
        arm_goals = frames[k - 1 : k + 10, :5]
        assert np.ptp(arm_goals, axis=0).max() == 0, "the arm moved while the jaws closed"
        point, line_yaw, off_down = _jaws(urdf, frames[k, :5])
        gap = (line_yaw - yaw + 90) % 180 - 90  # the line has no direction: mod 180
        assert abs(gap) < 1.0, (yaw, line_yaw)
        assert off_down < 1.0, (yaw, off_down)
        assert np.linalg.norm(point - shift - np.array(block) / 1000) < 1e-3, (yaw, point - shift)


def test_a_part_the_camera_finds_is_gripped_across_at_its_yaw():
    yourdfpy = require_module("yourdfpy", "the independent URDF FK (pip install yourdfpy)")
    require_module("cv2", "the simulated camera finds markers with OpenCV")
    from armctl.sim import scene
    from armctl.sim.truth import Part

    urdf = yourdfpy.URDF.load(str(URDF), load_meshes=False, build_scene_graph=True)
    yaw = -50.0
    with armctl.connect("so101", "feetechsim://?arm=so101&rate=30", camera="simcam://?fps=0&seed=9") as robot:
        live = scene.latest()
        live.parts.clear()
        live.add_part(Part(4, 0.030, 0.19, -0.12, math.radians(yaw), 0.0))
        seen = math.degrees(robot.find(4).yaw_rad)  # what the program is given (the camera's own error aside)
        robot.run(load_program_text("steps:\n  - pick: {marker: 4}\n    hover_mm: 20\n", "<camera pick>"))
        frames = _goal_frames(robot.backend.bus.serial.sim.log)
    (k,) = _closings(frames)
    _, line_yaw, off_down = _jaws(urdf, frames[k, :5])
    assert abs((line_yaw - seen + 90) % 180 - 90) < 1.0 and off_down < 1.0, (line_yaw, seen, off_down)
    assert abs((line_yaw - yaw + 90) % 180 - 90) < 2.0, (line_yaw, seen)  # the part itself, through the camera
