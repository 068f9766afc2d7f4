"""``solve_batch`` for an arm with a base or a parallelogram."""

from __future__ import annotations

import math

import numpy as np

from ..arm import Arm
from ..errors import BadInputError
from ..kinematics import nearest_turn_batch, tool_point
from ..workspace import batch_closed_form, nearest_reachable_batch
from . import batch
from .layered import _miss_reason, solve
from .result import DEFAULT_MAX_ITER, DEFAULT_TOL_M, BatchIKResult

# --------------------------------------------------------------------------------------------------- batch


def solve_batch(
    arm: Arm,
    targets,
    *,
    phi=None,
    q0=None,
    method: str = "dls",
    tol: float = DEFAULT_TOL_M,
    max_iter: int = DEFAULT_MAX_ITER,
) -> BatchIKResult:
    """Many targets at once: ``targets`` (N, 3) m on a base arm ((N, 2) on a planar parallelogram arm),
    ``phi`` None or (N,) rad (3-link chains), ``q0`` (n,) or (N, n) rad. 2-link chains: the closed form
    on all rows at once (both elbow branches, the base towards the target and turned half a turn, every
    limit checked; per row the same pose as ``solve`` within the tolerance); 3-link chains:
    ``ik.solve_batch`` in each row's plane. Rows left over (the base turned, or nothing reaches) go
    through ``solve``, so every row keeps its guarantees."""
    if method != "dls":
        raise BadInputError(f"batch IK supports method 'dls' only, got {method!r}")
    t = np.asarray(targets, dtype=float)
    if t.ndim != 2 or t.shape[1] != arm.dim:
        names = "(N, 3): x, y, z" if arm.has_base else "(N, 2): x, y"
        raise BadInputError(f"targets for arm '{arm.name}' must have shape {names}; got {t.shape}")
    if not np.all(np.isfinite(t)):
        bad = int(np.flatnonzero(~np.all(np.isfinite(t), axis=1))[0])
        raise BadInputError(f"target {bad + 1} is not finite: {t[bad].tolist()}")
    m, n = len(t), arm.n
    q_start = np.array(np.broadcast_to(arm.home_rad if q0 is None else np.asarray(q0, dtype=float), (m, n)))
    if not np.all(np.isfinite(q_start)):
        raise BadInputError("start poses must be finite")
    q_start = np.clip(q_start, arm.q_min, arm.q_max)
    ph = None
    if phi is not None:
        if arm.n_links != 3:
            raise BadInputError(f"a tool angle (phi) needs a 3-link chain; '{arm.name}' has {arm.n_links} links")
        ph = np.array(np.broadcast_to(np.asarray(phi, dtype=float), (m,)))
        if not np.all(np.isfinite(ph)):
            raise BadInputError("phi values must be finite")
    q = np.array(q_start)
    done = np.zeros(m, dtype=bool)
    iters = np.zeros(m, dtype=int)
    base, u, v, axis = _batch_plane(arm, t, q_start)
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
            rho = np.hypot(t[:, 0], t[:, 1])
            back = nearest_turn_batch(np.arctan2(t[:, 1], t[:, 0]) + math.pi, q_start[:, 0], arm.q_min[0], arm.q_max[0])
            back[rho <= 1e-12] = np.nan
            mirrored = np.concatenate([math.pi - c0[:, :1], -c0[:, 1:]], axis=1)
            planes.append((back, -rho - arm.base_offset_m, None if ph is None else math.pi - ph, mirrored))
        for b, uu, pp, start in planes:
            fine = ~done if b is None else ~done & np.isfinite(b)
            rows = np.flatnonzero(fine)
            if rows.size == 0:
                continue
            res = batch.solve_batch(
                chain,
                np.stack([uu[rows], v[rows]], axis=1),
                phi=None if pp is None else pp[rows],
                q0=start[rows],
                tol=tol,
                max_iter=max_iter,
            )
            good = rows[res.ok]
            q[good] = res.q[res.ok] if b is None else np.concatenate([b[good, None], res.q[res.ok]], axis=1)
            iters[rows] += res.iterations
            done[good] = True
    del axis
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
            reasons[i] = _miss_reason(arm, t[i], None, q_start[i], float(dist[j]))
    for i in np.flatnonzero(~done):
        r = solve(arm, t[i], phi=None if ph is None else ph[i], q0=q_start[i], tol=tol, max_iter=max_iter)
        q[i], ok[i], short[i], reasons[i] = r.q, r.ok, r.shortfall_m, r.reason
        iters[i] += r.iterations
    error = np.linalg.norm(tool_point(arm, q) - t, axis=-1)
    # a closed-form row off its target by more than the tolerance (rounding near full reach) is not ok
    far = ok & (error > max(tol, 1e-9))
    for i in np.flatnonzero(far):
        r = solve(arm, t[i], phi=None if ph is None else ph[i], q0=q_start[i], tol=tol, max_iter=max_iter)
        q[i], ok[i], short[i], reasons[i] = r.q, r.ok, r.shortfall_m, r.reason
        error[i] = r.error_m
    return BatchIKResult(q=q, ok=ok, error_m=error, iterations=iters, shortfall_m=short, method=method, reasons=reasons)


def _batch_plane(arm: Arm, t, q_start):
    """Per row: base angle (the turn nearest the start inside the limits; NaN if the base cannot point at
    the target) and the chain's target (u, v) in that plane; rows on the base axis keep the start's base."""
    if not arm.has_base:
        return None, t[:, 0], t[:, 1], None
    rho = np.hypot(t[:, 0], t[:, 1])
    axis = rho <= 1e-12
    az = np.where(axis, q_start[:, 0], np.arctan2(t[:, 1], t[:, 0]))
    b = nearest_turn_batch(az, q_start[:, 0], arm.q_min[0], arm.q_max[0])
    u = np.where(axis, 0.0, rho) - arm.base_offset_m
    v = t[:, 2] - arm.shoulder_height_m
    return b, u, v, axis
