"""Servo calibration: joint angle <-> servo value, per servo.

Two kinds of servo, one linear mapping. A hobby (PWM) servo is driven by a pulse width in
microseconds: per servo the board channel (our protocol) and Arduino pin (Firmata), the pulse at joint
angle 0, microseconds per degree, direction (+1/-1) and the safe min/max pulse::

    pulse_us = zero_us + direction * us_per_deg * degrees(angle_rad)

A serial bus servo (Feetech STS/SCS) is driven by a goal position in steps (4096 a turn) and reports
where it is: per servo its bus ``id``, ``zero_steps``, ``steps_per_deg``, ``direction`` and the safe
``min_steps``/``max_steps``. Code above the calibration uses the unit-free names every servo has:
``value(angle)``, ``angle_rad(value)``, ``lo``/``hi``, ``per_deg``, ``resolution`` and ``unit``; the YAML
keys name their unit. Angles in radians inside, degrees in the YAML file.

A bus servo that is no joint of the arm model (the SO-101's wrist roll: it turns the jaws about the tool
point, which stays where it is) can be held at one position: ``hold: [{name, id, position_steps,
speed_deg_s}]``. The backend brings it there at ``speed_deg_s`` when the arm first moves and keeps it there.

Files are strict YAML, saved atomically with the previous version kept as ``<file>.bak``. Where
they are looked up and saved: ``find_calibration`` and ``save_path_for``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from armctl.core.config import Section, load_yaml_file, load_yaml_text
from armctl.core.paths import PRESET_CALIBRATION_DIR, atomic_write, user_calibration_dir
from armctl.errors import ConfigError, PulseLimitError

FORMAT_VERSION = 1
PULSE_RANGE_US = (500.0, 2500.0)
DEFAULT_PWM_HZ = 50.0
MAX_PWM_CHANNEL = 63  # four PCA9685 boards (our firmware and Firmata boards check their own counts)
STEPS_PER_TURN = 4096
STEP_RANGE = (0.0, float(STEPS_PER_TURN - 1))


class _Linear:
    """The mapping every servo kind shares: value = zero + direction * per_deg * degrees(angle)."""

    zero: float
    per_deg: float
    direction: int
    lo: float
    hi: float

    def value(self, angle_rad):
        """Servo value(s) (``unit``) for joint angle(s) ``angle_rad`` (rad); no limit check."""
        return self.zero + self.direction * self.per_deg * np.degrees(np.asarray(angle_rad, dtype=float))

    def angle_rad(self, value):
        """Joint angle(s) (rad) for servo value(s) ``value`` (``unit``)."""
        return np.radians((np.asarray(value, dtype=float) - self.zero) / (self.direction * self.per_deg))

    def angle_range_rad(self) -> tuple[float, float]:
        """Joint angles (rad) reachable inside lo..hi, low to high."""
        a, b = float(self.angle_rad(self.lo)), float(self.angle_rad(self.hi))
        return (min(a, b), max(a, b))


@dataclass(frozen=True)
class ServoCal(_Linear):
    """A PWM servo's mapping. Pulses in us; ``us_per_deg`` > 0; ``direction`` +1 or -1."""

    name: str
    channel: int
    pin: int
    zero_us: float
    us_per_deg: float
    direction: int
    min_us: float
    max_us: float

    unit = "us"
    resolution = 0.5  # the board's pulse step (our firmware: 0.5 us ticks)
    full_range = PULSE_RANGE_US  # what any hobby servo takes
    per_deg_range = (1.0, 50.0)  # what a hobby servo's us/deg can be

    zero = property(lambda self: self.zero_us)
    per_deg = property(lambda self: self.us_per_deg)
    lo = property(lambda self: self.min_us)
    hi = property(lambda self: self.max_us)

    def pulse_us(self, angle_rad):
        """Pulse width (us) for joint angle(s) ``angle_rad`` (rad); no limit check (``value``)."""
        return self.value(angle_rad)


@dataclass(frozen=True)
class BusServoCal(_Linear):
    """A bus servo's mapping. Positions in steps (4096 a turn); ``steps_per_deg`` > 0; ``direction`` +1 or -1.
    ``channel`` is the servo's address on the bus: its ``id``."""

    name: str
    id: int
    zero_steps: float
    steps_per_deg: float
    direction: int
    min_steps: float
    max_steps: float
    #: the servo's Homing_Offset register (EEPROM) this calibration was made with (LeRobot's), checked when the
    #: port opens; None: not checked. Its positions already carry it: it is never added again.
    homing_offset: int | None = None

    unit = "steps"
    resolution = 1.0
    full_range = STEP_RANGE
    per_deg_range = (1.0, 100.0)  # 4096 a turn: 11.4 steps/deg; an SCS servo's 1024 over 300 deg: 3.4

    zero = property(lambda self: self.zero_steps)
    per_deg = property(lambda self: self.steps_per_deg)
    lo = property(lambda self: self.min_steps)
    hi = property(lambda self: self.max_steps)
    channel = property(lambda self: self.id)


def whole_turn_refusal(name: str, servo_id: int, lo: float, hi: float) -> str | None:
    """Why a bus servo calibrated over ``lo``..``hi`` steps cannot follow its joint, or None if it can. A servo's
    position loop works in its own frame (present = encoder - homing offset, 0..4095) and never turns across that
    frame's 0/4095 (docs/feetech.md, "Homing offset and the seam"): a range from 0 to 4095 is a joint whose travel
    crosses it (LeRobot records such a range when a joint is swept across the seam, lerobot#3586), which the
    servo can only follow the long way round."""
    if lo > STEP_RANGE[0] or hi < STEP_RANGE[1]:
        return None
    return (
        f"{name} (servo {servo_id}): range {lo:g}..{hi:g} steps is the whole turn, so the joint's travel crosses "
        f"the servo's 0/4095, which its position loop never passes (it would turn the long way round): calibrate "
        "it again with the joint held in the middle of its travel when the offset is set"
    )


@dataclass(frozen=True)
class HeldServo:
    """A bus servo kept at one position (no joint of the arm model): ``position_steps`` (0..4095), reached at
    no more than ``speed_deg_s`` from wherever it stands."""

    name: str
    id: int
    position_steps: float
    speed_deg_s: float = 60.0
    homing_offset: int | None = None  # as BusServoCal.homing_offset

    steps_per_deg = STEPS_PER_TURN / 360.0
    per_deg = steps_per_deg
    channel = property(lambda self: self.id)

    @property
    def speed_steps_s(self) -> int:
        """The goal speed register's value (steps/s)."""
        return max(1, round(self.speed_deg_s * self.steps_per_deg))


@dataclass(frozen=True)
class Calibration:
    """Every servo of one arm: ``joints`` in joint order, optional ``gripper``, and bus servos ``held`` at one
    position (not joints of the model)."""

    arm: str
    joints: tuple[ServoCal | BusServoCal, ...]
    gripper: ServoCal | BusServoCal | None = None
    version: int = FORMAT_VERSION
    source: str = field(default="<code>")
    held: tuple[HeldServo, ...] = ()
    #: PWM servos' pulse frequency (Hz), for boards that set it (the PCA9685); hobby servos take 50
    pwm_hz: float = DEFAULT_PWM_HZ
    #: Why some ranges are narrower than the file's on the board in use ("" if none is: ``narrowed``), said
    #: with every value refused for it.
    limited_by: str = ""

    @property
    def servos(self) -> tuple[ServoCal | BusServoCal, ...]:
        """Joint servos then the gripper (if any)."""
        return self.joints + ((self.gripper,) if self.gripper is not None else ())

    @property
    def channel_count(self) -> int:
        """Channels a board needs: highest channel used + 1."""
        return 1 + max(s.channel for s in self.servos)

    @property
    def unit(self) -> str:
        """What the servos are driven in: "us" (PWM pulse widths) or "steps" (bus servo positions)."""
        return self.joints[0].unit

    def joints_to_values(self, q_rad, *, check: bool = True) -> np.ndarray:
        """Servo values (``unit``), shape (..., n), for joint angles ``q_rad`` (rad), shape (..., n).

        With ``check`` a value outside a servo's safe range raises PulseLimitError naming the joint, the
        angle and the value.
        """
        q = np.asarray(q_rad, dtype=float)
        if q.shape[-1] != len(self.joints):
            raise ValueError(f"expected {len(self.joints)} joint angles, got shape {q.shape}")
        values = np.stack([s.value(q[..., i]) for i, s in enumerate(self.joints)], axis=-1)
        if check:
            self.check_values(values, q)
        return values

    def values_to_joints(self, values) -> np.ndarray:
        """Joint angles (rad), shape (..., n), for servo values (``unit``), shape (..., n)."""
        values = np.asarray(values, dtype=float)
        return np.stack([s.angle_rad(values[..., i]) for i, s in enumerate(self.joints)], axis=-1)

    def outside(self, values, *, tol: float = 1e-6) -> np.ndarray:
        """Per row of joint values (..., n): True where any is outside its servo's safe range (or not finite)."""
        values = np.asarray(values, dtype=float).reshape(-1, len(self.joints))
        lo = np.array([s.lo for s in self.joints])
        hi = np.array([s.hi for s in self.joints])
        return np.any((values < lo - tol) | (values > hi + tol) | ~np.isfinite(values), axis=1)

    def outside_gripper(self, values, *, tol: float = 1e-6) -> np.ndarray:
        """True where a gripper servo value is outside its safe range (False everywhere with no gripper)."""
        v = np.atleast_1d(np.asarray(values, dtype=float))
        g = self.gripper
        return np.zeros(v.shape, dtype=bool) if g is None else (v < g.lo - tol) | (v > g.hi + tol)

    def joint_limits_rad(self) -> tuple[np.ndarray, np.ndarray]:
        """(low, high) per joint (rad): the angles whose values lie inside each servo's calibrated range."""
        ranges = np.array([s.angle_range_rad() for s in self.joints], dtype=float)
        return ranges[:, 0], ranges[:, 1]

    def check_values(self, values, q_rad=None, *, tol: float = 1e-6) -> None:
        """Raise PulseLimitError if any joint value in ``values`` (..., n) is outside its safe range."""
        values = np.asarray(values, dtype=float).reshape(-1, len(self.joints))
        for i, s in enumerate(self.joints):
            bad = (values[:, i] < s.lo - tol) | (values[:, i] > s.hi + tol) | ~np.isfinite(values[:, i])
            if np.any(bad):
                k = int(np.argmax(bad))
                angle = (
                    ""
                    if q_rad is None
                    else (f" at {math.degrees(float(np.asarray(q_rad).reshape(-1, len(self.joints))[k, i])):.1f} deg")
                )
                what = "pulse" if s.unit == "us" else "position"
                raise PulseLimitError(
                    f"joint {i + 1} ({s.name}){angle} needs a {values[k, i]:.1f} {s.unit} {what}, outside the "
                    f"calibrated {s.lo:g}..{s.hi:g} {s.unit} ({self._where()}); pick another target or recalibrate",
                    joint=i,
                    q=None if q_rad is None else np.asarray(q_rad),
                )

    def check_escape(self, servos, values, *, tol: float = 1e-6) -> bool:
        """Servo values ``values`` (N, c) of a motion for ``servos`` (c of this calibration's): True if the motion
        starts with a servo outside its calibrated range (an arm left there: by hand, a crash, another program)
        and only ever brings each such servo back toward its range, never further out (once inside, never out
        again; the others never leave theirs), as a keep-out zone is left; PulseLimitError if it does not.
        False if every servo starts inside (the caller's checks apply)."""
        values = np.asarray(values, dtype=float).reshape(-1, len(servos))
        lo = np.array([s.lo for s in servos])
        hi = np.array([s.hi for s in servos])
        excess = np.maximum(np.maximum(lo - values, values - hi), 0.0)
        if not np.any(excess[0] > tol):
            return False
        bad = ~np.isfinite(values) | np.vstack([np.zeros((1, len(servos)), bool), np.diff(excess, axis=0) > tol])
        if np.any(bad):
            k, i = (int(v) for v in np.argwhere(bad)[0])
            s, v0 = servos[i], float(values[0, i])
            where = (
                f"stands at {v0:g} {s.unit}, outside its calibrated {s.lo:g}..{s.hi:g}"
                if excess[0, i] > tol
                else f"is inside its calibrated {s.lo:g}..{s.hi:g} {s.unit}"
            )
            raise PulseLimitError(
                f"the arm is outside its calibrated range: {s.name} (servo {s.channel}) {where}, and this move "
                f"takes it to {values[k, i]:g}, further out; from outside, only a move that brings each servo back "
                "toward its range is allowed: home (or open/close the gripper) first, or turn the torque off and "
                f"move it in by hand (calibration {self.source})",
                joint=i if i < len(self.joints) else None,
            )
        return True

    def gripper_value(self, angle_rad, *, check: bool = True):
        """Gripper servo value(s) (``unit``) for gripper angle(s) (rad)."""
        g = self.gripper
        if g is None:
            raise ConfigError("this calibration has no gripper servo", path=self.source)
        v = g.value(angle_rad)
        if check and np.any(self.outside_gripper(v)):
            raise PulseLimitError(
                f"gripper needs a value outside the calibrated {g.lo:g}..{g.hi:g} {g.unit} ({self._where()})"
            )
        return v

    def _where(self) -> str:
        """Where the ranges come from, for a refusal: the file, and what narrowed them on this board."""
        return f"calibration {self.source}" + (
            f"; narrowed on this board: {self.limited_by}" if self.limited_by else ""
        )

    def check_arm(self, arm) -> None:
        """ConfigError unless this calibration was made for ``arm`` (its ``arm:`` key names it) and has one
        servo per joint (and a gripper if the arm has one)."""
        if self.arm != arm.name:
            raise ConfigError(
                f"this calibration is for arm {self.arm!r}, not {arm.name!r}: its servos may be mounted otherwise; "
                f"pass the calibration made for {arm.name!r} (or change its arm: key if the servos are the same)",
                path=self.source,
                key="arm",
            )
        if len(self.joints) != arm.n:
            raise ConfigError(
                f"calibration has {len(self.joints)} joint servos but arm {arm.name!r} has {arm.n} joints",
                path=self.source,
            )
        if arm.gripper is not None and self.gripper is None:
            raise ConfigError(
                f"arm {arm.name!r} has a gripper but the calibration has no 'gripper' servo", path=self.source
            )
        self._check_urdf_directions(arm)

    def _check_urdf_directions(self, arm) -> None:
        """On an arm whose bus servos count steps the way its URDF's joints turn (the sidecar's
        ``steps_follow_urdf``: the SO-101 under LeRobot's convention), every direction is that joint's URDF
        sign; a calibration that differs (the so101 example's old shoulder_pan direction 1, which mirrored the
        base) is refused, not silently flipped."""
        derived = getattr(arm, "urdf", None)
        if self.unit != "steps" or derived is None or not getattr(derived, "steps_follow_urdf", False):
            return
        for i, (s, (urdf_joint, _, sign)) in enumerate(zip(self.joints, arm.urdf_map)):
            if s.direction != sign:
                turn = "mirrors the base" if arm.has_base and i == 0 else "turns that joint the wrong way"
                raise ConfigError(
                    f"{s.name} direction {s.direction:g} {turn}: {arm.name}'s servos count steps the way its URDF "
                    f"joint {urdf_joint} turns (LeRobot's convention), so its direction is {sign:g} (armctl's "
                    f"example had 1 for the pan before the URDF fix): set 'direction: {sign:g}' (README, "
                    f"'SO-101: heights and the base's direction')",
                    path=self.source,
                    key=f"joints[{i}].direction",
                )


# --- YAML --------------------------------------------------------------------------------------------------

_SERVO_KEYS = ("channel", "pin", "zero_us", "us_per_deg", "direction", "min_us", "max_us")
_BUS_SERVO_KEYS = ("id", "zero_steps", "steps_per_deg", "direction", "min_steps", "max_steps")
MAX_BUS_ID = 252  # 253 and 254 are reserved, 0xFE is broadcast


def _direction(sec: Section) -> int:
    direction = sec.number("direction")
    if direction not in (1.0, -1.0):
        raise sec.error("direction", f"expected 1 or -1, found {direction:g}")
    return int(direction)


def _parse_bus_servo(sec: Section, default_name: str) -> BusServoCal:
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
    )


def _homing_offset(sec: Section) -> int | None:
    if not sec.has("homing_offset"):
        return None
    offset = sec.number("homing_offset", lo=-2047, hi=2047)
    if offset != int(offset):
        raise sec.error("homing_offset", f"expected a whole number, found {offset:g}")
    return int(offset)


def _parse_servo(sec: Section, default_name: str) -> ServoCal | BusServoCal:
    if sec.has("zero_steps") or sec.has("id"):
        return _parse_bus_servo(sec, default_name)
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


def parse_calibration(data, path) -> Calibration:
    """Validate a parsed calibration YAML document."""
    top = Section(data, path=path)
    version = top.number("version")
    if version != FORMAT_VERSION:
        raise top.error(
            "version", f"unsupported calibration version {version:g} (this armctl reads version {FORMAT_VERSION})"
        )
    arm = top.string("arm")
    raw = top.items("joints")
    if len(raw) not in (2, 3, 4):
        raise top.error("joints", f"expected 2 to 4 joint servos (a base and 3 links at most), found {len(raw)}")
    joints = []
    for i, item in enumerate(raw):
        line = raw.item_lines[i] if hasattr(raw, "item_lines") else None
        joints.append(_parse_servo(Section(item, path=path, key=f"joints[{i}]", line=line), f"joint{i + 1}"))
    gripper = None
    g = top.section("gripper", required=False)
    if g is not None:
        gripper = _parse_servo(g, "gripper")
    held = []
    if top.has("hold"):
        raw_held = top.items("hold")
        for i, item in enumerate(raw_held):
            line = raw_held.item_lines[i] if hasattr(raw_held, "item_lines") else top.line_of("hold")
            held.append(_parse_held(Section(item, path=path, key=f"hold[{i}]", line=line), i))
    pwm_hz = top.number("pwm_hz", DEFAULT_PWM_HZ, lo=24.0, hi=1526.0)
    top.done()
    cal = Calibration(
        arm=arm,
        joints=tuple(joints),
        gripper=gripper,
        version=int(version),
        source=str(path),
        held=tuple(held),
        pwm_hz=pwm_hz,
    )
    units = {s.unit for s in cal.servos}
    if len(units) > 1:
        raise ConfigError("servos mix pulse widths (us) and bus positions (steps): one kind per arm", path=path)
    if held and cal.unit == "us":
        raise top.error(
            "hold", "only bus servos (id, steps) can be held at a position; a PWM servo not in the arm is not driven"
        )
    seen: dict[int, str] = {}
    what = "channel" if cal.unit == "us" else "id"
    for s in (*cal.servos, *cal.held):
        if s.channel in seen:
            raise ConfigError(f"servos {seen[s.channel]!r} and {s.name!r} share {what} {s.channel}", path=path)
        seen[s.channel] = s.name
    return cal


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
            f"max_steps: {exact(s.max_steps)}{offset}}}"
        )

    def fine(v: float) -> str:  # 12 digits: a mapping given exactly (ServoKit's 2000 us / 270 deg) keeps its ends
        return f"{v:.12g}"  # inside min..max when read back (6 digits put them up to 0.005 us outside)

    return (
        f"{{name: {s.name}, channel: {s.channel}, pin: {s.pin}, zero_us: {fine(s.zero_us)}, "
        f"us_per_deg: {fine(s.us_per_deg)}, direction: {s.direction}, min_us: {num(s.min_us)}, "
        f"max_us: {num(s.max_us)}}}"
    )


def to_yaml(cal: Calibration, *, comment: str = "") -> str:
    """The YAML text of a calibration (what ``save_calibration`` writes)."""
    lines = [f"# {c}" for c in comment.splitlines()] if comment else []
    if cal.unit == "us":
        lines.append("# pulse_us = zero_us + direction * us_per_deg * joint_angle_deg; min_us/max_us: safe range.")
    else:
        lines.append("# steps = zero_steps + direction * steps_per_deg * joint_angle_deg; min/max_steps: safe range.")
    lines += [f"version: {cal.version}", f"arm: {cal.arm}"]
    if cal.pwm_hz != DEFAULT_PWM_HZ:
        lines.append(f"pwm_hz: {cal.pwm_hz:g}  # pulse frequency on boards that set it (PCA9685)")
    lines.append("joints:")
    lines += [f"  - {_servo_yaml(s)}" for s in cal.joints]
    if cal.gripper is not None:
        lines.append(f"gripper: {_servo_yaml(cal.gripper)}")
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


def narrowed(cal: Calibration, value_range, *, why: str) -> tuple[Calibration, list[str]]:
    """``cal`` with each servo's range cut to ``value_range(servo)`` -> (lo, hi), what a board can send it, and one
    line per servo cut: its range and joint angles there against the file's, and ``why``. ConfigError naming the
    servo if none of its range is left. The file's mapping is kept: only targets past the cut are refused
    (``limited_by`` says why)."""
    servos, notes = [], []
    for s in cal.servos:
        lo, hi = value_range(s)
        if lo <= s.lo + 1e-9 and s.hi <= hi + 1e-9:
            servos.append(s)
            continue
        new_lo, new_hi = max(s.lo, lo), min(s.hi, hi)
        u = s.unit
        if new_hi <= new_lo:
            raise ConfigError(
                f"{s.name}: its calibrated {s.lo:g}..{s.hi:g} {u} lies wholly outside the {lo:g}..{hi:g} {u} this "
                f"board can send, so none of it is left: {why}. Recalibrate it on this board",
                path=cal.source,
            )
        keys = ("min_us", "max_us") if u == "us" else ("min_steps", "max_steps")
        cut = replace(s, **dict(zip(keys, (float(new_lo), float(new_hi)))))
        (a0, a1), (b0, b1) = (tuple(math.degrees(v) for v in x.angle_range_rad()) for x in (s, cut))
        notes.append(
            f"{s.name}: {new_lo:g}..{new_hi:g} {u} on this board, not the calibrated {s.lo:g}..{s.hi:g} {u}, so "
            f"{b0:.1f}..{b1:.1f} deg, not {a0:.1f}..{a1:.1f} deg: {why}"
        )
        servos.append(cut)
    if not notes:
        return cal, []
    n = len(cal.joints)
    out = replace(cal, joints=tuple(servos[:n]), gripper=servos[n] if cal.gripper is not None else None, limited_by=why)
    return out, notes


def within_calibration(arm, cal: Calibration):
    """``arm`` with each joint's limits cut to the angles its servo's calibrated range gives
    (``Calibration.joint_limits_rad``): poses chosen on it need no pulse the calibration refuses. ``arm`` itself
    when the calibration cuts nothing."""
    lo, hi = cal.joint_limits_rad()
    q_min, q_max = np.maximum(arm.q_min, lo), np.minimum(arm.q_max, hi)
    if np.array_equal(q_min, arm.q_min) and np.array_equal(q_max, arm.q_max):
        return arm
    return replace(arm, q_min=q_min, q_max=q_max)


SERVOKIT_ACTUATION_RANGE_DEG = 180.0  # adafruit_motor.servo.Servo's default actuation_range


def servokit_servo(
    servo: ServoCal,
    min_us: float,
    max_us: float,
    *,
    actuation_range_deg: float | None = SERVOKIT_ACTUATION_RANGE_DEG,
    zero_at_deg: float | None = None,
    reverse: bool = False,
    channel: int | None = None,
) -> ServoCal:
    """``servo`` mapped as Adafruit's ServoKit maps it after ``set_pulse_width_range(min_us, max_us)`` with
    ``actuation_range``: its angle a (0..actuation_range deg) gives min + (max - min) * a / actuation_range us
    (adafruit_motor.servo). The joint's zero is ServoKit's ``zero_at_deg`` (default: the middle of the range) and
    the joint angle grows with ServoKit's angle (``reverse``: against it); the safe range is min..max (ServoKit
    refuses angles outside 0..actuation_range). ``channel``: ``kit.servo[N]``'s N (the PCA9685 output).
    BadInputError naming the value for what no hobby servo mapping can be."""
    from armctl.errors import BadInputError

    rng = SERVOKIT_ACTUATION_RANGE_DEG if actuation_range_deg is None else float(actuation_range_deg)
    if not (math.isfinite(rng) and 0 < rng <= 360):
        raise BadInputError(f"--actuation-range {actuation_range_deg:g}: a servo's range of motion is 0 < DEG <= 360")
    lo_ok, hi_ok = PULSE_RANGE_US
    for what, v in (("MIN_US", min_us), ("MAX_US", max_us)):
        if not (math.isfinite(v) and lo_ok <= v <= hi_ok):
            raise BadInputError(f"--from-servokit {what} {v:g}: a hobby servo pulse is {lo_ok:g}..{hi_ok:g} us")
    if abs(max_us - min_us) < 1.0:
        raise BadInputError(f"--from-servokit: MIN_US {min_us:g} and MAX_US {max_us:g} must differ")
    zero_at = rng / 2 if zero_at_deg is None else float(zero_at_deg)
    if not (math.isfinite(zero_at) and 0 <= zero_at <= rng):
        raise BadInputError(f"--zero-at {zero_at:g}: ServoKit's angle at the joint's zero must be in 0..{rng:g} deg")
    per_deg = abs(max_us - min_us) / rng
    lo_pd, hi_pd = ServoCal.per_deg_range
    if not lo_pd <= per_deg <= hi_pd:
        raise BadInputError(
            f"--from-servokit {min_us:g} {max_us:g} over {rng:g} deg is {per_deg:.3g} us/deg; a hobby servo's is "
            f"{lo_pd:g}..{hi_pd:g}"
        )
    direction = (1 if max_us > min_us else -1) * (-1 if reverse else 1)  # set_pulse_width_range(max, min) reverses
    return replace(
        servo,
        channel=servo.channel if channel is None else int(channel),
        zero_us=min_us + (max_us - min_us) * zero_at / rng,
        us_per_deg=per_deg,
        direction=direction,
        min_us=min(min_us, max_us),
        max_us=max(min_us, max_us),
    )


def with_servo(cal: Calibration, index: int, **changes) -> Calibration:
    """A copy of ``cal`` with joint ``index`` (or the gripper for index == len(joints)) changed."""
    if index == len(cal.joints):
        return replace(cal, gripper=replace(cal.gripper, **changes))
    joints = list(cal.joints)
    joints[index] = replace(joints[index], **changes)
    return replace(cal, joints=tuple(joints))
