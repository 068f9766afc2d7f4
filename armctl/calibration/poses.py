"""The poses of a calibration: the reference poses a joint is set to by eye (``reference_poses``,
``gripper_poses``), and the whole poses the other joints hold meanwhile, inside every limit of the arm
(``pose_for``, ``room_pose``, ``path_between``, ``calibration_poses``, ``home_after``)."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from armctl.model.arm import Arm


@dataclass(frozen=True)
class RefPose:
    """A pose the user sets a joint to by eye (or with a set square): its angle (deg) and how to see it."""

    angle_deg: float
    text: str


def _joint_refs(index: int, arm: Arm | None = None) -> dict[float, str]:
    if arm is not None and arm.has_base:
        if index == 0:
            return {
                0.0: "the base turned so the arm points straight ahead, along the base's x axis",
                90.0: "the base a quarter turn counter-clockwise (seen from above): the arm points left, along y",
                -90.0: "the base a quarter turn clockwise (seen from above): the arm points right, along -y",
                45.0: "the base an eighth of a turn counter-clockwise (45 deg, seen from above)",
                -45.0: "the base an eighth of a turn clockwise (-45 deg, seen from above)",
            }
        index -= 1  # the chain's joints, counted from the shoulder
    if arm is not None and arm.parallelogram and index == 1:  # the forearm's own angle from the horizontal
        return {
            0.0: "the forearm level (horizontal), pointing away from the shoulder",
            90.0: "the forearm straight up (vertical)",
            -90.0: "the forearm straight down (vertical)",
            45.0: "the forearm 45 deg above level",
            -45.0: "the forearm 45 deg below level",
        }
    if index == 0:
        return {
            0.0: "link 1 straight along the base's x axis (pointing forward, level)",
            90.0: "link 1 straight up, along the base's y axis (90 deg to the x axis)",
            -90.0: "link 1 straight down, along the base's -y axis (-90 deg to the x axis)",
            45.0: "link 1 halfway between the x axis and straight up (45 deg)",
            -45.0: "link 1 halfway between the x axis and straight down (-45 deg)",
        }
    k, prev = index + 1, index
    return {
        0.0: f"link {k} straight in line with link {prev} (no bend)",
        90.0: f"link {k} at 90 deg to link {prev}, bent counter-clockwise (to the left, seen from above)",
        -90.0: f"link {k} at 90 deg to link {prev}, bent clockwise (to the right, seen from above)",
        45.0: f"link {k} at 45 deg to link {prev}, counter-clockwise",
        -45.0: f"link {k} at 45 deg to link {prev}, clockwise",
    }


def reference_poses(arm: Arm, index: int) -> list[RefPose]:
    """Three reference poses for joint ``index`` (0-based) inside its angle limits: 0 and +-90 deg where
    the joint can get there, else +-45 deg. Three, so the fit has a residual to check. Only angles the arm
    can hold inside all its limits (``pose_for``: a parallelogram's forearm moved along where needed)."""
    refs = _joint_refs(index, arm)
    lo, hi = math.degrees(arm.q_min[index]), math.degrees(arm.q_max[index])
    order = (0.0, 90.0, -90.0, 45.0, -45.0)
    home = np.asarray(arm.home_rad, dtype=float)
    inside = [
        a for a in order if lo - 1e-9 <= a <= hi + 1e-9 and pose_for(arm, index, math.radians(a), home) is not None
    ]
    picked = inside[:3]
    if len(picked) < 2:
        picked = [lo + (hi - lo) * f for f in (0.25, 0.5, 0.75)]
        return [RefPose(a, f"joint {index + 1} at {a:g} deg (measure with a protractor)") for a in picked]
    return [RefPose(a, refs[a]) for a in picked]


# --- whole poses: what the other joints hold while one is calibrated ----------------------------------------
#
# A parallelogram arm (MeArm, EEZYbotARM) couples its two chain joints: the angle between upper arm and forearm
# must stay inside ``link_angle_rad`` (30..150 deg on the MeArm), where the linkage binds and a small servo
# stalls. Its shoulder servo turns the upper arm while the forearm keeps its angle from the horizontal, so a
# shoulder reference pose of 0 deg with the forearm level is 180 deg between them. Every pose the calibration
# puts the arm in is therefore a whole pose, checked with the arm's own limits (``Arm.within_limits``), the
# partner joint moved the least that keeps the linkage ``LINK_MARGIN_RAD`` inside its range.

LINK_MARGIN_RAD = math.radians(5.0)


def _partner(arm: Arm, index: int) -> int | None:
    """The chain joint coupled to joint ``index`` through a parallelogram's link angle, or None."""
    pair = arm.coupled_joints
    return None if pair is None else {pair[0]: pair[1], pair[1]: pair[0]}.get(index)


def _link_room(arm: Arm) -> tuple[float, float]:
    lo, hi = arm.link_angle_rad
    m = min(LINK_MARGIN_RAD, (hi - lo) / 4)
    return lo + m, hi - m


def _with_link(arm: Arm, q: np.ndarray, index: int, link: float) -> np.ndarray:
    """``q`` with joint ``index``'s partner moved so the link angle is ``link`` (clipped to its own limits)."""
    c = arm.chain_start
    p = _partner(arm, index)
    out = np.array(q, dtype=float)
    out[p] = out[c] + (link - math.pi) if p == c + 1 else out[c + 1] - (link - math.pi)
    out[p] = min(max(out[p], arm.q_min[p]), arm.q_max[p])
    return out


def pose_for(arm: Arm, index: int, angle_rad: float, held) -> np.ndarray | None:
    """The whole pose (rad) for joint ``index`` at ``angle_rad`` with the other joints as in ``held`` (rad),
    inside every limit of the arm: on a parallelogram the partner joint is moved the least that keeps the link
    angle a margin inside its range. None if no such pose exists."""
    from armctl.model.kinematics import link_angle

    q = np.array(held, dtype=float)
    q[index] = angle_rad
    if _partner(arm, index) is not None:
        lo, hi = _link_room(arm)
        a = float(link_angle(arm, q))
        if not lo <= a <= hi:
            q = _with_link(arm, q, index, min(max(a, lo), hi))
    return q if arm.within_limits(q) else None


def room_pose(arm: Arm, index: int, toward: int, held) -> np.ndarray:
    """The pose to look for joint ``index``'s mechanical end toward lower (``toward`` -1) or higher (+1) angles
    from ``held`` (rad): on a parallelogram its partner is put where the link angle leaves the joint the most
    room that way (the linkage's far end, a margin inside), as far as the pose stays inside the limits; the
    joint itself stays (brought back inside its limits from a mechanical end). Other arms: ``held`` as it is."""
    q = np.array(held, dtype=float)
    if _partner(arm, index) is None:
        return q
    q[index] = min(max(q[index], arm.q_min[index]), arm.q_max[index])  # back from the other end, if there
    c = arm.chain_start
    lo, hi = _link_room(arm)
    # the link angle (pi + forearm - shoulder) grows as the shoulder turns down or the forearm up
    grows = (toward < 0) if index == c else (toward > 0)
    best = q
    for link in np.linspace(lo if grows else hi, hi if grows else lo, 25):  # the most room first
        cand = _with_link(arm, q, index, float(link))
        if arm.within_limits(cand):
            best = cand
            break
    return best


def path_between(arm: Arm, q_from, q_to, *, max_steps: int = 32) -> list[np.ndarray]:
    """Poses (rad) that take the arm from ``q_from`` to ``q_to`` moving one joint at a time (as the calibration
    moves its servos), each inside the arm's limits when ``q_from`` and ``q_to`` are: the limits are convex (a
    box and a parallelogram's band), so a fine enough staircase along the straight line stays inside. A joint
    of ``q_from`` past its own range (at a mechanical end) is first brought back to it. Ends with ``q_to``;
    [] if nothing changes."""
    a, b = np.array(q_from, dtype=float), np.array(q_to, dtype=float)
    back = []
    for j in range(len(a)):
        inside = min(max(a[j], arm.q_min[j]), arm.q_max[j])
        if inside != a[j] and abs(b[j] - a[j]) > 1e-12:
            a = a.copy()
            a[j] = inside
            back.append(a)
    changed = [j for j in range(len(a)) if abs(b[j] - a[j]) > 1e-12]
    if not changed:
        return back
    for steps in (1, 2, 4, 8, 16, max_steps):
        for order in (changed, changed[::-1]):
            out, q = [], a.copy()
            for k in range(1, steps + 1):
                waypoint = a + (b - a) * k / steps
                for j in order:
                    q = q.copy()
                    q[j] = waypoint[j]
                    out.append(q)
            if all(arm.within_limits(x) for x in out):
                return back + out
    return back + out  # (q_from or q_to outside the limits: the last try)


def calibration_poses(arm: Arm) -> list[tuple[str, np.ndarray]]:
    """Every pose (rad) the interactive calibration puts ``arm`` in when each servo does what its old
    calibration says: (what, pose), from home, joint by joint through the reference poses (the joint sent to
    each by ``g``), the starts of both ends of its safe range, and back home. The same steps as the
    ``Workflow`` of ``armctl calibrate``; a test walks them through ``Arm.within_limits``."""
    home = np.asarray(arm.home_rad, dtype=float)
    q, out = home.copy(), []

    def go(label: str, target) -> None:
        nonlocal q
        for x in path_between(arm, q, target):
            out.append((label, x))
        q = np.array(target, dtype=float)

    for i in range(arm.n):
        for ref in reference_poses(arm, i):
            target = pose_for(arm, i, math.radians(ref.angle_deg), q)
            if target is not None:
                go(f"joint {i + 1} at {ref.angle_deg:g} deg", target)
        for toward in (-1, 1):
            go(f"joint {i + 1}, looking for its {'low' if toward < 0 else 'high'} end", room_pose(arm, i, toward, q))
        go(f"joint {i + 1} back home", home_after(arm, i, q))
    return out


def home_after(arm: Arm, index: int, held) -> np.ndarray:
    """Where the arm goes once joint ``index`` is calibrated: it, and a parallelogram's partner, back home."""
    q = np.array(held, dtype=float)
    q[index] = arm.home_rad[index]
    p = _partner(arm, index)
    if p is not None:
        q[p] = arm.home_rad[p]
    return q


def gripper_poses(arm: Arm) -> list[RefPose]:
    """The gripper's two reference poses: open and closed (angles from the arm file)."""
    g = arm.gripper
    return [
        RefPose(math.degrees(g.open_rad), "gripper fully open (as wide as you want it to open)"),
        RefPose(math.degrees(g.closed_rad), "gripper closed (jaws just touching; not squeezing)"),
    ]
