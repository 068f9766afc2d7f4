"""The DLS kernel of the planar solver: the C kernel ``armctl.ik._core`` (``core``, None when not built) and
its Python twin, and the Newton and Broyden iterations."""

from __future__ import annotations

import math
from dataclasses import dataclass

from armctl.ik.result import DEFAULT_MAX_ITER, DEFAULT_TOL_M

try:
    import armctl.ik._core as core
except ImportError:  # not built (no C compiler at install): the pure-Python kernel
    core = None

# ----------------------------------------------------------------------------
# Scalar kernels (plain floats, n = 2 or 3)


def tool_xy(links, q):
    a = 0.0
    x = y = 0.0
    for length, qi in zip(links, q):
        a += qi
        x += length * math.cos(a)
        y += length * math.sin(a)
    return x, y


def _fk_jac(links, q):
    """Tool point and Jacobian columns (jx[i], jy[i]) in one pass."""
    n = len(q)
    cx = [0.0] * n
    sy = [0.0] * n
    a = 0.0
    for i in range(n):
        a += q[i]
        cx[i] = links[i] * math.cos(a)
        sy[i] = links[i] * math.sin(a)
    jx = [0.0] * n
    jy = [0.0] * n
    accx = accy = 0.0
    for i in range(n - 1, -1, -1):
        accx += sy[i]
        accy += cx[i]
        jx[i] = -accx
        jy[i] = accy
    return accy, accx, jx, jy


def _step(jx, jy, ex, ey, lam2):
    """dq = J^T (J J^T + lam2 I)^-1 e; None if singular."""
    a11 = lam2
    a12 = 0.0
    a22 = lam2
    for u, v in zip(jx, jy):
        a11 += u * u
        a12 += u * v
        a22 += v * v
    det = a11 * a22 - a12 * a12
    if not det > 1e-300:
        return None
    y1 = (a22 * ex - a12 * ey) / det
    y2 = (a11 * ey - a12 * ex) / det
    return [u * y1 + v * y2 for u, v in zip(jx, jy)]


def clip_pose(q, lo, hi):
    return [min(max(v, a), b) for v, a, b in zip(q, lo, hi)]


@dataclass
class _Run:
    q: list
    err: float
    iterations: int = 0
    fk_evals: int = 0
    jac_evals: int = 0
    max_step: float = 0.0


def _prepare(links, target, q0, q_min, q_max):
    """Plain floats for a kernel: links, target x and y, limits (inf if None), q0 clipped into them."""
    links = [float(v) for v in links]
    n = len(links)
    lo = [-math.inf] * n if q_min is None else [float(v) for v in q_min]
    hi = [math.inf] * n if q_max is None else [float(v) for v in q_max]
    return links, float(target[0]), float(target[1]), lo, hi, clip_pose([float(v) for v in q0], lo, hi)


def _step3(j1x, j1y, j2x, j2y, j3x, j3y, ex, ey, lam2):
    """dq = J^T (J J^T + lam2 I)^-1 e for a 2x3 J given by columns; None if singular."""
    a11 = j1x * j1x + j2x * j2x + j3x * j3x + lam2
    a12 = j1x * j1y + j2x * j2y + j3x * j3y
    a22 = j1y * j1y + j2y * j2y + j3y * j3y + lam2
    det = a11 * a22 - a12 * a12
    if not det > 1e-300:
        return None
    y1 = (a22 * ex - a12 * ey) / det
    y2 = (a11 * ey - a12 * ex) / det
    return j1x * y1 + j1y * y2, j2x * y1 + j2y * y2, j3x * y1 + j3y * y2


def dls_fast(links, tx, ty, q, lo, hi, tol, max_iter, lam):
    """Adaptive DLS with joint clamping: the C kernel when built, else ``_dls_py``."""
    if core is None:
        return _dls_py(links, tx, ty, q, lo, hi, tol, max_iter, lam)
    q, err, it, fk_evals, jac_evals, max_step = core.dls(links, lo, hi, tx, ty, q, tol, max_iter, lam)
    return _Run(list(q), err, it, fk_evals, jac_evals, max_step)


def _dls_py(links, tx, ty, q, lo, hi, tol, max_iter, lam):
    """Adaptive DLS with joint clamping, unrolled for up to three joints (a 2-link arm: a zero-length third
    link, its joint pinned at 0). Written out in locals: at this size Python's per-operation cost is the whole
    cost; the algorithm is the one ``dls_iterate`` documents. ``_core.c`` is this in C, step for step."""
    cos, sin, sqrt = math.cos, math.sin, math.sqrt
    n = len(links)
    l1, l2 = links[0], links[1]
    l3 = links[2] if n == 3 else 0.0
    lo1, lo2 = lo[0], lo[1]
    hi1, hi2 = hi[0], hi[1]
    lo3, hi3 = (lo[2], hi[2]) if n == 3 else (0.0, 0.0)
    q1 = min(max(q[0], lo1), hi1)
    q2 = min(max(q[1], lo2), hi2)
    q3 = min(max(q[2], lo3), hi3) if n == 3 else 0.0
    reach = l1 + l2 + l3
    lam_min, lam_max = 1e-12 * reach, 1e4 * reach
    a2 = q1 + q2
    a3 = a2 + q3
    c1, s1, c2, s2, c3, s3 = l1 * cos(q1), l1 * sin(q1), l2 * cos(a2), l2 * sin(a2), l3 * cos(a3), l3 * sin(a3)
    x, y = c1 + c2 + c3, s1 + s2 + s3
    # (sqrt, not hypot: the C kernel does the same operations and gets the same bits)
    err = sqrt((tx - x) * (tx - x) + (ty - y) * (ty - y))
    run = _Run(q=None, err=err, fk_evals=1, jac_evals=1)
    it = slow = 0
    max_step = 0.0
    while err > tol and it < max_iter:
        it += 1
        ex, ey = tx - x, ty - y
        j3x, j3y = -s3, c3
        j2x, j2y = j3x - s2, j3y + c2
        j1x, j1y = j2x - s1, j2y + c1
        lam2 = lam * lam
        d = _step3(j1x, j1y, j2x, j2y, j3x, j3y, ex, ey, lam2)
        if d is None:
            lam = max(lam * 10.0, 1e-6 * reach)
            if lam > lam_max:
                break
            continue
        d1, d2, d3 = d
        # Joints whose step crosses a limit stop at it (the rest: _stop_at_limits)
        b1 = (d1 < 0.0 and q1 + d1 < lo1) or (d1 > 0.0 and q1 + d1 > hi1)
        b2 = (d2 < 0.0 and q2 + d2 < lo2) or (d2 > 0.0 and q2 + d2 > hi2)
        b3 = (d3 < 0.0 and q3 + d3 < lo3) or (d3 > 0.0 and q3 + d3 > hi3)
        if (b1 or b2 or b3) and not (b1 and b2 and b3):
            f1 = ((lo1 if d1 < 0.0 else hi1) - q1) if b1 else 0.0
            f2 = ((lo2 if d2 < 0.0 else hi2) - q2) if b2 else 0.0
            f3 = ((lo3 if d3 < 0.0 else hi3) - q3) if b3 else 0.0
            d1, d2, d3 = _stop_at_limits(d1, d2, d3, b1, b2, b3, f1, f2, f3, j1x, j1y, j2x, j2y, j3x, j3y, ex, ey, lam2)
        n1 = min(max(q1 + d1, lo1), hi1)
        n2 = min(max(q2 + d2, lo2), hi2)
        n3 = min(max(q3 + d3, lo3), hi3)
        a2 = n1 + n2
        a3 = a2 + n3
        k1, t1, k2, t2, k3, t3 = l1 * cos(n1), l1 * sin(n1), l2 * cos(a2), l2 * sin(a2), l3 * cos(a3), l3 * sin(a3)
        nx, ny = k1 + k2 + k3, t1 + t2 + t3
        run.fk_evals += 1
        new_err = sqrt((tx - nx) * (tx - nx) + (ty - ny) * (ty - ny))
        if new_err < err:
            # Three slow steps in a row (a joint sliding along its limit, or a
            # local minimum) end the run early: the caller restarts elsewhere.
            slow = slow + 1 if new_err > 0.5 * err else 0
            if slow >= 3 and lam < 1e-3 * reach:
                break
            max_step = max(max_step, abs(n1 - q1), abs(n2 - q2), abs(n3 - q3))
            q1, q2, q3 = n1, n2, n3
            c1, s1, c2, s2, c3, s3 = k1, t1, k2, t2, k3, t3
            x, y, err = nx, ny, new_err
            run.jac_evals += 1
            lam = max(lam * 0.1, lam_min)
        else:
            lam *= 10.0
            if lam > lam_max:
                break
    run.q = [q1, q2, q3] if n == 3 else [q1, q2]
    run.err = err
    run.iterations = it
    run.max_step = max_step
    return run


def _stop_at_limits(d1, d2, d3, b1, b2, b3, f1, f2, f3, j1x, j1y, j2x, j2y, j3x, j3y, ex, ey, lam2):
    """``_dls_py``'s step (d1, d2, d3) when joints ``b1``..``b3`` (some, not all) cross a limit: those stop
    at it (steps f1..f3), the others are solved again, on their own columns, for what is left of the error
    (the step unchanged when that has no solution). Out of the loop: it runs on few steps."""
    rx = ex - j1x * f1 - j2x * f2 - j3x * f3
    ry = ey - j1y * f1 - j2y * f2 - j3y * f3
    r = _step3(
        0.0 if b1 else j1x, 0.0 if b1 else j1y, 0.0 if b2 else j2x, 0.0 if b2 else j2y,
        0.0 if b3 else j3x, 0.0 if b3 else j3y, rx, ry, lam2,
    )  # fmt: skip
    if r is None:
        return d1, d2, d3
    return (f1 if b1 else r[0]), (f2 if b2 else r[1]), (f3 if b3 else r[2])


def dls_iterate(
    links,
    target,
    q0,
    *,
    q_min=None,
    q_max=None,
    tol=DEFAULT_TOL_M,
    max_iter=DEFAULT_MAX_ITER,
    damping=None,
    adaptive=True,
):
    """Damped least squares iterations on the tool point.

    ``damping`` (m) is lambda in J^T (J J^T + lambda^2 I)^-1 e. With
    ``adaptive`` the damping starts there (default 1% of the reach) and is cut
    10x after every step that lowers the error and raised 10x after one that
    does not (the step is then discarded); iteration stops when the error is
    below ``tol`` (m) or the damping has grown so large that no step helps.
    With ``adaptive=False`` every step is taken with the fixed damping, as in
    textbook DLS. Steps are clipped to [q_min, q_max] when given.
    Returns a private run record; use ``solve`` for the public API.
    """
    links, tx, ty, lo, hi, q = _prepare(links, target, q0, q_min, q_max)
    reach = sum(links)
    if adaptive:
        return dls_fast(links, tx, ty, q, lo, hi, tol, max_iter, 0.01 * reach if damping is None else float(damping))
    # Textbook DLS: every step taken with the fixed damping (the 1e-12 keeps
    # lambda = 0 from dividing by zero at a singular pose, as the seed does).
    return _full_steps(links, tx, ty, lo, hi, q, float(damping or 0.0) ** 2 + 1e-12, tol, max_iter)


def _full_steps(links, tx, ty, lo, hi, q, lam2, tol, max_iter):
    """Take every step J^T (J J^T + lam2 I)^-1 e with a fresh Jacobian: Newton
    (pseudo-inverse) for lam2 = 0, textbook DLS otherwise."""
    x, y, jx, jy = _fk_jac(links, q)
    run = _Run(q=q, err=math.hypot(tx - x, ty - y), fk_evals=1, jac_evals=1)
    while run.err > tol and run.iterations < max_iter:
        dq = _step(jx, jy, tx - x, ty - y, lam2)
        if dq is None:
            break
        run.iterations += 1
        run.max_step = max(run.max_step, max(abs(v) for v in dq))
        q = clip_pose([a + b for a, b in zip(q, dq)], lo, hi)
        x, y, jx, jy = _fk_jac(links, q)
        run.fk_evals += 1
        run.jac_evals += 1
        run.err = math.hypot(tx - x, ty - y)
        if not math.isfinite(run.err):
            break
    run.q = q
    return run


def newton_iterate(links, target, q0, *, q_min=None, q_max=None, tol=DEFAULT_TOL_M, max_iter=DEFAULT_MAX_ITER):
    """Newton-Raphson: a fresh Jacobian each iteration, full step J^+ e."""
    links, tx, ty, lo, hi, q = _prepare(links, target, q0, q_min, q_max)
    return _full_steps(links, tx, ty, lo, hi, q, 0.0, tol, max_iter)


def broyden_iterate(links, target, q0, *, q_min=None, q_max=None, tol=DEFAULT_TOL_M, max_iter=DEFAULT_MAX_ITER):
    """Broyden's method: Jacobian once at q0, then rank-1 secant updates
    B += (y - B s) s^T / (s^T s) with s the joint step and y the tool-point change."""
    links, tx, ty, lo, hi, q = _prepare(links, target, q0, q_min, q_max)
    x, y, bx, by = _fk_jac(links, q)
    run = _Run(q=q, err=math.hypot(tx - x, ty - y), fk_evals=1, jac_evals=1)
    while run.err > tol and run.iterations < max_iter:
        dq = _step(bx, by, tx - x, ty - y, 0.0)
        if dq is None:
            break
        run.iterations += 1
        q_new = clip_pose([a + b for a, b in zip(q, dq)], lo, hi)
        s = [a - b for a, b in zip(q_new, q)]
        run.max_step = max(run.max_step, max(abs(v) for v in s))
        nx, ny = tool_xy(links, q_new)
        run.fk_evals += 1
        ss = sum(v * v for v in s)
        if ss == 0.0:
            break
        rx = (nx - x) - sum(b * v for b, v in zip(bx, s))
        ry = (ny - y) - sum(b * v for b, v in zip(by, s))
        bx = [b + rx * v / ss for b, v in zip(bx, s)]
        by = [b + ry * v / ss for b, v in zip(by, s)]
        q, x, y = q_new, nx, ny
        run.err = math.hypot(tx - x, ty - y)
        if not math.isfinite(run.err):
            break
    run.q = q
    return run


def inside_limits(q, lo, hi, tol=1e-9) -> bool:
    return all(a - tol <= v <= b + tol for v, a, b in zip(q, lo, hi))
