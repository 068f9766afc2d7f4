"""Inverse kinematics: joint angles (rad) that put the tool point on a target (m).

Methods, all returning an ``IKResult``:

- ``dls`` (default): damped least squares with adaptive (Levenberg-Marquardt)
  damping, steps clipped to the joint limits, warm-started from ``q0``; if that
  stalls it restarts from the closed-form solutions nearest ``q0``. A redundant
  3-link arm without ``phi`` then slides along its self-motion to the pose
  nearest ``q0`` (keeping 5 degrees from the limits where it can).
- ``analytic``: closed form. 2 links: elbow up/down, the branch inside the
  limits nearest ``q0``. 3 links with ``phi``: the wrist point solved as a
  2-link arm. 3 links without ``phi``: the tool angle nearest ``q0`` for which
  a pose inside the limits exists.
- ``newton``: Newton-Raphson (minimum-norm step for 3 links), full Jacobian each
  iteration.
- ``broyden``: Broyden's quasi-Newton, one Jacobian at the start then rank-1
  updates from the residual change.

Out-of-reach targets are never "ok": the solver moves to the closest point
of the reach annulus (the arm stretched towards the target) and reports the
shortfall in metres. A target no pose inside the joint limits reaches (behind
the shoulder, say), without ``phi``: ``dls`` and ``analytic`` take the pose
inside the limits closest to it (``closest_pose``, exact) and the shortfall is its
distance. No method reports ok for a pose outside the joint limits.

``dls`` without ``phi`` runs whole in a small C kernel (``armctl.ik._core``,
built by ``pip install``): the iterations, the start-pose search, the slide and
the closest pose. Without a C compiler the same algorithm in pure Python (2x2
and 2x3 algebra written out in plain floats, ``_dls_py``) gives the same
results (to rounding), several times slower. ``solve_batch`` solves many
targets at once: the C kernel row by row, or vectorised numpy with ``phi``.
"""

from __future__ import annotations

import numpy as np

from armctl.errors import BadInputError
from armctl.ik import batch as _batch
from armctl.ik import kernel
from armctl.ik import layered as _layered
from armctl.ik import layered_batch as _layered_batch
from armctl.ik import planar as _planar
from armctl.ik import roll as _roll
from armctl.ik.inputs import check_batch, check_target
from armctl.ik.kernel import broyden_iterate, dls_iterate, newton_iterate
from armctl.ik.layered import closed_form
from armctl.ik.result import DEFAULT_MAX_ITER, DEFAULT_TOL_M, METHODS, BatchIKResult, IKResult
from armctl.model.arm import Arm
from armctl.model.kinematics import analytic_2link
from armctl.model.workspace import batch_closed_form


def solve(
    arm: Arm,
    target,
    *,
    phi: float | None = None,
    q0=None,
    method: str = "dls",
    tol: float = DEFAULT_TOL_M,
    max_iter: int = DEFAULT_MAX_ITER,
    roll: float | None = None,
) -> IKResult:
    """Joint angles (rad) that put the tool point on ``target`` ((x, y) m; (x, y, z) on a base arm).

    ``phi`` (rad, 3-link chains only) also fixes the tool angle (on a base arm its pitch). ``q0`` (rad) is
    the current pose (default: home); solutions near it are preferred. ``tol`` is the position tolerance
    in metres. Bad input raises BadInputError; an unreachable target is not an exception but a result
    with ok False, ``shortfall_m`` > 0 and the arm stretched to the closest reachable point. A planar
    serial arm goes to ``ik.planar``; an arm with a base or a parallelogram to ``ik.layered``, which
    solves its planar chain with ``ik.planar``. ``roll`` (rad, arms with a wrist roll) turns the jaws about the
    tool axis (None: the roll of ``q0``); ``ik.roll`` solves those arms.
    """
    if arm.roll is not None:
        return _roll.solve(arm, target, phi, q0, method, tol, max_iter, roll)
    if roll is not None:
        raise BadInputError(f"arm {arm.name!r} has no wrist roll: a roll cannot be given")
    # (positional: this dispatch costs the planar C path as little as it can)
    return (_layered.solve if arm.layered else _planar.solve)(arm, target, phi, q0, method, tol, max_iter)


def solve_batch(
    arm: Arm,
    targets,
    *,
    phi=None,
    q0=None,
    method: str = "dls",
    tol: float = DEFAULT_TOL_M,
    max_iter: int = DEFAULT_MAX_ITER,
) -> BatchIKResult:
    """Solve many targets at once: ``targets`` (N, dim) m, ``phi`` None or (N,) rad, ``q0`` (n,) or (N, n)
    rad. A planar serial arm: ``ik.batch`` (every row as ``solve`` gives it without ``phi``); an arm with
    a base or a parallelogram: ``ik.layered_batch``."""
    t, ph, q_start = check_batch(arm, targets, phi, q0, method)
    if arm.roll is not None:
        return _roll_batch(arm, t, ph, q_start, method, tol, max_iter)
    return (_layered_batch.solve_batch if arm.layered else _batch.solve_batch)(arm, t, ph, q_start, tol, max_iter)


def _roll_batch(arm: Arm, t, ph, q_start, method, tol, max_iter) -> BatchIKResult:
    """A roll arm's targets one by one (``ik.roll``), each at the roll of its start pose."""
    rows = [
        _roll.solve(arm, t[k], None if ph is None else float(ph[k]), q_start[k], method, tol, max_iter, None)
        for k in range(len(t))
    ]
    return BatchIKResult(
        q=np.array([r.q for r in rows]).reshape(len(rows), arm.n),
        ok=np.array([r.ok for r in rows], dtype=bool),
        error_m=np.array([r.error_m for r in rows]),
        iterations=np.array([r.iterations for r in rows]),
        shortfall_m=np.array([r.shortfall_m for r in rows]),
        method=method,
        reasons=[r.reason for r in rows],
    )


__all__ = [
    "DEFAULT_MAX_ITER",
    "DEFAULT_TOL_M",
    "METHODS",
    "BatchIKResult",
    "IKResult",
    "analytic_2link",
    "batch_closed_form",
    "broyden_iterate",
    "check_target",
    "closed_form",
    "dls_iterate",
    "kernel",
    "newton_iterate",
    "solve",
    "solve_batch",
]
