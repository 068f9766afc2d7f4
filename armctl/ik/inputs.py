"""Input checks of the IK solvers: targets, tool angles, start poses."""

from __future__ import annotations

import math

import numpy as np

from ..arm import Arm
from ..errors import BadInputError


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


def _check(arm: Arm, target, phi, q0):
    t = check_target(arm, target)
    if phi is not None:
        if arm.n_links != 3:
            raise BadInputError(f"a tool angle (phi) needs a 3-link chain; '{arm.name}' has {arm.n_links} links")
        phi = float(phi)
        if not math.isfinite(phi):
            raise BadInputError(f"tool angle phi {phi} is not finite")
    if q0 is None:
        q = np.array(arm.home_rad, dtype=float)
    else:
        vals = _numbers(q0, arm.n, "start pose")
        if len(vals) != arm.n:
            raise BadInputError(f"start pose needs {arm.n} joint angles for arm '{arm.name}', got {len(vals)}")
        if not all(math.isfinite(v) for v in vals):
            raise BadInputError("start pose has a non-finite joint angle")
        q = np.clip(np.array(vals), arm.q_min, arm.q_max)
    return t, phi, q
