"""Closed-form starting poses of the planar solver and the exact closest pose inside the joint limits."""

from __future__ import annotations

import itertools
import math

from armctl.ik.kernel import tool_xy
from armctl.model.kinematics import nearest_turn, two_link

# ----------------------------------------------------------------------------
# Closed form


def _fit(q, q0, lo, hi):
    """Each joint angle at its turn nearest q0 inside the limits.

    Returns (violation, pose): violation is how far (rad, summed) the pose
    lies outside the limits, 0 if inside; the pose is clipped to the limits."""
    pose = []
    over = 0.0
    for i, v in enumerate(q):
        w = nearest_turn(v, q0[i], lo[i], hi[i])
        if w is None:
            w = v + 2.0 * math.pi * round((0.5 * (lo[i] + hi[i]) - v) / (2.0 * math.pi))
            over += max(lo[i] - w, w - hi[i], 0.0)
            w = min(max(w, lo[i]), hi[i])
        pose.append(w)
    return over, pose


def _pose_at_phi(links, goal, ph, branch):
    """3-link closed form at tool angle ``ph``: branch 0 elbow up, 1 elbow down."""
    sols = two_link(links[0], links[1], goal[0] - links[2] * math.cos(ph), goal[1] - links[2] * math.sin(ph))
    if not sols:
        return None
    q1, q2 = sols[min(branch, len(sols) - 1)]
    return (q1, q2, ph - q1 - q2)


_GOLDEN = (math.sqrt(5.0) - 1.0) / 2.0


_COARSE_FIRST = (0, 30, -30, 60, -60, 90, -90, 120, -120, 150, -150, 180)


def start_candidates(links, lo, hi, goal, phi, q0, want=6, coarse=False, coarse_only=False):
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
            two_link(links[0], links[1], goal[0], goal[1])
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


def closest_pose(links, lo, hi, tx, ty, q0):
    """The pose inside the joint limits whose tool point is closest to (tx, ty): (distance in m, pose).

    Exact, by enumeration. The closest pose is a stationary point of the distance on one face of the box
    of joint limits (each joint at its lower limit, at its upper limit, or free): ``_face`` lists them.
    Each candidate takes the turn of each angle nearest q0 inside the limits (none: not a candidate).
    The nearest of all wins; ties (within _TIE_M) go to the pose nearest q0. ``_ikcore.c`` does the
    same, candidate for candidate."""
    faces = _FACES[len(links)]
    return _nearest_of(links, lo, hi, tx, ty, q0, (q for f in faces for q in _face(links, lo, hi, f, tx, ty, q0)[0]))


def _nearest_of(links, lo, hi, tx, ty, q0, candidates):
    """Of the raw poses ``candidates``, each at its turn nearest q0 inside the limits (one without such a
    turn left out), the one whose tool point is closest to (tx, ty), ties (within _TIE_M) to the one
    nearest q0: (distance in m, pose; inf and None if none fits)."""
    best_d = best_near = math.inf
    best = None
    for q in candidates:
        pose = _turns(q, q0, lo, hi)
        if pose is None:
            continue
        x, y = tool_xy(links, pose)
        d = math.sqrt((tx - x) * (tx - x) + (ty - y) * (ty - y))
        near = dist_sq(pose, q0)
        if d < best_d - _TIE_M or (d <= best_d + _TIE_M and near < best_near):
            best_d, best_near, best = d, near, pose
    return best_d, best


def closest_pose_at_phi(links, lo, hi, tx, ty, phi, q0):
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
    pairs = list(two_link(l1, l2, wx, wy))
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
    return _nearest_of(links, lo, hi, tx, ty, q0, ((q1, q2, phi - q1 - q2) for q1, q2 in pairs))


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
        exact = two_link(a, b, wx, wy)
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
        w = nearest_turn(v, q0[i], lo[i], hi[i])
        if w is None:
            return None
        pose.append(w)
    return pose


def reachable3(links, lo, hi, goal, q0):
    """Whether a pose inside the limits of a 3-link arm reaches ``goal`` (in the reach annulus): on a face
    with one joint at a limit (closed form), or anywhere on a self-motion loop that lies inside the limits
    whole (the loop's poses at one tool angle tested). A loop that meets the limits only on an edge is
    missed (``closest_pose`` finds it): True is certain, False nearly so."""
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


def dist_sq(q, q0):
    s = 0.0
    for a, b in zip(q, q0):
        s += (a - b) * (a - b)
    return s


# Each joint at its lower limit (0), its upper limit (1) or free (2); the first joint varies slowest.
_FACES = {n: list(itertools.product((0, 1, 2), repeat=n)) for n in (2, 3)}
_FACES1 = [face for face in _FACES[3] if face.count(2) == 2]  # 3 links, one joint at a limit
