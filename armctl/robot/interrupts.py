"""Ctrl-C and the Robot: a motion verb's Ctrl-C stops the arm under control and says so in one line; motions
playing in the background are stopped by Ctrl-C too (our SIGINT handler, IPython's interrupt)."""

from __future__ import annotations

import functools
import signal
import threading

from armctl.core.tracebacks import install_excepthook, ipython, trimmed, wanted
from armctl.errors import ArmctlError
from armctl.robot.lifecycle import BOARD_WAIT_S, OPEN_ROBOTS


def interrupted(robot) -> str:
    """After Ctrl-C: stop every motion of ``robot`` under control (queued ones too), wait until the board holds,
    and say so in one line (the KeyboardInterrupt's message)."""
    queued = robot.runner.queued
    robot.stop("interrupted (Ctrl-C)")
    robot.runner.wait_idle(BOARD_WAIT_S)
    where = ""
    try:
        where = " at (" + ", ".join(f"{v:.1f}" for v in robot.where().tool_mm) + ") mm"
    except Exception:  # noqa: BLE001 - the stop is what matters; the pose is a courtesy
        pass
    dropped = f"; {queued} motion(s) queued with wait=False dropped" if queued else ""
    return f"Ctrl-C: {robot.arm.name} stopped under control and holds its pose{where}{dropped}"


def one_line_interrupt(method):
    """A motion verb whose Ctrl-C stops the arm under control and raises KeyboardInterrupt with one line, not the
    traceback through armctl's playback (SIGTERM/SIGHUP, the CLI's ``Terminated``, pass through as they are)."""

    @functools.wraps(method)
    def verb(self, *args, **kwargs):
        __tracebackhide__ = True  # noqa: F841 - IPython and pytest hide this frame
        try:
            return method(self, *args, **kwargs)
        except KeyboardInterrupt as exc:
            if type(exc) is not KeyboardInterrupt:
                raise
            why = str(exc) if str(exc).startswith("Ctrl-C:") else interrupted(self)
        raise KeyboardInterrupt(why)

    return verb


_SIGINT_BEFORE: list = []  # the SIGINT handler ours runs after (set once, in the main thread)


def _stop_all(reason: str) -> None:
    for robot in list(OPEN_ROBOTS):
        if not robot.closed and robot.moving:
            robot.stop(reason)


def _sigint(signum, frame) -> None:
    """Ctrl-C while motions play in the background (``wait=False``): stop them under control, then do what
    Ctrl-C did before (Python's: raise KeyboardInterrupt)."""
    _stop_all("interrupted (Ctrl-C)")
    before = _SIGINT_BEFORE[0] if _SIGINT_BEFORE else signal.default_int_handler
    if callable(before):
        before(signum, frame)
    else:
        raise KeyboardInterrupt


def _ipython_errors(shell, etype, value, tb, tb_offset=None):
    """IPython's handler for armctl's errors and Ctrl-C. A Jupyter kernel swaps SIGINT handlers around each cell:
    its KeyboardInterrupt, wherever it lands in the cell, stops the motions playing in the background too. Then
    the error shows as IPython shows it, cut at armctl's first frame (``armctl.core.tracebacks``)."""
    if isinstance(value, KeyboardInterrupt):
        _stop_all("interrupted (Ctrl-C)")
    if wanted(value):
        tb = trimmed(value, tb)
    shell.showtraceback((etype, value, tb), tb_offset=tb_offset)


def watch_errors() -> None:
    """Show armctl's errors at a prompt as one line and the user's own frames: ``sys.excepthook`` at Python's
    prompt, IPython's handler in IPython and Jupyter (unless another handler is set there: left alone)."""
    install_excepthook()
    shell = ipython()
    if shell is not None and not getattr(shell, "custom_exceptions", ()):
        shell.set_custom_exc((ArmctlError, KeyboardInterrupt), _ipython_errors)


def watch_ctrl_c() -> None:
    """Make Ctrl-C reach motions that play in the background: chain our SIGINT handler in front of the one in
    place (only from the main thread, and not where Ctrl-C is ignored); in IPython also its interrupt."""
    watch_errors()
    if threading.current_thread() is not threading.main_thread():
        return
    current = signal.getsignal(signal.SIGINT)
    if current is _sigint or current in (signal.SIG_IGN, None):
        return
    try:
        signal.signal(signal.SIGINT, _sigint)
    except ValueError:  # pragma: no cover - not the main interpreter
        return
    _SIGINT_BEFORE[:] = [current]
