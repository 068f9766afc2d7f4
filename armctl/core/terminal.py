"""The terminal of the interactive commands (the pendant, ``calibrate``, ``teach``): keys one at a time with
no echo, and full-screen redraws, the same on every OS.

- **POSIX** (Linux, macOS, over SSH too): the terminal in raw mode (``termios``/``tty``), keys read from
  stdin's descriptor with ``select`` (on a terminal, which every POSIX ``select`` takes), escape sequences
  decoded (``decode_keys``).
- **Windows** (10 and later): keys from ``msvcrt`` (no echo, no line buffering; arrows and PgUp/PgDn come
  as a prefix byte and a code), the console's VT processing switched on for the screen (so the same escape
  sequences draw it), and put back as it was on exit. Ctrl-C stays the console's: a KeyboardInterrupt,
  which the commands handle as they handle the Ctrl-C key.

Key names: ``up``, ``down``, ``left``, ``right``, ``pgup``, ``pgdn``, ``enter``, ``escape``, ``backspace``,
``ctrl-c``, ``ctrl-d`` (end of input: the terminal went away), or the character itself. The standard library
has what each OS needs; no curses (Windows has none) and no extra package.
"""

from __future__ import annotations

import os
import sys
import time

REPEAT_GAP_S = 0.12  # a second event of one key this soon after the first is the terminal's auto-repeat
RELEASE_MIN_S, RELEASE_MAX_S, RELEASE_FACTOR = 0.05, 0.25, 2.0


def release_time(gaps, override_s: float | None) -> float:
    """How long after a held key's last repeat it counts as released (s): ``override_s``, else twice the
    longest of the recent repeat intervals, within 50..250 ms (a terminal sends no key-up)."""
    if override_s is not None:
        return override_s
    seen = max(gaps, default=0.0)
    return min(RELEASE_MAX_S, max(RELEASE_MIN_S, RELEASE_FACTOR * seen))


_SEQUENCES = {
    b"\x1b[A": "up",
    b"\x1b[B": "down",
    b"\x1b[C": "right",
    b"\x1b[D": "left",
    b"\x1bOA": "up",
    b"\x1bOB": "down",
    b"\x1bOC": "right",
    b"\x1bOD": "left",
    b"\x1b[5~": "pgup",
    b"\x1b[6~": "pgdn",
}
_SINGLE = {
    b"\r": "enter",
    b"\n": "enter",
    b"\x03": "ctrl-c",
    b"\x04": "ctrl-d",
    b"\x7f": "backspace",
    b"\x08": "backspace",
}
#: Windows console keys that come as a prefix (0x00 or 0xE0) and a code (msvcrt.getwch's second call).
WINDOWS_KEYS = {"H": "up", "P": "down", "K": "left", "M": "right", "I": "pgup", "Q": "pgdn"}
ENABLE_VIRTUAL_TERMINAL_PROCESSING = 0x0004
STD_OUTPUT_HANDLE = -11


def decode_keys(buf: bytes, *, final: bool = False) -> tuple[list[str], bytes]:
    """Split terminal input into keys: ('up', 'pgdn', 'enter', 'escape', 'ctrl-c', 'a', ...) and the bytes of
    an escape sequence not complete yet (kept for the next read; with ``final`` a lone ESC is the Escape
    key). Unknown escape sequences are dropped whole."""
    keys: list[str] = []
    i = 0
    while i < len(buf):
        b = buf[i : i + 1]
        if b != b"\x1b":
            if b == b"\r" and buf[i + 1 : i + 2] == b"\n":
                i += 1  # CR LF is one Enter
            keys.append(_SINGLE.get(b, b.decode("latin-1")))
            i += 1
            continue
        rest = buf[i:]
        if len(rest) == 1:
            if final:
                keys.append("escape")
                i += 1
                continue
            return keys, rest
        if rest[1:2] not in (b"[", b"O"):
            keys.append("escape")  # ESC then a plain key
            i += 1
            continue
        j = 2
        while j < len(rest) and not (0x40 <= rest[j] <= 0x7E):  # CSI parameters until the final byte
            j += 1
        if j >= len(rest):
            if final:
                return keys, b""
            return keys, rest
        seq = rest[: j + 1]
        name = _SEQUENCES.get(seq)
        if name is not None:
            keys.append(name)
        i += j + 1
    return keys, b""


def windows_key(first: str, read_next) -> str:
    """The name of a key from ``msvcrt.getwch()``: ``first`` and, for a prefixed key, ``read_next()``."""
    if first in ("\x00", "\xe0"):
        return WINDOWS_KEYS.get(read_next(), "unknown")
    return _SINGLE.get(first.encode("latin-1", "replace"), "escape" if first == "\x1b" else first)


class _PosixInput:
    """Raw keys from a POSIX terminal."""

    def __init__(self, fd: int | None, raw: bool = True):
        import termios
        import tty

        self._termios = termios
        self.fd = sys.stdin.fileno() if fd is None else fd
        self.saved = termios.tcgetattr(self.fd)
        self._pending = b""
        if raw:
            tty.setraw(self.fd)
        else:  # keys one at a time, no echo; Ctrl-C still a signal and newlines still newlines (others print)
            tty.setcbreak(self.fd)

    def read(self, timeout_s: float) -> tuple[list[str], bool]:
        """(keys that arrive within ``timeout_s``, end of input)."""
        import select

        if not select.select([self.fd], [], [], timeout_s)[0]:
            if self._pending:  # a lone ESC that nothing followed
                keys, self._pending = decode_keys(self._pending, final=True)
                return keys, False
            return [], False
        try:
            data = os.read(self.fd, 4096)
        except OSError:
            data = b""
        if not data:
            return [], True
        keys, self._pending = decode_keys(self._pending + data)
        if self._pending and not select.select([self.fd], [], [], 0.03)[0]:
            more, self._pending = decode_keys(self._pending, final=True)
            keys += more
        return keys, False

    def restore(self) -> None:
        self._termios.tcsetattr(self.fd, self._termios.TCSADRAIN, self.saved)


class _WindowsInput:
    """Keys from the Windows console (``msvcrt``), and VT sequences on for the screen."""

    POLL_S = 0.01

    def __init__(self, msvcrt=None, kernel32=None):
        if msvcrt is None:
            import msvcrt
        self.msvcrt = msvcrt
        self.kernel32 = kernel32
        self._saved_mode = None
        self._enable_vt()

    def _enable_vt(self) -> None:
        """Windows 10+ consoles draw VT escape sequences once asked to (older ones print them as text)."""
        k = self.kernel32
        if k is None:
            try:
                import ctypes

                k = self.kernel32 = ctypes.windll.kernel32
            except (ImportError, AttributeError, OSError):
                return
        import ctypes

        handle = k.GetStdHandle(STD_OUTPUT_HANDLE)
        mode = ctypes.c_uint32()
        if not k.GetConsoleMode(handle, ctypes.byref(mode)):
            return  # not a console (redirected): nothing to switch
        self._saved_mode = (handle, mode.value)
        k.SetConsoleMode(handle, mode.value | ENABLE_VIRTUAL_TERMINAL_PROCESSING)

    def read(self, timeout_s: float) -> tuple[list[str], bool]:
        deadline = time.monotonic() + timeout_s
        while not self.msvcrt.kbhit():
            left = deadline - time.monotonic()
            if left <= 0:
                return [], False
            time.sleep(min(self.POLL_S, left))
        keys = []
        while self.msvcrt.kbhit():
            keys.append(windows_key(self.msvcrt.getwch(), self.msvcrt.getwch))
        return keys, False

    def restore(self) -> None:
        if self._saved_mode is not None and self.kernel32 is not None:
            handle, mode = self._saved_mode
            self.kernel32.SetConsoleMode(handle, mode)


class Terminal:
    """Keys with their arrival times, and full-screen redraws; ``fullscreen`` draws on the alternate screen
    (the screen the user had comes back on exit) with the cursor hidden. ``restore()`` puts everything back
    (safe to call twice, and on a terminal that went away). ``raw=False``: keys one at a time without echo, but
    Ctrl-C stays a signal and output stays cooked (where another program prints beside the keys: LeRobot's loop).
    ``platform``, ``msvcrt``, ``kernel32``: for tests."""

    def __init__(
        self,
        *,
        fullscreen: bool = True,
        fd_in: int | None = None,
        out=None,
        raw: bool = True,
        platform: str | None = None,
        msvcrt=None,
        kernel32=None,
    ):
        self.out = out or sys.stdout
        self.fullscreen = fullscreen
        self.closed = False
        windows = (platform or sys.platform) == "win32"
        self.input = _WindowsInput(msvcrt, kernel32) if windows else _PosixInput(fd_in, raw)
        self._restored = False
        if fullscreen:
            self._write("\x1b[?1049h\x1b[?25l")

    def _write(self, text: str) -> None:
        try:
            self.out.write(text)
            self.out.flush()
        except OSError:
            self.closed = True

    def restore(self) -> None:
        """Back to the terminal as it was."""
        if self._restored:
            return
        self._restored = True
        self._write("\x1b[?25h\x1b[?1049l" if self.fullscreen else "\r\n")
        try:
            self.input.restore()
        except Exception:  # noqa: BLE001 - a terminal that went away (termios.error, OSError)
            self.closed = True

    def keys(self, timeout_s: float) -> list[tuple[str, float]]:
        """The keys that arrive within ``timeout_s`` (all that are waiting, or none), each with the
        ``time.monotonic()`` it was read at. End of input reads as 'ctrl-d'."""
        if self.closed:
            return [("ctrl-d", time.monotonic())]
        keys, ended = self.input.read(timeout_s)
        now = time.monotonic()
        if ended:
            self.closed = True
            return [("ctrl-d", now)]
        return [(k, now) for k in keys]

    def key(self, timeout_s: float | None = None) -> str | None:
        """The next key, or None after ``timeout_s`` (None: wait for one) without one. Keys that came
        together are handed out one a call."""
        if not hasattr(self, "_queue"):
            self._queue: list[str] = []
        while not self._queue:
            got = self.keys(3600.0 if timeout_s is None else timeout_s)
            self._queue += [k for k, _ in got]
            if timeout_s is not None and not got:
                return None
        return self._queue.pop(0)

    def draw(self, lines: list[str]) -> None:
        """Redraw the whole screen: each line cleared to its end, the rest of the screen cleared. A terminal
        that went away (the SSH link dropped) reads as 'ctrl-d' next."""
        self._write("\x1b[H" + "".join(line + "\x1b[K\r\n" for line in lines) + "\x1b[J")
