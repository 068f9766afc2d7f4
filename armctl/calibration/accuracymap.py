"""The accuracy map: where the tool really lands over a grid of the table, as a 3D printer's bed mesh.

``grid_targets(arm, z_m, spacing_m)`` gives the grid's points the arm reaches (the grid covers the reach's box at
height ``z_m``, a planar arm's plane at its ``z_m`` = 0; points no pose inside the limits reaches are left out).
A camera measures the tool at each (``armctl camera check``) and ``AccuracyMap.from_points`` keeps, per grid
point, the error: where the tool landed minus where it was sent (m). ``error_at(p)`` interpolates the error
bilinearly between the four grid points around ``p`` that were measured (inverse distance over those measured
when some of the four are missing); outside the grid, or with no measured neighbour, it is None: the map says
nothing there. ``corrected(target)`` is the target to send so the tool lands on ``target``: the target minus the
error, iterated (the error is read where the tool will be sent, not where it should land).

A map is saved with the calibration (``to_dict`` / ``from_dict``: grid axes in metres, errors in mm) and plotted
(``plot_map``: the error's size as colour, its direction as arrows).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from armctl.errors import ConfigError


@dataclass(frozen=True, eq=False)  # compared by identity: its arrays have no one truth value
class AccuracyMap:
    """Errors (m) on a grid: ``xs`` (nx,), ``ys`` (ny,), ``z_m``, ``errors`` (ny, nx, dim) with NaN where a
    point was not measured; ``dim`` 2: x and y (a camera looking down measures these; a target's z is left as it
    is), or 3."""

    xs: np.ndarray
    ys: np.ndarray
    z_m: float
    errors: np.ndarray

    @property
    def dim(self) -> int:
        return int(self.errors.shape[-1])

    @property
    def measured(self) -> int:
        return int(np.sum(np.all(np.isfinite(self.errors), axis=-1)))

    def _cell(self, axis: np.ndarray, v: float) -> tuple[int, float] | None:
        if len(axis) == 1:
            return (0, 0.0) if abs(v - axis[0]) < 1e-9 else None
        if not axis[0] - 1e-9 <= v <= axis[-1] + 1e-9:
            return None
        i = int(np.clip(np.searchsorted(axis, v) - 1, 0, len(axis) - 2))
        return i, float(np.clip((v - axis[i]) / (axis[i + 1] - axis[i]), 0.0, 1.0))

    def error_at(self, point) -> np.ndarray | None:
        """The interpolated error (m, ``dim``) at ``point`` (its x, y), or None outside what was measured."""
        p = np.asarray(point, dtype=float)
        cx, cy = self._cell(self.xs, float(p[0])), self._cell(self.ys, float(p[1]))
        if cx is None or cy is None:
            return None
        (i, fx), (j, fy) = cx, cy
        total, weight = np.zeros(self.dim), 0.0
        for dj, wy in ((0, 1.0 - fy), (1, fy)):
            for di, wx in ((0, 1.0 - fx), (1, fx)):
                jj, ii = min(j + dj, len(self.ys) - 1), min(i + di, len(self.xs) - 1)
                e = self.errors[jj, ii]
                w = wx * wy
                if w > 0.0 and np.all(np.isfinite(e)):
                    total += w * e
                    weight += w
        if weight < 1e-9:
            return None
        return total / weight

    def corrected(self, target, *, iterations: int = 4) -> np.ndarray:
        """The point to send so the tool lands on ``target`` (the target itself where the map says nothing)."""
        t = np.asarray(target, dtype=float)
        send = t.copy()
        for _ in range(iterations):
            e = self.error_at(send)
            if e is None:
                return send
            send = t.copy()
            send[: len(e)] -= e
        return send

    @classmethod
    def from_points(cls, xs, ys, z_m: float, sent, landed) -> AccuracyMap:
        """The map of ``landed - sent`` (m, (N, dim)) at grid points ``sent`` (each one of xs x ys)."""
        xs, ys = np.asarray(xs, dtype=float), np.asarray(ys, dtype=float)
        sent, landed = np.asarray(sent, dtype=float), np.asarray(landed, dtype=float)
        errors = np.full((len(ys), len(xs), sent.shape[1]), np.nan)
        for s, p in zip(sent, landed, strict=True):
            i, j = int(np.argmin(np.abs(xs - s[0]))), int(np.argmin(np.abs(ys - s[1])))
            errors[j, i] = p - s
        return cls(xs, ys, float(z_m), errors)

    def to_dict(self) -> dict:
        """The map as YAML-ready data: axes and height in metres, errors in mm (null where not measured)."""

        def mm(e):
            return None if not np.all(np.isfinite(e)) else [round(float(v) * 1000.0, 3) for v in e]

        return {
            "z_m": round(self.z_m, 6),
            "xs_m": [round(float(v), 6) for v in self.xs],
            "ys_m": [round(float(v), 6) for v in self.ys],
            "error_mm": [[mm(e) for e in row] for row in self.errors],
        }

    @classmethod
    def from_dict(cls, data, where: str = "accuracy_map") -> AccuracyMap:
        """The map ``to_dict`` wrote; ConfigError naming ``where`` for anything else."""
        try:
            xs = np.array([float(v) for v in data["xs_m"]])
            ys = np.array([float(v) for v in data["ys_m"]])
            z = float(data.get("z_m", 0.0))
            rows = data["error_mm"]
            dim = next((len(e) for row in rows for e in row if e is not None), 3)
            errors = np.full((len(ys), len(xs), dim), np.nan)
            if len(rows) != len(ys) or any(len(row) != len(xs) for row in rows):
                raise ValueError("error_mm must have one row per ys_m value and one entry per xs_m value")
            for j, row in enumerate(rows):
                for i, e in enumerate(row):
                    if e is not None:
                        if len(e) != dim:
                            raise ValueError(f"error_mm[{j}][{i}] has {len(e)} numbers, the others {dim}")
                        errors[j, i] = np.array([float(v) for v in e]) / 1000.0
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise ConfigError(f"{where}: not an accuracy map ({exc})") from None
        if len(xs) < 1 or len(ys) < 1 or np.any(np.diff(xs) <= 0) or np.any(np.diff(ys) <= 0):
            raise ConfigError(f"{where}: xs_m and ys_m must be increasing")
        if not (np.all(np.isfinite(xs)) and np.all(np.isfinite(ys)) and math.isfinite(z)):
            raise ConfigError(f"{where}: the grid must be finite numbers")
        return cls(xs, ys, z, errors)


def grid_targets(arm, z_m: float, spacing_m: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(xs, ys, targets (N, dim)): the grid at ``spacing_m`` over the reach's box and the points of it the arm
    reaches inside its limits (at height ``z_m`` on a base arm)."""
    from armctl.model.workspace import nearest_reachable

    r = float(arm.reach_max + (arm.base_offset_m if arm.has_base else 0.0))
    n = max(2, int(math.floor(2 * r / spacing_m)) + 1)
    half = (n - 1) * spacing_m / 2
    xs = np.linspace(-half, half, n)
    ys = xs.copy()
    targets = []
    for y in ys:
        for x in xs:
            t = np.array([x, y, z_m]) if arm.has_base else np.array([x, y])
            if nearest_reachable(arm, t).shortfall_m < 1e-9:
                targets.append(t)
    return xs, ys, np.array(targets).reshape(-1, 3 if arm.has_base else 2)


def plot_map(amap: AccuracyMap, path, *, title: str = "") -> None:
    """A PNG of the map: each measured grid point coloured by the size of its error (mm), an arrow for its
    direction in the table's plane (drawn 5x); the plot covers the measured points."""
    from armctl.motion.plot import new_figure

    fig = new_figure((6.4, 5.4))
    ax = fig.add_subplot(1, 1, 1)
    X, Y = np.meshgrid(amap.xs * 1000.0, amap.ys * 1000.0)
    size = np.linalg.norm(amap.errors, axis=-1) * 1000.0
    ok = np.isfinite(size)
    sc = ax.scatter(X[ok], Y[ok], c=size[ok], cmap="viridis", s=60)
    ex, ey = amap.errors[..., 0] * 1000.0, amap.errors[..., 1] * 1000.0
    ax.quiver(X[ok], Y[ok], ex[ok] * 5.0, ey[ok] * 5.0, angles="xy", scale_units="xy", scale=1.0, width=0.004)
    fig.colorbar(sc, ax=ax, label="tool error (mm)")
    ax.set_xlabel("x (mm)")
    ax.set_ylabel("y (mm)")
    ax.set_aspect("equal")
    if ok.any():
        pad = float(np.min(np.diff(amap.xs))) * 1000.0 if len(amap.xs) > 1 else 20.0
        ax.set_xlim(X[ok].min() - pad, X[ok].max() + pad)
        ax.set_ylim(Y[ok].min() - pad, Y[ok].max() + pad)
    worst = float(np.nanmax(size)) if ok.any() else float("nan")
    ax.set_title(title or f"accuracy at z = {amap.z_m * 1000:.0f} mm: worst {worst:.1f} mm (arrows 5x)")
    fig.savefig(str(path), dpi=100)
