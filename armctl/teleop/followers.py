"""The arms this process drives as followers of actions from outside (a LeRobot robot's follow), by arm name.

A leader with no pose of its own (a gamepad, the terminal's keys) moves its follower from where it stands. When
the follower and the leader are separate objects of one process (LeRobot's robot and teleoperator), the leader asks
here where its follower stands, rather than starting from home and so driving the arm home before it is touched.
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable

_lock = threading.Lock()
_tokens = itertools.count(1)
_driving: dict[int, tuple[str, Callable[[], tuple]]] = {}


def driving(arm_name: str, stands: Callable[[], tuple]) -> int:
    """A follower of the arm ``arm_name`` is driven in this process; ``stands()`` gives the pose it holds now
    (``(q_rad, gripper_rad)``). Returns the token ``stopped`` takes."""
    token = next(_tokens)
    with _lock:
        _driving[token] = (arm_name, stands)
    return token


def stopped(token: int) -> None:
    """The follower registered as ``token`` is no longer driven (an unknown token is ignored)."""
    with _lock:
        _driving.pop(token, None)


def standing(arm_name: str) -> tuple | None:
    """``(q_rad, gripper_rad)`` where this process's one follower of ``arm_name`` stands; None if no follower of
    that arm is driven, or several are (which one a leader leads is then not known)."""
    with _lock:
        found = [stands for name, stands in _driving.values() if name == arm_name]
    return found[0]() if len(found) == 1 else None
