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
joint alone. A joint that is no part of the model (a wrist roll) is held at a fixed angle by naming it
under ``held_joints`` in the sidecar. Anything else is refused with one line naming the joint and why
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

import math
import sys
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from armctl.core import limits
from armctl.core.config import load_yaml_file
from armctl.errors import ConfigError
from armctl.model.urdf.parse import (
    MOVING,
    Sidecar,
    UrdfJoint,
    _axis_rot,
    _origin,
    parse_urdf,
    read_sidecar,
    sidecar_path,
)

DEFAULT_SPEED_DEG_S = 60.0  # where neither the URDF (velocity 0 or none) nor the sidecar gives a speed
AXIS_TOL_RAD = 1e-3  # axes within this of vertical/horizontal/parallel count as such (published URDFs round pi/2)
TOOL_PLANE_TOL_M = 1e-3  # the tool may sit this far beside the plane through the base axis
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


def load_urdf_spec(path, *, tool_link: str | None = None, sidecar: str | Path | None = None) -> dict:
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


def urdf_spec(text: str, path, *, tool_link: str | None = None, sidecar: Sidecar | None = None) -> dict:
    """``load_urdf_spec`` of a URDF document; ``sidecar`` as ``read_sidecar`` gives it (None: no sidecar)."""
    sc = sidecar or Sidecar()
    robot, links, joints = parse_urdf(text, path)

    def refuse(message: str) -> ConfigError:
        return ConfigError(message, path=path)

    by_child: dict[str, UrdfJoint] = {}
    children: dict[str, list[UrdfJoint]] = {}
    link_set = set(links)
    for j in joints.values():
        for end in (j.parent, j.child):
            if end not in link_set:
                raise refuse(f"joint {j.name!r} names link {end!r}, which the URDF does not define")
        if j.child in by_child:
            raise refuse(f"link {j.child!r} has two parent joints ({by_child[j.child].name!r}, {j.name!r})")
        by_child[j.child] = j
        children.setdefault(j.parent, []).append(j)
    roots = [n for n in links if n not in by_child]
    if len(roots) != 1:
        raise refuse(f"expected one root link, found {len(roots)}: {', '.join(roots) or 'a loop'}")
    root = roots[0]

    def ancestors(link: str) -> list[UrdfJoint]:
        chain = []
        seen = set()
        while link in by_child:
            j = by_child[link]
            if j.name in seen:
                raise refuse(f"the joints form a loop at joint {j.name!r}")
            seen.add(j.name)
            chain.append(j)
            link = j.parent
        return chain[::-1]

    for n in links:
        ancestors(n)  # loops

    grip = sc.gripper or {}
    grip_joint = grip.get("joint")
    if grip_joint is not None:
        if grip_joint not in joints:
            raise refuse(f"the sidecar's gripper joint {grip_joint!r} is no joint of the URDF")
        if joints[grip_joint].type not in MOVING:
            raise refuse(
                f"gripper joint {grip_joint!r} is {joints[grip_joint].type}: armctl's gripper is a turning servo"
            )

    def under_gripper(link: str) -> bool:
        return grip_joint is not None and any(j.name == grip_joint for j in ancestors(link))

    given = tool_link is not None or sc.tool_link is not None
    tool = tool_link if tool_link is not None else sc.tool_link
    if tool is None:
        leaves = [n for n in links if n not in children and not under_gripper(n)]
        depth = {n: len(ancestors(n)) for n in leaves}
        best = max(depth.values(), default=0)
        longest = [n for n in leaves if depth[n] == best]
        if len(longest) != 1:
            raise refuse(
                f"{len(longest)} chains are longest ({', '.join(longest)}): name the tool link with --tool-link "
                f"(or tool_link: in {sidecar_path(path).name})"
            )
        tool = longest[0]
    elif tool not in link_set:
        raise refuse(f"tool link {tool!r} is no link of the URDF (links: {', '.join(links)})")
    chain = ancestors(tool)
    chain_names = {j.name for j in chain}

    for jn in list(sc.held_deg) + list(sc.max_speed_deg_s):
        if jn not in joints:
            raise ConfigError(f"{jn!r} is no joint of {Path(str(path)).name}", path=sc.path)

    # every moving joint off the chain must be the gripper, under it, or a mimic (a passive link that the chain's
    # joints drive: it moves nothing of the chain)
    for j in joints.values():
        if j.name in chain_names or j.type == "fixed" or j.name == grip_joint or under_gripper(j.child):
            continue
        if j.mimic is not None:
            continue
        if any(a.parent == tool for a in ancestors(j.child)):
            raise refuse(
                f"joint {j.name!r} ({j.type}) moves links beyond the tool link {tool!r}: armctl's chain ends at the "
                "tool (choose the last link with --tool-link, or name the gripper joint in "
                f"{sidecar_path(path).name})"
            )
        raise refuse(
            f"joint {j.name!r} ({j.type}, from link {j.parent!r}) is a second branch: armctl drives one chain from "
            f"{root!r} to the tool link {tool!r} (choose another with --tool-link, or name the gripper joint in "
            f"{sidecar_path(path).name})"
        )
    if grip_joint in chain_names:
        raise refuse(f"gripper joint {grip_joint!r} lies between {root!r} and the tool link {tool!r}: give --tool-link")

    # walk the chain at the zero pose: each moving joint's axis and point in the root frame
    T = np.eye(4)
    moving = []  # (joint, axis, point)
    held_used = set()
    for j in chain:
        T = T @ _origin(j)
        if j.type == "fixed":
            continue
        if j.type not in MOVING:
            kind = "a prismatic joint (it slides)" if j.type == "prismatic" else f"a {j.type or 'typeless'} joint"
            raise refuse(f"joint {j.name!r} is {kind}: armctl's arms have turning joints only")
        axis = T[:3, :3] @ np.asarray(j.axis)
        if j.name in sc.held_deg:
            held_used.add(j.name)
            R = np.eye(4)
            R[:3, :3] = _axis_rot(j.axis, math.radians(sc.held_deg[j.name]))
            T = T @ R
            continue
        if j.mimic is not None and j.mimic[2]:
            R = np.eye(4)
            R[:3, :3] = _axis_rot(j.axis, j.mimic[2])
            T = T @ R
        moving.append((j, axis, T[:3, 3].copy()))
    for jn in sc.held_deg:
        if jn not in held_used:
            raise ConfigError(f"held joint {jn!r} is not on the chain to the tool link {tool!r}", path=sc.path)
    tool_p = T[:3, 3].copy()

    z = np.array([0.0, 0.0, 1.0])
    tol = math.sin(AXIS_TOL_RAD)
    base = None
    pitch = []
    for j, axis, point in moving:
        vertical = np.linalg.norm(np.cross(axis, z)) < tol
        horizontal = abs(axis @ z) < tol
        where = "(" + ", ".join(f"{v:.4g}" for v in axis) + ")"
        if vertical:
            if pitch:
                raise refuse(
                    f"joint {j.name!r}: a vertical axis after pitch joint {pitch[0][0].name!r}: off the arm's plane "
                    "(armctl's yaw joint is the first moving joint)"
                )
            if base is not None:
                raise refuse(f"joint {j.name!r}: a second yaw joint (vertical axis) after {base[0].name!r}")
            if j.mimic is not None:
                raise refuse(f"joint {j.name!r}: the yaw joint cannot mimic another joint")
            base = (j, axis, point)
        elif horizontal:
            if pitch and np.linalg.norm(np.cross(axis, pitch[0][1])) > tol:
                raise refuse(
                    f"joint {j.name!r}: axis {where} is not parallel to joint {pitch[0][0].name!r}'s: off the arm's "
                    "plane (armctl's pitch joints turn in one vertical plane; hold it with held_joints in the sidecar "
                    "if it is no joint of the model)"
                )
            pitch.append((j, axis, point))
        else:
            tilt = math.degrees(math.asin(min(1.0, abs(axis @ z))))
            raise refuse(
                f"joint {j.name!r}: axis {where} in {root!r} at the zero pose is neither vertical nor horizontal "
                f"({tilt:.1f} deg from the horizontal): off the arm's plane"
                + (" (hold it with held_joints in the sidecar if it is no joint of the model)" if pitch else "")
            )
    actuated = [p for p in pitch if p[0].mimic is None]
    if len(actuated) not in (2, 3):
        raise refuse(
            f"armctl's arms have 2 or 3 pitch joints (horizontal, parallel axes) on the chain to {tool!r}; found "
            f"{len(actuated)}" + (f" ({', '.join(p[0].name for p in actuated)})" if actuated else "")
        )
    act_index = {p[0].name: i for i, p in enumerate(actuated)}
    for j, _, _ in pitch:
        if j.mimic is not None and j.mimic[0] not in act_index:
            raise refuse(
                f"joint {j.name!r} mimics {j.mimic[0]!r}, which is no pitch joint of the chain to {tool!r}"
                if j.mimic[0] not in joints or j.mimic[0] not in chain_names
                else f"joint {j.name!r} mimics {j.mimic[0]!r}, itself a mimic or no pitch joint"
            )

    # the plane: u horizontal, perpendicular to the pitch axes, nearest the root's +x; v = +z; w = u x v
    w0 = pitch[0][1]
    cands = [np.cross(z, w0), np.cross(w0, z)]
    cands = [c / np.linalg.norm(c) for c in cands]
    u = max(cands, key=lambda c: (round(float(c[0]), 9), round(float(c[1]), 9)))
    w = np.cross(u, z)
    if base is not None:
        origin = np.array([base[2][0], base[2][1], sc.floor_z_m])
    else:
        p1 = pitch[0][2]
        origin = np.array([p1[0], p1[1], p1[2]])

    def plane(p):
        d = p - origin
        return np.array([d @ u, d @ z])

    lateral = {j.name: float((p - origin) @ w) for j, _, p in pitch}
    tool_lateral = float((tool_p - origin) @ w)
    if base is not None and abs(tool_lateral) > TOOL_PLANE_TOL_M:
        raise refuse(
            f"the tool link {tool!r} lies {abs(tool_lateral) * 1000:.1f} mm beside the plane through the yaw axis of "
            f"{base[0].name!r}: armctl's model needs the tool in that plane"
        )

    # segments between pitch axes: each turns by a row of coefficients of the actuated joints
    A = len(actuated)
    row = np.zeros(A)
    segs = []  # (row, vector in the plane, first joint of the segment)
    pts = [(j, plane(p)) for j, _, p in pitch] + [(None, plane(tool_p))]
    for i, (j, here) in enumerate(pts[:-1]):
        axis_dir = pitch[i][1] @ w
        sign = 1.0 if axis_dir > 0 else -1.0
        if j.mimic is None:
            row = row + sign * np.eye(A)[act_index[j.name]]
        else:
            row = row + sign * j.mimic[1] * np.eye(A)[act_index[j.mimic[0]]]
        nxt = pts[i + 1][1]
        segs.append((row.copy(), nxt - here, j))
    first = plane(pitch[0][2])
    groups: list[list] = []  # [row, vector, joint]
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
        raise refuse(
            f"the pitch joints ({', '.join(p[0].name for p in pitch)}) make {len(groups)} independently turning "
            "links: armctl's arms have 2 or 3"
        )
    for _, vec, j in groups:
        if np.hypot(*vec) < SAME_POINT_M:
            raise refuse(f"joint {j.name!r} turns a link of zero length (the tool lies on its axis): hold it instead")
    rows = [g[0] for g in groups]
    beta = [math.atan2(g[1][1], g[1][0]) for g in groups]

    def unit(r):  # (index, sign) when r is +-1 on one joint, else None
        nz = np.flatnonzero(np.abs(r) > 1e-9)
        if len(nz) == 1 and abs(abs(r[nz[0]]) - 1.0) < 1e-9:
            return int(nz[0]), int(np.sign(r[nz[0]]))
        return None

    deltas = [rows[0]] + [rows[i] - rows[i - 1] for i in range(1, len(rows))]
    serial = [unit(d) for d in deltas]
    linkage = "serial"
    mapping = []  # per chain joint: (actuated index, offset rad, sign)
    if len(rows) == A and all(s is not None and s[0] == i for i, s in enumerate(serial)):
        for i, (idx, sign) in enumerate(serial):
            off = beta[i] - (beta[i - 1] if i else 0.0)
            mapping.append((idx, off, sign))
    elif len(rows) == 2 == A and unit(rows[0]) is not None and unit(rows[0])[0] == 0 and unit(rows[1]) is not None:
        s1, s2 = unit(rows[0]), unit(rows[1])  # forearm from the horizontal, by the elbow joint alone
        linkage = "parallelogram"
        mapping = [(0, beta[0], s1[1]), (1, beta[1], s2[1])]
    else:
        culprit = next((p[0] for p in pitch if p[0].mimic is not None), pitch[-1][0])
        what = (
            f"joint {culprit.name!r} (mimic of {culprit.mimic[0]!r}, multiplier {culprit.mimic[1]:g})"
            if culprit.mimic
            else f"joint {culprit.name!r}"
        )
        raise refuse(
            f"{what}: the links turn by a mix of joints that armctl's model (serial, or a parallelogram) has no "
            "place for"
        )

    links_m = np.array([float(np.hypot(*g[1])) for g in groups])
    offset_uv = first + const

    # per armctl joint: URDF name, offset, sign; ranges, speeds
    names, q_min, q_max, speeds, urdf_map = [], [], [], [], []
    speed_from, slow = {}, []

    def speed_of(j: UrdfJoint) -> float:
        if j.name in sc.max_speed_deg_s:
            speed_from[j.name] = "sidecar"
            return math.radians(sc.max_speed_deg_s[j.name])
        if j.velocity is not None and j.velocity > 0:
            speed_from[j.name] = "urdf"
            return j.velocity
        speed_from[j.name] = "default"
        slow.append(j.name)
        return math.radians(sc.default_speed_deg_s or DEFAULT_SPEED_DEG_S)

    def add(j: UrdfJoint, off: float, sign: int) -> None:
        off = math.remainder(off, 2 * math.pi)
        if j.type == "continuous":
            lo, hi = off - math.pi, off + math.pi
        else:
            if j.lower is None or j.upper is None:
                raise refuse(f"joint {j.name!r}: a revolute joint needs <limit lower=... upper=...>")
            if j.upper <= j.lower:
                raise refuse(f"joint {j.name!r}: limit upper ({j.upper:g}) must be greater than lower ({j.lower:g})")
            a, b = off + sign * j.lower, off + sign * j.upper
            lo, hi = min(a, b), max(a, b)
        names.append(j.name)
        q_min.append(lo)
        q_max.append(hi)
        speeds.append(speed_of(j))
        urdf_map.append((j.name, float(off), int(sign)))

    if base is not None:
        bj, baxis, _ = base
        add(bj, math.atan2(u[1], u[0]), 1 if baxis @ z > 0 else -1)
    for idx, off, sign in mapping:
        add(actuated[idx][0], off, sign)
    q_min, q_max = np.array(q_min), np.array(q_max)

    notes = []
    if slow:
        speed = sc.default_speed_deg_s or DEFAULT_SPEED_DEG_S
        where = sc.path or sidecar_path(path)
        notes.append(
            f"{Path(str(path)).name}: no velocity limit (0 or none) for {', '.join(slow)}: {speed:g} deg/s "
            f"{'each ' if len(slow) > 1 else ''}(set default_speed_deg_s or max_speed_deg_s in {Path(where).name})"
        )
    gripper = None
    if sc.gripper is not None:
        gspeed = sc.gripper["max_speed_deg_s"]
        if gspeed is not None:
            gs = math.radians(gspeed)
        elif grip_joint is not None and (joints[grip_joint].velocity or 0) > 0:
            gs = joints[grip_joint].velocity
        else:
            gs = math.radians(sc.default_speed_deg_s or DEFAULT_SPEED_DEG_S)
        gripper = (math.radians(sc.gripper["open_deg"]), math.radians(sc.gripper["closed_deg"]), gs)

    spec = dict(
        name=sc.name or robot,
        links_m=links_m,
        q_min=q_min,
        q_max=q_max,
        max_speed_rad_s=np.array(speeds),
        home_rad=np.zeros(len(names)),
        joint_names=tuple(names),
        gripper=gripper,
        source=str(path),
        has_base=base is not None,
        linkage=linkage,
        link_angle_rad=(0.0, math.pi) if linkage == "parallelogram" else None,
        base_offset_m=float(offset_uv[0]) if base is not None else 0.0,
        shoulder_height_m=float(offset_uv[1]) if base is not None else 0.0,
        urdf_map=tuple(urdf_map),
        gripper_urdf_joint=grip_joint,
    )
    n = len(names)
    if linkage == "parallelogram":
        c = 1 if base is not None else 0
        if min(q_max[c + 1] - q_min[c], 0.0) < max(q_min[c + 1] - q_max[c], -math.pi):
            raise refuse(
                f"joints {names[c]!r} and {names[c + 1]!r} (a parallelogram): no angles inside the URDF's limits keep "
                "upper arm and forearm 0..180 deg apart"
            )
    if base is None and np.hypot(*offset_uv) > SAME_POINT_M:
        # a planar arm has no offsets: its origin is the shoulder, moved by a segment that never turns
        origin = origin + offset_uv[0] * u + offset_uv[1] * z
    zero = np.array([m[1] for m in urdf_map])
    if sc.home_deg is not None:
        home = np.radians(sc.home_deg)
        if home.shape != (n,):
            raise sc.lines["home_deg"].error("home_deg", f"expected {n} angles (base first), found {len(home)}")
        c = 1 if base is not None else 0
        folded = linkage == "parallelogram" and not 0.0 <= math.pi + home[c + 1] - home[c] <= math.pi
        if folded or np.any(home < q_min - 1e-9) or np.any(home > q_max + 1e-9):
            raise sc.lines["home_deg"].error(
                "home_deg",
                f"home pose {sc.home_deg} deg is outside the joint limits the URDF gives "
                f"({', '.join(f'{math.degrees(a):.1f}..{math.degrees(b):.1f}' for a, b in zip(q_min, q_max))})",
            )
    else:
        home = np.clip(zero, q_min, q_max)
        if linkage == "parallelogram":  # the forearm moved until upper arm and forearm are 0..180 deg apart
            c = 1 if base is not None else 0
            rel = min(max(home[c + 1] - home[c], -math.pi), 0.0)
            home[c + 1] = min(max(home[c] + rel, q_min[c + 1]), q_max[c + 1])
    spec["home_rad"] = home
    spec["urdf"] = UrdfDerivation(
        path=str(path),
        robot=robot,
        root_link=root,
        tool_link=tool,
        tool_link_given=given and tool_link is not None,
        sidecar=sc.path,
        origin_m=tuple(float(v) for v in origin),
        plane_u=tuple(float(v) for v in u),
        floor_z_m=sc.floor_z_m,
        tool_lateral_m=tool_lateral,
        steps_follow_urdf=sc.steps_follow_urdf,
        lateral_m=lateral,
        held_deg=dict(sc.held_deg),
        notes=tuple(notes),
        speed_from=speed_from,
    )
    for line in notes:  # keyed by the absolute path: the CLI loads 'arm.urdf', the simulator its absolute path
        _note(f"{Path(str(path)).absolute()}:{line}", line)
    return spec


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
    if d["gripper_joint"]:
        out.append(f"gripper: URDF joint {d['gripper_joint']}")
    out.extend(f"note: {n}" for n in d["notes"])
    return out
