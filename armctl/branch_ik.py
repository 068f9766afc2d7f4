"""Closed-form IK of a chain on one branch, vectorised over many points: the exact poses a line passes
through (``armctl.motion``) and the free tool angle's search (``armctl.redundancy``) share it.

SI units: metres, radians.
"""

from __future__ import annotations

import math

import numpy as np

from .arm import Arm
from .kinematics import joint_angles

TWO_PI = 2.0 * math.pi


def _ik_two_link(l1: float, l2: float, x, y, elbow: float):
    """Closed-form 2-link IK on the elbow branch ``elbow`` (+1/-1), vectorised.

    Returns (q1, q2, excess): ``excess`` > 0 where the point is out of reach,
    by how much (m, radial); those points get the nearest reachable solution.
    """
    r2 = x * x + y * y
    r = np.sqrt(r2)
    excess = np.maximum(r - (l1 + l2), abs(l1 - l2) - r)
    c2 = np.clip((r2 - l1 * l1 - l2 * l2) / (2.0 * l1 * l2), -1.0, 1.0)
    q2 = elbow * np.arccos(c2)
    q1 = np.arctan2(y, x) - np.arctan2(l2 * np.sin(q2), l1 + l2 * np.cos(q2))
    return q1, q2, excess


def branch_ik(arm: Arm, points_m, phi_rad, elbow: float):
    """Closed-form IK for many tool points on one elbow branch.

    ``points_m`` (K, 2) m; ``phi_rad`` (K,) tool angles (3-link arms) or None.
    Returns (q (K, n) rad, each angle wrapped to (-pi, pi]; excess (K,) m, the
    distance outside the reach annulus, <= 0 when reachable).
    """
    return _branch_ik(arm.links_m, points_m, phi_rad, elbow)


def _branch_ik(links, points_m, phi_rad, elbow: float):
    p = np.asarray(points_m, dtype=float)
    if len(links) == 2:
        q1, q2, excess = _ik_two_link(links[0], links[1], p[:, 0], p[:, 1], elbow)
        q = np.stack([q1, q2], axis=-1)
    else:
        phi = np.asarray(phi_rad, dtype=float)
        wx = p[:, 0] - links[2] * np.cos(phi)
        wy = p[:, 1] - links[2] * np.sin(phi)
        q1, q2, excess = _ik_two_link(links[0], links[1], wx, wy, elbow)
        q = np.stack([q1, q2, phi - q1 - q2], axis=-1)
    return _wrap(q), excess


def _wrap(a):
    return (np.asarray(a) + math.pi) % TWO_PI - math.pi


def _elbow_of(q) -> float:
    return 1.0 if q[1] >= 0.0 else -1.0


def arm_branch_ik(arm: Arm, points_m, phi_rad, side: float, elbow: float, base_ref: float = 0.0):
    """Closed-form IK for many tool points of any arm on one branch, vectorised.

    ``points_m`` (K, dim) m; ``phi_rad`` (K,) tool angles (3-link chains; on a base arm the pitch from the
    outward horizontal) or None; ``elbow`` the sign of the chain's serial elbow angle; ``side`` on a base
    arm +1 for the base pointing at the point, -1 for half a turn from it (the chain reaching back over the
    axis). Points on the base axis take the base angle of their neighbours (else ``base_ref``).
    Returns (q (K, n) rad, each angle wrapped to (-pi, pi]; excess (K,) m outside the chain's annulus).
    A planar serial arm is exactly ``branch_ik``.
    """
    if not arm.layered:
        return _branch_ik(arm.links_m, points_m, phi_rad, elbow)
    p = np.asarray(points_m, dtype=float)
    base = None
    ph = phi_rad
    if arm.has_base:
        rho = np.hypot(p[:, 0], p[:, 1])
        base = np.arctan2(p[:, 1], p[:, 0]) + (0.0 if side > 0 else math.pi)
        axis = rho <= 1e-12
        if np.any(axis):
            base = _fill_axis(base, axis, base_ref)
        uv = np.stack([side * rho - arm.base_offset_m, p[:, 2] - arm.shoulder_height_m], axis=-1)
        if phi_rad is not None and side < 0:
            ph = math.pi - np.asarray(phi_rad, dtype=float)
    else:
        uv = p
    c, excess = _branch_ik(arm.links_m, uv, ph, elbow)
    return _wrap(joint_angles(arm, c, base)), excess


def _fill_axis(base, axis, ref: float):
    """Base angles where the point is on the base axis: the nearest earlier point's, else the next one's,
    else ``ref``."""
    idx = np.arange(len(base))
    fwd = np.maximum.accumulate(np.where(~axis, idx, -1))
    bwd = np.minimum.accumulate(np.where(~axis, idx, len(base))[::-1])[::-1]
    pick = np.where(fwd >= 0, fwd, bwd)
    out = np.where(pick < len(base), base[np.minimum(pick, len(base) - 1)], ref)
    return np.where(axis, out, base)
