"""Any armctl arm as a LeRobot robot: ``--robot.type=armctl --robot.arm=mearm --robot.port=...``.

LeRobot imports this package at start (``register_third_party_plugins``: distributions named ``lerobot_robot_*``),
which registers the config type ``armctl`` (``ArmctlRobotConfig``); ``make_robot_from_config`` then finds
``ArmctlRobot`` here by the config's class name. The camera config type ``armctl`` (``ArmctlCameraConfig``: any
source ``armctl --camera`` opens, e.g. the simulated ``simcam://``) is registered with it.
"""

from .actions import ActionSource
from .armctl_camera import ArmctlCamera, ArmctlCameraConfig
from .armctl_robot import ArmctlRobot
from .config_armctl_robot import ArmctlRobotConfig

__all__ = ["ActionSource", "ArmctlCamera", "ArmctlCameraConfig", "ArmctlRobot", "ArmctlRobotConfig"]
