"""Which LeRobot robot's calibration files an arm reads (``armctl.calibration.lerobot`` converts them), where LeRobot
keeps them, and the bus whose conventions their values follow.

LeRobot saves a robot's calibration as ``<root>/robots/<kind>/<id>.json`` (a follower) or
``<root>/teleoperators/<kind>/<id>.json`` (a leader): the SO arms' kinds are ``so_follower`` (LeRobot >= 0.4.3),
``so101_follower``, ``so100_follower`` and their leaders; the Koch v1.1's ``koch_follower`` and ``koch_leader``
(robots/koch_follower/koch_follower.py, teleoperators/koch_leader/koch_leader.py). The Koch's calibration
differs from the SO arms' in two ways armctl follows:

- its motors are Dynamixels: the Homing_Offset register adds (present = actual + offset, ``PROTOCOLS`` in
  ``armctl.model.servos``) and may hold -1,044,479..1,044,479, and ``drive_mode`` is the servo's own Drive_Mode
  (the leader's elbow_flex is reversed in the servo: its positions already count the other way, and LeRobot's
  DynamixelMotorsBus applies nothing in software);
- ``shoulder_pan`` and ``wrist_roll`` are never swept: LeRobot records 0..4095 for them (``full_turn_motors``),
  their zero the middle, where they stood when the offsets were set.

LeRobot's ``omx_follower``/``omx_leader`` are ROBOTIS' OMX AI arms (XL430/XL330, five joints), not the
OpenManipulator-X (XM430, four): the omx preset reads no LeRobot calibration.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from armctl.errors import ConfigError
from armctl.model.servos import PROTOCOLS, BusProtocol


@dataclass(frozen=True)
class LerobotRobot:
    """A LeRobot robot armctl's arms read calibrations of: ``what`` it is (for messages), the ``kinds`` (folder-name
    prefixes) its files are saved under, the ``subdirs`` ``lerobot:ID`` looks in (in order), and its
    ``full_turn`` motors (recorded 0..4095, never swept)."""

    what: str
    kinds: tuple[str, ...]
    subdirs: tuple[str, ...]
    full_turn: tuple[str, ...] = ()


SO = LerobotRobot(
    "an SO-100/SO-101 arm",
    ("so_", "so100_", "so101_"),
    (
        "robots/so_follower",
        "robots/so101_follower",
        "robots/so100_follower",
        "teleoperators/so_leader",
        "teleoperators/so101_leader",
        "teleoperators/so100_leader",
    ),
)
KOCH = LerobotRobot(
    "a Koch v1.1 arm",
    ("koch_",),
    ("robots/koch_follower", "teleoperators/koch_leader"),
    ("shoulder_pan", "wrist_roll"),
)
NONE = LerobotRobot("an OpenManipulator-X (LeRobot's omx_follower is ROBOTIS' OMX AI arm, another robot)", (), ())
#: the arms (by preset name) whose LeRobot robot is not an SO arm
ROBOTS = {"koch": KOCH, "koch-leader": KOCH, "omx": NONE}


def lerobot_robot(arm) -> LerobotRobot:
    """The LeRobot robot whose calibrations ``arm`` reads (an SO arm unless ``ROBOTS`` names it)."""
    return ROBOTS.get(getattr(arm, "name", ""), SO)


def bus_protocol(arm) -> BusProtocol:
    """The bus protocol of ``arm``'s servos (``Drive.protocol``; Feetech when the arm names none, as LeRobot's SO
    arms are)."""
    drive = getattr(arm, "drive", None)
    return PROTOCOLS[getattr(drive, "protocol", None) or "feetech"]


def check_kind(arm, path: Path) -> None:
    """ConfigError (one line) when ``path`` lies where LeRobot keeps another robot's calibrations."""
    kind = path.parent.name
    robot = lerobot_robot(arm)
    if path.parent.parent.name in ("robots", "teleoperators") and not kind.startswith(robot.kinds or ("\0",)):
        where = f" ({robot.subdirs[0]}/...)" if robot.subdirs else ""
        raise ConfigError(f"a calibration of LeRobot's {kind}, not of {robot.what}{where}", path=path)


def check_homing(arm, name: str, offset: int, path: Path) -> None:
    """ConfigError when a motor's ``homing_offset`` is beyond what the arm's servos' register holds."""
    proto = bus_protocol(arm)
    if abs(offset) > proto.homing_max:
        raise ConfigError(
            f"{name}.homing_offset {offset}: the {proto.name} servos of arm {arm.name!r} hold "
            f"-{proto.homing_max}..{proto.homing_max}",
            path=path,
        )
