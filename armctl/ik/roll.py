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
from armctl.ik.result import DEFAULT_MAX_ITER, DEFAULT_TOL_M, IKResult
from armctl.model import validate
from armctl.model.arm import Arm
from armctl.model.hand import hand_link, jaw_yaw_roll
from armctl.model.kinematics import LIMIT_TOL, base_side, nearest_turn, tool_point, two_link

_SUB: dict = {}


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


def check_roll(arm: Arm, roll) -> float:
    """``roll`` (rad) checked for ``arm`` at the edge (the Python API, the web page): a finite angle some whole turn
    of which is inside the wrist roll's limits (which turn: the planner's, from where the move starts);
    BadInputError on an arm without a roll, or otherwise."""
    if arm.roll is None:
        raise BadInputError(f"arm {arm.name!r} has no wrist roll: a roll cannot be given")
    roll = validate.radians(roll, "roll")
    roll_turn(arm, roll, roll)
    return roll


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


def sub_pitch(arm: Arm, phi: float | None, delta: float, side: int) -> float | None:
    """The roll-less arm's tool angle for the tool axis's pitch ``phi`` (rad) on a side of the base axis."""
    if phi is None:
        return None
    a = arm.roll.axis_rad
    return phi - a + delta if side > 0 else phi + a - delta


def _closed_form(arm: Arm, t, phi: float, q0, r: float, method: str, tol: float) -> IKResult | None:
    """A pitch given: the closed form in plain floats (what the iterations would converge to), the pose inside every
    limit nearest ``q0`` on the side of the base axis ``q0`` is on, else the other; None when it finds none (the
    general path then explains the miss)."""
    length, delta, right = (float(v) for v in hand_link(arm.roll, float(arm.links_m[-1]), r))
    x, y, z = (float(v) for v in t)
    rho, az, left = math.hypot(x, y), math.atan2(y, x), -right
    if rho <= 1e-9:
        return None  # on the base axis: the general path keeps the base where it is
    u = math.sqrt(max(rho * rho - left * left, 0.0))
    turn = math.atan2(left, u)
    lo, hi = arm.q_min, arm.q_max
    l1, l2, a = float(arm.links_m[0]), float(arm.links_m[1]), arm.roll.axis_rad
    sides = (1, -1) if float(base_side(arm, q0)) >= 0 else (-1, 1)
    for side in sides:
        b = nearest_turn(az - turn if side > 0 else az + turn + math.pi, float(q0[0]), float(lo[0]), float(hi[0]))
        if b is None:
            continue
        psi = (phi - a if side > 0 else math.pi - phi - a) + delta
        wu = side * u - arm.base_offset_m - length * math.cos(psi)
        wv = z - arm.shoulder_height_m - length * math.sin(psi)
        best = None
        for q1, q2 in two_link(l1, l2, wu, wv):
            q = [b, q1, q2, psi - q1 - q2 - delta, r]
            for j in (1, 2, 3):
                q[j] = nearest_turn(q[j], float(q0[j]), float(lo[j]), float(hi[j]))
                if q[j] is None:
                    break
            else:
                cost = sum(abs(q[j] - float(q0[j])) for j in range(4))
                if best is None or cost < best[0]:
                    best = (cost, q)
        if best is not None:
            q = np.array(best[1])
            err = float(np.linalg.norm(tool_point(arm, q) - np.asarray(t, dtype=float)))
            if err <= max(tol, 1e-9):
                return IKResult(q, True, err, 0, 1, 0, method, None, 0.0, 0.0, 0)
    return None


def solve(arm: Arm, target, phi, q0, method: str, tol: float, max_iter: int, roll: float | None) -> IKResult:
    """``ik.solve`` for an arm with a wrist roll (the options positional): the pose (rad, the roll last) that puts
    the tool point on ``target`` (x, y, z m) with the tool axis at pitch ``phi`` (rad, or free) and the roll at
    ``roll`` (rad; None: the roll of ``q0``)."""
    t, phi, q0 = check(arm, target, phi, q0)
    q0 = np.array(q0, dtype=float)
    i = arm.roll_index
    r = float(np.clip(q0[i], arm.q_min[i], arm.q_max[i])) if roll is None else roll_turn(arm, roll, q0[i])
    if phi is not None and method in ("dls", "analytic"):
        fast = _closed_form(arm, t, float(phi), q0, r, method, tol)
        if fast is not None:
            return fast
    sub, delta, _ = at_roll(arm, r)
    q0_sub = q0[:i].copy()
    q0_sub[-1] += delta
    tv = np.asarray(t, dtype=float)
    best = None
    order = planes(arm, tv, r)
    if float(base_side(arm, q0)) < 0:  # the side the arm is on first
        order.reverse()
    for goal, side in order:
        res = layered.solve(sub, goal, sub_pitch(arm, phi, delta, side), q0_sub, method, tol, max_iter, side)
        q = np.append(res.q, r)
        q[i - 1] -= delta
        err = float(np.linalg.norm(tool_point(arm, q) - tv))
        on_side = float(base_side(sub, res.q)) == side
        ok = bool(res.ok and on_side and err <= max(tol, 1e-9) and arm.within_limits(q, LIMIT_TOL))
        out = dataclasses.replace(res, q=q, ok=ok, error_m=err)
        if ok:
            return out
        if best is None or (on_side and not best[1]):
            best = (out, on_side)
    out = best[0]
    if out.reason is None:
        out = dataclasses.replace(out, reason="no pose inside the joint limits reaches the target at this roll")
    return out


def grasp_roll(arm: Arm, target, yaw: float, q0=None) -> float:
    """The roll (rad) that puts the jaws' closing line at table yaw ``yaw`` (rad) with the tool pointing straight
    down at ``target`` (x, y, z m), from the start pose ``q0`` (default home): of the two rolls half a turn apart
    (the line has no direction), the one inside the roll's limits nearest ``q0``'s roll. The base angle the point
    needs depends a little on the roll (a tool point off the roll axis), so for each of the two, base and roll are
    iterated to a fixed point (the roll changing < 1e-12 rad). ``ik.solve(arm, target, phi=-pi/2,
    roll=grasp_roll(...))`` reaches it; BadInputError when neither fits the roll's limits."""
    if arm.roll is None:
        raise BadInputError(f"arm {arm.name!r} has no wrist roll: the jaws cannot be turned to a yaw")
    if not math.isfinite(yaw):
        raise BadInputError(f"yaw must be a finite number of degrees, got {yaw!r}")
    t, _, q0 = check(arm, target, -math.pi / 2, q0)
    i = arm.roll_index
    lo, hi = float(arm.q_min[i]), float(arm.q_max[i])
    current = float(np.clip(q0[i], lo, hi))
    tv = np.asarray(t, dtype=float)

    def turned(base: float, half: float) -> float | None:
        return nearest_turn(jaw_yaw_roll(arm.roll, base, yaw) + half, current, lo, hi)

    fits = []
    for half in (0.0, math.pi):
        r = turned(math.atan2(tv[1], tv[0]), half)
        for _ in range(50):  # converges geometrically (the offset over the reach); a tool on the axis at once
            if r is None:
                break
            base = float(solve(arm, tv, -math.pi / 2, q0, "dls", DEFAULT_TOL_M, DEFAULT_MAX_ITER, r).q[0])
            r_next = turned(base, half)
            if r_next is not None and abs(r_next - r) < 1e-12:
                r = r_next
                break
            r = r_next
        if r is not None:
            fits.append(r)
    if not fits:
        raise BadInputError(
            f"no roll inside the limits of {arm.joint_names[i]!r} [{math.degrees(lo):.1f}, {math.degrees(hi):.1f}] "
            f"deg turns the jaws to yaw {math.degrees(yaw):.1f} deg"
        )
    return min(fits, key=lambda w: abs(w - current))
