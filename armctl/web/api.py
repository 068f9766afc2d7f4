"""The page's JSON API: request validation and the arm description. No I/O here.

Millimetres, degrees and mm/s at this edge; metres and radians inside. Every
malformed request raises ``ApiError`` with an HTTP status and a reason, before
anything is queued for the arm.
"""

from __future__ import annotations

import json
import math

import numpy as np

from armctl.calibration.servo import Calibration, within_calibration
from armctl.core import limits
from armctl.errors import BadInputError
from armctl.ik.roll import check_roll
from armctl.model.arm import Arm
from armctl.model.kinematics import tool_point
from armctl.model.validate import is_number
from armctl.model.workspace import annulus, nearest_reachable, shortfall
from armctl.model.zones import describe as describe_zones
from armctl.motion import DEFAULT_SPEED_M_S
from armctl.web import controller
from armctl.web.controller import Command
from armctl.web.reach_map import ReachMap, top_map

MAX_BODY_BYTES = 4096
MAX_COORD_MM = 10_000.0
MAX_SPEED_MM_S = 1000.0
MAX_PROGRAM_BYTES = limits.LIMITS["body_bytes"].default  # the default; limits.get("body_bytes") is in force
PREVIEW_POINTS = 1500  # tool points of a program's path sent to the page (thinned evenly)


class ApiError(Exception):
    """A request the server refuses: ``status`` (4xx) and a one-line ``reason``; extra fields go in the JSON."""

    def __init__(self, status: int, reason: str, **extra):
        super().__init__(reason)
        self.status, self.reason, self.extra = status, reason, extra

    def body(self) -> dict:
        return {"ok": False, "error": self.reason, **self.extra}


def parse_body(raw: bytes) -> dict:
    """The JSON object in ``raw``; ApiError 400 if it is not one (NaN and Infinity are refused too)."""

    def bad_constant(name):
        raise ValueError(f"{name} is not a number")

    try:
        text = raw.decode("utf-8") or "{}"
        limits.json_depth_ok(text)
        data = json.loads(text, parse_constant=bad_constant)
    except limits.LimitError as exc:
        raise ApiError(400, f"body refused: {exc.reason}") from None
    except (UnicodeDecodeError, ValueError) as exc:
        raise ApiError(400, f"body is not valid JSON: {exc}") from None
    if not isinstance(data, dict):
        raise ApiError(400, 'body must be a JSON object, e.g. {"x_mm": 400, "y_mm": 100}')
    return data


def _number(data: dict, key: str, *, required: bool, lo: float, hi: float, default=None) -> float | None:
    if key not in data or data[key] is None:
        if required:
            raise ApiError(400, f"missing '{key}'")
        return default
    v = data[key]
    if not is_number(v):
        raise ApiError(400, f"'{key}' must be a number, got {json.dumps(v)[:40]}")
    if not math.isfinite(v):
        raise ApiError(400, f"'{key}' must be a finite number")
    if not lo <= v <= hi:
        raise ApiError(400, f"'{key}' = {v:g} is out of range [{lo:g}, {hi:g}]")
    return float(v)


def _only(data: dict, keys: set) -> None:
    extra = sorted(set(data) - keys)
    if extra:
        raise ApiError(400, f"unknown key(s) {', '.join(map(repr, extra))}; expected {', '.join(sorted(keys))}")


def move_command(data: dict, arm: Arm, reach: ReachMap) -> Command:
    """A ``POST /api/move`` body -> Command; ApiError 400 (malformed) or 422 (out of the workspace).
    An arm on a rotating base takes ``z_mm`` too (required)."""
    if arm.has_base:
        return _move_command_xyz(data, arm)
    _only(data, {"x_mm", "y_mm", "phi_deg", "speed_mm_s", "mode"})
    x = _number(data, "x_mm", required=True, lo=-MAX_COORD_MM, hi=MAX_COORD_MM)
    y = _number(data, "y_mm", required=True, lo=-MAX_COORD_MM, hi=MAX_COORD_MM)
    phi_deg = _number(data, "phi_deg", required=False, lo=-360, hi=360)
    speed = _number(data, "speed_mm_s", required=False, lo=1, hi=MAX_SPEED_MM_S, default=DEFAULT_SPEED_M_S * 1000)
    mode = data.get("mode", "line")
    if mode not in ("line", "joint"):
        raise ApiError(400, f'\'mode\' must be "line" or "joint", got {json.dumps(mode)[:40]}')
    if phi_deg is not None and arm.n != 3:
        raise ApiError(400, "'phi_deg' needs a 3-link arm")
    target = (x / 1000.0, y / 1000.0)
    phi = None if phi_deg is None else math.radians(phi_deg)
    short = shortfall(arm, target, phi)
    if short > 1e-9:
        ring = annulus(arm, phi)
        side = "beyond the outer reach" if math.hypot(*target) >= ring.r_min else "inside the inner reach"
        raise ApiError(
            422,
            f"({x:.0f}, {y:.0f}) mm is {short * 1000:.1f} mm {side}: nothing moved",
            shortfall_mm=short * 1000,
            target_mm=[x, y],
        )
    label = f"{'line' if mode == 'line' else 'joint move'} to ({x:.0f}, {y:.0f}) mm"
    return controller.move_command(target, phi, speed / 1000.0, mode, label)


def _move_command_xyz(data: dict, arm: Arm) -> Command:
    """``POST /api/move`` for an arm on a base: x_mm, y_mm, z_mm, optional phi_deg, speed_mm_s, mode."""
    _only(data, {"x_mm", "y_mm", "z_mm", "phi_deg", "roll_deg", "speed_mm_s", "mode"})
    x, y, z = (_number(data, k, required=True, lo=-MAX_COORD_MM, hi=MAX_COORD_MM) for k in ("x_mm", "y_mm", "z_mm"))
    phi_deg = _number(data, "phi_deg", required=False, lo=-360, hi=360)
    roll = _roll(data, arm)
    speed = _number(data, "speed_mm_s", required=False, lo=1, hi=MAX_SPEED_MM_S, default=DEFAULT_SPEED_M_S * 1000)
    mode = data.get("mode", "line")
    if mode not in ("line", "joint"):
        raise ApiError(400, f'\'mode\' must be "line" or "joint", got {json.dumps(mode)[:40]}')
    if phi_deg is not None and arm.n_links != 3:
        raise ApiError(400, "'phi_deg' needs a 3-link arm")
    target = (x / 1000.0, y / 1000.0, z / 1000.0)
    phi = None if phi_deg is None else math.radians(phi_deg)
    near = nearest_reachable(arm, target, phi)
    if near.shortfall_m > 1e-9:
        raise ApiError(
            422,
            f"({x:.0f}, {y:.0f}, {z:.0f}) mm is {near.shortfall_m * 1000:.1f} mm outside the reach of arm "
            f"'{arm.name}' inside its joint limits: nothing moved",
            shortfall_mm=near.shortfall_m * 1000,
            target_mm=[x, y, z],
            nearest_mm=[float(v) * 1000 for v in near.point_m],
        )
    label = f"{'line' if mode == 'line' else 'joint move'} to ({x:.0f}, {y:.0f}, {z:.0f}) mm"
    if roll is not None:
        label += f", roll {math.degrees(roll):.0f} deg"
    return controller.move_command(target, phi, speed / 1000.0, mode, label, roll=roll)


def _roll(data: dict, arm: Arm) -> float | None:
    """``roll_deg`` of a move (rad), or None: the wrist roll about the tool axis, on an arm with one, some whole
    turn of it inside the roll's limits (400 otherwise)."""
    roll_deg = _number(data, "roll_deg", required=False, lo=-720, hi=720)
    if roll_deg is None:
        return None
    try:
        return check_roll(arm, math.radians(roll_deg))
    except BadInputError as exc:
        raise ApiError(400, f"'roll_deg': {exc}") from None


def refusal(exc: Exception, cmd: Command, reach: ReachMap) -> ApiError:
    """The 422 for a planned move that was refused (joint limit, pulse limit, path through a singularity)."""
    extra = {}
    if cmd.target_m is not None:
        gap = reach.gap_m(cmd.target_m)
        extra = {"target_mm": [v * 1000 for v in cmd.target_m]}
        if gap > 0:
            extra["shortfall_mm"] = gap * 1000
    why = str(exc).removeprefix(f"{cmd.label}: ")  # (the planner's messages name the move already)
    return ApiError(422, f"{cmd.label}: nothing moved: {why}", **extra)


def gripper_close(data: dict, arm: Arm) -> bool:
    """A ``POST /api/gripper`` body {"state": "open"|"close"} -> True to close."""
    _only(data, {"state"})
    state = data.get("state")
    if state not in ("open", "close"):
        raise ApiError(400, '\'state\' must be "open" or "close"')
    if arm.gripper is None:
        raise ApiError(422, f"arm '{arm.name}' has no gripper")
    return state == "close"


def record_name(data: dict) -> str | None:
    """A ``POST /api/record`` body {"name": "pick"} (or {} for the next free name) -> the name or None."""
    _only(data, {"name"})
    name = data.get("name")
    if name is None or (isinstance(name, str) and not name.strip()):
        return None
    if not isinstance(name, str):
        raise ApiError(400, f"'name' must be text, got {json.dumps(name)[:40]}")
    return name


def _roll_range(arm: Arm) -> dict:
    """The wrist roll as the page shows it: its joint's name and range (deg)."""
    i = arm.roll_index
    return {"name": arm.joint_names[i], "min_deg": math.degrees(arm.q_min[i]), "max_deg": math.degrees(arm.q_max[i])}


def describe(arm: Arm, cal: Calibration, reach: ReachMap, *, backend: str, port: str, firmware: str) -> dict:
    """What the page needs to draw the arm: geometry (mm), limits (deg), servos, the reachable region. An arm
    on a rotating base also gets ``base`` (its range), its offsets, and ``top_map`` (the reach on the table)
    beside ``reach_map`` (its own vertical plane); every per-joint list starts with the base."""
    out = {
        "name": arm.name,
        "links_mm": [float(v) * 1000 for v in arm.links_m],
        "joint_names": list(arm.joint_names),
        "min_deg": [math.degrees(v) for v in arm.q_min],
        "max_deg": [math.degrees(v) for v in arm.q_max],
        "max_speed_deg_s": [math.degrees(v) for v in arm.max_speed_rad_s],
        "home_deg": [math.degrees(v) for v in arm.home_rad],
        "home_tool_mm": [float(v) * 1000 for v in tool_point(arm, arm.home_rad)],
        "reach_mm": [arm.reach_min * 1000, arm.reach_max * 1000],
        "roll": None if arm.roll is None else _roll_range(arm),
        "gripper": None
        if arm.gripper is None
        else {"open_deg": math.degrees(arm.gripper.open_rad), "closed_deg": math.degrees(arm.gripper.closed_rad)},
        "servos": [{"name": s.name, "channel": s.channel, "min": s.lo, "max": s.hi} for s in cal.servos],
        "unit": cal.unit,
        "reach_map": reach.to_json(),
        "default_speed_mm_s": DEFAULT_SPEED_M_S * 1000,
        "backend": backend,
        "port": port,
        "firmware": firmware,
        "dim": arm.dim,
        "linkage": arm.linkage,
    }
    if arm.parallelogram:
        out["link_angle_deg"] = [math.degrees(v) for v in arm.link_angle_rad]
    out["zones"] = describe_zones(arm.zones)
    if arm.has_base:
        cut = within_calibration(arm, cal)  # the base's range a click can use: its limits and its pulses'
        out["base"] = {
            "name": arm.joint_names[0],
            "min_deg": math.degrees(cut.q_min[0]),
            "max_deg": math.degrees(cut.q_max[0]),
        }
        out["base_offset_mm"] = arm.base_offset_m * 1000
        out["shoulder_height_mm"] = arm.shoulder_height_m * 1000
        out["top_map"] = top_map(cut, side=reach).to_json()
    return out


def finite_json(obj) -> str:
    """JSON with NaN/inf written as null (browsers' JSON.parse refuses NaN)."""

    def clean(v):
        if isinstance(v, float) and not math.isfinite(v):
            return None
        if isinstance(v, dict):
            return {k: clean(x) for k, x in v.items()}
        if isinstance(v, (list, tuple)):
            return [clean(x) for x in v]
        if isinstance(v, np.generic):
            return clean(v.item())
        return v

    return json.dumps(clean(obj), separators=(",", ":"))


# --- run control and programs ------------------------------------------------------------------------------


def override_percent(data: dict) -> float:
    """A ``POST /api/override`` body {"percent": 10..200} -> the override as a fraction."""
    _only(data, {"percent"})
    return _number(data, "percent", required=True, lo=10, hi=200) / 100.0


def load_page_program(data: dict, arm: Arm):
    """A ``POST /api/program/preview`` or ``/run`` body {"text": YAML, "name": "file.yaml"[, "from_step": N|NAME]}
    -> (Program, Plan, from_step or None): parsed and planned whole on ``arm`` (ApiError 422 naming the line and
    step otherwise, nothing moved)."""
    from armctl.errors import ArmctlError
    from armctl.program import load_program_text, plan_program

    _only(data, {"text", "name", "from_step"})
    text, name = data.get("text"), data.get("name") or "program.yaml"
    if not isinstance(text, str) or not text.strip():
        raise ApiError(400, "'text' must be the program's YAML text")
    if not isinstance(name, str) or "/" in name or "\\" in name or len(name) > 120:
        raise ApiError(400, "'name' must be a file name (no folders)")
    step = data.get("from_step")
    if step is not None and (isinstance(step, bool) or not isinstance(step, (int, str))):
        raise ApiError(400, "'from_step' must be a step number or name")
    try:
        prog = load_program_text(text, path=f"page:{name}")  # the page's copy: no file of that name is read
        plan = plan_program(prog, arm)
        if step is not None:
            from armctl.robot.restart import find_step

            find_step(prog, plan, step)
    except ArmctlError as exc:
        raise ApiError(422, f"{exc}: nothing moved") from None
    return prog, plan, step


def program_preview(prog, plan) -> dict:
    """What the page draws of a planned program: its tool path (mm, thinned), steps and duration."""
    traj = plan.trajectory
    n = len(traj)
    idx = np.unique(np.linspace(0, n - 1, min(n, PREVIEW_POINTS)).round().astype(int))
    tool = tool_point(plan.arm, traj.q_rad[idx]) * 1000.0
    return {
        "program": prog.path,
        "steps": list(traj.steps),
        "duration_s": round(float(traj.duration_s), 6),
        "path_mm": tool.round(2).tolist(),
        "start_mm": tool[0].round(2).tolist(),
    }
