"""``solve_batch`` for a planar serial arm: the C kernel row by row, or vectorised numpy with a tool angle."""

from __future__ import annotations

import numpy as np

from armctl.ik import kernel
from armctl.ik.planar import solve
from armctl.ik.result import BLOCKED_REASON, BatchIKResult, unreachable_reason
from armctl.model.arm import Arm
from armctl.model.kinematics import plain, two_link_batch

# ----------------------------------------------------------------------------
# Vectorised batch


def _batch_fk_jac(links, q):
    a = np.cumsum(q, axis=1)
    c = links * np.cos(a)
    s = links * np.sin(a)
    x = c.sum(axis=1)
    y = s.sum(axis=1)
    jx = -np.flip(np.cumsum(np.flip(s, 1), axis=1), 1)
    jy = np.flip(np.cumsum(np.flip(c, 1), axis=1), 1)
    return x, y, jx, jy


def _batch_dls(links, goals, q, q_min, q_max, tol, max_iter):
    """Adaptive DLS on all rows at once, vectorised; rows stop independently."""
    reach = float(links.sum())
    m = len(q)
    lam = np.full(m, 0.01 * reach)
    iters = np.zeros(m, dtype=int)
    slow = np.zeros(m, dtype=int)
    x, y, jx, jy = _batch_fk_jac(links, q)
    err = np.hypot(goals[:, 0] - x, goals[:, 1] - y)
    active = np.flatnonzero(err > tol)
    for _ in range(max_iter):
        if active.size == 0:
            break
        ex = goals[active, 0] - x[active]
        ey = goals[active, 1] - y[active]
        ax, ay = jx[active], jy[active]
        l2 = lam[active] ** 2
        a11 = np.einsum("ij,ij->i", ax, ax) + l2
        a12 = np.einsum("ij,ij->i", ax, ay)
        a22 = np.einsum("ij,ij->i", ay, ay) + l2
        det = a11 * a22 - a12 * a12
        det = np.where(det > 1e-300, det, np.inf)
        y1 = (a22 * ex - a12 * ey) / det
        y2 = (a11 * ey - a12 * ex) / det
        q_new = np.clip(q[active] + ax * y1[:, None] + ay * y2[:, None], q_min, q_max)
        nx, ny, njx, njy = _batch_fk_jac(links, q_new)
        new_err = np.hypot(goals[active, 0] - nx, goals[active, 1] - ny)
        better = new_err < err[active]
        slow[active] = np.where(better & (new_err > 0.5 * err[active]), slow[active] + 1, 0)
        acc = active[better]
        q[acc] = q_new[better]
        x[acc], y[acc] = nx[better], ny[better]
        jx[acc], jy[acc] = njx[better], njy[better]
        err[acc] = new_err[better]
        lam[acc] = np.maximum(lam[acc] * 0.1, 1e-12 * reach)
        rej = active[~better]
        lam[rej] *= 10.0
        iters[active] += 1
        # As in dls_iterate: give up on rows that stall (limit, local minimum).
        keep = (
            (err[active] > tol) & (lam[active] <= 1e4 * reach) & ~((slow[active] >= 3) & (lam[active] < 1e-3 * reach))
        )
        active = active[keep]
    return q, err, iters


def _batch_candidates(arm: Arm, goals, ph, q0):
    """3 links, tool angles ``ph``: per row the closed-form pose inside the limits nearest q0 (NaN rows:
    none), each joint at its turn (angle + 2 pi k) nearest q0."""
    links, lo, hi = arm.links_m, arm.q_min, arm.q_max
    two_pi = 2.0 * np.pi
    w = goals - links[2] * np.stack([np.cos(ph), np.sin(ph)], axis=-1)
    reach_ok, branches = two_link_batch(links[0], links[1], w[:, 0], w[:, 1])
    poses = [np.stack([q1, q2, ph - q1 - q2], axis=-1) for q1, q2 in branches]
    cand = np.stack(poses, axis=1)  # (m, 2 branches, 3)
    ref = q0[:, None, :]
    turns = np.round((ref - cand) / two_pi)[..., None] + np.array([-1.0, 0.0, 1.0])
    opts = cand[..., None] + two_pi * turns
    inside = (opts >= lo[:, None] - 1e-9) & (opts <= hi[:, None] + 1e-9)
    score = np.where(inside, np.abs(opts - ref[..., None]), np.inf)
    pick = np.argmin(score, axis=-1)
    cand = np.take_along_axis(opts, pick[..., None], axis=-1)[..., 0]
    valid = reach_ok[:, None] & np.all(np.isfinite(np.min(score, axis=-1)), axis=-1)
    dist = np.where(valid, np.sum((cand - ref) ** 2, axis=-1), np.inf)
    best = np.argmin(dist, axis=1)
    rows = np.arange(len(goals))
    out = np.clip(cand[rows, best], lo, hi)
    out[~np.isfinite(dist[rows, best])] = np.nan
    return out


def solve_batch(arm: Arm, t, ph, q_start, tol: float, max_iter: int) -> BatchIKResult:
    """``ik.solve_batch`` for a planar serial arm, on its checked inputs (``inputs.check_batch``):
    ``t`` (N, 2) m, ``ph`` None or (N,) rad, ``q_start`` (N, n) rad inside the limits.

    Without ``ph`` every row is exactly what ``solve`` gives for it, computed row by row in C (or
    in Python without the C kernel). With ``ph`` (3 links), vectorised numpy: the wrist points by
    DLS from q_start, closed-form restarts for rows that stall, the stretched pose and the shortfall
    for rows out of reach: the same guarantees as ``solve``, not always the same pose.
    (An arm with a base or a parallelogram goes to ``armctl.ik.layered_batch``.)"""
    m = len(t)
    if ph is None:
        return _solve_rows(arm, t, q_start, tol, max_iter)
    links = arm.links_m
    # Project unreachable wrist points onto the wrist's reach annulus: the arm stretches there.
    offset = links[2] * np.stack([np.cos(ph), np.sin(ph)], axis=1)
    r_min, r_max = abs(links[0] - links[1]), links[0] + links[1]
    k = 2  # solve the wrist point with the first two links
    w = t - offset
    r = np.hypot(w[:, 0], w[:, 1])
    short = np.maximum(0.0, np.maximum(r - r_max, r_min - r))
    short[short < 1e-12] = 0.0  # on the rim within rounding: reachable
    safe_r = np.where(r > 0, r, 1.0)
    scale = np.where(r > r_max, r_max / safe_r, np.where(r < r_min, r_min / safe_r, 1.0))
    w_goal = w * scale[:, None]
    w_goal[(r == 0.0) & (r_min > 0)] = [r_min, 0.0]
    goals = w_goal + offset

    def run(q_init, rows, iters):
        q_sub, err, it = _batch_dls(
            links[:k], w_goal[rows], q_init[:, :k].copy(), arm.q_min[:k], arm.q_max[:k], tol, iters
        )
        q = q_init.copy()
        q[:, :k] = q_sub
        q3 = ph[rows] - q_sub[:, 0] - q_sub[:, 1]
        q[:, 2] = q3 - 2 * np.pi * np.round((q3 - q_start[rows, 2]) / (2 * np.pi))
        good = (err <= tol) & np.all((q >= arm.q_min - 1e-9) & (q <= arm.q_max + 1e-9), axis=1)
        return q, good, it

    rows = np.arange(m)
    init = _starts(arm, w_goal, goals, ph, q_start, short > 0, r > r_max)
    # Every loop pass costs the same however few rows are left, so the first
    # pass is short: rows not converged by then restart from closed form.
    q, good, iters = run(init, rows, min(max_iter, 25))
    bad = np.flatnonzero(~good)
    if bad.size:
        seeds = _batch_candidates(arm, goals[bad], ph[bad], q_start[bad])
        has = ~np.isnan(seeds[:, 0])
        idx = bad[has]
        if idx.size:
            q2, good2, it2 = run(seeds[has], idx, max_iter)
            iters[idx] += it2
            q[idx[good2]] = q2[good2]
            good[idx[good2]] = True
    ok = good & (short == 0.0)
    reasons: list = [None] * m
    # What is left reaches nothing inside the limits: the scalar solver gets
    # as close as the limits allow and says so.
    for i in np.flatnonzero(~good):
        res = solve(arm, t[i], ph[i], q_start[i], "dls", tol, max_iter)
        q[i], ok[i], short[i], reasons[i] = res.q, res.ok, res.shortfall_m, res.reason
        iters[i] += res.iterations
    for i in np.flatnonzero(good & (short > 0)):
        reasons[i] = unreachable_reason(arm, short[i], ph[i])
    tool = np.stack(_batch_fk_jac(links, q)[:2], axis=1)
    error = np.hypot(*(t - tool).T)
    return BatchIKResult(q=q, ok=ok, error_m=error, iterations=iters, shortfall_m=short, method="dls", reasons=reasons)


def _starts(arm: Arm, w_goal, goals, ph, q_start, far, outside):
    """The start poses of ``solve_batch``'s rows: q_start, but the rows out of reach (``far``) from the
    stretched closed-form pose (as in solve). Beyond the outer rim (``outside``) the closest pose is the
    first two links straight towards the wrist point; inside the inner rim, the closed form on the rim."""
    init = q_start.copy()
    if not np.any(far):
        return init
    outer = np.flatnonzero(far & outside)
    straight = np.zeros((outer.size, arm.n))
    straight[:, 0] = np.arctan2(w_goal[outer, 1], w_goal[outer, 0])
    straight[:, 2] = ph[outer] - straight[:, 0]
    turns = np.round((q_start[outer] - straight) / (2 * np.pi))
    straight += 2 * np.pi * turns
    fits = np.all((straight >= arm.q_min) & (straight <= arm.q_max), axis=1)
    init[outer[fits]] = straight[fits]
    rest = np.setdiff1d(np.flatnonzero(far), outer[fits])
    if rest.size:
        seeds = _batch_candidates(arm, goals[rest], ph[rest], q_start[rest])
        init[rest] = np.where(np.isnan(seeds), q_start[rest], seeds)
    return init


def _solve_rows(arm: Arm, t, q_start, tol, max_iter) -> BatchIKResult:
    """solve_batch without phi: each row exactly as ``solve`` does it, in one C call when built."""
    P = plain(arm)
    m = len(t)
    q = np.empty((m, arm.n))
    info = np.zeros((m, 4))  # solved (1), blocked (2) or bad numbers (0), error, iterations, shortfall
    if kernel.core is not None:
        kernel.core.solve_rows(
            P.links, P.lo, P.hi, np.ascontiguousarray(t), np.ascontiguousarray(q_start), q, info, tol, max_iter
        )
    # (few numpy calls: on a hundred rows each costs a share of the whole C call)
    status, error, short = info[:, 0], info[:, 1], info[:, 3]
    iters = info[:, 2].astype(int)
    ok = (status == 1.0) & (short == 0.0)
    reasons: list = [None] * m
    missed = np.flatnonzero(short > 0.0)  # solved rows short of the target (NaN on the rows C did not solve)
    if missed.size:  # (Python floats: formatting numpy's costs a microsecond a row)
        for i, st, sh in zip(missed.tolist(), status[missed].tolist(), short[missed].tolist()):
            reasons[i] = BLOCKED_REASON if st == 2.0 else unreachable_reason(arm, sh, None)
    for i in [] if status.all() else np.flatnonzero(status == 0.0):  # every row without C
        res = solve(arm, t[i], None, q_start[i], "dls", tol, max_iter)
        q[i], ok[i], error[i], iters[i], short[i], reasons[i] = (
            res.q,
            res.ok,
            res.error_m,
            res.iterations,
            res.shortfall_m,
            res.reason,
        )
    return BatchIKResult(q=q, ok=ok, error_m=error, iterations=iters, shortfall_m=short, method="dls", reasons=reasons)
