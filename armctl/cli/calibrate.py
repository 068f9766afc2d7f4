"""``armctl calibrate``: the guided calibration workflow, and its script forms.

Interactive (a terminal): one joint at a time, nudge the servo with the keys to each reference pose
the screen names and press Enter; the tool fits zero pulse, us/deg and direction, shows the fit and
its residual, then takes the safe range (each mechanical end, backed off a margin), then the
gripper's open and closed pulses, and asks before saving. ``q`` or Ctrl-C leaves at any point with
the servos held where they are and nothing saved (exit 130). See docs/calibration.md.
"""

from __future__ import annotations

import json
import math
import sys
from dataclasses import fields, replace
from pathlib import Path

import numpy as np

from armctl import motion
from armctl.calibration import procedures as cb
from armctl.calibration.servo import (
    MAX_PWM_CHANNEL,
    PULSE_RANGE_US,
    SERVOKIT_ACTUATION_RANGE_DEG,
    Calibration,
    calibration_file,
    load_calibration,
    save_path_for,
    servokit_servo,
    with_servo,
)
from armctl.cli import EXIT_INTERRUPTED, add_command
from armctl.cli.calibrate_camera import camera_options, cmd_camera_calibrate
from armctl.cli.calibrate_flow import Quit, Terminal, Workflow
from armctl.cli.common import calibration_comment, open_robot, save_calibration_file, saved_line, setup
from armctl.core.units import parse_float, parse_length
from armctl.errors import BadInputError, ConfigError, LinkError, Terminated
from armctl.model.arm import Arm, load_arm
from armctl.model.validate import must_be_positive, positive_text

EPILOG = """\
interactive keys on PWM servos (shown on screen): k/j or Right/Left +/- one board step (0.5 us; on a PCA9685
one count, 4.88 us at 50 Hz), K/J or Up/Down +/-10 us, ]/[ or PgUp/PgDn +/-100 us (to the nearest step),
g go to the estimate, Enter record, s skip joint, q or Ctrl-C quit;
bus servos are moved by hand (Enter records where each one is).
script forms:
  armctl calibrate --joint 1 --angle 90 --us 2166       append a reference point to the points file
  armctl calibrate --joint 1 --min-us 820 --max-us 2180  append a safe range
  armctl calibrate --joint gripper --angle open --us 1800
  armctl calibrate --fit [--out FILE]                    fit the points file and save the calibration
  armctl calibrate --show [FILE|NAME]                    print a calibration (NAME: shipped, e.g. mearm-pca9685)
  armctl calibrate --compare A.yaml B.yaml               how two calibrations differ (deg, mm)
  armctl calibrate --check                               move through a square, print where to measure
  armctl calibrate --camera 0 --marker 0:30              calibrate by a camera (README 'Calibrating with a camera')
  armctl calibrate --push-limits                         write the calibration's min/max to the board
  armctl --arm so101 calibrate --from-lerobot my_arm     LeRobot's calibration my_arm as an armctl YAML
  armctl calibrate --joint 1 --from-servokit 750 2250    joint 1 as Adafruit ServoKit drives it after
                                                         set_pulse_width_range(750, 2250) (docs/pca9685.md)
exit codes: 0 ok, 2 bad input or a refused fit, 3 check square unreachable, 4 board error or
board limits that differ from the calibration, 130 quit (q or Ctrl-C; nothing saved)."""


DESCRIPTION = (
    "Guided servo calibration: reference poses -> zero pulse, us/deg and direction "
    "(least squares, with residual), safe range, gripper open/closed; saved atomically with a .bak. Bus servos "
    "(Feetech): the torque goes off and you move each joint by hand; positions are in steps."
)


def register(sub, parents) -> None:
    p = add_command(sub, "calibrate", parents=parents, epilog=EPILOG, description=DESCRIPTION)
    _mode_options(p)
    _record_options(p)
    _check_options(p)
    camera_options(p)
    p.set_defaults(func=cmd_calibrate)


def _mode_options(p) -> None:
    """What ``armctl calibrate`` does instead of the interactive calibration (one at most), and --from-servokit's."""
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--fit", action="store_true", help="fit the points file and save the calibration")
    mode.add_argument(
        "--show",
        nargs="?",
        const="",
        metavar="FILE",
        help="print a calibration: a file, or a shipped one by name (mearm-pca9685); default the arm's",
    )
    mode.add_argument("--compare", nargs=2, metavar=("A", "B"), help="compare two calibration files")
    mode.add_argument("--check", action="store_true", help="move through a square; print where each corner is")
    mode.add_argument("--push-limits", action="store_true", help="write the calibration's min/max to the board")
    mode.add_argument(
        "--from-lerobot",
        nargs="?",
        const="",
        metavar="FILE|ID",
        help="write the armctl calibration a LeRobot calibration means (its JSON file, or the id LeRobot saved it "
        "under; default: the only one LeRobot has) to --out (default ~/.config/armctl/calibration/<arm>.yaml)",
    )
    mode.add_argument(
        "--from-servokit",
        nargs=2,
        metavar=("MIN_US", "MAX_US"),
        help="set --joint J's servo as Adafruit's ServoKit drives it after set_pulse_width_range(MIN_US, MAX_US): "
        "ServoKit angle a -> MIN + (MAX - MIN) * a / --actuation-range us; saved to --out (see docs/pca9685.md)",
    )
    p.add_argument(
        "--actuation-range",
        metavar="DEG",
        help="--from-servokit: the servo's actuation_range in ServoKit (default 180)",
    )
    p.add_argument(
        "--zero-at",
        metavar="DEG",
        help="--from-servokit: the ServoKit angle at which the joint is at 0 deg (default: half the actuation range)",
    )
    p.add_argument(
        "--reverse",
        action="store_true",
        help="--from-servokit: the joint angle grows as ServoKit's angle shrinks",
    )
    p.add_argument("--channel", metavar="N", help="--from-servokit: kit.servo[N], the PCA9685 output (default: kept)")


def _record_options(p) -> None:
    """A reference point or a safe range recorded (script form), the files, and the fit's and the bus's options."""
    p.add_argument("--joint", metavar="J", help="record: joint 1..n, a joint name, or 'gripper'")
    p.add_argument("--angle", metavar="DEG", help="record: the joint angle (deg; gripper: also open|closed)")
    p.add_argument(
        "--us",
        metavar="US",
        help="record: the pulse (us; bus servos: the position, steps) that puts the joint at --angle",
    )
    p.add_argument("--min-us", metavar="US", help="record: the safe range's low pulse (us; bus servos: steps)")
    p.add_argument("--max-us", metavar="US", help="record: the safe range's high pulse (us; bus servos: steps)")
    p.add_argument(
        "--points", metavar="FILE", help="points file (default <arm>.points.yaml beside where the calibration is saved)"
    )
    p.add_argument(
        "--out",
        metavar="FILE",
        help="save the calibration here (default: over the file in use, or ~/.config/armctl/calibration/<arm>.yaml "
        "when that is the example shipped with armctl)",
    )
    p.add_argument(
        "--max-residual-deg",
        default=str(cb.DEFAULT_MAX_RESIDUAL_DEG),
        metavar="DEG",
        help=f"refuse a fit with a point further than this off the line (default {cb.DEFAULT_MAX_RESIDUAL_DEG:g})",
    )
    p.add_argument(
        "--margin-deg",
        default=str(cb.DEFAULT_MARGIN_DEG),
        metavar="DEG",
        help=f"interactive: back off each mechanical end by this much (default {cb.DEFAULT_MARGIN_DEG:g})",
    )
    p.add_argument(
        "--write-offsets",
        action="store_true",
        help="bus servos: also write each joint's homing offset to its EEPROM so its zero reads 2048 steps",
    )
    p.add_argument(
        "--force",
        action="store_true",
        help="with --write-offsets: write them even over the homing offsets another program (LeRobot) stored",
    )


def _check_options(p) -> None:
    """--check's square, and the output options."""
    p.add_argument("--side", metavar="LEN", help="check: side of the square (m or 200mm; default reach/4)")
    p.add_argument("--center", nargs=2, metavar=("X", "Y"), help="check: centre of the square (m)")
    p.add_argument(
        "--height",
        metavar="Z",
        help="check on an arm with a base: height of the horizontal square (m or 80mm; default: the tool's at home)",
    )
    p.add_argument("--speed", default="100", metavar="MM_S", help="check: tool speed, mm/s (default 100)")
    p.add_argument("--json", action="store_true", help="check/show/compare: print JSON")
    p.add_argument("--wire-log", metavar="FILE", help="write every byte sent and received, with times, to FILE")


def cmd_calibrate(args) -> int:
    if args.compare:
        return _compare(args)
    if args.show is not None:
        return _show(args)
    if args.from_lerobot is not None:
        return _from_lerobot(args)
    arm, cal = setup(args)
    if args.camera is not None:
        return cmd_camera_calibrate(args, arm, cal)
    if args.from_servokit is not None:
        return _from_servokit(args, arm, cal)
    if args.actuation_range is not None or args.zero_at is not None or args.reverse or args.channel is not None:
        raise BadInputError("--actuation-range, --zero-at, --reverse and --channel go with --from-servokit MIN MAX")
    if args.joint is not None or args.angle is not None or args.us is not None or args.min_us or args.max_us:
        return _record(args, arm, cal)
    if args.fit:
        return _fit(args, arm, cal)
    if args.check:
        return _check(args, arm, cal)
    if args.push_limits:
        return _push_limits(args, arm, cal)
    return _interactive(args, arm, cal)


# --- setup -------------------------------------------------------------------------------------------------


def _save_path(args, arm: Arm, cal: Calibration) -> Path:
    """Where a new calibration goes: --out, else over the file in use unless it ships with armctl."""
    return Path(args.out) if args.out else save_path_for(arm.name, cal.source)


def _points_path(args, arm: Arm, cal: Calibration) -> Path:
    if args.points:
        return Path(args.points)
    return _save_path(args, arm, cal).with_name(f"{arm.name}.points.yaml")


def _number(text, what: str) -> float:
    return parse_float(str(text), what=what)


# --- script forms ------------------------------------------------------------------------------------------


def _record(args, arm: Arm, cal: Calibration) -> int:
    if args.joint is None:
        raise BadInputError("recording a point needs --joint J with --angle DEG --us US (or --min-us/--max-us)")
    index = cb.parse_servo_name(args.joint, cal)
    path = _points_path(args, arm, cal)
    servo = cal.servos[index]
    bottom, top = servo.full_range
    unit, what = servo.unit, "pulse widths" if servo.unit == "us" else "bus servo positions: --us takes steps"
    if args.angle is not None or args.us is not None:
        if args.angle is None or args.us is None or args.min_us or args.max_us:
            raise BadInputError("a reference point is --joint J --angle DEG --us US (nothing else)")
        angle_text = str(args.angle).strip().lower()
        if index == len(cal.joints) and angle_text in ("open", "closed"):
            if arm.gripper is None:
                raise BadInputError(f"arm {arm.name!r} has no gripper (no open/closed angles)")
            angle = math.degrees(arm.gripper.open_rad if angle_text == "open" else arm.gripper.closed_rad)
        else:
            angle = _number(args.angle, "--angle")
        us = _number(args.us, "--us")
        if not bottom <= us <= top:
            raise BadInputError(f"--us {us:g}: outside {bottom:g}..{top:g} {unit} ({what})")
        rec = cb.Record(index, angle_deg=angle, us=us)
    else:
        if args.min_us is None or args.max_us is None:
            raise BadInputError("a safe range is --joint J --min-us US --max-us US")
        lo, hi = _number(args.min_us, "--min-us"), _number(args.max_us, "--max-us")
        if not bottom <= lo < hi <= top:
            raise BadInputError(
                f"--min-us/--max-us: need {bottom:g} <= min < max <= {top:g} {unit} ({what}), got {lo:g} and {hi:g}"
            )
        rec = cb.Record(index, min_us=lo, max_us=hi)
    line = cb.append_record(path, cal, rec)
    print(f"{path}: {line}")
    return 0


def _fit(args, arm: Arm, cal: Calibration) -> int:
    path = _points_path(args, arm, cal)
    if not path.exists():
        raise BadInputError(
            f"no points file {path}: record points first (armctl calibrate --joint 1 --angle 0 --us ...)"
        )
    records = cb.load_points(path, cal)
    limit = _number(args.max_residual_deg, "--max-residual-deg")
    report = cb.fit_calibration(records, cal, arm, max_residual_deg=limit)
    if not report.changed:
        raise BadInputError(f"{path}: no servo has reference points; nothing to fit")
    out = save_calibration_file(
        report.cal, _save_path(args, arm, cal), calibration_comment(f"fitted by armctl calibrate --fit from {path}")
    )
    for line in report.lines:
        print(line)
    print(saved_line(out))
    return 0


def _from_servokit(args, arm: Arm, cal: Calibration) -> int:
    """``--joint J --from-servokit MIN_US MAX_US``: servo J mapped as ServoKit maps it (``servokit_servo``)."""
    if args.joint is None:
        raise BadInputError("--from-servokit MIN_US MAX_US needs --joint J (1..n, a joint name, or 'gripper')")
    if cal.unit != "us":
        raise BadInputError("--from-servokit maps a PWM servo (pulses in us); this calibration drives bus servos")
    index = cb.parse_servo_name(args.joint, cal)
    lo, hi = (_number(v, f"--from-servokit {what}") for v, what in zip(args.from_servokit, ("MIN_US", "MAX_US")))
    rng = None if args.actuation_range is None else _number(args.actuation_range, "--actuation-range")
    zero_at = None if args.zero_at is None else _number(args.zero_at, "--zero-at")
    channel = None
    if args.channel is not None:
        channel = int(_number(args.channel, "--channel"))
        if str(args.channel).strip() != str(channel) or not 0 <= channel <= MAX_PWM_CHANNEL:
            raise BadInputError(f"--channel {args.channel}: a PCA9685 output, 0..{MAX_PWM_CHANNEL} (16.. a 2nd board)")
    kw = {"actuation_range_deg": rng, "zero_at_deg": zero_at, "reverse": args.reverse, "channel": channel}
    servo = servokit_servo(cal.servos[index], lo, hi, **kw)
    new = with_servo(cal, index, **{f.name: getattr(servo, f.name) for f in fields(servo)})
    new.check_arm(arm)  # (saving reads the whole file back: two servos on one channel are refused there)
    a, b = (math.degrees(v) for v in servo.angle_range_rad())
    rng_text = f"{SERVOKIT_ACTUATION_RANGE_DEG if rng is None else rng:g} deg"
    out = save_calibration_file(
        new,
        _save_path(args, arm, cal),
        calibration_comment(
            f"{servo.name} from Adafruit ServoKit's set_pulse_width_range({lo:g}, {hi:g}), actuation_range "
            f"{rng_text}, by armctl calibrate --from-servokit"
        ),
    )
    print(
        f"{servo.name}: ServoKit set_pulse_width_range({lo:g}, {hi:g}), actuation_range {rng_text} -> channel "
        f"{servo.channel}, zero_us {servo.zero_us:.1f}, {servo.us_per_deg:.4g} us/deg, direction {servo.direction:+d}, "
        f"{servo.min_us:g}..{servo.max_us:g} us = joint {a:.1f}..{b:.1f} deg"
    )
    print(saved_line(out))
    return 0


def _from_lerobot(args) -> int:
    """``--from-lerobot [FILE|ID]``: the armctl calibration a LeRobot calibration means, saved as YAML."""
    from armctl.calibration import lerobot
    from armctl.cli import choose_arm

    arm = load_arm(choose_arm(args))
    spec = args.from_lerobot
    if not spec:
        found = lerobot.lerobot_ids(lerobot.lerobot_robot(arm).subdirs)
        every = [(sub, i) for sub, ids in found.items() for i in ids]
        if len(every) != 1:
            listed = "; ".join(f"{', '.join(ids)} (in {sub})" for sub, ids in found.items()) or "none"
            raise BadInputError(
                f"--from-lerobot: give the file or id ({len(every)} LeRobot calibrations under "
                f"{lerobot.lerobot_calibration_root()}: {listed})"
            )
        spec = every[0][1]
    # a file, lerobot:ID (as --calibration takes it) or a bare ID
    subdirs = lerobot.lerobot_robot(arm).subdirs
    path = Path(spec) if Path(spec).is_file() else lerobot.resolve(spec, subdirs)
    path = path or lerobot.find_lerobot_calibration(spec, subdirs)
    cal, notes = lerobot.from_lerobot(lerobot.read_lerobot_file(path), arm, path)
    out = Path(args.out) if args.out else save_path_for(arm.name, path)
    comment = (
        calibration_comment(f"converted from LeRobot's {path} by armctl calibrate --from-lerobot")
        + "\nAngles are LeRobot's: each joint's zero is the middle of the range recorded there (4095 steps a turn),"
        + "\nmapped onto armctl's angles through the arm's URDF; the gripper's closed..open is LeRobot's 0..100 %."
        + "\nhoming_offset: the value in the servo's EEPROM this was made with, checked when the port opens; the"
        + "\npositions the servos report already carry it (it is never applied again)."
    )
    out = save_calibration_file(replace(cal, source=str(out)), out, comment)
    for s in cal.servos:
        mid_deg = math.degrees(float(s.angle_rad((s.min_steps + s.max_steps) / 2)))
        zero = "" if s is cal.gripper else f"   LeRobot's 0 deg is armctl's {mid_deg:.1f} deg"
        print(f"  {s.name:<14} id {s.id}   range {s.min_steps:g}..{s.max_steps:g} steps{zero}")
    for h in cal.held:
        print(f"  {h.name:<14} id {h.id}   held at {h.position_steps:g} steps (no joint of arm {arm.name!r})")
    for note in notes:
        print(f"note: {note}")
    print(saved_line(out) + f"; use it with --calibration {out}, or give LeRobot's directly: --calibration lerobot:ID")
    return 0


def _keys(servo) -> dict:
    """A servo's entry as its YAML keys (``homing_offset``, ``curve_pct``, ``backlash_deg`` only where the
    calibration states them)."""
    out = {f.name: getattr(servo, f.name) for f in fields(servo)}
    if out.get("homing_offset", 0) is None:
        del out["homing_offset"]
    return {k: v for k, v in out.items() if not (k in ("curve_pct", "backlash_deg") and v == 0)}


def _show(args) -> int:
    from armctl.calibration.lerobot import open_calibration, resolve

    if args.show and resolve(args.show) is not None:  # LeRobot's: as the armctl calibration it means
        from armctl.cli import choose_arm

        cal = open_calibration(args.show, load_arm(choose_arm(args)))[0]
    elif args.show:
        cal = load_calibration(calibration_file(args.show))
    else:
        _, cal = setup(args)
    if args.json:
        print(
            json.dumps(
                {
                    "source": cal.source,
                    "arm": cal.arm,
                    "version": cal.version,
                    "servos": [_keys(s) for s in cal.servos],  # YAML keys
                    **({"hold": [_keys(h) for h in cal.held]} if cal.held else {}),
                },
                indent=1,
            )
        )
        return 0
    print("\n".join(cb.show_lines(cal)))
    return 0


def _compare(args) -> int:
    from armctl.calibration.lerobot import open_calibration, resolve

    arm = load_arm(args.arm)
    # LeRobot's (lerobot:ID or its JSON) as the armctl calibration it means on --arm, as --show takes them
    a, b = (
        open_calibration(p, arm)[0] if resolve(p) is not None else load_calibration(calibration_file(p))
        for p in args.compare
    )
    if arm.name != a.arm:  # --arm left at its default: the arm the calibration names, if it is a preset
        try:
            arm = load_arm(a.arm)
        except ConfigError:
            pass
    lines, worst = cb.compare_lines(a, b, arm)
    if args.json:
        print(json.dumps({"a": a.source, "b": b.source, "max_tool_distance_m": worst}))
        return 0
    print("\n".join(lines))
    return 0


def _push_limits(args, arm: Arm, cal: Calibration) -> int:
    with open_robot(args, arm, cal) as robot:
        written = robot.push_limits()
        if not written:
            print(f"{robot.info.firmware} on {robot.port} stores no limits (servos get the calibrated range)")
            return 0
        for i, (_, address, lo, hi) in enumerate(written):
            label = cb.servo_label(robot.calibration, i)
            print(f"{label}: channel {address} limits {lo:g}..{hi:g} us written to the board")
    return 0


# --- check: a square to measure ----------------------------------------------------------------------------


def _check(args, arm: Arm, cal: Calibration) -> int:
    if args.height is not None and not arm.has_base:
        raise BadInputError(f"--height: arm '{arm.name}' works in a vertical plane (no base): its square is in it")
    side = parse_length(args.side, what="--side") if args.side else None
    if side is not None and not side > 0:
        raise must_be_positive("--side", args.side)
    center = None
    if args.center:
        center = (parse_length(args.center[0], what="--center X"), parse_length(args.center[1], what="--center Y"))
    speed = positive_text(str(args.speed), "--speed", unit="mm/s") / 1000.0
    if arm.has_base:  # a square in the horizontal plane at a stated height
        from armctl.model.kinematics import tool_point

        z = parse_length(args.height, what="--height") if args.height else float(tool_point(arm, arm.home_rad)[2])
        corners = cb.check_square_at(arm, z, center_m=center, side_m=side)
    else:
        corners = cb.check_square(arm, center_m=center, side_m=side)
    for c in corners:  # every corner reachable before anything moves
        motion.solve_pose(arm, c, None, arm.home_rad)
    rows = []
    side_mm = float(np.linalg.norm(corners[1] - corners[0])) * 1000
    axes = "xyz"[: len(corners[0])]
    with open_robot(args, arm, cal) as robot:
        if not args.json:
            where = "x right, y up from the shoulder axis"
            if arm.has_base:
                where = (
                    f"in the horizontal plane at z = {corners[0][2] * 1000:.1f} mm, seen from above; x, y on the "
                    "table from the base axis"
                )
            print(f"check square: side {side_mm:.1f} mm, corners counter-clockwise; {where}")
        for k, c in enumerate(corners):
            robot.move_to(*c, speed=speed, label=f"check corner {k + 1}")
            row = {"corner": k + 1, "target_m": [float(v) for v in c]}
            text = f"corner {k + 1}: should be at " + " ".join(f"{a}={v * 1000:7.1f} mm" for a, v in zip(axes, c))
            pose = robot.where(settle=True)
            if pose.measured:
                err = float(np.linalg.norm(pose.tool_m - c))
                row.update({"true_m": [float(v) for v in pose.tool_m], "error_m": err})
                text += (
                    f"   {'simulated arm' if 'simulat' in pose.detail else 'measured'} at "
                    + " ".join(f"{a}={v * 1000:7.1f} mm" for a, v in zip(axes, pose.tool_m))
                    + f"   off by {err * 1000:.2f} mm"
                )
            rows.append(row)
            if args.json:
                continue
            print(text, flush=True)
            if not pose.measured and sys.stdin.isatty() and k + 1 < len(corners):
                input("  measure it, then press Enter for the next corner ")
        port = robot.port
    if args.json:
        print(json.dumps({"side_m": side_mm / 1000, "port": port, "corners": rows}, indent=1))
    return 0


def _interactive(args, arm: Arm, cal: Calibration) -> int:
    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        raise BadInputError(
            "the interactive calibration needs a terminal; in scripts record points with --joint J --angle DEG "
            "--us US and fit them with --fit (see armctl calibrate --help)"
        )
    margin = _number(args.margin_deg, "--margin-deg")
    max_res = _number(args.max_residual_deg, "--max-residual-deg")
    out = _save_path(args, arm, cal)
    with open_robot(args, arm, cal, calibrating=True) as robot:
        if robot.backend.caps.releases:  # bus servos: moved by hand, they say where they are
            from armctl.cli.calibrate_bus import interactive

            return interactive(args, robot, arm, cal, out=out, margin_deg=margin, max_residual=max_res)
        values = robot.servo_values()
        old_limits = robot.board_limits()
        for i, lims in enumerate(old_limits or ()):  # the ends may lie outside the old range: open it up
            if tuple(lims) != PULSE_RANGE_US:
                robot.set_board_limits(i, *PULSE_RANGE_US)
        nudger = cb.Nudger(robot, values)
        term = Terminal()
        flow = Workflow(
            term,
            nudger,
            arm,
            robot.calibration,
            header=f"armctl calibrate: arm {arm.name}, {robot.info.firmware} on "
            + (robot.port if len(robot.port) <= 60 else robot.port[:57] + "..."),
            out=out,
            margin_deg=margin,
            max_residual_deg=max_res,
        )
        try:
            try:
                new = flow.run()
            except KeyboardInterrupt as exc:  # Ctrl-C, or SIGTERM/SIGHUP (Terminated)
                raise Quit("ctrl-c") from exc
            if new is None:
                raise Quit("q")
            robot.settle()
            comment = calibration_comment("recorded by armctl calibrate") + "\n" + "\n".join(flow.points)
            # the new mapping, in the file's own channels and pins; a servo skipped keeps the file's entry (not the
            # range this board narrowed it to: StandardFirmata's 544 us floor is no property of the servo)
            kept = [
                f if n is s else replace(n, channel=f.channel)
                for n, s, f in zip(new.servos, robot.calibration.servos, cal.servos)
            ]
            k = len(cal.joints)
            saved = replace(
                cal, joints=tuple(kept[:k]), gripper=kept[k] if cal.gripper is not None else None, source=str(out)
            )
            out = save_calibration_file(saved, out, comment)
            robot.use_calibration(saved, out)  # the pose is remembered, and the limits pushed, by the new one
            if old_limits is not None:
                robot.push_limits()
        except Quit as quit:
            term.restore()
            _hold(robot, old_limits)
            if isinstance(quit.__cause__, Terminated):
                raise quit.__cause__ from None  # the command line says which signal and exits 143/129
            print(
                f"armctl calibrate: quit: nothing saved ({out} unchanged); the servos hold where they are",
                file=sys.stderr,
            )
            return EXIT_INTERRUPTED
        finally:
            term.restore()
    print("\n".join(flow.notes))
    print(saved_line(out))
    return 0


def _hold(robot, old_limits) -> None:
    """Stop where the servos are, and put back the board limits the session opened up where possible."""
    try:
        robot.hold()
        if not old_limits:
            return
        held = robot.board_status().values
        for i, s in enumerate(robot.calibration.servos):
            lo, hi = old_limits[i]
            w = held[s.channel] if s.channel < len(held) else None
            if (lo, hi) == PULSE_RANGE_US:
                continue
            if w is None or lo <= w <= hi:
                robot.set_board_limits(i, lo, hi)
            else:
                print(
                    f"armctl calibrate: channel {s.channel} is held at {w:g} us, outside its stored limits "
                    f"{lo:g}..{hi:g} us: the board keeps 500..2500 until you calibrate or push limits",
                    file=sys.stderr,
                )
    except LinkError as exc:
        print(f"armctl calibrate: {exc}", file=sys.stderr)
