"""Our calibration files: strict YAML parsed and validated (``parse_calibration``, ``load_calibration``), where they
are looked up (``find_calibration``) and saved (``save_path_for``), written atomically with the previous version
kept as ``<file>.bak`` (``to_yaml``, ``save_calibration``)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from armctl.calibration.maps import (
    DEFAULT_PWM_HZ,
    FORMAT_VERSION,
    MAX_PWM_CHANNEL,
    PULSE_RANGE_US,
    READ_VERSIONS,
    STEP_RANGE,
    STEPS_PER_TURN,
    ArmGeometry,
    BusServoCal,
    Calibration,
    HeldServo,
    ServoCal,
    whole_turn_refusal,
)
from armctl.core.config import Section, load_yaml_file, load_yaml_text
from armctl.core.paths import PRESET_CALIBRATION_DIR, atomic_write, user_calibration_dir
from armctl.errors import ConfigError

_SERVO_KEYS = ("channel", "pin", "zero_us", "us_per_deg", "direction", "min_us", "max_us")
_BUS_SERVO_KEYS = ("id", "zero_steps", "steps_per_deg", "direction", "min_steps", "max_steps")
MAX_BUS_ID = 252  # 253 and 254 are reserved, 0xFE is broadcast


def _direction(sec: Section) -> int:
    direction = sec.number("direction")
    if direction not in (1.0, -1.0):
        raise sec.error("direction", f"expected 1 or -1, found {direction:g}")
    return int(direction)


def _parse_bus_servo(sec: Section, default_name: str, version: int = 1) -> BusServoCal:
    name = sec.string("name", default_name)
    sid = sec.number("id", lo=0, hi=MAX_BUS_ID)
    if sid != int(sid):
        raise sec.error("id", f"expected a whole number, found {sid:g}")
    zero = sec.number("zero_steps", lo=-(2**15 - 1), hi=2**15 - 1)
    per_deg = sec.number("steps_per_deg", STEPS_PER_TURN / 360.0, lo=1.0, hi=1000.0)
    direction = _direction(sec)
    lo = sec.number("min_steps", lo=STEP_RANGE[0], hi=STEP_RANGE[1])
    hi = sec.number("max_steps", lo=STEP_RANGE[0], hi=STEP_RANGE[1])
    if hi <= lo:
        raise sec.error("max_steps", f"max_steps ({hi:g}) must be greater than min_steps ({lo:g})")
    why = whole_turn_refusal(name, int(sid), lo, hi)
    if why is not None:
        raise sec.error("max_steps", why)
    offset = _homing_offset(sec)
    extra = _v2_keys(sec, version)
    sec.done()
    return BusServoCal(
        name=name,
        id=int(sid),
        zero_steps=zero,
        steps_per_deg=per_deg,
        direction=direction,
        min_steps=lo,
        max_steps=hi,
        homing_offset=offset,
        **extra,
    )


def _v2_keys(sec: Section, version: int) -> dict:
    """A version 2 servo's optional ``curve_pct`` (the monotone bow, % of the angle range at mid-range) and
    ``backlash_deg``; a version 1 file has neither."""
    out = {}
    for key, lo, hi in (("curve_pct", -20.0, 20.0), ("backlash_deg", 0.0, 20.0)):
        if sec.has(key):
            if version < 2:
                raise sec.error(key, f"{key} needs calibration version 2 (the file says version {version:g})")
            out[key] = sec.number(key, lo=lo, hi=hi)
    return out


def _homing_offset(sec: Section) -> int | None:
    if not sec.has("homing_offset"):
        return None
    offset = sec.number("homing_offset", lo=-2047, hi=2047)
    if offset != int(offset):
        raise sec.error("homing_offset", f"expected a whole number, found {offset:g}")
    return int(offset)


def _parse_servo(sec: Section, default_name: str, version: int = 1) -> ServoCal | BusServoCal:
    if sec.has("zero_steps") or sec.has("id"):
        return _parse_bus_servo(sec, default_name, version)
    name = sec.string("name", default_name)
    channel = sec.number("channel", lo=0, hi=MAX_PWM_CHANNEL)
    pin = sec.number("pin", lo=0, hi=127)
    for key, v in (("channel", channel), ("pin", pin)):
        if v != int(v):
            raise sec.error(key, f"expected a whole number, found {v:g}")
    zero = sec.number("zero_us", lo=PULSE_RANGE_US[0], hi=PULSE_RANGE_US[1])
    per_deg = sec.number("us_per_deg", lo=1.0, hi=50.0)
    direction = _direction(sec)
    lo = sec.number("min_us", lo=PULSE_RANGE_US[0], hi=PULSE_RANGE_US[1])
    hi = sec.number("max_us", lo=PULSE_RANGE_US[0], hi=PULSE_RANGE_US[1])
    if hi <= lo:
        raise sec.error("max_us", f"max_us ({hi:g}) must be greater than min_us ({lo:g})")
    extra = _v2_keys(sec, version)
    sec.done()
    return ServoCal(
        name=name,
        channel=int(channel),
        pin=int(pin),
        zero_us=zero,
        us_per_deg=per_deg,
        direction=direction,
        min_us=lo,
        max_us=hi,
        **extra,
    )


def _parse_held(sec: Section, index: int) -> HeldServo:
    name = sec.string("name", f"held{index + 1}")
    sid = sec.number("id", lo=0, hi=MAX_BUS_ID)
    if sid != int(sid):
        raise sec.error("id", f"expected a whole number, found {sid:g}")
    position = sec.number("position_steps", lo=STEP_RANGE[0], hi=STEP_RANGE[1])
    speed = sec.number("speed_deg_s", HeldServo.speed_deg_s, lo=5.0, hi=360.0)  # slower reads as a stall
    offset = _homing_offset(sec)
    sec.done()
    return HeldServo(name=name, id=int(sid), position_steps=position, speed_deg_s=speed, homing_offset=offset)


def _parse_arm_key(top: Section, version: int) -> tuple[str, ArmGeometry | None]:
    """The ``arm:`` key: the arm's name, or (version 2) ``{name, links_m, base_offset_m}`` with the corrections a
    camera calibration measured."""
    if version < 2 or isinstance(top.raw("arm"), str):
        return top.string("arm"), None
    sec = top.section("arm")
    name = sec.string("name")
    links = sec.numbers("links_m", count=(2, 3))
    if not all(0.001 <= v <= 5.0 for v in links):
        raise sec.error("links_m", f"link lengths must lie in 0.001..5 m, found {links!r}")
    offset = sec.number("base_offset_m", lo=-2.0, hi=2.0) if sec.has("base_offset_m") else None
    sec.done()
    return name, ArmGeometry(tuple(links), offset)


def _parse_camera_keys(top: Section, version: int):
    """(version 2) ``camera_to_base``: the camera's frame in the base frame, 4 rows of 4 (a rotation and metres;
    the last row 0 0 0 1), and ``accuracy_map`` (``armctl.calibration.accuracymap``); None where absent."""
    from armctl.calibration.accuracymap import AccuracyMap

    out = []
    for key in ("camera_to_base", "accuracy_map"):
        if top.has(key) and version < 2:
            raise top.error(key, f"{key} needs calibration version 2 (the file says version {version:g})")
    T = None
    if top.has("camera_to_base"):
        rows = top.raw("camera_to_base")
        try:
            T = np.array(rows, dtype=float)
        except (TypeError, ValueError):
            T = None
        ok = T is not None and T.shape == (4, 4) and np.all(np.isfinite(T))
        ok = ok and np.allclose(T[3], [0, 0, 0, 1]) and np.allclose(T[:3, :3] @ T[:3, :3].T, np.eye(3), atol=1e-6)
        if not ok or np.linalg.det(T[:3, :3]) < 0:
            raise top.error("camera_to_base", "expected 4 rows of 4 numbers: a rotation and a translation (m), 0 0 0 1")
        T = tuple(tuple(float(v) for v in row) for row in T)
    out.append(T)
    amap = None
    if top.has("accuracy_map"):
        line = top.line_of("accuracy_map")
        amap = AccuracyMap.from_dict(top.raw("accuracy_map"), f"{top.path}:{line}: accuracy_map")
    out.append(amap)
    return out


def parse_calibration(data, path) -> Calibration:
    """Validate a parsed calibration YAML document."""
    top = Section(data, path=path)
    version = top.number("version")
    if version not in READ_VERSIONS:
        raise top.error(
            "version", f"unsupported calibration version {version:g} (this armctl reads versions 1 to {FORMAT_VERSION})"
        )
    version = int(version)
    arm, geometry = _parse_arm_key(top, version)
    raw = top.items("joints")
    if len(raw) not in (2, 3, 4, 5):
        raise top.error(
            "joints", f"expected 2 to 5 joint servos (a base, 3 links and a wrist roll at most), found {len(raw)}"
        )
    joints = []
    for i, item in enumerate(raw):
        line = raw.item_lines[i] if hasattr(raw, "item_lines") else None
        joints.append(_parse_servo(Section(item, path=path, key=f"joints[{i}]", line=line), f"joint{i + 1}", version))
    gripper = None
    g = top.section("gripper", required=False)
    if g is not None:
        gripper = _parse_servo(g, "gripper", version)
    held = []
    if top.has("hold"):
        raw_held = top.items("hold")
        for i, item in enumerate(raw_held):
            line = raw_held.item_lines[i] if hasattr(raw_held, "item_lines") else top.line_of("hold")
            held.append(_parse_held(Section(item, path=path, key=f"hold[{i}]", line=line), i))
    pwm_hz = top.number("pwm_hz", DEFAULT_PWM_HZ, lo=24.0, hi=1526.0)
    camera_to_base, amap = _parse_camera_keys(top, version)
    top.done()
    cal = Calibration(
        arm=arm,
        joints=tuple(joints),
        gripper=gripper,
        version=int(version),
        source=str(path),
        held=tuple(held),
        pwm_hz=pwm_hz,
        geometry=geometry,
        camera_to_base=camera_to_base,
        accuracy_map=amap,
    )
    units = {s.unit for s in cal.servos}
    if len(units) > 1:
        raise ConfigError("servos mix pulse widths (us) and bus positions (steps): one kind per arm", path=path)
    if held and cal.unit == "us":
        raise top.error(
            "hold", "only bus servos (id, steps) can be held at a position; a PWM servo not in the arm is not driven"
        )
    return cal  # two servos on one id, channel or pin: refused by Calibration itself


def load_calibration(path: str | Path) -> Calibration:
    """Load and validate a calibration file."""
    return parse_calibration(load_yaml_file(path), Path(path))


def calibration_places(arm_name: str, *, cwd: Path | None = None) -> list[Path]:
    """Where the calibration of ``arm_name`` is looked for, first match wins: ``./calibration/<arm>.yaml``,
    the user's calibration folder (``armctl.core.paths.user_calibration_dir``), the example shipped with the
    preset (inside the package)."""
    name = f"{arm_name}.yaml"
    return [(cwd or Path.cwd()) / "calibration" / name, user_calibration_dir() / name, PRESET_CALIBRATION_DIR / name]


def calibration_file(name_or_path: str | Path) -> Path:
    """The file a ``--calibration``/``--show`` argument names: a path, or the name of an example shipped with
    the presets (``mearm-pca9685``, with or without ``.yaml``) when no such file is here."""
    path = Path(name_or_path)
    try:
        if path.exists() or str(name_or_path) != path.name:
            return path
    except OSError:  # a folder we may not look in: reading the file says so, in one line
        return path
    stem = path.name[: -len(".yaml")] if path.name.endswith(".yaml") else path.name
    shipped = PRESET_CALIBRATION_DIR / f"{stem}.yaml"
    return shipped if shipped.is_file() else path


def find_calibration(
    arm_name: str, explicit: str | Path | None = None, *, cwd: Path | None = None, arm_ref: str | None = None
) -> Path:
    """The calibration file to use: ``explicit`` (a path, or the name of an example shipped with the presets,
    such as ``mearm-pca9685``), else the first of ``calibration_places`` that exists; ConfigError naming the
    places looked at otherwise (its hint names the arm as ``--arm`` takes it: ``arm_ref``, default the name)."""
    if explicit is not None:
        return calibration_file(explicit)
    places = calibration_places(arm_name, cwd=cwd)
    for candidate in places:
        try:
            if candidate.is_file():
                return candidate
        except OSError as exc:  # a folder we may not look in (Python raises EACCES from is_file)
            raise ConfigError(
                f"cannot look in this folder ({exc.strerror or exc}): give it read and search permission "
                "(chmod u+rx), or set ARMCTL_CONFIG_DIR to another folder",
                path=candidate.parent,
            ) from None
    raise ConfigError(
        f"no calibration for arm {arm_name!r}: looked for {', '.join(map(str, places))}; pass --calibration "
        f"FILE or run 'armctl --arm {arm_ref or arm_name} calibrate' (see docs/calibration.md for the format)"
    )


def is_shipped(path: str | Path) -> bool:
    """True if ``path`` is an example calibration shipped inside the package (never written to)."""
    try:
        return Path(path).resolve().is_relative_to(PRESET_CALIBRATION_DIR)
    except OSError:
        return False


def save_path_for(arm_name: str, loaded_from: str | Path) -> Path:
    """Where a new calibration of ``arm_name`` is saved by default: over the file it was loaded from,
    unless that is a shipped example or LeRobot's JSON, then in the user's calibration folder."""
    if is_shipped(loaded_from) or Path(loaded_from).suffix.lower() == ".json":
        return user_calibration_dir() / f"{arm_name}.yaml"
    return Path(loaded_from)


def _servo_yaml(s: ServoCal | BusServoCal) -> str:
    def num(v: float) -> str:
        return f"{v:.6g}"

    if isinstance(s, BusServoCal):  # exact: a position is a whole step, and 4096/360 has no short form

        def exact(v: float) -> str:
            text = repr(float(v))
            return text[:-2] if text.endswith(".0") else text

        offset = "" if s.homing_offset is None else f", homing_offset: {s.homing_offset}"
        return (
            f"{{name: {s.name}, id: {s.id}, zero_steps: {exact(s.zero_steps)}, steps_per_deg: "
            f"{exact(s.steps_per_deg)}, direction: {s.direction}, min_steps: {exact(s.min_steps)}, "
            f"max_steps: {exact(s.max_steps)}{offset}{_v2_yaml(s)}}}"
        )

    def fine(v: float) -> str:  # 12 digits: a mapping given exactly (ServoKit's 2000 us / 270 deg) keeps its ends
        return f"{v:.12g}"  # inside min..max when read back (6 digits put them up to 0.005 us outside)

    return (
        f"{{name: {s.name}, channel: {s.channel}, pin: {s.pin}, zero_us: {fine(s.zero_us)}, "
        f"us_per_deg: {fine(s.us_per_deg)}, direction: {s.direction}, min_us: {num(s.min_us)}, "
        f"max_us: {num(s.max_us)}{_v2_yaml(s)}}}"
    )


def _arm_yaml(cal: Calibration) -> str:
    """The ``arm:`` value: the name, or the name with the arm's corrections (version 2)."""
    g = cal.geometry
    if g is None:
        return cal.arm
    offset = "" if g.base_offset_m is None else f", base_offset_m: {g.base_offset_m:.6g}"
    return f"{{name: {cal.arm}, links_m: [{', '.join(f'{v:.6g}' for v in g.links_m)}]{offset}}}"


def _v2_yaml(s: ServoCal | BusServoCal) -> str:
    """A servo's version 2 keys (its curve and backlash) as ``, key: value`` text; "" when it has neither."""
    return (f", curve_pct: {s.curve_pct:.6g}" if s.curve_pct else "") + (
        f", backlash_deg: {s.backlash_deg:.4g}" if s.backlash_deg else ""
    )


def to_yaml(cal: Calibration, *, comment: str = "") -> str:
    """The YAML text of a calibration (what ``save_calibration`` writes)."""
    lines = [f"# {c}" for c in comment.splitlines()] if comment else []
    if cal.unit == "us":
        lines.append("# pulse_us = zero_us + direction * us_per_deg * joint_angle_deg; min_us/max_us: safe range.")
    else:
        lines.append("# steps = zero_steps + direction * steps_per_deg * joint_angle_deg; min/max_steps: safe range.")
    lines += [f"version: {max(cal.version, 2 if cal.needs_v2 else 1)}", f"arm: {_arm_yaml(cal)}"]
    if cal.pwm_hz != DEFAULT_PWM_HZ:
        lines.append(f"pwm_hz: {cal.pwm_hz:g}  # pulse frequency on boards that set it (PCA9685)")
    lines.append("joints:")
    lines += [f"  - {_servo_yaml(s)}" for s in cal.joints]
    if cal.gripper is not None:
        lines.append(f"gripper: {_servo_yaml(cal.gripper)}")
    if cal.camera_to_base is not None:
        rows = ", ".join("[" + ", ".join(f"{v:.9g}" for v in row) + "]" for row in cal.camera_to_base)
        lines.append(f"camera_to_base: [{rows}]  # the camera's frame in the base frame (armctl calibrate --camera)")
    if cal.accuracy_map is not None:
        lines.append(f"accuracy_map: {json.dumps(cal.accuracy_map.to_dict())}  # armctl camera check --save")
    if cal.held:
        lines.append("# held at position_steps (not a joint of the arm), reached at no more than speed_deg_s:")
        lines.append("hold:")
        lines += [
            f"  - {{name: {h.name}, id: {h.id}, position_steps: {h.position_steps:.6g}, "
            f"speed_deg_s: {h.speed_deg_s:.6g}"
            + ("" if h.homing_offset is None else f", homing_offset: {h.homing_offset}")
            + "}"
            for h in cal.held
        ]
    return "\n".join(lines) + "\n"


def save_calibration(cal: Calibration, path: str | Path, *, comment: str = "") -> Path:
    """Write ``cal`` atomically (``armctl.core.paths.atomic_write``), keeping the old file as ``<file>.bak``.
    A crash at any point leaves either the old or the new file, never half of one. OSError if the
    folder cannot be written."""
    path = Path(path)
    text = to_yaml(cal, comment=comment)
    parse_calibration(load_yaml_text(text, path), path)  # never write what we could not read back
    if path.exists():  # copy, not move: the old file stays in place until the final rename
        atomic_write(path.with_name(path.name + ".bak"), path.read_bytes())
    return atomic_write(path, text)
