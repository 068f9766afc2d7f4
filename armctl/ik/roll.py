"""IK of an arm with a wrist roll (``armctl.model.hand``): the roll is decoupled from the position and pitch.

At a given roll the hand's tool point is fixed in the last link, so the arm is an arm without a roll whose last
link is the hand's (``at_roll``: its length, an angle added to the last joint) and whose tool sits beside the
plane through the base axis (``right``, m). That beside-the-plane offset is taken off the target exactly: the
base turns by ``atan2(left, u)`` off the target's yaw and the chain reaches ``u = sqrt(rho^2 - left^2)``
(reaching back over the axis, the other way). The chain then solves the usual way (``armctl.ik.layered``),
closed form or iterated, and the roll is the asked one (or the one the arm has: no surprise turns).

A roll asked for is taken at its whole turn nearest the current roll inside the roll's limits (a roll of 200 deg
on a joint that turns -157..163 deg is -160 deg); a roll no turn of which is inside them is refused.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from armctl.errors import BadInputError
from armctl.ik import layered
from armctl.ik.inputs import check
from armctl.ik.result import IKResult
from armctl.model.arm import Arm
from armctl.model.hand import hand_link
from armctl.model.kinematics import LIMIT_TOL, base_side, nearest_turn, plain, shoulder_uv, tool_point, two_link

_SUB: dict = {}
NEAR_AXIS_M = 0.02  # the tool this close to the base axis: the poses of both sides solved, the nearer taken


def at_roll(arm: Arm, r: float) -> tuple[Arm, float, float]:
    """(the arm without its roll, as it is with the roll at ``r`` rad: its last link the hand's, its last joint's
    limits and home moved by the angle that link adds; that angle (rad); the tool beside the plane (m, right))."""
    key = (id(arm), float(r))
    hit = _SUB.get(key)
    if hit is not None and hit[0] is arm:
        return hit[1]
    length, delta, right = (float(v) for v in hand_link(arm.roll, float(arm.links_m[-1]), r))
    keep = slice(0, arm.n - 1)
    shift = np.zeros(arm.n - 1)
    shift[-1] = delta
    links = np.array(arm.links_m, dtype=float)
    links[-1] = length
    accel = None if arm.max_accel_given_rad_s2 is None else np.asarray(arm.max_accel_given_rad_s2)[keep]
    sub = dataclasses.replace(
        arm,
        links_m=links,
        q_min=arm.q_min[keep] + shift,
        q_max=arm.q_max[keep] + shift,
        max_speed_rad_s=arm.max_speed_rad_s[keep],
        max_accel_given_rad_s2=accel,
        home_rad=arm.home_rad[keep] + shift,
        joint_names=arm.joint_names[keep],
        roll=None,
        target_map=None,
        urdf_map=None if arm.urdf_map is None else arm.urdf_map[keep],
    )
    out = (sub, delta, right)
    if len(_SUB) > 256:
        _SUB.clear()
    _SUB[key] = (arm, out)
    return out


def roll_turn(arm: Arm, roll: float, current: float) -> float:
    """``roll`` (rad) moved by whole turns to the one nearest ``current`` inside the roll's limits; BadInputError
    when no turn of it is inside them (or it is not a finite number)."""
    i = arm.roll_index
    if not math.isfinite(roll):
        raise BadInputError(f"roll must be a finite number of degrees, got {roll!r}")
    lo, hi = float(arm.q_min[i]), float(arm.q_max[i])
    r = nearest_turn(float(roll), float(current), lo, hi)
    if r is None:
        raise BadInputError(
            f"roll {math.degrees(roll):.1f} deg is outside the limits of {arm.joint_names[i]!r} "
            f"[{math.degrees(lo):.1f}, {math.degrees(hi):.1f}] deg"
        )
    return r


def planes(arm: Arm, target, r: float) -> list[tuple[np.ndarray, int]]:
    """The targets the roll-less arm at roll ``r`` solves for ``target`` (x, y, z): (target, side) with the chain
    reaching forward (side +1) and back over the base axis (-1)."""
    _, _, right = at_roll(arm, r)
    x, y, z = (float(v) for v in target)
    left = -right
    rho = math.hypot(x, y)
    u = math.sqrt(max(rho * rho - left * left, 0.0))
    az = math.atan2(y, x)
    out = []
    for side in (1, -1):
        b = az - side * math.atan2(left, u)  # the plane's yaw; reaching back, the base is half a turn from it
        out.append((np.array([u * math.cos(b), u * math.sin(b), z]), side))
    return out


def stretched(arm: Arm, target, r: float) -> tuple[np.ndarray, float] | None:
    """For a target (x, y, z m) beyond the chain's reach with the hand at roll ``r`` (rad): the point nearest it
    the arm reaches, the chain stretched straight towards it in its plane, and the tool axis's pitch there (rad);
    None when the target lies within that reach (or on the base axis)."""
    length, delta, right = (float(v) for v in hand_link(arm.roll, float(arm.links_m[-1]), r))
    x, y, z = (float(v) for v in target)
    rho2 = x * x + y * y
    if rho2 <= right * right:
        return None
    u = math.sqrt(rho2 - right * right)
    uc, v = shoulder_uv(arm, u, z)
    reach = float(np.sum(arm.links_m[:-1])) + length
    d = math.hypot(uc, v)
    if d <= reach:
        return None
    s = reach / d * (1.0 - 1e-12)  # (on the reach, not a rounding beyond it)
    u2, z2 = uc * s + arm.base_offset_m, v * s + arm.shoulder_height_m
    b = math.atan2(y, x) + math.atan2(right, u)  # the plane's yaw (``planes``, reaching forward)
    cb, sb = math.cos(b), math.sin(b)
    point = np.array([u2 * cb + right * sb, u2 * sb - right * cb, z2])
    return point, math.atan2(v, uc) + arm.roll.axis_rad - delta  # (``sub_pitch`` turned round)


def sub_pitch(arm: Arm, phi: float | None, delta: float, side: int) -> float | None:
    """The roll-less arm's tool angle for the tool axis's pitch ``phi`` (rad) on a side of the base axis."""
    if phi is None:
        return None
    a = arm.roll.axis_rad
    return phi - a + delta if side > 0 else phi + a - delta


def solve(arm: Arm, target, phi, q0, method: str, tol: float, max_iter: int, roll: float | None) -> IKResult:
    """``ik.solve`` for an arm with a wrist roll (the options positional): the pose (rad, the roll last) that puts
    the tool point on ``target`` (x, y, z m) with the tool axis at pitch ``phi`` (rad, or free) and the roll at
    ``roll`` (rad; None: the roll of ``q0``)."""
    t, phi, q0 = check(arm, target, phi, q0)
    q0 = np.array(q0, dtype=float)
    i = arm.roll_index
    r = float(np.clip(q0[i], arm.q_min[i], arm.q_max[i])) if roll is None else roll_turn(arm, roll, q0[i])
    u0 = _plane_u(plain(arm), arm, q0.tolist(), float(q0[i]))[0]
    if phi is not None and (method == "dls" or method == "analytic") and u0 >= NEAR_AXIS_M:
        fast = _fast(arm, t, phi, q0.tolist(), r, method, tol)
        if fast is not None:
            return fast
    sub, delta, _ = at_roll(arm, r)
    q0_sub = q0[:i].copy()
    q0_sub[-1] += delta
    tv = np.asarray(t, dtype=float)
    best, found = None, []
    order = planes(arm, tv, r)
    if u0 < 0:  # the side the arm is on first
        order.reverse()
    for goal, side in order:
        res = layered.solve(sub, goal, sub_pitch(arm, phi, delta, side), q0_sub, method, tol, max_iter, side)
        q = np.append(res.q, r)
        q[i - 1] -= delta
        err = float(np.linalg.norm(tool_point(arm, q) - tv))
        on_side = float(base_side(sub, res.q)) == side
        ok = bool(res.ok and on_side and err <= max(tol, 1e-9) and arm.within_limits(q, LIMIT_TOL))
        out = dataclasses.replace(res, q=q, ok=ok, error_m=err)
        if ok and abs(u0) >= NEAR_AXIS_M:
            return out
        if ok:  # the tool next to the base axis: either side's pose may be the nearer
            found.append(out)
        elif best is None or (on_side and not best[1]):
            best = (out, on_side)
    if found:
        return min(found, key=lambda o: float(np.sum((o.q[:i] - q0[:i]) ** 2)))
    out = best[0]
    if out.reason is None:
        out = dataclasses.replace(out, reason="no pose inside the joint limits reaches the target at this roll")
    return out


def _fast(arm: Arm, t, phi: float, q0: list, r: float, method: str, tol: float) -> IKResult | None:
    """The common case in plain floats: a 3-link chain at a given pitch, reaching forward (the side ``q0`` is on: the
    caller's to check, away from the base axis), in closed form (the wrist point, the 2-link branch inside the
    limits nearest ``q0``, the wrist's turn nearest its own): what the general path returns for it. None: anything
    else (the general path solves and explains)."""
    P = plain(arm)
    if len(P.links) != 3 or not P.has_base or P.pg:
        return None
    x, y, z = (float(v) for v in t)
    length, delta, right = (float(v) for v in hand_link(arm.roll, P.links[2], r))
    rho2 = x * x + y * y
    if rho2 <= right * right:
        return None  # (on the base axis)
    u = math.sqrt(rho2 - right * right)
    b = nearest_turn(math.atan2(y, x) + math.atan2(right, u), q0[0], P.qlo[0], P.qhi[0])
    if b is None:
        return None
    uc, v = shoulder_uv(P, u, z)
    ph = sub_pitch(arm, phi, delta, 1)
    q, best = None, math.inf
    for a, e in two_link(P.links[0], P.links[1], uc - length * math.cos(ph), v - length * math.sin(ph)):
        j1 = nearest_turn(a, q0[1], P.lo[0], P.hi[0])
        j2 = nearest_turn(e, q0[2], P.lo[1], P.hi[1])
        j3 = None if j1 is None or j2 is None else nearest_turn(ph - j1 - j2 - delta, q0[3], P.lo[2], P.hi[2])
        if j3 is not None:  # the branch inside the limits nearest q0, the chain's joints counted (as start_candidates)
            d = (j1 - q0[1]) ** 2 + (j2 - q0[2]) ** 2 + (j3 - q0[3]) ** 2
            if d < best:
                q, best = [b, j1, j2, j3, r], d
    if q is None:
        return None
    tu, tv = _plane_u(P, arm, q, r)
    cb, sb = math.cos(b), math.sin(b)
    err = math.sqrt((tu * cb + right * sb - x) ** 2 + (tu * sb - right * cb - y) ** 2 + (tv - z) ** 2)
    if tu < 0.0 or err > max(tol, 1e-9):
        return None  # rounding near a singular pose, or the tool behind the axis: the general path
    return IKResult(np.array(q), True, err, 0, 1, 0, method, None, 0.0, 0.0, 0)


def _plane_u(P, arm: Arm, q: list, r: float) -> tuple[float, float]:
    """(u, v) (m) of the tool of pose ``q`` (plain floats) in its plane, the hand at roll ``r``."""
    length, delta, _ = hand_link(arm.roll, P.links[2], r)
    a1 = q[1]
    a2 = a1 + q[2]
    a3 = a2 + q[3] + float(delta)
    l1, l2, length = P.links[0], P.links[1], float(length)
    u = P.base_offset_m + l1 * math.cos(a1) + l2 * math.cos(a2) + length * math.cos(a3)
    return u, P.shoulder_height_m + l1 * math.sin(a1) + l2 * math.sin(a2) + length * math.sin(a3)
