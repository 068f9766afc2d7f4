"""``armctl camera check --camera SRC``: the tool's error over a grid of the table, as a 3D printer's bed mesh.

The arm goes to each point of a grid over its reach (``--spacing``, at height ``--z`` on a base arm, in its plane on
a planar one), the camera says where the tool really is, and the map of the differences
(``armctl.calibration.accuracymap``) is printed, plotted (``--plot``) and saved (``--out``; with ``--save`` into
the arm's calibration, which then corrects every target through it)."""

from __future__ import annotations

import json
import sys

import numpy as np

from armctl.errors import BadInputError

EPILOG = """\
examples:
  armctl --arm mearm camera check --camera 0 --z 30mm --plot map.png
  armctl --arm mearm --port 'armsim://?truth=truth.yaml' camera check --camera simcam:// --spacing 25 --save
the camera: calibrated with the arm first (armctl calibrate --camera SRC --marker ID:SIZE_MM), its tool marker in
view everywhere on the grid. exit codes: 0 measured, 2 bad input (no camera, the marker never seen), 4 link error."""


def register_check(what, formatter_class) -> None:
    from armctl.cli.common import arm_camera_options

    c = what.add_parser(
        "check",
        help="measure the tool's error over a grid of the table (an accuracy map); plot and save it",
        description=__doc__.split("\n\n", 1)[1],
        epilog=EPILOG,
        formatter_class=formatter_class,
    )
    c.add_argument("--camera", required=True, metavar="SRC", help="the camera that sees the arm: 0, simcam://, ...")
    c.add_argument("--z", metavar="MM", help="the grid's height, base arms (default: the tool's height at home)")
    c.add_argument("--spacing", default="30", metavar="MM", help="between grid points (default 30)")
    c.add_argument("--frames", default="5", metavar="N", help="pictures averaged at each point (default 5)")
    c.add_argument("--plot", metavar="FILE.png", help="draw the map")
    c.add_argument("--out", metavar="FILE.yaml", help="save the map alone")
    c.add_argument("--save", action="store_true", help="save the map into the arm's calibration: targets go through it")
    c.add_argument("--json", action="store_true", help="print JSON: the map and its figures")
    arm_camera_options(c)
    c.set_defaults(func=cmd_check)


def _grid(args, arm):
    from armctl.calibration.accuracymap import grid_targets
    from armctl.core.units import parse_float

    spacing = parse_float(args.spacing, what="--spacing") / 1000.0
    frames = parse_float(args.frames, what="--frames")
    if not 0.005 <= spacing <= 0.5 or frames != int(frames) or not 1 <= frames <= 100:
        raise BadInputError("--spacing: 5..500 mm; --frames: a whole number 1..100")
    if args.z is not None and not arm.has_base:
        raise BadInputError(f"--z: arm '{arm.name}' works in a plane: its grid is the plane itself")
    z = float(arm.tool_point(arm.home_rad)[2]) if arm.has_base else 0.0
    if args.z is not None:
        z = parse_float(args.z.removesuffix("mm"), what="--z") / 1000.0
    xs, ys, targets = grid_targets(arm, z, spacing)
    if not len(targets):
        raise BadInputError(f"no point of a {spacing * 1000:g} mm grid at z = {z * 1000:g} mm is in the arm's reach")
    order = np.lexsort((targets[:, 0] * np.where(np.round(targets[:, 1] / spacing) % 2, -1, 1), targets[:, 1]))
    return xs, ys, z, targets[order], int(frames)  # row by row, every other row backwards: short moves


def measure(robot, targets, frames: int, progress=None) -> np.ndarray:
    """Where the camera sees the tool (x, y across its view: ``camera.tool_across_view``) after a move to each
    target (NaN rows: not in view)."""
    from armctl.robot.camera import tool_across_view

    landed = np.full((len(targets), 2), np.nan)
    for i, t in enumerate(targets):
        robot.move_to(*t, path="joint")
        robot.board.settle()
        seen = tool_across_view(robot.camera, len(t), frames=frames)
        if seen is not None:
            landed[i] = seen
        if progress is not None:
            progress(i + 1, len(targets))
    return landed


def cmd_check(args) -> int:
    from armctl.calibration.accuracymap import AccuracyMap, plot_map
    from armctl.cli.common import open_robot, setup

    arm, cal = setup(args)
    xs, ys, z, targets, frames = _grid(args, arm)
    args.arm_camera = args.camera
    with open_robot(args, arm, cal) as robot:
        if robot.camera.cam_to_base is None:
            raise BadInputError(
                f"camera {args.camera}: where it stands is not known: calibrate it with the arm first (armctl "
                "calibrate --camera SRC --marker ID:SIZE_MM)"
            )
        tty = sys.stderr.isatty() and not args.json
        landed = measure(robot, targets, frames, (lambda k, n: print(f"\r{k}/{n} points", end="", file=sys.stderr))
                         if tty else None)  # fmt: skip
        if tty:
            print(file=sys.stderr)
    seen = np.all(np.isfinite(landed), axis=1)
    if not seen.any():
        raise BadInputError(
            f"camera {args.camera}: the tool's marker was never seen on the grid ({len(targets)} points)"
        )
    amap = AccuracyMap.from_points(xs, ys, z, targets[seen, :2], landed[seen])
    err = np.linalg.norm(landed[seen] - targets[seen, :2], axis=1) * 1000.0
    report = {
        "points": len(targets),
        "measured": int(seen.sum()),
        "mean_mm": float(err.mean()),
        "max_mm": float(err.max()),
        "z_m": z,
        "accuracy_map": amap.to_dict(),
    }
    if args.plot:
        plot_map(amap, args.plot)
    report["saved"] = _save(args, amap, arm, cal)
    if args.json:
        print(json.dumps(report, indent=1))
        return 0
    worst = targets[seen][int(np.argmax(err))]
    at = " ".join(f"{v * 1000:.0f}" for v in worst)
    print(
        f"{report['measured']} of {report['points']} grid points measured at z = {z * 1000:.0f} mm: tool error "
        f"across the camera's view mean {report['mean_mm']:.2f} mm, max {report['max_mm']:.2f} mm (at {at} mm)"
    )
    for line in report["saved"]:
        print(line)
    if args.plot:
        print(f"plotted {args.plot}")
    return 0


def _save(args, amap, arm, cal) -> list[str]:
    """Write the map where ``--out`` / ``--save`` say; the lines saying where."""
    out = []
    if args.out:
        import yaml

        from armctl.core.paths import atomic_write

        try:
            atomic_write(args.out, yaml.safe_dump({"accuracy_map": amap.to_dict()}, sort_keys=False))
        except OSError as exc:
            raise BadInputError(f"--out {args.out}: cannot write it ({exc.strerror or exc})") from None
        out.append(f"saved {args.out}")
    if args.save:
        from armctl.calibration.servo import save_path_for
        from armctl.cli.common import calibration_comment, save_calibration_file, saved_line

        path = save_path_for(arm.name, cal.source)
        saved = save_calibration_file(cal.with_accuracy_map(amap), path, calibration_comment("with an accuracy map"))
        out.append(saved_line(saved) + ": targets now go through the map")
    return out
