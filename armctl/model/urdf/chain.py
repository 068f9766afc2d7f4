"""The first phases of deriving an arm from a URDF (``armctl.model.urdf.derive.urdf_spec`` calls them in order):
the link tree, the chain armctl drives from the root link to the tool link, its moving joints at the zero pose, and
those joints sorted into the yaw joint and the pitch joints. Each phase refuses with one line naming the joint."""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from armctl.errors import ConfigError
from armctl.model.urdf.parse import MOVING, Sidecar, UrdfJoint, axis_rot, joint_origin, sidecar_path

AXIS_TOL_RAD = 1e-3  # axes within this of vertical/horizontal/parallel count as such (published URDFs round pi/2)
GRIPPER_WORDS = ("gripper", "jaw", "finger")  # a joint (or its link) so named, ending a branch of its own: the gripper
Z = np.array([0.0, 0.0, 1.0])


@dataclass(frozen=True)
class Tree:
    """The URDF's links and joints as a tree: each link's parent joint, each link's child joints, the root."""

    path: object
    links: list
    joints: dict
    by_child: dict
    children: dict
    root: str

    def refuse(self, message: str) -> ConfigError:
        """The one-line error about this URDF."""
        return ConfigError(message, path=self.path)

    def ancestors(self, link: str) -> list[UrdfJoint]:
        """The joints from the root link to ``link``, root first; refuses a loop."""
        chain = []
        seen = set()
        while link in self.by_child:
            j = self.by_child[link]
            if j.name in seen:
                raise self.refuse(f"the joints form a loop at joint {j.name!r}")
            seen.add(j.name)
            chain.append(j)
            link = j.parent
        return chain[::-1]


def read_tree(links: list, joints: dict, path) -> Tree:
    """The tree of a parsed URDF; refuses an unknown link, a link with two parents, no single root, a loop."""
    by_child: dict[str, UrdfJoint] = {}
    children: dict[str, list[UrdfJoint]] = {}
    link_set = set(links)
    for j in joints.values():
        for end in (j.parent, j.child):
            if end not in link_set:
                raise ConfigError(f"joint {j.name!r} names link {end!r}, which the URDF does not define", path=path)
        if j.child in by_child:
            raise ConfigError(
                f"link {j.child!r} has two parent joints ({by_child[j.child].name!r}, {j.name!r})", path=path
            )
        by_child[j.child] = j
        children.setdefault(j.parent, []).append(j)
    roots = [n for n in links if n not in by_child]
    if len(roots) != 1:
        raise ConfigError(f"expected one root link, found {len(roots)}: {', '.join(roots) or 'a loop'}", path=path)
    tree = Tree(path, links, joints, by_child, children, roots[0])
    for n in links:
        tree.ancestors(n)  # loops
    return tree


@dataclass(frozen=True)
class Chain:
    """The chain armctl drives: its joints from the root link to the tool link, and the gripper joint (if any)."""

    tree: Tree
    tool: str
    tool_link_given: bool  # named by the caller (``--tool-link``), not the sidecar or the longest chain
    joints: list
    grip_joint: str | None
    tool_guessed: bool = False  # the chain's end frame chosen among others (neither --tool-link nor the sidecar)
    grip_guessed: bool = False  # the gripper joint found by its name, not named by the sidecar

    @property
    def names(self) -> set:
        return {j.name for j in self.joints}

    @property
    def turning_grip(self) -> str | None:
        """The gripper joint when it turns (its angle is the gripper servo's); None for none or a prismatic one
        (sliding fingers: the servo's angle is not the joint's position, see ``_gripper_joint``)."""
        grip = self.grip_joint
        return grip if grip is not None and self.tree.joints[grip].type in MOVING else None


def find_chain(tree: Tree, sc: Sidecar, tool_link: str | None) -> Chain:
    """The chain to the tool link (``tool_link``, else the sidecar's, else the one longest chain); refuses a
    second moving branch off it and sidecar joints the URDF lacks."""
    grip_joint = _gripper_joint(tree, sc)
    guessed = grip_joint is None
    if guessed:  # none named by the sidecar: the one joint named as a gripper's, if any
        grip_joint = _guess_gripper(tree)
    given = tool_link if tool_link is not None else sc.tool_link
    tool, chosen = _tool_link(tree, given, grip_joint)
    ancestors = tree.ancestors(tool)
    chain = Chain(tree, tool, tool_link is not None, ancestors, grip_joint, chosen, guessed and bool(grip_joint))
    for jn in list(sc.held_deg) + list(sc.max_speed_deg_s):
        if jn not in tree.joints:
            raise ConfigError(f"{jn!r} is no joint of {Path(str(tree.path)).name}", path=sc.path)
    _check_branches(chain)
    return chain


def _gripper_joint(tree: Tree, sc: Sidecar) -> str | None:
    """The sidecar's gripper joint, checked: a turning joint of the URDF, or a prismatic one (fingers a servo slides,
    as OpenManipulator-X's: armctl's gripper is still the servo's angle, the sidecar's open_deg/closed_deg)."""
    grip_joint = (sc.gripper or {}).get("joint")
    if grip_joint is not None:
        if grip_joint not in tree.joints:
            raise tree.refuse(f"the sidecar's gripper joint {grip_joint!r} is no joint of the URDF")
        if tree.joints[grip_joint].type not in (*MOVING, "prismatic"):
            raise tree.refuse(
                f"gripper joint {grip_joint!r} is {tree.joints[grip_joint].type}: armctl's gripper is a servo that "
                "turns (or slides fingers)"
            )
    return grip_joint


def _guess_gripper(tree: Tree) -> str | None:
    """The one turning joint named as a gripper's (or its link so named) that ends a branch of its own: only fixed
    or mimic joints below it, beside another branch off its parent link (the hand's frame); None if none, refused if
    several (the sidecar names one)."""

    def named(j: UrdfJoint) -> bool:
        return any(w in n.lower() for w in GRIPPER_WORDS for n in (j.name, j.child))

    def ends(link: str) -> bool:
        return all((j.type == "fixed" or j.mimic is not None) and ends(j.child) for j in tree.children.get(link, []))

    found = [
        j.name
        for j in tree.joints.values()
        if j.type in MOVING and j.mimic is None and named(j) and ends(j.child) and len(tree.children[j.parent]) > 1
    ]
    if len(found) > 1:
        raise tree.refuse(
            f"joints {', '.join(map(repr, found))} are each named as a gripper's: name the gripper joint with "
            f"gripper: {{joint: ...}} in {sidecar_path(tree.path).name}"
        )
    return found[0] if found else None


def _under_gripper(tree: Tree, grip_joint: str | None, link: str) -> bool:
    return grip_joint is not None and any(j.name == grip_joint for j in tree.ancestors(link))


def _tool_link(tree: Tree, tool: str | None, grip_joint: str | None) -> tuple[str, bool]:
    """(``tool`` checked, or when None the one leaf link (not under the gripper) at the end of the longest chain;
    True if that was chosen among several leaves)."""
    if tool is not None:
        if tool not in set(tree.links):
            raise tree.refuse(f"tool link {tool!r} is no link of the URDF (links: {', '.join(tree.links)})")
        return tool, False
    leaves = [  # links with no child joint but the gripper's (a hand with no frame of its own ends the chain)
        n
        for n in tree.links
        if all(j.name == grip_joint for j in tree.children.get(n, [])) and not _under_gripper(tree, grip_joint, n)
    ]
    depth = {n: len(tree.ancestors(n)) for n in leaves}
    best = max(depth.values(), default=0)
    longest = [n for n in leaves if depth[n] == best]
    if len(longest) != 1:
        raise tree.refuse(
            f"{len(longest)} chains are longest ({', '.join(longest)}): name the tool link with --tool-link "
            f"(or tool_link: in {sidecar_path(tree.path).name})"
        )
    return longest[0], len(leaves) > 1


def _check_branches(chain: Chain) -> None:
    """Every moving joint off the chain must be the gripper, under it, or a mimic (a passive link that the chain's
    joints drive: it moves nothing of the chain); the gripper joint must not lie on the chain."""
    tree, tool, grip_joint = chain.tree, chain.tool, chain.grip_joint
    names = chain.names
    sidecar_name = sidecar_path(tree.path).name
    for j in tree.joints.values():
        if j.name in names or j.type == "fixed" or j.name == grip_joint or _under_gripper(tree, grip_joint, j.child):
            continue
        if j.mimic is not None:
            continue
        if any(a.parent == tool for a in tree.ancestors(j.child)):
            raise tree.refuse(
                f"joint {j.name!r} ({j.type}) moves links beyond the tool link {tool!r}: armctl's chain ends at the "
                f"tool (choose the last link with --tool-link, or name the gripper joint in {sidecar_name})"
            )
        raise tree.refuse(
            f"joint {j.name!r} ({j.type}, from link {j.parent!r}) is a second branch: armctl drives one chain from "
            f"{tree.root!r} to the tool link {tool!r} (choose another with --tool-link, or name the gripper joint in "
            f"{sidecar_name})"
        )
    if grip_joint in names:
        raise tree.refuse(
            f"gripper joint {grip_joint!r} lies between {tree.root!r} and the tool link {tool!r}: give --tool-link"
        )


def guess_notes(chain: Chain, roll: str | None, sc: Sidecar) -> list[str]:
    """What was guessed, one note each (every guess has its sidecar key): the gripper joint found by its name, the
    tool link chosen among the chain's end frames, a wrist roll the sidecar does not name (``max_speed_deg_s``)."""
    name, where = Path(str(chain.tree.path)).name, sidecar_path(chain.tree.path).name
    out = []
    if chain.grip_guessed:
        out.append(
            f"{name}: joint {chain.grip_joint!r} is taken as the gripper's (so named, its branch ends in the jaws): "
            f"the chain leaves it out (gripper: {{joint: ...}} in {where} names another)"
        )
    if chain.tool_guessed:
        out.append(
            f"{name}: tool link {chain.tool!r}, the end frame of the chain (tool_link: in {where} or --tool-link "
            "names another)"
        )
    if roll is not None and roll not in sc.max_speed_deg_s:
        out.append(
            f"{name}: joint {roll!r} is taken as the wrist roll (its axis along the tool): the pose's last angle "
            f"(held_joints: {{{roll}: 0}} in {where} keeps it still)"
        )
    return out


def walk_zero_pose(chain: Chain, sc: Sidecar) -> tuple[list, np.ndarray]:
    """([(joint, axis, point)] of each moving joint not held, in the root frame at the zero pose (held joints at
    their sidecar angle, a mimic joint at its offset), and the tool link's frame there (4x4))."""
    T = np.eye(4)
    moving = []
    held_used = set()
    for j in chain.joints:
        T = T @ joint_origin(j)
        if j.type == "fixed":
            continue
        if j.type not in MOVING:
            kind = "a prismatic joint (it slides)" if j.type == "prismatic" else f"a {j.type or 'typeless'} joint"
            raise chain.tree.refuse(f"joint {j.name!r} is {kind}: armctl's arms have turning joints only")
        axis = T[:3, :3] @ np.asarray(j.axis)
        if j.name in sc.held_deg:
            held_used.add(j.name)
            T = T @ _turn(j.axis, math.radians(sc.held_deg[j.name]))
            continue
        if j.mimic is not None and j.mimic[2]:
            T = T @ _turn(j.axis, j.mimic[2])
        moving.append((j, axis, T[:3, 3].copy()))
    for jn in sc.held_deg:
        if jn not in held_used:
            raise ConfigError(f"held joint {jn!r} is not on the chain to the tool link {chain.tool!r}", path=sc.path)
    return moving, T


def zero_frame(tree: Tree, link: str, held_deg: dict) -> np.ndarray:
    """The frame (4x4) of ``link`` in the root frame at the zero pose (held joints at their sidecar angle, a turning
    mimic joint at its offset)."""
    T = np.eye(4)
    for j in tree.ancestors(link):
        T = T @ joint_origin(j)
        if j.type not in MOVING:
            continue
        if j.name in held_deg:
            T = T @ _turn(j.axis, math.radians(held_deg[j.name]))
        elif j.mimic is not None and j.mimic[2]:
            T = T @ _turn(j.axis, j.mimic[2])
    return T


def _turn(axis, angle: float) -> np.ndarray:
    R = np.eye(4)
    R[:3, :3] = axis_rot(axis, angle)
    return R


@dataclass(frozen=True)
class Axes:
    """The chain's moving joints sorted: the yaw joint (or None), the pitch joints and the wrist roll (or None),
    each (joint, axis, point); ``actuated`` the pitch joints that mimic none, ``act_index`` their places by name."""

    base: tuple | None
    pitch: list
    actuated: list
    act_index: dict
    roll: tuple | None = None


def _is_roll(moving: list, k: int, pitch: list, tol: float) -> bool:
    """True if ``moving[k]`` is a wrist roll: the chain's last moving joint, after pitch joints, mimicking none, its
    axis perpendicular to theirs (in the arm's plane)."""
    j, axis, _ = moving[k]
    return k == len(moving) - 1 and len(pitch) >= 2 and j.mimic is None and abs(axis @ pitch[0][1]) < tol


def sort_axes(chain: Chain, moving: list) -> Axes:
    """The yaw joint (vertical axis, first), 2 or 3 pitch joints (horizontal, parallel axes) and a wrist roll (the
    last joint, its axis in the plane of the pitch joints) of ``moving``."""
    tree = chain.tree
    tol = math.sin(AXIS_TOL_RAD)
    base = roll = None
    pitch = []
    for k, (j, axis, point) in enumerate(moving):
        if _is_roll(moving, k, pitch, tol):
            roll = (j, axis, point)
            continue
        where = "(" + ", ".join(f"{v:.4g}" for v in axis) + ")"
        if np.linalg.norm(np.cross(axis, Z)) < tol:
            _check_yaw(tree, j, base, pitch)
            base = (j, axis, point)
        elif abs(axis @ Z) < tol:
            if pitch and np.linalg.norm(np.cross(axis, pitch[0][1])) > tol:
                raise tree.refuse(
                    f"joint {j.name!r}: axis {where} is not parallel to joint {pitch[0][0].name!r}'s: off the arm's "
                    "plane (armctl's pitch joints turn in one vertical plane; hold it with held_joints in the sidecar "
                    "if it is no joint of the model)"
                )
            pitch.append((j, axis, point))
        else:
            tilt = math.degrees(math.asin(min(1.0, abs(axis @ Z))))
            raise tree.refuse(
                f"joint {j.name!r}: axis {where} in {tree.root!r} at the zero pose is neither vertical nor horizontal "
                f"({tilt:.1f} deg from the horizontal): off the arm's plane"
                + (" (hold it with held_joints in the sidecar if it is no joint of the model)" if pitch else "")
            )
    actuated = [p for p in pitch if p[0].mimic is None]
    act_index = {p[0].name: i for i, p in enumerate(actuated)}
    _check_pitch(chain, pitch, actuated, act_index)
    return Axes(base, pitch, actuated, act_index, roll)


def _check_yaw(tree: Tree, j: UrdfJoint, base: tuple | None, pitch: list) -> None:
    """A vertical axis is the yaw joint: the first moving joint, only one, mimicking none."""
    if pitch:
        raise tree.refuse(
            f"joint {j.name!r}: a vertical axis after pitch joint {pitch[0][0].name!r}: off the arm's plane "
            "(armctl's yaw joint is the first moving joint)"
        )
    if base is not None:
        raise tree.refuse(f"joint {j.name!r}: a second yaw joint (vertical axis) after {base[0].name!r}")
    if j.mimic is not None:
        raise tree.refuse(f"joint {j.name!r}: the yaw joint cannot mimic another joint")


def _check_pitch(chain: Chain, pitch: list, actuated: list, act_index: dict) -> None:
    """2 or 3 actuated pitch joints; a mimic pitch joint mimics one of them."""
    tree, tool = chain.tree, chain.tool
    if len(actuated) not in (2, 3):
        raise tree.refuse(
            f"armctl's arms have 2 or 3 pitch joints (horizontal, parallel axes) on the chain to {tool!r}; found "
            f"{len(actuated)}" + (f" ({', '.join(p[0].name for p in actuated)})" if actuated else "")
        )
    names = chain.names
    for j, _, _ in pitch:
        if j.mimic is not None and j.mimic[0] not in act_index:
            raise tree.refuse(
                f"joint {j.name!r} mimics {j.mimic[0]!r}, which is no pitch joint of the chain to {tool!r}"
                if j.mimic[0] not in tree.joints or j.mimic[0] not in names
                else f"joint {j.name!r} mimics {j.mimic[0]!r}, itself a mimic or no pitch joint"
            )
