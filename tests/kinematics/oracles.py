"""Slow, obviously right answers the kinematics tests check armctl's fast ones against."""

from __future__ import annotations

import numpy as np


def fd_jacobian(f, q, h: float = 1e-6) -> np.ndarray:
    """Central finite-difference Jacobian of ``f`` (joint angles (..., n) -> points (..., d)) at ``q`` with step
    ``h`` (rad): shape (..., d, n)."""
    q = np.asarray(q, dtype=float)
    return np.stack([(f(q + h * e) - f(q - h * e)) / (2.0 * h) for e in np.eye(q.shape[-1])], axis=-1)


def urdf_fk_disagreement(arm, robot, qs) -> tuple[float, float]:
    """(max position error m, max orientation error deg) of an arm derived from a URDF against an independent FK of
    its tool link (``robot``: a yourdfpy URDF, meshes off) over poses ``qs``, through the derivation's frame shift:
    the tool point and ``tool_pose``'s translation against the link's origin; on an arm with a wrist roll, the tool
    frame through the derivation's one constant rotation (``tool_frame_R``) too (0 deg otherwise)."""
    import math

    from armctl.model.urdf.derive import urdf_angles

    names = robot.actuated_joint_names
    d = arm.urdf
    pos = ang = 0.0
    for q in qs:
        urdf_q = urdf_angles(arm, q)
        robot.update_cfg(np.array([urdf_q.get(n, 0.0) for n in names]))
        T = robot.get_transform(d.tool_link, robot.base_link)
        pose = arm.tool_pose(q)
        p = d.to_urdf_point(arm.tool_point(q))
        pos = max(pos, float(np.linalg.norm(p - T[:3, 3])), float(np.linalg.norm(d.to_urdf_point(pose[:3, 3]) - p)))
        if d.tool_frame_R is not None:
            # armctl's frame to the URDF's: the identity if they agree
            M = (pose[:3, :3] @ d.tool_frame_R).T @ T[:3, :3]
            sin = np.linalg.norm([M[2, 1] - M[1, 2], M[0, 2] - M[2, 0], M[1, 0] - M[0, 1]]) / 2.0
            ang = max(ang, math.degrees(math.atan2(sin, (np.trace(M) - 1.0) / 2.0)))
    return pos, ang
