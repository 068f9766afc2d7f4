"""The bodies of an arm from a URDF (``armctl.model.statics.Body``): each link's ``<inertial>`` mass and centre of
mass, placed at the URDF's zero pose in armctl's frame and put on the segment of the arm that carries it (the last
joint of the model on the way from the root to the link: the base, a pitch joint, the wrist roll). Joints that are
no joint of the model (the gripper's, fixed ones) carry their links as they stand at the zero pose; held joints at
their sidecar angle. Links before the base's joint move with nothing (no torque) and are left out.
"""

from __future__ import annotations

import numpy as np

from armctl.model.statics import HAND, Body
from armctl.model.urdf.chain import Axes, Tree, zero_frame
from armctl.model.urdf.parse import parse_inertials


def urdf_bodies(text: str, tree: Tree, axes: Axes, held_deg: dict, origin, urdf_map) -> tuple | None:
    """(bodies, the armctl pose they are given at) of a serial arm on a base, or None (another arm, no masses)."""
    if axes.base is None or any(p[0].mimic is not None for p in axes.pitch):
        return None
    inertials = parse_inertials(text, tree.path)
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
        T = zero_frame(tree, link, held_deg)
        p = T[:3, :3] @ np.asarray(com) + T[:3, 3] - np.asarray(origin)
        bodies.append(Body(link, seg, tuple(float(v) for v in p), float(mass)))
    q_ref = np.array([float(off) for _, off, _ in urdf_map])
    return tuple(bodies), q_ref
