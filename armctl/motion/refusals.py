"""Refusals: a move's error located by its label, and the JointLimitError naming the joint furthest outside its
limits."""

from __future__ import annotations

import copy
import math

import numpy as np

from armctl.errors import JointLimitError, MotionError
from armctl.model.arm import Arm
from armctl.model.kinematics import limit_excess, limit_names, link_angle
from armctl.model.workspace import fmt_point
from armctl.motion.rows import row_any


def located(exc: MotionError, label: str) -> MotionError:
    """The same error (class and fields kept) with ``label`` in front of its message."""
    if not label:
        return exc
    out = copy.copy(exc)
    out.args = (f"{label}: {exc.args[0] if exc.args else exc}",)
    return out


def where_along(frac: float, point) -> str:
    return f"{100.0 * frac:.0f}% along the line, at {fmt_point(point)} m"


def limit_error(arm: Arm, q, where: str, *, hint: str, peak=None) -> JointLimitError:
    """JointLimitError for the joint of ``q`` furthest outside its limits.

    ``peak`` (n,): the furthest each joint goes along the move, named when it
    is beyond ``q`` (the first pose out of limits).
    """
    q = np.asarray(q, dtype=float)
    if arm.parallelogram:
        ex = limit_excess(arm, q)
        if int(np.argmax(ex)) == arm.n:  # the coupled limit: the angle between upper arm and forearm
            lo, hi = arm.link_angle_rad
            a = float(link_angle(arm, q))
            what = (
                f"would cross its limit {math.degrees(lo if a < lo else hi):.0f} deg"
                if peak is not None
                else f"would be {math.degrees(a):.1f} deg"
            )
            return JointLimitError(
                f"the angle between upper arm and forearm {what} {where}, outside "
                f"link_angle_deg [{math.degrees(lo):.0f}, {math.degrees(hi):.0f}]; {hint}",
                q=q,
            )
    lo_excess = arm.q_min - q
    hi_excess = q - arm.q_max
    j = int(np.argmax(np.maximum(lo_excess, hi_excess)))
    crossed = arm.q_max[j] if hi_excess[j] > lo_excess[j] else arm.q_min[j]
    if peak is not None:
        what = (
            f"would cross its limit {math.degrees(crossed):.0f} deg {where} "
            f"(and go on to {math.degrees(peak[j]):.1f} deg)"
        )
    else:
        what = f"would be at {math.degrees(q[j]):.1f} deg {where}"
    return JointLimitError(
        f"{limit_names(arm)[j]} {what}, outside its "
        f"limits [{math.degrees(arm.q_min[j]):.0f}, {math.degrees(arm.q_max[j]):.0f}] deg; {hint}",
        joint=j,
        q=np.asarray(q, dtype=float),
    )


def outside_limits(arm: Arm, q, tol: float = 1e-9) -> np.ndarray:
    if arm.parallelogram:
        return row_any(limit_excess(arm, q) > tol)
    return row_any((q < arm.q_min - tol) | (q > arm.q_max + tol))
