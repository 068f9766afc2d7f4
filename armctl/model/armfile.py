"""Reading an arm file's joints and chain (``armctl.model.arm.parse_arm`` builds the ``Arm`` from them): each joint
mapping's columns, the links and linkage, the base's offsets, the wrist roll's section, the link angle's check."""

from __future__ import annotations

import math

from armctl.core.config import Section
from armctl.model.hand import Roll
from armctl.model.servos import joint_drive

LINKAGES = ("serial", "parallelogram")
#: what ``joint_columns`` gives for each joint, in order
COLUMNS = ("name", "min_deg", "max_deg", "max_speed_deg_s", "max_accel_deg_s2", "servo", "mass_kg")


def joint_columns(j: Section, default_name: str, supply_volts: float | None = None) -> tuple:
    """(name, min_deg, max_deg, max_speed_deg_s, max_accel_deg_s2 or NaN, servo or None, mass kg or None) of one
    joint mapping (``COLUMNS``)."""
    name = j.string("name", default_name)
    lo = j.number("min_deg", lo=-360, hi=360)
    hi = j.number("max_deg", lo=-360, hi=360)
    if hi <= lo:
        raise j.error("max_deg", f"max_deg ({hi:g}) must be greater than min_deg ({lo:g})")
    speed = j.number("max_speed_deg_s", lo=0, lo_open=True, hi=3600)
    accel = j.number("max_accel_deg_s2", None, lo=0, lo_open=True, hi=1e6)
    servo, mass = joint_drive(j, supply_volts)
    j.done()
    return name, lo, hi, speed, math.nan if accel is None else accel, servo, mass


def arm_roll(top: Section, path, cols: tuple, has_base: bool, k: int, linkage: str, volts=None) -> Roll | None:
    """The ``roll:`` section (a wrist roll after the chain: a joint's keys, plus its geometry ``axis_deg``,
    ``tool_offset_m`` [up, right] and ``jaw_deg``); its joint columns appended to ``cols``. None without one."""
    r = top.section("roll", required=False)
    if r is None:
        return None
    if not has_base or k != 3 or linkage != "serial":
        raise top.error("roll", "a wrist roll needs a base and a 3-link serial chain (base, shoulder, elbow, wrist)")
    axis = r.number("axis_deg", 0.0, lo=-45, hi=45)
    offset = r.numbers("tool_offset_m", count=2) if r.has("tool_offset_m") else [0.0, 0.0]
    if not all(abs(v) <= 0.2 for v in offset):
        raise r.error("tool_offset_m", f"the tool point lies within 0.2 m of the roll axis; found {offset!r}")
    jaw = r.number("jaw_deg", 0.0, lo=-180, hi=180)
    vals = joint_columns(r, "wrist_roll", volts)
    for out, v in zip(cols, vals, strict=True):
        out.append(v)
    return Roll(
        name=vals[0],
        axis_rad=math.radians(axis),
        offset_up_m=float(offset[0]),
        offset_right_m=float(offset[1]),
        jaw_rad=math.radians(jaw),
    )


def links_and_linkage(top: Section) -> tuple[list, str, tuple | None]:
    """(links_m, linkage, link_angle_rad) of an arm file: 2 or 3 positive lengths; a parallelogram's link angle
    (default 0..180 deg)."""
    links = top.numbers("links_m", count=(2, 3))
    for i, length in enumerate(links):
        if length <= 0:
            raise top.error("links_m", f"link {i + 1} length must be > 0 m, found {length:g}")
    k = len(links)
    linkage = top.string("linkage", "serial", choices=LINKAGES)
    if linkage == "parallelogram" and k != 2:
        raise top.error(
            "linkage",
            f"a parallelogram linkage drives 2 links (upper arm and forearm); links_m has {k}: "
            "use linkage: serial or 2 links",
        )
    if not top.has("link_angle_deg"):
        return links, linkage, (0.0, math.pi) if linkage == "parallelogram" else None
    if linkage != "parallelogram":
        raise top.error("link_angle_deg", "link_angle_deg applies only with 'linkage: parallelogram'")
    la = top.numbers("link_angle_deg", count=2)
    if not (0.0 <= la[0] <= 180.0 and 0.0 <= la[1] <= 180.0):
        raise top.error(
            "link_angle_deg",
            f"angles between upper arm and forearm lie in 0..180 deg, found [{la[0]:g}, {la[1]:g}]",
        )
    if la[1] <= la[0]:
        raise top.error("link_angle_deg", f"[{la[0]:g}, {la[1]:g}]: the first (least) angle must be the smaller")
    return links, linkage, (math.radians(la[0]), math.radians(la[1]))


def arm_joints(top: Section, path, k: int, volts: float | None = None) -> tuple[bool, tuple, dict]:
    """(has a base, the joints' columns (names, min_deg, max_deg, speeds, accels; base first), the shoulder's
    offsets) of an arm file with ``k`` links."""
    cols = tuple([] for _ in COLUMNS)
    b = top.section("base", required=False)
    if b is not None:
        for out, v in zip(cols, joint_columns(b, "base", volts), strict=True):
            out.append(v)
    has_base = b is not None
    offsets = {}
    for key in ("base_offset_m", "shoulder_height_m"):
        if top.has(key):
            if not has_base:
                raise top.error(key, f"{key} places the shoulder relative to a base; this arm has no 'base:'")
            offsets[key] = top.number(key, lo=-10, hi=10)
    joints_raw = top.items("joints")
    if len(joints_raw) != k:
        raise top.error("joints", f"expected {k} joints (one per link), found {len(joints_raw)}")
    for i, raw in enumerate(joints_raw):
        line = joints_raw.item_lines[i] if hasattr(joints_raw, "item_lines") else None
        j = Section(raw, path=path, key=f"joints[{i}]", line=line)
        for out, v in zip(cols, joint_columns(j, f"joint{i + 1}", volts), strict=True):
            out.append(v)
    return has_base, cols, offsets


def check_link_angle(top: Section, q_min: list, q_max: list, link_angle: tuple, c: int) -> None:
    """Some shoulder and forearm angles (deg, the shoulder at ``c``) must keep the link angle."""
    rel_lo = max(q_min[c + 1] - q_max[c], math.degrees(link_angle[0]) - 180.0)
    rel_hi = min(q_max[c + 1] - q_min[c], math.degrees(link_angle[1]) - 180.0)
    if rel_hi < rel_lo:
        raise top.error(
            "link_angle_deg",
            "no shoulder and forearm angles inside the joint limits give an angle between upper arm and "
            "forearm inside link_angle_deg: widen one of them",
        )
