"""Parts at random (x, y, yaw) are picked where the simulated camera sees them and placed within 5 mm (the issue's
figure is 95% over 40 trials: ``bench/pick_trials.py``; here 12, all but one at most)."""

import math

import numpy as np
import pytest

import armctl
from armctl.program import load_program_text
from armctl.sim import scene
from armctl.sim.truth import Part

pytest.importorskip("cv2")

PARK_DEG = (75.0, 130.0, 47.0)  # up over the base, to the side: clear of the parts


def _spot(rng):
    r, a = rng.uniform(0.11, 0.19), rng.uniform(-0.9, 0.7)
    return r * math.cos(a), r * math.sin(a)


def test_parts_at_random_are_picked_and_placed():
    rng = np.random.default_rng(36)
    placed = []
    with armctl.connect("mearm", port="armsim://?arm=mearm&rate=30", camera="simcam://?fps=0&seed=9") as robot:
        live = scene.latest()
        for _ in range(12):
            live.parts.clear()
            x, y = _spot(rng)
            live.add_part(Part(4, 0.030, x, y, rng.uniform(-math.pi, math.pi), 0.0))
            px, py = _spot(rng)
            while math.hypot(px - x, py - y) < 0.06:
                px, py = _spot(rng)
            robot.move_joints(PARK_DEG, degrees=True)
            robot.run(load_program_text(f"steps:\n  - pick: {{marker: 4}}\n  - place: {{xyz_mm: [{px * 1000:.1f}, "
                                        f"{py * 1000:.1f}, 30]}}\n", "<trial>"))  # fmt: skip
            part = live.parts_now()[0]
            placed.append(math.hypot(part.x_m - px, part.y_m - py))
    assert sum(d <= 0.005 for d in placed) >= 11, np.round(np.array(placed) * 1000, 2)
