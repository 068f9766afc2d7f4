"""Calibrations made from others: cut to what a board can send (``narrowed``), an arm's limits cut to a
calibration (``within_calibration``), a servo mapped as Adafruit's ServoKit maps it (``servokit_servo``), one
servo changed (``with_servo``, ``replace_servo``)."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np

from armctl.calibration.maps import PULSE_RANGE_US, BusServoCal, Calibration, ServoCal
from armctl.errors import ConfigError


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
    servo = cal.gripper if index == len(cal.joints) else cal.joints[index]
    return replace_servo(cal, index, replace(servo, **changes))


def replace_servo(cal: Calibration, index: int, servo: ServoCal | BusServoCal) -> Calibration:
    """A copy of ``cal`` with joint ``index`` (or the gripper for index == len(joints)) replaced by ``servo``."""
    if index == len(cal.joints):
        return replace(cal, gripper=servo)
    joints = list(cal.joints)
    joints[index] = servo
    return replace(cal, joints=tuple(joints))
