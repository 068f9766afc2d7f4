"""The bodies of an arm from a URDF (``armctl.model.statics.Body``): each link's ``<inertial>`` mass, centre of
mass and rotational inertia, placed at the URDF's zero pose in armctl's frame and put on the segment of the arm
that carries it (the last joint of the model on the way from the root to the link: the base, a pitch joint, the
wrist roll). Joints that are no joint of the model (the gripper's, fixed ones) carry their links as they stand at
the zero pose; held joints at their sidecar angle. Links before the base's joint move with nothing (no torque) and
are left out.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET

import numpy as np

from armctl.errors import ConfigError
from armctl.model.statics import HAND, Body
from armctl.model.urdf.chain import Axes, Tree, zero_frame
from armctl.model.urdf.parse import axis_rot, parse_inertials

MAX_LINK_KG = 1000.0  # a link heavier than this is a typo (an industrial arm's heaviest link is a few hundred kg)
_INERTIA_KEYS = ("ixx", "ixy", "ixz", "iyy", "iyz", "izz")


def _inertia(e, path) -> np.ndarray | None:
    """A link element's ``<inertia>`` (kg m^2) about its centre of mass in the link's frame (the inertial origin's
    ``rpy`` applied); None without one. ConfigError (one line) for a value that is not a number or a negative
    moment."""
    i = e.find("inertial")
    t = None if i is None else i.find("inertia")
    if t is None:
        return None
    o = i.find("origin")
    try:
        v = {k: float(t.get(k, "0")) for k in _INERTIA_KEYS}
        rpy = [float(x) for x in (o.get("rpy") or "0 0 0").split()] if o is not None else [0.0, 0.0, 0.0]
    except ValueError:
        raise ConfigError(f"link {e.get('name')!r}: an <inertia> or its rpy is not a number", path=path) from None
    if len(rpy) != 3:
        raise ConfigError(f"link {e.get('name')!r}: <inertial> origin rpy needs 3 numbers", path=path)
    if not all(np.isfinite(list(v.values()))) or min(v["ixx"], v["iyy"], v["izz"]) < 0.0:
        raise ConfigError(f"link {e.get('name')!r}: <inertia> needs finite values, moments >= 0 (kg m^2)", path=path)
    inertia = np.array(
        [[v["ixx"], v["ixy"], v["ixz"]], [v["ixy"], v["iyy"], v["iyz"]], [v["ixz"], v["iyz"], v["izz"]]], dtype=float
    )
    R = axis_rot((0, 0, 1), rpy[2]) @ axis_rot((0, 1, 0), rpy[1]) @ axis_rot((1, 0, 0), rpy[0])
    return R @ inertia @ R.T


def urdf_bodies(text: str, tree: Tree, axes: Axes, held_deg: dict, origin, urdf_map) -> tuple | None:
    """(bodies, the armctl pose they are given at) of a serial arm on a base, or None (another arm, no masses)."""
    if axes.base is None or any(p[0].mimic is not None for p in axes.pitch):
        return None
    inertials = parse_inertials(text, tree.path)
    tensors = {e.get("name"): _inertia(e, tree.path) for e in ET.fromstring(text).findall("link")}
    if not any(m > 0 for m, _ in inertials.values()):
        return None
    segment = {axes.base[0].name: 0}
    segment.update({p[0].name: k + 1 for k, p in enumerate(axes.actuated)})
    if axes.roll is not None:
        segment[axes.roll[0].name] = HAND
    bodies = []
    for link, (mass, com) in inertials.items():
        seg = None
        for j in tree.ancestors(link):
            seg = segment.get(j.name, seg)
        if seg is None or mass <= 0.0:
            continue
        if mass > MAX_LINK_KG:
            raise ConfigError(
                f"link {link!r}: mass {mass:g} kg is not an arm's link (at most {MAX_LINK_KG:g} kg)", path=tree.path
            )
        T = zero_frame(tree, link, held_deg)
        p = T[:3, :3] @ np.asarray(com) + T[:3, 3] - np.asarray(origin)
        inertia = tensors.get(link)
        if inertia is not None:  # in the root frame; armctl's frame is a translation of it
            inertia = tuple(tuple(float(v) for v in row) for row in T[:3, :3] @ inertia @ T[:3, :3].T)
        bodies.append(Body(link, seg, tuple(float(v) for v in p), float(mass), inertia))
    q_ref = np.array([float(off) for _, off, _ in urdf_map])
    return tuple(bodies), q_ref
