"""Forward kinematics, Jacobians and manipulability of a planar serial arm.

Pure functions on numpy arrays. ``links`` is the (n,) link lengths in metres;
``q`` is joint angles in radians with shape (n,) or (..., n) for a batch.
Joint i is measured from link i-1 (joint 1 from the base x axis).
"""

from __future__ import annotations

import math

import numpy as np


def _abs_angles(q):
    return np.cumsum(np.asarray(q, dtype=float), axis=-1)


def fk(links, q) -> np.ndarray:
    """Tool point (x, y) in metres for joint angles ``q`` (rad); shape (..., 2)."""
    a = _abs_angles(q)
    links = np.asarray(links, dtype=float)
    return np.stack([np.sum(links * np.cos(a), axis=-1), np.sum(links * np.sin(a), axis=-1)], axis=-1)


def tool_angle(q) -> np.ndarray:
    """Tool angle phi (rad) from the base x axis: the sum of the joint angles."""
    return np.sum(np.asarray(q, dtype=float), axis=-1)


def joint_positions(links, q) -> np.ndarray:
    """Positions of the base, every joint and the tool; shape (..., n+1, 2), metres."""
    a = _abs_angles(q)
    links = np.asarray(links, dtype=float)
    steps = np.stack([links * np.cos(a), links * np.sin(a)], axis=-1)
    pts = np.cumsum(steps, axis=-2)
    zero = np.zeros(pts.shape[:-2] + (1, 2))
    return np.concatenate([zero, pts], axis=-2)


def jacobian(links, q) -> np.ndarray:
    """Analytic Jacobian d(x, y)/dq of the tool point; shape (..., 2, n), m/rad."""
    a = _abs_angles(q)
    links = np.asarray(links, dtype=float)
    # Column i sums the contributions of links i..n-1: a reversed cumulative sum.
    lc = links * np.cos(a)
    ls = links * np.sin(a)
    cx = np.flip(np.cumsum(np.flip(-ls, -1), axis=-1), -1)
    cy = np.flip(np.cumsum(np.flip(lc, -1), axis=-1), -1)
    return np.stack([cx, cy], axis=-2)


def manipulability(links, q) -> np.ndarray:
    """Yoshikawa manipulability: |det J| for 2 links, sqrt(det(J J^T)) for 3 (m^2)."""
    J = jacobian(links, q)
    if J.shape[-1] == 2:
        return np.abs(np.linalg.det(J))
    return np.sqrt(np.maximum(np.linalg.det(J @ np.swapaxes(J, -1, -2)), 0.0))


def joint_velocities(links, q, tool_velocity, *, damping: float = 0.0) -> np.ndarray:
    """Joint speeds (rad/s) that give the tool velocity (m/s) at pose ``q``.

    2 links: solves J qdot = v. 3 links: the minimum-norm solution
    J^T (J J^T + damping^2 I)^-1 v. Near a singularity the result grows
    without bound (with ``damping`` = 0): that is the point of asking.
    """
    J = jacobian(links, q)
    v = np.asarray(tool_velocity, dtype=float)
    if J.shape[-1] == 2 and damping == 0.0:
        return np.linalg.solve(J, v[..., None])[..., 0]
    JT = np.swapaxes(J, -1, -2)
    A = J @ JT + (damping**2) * np.eye(2)
    return (JT @ np.linalg.solve(A, v[..., None]))[..., 0]


# ----------------------------------------------------------------------------------------------------------
# Whole arms: a planar chain, serial or parallelogram, optionally on a yaw base.
#
# The functions below take an ``Arm`` (anything with its attributes) and joint angles in the arm's own
# joints (base first; a parallelogram's joint 2 from the horizontal). They are the one place that knows
# how those joints move the tool; every caller (IK, motion, plots, the web page, the CLI) goes through
# them. For a planar serial arm they are exactly the chain functions above.


def chain_angles(arm, q) -> np.ndarray:
    """The chain's serial joint angles (rad), shape (..., n_links): the base dropped, a parallelogram's
    forearm angle made relative to the upper arm."""
    q = np.asarray(q, dtype=float)
    c = q[..., arm.chain_joints] if arm.layered else q
    if arm.parallelogram:
        c = np.stack([c[..., 0], c[..., 1] - c[..., 0]], axis=-1)
    return c


def joint_angles(arm, chain, base=None, roll=None) -> np.ndarray:
    """The arm's joint angles (rad) for serial chain angles ``chain`` (..., n_links) and, on a base arm,
    base angles ``base`` (...): the inverse of ``chain_angles``. An arm with a wrist roll gets ``roll`` (rad, ...)
    last (None: its home roll)."""
    c = np.array(chain, dtype=float)
    if arm.parallelogram:
        c = np.stack([c[..., 0], c[..., 1] + c[..., 0]], axis=-1)
    if not arm.has_base:
        return c
    b = np.broadcast_to(np.asarray(base, dtype=float), c.shape[:-1])
    out = np.concatenate([b[..., None], c], axis=-1)
    if arm.roll is None:
        return out
    r = np.broadcast_to(np.asarray(arm.home_rad[-1] if roll is None else roll, dtype=float), c.shape[:-1])
    return np.concatenate([out, r[..., None]], axis=-1)


# ----------------------------------------------------------------------------------------------------------
# A wrist roll (``armctl.model.hand``): the roll is the pose's last angle; the hand's point at that roll sets the
# last link the chain sees (its length and an angle added to the last joint) and the tool's place beside the plane.


def roll_angles(arm, q) -> np.ndarray:
    """The roll angles (rad) of poses ``q``, shape (...); zeros on an arm without a roll."""
    q = np.asarray(q, dtype=float)
    return q[..., -1] if arm.roll is not None else np.zeros(q.shape[:-1])


def _roll_plane(arm, q):
    """A roll arm's tool in its plane: (u, v) of the tool (m, from the base axis and z = 0), the wrist's (u, v), the
    tool beside the plane (m, right), the chain's last link direction psi (rad, serial sum)."""
    from armctl.model.hand import hand_link

    q = np.asarray(q, dtype=float)
    c = chain_angles(arm, q)
    links = arm.links_m
    a = np.cumsum(c, axis=-1)
    wu = np.sum(links[:-1] * np.cos(a[..., :-1]), axis=-1) + arm.base_offset_m
    wv = np.sum(links[:-1] * np.sin(a[..., :-1]), axis=-1) + arm.shoulder_height_m
    length, delta, right = hand_link(arm.roll, float(links[-1]), q[..., -1])
    psi = a[..., -1]
    tu = wu + length * np.cos(psi + delta)
    tv = wv + length * np.sin(psi + delta)
    return tu, tv, wu, wv, right, psi


def _lateral_to_space(u, v, right, base):
    """A point at (u, v) in the plane at base angles ``base`` and ``right`` beside it (the arm's right) -> (x, y, z)."""
    cb, sb = np.cos(base), np.sin(base)
    return np.stack([u * cb + right * sb, u * sb - right * cb, v], axis=-1)


def link_angle(arm, q) -> np.ndarray:
    """Angle (rad) between upper arm and forearm of a parallelogram arm: pi when straight, 0 folded flat."""
    c = chain_angles(arm, q)
    return np.pi + c[..., 1]


def _plane(arm, q):
    """(u, v) of every chain point in the arm's vertical plane, shape (..., n_links+1, 2), from the base
    axis and z = 0: the shoulder, the elbow(s) and the tool; and the base angles (...) or None."""
    pts = joint_positions(arm.links_m, chain_angles(arm, q))
    if arm.has_base:
        pts = pts + np.array([arm.base_offset_m, arm.shoulder_height_m])
        return pts, np.asarray(q, dtype=float)[..., 0]
    return pts, None


def _to_space(uv, base):
    """Plane points (..., k, 2) at base angles (...) -> (..., k, 3) in x, y, z."""
    c, s = np.cos(base)[..., None], np.sin(base)[..., None]
    return np.stack([uv[..., 0] * c, uv[..., 0] * s, uv[..., 1]], axis=-1)


def tool_point(arm, q) -> np.ndarray:
    """Tool point (m) for joint angles ``q`` (rad): (x, y) on a planar arm, (x, y, z) on a base arm;
    shape (..., 2 or 3)."""
    if not arm.layered:
        return fk(arm.links_m, q)
    if arm.roll is not None:
        tu, tv, _, _, right, _ = _roll_plane(arm, q)
        return _lateral_to_space(tu, tv, right, np.asarray(q, dtype=float)[..., 0])
    uv = fk(arm.links_m, chain_angles(arm, q))
    if not arm.has_base:
        return uv
    b = np.asarray(q, dtype=float)[..., 0]
    u = uv[..., 0] + arm.base_offset_m
    return np.stack([u * np.cos(b), u * np.sin(b), uv[..., 1] + arm.shoulder_height_m], axis=-1)


def arm_points(arm, q) -> np.ndarray:
    """Positions (m) to draw the arm: on a base arm the base's foot (0, 0, 0), the base axis at the
    shoulder's height, then the shoulder, elbow(s) and tool, shape (..., n_links+3, 3); on a planar arm
    the shoulder, elbow(s) and tool, shape (..., n_links+1, 2) (as ``joint_positions``)."""
    pts, base = _plane(arm, q)
    if base is None:
        return pts
    foot = np.zeros(pts.shape[:-2] + (2, 2))
    foot[..., 1, 1] = arm.shoulder_height_m
    out = _to_space(np.concatenate([foot, pts], axis=-2), base)
    if arm.roll is not None:
        out[..., -1, :] = tool_point(arm, q)
    return out


def tool_pitch(arm, q) -> np.ndarray:
    """Tool angle (rad): on a planar arm the sum of the joint angles (``tool_angle``); on a base arm the
    tool's pitch from the horizontal in its vertical plane, 0 pointing away from the base axis, -pi/2
    straight down, in (-pi, pi] (a chain reaching back over the base axis is counted from the far side)."""
    if not arm.layered:
        return tool_angle(q)
    phi = np.sum(chain_angles(arm, q), axis=-1)
    if not arm.has_base:
        return phi
    if arm.roll is not None:  # the roll axis's pitch, the tool's side of the base axis
        phi = phi + arm.roll.axis_rad
        u = _roll_plane(arm, q)[0]
    else:
        u = fk(arm.links_m, chain_angles(arm, q))[..., 0] + arm.base_offset_m
    phi = np.where(u < 0, np.pi - phi, phi)
    return np.remainder(phi + np.pi, 2 * np.pi) - np.pi


def tool_pose(arm, q) -> np.ndarray:
    """The tool's frame at pose ``q`` in the base frame, shape (..., 4, 4), metres: origin the tool point (a planar
    arm's plane, its x and y, is this frame's z = 0, and z its normal); x along the tool's heading (a planar arm:
    the tool angle phi; a base arm: away from the base axis in the arm's vertical plane, pitched by ``tool_pitch``,
    level on a parallelogram arm, whose linkage holds the hand level); y to its left (level on a base arm); z = x
    cross y (up when a base arm's tool is level; toward a planar arm's front). A marker stuck on the tool, its face
    up (a planar arm: facing the front of its plane), has this frame."""
    q = np.asarray(q, dtype=float)
    if arm.roll is not None:
        return _roll_tool_pose(arm, q)
    p = tool_point(arm, q)
    if p.shape[-1] == 2:
        p = np.concatenate([p, np.zeros(p.shape[:-1] + (1,))], axis=-1)
    if arm.has_base:
        heading = q[..., 0] + np.where(base_side(arm, q) < 0, np.pi, 0.0)
        pitch = np.zeros(q.shape[:-1]) if arm.parallelogram else tool_pitch(arm, q)
    else:
        heading, pitch = tool_pitch(arm, q), np.zeros(q.shape[:-1])
    ch, sh, cp, sp = np.cos(heading), np.sin(heading), np.cos(pitch), np.sin(pitch)
    x = np.stack([cp * ch, cp * sh, sp], axis=-1)
    y = np.stack([-sh, ch, np.zeros_like(sh)], axis=-1)
    out = np.zeros(q.shape[:-1] + (4, 4))
    out[..., :3, 0], out[..., :3, 1], out[..., :3, 2] = x, y, np.cross(x, y)
    out[..., :3, 3], out[..., 3, 3] = p, 1.0
    return out


def _roll_tool_pose(arm, q) -> np.ndarray:
    """A roll arm's tool frame: x along the roll axis (pointing away from the wrist), y along the jaws' closing line
    (at roll 0 the arm's left turned by ``Roll.jaw_rad`` about x), z = x cross y; the physical hand's frame on
    either side of the base axis."""
    tu, tv, _, _, right, psi = _roll_plane(arm, q)
    b = q[..., 0]
    d = np.stack([np.cos(b), np.sin(b), np.zeros_like(b)], axis=-1)
    left = np.stack([-np.sin(b), np.cos(b), np.zeros_like(b)], axis=-1)
    up = np.zeros(d.shape)
    up[..., 2] = 1.0
    a = psi + arm.roll.axis_rad
    x = np.cos(a)[..., None] * d + np.sin(a)[..., None] * up
    z0 = np.cross(x, left)
    r = (q[..., -1] + arm.roll.jaw_rad)[..., None]
    y = np.cos(r) * left + np.sin(r) * z0
    out = np.zeros(q.shape[:-1] + (4, 4))
    out[..., :3, 0], out[..., :3, 1], out[..., :3, 2] = x, y, np.cross(x, y)
    out[..., :3, 3], out[..., 3, 3] = _lateral_to_space(tu, tv, right, b), 1.0
    return out


def tool_rpy(R) -> np.ndarray:
    """Roll, pitch, yaw (rad) of rotation matrices ``R`` (..., 3, 3), as URDF's ``rpy`` (R = Rz(yaw) Ry(pitch)
    Rx(roll)); pitch in [-pi/2, pi/2], roll 0 at the pitch's poles (gimbal lock)."""
    R = np.asarray(R, dtype=float)
    pitch = np.arcsin(np.clip(-R[..., 2, 0], -1.0, 1.0))
    lock = np.abs(R[..., 2, 0]) > 1.0 - 1e-12
    yaw = np.where(lock, np.arctan2(-R[..., 0, 1], R[..., 1, 1]), np.arctan2(R[..., 1, 0], R[..., 0, 0]))
    roll = np.where(lock, 0.0, np.arctan2(R[..., 2, 1], R[..., 2, 2]))
    return np.stack([roll, pitch, yaw], axis=-1)


def base_side(arm, q) -> np.ndarray:
    """Which side of the base axis pose ``q`` puts the tool, shape (...): +1 on the side the arm faces, -1
    where the chain reaches back over the axis (as ``tool_pitch`` counts it); +1 on an arm without a base."""
    if not arm.has_base:
        return np.ones(np.shape(q)[:-1])
    if arm.roll is not None:
        u = _roll_plane(arm, q)[0]
    else:
        u = fk(arm.links_m, chain_angles(arm, q))[..., 0] + arm.base_offset_m
    return np.where(u >= 0.0, 1.0, -1.0)


def arm_jacobian(arm, q) -> np.ndarray:
    """Jacobian d(tool point)/dq of the arm's own joints, shape (..., dim, n), m/rad."""
    if not arm.layered:
        return jacobian(arm.links_m, q)
    q = np.asarray(q, dtype=float)
    c = chain_angles(arm, q)
    J = jacobian(arm.links_m, c)  # d(u, v)/dc
    if arm.parallelogram:  # c1 = q1, c2 = q2 - q1
        J = np.stack([J[..., 0] - J[..., 1], J[..., 1]], axis=-1)
    if not arm.has_base:
        return J
    b = q[..., 0]
    cb, sb = np.cos(b)[..., None], np.sin(b)[..., None]
    u = fk(arm.links_m, c)[..., 0] + arm.base_offset_m
    col_b = np.stack([-u * np.sin(b), u * np.cos(b), np.zeros_like(u)], axis=-1)[..., None]
    rest = np.stack([J[..., 0, :] * cb, J[..., 0, :] * sb, J[..., 1, :]], axis=-2)
    return np.concatenate([col_b, rest], axis=-1)


def arm_manipulability(arm, q) -> np.ndarray:
    """Yoshikawa manipulability sqrt(det(J J^T)) of the arm's Jacobian (m^2 planar, m^3 on a base)."""
    if not arm.layered:
        return manipulability(arm.links_m, q)
    J = arm_jacobian(arm, q)
    return np.sqrt(np.maximum(np.linalg.det(J @ np.swapaxes(J, -1, -2)), 0.0))


def limit_names(arm) -> list[str]:
    """One name per column of ``limit_excess``: each joint, then a parallelogram's link angle. The chain's
    joints count from 1 on a base arm too (Q1 Q2 after QBASE)."""
    chain = arm.joint_names[arm.chain_joints]
    names = [f"joint {i + 1} ({name})" for i, name in enumerate(chain)]
    if arm.has_base:
        names.insert(0, f"the base ({arm.joint_names[0]})")
    if arm.roll is not None:
        names.append(f"the wrist roll ({arm.joint_names[-1]})")
    if arm.parallelogram:
        names.append("the angle between upper arm and forearm")
    return names


def limit_excess(arm, q) -> np.ndarray:
    """How far (rad) ``q`` lies outside each limit, shape (..., m), <= 0 inside: every joint's range,
    then (parallelogram) the angle between upper arm and forearm. The one check of the coupled limits."""
    q = np.asarray(q, dtype=float)
    ex = np.maximum(arm.q_min - q, q - arm.q_max)
    if arm.parallelogram:
        lo, hi = arm.link_angle_rad
        a = link_angle(arm, q)
        ex = np.concatenate([ex, np.maximum(lo - a, a - hi)[..., None]], axis=-1)
    return ex


# ----------------------------------------------------------------------------------------------------------
# Whole turns: a joint angle and the same angle plus 2 pi k. Every "which turn" question is answered here.

TWO_PI = 2.0 * math.pi
LIMIT_TOL = 1e-9  # (rad) a limit is kept within this


def wrap(a):
    """Angles (rad) wrapped to [-pi, pi)."""
    return (np.asarray(a) + math.pi) % TWO_PI - math.pi


def unwind(q, ref):
    """``q`` shifted by whole turns per element to lie nearest ``ref`` (both broadcast, rad)."""
    return q + TWO_PI * np.round((ref - q) / TWO_PI)


def nearest_turn(angle: float, ref: float, lo: float, hi: float, tol: float = LIMIT_TOL) -> float | None:
    """``angle + 2 pi k`` inside [lo, hi] nearest ``ref`` (clipped onto the range within ``tol``), or None."""
    if lo <= angle <= hi and -math.pi <= angle - ref <= math.pi:
        return angle  # the usual case: no other turn is nearer
    k = round((ref - angle) / TWO_PI)
    best = None
    for kk in (k, k - 1, k + 1):
        w = angle + TWO_PI * kk
        if lo - tol <= w <= hi + tol and (best is None or abs(w - ref) < abs(best - ref)):
            best = w
    return None if best is None else min(max(best, lo), hi)


def turns_inside(angle: float, lo: float, hi: float, tol: float = LIMIT_TOL) -> list[float]:
    """Every ``angle + 2 pi k`` inside [lo, hi] (clipped onto it within ``tol``), lowest first."""
    k = math.ceil((lo - tol - angle) / TWO_PI)
    out = []
    while angle + TWO_PI * k <= hi + tol:
        out.append(min(max(angle + TWO_PI * k, lo), hi))
        k += 1
    return out


def nearest_turn_batch(angle, ref, lo: float, hi: float):
    """Per row: ``angle + 2 pi k`` inside [lo, hi] nearest ``ref``, NaN where none is."""
    b = angle + TWO_PI * np.round((ref - angle) / TWO_PI)
    for k in (-1.0, 1.0):  # the nearest turn may lie outside while another is inside
        alt = b + k * TWO_PI
        swap = ((b < lo - LIMIT_TOL) | (b > hi + LIMIT_TOL)) & (alt >= lo - LIMIT_TOL) & (alt <= hi + LIMIT_TOL)
        b = np.where(swap, alt, b)
    return np.where((b < lo - LIMIT_TOL) | (b > hi + LIMIT_TOL), np.nan, np.clip(b, lo, hi))


def turn_inside_batch(angle, ref, lo: float, hi: float):
    """Per row the turn of ``angle`` inside [lo, hi] (nearest ``ref`` if several fit), NaN if none does."""
    if hi - lo < TWO_PI:  # one turn at most fits: the first one at or above lo
        j = angle + TWO_PI * np.ceil((lo - LIMIT_TOL - angle) / TWO_PI)
        return np.where(j <= hi + LIMIT_TOL, j, np.nan)
    return nearest_turn_batch(angle, ref, lo, hi)


# ----------------------------------------------------------------------------------------------------------
# The closed-form 2-link solve: the one formula, scalar and batch.


def two_link(l1: float, l2: float, x: float, y: float) -> list[tuple[float, float]]:
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


analytic_2link = two_link  # its name in armctl.ik and the README


def two_link_batch(l1: float, l2: float, x, y, elbows=(-1.0, 1.0), snap: float = 1e-12, *, with_sin=False):
    """``two_link`` for many points (arrays ``x``, ``y``), vectorised: (reach, branches) with ``reach`` (N,)
    True where the point is inside the reach annulus and one (q1, q2) pair of arrays per elbow sign in
    ``elbows`` (-1 elbow up, +1 elbow down; an elbow may be an array, one sign per point). Out of reach the
    arm points straight or folded towards it (the nearest pose). Within ``snap`` of straight or folded (in
    cos q2) the arm is taken as exactly straight or folded, as ``two_link`` does; ``snap=0`` keeps the
    rounding (the line paths' branches, whose samples at full reach are compared with their neighbours').
    ``with_sin``: (reach, branches, |sin q2|) (the redundancy score's singularity term)."""
    c2 = (x * x + y * y - l1 * l1 - l2 * l2) / (2.0 * l1 * l2)
    reach = np.abs(c2) <= 1.0 + 1e-12
    c2 = np.clip(c2, -1.0, 1.0)
    s2 = np.sqrt(1.0 - c2 * c2)
    if snap > 0.0:
        s2 = np.where(1.0 - np.abs(c2) < snap, 0.0, s2)
    base = np.arctan2(y, x)
    out = []
    for e in elbows:
        s = e * s2
        out.append((base - np.arctan2(l2 * s, l1 + l2 * c2), np.arctan2(s, c2)))
    return (reach, out, s2) if with_sin else (reach, out)


def annulus_excess(r, r_min: float, r_max: float):
    """How far (m) distances ``r`` from the centre lie outside the annulus [r_min, r_max]; <= 0 inside.
    ``r`` a float (a float back, no numpy on the scalar paths) or an array."""
    if type(r) is float:
        return max(r - r_max, r_min - r)
    return np.maximum(r - r_max, r_min - r)


# ----------------------------------------------------------------------------------------------------------
# The base-plane split: a point in space as a base arm's chain sees it. The base turns the chain's vertical
# plane to the point's yaw; in that plane the point lies ``rho`` from the base axis (``-rho`` with the base
# half a turn round, the chain reaching back over the axis), and the chain solves (u, v) from its shoulder.


def base_split(x: float, y: float) -> tuple[float, float]:
    """A point's yaw about the base axis (rad, from the x axis) and its distance rho (m) from the axis;
    plain floats (``base_split_batch`` for arrays)."""
    return math.atan2(y, x), math.hypot(x, y)


def base_split_batch(x, y):
    """``base_split`` for arrays of points: (yaw (N,) rad, rho (N,) m)."""
    return np.arctan2(y, x), np.hypot(x, y)


def shoulder_uv(arm, u, z):
    """(u, v) (m) in the chain's plane from the shoulder of a point at signed distance ``u`` from the base
    axis in that plane and height ``z``: the shoulder's offset and height taken off (both 0 without a
    base). Floats or arrays; ``arm`` an ``Arm`` or its ``PlainArm``."""
    return u - arm.base_offset_m, z - arm.shoulder_height_m


# ----------------------------------------------------------------------------------------------------------
# An arm's numbers as plain floats, for scalar code (one cache for IK and the reach)


class PlainArm:
    """An arm's numbers as plain Python floats for scalar code (one per arm: ``plain(arm)``): the chain's
    joint limits (its own joints), the link-angle range, the base's range and the offsets."""

    __slots__ = (
        "arm",
        "links",
        "lo",
        "hi",
        "qlo",
        "qhi",
        "home",
        "pg",
        "la_lo",
        "la_hi",
        "has_base",
        "blo",
        "bhi",
        "base_offset_m",
        "shoulder_height_m",
    )

    def __init__(self, arm):
        c = arm.chain_joints
        self.arm = arm
        self.links = [float(v) for v in arm.links_m]
        self.lo = [float(v) for v in arm.q_min[c]]
        self.hi = [float(v) for v in arm.q_max[c]]
        self.qlo = [float(v) for v in arm.q_min]  # every joint, the base first
        self.qhi = [float(v) for v in arm.q_max]
        self.home = [float(v) for v in arm.home_rad]
        self.pg = arm.parallelogram
        self.la_lo, self.la_hi = (float(v) for v in arm.link_angle_rad) if self.pg else (0.0, 0.0)
        self.has_base = arm.has_base
        self.blo = float(arm.q_min[0]) if arm.has_base else 0.0
        self.bhi = float(arm.q_max[0]) if arm.has_base else 0.0
        self.base_offset_m, self.shoulder_height_m = float(arm.base_offset_m), float(arm.shoulder_height_m)


_PLAIN: dict = {}


def plain(arm) -> PlainArm:
    """``PlainArm`` of ``arm`` (cached)."""
    p = _PLAIN.get(id(arm))
    if p is None or p.arm is not arm:
        if len(_PLAIN) > 64:
            _PLAIN.clear()
        p = _PLAIN[id(arm)] = PlainArm(arm)
    return p
