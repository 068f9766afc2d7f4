"""Windows' missing pieces, taken away on Linux: ``ARMCTL_TEST_NO_POSIX=1`` with this folder on PYTHONPATH
(``tests/run_portable.sh --without-posix``; every Python process the tests start inherits both).

What Windows lacks and armctl must not touch there:
- the modules ``fcntl``, ``termios``, ``tty``, ``pty``, ``resource``: importing them *from armctl* raises
  ImportError, as on Windows (pyserial, pytest and the standard library still get them: on Windows they
  take their own Windows paths, which this cannot imitate);
- the POSIX-only signals (``signal.SIGHUP``, ``SIGUSR1``, ``SIGUSR2``, ``SIGALRM``, ``SIGQUIT``) are gone
  from the ``signal`` module, and ``signal.SIGBREAK`` (Windows' Ctrl-Break) exists;
- ``select.select`` on anything but a socket raises, as Windows' does (WSAENOTSOCK), when armctl calls it;
- ``os.pread``, ``os.pwrite``, ``os.posix_fallocate`` (macOS lacks it too) and ``os.fchmod`` are gone;
- a wait without a timeout in the main thread (``Thread.join()``, ``Event.wait()``, ``Condition.wait()``,
  ``Future.result()``/``exception()``, ``Queue.get()``) raises when armctl calls it: on Windows before Python
  3.14 such a wait cannot be interrupted, so Ctrl-C, Ctrl-Break or a closing console would not stop armctl
  until it ends (``armctl.core.stopsignals.join``/``result`` wait in slices instead).
"""

from __future__ import annotations

import os
import sys

BLOCKED = ("fcntl", "termios", "tty", "pty", "resource")


def _from_armctl(depth: int = 2) -> bool:
    """True if the code that called (skipping the import machinery and this module) belongs to armctl."""
    f = sys._getframe(depth)
    while f is not None:
        name = f.f_globals.get("__name__", "")
        if not (name.startswith(("importlib", "_frozen_importlib")) or name == __name__):
            return name == "armctl" or name.startswith("armctl.")
        f = f.f_back
    return False


class _Blocker:
    """A meta path finder that refuses the POSIX-only modules to armctl."""

    def find_spec(self, fullname, path=None, target=None):
        if fullname in BLOCKED and _from_armctl():
            raise ImportError(f"No module named {fullname!r} (blocked: armctl on Windows has no {fullname})")
        return None


def _install() -> None:
    import select
    import signal
    import socket

    sys.meta_path.insert(0, _Blocker())
    # a module armctl imported before this ran would be found in sys.modules: none is (site runs first)
    for name in ("SIGHUP", "SIGUSR1", "SIGUSR2", "SIGALRM", "SIGQUIT"):
        if hasattr(signal, name):
            delattr(signal, name)
    if not hasattr(signal, "SIGBREAK"):
        signal.SIGBREAK = 21  # Windows' number; Python has no such signal on Linux, so nothing raises it
    for name in ("pread", "pwrite", "posix_fallocate", "fchmod"):
        if hasattr(os, name):
            delattr(os, name)
    real_select = select.select

    def select_sockets_only(r, w, x, *timeout):
        if _from_armctl():
            for obj in (*r, *w, *x):
                if not isinstance(obj, socket.socket):
                    raise OSError(10038, "An operation was attempted on something that is not a socket")
        return real_select(r, w, x, *timeout)

    select.select = select_sockets_only
    _untimed_waits_raise()


def _untimed_waits_raise() -> None:
    import concurrent.futures
    import queue
    import threading

    def guard(cls, name, timeout_at, blocking_at=None, blocks=lambda self: True):
        real = getattr(cls, name)

        def wait(self, *args, **kwargs):
            pos = list(args)
            timeout = kwargs.get("timeout", pos[timeout_at] if len(pos) > timeout_at else None)
            blocking = True
            if blocking_at is not None:
                blocking = kwargs.get("block", pos[blocking_at] if len(pos) > blocking_at else True)
            if (
                timeout is None
                and blocking
                and threading.current_thread() is threading.main_thread()
                and _from_armctl(2)
                and blocks(self)
            ):
                raise RuntimeError(
                    f"{cls.__name__}.{name}() without a timeout in the main thread: Windows (Python < 3.14) lets "
                    "no Ctrl-C through it (armctl.core.stopsignals.join/result wait in slices)"
                )
            return real(self, *args, **kwargs)

        setattr(cls, name, wait)

    guard(threading.Thread, "join", 0, blocks=lambda t: t.is_alive())
    guard(threading.Event, "wait", 0, blocks=lambda e: not e.is_set())
    guard(threading.Condition, "wait", 0)
    guard(concurrent.futures.Future, "result", 0, blocks=lambda f: not f.done())
    guard(concurrent.futures.Future, "exception", 0, blocks=lambda f: not f.done())
    guard(queue.Queue, "get", 1, blocking_at=0, blocks=lambda q: q.empty())


if os.environ.get("ARMCTL_TEST_NO_POSIX") == "1":
    _install()
