"""``--teleop.type=armctl``: an armctl leader arm as a LeRobot teleoperator (``ArmctlTeleop``)."""

from __future__ import annotations

from dataclasses import dataclass

from lerobot.teleoperators.config import TeleoperatorConfig


@TeleoperatorConfig.register_subclass("armctl")
@dataclass
class ArmctlTeleopConfig(TeleoperatorConfig):
    """``arm``: the leader's model (bus servos moved by hand; default so101); ``port``: its port (a device path, or
    ``feetechsim://?hand=FILE.csv`` for a simulated one moved by a scripted hand); ``calibration``: its calibration
    (armctl's YAML, ``lerobot:ID`` or LeRobot's JSON; empty: armctl's places). ``follower_arm`` and
    ``follower_calibration``: the robot's (empty: the leader's model, armctl's calibration of it), whose
    ``<joint>.pos`` the actions are; ``map``: ``joints`` (the same model) or ``tool`` (any pair: the tool point,
    scaled by the reach ratio; empty: joints for the same model, else tool).

    ``gamepad``: a gamepad as the leader instead (SDL: ``pip install 'armctl[gamepad]'``): its SDL device index
    (``0``) or a part of its name; no ``port`` then. Its sticks move the follower (``follower_arm``, else ``arm``)
    from where it stands (the armctl robot of this process; else its home), ``gamepad_speed_mm_s`` at full
    deflection (the mapping: ``armctl jog --help``).

    ``keyboard``: the terminal's keys as the leader instead (``armctl.teleop.keypad``: arrows x/y, PgUp/PgDn z, ``,``
    ``.`` tool angle, ``;`` ``'`` roll, ``c``/``o`` gripper, ``m`` joint/Cartesian mode), moving the follower as the
    gamepad does, a held key at ``gamepad_speed_mm_s``."""

    port: str = ""
    arm: str = "so101"
    calibration: str | None = None
    follower_arm: str | None = None
    follower_calibration: str | None = None
    map: str | None = None
    gamepad: str | None = None
    keyboard: bool = False
    gamepad_speed_mm_s: float = 50.0
