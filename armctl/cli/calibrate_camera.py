"""``armctl calibrate --camera SRC --marker ID:SIZE_MM``: the arm calibrated by a camera on a stand over the table
(eye-to-hand), an ArUco marker stuck face up on the tool.

1. A first look: a few moves near home, the marker's corners against where armctl believes the tool is, give the
   camera's place roughly (``cv2.solvePnP``), so the pose set can keep the marker in view.
2. The pose set (``armctl.calibration.cameraposes``): every joint over its range, each pose reached from both
   directions of every joint (backlash), plus held-out poses; the arm moves through it and the camera sees the
   marker at each (corners averaged over ``--frames`` pictures).
3. The fit (``armctl.calibration.camerafit``): the camera's place, each joint's zero, direction, scale, curve and
   backlash, the link lengths, by least squares on the marker's pixels; each with its uncertainty, parameters
   the views cannot tell apart named and held; the tool's error on the held-out poses before and after.
4. The calibration armctl drives by (version 2 where it needs it), the camera's place in it, saved.

A ChArUco board lying on the table where the user says (``--table-board X,Y,YAW``) fixes what a camera alone
cannot see: the base's zero (the camera's yaw) and the shoulder's height. Nothing is saved, and nothing moves
after the fit, when the fit is refused (exit 2, the parameter named)."""

from __future__ import annotations

import json
import math
import sys
import time

import numpy as np

from armctl.errors import BadInputError

FIRST_LOOK_POSES = 10
FIRST_LOOK_DEG = 20.0
SPEED_FRACTION = 0.8  # the calibration's moves, of each joint's speed limit


def camera_options(p) -> None:
    """``armctl calibrate``'s options for calibrating by camera (``--camera`` switches to it)."""
    g = p.add_argument_group("calibrating by camera (README 'Calibrating with a camera')")
    g.add_argument("--camera", metavar="SRC", help="calibrate by this camera: 0, /dev/video0, simcam://")
    g.add_argument("--marker", default="0:30", metavar="ID:SIZE_MM", help="the tool's ArUco marker (default 0:30)")
    g.add_argument("--camera-file", metavar="FILE", help="the camera's intrinsics (default: its camera.yaml)")
    g.add_argument(
        "--table-board",
        metavar="X,Y,YAW",
        help="a ChArUco board (--board) lies flat on the table, its top-left corner (as printed) at X, Y mm in the "
        "base frame, its top edge YAW deg from the base's x axis: fixes the base's zero and the shoulder's height",
    )
    g.add_argument("--board", metavar="SPEC", help="the table board (default charuco:7x5@30mm/22mm:5x5_100)")
    g.add_argument("--poses", default="160", metavar="N", help="poses to fit on, each seen twice (default 160)")
    g.add_argument("--frames", default="2", metavar="N", help="pictures averaged at each pose (default 2)")


def _numbers(args):
    from armctl.cli.common import parse_marker
    from armctl.core.units import parse_float

    marker = parse_marker(args.marker, "--marker")
    n, frames = parse_float(args.poses, what="--poses"), parse_float(args.frames, what="--frames")
    if n != int(n) or not 12 <= n <= 2000 or frames != int(frames) or not 1 <= frames <= 30:
        raise BadInputError("--poses: a whole number 12..2000; --frames: 1..30")
    return marker, int(n), int(frames)


# --- the camera's first look ------------------------------------------------------------------------------


def _corners_seen(camera, frames: int):
    seen = camera.sightings(frames).get(camera.tool_marker[0])
    return None if not seen else np.mean(seen, axis=0)


def first_look(robot, camera, frames: int, seed: int = 0):
    """The camera's place, roughly, from the marker seen at a few poses near home (``CameraView``)."""
    from armctl.calibration.cameramodel import marker_corners_m
    from armctl.calibration.cameraposes import CameraView
    from armctl.model.kinematics import limit_excess
    from armctl.vision.sources import need_cv2

    arm, rng = robot.arm, np.random.default_rng(seed)
    home = np.asarray(arm.home_rad, dtype=float)
    tries = home + rng.uniform(-1, 1, size=(400, arm.n)) * math.radians(FIRST_LOOK_DEG)
    tries = tries[np.all(limit_excess(arm, tries) <= -0.02, axis=-1)][: FIRST_LOOK_POSES - 1]
    obj, img = [], []
    for q in [home, *tries]:
        robot.move_joints(q, speed_fraction=SPEED_FRACTION / 2)
        robot.board.settle()
        corners = _corners_seen(camera, frames)
        if corners is not None:
            T = arm.tool_pose(q)
            obj.append(marker_corners_m(camera.tool_marker[1]) @ T[:3, :3].T + T[:3, 3])
            img.append(corners)
    if len(obj) < 3:
        raise BadInputError(
            f"camera {camera.name}: marker {camera.tool_marker[0]} was seen at {len(obj)} of {1 + len(tries)} poses "
            f"near home: is it on the tool, face up, in view, from the {camera.dictionary} dictionary?"
        )
    cv2 = need_cv2()
    ok, rvec, tvec = cv2.solvePnP(np.concatenate(obj), np.concatenate(img), camera.model.matrix, camera.model.dist)
    if not ok:
        raise BadInputError(f"camera {camera.name}: the first look gives no camera pose (cv2.solvePnP failed)")
    base_to_cam = np.eye(4)
    base_to_cam[:3, :3], base_to_cam[:3, 3] = cv2.Rodrigues(rvec)[0], tvec.ravel()
    return CameraView(camera.model.matrix, tuple(camera.model.size), np.linalg.inv(base_to_cam))


# --- the motion ---------------------------------------------------------------------------------------------


def sight(robot, camera, poses, frames: int, progress=None) -> np.ndarray:
    """Move through the pose set; the marker's corners (k, 4, 2) at each observing waypoint (NaN: not seen)."""
    out = []
    for i, q in enumerate(poses.waypoints_rad):
        robot.move_joints(q, speed_fraction=SPEED_FRACTION)
        if poses.observe[i]:
            robot.board.settle()
            corners = _corners_seen(camera, frames)
            out.append(np.full((4, 2), np.nan) if corners is None else corners)
        if progress is not None:
            progress(i + 1, len(poses.waypoints_rad))
    return np.array(out).reshape(-1, 4, 2)


def table_reference_from(args, camera):
    """The ``TableReference`` of ``--table-board X,Y,YAW`` (None without it): the board found in a picture."""
    if args.table_board is None:
        if args.board is not None:
            raise BadInputError("--board goes with --table-board X,Y,YAW (where the board lies)")
        return None
    from armctl.calibration.camerafit import table_reference
    from armctl.vision.board import parse_board
    from armctl.vision.intrinsics import detect_corners

    try:
        x, y, yaw = (float(v) for v in args.table_board.split(","))
        if not all(math.isfinite(v) and abs(v) <= 10_000 for v in (x, y, yaw)):
            raise ValueError
    except ValueError:
        raise BadInputError(f"--table-board {args.table_board!r}: give X,Y,YAW (mm, mm, deg; finite)") from None
    spec = parse_board(args.board)
    found = detect_corners(camera.frame(), spec)
    if found is None:
        raise BadInputError(f"camera {camera.name}: the table board ({spec.text}) is not in view")
    obj, img = found
    c, s = math.cos(math.radians(yaw)), math.sin(math.radians(yaw))
    in_base = np.eye(4)  # lying face up: the board's x along YAW, its y (down the print) and z (into it) turned over
    in_base[:3, :3] = np.array([[c, -s, 0], [s, c, 0], [0, 0, 1]]) @ np.diag([1.0, -1.0, -1.0])
    in_base[:3, 3] = [x / 1000.0, y / 1000.0, 0.0]
    return table_reference(obj, img, in_base, camera.model.matrix, camera.model.dist)


# --- the command ----------------------------------------------------------------------------------------------


def cmd_camera_calibrate(args, arm, cal) -> int:
    """``armctl calibrate --camera SRC --marker ID:SIZE_MM`` (see the module docstring)."""
    import dataclasses

    from armctl.calibration.camerafit import calibrate_from_sightings, to_calibration
    from armctl.calibration.cameramodel import CameraObservations
    from armctl.calibration.cameraposes import camera_poses
    from armctl.cli.common import calibration_comment, open_robot, save_calibration_file, saved_line

    marker, n, frames = _numbers(args)
    args.arm_camera = args.camera
    t0 = time.monotonic()
    with open_robot(args, arm, cal) as robot:
        camera = robot.camera
        camera.tool_marker = (marker[0], marker[1] / 1000.0)
        reference = table_reference_from(args, camera)
        view = first_look(robot, camera, frames)
        poses = camera_poses(robot.arm, cal, n=n, view=view)
        say = not args.json
        if say:
            print(f"{len(poses.waypoints_rad)} moves, about {poses.motion_s:.0f} s of motion at the speed limits")
        tty = sys.stderr.isatty() and say
        pixels = sight(robot, camera, poses, frames, (lambda k, m: print(f"\r{k}/{m} moves", end="", file=sys.stderr))
                       if tty else None)  # fmt: skip
        if tty:
            print(file=sys.stderr)
        robot.home()  # a pose inside the limits whatever the new calibration says (the last poses may lie near them)
    moved_s = time.monotonic() - t0
    seen = np.all(np.isfinite(pixels.reshape(len(pixels), -1)), axis=1)
    sel = poses.observe
    obs = CameraObservations(poses.values[sel][seen], poses.approach[sel][seen], pixels[seen], camera.model.matrix,
                             camera.model.dist, marker[1] / 1000.0)  # fmt: skip
    t1 = time.monotonic()
    report = calibrate_from_sightings(robot.arm, cal, obs, poses.held_out[sel][seen], reference=reference)
    fit_s = time.monotonic() - t1
    new = dataclasses.replace(to_calibration(report.fit, cal), camera_to_base=_rows(report.fit.camera_to_base))
    out = args.out or _save_path(arm, cal)
    saved = save_calibration_file(new, out, calibration_comment(f"by camera {args.camera}, marker {args.marker}"))
    summary = {
        "poses_seen": int(seen.sum()),
        "poses": int(sel.sum()),
        "before_mm": {"mean": float(np.mean(report.before_mm)), "max": float(np.max(report.before_mm))},
        "after_mm": {"mean": float(np.mean(report.after_mm)), "max": float(np.max(report.after_mm))},
        "motion_s": round(moved_s, 2),
        "planned_motion_s": round(float(poses.motion_s), 1),
        "fit_s": round(fit_s, 3),
        "held": dict(report.fit.held),
        "parameters": {name: {"value": float(v), "sigma": float(sg)} for name, v, sg in _parameters(report.fit)},
        "camera_to_base": np.asarray(new.camera_to_base).tolist(),
        "saved": str(saved),
    }
    if args.json:
        print(json.dumps(summary, indent=1))
        return 0
    print(f"marker seen at {summary['poses_seen']} of {summary['poses']} poses; fit in {fit_s:.2f} s")
    for line in report.lines():
        print(line)
    print(saved_line(saved))
    return 0


def _rows(T) -> tuple:
    return tuple(tuple(float(v) for v in row) for row in np.asarray(T, dtype=float))


def _parameters(fit):
    return [(name, fit.x[i], fit.sigma[i]) for i, name in enumerate(fit.model.names)]


def _save_path(arm, cal):
    from armctl.calibration.servo import save_path_for

    return save_path_for(arm.name, cal.source)
