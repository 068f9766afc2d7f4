"""Inverse kinematics: joint angles (rad) that put the tool point on a target (m).

Methods, all returning an ``IKResult``:

- ``dls`` (default): damped least squares with adaptive (Levenberg-Marquardt)
  damping, steps clipped to the joint limits, warm-started from ``q0``; if that
  stalls it restarts from the closed-form solutions nearest ``q0``. A redundant
  3-link arm without ``phi`` then slides along its self-motion to the pose
  nearest ``q0`` (keeping 5 degrees from the limits where it can).
- ``analytic``: closed form. 2 links: elbow up/down, the branch inside the
  limits nearest ``q0``. 3 links with ``phi``: the wrist point solved as a
  2-link arm. 3 links without ``phi``: the tool angle nearest ``q0`` for which
  a pose inside the limits exists.
- ``newton``: Newton-Raphson (minimum-norm step for 3 links), full Jacobian each
  iteration.
- ``broyden``: Broyden's quasi-Newton, one Jacobian at the start then rank-1
  updates from the residual change.

Out-of-reach targets are never "ok": the solver moves to the closest point
of the reach annulus (the arm stretched towards the target) and reports the
shortfall in metres. A target no pose inside the joint limits reaches (behind
the shoulder, say), without ``phi``: ``dls`` and ``analytic`` take the pose
inside the limits closest to it (``_closest``, exact) and the shortfall is its
distance. No method reports ok for a pose outside the joint limits.

``dls`` without ``phi`` runs whole in a small C kernel (``armctl._ikcore``,
built by ``pip install``): the iterations, the start-pose search, the slide and
the closest pose. Without a C compiler the same algorithm in pure Python (2x2
and 2x3 algebra written out in plain floats, ``_dls_py``) gives the same
results (to rounding), several times slower. ``solve_batch`` solves many
targets at once: the C kernel row by row, or vectorised numpy with ``phi``.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field

import numpy as np

from .arm import Arm
from .errors import BadInputError

try:
    from . import _ikcore as _core
except ImportError:  # not built (no C compiler at install): the pure-Python kernel
    _core = None

METHODS = ("dls", "analytic", "newton", "broyden")
DEFAULT_TOL_M = 1e-9
DEFAULT_MAX_ITER = 100


@dataclass
class IKResult:
    """Outcome of one IK solve.

    q: joint angles (rad); ok: the tool is on the target within ``tol`` and
    q is inside the joint limits; error_m: distance from the tool to the target
    (m); shortfall_m: for an unreachable target, how far it lies outside what
    the arm can reach (m), else 0; reason: why not ok, else None.
    """

    q: np.ndarray
    ok: bool
    error_m: float
    iterations: int
    fk_evals: int
    jacobian_evals: int
    method: str
    reason: str | None = None
    shortfall_m: float = 0.0
    max_step_rad: float = 0.0
    restarts: int = 0

    @property
    def reachable(self) -> bool:
        return self.shortfall_m == 0.0


@dataclass
class BatchIKResult:
    """Outcome of ``solve_batch``: one row per target."""

    q: np.ndarray
    ok: np.ndarray
    error_m: np.ndarray
    iterations: np.ndarray
    shortfall_m: np.ndarray
    method: str = "dls"
    reasons: list = field(default_factory=list)


# ----------------------------------------------------------------------------
# Scalar kernels (plain floats, n = 2 or 3)


def _fk(links, q):
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


def _clip(q, lo, hi):
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
    return links, float(target[0]), float(target[1]), lo, hi, _clip([float(v) for v in q0], lo, hi)


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


def _dls_fast(links, tx, ty, q, lo, hi, tol, max_iter, lam):
    """Adaptive DLS with joint clamping: the C kernel when built, else ``_dls_py``."""
    if _core is None:
        return _dls_py(links, tx, ty, q, lo, hi, tol, max_iter, lam)
    q, err, it, fk_evals, jac_evals, max_step = _core.dls(links, lo, hi, tx, ty, q, tol, max_iter, lam)
    return _Run(list(q), err, it, fk_evals, jac_evals, max_step)


def _dls_py(links, tx, ty, q, lo, hi, tol, max_iter, lam):
    """Adaptive DLS with joint clamping, unrolled for up to three joints.

    A 2-link arm runs as three links with a zero-length third link whose joint
    is pinned at 0: its Jacobian column is zero, so it never moves. Written
    out in locals because at this size Python's per-operation cost is the
    whole cost; the algorithm is the one ``dls_iterate`` documents.
    ``_ikcore.c`` is this function in C, step for step: change both together.
    """
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
        # Joints whose step crosses a limit stop at it; the others are solved
        # again, on their own columns, for what is left of the error.
        b1 = (d1 < 0.0 and q1 + d1 < lo1) or (d1 > 0.0 and q1 + d1 > hi1)
        b2 = (d2 < 0.0 and q2 + d2 < lo2) or (d2 > 0.0 and q2 + d2 > hi2)
        b3 = (d3 < 0.0 and q3 + d3 < lo3) or (d3 > 0.0 and q3 + d3 > hi3)
        if (b1 or b2 or b3) and not (b1 and b2 and b3):
            f1 = ((lo1 if d1 < 0.0 else hi1) - q1) if b1 else 0.0
            f2 = ((lo2 if d2 < 0.0 else hi2) - q2) if b2 else 0.0
            f3 = ((lo3 if d3 < 0.0 else hi3) - q3) if b3 else 0.0
            rx = ex - j1x * f1 - j2x * f2 - j3x * f3
            ry = ey - j1y * f1 - j2y * f2 - j3y * f3
            r = _step3(
                0.0 if b1 else j1x,
                0.0 if b1 else j1y,
                0.0 if b2 else j2x,
                0.0 if b2 else j2y,
                0.0 if b3 else j3x,
                0.0 if b3 else j3y,
                rx,
                ry,
                lam2,
            )
            if r is not None:
                d1 = f1 if b1 else r[0]
                d2 = f2 if b2 else r[1]
                d3 = f3 if b3 else r[2]
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
        return _dls_fast(links, tx, ty, q, lo, hi, tol, max_iter, 0.01 * reach if damping is None else float(damping))
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
        q = _clip([a + b for a, b in zip(q, dq)], lo, hi)
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
        q_new = _clip([a + b for a, b in zip(q, dq)], lo, hi)
        s = [a - b for a, b in zip(q_new, q)]
        run.max_step = max(run.max_step, max(abs(v) for v in s))
        nx, ny = _fk(links, q_new)
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


# ----------------------------------------------------------------------------
# Closed form


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


def _nearest_turn(angle: float, ref: float, lo: float, hi: float) -> float | None:
    """angle + 2*pi*k nearest ``ref`` inside [lo, hi], or None."""
    if lo <= angle <= hi and abs(angle - ref) <= math.pi:
        return angle
    k = round((ref - angle) / (2.0 * math.pi))
    best = None
    for kk in (k - 1, k, k + 1):
        v = angle + 2.0 * math.pi * kk
        if lo - 1e-9 <= v <= hi + 1e-9 and (best is None or abs(v - ref) < abs(best - ref)):
            best = min(max(v, lo), hi)
    return best


def _fit(q, q0, lo, hi):
    """Each joint angle at its turn nearest q0 inside the limits.

    Returns (violation, pose): violation is how far (rad, summed) the pose
    lies outside the limits, 0 if inside; the pose is clipped to the limits."""
    pose = []
    over = 0.0
    for i, v in enumerate(q):
        w = _nearest_turn(v, q0[i], lo[i], hi[i])
        if w is None:
            w = v + 2.0 * math.pi * round((0.5 * (lo[i] + hi[i]) - v) / (2.0 * math.pi))
            over += max(lo[i] - w, w - hi[i], 0.0)
            w = min(max(w, lo[i]), hi[i])
        pose.append(w)
    return over, pose


def _pose_at_phi(links, goal, ph, branch):
    """3-link closed form at tool angle ``ph``: branch 0 elbow up, 1 elbow down."""
    sols = analytic_2link(links[0], links[1], goal[0] - links[2] * math.cos(ph), goal[1] - links[2] * math.sin(ph))
    if not sols:
        return None
    q1, q2 = sols[min(branch, len(sols) - 1)]
    return (q1, q2, ph - q1 - q2)


_GOLDEN = (math.sqrt(5.0) - 1.0) / 2.0


_COARSE_FIRST = (0, 30, -30, 60, -60, 90, -90, 120, -120, 150, -150, 180)


def _candidates(links, lo, hi, goal, phi, q0, want=6, coarse=False, coarse_only=False):
    """Closed-form poses reaching ``goal`` inside the limits, nearest q0 first,
    and near misses (poses clipped to the limits, least violation first) as
    starting points for an iterative solver.

    3 links without phi: the tool angle is searched on a 5-degree grid spreading
    out from the current one (the target's own direction, the only one at full
    reach, comes second) until ``want`` poses are found; ``coarse`` tries every
    30 degrees first (starting points for a restart need not be the nearest).
    If no grid angle fits the limits, the violation is minimised over the tool
    angle around the best near misses, which finds windows narrower than the grid. ``coarse_only``:
    the coarse angles alone (what the whole search finds first, if ``want`` poses are among them).
    """
    out, misses = [], []
    if len(links) == 2 or phi is not None:
        sols = (
            analytic_2link(links[0], links[1], goal[0], goal[1])
            if len(links) == 2
            else [q for q in (_pose_at_phi(links, goal, phi, b) for b in (0, 1)) if q is not None]
        )
        for q in sols:
            over, pose = _fit(q, q0, lo, hi)
            (misses if over > 0 else out).append((over, pose))
    else:
        phi0 = sum(q0)
        phis = [phi0 + math.radians(d) * s for d in range(0, 181, 5) for s in ((1,) if d in (0, 180) else (1, -1))]
        phis.insert(1, math.atan2(goal[1], goal[0]))
        if coarse:
            phis = [phi0 + math.radians(d) for d in _COARSE_FIRST] + ([] if coarse_only else phis)
        grid_misses = []
        for ph in phis:
            for b in (0, 1):
                q = _pose_at_phi(links, goal, ph, b)
                if q is None:
                    continue
                over, pose = _fit(q, q0, lo, hi)
                if over > 0:
                    grid_misses.append((over, ph, b, pose))
                else:
                    out.append((0.0, pose))
            if len(out) >= want:
                break
        if not out and not coarse_only:
            step = math.radians(5.0)

            def violation(p, b):
                q = _pose_at_phi(links, goal, p, b)
                return (math.inf, None) if q is None else _fit(q, q0, lo, hi)

            for _, ph, b, _pose in sorted(grid_misses)[:4]:
                a, c = ph - step, ph + step
                x1, x2 = c - _GOLDEN * (c - a), a + _GOLDEN * (c - a)
                f1, f2 = violation(x1, b)[0], violation(x2, b)[0]
                for _ in range(40):
                    if min(f1, f2) == 0.0:
                        break
                    if f1 < f2:
                        c, x2, f2 = x2, x1, f1
                        x1 = c - _GOLDEN * (c - a)
                        f1 = violation(x1, b)[0]
                    else:
                        a, x1, f1 = x1, x2, f2
                        x2 = a + _GOLDEN * (c - a)
                        f2 = violation(x2, b)[0]
                over, pose = violation(x1 if f1 <= f2 else x2, b)
                if over == 0.0:
                    out.append((0.0, pose))
                    break
        misses = [(over, pose) for over, _, _, pose in grid_misses]
    out.sort(key=lambda item: sum((a - b) ** 2 for a, b in zip(item[1], q0)))
    misses.sort(key=lambda item: item[0])
    return [pose for _, pose in out], [pose for _, pose in misses]


# ----------------------------------------------------------------------------
# The closest pose inside the limits (targets no pose inside them reaches)

_TIE_M = 1e-12  # candidates this close in distance tie: the one nearer q0 wins
_DEGENERATE_M = 1e-12  # a target this close to a joint lies in every direction from it


def _closest(links, lo, hi, tx, ty, q0):
    """The pose inside the joint limits whose tool point is closest to (tx, ty): (distance in m, pose).

    Exact, by enumeration. The closest pose is a stationary point of the distance on one face of the box
    of joint limits (each joint at its lower limit, at its upper limit, or free): ``_face`` lists them.
    Each candidate takes the turn of each angle nearest q0 inside the limits (none: not a candidate).
    The nearest of all wins; ties (within _TIE_M) go to the pose nearest q0. ``_ikcore.c`` does the
    same, candidate for candidate."""
    n = len(links)
    best_d = best_near = math.inf
    best = None
    for face in _FACES[n]:
        for q in _face(links, lo, hi, face, tx, ty, q0)[0]:
            pose = _turns(q, q0, lo, hi)
            if pose is None:
                continue
            x, y = _fk(links, pose)
            d = math.sqrt((tx - x) * (tx - x) + (ty - y) * (ty - y))
            near = _dsq(pose, q0)
            if d < best_d - _TIE_M or (d <= best_d + _TIE_M and near < best_near):
                best_d, best_near, best = d, near, pose
    return best_d, best


def _closest_at_phi(links, lo, hi, tx, ty, phi, q0):
    """3 links, tool angle ``phi`` fixed: the pose inside the joint limits whose tool point is closest to
    (tx, ty), as (distance in m, pose) (pose None if no pose inside the limits has this tool angle).

    With phi fixed the tool is the wrist point plus a fixed offset, so this is the closest point to the
    wrist target W of a 2-link arm whose (q1, q2) is held in the box of their limits and in the band
    ``lo3 <= phi - q1 - q2 <= hi3`` (the wrist joint's limits). Exact, by enumeration of the stationary
    points: inside (the closed form; the arm straight or folded towards W when W is out of its reach), on
    each edge (q1 at a limit; q2 at a limit: the arm turns rigidly;
    the forearm's angle q1 + q2 at a band edge: the elbow turns on its circle) and at the corners."""
    l1, l2, l3 = links
    wx, wy = tx - l3 * math.cos(phi), ty - l3 * math.sin(phi)
    c_band = (phi - lo[2], phi - hi[2])  # the forearm's absolute angle where the wrist is at a limit
    pairs = list(analytic_2link(l1, l2, wx, wy))
    for a in (lo[0], hi[0]):  # upper arm at a limit: the forearm points at W from the elbow
        pairs.append((a, math.atan2(wy - l1 * math.sin(a), wx - l1 * math.cos(a)) - a))
        pairs += [(a, b) for b in (lo[1], hi[1])] + [(a, c - a) for c in c_band]
    for b in (lo[1], hi[1], 0.0, math.pi):  # elbow at a limit (or straight, folded: W out of reach): the
        # arm turns rigidly about the shoulder
        pairs.append((math.atan2(wy, wx) - math.atan2(l2 * math.sin(b), l1 + l2 * math.cos(b)), b))
        pairs += [(c - b, b) for c in c_band]
    for c in c_band:  # wrist at a limit: the forearm's direction is fixed, the elbow turns on its circle
        q1 = math.atan2(wy - l2 * math.sin(c), wx - l2 * math.cos(c))
        pairs.append((q1, c - q1))
    best_d = best_near = math.inf
    best = None
    for q1, q2 in pairs:
        pose = _turns((q1, q2, phi - q1 - q2), q0, lo, hi)
        if pose is None:
            continue
        x, y = _fk(links, pose)
        d = math.sqrt((tx - x) * (tx - x) + (ty - y) * (ty - y))
        near = _dsq(pose, q0)
        if d < best_d - _TIE_M or (d <= best_d + _TIE_M and near < best_near):
            best_d, best_near, best = d, near, pose
    return best_d, best


def _face(links, lo, hi, face, tx, ty, q0):
    """The stationary points of the distance to (tx, ty) on one face of the box of limits (``face``: per
    joint 0 at its lower limit, 1 at its upper limit, 2 free), as raw joint angles, and how many of them
    (the first) reach the target.

    With free joints F, a stationary point either reaches the target or has every free joint, the tool
    and the target on one line (the error is normal to each free joint's Jacobian column). So: one free
    joint turns what follows it towards the target; two free joints are a 2-link arm (its closed form,
    then straight or folded along the line from the first to the target, either way round); three are
    straight or folded along the line through the base and the target. A degenerate face (a free joint
    with nothing after it, or a chain folded onto itself) has none: the faces around it cover it."""
    n = len(links)
    pi = math.pi
    q = [lo[i] if s == 0 else hi[i] for i, s in enumerate(face)]
    free = [i for i, s in enumerate(face) if s == 2]
    if not free:
        return [q], 0
    i = free[0]
    # the base of joint i and the absolute angle of the link before it (joints before i are fixed)
    px = py = before = 0.0
    for k in range(i):
        before += q[k]
        px += links[k] * math.cos(before)
        py += links[k] * math.sin(before)
    wx, wy = tx - px, ty - py
    toward = math.sqrt(wx * wx + wy * wy) > _DEGENERATE_M  # else the target is at joint i: any direction
    if len(free) == 1:
        vx, vy = _chain(links, q, i, n)
        if math.sqrt(vx * vx + vy * vy) <= _DEGENERATE_M:
            return [], 0
        q[i] = (math.atan2(wy, wx) - math.atan2(vy, vx) - before) if toward else q0[i]
        return [q], 0
    if len(free) == 2:
        j = free[1]
        ux, uy = _chain(links, q, i, j)
        vx, vy = _chain(links, q, j, n)
        a, b = math.sqrt(ux * ux + uy * uy), math.sqrt(vx * vx + vy * vy)
        if a <= _DEGENERATE_M or b <= _DEGENERATE_M:
            return [], 0
        alpha, beta = math.atan2(uy, ux), math.atan2(vy, vx)
        between = 0.0
        for k in range(i + 1, j):
            between += q[k]
        # the 2-link arm (a, b) from joint i: (angle of its first link, its elbow angle)
        exact = analytic_2link(a, b, wx, wy)
        phi_w = math.atan2(wy, wx) if toward else before + q0[i] + alpha
        out = []
        for t1, t2 in exact + [(phi_w, 0.0), (phi_w, pi), (phi_w + pi, 0.0), (phi_w + pi, pi)]:
            q[i] = t1 - alpha - before
            q[j] = t2 + alpha - beta - between
            out.append(list(q))
        return out, len(exact)
    phi_w = math.atan2(ty, tx) if toward else q0[0]
    return [[d, s2, s3] for d in (phi_w, phi_w + pi) for s2 in (0.0, pi) for s3 in (0.0, pi)], 0


def _turns(q, q0, lo, hi):
    """Each angle of q at its turn nearest q0 inside the limits; None if one has none."""
    pose = []
    for i, v in enumerate(q):
        w = _nearest_turn(v, q0[i], lo[i], hi[i])
        if w is None:
            return None
        pose.append(w)
    return pose


def _reachable3(links, lo, hi, goal, q0):
    """Whether a pose inside the limits of a 3-link arm reaches ``goal`` (in the reach annulus): on a face
    with one joint at a limit (closed form), or anywhere on a self-motion loop that lies inside the limits
    whole (the loop's poses at one tool angle tested). A loop that meets the limits only on an edge is
    missed (``_closest`` finds it): True is certain, False nearly so."""
    for face in _FACES1:
        poses, exact = _face(links, lo, hi, face, goal[0], goal[1], q0)
        for q in poses[:exact]:
            if _turns(q, q0, lo, hi) is not None:
                return True
    # The wrist (goal - l3 e^{i phi}) lies in the 2-link annulus for cos(phi - theta) in [ca, cb]: one or
    # two arcs of tool angles, a loop each (the two branches meet at the arc's ends), or the whole circle
    # (two loops, one a branch).
    l1, l2, l3 = links
    r = math.sqrt(goal[0] * goal[0] + goal[1] * goal[1])
    theta = math.atan2(goal[1], goal[0])
    if r <= _DEGENERATE_M:  # the wrist on a circle about the base: the whole circle or nothing
        ca, cb = (-2.0, 2.0) if abs(l1 - l2) <= l3 <= l1 + l2 else (2.0, -2.0)
    else:
        ca = (r * r + l3 * l3 - (l1 + l2) * (l1 + l2)) / (2.0 * l3 * r)
        cb = (r * r + l3 * l3 - (l1 - l2) * (l1 - l2)) / (2.0 * l3 * r)
    if ca > 1.0 or cb < -1.0:
        samples = []
    elif cb >= 1.0 and ca <= -1.0:
        samples = [(theta, 0), (theta, 1)]
    elif cb >= 1.0:
        samples = [(theta, 0)]
    elif ca <= -1.0:
        samples = [(theta + math.pi, 0)]
    else:
        mid = 0.5 * (math.acos(cb) + math.acos(ca))
        samples = [(theta + mid, 0), (theta - mid, 0)]
    for ph, b in samples:
        q = _pose_at_phi(links, goal, ph, b)
        if q is not None and _fit(q, q0, lo, hi)[0] == 0.0:
            return True
    return False


def _chain(links, q, i, j):
    """The vector from joint i to joint j (j = n: the tool) in the frame of link i, q fixed in between."""
    rel = x = y = 0.0
    for k in range(i, j):
        if k > i:
            rel += q[k]
        x += links[k] * math.cos(rel)
        y += links[k] * math.sin(rel)
    return x, y


def _dsq(q, q0):
    s = 0.0
    for a, b in zip(q, q0):
        s += (a - b) * (a - b)
    return s


# Each joint at its lower limit (0), its upper limit (1) or free (2); the first joint varies slowest.
_FACES = {n: list(itertools.product((0, 1, 2), repeat=n)) for n in (2, 3)}
_FACES1 = [face for face in _FACES[3] if face.count(2) == 2]  # 3 links, one joint at a limit


# ----------------------------------------------------------------------------
# Redundancy: the nearest pose (3 links, no tool angle)

_SLIDE_MAX, _SLIDE_STEP, _SLIDE_HALVINGS, _SLIDE_NEWTON = 50, 0.3, 10, 6
_SLIDE_SKIP, _SLIDE_CONV, _SLIDE_TINY = 1e-4, 1e-8, 1e-6
_SLIDE_MARGIN = math.radians(5.0)


def _arm3(links, q):
    """The link vectors of a 3-link arm at q: (x components, y components), m."""
    a2 = q[0] + q[1]
    a3 = a2 + q[2]
    c = (links[0] * math.cos(q[0]), links[1] * math.cos(a2), links[2] * math.cos(a3))
    s = (links[0] * math.sin(q[0]), links[1] * math.sin(a2), links[2] * math.sin(a3))
    return c, s


def _self_motion(c, s):
    """The unit tangent t of a 3-link arm's self-motion (the null vector of its 2x3 Jacobian: the joint
    direction that keeps the tool point still) and its derivative dt/ds along the motion (s: arc length
    in joint space), from the link vectors; None at a singular pose."""
    j3x, j3y = -s[2], c[2]
    j2x, j2y = j3x - s[1], j3y + c[1]
    j1x, j1y = j2x - s[0], j2y + c[0]
    u1, u2, u3 = j2x * j3y - j3x * j2y, j3x * j1y - j1x * j3y, j1x * j2y - j2x * j1y
    norm = math.sqrt(u1 * u1 + u2 * u2 + u3 * u3)
    if not norm > 1e-12:
        return None
    t1, t2, t3 = u1 / norm, u2 / norm, u3 / norm
    # along t the absolute link angles turn at T1, T2, T3: the Jacobian's columns change by dJ, and
    # u = Jx x Jy by dJx x Jy + Jx x dJy
    T1 = t1
    T2 = T1 + t2
    T3 = T2 + t3
    d3x, d3y = -(c[2] * T3), -(s[2] * T3)
    d2x, d2y = d3x - c[1] * T2, d3y - s[1] * T2
    d1x, d1y = d2x - c[0] * T1, d2y - s[0] * T1
    du1 = (d2x * j3y - d3x * j2y) + (j2x * d3y - j3x * d2y)
    du2 = (d3x * j1y - d1x * j3y) + (j3x * d1y - j1x * d3y)
    du3 = (d1x * j2y - d2x * j1y) + (j1x * d2y - j2x * d1y)
    td = t1 * du1 + t2 * du2 + t3 * du3
    return (t1, t2, t3), ((du1 - t1 * td) / norm, (du2 - t2 * td) / norm, (du3 - t3 * td) / norm)


def _onto_goal(links, gx, gy, q, k, eps, newton):
    """Newton steps on the two joints other than k (joint k stays) until the tool is within eps of
    (gx, gy): (pose, link vectors, fk evaluations, steps); pose None if the error stops halving."""
    q = list(q)
    i, j = (1, 2) if k == 0 else (0, 2) if k == 1 else (0, 1)
    prev = math.inf
    n = 0
    while True:
        c, s = _arm3(links, q)
        ex = gx - (c[0] + c[1] + c[2])
        ey = gy - (s[0] + s[1] + s[2])
        e = math.sqrt(ex * ex + ey * ey)
        if e <= eps:
            return q, c, s, n + 1, n
        if not e < 0.5 * prev or n == newton:
            return None, c, s, n + 1, n
        prev = e
        j3x, j3y = -s[2], c[2]
        j2x, j2y = j3x - s[1], j3y + c[1]
        jx, jy = (j2x - s[0], j2x, j3x), (j2y + c[0], j2y, j3y)
        a, b, cc, dd = jx[i], jx[j], jy[i], jy[j]
        det = a * dd - b * cc
        if not abs(det) > 1e-300:
            return None, c, s, n + 1, n
        q[i] += (dd * ex - b * ey) / det
        q[j] += (a * ey - cc * ex) / det
        n += 1


def _slide(P: _Plain, gx, gy, q0, q, tol, max_iter):
    """Slide a 3-link pose on the goal along its self-motion towards q0 to the nearest such pose that
    keeps _SLIDE_MARGIN from every joint limit: the local minimum of |q - q0|^2 along the motion,
    downhill from q.

    DLS from q0 takes the minimum-norm path, which can end far from the nearest pose (from home on
    seed-3link, for 1 target in 4 over 10 degrees further; test_ik checks the slide's result against
    a search). Unless q is already the nearest to first order (_SLIDE_SKIP), each step is a Newton
    step on the slope g = t . (q - q0) along the unit tangent t, with its exact derivative
    1 + (q - q0) . dt/ds, at most _SLIDE_STEP and the radius of curvature; the pose goes there to
    second order (q + h t + h^2/2 dt/ds), then back onto the goal by Newton on the two joints other
    than the one that moves most (exact to 1e-3 tol). A step is kept if the pose came nearer, else
    halved. A step that would take a joint into the margin stops there and pins that joint (the pose
    is then that one). The margin keeps poses off the limits (a pose jammed against one is a
    calibration error away from outside it); a joint already inside the margin may stay there or move
    out of it. Stops when |g| < _SLIDE_CONV (rad). Returns (q, iterations, fk_evals, jac_evals).
    ``_ikcore.c`` does the same, step for step."""
    links = P.links
    lo = [min(a + min(_SLIDE_MARGIN, 0.25 * (b - a)), v) for a, b, v in zip(P.lo, P.hi, q)]
    hi = [max(b - min(_SLIDE_MARGIN, 0.25 * (b - a)), v) for a, b, v in zip(P.lo, P.hi, q)]
    newton = max(0, min(max_iter, _SLIDE_NEWTON))
    eps = 1e-3 * tol
    d = _dsq(q, q0)
    c, s = _arm3(links, q)
    it = jac_evals = 0
    fk_evals = 1
    for k in range(_SLIDE_MAX):
        motion = _self_motion(c, s)
        if motion is None:
            break
        t, dt = motion
        w1, w2, w3 = q[0] - q0[0], q[1] - q0[1], q[2] - q0[2]
        g = t[0] * w1 + t[1] * w2 + t[2] * w3
        if abs(g) < _SLIDE_CONV or (k == 0 and abs(g) < _SLIDE_SKIP):
            break  # the nearest pose (the first time: to first order, and q stays as it is)
        kappa = math.sqrt(dt[0] * dt[0] + dt[1] * dt[1] + dt[2] * dt[2])
        step = min(_SLIDE_STEP, 1.0 / kappa) if kappa > 0.0 else _SLIDE_STEP
        slope = 1.0 + (dt[0] * w1 + dt[1] * w2 + dt[2] * w3)
        # (where the distance curves down, downhill as far as a step goes)
        alpha = -g / slope if slope > 0.0 else -math.copysign(step, g)
        alpha = min(max(alpha, -step), step)
        moved = pinned = False
        tries = 0
        while not moved and tries <= _SLIDE_HALVINGS:
            tries += 1
            # A step that takes a joint into the margin stops there; that joint stays pinned while
            # the other two come back onto the goal (where the self-motion meets the margin: the
            # nearest pose when the nearest lies beyond it).
            frac, pin = 1.0, -1
            for m in range(3):
                dq = alpha * t[m]
                room = (hi[m] - q[m]) / dq if dq > 0.0 else (lo[m] - q[m]) / dq if dq < 0.0 else 1.0
                if room < frac:
                    frac, pin = room, m
            h = frac * alpha
            pred = [q[m] + h * t[m] + 0.5 * h * h * dt[m] for m in range(3)]
            if pin >= 0:
                fixed = pin
                pred[pin] = lo[pin] if alpha * t[pin] < 0.0 else hi[pin]
            else:
                fixed = 0
                if abs(t[1]) > abs(t[fixed]):
                    fixed = 1
                if abs(t[2]) > abs(t[fixed]):
                    fixed = 2
            r, rc, rs, evals, steps = _onto_goal(links, gx, gy, pred, fixed, eps, newton)
            fk_evals += evals
            it += steps
            jac_evals += steps
            if r is not None and _inside(r, lo, hi, 0.0):
                dn = _dsq(r, q0)
                # (a step this short is kept whatever rounding does to the distance)
                if dn < d or abs(h) < _SLIDE_TINY:
                    q, c, s, d = r, rc, rs, dn
                    moved, pinned = True, pin >= 0
                    continue
            alpha *= 0.5
        if not moved or pinned or abs(h) < 1e-10:
            break
    return q, it, fk_evals, jac_evals


# ----------------------------------------------------------------------------
# Public API


class _Plain:
    """An arm's numbers as plain Python floats (cached per arm) for the scalar path."""

    __slots__ = ("arm", "links", "lo", "hi", "home", "two")

    def __init__(self, arm: Arm):
        self.arm = arm
        self.links = [float(v) for v in arm.links_m]
        self.lo = [float(v) for v in arm.q_min]
        self.hi = [float(v) for v in arm.q_max]
        self.home = [float(v) for v in arm.home_rad]
        self.two = None


_PLAIN: dict = {}


def _plain(arm: Arm) -> _Plain:
    p = _PLAIN.get(id(arm))
    if p is None or p.arm is not arm:
        if len(_PLAIN) > 64:
            _PLAIN.clear()
        p = _PLAIN[id(arm)] = _Plain(arm)
    return p


def _inside(q, lo, hi, tol=1e-9) -> bool:
    return all(a - tol <= v <= b + tol for v, a, b in zip(q, lo, hi))


def _check_inputs(arm: Arm, P: _Plain, target, phi, q0):
    try:
        tx, ty = target
        tx, ty = float(tx), float(ty)
    except (TypeError, ValueError):
        raise BadInputError(f"target must be two numbers (x, y) in metres, got {target!r}") from None
    if not (math.isfinite(tx) and math.isfinite(ty)):
        raise BadInputError(f"target ({tx}, {ty}) is not finite")
    if phi is not None:
        if arm.n != 3:
            raise BadInputError(f"a tool angle (phi) needs a 3-link arm; '{arm.name}' has {arm.n} links")
        phi = float(phi)
        if not math.isfinite(phi):
            raise BadInputError(f"tool angle phi {phi} is not finite")
    if q0 is None:
        q0l = P.home
    else:
        try:
            # (an array's own list first: iterating numpy scalars is slow)
            q0l = [float(v) for v in (q0.tolist() if isinstance(q0, np.ndarray) else q0)]
        except (TypeError, ValueError):
            raise BadInputError(f"start pose must be {arm.n} joint angles, got {q0!r}") from None
        if len(q0l) != arm.n:
            raise BadInputError(f"start pose needs {arm.n} joint angles for arm '{arm.name}', got {len(q0l)}")
        if not math.isfinite(sum(q0l)) and not all(math.isfinite(v) for v in q0l):
            raise BadInputError("start pose has a non-finite joint angle")
        q0l = _clip(q0l, P.lo, P.hi)
    return tx, ty, phi, q0l


def _kernel(method, links, goal, q0, lo, hi, tol, max_iter):
    if method == "dls":
        return _dls_fast(links, goal[0], goal[1], q0, lo, hi, tol, max_iter, 0.01 * (links[0] + links[1]))
    kernel = newton_iterate if method == "newton" else broyden_iterate
    return kernel(links, goal, q0, q_min=lo, q_max=hi, tol=tol, max_iter=max_iter)


def _iterate(method, P: _Plain, goal, phi, q0, tol, max_iter):
    if phi is None:
        return _kernel(method, P.links, goal, q0, P.lo, P.hi, tol, max_iter)
    # Tool angle given: solve the first two links for the wrist point, then
    # the wrist joint is what is left of phi.
    l3 = P.links[2]
    wrist = (goal[0] - l3 * math.cos(phi), goal[1] - l3 * math.sin(phi))
    run = _kernel(method, P.links[:2], wrist, q0[:2], P.lo[:2], P.hi[:2], tol, max_iter)
    q3 = phi - run.q[0] - run.q[1]
    q3c = _nearest_turn(q3, q0[2], P.lo[2], P.hi[2])
    run.q = [run.q[0], run.q[1], q3 if q3c is None else q3c]
    return run


def _reaches(P: _Plain, q, goal, phi, tol) -> bool:
    """q puts the tool on goal (and at phi) within tol, inside the limits."""
    x, y = _fk(P.links, q)
    if math.hypot(goal[0] - x, goal[1] - y) > tol:
        return False
    if phi is not None and abs(math.remainder(sum(q) - phi, 2.0 * math.pi)) * P.links[2] > tol:
        return False
    return _inside(q, P.lo, P.hi)


def _project(P: _Plain, tx, ty, phi):
    """Shortfall (m) outside the reach annulus and the closest point of it."""
    links = P.links
    ox = oy = 0.0
    if phi is None:
        r_max = sum(links)
        r_min = max(0.0, 2.0 * max(links) - r_max)
    else:
        ox, oy = links[2] * math.cos(phi), links[2] * math.sin(phi)
        r_max = links[0] + links[1]
        r_min = abs(links[0] - links[1])
    wx, wy = tx - ox, ty - oy
    r = math.hypot(wx, wy)
    # A target on the rim within rounding (fk of a straight pose) is reachable.
    if r > r_max:
        short = r - r_max
        return (0.0 if short < 1e-12 else short), (ox + wx * r_max / r, oy + wy * r_max / r)
    if r < r_min:
        if r == 0.0:
            return (0.0 if r_min < 1e-12 else r_min), (ox + r_min, oy)
        short = r_min - r
        return (0.0 if short < 1e-12 else short), (ox + wx * r_min / r, oy + wy * r_min / r)
    return 0.0, (tx, ty)


_BLOCKED = "no pose inside the joint limits reaches the target"


def _unreachable(arm: Arm, short: float, phi) -> str:
    return (
        f"unreachable: {short * 1000:.1f} mm outside the reach of arm '{arm.name}'"
        f"{'' if phi is None else ' at this tool angle'}"
    )


def solve(
    arm: Arm,
    target,
    *,
    phi: float | None = None,
    q0=None,
    method: str = "dls",
    tol: float = DEFAULT_TOL_M,
    max_iter: int = DEFAULT_MAX_ITER,
) -> IKResult:
    """Joint angles (rad) that put the tool point on ``target`` (x, y in m).

    ``phi`` (rad, 3 links only) also fixes the tool angle. ``q0`` (rad) is the
    current pose (default: home); solutions near it are preferred. ``tol`` is
    the position tolerance in metres. Bad input raises BadInputError; an
    unreachable target is not an exception but a result with ok False,
    ``shortfall_m`` > 0 and the arm stretched to the closest reachable point.
    An arm with a base or a parallelogram goes to ``armctl.ik_arm`` (targets
    (x, y, z) on a base), which solves its planar chain with this function.
    """
    if arm.layered:  # base / parallelogram layer (armctl/ik_arm.py), built on this planar solver
        return _layer().solve(arm, target, phi=phi, q0=q0, method=method, tol=tol, max_iter=max_iter)
    P = _plain(arm)
    if method == "dls" and phi is None and _core is not None:
        # The path below, in C, step for step; None (bad numbers): the path below says what is wrong.
        fast = _core.solve(P.links, P.lo, P.hi, target, P.home if q0 is None else q0, tol, max_iter)
        if fast is not None:
            q, err, iterations, fk_evals, jac_evals, max_step, restarts, short, blocked = fast
            reason = _BLOCKED if blocked else None if short == 0.0 else _unreachable(arm, short, phi)
            return IKResult(
                np.array(q), not reason, err, iterations, fk_evals, jac_evals, "dls", reason, short, max_step, restarts
            )
    if method not in METHODS:
        raise BadInputError(f"unknown IK method {method!r}; choose one of: {', '.join(METHODS)}")
    tx, ty, phi, q0 = _check_inputs(arm, P, target, phi, q0)
    short, goal = _project(P, tx, ty, phi)

    iterations = fk_evals = jac_evals = restarts = 0
    max_step = 0.0
    q = None
    hit = False
    if method == "analytic":
        cands = _candidates(P.links, P.lo, P.hi, goal, phi, q0, want=1)[0]
        q = cands[0] if cands else None
    else:
        # DLS starts from the closed-form pose nearest q0 when there is one
        # without a search: 2 links (it is the branch the user expects), a
        # given tool angle, and out of reach (the stretched pose is exact,
        # while iterating towards a singular pose converges only linearly).
        # A redundant 3-link arm starts from q0 itself: minimum-norm steps.
        tried_candidates = method == "dls" and (short > 0.0 or len(P.links) == 2 or phi is not None)
        if tried_candidates:
            found, misses = _candidates(P.links, P.lo, P.hi, goal, phi, q0, want=1)
            # (without a tool angle no other start reaches the goal: the closest pose below is the answer)
            starts = found[:1] if phi is None else (found[:1] or misses[:3] or [q0])
        else:
            starts = [q0]
        runs = 0
        while starts:
            start = starts.pop(0)
            restarts += runs > 0
            runs += 1
            run = _iterate(method, P, goal, phi, start, tol, max_iter)
            iterations += run.iterations
            fk_evals += run.fk_evals
            jac_evals += run.jac_evals
            max_step = max(max_step, run.max_step)
            # (DLS on the tool point: its run error is the distance to goal, and its pose is clamped)
            if method == "dls" and phi is None:
                hit = run.err <= tol and _inside(run.q, P.lo, P.hi)
            else:
                hit = _reaches(P, run.q, goal, phi, tol)
            if q is None or hit:
                q = run.q
            if hit:
                break
            if not starts and method == "dls" and not tried_candidates:
                # Stalled on a joint limit or in a local minimum: restart from
                # the closed-form poses nearest the start, inside the limits.
                tried_candidates = True
                found, misses = _candidates(P.links, P.lo, P.hi, goal, phi, q0, want=2, coarse=True, coarse_only=True)
                if phi is None and not found and not _reachable3(P.links, P.lo, P.hi, goal, q0):
                    # no pose inside the limits reaches the goal: the closest pose below is the answer,
                    # without the whole search that would find nothing
                    break
                if len(found) < 2:
                    found, misses = _candidates(P.links, P.lo, P.hi, goal, phi, q0, want=2, coarse=True)
                starts = found[:2] or misses[:3]
    closest = None
    if not hit and phi is None and (method == "dls" or q is None):
        # No start reached the goal: the pose inside the limits closest to the target (exact). It reaches
        # the goal when the searches missed a pose with a joint at a limit.
        closest, q = _closest(P.links, P.lo, P.hi, tx, ty, q0)
        x, y = _fk(P.links, q)
        hit = math.sqrt((goal[0] - x) * (goal[0] - x) + (goal[1] - y) * (goal[1] - y)) <= tol
    elif not hit and phi is not None:
        # The tool angle is given and no start reached the goal: the pose inside the limits closest to the
        # target at that tool angle (exact), never a pose outside them.
        closest, q_phi = _closest_at_phi(P.links, P.lo, P.hi, tx, ty, phi, q0)
        if q_phi is not None and (
            q is None or not _inside(q, P.lo, P.hi) or closest < math.dist(_fk(P.links, q), (tx, ty))
        ):
            q = q_phi
            x, y = _fk(P.links, q)
            hit = _reaches(P, q, goal, phi, tol)
    if hit and method == "dls" and phi is None and len(P.links) == 3 and short == 0.0:
        q, it, fk_n, jac_n = _slide(P, goal[0], goal[1], q0, q, tol, max_iter)
        iterations += it
        fk_evals += fk_n
        jac_evals += jac_n
    if q is None:  # no pose inside the limits
        q = q0
    x, y = _fk(P.links, q)
    error = math.hypot(tx - x, ty - y)
    ok = False
    reason = None
    if hit:  # q reaches goal within tol, inside the limits
        reached = True
    else:
        reached = _reaches(P, q, goal, phi, max(tol, 1e-12))
    if not hit and not _inside(q, P.lo, P.hi):
        reason = "solution outside the joint limits"
    elif not reached:
        if phi is not None:
            blocked = method == "analytic" or not _candidates(P.links, P.lo, P.hi, goal, phi, q0, want=1)[0]
        elif closest is not None:  # q is the closest pose
            blocked = True
        else:  # newton or broyden did not get there: does any pose inside the limits?
            closest = _closest(P.links, P.lo, P.hi, tx, ty, q0)[0]
            blocked = closest > short + tol
        if blocked:
            reason = _BLOCKED + ("" if phi is None else " at this tool angle")
            # (how far the target is from what the arm reaches: this pose's error, or the closest pose's)
            short = error if closest is None or method in ("dls", "analytic") else closest
        else:
            reason = f"did not converge in {max_iter} iterations"
    elif short > 0.0:
        reason = _unreachable(arm, short, phi)
    else:
        ok = True
    return IKResult(
        q=np.array(q, dtype=float),
        ok=ok,
        error_m=error,
        iterations=iterations,
        fk_evals=fk_evals,
        jacobian_evals=jac_evals,
        method=method,
        reason=reason,
        shortfall_m=short,
        max_step_rad=max_step,
        restarts=restarts,
    )


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
    l1, l2 = links[0], links[1]
    c2 = (np.sum(w * w, axis=-1) - l1 * l1 - l2 * l2) / (2 * l1 * l2)
    reach_ok = np.abs(c2) <= 1 + 1e-12
    c2 = np.clip(c2, -1.0, 1.0)
    s2 = np.where(1.0 - np.abs(c2) < 1e-12, 0.0, np.sqrt(1.0 - c2 * c2))
    base = np.arctan2(w[:, 1], w[:, 0])
    poses = []
    for s in (-s2, s2):
        q2 = np.arctan2(s, c2)
        q1 = base - np.arctan2(l2 * s, l1 + l2 * c2)
        poses.append(np.stack([q1, q2, ph - q1 - q2], axis=-1))
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
    """Solve many targets at once: ``targets`` (N, 2) in m, ``phi`` None or (N,) rad,
    ``q0`` (n,) or (N, n) rad.

    Without ``phi`` every row is exactly what ``solve`` gives for it, computed row by row in C (or
    in Python without the C kernel). With ``phi`` (3 links), vectorised numpy: the wrist points by
    DLS from q0, closed-form restarts for rows that stall, the stretched pose and the shortfall for
    rows out of reach: the same guarantees as ``solve``, not always the same pose.
    An arm with a base or a parallelogram goes to ``armctl.ik_arm.solve_batch``."""
    if arm.layered:  # base / parallelogram layer (armctl/ik_arm.py), built on this planar solver
        return _layer().solve_batch(arm, targets, phi=phi, q0=q0, method=method, tol=tol, max_iter=max_iter)
    if method != "dls":
        raise BadInputError(f"batch IK supports method 'dls' only, got {method!r}")
    t = np.asarray(targets, dtype=float)
    if t.ndim != 2 or t.shape[1] != 2:
        raise BadInputError(f"targets must have shape (N, 2), got {t.shape}")
    if not np.all(np.isfinite(t)):
        bad = int(np.flatnonzero(~np.all(np.isfinite(t), axis=1))[0])
        raise BadInputError(f"target {bad + 1} is not finite: {t[bad].tolist()}")
    m, n = len(t), arm.n
    q_start = np.array(np.broadcast_to(arm.home_rad if q0 is None else np.asarray(q0, dtype=float), (m, n)))
    if not np.all(np.isfinite(q_start)):
        raise BadInputError("start poses must be finite")
    q_start = np.clip(q_start, arm.q_min, arm.q_max)
    if phi is None:
        return _solve_rows(arm, t, q_start, tol, max_iter)
    links = arm.links_m
    if n != 3:
        raise BadInputError(f"a tool angle (phi) needs a 3-link arm; '{arm.name}' has {n} links")
    ph = np.array(np.broadcast_to(np.asarray(phi, dtype=float), (m,)))
    if not np.all(np.isfinite(ph)):
        raise BadInputError("phi values must be finite")
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
    # Out of reach rows start from the stretched closed-form pose (as in solve).
    init = q_start.copy()
    far = short > 0
    if np.any(far):
        # Beyond the outer rim the closest pose is the first two links straight towards the wrist
        # point; inside the inner rim, the closed form on the rim.
        outer = np.flatnonzero(far & (r > r_max))
        straight = np.zeros((outer.size, n))
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
        res = solve(arm, t[i], phi=ph[i], q0=q_start[i], method="dls", tol=tol, max_iter=max_iter)
        q[i], ok[i], short[i], reasons[i] = res.q, res.ok, res.shortfall_m, res.reason
        iters[i] += res.iterations
    for i in np.flatnonzero(good & (short > 0)):
        reasons[i] = _unreachable(arm, short[i], ph[i])
    tool = np.stack(_batch_fk_jac(links, q)[:2], axis=1)
    error = np.hypot(*(t - tool).T)
    return BatchIKResult(q=q, ok=ok, error_m=error, iterations=iters, shortfall_m=short, method=method, reasons=reasons)


def _solve_rows(arm: Arm, t, q_start, tol, max_iter) -> BatchIKResult:
    """solve_batch without phi: each row exactly as ``solve`` does it, in one C call when built."""
    P = _plain(arm)
    m = len(t)
    q = np.empty((m, arm.n))
    info = np.zeros((m, 4))  # solved (1), blocked (2) or bad numbers (0), error, iterations, shortfall
    if _core is not None:
        _core.solve_rows(
            P.links, P.lo, P.hi, np.ascontiguousarray(t), np.ascontiguousarray(q_start), q, info, tol, max_iter
        )
    solved = info[:, 0] != 0.0
    blocked = info[:, 0] == 2.0
    error = info[:, 1]
    iters = info[:, 2].astype(int)
    short = info[:, 3]
    ok = solved & ~blocked & (short == 0.0)
    reasons: list = [None] * m
    for i in np.flatnonzero(solved & (short > 0.0)):
        reasons[i] = _BLOCKED if blocked[i] else _unreachable(arm, short[i], None)
    for i in np.flatnonzero(~solved):  # every row without C
        res = solve(arm, t[i], q0=q_start[i], method="dls", tol=tol, max_iter=max_iter)
        q[i], ok[i], error[i], iters[i], short[i], reasons[i] = (
            res.q,
            res.ok,
            res.error_m,
            res.iterations,
            res.shortfall_m,
            res.reason,
        )
    return BatchIKResult(q=q, ok=ok, error_m=error, iterations=iters, shortfall_m=short, method="dls", reasons=reasons)


_IK_ARM = None


def _layer():
    """armctl.ik_arm, imported on first use (it imports this module)."""
    global _IK_ARM
    if _IK_ARM is None:
        from . import ik_arm

        _IK_ARM = ik_arm
    return _IK_ARM
