"""Servo calibration: joint angle <-> servo pulse width, per servo.

For each servo (one per joint, plus the gripper): the board channel (our
protocol) and Arduino pin (Firmata), the pulse at joint angle 0, microseconds
per degree, direction (+1/-1) and the safe min/max pulse. Pulses are in
microseconds (float); angles in radians inside, degrees in the YAML file:

    pulse_us = zero_us + direction * us_per_deg * degrees(angle_rad)

Files are strict YAML, saved atomically with the previous version kept as ``<file>.bak``. Where
they are looked up and saved: ``find_calibration`` and ``save_path_for``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from .config import Section, load_yaml_file, load_yaml_text
from .errors import ConfigError, PulseLimitError
from .paths import PRESET_CALIBRATION_DIR, atomic_write, user_calibration_dir

FORMAT_VERSION = 1
PULSE_RANGE_US = (500.0, 2500.0)


@dataclass(frozen=True)
class ServoCal:
    """One servo's mapping. Pulses in us; ``us_per_deg`` > 0; ``direction`` +1 or -1."""

    name: str
    channel: int
    pin: int
    zero_us: float
    us_per_deg: float
    direction: int
    min_us: float
    max_us: float

    def pulse_us(self, angle_rad):
        """Pulse width (us) for joint angle(s) ``angle_rad`` (rad); no limit check."""
        return self.zero_us + self.direction * self.us_per_deg * np.degrees(np.asarray(angle_rad, dtype=float))

    def angle_rad(self, pulse_us):
        """Joint angle(s) (rad) for pulse width(s) ``pulse_us`` (us)."""
        return np.radians((np.asarray(pulse_us, dtype=float) - self.zero_us) / (self.direction * self.us_per_deg))

    def angle_range_rad(self) -> tuple[float, float]:
        """Joint angles (rad) reachable inside min_us..max_us, low to high."""
        a, b = float(self.angle_rad(self.min_us)), float(self.angle_rad(self.max_us))
        return (min(a, b), max(a, b))


@dataclass(frozen=True)
class Calibration:
    """Every servo of one arm: ``joints`` in joint order, optional ``gripper``."""

    arm: str
    joints: tuple[ServoCal, ...]
    gripper: ServoCal | None = None
    version: int = FORMAT_VERSION
    source: str = field(default="<code>")

    @property
    def servos(self) -> tuple[ServoCal, ...]:
        """Joint servos then the gripper (if any)."""
        return self.joints + ((self.gripper,) if self.gripper is not None else ())

    @property
    def channel_count(self) -> int:
        """Channels a board needs: highest channel used + 1."""
        return 1 + max(s.channel for s in self.servos)

    def joints_to_us(self, q_rad, *, check: bool = True) -> np.ndarray:
        """Pulses (us), shape (..., n), for joint angles ``q_rad`` (rad), shape (..., n).

        With ``check`` a pulse outside a servo's min/max raises PulseLimitError
        naming the joint, the angle and the pulse.
        """
        q = np.asarray(q_rad, dtype=float)
        if q.shape[-1] != len(self.joints):
            raise ValueError(f"expected {len(self.joints)} joint angles, got shape {q.shape}")
        us = np.stack([s.pulse_us(q[..., i]) for i, s in enumerate(self.joints)], axis=-1)
        if check:
            self.check_us(us, q)
        return us

    def us_to_joints(self, us) -> np.ndarray:
        """Joint angles (rad), shape (..., n), for pulses ``us`` (us), shape (..., n)."""
        us = np.asarray(us, dtype=float)
        return np.stack([s.angle_rad(us[..., i]) for i, s in enumerate(self.joints)], axis=-1)

    def check_us(self, us, q_rad=None, *, tol_us: float = 1e-6) -> None:
        """Raise PulseLimitError if any joint pulse in ``us`` (..., n) is outside its min/max."""
        us = np.asarray(us, dtype=float).reshape(-1, len(self.joints))
        for i, s in enumerate(self.joints):
            bad = (us[:, i] < s.min_us - tol_us) | (us[:, i] > s.max_us + tol_us) | ~np.isfinite(us[:, i])
            if np.any(bad):
                k = int(np.argmax(bad))
                angle = (
                    ""
                    if q_rad is None
                    else (f" at {math.degrees(float(np.asarray(q_rad).reshape(-1, len(self.joints))[k, i])):.1f} deg")
                )
                raise PulseLimitError(
                    f"joint {i + 1} ({s.name}){angle} needs a {us[k, i]:.1f} us pulse, outside the calibrated "
                    f"{s.min_us:g}..{s.max_us:g} us (calibration {self.source}); pick another target or "
                    "recalibrate",
                    joint=i,
                    q=None if q_rad is None else np.asarray(q_rad),
                )

    def gripper_to_us(self, angle_rad, *, check: bool = True):
        """Gripper pulse (us) for gripper angle(s) (rad)."""
        if self.gripper is None:
            raise ConfigError("this calibration has no gripper servo", path=self.source)
        us = self.gripper.pulse_us(angle_rad)
        if check and np.any((us < self.gripper.min_us - 1e-6) | (us > self.gripper.max_us + 1e-6)):
            raise PulseLimitError(
                f"gripper needs a pulse outside the calibrated {self.gripper.min_us:g}.."
                f"{self.gripper.max_us:g} us (calibration {self.source})"
            )
        return us

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


# --- YAML --------------------------------------------------------------------------------------------------

_SERVO_KEYS = ("channel", "pin", "zero_us", "us_per_deg", "direction", "min_us", "max_us")


def _parse_servo(sec: Section, default_name: str) -> ServoCal:
    name = sec.string("name", default_name)
    channel = sec.number("channel", lo=0, hi=15)
    pin = sec.number("pin", lo=0, hi=127)
    for key, v in (("channel", channel), ("pin", pin)):
        if v != int(v):
            raise sec.error(key, f"expected a whole number, found {v:g}")
    zero = sec.number("zero_us", lo=PULSE_RANGE_US[0], hi=PULSE_RANGE_US[1])
    per_deg = sec.number("us_per_deg", lo=1.0, hi=50.0)
    direction = sec.number("direction")
    if direction not in (1.0, -1.0):
        raise sec.error("direction", f"expected 1 or -1, found {direction:g}")
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
        direction=int(direction),
        min_us=lo,
        max_us=hi,
    )


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
    if len(raw) not in (2, 3):
        raise top.error("joints", f"expected 2 or 3 joint servos, found {len(raw)}")
    joints = []
    for i, item in enumerate(raw):
        line = raw.item_lines[i] if hasattr(raw, "item_lines") else None
        joints.append(_parse_servo(Section(item, path=path, key=f"joints[{i}]", line=line), f"joint{i + 1}"))
    gripper = None
    g = top.section("gripper", required=False)
    if g is not None:
        gripper = _parse_servo(g, "gripper")
    top.done()
    cal = Calibration(arm=arm, joints=tuple(joints), gripper=gripper, version=int(version), source=str(path))
    seen: dict[int, str] = {}
    for s in cal.servos:
        if s.channel in seen:
            raise ConfigError(f"servos {seen[s.channel]!r} and {s.name!r} share channel {s.channel}", path=path)
        seen[s.channel] = s.name
    return cal


def load_calibration(path: str | Path) -> Calibration:
    """Load and validate a calibration file."""
    return parse_calibration(load_yaml_file(path), Path(path))


def calibration_places(arm_name: str, *, cwd: Path | None = None) -> list[Path]:
    """Where the calibration of ``arm_name`` is looked for, first match wins: ``./calibration/<arm>.yaml``,
    the user's calibration folder (``armctl.paths.user_calibration_dir``), the example shipped with the
    preset (inside the package)."""
    name = f"{arm_name}.yaml"
    return [(cwd or Path.cwd()) / "calibration" / name, user_calibration_dir() / name, PRESET_CALIBRATION_DIR / name]


def find_calibration(arm_name: str, explicit: str | Path | None = None, *, cwd: Path | None = None) -> Path:
    """The calibration file to use: ``explicit``, else the first of ``calibration_places`` that exists;
    ConfigError naming the places looked at otherwise."""
    if explicit is not None:
        return Path(explicit)
    places = calibration_places(arm_name, cwd=cwd)
    for candidate in places:
        if candidate.is_file():
            return candidate
    raise ConfigError(
        f"no calibration for arm {arm_name!r}: looked for {', '.join(map(str, places))}; pass --calibration "
        f"FILE or run 'armctl --arm {arm_name} calibrate' (see docs/calibration.md for the format)"
    )


def is_shipped(path: str | Path) -> bool:
    """True if ``path`` is an example calibration shipped inside the package (never written to)."""
    try:
        return Path(path).resolve().is_relative_to(PRESET_CALIBRATION_DIR)
    except OSError:
        return False


def save_path_for(arm_name: str, loaded_from: str | Path) -> Path:
    """Where a new calibration of ``arm_name`` is saved by default: over the file it was loaded from,
    unless that is a shipped example, then in the user's calibration folder."""
    if is_shipped(loaded_from):
        return user_calibration_dir() / f"{arm_name}.yaml"
    return Path(loaded_from)


def _servo_yaml(s: ServoCal) -> str:
    def num(v: float) -> str:
        return f"{v:.6g}"

    return (
        f"{{name: {s.name}, channel: {s.channel}, pin: {s.pin}, zero_us: {num(s.zero_us)}, "
        f"us_per_deg: {num(s.us_per_deg)}, direction: {s.direction}, min_us: {num(s.min_us)}, "
        f"max_us: {num(s.max_us)}}}"
    )


def to_yaml(cal: Calibration, *, comment: str = "") -> str:
    """The YAML text of a calibration (what ``save_calibration`` writes)."""
    lines = [f"# {c}" for c in comment.splitlines()] if comment else []
    lines.append("# pulse_us = zero_us + direction * us_per_deg * joint_angle_deg; min_us/max_us: safe range.")
    lines += [f"version: {cal.version}", f"arm: {cal.arm}", "joints:"]
    lines += [f"  - {_servo_yaml(s)}" for s in cal.joints]
    if cal.gripper is not None:
        lines.append(f"gripper: {_servo_yaml(cal.gripper)}")
    return "\n".join(lines) + "\n"


def save_calibration(cal: Calibration, path: str | Path, *, comment: str = "") -> Path:
    """Write ``cal`` atomically (``armctl.paths.atomic_write``), keeping the old file as ``<file>.bak``.
    A crash at any point leaves either the old or the new file, never half of one. OSError if the
    folder cannot be written."""
    path = Path(path)
    text = to_yaml(cal, comment=comment)
    parse_calibration(load_yaml_text(text, path), path)  # never write what we could not read back
    if path.exists():  # copy, not move: the old file stays in place until the final rename
        atomic_write(path.with_name(path.name + ".bak"), path.read_bytes())
    return atomic_write(path, text)


def with_servo(cal: Calibration, index: int, **changes) -> Calibration:
    """A copy of ``cal`` with joint ``index`` (or the gripper for index == len(joints)) changed."""
    if index == len(cal.joints):
        return replace(cal, gripper=replace(cal.gripper, **changes))
    joints = list(cal.joints)
    joints[index] = replace(joints[index], **changes)
    return replace(cal, joints=tuple(joints))
