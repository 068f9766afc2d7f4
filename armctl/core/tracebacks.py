"""What a person at a prompt sees of armctl's errors: the one line and the frames of their own code.

An error armctl raises on purpose (``armctl.errors``) or a Ctrl-C it turned into one line came through 10-40
lines of armctl's internals (the plan, the runner, the playback), which tell a student nothing. In an
interactive session (``python -i``, the prompt, IPython, a Jupyter notebook) the traceback is cut at the
first armctl frame: ``sys.excepthook`` where Python's own is in place, IPython's handler for these
exceptions (``armctl.robot.interrupts`` sets it, as it stops the arm on Ctrl-C there). The traceback itself is cut,
not only what is printed: armctl's frames hold the Robot (``self``), and the last error
(``sys.last_traceback``, IPython's history) would otherwise keep it open. Scripts are left as they are (an
exception they catch is never touched; ``connect()`` installs the hook only at a prompt), and every
exception that is not armctl's (a TypeError, a bug) keeps all of its frames. ``ARMCTL_TRACEBACK=full`` keeps
every frame (for a bug report).
"""

from __future__ import annotations

import os
import sys

from armctl.errors import ArmctlError

_PACKAGE = __name__.partition(".")[0]


def wanted(exc: BaseException) -> bool:
    """True for an exception whose armctl frames a person should not be shown: an armctl error or Ctrl-C."""
    return isinstance(exc, ArmctlError | KeyboardInterrupt) and os.environ.get("ARMCTL_TRACEBACK") != "full"


def trim(exc: BaseException):
    """Cut ``exc``'s traceback (in place) at its first armctl frame, and those of the exceptions chained to it
    (a context not shown, after ``raise ... from None``, is dropped); the traceback's new start."""
    head = exc.__traceback__
    new = _cut(head)
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        exc.__traceback__ = _cut(exc.__traceback__)
        if exc.__suppress_context__:
            exc.__context__ = None
        exc = exc.__cause__ if exc.__cause__ is not None else exc.__context__
    if head is not None and getattr(sys, "last_traceback", None) is head:
        sys.last_traceback = new
    return new


def trimmed(value: BaseException, tb):
    """``value`` trimmed, and the traceback ``tb`` a hook was given (its start, or a frame after) to show."""
    start = value.__traceback__
    new = trim(value)
    return new if tb is start else _cut(tb)


def _ours(frame) -> bool:
    name = frame.f_globals.get("__name__", "")
    return isinstance(name, str) and name.partition(".")[0] == _PACKAGE


def _cut(tb):
    """``tb`` up to its first armctl frame (that frame and the ones after it cut off, in place)."""
    if tb is None or _ours(tb.tb_frame):
        return None
    t = tb
    while t.tb_next is not None:
        if _ours(t.tb_next.tb_frame):
            t.tb_next = None
            break
        t = t.tb_next
    return tb


def _excepthook(etype, value, tb) -> None:
    """``sys.excepthook`` at a prompt: an armctl error shown as the user's frames and its one line."""
    if value is not None and wanted(value):
        tb = trimmed(value, tb)
    sys.__excepthook__(etype, value, tb)


def interactive() -> bool:
    """True in an interactive session: the prompt (``python -i``, ``python`` with no script), or IPython."""
    return hasattr(sys, "ps1") or bool(sys.flags.interactive) or ipython() is not None


def install_excepthook() -> None:
    """At a prompt, where Python's own ``sys.excepthook`` is in place: ours (scripts and other hooks are left
    alone; IPython calls its own handler, see ``armctl.robot.interrupts``)."""
    if sys.excepthook is sys.__excepthook__ and interactive() and ipython() is None:
        sys.excepthook = _excepthook


def ipython():
    """The IPython shell this runs in (a Jupyter kernel's too), or None."""
    mod = sys.modules.get("IPython")
    get = getattr(mod, "get_ipython", None)
    return get() if get is not None else None
