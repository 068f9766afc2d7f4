"""The wrist roll: a joint after the pitch chain that turns the hand about the tool axis (the SO-101's
``wrist_roll``), and where it puts the tool point and the jaws.

The hand is fixed to the chain's last link. Its frame L at roll 0: x along the last link (from the last pitch
joint's axis to the tool point, the direction the chain's last angle measures), y the normal to x in the arm's
plane (up when the link points out level), z = x cross y (the arm's right, beside the plane). The roll axis lies
in the plane at ``axis_rad`` from x (the tool axis: its pitch is the tool's pitch); the tool point sits
``offset`` off that axis (``offset_up_m`` along the axis's in-plane normal, ``offset_right_m`` beside the plane)
and ``lateral_m`` beside the plane at roll 0. Turning the roll by r turns that offset about the axis
(right-handed about the tool axis pointing away from the wrist), so the tool point at roll r is, in L::

    T(r) = (l, 0, lateral) + (cos r - 1) e + sin r (a x e)

with ``l`` the last link's length, ``a`` the axis and ``e`` the offset. A tool point on the axis (the usual
hobby wrist) never moves with the roll. ``hand_point`` gives T(r); everything else asks it: the tool point
(``armctl.model.kinematics``), the IK at a roll (``armctl.ik.roll``). The jaws close along the tool frame's y
axis, which at roll 0 is the arm's left turned by ``jaw_rad`` about the tool axis.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Roll:
    """A wrist roll joint's geometry (its limits, speed and home are the arm's last joint's)."""

    name: str = "wrist_roll"
    axis_rad: float = 0.0  # the roll (tool) axis from the last link's direction, in the arm's plane
    offset_up_m: float = 0.0  # the tool point off the axis at roll 0: along the axis's in-plane normal
    offset_right_m: float = 0.0  # ... and beside the plane (the arm's right)
    lateral_m: float = 0.0  # the tool point beside the plane at roll 0 (right)
    jaw_rad: float = 0.0  # the jaws' closing line at roll 0: the arm's left turned this far about the tool axis

    @property
    def on_axis(self) -> bool:
        """True if the tool point lies on the roll axis (the roll never moves it)."""
        return self.offset_up_m == 0.0 and self.offset_right_m == 0.0 and self.lateral_m == 0.0

    @property
    def offset_m(self) -> float:
        """How far the tool point lies off the roll axis (m)."""
        return math.hypot(self.offset_up_m, self.offset_right_m)


def hand_point(roll: Roll, link_m: float, r):
    """The tool point in the hand frame L at roll angles ``r`` (rad, any shape): (x, y, z) arrays of that shape."""
    r = np.asarray(r, dtype=float)
    ca, sa = math.cos(roll.axis_rad), math.sin(roll.axis_rad)
    up, right = roll.offset_up_m, roll.offset_right_m
    c1, s = np.cos(r) - 1.0, np.sin(r)
    along_normal = c1 * up - s * right  # along the axis's in-plane normal (-sin a, cos a, 0)
    beside = c1 * right + s * up  # along z
    return link_m - sa * along_normal, ca * along_normal, roll.lateral_m + beside


def hand_link(roll: Roll, link_m: float, r):
    """The last link as the chain sees it at roll ``r``: (length (m), angle added to the last joint (rad), the
    tool beside the plane (m, right)); arrays of ``r``'s shape."""
    x, y, z = hand_point(roll, link_m, r)
    return np.hypot(x, y), np.arctan2(y, x), z


def jaw_yaw_roll(roll: Roll, base_rad: float, yaw_rad: float) -> float:
    """The roll (rad) that puts the jaws' closing line at table yaw ``yaw_rad`` with the tool pointing straight
    down and the base at ``base_rad`` (one of the two: the line has no direction; ``armctl.ik.roll`` picks)."""
    return math.remainder(base_rad + math.pi / 2 - roll.jaw_rad - yaw_rad, 2 * math.pi)


def describe_roll(roll: Roll) -> dict:
    """The hand's geometry in an arm file's units (``armctl workspace --json`` key ``roll``)."""
    return {
        "joint": roll.name,
        "axis_deg": math.degrees(roll.axis_rad),
        "tool_offset_mm": [roll.offset_up_m * 1000, roll.offset_right_m * 1000],
        "tool_beside_plane_mm": roll.lateral_m * 1000,
        "jaw_deg": math.degrees(roll.jaw_rad),
    }


def roll_line(roll: Roll) -> str:
    """The hand's geometry as one line of ``armctl workspace``."""
    return (
        f"wrist roll {roll.name}: its axis {math.degrees(roll.axis_rad):+.2f} deg from the last link (up); the tool "
        f"{roll.offset_m * 1000:.2f} mm off it (up {roll.offset_up_m * 1000:+.2f}, right "
        f"{roll.offset_right_m * 1000:+.2f} mm) and {roll.lateral_m * 1000:+.3f} mm beside the plane at roll 0; "
        f"jaws {math.degrees(roll.jaw_rad):+.1f} deg from the arm's left"
    )
