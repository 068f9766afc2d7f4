"""The one result type of every IK solve (``IKResult``; ``BatchIKResult`` for many targets), its constants
and the messages of a miss."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from armctl.model.arm import Arm

METHODS = ("dls", "analytic", "newton", "broyden")
DEFAULT_TOL_M = 1e-9
DEFAULT_MAX_ITER = 100


@dataclass
class IKResult:
    """Outcome of one IK solve.

    q: joint angles (rad); ok: the tool is on the target within ``tol`` and
    q is inside the joint limits; error_m: distance from the tool to the target
    (m); shortfall_m: for an unreachable target, how far it lies outside what
    the arm can reach (m), else 0; reason: why not ok, else None.
    """

    q: np.ndarray
    ok: bool
    error_m: float
    iterations: int
    fk_evals: int
    jacobian_evals: int
    method: str
    reason: str | None = None
    shortfall_m: float = 0.0
    max_step_rad: float = 0.0
    restarts: int = 0

    @property
    def reachable(self) -> bool:
        return self.shortfall_m == 0.0


@dataclass
class BatchIKResult:
    """Outcome of ``solve_batch``: one row per target."""

    q: np.ndarray
    ok: np.ndarray
    error_m: np.ndarray
    iterations: np.ndarray
    shortfall_m: np.ndarray
    method: str = "dls"
    reasons: list = field(default_factory=list)


BLOCKED_REASON = "no pose inside the joint limits reaches the target"


def unreachable_reason(arm: Arm, short: float, phi) -> str:
    return (
        f"unreachable: {short * 1000:.1f} mm outside the reach of arm '{arm.name}'"
        f"{'' if phi is None else ' at this tool angle'}"
    )
