"""Planning a loaded program on an arm: loops unrolled (expand), every pose checked on the arm, every move planned
(plan_program)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from armctl import motion
from armctl.core import limits
from armctl.errors import BadInputError, ConfigError, MotionError
from armctl.ik.roll import grasp_roll, roll_turn
from armctl.model.arm import Arm
from armctl.model.kinematics import tool_point
from armctl.motion import GripperMove, JointMove, LineMove, Plan, Wait
from armctl.motion.torque import carrying
from armctl.program.load import MarkerRef, Pose, Program, Step, is_arm_file
from armctl.program.payload import base_payload, check_program_torque

COMPOUND = ("repeat", "for_each", "pick", "place")  # steps made of steps
DOWN_RAD = -math.pi / 2  # a grasp's tool pitch: the jaws straight down

# --------------------------------------------------------------------------- planning


@dataclass
class _Flat:
    """One step instance after expanding loops."""

    step: Step
    label: str  # for errors: "file:line: step 1.2 'name' (part=part1)"
    title: str  # for the trajectory: "step 1.2 'name' (line 12; part=part1)"
    env: dict


def _passes(st: Step) -> int:
    if st.action in ("pick", "place"):
        return 1
    return st.count if st.action == "repeat" else len(next(iter(st.loop_vars.values())))


def _count(steps) -> int:
    """How many moves ``steps`` unroll to (by arithmetic: nothing is unrolled)."""
    return sum(_passes(st) * _count(st.steps) if st.action in COMPOUND else 1 for st in steps)


def _step_past(steps, budget: int) -> Step:
    """The step at which ``steps``, unrolled, pass ``budget`` moves (there is one: the caller counted)."""
    for st in steps:
        if st.action in COMPOUND:
            inner = _count(st.steps)
            if _passes(st) * inner > budget:
                return _step_past(st.steps, budget % inner if inner else 0)
            budget -= _passes(st) * inner
        else:
            budget -= 1
            if budget < 0:
                return st
    raise AssertionError("no step passes the budget")


def expand(prog: Program) -> list[_Flat]:
    """The steps in execution order, loops unrolled, with their labels."""
    out: list[_Flat] = []
    max_moves = limits.get("moves")
    if _count(prog.steps) > max_moves:  # refused before anything is unrolled: repeat: 1000000000 costs nothing
        st = _step_past(prog.steps, max_moves)
        name = f"step {st.number}" + (f" '{st.name}'" if st.name else "")
        raise limits.LimitError(
            f"{name}: with its loops unrolled the program has more than {max_moves} moves; check the repeat counts",
            limit="moves",
            path=prog.path,
            line=st.line,
        )

    def walk(steps, env, notes):
        for st in steps:
            name = f"step {st.number}" + (f" '{st.name}'" if st.name else "")
            if st.action == "repeat":
                for k in range(st.count):
                    walk(st.steps, env, [*notes, f"pass {k + 1} of {st.count}"])
            elif st.action == "for_each":
                n = len(next(iter(st.loop_vars.values())))
                for k in range(n):
                    inner = dict(env)
                    inner.update({var: _resolve_name(values[k], env) for var, values in st.loop_vars.items()})
                    walk(st.steps, inner, [*notes, ", ".join(f"{v}={_ref_text(inner[v])}" for v in st.loop_vars)])
            elif st.action in ("pick", "place"):
                walk(st.steps, env, notes)
            else:
                label = f"{prog.path}:{st.line}: {name}" + (f" ({'; '.join(notes)})" if notes else "")
                title = f"{name} (line {st.line}" + "".join(f"; {n}" for n in notes) + ")"
                out.append(_Flat(step=st, label=label, title=title, env=env))
                if len(out) > max_moves:
                    raise limits.LimitError(
                        f"{name}: with its loops unrolled the program has more than {max_moves} moves; "
                        "check the repeat counts",
                        limit="moves",
                        path=prog.path,
                        line=st.line,
                    )

    walk(prog.steps, {}, [])
    return out


def episode_of_steps(prog: Program) -> list[int]:
    """For each step of ``expand(prog)`` (loops unrolled), the dataset episode it belongs to: each pass of a
    top-level ``repeat`` is one episode (steps before the first such pass belong to it, steps after a pass to
    the last one); a program without a top-level repeat is one episode."""

    out: list[int] = []
    episode, passes = 0, 0
    for st in prog.steps:
        if st.action == "repeat":
            inner = _count(st.steps)
            for _ in range(st.count):
                if passes:
                    episode += 1
                passes += 1
                out += [episode] * inner
        else:
            out += [episode] * _count([st])
    return out


def _resolve_name(ref, env):
    if isinstance(ref, str) and ref.startswith("$"):
        return env[ref[1:]]
    return ref


def _ref_text(ref) -> str:
    return ref if isinstance(ref, str) else "inline pose"


def pose_of(prog: Program, ref, env) -> Pose:
    """The pose ``ref`` names (a pose name, or a variable of ``env`` holding one), or ``ref`` itself."""
    ref = _resolve_name(ref, env)
    if isinstance(ref, MarkerRef):
        return prog.parts[ref.marker_id]
    return prog.poses[ref] if isinstance(ref, str) else ref


def _check_pose_on_arm(prog: Program, pose: Pose, arm: Arm, where: str, line, offset=None) -> None:
    """Arm-specific format checks: x, y or x, y, z; joint count; phi only on 3 links; joint poses inside
    limits; offsets with as many values as the arm's points."""
    pline = pose.line or line
    if offset is not None and len(offset) != arm.dim:
        raise ConfigError(
            f"{where}: offset has {len(offset)} values but arm '{arm.name}' "
            + ("stands on a rotating base" if arm.has_base else "works in a plane")
            + f": give [{', '.join('d' + w for w in arm.point_words)}]",
            path=prog.path,
            line=line,
        )
    if pose.point_m is not None and len(pose.point_m) != arm.dim:
        unit = pose.key.rsplit("_", 1)[-1] or "mm"
        want = f"{''.join(arm.point_words)}_{unit}: [{', '.join(arm.point_words)}]"
        why = "stands on a rotating base" if arm.has_base else "works in a vertical plane (no base)"
        raise ConfigError(
            f"{where}: {pose.describe()} gives {pose.key or 'a point'} with {len(pose.point_m)} values but arm "
            f"'{arm.name}' {why}: write {want}",
            path=prog.path,
            line=pline,
        )
    if pose.q_rad is not None:
        if len(pose.q_rad) != arm.n:
            raise ConfigError(
                f"{where}: {pose.describe()} has {len(pose.q_rad)} joint angles but arm "
                f"'{arm.name}' has {arm.n} joints",
                path=prog.path,
                line=pline,
            )
        q = np.array(pose.q_rad)
        if not arm.within_limits(q):
            raise motion.limit_error(arm, q, f"in {pose.describe()}", hint="change its q_deg")
    elif pose.phi_rad is not None and arm.n_links != 3:
        raise ConfigError(
            f"{where}: {pose.describe()} gives a tool angle phi_deg, which needs a 3-link arm; "
            f"arm '{arm.name}' has {arm.n_links} links: remove phi_deg",
            path=prog.path,
            line=pline,
        )


def pose_target(pose: Pose, offset, arm: Arm):
    """(point_m, phi_rad or None, exact end q or None) of a pose plus an optional offset (m)."""
    if pose.q_rad is not None:
        q = np.array(pose.q_rad)
        phi = float(arm.tool_pitch(q)) if arm.n_links == 3 else None
        if offset is None:
            return tool_point(arm, q), phi, q
        return tool_point(arm, q) + np.asarray(offset), phi, None
    point = np.asarray(pose.point_m, dtype=float) + (np.asarray(offset) if offset is not None else 0.0)
    return arm.corrected_target(point), pose.phi_rad, None


def _same_arm(prog: Program, arm: Arm) -> bool:
    """The program's arm: key names this arm: its preset name, or its file."""
    if not is_arm_file(prog.arm_name):
        return prog.arm_name == arm.name
    ref = prog.arm_ref.partition(".urdf#")[0] + ".urdf" if ".urdf#" in prog.arm_ref else prog.arm_ref
    try:
        return Path(ref).resolve() == Path(arm.source).resolve()
    except (OSError, RuntimeError):
        return False


def plan_program(prog: Program, arm: Arm) -> Plan:
    """Plan the whole program on ``arm``: every pose, target and segment checked; one Trajectory out.

    Errors: ConfigError (exit 2) for a program that does not fit the arm's
    format (joint count, phi on 2 links, no gripper, arm name); MotionError
    (exit 3) for anything the arm cannot do. Both name file, line and step.
    """
    if prog.arm_name is not None and not _same_arm(prog, arm):
        raise ConfigError(
            f"this program is written for arm '{prog.arm_name}' but the arm is "
            f"'{arm.name}'{'' if arm.source == '<code>' else f' ({arm.source})'}; run with --arm {prog.arm_ref}",
            path=prog.path,
            line=prog.arm_line,
        )
    if prog.zones is not None and prog.zones.dim not in (None, arm.dim):
        want = f"{arm.point_words[-1]} heights and [{', '.join(arm.point_words)}] corners"
        raise ConfigError(
            f"zones: arm '{arm.name}' {'stands on a rotating base' if arm.has_base else 'works in a vertical plane'}: "
            f"write {want}",
            path=prog.path,
            line=prog.zones_line,
        )
    base_kg = base_payload(prog, arm)
    arm = carrying(arm.with_zones(prog.zones), base_kg)  # what it carries all along (the ramp to its start too)
    flat = expand(prog)
    check_rolls(prog, arm, flat)
    st = prog.settings
    q = np.array(arm.home_rad, dtype=float)
    if prog.start is not None:
        pose = pose_of(prog, prog.start, {})
        try:
            _check_pose_on_arm(prog, pose, arm, "start", prog.start_line)
            xy, phi, q_exact = pose_target(pose, None, arm)
            q = q_exact if q_exact is not None else motion.solve_pose(arm, xy, phi, arm.home_rad)
        except MotionError as exc:
            raise motion.located(exc, f"{prog.path}:{prog.start_line}: start") from None
    q_start = q.copy()
    if arm.zones:
        from armctl.errors import ZoneError
        from armctl.model.zones import pose_refusal

        why = pose_refusal(arm, arm.zones, q_start)
        if why is not None:
            where = f"{prog.path}:{prog.start_line}: start" if prog.start is not None else f"{prog.path}: home pose"
            raise ZoneError(f"{where}: {why}")
    if arm.gripper is not None:
        g_start = arm.gripper.open_rad if prog.start_gripper == "open" else arm.gripper.closed_rad
    else:
        g_start = float("nan")
    g = g_start
    plans, moves = [], []
    budget = motion.PlanBudget()
    for item in flat:
        try:
            move = step_move(prog, item, arm, q)
        except MotionError as exc:
            raise motion.located(exc, item.label) from None
        mp = motion.plan_move(arm, move, q, g, period_s=st.period_s, max_joint_step_rad=st.max_joint_step_rad)
        budget.add(mp)
        plans.append(mp)
        moves.append(move)
        q, g = mp.q_rad[-1], float(mp.gripper_rad[-1])
    plans = motion.blend_moves(arm, moves, plans, period_s=st.period_s, max_joint_step_rad=st.max_joint_step_rad)
    traj = motion.assemble(
        arm, plans, q_start=q_start, gripper_start=g_start, period_s=st.period_s, labels=[it.title for it in flat]
    )
    plan = Plan(trajectory=traj, moves=plans, arm=arm)
    plan.torque, plan.payload_kg = check_program_torque(prog, arm, flat, traj, base_kg)
    return plan


def step_move(prog: Program, item: _Flat, arm: Arm, q):
    """The motion move of one expanded step (``item``), the arm at ``q``."""
    s, st, label = item.step, prog.settings, item.label
    if s.action == "wait_s":
        return Wait(s.wait_s, label=label)
    if s.action == "gripper":
        if arm.gripper is None:
            raise ConfigError(
                f"step {s.number}: arm '{arm.name}' has no gripper; remove the gripper steps",
                path=prog.path,
                line=s.line,
            )
        angle = arm.gripper.open_rad if s.gripper == "open" else arm.gripper.closed_rad
        return GripperMove(angle, label=label)
    if isinstance(s.target, MarkerRef) and s.target.marker_id not in prog.parts:
        raise ConfigError(
            f"step {s.number}: {s.target.describe()}: no camera said where it lies (give --camera SRC; the marker "
            "must be in view when the program starts)",
            path=prog.path,
            line=s.line,
        )
    pose = pose_of(prog, s.target, item.env)
    _check_pose_on_arm(prog, pose, arm, f"step {s.number}", s.line, s.offset_m)
    offset = s.offset_m
    if s.lift_m:
        offset = np.zeros(arm.dim) if offset is None else np.asarray(offset, dtype=float)
        offset = tuple(offset + np.eye(arm.dim)[-1] * s.lift_m)  # up: z on a base arm, y in a planar arm's plane
    xy, phi, q_exact = pose_target(pose, offset, arm)
    try:
        phi, roll = move_roll(s, pose, arm, xy, phi, q)
        if s.action == "line":
            return LineMove(
                tuple(xy),
                phi_rad=phi,
                speed_m_s=s.speed_m_s or st.speed_m_s,
                accel_m_s2=s.accel_m_s2 or st.accel_m_s2,
                segment_m=s.segment_m or st.segment_m,
                end_q_rad=None if q_exact is None else tuple(q_exact),
                jerk_time_s=st.jerk_time_s,
                label=label,
                blend_m=st.blend_m if s.blend_m is None else s.blend_m,
                stop=s.stop,
                roll_rad=roll,
            )
        q_end = q_exact if q_exact is not None else motion.solve_pose(arm, xy, phi, q, joint_move=True, roll=roll)
    except MotionError as exc:
        raise motion.located(exc, f"to {pose.describe()}") from None
    return JointMove(
        tuple(q_end),
        speed_fraction=s.joint_speed_fraction or st.joint_speed_fraction,
        accel_rad_s2=s.joint_accel_rad_s2 or st.joint_accel_rad_s2,
        jerk_time_s=st.jerk_time_s,
        label=label,
        blend_m=st.blend_m if s.blend_m is None else s.blend_m,
        stop=s.stop,
    )


def move_roll(s: Step, pose: Pose, arm: Arm, point, phi: float | None, q) -> tuple[float | None, float | None]:
    """(tool pitch, wrist roll) of step ``s``'s move to ``point`` (m) from pose ``q`` on ``arm`` (rad; roll None: the
    roll the arm has, no surprise turns). ``roll:`` is taken at its whole turn nearest the roll there; ``grasp:``, or
    a part's yaw (``yaw_deg``, or where a camera saw it) on a pick, a place or any move to it, points the tool
    straight down and turns the jaws to that table yaw (``armctl.ik.roll.grasp_roll``); a joint pose gives its own
    roll. An arm without a roll: ``phi`` and None (a camera's yaw is then not used)."""
    if arm.roll is None:
        return phi, None
    i = arm.roll_index
    try:
        if s.roll_rad is not None:
            return phi, roll_turn(arm, s.roll_rad, float(q[i]))
        yaw = s.grasp_yaw_rad if s.grasp_yaw_rad is not None else pose.yaw_rad
        if yaw is not None:
            return DOWN_RAD, grasp_roll(arm, point, yaw, q)
    except BadInputError as exc:
        raise MotionError(str(exc)) from None
    if pose.q_rad is not None:
        return phi, float(pose.q_rad[i])
    return phi, None


def check_rolls(prog: Program, arm: Arm, flat: list[_Flat]) -> None:
    """The program's rolls checked on ``arm`` before anything is planned (ConfigError, exit 2, naming the line):
    ``roll:``, ``grasp:`` or a pose's ``yaw_deg`` on an arm without a wrist roll, a roll no whole turn of which is
    inside the roll's limits, a roll or a grasp on a move to a joint pose (its roll is in its q_deg) and a grasp
    whose pose points the tool other than straight down."""
    if arm.roll is None:
        for pose in prog.poses.values():
            if pose.yaw_rad is not None:
                raise ConfigError(
                    f"{pose.describe()}: arm '{arm.name}' has no wrist roll to turn the jaws to its yaw_deg; remove it",
                    path=prog.path,
                    line=pose.line,
                )
    for item in flat:
        s = item.step
        if s.action not in ("line", "joint"):
            continue
        pose = None if isinstance(_resolve_name(s.target, item.env), MarkerRef) else pose_of(prog, s.target, item.env)
        why = _roll_refusal(s, pose, arm)
        if why is not None:
            name = f"step {s.number}" + (f" '{s.name}'" if s.name else "")
            raise ConfigError(f"{name}: {why}", path=prog.path, line=s.line)


def _roll_refusal(s: Step, pose: Pose | None, arm: Arm) -> str | None:
    """Why step ``s`` (to ``pose``; None: a part a camera finds) cannot turn the jaws as it says on ``arm``, or None."""
    yaw = s.grasp_yaw_rad if s.grasp_yaw_rad is not None else (None if pose is None else pose.yaw_rad)
    key = "roll" if s.roll_rad is not None else "grasp" if s.grasp_yaw_rad is not None else "yaw_deg"
    if s.roll_rad is None and yaw is None:
        return None
    if arm.roll is None:
        return f"arm '{arm.name}' has no wrist roll to turn the jaws ({key}); remove it"
    if pose is not None and pose.q_rad is not None and s.offset_m is None and not s.lift_m:
        return f"{pose.describe()} is a joint pose: its roll is the last of its q_deg; remove {key}"
    if s.roll_rad is not None:
        try:
            roll_turn(arm, s.roll_rad, float(arm.home_rad[arm.roll_index]))
        except BadInputError as exc:
            return str(exc)
    elif pose is not None and pose.phi_rad is not None and abs(pose.phi_rad - DOWN_RAD) > 1e-9:
        return (
            f"{key} turns the jaws with the tool straight down, but {pose.describe()} gives phi_deg "
            f"{math.degrees(pose.phi_rad):g}: give phi_deg -90 or none"
        )
    return None
