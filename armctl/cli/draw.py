"""``armctl draw``: draw an SVG or G-code file with the arm (checked whole, then streamed).

The drawing options (``--plane``, ``--fit``, ``--pen-up``, ``--pen``, ``--speed``, ``--tolerance``) are
shared with ``armctl plot``, which shows a drawing's plan before it is drawn.
"""

from __future__ import annotations

import json
import math

from armctl.cli import add_command
from armctl.errors import BadInputError
from armctl.model.kinematics import tool_point

EPILOG = """\
where the drawing goes:
  an arm on a base (mearm, ...) draws on the table: --plane xy@Zmm is the paper's height (default: the
  arm's table_z_mm zone); the arm lifts the pen --pen-up mm (default 10) between strokes, or a servo does
  (--pen gripper: closed is pen down).
  a planar arm (seed-3link, ...) draws in its own vertical plane, on a board beside it with the pen
  sticking out sideways from the tool; the gripper servo lifts the pen (--pen gripper, the default).
  --fit WxH@X,Y scales the drawing uniformly into the W x H mm paper whose lower-left corner is (X, Y) mm
  in the drawing plane (x, y), centred; without it the drawing keeps its own size, centred on the home tool
  point. The drawing's right is +x, its up +y.
examples:
  armctl --arm mearm draw examples/drawing.svg --plane xy@-20mm --fit 55x55@145,-27.5 --dry-run
  armctl --arm mearm plot examples/drawing.svg --plane xy@-20mm --fit 55x55@145,-27.5 -o drawing.png
  armctl draw examples/drawing.svg --fit 300x300@350,-200
  armctl draw examples/drawing.gcode --fit 200x200@400,-150
SVG: every shape's outline (paths, lines, rectangles, circles, ellipses, polygons; text must be converted
to paths). G-code: G0/G1/G2/G3 in XY, G20/G21, G90/G91, pen down by Z <= 0 or M3, up by Z > 0 or M5."""


def add_drawing_options(p) -> None:
    """The options that place and draw a drawing (draw and plot)."""
    p.add_argument("--plane", metavar="xy@Zmm", help="drawing plane: xy@Zmm, the paper's height (arms on a base)")
    p.add_argument("--fit", metavar="WxH@X,Y", help="scale into the W x H mm paper with its lower-left at (X, Y) mm")
    p.add_argument("--pen-up", metavar="MM", help="how far the arm lifts the pen between strokes (default 10 mm)")
    p.add_argument("--pen", metavar="SERVO", help="a servo lifts the pen instead: gripper (closed: pen down)")
    p.add_argument("--speed", metavar="MM_S", help="drawing speed (default: the G-code's F, else 40 mm/s)")
    p.add_argument("--tolerance", metavar="MM", help="curves flattened to within this on the paper (default 0.05)")
    if not any(a.dest == "blend" for a in p._actions):  # (plan and plot have --blend already)
        p.add_argument("--blend", metavar="MM", help="round the strokes' corners within MM mm (default 0.2; 0: stop)")


DESCRIPTION = (
    "Read an SVG or G-code drawing, fit it to the paper, plan every stroke (reach, joint and "
    "speed limits, keep-out zones, checked whole before anything moves) and draw it."
)


def register(sub, parents) -> None:
    p = add_command(sub, "draw", parents=parents, description=DESCRIPTION, epilog=EPILOG)
    p.add_argument("drawing", metavar="FILE.svg|FILE.gcode", help="the drawing: an SVG, or G-code (.gcode, .nc, .ngc)")
    add_drawing_options(p)
    p.add_argument("--dry-run", action="store_true", help="check and plan everything, open no port")
    p.add_argument("--json", action="store_true", help="print JSON instead of text")
    p.add_argument("--wire-log", metavar="FILE", help="write every byte sent and received, with times, to FILE")
    p.set_defaults(func=cmd_draw)


def paper_from_args(args):
    """A ``armctl.program.draw.Paper`` from the drawing options (BadInputError naming the option)."""
    from armctl.core.units import parse_float
    from armctl.program import blend_option
    from armctl.program.draw import (
        DEFAULT_BLEND_M,
        DEFAULT_PEN_UP_M,
        DEFAULT_TOLERANCE_M,
        Paper,
        parse_fit,
        parse_plane,
    )

    def mm(text, what, unit="mm"):
        v = parse_float(text, what=what)
        if not 0.0 < v <= 1000:
            raise BadInputError(f"{what}: {text} {unit} is out of range (> 0, <= 1000)")
        return v / 1000.0

    blend = DEFAULT_BLEND_M
    if getattr(args, "blend", None) is not None:
        blend = blend_option(args.blend)
    pen_up = DEFAULT_PEN_UP_M
    if getattr(args, "pen_up", None) is not None:
        if getattr(args, "pen", None) is not None:
            raise BadInputError("--pen-up: the arm lifts the pen; with --pen SERVO the servo does: give one of them")
        pen_up = mm(args.pen_up, "--pen-up")
    return Paper(
        z_m=None if args.plane is None else parse_plane(args.plane),
        fit_m=None if args.fit is None else parse_fit(args.fit),
        pen_up_m=pen_up,
        pen=args.pen,
        speed_m_s=None if args.speed is None else mm(args.speed, "--speed", "mm/s"),
        tolerance_m=DEFAULT_TOLERANCE_M if args.tolerance is None else mm(args.tolerance, "--tolerance"),
        blend_m=blend,
    )


def plan_from_args(args, arm):
    """Load ``args.drawing`` (or ``args.program``) and plan it on ``arm``: a ``armctl.program.draw.DrawingPlan``."""
    from armctl.program.draw import load_drawing, plan_drawing

    path = getattr(args, "drawing", None) or args.program
    paper = paper_from_args(args)
    if not arm.has_base and getattr(args, "pen_up", None) is not None:
        raise BadInputError(
            f"--pen-up: arm '{arm.name}' draws in its own plane and lifts the pen with a servo (--pen gripper)"
        )
    return plan_drawing(arm, load_drawing(path), paper)


def cmd_draw(args) -> int:
    from armctl.cli.common import drive, print_report, setup
    from armctl.robot.stream import prepare

    arm, cal = setup(args)
    dp = plan_from_args(args, arm)
    traj = dp.plan.trajectory
    prepare(traj, cal)  # every pulse checked before a port is opened
    strokes = len(dp.strokes_m)
    n_strokes = f"{strokes} stroke{'s' * (strokes != 1)}"
    points = sum(len(s) for s in dp.strokes_m)
    if args.dry_run:
        end = tool_point(arm, traj.q_rad[-1])
        report = {
            "dry_run": True,
            "strokes": strokes,
            "points": points,
            "zoom": dp.zoom,
            "duration_s": float(traj.duration_s),
            "samples": len(traj),
            "planned_tool_m": [float(v) for v in end],
            "q_deg": [math.degrees(v) for v in traj.q_rad[-1]],
            "summary": dp.plan.summary(),
        }
        if args.json:
            print(json.dumps(report, indent=1))
        else:
            where = "" if dp.z_m is None else f" at z = {dp.z_m * 1000:g} mm"
            print(
                f"{args.drawing}: OK, {n_strokes}, {points} points{where}, scaled {dp.zoom:.3g}x, "
                f"{traj.duration_s:.2f} s, every pulse within the calibrated range (dry run: no port opened)"
            )
        return 0
    report = drive(args, arm, cal, lambda robot: robot.run(dp.plan))
    report["strokes"] = strokes
    print_report(args, report, f"drew {args.drawing}: {n_strokes}, {report['duration_s']:.2f} s")
    return 0
