"""Where the arm can reach: the reach annulus and joint-limit checks.

``check_reachable`` raises ``UnreachableError`` with the shortfall in metres;
``check_joint_limits`` raises ``JointLimitError`` naming the joint.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .arm import Arm
from .errors import JointLimitError, UnreachableError


@dataclass(frozen=True)
class Annulus:
    """Reach annulus of the tool point (m), centred on the base."""

    r_min: float
    r_max: float


def annulus(arm: Arm, phi: float | None = None) -> Annulus:
    """Reach annulus of the tool point; with ``phi`` (rad), the 3-link wrist
    point must lie in the first two links' annulus, i.e. the tool point lies
    in that annulus shifted by l3 along phi (returned centred on the wrist).
    """
    if phi is None or arm.n == 2:
        return Annulus(arm.reach_min, arm.reach_max)
    l1, l2 = arm.links_m[0], arm.links_m[1]
    return Annulus(abs(l1 - l2), l1 + l2)


def shortfall(arm: Arm, target, phi: float | None = None) -> float:
    """Distance (m) from ``target`` to the reach annulus; 0 inside it."""
    x, y = float(target[0]), float(target[1])
    if phi is not None and arm.n == 3:
        x -= arm.links_m[2] * math.cos(phi)
        y -= arm.links_m[2] * math.sin(phi)
    ring = annulus(arm, phi)
    r = math.hypot(x, y)
    return max(0.0, r - ring.r_max, ring.r_min - r)


def closest_reachable(arm: Arm, target, phi: float | None = None) -> np.ndarray:
    """The point of the reach annulus nearest ``target`` (the target itself if inside)."""
    t = np.asarray(target, dtype=float)
    offset = np.zeros(2)
    if phi is not None and arm.n == 3:
        offset = arm.links_m[2] * np.array([math.cos(phi), math.sin(phi)])
    w = t - offset
    r = float(np.hypot(*w))
    ring = annulus(arm, phi)
    if ring.r_min <= r <= ring.r_max:
        return t
    direction = w / r if r > 0 else np.array([1.0, 0.0])
    return offset + direction * (ring.r_max if r > ring.r_max else ring.r_min)


def check_reachable(arm: Arm, target, phi: float | None = None) -> None:
    """Raise UnreachableError if ``target`` (m) is outside the reach annulus."""
    short = shortfall(arm, target, phi)
    if short > 1e-12:
        x, y = float(target[0]), float(target[1])
        ring = annulus(arm, phi)
        r = math.hypot(x, y)
        side = "beyond the outer reach" if r >= ring.r_min else "inside the inner reach"
        with_phi = "" if phi is None or arm.n == 2 else f" with tool angle {math.degrees(phi):.1f} deg"
        raise UnreachableError(
            f"target ({x:.4f}, {y:.4f}) m{with_phi} is {short * 1000:.1f} mm {side} of arm "
            f"'{arm.name}' (reach {ring.r_min:.3f}..{ring.r_max:.3f} m)",
            target=(x, y),
            shortfall_m=short,
        )


def limit_violation(arm: Arm, q, tol: float = 1e-9) -> tuple[int, float] | None:
    """First joint outside its limits as (index, excess rad), or None."""
    q = np.asarray(q, dtype=float)
    for i in range(arm.n):
        if q[i] < arm.q_min[i] - tol:
            return i, float(arm.q_min[i] - q[i])
        if q[i] > arm.q_max[i] + tol:
            return i, float(q[i] - arm.q_max[i])
    return None


def check_joint_limits(arm: Arm, q) -> None:
    """Raise JointLimitError naming the first joint of ``q`` (rad) out of limits."""
    bad = limit_violation(arm, q)
    if bad is not None:
        i, _ = bad
        raise JointLimitError(
            f"joint {i + 1} ({arm.joint_names[i]}) at {math.degrees(q[i]):.2f} deg is outside its limits "
            f"[{math.degrees(arm.q_min[i]):.1f}, {math.degrees(arm.q_max[i]):.1f}] deg",
            joint=i,
            q=np.asarray(q, dtype=float),
        )
