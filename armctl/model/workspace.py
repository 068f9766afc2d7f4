"""Where the arm can reach: the reach annulus (volume, on a base), the nearest reachable point, joint-limit checks.

``check_reachable`` raises ``UnreachableError`` with the shortfall in metres;
``check_joint_limits`` raises ``JointLimitError`` naming the joint (or a parallelogram's link angle).

A planar serial arm's reach is its annulus (joint limits aside, as the planar IK reports it). An arm with
a base or a parallelogram (``Arm.layered``) and a 2-link chain reaches exactly the image of its joint
limits, coupled ones included: ``nearest_reachable`` finds the closest point of it (the base's range is a
wedge of vertical planes; in each the chain reaches the image of a polygon of joint angles, whose border
is the image of the polygon's edges and of the straight and folded arm). With a 3-link chain the plane's
reach is the annulus (with a tool angle, the wrist's), and the base's range is taken into account.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from armctl.errors import JointLimitError, UnreachableError
from armctl.model.arm import Arm
from armctl.model.kinematics import (
    LIMIT_TOL,
    TWO_PI,
    PlainArm,
    annulus_excess,
    base_split,
    base_split_batch,
    joint_angles,
    limit_excess,
    limit_names,
    nearest_turn,
    nearest_turn_batch,
    plain,
    shoulder_uv,
    turn_inside_batch,
    turns_inside,
    two_link,
    two_link_batch,
)


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
    wrist = not (phi is None or arm.n == 2)
    hit = _RINGS.get((id(arm), wrist))
    if hit is None or hit[0] is not arm:  # (cached per arm: the misses of the IK ask for it on every plane)
        if len(_RINGS) > 64:
            _RINGS.clear()
        l1, l2 = arm.links_m[0], arm.links_m[1]
        ring = Annulus(abs(l1 - l2), l1 + l2) if wrist else Annulus(arm.reach_min, arm.reach_max)
        hit = _RINGS[(id(arm), wrist)] = (arm, ring)
    return hit[1]


_RINGS: dict = {}


def shortfall(arm: Arm, target, phi: float | None = None) -> float:
    """Distance (m) from ``target`` to the reach annulus; 0 inside it. On a base or parallelogram arm: to
    what it reaches (``nearest_reachable``)."""
    if arm.layered:
        return nearest_reachable(arm, target, phi).shortfall_m
    x, y = float(target[0]), float(target[1])
    if phi is not None and arm.n == 3:
        x -= arm.links_m[2] * math.cos(phi)
        y -= arm.links_m[2] * math.sin(phi)
    ring = annulus(arm, phi)
    return max(0.0, annulus_excess(math.hypot(x, y), ring.r_min, ring.r_max))


def closest_reachable(arm: Arm, target, phi: float | None = None) -> np.ndarray:
    """The point of the reach annulus nearest ``target`` (the target itself if inside); on a base or
    parallelogram arm the nearest point it reaches (``nearest_reachable``)."""
    if arm.layered:
        return nearest_reachable(arm, target, phi).point_m
    t = np.asarray(target, dtype=float)
    offset = np.zeros(2)
    if phi is not None and arm.n == 3:
        offset = arm.links_m[2] * np.array([math.cos(phi), math.sin(phi)])
    return _onto_annulus(annulus(arm, phi), t, offset)[0]


def _onto_annulus(ring: Annulus, p, centre):
    """The point of ``ring`` (centred on ``centre``, m) nearest ``p`` (``p`` itself inside it) and how far
    it is from ``p`` (0 inside)."""
    w = p - centre
    r = float(np.hypot(*w))
    excess = annulus_excess(r, ring.r_min, ring.r_max)
    if not excess > 0.0:
        return p, 0.0
    direction = w / r if r > 0 else np.array([1.0, 0.0])
    return centre + direction * (ring.r_max if r > ring.r_max else ring.r_min), excess


def check_reachable(arm: Arm, target, phi: float | None = None) -> None:
    """Raise UnreachableError if ``target`` (m) is outside the reach annulus (what a base or parallelogram
    arm reaches, joint limits included)."""
    if arm.layered:
        near = nearest_reachable(arm, target, phi)
        if near.shortfall_m > 1e-9:
            raise UnreachableError(
                f"target {fmt_point(target)} m{_with_phi(arm, phi)} is {near.shortfall_m * 1000:.1f} mm outside "
                f"the reach of arm '{arm.name}' inside its joint limits (nearest reachable point "
                f"{fmt_point(near.point_m)} m)",
                target=tuple(float(v) for v in target),
                shortfall_m=near.shortfall_m,
            )
        return
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
    """First joint outside its limits as (index, excess rad), or None. On a parallelogram arm index
    ``arm.n`` is the angle between upper arm and forearm."""
    q = np.asarray(q, dtype=float)
    if arm.layered:
        ex = limit_excess(arm, q)
        bad = np.flatnonzero(ex > tol)
        return None if bad.size == 0 else (int(bad[0]), float(ex[bad[0]]))
    for i in range(arm.n):
        if q[i] < arm.q_min[i] - tol:
            return i, float(arm.q_min[i] - q[i])
        if q[i] > arm.q_max[i] + tol:
            return i, float(q[i] - arm.q_max[i])
    return None


def check_joint_limits(arm: Arm, q) -> None:
    """Raise JointLimitError naming the first joint of ``q`` (rad) out of limits."""
    bad = limit_violation(arm, q)
    if bad is not None and arm.layered:
        i, _ = bad
        raise JointLimitError(
            limit_description(arm, q, i),
            joint=i if i < arm.n else None,
            q=np.asarray(q, dtype=float),
        )
    if bad is not None:
        i, _ = bad
        deg = math.degrees(q[i])
        shown = f"{deg:.2f}" if abs(deg) < 1e6 else f"{deg:.3g}"  # (not 300 digits for 1e308)
        raise JointLimitError(
            f"joint {i + 1} ({arm.joint_names[i]}) at {shown} deg is outside its limits "
            f"[{math.degrees(arm.q_min[i]):.1f}, {math.degrees(arm.q_max[i]):.1f}] deg",
            joint=i,
            q=np.asarray(q, dtype=float),
        )


def limit_description(arm: Arm, q, i: int) -> str:
    """'<what> at <angle> deg, limits [lo, hi] deg' for column ``i`` of ``limit_excess`` at pose ``q``."""
    from armctl.model.kinematics import link_angle

    name = limit_names(arm)[i]
    if i < arm.n:
        return (
            f"{name} at {math.degrees(q[i]):.2f} deg is outside [{math.degrees(arm.q_min[i]):.1f}, "
            f"{math.degrees(arm.q_max[i]):.1f}] deg"
        )
    lo, hi = arm.link_angle_rad
    a = float(link_angle(arm, q))
    return (
        f"{name} is {math.degrees(a):.2f} deg, outside link_angle_deg [{math.degrees(lo):.1f}, {math.degrees(hi):.1f}]"
    )


def fmt_point(p) -> str:
    """'(x, y)' or '(x, y, z)' in metres with 4 decimals."""
    return "(" + ", ".join(f"{round(float(v), 4) + 0.0:.4f}" for v in p) + ")"  # (+ 0.0: no '-0.0000')


def _with_phi(arm: Arm, phi) -> str:
    return "" if phi is None or arm.n_links != 3 else f" with tool angle {math.degrees(phi):.1f} deg"


# --------------------------------------------------------------------------------------------------------
# The reach of an arm with a base or a parallelogram


@dataclass(frozen=True)
class Nearest:
    """The point an arm reaches nearest a target: ``point_m``, the pose ``q_rad`` that reaches it (inside
    every limit; None for a 3-link chain, whose pose the IK finds), and ``shortfall_m`` (0: the target)."""

    point_m: np.ndarray
    q_rad: np.ndarray | None
    shortfall_m: float


def base_planes(arm: Arm, target, q_near=None) -> list[tuple[float, float, float]]:
    """The vertical planes a base arm may reach ``target`` (x, y, z) in: (base angle, u, d) with u the
    target's signed distance from the base axis in that plane and d its distance from the plane; those
    through the target first (base towards it, then turned half a turn), then the base's end stops.
    Angles inside the base's limits, at their turn nearest ``q_near``'s base angle."""
    x, y, _ = (float(v) for v in target)
    lo, hi = float(arm.q_min[0]), float(arm.q_max[0])
    ref = float(arm.home_rad[0] if q_near is None else q_near[0])
    az, rho = base_split(x, y)
    if rho <= 1e-12:  # on the base axis: every plane holds it; keep the base where it is
        return [(min(max(ref, lo), hi), 0.0, 0.0)]
    out = []
    for flip in (0.0, math.pi):
        turns = turns_inside(az + flip, lo, hi)
        if turns:
            b = min(turns, key=lambda v: abs(v - ref))
            out.append((b, rho * math.cos(az - b), abs(rho * math.sin(az - b))))
    for b in (lo, hi):
        out.append((b, rho * math.cos(az - b), abs(rho * math.sin(az - b))))
    return out


def _polygon(arm: Arm):
    """Vertices of the chain's joint-angle region (a convex polygon: the joint boxes and, on a parallelogram,
    the band of link angles), in the chain's joints, counter-clockwise; None if empty."""
    c = arm.chain_joints
    lo, hi = arm.q_min[c], arm.q_max[c]
    poly = [(lo[0], lo[1]), (hi[0], lo[1]), (hi[0], hi[1]), (lo[0], hi[1])]
    if arm.parallelogram:  # la_lo - pi <= q2 - q1 <= la_hi - pi
        la_lo, la_hi = arm.link_angle_rad
        for a, b, k in ((-1.0, 1.0, la_lo - math.pi), (1.0, -1.0, math.pi - la_hi)):
            poly = _clip(poly, a, b, k)  # keep a*q1 + b*q2 >= k
            if not poly:
                return None
    return poly


def _clip(poly, a, b, k):
    """Sutherland-Hodgman: the part of convex ``poly`` where a*x + b*y >= k."""
    out = []
    for p, q, fp, fq in _edges(poly, a, b, k):
        if fp >= 0:
            out.append(p)
        if (fp >= 0) != (fq >= 0):
            out.append(_crossing(p, q, fp, fq))
    return out


def _edges(poly, a, b, k):
    """Each edge (p, q) of ``poly`` with a*x + b*y - k at both ends."""
    m = len(poly)
    for i in range(m):
        p, q = poly[i], poly[(i + 1) % m]
        yield p, q, a * p[0] + b * p[1] - k, a * q[0] + b * q[1] - k


def _crossing(p, q, fp, fq):
    """Where the edge p -> q crosses the line (its values fp, fq of opposite signs)."""
    t = fp / (fp - fq)
    return (p[0] + t * (q[0] - p[0]), p[1] + t * (q[1] - p[1]))


def _segments(arm: Arm):
    """Segments (k, 2, 2) in the chain's joint angles whose images hold the border of what the chain
    reaches: the joint polygon's edges, and the straight and folded arm across it."""
    poly = _polygon(arm)
    if poly is None:
        return np.zeros((0, 2, 2))
    segs = [(poly[i], poly[(i + 1) % len(poly)]) for i in range(len(poly))]
    # relative elbow angle e = q2 (serial) or q2 - q1 (parallelogram); singular where e = k pi
    c = arm.chain_joints
    lo, hi = arm.q_min[c], arm.q_max[c]
    span = np.abs(np.concatenate([lo, hi])).max() * 2 + math.pi
    for k in range(-int(span / math.pi) - 1, int(span / math.pi) + 2):
        e = k * math.pi
        if arm.parallelogram:  # line q2 = q1 + e: keep q2 - q1 >= e and <= e, i.e. the chord of the polygon
            line = _chord(poly, -1.0, 1.0, e)
        else:  # line q2 = e
            line = _chord(poly, 0.0, 1.0, e)
        if line is not None:
            segs.append(line)
    return np.array(segs, dtype=float)


def _chord(poly, a, b, k):
    """The segment of convex ``poly`` on the line a*x + b*y = k, or None."""
    pts = []
    for p, q, fp, fq in _edges(poly, a, b, k):
        if fp == 0:
            pts.append(p)
        elif fp * fq < 0:
            pts.append(_crossing(p, q, fp, fq))
    if len(pts) < 2:
        return None
    return (pts[0], pts[-1])


@dataclass(frozen=True)
class Arcs:
    """The border of what a 2-link chain reaches, as circular arcs in its plane (m, from the shoulder).

    Every edge of the joint polygon and every straight or folded chord across it fixes one thing: the
    upper arm's angle (the tool turns about the elbow), the elbow angle or the link angle (the tool turns
    about the shoulder on a circle), or a parallelogram's forearm angle (the tool turns about a shifted
    centre). Arc i: centre (cx, cy), radius r, the tool at angle p + beta for the parameter p in [p0, p1];
    joints (q1, q2) = (a1 * p + b1, a2 * p + b2) in the chain's own joints.
    """

    cx: np.ndarray
    cy: np.ndarray
    r: np.ndarray
    beta: np.ndarray
    p0: np.ndarray
    p1: np.ndarray
    a1: np.ndarray
    b1: np.ndarray
    a2: np.ndarray
    b2: np.ndarray


def _arc(arm: Arm, a, b):
    """The arc traced by the chain's tool along the joint segment a -> b (one of the three kinds)."""
    l1, l2 = float(arm.links_m[0]), float(arm.links_m[1])
    pg = arm.parallelogram
    (a1, a2), (b1, b2) = a, b
    if abs(a1 - b1) < 1e-12:  # upper arm fixed at c: the tool turns about the elbow
        c = a1
        lo, hi = min(a2, b2), max(a2, b2)
        return (l1 * math.cos(c), l1 * math.sin(c), l2, 0.0 if pg else c, lo, hi, 0.0, c, 1.0, 0.0)
    lo, hi = min(a1, b1), max(a1, b1)  # the upper arm's angle is the parameter
    if abs(a2 - b2) < 1e-12 and pg:  # forearm fixed at c: a circle of radius l1 about the forearm's end
        c = a2
        return (l2 * math.cos(c), l2 * math.sin(c), l1, 0.0, lo, hi, 1.0, 0.0, 0.0, c)
    # serial elbow fixed (q2 = c), or parallelogram link angle fixed (q2 - q1 = c): the arm turns rigidly
    c = a2 if abs(a2 - b2) < 1e-12 else a2 - a1
    wx, wy = l1 + l2 * math.cos(c), l2 * math.sin(c)
    a2k, b2k = (0.0, c) if not pg else (1.0, c)
    return (0.0, 0.0, math.hypot(wx, wy), math.atan2(wy, wx), lo, hi, 1.0, 0.0, a2k, b2k)


def _build_arcs(arm: Arm) -> Arcs:
    segs = _segments(arm)
    rows = [_arc(arm, seg[0], seg[1]) for seg in segs if np.hypot(*(seg[1] - seg[0])) > 1e-12]
    if not rows:  # a single point of joint space (a degenerate region)
        poly = _polygon(arm)
        q1, q2 = poly[0] if poly else (0.0, 0.0)
        rows = [_arc(arm, (q1, q2), (q1, q2))]
    cols = np.array(rows, dtype=float).T
    return Arcs(*cols)


_ARCS: dict = {}


def arcs(arm: Arm) -> Arcs:
    """The border arcs of a 2-link chain's reach (cached per arm)."""
    hit = _ARCS.get(id(arm))
    if hit is None or hit[0] is not arm:
        if len(_ARCS) > 64:
            _ARCS.clear()
        hit = _ARCS[id(arm)] = (arm, _build_arcs(arm))
    return hit[1]


def chain_nearest_batch(arm: Arm, u, v):
    """Vectorised ``chain_nearest``: per point (``u``, ``v``) (N,) the chain joints (N, 2) on the border of
    the reach nearest it and that distance (N,). Exact: the nearest point of each border arc in closed form."""
    A = arcs(arm)
    u = np.asarray(u, dtype=float)[:, None]
    v = np.asarray(v, dtype=float)[:, None]
    dx, dy = u - A.cx, v - A.cy
    gamma = np.arctan2(dy, dx) - A.beta
    p_in = gamma + 2.0 * math.pi * np.ceil((A.p0 - gamma) / (2.0 * math.pi))
    best_p = np.broadcast_to(A.p0, dx.shape).copy()
    best_d = None
    for p, ok in ((p_in, p_in <= A.p1), (A.p0, True), (A.p1, True)):
        ang = p + A.beta
        d = np.hypot(A.cx + A.r * np.cos(ang) - u, A.cy + A.r * np.sin(ang) - v)
        d = np.where(ok, d, np.inf)
        if best_d is None:
            best_d, best_p = d, np.broadcast_to(p, dx.shape).copy()
        else:
            take = d < best_d
            best_d = np.where(take, d, best_d)
            best_p = np.where(take, p, best_p)
    k = np.argmin(best_d, axis=1)
    rows = np.arange(len(k))
    p = best_p[rows, k]
    q = np.stack([A.a1[k] * p + A.b1[k], A.a2[k] * p + A.b2[k]], axis=1)
    return q, best_d[rows, k]


def chain_nearest(arm: Arm, uv) -> tuple[np.ndarray, float]:
    """The chain's joint angles (its own joints: a parallelogram's joint 2 from the horizontal) inside
    every limit whose tool point lies nearest ``uv`` (m, in the chain's plane from the shoulder), on the
    border of its reach, and that distance (m). 2-link chains only; the caller first tries the closed
    form (a point inside the reach)."""
    q, d = chain_nearest_batch(arm, [float(uv[0])], [float(uv[1])])
    return q[0], float(d[0])


def nearest_reachable(arm: Arm, target, phi: float | None = None, q_near=None) -> Nearest:
    """The point of a base or parallelogram arm's reach nearest ``target`` ((x, y, z) on a base, else
    (x, y), m), its pose and the distance (``Nearest``). 2-link chains: exact, every limit included (the
    closed form first, then the border of the reach). 3-link chains: the annulus of the chain (with a tool
    angle ``phi``, the wrist's) in the nearest plane the base can turn to; no pose (the IK finds it)."""
    from armctl.model.kinematics import tool_point

    t = np.asarray(target, dtype=float)
    if arm.n_links == 3:
        return _nearest_annulus(arm, t, phi, q_near)
    planes = base_planes(arm, t, q_near) if arm.has_base else [(None, float(t[0]), 0.0)]
    best = None
    for b, u, d in planes:
        uv = shoulder_uv(arm, u, float(t[-1]))
        if d >= (best[0] if best is not None else math.inf):
            continue
        q = _closed_form_inside(arm, uv)
        if q is not None:
            dist = d
        else:
            q, dist_plane = chain_nearest(arm, uv)
            dist = math.hypot(d, dist_plane)
        if best is None or dist < best[0]:
            best = (dist, b, q)
    dist, b, qc = best
    roll = None if arm.roll is None or q_near is None else float(np.asarray(q_near, dtype=float)[-1])
    q = joint_angles(arm, _serial(arm, qc), b, roll) if arm.has_base else np.asarray(qc, dtype=float)
    point = tool_point(arm, q)
    return Nearest(point, q, 0.0 if dist < 1e-12 else float(np.linalg.norm(point - t)))


def nearest_reachable_batch(arm: Arm, targets, q_near=None):
    """``nearest_reachable`` for many targets of an arm with a 2-link chain, vectorised: (poses (N, n) inside
    every limit, the points they reach (N, dim), the distances (N,), 0 where the target is reached)."""
    from armctl.model.kinematics import tool_point

    t = np.asarray(targets, dtype=float)
    m = len(t)
    ref = np.array(np.broadcast_to(arm.home_rad if q_near is None else q_near, (m, arm.n)), dtype=float)
    if arm.has_base:
        az, rho = base_split_batch(t[:, 0], t[:, 1])
        lo, hi = float(arm.q_min[0]), float(arm.q_max[0])
        axis = rho <= 1e-12
        nan = np.full(m, np.nan)
        planes = [
            (np.where(axis, np.clip(ref[:, 0], lo, hi), nearest_turn_batch(az, ref[:, 0], lo, hi)), rho, np.zeros(m)),
            (np.where(axis, nan, nearest_turn_batch(az + math.pi, ref[:, 0], lo, hi)), -rho, np.zeros(m)),
        ]
        for b in (lo, hi):  # the base's end stops
            planes.append((np.where(axis, nan, b), rho * np.cos(az - b), np.abs(rho * np.sin(az - b))))
    else:
        planes = [(np.zeros(m), t[:, 0], np.zeros(m))]
    best = np.full(m, np.inf)
    q_best = np.array(ref)
    c = arm.chain_joints
    for b, u, d in planes:
        uc, z = shoulder_uv(arm, u, t[:, -1])
        qc, found = batch_closed_form(arm, uc, z, ref)
        border_q, border_d = chain_nearest_batch(arm, uc, z)
        qc = np.where(found[:, None], qc, border_q)
        total = np.where(np.isfinite(b), np.hypot(d, np.where(found, 0.0, border_d)), np.inf)
        take = total < best
        best = np.where(take, total, best)
        q_best[take, c] = qc[take]
        if arm.has_base:
            q_best[take, 0] = b[take]
    point = tool_point(arm, q_best)
    dist = np.linalg.norm(point - t, axis=-1)
    return q_best, point, np.where(best < 1e-12, 0.0, dist)


def _serial(arm: Arm, qc) -> np.ndarray:
    """Chain joints (a parallelogram's from the horizontal) -> serial chain angles."""
    qc = np.asarray(qc, dtype=float)
    return np.array([qc[0], qc[1] - qc[0]]) if arm.parallelogram else qc


def closed_form_2link(P: PlainArm, u: float, v: float, ref1: float, ref2: float):
    """A 2-link chain's pose (its own joints, plain floats) reaching (``u``, ``v``) (m, from the shoulder)
    inside every limit (the link angle too), nearest (``ref1``, ``ref2``); None if neither elbow branch
    fits. The closed form is ``kinematics.two_link``."""
    best, best_d = None, math.inf
    lo1, hi1, lo2, hi2 = P.lo[0], P.hi[0], P.lo[1], P.hi[1]
    for a, e in two_link(P.links[0], P.links[1], u, v):
        if P.pg:
            if e > 0.0:
                e -= TWO_PI  # folded flat (pi) is -pi: the parallelogram's elbow bends one way only
            if not P.la_lo - 1e-9 <= math.pi + e <= P.la_hi + 1e-9:
                continue
            if hi1 - lo1 < TWO_PI:  # one turn at most fits the range
                turns = (a,) if lo1 - 1e-9 <= a <= hi1 + 1e-9 else turns_inside(a, lo1, hi1)
            else:
                turns = turns_inside(a, lo1, hi1)
            for j1 in turns:  # the upper arm's turns; the forearm follows it
                j2 = j1 + e
                if not lo2 - 1e-9 <= j2 <= hi2 + 1e-9:
                    continue
                d = (j1 - ref1) ** 2 + (j2 - ref2) ** 2
                if d < best_d:
                    best, best_d = (j1, min(max(j2, lo2), hi2)), d
        else:
            j1 = nearest_turn(a, ref1, lo1, hi1)
            j2 = nearest_turn(e, ref2, lo2, hi2)
            if j1 is None or j2 is None:
                continue
            d = (j1 - ref1) ** 2 + (j2 - ref2) ** 2
            if d < best_d:
                best, best_d = (j1, j2), d
    return best


def _closed_form_inside(arm: Arm, uv):
    """A 2-link chain pose (its own joints) inside every limit reaching ``uv`` exactly, or None."""
    P = plain(arm)
    c = arm.chain_joints
    ref = arm.home_rad[c]
    q = closed_form_2link(P, float(uv[0]), float(uv[1]), float(ref[0]), float(ref[1]))
    return None if q is None else np.array(q)


def _nearest_annulus(arm: Arm, t, phi, q_near) -> Nearest:
    """3-link chains: the annulus of the chain (of the wrist with a tool angle) in the nearest plane."""
    links = arm.links_m
    ring = annulus(arm, phi)
    best = None
    planes = base_planes(arm, t, q_near) if arm.has_base else [(None, float(t[0]), 0.0)]
    for b, u, d in planes:
        ph = phi
        if phi is not None and arm.has_base and u < 0:
            ph = math.pi - phi  # a chain reaching back over the axis counts its pitch from the far side
        off = np.zeros(2) if ph is None else links[2] * np.array([math.cos(ph), math.sin(ph)])
        goal, dp = _onto_annulus(ring, np.array(shoulder_uv(arm, u, float(t[-1]))), off)
        dist = math.hypot(d, dp)
        if best is None or dist < best[0] - 1e-15:
            best = (dist, b, goal)
    dist, b, goal = best
    if arm.has_base:
        u = goal[0] + arm.base_offset_m
        point = np.array([u * math.cos(b), u * math.sin(b), goal[1] + arm.shoulder_height_m])
    else:
        point = goal
    return Nearest(point, None, 0.0 if dist < 1e-12 else float(dist))


def batch_closed_form(arm: Arm, u, v, q_start):
    """2-link chains, vectorised: per row the elbow branch reaching the chain target (``u``, ``v``) (m, from
    the shoulder) inside every limit nearest the start (the arm's chain joints, each at its turn nearest
    ``q_start``'s, shape (N, n)), and whether one exists: (poses (N, 2), found (N,))."""
    l1, l2 = float(arm.links_m[0]), float(arm.links_m[1])
    c = arm.chain_joints
    lo, hi = arm.q_min[c], arm.q_max[c]
    ref = q_start[:, c]
    reach, branches = two_link_batch(l1, l2, u, v)
    best = np.full((len(u), 2), np.nan)
    best_d = np.full(len(u), np.inf)
    for a, e in branches:
        j1 = turn_inside_batch(a, ref[:, 0], lo[0], hi[0])
        if arm.parallelogram:
            e = np.where(e > 0.0, e - TWO_PI, e)  # folded flat (pi) is -pi: one way only
            la_lo, la_hi = arm.link_angle_rad
            j2 = j1 + e
            ok = (math.pi + e >= la_lo - LIMIT_TOL) & (math.pi + e <= la_hi + LIMIT_TOL)
            ok &= (j2 >= lo[1] - LIMIT_TOL) & (j2 <= hi[1] + LIMIT_TOL)
        else:
            j2 = turn_inside_batch(e, ref[:, 1], lo[1], hi[1])
            ok = np.isfinite(j2)
        ok &= reach & np.isfinite(j1)
        d = np.where(ok, (j1 - ref[:, 0]) ** 2 + (j2 - ref[:, 1]) ** 2, np.inf)
        take = d < best_d
        best[take, 0] = j1[take]
        best[take, 1] = j2[take]
        best_d[take] = d[take]
    found = np.isfinite(best_d)
    best[found] = np.clip(best[found], lo, hi)
    return best, found
