"""The open Robot's life: its port lock (taken, or the holder named), a dead run's board let finish, the
Robots still open closed at exit, a Robot nobody holds any more let go by its finalizer."""

from __future__ import annotations

import atexit
import gc
import os
import sys
import time
import weakref

from .bus.backend import FRAME_S, Backend
from .bus.portlock import PortLock
from .errors import LinkError
from .state import PoseStore, suspect

BOARD_WAIT_S = 10.0  # longest wait for the board to be free (another thread's motion stopping)
FILE_WAIT_MAX_S = 3.0  # longest wait read from a file (a journal's "the board plays on"): a few seconds


def _acquire(lock: PortLock) -> None:
    """Take the port's lock. Held in this very process: a Robot nobody holds any more may only wait for the
    garbage collector (then its finalizer lets go); one still held is named, with what to do."""
    try:
        lock.acquire()
        return
    except LinkError as exc:
        first = str(exc)
    deadline = time.monotonic() + 1.0  # a dropped Robot's worker thread lets go of it within 0.1 s
    while True:
        gc.collect()
        try:
            lock.acquire()
            return
        except LinkError:
            pass
        why, named = _held_here(lock.key)
        late = time.monotonic() > deadline
        if why is None:  # no Robot here holds it: another process, or ours being finalized in its worker thread
            if late or f"pid {os.getpid()} " not in first:
                raise LinkError(first)
        elif named or late:
            raise LinkError(why)
        time.sleep(0.05)


def _held_here(key) -> tuple[str | None, bool]:
    """What to say when a Robot of this process holds the port ``key`` (None: another process does), and
    whether a variable holds it. Only a string goes out: an exception that kept the Robot alive would keep the
    port it is about."""
    for robot in list(_OPEN):
        if robot._closed or robot._lock is None or robot._lock.key != key:
            continue
        names = _names_of(robot)
        var = names[0] if names else "robot"
        held = f" (the variable {', '.join(repr(n) for n in names)})" if names else ""
        return (
            f"port {robot.port!r} is in use by pid {os.getpid()}, this process: it is already open by the Robot of arm "
            f"{robot.arm.name!r}{held}, made by an earlier connect() (in a notebook: a cell run before): use that one, "
            "or close it first: "
            f"{var}.close() (or `del {var}`), then connect again; `with armctl.connect(...) as robot:` closes it "
            "for you"
        ), bool(names)
    return None, False


def _names_of(obj) -> list[str]:
    """The names that hold ``obj`` in the frames that called armctl (a notebook's or a script's globals)."""
    names: list[str] = []
    frame = sys._getframe(1)
    while frame is not None:
        if not frame.f_globals.get("__name__", "").startswith("armctl"):
            for scope in (frame.f_locals, frame.f_globals):
                for k, v in list(scope.items()):
                    if v is obj and not k.startswith("_") and k not in names:
                        names.append(k)
        frame = frame.f_back
    return names


def _let_a_dead_run_finish(store: PoseStore) -> None:
    """After an unclean end, the board may still be playing what the dead run sent (until its queue or its
    watchdog runs out). Opening a real Uno's port resets it: not before the journaled pose is reached. A wait read
    from a file is capped (``FILE_WAIT_MAX_S``); a journal whose times cannot be true (``state.suspect``) is not
    waited on at all (its pose is not trusted either: ``PoseStore.checked``)."""
    stored = store.load()
    if stored is not None and not stored.clean and not suspect(stored):
        wait = stored.time_s + stored.hold_in_s - time.time()
        if wait > 0:
            time.sleep(min(wait + 2 * FRAME_S, FILE_WAIT_MAX_S))


_OPEN: weakref.WeakSet = weakref.WeakSet()  # every Robot open in this process


@atexit.register
def _close_at_exit() -> None:
    """A script that ends with a Robot still open (no ``with``, no ``close()``) would leave a motion to be
    cut off mid-stream by the interpreter: stop it under control and release the port instead."""
    for robot in list(_OPEN):
        if robot._closed:
            continue
        if robot.moving:
            print(
                f"armctl: the program ended while the arm on {robot.port} was moving: stopped under control "
                "(wait() for a motion, or close() the Robot, to end where you meant)",
                file=sys.stderr,
            )
        try:
            robot.close()
        except Exception:  # noqa: BLE001 - exiting: nothing left to tell
            pass


def _let_go(
    backend: Backend, store: PoseStore, lock: PortLock | None, live: PoseStore | None = None, runs=None
) -> None:
    """A Robot that became unreachable without ``close()``: close its board and release its port, so the same
    process (a notebook) can connect again. No motion plays (a playing motion holds the Robot); the board holds
    the pose it was last sent, which was stored when that motion ended."""
    try:
        backend.close()
    except Exception:  # noqa: BLE001 - a finalizer has nobody to tell
        pass
    finally:
        store.close()
        if live is not None:
            live.close()
        if runs is not None:
            runs.close()
        if lock is not None:
            lock.release()
