"""The reachable region of the tool point, sampled on a grid inside the joint limits.

A cell is reachable when some pose inside the joint limits puts the tool point
on its centre: closed-form IK on both elbow branches (3 links: for tool angles
sampled every ``phi_step_rad``). Used to shade the workspace on the page; the
planner stays the judge of every move.
"""

from __future__ import annotations

import base64
import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from ..arm import Arm
from ..motion import branch_ik

TWO_PI = 2.0 * math.pi


@dataclass(frozen=True)
class ReachMap:
    """``cells[row, col]`` is True where the tool can reach; row 0 is the lowest y.

    Cell (row, col) has its centre at ``origin_m + (col + 0.5, row + 0.5) * cell_m`` (m).
    """

    origin_m: tuple[float, float]
    cell_m: float
    cells: np.ndarray

    def gap_m(self, point_m) -> float:
        """Distance (m) from ``point_m`` to the nearest reachable cell centre, 0 if its own cell is reachable."""
        h, w = self.cells.shape
        col = int(math.floor((point_m[0] - self.origin_m[0]) / self.cell_m))
        row = int(math.floor((point_m[1] - self.origin_m[1]) / self.cell_m))
        if 0 <= row < h and 0 <= col < w and self.cells[row, col]:
            return 0.0
        rows, cols = np.nonzero(self.cells)
        if len(rows) == 0:
            return math.inf
        cx = self.origin_m[0] + (cols + 0.5) * self.cell_m
        cy = self.origin_m[1] + (rows + 0.5) * self.cell_m
        return float(np.min(np.hypot(cx - point_m[0], cy - point_m[1])))

    def to_json(self) -> dict:
        """Width, height, origin and cell size (m), and the rows as base64 bits (numpy packbits, row 0 first)."""
        h, w = self.cells.shape
        return {
            "origin_m": list(self.origin_m),
            "cell_m": self.cell_m,
            "width": w,
            "height": h,
            "bits_b64": base64.b64encode(np.packbits(self.cells, axis=1).tobytes()).decode("ascii"),
        }


def _in_limits(arm: Arm, q) -> np.ndarray:
    """(K,) True where the wrapped angles ``q`` (K, n) lie inside the limits, allowing a whole turn either way."""
    ok = np.ones(len(q), dtype=bool)
    for i in range(arm.n):
        a = q[:, i]
        hit = np.zeros(len(q), dtype=bool)
        for turn in (-TWO_PI, 0.0, TWO_PI):
            hit |= (a + turn >= arm.q_min[i] - 1e-9) & (a + turn <= arm.q_max[i] + 1e-9)
        ok &= hit
    return ok


def reachable(arm: Arm, points_m, *, phi_step_rad: float = math.radians(3.0)) -> np.ndarray:
    """(K,) True where some pose inside the joint limits reaches each point of ``points_m`` (K, 2) m."""
    p = np.asarray(points_m, dtype=float)
    out = np.zeros(len(p), dtype=bool)
    phis = [None] if arm.n == 2 else np.arange(-math.pi, math.pi, phi_step_rad)
    for phi in phis:
        todo = ~out
        if not np.any(todo):
            break
        pts = p[todo]
        ph = None if phi is None else np.full(len(pts), phi)
        hit = np.zeros(len(pts), dtype=bool)
        for elbow in (1.0, -1.0):
            q, excess = branch_ik(arm, pts, ph, elbow)
            hit |= (excess <= 1e-9) & _in_limits(arm, q)
        out[np.flatnonzero(todo)[hit]] = True
    return out


@lru_cache(maxsize=8)
def _cached(arm_key: tuple, arm: Arm, cell_m: float) -> ReachMap:
    r = arm.reach_max
    n = int(math.ceil(2 * r / cell_m))
    origin = (-n * cell_m / 2, -n * cell_m / 2)
    c = origin[0] + (np.arange(n) + 0.5) * cell_m
    xx, yy = np.meshgrid(c, c)
    pts = np.stack([xx.ravel(), yy.ravel()], axis=-1)
    rr = np.hypot(pts[:, 0], pts[:, 1])
    inside = (rr <= arm.reach_max + cell_m) & (rr >= arm.reach_min - cell_m)
    cells = np.zeros(len(pts), dtype=bool)
    cells[inside] = reachable(arm, pts[inside])
    return ReachMap(origin, cell_m, cells.reshape(n, n))


def reach_map(arm: Arm, *, cell_m: float = 0.005) -> ReachMap:
    """The reachable region of ``arm`` on a square grid of ``cell_m`` (m) cells covering the outer reach."""
    key = (tuple(arm.links_m), tuple(arm.q_min), tuple(arm.q_max))
    return _cached(key, arm, cell_m)
