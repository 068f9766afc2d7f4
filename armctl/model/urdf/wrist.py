"""The wrist roll of an arm from a URDF (``armctl.model.urdf.derive.urdf_spec`` calls ``hand_roll`` once the chain's
links are known): the hand's geometry as ``armctl.model.hand.Roll`` gives it, worked out at the URDF's zero pose.

The roll joint is the chain's last moving joint, after the pitch joints, its axis in the arm's plane
(``armctl.model.urdf.chain.sort_axes``). The hand frame L is fixed to the last link at roll 0: x the direction in
the plane from the last pitch axis to the tool point, y its normal in the plane (u outward, v up: x turned a
quarter turn counter-clockwise), z = x cross y (the arm's right: the plane's w). Then

- ``axis_rad``: the roll axis's angle from x in the plane, the axis pointing away from the wrist (toward the tool);
  armctl's roll angle = sign * URDF angle, sign +1 when the URDF's axis points that way;
- ``offset_up_m``, ``offset_right_m``: the tool point off the roll axis at roll 0, along the axis's in-plane normal
  (-sin a, cos a, 0) in L and along z; ``lateral_m``: the tool beside the plane through the base axis at roll 0;
- ``jaw_rad``: the angle about the tool axis from the arm's left (-z) to the jaws' closing line, which is
  perpendicular to the gripper joint's axis and to the tool axis (of its two directions the one nearest the left);
  0 with no gripper joint under the roll.

Everything is exact: the hand is one rigid body turning about the roll axis, the chain before it is the model's.
"""

from __future__ import annotations

import math

import numpy as np

from armctl.model.hand import Roll
from armctl.model.urdf.chain import AXIS_TOL_RAD, Axes, Chain, Z, zero_frame
from armctl.model.urdf.parse import joint_origin, sidecar_path

ROLL_AXIS_MAX_RAD = math.radians(45.0)  # the roll axis runs along the last link (an arm file's roll: axis_deg)


def hand_roll(chain: Chain, axes: Axes, plane, tool_p, last_link_uv, held_deg: dict) -> tuple[Roll, int]:
    """(the hand's ``Roll``, the sign of armctl's roll angle against the URDF's) of the chain's roll joint;
    ``plane`` the arm's plane (u, w, tool_lateral), ``last_link_uv`` the last link's vector in it at the zero pose."""
    j, d, point = axes.roll
    lu, lv = np.asarray(last_link_uv, dtype=float) / float(np.hypot(*last_link_uv))
    u, w = np.asarray(plane.u), np.asarray(plane.w)
    x, y = lu * u + lv * Z, -lv * u + lu * Z
    sign = 1 if d @ x > 0 else -1
    a = sign * d
    alpha = math.atan2(float(a @ y), float(a @ x))
    if abs(alpha) > ROLL_AXIS_MAX_RAD:
        raise chain.tree.refuse(
            f"joint {j.name!r}: a wrist roll's axis runs along the last link (within 45 deg); its axis is "
            f"{math.degrees(abs(alpha)):.1f} deg from it (hold it with held_joints in "
            f"{sidecar_path(chain.tree.path).name})"
        )
    rel = np.asarray(tool_p, dtype=float) - point
    e = rel - (rel @ a) * a
    n = -math.sin(alpha) * x + math.cos(alpha) * y
    roll = Roll(
        name=j.name,
        axis_rad=alpha,
        offset_up_m=float(e @ n),
        offset_right_m=float(e @ w),
        lateral_m=float(plane.tool_lateral),
        jaw_rad=_jaw(chain, j.name, a, -w, held_deg),
    )
    return roll, sign


def check_roll_arm(chain: Chain, axes: Axes, n_links: int, linkage: str) -> None:
    """A wrist roll needs a base and a 3-link serial chain (as an arm file's ``roll:``)."""
    if axes.base is None or n_links != 3 or linkage != "serial":
        name = axes.roll[0].name
        raise chain.tree.refuse(
            f"joint {name!r} (a wrist roll) needs a base and a 3-link serial chain (base, shoulder, elbow, wrist); "
            f"hold it with held_joints in {sidecar_path(chain.tree.path).name}"
        )


def _jaw(chain: Chain, roll_name: str, a, left, held_deg: dict) -> float:
    """The angle (rad) about the tool axis ``a`` from the arm's ``left`` to the jaws' closing line: perpendicular to
    the gripper joint's axis and to ``a``; 0 without a gripper joint that the roll turns."""
    tree, grip = chain.tree, chain.grip_joint
    if grip is None or all(p.name != roll_name for p in tree.ancestors(tree.joints[grip].child)):
        return 0.0
    gj = tree.joints[grip]
    g = (zero_frame(tree, gj.parent, held_deg) @ joint_origin(gj))[:3, :3] @ np.asarray(gj.axis)
    c = np.cross(g, a)
    if np.linalg.norm(c) < math.sin(AXIS_TOL_RAD):  # jaws turning about the tool axis: no closing line to turn
        return 0.0
    th = math.atan2(float(c @ np.cross(a, left)), float(c @ left))
    if th > math.pi / 2:
        th -= math.pi
    elif th <= -math.pi / 2:
        th += math.pi
    return th
