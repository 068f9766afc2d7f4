"""What stops armctl under control from outside, on each operating system, and the exit code it gives.

Every one of these is turned into ``armctl.errors.Terminated`` (a KeyboardInterrupt) in the main thread:
the same controlled stop as Ctrl-C (the arm holds its pose, the port is released), then the exit code.

| OS | what | exit |
|---|---|---|
| all | Ctrl-C (SIGINT) | 130 |
| POSIX | SIGTERM (systemd, ``timeout``, ``kill``) | 143 |
| POSIX | SIGHUP (the terminal or SSH session closed) | 129 |
| Windows | Ctrl-Break (SIGBREAK) | 149 |
| Windows | the console window closed (a console control event; log-off and shut-down: services only) | 129 |

Windows gives a process 5 s after a console window closes, and ends it as soon as the handler of that event
returns (Microsoft's HandlerRoutine docs). So the handler starts the controlled stop, and then does not return
within ``CLOSE_WAIT_S``: the main thread, its stop done (``armctl.cli`` calls ``stopped()`` on the way out),
ends the process itself with its own exit code (129); only if it has not by then does Windows end it.

Every one of these lands in the main thread, which must be able to take it: on Windows before Python 3.14 a
wait on a lock without a timeout (``Thread.join()``, ``Future.result()``, ``Event.wait()``) cannot be
interrupted, so Ctrl-C would wait until the thread or motion waited for is over. The main thread waits in
slices instead (``join``, ``result``): a signal handler runs between two of them.
"""

from __future__ import annotations

import signal
import sys
import threading
import time

#: Console control events (wincon.h) that end a Windows console program: window closed, log-off, shut-down.
CTRL_CLOSE_EVENT, CTRL_LOGOFF_EVENT, CTRL_SHUTDOWN_EVENT = 2, 5, 6
HANGUP_EXIT = 129  # a terminal that went away: SIGHUP on POSIX, the console closed on Windows

_done = threading.Event()
#: How long the console close handler keeps Windows from ending the process (it allows 5 s in all).
CLOSE_WAIT_S = 4.5
#: How long one slice of a main-thread wait lasts: the most a stop signal waits for its handler to run.
WAIT_SLICE_S = 0.1


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
    main thread); this thread then stays ``CLOSE_WAIT_S`` (module docstring: returning lets Windows end the
    process at once, with its own exit code). Other events (Ctrl-C, Ctrl-Break) are left to the signal
    handlers. Returns True if the event was handled."""
    if event not in (CTRL_CLOSE_EVENT, CTRL_LOGOFF_EVENT, CTRL_SHUTDOWN_EVENT):
        return False
    if interrupt_main is None:
        import _thread

        interrupt_main = _thread.interrupt_main
    deadline = time.monotonic() + CLOSE_WAIT_S
    _hangup.set()
    interrupt_main(signal.SIGINT)  # the main thread raises; the CLI's handler sees _hangup and says 129
    _done.wait(CLOSE_WAIT_S)  # the controlled stop
    threading.Event().wait(max(0.0, deadline - time.monotonic()))  # the main thread's own exit ends this one
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


def join(thread: threading.Thread, timeout: float | None = None) -> None:
    """``thread.join(timeout)`` that Ctrl-C and the stop signals interrupt on every OS (module docstring)."""

    def slice_(seconds: float) -> bool:
        thread.join(seconds)
        return not thread.is_alive()

    _sliced(slice_, timeout)


def result(future, timeout: float | None = None):
    """``future.result(timeout)`` (a ``concurrent.futures.Future``) that Ctrl-C and the stop signals interrupt
    on every OS; ``concurrent.futures.TimeoutError`` after ``timeout`` as ``result`` raises it."""
    from concurrent.futures import TimeoutError as FutureTimeout

    deadline = None if timeout is None else time.monotonic() + timeout
    while True:
        left = WAIT_SLICE_S if deadline is None else min(WAIT_SLICE_S, deadline - time.monotonic())
        try:
            return future.result(max(0.0, left))
        except FutureTimeout:
            if deadline is not None and time.monotonic() >= deadline:
                raise


def _sliced(wait_slice, timeout: float | None) -> bool:
    """Call ``wait_slice(seconds)`` until it returns True or ``timeout`` passes; True if it did."""
    deadline = None if timeout is None else time.monotonic() + timeout
    while True:
        left = WAIT_SLICE_S if deadline is None else min(WAIT_SLICE_S, deadline - time.monotonic())
        if wait_slice(max(0.0, left)):
            return True
        if deadline is not None and time.monotonic() >= deadline:
            return False
