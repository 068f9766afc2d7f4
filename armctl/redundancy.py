"""Redundancy of a 3-link chain (planar, or on a base): the free tool angle.

Without a tool angle many poses put the tool on a point. ``best_free_pose`` picks the one that sits
furthest inside the joint limits and away from singularity (``pose_score``, the stated criterion);
``free_angle_profile`` finds, for a straight line, a tool-angle profile (null-space motion: the tool point
follows the line while the chain turns about it) whose poses stay furthest inside the limits all along.
Below ``armctl.motion`` (which plans lines with them) and beside ``armctl.ik`` (the ``ik`` command uses
``best_free_pose`` without loading the motion planner). SI units: metres, radians.
"""

from __future__ import annotations

import math

import numpy as np

from .arm import Arm
from .branch_ik import _branch_ik, arm_branch_ik
from .kinematics import tool_pitch, tool_point

TWO_PI = 2.0 * math.pi
#: How far (m) a target may lie outside the reach annulus and still be taken as on its edge (rounding in
#: mm/deg inputs).
REACH_TOL_M = 1e-9


def _nearest_turn(q, ref):
    """``q`` shifted by whole turns per joint to lie nearest ``ref``."""
    return q + TWO_PI * np.round((ref - q) / TWO_PI)


def _pitch(arm: Arm, q) -> float:
    """The tool angle a line interpolates: the sum of the joint angles on a planar serial arm (unwrapped,
    as always), the pitch from the outward horizontal on a layered one."""
    return float(np.sum(q)) if not arm.layered else float(tool_pitch(arm, q))


#: How IK picks the tool angle of a 3-link chain when none is given (``ik --json`` names it ``criterion``).
CRITERION_BEST = "limits_singularity"
CRITERION_NEAREST = "nearest_start"
CRITERION_PHI = "phi_given"


def pose_score(arm: Arm, q) -> np.ndarray:
    """How well poses ``q`` (K, n) sit inside the arm's limits and away from singularity, in [0, 1] (< 0
    outside a limit): the smallest of each joint's distance to its nearer limit as a share of half its range,
    and |sin| of the chain's elbow angle (the chain's Jacobian for the tool point and angle has determinant
    l1 l2 sin(q_elbow): 0 with the elbow straight or folded). Continuous in q."""
    q = np.atleast_2d(np.asarray(q, dtype=float))
    mid, half = 0.5 * (arm.q_min + arm.q_max), 0.5 * (arm.q_max - arm.q_min)
    qa = _nearest_turn(q, mid)
    margin = np.min((half - np.abs(qa - mid)) / half, axis=1)
    elbow = q[:, arm.chain_joints][:, 1]
    return np.minimum(margin, np.abs(np.sin(elbow)))


def _poses_at(arm: Arm, points, phis, side: float, elbow: float):
    """Closed-form poses (K, n) of tool points (K, dim) at tool angles (K,) on one branch, each angle moved by
    whole turns nearest the middle of its range; and the reach excess (K,) m."""
    if arm.layered:
        q, excess = arm_branch_ik(arm, points, phis, side, elbow)
    else:
        q, excess = _branch_ik(arm.links_m, points, phis, elbow)
    return _nearest_turn(q, 0.5 * (arm.q_min + arm.q_max)), excess


def _branches(arm: Arm):
    return [(sd, el) for sd in ((1.0, -1.0) if arm.has_base else (1.0,)) for el in (1.0, -1.0)]


def best_free_pose(arm: Arm, target_m, *, branches=None):
    """The pose reaching ``target_m`` that sits furthest inside the joint limits and away from singularity
    (``pose_score``), over every tool angle (0.5 deg grid, then 0.01 deg around the best) and every branch
    (or ``branches``: (side, elbow) pairs). Returns (q (n,) rad, tool angle rad, score) or None when no pose
    inside the limits reaches it. 3-link chains only."""
    if arm.n_links != 3:
        raise ValueError("best_free_pose needs a 3-link chain")
    target = np.asarray(target_m, dtype=float)
    grid = np.radians(np.arange(-180.0, 180.0, 0.5))
    best = None
    for side, elbow in branches or _branches(arm):
        for phis in (grid, None):
            if phis is None:  # refine around the best of the coarse grid
                if best is None or best[3] != (side, elbow):
                    break
                phis = best[1] + np.radians(np.linspace(-0.5, 0.5, 101))
            q, excess = _poses_at(arm, np.repeat(target[None, :], len(phis), axis=0), phis, side, elbow)
            score = np.where(excess <= REACH_TOL_M, pose_score(arm, q), -np.inf)
            k = int(np.argmax(score))
            if score[k] > 0 and (best is None or score[k] > best[2]):
                best = (q[k], float(phis[k]), float(score[k]), (side, elbow))
    if best is None:
        return None
    return best[0], best[1], best[2]


def free_angle_profile(arm: Arm, q0, target_m, side: float, elbow: float, *, grid_deg=1.0, steps_per_5mm=1):
    """A tool-angle profile for a line from pose ``q0`` to ``target_m`` that keeps every pose inside the joint
    limits, on the start's branch: the path through a grid of (fraction of the line, tool angle) whose worst
    ``pose_score`` is the highest (then the least turning), the tool angle changing by at most 20 deg per
    grid step. Returns (u knots, tool angle offsets from the start's) or None if the grid has no such path."""
    q0 = np.asarray(q0, dtype=float)
    start, end = tool_point(arm, q0), np.asarray(target_m, dtype=float)
    k_u = int(min(400, max(24, math.ceil(float(np.linalg.norm(end - start)) / 0.005) * steps_per_5mm)))
    u = np.linspace(0.0, 1.0, k_u + 1)
    offs = np.radians(np.arange(-180.0, 180.0 + 1e-9, grid_deg))
    centre = int(np.argmin(np.abs(offs)))
    m = len(offs)
    pts = start + u[:, None] * (end - start)
    phi0 = _pitch(arm, q0)
    P = np.repeat(pts, m, axis=0)
    PHI = np.tile(phi0 + offs, k_u + 1)
    q, excess = _poses_at(arm, P, PHI, side, elbow)
    score = np.where(excess <= REACH_TOL_M, pose_score(arm, q), -np.inf).reshape(k_u + 1, m)
    score[score <= 0] = -np.inf
    width = max(1, int(round(20.0 / grid_deg)))
    B = np.full(m, -np.inf)
    B[centre] = np.inf
    C = np.zeros(m)
    back = np.zeros((k_u + 1, m), dtype=np.int32)
    for i in range(1, k_u + 1):
        nb, nc, arg = np.full(m, -np.inf), np.full(m, np.inf), np.zeros(m, dtype=np.int32)
        for d in range(-width, width + 1):
            lo, hi = max(0, d), m + min(0, d)  # target cells l in [lo, hi) come from l - d
            src = np.arange(lo - d, hi - d)
            b = np.minimum(B[src], score[i, lo:hi])
            c = C[src] + abs(d)
            rb, rn = np.round(b, 2), np.round(nb[lo:hi], 2)
            better = (rb > rn) | ((rb == rn) & (c < nc[lo:hi]))
            better &= np.isfinite(b)
            nb[lo:hi] = np.where(better, b, nb[lo:hi])
            nc[lo:hi] = np.where(better, c, nc[lo:hi])
            arg[lo:hi] = np.where(better, src, arg[lo:hi])
        B, C, back[i] = nb, nc, arg
    if not np.any(np.isfinite(B)):
        return None
    key = np.where(np.isfinite(B), np.round(B, 2) * 1e6 - C, -np.inf)
    cell = int(np.argmax(key))
    path = [cell]
    for i in range(k_u, 0, -1):
        cell = int(back[i][cell])
        path.append(cell)
    idx = np.array(path[::-1])
    return u, offs[idx] - offs[centre]
