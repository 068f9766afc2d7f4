"""Feed hold, resume and speed override for the motion playing (as GRBL's ``!``, ``~`` and feed overrides).

A ``RunControl`` is shared by whoever asks (a key on the terminal, a button on the web page, a Python call
from another thread) and the playback (``armctl.robot.stream.Player``), which reads it once a frame. A hold is a
time-scaling of the planned trajectory, never a new path: the playback slows the rate at which it walks
along the planned samples down to zero (from the program's speed in ``HOLD_RAMP_S``, or longer where a
joint's acceleration limit asks for it), holds, and on resume speeds it up again. It starts at once: the
board is never sent more than ``LEAD_S`` of motion ahead, in moves of at most ``CONTROLLED_MOVE_FRAMES``.
The override scales the program's speeds from 10 to 200 %; the playback never lets a servo step faster
than its joint's speed limit, whatever the override. Thread-safe without locks (single writes of Python
objects), so a signal handler may call it too.
"""

from __future__ import annotations

import math

from armctl.errors import BadInputError

OVERRIDE_MIN = 0.10
OVERRIDE_MAX = 2.00
OVERRIDE_STEP = 0.10  # one press of + or -
#: A hold decelerates from the program's speed to rest (and a resume back) in at least this long, longer where a
#: joint's acceleration limit asks for it (GRBL's feed hold: at once, at the acceleration the machine allows).
HOLD_RAMP_S = 0.1
RAMP_SPEED_FRACTION = 0.25  # of each joint's limit: from wherever the arm is to where a motion starts
#: The playback sends a board with a queue (our firmware) at most about this much motion ahead of what it plays:
#: a hold's deceleration starts that soon. Enough for the host's scheduling hiccups (the board's ``empty``
#: counter shows an underrun; bench/hold.py counts them).
LEAD_S = 0.1
#: While a RunControl is attached, a move sent is at most this many 20 ms frames (one on a board the host times
#: frame by frame): what is committed ahead of a hold stays short, whatever the plan merged into longer moves.
CONTROLLED_MOVE_FRAMES = 2


def check_override(value, what: str = "speed_override") -> float:
    """``value`` as an override fraction (0.1..2.0); BadInputError naming ``what`` otherwise (50 is 50 %?)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(float(value)):
        raise BadInputError(f"{what}: expected a number from {OVERRIDE_MIN:g} to {OVERRIDE_MAX:g}, got {value!r}")
    v = float(value)
    if not OVERRIDE_MIN - 1e-9 <= v <= OVERRIDE_MAX + 1e-9:
        hint = f" (a fraction: {v / 100:g} for {v:g} %)" if 10 <= v <= 200 else ""
        raise BadInputError(
            f"{what}: {v:g} is outside {OVERRIDE_MIN:g}..{OVERRIDE_MAX:g} of the program's speeds{hint}"
        )
    return min(max(v, OVERRIDE_MIN), OVERRIDE_MAX)


class RunControl:
    """What the user asks of the playback (``pause``, ``resume``, ``override``) and what it does
    (``state``: ``"running"``, ``"holding"`` while it decelerates, ``"held"``, ``"idle"`` when nothing plays;
    ``rate``: the fraction of the program's speed it plays at now)."""

    def __init__(self) -> None:
        self.paused = False
        self._override = 1.0
        self.state = "idle"
        self.rate = 0.0
        self.capped = False  # the override asks for more than a joint's speed limit allows here

    @property
    def override(self) -> float:
        """The speed override: a fraction of the program's speeds, 0.1..2.0 (1.0: as planned)."""
        return self._override

    @override.setter
    def override(self, value: float) -> None:
        self._override = check_override(value)

    def pause(self) -> None:
        """Feed hold: decelerate along the path and hold; the rest of the motion stays (``resume``)."""
        self.paused = True

    def resume(self) -> None:
        """Go on from where the hold stopped, along the same path."""
        self.paused = False

    def faster(self, step: float = OVERRIDE_STEP) -> float:
        """Override up one step (at most 200 %); the new value."""
        self._override = min(OVERRIDE_MAX, round(self._override + step, 2))
        return self._override

    def slower(self, step: float = OVERRIDE_STEP) -> float:
        """Override down one step (at least 10 %); the new value."""
        self._override = max(OVERRIDE_MIN, round(self._override - step, 2))
        return self._override

    def describe(self) -> str:
        """A few words for a progress line: ``held (Enter resumes)``, ``holding``, ``speed 150 %``."""
        words = []
        if self.state == "held":
            words.append("HELD (Enter resumes)")
        elif self.state == "holding" or (self.paused and self.state == "running"):
            words.append("holding")
        if abs(self._override - 1.0) > 1e-9:
            words.append(f"speed {100 * self._override:.0f} %" + (" (joint limit)" if self.capped else ""))
        return ", ".join(words)

    def to_dict(self) -> dict:
        """JSON-ready: ``paused``, ``state``, ``override``, ``rate``, ``capped``."""
        return {
            "paused": self.paused,
            "state": self.state,
            "override": self._override,
            "rate": round(self.rate, 4),
            "capped": self.capped,
        }
