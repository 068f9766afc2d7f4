"""``armctl web --watch``: the page shows an arm that another armctl drives, read-only.

The server opens no port and takes no lock: it reads the pose the driving process publishes in the state
folder (``armctl.robot.robot.Watch``, 25 times a second while it moves) and the lock file that names that process.
Every control call (move, home, gripper, record, stop) is refused with the reason: only the process that
holds the port can move or stop the arm (Ctrl-C it, or close its page).
"""

from __future__ import annotations

import math
import threading

from armctl.errors import BadInputError
from armctl.model.kinematics import arm_manipulability, arm_points
from armctl.robot.robot import Watch
from armctl.web.feed import ChangeFeed

PUBLISH_PERIOD_S = 0.04  # 25 updates a second, as the controlling page gets them


class WatchOnly(BadInputError):
    """A control call on a page that only watches."""


class WatchController(ChangeFeed):
    """The ``Controller`` interface the HTTP server uses, over a ``Watch``: state only, every command refused."""

    read_only = True
    recorder = None

    def __init__(self, watch: Watch):
        self.watch, self.arm, self.cal = watch, watch.arm, watch.calibration
        self._init_feed({"moving": False, "progress": 0.0, "step": "", "message": "watching", "error": False})
        self._closing = threading.Event()
        self._thread = threading.Thread(target=self._watch, name="armctl-web-watch-only", daemon=True)

    def why(self) -> str:
        driver = self.watch.driver()
        who = f"{driver} drives it" if driver else "no armctl holds its port now"
        return f"this page only watches the arm ({who}): move or stop it from the program that drives it"

    def start(self) -> None:
        self._publish()
        self._thread.start()

    def close(self) -> None:
        self._closing.set()
        self._thread.join(timeout=5.0)

    def submit(self, cmd):
        raise WatchOnly(self.why())

    def stop(self, reason: str = "stop button"):
        raise WatchOnly(self.why())

    def record(self, name):
        raise WatchOnly(self.why())

    def undo_record(self):
        raise WatchOnly(self.why())

    def _publish(self) -> None:
        pose = self.watch.where()
        driver = self.watch.driver()
        q, g = pose.q_rad, pose.gripper_rad
        state = {
            "q_deg": pose.q_deg,
            "gripper_deg": None if g is None else math.degrees(g),
            "joints_mm": (arm_points(self.arm, q) * 1000).tolist(),
            "tool_mm": pose.tool_mm,
            "phi_deg": math.degrees(pose.phi_rad),
            "roll_deg": None if pose.roll_rad is None else math.degrees(pose.roll_rad),
            "manipulability_m2": float(arm_manipulability(self.arm, q)),
            "pulses_us": [v for v in pose.values if v is not None],
            "measured": pose.detail,
            "source": pose.source,
            "moving": self.watch.moving,
            "watch": True,
            "driver": driver,
            "message": f"watching: {driver} drives the arm" if driver else "watching: no armctl drives the arm now",
            "error": False,
        }
        self._update(**state)

    def _watch(self) -> None:
        while not self._closing.wait(PUBLISH_PERIOD_S):
            self._publish()
