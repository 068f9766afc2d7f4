"""An arm with a wrist roll for the command-line tests: SO-101-like links and roll limits, its tool point off the
roll axis (12 mm up, 4 mm right) so the roll moves it, its jaws' line 10 deg off the arm's left at roll 0."""

from __future__ import annotations

from pathlib import Path

ROLL_ARM_YAML = """\
name: rollarm
links_m: [0.116, 0.135, 0.16]
base: {name: pan, min_deg: -110, max_deg: 110, max_speed_deg_s: 120}
base_offset_m: 0.03
shoulder_height_m: 0.12
joints:
  - {name: lift, min_deg: -10, max_deg: 190, max_speed_deg_s: 120}
  - {name: elbow, min_deg: -170, max_deg: 10, max_speed_deg_s: 120}
  - {name: flex, min_deg: -110, max_deg: 110, max_speed_deg_s: 150}
roll: {name: wrist_roll, min_deg: -157, max_deg: 163, max_speed_deg_s: 180, tool_offset_m: [0.012, 0.004], jaw_deg: 10}
home_deg: [0, 90, -90, -45, 0]
gripper: {open_deg: 60, closed_deg: 0, max_speed_deg_s: 180}
"""


def write_roll_arm(folder: Path) -> Path:
    """The arm file in ``folder``: its path."""
    path = Path(folder) / "rollarm.yaml"
    path.write_text(ROLL_ARM_YAML)
    return path
