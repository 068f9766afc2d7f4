"""Start a planned program part-way: where an interrupted run stopped (``--resume``) or at any step
(``--from-step``), as a CNC's "start at block".

The program is planned whole as always (so a changed or broken program is refused before anything moves);
the run then plays it from the first sample of the chosen step, after a lead-in planned and checked like
any move: first the gripper is set to the state the program has there (a resume keeps it as it was: see
``restart_trajectory``), then a slow joint move takes the arm from where it is to that step's start. Every
step of a program starts at rest (a step inside a blended chain of lines: from where that chain starts), so
the program goes on from there exactly as planned.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from armctl import motion
from armctl.errors import BadInputError
from armctl.motion import GripperMove, JointMove, Plan
from armctl.motion.trajectory import Trajectory
from armctl.program import Program, expand, load_program, markers_of, plan_program, with_parts
from armctl.robot.handles import ProgramRun
from armctl.robot.runcontrol import RAMP_SPEED_FRACTION
from armctl.robot.state import program_digest

GRIPPER_TOL_RAD = math.radians(2.0)  # a gripper this close to the program's angle is left alone
LEAD_IN_LABEL = "to the start of step {n}"


def find_step(prog: Program, plan: Plan, ref) -> int:
    """The index (0-based, loops unrolled) of step ``ref``: a number N counts the steps as ``armctl plan``
    numbers them (1 = the first, loops unrolled); otherwise a step's ``name:`` or its number as written
    (``1.5``: the fifth step inside the first), its first occurrence. BadInputError naming what exists."""
    n = len(plan.trajectory.steps)
    text = str(ref).strip()
    if text.isdigit():
        i = int(text)
        if not 1 <= i <= n:
            raise BadInputError(f"--from-step {text}: the program has steps 1..{n} (loops unrolled, as 'armctl plan')")
        return i - 1
    flat = expand(prog)
    for i, item in enumerate(flat):
        if item.step.name == text or item.step.number == text:
            return i
    names = sorted({it.step.name for it in flat if it.step.name})
    raise BadInputError(
        f"--from-step {text!r}: no step of that name or number in {prog.path}; give 1..{n}"
        + (f" or a name: {', '.join(names)}" if names else "")
    )


def at_rest_step(plan: Plan, k: int) -> int:
    """Step ``k``, or where the blended chain of lines it is in starts (``blend_mm``: its corners are passed
    without a rest, so only the chain's first step starts at rest)."""
    while k > 0 and getattr(plan.moves[k], "blended", False) and getattr(plan.moves[k - 1], "blended", False):
        k -= 1
    return k


def step_start(traj: Trajectory, k: int) -> int:
    """The sample at which step ``k`` starts (where the step before it ends, at rest)."""
    hits = np.flatnonzero(np.asarray(traj.step) == k)
    if not len(hits):
        raise BadInputError(f"step {k + 1} has no samples")
    return 0 if k == 0 else max(0, int(hits[0]) - 1)


def restart_trajectory(
    plan: Plan, k: int, q_now, g_now: float, *, keep_gripper: bool, speed_fraction: float
) -> tuple[Trajectory, int]:
    """The trajectory of a run from step ``k`` (0-based) with the arm at ``q_now`` (rad) and the gripper at
    ``g_now`` (rad, NaN: none), and how many lead-in steps come before the program's (0 or 1): step ``i`` of
    the result is the program's step ``i - offset``. Step ``k`` must start at rest (``at_rest_step``).

    The lead-in sets the gripper first, to the angle the program has at that step's start, then moves every
    joint at ``speed_fraction`` of its limit to that step's start pose; both planned and checked (MotionError
    otherwise). ``keep_gripper`` (a resume): an interrupted gripper step is planned again from where the
    gripper is (it goes on closing, or opening), never back first."""
    arm, traj = plan.arm, plan.trajectory
    start = step_start(traj, k)
    q = np.array(traj.q_rad[start:], dtype=float)
    g = np.array(traj.gripper_rad[start:], dtype=float)
    step = np.array(traj.step[start:])
    has_grip = arm.gripper is not None and math.isfinite(g_now)
    if keep_gripper and has_grip and plan.moves[k].kind == "gripper" and abs(g_now - g[0]) > GRIPPER_TOL_RAD:
        end = int(np.flatnonzero(step == k)[-1])
        mp = motion.plan_move(arm, GripperMove(float(g[end]), label=traj.steps[k]), q[0], g_now, period_s=traj.period_s)
        q = np.concatenate([mp.q_rad, q[end + 1 :]])
        g = np.concatenate([mp.gripper_rad, g[end + 1 :]])
        step = np.concatenate([np.full(len(mp.t_s), k), step[end + 1 :]])
    moves = []
    if has_grip and abs(g[0] - g_now) > GRIPPER_TOL_RAD:
        moves.append(GripperMove(float(g[0]), label="gripper as the program has it there"))
    if np.max(np.abs(q[0] - np.asarray(q_now, dtype=float))) > 1e-4:
        moves.append(JointMove(tuple(q[0]), speed_fraction=speed_fraction, label="to the step's start"))
    label = LEAD_IN_LABEL.format(n=k + 1)
    if not moves:
        return _trajectory(traj, q, g, step, 0, []), 0
    g0 = float(g_now) if has_grip else None
    carried = None if plan.payload_kg is None else float(plan.payload_kg[start])  # a part held there too
    try:
        lead = motion.plan_moves(
            arm, moves, q_start=q_now, gripper_start=g0, period_s=traj.period_s, payload_kg=carried
        ).trajectory
    except motion.MotionError as exc:
        raise type(exc)(f"cannot move to the start of step {k + 1}: {exc}") from None
    lq, lg = lead.q_rad, lead.gripper_rad
    if not has_grip:
        lg = np.full(len(lq), g[0])
    q = np.concatenate([lq, q[1:]])
    g = np.concatenate([lg, g[1:]])
    step = np.concatenate([np.zeros(len(lq), dtype=int), step[1:] + 1])
    return _trajectory(traj, q, g, step, 1, [label]), 1


def _trajectory(traj: Trajectory, q, g, step, offset: int, lead: list[str]) -> Trajectory:
    return Trajectory(
        t_s=np.arange(len(q)) * traj.period_s,
        q_rad=q,
        gripper_rad=g,
        step=np.asarray(step, dtype=int) if offset else np.asarray(step, dtype=int),
        steps=[*lead, *traj.steps],
        points_m=traj.points_m,
        period_s=traj.period_s,
    )


def gripper_word(arm, g: float) -> str:
    """'open', 'closed' or the angle of gripper angle ``g`` (rad)."""
    grip = arm.gripper
    if grip is None or not math.isfinite(g):
        return "-"
    if abs(g - grip.open_rad) < math.radians(2):
        return "open"
    if abs(g - grip.closed_rad) < math.radians(2):
        return "closed"
    return f"at {math.degrees(g):.0f} deg"


def prepare_run(
    program, arm, port: str, runs, expected_start, *, from_step=None, resume: bool = False, find=None
) -> ProgramRun:
    """``Robot.prepare_run`` (see there) for ``arm`` on ``port``: ``runs`` is the port's ``RunStore``,
    ``expected_start()`` the pose (q, gripper, _) the next motion starts from, ``find(marker_id)`` where a camera
    sees the part carrying that marker (a ``camera.Part``; None: no camera)."""
    if isinstance(program, (str, Path)):
        program = load_program(program)
    if not isinstance(program, Program):
        raise BadInputError(f"run: expected a program file or Program, got {type(program).__name__}")
    if resume and from_step is not None:
        raise BadInputError("run: give resume or from_step, not both")
    wanted = markers_of(program)
    if wanted and find is not None:
        parts = {m.marker_id: find(m.marker_id, m.size_m) for m in wanted}
        points = {mid: p.point_m if arm.has_base else p.point_m[:2] for mid, p in parts.items()}
        program = with_parts(program, points, {mid: p.yaw_rad for mid, p in parts.items()})
    path = str(Path(program.path).resolve())
    try:
        digest = program_digest(path)
    except OSError:
        digest = ""
    plan = plan_program(program, arm)
    pr = ProgramRun(path, digest, plan, plan.trajectory)
    k = None
    if from_step is not None:
        k = find_step(program, plan, from_step)
    elif resume:
        rec = runs.load()
        name = Path(program.path).name
        if rec is None or (rec.program and rec.program != path and rec.digest != digest):
            raise BadInputError(f"--resume: no interrupted run of {name} on {port} to resume")
        if rec.digest != digest:
            raise BadInputError(
                f"--resume: {name} changed since its run was interrupted at step {rec.step + 1}: give --from-step "
                "to say where to start"
            )
        if rec.status == "done":
            raise BadInputError(f"--resume: the last run of {name} on {port} finished; nothing to resume")
        k = min(max(rec.step, 0), len(plan.trajectory.steps) - 1)
    if k is None:
        pr.describe = f"from step 1 of {pr.steps}"
        return pr
    k = at_rest_step(plan, k)  # a step inside a blended chain: from where the chain starts, at rest
    q0, g0, _ = expected_start()
    traj, offset = restart_trajectory(plan, k, q0, g0, keep_gripper=resume, speed_fraction=RAMP_SPEED_FRACTION)
    pr.trajectory, pr.first_step, pr.offset = traj, k, offset
    title = plan.trajectory.steps[k]
    grip = ""
    g_step = float(traj.gripper_rad[max(0, int(np.count_nonzero(traj.step < offset)) - 1)])
    if arm.gripper is not None and math.isfinite(g0):
        if abs(g_step - g0) > math.radians(2):
            was, will = gripper_word(arm, g0), gripper_word(arm, g_step)
            grip = f"; the gripper first goes from {was} to {will}, then the arm moves"
        else:
            grip = f"; the gripper stays {gripper_word(arm, g0)}"
    how = "resuming" if resume else "starting"
    pr.describe = f"{how} at step {k + 1} of {pr.steps}: {title}{grip}"
    return pr
