"""Closed-form IK of a chain on one branch, vectorised over many points: the exact poses a line passes
through (``armctl.motion``) and the free tool angle's search (``armctl.ik.redundancy``) share it.

SI units: metres, radians.
"""

from __future__ import annotations

import math

import numpy as np

from armctl.model.arm import Arm
from armctl.model.hand import hand_link
from armctl.model.kinematics import annulus_excess, base_split_batch, joint_angles, shoulder_uv, two_link_batch, wrap


def branch_ik(arm: Arm, points_m, phi_rad, elbow: float):
    """Closed-form IK for many tool points on one elbow branch.

    ``points_m`` (K, 2) m; ``phi_rad`` (K,) tool angles (3-link arms) or None.
    Returns (q (K, n) rad, each angle wrapped to (-pi, pi]; excess (K,) m, the
    distance outside the reach annulus, <= 0 when reachable).
    """
    return planar_branch_ik(arm.links_m, points_m, phi_rad, elbow)


def planar_branch_ik(links, points_m, phi_rad, elbow: float):
    p = np.asarray(points_m, dtype=float)
    x, y = p[:, 0], p[:, 1]
    if len(links) != 2:  # the wrist point, solved by the first two links
        phi = np.asarray(phi_rad, dtype=float)
        x = x - links[2] * np.cos(phi)
        y = y - links[2] * np.sin(phi)
    l1, l2 = links[0], links[1]
    _, ((q1, q2),) = two_link_batch(l1, l2, x, y, (elbow,), snap=0.0)
    excess = annulus_excess(np.sqrt(x * x + y * y), abs(l1 - l2), l1 + l2)
    q = np.stack([q1, q2] if len(links) == 2 else [q1, q2, phi - q1 - q2], axis=-1)
    return wrap(q), excess


def elbow_of(q) -> float:
    return 1.0 if q[1] >= 0.0 else -1.0


def arm_branch_ik(arm: Arm, points_m, phi_rad, side: float, elbow: float, base_ref: float = 0.0, roll=None):
    """Closed-form IK for many tool points of any arm on one branch, vectorised.

    ``points_m`` (K, dim) m; ``phi_rad`` (K,) tool angles (3-link chains; on a base arm the pitch from the
    outward horizontal) or None; ``elbow`` the sign of the chain's serial elbow angle; ``side`` on a base
    arm +1 for the base pointing at the point, -1 for half a turn from it (the chain reaching back over the
    axis). Points on the base axis take the base angle of their neighbours (else ``base_ref``).
    Returns (q (K, n) rad, each angle wrapped to (-pi, pi]; excess (K,) m outside the chain's annulus).
    A planar serial arm is exactly ``branch_ik``. ``roll`` (rad, (K,) or one; None: 0): an arm with a wrist roll,
    its roll at each point (``roll_branch_ik``).
    """
    if arm.roll is not None:
        return roll_branch_ik(arm, points_m, phi_rad, side, elbow, base_ref, 0.0 if roll is None else roll)
    if not arm.layered:
        return planar_branch_ik(arm.links_m, points_m, phi_rad, elbow)
    p = np.asarray(points_m, dtype=float)
    base = None
    ph = phi_rad
    if arm.has_base:
        az, rho = base_split_batch(p[:, 0], p[:, 1])
        base = az + (0.0 if side > 0 else math.pi)
        axis = rho <= 1e-12
        if np.any(axis):
            base = _fill_axis(base, axis, base_ref)
        uv = np.stack(shoulder_uv(arm, side * rho, p[:, 2]), axis=-1)
        if phi_rad is not None and side < 0:
            ph = math.pi - np.asarray(phi_rad, dtype=float)
    else:
        uv = p
    c, excess = planar_branch_ik(arm.links_m, uv, ph, elbow)
    return wrap(joint_angles(arm, c, base)), excess


def roll_branch_ik(arm: Arm, points_m, phi_rad, side: float, elbow: float, base_ref: float, roll):
    """``arm_branch_ik`` for an arm with a wrist roll: at each point's roll the hand is a last link of its own length
    (an angle added to the last joint) and the tool sits beside the plane; that offset is taken off the point's yaw
    (``armctl.ik.roll``), the chain solves the rest in closed form. ``phi_rad`` the tool axis's pitch (K,); the
    poses (K, n) end with the roll."""
    p = np.asarray(points_m, dtype=float)
    r = np.broadcast_to(np.asarray(roll, dtype=float), (len(p),))
    length, delta, right = hand_link(arm.roll, float(arm.links_m[-1]), r)
    left = -right
    az, rho = base_split_batch(p[:, 0], p[:, 1])
    u = np.sqrt(np.maximum(rho * rho - left * left, 0.0))
    turn = np.arctan2(left, u)
    base = az - turn if side > 0 else az + turn + math.pi
    axis = rho <= 1e-12
    if np.any(axis):
        base = _fill_axis(base, axis, base_ref)
    uv = np.stack(shoulder_uv(arm, side * u, p[:, 2]), axis=-1)
    phi = np.asarray(phi_rad, dtype=float)
    a = arm.roll.axis_rad
    psi = (phi - a if side > 0 else math.pi - phi - a) + delta
    links = [float(arm.links_m[0]), float(arm.links_m[1]), length]
    c, excess = planar_branch_ik(links, uv, psi, elbow)
    c[:, -1] -= delta
    q = np.concatenate([base[:, None], c, r[:, None]], axis=-1)
    return wrap(q), excess


def _fill_axis(base, axis, ref: float):
    """Base angles where the point is on the base axis: the nearest earlier point's, else the next one's,
    else ``ref``."""
    idx = np.arange(len(base))
    fwd = np.maximum.accumulate(np.where(~axis, idx, -1))
    bwd = np.minimum.accumulate(np.where(~axis, idx, len(base))[::-1])[::-1]
    pick = np.where(fwd >= 0, fwd, bwd)
    out = np.where(pick < len(base), base[np.minimum(pick, len(base) - 1)], ref)
    return np.where(axis, out, base)
