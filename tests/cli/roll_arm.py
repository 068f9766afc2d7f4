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

# hobby servos on our board (the simulated one: armsim://), the roll's at 5 us/deg for its 320 deg
ROLL_CAL_YAML = """\
version: 1
arm: rollarm
joints:
  - {name: pan, channel: 0, pin: 3, zero_us: 1500, us_per_deg: 7.4, direction: 1, min_us: 600, max_us: 2400}
  - {name: lift, channel: 1, pin: 5, zero_us: 800, us_per_deg: 7, direction: 1, min_us: 600, max_us: 2300}
  - {name: elbow, channel: 2, pin: 6, zero_us: 2200, us_per_deg: 7, direction: 1, min_us: 900, max_us: 2400}
  - {name: flex, channel: 3, pin: 9, zero_us: 1500, us_per_deg: 7.4, direction: 1, min_us: 600, max_us: 2400}
  - {name: wrist_roll, channel: 4, pin: 10, zero_us: 1500, us_per_deg: 5, direction: 1, min_us: 600, max_us: 2400}
gripper: {name: gripper, channel: 5, pin: 11, zero_us: 1200, us_per_deg: 10, direction: 1, min_us: 1150, max_us: 1850}
"""


def write_roll_arm(folder: Path) -> Path:
    """The arm file in ``folder`` (and its calibration beside it, ``rollcal.yaml``): the arm file's path."""
    path = Path(folder) / "rollarm.yaml"
    path.write_text(ROLL_ARM_YAML)
    (Path(folder) / "rollcal.yaml").write_text(ROLL_CAL_YAML)
    return path
