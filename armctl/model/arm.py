"""The arm: link lengths, joint limits, joint speed limits, home pose, gripper; optionally a rotating base
and a parallelogram linkage.

Loaded from YAML (degrees and metres in the file, radians inside). Built-in
presets live in ``armctl/presets/<name>.yaml``; ``load_arm`` takes a preset
name or a path.

Every arm is a planar chain of 2 or 3 links working in a vertical plane. Two options change how the
joints drive it (``armctl.model.kinematics`` is the one place that turns joint angles into positions):

- a **base** (yaw joint) under the chain: the chain works in the vertical plane through the base axis
  at the base angle; tool points are (x, y, z) with the base at the origin, base angle 0 along +x and z
  up. The shoulder axis may sit ``base_offset_m`` ahead of the base axis (along the arm's direction) and
  ``shoulder_height_m`` above z = 0. Joint angles are listed base first.
- a **parallelogram** linkage (2 links): joint 2 is the forearm's angle from the horizontal, not from
  the upper arm, and the angle between upper arm and forearm is held in ``link_angle_rad``: the elbow's
  range depends on the shoulder (the coupled limits, checked in ``kinematics.limit_excess``).
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

import numpy as np

from armctl.core.config import Section, load_yaml_file
from armctl.core.paths import PRESET_DIR, preset_names
from armctl.errors import ConfigError
from armctl.model.armfile import LINKAGES, arm_joints, arm_roll, check_link_angle, links_and_linkage
from armctl.model.hand import Roll
from armctl.model.servos import Drive, Servo, joint_drive, parse_drive, parse_grip
from armctl.model.zones import Zones, parse_zones, pose_refusal

#: A joint without ``max_accel_deg_s2`` may accelerate at this many times its speed limit per second
#: (it reaches full speed in 0.1 s): 1200 deg/s^2 for a 120 deg/s joint.
DEFAULT_ACCEL_PER_S = 10.0


@dataclass(frozen=True)
class Gripper:
    """Gripper servo: open and closed angles (rad) and its speed limit (rad/s)."""

    open_rad: float
    closed_rad: float
    max_speed_rad_s: float
    servo: Servo | None = None  # its model (armctl.model.servos), when the arm file names one
    close: str = "position"  # or "until_contact": bus servos stop where the load reaches ``max_load_pct``
    max_load_pct: float | None = None  # the torque cap while closing until contact (% of stall torque)


@dataclass(frozen=True, eq=False)
class Arm:
    """An arm: a planar 2- or 3-link chain, serial or parallelogram, optionally on a yaw base. Angles in
    radians, lengths in metres.

    ``q_min``, ``q_max``, ``max_speed_rad_s``, ``home_rad`` and ``joint_names`` have one entry per joint,
    the base first when there is one. In a serial chain joint i's angle is relative to link i-1 (joint 1
    to the horizontal, the base x axis of a planar arm), so the tool angle phi of a 3-link arm is the sum
    of the chain's angles. In a parallelogram chain joint 2 is the forearm's angle from the horizontal,
    and ``link_angle_rad`` (lo, hi) bounds the angle between upper arm and forearm (pi: straight).
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
    has_base: bool = False
    linkage: str = "serial"
    link_angle_rad: tuple[float, float] | None = None
    base_offset_m: float = 0.0
    shoulder_height_m: float = 0.0
    zones: Zones | None = None  # keep-out zones (armctl.model.zones), checked on every move
    max_accel_given_rad_s2: np.ndarray | None = None  # per joint, as the arm file gives it (NaN: not given)
    # An arm derived from a URDF (``armctl.model.urdf.derive``): one (urdf_joint_name, offset_rad, sign) per joint, base
    # first, meaning armctl angle = offset_rad + sign * URDF angle; None for an arm not from a URDF.
    urdf_map: tuple | None = None
    gripper_urdf_joint: str | None = None  # the URDF joint of the gripper servo, when the sidecar names one
    urdf: object | None = None  # armctl.model.urdf.derive.UrdfDerivation: how the arm was derived (frame shift, notes)
    # where the tool really lands over a grid (a calibration's accuracy map: ``corrected(point)``), or None
    target_map: object | None = None
    # a wrist roll after the chain (``armctl.model.hand``): the pose's last angle turns the hand about the tool axis
    roll: Roll | None = None
    bodies: tuple | None = None  # masses and centres of mass (``armctl.model.statics.Body``), at ``bodies_q_ref``
    bodies_q_ref: np.ndarray | None = None
    drive: Drive = field(default_factory=Drive)  # the servos, link masses, torque use, payload (armctl.model.servos)

    @property
    def max_accel_rad_s2(self) -> np.ndarray:
        """Each joint's acceleration limit (rad/s^2): ``max_accel_deg_s2`` from the arm file, else
        ``DEFAULT_ACCEL_PER_S`` times its speed limit (full speed in 0.1 s)."""
        default = DEFAULT_ACCEL_PER_S * np.asarray(self.max_speed_rad_s, dtype=float)
        given = self.max_accel_given_rad_s2
        if given is None:
            return default
        given = np.asarray(given, dtype=float)
        return np.where(np.isnan(given), default, given)

    @property
    def n(self) -> int:
        """Number of joints (servos other than the gripper): the chain's, plus one for a base."""
        return len(self.q_min)

    @property
    def n_links(self) -> int:
        """Number of links in the planar chain (2 or 3)."""
        return len(self.links_m)

    @property
    def dim(self) -> int:
        """Coordinates of a tool point: 3 (x, y, z) on a base, else 2 (x, y)."""
        return 3 if self.has_base else 2

    @property
    def point_words(self) -> tuple[str, ...]:
        """The names of a tool point's coordinates, in order: ("x", "y", "z") on a base, else ("x", "y")."""
        return ("x", "y", "z")[: self.dim]

    @property
    def parallelogram(self) -> bool:
        """True if joint 2 drives the forearm through a parallelogram (angle from the horizontal)."""
        return self.linkage == "parallelogram"

    @property
    def layered(self) -> bool:
        """True if the arm is more than a planar serial chain (a base, a parallelogram, a roll): the IK layer
        ``armctl.ik.layered`` solves it around the planar solver."""
        return self.has_base or self.parallelogram or self.roll is not None

    @property
    def chain_start(self) -> int:
        """Index of the chain's first joint (the shoulder) in a pose vector: 1 after a base, else 0."""
        return 1 if self.has_base else 0

    @property
    def chain_joints(self) -> slice:
        """Where the chain's joints are in a pose vector (after the base, if any; before the roll, if any)."""
        return slice(self.chain_start, self.chain_start + len(self.links_m))

    @property
    def roll_index(self) -> int | None:
        """Index of the wrist roll in a pose vector (the last), or None on an arm without one."""
        return None if self.roll is None else len(self.q_min) - 1

    @property
    def chain_names(self) -> tuple[str, ...]:
        """The chain's joint names (the base's left out)."""
        return self.joint_names[self.chain_joints]

    @property
    def coupled_joints(self) -> tuple[int, int] | None:
        """The indices (shoulder, forearm) of the two joints a parallelogram's link angle couples; None on
        a serial chain."""
        return (self.chain_start, self.chain_start + 1) if self.parallelogram else None

    @property
    def tool_frame_origin_m(self) -> np.ndarray:
        """The origin of the tool map's frame: the base axis at the shoulder's height (0, 0, h) on a base arm,
        the shoulder (0, 0) on a planar arm."""
        return np.array([0.0, 0.0, self.shoulder_height_m]) if self.has_base else np.zeros(2)

    # --- geometry: each asks the one function of armctl.model.kinematics (q: joint angles, rad, (..., n)) ---

    def tool_point(self, q) -> np.ndarray:
        """Tool point (m) of pose ``q``: (x, y), or (x, y, z) on a base (``kinematics.tool_point``)."""
        from armctl.model.kinematics import tool_point

        return tool_point(self, q)

    def tool_pitch(self, q) -> np.ndarray:
        """The tool's angle (rad) at pose ``q``: phi in the plane, its pitch on a base (``kinematics.tool_pitch``)."""
        from armctl.model.kinematics import tool_pitch

        return tool_pitch(self, q)

    def tool_pose(self, q) -> np.ndarray:
        """The tool's frame (4x4, m) at pose ``q`` in the base frame (``kinematics.tool_pose``)."""
        from armctl.model.kinematics import tool_pose

        return tool_pose(self, q)

    def points(self, q) -> np.ndarray:
        """The points (m) that draw the arm at pose ``q`` (``kinematics.arm_points``)."""
        from armctl.model.kinematics import arm_points

        return arm_points(self, q)

    def chain_angles(self, q) -> np.ndarray:
        """The chain's serial joint angles (rad) of pose ``q``: no base, a parallelogram's forearm made
        relative to the upper arm (``kinematics.chain_angles``); ``[..., 1]`` is the elbow's."""
        from armctl.model.kinematics import chain_angles

        return chain_angles(self, q)

    def base_side(self, q) -> np.ndarray:
        """+1 where pose ``q`` has the tool on the side of the base axis the arm faces, -1 where it reaches back
        over it; +1 without a base (``kinematics.base_side``)."""
        from armctl.model.kinematics import base_side

        return base_side(self, q)

    @cached_property
    def chain(self) -> Arm:
        """The planar chain as a plain serial arm (the planar solver's view): serial joint angles, the
        chain's limits as a box (a parallelogram's coupled limits as their bounding box: the layer checks
        the rest), no base, no offsets. The arm itself when it is already one."""
        if not self.layered:
            return self
        c = self.chain_joints
        lo, hi = np.array(self.q_min[c]), np.array(self.q_max[c])
        home = np.array(self.home_rad[c])
        if self.parallelogram:
            la_lo, la_hi = self.link_angle_rad
            lo[1] = max(self.q_min[c][1] - self.q_max[c][0], la_lo - math.pi)
            hi[1] = min(self.q_max[c][1] - self.q_min[c][0], la_hi - math.pi)
            home[1] = home[1] - home[0]
        return Arm(
            name=self.name,
            links_m=self.links_m,
            q_min=lo,
            q_max=hi,
            max_speed_rad_s=np.array(self.max_speed_rad_s[c]),
            max_accel_given_rad_s2=np.array(self.max_accel_rad_s2[c]),
            home_rad=np.clip(home, lo, hi),
            joint_names=self.joint_names[c],
            source=self.source,
        )

    @property
    def reach_max(self) -> float:
        """Outer radius (m) of the chain's reach annulus around the shoulder, ignoring joint limits."""
        return float(np.sum(self.links_m))

    @property
    def reach_from_axis_m(self) -> float:
        """The farthest (m) the chain reaches from the base's axis (the reach plus the shoulder's offset)."""
        return self.reach_max + abs(self.base_offset_m)

    @property
    def extent_m(self) -> float:
        """A bound (m) on how far any point of the arm lies from its origin in each coordinate (the reach, the
        shoulder's offset and its height): the half-width of a box that holds every pose."""
        return self.reach_from_axis_m + abs(self.shoulder_height_m)

    @property
    def reach_min(self) -> float:
        """Inner radius (m) of the chain's reach annulus around the shoulder, ignoring joint limits."""
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
        max_accel_deg_s2=None,
        home_deg=None,
        name: str = "custom",
        gripper: Gripper | None = None,
        base: bool = False,
        linkage: str = "serial",
        link_angle_deg=None,
        base_offset_m: float = 0.0,
        shoulder_height_m: float = 0.0,
    ) -> Arm:
        """Build an arm in code; limits default to +-180 deg, 180 deg/s and ``DEFAULT_ACCEL_PER_S`` times the
        speed limit per second (``max_accel_deg_s2``; the link angle of a
        parallelogram to 0..180 deg). With ``base`` every per-joint value lists the base first."""
        links = np.asarray(links_m, dtype=float)
        k = len(links)
        if k not in (2, 3) or not np.all(np.isfinite(links)) or np.any(links <= 0):
            raise ConfigError(f"links_m must be 2 or 3 positive lengths, got {list(links_m)!r}")
        if linkage not in LINKAGES:
            raise ConfigError(f"linkage must be one of {', '.join(LINKAGES)}, got {linkage!r}")
        if linkage == "parallelogram" and k != 2:
            raise ConfigError(f"a parallelogram linkage has 2 links (upper arm and forearm), got {k}")
        n = k + (1 if base else 0)

        def vec(v, default):
            a = np.radians(np.full(n, default, dtype=float) if v is None else np.asarray(v, dtype=float))
            if a.shape != (n,):
                raise ConfigError(f"expected {n} values, got {v!r}")
            return a

        q_min = vec(q_min_deg, -180.0)
        q_max = vec(q_max_deg, 180.0)
        la = None
        if linkage == "parallelogram":
            lo, hi = (0.0, 180.0) if link_angle_deg is None else link_angle_deg
            if not 0.0 <= lo < hi <= 180.0:
                raise ConfigError(f"link_angle_deg must be [lo, hi] with 0 <= lo < hi <= 180, got {link_angle_deg!r}")
            la = (math.radians(lo), math.radians(hi))
        names = (("base",) if base else ()) + tuple(f"joint{i + 1}" for i in range(k))
        arm = cls(
            name=name,
            links_m=links,
            q_min=q_min,
            q_max=q_max,
            max_speed_rad_s=vec(max_speed_deg_s, 180.0),
            max_accel_given_rad_s2=None if max_accel_deg_s2 is None else vec(max_accel_deg_s2, 0.0),
            home_rad=np.zeros(n),
            joint_names=names,
            gripper=gripper,
            has_base=bool(base),
            linkage=linkage,
            link_angle_rad=la,
            base_offset_m=float(base_offset_m) if base else 0.0,
            shoulder_height_m=float(shoulder_height_m) if base else 0.0,
        )
        if arm.parallelogram and not np.all(arm.chain.q_min <= arm.chain.q_max):
            raise ConfigError("no shoulder and forearm angles inside the joint limits keep link_angle_deg")
        home = vec(home_deg, 0.0) if home_deg is not None else _default_home(arm)
        object.__setattr__(arm, "home_rad", home)
        arm.__dict__.pop("chain", None)  # built with the provisional home
        return arm

    @property
    def ref(self) -> str:
        """How to load this arm again (``load_arm(arm.ref)``): its preset name, else its file's path (a URDF's
        with ``#TOOL_LINK`` when the tool link was given)."""
        source = Path(self.source)
        if source.suffix in (".yaml", ".yml", ".urdf") and source.parent.resolve() != PRESET_DIR.resolve():
            ref = str(source.resolve())
            if self.urdf is not None and self.urdf.tool_link_given:
                ref += f"#{self.urdf.tool_link}"
            return ref
        return self.name

    def with_zones(self, zones: Zones | None) -> Arm:
        """This arm with ``zones`` added to its own keep-out zones (a program's); itself when None."""
        if zones is None:
            return self
        from armctl.model.zones import merge

        return dataclasses.replace(self, zones=merge(self.zones, zones))

    def corrected_target(self, point) -> np.ndarray:
        """The point (m) to send the tool to so it lands on ``point``: through the calibration's accuracy map
        (``target_map``), the point itself without one or where the map says nothing."""
        p = np.asarray(point, dtype=float)
        return p if self.target_map is None else np.asarray(self.target_map.corrected(p), dtype=float)

    def within_limits(self, q, tol: float = 1e-9) -> bool:
        """True if joint angles ``q`` (rad) are inside every limit (a parallelogram's coupled ones too)."""
        from armctl.model.kinematics import limit_excess

        return bool(np.all(limit_excess(self, q) <= tol))


def _default_home(arm: Arm) -> np.ndarray:
    """Zero clipped into the limits; a parallelogram's forearm then moved into its link-angle range."""
    home = np.clip(np.zeros(arm.n), arm.q_min, arm.q_max)
    if arm.parallelogram:
        c = arm.chain_start
        la_lo, la_hi = arm.link_angle_rad
        rel = min(max(home[c + 1] - home[c], la_lo - math.pi), la_hi - math.pi)
        home[c + 1] = min(max(home[c] + rel, arm.q_min[c + 1]), arm.q_max[c + 1])
    return home


def load_arm(name_or_path: str | Path, *, tool_link: str | None = None) -> Arm:
    """Load a preset by name (``seed-2link``), an arm YAML file by path, or a URDF (``FILE.urdf``, with
    its sidecar ``FILE.armctl.yaml`` if there is one; ``FILE.urdf#LINK`` or ``tool_link`` names the
    tool link, see ``armctl.model.urdf.derive``)."""
    text = str(name_or_path)
    if ".urdf#" in text:
        text, _, link = text.partition(".urdf#")
        text += ".urdf"
        tool_link = tool_link or link
    path = Path(text)
    try:  # a folder we may not look in: reading the file says so, in one line
        is_file, is_dir = path.is_file(), path.is_dir()
    except OSError:
        is_file, is_dir = True, False
    # a folder is never an arm file: a preset of that name wins over a folder ./so101 where armctl is run
    if not (path.suffix in (".yaml", ".yml", ".urdf") or is_file):
        for suffix in (".yaml", ".urdf"):
            preset = PRESET_DIR / f"{text}{suffix}"
            if preset.exists():
                path = preset
                break
        else:
            what = f"{text!r} is a folder, not an arm file" if is_dir else f"no arm preset or file named {text!r}"
            raise ConfigError(f"{what}; presets: {', '.join(preset_names())}")
    elif is_dir:  # so101.yaml/ or x.urdf/: named as a file, but a folder
        raise ConfigError(f"{text!r} is a folder, not an arm file (give the arm's YAML or URDF file)")
    if path.suffix == ".urdf":
        return load_urdf_arm(path, tool_link=tool_link)
    if tool_link is not None:
        raise ConfigError(f"--tool-link {tool_link!r} applies to an arm from a URDF (FILE.urdf), not {text!r}")
    return parse_arm(load_yaml_file(path), path)


def load_urdf_arm(path, *, tool_link: str | None = None, sidecar=None) -> Arm:
    """The arm a URDF describes, with its sidecar (``armctl.model.urdf.derive`` derives it; see there)."""
    from armctl.model.urdf.derive import load_urdf_spec

    spec = load_urdf_spec(path, tool_link=tool_link, sidecar=sidecar)
    fields = spec.arm_fields()
    if spec.gripper is not None:
        fields["gripper"] = Gripper(*spec.gripper)
    arm = Arm(**fields)
    if arm.roll is None:
        return arm
    zero = np.array([off for _, off, _ in arm.urdf_map])  # the URDF's zero pose in armctl angles
    return dataclasses.replace(arm, urdf=arm.urdf.with_tool_frame(arm.tool_pose(zero)[:3, :3]))


def parse_arm(data, path) -> Arm:
    """Validate a parsed arm YAML document (see README, 'Arm files')."""
    top = Section(data, path=path)
    name = top.string("name", Path(str(path)).stem)
    links, linkage, link_angle = links_and_linkage(top)
    volts = top.number("supply_volts", None, lo=0.5, hi=48.0)
    has_base, cols, offsets = arm_joints(top, path, len(links), volts)
    roll = arm_roll(top, path, cols, has_base, len(links), linkage, volts)
    names, q_min, q_max, speeds, accels, servos, masses = cols
    if link_angle is not None:
        check_link_angle(top, q_min, q_max, link_angle, 1 if has_base else 0)
    home = top.numbers("home_deg", count=len(names))
    for i, h in enumerate(home):
        if not q_min[i] <= h <= q_max[i]:
            what = "the base" if has_base and i == 0 else f"joint {i + 1}"
            raise top.error(
                "home_deg",
                f"home angle of {what} ({h:g} deg) is outside its limits [{q_min[i]:g}, {q_max[i]:g}] deg",
            )
    gripper = _arm_gripper(top, volts)
    drive = parse_drive(top, servos, masses, None if gripper is None else gripper.servo, volts)
    zsec = top.section("zones", required=False)
    zones = None if zsec is None else parse_zones(zsec, has_base=has_base)
    top.done()
    arm = Arm(
        name=name,
        links_m=np.array(links),
        q_min=np.radians(q_min),
        q_max=np.radians(q_max),
        max_speed_rad_s=np.radians(speeds),
        max_accel_given_rad_s2=np.radians(accels),
        home_rad=np.radians(home),
        joint_names=tuple(names),
        gripper=gripper,
        source=str(path),
        has_base=has_base,
        linkage=linkage,
        link_angle_rad=link_angle,
        base_offset_m=offsets.get("base_offset_m", 0.0),
        shoulder_height_m=offsets.get("shoulder_height_m", 0.0),
        zones=zones,
        roll=roll,
        drive=drive,
    )
    _check_home(top, arm, home)
    return arm


def _arm_gripper(top: Section, volts: float | None) -> Gripper | None:
    g = top.section("gripper", required=False)
    if g is None:
        return None
    servo = joint_drive(g, volts)[0]
    gripper = Gripper(
        open_rad=math.radians(g.number("open_deg", lo=-360, hi=360)),
        closed_rad=math.radians(g.number("closed_deg", lo=-360, hi=360)),
        max_speed_rad_s=math.radians(g.number("max_speed_deg_s", lo=0, lo_open=True, hi=3600)),
        servo=servo,
        **dict(zip(("close", "max_load_pct"), parse_grip(g, servo))),
    )
    g.done()
    return gripper


def _check_home(top: Section, arm: Arm, home: list) -> None:
    """The home pose (deg) keeps a parallelogram's link angle and lies outside every keep-out zone."""
    if arm.parallelogram and not arm.within_limits(arm.home_rad):
        c0 = 1 if arm.has_base else 0
        angle = 180.0 - home[c0] + home[c0 + 1]
        la = arm.link_angle_rad
        raise top.error(
            "home_deg",
            f"the home pose puts {angle:g} deg between upper arm and forearm, outside link_angle_deg "
            f"[{math.degrees(la[0]):g}, {math.degrees(la[1]):g}]",
        )
    if arm.zones:
        why = pose_refusal(arm, arm.zones, arm.home_rad)
        if why is not None:
            raise top.error("zones", f"the home pose is inside a keep-out zone: {why}")
