"""The ``joint_commands`` topic as the "leader" of ``Robot.follow``: one slot, the latest command wins."""

from __future__ import annotations

import math
import threading
import time
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class CommandReading:
    """The latest joint command, as ``Robot.follow`` reads a leader: ``t_s`` (time.monotonic() it came),
    ``q_rad``, ``gripper_rad`` (NaN: not commanded), ``steps`` (its sequence number: changes with each message)."""

    t_s: float
    q_rad: np.ndarray
    gripper_rad: float
    steps: int


class CommandSource:
    """The ``joint_commands`` topic seen as a leader arm of the same model (``Robot.follow(map="joints")``): one slot,
    the latest command wins; never a queue."""

    port = "joint_commands"

    def __init__(self, arm):
        self.arm = arm
        self._lock = threading.Lock()
        self._latest: CommandReading | None = None
        self._seq = 0
        self.arrived = threading.Event()  # set on each command: the follow reads it at once (Teleop.wait_news)

    def put(self, q_rad, gripper_rad: float) -> None:
        with self._lock:
            self._seq += 1
            if not math.isfinite(gripper_rad) and self._latest is not None:
                gripper_rad = self._latest.gripper_rad  # not commanded this time: keep the last
            self._latest = CommandReading(time.monotonic(), np.array(q_rad, dtype=float), float(gripper_rad), self._seq)
        self.arrived.set()

    def read(self) -> CommandReading:
        with self._lock:
            return self._latest
