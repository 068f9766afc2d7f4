"""The simulated arm's truth: how the real arm differs from what armctl believes, which the simulators
(``armsim://``, ``feetechsim://``, ``pca9685sim://``, option ``truth=FILE.yaml``) physically apply.

A truth file (every key optional; joints by the arm's ``joint_names``, never the gripper)::

    zero_offset_deg: {base: 2.5, shoulder: -4.0, elbow: 3.0}   # true angle = believed angle + offset
    links_mm: [81.5, 78.2]          # the true link lengths (as many as the arm's links_m)
    curve_pct: {shoulder: 2.0}      # pulse-to-angle bow: % of the joint's range off a line at mid-pulse
    backlash_deg: {shoulder: 1.2}   # play in the joint's gears
    base_offset_mm: 12.0            # the true shoulder offset from the base axis (arms with a base)
    parts:                          # parts lying on the table (base frame), the world as it really is
      - {marker: 3, x_mm: 150, y_mm: -40, yaw_deg: 30, size_mm: 30, mass_g: 20}

How a servo's true angle is made (``TrueServo.angle_rad``, the one function all three simulators use): the
servo's value v (pulse us, or bus-servo steps) gives the believed angle through the calibration (the simulator's
``cal=``; a robot opening a truth port without one gives the example shipped with the arm's preset, the hardware
as it came, so a new calibration changes what armctl believes and not the simulated arm) (and the
simulator's hidden ``offset``/``scale``/``flip`` errors, which compose); then

    true = believed + zero_offset + bow,  bow = curve_pct/100 * R * 4 s (1 - s),  s = (v - min) / (max - min)

with R the joint's angle range over the servo's calibrated min..max: the bow is 0 at both ends and
curve_pct % of R at mid-range (monotone for |curve_pct| <= 10, the most a file may give). Backlash b then acts
as play: the joint moves only when that angle leaves [out - b/2, out + b/2], staying at the edge it was pushed
to (per servo, stateful; exact for a servo slewing linearly between commands, which is when the simulators
settle it). A joint reached from below stands b/2 under the angle, from above b/2 over it: b apart.

``true_arm(arm, truth)`` is the arm with the true lengths (and base offset). ``Part`` is a part on the table:
``armctl.sim.scene`` moves it when the gripper takes it, and a simulated bus servo carries its mass (``mass_g``;
default a printed cube's, ``DEFAULT_PART_DENSITY_G_CM3``: 20 g for the default 30 mm side).
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from armctl.core.config import Section, load_yaml_file
from armctl.errors import ConfigError
from armctl.model.kinematics import tool_point, tool_pose

#: the largest |curve_pct| a truth file may give: the bow stays monotone up to 25 %, hobby servos bow a few %
MAX_CURVE_PCT = 10.0
MAX_ZERO_OFFSET_DEG = 45.0
MAX_BACKLASH_DEG = 10.0
DEFAULT_PART_SIZE_MM = 30.0
#: a part without ``mass_g`` weighs as a printed cube of its size: PLA (1.24 g/cm^3) printed with walls and about
#: 40 % infill, 0.75 g/cm^3 (20 g for a 30 mm cube, 12 g for a 25 mm one)
DEFAULT_PART_DENSITY_G_CM3 = 0.75


@dataclass
class Part:
    """A part on the table, a cube with a marker on its top face: ArUco ``marker_id``, side ``size_m``, its
    centre at (``x_m``, ``y_m``) in the base frame, turned ``yaw_rad``, its bottom ``z_m`` above the table
    (0: lying on it); ``mass_kg`` (None: a printed cube's, ``mass()``)."""

    marker_id: int
    size_m: float = DEFAULT_PART_SIZE_MM / 1000.0
    x_m: float = 0.0
    y_m: float = 0.0
    yaw_rad: float = 0.0
    z_m: float = 0.0
    mass_kg: float | None = None

    def mass(self) -> float:
        """Its mass (kg): as given, else a printed cube's of its size (``DEFAULT_PART_DENSITY_G_CM3``)."""
        if self.mass_kg is not None:
            return self.mass_kg
        return DEFAULT_PART_DENSITY_G_CM3 * (self.size_m * 100.0) ** 3 / 1000.0

    def top_m(self) -> np.ndarray:
        """The centre of its top face (x, y, z), m."""
        return np.array([self.x_m, self.y_m, self.z_m + self.size_m])


@dataclass(frozen=True)
class Truth:
    """The arm as it really is (see the module docstring); per-joint arrays in joint order, radians."""

    zero_offset_rad: np.ndarray
    curve_pct: np.ndarray
    backlash_rad: np.ndarray
    links_m: np.ndarray | None = None
    base_offset_m: float | None = None
    parts: tuple[Part, ...] = ()
    source: str = field(default="<code>")

    @classmethod
    def exact(cls, arm) -> Truth:
        """No difference: the arm is what armctl believes."""
        zero = np.zeros(arm.n)
        return cls(zero, zero.copy(), zero.copy())

    def servos(self, cal) -> dict[int, TrueServo]:
        """channel (or bus id) -> the ``TrueServo`` of each joint servo of calibration ``cal``."""
        return {
            s.channel: TrueServo(s, self.zero_offset_rad[i], self.curve_pct[i], self.backlash_rad[i])
            for i, s in enumerate(cal.joints)
        }


class TrueServo:
    """One joint servo's truth: ``angle_rad(believed, value)`` is its true angle (module docstring)."""

    def __init__(self, servo_cal, offset_rad: float, curve_pct: float, backlash_rad: float):
        self.offset_rad = float(offset_rad)
        self.backlash_rad = float(backlash_rad)
        self.lo, self.hi = float(servo_cal.lo), float(servo_cal.hi)
        a_lo, a_hi = servo_cal.angle_range_rad()
        self.bow_peak_rad = float(curve_pct) / 100.0 * (a_hi - a_lo)
        self.out: float | None = None  # where the backlash left the joint (None: not yet settled)

    def bow_rad(self, value: float) -> float:
        """The bow (rad) at servo value ``value``: 0 at min and max, ``curve_pct`` % of the range mid-way."""
        s = (float(value) - self.lo) / (self.hi - self.lo)
        return self.bow_peak_rad * 4.0 * s * (1.0 - s)

    def angle_rad(self, believed_rad: float, value: float, *, settle: bool = False) -> float:
        """The joint's true angle (rad) where the servo stands at ``value`` and armctl believes it at
        ``believed_rad``; ``settle`` keeps where the backlash leaves it (call it when the servo's motion
        changes: then the input moved monotonically since the last settle)."""
        x = float(believed_rad) + self.offset_rad + self.bow_rad(value)
        half = self.backlash_rad / 2.0
        y = x if self.out is None or half <= 0.0 else min(max(self.out, x - half), x + half)
        if settle:
            self.out = y
        return y


def true_arm(arm, truth: Truth | None):
    """``arm`` with the truth's link lengths and base offset (itself when the truth changes neither)."""
    if truth is None or (truth.links_m is None and truth.base_offset_m is None):
        return arm
    changes = {}
    if truth.links_m is not None:
        changes["links_m"] = np.array(truth.links_m, dtype=float)
    if truth.base_offset_m is not None:
        changes["base_offset_m"] = float(truth.base_offset_m)
    return dataclasses.replace(arm, **changes)


class TrueArmView:
    """What every simulator with an arm offers (mixed in): the true joint angles, gripper and tool. The
    simulator gives ``arm``, ``cal``, ``true_arm``, ``now`` and ``_true_servo_rad(servo_cal, t)`` (a servo's
    true angle at simulated time ``t``)."""

    def true_q_rad(self, t: float | None = None) -> np.ndarray:
        """The joints' true angles (rad) at simulated time ``t`` (default now)."""
        t = self.now if t is None else t
        return np.array([self._true_servo_rad(s, t) for s in self.cal.joints])

    def true_gripper_rad(self, t: float | None = None) -> float:
        """The gripper's true angle (rad); nan without a gripper servo."""
        g = self.cal.gripper
        return float("nan") if g is None else self._true_servo_rad(g, self.now if t is None else t)

    def true_tool_m(self, t: float | None = None) -> np.ndarray:
        """Where the tool really is (m): the true arm at the true angles."""
        return tool_point(self.true_arm, self.true_q_rad(t))

    def true_tool_pose(self, t: float | None = None) -> np.ndarray:
        """The tool's true frame (4x4, m, base frame; ``kinematics.tool_pose`` of the true arm)."""
        return tool_pose(self.true_arm, self.true_q_rad(t))


# --- the file ------------------------------------------------------------------------------------------------


def load_truth(path, arm, cal=None) -> Truth:
    """The truth file ``path`` for ``arm`` driven by calibration ``cal`` (checked to drive the arm's joints, as
    the servos apply the truth). ConfigError naming the file, key and line for anything wrong (a missing file
    too)."""
    if cal is not None and len(cal.joints) != arm.n:
        raise ConfigError(f"calibration {cal.source} drives {len(cal.joints)} joints; arm {arm.name} has {arm.n}")
    return parse_truth(load_yaml_file(path), str(Path(path)), arm)


def parse_truth(data, path: str, arm) -> Truth:
    """A Truth from a parsed truth document (``load_truth``)."""
    top = Section(data, path=path)
    zero = _per_joint(top, "zero_offset_deg", arm, -MAX_ZERO_OFFSET_DEG, MAX_ZERO_OFFSET_DEG)
    curve = _per_joint(top, "curve_pct", arm, -MAX_CURVE_PCT, MAX_CURVE_PCT)
    backlash = _per_joint(top, "backlash_deg", arm, 0.0, MAX_BACKLASH_DEG)
    links = None
    if top.has("links_mm"):
        k = len(arm.links_m)
        links = np.array(top.numbers("links_mm", count=k)) / 1000.0
        if np.any(links <= 0) or np.any(links > 10.0):
            raise top.error("links_mm", f"link lengths must be > 0 and at most 10000 mm, got {list(links * 1000)}")
    base = None
    if top.has("base_offset_mm"):
        if not arm.has_base:
            raise top.error("base_offset_mm", f"arm {arm.name} has no base: no base offset")
        base = top.number("base_offset_mm", lo=-1000.0, hi=1000.0) / 1000.0
    parts = tuple(_parts(top)) if top.has("parts") else ()
    top.done()
    return Truth(np.radians(zero), curve, np.radians(backlash), links, base, parts, source=path)


def _per_joint(top: Section, key: str, arm, lo: float, hi: float) -> np.ndarray:
    """A ``{joint: value}`` mapping as one value per joint (0 where not given), bounded lo..hi."""
    out = np.zeros(arm.n)
    if not top.has(key):
        return out
    sub = top.section(key)
    names = list(arm.joint_names)
    for name in sub.data:
        if name not in names:
            raise sub.error(name, f"unknown joint {name!r}: arm {arm.name}'s joints are {', '.join(names)}")
        out[names.index(name)] = sub.number(name, lo=lo, hi=hi)
    sub.done()
    return out


def _parts(top: Section) -> list[Part]:
    out = []
    for i, item in enumerate(top.items("parts")):
        line = top.data["parts"].item_lines[i] if hasattr(top.data["parts"], "item_lines") else None
        p = Section(item, path=top.path, key=f"parts[{i}]", line=line)
        marker = p.number("marker", lo=0, hi=1023)
        if marker != int(marker):
            raise p.error("marker", f"a marker id is a whole number, got {marker:g}")
        x, y = p.number("x_mm", lo=-10_000, hi=10_000), p.number("y_mm", lo=-10_000, hi=10_000)
        yaw = p.number("yaw_deg", 0.0, lo=-360.0, hi=360.0)
        size = p.number("size_mm", DEFAULT_PART_SIZE_MM, lo=0.0, hi=1000.0, lo_open=True)
        mass = p.number("mass_g", None, lo=0.0, hi=100_000.0, lo_open=True)
        p.done()
        kg = None if mass is None else mass / 1000.0
        out.append(Part(int(marker), size / 1000.0, x / 1000.0, y / 1000.0, math.radians(yaw), mass_kg=kg))
    return out


def simulated_arm(arm_ref: str | None, cal_ref: str | None, truth_path: str | None, *, unit: str, scheme: str):
    """(arm, calibration, truth) of a simulator's ``arm``/``cal``/``truth`` options: (None, None, None) without
    an arm. ValueError (ConfigError) naming the option for a truth without an arm, a calibration of the other
    kind of servo (``unit``: "us" or "steps") or a bad file."""
    if arm_ref is None:
        if truth_path is not None or cal_ref is not None:
            raise ValueError(f"{scheme} options truth and cal need arm=NAME|PATH (the arm the servos move)")
        return None, None, None
    from armctl.calibration.lerobot import open_calibration
    from armctl.model.arm import load_arm

    arm = load_arm(arm_ref)
    cal = open_calibration(cal_ref, arm)[0]
    if cal.unit != unit:
        raise ValueError(f"{scheme} simulates servos driven in {unit}; calibration {cal.source} is in {cal.unit}")
    return arm, cal, (load_truth(truth_path, arm, cal) if truth_path is not None else None)
