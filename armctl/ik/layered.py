"""IK for arms with a rotating base or a parallelogram linkage, built around the planar solver.

The planar chain of every arm works in a vertical plane; ``armctl.ik`` solves planar serial chains. This
layer turns a whole arm's problem into planar ones and back:

- **base**: the base angle is ``atan2(y, x)``, and the chain solves (r - base_offset, z - shoulder_height)
  in that plane (r the distance from the base axis). When that plane gives no pose inside the limits, the
  base turned half a turn with the chain reaching back over the axis (``u = -r``, a tool angle phi
  becoming pi - phi) is tried. A target on the base axis keeps the base where it is.
- **parallelogram**: the chain is solved in serial angles (``Arm.chain``: the coupled limits as their
  bounding box), then joint 2 becomes the forearm's angle from the horizontal and every limit, the link
  angle included, is checked in ``kinematics.limit_excess``; where the planar pose breaks a coupled limit,
  the closed-form pose that keeps them starts the solver again.

Methods are the planar ones: ``analytic`` (closed form: ``kinematics.two_link`` on 2-link chains, the
planar solver's on 3-link ones) and ``dls``, ``newton``, ``broyden`` (``ik.solve`` on the plane). No
result is ``ok`` outside any limit. A target no pose reaches gets the nearest pose (2-link chains: the
exact nearest reachable point inside every limit, ``workspace.nearest_reachable``) and ``shortfall_m``,
its distance. ``solve_batch`` solves rows in closed form, vectorised (2-link chains), or through
``ik.solve_batch`` (3-link); rows it cannot finish go through ``solve``.
"""

from __future__ import annotations

import math

import numpy as np

from armctl.errors import BadInputError
from armctl.ik import planar
from armctl.ik.inputs import check
from armctl.ik.result import DEFAULT_MAX_ITER, DEFAULT_TOL_M, METHODS, IKResult
from armctl.model.arm import Arm
from armctl.model.kinematics import (
    LIMIT_TOL,
    annulus_excess,
    base_split,
    chain_angles,
    fk,
    joint_angles,
    limit_excess,
    nearest_turn,
    plain,
    shoulder_uv,
    tool_pitch,
    tool_point,
)
from armctl.model.workspace import annulus, base_planes, closed_form_2link, nearest_reachable

# --------------------------------------------------------------------------------------------------- planes


def _planes(arm: Arm, t, phi, q0):
    """Planes to solve in, in order of preference: (base angle or None, chain target (u, v), chain phi,
    whether the chain reaches back over the base axis). The base towards the target first, turned half a
    turn second (only those inside the base limits)."""
    if not arm.has_base:
        return [(None, (t[0], t[1]), phi, False)]
    out = []
    _, rho = base_split(t[0], t[1])
    for b, u, d in base_planes(arm, t, q0):
        if d > 1e-12 * max(1.0, rho):
            break  # the end-stop planes miss the target; only the planes through it solve it
        ph = phi if phi is None or u >= 0 or rho <= 1e-12 else math.pi - phi
        out.append((b, shoulder_uv(arm, u, t[2]), ph, u < 0))
    return out


def _chain_start(arm: Arm, q0) -> np.ndarray:
    """The start pose in the planar solver's view (serial chain angles inside its box)."""
    c = q0[arm.chain_joints]
    if arm.parallelogram:
        c = np.array([c[0], c[1] - c[0]])
    ch = arm.chain
    return np.clip(c, ch.q_min, ch.q_max)


def _full(arm: Arm, base, chain_serial) -> np.ndarray:
    """Joint angles of the arm for a base angle and serial chain angles; on a parallelogram the forearm
    angle is set from the upper arm (the turns of the serial angles are the planar solver's)."""
    if arm.has_base:
        return joint_angles(arm, chain_serial, base)
    return joint_angles(arm, chain_serial)


def _inside(arm: Arm, q) -> bool:
    return bool(np.all(limit_excess(arm, q) <= LIMIT_TOL))


def closed_form(arm: Arm, base, uv, q0) -> np.ndarray | None:
    """2-link chains: the closed-form pose (the arm's joints, base ``base``) reaching plane point ``uv``
    inside every limit, nearest ``q0``; None if neither elbow branch fits."""
    c = 1 if arm.has_base else 0
    q = closed_form_2link(plain(arm), float(uv[0]), float(uv[1]), float(q0[c]), float(q0[c + 1]))
    if q is None:
        return None
    return np.array(q if base is None else (base, *q))


# --------------------------------------------------------------------------------------------------- solve


def solve(arm: Arm, target, phi, q0, method: str, tol: float, max_iter: int, side: int = 0) -> IKResult:
    """``ik.solve`` for an arm with a base or a parallelogram (the options positional): joint angles (rad,
    base first) that put the tool point on ``target`` ((x, y, z) m on a base arm, (x, y) on a planar
    parallelogram arm); ``phi`` (rad, 3-link chains) the tool's pitch, ``q0`` the current pose (None:
    home), ok only on the target inside every limit, else the nearest pose found and ``shortfall_m``. ``side``
    +1 or -1 takes only the planes with the chain reaching forward or back over the base axis (0: both)."""
    if phi is None and not side and (method == "dls" or method == "analytic"):
        fast = _fast(arm, target, q0, method, tol, max_iter)
        if fast is not None:
            return fast
    if method not in METHODS:
        raise BadInputError(f"unknown IK method {method!r}; choose one of: {', '.join(METHODS)}")
    t, phi, q0 = check(arm, target, phi, q0)
    q0 = np.array(q0)
    tv = np.array(t)
    stats = _Stats()
    tried: list = []
    for base, uv, ph, back in _planes(arm, t, phi, q0):
        if side and back != (side < 0):
            continue
        q = _in_plane(arm, base, uv, ph, q0, method, tol, max_iter, stats, tried, back)
        if q is not None:
            err = float(np.linalg.norm(tool_point(arm, q) - tv))
            return IKResult(
                q, True, err, stats.it, stats.fk, stats.jac, method, None, 0.0, stats.step, stats.restarts + len(tried)
            )
    return _miss(arm, tv, phi, q0, method, tried, stats, tol)


def _fast(arm: Arm, target, q0, method, tol, max_iter) -> IKResult | None:
    """The common case in plain floats: a well-formed target some plane reaches inside every limit, by
    the closed form (2-link chains: what DLS starting from it returns at once) or by the planar solver's
    C path (3-link chains). None: anything else (bad input, a miss, a closed form off by more than
    ``tol``), which the general path handles and explains."""
    P = plain(arm)
    inputs = _plain_inputs(arm, P, target, q0)
    if inputs is None:
        return None
    x, y, z, q = inputs
    c = 1 if P.has_base else 0
    az = None
    if P.has_base:
        yaw, rho = base_split(x, y)
        if rho <= 1e-12:  # on the base axis: the base stays where it is
            first = (min(max(q[0], P.blo), P.bhi), 0.0)
        else:
            az = yaw
            b1 = nearest_turn(az, q[0], P.blo, P.bhi)
            first = None if b1 is None else (b1, rho)
    else:
        first = (None, x)
    l1, l2 = P.links[0], P.links[1]
    two = len(P.links) == 2
    for flip in (False, True):
        if not flip:
            plane = first
        elif az is None:
            break
        else:  # the base half a turn round, the chain reaching back over the axis
            b2 = nearest_turn(az + math.pi, q[0], P.blo, P.bhi)
            plane = None if b2 is None else (b2, -rho)
        if plane is None:
            continue
        b, u = plane
        uc, v = shoulder_uv(P, u, z)
        if two:
            j = closed_form_2link(P, uc, v, q[c], q[c + 1])
            if j is None:
                continue
            j1, j2 = j
            a2 = j2 if P.pg else j1 + j2
            err = math.hypot(l1 * math.cos(j1) + l2 * math.cos(a2) - uc, l1 * math.sin(j1) + l2 * math.sin(a2) - v)
            if err > tol:
                return None  # rounding near a singular pose: the general path polishes it
            return IKResult(np.array((b, j1, j2) if P.has_base else j), True, err, 0, 1, 0, method, None, 0.0, 0.0, 0)
        start = q[c:] if not flip else _mirrored(q[c:])
        res = planar.solve(arm.chain, (uc, v), None, start, method, tol, max_iter)
        if res.ok:
            qv = np.concatenate(([b], res.q)) if P.has_base else res.q
            return IKResult(
                qv,
                True,
                res.error_m,
                res.iterations,
                res.fk_evals,
                res.jacobian_evals,
                method,
                None,
                0.0,
                res.max_step_rad,
                res.restarts,
            )
    return None


def _plain_inputs(arm: Arm, P, target, q0):
    """(x, y, z, q0 clipped to the limits) as Python floats (y = 0 without a base), or None when they are
    not well-formed finite numbers (the general path says what is wrong)."""
    if type(target) is np.ndarray:
        target = target.tolist()  # one conversion, not one numpy scalar per coordinate
    try:
        if P.has_base:
            x, y, z = target
            x, y, z = float(x), float(y), float(z)
        else:
            x, z = target
            x, z = float(x), float(z)
            y = 0.0
        if q0 is None:
            q = P.home
        else:
            q = [float(a) for a in (q0.tolist() if isinstance(q0, np.ndarray) else q0)]
            if len(q) != arm.n:
                return None
            q = [min(max(a, lo), hi) for a, lo, hi in zip(q, P.qlo, P.qhi)]
    except (TypeError, ValueError):
        return None
    if not math.isfinite(x + y + z + sum(q)):
        return None
    return x, y, z, q


def _mirrored(chain) -> list[float]:
    """A serial chain's pose mirrored about the vertical through the shoulder: the start for a chain
    reaching back over the base axis from one reaching forward (the planar solver clips it to the limits)."""
    return [math.pi - chain[0], *(-a for a in chain[1:])]


class _Stats:
    """Iteration counts summed over the planar solves of one target."""

    def __init__(self):
        self.it = self.fk = self.jac = self.restarts = 0
        self.step = 0.0

    def add(self, res: IKResult) -> None:
        self.it += res.iterations
        self.fk += res.fk_evals
        self.jac += res.jacobian_evals
        self.restarts += res.restarts
        self.step = max(self.step, res.max_step_rad)


def _in_plane(arm: Arm, base, uv, ph, q0, method, tol, max_iter, stats: _Stats, tried: list, back: bool = False):
    """The pose (the arm's joints) reaching chain target ``uv`` in the plane at ``base`` inside every limit,
    or None (the planar solver's best attempt then goes to ``tried``)."""
    chain = arm.chain
    tv = np.array(uv)
    if arm.n_links == 2 and (method == "analytic" or arm.parallelogram):
        q = closed_form(arm, base, uv, q0)
        if q is None:
            return None
        if method == "analytic" and _plane_error(arm, q, tv) <= tol:
            return q
        # The asked-for iteration (a rounding polish for the closed form), from the closed-form pose that
        # keeps the coupled limits: the planar solver knows only their bounding box.
        polish = "dls" if method == "analytic" else method
        res = planar.solve(chain, uv, None, _chain_start(arm, q), polish, tol, max_iter)
        stats.add(res)
        cand = _full(arm, base, res.q)
        if res.ok and _inside(arm, cand):
            return cand
        return q if _plane_error(arm, q, tv) <= tol else None
    start = _chain_start(arm, q0)
    if back:  # reaching back over the axis: start from the current pose mirrored
        start = np.clip(_mirrored(start.tolist()), chain.q_min, chain.q_max)
    res = planar.solve(chain, uv, ph, start, method, tol, max_iter)
    stats.add(res)
    cand = _full(arm, base, res.q)
    if res.ok and _inside(arm, cand):
        return cand
    tried.append((res, cand))
    return None


def _plane_error(arm: Arm, q, uv) -> float:
    """Distance (m) from the chain's tool point at pose ``q`` to ``uv`` in its plane."""
    return float(np.hypot(*(fk(arm.links_m, chain_angles(arm, q)) - uv)))


def _miss(arm, tv, phi, q0, method, tried, stats: _Stats, tol: float) -> IKResult:
    """No pose inside the limits reaches the target: the nearest one, and how far it leaves the tool."""
    if arm.n_links == 2:
        near = nearest_reachable(arm, tv, None, q0)
        q = near.q_rad
    else:
        near = nearest_reachable(arm, tv, phi, q0)
        q = _three_link_nearest(arm, tv, phi, q0, near, tried)
    err = float(np.linalg.norm(tool_point(arm, q) - tv))
    if err <= tol and _inside(arm, q) and (phi is None or _at_pitch(arm, q, phi, tol)):
        # reached after all: where the closed form is degenerate (a fold through the shoulder: any
        # upper-arm angle reaches it, the formula gives one), or a 3-link iteration that stopped short
        # found the goal from the nearest point's start
        return IKResult(
            np.asarray(q, dtype=float), True, err, stats.it, stats.fk, stats.jac, method, None, 0.0, stats.step, 0
        )
    if arm.n_links == 2:
        short = err
    else:
        geometric = _outside_annulus(arm, tv, phi, q0)
        short = near.shortfall_m if geometric > 1e-12 else err
    reason = miss_reason(arm, tv, phi, q0, short)
    return IKResult(
        np.asarray(q, dtype=float),
        False,
        err,
        stats.it,
        stats.fk,
        stats.jac,
        method,
        reason,
        short,
        stats.step,
        stats.restarts + len(tried),
    )


def _at_pitch(arm: Arm, q, phi: float, tol: float) -> bool:
    """The tool's pitch is ``phi`` (within ``tol`` m at the tool point)."""
    pitch = float(tool_pitch(arm, np.asarray(q, dtype=float)))
    return abs(math.remainder(pitch - phi, 2.0 * math.pi)) * arm.links_m[-1] <= tol


def miss_reason(arm: Arm, tv, phi, q0, short: float) -> str:
    """Why a target is not reached: outside the chain's reach with its joint limits ignored (the planar
    arms' 'unreachable'), or inside it but not inside the limits."""
    if _outside_annulus(arm, tv, phi, q0) > 1e-12:
        return f"unreachable: {short * 1000:.1f} mm outside the reach of arm '{arm.name}'" + (
            " at this tool angle" if phi is not None else ""
        )
    return "no pose inside the joint limits reaches the target" + ("" if phi is None else " at this tool angle")


def _outside_annulus(arm: Arm, tv, phi, q0) -> float:
    """How far the target lies outside what the chain reaches with its joint limits ignored (the
    base's included): the 'unreachable' of the planar arms."""
    links = arm.links_m
    ring = annulus(arm, phi)
    planes = base_planes(arm, tv, q0) if arm.has_base else [(None, float(tv[0]), 0.0)]
    best = math.inf
    for _, u, d in planes:
        ph = phi
        if phi is not None and arm.has_base and u < 0:
            ph = math.pi - phi
        ox, oy = (0.0, 0.0) if ph is None else (links[2] * math.cos(ph), links[2] * math.sin(ph))
        uc, v = shoulder_uv(arm, u, float(tv[-1]))
        r = math.hypot(uc - ox, v - oy)
        best = min(best, math.hypot(d, max(0.0, annulus_excess(r, ring.r_min, ring.r_max))))
    return best


def _three_link_nearest(arm, tv, phi, q0, near, tried):
    """3-link chains: the planar solver's pose for the nearest point of the annulus, in its plane (the
    planar solver already stretched towards it where the target was in a plane the base reaches)."""
    chain = arm.chain
    if arm.has_base:
        b = None
        p = near.point_m
        for cand_b, u, d in base_planes(arm, p, q0):
            if d <= 1e-9:
                b = cand_b
                uv = shoulder_uv(arm, u, p[2])
                ph = phi if phi is None or u >= 0 else math.pi - phi
                break
        if b is None:  # pragma: no cover - the nearest point lies in a plane the base reaches
            b, uv, ph = float(q0[0]), (0.0, 0.0), phi
    else:
        b, uv, ph = None, (float(near.point_m[0]), float(near.point_m[1])), phi
    res = planar.solve(chain, uv, ph, _chain_start(arm, q0), "dls", DEFAULT_TOL_M, DEFAULT_MAX_ITER)
    cand = _full(arm, b, res.q)
    options = [cand] + [c for _, c in tried]
    options = [c for c in options if _inside(arm, c)] or options
    return min(options, key=lambda c: float(np.linalg.norm(tool_point(arm, c) - tv)))
