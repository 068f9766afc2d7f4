"""Slow, obviously right answers the kinematics tests check armctl's fast ones against."""

from __future__ import annotations

import numpy as np


def fd_jacobian(f, q, h: float = 1e-6) -> np.ndarray:
    """Central finite-difference Jacobian of ``f`` (joint angles (..., n) -> points (..., d)) at ``q`` with step
    ``h`` (rad): shape (..., d, n)."""
    q = np.asarray(q, dtype=float)
    return np.stack([(f(q + h * e) - f(q - h * e)) / (2.0 * h) for e in np.eye(q.shape[-1])], axis=-1)
