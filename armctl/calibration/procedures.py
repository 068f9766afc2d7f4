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

The steps live in ``poses`` (reference and whole poses), ``fit`` (fits, safe ranges, a calibration from points)
and ``points`` (points files); their names are imported from here (``__all__``). This module shows and compares
calibrations and places the check square.
"""

from __future__ import annotations

import math

import numpy as np

from armctl.calibration.fit import (
    DEFAULT_MARGIN_DEG,
    DEFAULT_MAX_RESIDUAL_DEG,
    Fit,
    FitError,
    FitReport,
    fit_calibration,
    fit_points,
    gripper_from_fit,
    safe_range,
    servo_from_fit,
    servo_label,
)
from armctl.calibration.nudge import NUDGE_SPEED_FRACTION, Nudger
from armctl.calibration.points import POINTS_HEADER, Record, append_record, load_points, parse_servo_name
from armctl.calibration.poses import (
    LINK_MARGIN_RAD,
    RefPose,
    calibration_poses,
    gripper_poses,
    home_after,
    path_between,
    pose_for,
    reference_poses,
    room_pose,
)
from armctl.calibration.servo import Calibration, replace_servo
from armctl.errors import BadInputError
from armctl.model.arm import Arm
from armctl.model.kinematics import tool_point

# the procedures' names, wherever they live (the CLI and tests use them as ``procedures.X``)
__all__ = [
    "DEFAULT_MAX_RESIDUAL_DEG",
    "DEFAULT_MARGIN_DEG",
    "POINTS_HEADER",
    "NUDGE_SPEED_FRACTION",
    "Nudger",
    "FitError",
    "servo_label",
    "RefPose",
    "reference_poses",
    "LINK_MARGIN_RAD",
    "pose_for",
    "room_pose",
    "path_between",
    "calibration_poses",
    "home_after",
    "gripper_poses",
    "Fit",
    "fit_points",
    "safe_range",
    "servo_from_fit",
    "gripper_from_fit",
    "Record",
    "parse_servo_name",
    "load_points",
    "append_record",
    "FitReport",
    "fit_calibration",
    "replace_servo",
    "show_lines",
    "compare_lines",
    "check_square",
    "check_square_at",
]


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
