"""The one input check of the IK solvers: targets, tool angles, start poses, single (``check``) and batch
(``check_batch``). Every solver (planar, batch, on a base or a parallelogram) takes what these return; the
wording of a refusal follows the arm's kind (a planar arm's "3-link arm", a layered arm's "3-link chain")."""

from __future__ import annotations

import math

import numpy as np

from armctl.errors import BadInputError
from armctl.ik.kernel import clip_pose
from armctl.model.arm import Arm
from armctl.model.kinematics import plain


def _numbers(value, count: int, what: str) -> list[float]:
    try:
        vals = [float(v) for v in (value.tolist() if isinstance(value, np.ndarray) else value)]
    except (TypeError, ValueError):
        raise BadInputError(f"{what} must be {count} numbers, got {value!r}") from None
    return vals


def check_target(arm: Arm, target) -> list[float]:
    """``target`` as plain floats: (x, y, z) for a base arm, (x, y) otherwise; BadInputError naming what is
    wrong (the count for the arm, a non-finite value)."""
    names = "(x, y, z)" if arm.has_base else "(x, y)"
    t = _numbers(target, arm.dim, f"target {names} in metres")
    if len(t) != arm.dim:
        why = (
            "it stands on a rotating base: give x, y and z"
            if arm.has_base
            else "it works in a vertical plane: give x and y"
        )
        raise BadInputError(f"arm '{arm.name}' takes targets {names}, got {len(t)} numbers; {why}")
    if not all(math.isfinite(v) for v in t):
        raise BadInputError(f"target {tuple(t)} is not finite")
    return t


def _planar_target(target) -> list[float]:
    try:
        tx, ty = target
        tx, ty = float(tx), float(ty)
    except (TypeError, ValueError):
        raise BadInputError(f"target must be two numbers (x, y) in metres, got {target!r}") from None
    if not (math.isfinite(tx) and math.isfinite(ty)):
        raise BadInputError(f"target ({tx}, {ty}) is not finite")
    return [tx, ty]


def _phi_fits(arm: Arm) -> None:
    """A tool angle needs a 3-link chain."""
    if arm.n_links != 3:
        kind = "chain" if arm.layered else "arm"
        raise BadInputError(f"a tool angle (phi) needs a 3-link {kind}; '{arm.name}' has {arm.n_links} links")


def check(arm: Arm, target, phi, q0) -> tuple[list[float], float | None, list[float]]:
    """``solve``'s inputs as plain floats: the target ((x, y, z) on a base arm, else (x, y)), the tool
    angle (or None) and the start pose (home if None) clipped to the joint limits; BadInputError naming
    what is wrong."""
    P = plain(arm)
    t = check_target(arm, target) if arm.layered else _planar_target(target)
    if phi is not None:
        _phi_fits(arm)
        phi = float(phi)
        if not math.isfinite(phi):
            raise BadInputError(f"tool angle phi {phi} is not finite")
    if q0 is None:
        return t, phi, P.home
    try:
        # (an array's own list first: iterating numpy scalars is slow)
        q = [float(v) for v in (q0.tolist() if isinstance(q0, np.ndarray) else q0)]
    except (TypeError, ValueError):
        what = "numbers" if arm.layered else "joint angles"
        raise BadInputError(f"start pose must be {arm.n} {what}, got {q0!r}") from None
    if len(q) != arm.n:
        raise BadInputError(f"start pose needs {arm.n} joint angles for arm '{arm.name}', got {len(q)}")
    if not math.isfinite(sum(q)) and not all(math.isfinite(v) for v in q):
        raise BadInputError("start pose has a non-finite joint angle")
    return t, phi, clip_pose(q, P.qlo, P.qhi)


def check_batch(arm: Arm, targets, phi, q0, method: str):
    """``solve_batch``'s inputs as arrays: targets (N, dim), tool angles (N,) or None, start poses (N, n)
    (home where None) clipped to the joint limits; BadInputError naming what is wrong."""
    if method != "dls":
        raise BadInputError(f"batch IK supports method 'dls' only, got {method!r}")
    t = np.asarray(targets, dtype=float)
    if t.ndim != 2 or t.shape[1] != arm.dim:
        if not arm.layered:
            raise BadInputError(f"targets must have shape (N, 2), got {t.shape}")
        names = "(N, 3): x, y, z" if arm.has_base else "(N, 2): x, y"
        raise BadInputError(f"targets for arm '{arm.name}' must have shape {names}; got {t.shape}")
    # (method calls and in-place ufuncs: np.all, np.clip and np.broadcast_to cost microseconds a call, a
    # share of a whole batch of a hundred rows in C)
    if not np.isfinite(t).all():
        bad = int(np.flatnonzero(~np.all(np.isfinite(t), axis=1))[0])
        raise BadInputError(f"target {bad + 1} is not finite: {t[bad].tolist()}")
    m, n = len(t), arm.n
    q_start = _rows(arm.home_rad if q0 is None else np.asarray(q0, dtype=float), (m, n))
    if not np.isfinite(q_start).all():
        raise BadInputError("start poses must be finite")
    np.minimum(np.maximum(q_start, arm.q_min, out=q_start), arm.q_max, out=q_start)  # np.clip
    ph = None
    if phi is not None:
        _phi_fits(arm)
        ph = _rows(np.asarray(phi, dtype=float), (m,))
        if not np.isfinite(ph).all():
            raise BadInputError("phi values must be finite")
    return t, ph, q_start


def _rows(value, shape):
    """A new float array of ``shape`` with ``value`` broadcast into it (as np.array(np.broadcast_to(...)),
    the same ValueError when it does not fit)."""
    if value.ndim > len(shape):
        np.broadcast_to(value, shape)  # raises (an assignment would drop the leading ones)
    out = np.empty(shape)
    try:
        out[...] = value
    except ValueError:
        np.broadcast_to(value, shape)  # raises, with its message
        raise
    return out
