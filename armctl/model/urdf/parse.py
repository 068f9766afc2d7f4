"""Reading a URDF (the joints of its chain, with ``xml.etree``, no meshes) and its armctl sidecar
(``<stem>.armctl.yaml``); ``armctl.model.urdf.derive`` derives the arm from them."""

from __future__ import annotations

import dataclasses
import math
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from armctl.core.config import Section
from armctl.errors import ConfigError
from armctl.model.servos import Drive, parse_drive, parse_grip, parse_servo

SIDECAR_SUFFIX = ".armctl.yaml"


MOVING = ("revolute", "continuous")


@dataclass(frozen=True)
class UrdfJoint:
    """One ``<joint>``: origin (m, rad), unit axis, limits (rad, rad/s; None when absent), mimic."""

    name: str
    type: str
    parent: str
    child: str
    xyz: tuple
    rpy: tuple
    axis: tuple
    lower: float | None = None
    upper: float | None = None
    velocity: float | None = None
    mimic: tuple | None = None  # (joint, multiplier, offset)


# --- reading ------------------------------------------------------------------------------------------------


def _floats(text, n, what, default):
    if text is None:
        return default
    parts = text.split()
    try:
        vals = tuple(float(v) for v in parts)
    except ValueError:
        vals = ()
    if len(vals) != n or not all(math.isfinite(v) for v in vals):
        raise ValueError(f"{what}={text!r}: expected {n} numbers")
    return vals


def parse_inertials(text: str, path) -> dict[str, tuple[float, tuple]]:
    """{link: (mass kg, centre of mass (x, y, z) m in the link's frame)} of the links with an ``<inertial>`` holding a
    ``<mass>`` (the statics' figures); ConfigError (one line) for a negative or unreadable mass."""
    out = {}
    for e in ET.fromstring(text).findall("link"):
        i = e.find("inertial")
        m = None if i is None else i.find("mass")
        if m is None:
            continue
        try:
            mass = _floats(m.get("value"), 1, "mass value", (None,))[0]
            o = i.find("origin")
            xyz = _floats(None if o is None else o.get("xyz"), 3, "inertial origin xyz", (0.0, 0.0, 0.0))
        except ValueError as exc:
            raise ConfigError(f"link {e.get('name')!r}: {exc}", path=path) from None
        if mass is None or not mass >= 0.0:
            raise ConfigError(f"link {e.get('name')!r}: mass {m.get('value')!r} must be a number >= 0 (kg)", path=path)
        out[e.get("name")] = (float(mass), tuple(float(v) for v in xyz))
    return out


def parse_urdf(text: str, path) -> tuple[str, list[str], dict[str, UrdfJoint]]:
    """(robot name, link names, joints by name) of a URDF document; ConfigError (one line) otherwise."""
    try:
        root = ET.fromstring(text)
    except ET.ParseError as exc:
        raise ConfigError(f"not a valid URDF (XML): {exc}", path=path) from None
    if root.tag != "robot":
        raise ConfigError(f"not a URDF: the top element is <{root.tag}>, not <robot>", path=path)
    links = [e.get("name") for e in root.findall("link")]
    if any(not n for n in links):
        raise ConfigError("a <link> without a name", path=path)
    joints: dict[str, UrdfJoint] = {}
    for e in root.findall("joint"):
        name = e.get("name")
        if not name:
            raise ConfigError("a <joint> without a name", path=path)
        try:
            jtype = e.get("type") or ""
            parent = e.find("parent")
            child = e.find("child")
            if parent is None or child is None or not parent.get("link") or not child.get("link"):
                raise ValueError("needs <parent link=...> and <child link=...>")
            o = e.find("origin")
            xyz = _floats(None if o is None else o.get("xyz"), 3, "origin xyz", (0.0, 0.0, 0.0))
            rpy = _floats(None if o is None else o.get("rpy"), 3, "origin rpy", (0.0, 0.0, 0.0))
            a = e.find("axis")
            axis = _floats(None if a is None else a.get("xyz"), 3, "axis xyz", (1.0, 0.0, 0.0))
            lower = upper = velocity = None
            lim = e.find("limit")
            if lim is not None:
                lower = _floats(lim.get("lower"), 1, "limit lower", (None,))[0]
                upper = _floats(lim.get("upper"), 1, "limit upper", (None,))[0]
                velocity = _floats(lim.get("velocity"), 1, "limit velocity", (None,))[0]
            mimic = None
            m = e.find("mimic")
            if m is not None:
                if not m.get("joint"):
                    raise ValueError("<mimic> needs joint=")
                mult = _floats(m.get("multiplier"), 1, "mimic multiplier", (1.0,))[0]
                off = _floats(m.get("offset"), 1, "mimic offset", (0.0,))[0]
                mimic = (m.get("joint"), mult, off)
        except ValueError as exc:
            raise ConfigError(f"joint {name!r}: {exc}", path=path) from None
        if name in joints:
            raise ConfigError(f"two joints named {name!r}", path=path)
        norm = math.sqrt(sum(v * v for v in axis))
        if jtype in MOVING and norm == 0:
            raise ConfigError(f"joint {name!r}: axis xyz='0 0 0'", path=path)
        if norm:
            axis = tuple(v / norm for v in axis)
        joints[name] = UrdfJoint(name, jtype, parent.get("link"), child.get("link"), xyz, rpy, axis, lower, upper,
                                 velocity, mimic)  # fmt: skip
    return root.get("name") or Path(str(path)).stem, links, joints


def _rot(rpy) -> np.ndarray:
    r, p, y = rpy
    cr, sr, cp, sp, cy, sy = math.cos(r), math.sin(r), math.cos(p), math.sin(p), math.cos(y), math.sin(y)
    return np.array(
        [
            [cy * cp, cy * sp * sr - sy * cr, cy * sp * cr + sy * sr],
            [sy * cp, sy * sp * sr + cy * cr, sy * sp * cr - cy * sr],
            [-sp, cp * sr, cp * cr],
        ]
    )


def axis_rot(axis, angle) -> np.ndarray:
    """The rotation matrix of ``angle`` (rad) about the unit ``axis`` (Rodrigues)."""
    k = np.asarray(axis, dtype=float)
    K = np.array([[0, -k[2], k[1]], [k[2], 0, -k[0]], [-k[1], k[0], 0]])
    return np.eye(3) + math.sin(angle) * K + (1 - math.cos(angle)) * (K @ K)


def joint_origin(j: UrdfJoint) -> np.ndarray:
    """The 4x4 transform of a joint's ``<origin>`` (parent link frame -> joint frame at angle 0)."""
    T = np.eye(4)
    T[:3, :3] = _rot(j.rpy)
    T[:3, 3] = j.xyz
    return T


# --- the sidecar --------------------------------------------------------------------------------------------


def sidecar_path(urdf_path) -> Path:
    """Where the sidecar of ``urdf_path`` is: ``<stem>.armctl.yaml`` beside it."""
    p = Path(urdf_path)
    return p.with_name(p.stem + SIDECAR_SUFFIX)


@dataclass
class Sidecar:
    name: str | None = None
    tool_link: str | None = None
    floor_z_m: float = 0.0
    default_speed_deg_s: float | None = None
    max_speed_deg_s: dict = field(default_factory=dict)
    home_deg: list | None = None
    held_deg: dict = field(default_factory=dict)
    gripper: dict | None = None
    steps_follow_urdf: bool = False
    servos: dict = field(default_factory=dict)  # URDF joint name (or "*": every joint) -> armctl.model.servos.Servo
    drive: object | None = None  # armctl.model.servos.Drive: the arm-wide keys (torque_use, payload_g, ...)
    path: str | None = None
    lines: dict = field(default_factory=dict)


def read_sidecar(data, path) -> Sidecar:
    """Validate a parsed sidecar document (see the module docstring)."""
    if data is None:
        return Sidecar(path=str(path))
    top = Section(data, path=path)
    sc = Sidecar(path=str(path))
    sc.name = top.string("name", None)
    sc.tool_link = top.string("tool_link", None)
    sc.floor_z_m = top.number("floor_z_m", 0.0, lo=-10, hi=10)
    sc.default_speed_deg_s = top.number("default_speed_deg_s", None, lo=0, lo_open=True, hi=3600)
    for key in ("max_speed_deg_s", "held_joints"):
        sec = top.section(key, required=False)
        out = sc.max_speed_deg_s if key == "max_speed_deg_s" else sc.held_deg
        if sec is not None:
            for jn in list(sec.data):
                if key == "max_speed_deg_s":
                    out[jn] = sec.number(jn, lo=0, lo_open=True, hi=3600)
                else:
                    out[jn] = sec.number(jn, lo=-360, hi=360)
            sc.lines[key] = sec
            sec.done()
    _read_servos(top, sc)
    follow = top.raw("steps_follow_urdf", False)
    if not isinstance(follow, bool):
        raise top.error("steps_follow_urdf", f"expected true or false, found {follow!r}")
    sc.steps_follow_urdf = follow
    sc.home_deg = top.numbers("home_deg", None)
    if top.has("home_deg"):
        sc.lines["home_deg"] = top
    g = top.section("gripper", required=False)
    if g is not None:
        sc.gripper = {
            "joint": g.string("joint", None),
            "open_deg": g.number("open_deg", lo=-360, hi=360),
            "closed_deg": g.number("closed_deg", lo=-360, hi=360),
            "max_speed_deg_s": g.number("max_speed_deg_s", None, lo=0, lo_open=True, hi=3600),
            "servo": parse_servo(g, supply_volts=sc.drive.volts),
        }
        sc.gripper["drive"] = (sc.gripper["servo"], *parse_grip(g, sc.gripper["servo"]))  # servo, close, max_load_pct
        sc.lines["gripper"] = g
        g.done()
    sc.drive = parse_drive(top, [], [], sc.gripper["servo"] if sc.gripper else None, sc.drive.volts)
    top.done()
    return sc


def _read_servos(top: Section, sc: Sidecar) -> None:
    """``supply_volts`` and ``servo``: one model for every joint (``servo: sts3215``), or {URDF joint: model}."""
    volts = top.number("supply_volts", None, lo=0.5, hi=48.0)
    sc.drive = Drive(volts=volts)
    if not top.has("servo"):
        return
    if not isinstance(top.raw("servo"), dict):
        sc.servos["*"] = parse_servo(top, supply_volts=volts)
        return
    sec = top.section("servo")
    for jn in list(sec.data):
        sc.servos[jn] = parse_servo(sec, jn, supply_volts=volts)
    sc.lines["servo"] = sec
    sec.done()


def sidecar_drive(sc: Sidecar, urdf_joints: list) -> Drive:
    """The arm's ``Drive`` from a sidecar, its servos in the order of ``urdf_joints`` (armctl's, base first)."""
    drive = sc.drive or Drive()
    servos = tuple(sc.servos.get(j, sc.servos.get("*")) for j in urdf_joints)
    return dataclasses.replace(drive, servos=servos, link_mass_kg=(None,) * len(urdf_joints))
