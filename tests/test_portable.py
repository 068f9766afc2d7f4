"""Windows and macOS paths of the code, driven on Linux (issue 28): the Windows key reader through a stand-in of
``msvcrt`` and of the console API, the console close event, the port lock as Windows locks files, the state
and calibration folders per OS, and the CLI and Python API in a process that lacks what Windows lacks
(``tests/nonposix/sitecustomize.py``; ``tests/run_portable.sh --without-posix`` runs whole test files that way)."""

from __future__ import annotations

import io
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from armctl import stopsignals
from armctl.errors import LinkError
from armctl.terminal import Terminal, windows_key

ROOT = Path(__file__).resolve().parents[1]
NONPOSIX = ROOT / "tests" / "nonposix"


# --- the Windows key reader ---------------------------------------------------------------------------------


class FakeMsvcrt:
    """msvcrt's kbhit/getwch over a string of what the console would hand out (arrows: '\\xe0' + code)."""

    def __init__(self, typed: str = ""):
        self.typed = list(typed)

    def kbhit(self) -> bool:
        return bool(self.typed)

    def getwch(self) -> str:
        return self.typed.pop(0)


class FakeKernel32:
    """GetStdHandle/GetConsoleMode/SetConsoleMode of a console whose mode starts at 0x3 (processed output,
    wrap at end of line: no VT)."""

    def __init__(self, console: bool = True):
        self.mode = 0x3
        self.console = console
        self.set_calls: list[int] = []

    def GetStdHandle(self, which):  # noqa: N802 - the Windows API's name
        assert which == -11
        return 7

    def GetConsoleMode(self, handle, mode_ref):  # noqa: N802
        if not self.console:
            return 0
        mode_ref._obj.value = self.mode
        return 1

    def SetConsoleMode(self, handle, mode):  # noqa: N802
        self.set_calls.append(mode)
        self.mode = mode
        return 1


def test_windows_keys_are_named_as_on_posix():
    assert windows_key("\xe0", lambda: "H") == "up"
    assert windows_key("\x00", lambda: "Q") == "pgdn"
    assert windows_key("\r", None) == "enter"
    assert windows_key("\x08", None) == "backspace"
    assert windows_key("\x1b", None) == "escape"
    assert windows_key("q", None) == "q"


def test_windows_terminal_reads_keys_and_switches_vt_on_and_back():
    kernel = FakeKernel32()
    out = io.StringIO()
    term = Terminal(platform="win32", msvcrt=FakeMsvcrt("\xe0Hq\r\xe0I"), kernel32=kernel, out=out)
    assert kernel.mode & 0x0004, "VT processing was not switched on"
    assert [k for k, _ in term.keys(0.1)] == ["up", "q", "enter", "pgup"]
    assert term.keys(0.02) == []  # nothing typed: the wait ends at its timeout
    term.draw(["hello"])
    term.restore()
    assert kernel.mode == 0x3 and kernel.set_calls == [0x7, 0x3]
    assert "\x1b[?1049h" in out.getvalue() and "hello" in out.getvalue() and out.getvalue().endswith("\x1b[?1049l")


def test_windows_terminal_on_a_redirected_output_leaves_the_console_alone():
    kernel = FakeKernel32(console=False)
    term = Terminal(platform="win32", msvcrt=FakeMsvcrt("k"), kernel32=kernel, out=io.StringIO(), fullscreen=False)
    assert term.key(0.1) == "k"
    term.restore()
    assert kernel.set_calls == []


# --- Ctrl-Break and a closing console ------------------------------------------------------------------------


def test_a_closing_console_stops_like_a_hangup_and_waits_for_the_stop(monkeypatch):
    monkeypatch.setattr(stopsignals, "_hangup", threading.Event())
    monkeypatch.setattr(stopsignals, "_done", threading.Event())
    raised = []
    assert not stopsignals.console_event(0, interrupt_main=raised.append)  # Ctrl-C: the signal handler's
    finished = threading.Timer(0.05, stopsignals.stopped)
    finished.start()
    assert stopsignals.console_event(stopsignals.CTRL_CLOSE_EVENT, interrupt_main=raised.append)
    assert raised == [signal.SIGINT] and stopsignals.hung_up() and stopsignals._done.is_set()


def test_terminated_names_signals_the_os_may_not_have():
    from armctl.errors import Terminated

    assert Terminated(21, name="SIGBREAK").exit_code == 149
    closed = Terminated(0, name="the console closing", exit_code=stopsignals.HANGUP_EXIT)
    assert closed.exit_code == 129 and str(closed) == "the console closing"


# --- the port lock as Windows locks files --------------------------------------------------------------------


def test_the_lock_holder_is_named_where_windows_lets_no_one_read_the_locked_file(monkeypatch):
    import filelock

    from armctl.bus import portlock

    held: set[str] = set()

    class WindowsLikeLock:
        """A lock whose file nobody else may read while it is held (Windows' LockFileEx)."""

        def __init__(self, path, timeout=-1, thread_local=True):
            self.path = str(path)

        def acquire(self):
            if self.path in held:
                raise filelock.Timeout(self.path)
            held.add(self.path)

        def release(self):
            held.discard(self.path)

    real_read_text = Path.read_text

    def read_text(self, *a, **k):
        if str(self) in held:
            raise PermissionError(13, "The process cannot access the file because another process has locked it")
        return real_read_text(self, *a, **k)

    monkeypatch.setattr(filelock, "FileLock", WindowsLikeLock)
    monkeypatch.setattr(Path, "read_text", read_text)
    a = portlock.PortLock("COM3")
    a.acquire()
    with pytest.raises(LinkError, match=f"in use by pid {os.getpid()}"):
        portlock.PortLock("COM3").acquire()
    a.release()
    b = portlock.PortLock("COM3")
    b.acquire()
    b.release()


def test_a_com_port_is_one_port_however_it_is_written():
    from armctl.bus.portlock import port_key

    assert port_key("COM3") == port_key("com3") == port_key("\\\\.\\COM3") == "COM3"
    assert port_key("COM3") != port_key("COM4")


# --- folders per OS ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("platform", "state_part", "config_part"),
    [
        ("linux", ".local/state/armctl", ".config/armctl"),
        ("darwin", "Library/Application Support/armctl", "Library/Application Support/armctl"),
    ],
)
def test_state_and_calibration_folders_follow_the_os(monkeypatch, tmp_path, platform, state_part, config_part):
    import importlib

    import platformdirs

    from armctl import paths

    for var in ("ARMCTL_STATE_DIR", "ARMCTL_CONFIG_DIR", "XDG_STATE_HOME", "XDG_CONFIG_HOME"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setattr(sys, "platform", platform)
    importlib.reload(platformdirs)
    try:
        assert paths.state_dir() == tmp_path / state_part
        assert paths.config_dir() == tmp_path / config_part
        monkeypatch.setenv("ARMCTL_STATE_DIR", str(tmp_path / "own"))
        assert paths.state_dir() == tmp_path / "own"  # the override wins everywhere
    finally:
        monkeypatch.undo()
        importlib.reload(platformdirs)


# --- a process with what Windows lacks taken away ------------------------------------------------------------


def _nonposix(code: str, *args) -> subprocess.CompletedProcess:
    env = dict(os.environ, ARMCTL_TEST_NO_POSIX="1", PYTHONPATH=os.pathsep.join([str(NONPOSIX), str(ROOT)]))
    return subprocess.run(
        [sys.executable, *args, "-c", code] if code else [sys.executable, *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_the_stand_in_takes_away_what_windows_lacks():
    r = _nonposix(
        "import signal, os\n"
        "print(hasattr(signal, 'SIGHUP'), hasattr(signal, 'SIGBREAK'), hasattr(os, 'pwrite'))\n"
        "import armctl.stopsignals as s; print(sorted(s.stop_signals()))\n"
        "try:\n    import armctl.terminal as t; t._PosixInput(0)\nexcept ImportError as e: print('blocked', e)\n"
    )
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0] == "False True False"
    assert lines[1] == str(sorted([signal.SIGTERM, 21]))
    assert lines[2].startswith("blocked")


def test_every_command_module_imports_and_the_api_drives_the_arm_without_posix():
    r = _nonposix(
        "import importlib, armctl\n"
        "from armctl.cli import COMMANDS\n"
        "for name in {m for m, _ in COMMANDS.values()}: importlib.import_module(f'armctl.cli.{name}')\n"
        "with armctl.connect('seed-3link') as robot:\n"
        "    robot.move_to(0.5, 0.1, speed=0.3)\n"
        "    x, y = robot.where(settle=True).tool_m\n"
        "    print(abs(x - 0.5) < 1e-3 and abs(y - 0.1) < 1e-3)\n"
    )
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "True"


@pytest.mark.skipif(sys.platform == "win32", reason="Windows has no SIGTERM to send: Ctrl-Break is tested above")
def test_the_cli_jogs_and_stops_on_sigterm_without_posix(tmp_path):
    env = dict(os.environ, ARMCTL_TEST_NO_POSIX="1", PYTHONPATH=os.pathsep.join([str(NONPOSIX), str(ROOT)]))
    env["ARMCTL_STATE_DIR"] = str(tmp_path / "state")
    ok = subprocess.run(
        [sys.executable, "-m", "armctl", "jog", "0.5", "0.2", "--speed", "300"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert ok.returncode == 0, ok.stderr
    proc = subprocess.Popen(
        [sys.executable, "-m", "armctl", "run", str(ROOT / "examples" / "pick_and_place.yaml")],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        import time

        time.sleep(3.0)
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert proc.returncode == 143, err
    assert "stopped by SIGTERM" in err
