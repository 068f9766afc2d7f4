"""End-effector targets streamed to an arm (LeRobot-style: x, y, z, pitch, roll, gripper), and one frame of such
a stream: the target solved nearest the pose the arm is in and stepped towards within the speed limits.

``tool_frame(arm, target, q_last, period_s)`` is the one step both ``Robot.follow`` with tool targets
(``armctl.teleop.follow.ToolStream``) and ``bench/ee_follow.py`` take:

- the IK (``armctl.ik.solve``) from the last pose, so the answer is the pose nearest it (no branch jumps);
- the roll taken at the whole turn nearest the last roll inside the roll's limits (continuous across +-180 deg:
  a target roll going from 179 to -179 deg turns the jaws 2 deg, not 358); a roll no turn of which is inside the
  limits is held at the limit nearest it, on the side the roll is on (no long way round to the other limit);
- a target out of reach gives the nearest answer, the point first: reached at another pitch when not at the one
  asked; else the solver's best pose (the arm stretched towards it), at the pitch asked or at any, whichever lands
  nearer; inside the limits; and says why (``clamped``);
- every joint's step clipped to its speed limit times the frame period (``speed_step``, the follow's own check).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from armctl import ik
from armctl.errors import BadInputError
from armctl.ik.roll import pitch_reaches, roll_turn, stretched
from armctl.model import validate
from armctl.model.arm import Arm
from armctl.model.kinematics import tool_pitch, tool_point

FIELDS = ("x", "y", "z", "pitch", "roll", "gripper")


@dataclass(frozen=True)
class ToolTarget:
    """One end-effector target: the tool point ``x``, ``y``, ``z`` (m, the arm's frame: ``armctl ik`` takes the
    same; a URDF arm's base_link point is ``arm.urdf.from_urdf_point``'s), the tool axis's ``pitch`` (rad from the
    horizontal, negative down: ``armctl ik --phi``), the wrist ``roll`` (rad, 0 as the URDF's zero; any turn of it:
    taken at the one nearest the roll the arm has) and the ``gripper`` (0 closed .. 1 open, a fraction of its
    range). ``pitch``, ``roll`` and ``gripper`` None: keep the one the arm has. Checked when made (BadInputError
    naming the field)."""

    x: float
    y: float
    z: float
    pitch: float | None = None
    roll: float | None = None
    gripper: float | None = None

    def __post_init__(self) -> None:
        for name in ("x", "y", "z"):
            object.__setattr__(self, name, validate.number(getattr(self, name), f"tool target {name} (m)"))
        for name in ("pitch", "roll"):
            v = getattr(self, name)
            if v is not None:
                object.__setattr__(self, name, validate.radians(v, f"tool target {name} (rad)"))
        g = self.gripper
        if g is not None:
            g = validate.number(g, "tool target gripper")
            if not 0.0 <= g <= 1.0:
                raise BadInputError(
                    f"tool target gripper: 0 (closed) .. 1 (open), got {g:g}"
                    + (" (LeRobot's 0..100: divide by 100)" if g <= 100.0 else "")
                )
            object.__setattr__(self, "gripper", g)

    @property
    def point(self) -> tuple[float, float, float]:
        """(x, y, z) m."""
        return (self.x, self.y, self.z)


def as_tool_target(obj) -> ToolTarget:
    """``obj`` as a ``ToolTarget``: one already, or a mapping with keys x, y, z and optionally pitch, roll,
    gripper (missing or None: keep). BadInputError naming what is wrong otherwise."""
    if isinstance(obj, ToolTarget):
        return obj
    if not hasattr(obj, "keys"):
        raise BadInputError(
            f"tool target: a ToolTarget or a dict with keys x, y, z[, pitch, roll, gripper]; got {obj!r}"
        )
    unknown = [k for k in obj.keys() if k not in FIELDS]
    if unknown:
        raise BadInputError(f"tool target: unknown key {unknown[0]!r} (keys: {', '.join(FIELDS)})")
    missing = [k for k in FIELDS[:3] if k not in obj]
    if missing:
        raise BadInputError(f"tool target: {missing[0]!r} is missing (x, y, z are needed, m)")
    return ToolTarget(**{k: obj[k] for k in FIELDS if k in obj})


@dataclass(frozen=True)
class ToolFrame:
    """One frame of a tool-target stream (``tool_frame``): the pose to send (``q_rad``, every joint within its
    speed limit of the last), the pose the target asks for (``goal_rad``: the IK's, nearest the last pose), how
    far the goal's tool point lies from the target (``error_m``, 0 when reached) and why the target was moved to
    fit ("" when it was not)."""

    q_rad: np.ndarray
    goal_rad: np.ndarray
    error_m: float
    clamped: str


def speed_step(q_from, q_to, lim) -> np.ndarray:
    """The step from ``q_from`` towards ``q_to`` (rad), each joint at most ``lim`` (rad) of it."""
    return q_from + np.clip(q_to - q_from, -lim, lim)


def roll_goal(arm: Arm, roll: float, last: float) -> tuple[float, str]:
    """(the roll (rad) to turn to for a target ``roll``: its whole turn nearest the ``last`` roll inside the
    limits; when no turn of it is inside them, the limit nearest it on the side the roll is on; why it was
    moved, "" if not)."""
    try:
        return roll_turn(arm, roll, last), ""
    except BadInputError:
        i = arm.roll_index
        lo, hi = float(arm.q_min[i]), float(arm.q_max[i])
        r = min(max(last + math.remainder(roll - last, 2.0 * math.pi), lo), hi)
        return r, f"roll {math.degrees(roll):.1f} deg outside its limits: held at {math.degrees(r):.1f} deg"


def tool_goal(arm: Arm, target: ToolTarget, q_last) -> tuple[np.ndarray, float, str]:
    """(the pose for ``target`` nearest ``q_last`` (rad), inside the joint limits: the exact one, else the nearest
    the solver finds, the point before the pitch; how far its tool point lies from the target (m); why the target
    was moved, "" if not).
    BadInputError: a roll for an arm without one, a pitch for a 2-link chain."""
    q_last = np.asarray(q_last, dtype=float)
    roll, why = None, ""
    if target.roll is not None:
        if arm.roll is None:
            raise BadInputError(f"tool target roll: arm {arm.name!r} has no wrist roll (leave roll out)")
        roll, why = roll_goal(arm, target.roll, float(q_last[arm.roll_index]))
    if arm.n_links == 3:
        phi = float(tool_pitch(arm, q_last)) if target.pitch is None else target.pitch
    elif target.pitch is not None:
        raise BadInputError(
            f"tool target pitch: arm {arm.name!r} has a 2-link chain: its tool's pitch follows from the point "
            "(leave pitch out)"
        )
    else:
        phi = None
    point = target.point
    r = None if arm.roll is None else float(q_last[arm.roll_index]) if roll is None else roll  # (the roll solved at)
    near = None if r is None else stretched(arm, point, r)
    if near is not None:  # beyond the reach at any pitch: the arm stretched straight towards it, if it can be
        res = ik.solve(arm, near[0], phi=near[1], roll=roll, q0=q_last)
        if res.ok:
            err = _miss(arm, res.q, point)
            return np.asarray(res.q, dtype=float), err, _join(why, f"tool point {err * 1000:.1f} mm out of reach")
    best, miss, err = q_last, "out of reach", math.inf
    if near is None and (r is None or phi is None or pitch_reaches(arm, point, phi, r)):  # (else: sure to miss)
        res = ik.solve(arm, point, phi=phi, roll=roll, q0=q_last)
        if res.ok:
            return np.asarray(res.q, dtype=float), float(res.error_m), why
        best, miss = _inside(arm, res.q, q_last), res.reason or miss
        err = _miss(arm, best, point)
    if phi is not None:  # no pose with this pitch reaches the point: the point first, at the pitch it can have
        free = ik.solve(arm, point, roll=roll, q0=q_last)
        if free.ok:
            return np.asarray(free.q, dtype=float), float(free.error_m), _join(why, "tool pitch out of reach")
        q_free = _inside(arm, free.q, q_last)
        if _miss(arm, q_free, point) < err:
            best, miss = q_free, free.reason or miss
            err = _miss(arm, best, point)
    return best, err, _join(why, f"tool point {err * 1000:.1f} mm out of reach ({miss})")


def tool_frame(arm: Arm, target, q_last, period_s: float) -> ToolFrame:
    """One frame of a stream of tool targets: ``target`` (a ``ToolTarget`` or a dict, see ``as_tool_target``)
    solved nearest the last pose ``q_last`` (rad; ``tool_goal``), and the step towards it every joint takes in
    ``period_s`` s at no more than its speed limit. Pure: the same inputs give the same frame."""
    t = as_tool_target(target)
    q_last = np.asarray(q_last, dtype=float)
    goal, err, why = tool_goal(arm, t, q_last)
    q = speed_step(q_last, goal, np.asarray(arm.max_speed_rad_s, dtype=float) * float(period_s))
    return ToolFrame(q, goal, err, why)


def _inside(arm: Arm, q, q_last) -> np.ndarray:
    """The solver's best pose ``q`` inside the joint limits (clipped onto them), or ``q_last`` if it has no
    such (not finite, or a linkage's coupled limits)."""
    q = np.asarray(q, dtype=float)
    if not np.all(np.isfinite(q)):
        return q_last.copy()
    q = np.clip(q, arm.q_min, arm.q_max)
    return q if arm.within_limits(q) else q_last.copy()


def _miss(arm: Arm, q, point) -> float:
    """How far (m) pose ``q`` leaves the tool point from ``point``."""
    return float(np.linalg.norm(tool_point(arm, q) - np.asarray(point)))


def _join(a: str, b: str) -> str:
    return f"{a}; {b}" if a else b
