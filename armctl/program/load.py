"""Loading a program: the YAML format read and checked whole (ConfigError naming file, line and step), loops
and pose references resolved against the program's names."""

from __future__ import annotations

import difflib
import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from armctl import motion
from armctl.core import limits
from armctl.core.config import LineList, Section, load_yaml_file, load_yaml_text
from armctl.errors import ConfigError
from armctl.model.validate import MAX_BLEND_M
from armctl.model.zones import Zones, parse_zones
from armctl.program.payload import part_mass

STEP_ACTIONS = ("line", "joint", "gripper", "wait_s", "repeat", "for_each", "pick", "place")
ROLL_KEYS = ("roll", "grasp")  # the jaws about the tool axis: a roll (deg), or straight down at a table yaw
PICK_KEYS = ("hover_mm", "hover_m", "speed_mm_s", "speed_m_s", "offset_mm", "offset_m", *ROLL_KEYS)
DEFAULT_HOVER_M = 0.040  # a pick or place comes down to its target from this far above it
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
        *ROLL_KEYS,
    ),
    "joint": ("joint", "offset_mm", "offset_m", "speed_pct", "accel_deg_s2", "blend_mm", "blend_m", "stop", *ROLL_KEYS),
    "gripper": ("gripper", "part_g"),
    "wait_s": ("wait_s",),
    "repeat": ("repeat", "steps"),
    "for_each": ("for_each", "steps"),
    "pick": ("pick", *PICK_KEYS, "part_g"),
    "place": ("place", *PICK_KEYS),
}
MIN_SEGMENT_M = 1e-5  # 0.01 mm: finer segments only take time and memory
MAX_MOVES = limits.LIMITS["moves"].default  # the default; armctl.core.limits.get("moves") is the one in force
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
    """A named (or inline) pose: a tool point (x, y; x, y, z on a base arm) with an optional tool angle and the
    table yaw of the part there (``yaw_deg``: the jaws turn to it on an arm with a wrist roll), or joint angles."""

    name: str
    line: int | None
    point_m: tuple[float, ...] | None = None
    phi_rad: float | None = None
    q_rad: tuple[float, ...] | None = None
    key: str = ""  # how the point was written: xy_mm, xyz_m, ...
    yaw_rad: float | None = None  # the part's yaw on the table: the jaws close across it (``grasp``)

    @property
    def xy_m(self) -> tuple[float, ...] | None:
        """The tool point (the name of planar arms' files; 3 values on a base arm)."""
        return self.point_m

    def describe(self) -> str:
        where = f" (line {self.line})" if self.line else ""
        return f"pose '{self.name}'{where}" if not self.name.startswith("<") else f"inline pose{where}"


@dataclass(frozen=True)
class MarkerRef:
    """A pick or place target the camera finds: the part carrying ArUco marker ``marker_id`` (``pick: {marker: 3}``),
    where it lies when the program starts (``with_parts``)."""

    marker_id: int
    line: int | None = None
    size_m: float = 0.030  # the marker's black square (``size_mm``)

    def describe(self) -> str:
        return f"the part with marker {self.marker_id}"


@dataclass
class Step:
    """One step as written. ``number`` is '7' or '4.2' (step 2 inside step 4)."""

    number: str
    line: int | None
    action: str
    name: str | None = None
    target: str | Pose | MarkerRef | None = None  # pose name, '$var', inline Pose, or a part the camera finds
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
    lift_m: float = 0.0  # a pick's or place's move: the target raised by this much (up: z, or y in a plane)
    roll_rad: float | None = None  # ``roll:`` the wrist roll at the move's end (None: as the target says, or kept)
    grasp_yaw_rad: float | None = None  # ``grasp: {yaw_deg: Y}``: jaws straight down, closing along table yaw Y
    part_kg: float | None = None  # ``part_g:`` on a close (a pick's grip): the part, carried until the gripper opens


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
    zones: Zones | None = None  # keep-out zones added to the arm's (armctl.model.zones)
    zones_line: int | None = None
    parts: dict[int, Pose] = field(default_factory=dict)  # marker id -> where its part lies (``with_parts``)
    payload_kg: float | None = None  # ``payload_g:`` carried all along (None: the arm's); ``part_g:`` each close's
    part_kg: float = 0.0

    @property
    def arm_ref(self) -> str | None:
        """The arm: key for ``load_arm``: a name as written, an arm file relative to the program's folder."""
        if self.arm_name is None or not is_arm_file(self.arm_name):
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
    for k in ("xy_m", "xy_mm", "xyz_m", "xyz_mm", "phi_deg", "q_deg", "yaw_deg"):
        if not sec.has(k):
            sec.raw(k, None)
    if has_q:
        q = tuple(math.radians(v) for v in sec.numbers("q_deg", count=(2, 3, 4, 5)))
        if sec.has("phi_deg"):
            raise sec.error("phi_deg", "a joint pose (q_deg) has no separate phi_deg: its tool angle is the sum")
        if sec.has("yaw_deg"):
            raise sec.error("yaw_deg", "a joint pose (q_deg) has no yaw_deg: its wrist roll is in q_deg")
        sec.done()
        return Pose(name=name, line=line, q_rad=q)
    base = "xyz" if has_xyz else "xy"
    point = _length(sec, base, count=3 if has_xyz else 2)
    key = f"{base}_mm" if sec.has(f"{base}_mm") else f"{base}_m"
    phi, yaw = (sec.number(k, None, lo=-360, hi=360) for k in ("phi_deg", "yaw_deg"))
    sec.done()
    phi_rad, yaw_rad = (None if v is None else math.radians(v) for v in (phi, yaw))
    return Pose(name=name, line=line, point_m=point, phi_rad=phi_rad, key=key, yaw_rad=yaw_rad)


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
    payload, part = (top.number(k, None, lo=0.0, hi=10000.0) for k in ("payload_g", "part_g"))
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
        payload_kg=None if payload is None else payload / 1000.0,
        part_kg=(part or 0.0) / 1000.0,
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
    if action in ("line", "joint", "pick", "place"):
        value = sec.raw(action)
        marker = action in ("pick", "place") and isinstance(value, dict) and "marker" in value
        st.target = _marker_ref(value, sec, action, number) if marker else _pose_ref(value, sec, action, number)
        st.offset_m = _length(sec, "offset", count=(2, 3))
        _roll_keys(st, sec, number)
    _STEP_READERS[action](st, sec, number)
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


def _stop(sec: Section, number: str) -> bool:
    stop = sec.raw("stop", False)
    if not isinstance(stop, bool):
        raise sec.error("stop", f"step {number}: stop is true or false, found {stop!r}")
    return stop


def _roll_keys(st: Step, sec: Section, number: str) -> None:
    """``roll: DEG`` (the wrist roll at the move's end) or ``grasp: {yaw_deg: Y}`` (the jaws straight down,
    closing along table yaw Y); which arm can turn them is checked when the program is planned on one."""
    if sec.has("roll") and sec.has("grasp"):
        raise sec.error("grasp", f"step {number}: give roll or grasp, not both (grasp computes the roll)")
    roll = sec.number("roll", None, lo=-360, hi=360)
    st.roll_rad = None if roll is None else math.radians(roll)
    if not sec.has("grasp"):
        return
    g = sec.raw("grasp")
    yaw = g.get("yaw_deg") if isinstance(g, dict) else None
    ok = isinstance(yaw, (int, float)) and not isinstance(yaw, bool) and math.isfinite(yaw) and abs(yaw) <= 360
    if not ok or set(g) != {"yaw_deg"}:
        raise sec.error(
            "grasp",
            f"step {number}: grasp takes {{yaw_deg: Y}}, the table yaw the jaws close along (-360..360 deg), "
            f"found {g!r}",
        )
    st.grasp_yaw_rad = math.radians(float(yaw))


def _line_step(st: Step, sec: Section, number: str) -> None:
    st.speed_m_s = _length(sec, "speed", "_s", lo=0, lo_open=True)
    st.accel_m_s2 = _length(sec, "accel", "_s2", lo=0, lo_open=True)
    st.segment_m = _length(sec, "segment", lo=MIN_SEGMENT_M)
    st.blend_m = _blend(sec, None)
    st.stop = _stop(sec, number)


def _joint_step(st: Step, sec: Section, number: str) -> None:
    pct = sec.number("speed_pct", None, lo=0, lo_open=True, hi=100)
    st.joint_speed_fraction = None if pct is None else pct / 100.0
    acc = sec.number("accel_deg_s2", None, lo=0, lo_open=True)
    st.joint_accel_rad_s2 = None if acc is None else math.radians(acc)
    st.blend_m = _blend(sec, None)
    st.stop = _stop(sec, number)


def _gripper_step(st: Step, sec: Section, number: str) -> None:
    st.gripper = sec.string("gripper", choices=("open", "close"))
    st.part_kg = part_mass(sec, number, st.gripper == "close")


def _wait_step(st: Step, sec: Section, number: str) -> None:
    st.wait_s = sec.number("wait_s", lo=0)


def _repeat_step(st: Step, sec: Section, number: str) -> None:
    count = sec.raw("repeat")
    if isinstance(count, bool) or not isinstance(count, int) or count < 1:
        raise sec.error("repeat", f"step {number}: repeat needs a whole number of passes >= 1, found {count!r}")
    st.count = count


def _for_each_step(st: Step, sec: Section, number: str) -> None:
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


def _marker_ref(value: dict, sec: Section, key: str, number: str) -> MarkerRef:
    """``{marker: ID[, size_mm: S]}``: the part carrying ArUco marker ID (a whole number 0..999), its black square
    S mm (default 30)."""
    mid, size = value.get("marker"), value.get("size_mm", 30)
    bad_id = isinstance(mid, bool) or not isinstance(mid, int) or not 0 <= mid <= 999
    bad_size = isinstance(size, bool) or not isinstance(size, (int, float)) or not 3 <= size <= 500
    if bad_id or bad_size or set(value) - {"marker", "size_mm"}:
        raise ConfigError(
            f"step {number}: {key}: {{marker: ID, size_mm: S}} takes a marker id (a whole number 0..999) and its "
            f"black square's side (3..500 mm, default 30), found {dict(value)!r}",
            path=sec.path,
            line=sec.line_of(key),
        )
    return MarkerRef(mid, sec.line_of(key), size / 1000.0)


def _pick_place_step(st: Step, sec: Section, number: str) -> None:
    """A pick (down from above the target, open, grip, back up) or a place (down, open, back up), as the line and
    gripper steps ``number``.1, .2, ... that it is."""
    hover = _length(sec, "hover", lo=0, lo_open=True)
    hover = DEFAULT_HOVER_M if hover is None else hover
    speed = _length(sec, "speed", "_s", lo=0, lo_open=True)
    what = st.target.describe() if isinstance(st.target, MarkerRef) else _ref_text_of(st.target)
    part = part_mass(sec, number) if st.action == "pick" else None
    if st.action == "pick":
        plan = [("above", hover), ("open", "open"), ("down", 0.0), ("grip", "close"), ("up", hover)]
    else:
        plan = [("above", hover), ("down", 0.0), ("release", "open"), ("up", hover)]
    for k, (name, arg) in enumerate(plan, start=1):
        sub = Step(number=f"{number}.{k}", line=st.line, action="line", name=f"{st.action} {what}: {name}")
        if isinstance(arg, str):
            sub.action, sub.gripper, sub.part_kg = "gripper", arg, part if arg == "close" else None
        else:
            sub.target, sub.offset_m, sub.lift_m, sub.speed_m_s = st.target, st.offset_m, arg, speed
            sub.roll_rad, sub.grasp_yaw_rad = st.roll_rad, st.grasp_yaw_rad
            sub.stop = True
        st.steps.append(sub)


def _ref_text_of(ref) -> str:
    if isinstance(ref, str):
        return ref
    if isinstance(ref, Pose) and ref.point_m is not None:
        return "[" + ", ".join(f"{v * 1000:g}" for v in ref.point_m) + "] mm"
    return "inline pose"


# what each action reads of its step, after the target and offset of a line or joint move
_STEP_READERS = {
    "line": _line_step,
    "joint": _joint_step,
    "gripper": _gripper_step,
    "wait_s": _wait_step,
    "repeat": _repeat_step,
    "for_each": _for_each_step,
    "pick": _pick_place_step,
    "place": _pick_place_step,
}


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


def is_arm_file(ref: str) -> bool:
    """True when ``ref`` names an arm file (a path), not a preset."""
    return ref.endswith((".yaml", ".yml", ".urdf")) or ".urdf#" in ref or "/" in ref or os.sep in ref
