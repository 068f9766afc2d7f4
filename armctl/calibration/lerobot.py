"""LeRobot's calibration files, used as they are: read, found where LeRobot keeps them, turned into the
armctl calibration they mean.

LeRobot (>= 0.3, June 2025) writes one JSON object per motor (``draccus``, 4-space indent)::

    {"shoulder_pan": {"id": 1, "drive_mode": 0, "homing_offset": -1024, "range_min": 758, "range_max": 3292}, ...}

``homing_offset`` is in the servo's EEPROM (register Homing_Offset: present = actual - offset), so the
positions a servo reports already carry it: armctl never adds it again, it only compares it with the
servo's register when the port opens (``BusServoCal.homing_offset``). ``range_min``/``range_max`` are the
joint ends the user reached (also the servo's Min/Max_Position_Limit). LeRobot reads a body joint in
degrees with its zero at the middle of that range, 4095 steps a turn::

    lerobot_deg = (steps - (range_min + range_max) / 2) * 360 / 4095      (drive_mode ignored)

and feeds those degrees straight into the arm's URDF as joint angles. The arm says how a URDF angle is an
armctl angle (``Arm.urdf_map``: armctl = offset + sign * URDF), so for each joint::

    steps = mid + (4095/360) * sign * (armctl_deg - offset_deg)
    -> zero_steps = mid - sign * (4095/360) * offset_deg, steps_per_deg = 4095/360, direction = sign

and armctl reads exactly LeRobot's angle. The wrist roll (the arm's ``Arm.roll``, the SO-101's ``wrist_roll``)
is a joint like the others; LeRobot gives it the whole turn 0..4095 as its range (it is never swept), so its
zero is that middle and its range the joint's limits in steps. The gripper is LeRobot's 0..100 % (0 closed at
range_min, 100 open at range_max; drive_mode 1 the other way round) laid onto the arm's closed..open angles. Motors that
are no joint of the arm (the SO-101's wrist roll when the sidecar holds it) become ``hold:`` entries at LeRobot's
0 (URDF angle of the arm's held joint, if it names one).

The legacy layout (before LeRobot's hardware API redesign, PR #777, June 2025: ``.cache/calibration/<robot>/
main_follower.json``) is one object of parallel lists ``homing_offset``, ``drive_mode``, ``start_pos``,
``end_pos``, ``calib_mode`` (DEGREE | LINEAR), ``motor_names``; the offset was applied in software::

    legacy_deg = (s * steps + homing_offset) * 180 / 2048,  s = -1 if drive_mode else 1
    gripper % = (steps - start_pos) / (end_pos - start_pos) * 100

Its zero was LeRobot's "zero position" (every joint 0: the arm straight out, level), which is armctl's
zero; the directions are ``Arm.urdf_map``'s signs whatever ``drive_mode`` says (it only turned the old degrees
round; an assumption a note says to check) and the ranges from the arm's joint limits (none were recorded).

Where LeRobot keeps them: ``$HF_LEROBOT_CALIBRATION``, else ``$HF_LEROBOT_HOME/calibration``, else
``$HF_HOME/lerobot/calibration`` (``~/.cache/huggingface/lerobot/calibration``), under
``robots/so_follower/`` (LeRobot >= 0.4.3), ``robots/so101_follower/``, ``robots/so100_follower/``, then the
leaders' ``teleoperators/so_leader/``, ``so101_leader/``, ``so100_leader/``.
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass
from pathlib import Path

from armctl.calibration.lerobot_robots import SO, bus_protocol, check_homing, check_kind, lerobot_robot
from armctl.calibration.servo import (
    STEPS_PER_TURN,
    BusServoCal,
    Calibration,
    HeldServo,
    find_calibration,
    load_calibration,
    whole_turn_refusal,
)
from armctl.core import limits
from armctl.errors import ConfigError
from armctl.model.servos import PROTOCOLS

KEYS = ("id", "drive_mode", "homing_offset", "range_min", "range_max")
LEGACY_KEYS = ("homing_offset", "drive_mode", "start_pos", "end_pos", "calib_mode", "motor_names")
LEROBOT_STEPS_PER_DEG = 4095 / 360.0  # LeRobot's degrees: 4095 steps a turn (motors_bus.py)
LEGACY_STEPS_PER_DEG = 2048 / 180.0  # legacy: half a turn is 2048 steps
GRIPPER = "gripper"
PREFIX = "lerobot:"
#: Where under LeRobot's calibration folder an SO arm's files are, in the order they are searched (a Koch's:
#: ``armctl.calibration.lerobot_robots``).
SUBDIRS = SO.subdirs
HOMING_MAX = max(p.homing_max for p in PROTOCOLS.values())  # checked against the arm's bus in from_lerobot


@dataclass(frozen=True)
class Motor:
    """One motor of a LeRobot calibration file (steps). ``legacy``: from the list layout (offset in software,
    ``range_min``/``range_max`` are its start_pos/end_pos, None when not recorded)."""

    name: str
    id: int
    drive_mode: int
    homing_offset: int
    range_min: float | None
    range_max: float | None
    legacy: bool = False
    linear: bool = False  # legacy calib_mode LINEAR (a 0..100 % motor)


# --- reading -------------------------------------------------------------------------------------------------


def is_lerobot_file(path: str | Path) -> bool:
    """True if ``path`` names a JSON file (LeRobot's calibrations are JSON, armctl's YAML)."""
    return Path(path).suffix.lower() == ".json"


def _int(value, where: str, path: Path, *, lo: float = -math.inf, hi: float = math.inf) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ConfigError(f"{where}: expected a number, found {json.dumps(value)}", path=path)
    if value != int(value) or not lo <= value <= hi:
        span = "..".join(str(int(v)) if math.isfinite(v) else f"{v:g}" for v in (lo, hi))
        raise ConfigError(f"{where}: expected a whole number in {span}, found {value}", path=path)
    return int(value)


def read_lerobot_file(path: str | Path) -> dict[str, Motor]:
    """The motors of a LeRobot calibration JSON (either layout), by name. ConfigError (one line, exit 2) for a
    file that cannot be read or is not a LeRobot calibration."""
    path = Path(path)
    text = limits.read_utf8(path, what="LeRobot calibration")
    limits.json_depth_ok(text, path=path)  # JSON nested 100k deep: one line, not a RecursionError
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        line = getattr(exc, "lineno", None)
        raise ConfigError(f"not valid JSON ({getattr(exc, 'msg', exc)})", path=path, line=line) from None
    if not isinstance(data, dict) or not data:
        raise ConfigError("not a LeRobot calibration: expected a JSON object of motors", path=path)
    if "motor_names" in data:
        return _read_legacy(data, path)
    motors = {}
    for name, entry in data.items():
        if not isinstance(entry, dict):
            raise ConfigError(
                f"not a LeRobot calibration: motor {name!r} is {json.dumps(entry)[:40]}, expected an object with "
                f"{', '.join(KEYS)}",
                path=path,
            )
        missing = [k for k in KEYS if k not in entry]
        extra = [k for k in entry if k not in KEYS]
        if missing or extra:
            what = f"lacks {', '.join(missing)}" if missing else f"has unknown key(s) {', '.join(extra)}"
            raise ConfigError(f"not a LeRobot calibration: motor {name!r} {what} (keys: {', '.join(KEYS)})", path=path)
        lo = _int(entry["range_min"], f"{name}.range_min", path, lo=0, hi=STEPS_PER_TURN - 1)
        hi = _int(entry["range_max"], f"{name}.range_max", path, lo=0, hi=STEPS_PER_TURN - 1)
        if hi <= lo:
            raise ConfigError(f"{name}: range_max {hi} is not above range_min {lo}", path=path)
        motors[name] = Motor(
            name=name,
            id=_int(entry["id"], f"{name}.id", path, lo=0, hi=252),
            drive_mode=_int(entry["drive_mode"], f"{name}.drive_mode", path, lo=0, hi=1),
            homing_offset=_int(entry["homing_offset"], f"{name}.homing_offset", path, lo=-HOMING_MAX, hi=HOMING_MAX),
            range_min=lo,
            range_max=hi,
        )
    return motors


def _read_legacy(data: dict, path: Path) -> dict[str, Motor]:
    missing = [k for k in LEGACY_KEYS if k not in data]
    if missing:
        raise ConfigError(f"legacy LeRobot calibration lacks {', '.join(missing)}", path=path)
    names = data["motor_names"]
    if not isinstance(names, list) or not names or not all(isinstance(n, str) for n in names):
        raise ConfigError("legacy LeRobot calibration: motor_names must be a list of names", path=path)
    for key in LEGACY_KEYS:
        if not isinstance(data[key], list) or len(data[key]) != len(names):
            raise ConfigError(f"legacy LeRobot calibration: {key} must list one value per motor name", path=path)
    motors = {}
    for k, name in enumerate(names):
        mode = data["calib_mode"][k]
        if mode not in ("DEGREE", "LINEAR"):
            raise ConfigError(f"legacy LeRobot calibration: {name}: calib_mode {mode!r} (DEGREE or LINEAR)", path=path)
        start, end = data["start_pos"][k], data["end_pos"][k]
        linear = mode == "LINEAR"
        if linear:
            start = _int(start, f"start_pos of {name}", path, lo=0, hi=STEPS_PER_TURN - 1)
            end = _int(end, f"end_pos of {name}", path, lo=0, hi=STEPS_PER_TURN - 1)
            if start == end:
                raise ConfigError(f"legacy LeRobot calibration: {name}: start_pos equals end_pos", path=path)
        motors[name] = Motor(
            name=name,
            id=k + 1,  # the legacy file names no ids: LeRobot's SO arms number the motors in this order
            drive_mode=1 if _int(data["drive_mode"][k], f"drive_mode of {name}", path, lo=-1, hi=1) else 0,
            homing_offset=_int(data["homing_offset"][k], f"homing_offset of {name}", path, lo=-32767, hi=32767),
            range_min=start if linear else None,
            range_max=end if linear else None,
            legacy=True,
            linear=linear,
        )
    return motors


# --- where LeRobot keeps them ------------------------------------------------------------------------------


def lerobot_calibration_root() -> Path:
    """LeRobot's calibration folder: ``$HF_LEROBOT_CALIBRATION``, else ``$HF_LEROBOT_HOME/calibration``, else
    ``$HF_HOME/lerobot/calibration`` (``HF_HOME`` default ``~/.cache/huggingface``)."""
    own = os.environ.get("HF_LEROBOT_CALIBRATION")
    if own:
        return Path(own).expanduser()
    home = os.environ.get("HF_LEROBOT_HOME")
    if home:
        return Path(home).expanduser() / "calibration"
    hf = os.environ.get("HF_HOME")
    base = Path(hf).expanduser() if hf else Path.home() / ".cache" / "huggingface"
    return base / "lerobot" / "calibration"


def lerobot_ids(subdirs: tuple = SUBDIRS) -> dict[str, list[str]]:
    """The calibration ids LeRobot has saved under ``subdirs`` (default: the SO arms'): {subdir: [ids]}."""
    root = lerobot_calibration_root()
    found = {}
    for sub in subdirs:
        folder = root / sub
        ids = sorted(p.stem for p in folder.glob("*.json")) if folder.is_dir() else []
        if ids:
            found[sub] = ids
    return found


def find_lerobot_calibration(calibration_id: str, subdirs: tuple = SUBDIRS) -> Path:
    """``<id>.json`` in LeRobot's calibration folder (the first of ``subdirs``, default the SO arms', that has it).
    ConfigError naming where it looked and listing the ids found otherwise."""
    if not calibration_id or "/" in calibration_id or calibration_id in (".", ".."):
        raise ConfigError(f"lerobot:{calibration_id}: expected lerobot:ID, the id you gave LeRobot (--robot.id)")
    root = lerobot_calibration_root()
    for sub in subdirs:
        candidate = root / sub / f"{calibration_id}.json"
        if candidate.is_file():
            return candidate
    found = lerobot_ids(subdirs)
    listed = "; ".join(f"{', '.join(ids)} (in {sub})" for sub, ids in found.items()) or "none"
    raise ConfigError(
        f"no LeRobot calibration {calibration_id!r} under {root} ({', '.join(s + '/' for s in subdirs[:2])}...); "
        f"ids found: {listed}"
    )


def _looks_like_lerobot(path: Path) -> bool:
    """True if ``path`` holds a JSON object shaped like LeRobot's calibration (either layout), whatever its name."""
    try:
        text = limits.read_utf8(path)
        limits.json_depth_ok(text)
        data = json.loads(text)
    except (ConfigError, ValueError):
        return False
    if not isinstance(data, dict) or not data or "version" in data:
        return False
    return "motor_names" in data or all(isinstance(v, dict) and "homing_offset" in v for v in data.values())


def resolve(spec: str | Path, subdirs: tuple = SUBDIRS) -> Path | None:
    """The LeRobot file ``spec`` means (``lerobot:ID``, looked for under ``subdirs``, or a ``.json`` path), else None
    (an armctl YAML)."""
    text = str(spec)
    if text.startswith(PREFIX):
        return find_lerobot_calibration(text[len(PREFIX) :], subdirs)
    if is_lerobot_file(text):
        return Path(text)
    return None


# --- LeRobot -> armctl ------------------------------------------------------------------------------------


def from_lerobot(motors: dict[str, Motor], arm, source: str | Path) -> tuple[Calibration, list[str]]:
    """The armctl calibration a LeRobot calibration means on ``arm`` (an ``armctl.model.arm.Arm`` derived from the
    URDF LeRobot uses: ``arm.urdf_map``), and notes for the user. ConfigError for a file of another robot."""
    path = Path(str(source))
    wanted, notes = _check_robot(motors, arm, path)
    legacy = any(m.legacy for m in motors.values())
    full_turn = lerobot_robot(arm).full_turn  # a Koch's pan and roll: recorded 0..4095, never swept
    joints = []
    for k, (name, offset_rad, sign) in enumerate(arm.urdf_map):
        m = motors[name]
        if m.linear:
            raise ConfigError(f"motor {name!r} is calibrated LINEAR (0..100 %), a joint needs DEGREE", path=path)
        if legacy:
            joints.append(_legacy_joint(m, name, sign, (arm.q_min[k], arm.q_max[k]), path, k == arm.roll_index))
        elif (k == arm.roll_index or name in full_turn) and _whole_turn(m):
            joints.append(_roll_joint(m, name, sign, (arm.q_min[k], arm.q_max[k])))
        else:
            joints.append(_joint(m, name, math.degrees(offset_rad), sign, path))
    gripper = None
    if arm.gripper is not None:
        if legacy and not motors[GRIPPER].linear:
            raise ConfigError("legacy calibration: the gripper must be calibrated LINEAR (0..100 %)", path=path)
        gripper = _gripper(motors[GRIPPER], arm, path)
    held = _held(motors, wanted, arm)
    if legacy:
        notes.append(
            f"{path}: a legacy LeRobot calibration (before June 2025): ids assumed 1..{len(motors)} in its order, "
            "zero = LeRobot's 'zero position' (arm straight out, level), directions as the URDF's, ranges from the "
            "arm's limits; check 'armctl status' against the arm before moving it, or calibrate again"
        )
    cal = Calibration(
        arm=arm.name, joints=tuple(joints), gripper=gripper, source=str(path), held=tuple(held), version=1
    )
    return cal, notes


def _check_robot(motors: dict[str, Motor], arm, path: Path) -> tuple[list[str], list[str]]:
    """The motors ``arm`` needs from the file (joints in URDF order, then the gripper), and notes; ConfigError for an
    arm not derived from a URDF or a file of another robot."""
    urdf_map = getattr(arm, "urdf_map", None)
    if not urdf_map:
        raise ConfigError(
            f"arm {arm.name!r} is not derived from a URDF, so LeRobot's angles (URDF joint angles) mean nothing "
            "on it: use --arm so101 or --arm FILE.urdf",
            path=path,
        )
    kind = path.parent.name
    check_kind(arm, path)
    if lerobot_robot(arm) is not SO and any(m.legacy for m in motors.values()):
        raise ConfigError(
            f"a legacy LeRobot calibration (before June 2025): its zero is not arm {arm.name!r}'s URDF zero; "
            "calibrate again (LeRobot >= 0.3, or armctl calibrate)",
            path=path,
        )
    for m in motors.values():
        if not m.legacy:  # a legacy offset was applied in software, not held by the servo
            check_homing(arm, m.name, m.homing_offset, path)
    wanted = [entry[0] for entry in urdf_map] + ([GRIPPER] if arm.gripper is not None else [])
    absent = [n for n in wanted if n not in motors]
    if absent:
        raise ConfigError(
            f"a calibration of another robot? it has motors {', '.join(motors)}, arm {arm.name!r} needs "
            f"{', '.join(wanted)} ({', '.join(absent)} missing)",
            path=path,
        )
    notes = []
    if kind.startswith("so100_") and arm.name == "so101" and path.parent.parent.name in ("robots", "teleoperators"):
        notes.append(
            f"{path}: LeRobot saved this for an SO-100 ({kind}), but arm 'so101' has the SO-101's links; for an "
            "SO-100 give --arm with SO-ARM100's Simulation/SO100 URDF (and a sidecar), or tool points will be off"
        )
    return wanted, notes


def _joint(m: Motor, name: str, offset_deg: float, sign: float, path: Path) -> BusServoCal:
    """A joint's servo from LeRobot's newer files: the middle of the range is the URDF's zero, ``offset_deg`` away."""
    why = whole_turn_refusal(name, m.id, m.range_min, m.range_max)
    if why is not None:
        raise ConfigError(why, path=path)
    mid = (m.range_min + m.range_max) / 2.0
    zero = mid - sign * LEROBOT_STEPS_PER_DEG * offset_deg
    return BusServoCal(
        name=name,
        id=m.id,
        zero_steps=zero,
        steps_per_deg=LEROBOT_STEPS_PER_DEG,
        direction=int(sign),
        min_steps=float(m.range_min),
        max_steps=float(m.range_max),
        homing_offset=m.homing_offset,
    )


def _whole_turn(m: Motor) -> bool:
    return m.range_min <= 0 and m.range_max >= STEPS_PER_TURN - 1


def _roll_joint(m: Motor, name: str, sign: float, limits_rad) -> BusServoCal:
    """The wrist roll's servo: LeRobot gives it the whole turn 0..4095 (it sweeps every joint but the roll), so its
    zero, the URDF's, is the middle (where the roll stood when the offset was set) and its range the joint's
    limits in steps."""
    zero = (m.range_min + m.range_max) / 2.0
    ends = sorted(zero + sign * LEROBOT_STEPS_PER_DEG * math.degrees(a) for a in limits_rad)
    lo, hi = max(float(m.range_min), math.ceil(ends[0])), min(float(m.range_max), math.floor(ends[1]))
    return BusServoCal(name, m.id, zero, LEROBOT_STEPS_PER_DEG, int(sign), lo, hi, homing_offset=m.homing_offset)


def _legacy_joint(m: Motor, name: str, sign: float, limits_rad, path: Path, roll: bool = False) -> BusServoCal:
    """A joint's servo from a legacy file; its range is the arm's joint limits ``limits_rad`` (low, high). A wrist
    ``roll``'s zero is taken within the turn (its legacy degrees were whole turns off: -360 is 0)."""
    # legacy: steps = s * (legacy_deg * 2048/180 - homing_offset), so legacy_deg is 0 (the zero pose, shared
    # with armctl) at steps = -s * homing_offset. The direction is the URDF's, as in LeRobot's newer files:
    # drive_mode only turned LeRobot's old degrees round (and was set inconsistently, lerobot#930, #1130);
    # the servos turn as they are mounted, and a steps_follow_urdf arm refuses any other direction.
    s = -1 if m.drive_mode else 1
    zero = -s * m.homing_offset
    if roll:
        zero %= STEPS_PER_TURN
    direction = int(sign)
    ends = sorted(zero + direction * LEGACY_STEPS_PER_DEG * math.degrees(a) for a in limits_rad)
    lo, hi = max(0.0, ends[0]), min(STEPS_PER_TURN - 1.0, ends[1])
    if hi <= lo:
        raise ConfigError(f"legacy calibration of {name}: its zero ({zero:g} steps) leaves 0..4095", path=path)
    return BusServoCal(name, m.id, zero, LEGACY_STEPS_PER_DEG, direction, lo, hi)


def _held(motors: dict[str, Motor], wanted: list[str], arm) -> list[HeldServo]:
    """The motors that are no joint of the arm, held where the URDF's sidecar puts them (``held_deg``, else 0)."""
    held = []
    held_deg = getattr(getattr(arm, "urdf", None), "held_deg", {}) or {}
    for name, m in motors.items():
        if name in wanted:
            continue
        urdf_deg = float(held_deg.get(name, 0.0))
        if m.legacy:
            position = -(-1 if m.drive_mode else 1) * m.homing_offset + urdf_deg * LEGACY_STEPS_PER_DEG
        else:
            position = (m.range_min + m.range_max) / 2.0 + urdf_deg * LEROBOT_STEPS_PER_DEG
        position %= STEPS_PER_TURN
        held.append(HeldServo(name=name, id=m.id, position_steps=position, homing_offset=_eeprom(m)))
    return held


def _eeprom(m: Motor) -> int | None:
    return None if m.legacy else m.homing_offset


def _gripper(m: Motor, arm, path: Path) -> BusServoCal:
    """LeRobot's 0..100 % (0 closed at range_min, 100 open at range_max; drive_mode 1: reversed, except in legacy
    files and on Dynamixels, whose Drive_Mode turns the servo's own counting round) onto the arm's closed..open
    angles."""
    closed, opened = math.degrees(arm.gripper.closed_rad), math.degrees(arm.gripper.open_rad)
    span_deg = opened - closed
    if abs(span_deg) < 1e-9:
        raise ConfigError(f"arm {arm.name!r}: the gripper's open and closed angles are equal", path=path)
    lo, hi = float(m.range_min), float(m.range_max)
    why = whole_turn_refusal(GRIPPER, m.id, lo, hi)
    if why is not None:
        raise ConfigError(why, path=path)
    # legacy LINEAR motors ignored drive_mode: 0 % at start_pos, 100 % at end_pos (either way round)
    reverse = m.drive_mode and not m.legacy and not bus_protocol(arm).drive_mode_in_servo
    at_closed, at_open = (hi, lo) if reverse else (lo, hi)
    per_deg = (at_open - at_closed) / span_deg  # signed steps per gripper degree
    zero = at_closed - per_deg * closed
    return BusServoCal(
        name=GRIPPER,
        id=m.id,
        zero_steps=zero,
        steps_per_deg=abs(per_deg),
        direction=1 if per_deg > 0 else -1,
        min_steps=min(lo, hi),
        max_steps=max(lo, hi),
        homing_offset=_eeprom(m),
    )


# --- LeRobot's values -----------------------------------------------------------------------------------------

#: LeRobot's MotorNormMode: the SO arms' body joints DEGREES (``use_degrees``, >= 0.4.4) or RANGE_M100_100 (before),
#: the gripper RANGE_0_100
DEGREES, RANGE_0_100, RANGE_M100_100 = "degrees", "range_0_100", "range_m100_100"


def lerobot_degrees(raw: float, mid: float) -> float:
    """LeRobot's degrees of raw position ``raw`` (steps) about ``mid``: ``(raw - mid) * 360 / 4095``."""
    return (float(raw) - float(mid)) / LEROBOT_STEPS_PER_DEG


def normalize(raw: float, mode: str, range_min: float, range_max: float, drive_mode: int = 0) -> float:
    """The value LeRobot reads for raw position ``raw`` (steps) of a motor calibrated ``range_min..range_max`` in
    ``mode`` (its ``MotorsBus._normalize``; Feetech buses apply ``drive_mode``):

    - DEGREES: ``(raw - mid) * 360 / 4095``, ``mid = (range_min + range_max) / 2``; not clamped, drive_mode ignored;
    - RANGE_0_100: raw clamped to the range, ``(raw - min) / (max - min) * 100``; drive_mode 1: 100 minus that;
    - RANGE_M100_100: clamped, ``(raw - min) / (max - min) * 200 - 100``; drive_mode 1: negated.
    """
    lo, hi = float(range_min), float(range_max)
    if hi == lo:
        raise ValueError(f"range_min and range_max are both {lo:g}")
    if mode == DEGREES:
        return lerobot_degrees(raw, (lo + hi) / 2.0)
    frac = (min(max(float(raw), lo), hi) - lo) / (hi - lo)
    if mode == RANGE_0_100:
        return 100.0 - frac * 100.0 if drive_mode else frac * 100.0
    if mode == RANGE_M100_100:
        value = frac * 200.0 - 100.0
        return -value if drive_mode else value
    raise ValueError(f"unknown LeRobot norm mode {mode!r}")


def gripper_drive_mode(gripper: BusServoCal, closed_steps: float) -> int:
    """LeRobot's ``drive_mode`` of a gripper calibrated ``gripper`` whose closed end is at ``closed_steps``: 1 when
    that is ``max_steps`` (so ``_gripper`` lays out a LeRobot gripper of drive_mode 1, closed at range_max), else 0
    (closed at range_min). LeRobot's gripper then reads 0 closed, 100 open either way."""
    return 1 if abs(float(closed_steps) - gripper.hi) < abs(float(closed_steps) - gripper.lo) else 0


def open_calibration(spec: str | Path | None, arm) -> tuple[Calibration, Path, list[str]]:
    """The calibration ``spec`` names for ``arm`` and where it came from, and notes for the user: ``lerobot:ID``
    or a LeRobot ``.json`` (converted, see the module docstring), an armctl YAML, or None (armctl's places,
    ``armctl.calibration.servo.find_calibration``). ConfigError (exit 2) for anything that is not one."""
    path = None if spec is None else resolve(spec, lerobot_robot(arm).subdirs)
    if path is None:
        found = find_calibration(arm.name, spec, arm_ref=getattr(arm, "ref", None))
        try:
            return load_calibration(found), found, []
        except ConfigError as exc:
            if not _looks_like_lerobot(found):
                raise
            # LeRobot's JSON under another name (my_arm.yaml, a download without .json): said, not guessed at
            raise ConfigError(
                f"{exc} - it holds LeRobot's calibration: give it a .json name, or use lerobot:ID"
            ) from None
    cal, notes = from_lerobot(read_lerobot_file(path), arm, path)
    return cal, path, notes
