"""armctl draw: SVG and G-code reading, fitting to the paper, the options' meanings on planar and base arms,
refusals (exit 2 for bad input, 3 for what the arm cannot draw), blending, and a drawing on the simulated arm."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from armctl.errors import BadInputError, ZoneError
from armctl.model.arm import load_arm
from armctl.model.kinematics import tool_point
from armctl.program.draw import Paper, parse_fit, parse_gcode, parse_plane, parse_svg, pen_down_mask, plan_drawing
from tests.helpers import require_module

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
MEARM = ["--arm", "mearm"]
MEARM_PAPER = ["--plane", "xy@-20mm", "--fit", "55x55@145,-27.5"]


def _armctl(*args):
    return subprocess.run([sys.executable, "-m", "armctl", *args], capture_output=True, text=True)


def test_svg_outlines_with_transforms():
    d = parse_svg(
        '<svg xmlns="http://www.w3.org/2000/svg" width="40mm" height="40mm" viewBox="0 0 40 40">'
        '<g transform="translate(10 5)"><rect x="0" y="0" width="10" height="5"/></g>'
        '<circle cx="20" cy="20" r="5"/><line x1="0" y1="0" x2="3" y2="4"/></svg>'
    )
    assert len(d.strokes) == 3
    px = 96 / 25.4  # CSS px per mm: the viewBox is in mm here
    rect = d.polylines(0.01)[0] / px
    assert rect[0] == pytest.approx([10, 5]) and rect[-1] == pytest.approx([10, 5])  # closed
    assert rect.max(axis=0) == pytest.approx([20, 10])
    circle = d.polylines(0.01 * px)[1] / px
    r = np.hypot(circle[:, 0] - 20, circle[:, 1] - 20)
    assert r == pytest.approx(5, abs=1e-4)  # the vertices on the circle
    mid = (circle[1:] + circle[:-1]) / 2
    sag = 5 - np.hypot(mid[:, 0] - 20, mid[:, 1] - 20)
    assert sag.max() <= 0.01 + 1e-4 and sag.max() > 0.003  # chords within the tolerance, not far finer
    with pytest.raises(BadInputError, match="text 'Hi' cannot be drawn.*Object to Path"):
        parse_svg('<svg xmlns="http://www.w3.org/2000/svg"><text x="1" y="1">Hi</text></svg>', "t.svg")


def test_gcode_moves_arcs_units_and_pen():
    d = parse_gcode(
        "G21 G90 (mm)\nG0 Z5\nG0 X10 Y0\nG1 Z-1 F600\nG3 X0 Y10 I-10 J0 ; quarter circle\n"
        "G2 X10 Y0 R10\nG0 Z5\nG91\nG0 X5\nM3\nG1 Y5\nM5\nG20 G90\nM3\nG1 X1\n"
    )
    polys = d.polylines(0.001)
    assert len(polys) == 3
    arc = polys[0]
    assert arc[0] == pytest.approx([10, 0]) and arc[-1] == pytest.approx([10, 0], abs=1e-9)
    assert np.hypot(*arc[: len(arc) // 2].T) == pytest.approx(10, abs=1e-6)  # the G3 on its circle
    assert polys[1][0] == pytest.approx([15, 0]) and polys[1][-1] == pytest.approx([15, 5])  # relative
    assert polys[2][-1] == pytest.approx([25.4, 5])  # inches
    assert d.speed_m_s == pytest.approx(0.01)  # F600 mm/min
    travel = parse_gcode("G0 X1 Y1\nG1 X2 Y1\nG1 X2 Y2\nG0 X5 Y5\nG1 X6 Y5\n").polylines(0.01)
    assert [len(p) for p in travel] == [3, 2]  # no pen commands: G1 draws, G0 travels


@pytest.mark.parametrize(
    "text,why",
    [
        ("G28\n", r"<g>:1: G28 is not a command armctl draws"),
        ("X1 Y1\n", r"<g>:1: X/Y before any G0"),
        ("G1 X1\nG2 X3 Y0 I5 J0\n", r"<g>:2: the arc's end is"),
        ("G1 X1 X2\n", r"X given twice"),
        ("G18\n", r"XY plane"),
        ("G1 X1 @\n", r"cannot read '@'"),
    ],
)
def test_gcode_errors_name_the_line(text, why):
    with pytest.raises(BadInputError, match=why):
        parse_gcode(text, "<g>")


def test_plane_and_fit_options():
    assert parse_plane("xy@-20mm") == pytest.approx(-0.02)
    assert parse_plane("xy@15") == pytest.approx(0.015)
    assert parse_plane("xy") is None
    assert parse_fit("80x60@150,-30") == pytest.approx((0.08, 0.06, 0.15, -0.03))
    for bad in ("xz@3", "xy@abc"):
        with pytest.raises(BadInputError, match="--plane"):
            parse_plane(bad)
    for bad in ("80x60", "0x60@1,2", "axb@1,2"):
        with pytest.raises(BadInputError, match="--fit"):
            parse_fit(bad)


def test_fit_scales_uniformly_into_the_paper_and_strokes_are_blended(tmp_path):
    from armctl.program.draw import load_drawing

    arm = load_arm("mearm")
    dp = plan_drawing(
        arm, load_drawing(EXAMPLES / "drawing.svg"), Paper(z_m=-0.02, fit_m=(0.055, 0.055, 0.145, -0.0275))
    )
    allp = np.concatenate(dp.strokes_m)
    lo, hi = allp.min(axis=0), allp.max(axis=0)
    assert np.all(lo >= [0.145 - 1e-9, -0.0275 - 1e-9]) and np.all(hi <= [0.2 + 1e-9, 0.0275 + 1e-9])
    assert max(hi - lo) == pytest.approx(0.055, rel=1e-6)  # uniform: the larger side fills the paper
    assert dp.zoom == pytest.approx(0.055 / 0.085, rel=1e-3)  # the example is 85 mm wide
    tr = dp.plan.trajectory
    p = tool_point(arm, tr.q_rad)
    down = pen_down_mask(dp)
    assert np.all(np.abs(p[down, 2] + 0.02) < 1e-6)  # the pen stays on the paper while it draws
    speed = np.linalg.norm(np.diff(p, axis=0), axis=1) / tr.period_s
    inner = down[1:] & down[:-1]
    # blended: through a stroke's vertices the pen rarely stops (each stroke stops once, at its end)
    stops = np.count_nonzero(inner[1:] & (speed[1:] < 1e-4) & (speed[:-1] >= 1e-4))
    assert stops <= len(dp.strokes_m) + 2
    unblended = plan_drawing(
        arm,
        load_drawing(EXAMPLES / "drawing.svg"),
        Paper(z_m=-0.02, fit_m=(0.055, 0.055, 0.145, -0.0275), blend_m=0.0),
    )
    assert tr.duration_s < 0.85 * unblended.plan.trajectory.duration_s


def test_cli_dry_run_both_examples_on_both_arms():
    for args in (
        [*MEARM, "draw", str(EXAMPLES / "drawing.svg"), *MEARM_PAPER, "--dry-run", "--json"],
        [*MEARM, "draw", str(EXAMPLES / "drawing.gcode"), *MEARM_PAPER, "--dry-run", "--json"],
        ["draw", str(EXAMPLES / "drawing.svg"), "--fit", "300x300@350,-200", "--dry-run", "--json"],
        ["draw", str(EXAMPLES / "drawing.gcode"), "--fit", "200x200@400,-150", "--dry-run", "--json"],
    ):
        r = _armctl(*args)
        assert r.returncode == 0, r.stderr
        report = json.loads(r.stdout)
        svg = any(a.endswith(".svg") for a in args)
        assert report["dry_run"] and report["strokes"] == (7 if svg else 2)
        assert report["duration_s"] > 1


@pytest.mark.parametrize(
    "args,code,why",
    [
        (["draw", "{svg}", "--plane", "xy@10mm"], 2, "works in a vertical plane and draws in it"),
        (["draw", "{svg}", "--pen-up", "5"], 2, "lifts the pen with a servo"),
        (["draw", "{svg}", "--pen", "wrist"], 2, "--pen: the servo that lifts the pen: 'gripper'"),
        ([*MEARM, "draw", "{svg}"], 2, "give the paper's height, --plane xy@Zmm"),
        ([*MEARM, "draw", "{svg}", *MEARM_PAPER, "--pen", "gripper", "--pen-up", "5"], 2, "give one of them"),
        ([*MEARM, "draw", "{svg}", "--plane", "xy@-20mm", "--fit", "300x300@100,0"], 3, "stroke"),
        (["draw", "nothing.svg"], 2, "cannot read the drawing: file not found"),
        (["draw", "{yaml}"], 2, "not a drawing"),
        (["plan", "{yaml}", "--fit", "10x10@0,0"], 2, "--fit places a drawing"),
        (["draw", "{svg}", "--speed", "0"], 2, "--speed: 0 mm/s is out of range"),
        (["draw", "{svg}", "--blend", "600"], 2, "--blend: '600' mm: give 0 .. 500 mm"),  # as run's --blend
    ],
)
def test_cli_refusals(args, code, why):
    args = [
        a.replace("{svg}", str(EXAMPLES / "drawing.svg")).replace("{yaml}", str(EXAMPLES / "pick_and_place.yaml"))
        for a in args
    ]
    r = _armctl(*args, "--dry-run") if "draw" in args else _armctl(*args)
    assert r.returncode == code, r.stderr
    assert why in r.stderr and r.stdout == ""
    assert len(r.stderr.strip().splitlines()) == 1


def test_a_drawing_through_a_keep_out_zone_is_refused(tmp_path):
    arm = load_arm("mearm")
    from armctl.model.zones import Zone, Zones
    from armctl.program.draw import load_drawing

    zoned = arm.with_zones(Zones((Zone("box", "box 'eraser'", lo=(0.16, -0.01, -0.05), hi=(0.17, 0.0, -0.015)),)))
    with pytest.raises(ZoneError, match="would enter box 'eraser'") as e:
        plan_drawing(
            zoned, load_drawing(EXAMPLES / "drawing.svg"), Paper(z_m=-0.02, fit_m=(0.055, 0.055, 0.145, -0.0275))
        )
    assert "stroke" in str(e.value)


def test_plot_shows_a_drawing(tmp_path):
    require_module("matplotlib", "plots are drawn with matplotlib (armctl[plot])")
    out = tmp_path / "d.png"
    r = _armctl(*MEARM, "plot", str(EXAMPLES / "drawing.svg"), *MEARM_PAPER, "-o", str(out))
    assert r.returncode == 0, r.stderr
    assert out.stat().st_size > 10_000


GCODE_SQUARE = "G21 G90\nG0 Z5\nG0 X0 Y0\nG1 Z-1\nG1 X20\nG1 Y20\nG1 X0\nG1 Y0\nG0 Z5\n"


def test_draw_on_the_simulated_arm(tmp_path):
    g = tmp_path / "square.gcode"
    g.write_text(GCODE_SQUARE)
    r = _armctl(
        *MEARM,
        "--port",
        "armsim://?rate=20",
        "draw",
        str(g),
        "--plane",
        "xy@-20mm",
        "--fit",
        "20x20@160,-10",
        "--speed",
        "30",
        "--json",
    )
    assert r.returncode == 0, r.stderr
    report = json.loads(r.stdout)
    assert report["strokes"] == 1 and report["error_m"] < 1e-3
    assert report["tool_m"] == pytest.approx([0.16, -0.01, -0.01], abs=1e-3)  # pen up above the square's corner
    assert math.isfinite(report["duration_s"])


@pytest.mark.parametrize("bad", ['<path d="M 0 0 L NaN 10"/>', '<circle cx="inf" cy="5" r="3"/>'])
def test_an_svg_with_a_coordinate_that_is_not_a_number_is_refused_naming_it(bad):
    text = f'<svg xmlns="http://www.w3.org/2000/svg" width="100" height="100">\n{bad}\n</svg>\n'
    with pytest.raises(BadInputError, match=r"d\.svg:2: .*not a finite number"):
        parse_svg(text, "d.svg")
    parse_svg(text.replace("NaN", "5").replace("inf", "5"), "d.svg")  # (the same document, finite: read)
