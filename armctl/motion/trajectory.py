"""A timed joint trajectory: what the planner produces and the streamer plays.

Sampled at a fixed period (default 20 ms, one servo frame). Angles in radians,
times in seconds from the start of the motion.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

DEFAULT_PERIOD_S = 0.020


@dataclass
class Trajectory:
    """Samples of a planned motion.

    t_s:        (N,) sample times, 0, period, 2*period, ... (s)
    q_rad:      (N, n) joint angles at each sample (rad)
    gripper_rad:(N,) gripper servo angle at each sample (rad), NaN if the arm has none
    step:       (N,) index into ``steps`` of the program step each sample belongs to
    steps:      one human label per program step, e.g. "step 3 'lift' (line 12)"
    points_m:   (M, 2) Cartesian segment points the planner solved (for plots/checks)
    """

    t_s: np.ndarray
    q_rad: np.ndarray
    gripper_rad: np.ndarray
    step: np.ndarray
    steps: list[str] = field(default_factory=list)
    points_m: np.ndarray = field(default_factory=lambda: np.zeros((0, 2)))
    period_s: float = DEFAULT_PERIOD_S

    def __len__(self) -> int:
        return len(self.t_s)

    def plot(self, *, title: str = "", poses: int = 6):
        """A matplotlib figure of this motion (the tool path and the arm over its reach, joint speeds and
        angles against their limits): shown inline in Jupyter, ``.savefig("move.png")`` writes it. Needs the
        plan it came from, which ``Robot.plan_to`` keeps; needs matplotlib (``pip install -e '.[plot]'``)."""
        plan = getattr(self, "plan", None)
        if plan is None:
            from armctl.errors import BadInputError

            raise BadInputError("this trajectory does not know its arm: plot the Plan it came from (plan.plot())")
        return plan.plot(title=title, poses=poses)

    @property
    def duration_s(self) -> float:
        return float(self.t_s[-1]) if len(self.t_s) else 0.0
