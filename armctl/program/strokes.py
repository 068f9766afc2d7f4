"""A drawing as strokes (``Drawing``) and its primitives: lines to points, circular arcs (``Arc``, G2/G3) and
curves (``Curve``, an svgelements segment), each flattened within a tolerance. ``armctl.program.svg`` and
``armctl.program.gcode`` read files into it; ``armctl.program.draw`` plans it."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from armctl.core import limits


@dataclass
class Arc:
    """A circular arc (G2/G3) in drawing units: centre, radius, start angle and sweep (rad, + counter-clockwise)."""

    cx: float
    cy: float
    r: float
    a0: float
    sweep: float

    def flatten(self, tol: float, budget: int | None = None) -> np.ndarray:
        step = 2.0 * math.acos(max(-1.0, 1.0 - tol / self.r)) if self.r > tol else math.pi / 2
        n = max(1, math.ceil(abs(self.sweep) / max(step, 1e-9)))
        if budget is not None and n > budget:
            raise OverBudget
        a = self.a0 + np.linspace(0.0, self.sweep, n + 1)
        return np.stack([self.cx + self.r * np.cos(a), self.cy + self.r * np.sin(a)], axis=-1)[1:]


class OverBudget(Exception):
    """A curve flattens to more points than the drawing has left (``limits`` 'moves')."""


@dataclass
class Curve:
    """An svgelements segment (Arc, CubicBezier, QuadraticBezier), flattened by subdivision."""

    seg: object

    def flatten(self, tol: float, budget: int | None = None) -> np.ndarray:
        """Points along the curve after its start, each piece within ``tol`` of the curve: a piece is split in
        half until its quarter points lie within ``tol`` of its chord (at least 4 pieces, at most 18 halvings).
        Done level by level, every piece of a level in one evaluation of the curve (the same pieces and points as
        splitting one piece at a time, in a fraction of the time); OverBudget past ``budget`` points."""
        cap = math.inf if budget is None else budget
        t0, t1 = np.array([0.0]), np.array([1.0])
        p0 = np.asarray(self.seg.npoint([0.0]), dtype=float).reshape(1, 2)
        p1 = np.asarray(self.seg.npoint([1.0]), dtype=float).reshape(1, 2)
        done_t, done_p = [], []
        depth, kept = 0, 0
        fr = np.array([0.25, 0.5, 0.75])
        while len(t0):
            ts = (t0[:, None] + (t1 - t0)[:, None] * fr[None, :]).ravel()
            mid = np.asarray(self.seg.npoint(ts), dtype=float).reshape(len(t0), 3, 2)
            d = p1 - p0
            n = np.hypot(d[:, 0], d[:, 1])
            rx, ry = mid[:, :, 0] - p0[:, None, 0], mid[:, :, 1] - p0[:, None, 1]
            on_chord = np.abs(rx * d[:, None, 1] - ry * d[:, None, 0]) / np.where(n > 0, n, 1.0)[:, None]
            dev = np.where((n > 0)[:, None], on_chord, np.hypot(rx, ry)).max(axis=1)
            accept = np.full(len(t0), depth >= 2) & ((dev <= tol) | (depth >= 18))
            done_t.append(t0[accept])
            done_p.append(p1[accept])
            kept += int(accept.sum())
            split = ~accept
            if kept + 2 * int(split.sum()) > cap:
                raise OverBudget
            tm = 0.5 * (t0[split] + t1[split])
            pm = mid[split, 1]
            t0, t1 = np.concatenate([t0[split], tm]), np.concatenate([tm, t1[split]])
            p0, p1 = np.concatenate([p0[split], pm]), np.concatenate([pm, p1[split]])
            depth += 1
        order = np.argsort(np.concatenate(done_t), kind="stable")
        return np.concatenate(done_p)[order]


@dataclass
class Drawing:
    """A drawing as strokes (pen down from start to end); each stroke a start point and primitives: points
    (np arrays, a line to each) or curves with ``flatten(tol)``. Units: ``unit_m`` metres per drawing unit;
    ``y_down``: the drawing's y axis points down (SVG)."""

    source: str
    strokes: list = field(default_factory=list)  # [(start (2,), [primitive, ...]), ...]
    unit_m: float = 0.001
    y_down: bool = False
    speed_m_s: float | None = None  # a G-code file's feed rate, if it gives one
    # per stroke, where it is in the file: (what, lines): what names it ('<path id="A">, subpath 2 of 2'),
    # lines: the G-code line of its start, then of each primitive (None for an SVG)
    origins: list = field(default_factory=list)

    def polylines(self, tol: float) -> list[np.ndarray]:
        """Every stroke as a polyline (k, 2) in drawing units, curves within ``tol`` (drawing units)."""
        return [line for line, _ in self.located_polylines(tol)]

    def located_polylines(self, tol: float) -> list[tuple[np.ndarray, np.ndarray]]:
        """``polylines`` with, per point, the index of the stroke's primitive it ends (-1: the stroke's start)."""
        out = []
        cap = limits.get("moves")
        left = cap
        for i, (start, prims) in enumerate(self.strokes):
            pts = [np.asarray(start, dtype=float)[None, :]]
            of = [np.array([-1])]
            for j, p in enumerate(prims):
                try:
                    pts.append(p[None, :] if isinstance(p, np.ndarray) else p.flatten(tol, left))
                except OverBudget:
                    pts.append(np.zeros((left + 1, 2)))
                left -= len(pts[-1])
                if left < 0:
                    what = self.origin(i)[0]
                    raise limits.LimitError(
                        f"stroke {i + 1}{f' ({what})' if what else ''}: the drawing's lines and curves come to more "
                        f"than {cap} points",
                        limit="moves",
                        path=self.source,
                    )
                of.append(np.full(len(pts[-1]), j))
            line, prim = np.concatenate(pts), np.concatenate(of)
            keep = np.concatenate([[True], np.hypot(*np.diff(line, axis=0).T) > 1e-12])
            if keep.sum() >= 1:
                out.append((line[keep], prim[keep]))
        return out

    def origin(self, i: int) -> tuple[str, list | None]:
        """Where stroke ``i`` (0-based) is in the file: (what, G-code lines of its start and primitives, or None)."""
        return self.origins[i] if i < len(self.origins) else ("", None)

    def bbox(self) -> tuple[np.ndarray, np.ndarray]:
        """(lo, hi) corners of the drawing (drawing units)."""
        coarse = self.polylines(1e-9 + 1e-4 * max(1e-9, self._extent()))
        allp = np.concatenate(coarse)
        return allp.min(axis=0), allp.max(axis=0)

    def _extent(self) -> float:
        pts = [np.asarray(s, dtype=float) for s, _ in self.strokes]
        for _, prims in self.strokes:
            pts += [p for p in prims if isinstance(p, np.ndarray)]
            pts += [np.array([p.cx, p.cy]) for p in prims if isinstance(p, Arc)]
            for p in prims:  # a curve's control points: the bbox's coarse flattening is then coarse indeed
                if isinstance(p, Curve) and hasattr(p.seg, "bbox"):
                    x0, y0, x1, y1 = p.seg.bbox()
                    pts += [np.array([x0, y0]), np.array([x1, y1])]
        a = np.array(pts)
        return float(np.max(a.max(axis=0) - a.min(axis=0))) if len(a) else 1.0
