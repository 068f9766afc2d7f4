"""``armctl pick --camera SRC --marker ID[:SIZE_MM] --place X Y [Z]``: the part the camera sees, picked where it
lies and placed; every move planned and checked as a program's (it is one: ``pick: {marker: ID}`` then
``place:``)."""

from __future__ import annotations

from armctl.cli import add_command
from armctl.cli.common import (
    arm_camera_options,
    camera_watch,
    drive,
    parse_marker,
    print_report,
    setup,
    split_cameras,
    target_args,
)
from armctl.core.units import parse_float
from armctl.errors import BadInputError, StopRequested, ToolOffPlanError

EPILOG = """\
examples:
  armctl --arm mearm --port 'armsim://?truth=truth.yaml' pick --camera simcam:// --marker 7 --place 150mm 60mm 30mm
  armctl --arm mearm --port /dev/ttyACM0 pick --camera 0 --marker 7:25 --place 0.15 0.06 0.03 --hover 60
the part: an ArUco marker (DICT_5X5_100; SIZE_MM its black square, default 30) face up on it; the camera: one
calibrated with the arm (armctl camera calibrate, then armctl calibrate --camera ... --marker ...).
exit codes: 0 placed, 2 bad input (the marker not in view, no camera), 3 the part or the place out of reach,
4 link error."""


def register(sub, parents) -> None:
    p = add_command(sub, "pick", parents=parents, epilog=EPILOG)
    p.add_argument(
        "--camera", required=True, metavar="SRC", help="the camera that sees the table: 0, a folder, simcam://"
    )
    p.add_argument("--marker", required=True, metavar="ID[:SIZE_MM]", help="the part's ArUco marker id (and size)")
    p.add_argument("--place", required=True, nargs="+", metavar="X", help="where to put it: X Y (Z on a base arm)")
    p.add_argument("--hover", metavar="MM", default="40", help="come down to the part and the place from MM above")
    p.add_argument("--speed", metavar="MM_S", help="line speed, mm/s (default the programs' 100)")
    p.add_argument("--json", action="store_true", help="print JSON (tool_m, q_deg, ...) instead of text")
    arm_camera_options(p)
    p.set_defaults(func=cmd_pick)


def program_text(arm, marker: int, size_mm: float, place, hover_mm: float, speed_mm_s: float | None) -> str:
    """The program ``armctl pick`` runs."""
    point = ", ".join(f"{v * 1000:.6g}" for v in place)
    key = "xyz_mm" if arm.has_base else "xy_mm"
    speed = "" if speed_mm_s is None else f"\n    speed_mm_s: {speed_mm_s:g}"
    return (
        f"steps:\n  - pick: {{marker: {marker}, size_mm: {size_mm:g}}}\n    hover_mm: {hover_mm:g}{speed}\n"
        f"  - place: {{{key}: [{point}]}}\n    hover_mm: {hover_mm:g}{speed}\n"
    )


def cmd_pick(args) -> int:
    from armctl.program import load_program_text

    arm, cal = setup(args)
    marker, size_mm = parse_marker(args.marker)
    args.x, args.y, args.z = (list(args.place) + [None, None, None])[:3]
    if len(args.place) > 3:
        raise BadInputError(f"--place: give X Y (Z on an arm with a base), got {len(args.place)} numbers")
    place = target_args(args, arm, "pick --camera simcam:// --marker 7 --place 150mm 60mm 30mm")
    hover = parse_float(args.hover, what="--hover")
    speed = None if args.speed is None else parse_float(args.speed, what="--speed")
    if not 0 < hover <= 500 or (speed is not None and not 0 < speed <= 2000):
        raise BadInputError("--hover: 0 < MM <= 500; --speed: 0 < MM_S <= 2000")
    prog = load_program_text(program_text(arm, marker, size_mm, place, hover, speed), f"<pick marker {marker}>")
    split_cameras(args)

    def act(robot):
        watch = camera_watch(args, robot)
        try:
            with watch:
                return robot.run(prog)
        except StopRequested:
            if getattr(watch, "tripped", None):
                raise ToolOffPlanError(f"{watch.tripped}: stopped, the arm holds its pose") from None
            raise

    report = drive(args, arm, cal, act)
    print_report(args, report, f"picked marker {marker} and placed it at {' '.join(f'{v:.4f}' for v in place)} m")
    return 0
