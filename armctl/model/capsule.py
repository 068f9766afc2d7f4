"""Distances between the arm's links, as capsules, and convex keep-out regions.

Pure geometry on numpy arrays, no armctl imports. Points are (..., d) with d = 2 (x, y; y up) or
3 (x, y, z; z up): the last coordinate is always "up".

A *tapered capsule* is the set of points within r(t) of the segment a + t (b - a), t in [0, 1], where the
radius r(t) = ra + t (rb - ra) changes linearly from ``ra`` at a to ``rb`` at b (ra = rb: a plain capsule;
the arm's last link narrows to the tool point, which may touch a surface). Its *clearance* from a closed
convex region F is

    min over t of  sd(a + t (b - a), F) - r(t)

with sd the signed distance to F (the distance outside it, minus the depth inside). The capsule is clear
of F when its clearance is >= 0; a negative clearance is how deep it goes in. sd of a convex set is a
convex function, so the clearance is the minimum of a convex function of t: exact up to the golden-section
search's resolution (``GOLDEN_ITERS`` steps of 0.618: 4e-9 of the link's length).

Regions (all convex): the half-space below a level (the table), an axis-aligned box, and a column: the
points within a radius of the vertical axis through the origin and below a top (the arm's base).
"""

from __future__ import annotations

import math

import numpy as np

GOLDEN_ITERS = 40
_G = (math.sqrt(5.0) - 1.0) / 2.0


def sd_below(p, level: float) -> np.ndarray:
    """Signed distance (m) of points ``p`` (..., d) to the half-space {up <= level}."""
    return np.asarray(p, dtype=float)[..., -1] - level


def _sd_corner(q) -> np.ndarray:
    """Signed distance to {q <= 0} for per-axis excesses ``q`` (..., k)."""
    outside = np.sqrt(np.sum(np.maximum(q, 0.0) ** 2, axis=-1))
    return outside + np.minimum(np.max(q, axis=-1), 0.0)


def sd_box(p, lo, hi) -> np.ndarray:
    """Signed distance (m) of points ``p`` (..., d) to the axis-aligned box [lo, hi] (d values each)."""
    p = np.asarray(p, dtype=float)
    lo, hi = np.asarray(lo, dtype=float), np.asarray(hi, dtype=float)
    return _sd_corner(np.maximum(lo - p, p - hi))


def sd_column(p, radius: float, top: float) -> np.ndarray:
    """Signed distance (m) of points ``p`` (..., d) to the column {horizontal distance from the vertical
    axis through the origin <= radius, up <= top} (a cylinder reaching down without end; in a plane, d = 2,
    the strip |x| <= radius below top)."""
    p = np.asarray(p, dtype=float)
    rho = np.sqrt(np.sum(p[..., :-1] ** 2, axis=-1))
    return _sd_corner(np.stack([rho - radius, p[..., -1] - top], axis=-1))


def clearance(sd, a, b, ra, rb, *, linear: bool = False, far: float | None = None):
    """Clearance (m) of tapered capsules from a convex region, and where along each it is least.

    ``sd(points)`` the region's signed distance; ``a``, ``b`` (..., d) the segments' ends; ``ra``, ``rb``
    (...) the radii there (broadcast). ``linear``: sd is linear along a segment (a half-space), so the
    least clearance is at an end. ``far``: capsules whose clearance is surely more than this (sd being
    1-Lipschitz: sd at the middle, less half the length and the larger radius) get that lower bound
    instead of the exact value (t then 0.5): cheaper, and enough to prove them clear.
    Returns (clearance (...), t (...) in [0, 1]).
    """
    a = np.asarray(a, dtype=float)
    b = np.asarray(b, dtype=float)
    shape = np.broadcast_shapes(a.shape[:-1], b.shape[:-1], np.shape(ra), np.shape(rb))
    a = np.broadcast_to(a, shape + a.shape[-1:])
    b = np.broadcast_to(b, shape + b.shape[-1:])
    ra = np.broadcast_to(np.asarray(ra, dtype=float), shape)
    rb = np.broadcast_to(np.asarray(rb, dtype=float), shape)
    if not shape:  # one capsule: as a batch of one
        c, t = clearance(sd, a[None], b[None], ra[None], rb[None], linear=linear, far=far)
        return c[0], t[0]
    d = b - a
    dr = rb - ra
    f0 = sd(a) - ra
    f1 = sd(b) - rb
    if linear:
        take1 = f1 < f0
        return np.where(take1, f1, f0), take1.astype(float)
    best = np.minimum(f0, f1)
    t = np.where(f1 < f0, 1.0, 0.0)
    todo = np.ones(shape, dtype=bool)
    if far is not None:
        bound = sd(a + 0.5 * d) - 0.5 * np.sqrt(np.sum(d * d, axis=-1)) - np.maximum(ra, rb)
        skip = bound > far
        best = np.where(skip, bound, best)
        t = np.where(skip, 0.5, t)
        todo = ~skip
    if not np.any(todo):
        return best, t
    a, d, ra, dr = a[todo], d[todo], ra[todo], dr[todo]

    def f(x):
        return sd(a + x[..., None] * d) - (ra + x * dr)

    lo, hi = np.zeros(len(a)), np.ones(len(a))
    x1, x2 = hi - _G, lo + _G
    g1, g2 = f(x1), f(x2)
    for _ in range(GOLDEN_ITERS):  # golden section: one new evaluation per step
        left = g1 < g2  # the minimum lies in [lo, x2]
        hi = np.where(left, x2, hi)
        lo = np.where(left, lo, x1)
        xn = np.where(left, hi - _G * (hi - lo), lo + _G * (hi - lo))
        gn = f(xn)
        x2, g2, x1, g1 = (
            np.where(left, x1, xn),
            np.where(left, g1, gn),
            np.where(left, xn, x2),
            np.where(left, gn, g2),
        )
    tm = 0.5 * (lo + hi)
    fm = f(tm)
    sub_best, sub_t = best[todo], t[todo]
    take = fm < sub_best
    best = best.copy()
    t = t.copy()
    best[todo] = np.where(take, fm, sub_best)
    t[todo] = np.where(take, tm, sub_t)
    return best, t
