"""Redundancy: slide a 3-link pose along its self-motion to the pose nearest the start."""

from __future__ import annotations

import math

from armctl.ik.closest import dist_sq
from armctl.ik.kernel import inside_limits
from armctl.model.kinematics import PlainArm

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


def slide_to_nearest(P: PlainArm, gx, gy, q0, q, tol, max_iter):
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
    d = dist_sq(q, q0)
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
            if r is not None and inside_limits(r, lo, hi, 0.0):
                dn = dist_sq(r, q0)
                # (a step this short is kept whatever rounding does to the distance)
                if dn < d or abs(h) < _SLIDE_TINY:
                    q, c, s, d = r, rc, rs, dn
                    moved, pinned = True, pin >= 0
                    continue
            alpha *= 0.5
        if not moved or pinned or abs(h) < 1e-10:
            break
    return q, it, fk_evals, jac_evals
