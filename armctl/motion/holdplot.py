"""Where the servos hold the arm, drawn: the side view of a base arm (its own vertical plane) shaded by whether every
servo holds the arm there with the payload (``armctl.model.holding``): red where no sampled pose reaching that spot
is held within ``torque_use`` of every servo's stall torque, orange where only some are (another wrist angle or
elbow holds it). A planar arm works in a horizontal plane: gravity asks nothing there, so it gets no shading.

Also the one histogram the workspace pictures shade (``cells``): where sampled points fall, sampling holes filled.
"""

from __future__ import annotations

import numpy as np

from armctl.model.holding import holds, sample_poses, torques_at
from armctl.model.kinematics import tool_point

UNHELD_RGBA = (0.84, 0.15, 0.16, 0.55)  # no pose there is held
SOME_RGBA = (1.0, 0.6, 0.1, 0.5)  # some poses there are held, some not


def cells(points, box, bins: int) -> np.ndarray:
    """A (bins, bins) mask over ``box`` (x0, x1, y0, y1) of the cells points (m, (k, 2)) fall in, with one-cell
    sampling holes filled (a cell with 4 of its 8 neighbours set is set, three times)."""
    h, _, _ = np.histogram2d(points[:, 0], points[:, 1], bins=bins, range=[box[:2], box[2:]])
    m = h.T > 0
    for _ in range(3):
        around = sum(np.roll(np.roll(m, dy, 0), dx, 1) for dy in (-1, 0, 1) for dx in (-1, 0, 1))
        m = m | (around >= 4)
    return m


def hold_masks(arm, box, payload_kg: float, *, samples: int = 60_000, bins: int = 140, seed: int = 1):
    """(held, unheld) masks of the side view over ``box`` (distance from the base axis, z; m): the cells with a
    sampled pose every servo holds, and the cells with one some servo cannot hold."""
    q = sample_poses(arm, samples, seed)
    q[:, 0] = 0.0  # the arm's own plane: u along x
    p = tool_point(arm, q)[:, [0, 2]]
    ok = np.all(holds(arm, torques_at(arm, q, payload_kg)), axis=1)
    return cells(p[ok], box, bins), cells(p[~ok], box, bins)


def shade_holding(ax, arm, box, reach, payload_kg: float | None = None) -> str:
    """Shade the side view's reachable cells ``reach`` (a mask over ``box``) where the servos cannot hold the arm
    (``payload_kg``; None: the arm file's ``payload_g``); returns the title's words for it ('' when nothing is
    shaded: no servo named)."""
    if not arm.has_base or not arm.drive.any_servo:
        return ""
    payload = arm.drive.payload_kg if payload_kg is None else payload_kg
    held, unheld = hold_masks(arm, box, payload, bins=reach.shape[0])
    for mask, rgba in ((reach & unheld & ~held, UNHELD_RGBA), (reach & unheld & held, SOME_RGBA)):
        if mask.any():
            img = np.zeros(mask.shape + (4,))
            img[mask] = rgba
            ax.imshow(img, extent=box, origin="lower", interpolation="nearest", zorder=0.5)
    part = f"with {payload * 1000:g} g" if payload else "no part"
    return f"\nred: a servo cannot hold the arm ({part}), orange: only some poses"
