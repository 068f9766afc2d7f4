"""Forward kinematics, Jacobians and manipulability of a planar serial arm.

Pure functions on numpy arrays. ``links`` is the (n,) link lengths in metres;
``q`` is joint angles in radians with shape (n,) or (..., n) for a batch.
Joint i is measured from link i-1 (joint 1 from the base x axis).
"""

from __future__ import annotations

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
