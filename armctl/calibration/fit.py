"""Fitting a servo's mapping: a least-squares line through (angle, value) points and how well it fits
(``fit_points``, ``Fit``), the safe range from the mechanical ends (``safe_range``), the servo made from them
(``servo_from_fit``, ``gripper_from_fit``), and a whole calibration from a points file (``fit_calibration``)."""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

from armctl.calibration.points import Record
from armctl.calibration.servo import BusServoCal, Calibration, ServoCal, replace_servo
from armctl.errors import BadInputError
from armctl.model.arm import Arm

DEFAULT_MAX_RESIDUAL_DEG = 1.0
DEFAULT_MARGIN_DEG = 2.0


class FitError(BadInputError):
    """Recorded points that do not give a usable mapping (too few, inconsistent, out of range)."""


def servo_label(cal: Calibration, index: int) -> str:
    """'joint 2 (elbow)' or 'gripper' for servo ``index`` (joints first, then the gripper)."""
    if index == len(cal.joints):
        return "gripper"
    return f"joint {index + 1} ({cal.joints[index].name})"


@dataclass(frozen=True)
class Fit:
    """A line through (angle_deg, value) points: the mapping and how well it fits. Values in the servo's
    ``unit``: pulse widths (us) for hobby servos, positions (steps) for bus servos."""

    zero: float
    per_deg: float
    direction: int
    angles_deg: tuple[float, ...]
    values: tuple[float, ...]
    residuals_deg: tuple[float, ...]  # measured angle minus fitted, per point (0 with two points)
    unit: str = "us"

    @property
    def max_residual_deg(self) -> float:
        return max((abs(r) for r in self.residuals_deg), default=0.0)

    @property
    def rms_residual_deg(self) -> float:
        return math.sqrt(sum(r * r for r in self.residuals_deg) / max(len(self.residuals_deg), 1))

    def value(self, angle_deg: float) -> float:
        """Servo value for ``angle_deg`` by this fit."""
        return self.zero + self.direction * self.per_deg * angle_deg

    def angle_deg(self, value: float) -> float:
        """Angle (deg) for the servo value ``value`` by this fit."""
        return (value - self.zero) / (self.direction * self.per_deg)

    def describe(self) -> list[str]:
        """Lines for the user: the mapping, then each point with its residual."""
        u = self.unit
        out = [
            f"zero {self.zero:.1f} {u}, {self.per_deg:.3f} {u}/deg, direction {self.direction:+d}"
            + (
                f", residual rms {self.rms_residual_deg:.2f} deg, max {self.max_residual_deg:.2f} deg"
                if len(self.angles_deg) >= 3
                else " (two points: no residual to check)"
            )
        ]
        for a, p, r in zip(self.angles_deg, self.values, self.residuals_deg):
            out.append(f"  {a:7.1f} deg at {p:7.1f} {u}   off the line by {r:+.2f} deg")
        return out


def fit_points(
    angles_deg,
    values,
    *,
    label: str = "servo",
    max_residual_deg: float = DEFAULT_MAX_RESIDUAL_DEG,
    kind: type = ServoCal,
) -> Fit:
    """Least-squares line through (angle_deg, value) points for a servo of ``kind`` (``ServoCal``: pulses
    in us; ``BusServoCal``: positions in steps); FitError with the reason if it is unusable: fewer than two
    distinct angles, a slope outside the kind's ``per_deg_range`` (1..50 us/deg for a hobby servo), a zero
    outside its ``full_range`` (500..2500 us), or (with three or more points) a point further than
    ``max_residual_deg`` from the line."""
    u = kind.unit
    a = np.asarray(angles_deg, dtype=float)
    p = np.asarray(values, dtype=float)
    if len(a) != len(p) or len(np.unique(np.round(a, 6))) < 2:
        raise FitError(f"{label}: need {u} at two or more different angles, have {len(np.unique(a))}")
    if not (np.all(np.isfinite(a)) and np.all(np.isfinite(p))):
        raise FitError(f"{label}: angles and {u} must be finite numbers")
    design = np.stack([np.ones_like(a), a], axis=1)
    (zero, slope), *_ = np.linalg.lstsq(design, p, rcond=None)
    per_deg = abs(float(slope))
    lo_slope, hi_slope = kind.per_deg_range
    if not lo_slope <= per_deg <= hi_slope:
        raise FitError(
            f"{label}: the points give {per_deg:.3g} {u}/deg, outside {lo_slope:g}..{hi_slope:g} {u}/deg for this "
            "kind of servo: check that each value was recorded at the angle it is listed with"
        )
    direction = 1 if slope > 0 else -1
    residuals = (p - (zero + slope * a)) / slope  # in degrees: how far the joint was off the fitted angle
    fit = Fit(
        zero=float(zero),
        per_deg=per_deg,
        direction=direction,
        angles_deg=tuple(float(v) for v in a),
        values=tuple(float(v) for v in p),
        residuals_deg=tuple(float(v) for v in residuals),
        unit=u,
    )
    if len(a) >= 3 and fit.max_residual_deg > max_residual_deg:
        each = ", ".join(f"{x:g} deg at {y:g} {u} {r:+.1f}" for x, y, r in zip(a, p, residuals))
        raise FitError(
            f"{label}: the points do not lie on one line: up to {fit.max_residual_deg:.1f} deg off the "
            f"best line, more than the {max_residual_deg:g} deg allowed (off by: {each} deg). A pose was "
            "misjudged or a value recorded at the wrong angle: record the points again"
        )
    lo, hi = kind.full_range
    if not lo <= zero <= hi:
        raise FitError(
            f"{label}: the fitted value at 0 deg is {zero:.0f} {u}, outside {lo:g}..{hi:g} {u}: remount the horn "
            "so 0 deg is inside the servo's travel"
        )
    return fit


def safe_range(
    end_a: float, end_b: float, *, per_deg: float, margin_deg: float, kind: type = ServoCal
) -> tuple[float, float]:
    """(lo, hi): the two mechanical ends (servo values), each backed off ``margin_deg`` toward the other, on
    the kind's resolution (our board's 0.5 us grid; whole steps). FitError if nothing is left between them."""
    u, r = kind.unit, kind.resolution
    lo, hi = sorted((float(end_a), float(end_b)))
    margin = margin_deg * per_deg
    lo_s, hi_s = math.ceil((lo + margin) / r) * r, math.floor((hi - margin) / r) * r
    lo_s, hi_s = max(lo_s, kind.full_range[0]), min(hi_s, kind.full_range[1])
    if hi_s - lo_s < 10 * per_deg:
        raise FitError(
            f"the ends {lo:g} and {hi:g} {u} leave {max(0.0, hi_s - lo_s):g} {u} after backing off {margin_deg:g} "
            "deg each: less than 10 deg of travel; record the two opposite mechanical ends"
        )
    return lo_s, hi_s


def servo_from_fit(old, fit: Fit, *, lo: float, hi: float):
    """``old`` (address, pin, name kept) with the fitted mapping and the new safe range ``lo``..``hi``."""
    if isinstance(old, BusServoCal):
        return replace(
            old,
            zero_steps=round(fit.zero, 2),
            steps_per_deg=round(fit.per_deg, 4),
            direction=fit.direction,
            min_steps=float(lo),
            max_steps=float(hi),
        )
    return replace(
        old,
        zero_us=round(fit.zero, 2),
        us_per_deg=round(fit.per_deg, 4),
        direction=fit.direction,
        min_us=float(lo),
        max_us=float(hi),
    )


def gripper_from_fit(old, fit: Fit):
    """The gripper's mapping: fitted from open and closed; its range is exactly open..closed."""
    r = old.resolution
    lo, hi = sorted(fit.values)
    return servo_from_fit(old, fit, lo=round(lo / r) * r, hi=round(hi / r) * r)


@dataclass
class FitReport:
    """What ``fit_calibration`` made: the new calibration and lines describing each servo."""

    cal: Calibration
    lines: list[str]
    changed: list[int]


def fit_calibration(
    records: list[Record],
    old: Calibration,
    arm: Arm,
    *,
    max_residual_deg: float = DEFAULT_MAX_RESIDUAL_DEG,
) -> FitReport:
    """A calibration from points-file records: every servo with two or more points is refitted (the last
    range recorded for it becomes its min/max, else its old range is kept; the gripper's range is its
    open..closed span); the others are kept as they were. FitError on the first unusable servo."""
    lines: list[str] = []
    changed: list[int] = []
    cal = old
    for index, servo in enumerate(old.servos):
        label = servo_label(old, index)
        pts = [r for r in records if r.servo == index and r.angle_deg is not None]
        ranges = [r for r in records if r.servo == index and r.min_us is not None]
        if not pts and not ranges:
            lines.append(f"{label}: no points, unchanged")
            continue
        if len(pts) < 2:
            raise FitError(f"{label}: has {len(pts)} reference point(s); record at least two different angles")
        fit = fit_points(
            [r.angle_deg for r in pts],
            [r.us for r in pts],
            label=label,
            max_residual_deg=max_residual_deg,
            kind=type(servo),
        )
        if index == len(old.joints) and not ranges:
            new = gripper_from_fit(servo, fit)
        else:
            lo, hi = (ranges[-1].min_us, ranges[-1].max_us) if ranges else (servo.lo, servo.hi)
            new = servo_from_fit(servo, fit, lo=lo, hi=hi)
        cal = replace_servo(cal, index, new)
        changed.append(index)
        lines.append(f"{label}: " + fit.describe()[0])
        lines += ["  " + s for s in fit.describe()[1:]]
        a, b = new.angle_range_rad()
        lines.append(
            f"  safe range {new.lo:g}..{new.hi:g} {new.unit} = {math.degrees(a):.1f}..{math.degrees(b):.1f} deg"
            + ("" if ranges or index == len(old.joints) else " (old range kept: no range recorded)")
        )
    return FitReport(cal=cal, lines=lines, changed=changed)
