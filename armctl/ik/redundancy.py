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

from armctl.ik.branch import arm_branch_ik, planar_branch_ik
from armctl.model.arm import Arm
from armctl.model.kinematics import TWO_PI, tool_pitch, tool_point, two_link_batch, unwind

#: How far (m) a target may lie outside the reach annulus and still be taken as on its edge (rounding in
#: mm/deg inputs).
REACH_TOL_M = 1e-9


def line_pitch(arm: Arm, q) -> float:
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
    # each angle's offset from the middle of its range, whole turns removed (column by column: this runs
    # on hundreds of candidate poses for every free-angle line)
    score = np.abs(np.sin(q[:, 1 if not arm.has_base else 2]))
    for j in range(q.shape[1]):
        off = np.abs((q[:, j] - mid[j] + math.pi) % TWO_PI - math.pi)
        np.minimum(score, (half[j] - off) / half[j], out=score)
    return score


def _poses_at(arm: Arm, points, phis, side: float, elbow, roll=None):
    """Closed-form poses (K, n) of tool points (K, dim) at tool angles (K,) on one branch (``elbow`` may be one
    sign per point), each angle moved by whole turns nearest the middle of its range; and the reach excess
    (K,) m."""
    if arm.layered:
        q, excess = arm_branch_ik(arm, points, phis, side, elbow, roll=roll)
    else:
        q, excess = planar_branch_ik(arm.links_m, points, phis, elbow)
    return unwind(q, 0.5 * (arm.q_min + arm.q_max)), excess


def _branches(arm: Arm):
    return [(sd, el) for sd in ((1.0, -1.0) if arm.has_base else (1.0,)) for el in (1.0, -1.0)]


#: The tool angles ``best_free_pose`` tries first (4 deg apart), then 0.2 deg and 0.01 deg apart around the
#: best (a few numpy calls on short arrays).
_GRID = np.radians(np.arange(-180.0, 180.0, 4.0))
_REFINE = (np.radians(np.linspace(-4.0, 4.0, 41)), np.radians(np.linspace(-0.2, 0.2, 41)))


def best_free_pose(arm: Arm, target_m, *, branches=None, accept=None, roll=None):
    """The pose reaching ``target_m`` that sits furthest inside the joint limits and away from singularity
    (``pose_score``), over every tool angle (a 4 deg grid, then 0.2 and 0.01 deg steps around the best) and
    every branch (or ``branches``: (side, elbow) pairs). Returns (q (n,) rad, tool angle rad, score) or None
    when no pose inside the limits reaches it. 3-link chains only. ``accept``: a test of a pose (n,) -> bool
    (the keep-out zones of a joint move to it): only poses it passes are taken, best score first, by the same
    criterion (None when none of them passes). ``roll`` (rad): an arm with a wrist roll, at that roll (None: 0)."""
    if arm.n_links != 3:
        raise ValueError("best_free_pose needs a 3-link chain")
    target = np.asarray(target_m, dtype=float)
    todo = branches or _branches(arm)
    best = None
    for side in sorted({sd for sd, _ in todo}):
        elbows = np.array([el for sd, el in todo if sd == side], dtype=float)
        for refine in (None, *_REFINE):
            if refine is not None:  # around the best so far, on its branch
                if best is None or best[3][0] != side:
                    break
                phis = best[1] + refine
                el = np.full(len(phis), best[3][1])
            else:  # every branch of this side at once
                phis = np.tile(_GRID, len(elbows))
                el = np.repeat(elbows, len(_GRID))
            if arm.layered:
                q, excess = _poses_at(arm, np.broadcast_to(target, (len(phis), len(target))), phis, side, el, roll)
                score = pose_score(arm, q)
                score[excess > REACH_TOL_M] = -np.inf
            else:
                score, q = _planar_scores(arm, target, phis, el)
            k = int(np.argmax(score)) if accept is None else _best_accepted(score, q, accept, best)
            if k is not None and score[k] > 0 and (best is None or score[k] > best[2]):
                best = (q[k], float(phis[k]), float(score[k]), (side, float(el[k])))
    if best is None:
        return None
    return best[0], best[1], best[2]


def _best_accepted(score, q, accept, best):
    """The index of the best-scoring pose ``accept`` passes that beats ``best`` (and is inside the limits),
    or None: the poses are tried best first."""
    floor = 0.0 if best is None else best[2]
    for k in np.argsort(-score, kind="stable"):
        if not score[k] > floor:
            return None
        if accept(q[k]):
            return int(k)
    return None


def _planar_scores(arm: Arm, target, phis, elbows):
    """(``pose_score`` (-inf where out of reach), poses (K, 3) rad, each angle nearest the middle of its
    range) of the closed-form poses of a planar serial 3-link arm reaching ``target`` at tool angles ``phis``
    on elbow signs ``elbows``: the poses ``_poses_at`` gives, in a third of the numpy calls."""
    l1, l2, l3 = (float(v) for v in arm.links_m)
    wx = target[0] - l3 * np.cos(phis)
    wy = target[1] - l3 * np.sin(phis)
    r = np.sqrt(wx * wx + wy * wy)
    out = np.maximum(r - (l1 + l2), abs(l1 - l2) - r) > REACH_TOL_M
    _, ((q1, q2),), score = two_link_batch(l1, l2, wx, wy, (elbows,), snap=0.0, with_sin=True)
    mid, half = 0.5 * (arm.q_min + arm.q_max), 0.5 * (arm.q_max - arm.q_min)
    q = np.empty((len(phis), 3))
    for j, qj in enumerate((q1, q2, phis - q1 - q2)):
        off = np.remainder(qj - (mid[j] - math.pi), TWO_PI) - math.pi  # from the range's middle, turns removed
        q[:, j] = mid[j] + off
        np.minimum(score, (half[j] - np.abs(off)) * (1.0 / half[j]), out=score)
    score[out] = -np.inf
    return score, q


def free_angle_profile(
    arm: Arm, q0, target_m, side: float, elbow: float, *, grid_deg=1.0, steps_per_5mm=1, roll_end=None
):
    """A tool-angle profile for a line from pose ``q0`` to ``target_m`` that keeps every pose inside the joint
    limits, on the start's branch: the path through a grid of (fraction of the line, tool angle) whose worst
    ``pose_score`` is the highest (then the least turning), the tool angle changing by at most 20 deg per
    grid step. Returns (u knots, tool angle offsets from the start's) or None if the grid has no such path.
    ``roll_end`` (rad): an arm with a wrist roll turning linearly from the start's roll to it along the line."""
    q0 = np.asarray(q0, dtype=float)
    start, end = tool_point(arm, q0), np.asarray(target_m, dtype=float)
    k_u = int(min(400, max(24, math.ceil(float(np.linalg.norm(end - start)) / 0.005) * steps_per_5mm)))
    u = np.linspace(0.0, 1.0, k_u + 1)
    offs = np.radians(np.arange(-180.0, 180.0 + 1e-9, grid_deg))
    centre = int(np.argmin(np.abs(offs)))
    m = len(offs)
    pts = start + u[:, None] * (end - start)
    phi0 = line_pitch(arm, q0)
    P = np.repeat(pts, m, axis=0)
    PHI = np.tile(phi0 + offs, k_u + 1)
    roll = None
    if arm.roll is not None:
        r0 = float(q0[arm.roll_index])
        roll = np.repeat(r0 + u * ((r0 if roll_end is None else roll_end) - r0), m)
    q, excess = _poses_at(arm, P, PHI, side, elbow, roll)
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
