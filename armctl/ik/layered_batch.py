"""``solve_batch`` for an arm with a base or a parallelogram."""

from __future__ import annotations

import math

import numpy as np

from armctl.ik import batch
from armctl.ik.layered import miss_reason, solve
from armctl.ik.result import BatchIKResult
from armctl.model.arm import Arm
from armctl.model.kinematics import base_split_batch, nearest_turn_batch, shoulder_uv, tool_point
from armctl.model.workspace import batch_closed_form, nearest_reachable_batch

# --------------------------------------------------------------------------------------------------- batch


def solve_batch(arm: Arm, t, ph, q_start, tol: float, max_iter: int) -> BatchIKResult:
    """``ik.solve_batch`` for an arm with a base or a parallelogram, on its checked inputs
    (``inputs.check_batch``): ``t`` (N, 3) m on a base arm ((N, 2) on a planar parallelogram arm), ``ph``
    None or (N,) rad (3-link chains), ``q_start`` (N, n) rad inside the limits. 2-link chains: the closed
    form on all rows at once (both elbow branches, the base towards the target and turned half a turn,
    every limit checked; per row the same pose as ``solve`` within the tolerance); 3-link chains:
    ``ik.batch`` in each row's plane. Rows left over (the base turned, or nothing reaches) go through
    ``solve``, so every row keeps its guarantees."""
    m = len(t)
    q = np.array(q_start)
    done = np.zeros(m, dtype=bool)
    iters = np.zeros(m, dtype=int)
    base, u, v, (az, rho) = _batch_plane(arm, t, q_start)
    if arm.n_links == 2:
        qc, found = batch_closed_form(arm, u, v, q_start)
        if base is not None:
            found &= np.isfinite(base)
        rows = np.flatnonzero(found)
        q[rows] = qc[rows] if not arm.has_base else np.concatenate([base[rows, None], qc[rows]], axis=1)
        done[rows] = True
    else:
        chain = arm.chain
        c0 = np.array(q_start[:, 1:]) if arm.has_base else np.array(q_start)
        planes = [(base, u, ph, c0)]
        if arm.has_base:  # then the base half a turn round, the chain reaching back over the axis
            back = nearest_turn_batch(az + math.pi, q_start[:, 0], arm.q_min[0], arm.q_max[0])
            back[rho <= 1e-12] = np.nan
            mirrored = np.concatenate([math.pi - c0[:, :1], -c0[:, 1:]], axis=1)
            planes.append((back, shoulder_uv(arm, -rho, t[:, 2])[0], None if ph is None else math.pi - ph, mirrored))
        for b, uu, pp, start in planes:
            fine = ~done if b is None else ~done & np.isfinite(b)
            rows = np.flatnonzero(fine)
            if rows.size == 0:
                continue
            goals = np.stack([uu[rows], v[rows]], axis=1)
            q_chain = np.clip(start[rows], chain.q_min, chain.q_max)
            res = batch.solve_batch(chain, goals, None if pp is None else pp[rows], q_chain, tol, max_iter)
            good = rows[res.ok]
            q[good] = res.q[res.ok] if b is None else np.concatenate([b[good, None], res.q[res.ok]], axis=1)
            iters[rows] += res.iterations
            done[good] = True
    error = np.zeros(m)
    short = np.zeros(m)
    ok = done.copy()
    reasons: list = [None] * m
    if arm.n_links == 2 and not np.all(done):
        # the rest at once: the base half a turn round, else the nearest point inside every limit
        rest = np.flatnonzero(~done)
        nq, _, dist = nearest_reachable_batch(arm, t[rest], q_start[rest])
        q[rest] = nq
        reached = dist <= tol
        ok[rest] = reached
        done[rest] = True
        for j in np.flatnonzero(~reached):
            i = rest[j]
            short[i] = dist[j]
            reasons[i] = miss_reason(arm, t[i], None, q_start[i], float(dist[j]))
    for i in np.flatnonzero(~done):
        r = solve(arm, t[i], None if ph is None else ph[i], q_start[i], "dls", tol, max_iter)
        q[i], ok[i], short[i], reasons[i] = r.q, r.ok, r.shortfall_m, r.reason
        iters[i] += r.iterations
    error = np.linalg.norm(tool_point(arm, q) - t, axis=-1)
    # a closed-form row off its target by more than the tolerance (rounding near full reach) is not ok
    far = ok & (error > max(tol, 1e-9))
    for i in np.flatnonzero(far):
        r = solve(arm, t[i], None if ph is None else ph[i], q_start[i], "dls", tol, max_iter)
        q[i], ok[i], short[i], reasons[i] = r.q, r.ok, r.shortfall_m, r.reason
        error[i] = r.error_m
    return BatchIKResult(q=q, ok=ok, error_m=error, iterations=iters, shortfall_m=short, method="dls", reasons=reasons)


def _batch_plane(arm: Arm, t, q_start):
    """Per row: base angle (the turn nearest the start inside the limits; NaN if the base cannot point at
    the target) and the chain's target (u, v) in that plane; rows on the base axis keep the start's base.
    Then the targets' (yaw, rho) (``kinematics.base_split_batch``; None without a base)."""
    if not arm.has_base:
        return None, t[:, 0], t[:, 1], (None, None)
    az, rho = base_split_batch(t[:, 0], t[:, 1])
    axis = rho <= 1e-12
    b = nearest_turn_batch(np.where(axis, q_start[:, 0], az), q_start[:, 0], arm.q_min[0], arm.q_max[0])
    u, v = shoulder_uv(arm, np.where(axis, 0.0, rho), t[:, 2])
    return b, u, v, (az, rho)
