"""An arm from a URDF (the maker's robot description): the chain read with ``xml.etree``, no meshes.

A URDF fits armctl's model when the chain from its root link to the tool link is an optional yaw joint
(axis vertical in the root frame) followed by 2 or 3 pitch joints whose axes are horizontal and parallel,
so they move the tool in one vertical plane; fixed joints anywhere, a parallelogram expressed with
``<mimic>`` (below), other branches only under the gripper joint or with fixed joints only. Everything is
worked out at the URDF's zero pose (every joint 0, a mimic joint at its offset):

- the **plane**: u horizontal and perpendicular to the pitch axes (of its two directions the one nearest
  the root's +x), v = the root's +z; a pitch joint's direction is +1 when its axis is u x v (a positive
  URDF angle raises the arm, armctl's convention), else -1; the yaw joint's when its axis is +z;
- the **frame shift**, the one translation between the URDF's root frame and armctl's: x, y from the yaw
  axis (a planar arm: from the first pitch axis, along u), z from the surface the base stands on
  (``floor_z_m`` in the sidecar, default the root link's origin). Only a translation: armctl's x is the
  root's x; a URDF zero pose pointing elsewhere is the base angle's offset;
- **links**: the segments between pitch axes (and from the last to the tool link's origin) in the plane;
  segments that turn together are one link; a segment that never turns (a level hand) adds to
  ``base_offset_m``/``shoulder_height_m``; the first pitch axis's place gives those offsets;
- **zero pose, directions and ranges**: armctl angle = offset + sign * URDF angle per joint
  (``Arm.urdf_map``); ``<limit lower upper>`` through that map gives the ranges, ``velocity`` the speeds
  (0 or none: ``default_speed_deg_s``, printed once).

A **parallelogram** (the elbow servo sets the forearm's angle from the horizontal) is a joint at the elbow
that mimics the shoulder with multiplier -1 before the elbow joint: the forearm then turns with the elbow
joint alone. A **wrist roll** (the SO-101's ``wrist_roll``) is the chain's last moving joint after 3 pitch joints
on a base, its axis in the arm's plane: the pose's last angle, armctl = sign * URDF angle, and the hand's
geometry (``armctl.model.hand.Roll``) worked out exactly by ``armctl.model.urdf.wrist``. A joint that is no part
of the model (or a roll the user keeps still) is held at a fixed angle by naming it under ``held_joints`` in
the sidecar.

A maker's URDF works **as it comes** (SO-ARM100's ``so101_new_calib.urdf``, no sidecar, no flag): a turning
joint named as the gripper's (its name or its link's holds "gripper", "jaw" or "finger"), ending a branch of its
own beside the hand's frame, is taken as the gripper; the tool link is the chain's end frame (the leaf that is not
the gripper's branch); a wrist roll is recognised as above. Each guess is printed once as a note, and each has its
sidecar key (``gripper: {joint}``, ``tool_link``, ``held_joints``; a roll named in ``max_speed_deg_s`` is no
guess). A tool beside the plane through the yaw axis by more than 0.1 mm gets a note with its size (refused
beyond 1 mm). Anything else is refused with one line naming the joint and why
(``ConfigError``, exit 2).

The **sidecar** ``<stem>.armctl.yaml`` beside ``<stem>.urdf`` (optional) holds what a URDF lacks; every key
is optional: ``name``, ``tool_link``, ``floor_z_m``, ``default_speed_deg_s``, ``max_speed_deg_s`` ({joint:
deg/s}, wins over the URDF), ``home_deg`` (armctl angles, base first; default the URDF zero pose),
``held_joints`` ({joint: URDF deg}), ``steps_follow_urdf`` (true: a bus-servo calibration's direction of
every joint must be its URDF sign, as LeRobot calibrates; checked by ``Calibration.check_arm``), ``gripper``
({joint, open_deg, closed_deg, max_speed_deg_s}; angles
of the gripper servo as the URDF's gripper joint counts them).
"""

from __future__ import annotations

import dataclasses
import math
import sys
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from armctl.core import limits
from armctl.core.config import load_yaml_file
from armctl.model.hand import Roll, describe_roll, roll_line
from armctl.model.servos import Drive
from armctl.model.urdf.chain import (
    Axes,
    Chain,
    Tree,
    Z,
    find_chain,
    guess_notes,
    read_tree,
    sort_axes,
    walk_zero_pose,
)
from armctl.model.urdf.masses import urdf_bodies
from armctl.model.urdf.parse import Sidecar, UrdfJoint, parse_urdf, read_sidecar, sidecar_drive, sidecar_path
from armctl.model.urdf.wrist import check_roll_arm, hand_roll

DEFAULT_SPEED_DEG_S = 60.0  # where neither the URDF (velocity 0 or none) nor the sidecar gives a speed
TOOL_PLANE_TOL_M = 1e-3  # the tool may sit this far beside the plane through the base axis
TOOL_PLANE_NOTE_M = 1e-4  # ... and a note says so beyond this
SAME_POINT_M = 1e-7  # two pitch axes closer than this are one (coaxial joints)
_printed: set = set()


@dataclass(frozen=True)
class UrdfDerivation:
    """How an arm was derived from its URDF (what ``armctl workspace`` prints)."""

    path: str
    robot: str
    root_link: str
    tool_link: str
    tool_link_given: bool
    sidecar: str | None
    origin_m: tuple  # armctl's origin in the URDF root frame: armctl point = URDF point - origin_m
    plane_u: tuple  # the arm's direction at the URDF zero pose (root frame)
    floor_z_m: float
    tool_lateral_m: float  # the tool beside the plane through the base axis (or the first pitch axis)
    steps_follow_urdf: bool = False  # the sidecar's: bus-servo steps grow with the URDF angle on every joint
    lateral_m: dict = field(default_factory=dict)  # each pitch joint's axis point beside that plane
    held_deg: dict = field(default_factory=dict)
    notes: tuple = ()
    speed_from: dict = field(default_factory=dict)  # joint -> "urdf" | "sidecar" | "default"
    roll_sign: int = 0  # a wrist roll's armctl angle = roll_sign * URDF angle (0: no roll)
    # the tool link's rotation in the root frame at the URDF zero pose, and the one constant rotation from armctl's
    # tool frame (``armctl.model.kinematics.tool_pose``) to the tool link's frame: URDF R = armctl R @ tool_frame_R
    # at every pose (set by ``with_tool_frame`` once the arm is built; arms with a wrist roll)
    tool_link_R: np.ndarray | None = field(default=None, compare=False, repr=False)
    tool_frame_R: np.ndarray | None = field(default=None, compare=False, repr=False)

    def with_tool_frame(self, armctl_R_zero) -> UrdfDerivation:
        """This derivation with ``tool_frame_R`` from armctl's tool frame (3x3) at the URDF zero pose."""
        R = np.asarray(armctl_R_zero, dtype=float).T @ self.tool_link_R
        R.flags.writeable = False
        return dataclasses.replace(self, tool_frame_R=R)

    def to_urdf_point(self, p) -> np.ndarray:
        """An armctl point (x, y, z; planar: x, y) in the URDF root frame (m)."""
        p = np.asarray(p, dtype=float)
        if p.shape[-1] == 3:
            return p + np.asarray(self.origin_m)
        u = np.asarray(self.plane_u)
        return np.asarray(self.origin_m) + p[..., :1] * u + p[..., 1:2] * np.array([0.0, 0.0, 1.0])

    def from_urdf_point(self, p, planar: bool) -> tuple[np.ndarray, float]:
        """A point in the URDF root frame (m) -> (the armctl point: x, y, z, or x, y on a ``planar`` arm, and how
        far the point lies beside a planar arm's plane, m; 0 on an arm with a base). Inverse of ``to_urdf_point``."""
        d = np.asarray(p, dtype=float) - np.asarray(self.origin_m)
        if not planar:
            return d, 0.0
        u = np.asarray(self.plane_u)
        x, z = float(d @ u), float(d[2])
        return np.array([x, z]), float(np.linalg.norm(d - x * u - np.array([0.0, 0.0, z])))


# --- the importer -------------------------------------------------------------------------------------------


def load_urdf_spec(path, *, tool_link: str | None = None, sidecar: str | Path | None = None) -> UrdfArmSpec:
    """The arm a URDF file describes (see the module docstring), as the keyword arguments of ``armctl.model.arm.Arm``
    (``armctl.model.arm.load_arm`` builds it; this module does not import that one). ``tool_link`` wins over the
    sidecar's; ``sidecar`` defaults to ``<stem>.armctl.yaml`` beside the URDF, if there is one."""
    path = Path(path)
    text = limits.read_utf8(path, what="URDF")  # bounded; XML entity bombs are expat's to refuse (it does)
    sc_path = Path(sidecar) if sidecar is not None else sidecar_path(path)
    sc = None
    if sidecar is not None or sc_path.is_file():
        sc = read_sidecar(load_yaml_file(sc_path), sc_path)
    return urdf_spec(text, path, tool_link=tool_link, sidecar=sc)


def _note(key: str, message: str) -> None:
    """A note on stderr, once per process (the arm is loaded by several layers of one command)."""
    if key not in _printed:
        _printed.add(key)
        print(f"note: {message}", file=sys.stderr)


@dataclass(frozen=True)
class UrdfArmSpec:
    """The arm a URDF describes: ``arm_fields()`` are the keyword arguments of ``armctl.model.arm.Arm``, with
    ``gripper`` as (open_rad, closed_rad, max_speed_rad_s) for ``armctl.model.arm.Gripper``; ``urdf`` says how the
    arm was derived."""

    name: str
    links_m: np.ndarray
    q_min: np.ndarray
    q_max: np.ndarray
    max_speed_rad_s: np.ndarray
    home_rad: np.ndarray
    joint_names: tuple
    gripper: tuple | None
    source: str
    has_base: bool
    linkage: str
    link_angle_rad: tuple | None
    base_offset_m: float
    shoulder_height_m: float
    urdf_map: tuple
    gripper_urdf_joint: str | None
    urdf: UrdfDerivation
    bodies: tuple | None = None  # masses (armctl.model.urdf.masses)
    bodies_q_ref: np.ndarray | None = None
    roll: Roll | None = None
    drive: Drive | None = None

    def arm_fields(self) -> dict:
        """Every field by name (``Arm(**spec.arm_fields())`` once ``gripper`` is made a ``Gripper``)."""
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}


def urdf_spec(text: str, path, *, tool_link: str | None = None, sidecar: Sidecar | None = None) -> UrdfArmSpec:
    """``load_urdf_spec`` of a URDF document; ``sidecar`` as ``read_sidecar`` gives it (None: no sidecar). The
    phases in order: the tree and the chain (``armctl.model.urdf.chain``), the plane, the links and the linkage,
    the joints' zeros, signs, ranges and speeds, the gripper, the home pose."""
    sc = sidecar or Sidecar()
    robot, links, joints = parse_urdf(text, path)
    tree = read_tree(links, joints, path)
    chain = find_chain(tree, sc, tool_link)
    moving, tool_T = walk_zero_pose(chain, sc)
    tool_p = tool_T[:3, 3]
    axes = sort_axes(chain, moving)
    plane = _plane(chain, axes, sc, tool_p)
    groups, const = _link_groups(tree, axes, plane, tool_p)
    linkage, mapping = _linkage(tree, axes, groups)
    roll, roll_sign = None, 0
    if axes.roll is not None:
        check_roll_arm(chain, axes, len(groups), linkage)
        roll, roll_sign = hand_roll(chain, axes, plane, tool_p, groups[-1][1], sc.held_deg)
    offset_uv = plane.uv(axes.pitch[0][2]) + const
    table = _JointTable(tree, sc)
    if axes.base is not None:
        bj, baxis, _ = axes.base
        table.add(bj, math.atan2(plane.u[1], plane.u[0]), 1 if baxis @ Z > 0 else -1)
    for idx, off, sign in mapping:
        table.add(axes.actuated[idx][0], off, sign)
    if roll is not None:  # the pose's last angle; 0 at the URDF's zero
        table.add(axes.roll[0], 0.0, roll_sign)
    q_min, q_max = np.array(table.q_min), np.array(table.q_max)
    c = 1 if axes.base is not None else 0  # the shoulder's place in a pose
    if linkage == "parallelogram":
        _check_parallelogram(tree, table.names, q_min, q_max, c)
    origin = plane.origin
    if axes.base is None and np.hypot(*offset_uv) > SAME_POINT_M:
        # a planar arm has no offsets: its origin is the shoulder, moved by a segment that never turns
        origin = origin + offset_uv[0] * plane.u + offset_uv[1] * Z
    notes = guess_notes(chain, axes.roll and axes.roll[0].name, sc) + _speed_notes(path, sc, table.slow)
    notes += _plane_notes(chain, axes, plane)
    urdf = _derivation(chain, robot, sc, plane, origin, notes, table.speed_from)
    urdf = dataclasses.replace(urdf, roll_sign=roll_sign, tool_link_R=tool_T[:3, :3].copy())
    for line in notes:  # keyed by the absolute path: the CLI loads 'arm.urdf', the simulator its absolute path
        _note(f"{Path(str(path)).absolute()}:{line}", line)
    bodies = urdf_bodies(text, tree, axes, sc.held_deg, origin, table.urdf_map) if linkage == "serial" else None
    return UrdfArmSpec(
        name=sc.name or robot,
        links_m=np.array([float(np.hypot(*g[1])) for g in groups]),
        q_min=q_min,
        q_max=q_max,
        max_speed_rad_s=np.array(table.speeds),
        home_rad=_home(sc, table, q_min, q_max, c, linkage),
        joint_names=tuple(table.names),
        gripper=_gripper(sc, joints, chain.turning_grip),
        source=str(path),
        has_base=axes.base is not None,
        linkage=linkage,
        link_angle_rad=(0.0, math.pi) if linkage == "parallelogram" else None,
        base_offset_m=float(offset_uv[0]) if axes.base is not None else 0.0,
        shoulder_height_m=float(offset_uv[1]) if axes.base is not None else 0.0,
        urdf_map=tuple(table.urdf_map),
        gripper_urdf_joint=chain.turning_grip,
        urdf=urdf,
        roll=roll,
        bodies=None if bodies is None else bodies[0],
        bodies_q_ref=None if bodies is None else bodies[1],
        drive=sidecar_drive(sc, [u for u, _, _ in table.urdf_map]),
    )


@dataclass(frozen=True)
class _Plane:
    """The arm's plane: u horizontal, perpendicular to the pitch axes (nearest the root's +x), v = +z, w = u x v;
    ``origin`` armctl's origin in the root frame (the yaw axis at the floor, or the first pitch axis)."""

    u: np.ndarray
    w: np.ndarray
    origin: np.ndarray
    lateral: dict  # each pitch joint's axis point beside the plane (m)
    tool_lateral: float

    def uv(self, p) -> np.ndarray:
        d = p - self.origin
        return np.array([d @ self.u, d @ Z])


def _plane(chain: Chain, axes: Axes, sc: Sidecar, tool_p) -> _Plane:
    """The plane of the pitch joints; refuses a tool beside the plane through the yaw axis."""
    w0 = axes.pitch[0][1]
    cands = [np.cross(Z, w0), np.cross(w0, Z)]
    cands = [c / np.linalg.norm(c) for c in cands]
    u = max(cands, key=lambda c: (round(float(c[0]), 9), round(float(c[1]), 9)))
    w = np.cross(u, Z)
    if axes.base is not None:
        origin = np.array([axes.base[2][0], axes.base[2][1], sc.floor_z_m])
    else:
        p1 = axes.pitch[0][2]
        origin = np.array([p1[0], p1[1], p1[2]])
    lateral = {j.name: float((p - origin) @ w) for j, _, p in axes.pitch}
    tool_lateral = float((tool_p - origin) @ w)
    if axes.base is not None and abs(tool_lateral) > TOOL_PLANE_TOL_M:
        raise chain.tree.refuse(
            f"the tool link {chain.tool!r} lies {abs(tool_lateral) * 1000:.1f} mm beside the plane through the yaw "
            f"axis of {axes.base[0].name!r}: armctl's model needs the tool in that plane"
        )
    return _Plane(u, w, origin, lateral, tool_lateral)


def _plane_notes(chain: Chain, axes: Axes, plane: _Plane) -> list[str]:
    """The note on a tool beside the plane through the base axis (more than ``TOOL_PLANE_NOTE_M``)."""
    side = plane.tool_lateral
    if axes.base is None or abs(side) <= TOOL_PLANE_NOTE_M:
        return []
    kept = "kept in the wrist roll's geometry" if axes.roll is not None else "armctl's tool point lies in the plane"
    return [
        f"{Path(str(chain.tree.path)).name}: the tool link {chain.tool!r} lies {abs(side) * 1000:.2f} mm "
        f"{'right' if side > 0 else 'left'} of the arm's plane at the zero pose ({kept}; accepted up to "
        f"{TOOL_PLANE_TOL_M * 1000:g} mm)"
    ]


def _link_groups(tree: Tree, axes: Axes, plane: _Plane, tool_p) -> tuple[list, np.ndarray]:
    """([row, vector, first joint] per link, the constant vector): the segments between pitch axes (and to the tool)
    in the plane, each turning by a row of coefficients of the actuated joints; segments that turn together are one
    link, those that never turn add up to the constant."""
    pitch, A = axes.pitch, len(axes.actuated)
    row = np.zeros(A)
    segs = []  # (row, vector in the plane, first joint of the segment)
    pts = [(j, plane.uv(p)) for j, _, p in pitch] + [(None, plane.uv(tool_p))]
    for i, (j, here) in enumerate(pts[:-1]):
        sign = 1.0 if pitch[i][1] @ plane.w > 0 else -1.0
        if j.mimic is None:
            row = row + sign * np.eye(A)[axes.act_index[j.name]]
        else:
            row = row + sign * j.mimic[1] * np.eye(A)[axes.act_index[j.mimic[0]]]
        segs.append((row.copy(), pts[i + 1][1] - here, j))
    groups: list[list] = []
    const = np.zeros(2)
    for r, vec, j in segs:
        if np.all(np.abs(r) < 1e-9):
            const = const + vec
            continue
        for g in groups:
            if np.allclose(g[0], r, atol=1e-9):
                g[1] = g[1] + vec
                break
        else:
            groups.append([r, vec, j])
    if len(groups) not in (2, 3):
        raise tree.refuse(
            f"the pitch joints ({', '.join(p[0].name for p in pitch)}) make {len(groups)} independently turning "
            "links: armctl's arms have 2 or 3"
        )
    for _, vec, j in groups:
        if np.hypot(*vec) < SAME_POINT_M:
            raise tree.refuse(
                f"joint {j.name!r} turns a link of zero length (the tool lies on its axis): hold it instead"
            )
    return groups, const


def _unit(r):
    """(index, sign) when the row ``r`` is +-1 on one joint, else None."""
    nz = np.flatnonzero(np.abs(r) > 1e-9)
    if len(nz) == 1 and abs(abs(r[nz[0]]) - 1.0) < 1e-9:
        return int(nz[0]), int(np.sign(r[nz[0]]))
    return None


def _linkage(tree: Tree, axes: Axes, groups: list) -> tuple[str, list]:
    """("serial" | "parallelogram", per armctl chain joint (actuated index, offset rad, sign)) of the links'
    rows; refuses any other mix."""
    A = len(axes.actuated)
    rows = [g[0] for g in groups]
    beta = [math.atan2(g[1][1], g[1][0]) for g in groups]
    deltas = [rows[0]] + [rows[i] - rows[i - 1] for i in range(1, len(rows))]
    serial = [_unit(d) for d in deltas]
    if len(rows) == A and all(s is not None and s[0] == i for i, s in enumerate(serial)):
        return "serial", [(idx, beta[i] - (beta[i - 1] if i else 0.0), sign) for i, (idx, sign) in enumerate(serial)]
    s1, s2 = _unit(rows[0]), _unit(rows[1])
    if len(rows) == 2 == A and s1 is not None and s1[0] == 0 and s2 is not None:
        # forearm from the horizontal, by the elbow joint alone
        return "parallelogram", [(0, beta[0], s1[1]), (1, beta[1], s2[1])]
    culprit = next((p[0] for p in axes.pitch if p[0].mimic is not None), axes.pitch[-1][0])
    what = (
        f"joint {culprit.name!r} (mimic of {culprit.mimic[0]!r}, multiplier {culprit.mimic[1]:g})"
        if culprit.mimic
        else f"joint {culprit.name!r}"
    )
    raise tree.refuse(
        f"{what}: the links turn by a mix of joints that armctl's model (serial, or a parallelogram) has no place for"
    )


def _default_speed(sc: Sidecar) -> float:
    """The speed (rad/s) of a joint neither the URDF nor the sidecar gives one."""
    return math.radians(sc.default_speed_deg_s or DEFAULT_SPEED_DEG_S)


class _JointTable:
    """armctl's joints in order, base first: URDF name, range (rad), speed (rad/s), (name, offset, sign), and
    where each speed came from."""

    def __init__(self, tree: Tree, sc: Sidecar):
        self.tree, self.sc = tree, sc
        self.names, self.q_min, self.q_max, self.speeds, self.urdf_map = [], [], [], [], []
        self.speed_from: dict[str, str] = {}
        self.slow: list[str] = []  # joints at the default speed

    def speed_of(self, j: UrdfJoint) -> float:
        if j.name in self.sc.max_speed_deg_s:
            self.speed_from[j.name] = "sidecar"
            return math.radians(self.sc.max_speed_deg_s[j.name])
        if j.velocity is not None and j.velocity > 0:
            self.speed_from[j.name] = "urdf"
            return j.velocity
        self.speed_from[j.name] = "default"
        self.slow.append(j.name)
        return _default_speed(self.sc)

    def add(self, j: UrdfJoint, off: float, sign: int) -> None:
        """The joint ``j`` as armctl angle = ``off`` + ``sign`` * URDF angle; its ``<limit>`` through that map."""
        off = math.remainder(off, 2 * math.pi)
        if j.type == "continuous":
            lo, hi = off - math.pi, off + math.pi
        else:
            if j.lower is None or j.upper is None:
                raise self.tree.refuse(f"joint {j.name!r}: a revolute joint needs <limit lower=... upper=...>")
            if j.upper <= j.lower:
                raise self.tree.refuse(
                    f"joint {j.name!r}: limit upper ({j.upper:g}) must be greater than lower ({j.lower:g})"
                )
            a, b = off + sign * j.lower, off + sign * j.upper
            lo, hi = min(a, b), max(a, b)
        self.names.append(j.name)
        self.q_min.append(lo)
        self.q_max.append(hi)
        self.speeds.append(self.speed_of(j))
        self.urdf_map.append((j.name, float(off), int(sign)))


def _check_parallelogram(tree: Tree, names: list, q_min, q_max, c: int) -> None:
    """Some angles inside the URDF's limits keep upper arm and forearm 0..180 deg apart."""
    if min(q_max[c + 1] - q_min[c], 0.0) < max(q_min[c + 1] - q_max[c], -math.pi):
        raise tree.refuse(
            f"joints {names[c]!r} and {names[c + 1]!r} (a parallelogram): no angles inside the URDF's limits keep "
            "upper arm and forearm 0..180 deg apart"
        )


def _home(sc: Sidecar, table: _JointTable, q_min, q_max, c: int, linkage: str) -> np.ndarray:
    """The sidecar's ``home_deg`` checked against the limits, else the URDF zero pose clipped into them (a
    parallelogram's forearm then moved until upper arm and forearm are 0..180 deg apart)."""
    n = len(table.names)
    if sc.home_deg is None:
        home = np.clip(np.array([m[1] for m in table.urdf_map]), q_min, q_max)
        if linkage == "parallelogram":
            rel = min(max(home[c + 1] - home[c], -math.pi), 0.0)
            home[c + 1] = min(max(home[c] + rel, q_min[c + 1]), q_max[c + 1])
        return home
    home = np.radians(sc.home_deg)
    if home.shape != (n,):
        raise sc.lines["home_deg"].error("home_deg", f"expected {n} angles (base first), found {len(home)}")
    folded = linkage == "parallelogram" and not 0.0 <= math.pi + home[c + 1] - home[c] <= math.pi
    if folded or np.any(home < q_min - 1e-9) or np.any(home > q_max + 1e-9):
        raise sc.lines["home_deg"].error(
            "home_deg",
            f"home pose {sc.home_deg} deg is outside the joint limits the URDF gives "
            f"({', '.join(f'{math.degrees(a):.1f}..{math.degrees(b):.1f}' for a, b in zip(q_min, q_max))})",
        )
    return home


def _speed_notes(path, sc: Sidecar, slow: list) -> list[str]:
    """The note on joints at the default speed (none when every joint has one)."""
    if not slow:
        return []
    speed = sc.default_speed_deg_s or DEFAULT_SPEED_DEG_S
    where = sc.path or sidecar_path(path)
    return [
        f"{Path(str(path)).name}: no velocity limit (0 or none) for {', '.join(slow)}: {speed:g} deg/s "
        f"{'each ' if len(slow) > 1 else ''}(set default_speed_deg_s or max_speed_deg_s in {Path(where).name})"
    ]


def _gripper(sc: Sidecar, joints: dict, grip_joint: str | None) -> tuple | None:
    """(open_rad, closed_rad, max_speed_rad_s, servo, close, max_load_pct) of the sidecar's gripper; the speed from
    the sidecar, else the URDF's gripper joint, else the default."""
    if sc.gripper is None:
        return None
    gspeed = sc.gripper["max_speed_deg_s"]
    if gspeed is not None:
        gs = math.radians(gspeed)
    elif grip_joint is not None and (joints[grip_joint].velocity or 0) > 0:
        gs = joints[grip_joint].velocity
    else:
        gs = _default_speed(sc)
    return (math.radians(sc.gripper["open_deg"]), math.radians(sc.gripper["closed_deg"]), gs, *sc.gripper["drive"])


def _derivation(chain: Chain, robot: str, sc: Sidecar, plane: _Plane, origin, notes, speed_from) -> UrdfDerivation:
    return UrdfDerivation(
        path=str(chain.tree.path),
        robot=robot,
        root_link=chain.tree.root,
        tool_link=chain.tool,
        tool_link_given=chain.tool_link_given,
        sidecar=sc.path,
        origin_m=tuple(float(v) for v in origin),
        plane_u=tuple(float(v) for v in plane.u),
        floor_z_m=sc.floor_z_m,
        tool_lateral_m=plane.tool_lateral,
        steps_follow_urdf=sc.steps_follow_urdf,
        lateral_m=plane.lateral,
        held_deg=dict(sc.held_deg),
        notes=tuple(notes),
        speed_from=speed_from,
    )


def urdf_angles(arm, q) -> dict[str, float]:
    """The URDF joint angles (rad) for armctl joint angles ``q`` (rad): inverse of ``Arm.urdf_map``."""
    if arm.urdf_map is None:
        raise ValueError(f"arm {arm.name!r} was not derived from a URDF")
    return {name: sign * (float(a) - off) for (name, off, sign), a in zip(arm.urdf_map, np.asarray(q, float))}


def urdf_velocities(arm, dq) -> dict[str, float]:
    """The URDF joint velocities (rad/s) for armctl joint velocities ``dq`` (rad/s): ``sign * dq`` per joint."""
    if arm.urdf_map is None:
        raise ValueError(f"arm {arm.name!r} was not derived from a URDF")
    return {name: sign * float(v) for (name, _, sign), v in zip(arm.urdf_map, np.asarray(dq, float))}


def armctl_angles(arm, urdf_q: dict) -> np.ndarray:
    """armctl joint angles (rad) for URDF joint angles (rad, by name): ``offset + sign * urdf``."""
    if arm.urdf_map is None:
        raise ValueError(f"arm {arm.name!r} was not derived from a URDF")
    return np.array([off + sign * float(urdf_q[name]) for name, off, sign in arm.urdf_map])


def describe(arm) -> dict | None:
    """What was derived from the URDF (``armctl workspace --json`` key ``urdf``), None for other arms."""
    d = arm.urdf
    if d is None:
        return None
    return {
        "path": d.path,
        "robot": d.robot,
        "root_link": d.root_link,
        "tool_link": d.tool_link,
        "sidecar": d.sidecar,
        "origin_in_urdf_m": list(d.origin_m),
        "floor_z_m": d.floor_z_m,
        "plane_u": list(d.plane_u),
        "tool_beside_plane_m": d.tool_lateral_m,
        "joints": [
            {
                "name": arm.joint_names[i],
                "urdf_joint": name,
                "zero_deg": round(math.degrees(off), 6),
                "sign": sign,
                "speed_from": d.speed_from.get(name),
                "beside_plane_m": d.lateral_m.get(name),
            }
            for i, (name, off, sign) in enumerate(arm.urdf_map)
        ],
        "held_joints_deg": d.held_deg,
        "roll": None if arm.roll is None else {**describe_roll(arm.roll), "sign": d.roll_sign},
        "gripper_joint": arm.gripper_urdf_joint,
        "notes": list(d.notes),
    }


def describe_lines(arm) -> list[str]:
    """``describe`` as text lines for ``armctl workspace``."""
    d = describe(arm)
    if d is None:
        return []
    o = d["origin_in_urdf_m"]
    if arm.has_base:
        shift = (
            f"x, y from the yaw axis, z from the floor: armctl = URDF - ({o[0]:.4f}, {o[1]:.4f}, {o[2]:.4f}) m "
            f"in {d['root_link']}"
        )
    else:
        u = d["plane_u"]
        shift = (
            f"x along ({u[0]:.3f}, {u[1]:.3f}, {u[2]:.3f}), y up, from ({o[0]:.4f}, {o[1]:.4f}, {o[2]:.4f}) m "
            f"in {d['root_link']}"
        )
    out = [
        f"from URDF {d['path']} (robot {d['robot']}), tool link {d['tool_link']}, sidecar {d['sidecar'] or 'none'}",
        f"frame shift: {shift}",
    ]
    for j in d["joints"]:
        out.append(
            f"  {j['name']:<14} = {j['zero_deg']:8.3f} {'+' if j['sign'] > 0 else '-'} URDF {j['urdf_joint']} deg"
            f"   speed from the {j['speed_from']}"
        )
    if d["held_joints_deg"]:
        out.append(
            "held (no joint of the model): " + ", ".join(f"{k} at {v:g} deg" for k, v in d["held_joints_deg"].items())
        )
    if arm.roll is not None:
        out.append(roll_line(arm.roll))
    if d["gripper_joint"]:
        out.append(f"gripper: URDF joint {d['gripper_joint']}")
    said = f"{Path(str(arm.urdf.path)).absolute()}:"  # the notes loading printed on stderr are not said twice
    out.extend(f"note: {n}" for n in d["notes"] if said + n not in _printed)
    return out
