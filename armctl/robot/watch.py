"""Watching an arm another process drives (``Watch``), without opening its port."""

from __future__ import annotations

import math
import time

import numpy as np

from armctl.bus.portlock import PortLock
from armctl.model.kinematics import tool_pitch, tool_point
from armctl.robot.opening import DEFAULT_ARM, resolve
from armctl.robot.pose import Pose
from armctl.robot.state import LiveStore, PoseStore

TURN_RAD = 2.0 * math.pi
WATCH_STALE_S = 0.5  # a live pose older than this, not marked clean: its writer stopped writing (killed)


class Watch:
    """An arm that another armctl drives (a ``run``, a script, ``armctl web``), watched without opening its port:
    ``where()`` reads the pose that process publishes in the state folder once a frame while it moves (the pose
    the board plays now), else the pose stored when the arm was last left. Takes no port lock and no file lock,
    so it never keeps the driver out; ``driver()`` names the process that holds the port (None: nobody).
    Same arguments as ``connect`` (they say which port, arm and calibration to watch)."""

    def __init__(self, arm=DEFAULT_ARM, port: str | None = None, backend=None, calibration=None):
        self.arm, self.calibration, self.calibration_path, cls, self.port = resolve(arm, port, backend, calibration)
        self.backend_name = cls.name
        self._live = LiveStore(self.port, self.arm)
        self._stored = PoseStore(self.port, self.arm)
        lock = PortLock(self.port)
        self._holder_path = None if lock.path is None else lock.holder_path

    def driver(self) -> str | None:
        """Who holds the port now, as its lock's holder file says (``pid N (command)``), or None if nobody does
        (the holder removes it as it lets go)."""
        if self._holder_path is None:
            return None
        try:
            return self._holder_path.read_text(encoding="utf-8", errors="replace").strip() or "another armctl"
        except OSError:
            return None

    def where(self) -> Pose:
        """The pose the driving process reports (source ``"watched"``), else the stored one, else home."""
        live, stored = self._live.load(), self._stored.load()
        age = math.inf if live is None else time.time() - live.time_s
        if live is not None and (stored is None or live.time_s >= stored.time_s or not live.clean):
            got, what = (
                live,
                "the pose the armctl driving it plays now" if not live.clean else "held, as its driver left it",
            )
        elif stored is not None:
            got, what, age = stored, "the pose stored when the arm was last left", math.inf
        else:
            q = np.array(self.arm.home_rad)
            return self._pose(q, None, (), "assumed", "nothing published for this port yet: the home pose")
        g = got.gripper_rad if math.isfinite(got.gripper_rad) else None
        moving = not got.clean and age < WATCH_STALE_S
        if not got.clean and not moving:
            what = "the last pose its driver published (it stopped publishing: killed, or the link dropped)"
        return self._pose(got.q_rad, g, got.values, "watched", what, moving=moving)

    def _pose(self, q, g, values, source: str, detail: str, *, moving: bool = False) -> Pose:
        self.moving = moving
        q = np.asarray(q, dtype=float)
        return Pose(
            q_rad=q,
            tool_m=tool_point(self.arm, q),
            phi_rad=math.remainder(float(tool_pitch(self.arm, q)), TURN_RAD),
            gripper_rad=g,
            source=source,
            detail=detail,
            values=tuple(values),
            roll_rad=None if self.arm.roll is None else float(q[self.arm.roll_index]),
        )

    moving = False  #: True while the last ``where()`` found the driver moving the arm

    def __repr__(self) -> str:
        return f"<Watch {self.arm.name!r} on {self.port}>"
