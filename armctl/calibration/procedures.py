"""The calibration workflow, without a terminal: reference poses, fits, safe ranges, points files, compare.

A servo's mapping is linear (``pulse_us = zero_us + direction * us_per_deg * angle_deg``, see
``armctl.calibration.servo``). The user puts a joint at reference angles the tool names and records the
pulse there; a least-squares line through those (angle_deg, pulse_us) points gives the zero pulse,
microseconds per degree and direction. With three or more points the residual (how far each point
lies off the line, in degrees) tells a misjudged pose from a good fit: above ``max_residual_deg`` the
fit is refused. The safe range is each mechanical end backed off by a margin. The gripper is fitted
from its open and closed pulses (the arm file's ``open_deg``/``closed_deg``).

Moving one servo by hand under the joint's speed limit is ``armctl.calibration.nudge`` (``Nudger``, re-exported here).
Angles in degrees and pulses in microseconds throughout (the edges of the program, where the user is).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from armctl.calibration.nudge import NUDGE_SPEED_FRACTION, Nudger  # noqa: F401 (re-exported: the CLI and tests use calibrate.Nudger)
from armctl.calibration.servo import BusServoCal, Calibration, ServoCal
from armctl.core.config import Section, load_yaml_file
from armctl.core.paths import atomic_write
from armctl.errors import BadInputError
from armctl.model.arm import Arm
from armctl.model.kinematics import tool_point

DEFAULT_MAX_RESIDUAL_DEG = 1.0
DEFAULT_MARGIN_DEG = 2.0
POINTS_HEADER = (
    "# armctl calibration points: one record a line, appended by\n"
    "#   armctl calibrate --joint J --angle DEG --us US      (a reference point)\n"
    "#   armctl calibrate --joint J --min-us US --max-us US  (the safe range)\n"
    "# and read by 'armctl calibrate --fit'. Joints 1..n, or 'gripper'.\n"
)


class FitError(BadInputError):
    """Recorded points that do not give a usable mapping (too few, inconsistent, out of range)."""


def servo_label(cal: Calibration, index: int) -> str:
    """'joint 2 (elbow)' or 'gripper' for servo ``index`` (joints first, then the gripper)."""
    if index == len(cal.joints):
        return "gripper"
    return f"joint {index + 1} ({cal.joints[index].name})"


# --- reference poses ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class RefPose:
    """A pose the user sets a joint to by eye (or with a set square): its angle (deg) and how to see it."""

    angle_deg: float
    text: str


def _joint_refs(index: int, arm: Arm | None = None) -> dict[float, str]:
    if arm is not None and arm.has_base:
        if index == 0:
            return {
                0.0: "the base turned so the arm points straight ahead, along the base's x axis",
                90.0: "the base a quarter turn counter-clockwise (seen from above): the arm points left, along y",
                -90.0: "the base a quarter turn clockwise (seen from above): the arm points right, along -y",
                45.0: "the base an eighth of a turn counter-clockwise (45 deg, seen from above)",
                -45.0: "the base an eighth of a turn clockwise (-45 deg, seen from above)",
            }
        index -= 1  # the chain's joints, counted from the shoulder
    if arm is not None and arm.parallelogram and index == 1:  # the forearm's own angle from the horizontal
        return {
            0.0: "the forearm level (horizontal), pointing away from the shoulder",
            90.0: "the forearm straight up (vertical)",
            -90.0: "the forearm straight down (vertical)",
            45.0: "the forearm 45 deg above level",
            -45.0: "the forearm 45 deg below level",
        }
    if index == 0:
        return {
            0.0: "link 1 straight along the base's x axis (pointing forward, level)",
            90.0: "link 1 straight up, along the base's y axis (90 deg to the x axis)",
            -90.0: "link 1 straight down, along the base's -y axis (-90 deg to the x axis)",
            45.0: "link 1 halfway between the x axis and straight up (45 deg)",
            -45.0: "link 1 halfway between the x axis and straight down (-45 deg)",
        }
    k, prev = index + 1, index
    return {
        0.0: f"link {k} straight in line with link {prev} (no bend)",
        90.0: f"link {k} at 90 deg to link {prev}, bent counter-clockwise (to the left, seen from above)",
        -90.0: f"link {k} at 90 deg to link {prev}, bent clockwise (to the right, seen from above)",
        45.0: f"link {k} at 45 deg to link {prev}, counter-clockwise",
        -45.0: f"link {k} at 45 deg to link {prev}, clockwise",
    }


def reference_poses(arm: Arm, index: int) -> list[RefPose]:
    """Three reference poses for joint ``index`` (0-based) inside its angle limits: 0 and +-90 deg where
    the joint can get there, else +-45 deg. Three, so the fit has a residual to check. Only angles the arm
    can hold inside all its limits (``pose_for``: a parallelogram's forearm moved along where needed)."""
    refs = _joint_refs(index, arm)
    lo, hi = math.degrees(arm.q_min[index]), math.degrees(arm.q_max[index])
    order = (0.0, 90.0, -90.0, 45.0, -45.0)
    home = np.asarray(arm.home_rad, dtype=float)
    inside = [
        a for a in order if lo - 1e-9 <= a <= hi + 1e-9 and pose_for(arm, index, math.radians(a), home) is not None
    ]
    picked = inside[:3]
    if len(picked) < 2:
        picked = [lo + (hi - lo) * f for f in (0.25, 0.5, 0.75)]
        return [RefPose(a, f"joint {index + 1} at {a:g} deg (measure with a protractor)") for a in picked]
    return [RefPose(a, refs[a]) for a in picked]


# --- whole poses: what the other joints hold while one is calibrated ----------------------------------------
#
# A parallelogram arm (MeArm, EEZYbotARM) couples its two chain joints: the angle between upper arm and forearm
# must stay inside ``link_angle_rad`` (30..150 deg on the MeArm), where the linkage binds and a small servo
# stalls. Its shoulder servo turns the upper arm while the forearm keeps its angle from the horizontal, so a
# shoulder reference pose of 0 deg with the forearm level is 180 deg between them. Every pose the calibration
# puts the arm in is therefore a whole pose, checked with the arm's own limits (``Arm.within_limits``), the
# partner joint moved the least that keeps the linkage ``LINK_MARGIN_RAD`` inside its range.

LINK_MARGIN_RAD = math.radians(5.0)


def _partner(arm: Arm, index: int) -> int | None:
    """The chain joint coupled to joint ``index`` through a parallelogram's link angle, or None."""
    pair = arm.coupled_joints
    return None if pair is None else {pair[0]: pair[1], pair[1]: pair[0]}.get(index)


def _link_room(arm: Arm) -> tuple[float, float]:
    lo, hi = arm.link_angle_rad
    m = min(LINK_MARGIN_RAD, (hi - lo) / 4)
    return lo + m, hi - m


def _with_link(arm: Arm, q: np.ndarray, index: int, link: float) -> np.ndarray:
    """``q`` with joint ``index``'s partner moved so the link angle is ``link`` (clipped to its own limits)."""
    c = arm.chain_start
    p = _partner(arm, index)
    out = np.array(q, dtype=float)
    out[p] = out[c] + (link - math.pi) if p == c + 1 else out[c + 1] - (link - math.pi)
    out[p] = min(max(out[p], arm.q_min[p]), arm.q_max[p])
    return out


def pose_for(arm: Arm, index: int, angle_rad: float, held) -> np.ndarray | None:
    """The whole pose (rad) for joint ``index`` at ``angle_rad`` with the other joints as in ``held`` (rad),
    inside every limit of the arm: on a parallelogram the partner joint is moved the least that keeps the link
    angle a margin inside its range. None if no such pose exists."""
    from armctl.model.kinematics import link_angle

    q = np.array(held, dtype=float)
    q[index] = angle_rad
    if _partner(arm, index) is not None:
        lo, hi = _link_room(arm)
        a = float(link_angle(arm, q))
        if not lo <= a <= hi:
            q = _with_link(arm, q, index, min(max(a, lo), hi))
    return q if arm.within_limits(q) else None


def room_pose(arm: Arm, index: int, toward: int, held) -> np.ndarray:
    """The pose to look for joint ``index``'s mechanical end toward lower (``toward`` -1) or higher (+1) angles
    from ``held`` (rad): on a parallelogram its partner is put where the link angle leaves the joint the most
    room that way (the linkage's far end, a margin inside), as far as the pose stays inside the limits; the
    joint itself stays (brought back inside its limits from a mechanical end). Other arms: ``held`` as it is."""
    q = np.array(held, dtype=float)
    if _partner(arm, index) is None:
        return q
    q[index] = min(max(q[index], arm.q_min[index]), arm.q_max[index])  # back from the other end, if there
    c = arm.chain_start
    lo, hi = _link_room(arm)
    # the link angle (pi + forearm - shoulder) grows as the shoulder turns down or the forearm up
    grows = (toward < 0) if index == c else (toward > 0)
    best = q
    for link in np.linspace(lo if grows else hi, hi if grows else lo, 25):  # the most room first
        cand = _with_link(arm, q, index, float(link))
        if arm.within_limits(cand):
            best = cand
            break
    return best


def path_between(arm: Arm, q_from, q_to, *, max_steps: int = 32) -> list[np.ndarray]:
    """Poses (rad) that take the arm from ``q_from`` to ``q_to`` moving one joint at a time (as the calibration
    moves its servos), each inside the arm's limits when ``q_from`` and ``q_to`` are: the limits are convex (a
    box and a parallelogram's band), so a fine enough staircase along the straight line stays inside. A joint
    of ``q_from`` past its own range (at a mechanical end) is first brought back to it. Ends with ``q_to``;
    [] if nothing changes."""
    a, b = np.array(q_from, dtype=float), np.array(q_to, dtype=float)
    back = []
    for j in range(len(a)):
        inside = min(max(a[j], arm.q_min[j]), arm.q_max[j])
        if inside != a[j] and abs(b[j] - a[j]) > 1e-12:
            a = a.copy()
            a[j] = inside
            back.append(a)
    changed = [j for j in range(len(a)) if abs(b[j] - a[j]) > 1e-12]
    if not changed:
        return back
    for steps in (1, 2, 4, 8, 16, max_steps):
        for order in (changed, changed[::-1]):
            out, q = [], a.copy()
            for k in range(1, steps + 1):
                waypoint = a + (b - a) * k / steps
                for j in order:
                    q = q.copy()
                    q[j] = waypoint[j]
                    out.append(q)
            if all(arm.within_limits(x) for x in out):
                return back + out
    return back + out  # (q_from or q_to outside the limits: the last try)


def calibration_poses(arm: Arm) -> list[tuple[str, np.ndarray]]:
    """Every pose (rad) the interactive calibration puts ``arm`` in when each servo does what its old
    calibration says: (what, pose), from home, joint by joint through the reference poses (the joint sent to
    each by ``g``), the starts of both ends of its safe range, and back home. The same steps as the
    ``Workflow`` of ``armctl calibrate``; a test walks them through ``Arm.within_limits``."""
    home = np.asarray(arm.home_rad, dtype=float)
    q, out = home.copy(), []

    def go(label: str, target) -> None:
        nonlocal q
        for x in path_between(arm, q, target):
            out.append((label, x))
        q = np.array(target, dtype=float)

    for i in range(arm.n):
        for ref in reference_poses(arm, i):
            target = pose_for(arm, i, math.radians(ref.angle_deg), q)
            if target is not None:
                go(f"joint {i + 1} at {ref.angle_deg:g} deg", target)
        for toward in (-1, 1):
            go(f"joint {i + 1}, looking for its {'low' if toward < 0 else 'high'} end", room_pose(arm, i, toward, q))
        go(f"joint {i + 1} back home", home_after(arm, i, q))
    return out


def home_after(arm: Arm, index: int, held) -> np.ndarray:
    """Where the arm goes once joint ``index`` is calibrated: it, and a parallelogram's partner, back home."""
    q = np.array(held, dtype=float)
    q[index] = arm.home_rad[index]
    p = _partner(arm, index)
    if p is not None:
        q[p] = arm.home_rad[p]
    return q


def gripper_poses(arm: Arm) -> list[RefPose]:
    """The gripper's two reference poses: open and closed (angles from the arm file)."""
    g = arm.gripper
    return [
        RefPose(math.degrees(g.open_rad), "gripper fully open (as wide as you want it to open)"),
        RefPose(math.degrees(g.closed_rad), "gripper closed (jaws just touching; not squeezing)"),
    ]


# --- fitting -----------------------------------------------------------------------------------------------


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


# --- points files ------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Record:
    """One line of a points file: a reference point (angle_deg, us) or a range (min_us, max_us)."""

    servo: int  # 0-based joint, or len(joints) for the gripper
    angle_deg: float | None = None
    us: float | None = None
    min_us: float | None = None
    max_us: float | None = None


def parse_servo_name(text: str, cal: Calibration) -> int:
    """Servo index for ``--joint``: 1..n, a joint name, or 'gripper'. BadInputError otherwise."""
    t = str(text).strip().lower()
    names = [s.name.lower() for s in cal.joints]
    if t.isdigit() and 1 <= int(t) <= len(cal.joints):
        return int(t) - 1
    if t in names:
        return names.index(t)
    if t == "gripper" or (cal.gripper is not None and t == cal.gripper.name.lower()):
        if cal.gripper is None:
            raise BadInputError("this calibration has no gripper servo")
        return len(cal.joints)
    raise BadInputError(
        f"--joint {text!r}: expected 1..{len(cal.joints)}, a joint name ({', '.join(names)}) or 'gripper'"
    )


def load_points(path: str | Path, cal: Calibration) -> list[Record]:
    """Read a points file (strict YAML: ``arm`` and a ``points`` list); ConfigError naming line and key."""
    data = load_yaml_file(path)
    top = Section(data, path=path)
    arm = top.string("arm")
    if arm != cal.arm:
        raise top.error("arm", f"points are for arm {arm!r}, the calibration is for {cal.arm!r}")
    raw = top.raw("points", [])
    if raw is None:
        raw = []
    if not isinstance(raw, list):
        raise top.error("points", "expected a list of records")
    top.done()
    out = []
    for i, item in enumerate(raw):
        line = raw.item_lines[i] if hasattr(raw, "item_lines") else None
        sec = Section(item, path=path, key=f"points[{i}]", line=line)
        servo_raw = sec.raw("joint")
        try:
            servo = parse_servo_name(str(servo_raw), cal)
        except BadInputError as exc:
            raise sec.error("joint", str(exc)) from None
        bottom, top = cal.servos[servo].full_range  # the keys say us; a bus servo's values are its steps
        if sec.has("angle_deg"):
            rec = Record(servo, angle_deg=sec.number("angle_deg"), us=sec.number("us", lo=bottom, hi=top))
        else:
            lo, hi = sec.number("min_us", lo=bottom, hi=top), sec.number("max_us", lo=bottom, hi=top)
            if hi <= lo:
                raise sec.error("max_us", f"max_us ({hi:g}) must be greater than min_us ({lo:g})")
            rec = Record(servo, min_us=lo, max_us=hi)
        sec.done()
        out.append(rec)
    return out


def append_record(path: str | Path, cal: Calibration, record: Record) -> str:
    """Append ``record`` to the points file (created with a header if missing); returns the line written."""
    path = Path(path)
    joint = "gripper" if record.servo == len(cal.joints) else str(record.servo + 1)
    if record.angle_deg is not None:
        line = f"  - {{joint: {joint}, angle_deg: {record.angle_deg:g}, us: {record.us:g}}}"
    else:
        line = f"  - {{joint: {joint}, min_us: {record.min_us:g}, max_us: {record.max_us:g}}}"
    if path.exists():
        load_points(path, cal)  # never append to a file we could not read back
        text = path.read_text(encoding="utf-8")
        if text and not text.endswith("\n"):
            text += "\n"
    else:
        text = POINTS_HEADER + f"arm: {cal.arm}\npoints:\n"
    try:
        atomic_write(path, text + line + "\n")
    except OSError as exc:
        raise BadInputError(f"points file {path}: cannot write it: {exc.strerror or exc}") from None
    return line.strip()


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
        cal = _with(cal, index, new)
        changed.append(index)
        lines.append(f"{label}: " + fit.describe()[0])
        lines += ["  " + s for s in fit.describe()[1:]]
        a, b = new.angle_range_rad()
        lines.append(
            f"  safe range {new.lo:g}..{new.hi:g} {new.unit} = {math.degrees(a):.1f}..{math.degrees(b):.1f} deg"
            + ("" if ranges or index == len(old.joints) else " (old range kept: no range recorded)")
        )
    return FitReport(cal=cal, lines=lines, changed=changed)


def _with(cal: Calibration, index: int, servo: ServoCal) -> Calibration:
    if index == len(cal.joints):
        return replace(cal, gripper=servo)
    joints = list(cal.joints)
    joints[index] = servo
    return replace(cal, joints=tuple(joints))


# --- show and compare --------------------------------------------------------------------------------------


def show_lines(cal: Calibration) -> list[str]:
    """A table of every servo: address (channel and pin, or bus id), mapping, safe range in the servo's
    unit and in degrees."""
    u = cal.unit
    w = 8 if u == "us" else 11  # columns wide enough for "zero_steps"
    where = f"{'ch':>2} {'pin':>3}" if u == "us" else f"{'id':>6}"
    labels = [servo_label(cal, i) for i in range(len(cal.servos))] + [h.name for h in cal.held]
    n = max(20, *map(len, labels))  # the name column: as wide as the longest name
    out = [
        f"calibration {cal.source} (version {cal.version}) for arm {cal.arm}",
        f"{'servo':<{n}} {where} {'zero_' + u:>{w}} {u + '/deg':>{w - 1}} {'dir':>3} {'min_' + u:>{w - 1}} "
        f"{'max_' + u:>{w - 1}}  range_deg",
    ]
    for i, s in enumerate(cal.servos):
        a, b = s.angle_range_rad()
        addr = f"{s.channel:>2} {s.pin:>3}" if u == "us" else f"{s.id:>6}"
        out.append(
            f"{labels[i]:<{n}} {addr} {s.zero:>{w}.1f} {s.per_deg:>{w - 1}.3f} "
            f"{s.direction:>+3d} {s.lo:>{w - 1}g} {s.hi:>{w - 1}g}  {math.degrees(a):.1f}..{math.degrees(b):.1f}"
        )
    for k, h in enumerate(cal.held):
        out.append(
            f"{labels[len(cal.servos) + k]:<{n}} {h.id:>6} held at {h.position_steps:g} steps, "
            f"turned there at {h.speed_deg_s:g} deg/s"
        )
    return out


def compare_lines(a: Calibration, b: Calibration, arm: Arm) -> tuple[list[str], float]:
    """How two calibrations differ: per servo, the parameters and the largest angle difference for the
    same servo value (deg, over the values both allow); overall, the largest tool distance (m) between
    where the arm goes with a value computed by ``a`` and where it is if ``b`` is the truth, over a grid of
    poses inside the joint limits. Returns (lines, max tool distance in m)."""
    u = a.unit
    out = [f"A = {a.source}", f"B = {b.source}"]
    if a.unit != b.unit:
        return out + [f"A drives servos in {a.unit}, B in {b.unit}: not comparable"], math.inf
    out.append(
        f"{'servo':<20} {'zero_' + u + ' A/B':>15} {u + '/deg A/B':>15} {'dir':>5} {'range_' + u + ' A | B':>25}  "
        f"max angle diff (same {u})"
    )
    n = min(len(a.servos), len(b.servos))
    for i in range(n):
        sa, sb = a.servos[i], b.servos[i]
        lo, hi = max(sa.lo, sb.lo), min(sa.hi, sb.hi)
        if hi > lo:
            values = np.linspace(lo, hi, 101)
            diff = float(np.max(np.abs(np.degrees(sa.angle_rad(values) - sb.angle_rad(values)))))
            d = f"{diff:.2f} deg"
        else:
            d = "ranges do not overlap"
        ranges = f"{sa.lo:g}..{sa.hi:g} | {sb.lo:g}..{sb.hi:g}"
        out.append(
            f"{servo_label(a, i):<20} {sa.zero:>7.1f}/{sb.zero:<7.1f} {sa.per_deg:>7.3f}/"
            f"{sb.per_deg:<7.3f} {sa.direction:+d}/{sb.direction:+d} {ranges:>25}  {d}"
        )
    if len(a.servos) != len(b.servos):
        out.append(f"servo count differs: A has {len(a.servos)}, B has {len(b.servos)}")
    worst = 0.0
    if len(a.joints) == len(b.joints) == arm.n:
        grids = np.meshgrid(*[np.linspace(arm.q_min[i], arm.q_max[i], 9) for i in range(arm.n)], indexing="ij")
        q = np.stack([g.ravel() for g in grids], axis=1)
        us = a.joints_to_values(q, check=False)
        q_b = b.values_to_joints(us)
        off = tool_point(arm, q) - tool_point(arm, q_b)
        dist = np.hypot(*off.T) if off.shape[-1] == 2 else np.linalg.norm(off, axis=-1)
        worst = float(np.max(dist))
        k = int(np.argmax(dist))
        out.append(
            f"same {'pulses' if u == 'us' else 'positions'}, A vs B: tool up to {worst * 1000:.1f} mm apart "
            "(worst at joints "
            + " ".join(f"{math.degrees(v):.0f}" for v in q[k])
            + f" deg), over {len(q)} poses inside the joint limits of arm {arm.name!r}"
        )
    return out, worst


# --- the check square --------------------------------------------------------------------------------------


def check_square(arm: Arm, *, center_m=None, side_m: float | None = None) -> list[np.ndarray]:
    """Four corners (m) of a square in the workspace, counter-clockwise from the lower right. Default: side
    a quarter of the reach, centred at 0.55 reach along 20 deg, where every corner is well inside."""
    r = arm.reach_max
    if side_m is None:
        side_m = 0.25 * r
    if center_m is None:
        ang = math.radians(20.0)
        center_m = (0.55 * r * math.cos(ang), 0.55 * r * math.sin(ang))
    cx, cy = center_m
    h = side_m / 2
    return [np.array(p) for p in ((cx + h, cy - h), (cx + h, cy + h), (cx - h, cy + h), (cx - h, cy - h))]


def check_square_at(arm: Arm, z_m: float, *, center_m=None, side_m: float | None = None) -> list[np.ndarray]:
    """Four corners (m: x, y, z) of a square in the horizontal plane at height ``z_m`` for an arm on a rotating
    base, counter-clockwise seen from above. Default: centred along the middle of the base's range, halfway
    across what the arm reaches at that height, its side 60 % of that width (at most a quarter of the reach),
    shrunk until every point of its edges is reached. BadInputError if nothing is reached at that height."""
    from armctl.model.workspace import shortfall

    a = 0.5 * (float(arm.q_min[0]) + float(arm.q_max[0]))
    ux, uy = math.cos(a), math.sin(a)
    reach = arm.reach_from_axis_m

    def reached(x: float, y: float) -> bool:
        return shortfall(arm, (x, y, z_m)) < 1e-6

    if center_m is None or side_m is None:
        us = np.linspace(0.0, reach, 241)
        ok = [
            reached(
                u * ux,
                u * uy,
            )
            for u in us
        ]
        best, run = (0, -1), None
        for i, hit in enumerate([*ok, False]):
            if hit and run is None:
                run = i
            elif not hit and run is not None:
                if i - 1 - run > best[1] - best[0]:
                    best = (run, i - 1)
                run = None
        if best[1] <= best[0]:
            raise BadInputError(
                f"--height {1000 * z_m:.0f} mm: arm '{arm.name}' reaches nothing at that height; give another --height"
            )
        u0, u1 = us[best[0]], us[best[1]]
        if center_m is None:
            center_m = (0.5 * (u0 + u1) * ux, 0.5 * (u0 + u1) * uy)
        fit = side_m is None
        if side_m is None:
            side_m = min(0.6 * (u1 - u0), 0.25 * arm.reach_max)
    else:
        fit = False
    cx, cy = float(center_m[0]), float(center_m[1])

    def corners(side: float) -> list[np.ndarray]:
        h = side / 2
        return [
            np.array((x, y, z_m)) for x, y in ((cx + h, cy - h), (cx + h, cy + h), (cx - h, cy + h), (cx - h, cy - h))
        ]

    for _ in range(12 if fit else 0):
        c = corners(side_m)
        edges = [c[k] + t * (c[(k + 1) % 4] - c[k]) for k in range(4) for t in np.linspace(0.0, 1.0, 9)[:-1]]
        if all(reached(p[0], p[1]) for p in edges):
            break
        side_m *= 0.8
    return corners(side_m)
