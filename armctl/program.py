"""Pick-and-place programs: a YAML file of named poses and steps, checked whole, planned into one Trajectory.

``load_program(path)`` reads and validates the format (ConfigError naming the
file, line and step); ``plan_program(program, arm)`` resolves every pose on the
arm and plans every move (MotionError naming file, line and step for anything
the arm cannot do). Nothing is returned until the whole program has planned,
so a program that fails in its last step never half-runs. The format is
documented in docs/programs.md.
"""

from __future__ import annotations

import difflib
import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from . import motion
from .arm import Arm
from .config import LineList, Section, load_yaml_file, load_yaml_text
from .errors import ConfigError, MotionError
from .kinematics import tool_pitch, tool_point
from .motion import GripperMove, JointMove, LineMove, Plan, Wait
from .zones import Zones, parse_zones

STEP_ACTIONS = ("line", "joint", "gripper", "wait_s", "repeat", "for_each")
STEP_KEYS = {
    "line": (
        "line",
        "offset_mm",
        "offset_m",
        "speed_mm_s",
        "speed_m_s",
        "accel_mm_s2",
        "accel_m_s2",
        "segment_mm",
        "segment_m",
        "blend_mm",
        "blend_m",
        "stop",
    ),
    "joint": ("joint", "offset_mm", "offset_m", "speed_pct", "accel_deg_s2", "blend_mm", "blend_m", "stop"),
    "gripper": ("gripper",),
    "wait_s": ("wait_s",),
    "repeat": ("repeat", "steps"),
    "for_each": ("for_each", "steps"),
}
MIN_SEGMENT_M = 1e-5  # 0.01 mm: finer segments only take time and memory
MAX_MOVES = 100_000  # moves in the program with its loops unrolled (a typo in a repeat count must not fill the memory)
SETTINGS_KEYS = (
    "speed_mm_s",
    "speed_m_s",
    "accel_mm_s2",
    "accel_m_s2",
    "segment_mm",
    "segment_m",
    "joint_speed_pct",
    "joint_accel_deg_s2",
    "max_joint_step_deg",
    "period_ms",
    "blend_mm",
    "blend_m",
)


@dataclass(frozen=True)
class Settings:
    """Move defaults (SI units); every line/joint step may override its own."""

    speed_m_s: float = motion.DEFAULT_SPEED_M_S
    accel_m_s2: float = motion.DEFAULT_ACCEL_M_S2
    segment_m: float = motion.DEFAULT_SEGMENT_M
    joint_speed_fraction: float = motion.DEFAULT_JOINT_SPEED_FRACTION
    joint_accel_rad_s2: float = motion.DEFAULT_JOINT_ACCEL_RAD_S2
    max_joint_step_rad: float = motion.DEFAULT_MAX_JOINT_STEP_RAD
    period_s: float = 0.020
    jerk_time_s: float = 0.0  # 0: trapezoid speed profile; > 0: S-curve (profile: s_curve)
    blend_m: float = 0.0  # line corners may be rounded within this distance (0: every move ends at rest)


@dataclass(frozen=True)
class Pose:
    """A named (or inline) pose: a tool point (x, y; x, y, z on a base arm) with an optional tool angle,
    or joint angles."""

    name: str
    line: int | None
    point_m: tuple[float, ...] | None = None
    phi_rad: float | None = None
    q_rad: tuple[float, ...] | None = None
    key: str = ""  # how the point was written: xy_mm, xyz_m, ...

    @property
    def xy_m(self) -> tuple[float, ...] | None:
        """The tool point (the name of planar arms' files; 3 values on a base arm)."""
        return self.point_m

    def describe(self) -> str:
        where = f" (line {self.line})" if self.line else ""
        return f"pose '{self.name}'{where}" if not self.name.startswith("<") else f"inline pose{where}"


@dataclass
class Step:
    """One step as written. ``number`` is '7' or '4.2' (step 2 inside step 4)."""

    number: str
    line: int | None
    action: str
    name: str | None = None
    target: str | Pose | None = None  # pose name, '$var' or inline Pose
    offset_m: tuple[float, ...] | None = None  # (dx, dy), or (dx, dy, dz) on a base arm
    speed_m_s: float | None = None
    accel_m_s2: float | None = None
    segment_m: float | None = None
    blend_m: float | None = None
    stop: bool = False
    joint_speed_fraction: float | None = None
    joint_accel_rad_s2: float | None = None
    gripper: str | None = None
    wait_s: float | None = None
    count: int | None = None
    loop_vars: dict[str, list] = field(default_factory=dict)
    steps: list[Step] = field(default_factory=list)


@dataclass
class Program:
    """A validated program (format only; the arm checks come in ``plan_program``)."""

    path: str
    arm_name: str | None  # the program's arm: key, a preset name or an arm file
    arm_line: int | None
    settings: Settings
    poses: dict[str, Pose]
    start: str | Pose | None
    start_line: int | None
    start_gripper: str
    steps: list[Step]
    description: str = ""
    zones: Zones | None = None  # keep-out zones added to the arm's (armctl.zones)
    zones_line: int | None = None

    @property
    def arm_ref(self) -> str | None:
        """The arm: key for ``load_arm``: a name as written, an arm file relative to the program's folder."""
        if self.arm_name is None or not _is_arm_file(self.arm_name):
            return self.arm_name
        return str(Path(self.path).parent / Path(self.arm_name).expanduser())


# --------------------------------------------------------------------------- loading


def load_program(path: str | Path) -> Program:
    """Read and validate a program file; ConfigError (file, line, step) on any format problem."""
    return parse_program(load_yaml_file(path), path)


def load_program_text(text: str, path: str = "<program>") -> Program:
    """Validate a program given as YAML text (``path`` names it in errors)."""
    return parse_program(load_yaml_text(text, path), path)


def _length(
    sec: Section, base: str, per: str = "", *, count: int | None = None, lo=None, lo_open=False, required=False
):
    """Read ``<base>_m<per>`` or ``<base>_mm<per>`` (one, not both) into metres; None if absent, not required.

    ``per`` is the rest of the unit: "" for lengths, "_s" for speeds, "_s2" for accelerations.
    """
    k_m, k_mm = f"{base}_m{per}", f"{base}_mm{per}"
    has_m, has_mm = sec.has(k_m), sec.has(k_mm)
    if has_m and has_mm:
        raise sec.error(k_mm, f"give {k_m} or {k_mm}, not both")
    if not (has_m or has_mm):
        if required:
            raise sec.error(None, f"missing {k_m} or {k_mm}")
        return None
    key, scale = (k_m, 1.0) if has_m else (k_mm, 0.001)
    if count is not None:
        return tuple(v * scale for v in sec.numbers(key, count=count))
    lo_unit = None if lo is None else lo / scale
    return sec.number(key, lo=lo_unit, lo_open=lo_open) * scale


def _pose(sec: Section, name: str, *, line) -> Pose:
    has_xy = sec.has("xy_m") or sec.has("xy_mm")
    has_xyz = sec.has("xyz_m") or sec.has("xyz_mm")
    has_q = sec.has("q_deg")
    if has_xy + has_xyz + has_q != 1:
        raise sec.error(
            None,
            "a pose needs one of: a tool point (xy_mm: [x, y], or on an arm with a base xyz_mm: [x, y, z]; "
            "_m for metres; optional phi_deg) or joint angles (q_deg: [...])",
        )
    for k in ("xy_m", "xy_mm", "xyz_m", "xyz_mm", "phi_deg", "q_deg"):
        if not sec.has(k):
            sec.raw(k, None)
    if has_q:
        q = tuple(math.radians(v) for v in sec.numbers("q_deg", count=(2, 3, 4)))
        if sec.has("phi_deg"):
            raise sec.error("phi_deg", "a joint pose (q_deg) has no separate phi_deg: its tool angle is the sum")
        sec.done()
        return Pose(name=name, line=line, q_rad=q)
    base = "xyz" if has_xyz else "xy"
    point = _length(sec, base, count=3 if has_xyz else 2)
    key = f"{base}_mm" if sec.has(f"{base}_mm") else f"{base}_m"
    phi = sec.number("phi_deg", None, lo=-360, hi=360)
    sec.done()
    return Pose(name=name, line=line, point_m=point, phi_rad=None if phi is None else math.radians(phi), key=key)


def _pose_ref(value, sec: Section, key: str, number: str) -> str | Pose:
    """A step's target: a pose name, a '$variable', or an inline pose mapping."""
    if isinstance(value, str) and value:
        return value
    if isinstance(value, dict):
        return _pose(
            Section(value, path=sec.path, key=f"{sec.key}.{key}", line=sec.line_of(key)),
            f"<step {number}>",
            line=getattr(value, "line", None) or sec.line_of(key),
        )
    raise sec.error(
        key, f"expected a pose name or an inline pose like {{xy_mm: [400, 100]}} or {{xyz_mm: ...}}, found {value!r}"
    )


def parse_program(data: Any, path) -> Program:
    """Validate a parsed program document (see docs/programs.md)."""
    path = str(path)
    if data is None or (isinstance(data, dict) and not data):
        raise ConfigError(
            "the program is empty: it needs at least 'steps:' (and usually 'poses:'); see docs/programs.md",
            path=path,
            line=1,
        )
    top = Section(data, path=path)
    description = top.string("description", "")
    arm_name = top.string("arm", None)
    arm_line = top.line_of("arm")

    s = top.section("settings", required=False)
    settings = Settings()
    if s is not None:
        settings = _settings(s, settings)
        for k in SETTINGS_KEYS:
            s.raw(k, None)
        s.done()

    poses: dict[str, Pose] = {}
    p = top.section("poses", required=False)
    if p is not None:
        for name in p.data:
            if not isinstance(name, str) or name.startswith("$") or not name:
                raise p.error(name, f"pose names must be text not starting with '$', found {name!r}")
            poses[name] = _pose(p.section(name), name, line=p.line_of(name))
        p.done()

    start = None
    start_line = top.line_of("start")
    if top.has("start"):
        start = _pose_ref(top.raw("start"), top, "start", "start")
    start_gripper = top.string("start_gripper", "open", choices=("open", "closed"))
    zsec = top.section("zones", required=False)
    zones = None if zsec is None else parse_zones(zsec, has_base=None)

    if not top.has("steps"):
        raise top.error(None, "the program has no 'steps:' list; add the moves to make")
    raw_steps = top.items("steps")
    if not raw_steps:
        raise top.error("steps", "the program has no steps ('steps:' is empty); add the moves to make")
    top.done()
    steps = _steps(raw_steps, path, prefix="", key="steps", bound=set())
    prog = Program(
        path=path,
        arm_name=arm_name,
        arm_line=arm_line,
        settings=settings,
        poses=poses,
        start=start,
        start_line=start_line,
        start_gripper=start_gripper,
        steps=steps,
        description=description,
        zones=zones,
        zones_line=top.line_of("zones") if zones is not None else None,
    )
    _check_refs(prog)
    return prog


def _settings(s: Section, base: Settings) -> Settings:
    def pct(key, default):
        v = s.number(key, None, lo=0, lo_open=True, hi=100)
        return default if v is None else v / 100.0

    def num_deg(key, default, **kw):
        v = s.number(key, None, **kw)
        return default if v is None else math.radians(v)

    period_ms = s.number("period_ms", None, lo=1, hi=1000)
    profile = s.string("profile", "trapezoid", choices=("trapezoid", "s_curve"))
    jerk_ms = s.number("jerk_time_ms", None, lo=0, lo_open=True, hi=2000)
    if jerk_ms is not None and profile != "s_curve":
        raise s.error("jerk_time_ms", "jerk_time_ms only applies with 'profile: s_curve'")
    return Settings(
        jerk_time_s=0.0 if profile == "trapezoid" else (100.0 if jerk_ms is None else jerk_ms) / 1000.0,
        speed_m_s=_length(s, "speed", "_s", lo=0, lo_open=True) or base.speed_m_s,
        accel_m_s2=_length(s, "accel", "_s2", lo=0, lo_open=True) or base.accel_m_s2,
        segment_m=_length(s, "segment", lo=MIN_SEGMENT_M) or base.segment_m,
        joint_speed_fraction=pct("joint_speed_pct", base.joint_speed_fraction),
        joint_accel_rad_s2=num_deg("joint_accel_deg_s2", base.joint_accel_rad_s2, lo=0, lo_open=True),
        max_joint_step_rad=num_deg("max_joint_step_deg", base.max_joint_step_rad, lo=0.01, hi=45),
        period_s=base.period_s if period_ms is None else period_ms / 1000.0,
        blend_m=_blend(s, base.blend_m),
    )


#: The largest blend distance: a rounding that far from a corner is a typo (metres for millimetres).
MAX_BLEND_M = 0.5


def with_blend(prog: Program, blend_mm: str | float | None) -> Program:
    """``prog`` with its default blend distance (settings ``blend_mm``) set to ``blend_mm`` millimetres (a
    number or the text of one, as ``--blend MM`` gives it); steps with their own ``blend_mm`` keep theirs.
    None: ``prog`` unchanged. BadInputError for a negative, non-finite or too large value."""
    import dataclasses

    from .errors import BadInputError

    if blend_mm is None:
        return prog
    try:
        v = float(blend_mm)
    except (TypeError, ValueError):
        raise BadInputError(f"--blend: {blend_mm!r} is not a number of millimetres") from None
    if not math.isfinite(v) or v < 0 or v > MAX_BLEND_M * 1000:
        raise BadInputError(f"--blend: {blend_mm!r} mm: give 0 .. {MAX_BLEND_M * 1000:g} mm")
    return dataclasses.replace(prog, settings=dataclasses.replace(prog.settings, blend_m=v / 1000.0))


def _blend(sec: Section, default: float | None):
    """``blend_mm`` or ``blend_m`` (0 .. 500 mm) in metres, else ``default``."""
    v = _length(sec, "blend", lo=0)
    if v is None:
        return default
    if v > MAX_BLEND_M:
        key = "blend_m" if sec.has("blend_m") else "blend_mm"
        raise sec.error(key, f"a blend of {v * 1000:g} mm is more than {MAX_BLEND_M * 1000:g} mm")
    return v


def _steps(raw: list, path: str, *, prefix: str, key: str, bound: set) -> list[Step]:
    lines = raw.item_lines if isinstance(raw, LineList) else [getattr(raw, "line", None)] * len(raw)
    out = []
    for i, item in enumerate(raw):
        number = f"{prefix}{i + 1}"
        line = getattr(item, "line", None) or lines[i]
        if isinstance(item, str) and item in ("open", "close"):
            raise ConfigError(f"step {number}: write 'gripper: {item}'", path=path, line=line)
        try:
            sec = Section(item, path=path, key=f"{key}[{i}]", line=line)
            out.append(_step(sec, number, line, path, bound))
        except ConfigError as exc:
            if exc.reason.startswith("step "):
                raise
            what = f"{exc.key.rsplit('.', 1)[-1]}: " if exc.key and "." in exc.key else ""
            raise ConfigError(f"step {number}: {what}{exc.reason}", path=exc.path, line=exc.line) from None
    return out


def _step(sec: Section, number: str, line, path: str, bound: set) -> Step:
    actions = [a for a in STEP_ACTIONS if sec.has(a)]
    if len(actions) != 1:
        found = "none" if not actions else ", ".join(actions)
        raise ConfigError(
            f"step {number}: a step needs exactly one of {', '.join(STEP_ACTIONS)} (found {found})",
            path=path,
            line=line,
        )
    action = actions[0]
    st = Step(number=number, line=line, action=action, name=sec.string("name", None))
    if action in ("line", "joint"):
        st.target = _pose_ref(sec.raw(action), sec, action, number)
        st.offset_m = _length(sec, "offset", count=(2, 3))
    if action == "line":
        st.speed_m_s = _length(sec, "speed", "_s", lo=0, lo_open=True)
        st.accel_m_s2 = _length(sec, "accel", "_s2", lo=0, lo_open=True)
        st.segment_m = _length(sec, "segment", lo=MIN_SEGMENT_M)
        st.blend_m = _blend(sec, None)
        stop = sec.raw("stop", False)
        if not isinstance(stop, bool):
            raise sec.error("stop", f"step {number}: stop is true or false, found {stop!r}")
        st.stop = stop
    elif action == "joint":
        pct = sec.number("speed_pct", None, lo=0, lo_open=True, hi=100)
        st.joint_speed_fraction = None if pct is None else pct / 100.0
        acc = sec.number("accel_deg_s2", None, lo=0, lo_open=True)
        st.joint_accel_rad_s2 = None if acc is None else math.radians(acc)
        st.blend_m = _blend(sec, None)
        stop = sec.raw("stop", False)
        if not isinstance(stop, bool):
            raise sec.error("stop", f"step {number}: stop is true or false, found {stop!r}")
        st.stop = stop
    elif action == "gripper":
        value = sec.string("gripper", choices=("open", "close"))
        st.gripper = value
    elif action == "wait_s":
        st.wait_s = sec.number("wait_s", lo=0)
    elif action == "repeat":
        count = sec.raw("repeat")
        if isinstance(count, bool) or not isinstance(count, int) or count < 1:
            raise sec.error("repeat", f"step {number}: repeat needs a whole number of passes >= 1, found {count!r}")
        st.count = count
    elif action == "for_each":
        loop = sec.section("for_each")
        lengths = set()
        for var in loop.data:
            if not isinstance(var, str) or not var.isidentifier():
                raise loop.error(var, f"step {number}: loop variable names are plain words, found {var!r}")
            values = loop.items(var)
            if not values:
                raise loop.error(var, f"step {number}: the list for '{var}' is empty")
            st.loop_vars[var] = [
                _pose_ref(v, loop, var, number) if isinstance(v, dict) else _loop_value(v, loop, var) for v in values
            ]
            lengths.add(len(values))
        loop.done()
        if not st.loop_vars:
            raise sec.error("for_each", f"step {number}: for_each needs at least one 'name: [pose, ...]' list")
        if len(lengths) > 1:
            raise sec.error(
                "for_each",
                f"step {number}: the for_each lists must have the same length "
                f"(found {', '.join(str(len(v)) for v in st.loop_vars.values())})",
            )
    if action in ("repeat", "for_each"):
        if not sec.has("steps"):
            raise sec.error(None, f"step {number}: {action} needs a 'steps:' list of the steps to repeat")
        inner = sec.items("steps")
        if not inner:
            raise sec.error("steps", f"step {number}: the 'steps:' list to repeat is empty")
        st.steps = _steps(inner, path, prefix=f"{number}.", key=f"{sec.key}.steps", bound=bound | set(st.loop_vars))
    allowed = ("name", *STEP_KEYS[action])
    for k in sec.data:
        if k not in allowed:
            close = difflib.get_close_matches(str(k), allowed, n=1)
            hint = f"did you mean '{close[0]}'? " if close else ""
            raise ConfigError(
                f"step {number}: unknown key '{k}' for a {action} step; {hint}(keys: {', '.join(allowed)})",
                path=path,
                line=sec.line_of(k),
            )
    return st


def _loop_value(v, loop: Section, var: str) -> str:
    if isinstance(v, str) and v and not v.startswith("$"):
        return v
    raise loop.error(var, f"for_each values are pose names or inline poses, found {v!r}")


def _check_refs(prog: Program) -> None:
    """Every pose name used exists; every '$var' is bound by an enclosing for_each."""

    def check(ref, line, what: str, bound: set):
        if not isinstance(ref, str):
            return
        if ref.startswith("$"):
            if ref[1:] not in bound:
                have = ", ".join(f"${b}" for b in sorted(bound)) or "none here"
                raise ConfigError(
                    f"{what}: '{ref}' is not a for_each variable (variables: {have})", path=prog.path, line=line
                )
            return
        if ref not in prog.poses:
            close = difflib.get_close_matches(ref, list(prog.poses), n=1)
            hint = f"did you mean '{close[0]}'?" if close else "define it under 'poses:'"
            known = ", ".join(prog.poses) or "none"
            raise ConfigError(f"{what}: unknown pose '{ref}'; {hint} (poses: {known})", path=prog.path, line=line)

    def walk(steps, bound):
        for st in steps:
            check(st.target, st.line, f"step {st.number}", bound)
            for var, values in st.loop_vars.items():
                for v in values:
                    check(v, st.line, f"step {st.number} (for_each {var})", bound)
            walk(st.steps, bound | set(st.loop_vars))

    check(prog.start, prog.start_line, "start", set())
    walk(prog.steps, set())


# --------------------------------------------------------------------------- planning


@dataclass
class _Flat:
    """One step instance after expanding loops."""

    step: Step
    label: str  # for errors: "file:line: step 1.2 'name' (part=part1)"
    title: str  # for the trajectory: "step 1.2 'name' (line 12; part=part1)"
    env: dict


def expand(prog: Program) -> list[_Flat]:
    """The steps in execution order, loops unrolled, with their labels."""
    out: list[_Flat] = []

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
            else:
                label = f"{prog.path}:{st.line}: {name}" + (f" ({'; '.join(notes)})" if notes else "")
                title = f"{name} (line {st.line}" + "".join(f"; {n}" for n in notes) + ")"
                out.append(_Flat(step=st, label=label, title=title, env=env))
                if len(out) > MAX_MOVES:
                    raise ConfigError(
                        f"{name}: with its loops unrolled the program has more than {MAX_MOVES} moves; "
                        "check the repeat counts",
                        path=prog.path,
                        line=st.line,
                    )

    walk(prog.steps, {}, [])
    return out


def episode_of_steps(prog: Program) -> list[int]:
    """For each step of ``expand(prog)`` (loops unrolled), the dataset episode it belongs to: each pass of a
    top-level ``repeat`` is one episode (steps before the first such pass belong to it, steps after a pass to
    the last one); a program without a top-level repeat is one episode."""

    def count(steps) -> int:
        n = 0
        for st in steps:
            if st.action == "repeat":
                n += st.count * count(st.steps)
            elif st.action == "for_each":
                n += len(next(iter(st.loop_vars.values()))) * count(st.steps)
            else:
                n += 1
        return n

    out: list[int] = []
    episode, passes = 0, 0
    for st in prog.steps:
        if st.action == "repeat":
            inner = count(st.steps)
            for _ in range(st.count):
                if passes:
                    episode += 1
                passes += 1
                out += [episode] * inner
        else:
            out += [episode] * count([st])
    return out


def _resolve_name(ref, env):
    if isinstance(ref, str) and ref.startswith("$"):
        return env[ref[1:]]
    return ref


def _ref_text(ref) -> str:
    return ref if isinstance(ref, str) else "inline pose"


def _pose_of(prog: Program, ref, env) -> Pose:
    ref = _resolve_name(ref, env)
    return prog.poses[ref] if isinstance(ref, str) else ref


def _check_pose_on_arm(prog: Program, pose: Pose, arm: Arm, where: str, line, offset=None) -> None:
    """Arm-specific format checks: x, y or x, y, z; joint count; phi only on 3 links; joint poses inside
    limits; offsets with as many values as the arm's points."""
    pline = pose.line or line
    if offset is not None and len(offset) != arm.dim:
        raise ConfigError(
            f"{where}: offset has {len(offset)} values but arm '{arm.name}' "
            + ("stands on a rotating base: give [dx, dy, dz]" if arm.has_base else "works in a plane: give [dx, dy]"),
            path=prog.path,
            line=line,
        )
    if pose.point_m is not None and len(pose.point_m) != arm.dim:
        unit = pose.key.rsplit("_", 1)[-1] or "mm"
        want = f"xyz_{unit}: [x, y, z]" if arm.has_base else f"xy_{unit}: [x, y]"
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
            raise motion._limit_error(arm, q, f"in {pose.describe()}", hint="change its q_deg")
    elif pose.phi_rad is not None and arm.n_links != 3:
        raise ConfigError(
            f"{where}: {pose.describe()} gives a tool angle phi_deg, which needs a 3-link arm; "
            f"arm '{arm.name}' has {arm.n_links} links: remove phi_deg",
            path=prog.path,
            line=pline,
        )


def _target(pose: Pose, offset, arm: Arm):
    """(point_m, phi_rad or None, exact end q or None) of a pose plus an optional offset (m)."""
    if pose.q_rad is not None:
        q = np.array(pose.q_rad)
        phi = (float(np.sum(q)) if not arm.layered else float(tool_pitch(arm, q))) if arm.n_links == 3 else None
        if offset is None:
            return tool_point(arm, q), phi, q
        return tool_point(arm, q) + np.asarray(offset), phi, None
    point = np.asarray(pose.point_m, dtype=float) + (np.asarray(offset) if offset is not None else 0.0)
    return point, pose.phi_rad, None


def _is_arm_file(ref: str) -> bool:
    return ref.endswith((".yaml", ".yml", ".urdf")) or ".urdf#" in ref or "/" in ref or os.sep in ref


def _same_arm(prog: Program, arm: Arm) -> bool:
    """The program's arm: key names this arm: its preset name, or its file."""
    if not _is_arm_file(prog.arm_name):
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
        want = "z heights and [x, y, z] corners" if arm.has_base else "y heights and [x, y] corners"
        raise ConfigError(
            f"zones: arm '{arm.name}' {'stands on a rotating base' if arm.has_base else 'works in a vertical plane'}: "
            f"write {want}",
            path=prog.path,
            line=prog.zones_line,
        )
    arm = arm.with_zones(prog.zones)
    flat = expand(prog)
    st = prog.settings
    q = np.array(arm.home_rad, dtype=float)
    if prog.start is not None:
        pose = _pose_of(prog, prog.start, {})
        try:
            _check_pose_on_arm(prog, pose, arm, "start", prog.start_line)
            xy, phi, q_exact = _target(pose, None, arm)
            q = q_exact if q_exact is not None else motion.solve_pose(arm, xy, phi, arm.home_rad)
        except MotionError as exc:
            raise motion._located(exc, f"{prog.path}:{prog.start_line}: start") from None
    q_start = q.copy()
    if arm.zones:
        from .errors import ZoneError
        from .zones import pose_refusal

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
    for item in flat:
        try:
            move = _move(prog, item, arm, q)
        except MotionError as exc:
            raise motion._located(exc, item.label) from None
        mp = motion.plan_move(arm, move, q, g, period_s=st.period_s, max_joint_step_rad=st.max_joint_step_rad)
        plans.append(mp)
        moves.append(move)
        q, g = mp.q_rad[-1], float(mp.gripper_rad[-1])
    if any(isinstance(m, LineMove) and m.blend_m > 0 for m in moves):
        plans = motion.blend_chain(arm, moves, plans, period_s=st.period_s, max_joint_step_rad=st.max_joint_step_rad)
    if any(isinstance(m, (LineMove, JointMove)) and m.blend_m > 0 for m in moves):
        plans = motion.blend_joint_moves(arm, moves, plans, period_s=st.period_s)
    traj = motion.assemble(
        arm, plans, q_start=q_start, gripper_start=g_start, period_s=st.period_s, labels=[it.title for it in flat]
    )
    return Plan(trajectory=traj, moves=plans, arm=arm)


def _move(prog: Program, item: _Flat, arm: Arm, q):
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
    pose = _pose_of(prog, s.target, item.env)
    _check_pose_on_arm(prog, pose, arm, f"step {s.number}", s.line, s.offset_m)
    xy, phi, q_exact = _target(pose, s.offset_m, arm)
    try:
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
            )
        q_end = q_exact if q_exact is not None else motion.solve_pose(arm, xy, phi, q)
    except MotionError as exc:
        raise motion._located(exc, f"to {pose.describe()}") from None
    return JointMove(
        tuple(q_end),
        speed_fraction=s.joint_speed_fraction or st.joint_speed_fraction,
        accel_rad_s2=s.joint_accel_rad_s2 or st.joint_accel_rad_s2,
        jerk_time_s=st.jerk_time_s,
        label=label,
        blend_m=st.blend_m if s.blend_m is None else s.blend_m,
        stop=s.stop,
    )
