"""An arm as a URDF, with its masses: so pinocchio, MuJoCo or RViz can check armctl's statics and kinematics.

Serial arms only, with or without a base and a wrist roll. Every joint is a revolute joint named as armctl names it,
its URDF angle armctl's angle (no offset, no sign), its limits and speed armctl's, its effort the servo's rated stall
torque. At the zero pose every link's frame is parallel to the arm's frame (x along the arm, z up; no ``rpy``):

- on a base: ``base_link`` (the table) -> the base joint (axis +z) -> ``<base>_link`` (the turret) -> the shoulder
  joint at (base_offset_m, 0, shoulder_height_m), each pitch joint ``links_m`` further along x, their axes -y (a
  positive angle lifts the arm) -> a roll joint at the foot of the roll axis on it (its axis the roll axis) ->
  ``tool_link`` (fixed) at the tool point;
- a planar arm from an arm file works in the level plane: every joint's axis +z, the links along x; one derived
  from a URDF in its vertical plane (x along it, z up: the axes -y).

Each link's ``<inertial>`` lumps the bodies riding on it (``armctl.model.statics.arm_bodies``: a URDF's, or the
arm file's estimates): their total mass at their centre of mass, and the inertia their point masses have about it
(sum m (|r|^2 I - r r^T)), so the URDF carries exactly the point masses armctl computes with. A parallelogram arm
is refused: its forearm's servo drives the forearm through a closed linkage, which a URDF tree cannot write.
"""

from __future__ import annotations

from xml.sax.saxutils import escape, quoteattr

import numpy as np

from armctl.errors import BadInputError
from armctl.model.statics import (
    HAND,
    arm_bodies,
    body_points,
    body_rotations,
    level_plane,
    roll_foot,
    segment_frames,
    tool_xyz,
)

TOOL_LINK = "tool_link"
ROOT_LINK = "base_link"
_UNLIMITED_EFFORT_NM = 100.0  # a joint without a servo: URDF needs an effort; nothing in armctl reads it back


def _num(v: float) -> str:
    return f"{float(v) + 0.0:.9g}"


def _vec(v) -> str:
    return " ".join(_num(x) for x in v)


def _link_names(arm) -> dict:
    """{segment: URDF link name} of the segments that move."""
    names = arm.joint_names
    out = {0: f"{names[0]}_turret_link" if arm.has_base else ROOT_LINK}
    for k in range(arm.n_links):
        out[k + 1] = f"{names[arm.chain_start + k]}_link"
    if arm.roll is not None:
        out[HAND] = f"{names[-1]}_link"
    taken = {ROOT_LINK, TOOL_LINK} if arm.has_base else {TOOL_LINK}
    for seg, name in out.items():  # joint names are the arm file's own: keep the link names apart
        if seg == 0 and not arm.has_base:
            continue
        while name in taken:
            name += "_"
        out[seg] = name
        taken.add(name)
    return out


def _origins(arm) -> tuple[dict, np.ndarray | None]:
    """({segment: its link frame's origin (m) at the zero pose}, the roll axis (unit, arm frame) or None)."""
    frames = segment_frames(arm, np.zeros(arm.n))
    out = {seg: o.copy() for seg, (_, o) in frames.items()}
    axis = None
    if arm.roll is not None:
        R, o = frames[arm.n_links]
        foot, local_axis = roll_foot(arm)
        out[HAND] = o + R @ foot
        axis = R @ local_axis
    return out, axis


def _inertial(bodies, points, turning, origin) -> str:
    """The ``<inertial>`` of ``bodies`` with their centres at ``points`` (m, arm frame, zero pose) and their own
    rotational inertias ``turning`` ((b, 3, 3), arm frame at the zero pose; zeros for point masses), relative to a
    link whose frame sits at ``origin`` parallel to the arm's frame; '' for no mass."""
    m = np.array([b.mass_kg for b in bodies], dtype=float)
    total = float(m.sum()) if len(m) else 0.0
    if total <= 0.0:
        return ""
    r = np.asarray(points, dtype=float) - origin
    com = (m @ r) / total
    d = r - com
    parallel = np.einsum("bk,bk->b", d, d)[:, None, None] * np.eye(3) - d[:, :, None] * d[:, None, :]
    inertia = np.einsum("b,bij->ij", m, parallel) + np.sum(turning, axis=0)
    ixx, iyy, izz, ixy, ixz, iyz = (
        inertia[0, 0],
        inertia[1, 1],
        inertia[2, 2],
        inertia[0, 1],
        inertia[0, 2],
        inertia[1, 2],
    )
    return (
        f'    <inertial>\n      <origin xyz="{_vec(com)}" rpy="0 0 0"/>\n      <mass value="{_num(total)}"/>\n'
        f'      <inertia ixx="{_num(ixx)}" ixy="{_num(ixy)}" ixz="{_num(ixz)}" iyy="{_num(iyy)}" iyz="{_num(iyz)}" '
        f'izz="{_num(izz)}"/>\n    </inertial>\n'
    )


def _turning_at_zero(arm, bodies) -> np.ndarray:
    """Each body's own rotational inertia (b, 3, 3) in the arm's frame at the zero pose (zeros: a point mass)."""
    out = np.zeros((len(bodies), 3, 3))
    which = [i for i, b in enumerate(bodies) if b.inertia is not None]
    if which:
        R = body_rotations(arm, np.zeros(arm.n), which)
        out[which] = R @ np.array([bodies[i].inertia for i in which], dtype=float) @ np.swapaxes(R, -1, -2)
    return out


def _joint(arm, i: int, parent: str, child: str, xyz, axis) -> str:
    servo = arm.drive.servo(i)
    effort = _UNLIMITED_EFFORT_NM if servo is None else servo.stall_nm
    return (
        f'  <joint name={quoteattr(arm.joint_names[i])} type="revolute">\n'
        f"    <parent link={quoteattr(parent)}/>\n    <child link={quoteattr(child)}/>\n"
        f'    <origin xyz="{_vec(xyz)}" rpy="0 0 0"/>\n    <axis xyz="{_vec(axis)}"/>\n'
        f'    <limit lower="{_num(arm.q_min[i])}" upper="{_num(arm.q_max[i])}" effort="{_num(effort)}" '
        f'velocity="{_num(arm.max_speed_rad_s[i])}"/>\n  </joint>\n'
    )


def _chain_joints(arm, links: dict, origins: dict, roll_axis) -> list[str]:
    """The revolute joints, base first, with their parents and origins (relative to the parent's frame)."""
    pitch = (0.0, 0.0, 1.0) if level_plane(arm) else (0.0, -1.0, 0.0)
    out = []
    if arm.has_base:
        out.append(_joint(arm, 0, ROOT_LINK, links[0], (0.0, 0.0, 0.0), (0.0, 0.0, 1.0)))
    for k in range(arm.n_links):
        parent = k  # segment k carries joint k+1
        xyz = origins[k + 1] - origins[parent]
        out.append(_joint(arm, arm.chain_start + k, links[parent], links[k + 1], xyz, pitch))
    if arm.roll is not None:
        xyz = origins[HAND] - origins[arm.n_links]
        out.append(_joint(arm, arm.n - 1, links[arm.n_links], links[HAND], xyz, roll_axis))
    return out


def urdf_text(arm, *, source: str | None = None) -> str:
    """The URDF (text) of a serial ``arm``, with its masses (see the module's docstring); BadInputError for a
    parallelogram arm."""
    if arm.parallelogram:
        raise BadInputError(
            f"arm {arm.name!r} is a parallelogram: its forearm's servo drives the forearm through a closed linkage, "
            "which a URDF tree cannot write (serial arms only)"
        )
    bodies, _, estimated = arm_bodies(arm)
    q0 = np.zeros(arm.n)
    points = body_points(arm, q0)
    links = _link_names(arm)
    origins, roll_axis = _origins(arm)
    tool = tool_xyz(arm, q0)
    last = HAND if arm.roll is not None else arm.n_links
    masses = "estimated from the arm file (armctl.model.statics.arm_bodies)" if estimated else "from its URDF"
    parts = [
        '<?xml version="1.0"?>\n',
        f"<!-- written by armctl from {escape(source or arm.source)}: angles as armctl's, masses {masses}; each link's "
        "inertia is that of the point masses it carries -->\n",
        f"<robot name={quoteattr(arm.name)}>\n",
    ]
    if arm.has_base:
        parts.append(f"  <link name={quoteattr(ROOT_LINK)}/>\n")
    turning = _turning_at_zero(arm, bodies)
    for seg, name in links.items():
        on = [i for i, b in enumerate(bodies) if b.segment == seg]
        inertial = _inertial([bodies[i] for i in on], points[on], turning[on], origins[seg])
        parts.append(
            f"  <link name={quoteattr(name)}>\n{inertial}  </link>\n"
            if inertial
            else f"  <link name={quoteattr(name)}/>\n"
        )
    parts.append(f"  <link name={quoteattr(TOOL_LINK)}/>\n")
    parts += _chain_joints(arm, links, origins, roll_axis)
    parts.append(
        f'  <joint name="tool" type="fixed">\n    <parent link={quoteattr(links[last])}/>\n'
        f"    <child link={quoteattr(TOOL_LINK)}/>\n"
        f'    <origin xyz="{_vec(tool - origins[last])}" rpy="0 0 0"/>\n  </joint>\n'
    )
    parts.append("</robot>\n")
    return "".join(parts)
