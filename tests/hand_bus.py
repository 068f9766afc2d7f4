"""The simulated bus whose servos a test turns by hand (``bus``, tests/conftest.py): its hidden mapping, and how
it is served from the test's process."""

from __future__ import annotations

import threading
import time

from armctl.sim.pty import PtySim

PER_DEG = 4096 / 360
TRUE = {1: (2100.0, 1), 2: (1990.0, -1), 3: (2048.0, 1), 6: (1800.0, 1)}  # id -> (zero steps, direction)


def true_steps(servo_id: int, angle_deg: float) -> float:
    """The steps servo ``servo_id`` really reads at ``angle_deg`` (the mapping a calibration must find)."""
    zero, direction = TRUE[servo_id]
    return zero + direction * PER_DEG * angle_deg


def serve_until_stopped(pty: PtySim, stop: threading.Event) -> None:
    while not stop.is_set() and not pty.closed:
        pty.serve(until=time.monotonic() + 0.1)
