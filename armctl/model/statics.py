"""Statics: the arm's bodies (masses and centres of mass) and the torque each joint must give to hold a pose
against gravity, with or without a payload in the jaws.

A body rides on one **segment** of the arm: 0 turns with the base, k (1..3) with the chain's k-th link, and on an
arm with a wrist roll the hand (``HAND``) turns with the roll too. Its centre of mass is stored where it is at a
reference pose (``Arm.bodies_q_ref``, the pose the masses were read at: a URDF's zero pose); at any pose it moves
rigidly with its segment (``body_points``). The potential energy is sum(m g z) over the bodies and the payload (at
the tool point); the holding torque of each joint is its derivative by that joint's angle (N m, in armctl's joint
directions: positive where a positive turn of the joint lifts the load), by central differences of the exact
positions (rounding of about 1e-9 of the torque).

Serial chains on a rotating base (the SO-101; roll or none); other arms have no bodies yet (``gravity_torque``
says so).
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
    along the chain's k-th link, y its normal in the arm's plane, z the arm's right; 0 the base's (x along the arm)."""
    from armctl.model.kinematics import chain_angles

    q = np.asarray(q, dtype=float)
    b = q[..., 0]
    d = np.stack([np.cos(b), np.sin(b), np.zeros_like(b)], axis=-1)
    left = np.stack([-np.sin(b), np.cos(b), np.zeros_like(b)], axis=-1)
    up = np.zeros(d.shape)
    up[..., 2] = 1.0
    frames = {0: (np.stack([d, left, up], axis=-1), np.zeros(d.shape))}
    a = np.cumsum(chain_angles(arm, q), axis=-1)
    u = np.full(b.shape, float(arm.base_offset_m))
    v = np.full(b.shape, float(arm.shoulder_height_m))
    for k in range(arm.n_links):
        ca, sa = np.cos(a[..., k])[..., None], np.sin(a[..., k])[..., None]
        x, y = ca * d + sa * up, -sa * d + ca * up
        frames[k + 1] = (np.stack([x, y, -left], axis=-1), u[..., None] * d + v[..., None] * up)
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


def body_points(arm, q) -> np.ndarray:
    """The bodies' centres of mass (m) at poses ``q`` (..., n): shape (..., bodies, 3)."""
    bodies = arm.bodies or ()
    q = np.asarray(q, dtype=float)
    ref = np.asarray(arm.bodies_q_ref, dtype=float)
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


def _potential(arm, q, payload_kg: float) -> np.ndarray:
    from armctl.model.kinematics import tool_point

    masses = np.array([b.mass_kg for b in arm.bodies])
    v = G_M_S2 * (body_points(arm, q)[..., 2] @ masses)
    if payload_kg:
        v = v + G_M_S2 * payload_kg * tool_point(arm, q)[..., 2]
    return v


def gravity_torque(arm, q, payload_kg: float = 0.0) -> np.ndarray:
    """The torque (N m) each joint must give to hold pose ``q`` (rad, (n,) or (..., n)) against gravity, with
    ``payload_kg`` at the tool point: the derivative of the potential energy by each joint angle. BadInputError on
    an arm without bodies (masses) or for a negative or non-finite payload."""
    if not arm.bodies:
        raise BadInputError(f"arm {arm.name!r} has no masses (a URDF with <inertial>s gives them)")
    if not (math.isfinite(payload_kg) and payload_kg >= 0.0):
        raise BadInputError(f"payload must be a mass >= 0 kg, got {payload_kg!r}")
    q = np.asarray(q, dtype=float)
    n = q.shape[-1]
    steps = np.concatenate([np.eye(n), -np.eye(n)]) * _H
    v = _potential(arm, q[..., None, :] + steps, payload_kg)
    return (v[..., :n] - v[..., n:]) / (2.0 * _H)
