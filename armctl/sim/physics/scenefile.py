"""A physics scene file: the table, the parts on it and the cameras looking at it, in the arm's frame (metres from
the base axis, z up as the arm's file counts it: from the surface the arm stands on, or from its shoulder axis on
an arm with ``shoulder_height_m: 0``; a planar arm's plane is z = 0 seen from above).

```yaml
table: {size_m: [0.8, 0.6, 0.02], center_m: [0.2, 0.0], friction: 0.8}   # its top at z = 0 (top_z_m)
parts:
  - {name: red, shape: box, size_m: [0.025, 0.025, 0.025], mass_g: 12, at_m: [0.20, 0.05, 0], yaw_deg: 30}
  - {name: can, shape: cylinder, radius_m: 0.015, height_m: 0.04, mass_g: 20, at_m: [0.18, -0.1, 0], friction: 1.0}
cameras:
  - {name: top, at_m: [0.2, 0.0, 0.7], look_at_m: [0.2, 0.0, 0.0], fov_deg: 60, width: 320, height: 240}
```

The table's ``top_z_m`` (default 0) is the height of its top in the arm's frame: an arm whose heights count from
its shoulder axis, 30 mm above the table, has ``table: {top_z_m: -0.03, ...}``. A part's ``at_m`` is the centre
of its bottom face in the arm's frame, its z starting at the table's top (z ``top_z_m``: standing on the table;
higher: standing on another part, or held up); ``marker_id`` (optional) is the ArUco marker on its top, as the
simulated camera's parts carry. Every key is checked (units in the names, bounds on every number); anything
wrong is one ConfigError naming the file, the key and the line, and a part that starts inside the table (its
bottom below ``top_z_m``) or inside another part is refused.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

from armctl.core.config import Section, load_yaml_file

SHAPES = ("box", "cylinder")
MAX_PARTS = 64
MAX_CAMERAS = 8
_SIZE = dict(lo=0.001, hi=2.0)  # m: a part's or table's dimension
_FRICTION = dict(lo=0.0, lo_open=True, hi=5.0)


@dataclass(frozen=True)
class Table:
    """A box ``size_m`` (x, y, thickness) centred at ``center_m`` (x, y), its top at ``top_z_m`` in the arm's frame."""

    size_m: tuple[float, float, float] = (1.0, 1.0, 0.02)
    center_m: tuple[float, float] = (0.0, 0.0)
    friction: float = 0.8
    top_z_m: float = 0.0


@dataclass(frozen=True)
class ScenePart:
    """A box (``size_m``: x, y, z) or cylinder (``radius_m``, ``height_m``) of ``mass_kg``; its bottom face's
    centre at ``at_m`` (x, y, z), turned ``yaw_rad`` about the vertical."""

    name: str
    shape: str
    mass_kg: float
    at_m: tuple[float, float, float]
    yaw_rad: float = 0.0
    size_m: tuple[float, float, float] | None = None
    radius_m: float | None = None
    height_m: float | None = None
    friction: float = 1.0
    marker_id: int | None = None

    @property
    def height(self) -> float:
        return self.size_m[2] if self.shape == "box" else self.height_m

    @property
    def half_extent_xy_m(self) -> float:
        """The radius of a circle about its axis that holds it (m)."""
        return math.hypot(self.size_m[0], self.size_m[1]) / 2.0 if self.shape == "box" else self.radius_m


@dataclass(frozen=True)
class SceneCamera:
    name: str
    at_m: tuple[float, float, float]
    look_at_m: tuple[float, float, float]
    fov_deg: float = 60.0
    width: int = 320
    height: int = 240


@dataclass(frozen=True)
class Scene:
    table: Table = field(default_factory=Table)
    parts: tuple[ScenePart, ...] = ()
    cameras: tuple[SceneCamera, ...] = ()
    source: str = "<code>"

    def part(self, name: str) -> ScenePart:
        for p in self.parts:
            if p.name == name:
                return p
        raise KeyError(name)


def load_scene(path) -> Scene:
    """The scene file ``path`` (ConfigError naming the file, key and line for anything wrong, a missing file too)."""
    return parse_scene(load_yaml_file(path), str(Path(path)))


def parse_scene(data, path: str) -> Scene:
    top = Section(data if data is not None else {}, path=path)
    table = _table(top.section("table", required=False))
    parts = [_part(sec, i, table.top_z_m) for i, sec in _entries(top, "parts", MAX_PARTS)]
    cams = [_camera(sec, i) for i, sec in _entries(top, "cameras", MAX_CAMERAS)]
    top.done()
    _check_names(top, "parts", [p.name for p in parts])
    _check_names(top, "cameras", [c.name for c in cams])
    _check_overlaps(top, parts)
    return Scene(table, tuple(parts), tuple(cams), source=path)


def _entries(top: Section, key: str, most: int) -> list:
    """(index, Section) of each mapping in the list ``key`` (none: empty), at most ``most`` of them."""
    raw = top.items(key) if top.has(key) else []
    if len(raw) > most:
        raise top.error(key, f"at most {most} {key}, found {len(raw)}")
    lines = getattr(raw, "item_lines", None)
    return [
        (i, Section(item, path=top.path, key=f"{key}[{i}]", line=lines[i] if lines else None))
        for i, item in enumerate(raw)
    ]


def _table(t: Section | None) -> Table:
    if t is None:
        return Table()
    size = t.numbers("size_m", [1.0, 1.0, 0.02], count=3)
    if not all(0.001 <= v <= 10.0 for v in size):
        raise t.error("size_m", f"a table's sides are 0.001..10 m, found {size}")
    center = t.numbers("center_m", [0.0, 0.0], count=2)
    if not all(abs(v) <= 10.0 for v in center):
        raise t.error("center_m", f"the table's centre lies within 10 m of the arm, found {center}")
    friction = t.number("friction", 0.8, **_FRICTION)
    top = t.number("top_z_m", 0.0, lo=-2.0, hi=2.0)
    t.done()
    return Table(tuple(size), tuple(center), friction, top)


def _part(p: Section, i: int, top_z_m: float = 0.0) -> ScenePart:
    name = p.string("name", f"part{i + 1}")
    shape = p.string("shape", "box", choices=SHAPES)
    mass = p.number("mass_g", lo=0.0, lo_open=True, hi=10000.0) / 1000.0
    at = p.numbers("at_m", count=3)
    if not all(abs(v) <= 10.0 for v in at):
        raise p.error("at_m", f"a part lies within 10 m of the arm, found {at}")
    if at[2] < top_z_m - 1e-9:
        raise p.error(
            "at_m",
            f"part {name!r} starts inside the table: its bottom is at z {at[2]:g} m, below the table's top "
            f"{top_z_m:g} m",
        )
    yaw = math.radians(p.number("yaw_deg", 0.0, lo=-360.0, hi=360.0))
    friction = p.number("friction", 1.0, **_FRICTION)
    marker = p.number("marker_id", None, lo=0, hi=999)
    kw = {}
    if shape == "box":
        size = p.numbers("size_m", count=3)
        if not all(_SIZE["lo"] <= v <= _SIZE["hi"] for v in size):
            raise p.error("size_m", f"a part's sides are 0.001..2 m, found {size}")
        kw["size_m"] = tuple(size)
    else:
        kw["radius_m"] = p.number("radius_m", **_SIZE)
        kw["height_m"] = p.number("height_m", **_SIZE)
    p.done()
    return ScenePart(
        name, shape, mass, tuple(at), yaw, friction=friction, marker_id=None if marker is None else int(marker), **kw
    )


def _camera(c: Section, i: int) -> SceneCamera:
    name = c.string("name", f"camera{i + 1}")
    at = c.numbers("at_m", count=3)
    look = c.numbers("look_at_m", count=3)
    if not all(abs(v) <= 20.0 for v in at + look):
        raise c.error("at_m", "a camera and what it looks at lie within 20 m of the arm")
    if math.dist(at, look) < 1e-3:
        raise c.error("look_at_m", "the camera looks at its own position: give a point at least 1 mm away")
    fov = c.number("fov_deg", 60.0, lo=5.0, hi=170.0)
    width = int(c.number("width", 320, lo=16, hi=4096))
    height = int(c.number("height", 240, lo=16, hi=4096))
    c.done()
    return SceneCamera(name, tuple(at), tuple(look), fov, width, height)


def _check_names(top: Section, key: str, names: list) -> None:
    seen = set()
    for n in names:
        if n in seen:
            raise top.error(key, f"two {key} are named {n!r}: give each its own name")
        seen.add(n)


def _check_overlaps(top: Section, parts: list) -> None:
    """No part starts inside another (their bounding circles and heights overlap by more than 0.1 mm)."""
    for i, a in enumerate(parts):
        for b in parts[i + 1 :]:
            gap_xy = math.dist(a.at_m[:2], b.at_m[:2]) - a.half_extent_xy_m - b.half_extent_xy_m
            a0, a1, b0, b1 = a.at_m[2], a.at_m[2] + a.height, b.at_m[2], b.at_m[2] + b.height
            if gap_xy < -1e-4 and min(a1, b1) - max(a0, b0) > 1e-4:
                raise top.error("parts", f"parts {a.name!r} and {b.name!r} start inside each other: move one")
