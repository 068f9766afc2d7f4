"""Parts picked where they lie: ``pick: {marker: ID}`` on the simulated camera, over parts placed at random.

    python bench/pick_trials.py                 # 40 trials on the MeArm
    python bench/pick_trials.py -n 100 --truth truth.yaml --calibration cal.yaml

Each trial puts a part (a 30 mm cube, its marker on top) at a random (x, y, yaw) the arm reaches, finds it with
``robot.find`` (the simulated camera, noise 0.5 px), picks it and places it at a random place; a trial succeeds
when the part ends within 5 mm of the place (the simulator's truth). Prints the success rate, the find error
(mm, deg) p50/p99/max, and the time per trial beside the time of the moves alone (the same program with the
parts' true places given, no camera): what finding by camera costs.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import armctl  # noqa: E402
from armctl.program import load_program_text, with_parts  # noqa: E402
from armctl.sim import scene  # noqa: E402
from armctl.sim.truth import Part  # noqa: E402

PARK_DEG = (75.0, 130.0, 47.0)  # the arm up over its base, to the side: clear of where the parts lie
PROGRAM = "arm: mearm\nsteps:\n  - pick: {{marker: {mid}}}\n  - place: {{xyz_mm: [{x:.1f}, {y:.1f}, 30]}}\n"


def random_spot(rng, r_min=0.11, r_max=0.19):
    r, a = rng.uniform(r_min, r_max), rng.uniform(-0.9, 0.7)
    return r * math.cos(a), r * math.sin(a)


def trial(robot, rng, mid: int, *, camera: bool):
    live = scene.latest()
    for p in list(live.parts):
        live.parts.remove(p)
    x, y = random_spot(rng)
    yaw = rng.uniform(-math.pi, math.pi)
    live.add_part(Part(mid, 0.030, x, y, yaw, 0.0))
    while True:
        px, py = random_spot(rng)
        if math.hypot(px - x, py - y) > 0.06:
            break
    prog = load_program_text(PROGRAM.format(mid=mid, x=px * 1000, y=py * 1000))
    robot.move_joints(PARK_DEG, degrees=True)
    t0 = time.perf_counter()
    err = (math.nan, math.nan)
    if camera:
        found = robot.find(mid)
        err = (math.hypot(found.x_m - x, found.y_m - y) * 1000, abs(math.degrees(math.remainder(found.yaw_rad - yaw,
               math.pi / 2))))  # fmt: skip
        robot.run(prog)
    else:
        robot.run(with_parts(prog, {mid: (x, y, 0.030)}))
    robot.move_joints(PARK_DEG, degrees=True)
    dt = time.perf_counter() - t0
    part = next(p for p in live.parts_now() if p.marker_id == mid)
    return math.hypot(part.x_m - px, part.y_m - py) * 1000, err, dt


def pct(a, q):
    return float(np.percentile(a, q))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("-n", type=int, default=40)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--truth", help="a truth file for the simulated arm")
    ap.add_argument("--calibration", help="the calibration to drive by (e.g. one calibrate --camera wrote)")
    a = ap.parse_args()
    port = "armsim://?arm=mearm&rate=20" + (f"&truth={a.truth}" if a.truth else "")
    rng = np.random.default_rng(a.seed)
    results = {}
    for camera in (True, False):
        kw = {"camera": "simcam://?fps=0&seed=3"} if camera else {}
        with armctl.connect("mearm", port=port, calibration=a.calibration, **kw) as robot:
            results[camera] = [trial(robot, rng, 7, camera=camera) for _ in range(a.n)]
    cam = results[True]
    miss = np.array([r[0] for r in cam])
    ok = miss <= 5.0
    pos = np.array([r[1][0] for r in cam])
    yaw = np.array([r[1][1] for r in cam])
    print(f"pick by camera: {ok.sum()}/{len(ok)} placed within 5 mm ({100 * ok.mean():.0f}%); "
          f"placed off p50 {pct(miss, 50):.2f} p99 {pct(miss, 99):.2f} max {miss.max():.2f} mm")  # fmt: skip
    print(f"find error: position p50 {pct(pos, 50):.2f} p99 {pct(pos, 99):.2f} max {pos.max():.2f} mm; "
          f"yaw p50 {pct(yaw, 50):.2f} p99 {pct(yaw, 99):.2f} max {yaw.max():.2f} deg")  # fmt: skip
    t_cam = np.array([r[2] for r in cam])
    t_true = np.array([r[2] for r in results[False]])
    ratio = pct(t_cam, 50) / pct(t_true, 50)
    print(f"time per trial (wall, rate 20): by camera p50 {pct(t_cam, 50):.2f} p99 {pct(t_cam, 99):.2f} max "
          f"{t_cam.max():.2f} s; places given p50 {pct(t_true, 50):.2f} s; ratio {ratio:.2f}")  # fmt: skip


if __name__ == "__main__":
    main()
