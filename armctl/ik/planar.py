"""``solve`` for a planar serial arm (2 or 3 links)."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from armctl.errors import BadInputError
from armctl.ik import kernel
from armctl.ik.closest import closest_pose, closest_pose_at_phi, reachable3, start_candidates
from armctl.ik.inputs import check
from armctl.ik.kernel import broyden_iterate, dls_fast, inside_limits, newton_iterate, tool_xy
from armctl.ik.result import BLOCKED_REASON, METHODS, IKResult, unreachable_reason
from armctl.ik.slide import slide_to_nearest
from armctl.model.arm import Arm
from armctl.model.kinematics import PlainArm, nearest_turn, plain

# ----------------------------------------------------------------------------
# Public API


def _kernel(method, links, goal, q0, lo, hi, tol, max_iter):
    if method == "dls":
        return dls_fast(links, goal[0], goal[1], q0, lo, hi, tol, max_iter, 0.01 * (links[0] + links[1]))
    kernel = newton_iterate if method == "newton" else broyden_iterate
    return kernel(links, goal, q0, q_min=lo, q_max=hi, tol=tol, max_iter=max_iter)


def _iterate(method, P: PlainArm, goal, phi, q0, tol, max_iter):
    if phi is None:
        return _kernel(method, P.links, goal, q0, P.lo, P.hi, tol, max_iter)
    # Tool angle given: solve the first two links for the wrist point, then
    # the wrist joint is what is left of phi.
    l3 = P.links[2]
    wrist = (goal[0] - l3 * math.cos(phi), goal[1] - l3 * math.sin(phi))
    run = _kernel(method, P.links[:2], wrist, q0[:2], P.lo[:2], P.hi[:2], tol, max_iter)
    q3 = phi - run.q[0] - run.q[1]
    q3c = nearest_turn(q3, q0[2], P.lo[2], P.hi[2])
    run.q = [run.q[0], run.q[1], q3 if q3c is None else q3c]
    return run


def _reaches(P: PlainArm, q, goal, phi, tol) -> bool:
    """q puts the tool on goal (and at phi) within tol, inside the limits."""
    x, y = tool_xy(P.links, q)
    if math.hypot(goal[0] - x, goal[1] - y) > tol:
        return False
    if phi is not None and abs(math.remainder(sum(q) - phi, 2.0 * math.pi)) * P.links[2] > tol:
        return False
    return inside_limits(q, P.lo, P.hi)


def _project(P: PlainArm, tx, ty, phi):
    """Shortfall (m) outside the reach annulus and the closest point of it."""
    links = P.links
    ox = oy = 0.0
    if phi is None:
        r_max = sum(links)
        r_min = max(0.0, 2.0 * max(links) - r_max)
    else:
        ox, oy = links[2] * math.cos(phi), links[2] * math.sin(phi)
        r_max = links[0] + links[1]
        r_min = abs(links[0] - links[1])
    wx, wy = tx - ox, ty - oy
    r = math.hypot(wx, wy)
    # A target on the rim within rounding (fk of a straight pose) is reachable.
    if r > r_max:
        short = r - r_max
        return (0.0 if short < 1e-12 else short), (ox + wx * r_max / r, oy + wy * r_max / r)
    if r < r_min:
        if r == 0.0:
            return (0.0 if r_min < 1e-12 else r_min), (ox + r_min, oy)
        short = r_min - r
        return (0.0 if short < 1e-12 else short), (ox + wx * r_min / r, oy + wy * r_min / r)
    return 0.0, (tx, ty)


def solve(arm: Arm, target, phi, q0, method: str, tol: float, max_iter: int) -> IKResult:
    """``ik.solve`` for a planar serial arm (the options positional): joint angles (rad) that put the tool
    point on ``target`` (x, y in m).

    ``phi`` (rad, 3 links only) also fixes the tool angle. ``q0`` (rad) is the
    current pose (default: home); solutions near it are preferred. ``tol`` is
    the position tolerance in metres. Bad input raises BadInputError; an
    unreachable target is not an exception but a result with ok False,
    ``shortfall_m`` > 0 and the arm stretched to the closest reachable point.
    (An arm with a base or a parallelogram goes to ``armctl.ik.layered`` (targets
    (x, y, z) on a base), which solves its planar chain with this function.)

    Phases: the C kernel (DLS without a tool angle), else the starts (``_search``), the closest pose
    inside the limits when no start reached the goal (``_closest_fallback``), the slide to the nearest
    pose of a redundant arm, and the verdict (``_verdict``).
    """
    P = plain(arm)
    if method == "dls" and phi is None and kernel.core is not None:
        fast = _solve_c(arm, P, target, q0, tol, max_iter)
        if fast is not None:
            return fast
    if method not in METHODS:
        raise BadInputError(f"unknown IK method {method!r}; choose one of: {', '.join(METHODS)}")
    (tx, ty), phi, q0 = check(arm, target, phi, q0)
    short, goal = _project(P, tx, ty, phi)
    work = _Work()
    q, hit = _search(method, P, goal, phi, q0, short, tol, max_iter, work)
    closest, q, hit = _closest_fallback(method, P, tx, ty, goal, phi, q0, q, hit, tol)
    if hit and method == "dls" and phi is None and len(P.links) == 3 and short == 0.0:
        q, it, fk_n, jac_n = slide_to_nearest(P, goal[0], goal[1], q0, q, tol, max_iter)
        work.iterations += it
        work.fk_evals += fk_n
        work.jac_evals += jac_n
    if q is None:  # no pose inside the limits
        q = q0
    x, y = tool_xy(P.links, q)
    error = math.hypot(tx - x, ty - y)
    ok, reason, short = _verdict(arm, P, method, q, hit, (tx, ty), goal, phi, q0, short, closest, error, tol, max_iter)
    w = work
    q = np.array(q, dtype=float)
    return IKResult(q, ok, error, w.iterations, w.fk_evals, w.jac_evals, method, reason, short, w.max_step, w.restarts)


def _solve_c(arm: Arm, P: PlainArm, target, q0, tol, max_iter) -> IKResult | None:
    """The path below, in C, step for step; None (bad numbers): the path below says what is wrong."""
    fast = kernel.core.solve(P.links, P.lo, P.hi, target, P.home if q0 is None else q0, tol, max_iter)
    if fast is None:
        return None
    q, err, iterations, fk_evals, jac_evals, max_step, restarts, short, blocked = fast
    reason = BLOCKED_REASON if blocked else None if short == 0.0 else unreachable_reason(arm, short, None)
    return IKResult(
        np.array(q), not reason, err, iterations, fk_evals, jac_evals, "dls", reason, short, max_step, restarts
    )


@dataclass
class _Work:
    """What the runs of one solve cost (``IKResult``'s counts)."""

    iterations: int = 0
    fk_evals: int = 0
    jac_evals: int = 0
    max_step: float = 0.0
    restarts: int = 0


def _search(method, P: PlainArm, goal, phi, q0, short, tol, max_iter, work: _Work):
    """The pose the starts reach: (q or None, hit: q reaches the goal within tol inside the limits).
    ``analytic``: the closed-form pose nearest q0. Otherwise the iterations from each start in turn,
    adding their cost to ``work``."""
    if method == "analytic":
        cands = start_candidates(P.links, P.lo, P.hi, goal, phi, q0, want=1)[0]
        return (cands[0] if cands else None), False
    # DLS starts from the closed-form pose nearest q0 when there is one
    # without a search: 2 links (it is the branch the user expects), a
    # given tool angle, and out of reach (the stretched pose is exact,
    # while iterating towards a singular pose converges only linearly).
    # A redundant 3-link arm starts from q0 itself: minimum-norm steps.
    tried_candidates = method == "dls" and (short > 0.0 or len(P.links) == 2 or phi is not None)
    if tried_candidates:
        found, misses = start_candidates(P.links, P.lo, P.hi, goal, phi, q0, want=1)
        # (without a tool angle no other start reaches the goal: the closest pose below is the answer)
        starts = found[:1] if phi is None else (found[:1] or misses[:3] or [q0])
    else:
        starts = [q0]
    q, hit, runs = None, False, 0
    while starts:
        start = starts.pop(0)
        work.restarts += runs > 0
        runs += 1
        run = _iterate(method, P, goal, phi, start, tol, max_iter)
        work.iterations += run.iterations
        work.fk_evals += run.fk_evals
        work.jac_evals += run.jac_evals
        work.max_step = max(work.max_step, run.max_step)
        # (DLS on the tool point: its run error is the distance to goal, and its pose is clamped)
        if method == "dls" and phi is None:
            hit = run.err <= tol and inside_limits(run.q, P.lo, P.hi)
        else:
            hit = _reaches(P, run.q, goal, phi, tol)
        if q is None or hit:
            q = run.q
        if hit:
            break
        if not starts and method == "dls" and not tried_candidates:
            # Stalled on a joint limit or in a local minimum: restart from
            # the closed-form poses nearest the start, inside the limits.
            tried_candidates = True
            starts = _restarts(P, goal, phi, q0)
    return q, hit


def _restarts(P: PlainArm, goal, phi, q0) -> list:
    """The starts after a stalled DLS run: the closed-form poses nearest q0 inside the limits (a coarse
    search, then the whole one), else the near misses; [] when no pose inside the limits reaches the goal
    (the closest pose is then the answer, without the whole search that would find nothing)."""
    found, misses = start_candidates(P.links, P.lo, P.hi, goal, phi, q0, want=2, coarse=True, coarse_only=True)
    if phi is None and not found and not reachable3(P.links, P.lo, P.hi, goal, q0):
        return []
    if len(found) < 2:
        found, misses = start_candidates(P.links, P.lo, P.hi, goal, phi, q0, want=2, coarse=True)
    return found[:2] or misses[:3]


def _closest_fallback(method, P: PlainArm, tx, ty, goal, phi, q0, q, hit, tol):
    """(distance of the closest pose or None, q, hit) after the starts: when none reached the goal, the
    pose inside the limits closest to the target (exact; at the tool angle when one is given)."""
    closest = None
    if not hit and phi is None and (method == "dls" or q is None):
        # It reaches the goal when the searches missed a pose with a joint at a limit.
        closest, q = closest_pose(P.links, P.lo, P.hi, tx, ty, q0)
        x, y = tool_xy(P.links, q)
        hit = math.sqrt((goal[0] - x) * (goal[0] - x) + (goal[1] - y) * (goal[1] - y)) <= tol
    elif not hit and phi is not None:
        # never a pose outside the limits
        closest, q_phi = closest_pose_at_phi(P.links, P.lo, P.hi, tx, ty, phi, q0)
        if q_phi is not None and (
            q is None or not inside_limits(q, P.lo, P.hi) or closest < math.dist(tool_xy(P.links, q), (tx, ty))
        ):
            q = q_phi
            hit = _reaches(P, q, goal, phi, tol)
    return closest, q, hit


def _verdict(arm: Arm, P: PlainArm, method, q, hit, target, goal, phi, q0, short, closest, error, tol, max_iter):
    """(ok, reason, shortfall) of the final pose ``q`` (``error`` m from ``target``)."""
    reached = True if hit else _reaches(P, q, goal, phi, max(tol, 1e-12))  # (hit: q reaches goal within tol)
    if not hit and not inside_limits(q, P.lo, P.hi):
        return False, "solution outside the joint limits", short
    if not reached:
        if phi is not None:
            blocked = method == "analytic" or not start_candidates(P.links, P.lo, P.hi, goal, phi, q0, want=1)[0]
        elif closest is not None:  # q is the closest pose
            blocked = True
        else:  # newton or broyden did not get there: does any pose inside the limits?
            closest = closest_pose(P.links, P.lo, P.hi, target[0], target[1], q0)[0]
            blocked = closest > short + tol
        if not blocked:
            return False, f"did not converge in {max_iter} iterations", short
        # (how far the target is from what the arm reaches: this pose's error, or the closest pose's)
        short = error if closest is None or method in ("dls", "analytic") else closest
        return False, BLOCKED_REASON + ("" if phi is None else " at this tool angle"), short
    if short > 0.0:
        return False, unreachable_reason(arm, short, phi), short
    return True, None, short
