"""`armctl draw` refusing a drawing names the stroke (its number, and where it is in the file: the SVG shape and
its id and subpath, the G-code lines) and the point (its number, its place in the drawing, its G-code line),
whether the arm cannot reach it or the calibration cannot give its pulse (issue 33, item 9)."""

from __future__ import annotations

import pytest

from armctl.cli import main
from armctl.core.paths import PRESET_CALIBRATION_DIR

MEARM = ["--arm", "mearm"]
PAPER = ["--plane", "xy@-20mm"]

# three strokes; the second runs out of the MeArm's reach at its second point (line 11)
THREE = """G21 G90
G0 Z5
G0 X40 Y0
G1 Z-1 F600
G1 X50 Y0
G1 X50 Y10
G0 Z5
G0 X60 Y5
G1 Z-1
G1 X100 Y5
G1 X140 Y5
G1 X140 Y15
G0 Z5
G0 X40 Y20
G1 Z-1
G1 X50 Y20
G0 Z5
"""

# two strokes in reach; the second turns the base 22 deg, past a calibration whose base stops at 13 deg
SIDE = """G21 G90
G0 Z5
G0 X0 Y0
G1 Z-1 F600
G1 X10 Y0
G0 Z5
G0 X0 Y10
G1 Z-1
G1 X10 Y10
G1 X10 Y60
G0 Z5
"""

SVG = """<svg xmlns="http://www.w3.org/2000/svg" width="100mm" height="20mm" viewBox="0 0 100 20">
  <path id="near" d="M 0 10 L 10 10"/>
  <rect x="0" y="0" width="5" height="5"/>
  <path id="far" d="M 0 15 L 10 15 M 20 15 L 100 15"/>
</svg>
"""


@pytest.fixture(autouse=True)
def _folders(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)


def _refusal(capsys, argv) -> str:
    assert main(argv) == 3
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err.count("\n") == 1, captured
    return captured.err


def test_an_unreachable_gcode_point_is_named_by_stroke_point_and_line(tmp_path, capsys):
    (tmp_path / "three.gcode").write_text(THREE)
    err = _refusal(capsys, [*MEARM, "draw", "three.gcode", *PAPER, "--fit", "100x20@150,-10", "--dry-run"])
    assert "three.gcode: stroke 2 of 3 (lines 8-12): point 2 of 3 at (140.00, 5.00) mm in the drawing, line 11: " in err
    assert "outside the reach of arm 'mearm'" in err


def test_a_gcode_point_past_the_calibrated_pulses_is_named_by_stroke_point_and_line(tmp_path, capsys):
    (tmp_path / "side.gcode").write_text(SIDE)
    cal = (PRESET_CALIBRATION_DIR / "mearm.yaml").read_text()
    (tmp_path / "narrow.yaml").write_text(cal.replace("min_us: 715, max_us: 2373", "min_us: 1400, max_us: 2373"))
    argv = [*MEARM, "--calibration", "narrow.yaml", "draw", "side.gcode", *PAPER, "--fit", "10x60@150,-5"]
    err = _refusal(capsys, [*argv, "--dry-run"])
    assert "side.gcode: stroke 2 of 2 (lines 7-10): point 2 of 2 at (10.00, 60.00) mm in the drawing, line 10: " in err
    assert "joint 1 (base) at 13.2 deg needs a 1399.3 us pulse, outside the calibrated 1400..2373 us" in err
    assert _refusal(capsys, argv) == err  # on the (simulated) arm too: refused before the port opens


def test_an_unreachable_svg_point_is_named_by_its_shape_id_subpath_and_point(tmp_path, capsys):
    (tmp_path / "drawing.svg").write_text(SVG)
    err = _refusal(capsys, [*MEARM, "draw", "drawing.svg", *PAPER, "--fit", "100x20@150,-10", "--dry-run"])
    want = 'drawing.svg: stroke 4 of 4 (shape 3 <path id="far">, subpath 2 of 2): point 1 of 1 at (100.00, 15.00) mm'
    assert want in err


def test_a_refused_first_stroke_is_named_too(tmp_path, capsys):
    (tmp_path / "drawing.svg").write_text(SVG)
    err = _refusal(capsys, [*MEARM, "draw", "drawing.svg", *PAPER, "--fit", "100x20@300,-10", "--dry-run"])
    assert 'drawing.svg: stroke 1 of 4 (shape 1 <path id="near">): its start, point 0 of 1 at (0.00, 10.00) mm' in err
