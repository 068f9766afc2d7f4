"""The servo maps: joint angle <-> servo value, per servo (``ServoCal``: a PWM servo in microseconds;
``BusServoCal``: a bus servo in steps), bus servos held at one position (``HeldServo``) and every servo of one
arm (``Calibration``: values for joint angles and back, the range checks). ``armctl.calibration.servo`` says how
the mapping goes and re-exports these names."""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field

import numpy as np

from armctl.errors import ConfigError, PulseLimitError

FORMAT_VERSION = 2  # the newest file version this armctl reads (and writes where a file needs it)
READ_VERSIONS = (1, 2)  # 2 adds a servo's curve_pct and backlash_deg, and the arm's corrections (``ArmGeometry``)
PULSE_RANGE_US = (500.0, 2500.0)
DEFAULT_PWM_HZ = 50.0
MAX_PWM_CHANNEL = 63  # four PCA9685 boards (our firmware and Firmata boards check their own counts)
STEPS_PER_TURN = 4096
STEP_RANGE = (0.0, float(STEPS_PER_TURN - 1))


class _Linear:
    """The mapping every servo kind shares: value = zero + direction * per_deg * degrees(angle), bent by an
    optional monotone ``curve_pct`` (version 2 files): the angle of a value gains curve_pct % of the servo's
    angle range times 4 s (1 - s), s the value's place in lo..hi (0 at both ends, the most at mid-range; none
    outside). Without a curve the mapping is exactly the line."""

    zero: float
    per_deg: float
    direction: int
    lo: float
    hi: float
    curve_pct: float = 0.0

    def value(self, angle_rad):
        """Servo value(s) (``unit``) for joint angle(s) ``angle_rad`` (rad); no limit check."""
        if self.curve_pct:
            return self._curved_value(np.degrees(np.asarray(angle_rad, dtype=float)))
        return self.zero + self.direction * self.per_deg * np.degrees(np.asarray(angle_rad, dtype=float))

    def angle_rad(self, value):
        """Joint angle(s) (rad) for servo value(s) ``value`` (``unit``)."""
        value = np.asarray(value, dtype=float)
        line = (value - self.zero) / (self.direction * self.per_deg)
        if self.curve_pct:
            s = np.clip((value - self.lo) / (self.hi - self.lo), 0.0, 1.0)
            line = line + self.curve_pct / 100.0 * (self.hi - self.lo) / self.per_deg * 4.0 * s * (1.0 - s)
        return np.radians(line)

    def _curved_value(self, deg):
        """The value whose curved angle is ``deg``: the line's outside lo..hi, else the root of the quadratic in s
        (monotone while |curve_pct| < 25)."""
        line = self.zero + self.direction * self.per_deg * deg
        width = self.hi - self.lo
        k = 4.0 * self.curve_pct / 100.0
        a0 = self.direction * (self.lo - self.zero) / self.per_deg  # the angle (deg) at lo
        c = (deg - a0) / (width / self.per_deg)  # k s^2 - (direction + k) s + c = 0
        b = self.direction + k
        root = 2.0 * c / (b + np.sign(b) * np.sqrt(np.maximum(b * b - 4.0 * k * c, 0.0)))
        inside = (line - self.lo) * (line - self.hi) < 0
        return np.where(inside, self.lo + root * width, line)

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
    curve_pct: float = 0.0  # the pulse-to-angle bow (version 2): % of the angle range at mid-pulse
    backlash_deg: float = 0.0  # the gears' play (version 2), as the camera calibration measured it

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
    curve_pct: float = 0.0  # as ServoCal's
    backlash_deg: float = 0.0

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
class ArmGeometry:
    """What a camera calibration measured of the arm itself: ``links_m`` (its link lengths) and ``base_offset_m``
    (None: the arm file's), applied by ``Calibration.corrected_arm`` where the robot opens arm and calibration."""

    links_m: tuple[float, ...]
    base_offset_m: float | None = None


@dataclass(frozen=True)
class Calibration:
    """Every servo of one arm: ``joints`` in joint order, optional ``gripper``, and bus servos ``held`` at one
    position (not joints of the model)."""

    arm: str
    joints: tuple[ServoCal | BusServoCal, ...]
    gripper: ServoCal | BusServoCal | None = None
    version: int = 1
    source: str = field(default="<code>")
    held: tuple[HeldServo, ...] = ()
    #: PWM servos' pulse frequency (Hz), for boards that set it (the PCA9685); hobby servos take 50
    pwm_hz: float = DEFAULT_PWM_HZ
    #: Why some ranges are narrower than the file's on the board in use ("" if none is: ``narrowed``), said
    #: with every value refused for it.
    limited_by: str = ""
    #: corrections to the arm file's lengths (version 2: ``arm: {name, links_m, base_offset_m}``), None if none
    geometry: ArmGeometry | None = None
    #: where the camera that calibrated the arm stands: its frame in the base frame (4x4, m; version 2), or None
    camera_to_base: tuple | None = None
    #: the tool's measured errors over a grid (``armctl.calibration.accuracymap.AccuracyMap``; version 2), or None
    accuracy_map: object | None = None

    def __post_init__(self):
        """Every calibration (armctl's YAML, LeRobot's JSON, one made in code) passes here: ConfigError naming the
        file, both servos and the address when two servos (joints, gripper, held) share a bus id, or a PWM
        channel or pin."""
        seen: dict[tuple[str, int], str] = {}
        for s in (*self.servos, *self.held):
            for what in ("channel", "pin") if getattr(s, "unit", "steps") == "us" else ("id",):
                key = (what, getattr(s, what))
                if key in seen:
                    path = None if self.source == "<code>" else self.source
                    raise ConfigError(f"servos {seen[key]!r} and {s.name!r} share {what} {key[1]}", path=path)
                seen[key] = s.name

    @property
    def needs_v2(self) -> bool:
        """True if writing this calibration takes file version 2 (a curve, a backlash, arm corrections, a camera's
        place or an accuracy map)."""
        extra = (self.geometry, self.camera_to_base, self.accuracy_map)
        return any(v is not None for v in extra) or any(s.curve_pct or s.backlash_deg for s in self.servos)

    def with_accuracy_map(self, amap) -> Calibration:
        """This calibration with the accuracy map ``amap`` (targets then go through it)."""
        return dataclasses.replace(self, accuracy_map=amap)

    def corrected_arm(self, arm):
        """``arm`` with this calibration's corrections to its lengths (and base offset) applied, and its accuracy
        map as the arm's ``target_map``; ``arm`` itself when there are none."""
        g = self.geometry
        if self.accuracy_map is not None and arm.target_map is not self.accuracy_map:
            arm = dataclasses.replace(arm, target_map=self.accuracy_map)
        if g is None:
            return arm
        if len(g.links_m) != arm.n_links:
            raise ConfigError(
                f"the calibration corrects {len(g.links_m)} link lengths, arm {arm.name!r} has {arm.n_links}",
                path=self.source,
                key="arm.links_m",
            )
        changes = {"links_m": np.array(g.links_m, dtype=float)}
        if g.base_offset_m is not None and arm.has_base:
            changes["base_offset_m"] = float(g.base_offset_m)
        return dataclasses.replace(arm, **changes)

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
            self._check_held_roll(arm)
            raise ConfigError(
                f"calibration has {len(self.joints)} joint servos but arm {arm.name!r} has {arm.n} joints",
                path=self.source,
            )
        if arm.gripper is not None and self.gripper is None:
            raise ConfigError(
                f"arm {arm.name!r} has a gripper but the calibration has no 'gripper' servo", path=self.source
            )
        self._check_urdf_directions(arm)

    def _check_held_roll(self, arm) -> None:
        """A calibration that holds the servo of the arm's wrist roll (made when the roll was held): one line on
        what to change."""
        roll = getattr(arm, "roll", None)
        held = next((h for h in self.held if roll is not None and h.name == roll.name), None)
        if held is None or len(self.joints) != arm.n - 1:
            return
        raise ConfigError(
            f"calibration holds {held.name} (servo {held.id}, hold:) but arm {arm.name!r} drives it as its last "
            f"joint: move it under joints: (zero_steps {held.position_steps:g} if the roll stood at its zero), or "
            "calibrate again",
            path=self.source,
        )

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
