"""Where the parts a program carried should have ended, from what the servos were told (not from what the
physics made of it), to say which part was not carried.

``Placements`` follows a simulator's commands to the plant: the joints' commanded angles, and the gripper's.
When the gripper is told to close (its target past the midpoint of open and closed), the commanded tool point
(``kinematics.tool_point`` of the commanded angles) is the pick: the part whose bottom centre lies within
``PICK_XY_M`` of it across and whose height spans it (give or take ``PICK_Z_M``) where it rests (where the scene
put it, or where it was last set down: the program's place, not where the jaws may have pushed it on their way)
is the part taken, and its offset from the tool point is kept. When the gripper is told to open, the part taken
should end at the commanded tool point plus that offset: its place. ``misplaced(world)`` lists every part
farther than ``TOLERANCE_M`` from where it should be, as one line each (the part, where it is, where it should
be): a part that slipped, or one the jaws never held.
"""

from __future__ import annotations

import math

import numpy as np

from armctl.model.kinematics import tool_point

PICK_XY_M = 0.02
PICK_Z_M = 0.02
TOLERANCE_M = 0.005


def _mm(v) -> str:
    return "(" + ", ".join(f"{1000 * x:.1f}" for x in v) + ") mm"


class Placements:
    """The picks and places told to the plant (see the module docstring)."""

    def __init__(self, arm, q_rad, parts: dict[str, tuple[tuple[float, float, float], float]]):
        """``parts``: name -> (where the scene puts its bottom centre (m), its height (m))."""
        self.arm = arm
        self.q = np.array(q_rad, dtype=float)
        self.heights = {name: h for name, (_, h) in parts.items()}
        self.rest = {name: np.array(at, dtype=float) for name, (at, _) in parts.items()}  # where each should rest
        self.closed = False
        self.taken: tuple[str, np.ndarray] | None = None  # the part taken and its offset from the tool point
        self.should: dict[str, np.ndarray] = {}  # part -> where its bottom centre should be (m)

    def joint(self, index: int, target_rad: float) -> None:
        self.q[index] = target_rad

    def _tool(self) -> np.ndarray:
        p = np.asarray(tool_point(self.arm, self.q), dtype=float)
        return p if p.shape == (3,) else np.array([p[0], p[1], 0.0])

    def gripper(self, target_rad: float) -> None:
        """The gripper told to go to ``target_rad``."""
        g = self.arm.gripper
        closed = (target_rad - (g.open_rad + g.closed_rad) / 2.0) * math.copysign(1.0, g.closed_rad - g.open_rad) > 0
        if closed == self.closed:
            return
        self.closed = closed
        tool = self._tool()
        if closed:
            self.taken = self._pick(tool)
        elif self.taken is not None:
            name, offset = self.taken
            self.should[name] = self.rest[name] = tool + offset
            self.taken = None

    def _pick(self, tool: np.ndarray) -> tuple[str, np.ndarray] | None:
        best, best_d = None, math.inf
        for name, at in self.rest.items():
            d = math.hypot(*(tool[:2] - at[:2]))
            inside = at[2] - PICK_Z_M <= tool[2] <= at[2] + self.heights.get(name, 0.0) + PICK_Z_M
            if d <= PICK_XY_M and inside and d < best_d:
                best, best_d = (name, at - tool), d
        return best

    def misplaced(self, parts: dict, tolerance_m: float = TOLERANCE_M) -> list[str]:
        """One line for each part farther than ``tolerance_m`` from where the commands put it."""
        out = []
        for name, should in self.should.items():
            now = np.asarray(parts[name]["at_m"], dtype=float)
            off = float(np.linalg.norm(now - should))
            if off > tolerance_m:
                out.append(
                    f"part {name} was not carried to its place: it is at {_mm(now)}, {1000 * off:.1f} mm from where "
                    f"the program put it, {_mm(should)}"
                )
        return out

    def placed(self) -> dict[str, list[float]]:
        """Part -> where it should be (m), JSON-able."""
        return {name: [float(v) for v in p] for name, p in self.should.items()}
