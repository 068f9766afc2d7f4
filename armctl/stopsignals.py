"""What stops armctl under control from outside, on each operating system, and the exit code it gives.

Every one of these is turned into ``armctl.errors.Terminated`` (a KeyboardInterrupt) in the main thread:
the same controlled stop as Ctrl-C (the arm holds its pose, the port is released), then the exit code.

| OS | what | exit |
|---|---|---|
| all | Ctrl-C (SIGINT) | 130 |
| POSIX | SIGTERM (systemd, ``timeout``, ``kill``) | 143 |
| POSIX | SIGHUP (the terminal or SSH session closed) | 129 |
| Windows | Ctrl-Break (SIGBREAK) | 149 |
| Windows | the console window closed, log-off, shut-down (console control events) | 129, as SIGHUP |

Windows gives a process 5 s after a console window closes: the handler of that event waits until the
controlled stop is done (``armctl.cli`` calls ``stopped()`` on the way out), at most 4.5 s.
"""

from __future__ import annotations

import signal
import sys
import threading

#: Console control events (wincon.h) that end a Windows console program: window closed, log-off, shut-down.
CTRL_CLOSE_EVENT, CTRL_LOGOFF_EVENT, CTRL_SHUTDOWN_EVENT = 2, 5, 6
HANGUP_EXIT = 129  # a terminal that went away: SIGHUP on POSIX, the console closed on Windows

_done = threading.Event()


def stop_signals() -> list[int]:
    """The signals this OS has that should stop armctl under control (besides SIGINT)."""
    names = ("SIGTERM", "SIGHUP", "SIGBREAK")
    return [getattr(signal, n) for n in names if hasattr(signal, n)]


def signal_name(signum: int) -> str:
    """``SIGTERM`` for 15, and so on; ``signal N`` for a number this OS does not name."""
    try:
        return signal.Signals(signum).name
    except ValueError:
        return f"signal {signum}"


def install(handler) -> callable:
    """Route every stop signal (and on Windows the console's close events) to ``handler(signum, frame)``.
    Returns a function that puts the previous handlers back; does nothing outside the main thread."""
    previous = {}
    for sig in stop_signals():
        try:
            previous[sig] = signal.signal(sig, handler)
        except ValueError:  # not the main thread: leave them alone
            return lambda: None
    console = _watch_console() if sys.platform == "win32" else None

    def restore() -> None:
        for sig, old in previous.items():
            signal.signal(sig, old)
        if console is not None:
            console()

    return restore


def stopped() -> None:
    """The controlled stop is done: a console close event waiting for it may let Windows end the process."""
    _done.set()


def console_event(event: int, interrupt_main=None) -> bool:
    """What a console control event does (Windows; called on the system's handler thread): a close,
    log-off or shut-down stops the program as a hang-up does (``Terminated`` with exit 129, raised in the
    main thread), then waits up to 4.5 s for the stop to finish. Other events (Ctrl-C, Ctrl-Break) are
    left to the signal handlers. Returns True if the event was handled."""
    if event not in (CTRL_CLOSE_EVENT, CTRL_LOGOFF_EVENT, CTRL_SHUTDOWN_EVENT):
        return False
    if interrupt_main is None:
        import _thread

        interrupt_main = _thread.interrupt_main
    _hangup.set()
    interrupt_main(signal.SIGINT)  # the main thread raises; the CLI's handler sees _hangup and says 129
    _done.wait(4.5)
    return True


_hangup = threading.Event()


def hung_up() -> bool:
    """True once a console close (Windows) asked the program to stop: it exits 129, as after SIGHUP."""
    return _hangup.is_set()


def _watch_console():
    """Register ``console_event`` with the Windows console (SetConsoleCtrlHandler); returns the undo."""
    import ctypes
    from ctypes import wintypes

    routine = ctypes.WINFUNCTYPE(wintypes.BOOL, wintypes.DWORD)(lambda event: bool(console_event(int(event))))
    kernel32 = ctypes.WinDLL("kernel32", use_last_error=True)
    if not kernel32.SetConsoleCtrlHandler(routine, True):
        return None

    def undo() -> None:
        kernel32.SetConsoleCtrlHandler(routine, False)

    undo.routine = routine  # keep the callback alive as long as it is registered
    return undo
