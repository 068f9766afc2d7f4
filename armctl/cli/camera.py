"""``armctl camera``: the camera's own calibration. ``camera board`` writes a ChArUco board to print at scale,
``camera calibrate`` finds the camera's intrinsics (focal lengths, centre, lens distortion) from views of it and
saves the camera file the commands that use a camera read. The work is ``armctl.vision`` (``board``,
``boardprint``, ``intrinsics``)."""

from __future__ import annotations

import json
import sys
import time

from armctl.cli import add_command

DESCRIPTION = (
    "A camera: print a ChArUco board, find the camera's intrinsics from views of it, and check the tool's error over a "
    "grid of the table (after armctl calibrate --camera)."
)

BOARD_HELP = (
    "charuco:COLSxROWS@SQUARE/MARKER:DICT: squares across x down, the square's and the marker's side (30mm, 3cm, "
    "0.03m) and the ArUco dictionary (4x4_50 .. 7x7_1000, aruco_original) (default: charuco:7x5@30mm/22mm:5x5_100)"
)

CALIBRATE_EPILOG = """\
SRC is a folder of pictures (in name order), a video file, a USB camera by number (0) or /dev/videoN, or
simcam://?board=SPEC&views=N (rendered views through the simulated camera). Hold the printed board (flat, on a
stiff card) at 10-20 places: near and far, at the edges of the picture, tilted 20-40 degrees in different
directions. From a live camera, 20 views are taken, each after the board has moved.
A view with fewer than 6 of the board's corners is skipped; at least 4 views are needed.
A good result: rms_px under about 0.5 (a sharp camera: 0.1-0.3), fx close to fy, cx, cy near the middle.
examples:
  armctl camera board -o board.pdf                       # print at 100%, check the 100 mm bar
  armctl camera calibrate --camera shots/                # a folder of pictures of the board
  armctl camera calibrate --camera 0 --camera-file cam0.yaml --json"""


def register(sub, parents) -> None:
    p = add_command(sub, "camera", parents=parents, description=DESCRIPTION)
    what = p.add_subparsers(dest="camera_command", metavar="ACTION")
    what.required = True
    b = what.add_parser(
        "board", help="write a ChArUco board to print at scale (PDF or PNG)", description=BOARD_DESCRIPTION
    )
    b.add_argument("-o", "--out", required=True, metavar="FILE.pdf|FILE.png", help="the file to write")
    b.add_argument("--board", default=None, metavar="SPEC", help=BOARD_HELP)
    b.add_argument("--dpi", type=int, default=300, metavar="N", help="resolution of the board's image (default 300)")
    b.set_defaults(func=cmd_board)
    c = what.add_parser(
        "calibrate",
        help="find the camera's intrinsics from views of a ChArUco board; save the camera file",
        description="Find the camera's matrix (fx, fy, cx, cy) and lens distortion from views of a ChArUco board "
        "(OpenCV's ChArUco detector and calibrateCamera), print them with their standard deviations and the "
        "reprojection error, and save them.",
        epilog=CALIBRATE_EPILOG,
        formatter_class=p.formatter_class,
    )
    c.add_argument(
        "--camera",
        required=True,
        metavar="SRC",
        help="a folder of pictures, a video, a USB camera (0, /dev/video0) or simcam://?board=SPEC&views=N",
    )
    c.add_argument("--board", default=None, metavar="SPEC", help=BOARD_HELP)
    c.add_argument(
        "--camera-file",
        default=None,
        metavar="PATH",
        help="where to save the camera file (default: ./calibration/camera.yaml if it exists, else camera.yaml in "
        "the user's calibration folder)",
    )
    c.add_argument("--json", action="store_true", help="print JSON: camera_matrix, dist_coeffs, image_size, rms_px")
    c.set_defaults(func=cmd_calibrate)
    from armctl.cli.camera_check import register_check

    register_check(what, p.formatter_class)


BOARD_DESCRIPTION = (
    "Write a ChArUco board at scale: a PDF whose page is the board plus a margin (print at 100%%, 'actual size'), "
    "or a PNG with its resolution (--dpi) in the file. The margin holds the board's spec and a 100 mm bar: measure "
    "it after printing."
)


def cmd_board(args) -> int:
    from armctl.vision.board import parse_board
    from armctl.vision.boardprint import page_of, write_board

    spec = parse_board(args.board)
    out = write_board(spec, args.out, dpi=args.dpi)
    page = page_of(spec)
    w, h = spec.size_m
    print(
        f"wrote {out}: {spec.text}, board {w * 1000:g} x {h * 1000:g} mm on a {page.width:g} x {page.height:g} mm "
        f"page; print at 100% and check the 100 mm bar"
    )
    return 0


def cmd_calibrate(args) -> int:
    from pathlib import Path

    from armctl.vision.board import parse_board
    from armctl.vision.intrinsics import calibrate, collect_views, default_camera_file, save_camera_file
    from armctl.vision.sources import open_camera

    spec = parse_board(args.board)
    started = time.monotonic()
    with open_camera(args.camera) as source:
        live = not source.finite
        if live and not args.json:
            print(f"armctl camera: show the board to {source.name}, moving it between views", file=sys.stderr)
        views = collect_views(source, spec, progress=_progress if live else None)
        if live:
            sys.stderr.write("\n")
        name = source.name
    cal = calibrate(views, spec, source=name)
    out = save_camera_file(cal, Path(args.camera_file) if args.camera_file else default_camera_file())
    seconds = time.monotonic() - started
    if args.json:
        print(json.dumps({**cal.to_dict(), "camera_file": str(out), "seconds": round(seconds, 3)}, indent=1))
        return 0
    _print_result(cal, views, out, seconds)
    return 0


def _progress(views) -> None:
    sys.stderr.write(f"\rviews {views.used} (frames {views.seen}, board seen in {views.with_board})")
    sys.stderr.flush()


def _print_result(cal, views, out, seconds: float) -> None:
    m = cal.model
    skipped = views.seen - views.used
    print(
        f"views: {views.used} used of {views.seen}"
        + (f" ({skipped} skipped: board not seen or fewer than 6 corners)" if skipped else "")
    )
    print(f"image: {m.size[0]} x {m.size[1]} px")
    std = cal.std_px or (float("nan"),) * 4
    values = zip(("fx", "fy", "cx", "cy"), (m.fx, m.fy, m.cx, m.cy), std)
    print("  ".join(f"{name} {v:.2f} +- {s:.2f}" for name, v, s in values) + "  (px, +- one sigma)")
    print("distortion (k1 k2 p1 p2 k3): " + " ".join(f"{v:.5g}" for v in m.dist))
    print(
        f"reprojection error: {cal.rms_px:.3f} px rms" + ("  (high: blurred or bent board?)" if cal.rms_px > 1 else "")
    )
    print(f"saved {out}  ({seconds:.1f} s)")
