"""``armctl draw`` of an SVG against the SVG's own geometry rasterised by headless Chromium.

Chromium renders the document (every outline 1 px wide, no fills) onto a canvas at a known number of pixels
per SVG unit; its pixels are mapped to the paper by the same fit ``armctl draw`` used. The tool path, sampled
from the plan while the pen is down, must lie within 0.5 mm of the rendered outlines, and every rendered
outline pixel within 0.5 mm of the tool path (both ways: nothing drawn astray, nothing left out).
"""

from __future__ import annotations

import base64
import re
from pathlib import Path

import numpy as np
import pytest

from armctl.model.arm import load_arm
from armctl.model.kinematics import tool_point
from armctl.program.draw import Paper, load_drawing, plan_drawing

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "drawing.svg"
TOLERANCE_MM = 0.5

# Curves of every kind svgelements reads, under transforms: quadratic and cubic Beziers, elliptical arcs,
# an ellipse, a rounded rectangle, a polyline, nested rotation and scaling.
HARD_SVG = """<?xml version="1.0" encoding="UTF-8"?>
<svg xmlns="http://www.w3.org/2000/svg" width="120mm" height="90mm" viewBox="0 0 120 90">
  <g fill="none" stroke="black" stroke-width="0.5">
    <path d="M 10 60 Q 30 10 50 60 T 90 60"/>
    <path d="M 10 10 C 40 0, 20 40, 60 20 S 100 40, 110 10"/>
    <path d="M 70 60 a 15 8 30 1 1 20 10 A 10 10 0 0 0 70 60 z"/>
    <g transform="translate(25 45) rotate(20) scale(1.2 0.8)">
      <ellipse cx="0" cy="0" rx="14" ry="7"/>
      <rect x="-10" y="-20" width="20" height="9" rx="3"/>
    </g>
    <polyline points="95,50 105,40 115,55 100,65"/>
  </g>
</svg>
"""

PX_PER_UNIT = 4  # canvas pixels per SVG user unit (CSS px): 0.066 mm of the drawing


def _rasterise(driver, svg_text: str, width_units: float, height_units: float) -> np.ndarray:
    """The SVG's outlines as Chromium draws them: a bool image (rows top down) at PX_PER_UNIT per unit."""
    w, h = round(width_units * PX_PER_UNIT), round(height_units * PX_PER_UNIT)
    style = (
        "<style>* { fill: none !important; stroke: #000 !important; stroke-width: 1px !important; "
        "vector-effect: non-scaling-stroke !important; }</style>"
    )
    doc = re.sub(r"(<svg\b[^>]*?)\swidth=\"[^\"]*\"", r"\1", svg_text, count=1)
    doc = re.sub(r"(<svg\b[^>]*?)\sheight=\"[^\"]*\"", r"\1", doc, count=1)
    doc = re.sub(r"<svg\b", f'<svg width="{w}" height="{h}"', doc, count=1)
    doc = re.sub(r"(<svg\b[^>]*>)", r"\1" + style, doc, count=1)
    url = "data:image/svg+xml;base64," + base64.b64encode(doc.encode()).decode()
    driver.get("about:blank")
    alpha = driver.execute_async_script(
        """const [url, w, h, done] = arguments;
        const img = new Image();
        img.onload = () => {
          const c = document.createElement('canvas'); c.width = w; c.height = h;
          const ctx = c.getContext('2d'); ctx.drawImage(img, 0, 0, w, h);
          const d = ctx.getImageData(0, 0, w, h).data;
          let s = ''; for (let i = 3; i < d.length; i += 4) s += String.fromCharCode(d[i]);
          done(btoa(s));
        };
        img.onerror = () => done(null);
        img.src = url;""",
        url,
        w,
        h,
    )
    assert alpha is not None, "Chromium could not render the SVG"
    return np.frombuffer(base64.b64decode(alpha), dtype=np.uint8).reshape(h, w) > 40


def _viewport_units(svg_text: str) -> tuple[float, float]:
    """The root viewport's size in CSS px (the units svgelements gives coordinates in)."""
    root = re.search(r"<svg\b[^>]*>", svg_text).group(0)
    mm = {k: float(re.search(rf'\s{k}="([\d.]+)mm"', root).group(1)) for k in ("width", "height")}
    return mm["width"] * 96 / 25.4, mm["height"] * 96 / 25.4


def _pen_down_path(arm, dp) -> list[np.ndarray]:
    """The tool path while the pen is down, as runs of consecutive samples (m, on the paper)."""
    tr = dp.plan.trajectory
    p = tool_point(arm, tr.q_rad)
    if arm.has_base:
        down = np.abs(p[:, 2] - dp.z_m) < 1e-4
        p = p[:, :2]
    else:
        down = np.abs(tr.gripper_rad - arm.gripper.closed_rad) < 1e-6
    runs, cur = [], []
    for i in range(len(p)):
        if down[i]:
            cur.append(p[i])
        elif cur:
            runs.append(np.array(cur))
            cur = []
    if cur:
        runs.append(np.array(cur))
    return runs


def _densify(run: np.ndarray, step: float) -> np.ndarray:
    out = [run[:1]]
    for a, b in zip(run[:-1], run[1:]):
        n = max(1, int(np.ceil(np.linalg.norm(b - a) / step)))
        out.append(a + (b - a) * (np.arange(1, n + 1) / n)[:, None])
    return np.concatenate(out)


CASES = [
    ("example on mearm", EXAMPLE, "mearm", Paper(z_m=-0.02, fit_m=(0.055, 0.055, 0.145, -0.0275))),
    ("example on seed-3link", EXAMPLE, "seed-3link", Paper(fit_m=(0.3, 0.3, 0.35, -0.2))),
    ("curves on mearm", None, "mearm", Paper(z_m=-0.02, fit_m=(0.06, 0.05, 0.145, -0.03))),
]


@pytest.mark.parametrize("name,svg,arm_name,paper", CASES, ids=[c[0] for c in CASES])
def test_tool_path_matches_chromiums_rendering(browser, tmp_path, name, svg, arm_name, paper):
    from scipy.spatial import cKDTree

    text = svg.read_text() if svg is not None else HARD_SVG
    path = tmp_path / "drawing.svg"
    path.write_text(text)
    arm = load_arm(arm_name)
    dp = plan_drawing(arm, load_drawing(path), paper)
    raster = _rasterise(browser, text, *_viewport_units(text))
    rows, cols = np.nonzero(raster)
    units = np.stack([(cols + 0.5) / PX_PER_UNIT, (rows + 0.5) / PX_PER_UNIT], axis=-1)
    ink = dp.to_paper(units)  # Chromium's outline pixels on the paper (m)
    runs = _pen_down_path(arm, dp)
    samples = np.concatenate(runs)
    assert len(runs) >= len(dp.strokes_m) and len(samples) > 200
    # every sampled tool point (pen down) near Chromium's outline
    d_tool, _ = cKDTree(ink).query(samples)
    # every outline pixel near the tool path (the path between samples: straight, as the joints move there)
    path_pts = np.concatenate([_densify(r, 0.00005) for r in runs])
    d_ink, _ = cKDTree(path_pts).query(ink)
    print(
        f"{name}: zoom {dp.zoom:.3f}, {len(samples)} samples, {len(ink)} ink pixels; tool to ink max "
        f"{d_tool.max() * 1000:.3f} mm (p99 {np.percentile(d_tool, 99) * 1000:.3f}), ink to tool max "
        f"{d_ink.max() * 1000:.3f} mm (p99 {np.percentile(d_ink, 99) * 1000:.3f})"
    )
    assert d_tool.max() * 1000 <= TOLERANCE_MM
    assert d_ink.max() * 1000 <= TOLERANCE_MM


def test_the_check_fails_a_drawing_that_is_off(browser, tmp_path):
    """The same comparison catches a plan drawn 1 mm off the SVG: it is not a check that cannot fail."""
    from scipy.spatial import cKDTree

    path = tmp_path / "drawing.svg"
    path.write_text(HARD_SVG)
    arm = load_arm("mearm")
    dp = plan_drawing(arm, load_drawing(path), CASES[2][3])
    raster = _rasterise(browser, HARD_SVG, *_viewport_units(HARD_SVG))
    rows, cols = np.nonzero(raster)
    ink = dp.to_paper(np.stack([(cols + 0.5) / PX_PER_UNIT, (rows + 0.5) / PX_PER_UNIT], axis=-1))
    samples = np.concatenate(_pen_down_path(arm, dp)) + [0.001, 0.0]
    assert cKDTree(ink).query(samples)[0].max() * 1000 > TOLERANCE_MM
