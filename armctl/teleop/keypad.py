"""The keyboard as a gamepad: a terminal's keys read as ``PadState`` (``armctl.teleop.gamepad``), so the same
``GamepadLeader`` makes them a leader where no gamepad is (LeRobot's teleoperator: ``--teleop.keyboard=true``).

A terminal sends no key-up (nor does SSH): a key counts as held while its auto-repeats come, and released
``release_time`` after the last one (twice the repeat interval, 50..250 ms, as the keyboard pendant does); a single
tap holds it ``TAP_S``, a short nudge. A key held down moves on once the terminal's auto-repeat starts.

    arrows       the tool in x (Left/Right) and y (Up/Down)     PgUp / PgDn   up / down in z (arms on a base)
    , / .        the tool angle (3-link arms)                    ; / '         the wrist roll
    c / o        close / open the gripper (while held)           m             joint / Cartesian mode
    Ctrl-C       stop (the terminal's interrupt, as in any program); the end of input is the keyboard unplugged

In joint mode the keys drive the joints as the gamepad's sticks do (Left/Right: joint 1, Up/Down: joint 2,
PgUp/PgDn: joint 3, , / .: joint 4, ; / ': joint 5).
"""

from __future__ import annotations

import sys
import time

from armctl.core.terminal import REPEAT_GAP_S, Terminal, release_time
from armctl.errors import BadInputError
from armctl.teleop.gamepad import AXES, PadState

TAP_S = 0.1  # a single tap (no auto-repeat yet) holds its key this long
#: key -> (axis, deflection): the gamepad's axes the key stands for
AXIS_KEYS = {
    "right": ("leftx", 1.0),
    "left": ("leftx", -1.0),
    "up": ("lefty", 1.0),
    "down": ("lefty", -1.0),
    "pgup": ("righty", 1.0),
    "pgdn": ("righty", -1.0),
    ".": ("rightx", 1.0),
    ",": ("rightx", -1.0),
    "'": ("righttrigger", 1.0),
    ";": ("lefttrigger", 1.0),
}
HELD_KEYS = {"o": "rightshoulder", "c": "leftshoulder"}  # held buttons: the gripper opens / closes while held
PRESS_KEYS = {"m": "x"}  # pressed buttons: m switches joint / Cartesian mode (the gamepad's X)
KEYS_HELP = "arrows x/y, PgUp/PgDn z, , . tool angle, ; ' roll, c o gripper, m joint/Cartesian mode, Ctrl-C stop"


class KeyboardPad:
    """The terminal's keys as a gamepad (``Gamepad``'s ``index``, ``name``, ``state``, ``poll()``, ``close()``).
    ``terminal``: a ``Terminal`` (default: this process's, keys without echo, Ctrl-C kept a signal)."""

    index = "keyboard"
    name = "keyboard"
    gone = "the keyboard's terminal closed (end of input)"  # GamepadLeader's LinkError when it is gone

    def __init__(self, terminal: Terminal | None = None, *, release_s: float | None = None):
        if terminal is None and not sys.stdin.isatty():
            raise BadInputError(
                "the keyboard as a leader reads the keys of the terminal it runs in, and standard input is not a "
                "terminal: run it in one, or give a gamepad or a leader arm"
            )
        self.term = terminal if terminal is not None else Terminal(fullscreen=False, raw=False)
        self.release_override_s = release_s
        self.last: dict[str, float] = {}  # key -> when it last came
        self.until: dict[str, float] = {}  # key -> held until (a tap, or the repeats' release)
        self.gaps: list[float] = []  # recent auto-repeat intervals (s)
        self.state = PadState(t_s=time.monotonic())

    def poll(self) -> PadState:
        """The keys that came since the last poll, and what is held now."""
        presses = []
        for key, t in self.term.keys(0.0):
            if key == "ctrl-c":
                raise KeyboardInterrupt
            if key == "ctrl-d":  # the terminal went away: as a gamepad unplugged
                self.state = PadState(removed=True, t_s=t)
                return self.state
            if key in PRESS_KEYS:
                presses.append(PRESS_KEYS[key])
                continue
            if key not in AXIS_KEYS and key not in HELD_KEYS:
                continue
            gap = t - self.last.get(key, -1e9)
            if gap <= REPEAT_GAP_S:
                self.gaps = (self.gaps + [gap])[-8:]
                self.until[key] = t + release_time(self.gaps, self.release_override_s)
            else:
                self.until[key] = t + max(TAP_S, release_time(self.gaps, self.release_override_s))
            self.last[key] = t
        now = time.monotonic()
        held = {k for k, end in self.until.items() if end > now}
        axes = dict.fromkeys(AXES, 0.0)
        for k in held & AXIS_KEYS.keys():
            axis, way = AXIS_KEYS[k]
            axes[axis] = max(-1.0, min(1.0, axes[axis] + way))
        buttons = frozenset(HELD_KEYS[k] for k in held & HELD_KEYS.keys())
        self.state = PadState(axes, buttons, presses, self.state.removed, now)
        return self.state

    def close(self) -> None:
        self.term.restore()
