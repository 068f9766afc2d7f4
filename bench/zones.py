"""What keep-out zones cost the planner: the example programs planned with and without zones, in the same run.

examples/pick_and_place.yaml on seed-3link and examples/drawing.svg on the MeArm, each planned N times as
they are and with three zones (the table, the base, a box clear of the path), interleaved; p50/p99/max
wall time and the ratio of the p50s. The checks cover every move whole (between samples too); the box
and table lie near the path, so the golden-section search runs for some links, the Lipschitz bound for
the rest.

  python bench/zones.py            # 15 repeats
  python bench/zones.py --repeats 40
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from armctl.model.arm import load_arm  # noqa: E402
from armctl.model.zones import Zone, Zones  # noqa: E402
from armctl.program import load_program, plan_program  # noqa: E402
from armctl.program.draw import Paper, load_drawing, plan_drawing  # noqa: E402


def _stats(ts):
    a = np.array(ts) * 1000
    return np.percentile(a, 50), np.percentile(a, 99), a.max()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeats", type=int, default=15)
    args = ap.parse_args()
    seed = load_arm("seed-3link")
    seed_z = seed.with_zones(
        Zones(
            (
                Zone("table", "the table", level=-0.33),
                Zone("base", "the base", radius=0.06, top=-0.05),
                Zone("box", "box 'b'", lo=(0.75, -0.33), hi=(0.8, -0.2)),
            ),
            link_radius_m=0.015,
        )
    )
    mearm = load_arm("mearm")
    mearm_z = mearm.with_zones(
        Zones(
            (
                Zone("table", "the table", level=-0.021),
                Zone("base", "the base", radius=0.04, top=-0.01),
                Zone("box", "box 'cup'", lo=(0.12, 0.04, -0.045), hi=(0.16, 0.08, 0.03)),
            ),
            link_radius_m=0.006,
        )
    )
    prog = load_program(ROOT / "examples" / "pick_and_place.yaml")
    drawing = load_drawing(ROOT / "examples" / "drawing.svg")
    paper = Paper(z_m=-0.02, fit_m=(0.055, 0.055, 0.145, -0.0275))
    cases = {
        "pick_and_place.yaml (seed-3link)": (lambda: plan_program(prog, seed), lambda: plan_program(prog, seed_z)),
        "drawing.svg (mearm)": (
            lambda: plan_drawing(mearm, drawing, paper),
            lambda: plan_drawing(mearm_z, drawing, paper),
        ),
    }
    print(f"{'case':<34} {'zones':>6}  {'p50 ms':>8} {'p99 ms':>8} {'max ms':>8}  ratio (p50)")
    for name, (bare, zoned) in cases.items():
        bare(), zoned()  # warm up
        tb, tz = [], []
        for _ in range(args.repeats):
            for fn, out in ((bare, tb), (zoned, tz)):
                t = time.perf_counter()
                fn()
                out.append(time.perf_counter() - t)
        sb, sz = _stats(tb), _stats(tz)
        print(f"{name:<34} {'none':>6}  {sb[0]:8.1f} {sb[1]:8.1f} {sb[2]:8.1f}")
        print(f"{name:<34} {'3':>6}  {sz[0]:8.1f} {sz[1]:8.1f} {sz[2]:8.1f}  {sz[0] / sb[0]:.2f}x")


if __name__ == "__main__":
    main()
