"""The simulated world of this process: the live simulated arms and the parts on their table.

A simulator with an arm (``armsim://``; ``feetechsim://`` and ``pca9685sim://`` given ``arm=``) registers
here when its port opens and drops out when it closes (weak references: a simulator nobody holds is gone).
What the simulated camera asks, and all it needs::

    live = armctl.sim.scene.latest()    # the most recently opened live simulated arm, or None
    live.true_tool_pose()               # 4x4 (m, base frame): where the tool really is, now
    live.true_gripper_rad()             # the gripper's true angle (nan without one); live.gripper: open/closed
    live.parts_now()                    # [Part(marker_id, size_m, x_m, y_m, yaw_rad, z_m)], now
    live.true_q_rad(), live.true_tool_m(), live.arm, live.true_arm
    live.world()                        # a physics simulator's world (parts, contacts, ...), else None

"now" is the simulator's current simulated time (its port's clock; the simulation is run up to it first).
Parts come from the truth file's ``parts:`` and from ``live.add_part(Part(...))``. A part is gripped when the
gripper closes (its true angle passes the midpoint from open toward closed) with the true tool point within
``GRIP_XY_M`` horizontally and ``GRIP_Z_M`` vertically of the part's top centre (a planar arm: within
``GRIP_XY_M`` of the part's (x, y) in the arm's plane, ``tool_pose``'s z = 0); it then moves with the tool,
keeping its offset and turning with the tool's heading, and when the gripper opens it is released onto the
table (z 0, x/y/yaw where the tool left it).

A simulator calls ``observe(t)`` before each change of a servo's command (the motion up to ``t`` is then
known in closed form, so a grip or release is placed at the moment the gripper crossed its midpoint).
"""

from __future__ import annotations

import math
import threading
import weakref
from collections.abc import Callable

import numpy as np

from armctl.sim.truth import Part

__all__ = ["GRIP_XY_M", "GRIP_Z_M", "LiveArm", "Part", "drop", "latest", "live_arms", "register"]

GRIP_XY_M = 0.015
GRIP_Z_M = 0.030

_LOCK = threading.Lock()
_LIVE: list[weakref.ref] = []  # LiveArm, oldest first


def _heading(pose: np.ndarray) -> float:
    """The tool's heading (rad) about the vertical: from its frame's y axis, which is always level."""
    return math.atan2(-pose[0, 1], pose[1, 1])


class LiveArm:
    """A live simulated arm as the scene sees it (the module docstring). Holds its simulator weakly."""

    def __init__(self, sim, clock: Callable[[], float] | None = None, lock=None):
        self._sim = weakref.ref(sim)
        self._clock = clock
        truth = getattr(sim, "truth", None)
        self.parts: list[Part] = [Part(**vars(p)) for p in truth.parts] if truth is not None else []
        self._held: tuple[Part, np.ndarray, float, float] | None = None  # part, offset in the tool's heading
        self._t = -math.inf  # frame (x, y), z offset, yaw offset; the time observed up to
        self._closed: bool | None = None
        self.lock = lock or threading.RLock()  # the port's: the simulation runs in one thread at a time

    # --- the simulator --------------------------------------------------------------------------------

    @property
    def sim(self):
        """The simulator (None once it is gone)."""
        return self._sim()

    @property
    def arm(self):
        return self.sim.arm

    @property
    def true_arm(self):
        return self.sim.true_arm

    @property
    def gripper(self):
        """The arm's ``Gripper`` (open_rad, closed_rad), or None."""
        return self.sim.arm.gripper

    def now_s(self) -> float:
        """The simulator's current simulated time, the simulation run up to it."""
        sim = self.sim
        with self.lock:
            t = sim.now if self._clock is None else max(sim.now, self._clock())
            if hasattr(sim, "pump"):
                sim.pump(t)
        return t

    def true_q_rad(self) -> np.ndarray:
        with self.lock:
            return self.sim.true_q_rad(self.now_s())

    def true_gripper_rad(self) -> float:
        with self.lock:
            return self.sim.true_gripper_rad(self.now_s())

    def true_tool_m(self) -> np.ndarray:
        with self.lock:
            return self.sim.true_tool_m(self.now_s())

    def true_tool_pose(self) -> np.ndarray:
        with self.lock:
            return self.sim.true_tool_pose(self.now_s())

    def world(self) -> dict | None:
        """The physics plant's world now (JSON-able: time, the servos' true angles, the parts' poses, contacts,
        the part held; ``armctl.sim.physics``), None for a simulator without ``physics=1``."""
        with self.lock:
            if getattr(self.sim, "physics", None) is None:
                return None
            self.sim.physics.advance(self.now_s())
            return self.sim.world()

    # --- the parts ------------------------------------------------------------------------------------

    def add_part(self, part: Part) -> Part:
        """Put ``part`` on the table (or wherever its z says)."""
        with self.lock:
            self.parts.append(part)
        return part

    def parts_now(self) -> list[Part]:
        """Every part as it is now (copies): a gripped one where the tool carries it."""
        with self.lock:
            t = self.now_s()
            self.observe(t)
            return [self._carried(p, t) if self._is_held(p) else Part(**vars(p)) for p in self.parts]

    def held(self) -> Part | None:
        """The part the gripper holds, or None."""
        return None if self._held is None else self._held[0]

    def _is_held(self, part: Part) -> bool:
        return self._held is not None and self._held[0] is part

    def _closed_at(self, t: float) -> bool | None:
        g, sim = self.sim.arm.gripper, self.sim
        a = sim.true_gripper_rad(t)
        if g is None or not math.isfinite(a):
            return None
        return (a - (g.open_rad + g.closed_rad) / 2.0) * math.copysign(1.0, g.closed_rad - g.open_rad) > 0.0

    def observe(self, t: float) -> None:
        """The simulator's motion up to simulated time ``t`` (each servo moving as commanded since the last
        call): grips or releases where the gripper crossed its midpoint."""
        with self.lock:
            if t <= self._t:
                return
            closed = self._closed_at(t)
            if self._closed is not None and closed is not None and closed != self._closed:
                lo, hi = self._t, t
                for _ in range(40):  # the crossing: the gripper moves monotonically between two commands
                    mid = (lo + hi) / 2.0
                    lo, hi = (lo, mid) if self._closed_at(mid) == closed else (mid, hi)
                self._grip(hi) if closed else self._release(hi)
            self._closed = closed
            self._t = t

    def _within_grip(self, pose: np.ndarray) -> Part | None:
        """The part the jaws at tool frame ``pose`` would take (the nearest within the grip window), or None."""
        tip = pose[:3, 3]
        planar = not self.sim.arm.has_base
        best, best_d = None, math.inf
        for p in self.parts:
            top = p.top_m()
            dxy = math.hypot(tip[0] - top[0], tip[1] - top[1])
            if dxy <= GRIP_XY_M and (planar or abs(tip[2] - top[2]) <= GRIP_Z_M) and dxy < best_d:
                best, best_d = p, dxy
        return best

    def between_jaws(self, t: float) -> Part | None:
        """The part between the jaws at simulated time ``t`` (``observe`` run up to it): the one held, else the one
        a closing gripper would take there; None if none (a closing gripper then closes on nothing)."""
        with self.lock:
            if self._held is not None:
                return self._held[0]
            return self._within_grip(self.sim.true_tool_pose(t))

    def _grip(self, t: float) -> None:
        pose = self.sim.true_tool_pose(t)
        tip = pose[:3, 3]
        best = self._within_grip(pose)
        if best is None:
            return
        h = _heading(pose)
        c, s = math.cos(-h), math.sin(-h)
        d = np.array([best.x_m - tip[0], best.y_m - tip[1]])
        self._held = (best, np.array([c * d[0] - s * d[1], s * d[0] + c * d[1]]), best.z_m - tip[2], best.yaw_rad - h)

    def _carried(self, part: Part, t: float) -> Part:
        _, d, dz, dyaw = self._held
        pose = self.sim.true_tool_pose(t)
        tip, h = pose[:3, 3], _heading(pose)
        c, s = math.cos(h), math.sin(h)
        yaw = math.remainder(h + dyaw, 2 * math.pi)
        x, y = tip[0] + c * d[0] - s * d[1], tip[1] + s * d[0] + c * d[1]
        return Part(part.marker_id, part.size_m, float(x), float(y), yaw, float(tip[2] + dz))

    def _release(self, t: float) -> None:
        if self._held is None:
            return
        part = self._held[0]
        where = self._carried(part, t)
        part.x_m, part.y_m, part.yaw_rad, part.z_m = where.x_m, where.y_m, where.yaw_rad, 0.0
        self._held = None


# --- the registry -------------------------------------------------------------------------------------


def register(sim, clock: Callable[[], float] | None = None, *, lock=None) -> LiveArm | None:
    """Make simulator ``sim`` (with an arm) live; ``clock`` gives its current simulated time (held weakly when
    a bound method), ``lock`` is held while the scene runs it (its port's). Sets ``sim.scene_arm``; returns it
    (None for a simulator without an arm)."""
    if getattr(sim, "arm", None) is None or not hasattr(sim, "true_tool_pose"):
        return None
    if clock is not None and hasattr(clock, "__self__"):
        method = weakref.WeakMethod(clock)
        clock = lambda: (method() or (lambda: -math.inf))()  # noqa: E731
    live = LiveArm(sim, clock, lock)
    sim.scene_arm = live
    with _LOCK:
        _LIVE[:] = [r for r in _LIVE if r() is not None]
        _LIVE.append(weakref.ref(live))
    return live


def drop(sim) -> None:
    """``sim``'s port closed: it is no longer live."""
    live = getattr(sim, "scene_arm", None)
    if live is None:
        return
    sim.scene_arm = None
    with _LOCK:
        _LIVE[:] = [r for r in _LIVE if r() is not None and r() is not live]


def live_arms() -> list[LiveArm]:
    """Every live simulated arm, oldest first."""
    with _LOCK:
        return [a for a in (r() for r in _LIVE) if a is not None and a.sim is not None]


def latest() -> LiveArm | None:
    """The most recently opened live simulated arm, or None."""
    arms = live_arms()
    return arms[-1] if arms else None
