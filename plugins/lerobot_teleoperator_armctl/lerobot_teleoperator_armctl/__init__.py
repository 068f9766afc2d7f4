"""Any armctl leader arm as a LeRobot teleoperator: ``--teleop.type=armctl --teleop.port=...``.

LeRobot imports this package at start (``register_third_party_plugins``: distributions named
``lerobot_teleoperator_*``), which registers the config type ``armctl`` (``ArmctlTeleopConfig``).
"""

from .armctl_teleop import ArmctlTeleop
from .config_armctl_teleop import ArmctlTeleopConfig

__all__ = ["ArmctlTeleop", "ArmctlTeleopConfig"]
