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

from .arm import Arm
from .errors import JointLimitError, UnreachableError
from .kinematics import fk, joint_angles, limit_excess, limit_names


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
    if phi is None or arm.n == 2:
        return Annulus(arm.reach_min, arm.reach_max)
    l1, l2 = arm.links_m[0], arm.links_m[1]
    return Annulus(abs(l1 - l2), l1 + l2)


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
    r = math.hypot(x, y)
    return max(0.0, r - ring.r_max, ring.r_min - r)


def closest_reachable(arm: Arm, target, phi: float | None = None) -> np.ndarray:
    """The point of the reach annulus nearest ``target`` (the target itself if inside); on a base or
    parallelogram arm the nearest point it reaches (``nearest_reachable``)."""
    if arm.layered:
        return nearest_reachable(arm, target, phi).point_m
    t = np.asarray(target, dtype=float)
    offset = np.zeros(2)
    if phi is not None and arm.n == 3:
        offset = arm.links_m[2] * np.array([math.cos(phi), math.sin(phi)])
    w = t - offset
    r = float(np.hypot(*w))
    ring = annulus(arm, phi)
    if ring.r_min <= r <= ring.r_max:
        return t
    direction = w / r if r > 0 else np.array([1.0, 0.0])
    return offset + direction * (ring.r_max if r > ring.r_max else ring.r_min)


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
        raise JointLimitError(
            f"joint {i + 1} ({arm.joint_names[i]}) at {math.degrees(q[i]):.2f} deg is outside its limits "
            f"[{math.degrees(arm.q_min[i]):.1f}, {math.degrees(arm.q_max[i]):.1f}] deg",
            joint=i,
            q=np.asarray(q, dtype=float),
        )


def limit_description(arm: Arm, q, i: int) -> str:
    """'<what> at <angle> deg, limits [lo, hi] deg' for column ``i`` of ``limit_excess`` at pose ``q``."""
    from .kinematics import link_angle

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
    return "(" + ", ".join(f"{float(v):.4f}" for v in p) + ")"


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


def _turns_inside(angle: float, lo: float, hi: float, tol: float = 1e-9) -> list[float]:
    """Every ``angle + 2 pi k`` inside [lo, hi]."""
    two_pi = 2.0 * math.pi
    k0 = math.ceil((lo - tol - angle) / two_pi)
    out = []
    k = k0
    while angle + two_pi * k <= hi + tol:
        out.append(min(max(angle + two_pi * k, lo), hi))
        k += 1
    return out


def base_planes(arm: Arm, target, q_near=None) -> list[tuple[float, float, float]]:
    """The vertical planes a base arm may reach ``target`` (x, y, z) in: (base angle, u, d) with u the
    target's signed distance from the base axis in that plane and d its distance from the plane; those
    through the target first (base towards it, then turned half a turn), then the base's end stops.
    Angles inside the base's limits, at their turn nearest ``q_near``'s base angle."""
    x, y, _ = (float(v) for v in target)
    lo, hi = float(arm.q_min[0]), float(arm.q_max[0])
    ref = float(arm.home_rad[0] if q_near is None else q_near[0])
    rho = math.hypot(x, y)
    if rho <= 1e-12:  # on the base axis: every plane holds it; keep the base where it is
        return [(min(max(ref, lo), hi), 0.0, 0.0)]
    az = math.atan2(y, x)
    out = []
    for flip in (0.0, math.pi):
        turns = _turns_inside(az + flip, lo, hi)
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
    m = len(poly)
    for i in range(m):
        p, q = poly[i], poly[(i + 1) % m]
        fp, fq = a * p[0] + b * p[1] - k, a * q[0] + b * q[1] - k
        if fp >= 0:
            out.append(p)
        if (fp >= 0) != (fq >= 0):
            t = fp / (fp - fq)
            out.append((p[0] + t * (q[0] - p[0]), p[1] + t * (q[1] - p[1])))
    return out


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
    m = len(poly)
    for i in range(m):
        p, q = poly[i], poly[(i + 1) % m]
        fp, fq = a * p[0] + b * p[1] - k, a * q[0] + b * q[1] - k
        if fp == 0:
            pts.append(p)
        elif fp * fq < 0:
            t = fp / (fp - fq)
            pts.append((p[0] + t * (q[0] - p[0]), p[1] + t * (q[1] - p[1])))
    if len(pts) < 2:
        return None
    return (pts[0], pts[-1])


_GOLD = (math.sqrt(5.0) - 1.0) / 2.0


def chain_nearest(arm: Arm, uv) -> tuple[np.ndarray, float]:
    """The chain's joint angles (its own joints: a parallelogram's joint 2 from the horizontal) inside
    every limit whose tool point lies nearest ``uv`` (m, in the chain's plane from the shoulder), and that
    distance (m). 2-link chains only. The caller first tries the closed form: this searches the border."""
    from .kinematics import chain_angles

    segs = _segments_cached(arm)
    t = np.asarray(uv, dtype=float)
    sub = arm if not arm.has_base else _ChainView(arm)

    def dist2(q):
        p = fk(arm.links_m, chain_angles(sub, q))
        return np.sum((p - t) ** 2, axis=-1)

    s = np.linspace(0.0, 1.0, 257)
    q = segs[:, None, 0, :] + s[None, :, None] * (segs[:, None, 1, :] - segs[:, None, 0, :])
    d = dist2(q)
    order = np.argsort(d, axis=None)[:6]
    best_q, best_d = None, math.inf
    for flat in order:
        i, j = divmod(int(flat), len(s))
        a, b = s[max(j - 1, 0)], s[min(j + 1, len(s) - 1)]
        p0, p1 = segs[i, 0], segs[i, 1]
        x1, x2 = b - _GOLD * (b - a), a + _GOLD * (b - a)
        f1, f2 = float(dist2(p0 + x1 * (p1 - p0))), float(dist2(p0 + x2 * (p1 - p0)))
        for _ in range(60):
            if f1 < f2:
                b, x2, f2 = x2, x1, f1
                x1 = b - _GOLD * (b - a)
                f1 = float(dist2(p0 + x1 * (p1 - p0)))
            else:
                a, x1, f1 = x1, x2, f2
                x2 = a + _GOLD * (b - a)
                f2 = float(dist2(p0 + x2 * (p1 - p0)))
        for u, f in ((x1, f1), (x2, f2), (s[j], float(d.flat[flat]))):
            if f < best_d:
                best_q, best_d = p0 + u * (p1 - p0), f
    return np.asarray(best_q, dtype=float), math.sqrt(best_d)


class _ChainView:
    """An arm's chain without its base, for ``chain_angles`` on chain-only joint vectors."""

    has_base = False

    def __init__(self, arm: Arm):
        self.parallelogram = arm.parallelogram


_SEGMENTS: dict = {}


def _segments_cached(arm: Arm) -> np.ndarray:
    key = id(arm)
    hit = _SEGMENTS.get(key)
    if hit is None or hit[0] is not arm:
        if len(_SEGMENTS) > 64:
            _SEGMENTS.clear()
        hit = _SEGMENTS[key] = (arm, _segments(arm))
    return hit[1]


def nearest_reachable(arm: Arm, target, phi: float | None = None, q_near=None) -> Nearest:
    """The point of a base or parallelogram arm's reach nearest ``target`` ((x, y, z) on a base, else
    (x, y), m), its pose and the distance (``Nearest``). 2-link chains: exact, every limit included (the
    closed form first, then the border of the reach). 3-link chains: the annulus of the chain (with a tool
    angle ``phi``, the wrist's) in the nearest plane the base can turn to; no pose (the IK finds it)."""
    from .kinematics import tool_point

    t = np.asarray(target, dtype=float)
    if arm.n_links == 3:
        return _nearest_annulus(arm, t, phi, q_near)
    planes = base_planes(arm, t, q_near) if arm.has_base else [(None, float(t[0]), 0.0)]
    z = float(t[-1]) - arm.shoulder_height_m if arm.has_base else float(t[1])
    best = None
    for b, u, d in planes:
        uv = (u - arm.base_offset_m, z)
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
    q = joint_angles(arm, _serial(arm, qc), b) if arm.has_base else np.asarray(qc, dtype=float)
    point = tool_point(arm, q)
    return Nearest(point, q, 0.0 if dist < 1e-12 else float(np.linalg.norm(point - t)))


def _serial(arm: Arm, qc) -> np.ndarray:
    """Chain joints (a parallelogram's from the horizontal) -> serial chain angles."""
    qc = np.asarray(qc, dtype=float)
    return np.array([qc[0], qc[1] - qc[0]]) if arm.parallelogram else qc


def _closed_form_inside(arm: Arm, uv):
    """A 2-link chain pose (its own joints) inside every limit reaching ``uv`` exactly, or None."""
    from .ik import analytic_2link

    l1, l2 = float(arm.links_m[0]), float(arm.links_m[1])
    c = arm.chain_joints
    lo, hi = arm.q_min[c], arm.q_max[c]
    for q1, e in analytic_2link(l1, l2, float(uv[0]), float(uv[1])):
        if arm.parallelogram and e > 0.0:
            e -= 2.0 * math.pi  # folded flat (pi) is -pi: the parallelogram's elbow bends one way only
        for a in _turns_inside(q1, lo[0], hi[0]):
            if arm.parallelogram:
                cand = [a, a + e]
            else:
                turns = _turns_inside(e, lo[1], hi[1])
                if not turns:
                    break
                cand = [a, turns[0]]
            full = np.concatenate([[0.0], cand]) if arm.has_base else np.array(cand)
            ex = limit_excess(arm, full)
            if np.all(ex[1:] <= 1e-9) if arm.has_base else np.all(ex <= 1e-9):
                return np.array(cand)
    return None


def _nearest_annulus(arm: Arm, t, phi, q_near) -> Nearest:
    """3-link chains: the annulus of the chain (of the wrist with a tool angle) in the nearest plane."""
    links = arm.links_m
    if phi is None:
        r_min, r_max, off = arm.reach_min, arm.reach_max, None
    else:
        r_min, r_max = abs(links[0] - links[1]), links[0] + links[1]
    best = None
    if arm.has_base:
        planes = base_planes(arm, t, q_near)
        z = float(t[2]) - arm.shoulder_height_m
    else:
        planes = [(None, float(t[0]), 0.0)]
        z = float(t[1])
    for b, u, d in planes:
        uc = u - arm.base_offset_m
        ph = phi
        if phi is not None and arm.has_base and u < 0:
            ph = math.pi - phi  # a chain reaching back over the axis counts its pitch from the far side
        off = np.zeros(2) if ph is None else links[2] * np.array([math.cos(ph), math.sin(ph)])
        w = np.array([uc, z]) - off
        r = float(np.hypot(*w))
        if r_min <= r <= r_max:
            goal, dp = np.array([uc, z]), 0.0
        else:
            direction = w / r if r > 0 else np.array([1.0, 0.0])
            goal = off + direction * (r_max if r > r_max else r_min)
            dp = abs(r - (r_max if r > r_max else r_min))
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
