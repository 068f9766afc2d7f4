"""One port, one process: a lock file per port in the state folder, naming its holder.

A second armctl on a port already open (a ``status`` while a ``run`` streams) would send its handshake
into the running stream and kill it. ``PortLock`` takes an exclusive lock on ``<state>/locks/<port>.lock``
before the port is opened (through ``filelock``: ``flock`` on POSIX, ``LockFileEx`` on Windows, so every OS
has the same rule) and writes the holder's pid and command line beside it (``.holder``: Windows lets no
other process read a locked file); a second process (or a second handle in the same process) is refused
at once with the holder named. The OS drops the lock when the holder exits, however it exits. The files go
when the lock is let go. Device paths are also opened
with pyserial's ``exclusive=True`` (see ``backend.open_port``), which keeps out programs that are not
armctl; the lock file covers pyserial URLs (``socket://``, ``armsim://``) and Firmata, whose library
opens the port itself.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import sys
import urllib.parse
from pathlib import Path

from armctl.core.paths import state_dir
from armctl.errors import LinkError, write_error

# URL schemes whose every open is a private port: nothing to share, nothing to lock.
_PRIVATE_SCHEMES = {"loop"}


def port_key(url: str) -> str | None:
    """What identifies the physical (or simulated) port behind ``url``; None if it cannot be shared.

    A device path by its real path (``/dev/serial/by-id/...`` and ``/dev/ttyACM0`` are one port); a
    simulator by the state file that holds its servos (else the whole URL); ``spy://PORT`` by PORT; other
    URLs by scheme and address."""
    parts = urllib.parse.urlsplit(url)
    com = re.fullmatch(r"(?:\\\\\.\\)?(COM\d+)", url.strip(), re.IGNORECASE)
    if com:  # a Windows serial port: COM3 and \\.\COM3 are one port, from whichever folder
        return com.group(1).upper()
    if not parts.scheme or len(parts.scheme) == 1:  # a path (C:\\... has a one-letter "scheme")
        return os.path.realpath(url)
    scheme = parts.scheme.lower()
    if scheme in _PRIVATE_SCHEMES:
        return None
    if scheme == "spy":
        inner = url.split("://", 1)[1].split("?", 1)[0]
        return port_key(inner) if inner else None
    if scheme.endswith("sim"):
        state = urllib.parse.parse_qs(parts.query).get("state")
        if state:
            return f"{scheme}:{os.path.realpath(state[-1])}"
        return url
    return f"{scheme}://{parts.netloc}{parts.path}"


def _lock_name(key: str) -> str:
    slug = re.sub(r"[^A-Za-z0-9._-]+", "_", key).strip("_")[-60:]
    return f"{slug}-{hashlib.sha1(key.encode()).hexdigest()[:10]}.lock"


def _holder_text() -> str:
    argv = " ".join(sys.argv) if sys.argv and sys.argv[0] else "python"
    return f"pid {os.getpid()} ({argv[:200]})"


class PortLock:
    """The lock of one port; ``acquire()`` raises LinkError naming the holder if another has it."""

    def __init__(self, url: str):
        self.url = url
        self.key = port_key(url)
        self.path: Path | None = None if self.key is None else state_dir() / "locks" / _lock_name(self.key)
        self._lock = None

    @property
    def holder_path(self) -> Path | None:
        """The file naming the holder (beside the lock file)."""
        return None if self.path is None else self.path.with_name(self.path.name + ".holder")

    def acquire(self) -> None:
        """Take the lock (nothing to do for a private port); LinkError naming the holder if it is taken."""
        if self.path is None or self._lock is not None:
            return
        import filelock  # 20 ms to import: only commands that open a port pay it

        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            lock = filelock.FileLock(self.path, timeout=0, thread_local=False)
            lock.acquire()
        except filelock.Timeout:
            holder = ""
            with contextlib.suppress(OSError):
                holder = self.holder_path.read_text(encoding="utf-8", errors="replace").strip()[:400]
            raise LinkError(
                f"port {self.url!r} is in use by {holder or 'another armctl'}: one program at a time on a port"
            ) from None
        except OSError as exc:
            raise write_error(
                f"cannot lock port {self.url!r}: cannot write the state folder {self.path.parent} "
                f"({exc.strerror or exc}); set ARMCTL_STATE_DIR to a writable folder",
                exc,
            ) from None
        with contextlib.suppress(OSError):
            self.holder_path.write_text(_holder_text() + "\n", encoding="utf-8")
        self._lock = lock

    def release(self) -> None:
        """Drop the lock and remove its files (removed while still held: a program that opened the old file
        meanwhile finds it gone once it has the lock, and takes a new one; filelock checks for that)."""
        lock, self._lock = self._lock, None
        if lock is None:
            return
        for path in (self.holder_path, self.path):
            with contextlib.suppress(OSError):
                os.unlink(path)
        with contextlib.suppress(OSError):
            lock.release()

    @property
    def held(self) -> bool:
        """True while this object holds the lock."""
        return self._lock is not None

    def __enter__(self) -> PortLock:
        self.acquire()
        return self

    def __exit__(self, *exc) -> None:
        self.release()
