"""The arm: link lengths, joint limits, joint speed limits, home pose, gripper.

Loaded from YAML (degrees and metres in the file, radians inside). Built-in
presets live in ``armctl/presets/<name>.yaml``; ``load_arm`` takes a preset
name or a path.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .config import Section, load_yaml_file
from .errors import ConfigError
from .paths import PRESET_DIR


@dataclass(frozen=True)
class Gripper:
    """Gripper servo: open and closed angles (rad) and its speed limit (rad/s)."""

    open_rad: float
    closed_rad: float
    max_speed_rad_s: float


@dataclass(frozen=True, eq=False)
class Arm:
    """A planar 2- or 3-link arm. Angles in radians, lengths in metres.

    Joint i's angle is relative to link i-1 (joint 1 to the base x axis), so
    the tool angle phi of a 3-link arm is q1 + q2 + q3.
    """

    name: str
    links_m: np.ndarray
    q_min: np.ndarray
    q_max: np.ndarray
    max_speed_rad_s: np.ndarray
    home_rad: np.ndarray
    joint_names: tuple[str, ...]
    gripper: Gripper | None = None
    source: str = field(default="<code>")

    @property
    def n(self) -> int:
        """Number of joints (2 or 3)."""
        return len(self.links_m)

    @property
    def reach_max(self) -> float:
        """Outer radius of the reach annulus (m)."""
        return float(np.sum(self.links_m))

    @property
    def reach_min(self) -> float:
        """Inner radius of the reach annulus (m), ignoring joint limits."""
        lengths = self.links_m
        return float(max(0.0, 2.0 * np.max(lengths) - np.sum(lengths)))

    @classmethod
    def from_lengths(
        cls,
        links_m,
        *,
        q_min_deg=None,
        q_max_deg=None,
        max_speed_deg_s=None,
        home_deg=None,
        name: str = "custom",
        gripper: Gripper | None = None,
    ) -> Arm:
        """Build an arm in code; limits default to +-180 deg and 180 deg/s."""
        links = np.asarray(links_m, dtype=float)
        n = len(links)
        if n not in (2, 3) or not np.all(np.isfinite(links)) or np.any(links <= 0):
            raise ConfigError(f"links_m must be 2 or 3 positive lengths, got {list(links_m)!r}")

        def vec(v, default):
            a = np.radians(np.full(n, default, dtype=float) if v is None else np.asarray(v, dtype=float))
            if a.shape != (n,):
                raise ConfigError(f"expected {n} values, got {v!r}")
            return a

        q_min = vec(q_min_deg, -180.0)
        q_max = vec(q_max_deg, 180.0)
        home = vec(home_deg, 0.0) if home_deg is not None else np.clip(np.zeros(n), q_min, q_max)
        return cls(
            name=name,
            links_m=links,
            q_min=q_min,
            q_max=q_max,
            max_speed_rad_s=vec(max_speed_deg_s, 180.0),
            home_rad=home,
            joint_names=tuple(f"joint{i + 1}" for i in range(n)),
            gripper=gripper,
        )

    @property
    def ref(self) -> str:
        """How to load this arm again (``load_arm(arm.ref)``): its preset name, else its file's path."""
        source = Path(self.source)
        if source.suffix in (".yaml", ".yml") and source.parent.resolve() != PRESET_DIR.resolve():
            return str(source.resolve())
        return self.name

    def within_limits(self, q, tol: float = 1e-9) -> bool:
        """True if joint angles ``q`` (rad) are inside the angle limits."""
        q = np.asarray(q, dtype=float)
        return bool(np.all(q >= self.q_min - tol) and np.all(q <= self.q_max + tol))


def preset_names() -> list[str]:
    """Names of the built-in arm presets."""
    return sorted(p.stem for p in PRESET_DIR.glob("*.yaml"))


def load_arm(name_or_path: str | Path) -> Arm:
    """Load a preset by name (``seed-2link``) or an arm YAML file by path."""
    text = str(name_or_path)
    path = Path(text)
    if not (path.suffix in (".yaml", ".yml") or path.exists()):
        preset = PRESET_DIR / f"{text}.yaml"
        if not preset.exists():
            raise ConfigError(f"no arm preset or file named {text!r}; presets: {', '.join(preset_names())}")
        path = preset
    return parse_arm(load_yaml_file(path), path)


def parse_arm(data, path) -> Arm:
    """Validate a parsed arm YAML document (see README, 'Arm files')."""
    top = Section(data, path=path)
    name = top.string("name", Path(str(path)).stem)
    links = top.numbers("links_m", count=(2, 3))
    for i, length in enumerate(links):
        if length <= 0:
            raise top.error("links_m", f"link {i + 1} length must be > 0 m, found {length:g}")
    n = len(links)
    joints_raw = top.items("joints")
    if len(joints_raw) != n:
        raise top.error("joints", f"expected {n} joints (one per link), found {len(joints_raw)}")
    names, q_min, q_max, speeds = [], [], [], []
    for i, raw in enumerate(joints_raw):
        line = joints_raw.item_lines[i] if hasattr(joints_raw, "item_lines") else None
        j = Section(raw, path=path, key=f"joints[{i}]", line=line)
        names.append(j.string("name", f"joint{i + 1}"))
        lo = j.number("min_deg", lo=-360, hi=360)
        hi = j.number("max_deg", lo=-360, hi=360)
        if hi <= lo:
            raise j.error("max_deg", f"max_deg ({hi:g}) must be greater than min_deg ({lo:g})")
        q_min.append(lo)
        q_max.append(hi)
        speeds.append(j.number("max_speed_deg_s", lo=0, lo_open=True, hi=3600))
        j.done()
    home = top.numbers("home_deg", count=n)
    for i, h in enumerate(home):
        if not q_min[i] <= h <= q_max[i]:
            raise top.error(
                "home_deg",
                f"home angle of joint {i + 1} ({h:g} deg) is outside its limits [{q_min[i]:g}, {q_max[i]:g}] deg",
            )
    gripper = None
    g = top.section("gripper", required=False)
    if g is not None:
        gripper = Gripper(
            open_rad=math.radians(g.number("open_deg", lo=-360, hi=360)),
            closed_rad=math.radians(g.number("closed_deg", lo=-360, hi=360)),
            max_speed_rad_s=math.radians(g.number("max_speed_deg_s", lo=0, lo_open=True, hi=3600)),
        )
        g.done()
    top.done()
    return Arm(
        name=name,
        links_m=np.array(links),
        q_min=np.radians(q_min),
        q_max=np.radians(q_max),
        max_speed_rad_s=np.radians(speeds),
        home_rad=np.radians(home),
        joint_names=tuple(names),
        gripper=gripper,
        source=str(path),
    )
