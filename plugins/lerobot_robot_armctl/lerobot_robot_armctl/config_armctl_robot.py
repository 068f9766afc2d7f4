"""``--robot.type=armctl``: any armctl arm as a LeRobot robot (``lerobot_robot_armctl.ArmctlRobot``)."""

from __future__ import annotations

from dataclasses import dataclass, field

from lerobot.cameras import CameraConfig
from lerobot.robots.config import RobotConfig


@RobotConfig.register_subclass("armctl")
@dataclass
class ArmctlRobotConfig(RobotConfig):
    """``arm``: an armctl preset (so101, mearm, eezybot-mk2, braccio, seed-2link, seed-3link) or an arm file (YAML,
    URDF); ``port``: a device path or URL (armsim://, feetechsim://, pca9685sim://, socket://...; empty: the
    simulator armctl uses with no port); ``calibration``: armctl's calibration file, ``lerobot:ID`` or LeRobot's
    JSON (empty: armctl's places, else the preset's example); ``backend``: armctl, firmata, feetech, pca9685 (empty:
    from the calibration); ``cameras``: LeRobot's camera configs; ``map``: ``joints`` (``<joint>.pos`` actions) or
    ``tool`` (``x``, ``y``, ``z`` m, ``pitch``, ``roll`` deg, ``gripper`` 0..100); ``rate_hz``: armctl's follow
    loop (steps towards the latest action within the speed limits)."""

    arm: str = "so101"
    port: str | None = None
    calibration: str | None = None
    backend: str | None = None
    cameras: dict[str, CameraConfig] = field(default_factory=dict)
    map: str = "joints"
    rate_hz: float = 50.0
