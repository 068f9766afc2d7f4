"""The open Robot's life: its port lock (taken, or the holder named), a dead run's board let finish, the
Robots still open closed at exit, a Robot nobody holds any more let go by its finalizer."""

from __future__ import annotations

import atexit
import gc
import os
import sys
import time
import weakref

from armctl.bus.backend import FRAME_S, Backend
from armctl.bus.portlock import PortLock
from armctl.core.holders import OWN, UNSEEN, Holder, holders
from armctl.errors import LinkError, write_error
from armctl.robot.servowatch import watch_limits
from armctl.robot.state import PoseStore, suspect

BOARD_WAIT_S = 10.0  # longest wait for the board to be free (another thread's motion stopping)
HOLD_WAIT_S = 3.0  # longest wait for a motion taken over to come to rest along its path (then it is stopped)
FILE_WAIT_MAX_S = 3.0  # longest wait read from a file (a journal's "the board plays on"): a few seconds


def check_open(robot) -> None:
    """LinkError if ``robot`` is closed."""
    if robot.closed:
        raise LinkError(f"the robot on {robot.port} is closed")


def acquire(lock: PortLock) -> None:
    """Take the port's lock. Held in this very process by a Robot nobody can use any more (kept only by the last
    error's traceback, the prompt's output history, its own worker thread): take it over, closing it under
    control, and say so. One that a variable or running code still holds is named, with the call that frees it."""
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
        late = time.monotonic() > deadline
        verdict = _held_here(lock.key, wait=not late)
        if verdict is None:  # no Robot here holds it: another process, or ours being finalized in its worker thread
            if late or f"pid {os.getpid()} " not in first:
                raise LinkError(first)
        elif verdict not in ("taken over", "waiting"):
            raise LinkError(verdict)
        if verdict is None or verdict == "waiting":
            time.sleep(0.05)


def _held_here(key, *, wait: bool) -> str | None:
    """About the Robot of this process on port ``key``: None if there is none; "taken over" once it is closed
    (nobody could use it any more); "waiting" (``wait``: its idle worker thread, or the next collection, lets go
    of it in a moment); else why not, naming what holds it. Only a string goes out: an exception that kept the
    Robot alive would keep the port it is about."""
    robot = next((r for r in list(OPEN_ROBOTS) if not r.closed and r._lock is not None and r._lock.key == key), None)
    if robot is None:
        return None
    worker = robot.runner.thread
    if wait and not robot.moving and worker is not None and worker.is_alive():
        return "waiting"  # an idle worker ends within 0.1 s: what it held then is gone
    peek = robot._finalizer.peek()  # (robot, func, args, kwargs); None if being closed meanwhile
    finalizer_args = peek[2] if peek is not None else None
    del peek  # it holds the Robot: it would be taken for a holder
    found = holders(robot, own=[worker, finalizer_args])
    usable = [h for h in found if h.usable]
    if usable:
        return _refusal(robot, _first(usable))
    if not found:  # nothing but this very call holds it: the next collection lets it go; if not, in doubt
        return "waiting" if wait else _refusal(robot, Holder(UNSEEN, usable=True))
    _take_over(robot, found)
    return "taken over"


def _first(usable: list[Holder]) -> Holder:
    """The holder to name: a variable before running code, before what armctl cannot see."""
    return min(usable, key=lambda h: (h.name is None, not h.live))


def _refusal(robot, h: Holder) -> str:
    """Why ``robot`` cannot be taken over: held by ``h``, and the one call that frees it."""
    head = (
        f"port {robot.port!r} is in use by pid {os.getpid()}, this process: the Robot of arm {robot.arm.name!r} "
        f"made by an earlier connect() (in a notebook: a cell run before) is still held by {h.what}"
    )
    if h.live:
        return (
            f"{head}: armctl takes over no Robot that running code uses; let that code finish or close the Robot "
            "there, then connect again"
        )
    if h.reach is not None:
        held = f" (as {h.reach})" if h.reach != h.name else ""
        return f"{head}{held}: use that Robot, or {h.reach}.close() to free the port, then connect again"
    if h.name is not None:
        return f"{head}: `del {h.name}` lets it go, then connect again"
    return f"{head}: close that Robot (its .close()) where you hold it, or restart Python (in a notebook: the kernel)"


def _take_over(robot, found: list[Holder]) -> None:
    """Close ``robot``, which nobody can use any more: a motion it plays comes to rest along its path (a feed
    hold, within the joint limits) first; then say so in one line."""
    pending, following = robot.runner.pending(), robot.runner.follow is not None
    if pending and not following:  # a follow has no path to rest on: close() stops it under control
        robot.pause()
        deadline = time.monotonic() + HOLD_WAIT_S
        while robot.moving and robot.control.state != "held" and time.monotonic() < deadline:
            time.sleep(0.02)
    robot.close()
    ended = "was stopped under control" if following else "came to rest along its path"
    what = f"its motion {pending[0].label!r} {ended} and it" if pending else "it"
    print(
        f"armctl: took over port {robot.port} from an earlier Robot of arm {robot.arm.name!r} that no variable "
        f"holds any more (only {_kept(found)}): {what} was closed",
        file=sys.stderr,
    )


def _kept(found: list[Holder]) -> str:
    """What kept a Robot nobody can use, in a few words: ``the output history (_, Out) and the last error's
    traceback`` (its own worker thread only when nothing else did)."""
    names: dict[str, list[str]] = {}
    for h in [h for h in found if h.what != OWN] or found:
        names.setdefault(h.what, [])
        if h.name is not None and h.name not in names[h.what]:
            names[h.what].append(h.name)
    words = [f"{what} ({', '.join(n)})" if n else what for what, n in names.items()]
    return " and ".join(words)


def let_a_dead_run_finish(store: PoseStore) -> None:
    """After an unclean end, the board may still be playing what the dead run sent (until its queue or its
    watchdog runs out). Opening a real Uno's port resets it: not before the journaled pose is reached. A wait read
    from a file is capped (``FILE_WAIT_MAX_S``); a journal whose times cannot be true (``state.suspect``) is not
    waited on at all (its pose is not trusted either: ``PoseStore.checked``)."""
    stored = store.load()
    if stored is not None and not stored.clean and not suspect(stored):
        wait = stored.time_s + stored.hold_in_s - time.time()
        if wait > 0:
            time.sleep(min(wait + 2 * FRAME_S, FILE_WAIT_MAX_S))


OPEN_ROBOTS: weakref.WeakSet = weakref.WeakSet()  # every Robot open in this process


@atexit.register
def _close_at_exit() -> None:
    """A script that ends with a Robot still open (no ``with``, no ``close()``) would leave a motion to be
    cut off mid-stream by the interpreter: stop it under control and release the port instead."""
    for robot in list(OPEN_ROBOTS):
        if robot.closed:
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


def let_go(backend: Backend, store: PoseStore, lock: PortLock | None, live: PoseStore | None = None, runs=None) -> None:
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


def open_board(url: str, cls, cal, arm, *, wire_log=None, watchdog_s: float = 1.0, calibrating: bool = False):
    """What ``connect`` opens, in order, each undone if a later one fails: the port's lock (``url``), the state
    folder's files for ``arm`` (and a dead run's wait), the backend ``cls`` with the calibration ``cal`` in its
    addressing (narrowed to what the board can send, said in notes). Returns (lock, store, backend, calibration)."""
    lock = PortLock(url)
    acquire(lock)
    store = PoseStore(url, arm)
    try:
        try:
            store.open()
        except OSError as exc:
            raise write_error(
                f"cannot write the state folder {store.path.parent}: {exc.strerror or exc} (set ARMCTL_STATE_DIR to "
                "a writable folder)",
                exc,
            ) from None
        let_a_dead_run_finish(store)
        addressed = cls.address(cal)
        be = cls.create(url, addressed, wire_log=wire_log, watchdog_s=watchdog_s, calibrating=calibrating)
        # what this board can send (Firmata: no pulse below 544 us): refused before the port opens, said once open
        addressed, narrowed = be.fit_calibration(addressed)
        be.open()
        if be.cal is not None:  # e.g. clamped to bus servos' own limits
            addressed = be.cal
        watching = be.watch_servos(watch_limits(arm, addressed))  # load, temperature, the gripper's contact
        for note in (*narrowed, *be.notes, *watching):
            print(f"armctl: note: {note}", file=sys.stderr)
    except BaseException:
        store.close()
        lock.release()
        raise
    return lock, store, be, addressed
