"""Forward kinematics, Jacobians and manipulability of a planar serial arm.

Pure functions on numpy arrays. ``links`` is the (n,) link lengths in metres;
``q`` is joint angles in radians with shape (n,) or (..., n) for a batch.
Joint i is measured from link i-1 (joint 1 from the base x axis).
"""

from __future__ import annotations

import math

import numpy as np


def _abs_angles(q):
    return np.cumsum(np.asarray(q, dtype=float), axis=-1)


def fk(links, q) -> np.ndarray:
    """Tool point (x, y) in metres for joint angles ``q`` (rad); shape (..., 2)."""
    a = _abs_angles(q)
    links = np.asarray(links, dtype=float)
    return np.stack([np.sum(links * np.cos(a), axis=-1), np.sum(links * np.sin(a), axis=-1)], axis=-1)


def tool_angle(q) -> np.ndarray:
    """Tool angle phi (rad) from the base x axis: the sum of the joint angles."""
    return np.sum(np.asarray(q, dtype=float), axis=-1)


def joint_positions(links, q) -> np.ndarray:
    """Positions of the base, every joint and the tool; shape (..., n+1, 2), metres."""
    a = _abs_angles(q)
    links = np.asarray(links, dtype=float)
    steps = np.stack([links * np.cos(a), links * np.sin(a)], axis=-1)
    pts = np.cumsum(steps, axis=-2)
    zero = np.zeros(pts.shape[:-2] + (1, 2))
    return np.concatenate([zero, pts], axis=-2)


def jacobian(links, q) -> np.ndarray:
    """Analytic Jacobian d(x, y)/dq of the tool point; shape (..., 2, n), m/rad."""
    a = _abs_angles(q)
    links = np.asarray(links, dtype=float)
    # Column i sums the contributions of links i..n-1: a reversed cumulative sum.
    lc = links * np.cos(a)
    ls = links * np.sin(a)
    cx = np.flip(np.cumsum(np.flip(-ls, -1), axis=-1), -1)
    cy = np.flip(np.cumsum(np.flip(lc, -1), axis=-1), -1)
    return np.stack([cx, cy], axis=-2)


def jacobian_fd(links, q, h: float = 1e-6) -> np.ndarray:
    """Central finite-difference Jacobian with step ``h`` (rad); shape (..., 2, n)."""
    q = np.asarray(q, dtype=float)
    n = q.shape[-1]
    cols = []
    for i in range(n):
        dq = np.zeros(n)
        dq[i] = h
        cols.append((fk(links, q + dq) - fk(links, q - dq)) / (2.0 * h))
    return np.stack(cols, axis=-1)


def manipulability(links, q) -> np.ndarray:
    """Yoshikawa manipulability: |det J| for 2 links, sqrt(det(J J^T)) for 3 (m^2)."""
    J = jacobian(links, q)
    if J.shape[-1] == 2:
        return np.abs(np.linalg.det(J))
    return np.sqrt(np.maximum(np.linalg.det(J @ np.swapaxes(J, -1, -2)), 0.0))


def joint_velocities(links, q, tool_velocity, *, damping: float = 0.0) -> np.ndarray:
    """Joint speeds (rad/s) that give the tool velocity (m/s) at pose ``q``.

    2 links: solves J qdot = v. 3 links: the minimum-norm solution
    J^T (J J^T + damping^2 I)^-1 v. Near a singularity the result grows
    without bound (with ``damping`` = 0): that is the point of asking.
    """
    J = jacobian(links, q)
    v = np.asarray(tool_velocity, dtype=float)
    if J.shape[-1] == 2 and damping == 0.0:
        return np.linalg.solve(J, v[..., None])[..., 0]
    JT = np.swapaxes(J, -1, -2)
    A = J @ JT + (damping**2) * np.eye(2)
    return (JT @ np.linalg.solve(A, v[..., None]))[..., 0]


# ----------------------------------------------------------------------------------------------------------
# Whole arms: a planar chain, serial or parallelogram, optionally on a yaw base.
#
# The functions below take an ``Arm`` (anything with its attributes) and joint angles in the arm's own
# joints (base first; a parallelogram's joint 2 from the horizontal). They are the one place that knows
# how those joints move the tool; every caller (IK, motion, plots, the web page, the CLI) goes through
# them. For a planar serial arm they are exactly the chain functions above.


def chain_angles(arm, q) -> np.ndarray:
    """The chain's serial joint angles (rad), shape (..., n_links): the base dropped, a parallelogram's
    forearm angle made relative to the upper arm."""
    q = np.asarray(q, dtype=float)
    c = q[..., 1:] if arm.has_base else q
    if arm.parallelogram:
        c = np.stack([c[..., 0], c[..., 1] - c[..., 0]], axis=-1)
    return c


def joint_angles(arm, chain, base=None) -> np.ndarray:
    """The arm's joint angles (rad) for serial chain angles ``chain`` (..., n_links) and, on a base arm,
    base angles ``base`` (...): the inverse of ``chain_angles``."""
    c = np.array(chain, dtype=float)
    if arm.parallelogram:
        c = np.stack([c[..., 0], c[..., 1] + c[..., 0]], axis=-1)
    if not arm.has_base:
        return c
    b = np.broadcast_to(np.asarray(base, dtype=float), c.shape[:-1])
    return np.concatenate([b[..., None], c], axis=-1)


def link_angle(arm, q) -> np.ndarray:
    """Angle (rad) between upper arm and forearm of a parallelogram arm: pi when straight, 0 folded flat."""
    c = chain_angles(arm, q)
    return np.pi + c[..., 1]


def _plane(arm, q):
    """(u, v) of every chain point in the arm's vertical plane, shape (..., n_links+1, 2), from the base
    axis and z = 0: the shoulder, the elbow(s) and the tool; and the base angles (...) or None."""
    pts = joint_positions(arm.links_m, chain_angles(arm, q))
    if arm.has_base:
        pts = pts + np.array([arm.base_offset_m, arm.shoulder_height_m])
        return pts, np.asarray(q, dtype=float)[..., 0]
    return pts, None


def _to_space(uv, base):
    """Plane points (..., k, 2) at base angles (...) -> (..., k, 3) in x, y, z."""
    c, s = np.cos(base)[..., None], np.sin(base)[..., None]
    return np.stack([uv[..., 0] * c, uv[..., 0] * s, uv[..., 1]], axis=-1)


def tool_point(arm, q) -> np.ndarray:
    """Tool point (m) for joint angles ``q`` (rad): (x, y) on a planar arm, (x, y, z) on a base arm;
    shape (..., 2 or 3)."""
    if not arm.layered:
        return fk(arm.links_m, q)
    uv = fk(arm.links_m, chain_angles(arm, q))
    if not arm.has_base:
        return uv
    b = np.asarray(q, dtype=float)[..., 0]
    u = uv[..., 0] + arm.base_offset_m
    return np.stack([u * np.cos(b), u * np.sin(b), uv[..., 1] + arm.shoulder_height_m], axis=-1)


def arm_points(arm, q) -> np.ndarray:
    """Positions (m) to draw the arm: on a base arm the base's foot (0, 0, 0), the base axis at the
    shoulder's height, then the shoulder, elbow(s) and tool, shape (..., n_links+3, 3); on a planar arm
    the shoulder, elbow(s) and tool, shape (..., n_links+1, 2) (as ``joint_positions``)."""
    pts, base = _plane(arm, q)
    if base is None:
        return pts
    foot = np.zeros(pts.shape[:-2] + (2, 2))
    foot[..., 1, 1] = arm.shoulder_height_m
    return _to_space(np.concatenate([foot, pts], axis=-2), base)


def plane_point(arm, point):
    """A tool point (m) of a base arm as (base angle, u, v): its azimuth (rad; NaN on the base axis),
    its distance from the axis and its height, shape (...,) each."""
    p = np.asarray(point, dtype=float)
    r = np.hypot(p[..., 0], p[..., 1])
    az = np.where(r > 0, np.arctan2(p[..., 1], p[..., 0]), np.nan)
    return az, r, p[..., 2]


def tool_pitch(arm, q) -> np.ndarray:
    """Tool angle (rad): on a planar arm the sum of the joint angles (``tool_angle``); on a base arm the
    tool's pitch from the horizontal in its vertical plane, 0 pointing away from the base axis, -pi/2
    straight down, in (-pi, pi] (a chain reaching back over the base axis is counted from the far side)."""
    if not arm.layered:
        return tool_angle(q)
    phi = np.sum(chain_angles(arm, q), axis=-1)
    if not arm.has_base:
        return phi
    u = fk(arm.links_m, chain_angles(arm, q))[..., 0] + arm.base_offset_m
    phi = np.where(u < 0, np.pi - phi, phi)
    return np.remainder(phi + np.pi, 2 * np.pi) - np.pi


def arm_jacobian(arm, q) -> np.ndarray:
    """Jacobian d(tool point)/dq of the arm's own joints, shape (..., dim, n), m/rad."""
    if not arm.layered:
        return jacobian(arm.links_m, q)
    q = np.asarray(q, dtype=float)
    c = chain_angles(arm, q)
    J = jacobian(arm.links_m, c)  # d(u, v)/dc
    if arm.parallelogram:  # c1 = q1, c2 = q2 - q1
        J = np.stack([J[..., 0] - J[..., 1], J[..., 1]], axis=-1)
    if not arm.has_base:
        return J
    b = q[..., 0]
    cb, sb = np.cos(b)[..., None], np.sin(b)[..., None]
    u = fk(arm.links_m, c)[..., 0] + arm.base_offset_m
    col_b = np.stack([-u * np.sin(b), u * np.cos(b), np.zeros_like(u)], axis=-1)[..., None]
    rest = np.stack([J[..., 0, :] * cb, J[..., 0, :] * sb, J[..., 1, :]], axis=-2)
    return np.concatenate([col_b, rest], axis=-1)


def arm_manipulability(arm, q) -> np.ndarray:
    """Yoshikawa manipulability sqrt(det(J J^T)) of the arm's Jacobian (m^2 planar, m^3 on a base)."""
    if not arm.layered:
        return manipulability(arm.links_m, q)
    J = arm_jacobian(arm, q)
    return np.sqrt(np.maximum(np.linalg.det(J @ np.swapaxes(J, -1, -2)), 0.0))


def limit_names(arm) -> list[str]:
    """One name per column of ``limit_excess``: each joint, then a parallelogram's link angle. The chain's
    joints count from 1 on a base arm too (Q1 Q2 after QBASE)."""
    chain = arm.joint_names[1:] if arm.has_base else arm.joint_names
    names = [f"joint {i + 1} ({name})" for i, name in enumerate(chain)]
    if arm.has_base:
        names.insert(0, f"the base ({arm.joint_names[0]})")
    if arm.parallelogram:
        names.append("the angle between upper arm and forearm")
    return names


def limit_excess(arm, q) -> np.ndarray:
    """How far (rad) ``q`` lies outside each limit, shape (..., m), <= 0 inside: every joint's range,
    then (parallelogram) the angle between upper arm and forearm. The one check of the coupled limits."""
    q = np.asarray(q, dtype=float)
    ex = np.maximum(arm.q_min - q, q - arm.q_max)
    if arm.parallelogram:
        lo, hi = arm.link_angle_rad
        a = link_angle(arm, q)
        ex = np.concatenate([ex, np.maximum(lo - a, a - hi)[..., None]], axis=-1)
    return ex


def analytic_2link(l1: float, l2: float, x: float, y: float) -> list[tuple[float, float]]:
    """Both closed-form solutions (q1, q2) in rad for a 2-link arm reaching (x, y).

    Returns [elbow up (q2 <= 0), elbow down (q2 >= 0)]; one entry when the arm
    is straight or folded; [] when (x, y) is outside the reach annulus.
    """
    r2 = x * x + y * y
    c2 = (r2 - l1 * l1 - l2 * l2) / (2.0 * l1 * l2)
    if c2 > 1.0 + 1e-12 or c2 < -1.0 - 1e-12:
        return []
    c2 = min(1.0, max(-1.0, c2))
    # Straight or folded within rounding: one solution, not two 1e-8 rad apart.
    s2 = 0.0 if 1.0 - abs(c2) < 1e-12 else math.sqrt(1.0 - c2 * c2)
    base = math.atan2(y, x)
    # (atan2 is odd in y: elbow up is elbow down with both angles' offsets negated)
    elbow, off = math.atan2(s2, c2), math.atan2(l2 * s2, l1 + l2 * c2)
    if not s2 > 0.0:
        return [(base - off, elbow)]
    return [(base + off, -elbow), (base - off, elbow)]
