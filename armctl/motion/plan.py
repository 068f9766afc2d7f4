"""Planning many moves into one Trajectory: Plan, plan_moves, assemble."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from armctl.core import limits
from armctl.model.arm import Arm
from armctl.motion.blend import blend_chain, rest_junctions
from armctl.motion.blend_joint import blend_joint_moves
from armctl.motion.moves import DEFAULT_MAX_JOINT_STEP_RAD, GripperMove, JointMove, LineMove, MovePlan
from armctl.motion.one_move import plan_move
from armctl.motion.refusals import limit_error
from armctl.motion.summary import summarize
from armctl.motion.torque import TorqueUse, check_torque
from armctl.motion.trajectory import DEFAULT_PERIOD_S, Trajectory


@dataclass
class Plan:
    """A planned program: the trajectory and per-move details for the summary."""

    trajectory: Trajectory
    moves: list[MovePlan]
    arm: Arm
    torque: TorqueUse | None = None  # the most it asks of a servo (armctl.motion.torque); None: not checked
    payload_kg: np.ndarray | None = None  # (N,) kg carried at each sample, where it changes (a program's parts)

    def summary(self) -> dict:
        """Duration (s), segment count, peak joint speeds vs limits (deg/s), worst path deviation (m)."""
        return summarize(self.arm, self.trajectory, self.moves)

    def plot(self, *, title: str = "", poses: int = 6):
        """A matplotlib figure of the plan (``plot.plan_figure``): inline in Jupyter, ``savefig`` writes it."""
        from armctl.motion.plot import plan_figure

        return plan_figure(self, title=title, poses=poses)


class PlanBudget:
    """The segments and samples of a plan counted as it grows, refused past limit ``segments`` (LimitError naming
    the move), so a program of long fine lines is refused before it fills the memory."""

    def __init__(self):
        self.cap = limits.get("segments")
        self.total = 0

    def add(self, mp: MovePlan) -> None:
        limits.check_time(mp.label)
        self.total += mp.segments + len(mp.t_s)
        if self.total > self.cap:
            raise limits.LimitError(
                f"{mp.label}: the plan passes {self.cap} segments and samples here; "
                "use a coarser segment_mm or split the program",
                limit="segments",
            )


def plan_moves(
    arm: Arm,
    moves,
    *,
    q_start=None,
    gripper_start: float | None = None,
    period_s: float = DEFAULT_PERIOD_S,
    max_joint_step_rad: float = DEFAULT_MAX_JOINT_STEP_RAD,
    labels: list[str] | None = None,
    from_outside: bool = False,
    payload_kg: float | None = None,
) -> Plan:
    """Plan ``moves`` in order from ``q_start`` (rad; default the arm's home) into one Trajectory.

    Every move is planned (and so checked) before anything is returned; the
    first problem raises a MotionError carrying that move's label.
    ``labels``: one label per move for ``Trajectory.steps`` (default the moves' labels).
    ``from_outside``: the arm stands outside its joint limits (measured there): the moves may start there if
    they bring it back, a first joint move (every limit is linear in the joint angles, so on a straight joint
    move to a pose inside them a joint's excess only shrinks) or gripper moves only (the joints stay put).
    The whole trajectory is checked against the servos' torque (``armctl.motion.torque``: TorqueLimitError)
    carrying ``payload_kg`` (None: the arm's, ``arm.drive.payload_kg``).
    """
    moves = list(moves)
    q = np.array(arm.home_rad if q_start is None else q_start, dtype=float)
    if not arm.within_limits(q):
        escape = (
            from_outside
            and bool(moves)
            and (isinstance(moves[0], JointMove) or all(isinstance(m, GripperMove) for m in moves))
        )
        if not escape:
            raise limit_error(arm, q, "at the start pose", hint="change the start pose")
    if gripper_start is None:
        gripper_start = arm.gripper.open_rad if arm.gripper is not None else float("nan")
    g = float(gripper_start)
    plans = []
    budget = PlanBudget()
    for move in moves:
        mp = plan_move(arm, move, q, g, period_s=period_s, max_joint_step_rad=max_joint_step_rad)
        budget.add(mp)
        plans.append(mp)
        q, g = mp.q_rad[-1], float(mp.gripper_rad[-1])
    plans = blend_moves(arm, moves, plans, period_s=period_s, max_joint_step_rad=max_joint_step_rad)
    traj = assemble(
        arm,
        plans,
        q_start=np.array(arm.home_rad if q_start is None else q_start),
        gripper_start=float(gripper_start),
        period_s=period_s,
        labels=labels,
    )
    return Plan(trajectory=traj, moves=plans, arm=arm, torque=check_torque(arm, traj, payload_kg))


def blend_moves(arm: Arm, moves, plans: list[MovePlan], *, period_s: float, max_joint_step_rad: float):
    """The plans of ``moves`` (planned one by one, each from rest to rest) with the blends the moves ask for:
    lines into lines through rounded corners (``blend_chain``), then joint moves into the move after them and
    lines into joint moves (``blend_joint_moves``). Nothing changes where no move asks for a blend. Shared by
    ``plan_moves`` and programs (``armctl.program.plan_program``). Last, ``rest_junctions``: a rest sample
    between two moves that meet at rest where a joint reverses too hard there."""
    if any(isinstance(m, LineMove) and m.blend_m > 0 for m in moves):
        plans = blend_chain(arm, moves, plans, period_s=period_s, max_joint_step_rad=max_joint_step_rad)
    if any(isinstance(m, JointMove) and m.blend_m > 0 for m in moves) or any(
        isinstance(m, LineMove) and m.blend_m > 0 and isinstance(n, JointMove) for m, n in zip(moves, moves[1:])
    ):
        plans = blend_joint_moves(arm, moves, plans, period_s=period_s)
    return rest_junctions(arm, plans, period_s)


def assemble(
    arm: Arm, plans: list[MovePlan], *, q_start, gripper_start: float, period_s: float, labels: list[str] | None = None
) -> Trajectory:
    """Join move plans (each starting where the previous ends, at rest) into one sampled Trajectory."""
    qs = [np.asarray(q_start, dtype=float)[None, :]]
    gs = [np.array([gripper_start])]
    steps = [np.array([0])]
    for i, mp in enumerate(plans):
        if len(mp.t_s) < 2:
            continue
        qs.append(mp.q_rad[1:])
        gs.append(mp.gripper_rad[1:])
        steps.append(np.full(len(mp.t_s) - 1, i))
    q = np.concatenate(qs)
    points = [mp.points_m for mp in plans if len(mp.points_m)]
    empty = np.zeros((0, arm.dim))
    return Trajectory(
        t_s=np.arange(len(q)) * period_s,
        q_rad=q,
        gripper_rad=np.concatenate(gs),
        step=np.concatenate(steps),
        steps=list(labels) if labels is not None else [mp.label for mp in plans],
        points_m=np.concatenate(points) if points else empty,
        period_s=period_s,
    )
