"""Keys on the terminal while a motion plays, as a CNC controller's feed hold, cycle start and overrides:
Space = feed hold, Enter or ``r`` = resume, ``+`` / ``-`` = speed override 10..200 %, ``q`` = stop.

``RunKeys(control, stop)`` is a context manager any command that plays for a while can wrap its motion in
(``armctl run``; ``armctl follow`` may too): on a terminal it puts stdin in cbreak mode (Ctrl-C still
interrupts), reads keys in a thread and acts on ``control`` (an ``armctl.robot.runcontrol.RunControl``) and calls
``stop()`` for ``q``; it restores the terminal when the block ends, whatever happens. Not on a terminal it
does nothing.
"""

from __future__ import annotations

import contextlib
import os
import select
import sys
import threading
from collections.abc import Callable

HELP = "Space hold, Enter resume, +/- speed, q stop"


class RunKeys:
    """Feed hold / resume / override / stop from the keys of the terminal on ``stream`` (default stdin)."""

    def __init__(self, control, stop: Callable[[], None], *, stream=None):
        self.control, self.stop = control, stop
        self.stream = stream if stream is not None else sys.stdin
        self.active = False
        self.stopped = False  # q was pressed
        self._saved = None
        self._term = None  # Windows: an armctl.core.terminal.Terminal
        self._thread: threading.Thread | None = None
        self._quit = threading.Event()

    def __enter__(self) -> RunKeys:
        try:
            fd = self.stream.fileno()
        except (AttributeError, OSError, ValueError):
            return self
        if not os.isatty(fd):
            return self
        if (
            sys.platform == "win32"
        ):  # the console's keys through msvcrt (armctl.core.terminal); Ctrl-C stays the console's
            from armctl.core.terminal import Terminal

            try:
                self._term = Terminal(fullscreen=False)
            except (ImportError, OSError):
                return self
        else:
            try:
                import termios
                import tty
            except ImportError:  # no terminal control here: the run plays without keys
                return self
            try:
                self._saved = termios.tcgetattr(fd)
                tty.setcbreak(fd)  # keys one at a time, no echo, output as it was; Ctrl-C still interrupts
            except (OSError, termios.error):
                return self
        self._fd = fd
        self.active = True
        self._thread = threading.Thread(target=self._read, name="armctl-run-keys", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._quit.set()
        if self._thread is not None:
            self._thread.join(timeout=1.0)
        if self._saved is not None:
            import termios

            with contextlib.suppress(termios.error, OSError):
                termios.tcsetattr(self._fd, termios.TCSADRAIN, self._saved)
            self._saved = None
        if self._term is not None:
            self._term.restore()
            self._term = None
        self.active = False

    def press(self, key: str) -> None:
        """Act on one key (also for tests and other front ends)."""
        ctl = self.control
        if key == " ":
            ctl.pause()
        elif key in ("\r", "\n", "enter", "r", "R"):
            ctl.resume()
        elif key in ("+", "="):
            ctl.faster()
        elif key in ("-", "_"):
            ctl.slower()
        elif key in ("q", "Q"):
            self.stopped = True
            ctl.resume()
            self.stop()

    def _read(self) -> None:
        if self._term is not None:
            while not self._quit.is_set() and not self._term.closed:
                for key, _ in self._term.keys(0.05):
                    self.press(key)
            return
        while not self._quit.is_set():
            try:
                ready, _, _ = select.select([self._fd], [], [], 0.05)
                if not ready:
                    continue
                data = os.read(self._fd, 32)
            except (OSError, ValueError):
                return
            if not data:
                return
            for ch in data.decode("latin-1"):
                self.press(ch)
