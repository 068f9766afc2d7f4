"""End poses of moves: solve_pose (IK inside the joint limits, nearest a pose) and a pose's branch (side, elbow)."""

from __future__ import annotations

import math

import numpy as np

from armctl import ik
from armctl.errors import BadInputError, JointLimitError, UnreachableError
from armctl.ik.branch import branch_ik, elbow_of
from armctl.ik.redundancy import best_free_pose
from armctl.ik.roll import roll_turn
from armctl.model.arm import Arm
from armctl.model.kinematics import tool_point, unwind
from armctl.model.workspace import check_reachable, fmt_point
from armctl.motion.refusals import limit_error


def branch_of(arm: Arm, q) -> tuple[float, float]:
    """(side, elbow) of pose ``q``: the sign of the chain's serial elbow angle and, on a base arm, whether
    the tool is on the base's side of its axis (+1) or reached back over it (-1)."""
    return float(arm.base_side(q)), (1.0 if arm.chain_angles(q)[1] >= 0.0 else -1.0)


def solve_pose(
    arm: Arm,
    target_m,
    phi_rad: float | None,
    q_near,
    *,
    criterion: str = "best",
    joint_move: bool = False,
    roll: float | None = None,
) -> np.ndarray:
    """Joint angles (rad) reaching ``target_m`` (m) [with tool angle ``phi_rad``], nearest ``q_near``.

    A 3-link chain without a tool angle is redundant: ``criterion="best"`` (default) takes the pose furthest
    inside the joint limits and away from singularity (``best_free_pose``), ``"nearest"`` the one IK finds
    nearest ``q_near``. ``joint_move``: the pose ends a joint move from ``q_near``; on an arm with keep-out
    zones the best pose is taken among those clear of them whose joint move from ``q_near`` is clear too (as
    ``check_zones`` checks it), the best of all when none is (the move is then refused as before). Raises
    UnreachableError (with the shortfall) or JointLimitError when no solution inside the joint limits exists.
    ``roll`` (rad, an arm with a wrist roll): the roll of the pose, at its whole turn nearest ``q_near``'s inside the
    limits (None: ``q_near``'s roll; BadInputError when no turn of it is inside them).
    """
    target = np.asarray(target_m, dtype=float)
    q_near = np.asarray(q_near, dtype=float)
    phi = phi_rad if arm.n_links == 3 else None
    r = pose_roll(arm, roll, q_near)
    if phi is None and arm.n_links == 3 and criterion == "best" and len(target) == arm.dim:
        best = None
        if joint_move and arm.zones:
            best = best_free_pose(arm, target, accept=_zone_free_joint_move(arm, q_near), roll=r)
        if best is None:
            best = best_free_pose(arm, target, roll=r)
        if best is not None:
            return unwind(best[0], q_near) if not arm.within_limits(best[0]) else best[0]
    if arm.layered:
        return _solve_pose_layered(arm, target, phi, q_near, r)
    check_reachable(arm, target, phi)
    # 2 links or a given tool angle: the closed-form branch inside the limits nearest q_near;
    # a redundant 3-link arm: DLS from q_near (ik.solve decides, the same as `armctl ik`).
    res = ik.solve(arm, target, phi=phi, q0=q_near)
    if res.ok:
        return np.asarray(res.q, dtype=float)
    if arm.n_links == 2 or phi is not None:
        q, _ = branch_ik(arm, target[None, :], None if phi is None else np.array([phi]), elbow_of(q_near))
        raise limit_error(
            arm,
            unwind(q[0], q_near),
            f"at ({target[0]:.4f}, {target[1]:.4f}) m",
            hint="neither elbow branch fits; move the target",
        )
    raise JointLimitError(
        f"no pose inside the joint limits reaches ({target[0]:.4f}, {target[1]:.4f}) m "
        f"({res.reason or 'IK failed'}); give the pose a tool angle phi_deg or move it",
        q=np.asarray(res.q, dtype=float),
    )


def _zone_free_joint_move(arm: Arm, q0):
    """A test of end poses q (as ``solve_pose`` returns them): q clear of ``arm.zones``, then the joint move
    q0 -> q (joint-linear, as ``plan_move`` plays it) clear as ``first_violation`` checks it."""
    from armctl.model.zones import first_violation

    def accept(q) -> bool:
        q = np.asarray(q, dtype=float)
        if not arm.within_limits(q):
            q = unwind(q, q0)
        if first_violation(arm, arm.zones, q[None, :]) is not None:
            return False
        return first_violation(arm, arm.zones, np.stack([q0, q])) is None

    return accept


def pose_roll(arm: Arm, roll: float | None, q_near) -> float | None:
    """The roll (rad) a pose near ``q_near`` takes for ``roll`` (None: ``q_near``'s, inside the limits): the whole
    turn nearest ``q_near``'s inside the roll's limits. None on an arm without a roll (BadInputError if one is
    given)."""
    if arm.roll is None:
        if roll is not None:
            raise BadInputError(f"arm {arm.name!r} has no wrist roll: a roll cannot be given")
        return None
    i = arm.roll_index
    current = float(np.asarray(q_near, dtype=float)[i])
    if roll is None:
        return float(min(max(current, arm.q_min[i]), arm.q_max[i]))
    return roll_turn(arm, float(roll), current)


def _solve_pose_layered(arm: Arm, target, phi, q_near, roll=None) -> np.ndarray:
    from armctl.ik import check_target

    check_target(arm, target)
    res = ik.solve(arm, target, phi=phi, q0=q_near, roll=roll)
    if res.ok:
        return np.asarray(res.q, dtype=float)
    near = tool_point(arm, res.q)
    if res.reason and res.reason.startswith("unreachable"):
        raise UnreachableError(
            f"target {fmt_point(target)} m is {res.shortfall_m * 1000:.1f} mm outside the reach of arm "
            f"'{arm.name}' inside its joint limits (nearest reachable point {fmt_point(near)} m)",
            target=tuple(float(v) for v in target),
            shortfall_m=res.shortfall_m,
        )
    if arm.has_base and math.hypot(target[0], target[1]) < 1e-4 and res.error_m < 1e-4:
        raise JointLimitError(
            f"target {fmt_point(target)} m is on the base's axis, where the base angle is undefined and the "
            f"solve comes only within {res.error_m * 1e6:.0f} um: move the target off the axis",
            q=np.asarray(res.q, dtype=float),
        )
    raise JointLimitError(
        f"no pose inside the joint limits reaches {fmt_point(target)} m: the nearest reachable point "
        f"{fmt_point(near)} m is {res.error_m * 1000:.1f} mm away"
        + ("" if phi is None or arm.n_links != 3 else " at this tool angle")
        + "; move the target",
        q=np.asarray(res.q, dtype=float),
    )
