"""Statics: the arm's bodies (masses and centres of mass), the torque each joint must give to hold a pose against
gravity, with or without a payload in the jaws, and the joint-space inertia the accelerations ask for.

A body rides on one **segment** of the arm: 0 turns with the base (a planar arm's: the ground), k (1..3) with the
chain's k-th link, and on an arm with a wrist roll the hand (``HAND``) turns with the roll too. Its centre of mass is
stored where it is at a reference pose (the pose the masses were read at: a URDF's zero pose, an estimate's zero
pose); at any pose it moves rigidly with its segment (``body_points``). The potential energy is sum(m g z) over the
bodies and the payload (at the tool point); the holding torque of each joint is its derivative by that joint's
angle (N m, in armctl's joint directions: positive where a positive turn of the joint lifts the load; a
parallelogram's forearm joint is the forearm's angle from the horizontal, so its torque is the one its servo at the
shoulder gives through the linkage), by central differences of the exact positions (rounding of about 1e-9 of the
torque). A planar arm works in the horizontal plane z = 0: gravity asks nothing of it, the masses only resist
acceleration (``mass_matrix``).

The bodies (``arm_bodies``) are a URDF's ``<inertial>``s where the arm has them, else estimates from the arm file:
each joint's servo (its mass from ``armctl.model.servos``) where it sits, each link's ``mass_g`` (else
``PRINTED_LINK_G_PER_MM`` of its length) at its middle, the gripper's servo and jaws (``JAWS_G``) at the tool.
Every body is a point mass (a URDF's rotational inertia is not used: the hobby links' own turning inertia is a few
per cent of what their masses give at the arm's reach).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from armctl.errors import BadInputError

G_M_S2 = 9.80665  # standard gravity
HAND = 4  # the segment of a body on the hand (after the wrist roll)
_H = 1e-6  # rad: the central differences' step


@dataclass(frozen=True)
class Body:
    """One rigid body of the arm: its ``mass_kg`` and its centre of mass ``point_m`` (x, y, z in the arm's frame)
    at the reference pose, riding on ``segment``; ``name`` says where it comes from (a URDF link)."""

    name: str
    segment: int
    point_m: tuple
    mass_kg: float


def _frames(arm, q):
    """Every segment's frame at poses ``q`` (..., n): {segment: (R (..., 3, 3), origin (..., 3))}; segment k's x
    along the chain's k-th link, y its normal in the arm's plane, z = x cross y (the arm's right on a base arm, up on
    a planar arm); 0 the base's (x along the arm; a planar arm's ground: the arm's own axes). A base arm's chain
    works in the vertical plane the base turns; a planar arm's in the horizontal plane z = 0."""
    from armctl.model.kinematics import chain_angles

    q = np.asarray(q, dtype=float)
    shape = q.shape[:-1] + (3,)
    if arm.has_base:
        b = q[..., 0]
        d = np.stack([np.cos(b), np.sin(b), np.zeros_like(b)], axis=-1)
        w = np.zeros(shape)
        w[..., 2] = 1.0  # up
        frames = {0: (np.stack([d, np.cross(w, d), w], axis=-1), np.zeros(shape))}
    else:
        d, w = np.zeros(shape), np.zeros(shape)
        d[..., 0], w[..., 1] = 1.0, 1.0
        frames = {0: (np.stack([d, w, np.cross(d, w)], axis=-1), np.zeros(shape))}
    a = np.cumsum(chain_angles(arm, q), axis=-1)
    u = np.full(shape[:-1], float(arm.base_offset_m))
    v = np.full(shape[:-1], float(arm.shoulder_height_m))
    z = np.cross(d, w)
    for k in range(arm.n_links):
        ca, sa = np.cos(a[..., k])[..., None], np.sin(a[..., k])[..., None]
        x, y = ca * d + sa * w, -sa * d + ca * w
        frames[k + 1] = (np.stack([x, y, z], axis=-1), u[..., None] * d + v[..., None] * w)
        u = u + arm.links_m[k] * np.cos(a[..., k])
        v = v + arm.links_m[k] * np.sin(a[..., k])
    return frames


def _roll_about_axis(arm, local, turn):
    """Hand points ``local`` (..., 3) in the last link's frame turned ``turn`` (rad, ...) about the roll axis."""
    r = arm.roll
    ca, sa = math.cos(r.axis_rad), math.sin(r.axis_rad)
    axis = np.array([ca, sa, 0.0])
    normal = np.array([-sa, ca, 0.0])
    z = np.array([0.0, 0.0, 1.0])
    foot = np.array([float(arm.links_m[-1]), 0.0, r.lateral_m]) - r.offset_up_m * normal - r.offset_right_m * z
    p = local - foot
    along = (p @ axis)[..., None] * axis
    perp = p - along
    c, s = np.cos(turn)[..., None], np.sin(turn)[..., None]
    return foot + along + c * perp + s * np.cross(axis, perp)


# ----------------------------------------------------------------------------------------------------------
# Estimated bodies: an arm without a URDF's <inertial>s (an arm file; a URDF without them) gets its masses from
# the servo table and the arm file's ``mass_g``, else from the estimates below. Each is said to be an estimate.

#: grams per millimetre of an estimated link (its servos not counted): an estimate between the SO-101's printed
#: upper arm (its URDF: 103 g less its 55 g STS3215 over 116 mm, 0.41 g/mm) and lighter laser-cut or thinner
#: printed hobby links (3 mm acrylic bars, about 0.1-0.2 g/mm)
PRINTED_LINK_G_PER_MM = 0.3
#: the gripper's jaws and their mount (its servo not counted): an estimate between the SO-101's printed jaws (its
#: URDF: 87 + 12 g less the 55 g STS3215, 44 g) and a micro-servo gripper's acrylic jaws (about 10 g)
JAWS_G = 25.0


def _tool_local(arm) -> tuple:
    """The tool point in the last link's frame at roll 0 (the hand frame of ``armctl.model.hand``)."""
    last = float(arm.links_m[-1])
    return (last, 0.0, float(arm.roll.lateral_m)) if arm.roll is not None else (last, 0.0, 0.0)


def _servo_seats(arm) -> list:
    """(joint index, segment, point in its frame) where each joint's servo sits: the base's on its axis; the first
    chain joint's at the shoulder, on the base (the ground); a serial joint's at its axis on the link before it; a
    parallelogram's forearm servo beside the shoulder's (it drives the forearm through the linkage); the roll's at
    the middle of the last link, before the roll."""
    shoulder = (float(arm.base_offset_m), 0.0, float(arm.shoulder_height_m))
    seats = [(0, 0, (0.0, 0.0, float(arm.shoulder_height_m) / 2))] if arm.has_base else []
    for j in range(arm.n_links):
        on_base = j == 0 or arm.parallelogram
        seats.append(
            (arm.chain_start + j, 0 if on_base else j, shoulder if on_base else (float(arm.links_m[j - 1]), 0, 0))
        )
    if arm.roll is not None:
        seats.append((arm.n - 1, arm.n_links, (float(arm.links_m[-1]) / 2, 0.0, 0.0)))
    return seats


def _link_spans(arm) -> list:
    """(joint index, segment, point, length m) of each joint's link, its mass at the middle: the base's turret on its
    axis (length 0: no estimate), each chain link; a roll arm's last link split at its middle into the wrist (the
    last pitch joint's) and the hand (the roll's)."""
    spans = [(0, 0, (0.0, 0.0, float(arm.shoulder_height_m) / 2), 0.0)] if arm.has_base else []
    for j in range(arm.n_links):
        length = float(arm.links_m[j]) / (2 if arm.roll is not None and j == arm.n_links - 1 else 1)
        spans.append((arm.chain_start + j, j + 1, (length / 2, 0.0, 0.0), length))
    if arm.roll is not None:
        last = float(arm.links_m[-1])
        spans.append((arm.n - 1, HAND, (3 * last / 4, 0.0, 0.0), last / 2))
    return spans


def _estimated_parts(arm) -> list:
    """(name, segment, point in the segment's frame at the zero pose, kg) of every body of an arm file."""
    drive, names, out = arm.drive, arm.joint_names, []
    for i, seg, point in _servo_seats(arm):
        s = drive.servo(i)
        if s is not None and s.mass_kg > 0.0:
            out.append((f"{names[i]} servo ({s.model.title})", seg, point, s.mass_kg))
    given = drive.link_mass_kg
    for i, seg, point, length in _link_spans(arm):
        mass = given[i] if i < len(given) else None
        name = f"{names[i]} link (mass_g)"
        if mass is None:
            mass, name = PRINTED_LINK_G_PER_MM * length, f"{names[i]} link (estimate: {PRINTED_LINK_G_PER_MM:g} g/mm)"
        if mass > 0.0:
            out.append((name, seg, point, float(mass)))
    hand, tool = HAND if arm.roll is not None else arm.n_links, _tool_local(arm)
    servo = drive.gripper or (arm.gripper.servo if arm.gripper is not None else None)
    if servo is not None and servo.mass_kg > 0.0:
        out.append((f"gripper servo ({servo.model.title})", hand, tool, servo.mass_kg))
    if arm.gripper is not None:
        out.append((f"gripper jaws (estimate: {JAWS_G:g} g)", hand, tool, JAWS_G / 1000.0))
    return out


_ESTIMATES: dict = {}


def arm_bodies(arm) -> tuple:
    """(bodies, the pose ``q_ref`` (rad) their points are given at, estimated): the URDF's ``<inertial>``s
    (``Arm.bodies``, ``Arm.bodies_q_ref``; estimated False) when the arm has them, else the estimates from the arm
    file (estimated True; each body's name says which of its figures are estimates). Cached per arm."""
    if arm.bodies:
        return tuple(arm.bodies), np.asarray(arm.bodies_q_ref, dtype=float), False
    hit = _ESTIMATES.get(id(arm))
    if hit is not None and hit[0] is arm:
        return hit[1]
    q_ref = np.zeros(arm.n)
    frames = _frames(arm, q_ref)
    bodies = []
    for name, seg, point, mass in _estimated_parts(arm):
        R, o = frames[arm.n_links if seg == HAND else seg]
        p = o + R @ np.asarray(point, dtype=float)
        bodies.append(Body(name, seg, tuple(float(v) for v in p), float(mass)))
    if len(_ESTIMATES) > 64:
        _ESTIMATES.clear()
    out = (tuple(bodies), q_ref, True)
    _ESTIMATES[id(arm)] = (arm, out)
    return out


def body_points(arm, q) -> np.ndarray:
    """The bodies' (``arm_bodies``) centres of mass (m) at poses ``q`` (..., n): shape (..., bodies, 3)."""
    bodies, ref, _ = arm_bodies(arm)
    q = np.asarray(q, dtype=float)
    now, then = _frames(arm, q), _frames(arm, ref)
    out = np.zeros(q.shape[:-1] + (len(bodies), 3))
    for i, body in enumerate(bodies):
        seg = arm.n_links if body.segment == HAND else body.segment
        R0, o0 = then[seg]
        local = R0.T @ (np.asarray(body.point_m, dtype=float) - o0)
        if body.segment == HAND:
            local = _roll_about_axis(arm, local, q[..., -1] - ref[-1])
        R, o = now[seg]
        out[..., i, :] = o + np.einsum("...ij,...j->...i", R, np.broadcast_to(local, o.shape))
    return out


def _tool_xyz(arm, q) -> np.ndarray:
    """The tool point (m, (..., 3)): a planar arm's at z = 0."""
    from armctl.model.kinematics import tool_point

    p = tool_point(arm, q)
    return p if p.shape[-1] == 3 else np.concatenate([p, np.zeros(p.shape[:-1] + (1,))], axis=-1)


def _check_payload(payload_kg) -> float:
    try:
        value = float(payload_kg)
    except (TypeError, ValueError):
        value = math.nan
    if not (math.isfinite(value) and 0.0 <= value <= 1000.0):
        raise BadInputError(f"payload must be a mass >= 0 kg (at most 1000), got {payload_kg!r}")
    return value


def _masses(arm) -> np.ndarray:
    m = np.array([b.mass_kg for b in arm_bodies(arm)[0]], dtype=float)
    if not np.all(np.isfinite(m) & (m >= 0.0) & (m <= 1000.0)):
        raise BadInputError(f"arm {arm.name!r}: a body's mass is negative, not a number or above 1000 kg")
    return m


def _potential(arm, q, payload_kg: float) -> np.ndarray:
    v = G_M_S2 * (body_points(arm, q)[..., 2] @ _masses(arm))
    if payload_kg:
        v = v + G_M_S2 * payload_kg * _tool_xyz(arm, q)[..., 2]
    return v


def _steps(q):
    q = np.asarray(q, dtype=float)
    n = q.shape[-1]
    return q[..., None, :] + np.concatenate([np.eye(n), -np.eye(n)]) * _H, n


def gravity_torque(arm, q, payload_kg: float = 0.0) -> np.ndarray:
    """The torque (N m) each joint must give to hold pose ``q`` (rad, (n,) or (..., n)) against gravity, with
    ``payload_kg`` at the tool point: the derivative of the potential energy by each joint angle; zeros on a planar
    arm (its plane is horizontal). The bodies are ``arm_bodies``'s. BadInputError for a negative or non-finite
    payload or mass."""
    payload_kg = _check_payload(payload_kg)
    qs, n = _steps(q)
    v = _potential(arm, qs, payload_kg)
    return (v[..., :n] - v[..., n:]) / (2.0 * _H)


def mass_matrix(arm, q, payload_kg: float = 0.0) -> np.ndarray:
    """The joint-space inertia (kg m^2, (n, n) or (..., n, n)) at pose ``q`` (rad, armctl's joint angles) of the
    point-mass bodies (``arm_bodies``) and ``payload_kg`` at the tool point: M = sum m J^T J, J the body point's
    Jacobian (m/rad) by the joint angles (central differences). With ``gravity_torque``, a move's torque is
    M(q) qdd + g(q) (the velocity terms left out)."""
    payload_kg = _check_payload(payload_kg)
    qs, n = _steps(q)
    pts, masses = body_points(arm, qs), _masses(arm)
    if payload_kg:
        pts = np.concatenate([pts, _tool_xyz(arm, qs)[..., None, :]], axis=-2)
        masses = np.append(masses, payload_kg)
    J = (pts[..., :n, :, :] - pts[..., n:, :, :]) / (2.0 * _H)  # (..., joint, body, xyz)
    return np.einsum("...ibk,b,...jbk->...ij", J, masses, J)
