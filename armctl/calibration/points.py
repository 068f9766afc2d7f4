"""Points files: the reference points and safe ranges ``armctl calibrate --joint`` records, one a line, and
``armctl calibrate --fit`` reads (``Record``, ``load_points``, ``append_record``)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from armctl.calibration.servo import Calibration
from armctl.core.config import Section, load_yaml_file
from armctl.core.paths import atomic_write
from armctl.errors import BadInputError

POINTS_HEADER = (
    "# armctl calibration points: one record a line, appended by\n"
    "#   armctl calibrate --joint J --angle DEG --us US      (a reference point)\n"
    "#   armctl calibrate --joint J --min-us US --max-us US  (the safe range)\n"
    "# and read by 'armctl calibrate --fit'. Joints 1..n, or 'gripper'.\n"
)


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
