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

from armctl.core import stopsignals
from armctl.core.terminal import Terminal, windows_key
from armctl.errors import LinkError

ROOT = Path(__file__).resolve().parents[2]
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
    monkeypatch.setattr(stopsignals, "CLOSE_WAIT_S", 5.0)
    handled = []
    handler = threading.Thread(
        target=lambda: handled.append(stopsignals.console_event(stopsignals.CTRL_CLOSE_EVENT, raised.append))
    )
    handler.start()
    while not raised:
        handler.join(0.01)
    assert raised == [signal.SIGINT] and stopsignals.hung_up() and not stopsignals._done.is_set()
    stopsignals.stopped()  # the controlled stop is done; the main thread goes on to exit with 129
    handler.join(0.2)
    assert handler.is_alive(), "returned at once: Windows would end the process before the main thread's exit"
    handler.join(30)
    assert handled == [True]


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
        ("win32", "AppData/Local/armctl", "AppData/Roaming/armctl"),
    ],
)
def test_state_and_calibration_folders_follow_the_os(monkeypatch, tmp_path, platform, state_part, config_part):
    import importlib

    import platformdirs

    from armctl.core import paths

    for var in ("ARMCTL_STATE_DIR", "ARMCTL_CONFIG_DIR", "XDG_STATE_HOME", "XDG_CONFIG_HOME"):
        monkeypatch.delenv(var, raising=False)
    if sys.platform == "win32" and platform != "win32":
        pytest.skip("platformdirs' POSIX paths cannot be loaded on Windows")
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("USERPROFILE", str(tmp_path))
    monkeypatch.setattr(sys, "platform", platform)
    importlib.reload(platformdirs)
    if platform == "win32":  # the shell's known folders (SHGetKnownFolderPath), stood in
        import platformdirs.windows

        known = {"CSIDL_APPDATA": "AppData/Roaming", "CSIDL_LOCAL_APPDATA": "AppData/Local"}
        monkeypatch.setattr(platformdirs.windows, "get_win_folder", lambda name: str(tmp_path / known[name]))
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
        "import armctl.core.stopsignals as s; print(sorted(s.stop_signals()))\n"
        "try:\n    import armctl.core.terminal as t; t._PosixInput(0)\nexcept ImportError as e: print('blocked', e)\n"
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


# --- waits the stop signals get through (Windows before Python 3.14 interrupts no untimed lock wait) ----------


def test_sliced_waits_end_timeout_and_let_signals_through():
    from concurrent.futures import Future
    from concurrent.futures import TimeoutError as FutureTimeout

    f = Future()
    with pytest.raises(FutureTimeout):
        stopsignals.result(f, 0.25)
    threading.Timer(0.3, f.set_result, args=(42,)).start()
    assert stopsignals.result(f) == 42
    t = threading.Thread(target=threading.Event().wait, args=(0.3,))
    t.start()
    stopsignals.join(t, 0.05)
    assert t.is_alive()
    stopsignals.join(t)
    assert not t.is_alive()
    # A signal raised on another thread reaches no wait of the main thread's, on any OS: as Windows treats every
    # untimed lock wait. A plain t.join() would sit here until t ends; the sliced one lets the handler run.
    hold, ended = threading.Event(), []
    t = threading.Thread(target=lambda: ended.append(hold.wait(60)), daemon=True)
    t.start()
    old = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        threading.Timer(0.3, signal.raise_signal, args=(signal.SIGINT,)).start()
        with pytest.raises(KeyboardInterrupt):
            stopsignals.join(t)
        assert not ended, "the join ended with the thread, not with the signal"  # (is_alive() lies after it)
    finally:
        signal.signal(signal.SIGINT, old)
        hold.set()


def test_the_stand_in_refuses_untimed_main_thread_waits_from_armctl_only():
    r = _nonposix(
        "import threading, time, armctl.core.stopsignals as s\n"
        "t = threading.Thread(target=time.sleep, args=(0.3,)); t.start(); t.join()  # a test's own wait: allowed\n"
        "t = threading.Thread(target=time.sleep, args=(0.3,)); t.start()\n"
        "s.join(t)  # armctl's sliced wait: allowed\n"
        "t = threading.Thread(target=time.sleep, args=(30,), daemon=True); t.start()\n"
        "exec(compile('t.join()', 'armctl-like', 'exec'), {'__name__': 'armctl.x', 't': t})\n"
    )
    assert r.returncode == 1 and "Thread.join() without a timeout in the main thread" in r.stderr, r.stderr


def test_a_queued_motion_is_waited_for_in_slices_without_posix():
    r = _nonposix(
        "import armctl\n"
        "with armctl.connect('seed-3link') as robot:\n"
        "    a = robot.move_to(0.5, 0.1, speed=0.5, wait=False)\n"
        "    b = robot.move_to(0.45, 0.2, speed=0.5, wait=False)\n"
        "    b.wait(); a.wait()\n"
        "    x, y = robot.where(settle=True).tool_m\n"
        "    print(round(x, 3), round(y, 3))\n"
    )
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["0.45", "0.2"]


def test_web_stops_on_ctrl_c_without_posix(tmp_path):
    """``armctl web`` waits for its server in slices: the Ctrl-C lands (a plain join would hold it on Windows)."""
    env = dict(os.environ, ARMCTL_TEST_NO_POSIX="1", PYTHONPATH=os.pathsep.join([str(NONPOSIX), str(ROOT)]))
    env["ARMCTL_STATE_DIR"] = str(tmp_path / "state")
    proc = subprocess.Popen(
        [sys.executable, "-m", "armctl", "web", "--listen", "127.0.0.1:0"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        **({"creationflags": subprocess.CREATE_NEW_PROCESS_GROUP} if sys.platform == "win32" else {}),
    )
    try:
        import time

        line, deadline = "", time.monotonic() + 60
        while "Ctrl-C stops" not in line:
            assert time.monotonic() < deadline and proc.poll() is None, "armctl web did not start"
            line = proc.stdout.readline()
        time.sleep(0.5)  # into the wait for the server
        proc.send_signal(signal.CTRL_BREAK_EVENT if sys.platform == "win32" else signal.SIGINT)
        _, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert proc.returncode == (149 if sys.platform == "win32" else 130), err
    assert "Traceback" not in err and err.count("\n") == 1, err


# --- the source itself: nothing Windows lacks is touched unguarded (the runs above cover only what they run) -------

#: Names Windows' ``os`` and ``signal`` do not have (Python's docs: "Availability: Unix").
POSIX_ONLY_NAMES = {
    "os": {
        "fork", "forkpty", "killpg", "setsid", "setpgid", "getpgid", "getpgrp", "getuid", "geteuid", "getgid",
        "getegid", "pread", "pwrite", "posix_fallocate", "posix_fadvise", "fchmod", "fchown", "chown", "lchown",
        "mkfifo", "mknod", "openpty", "ttyname", "uname", "sync", "statvfs", "fstatvfs", "nice", "getloadavg",
        "sysconf", "pipe2", "WNOHANG", "O_NOCTTY", "O_NONBLOCK", "O_CLOEXEC", "O_SYNC", "O_DSYNC", "posix_spawn",
        "sched_getaffinity", "wait3", "wait4", "getppid_posix",
    },
    "signal": {
        "SIGHUP", "SIGKILL", "SIGUSR1", "SIGUSR2", "SIGALRM", "SIGQUIT", "SIGCHLD", "SIGPIPE", "SIGSTOP", "SIGCONT",
        "SIGTSTP", "SIGWINCH", "SIGTTIN", "SIGTTOU", "alarm", "setitimer", "pause", "pthread_kill", "siginterrupt",
        "pthread_sigmask",
    },
    "select": {"select", "poll", "epoll", "kqueue"},  # select: sockets only on Windows; the rest POSIX-only
}  # fmt: skip
POSIX_ONLY_MODULES = {"fcntl", "termios", "tty", "pty", "resource", "grp", "pwd", "posix", "syslog"}
#: Where POSIX-only code is meant to be, and why it never runs on Windows.
POSIX_ONLY_PLACES = {
    "armctl/sim/pty.py": "the pty server: POSIX-only, and says so",
    "armctl/bus/pca9685/i2c.py": "Linux i2c-dev buses (/dev/i2c-N)",
    "armctl/core/terminal.py:_PosixInput": "the POSIX key reader; Terminal picks _WindowsInput on Windows",
    "armctl/bus/armproto/link.py:_read_some": "select on the port's descriptor, which open() takes on POSIX only",
    "armctl/web/server.py": "select on sockets, which Windows' select takes",
    # (i24-run's run keys, not merged yet: select on the terminal's descriptor; Windows reads via armctl.core.terminal)
    "armctl/cli/runkeys.py:_read": "select on a POSIX terminal's descriptor; on Windows the keys come from msvcrt",
    "armctl/cli/runkeys.py:__exit__": "termios puts back the mode it saved, which it saves on POSIX only",
}


def _posix_only_uses(path: Path, rel: str | None = None) -> list[str]:
    """``file:line what`` for each use of a POSIX-only module or name not under a platform check (an ``if`` on
    ``os.name``, ``sys.platform``, ``hasattr``/``getattr``, or a ``try`` that catches ImportError)."""
    import ast

    rel = rel or path.relative_to(ROOT).as_posix()
    if rel in POSIX_ONLY_PLACES:
        return []
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found: list[str] = []

    def guarded_test(node) -> bool:
        text = ast.unparse(node)
        return any(k in text for k in ("os.name", "sys.platform", "hasattr(", "getattr(", "platform"))

    def visit(node, guarded: bool, scope: str) -> None:
        if f"{rel}:{scope}" in POSIX_ONLY_PLACES:
            return
        if isinstance(node, (ast.If, ast.IfExp, ast.While)) and guarded_test(node.test):
            guarded = True
        if isinstance(node, ast.Try) and any(
            h.type is not None and any(n in ast.unparse(h.type) for n in ("ImportError", "AttributeError"))
            for h in node.handlers
        ):
            guarded = True
        if not guarded:
            if isinstance(node, ast.Import):
                found.extend(f"{rel}:{node.lineno} import {a.name}" for a in node.names if a.name in POSIX_ONLY_MODULES)
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module in POSIX_ONLY_MODULES:
                found.append(f"{rel}:{node.lineno} from {node.module} import")
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module in POSIX_ONLY_NAMES:
                bad = [a.name for a in node.names if a.name in POSIX_ONLY_NAMES[node.module]]
                found.extend(f"{rel}:{node.lineno} from {node.module} import {n}" for n in bad)
            elif (
                isinstance(node, ast.Attribute)
                and isinstance(node.value, ast.Name)
                and node.attr in POSIX_ONLY_NAMES.get(node.value.id, ())
            ):
                found.append(f"{rel}:{node.lineno} {node.value.id}.{node.attr}")
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            scope = node.name
        for child in ast.iter_child_nodes(node):
            visit(child, guarded, scope)

    visit(tree, False, "")
    return found


def test_the_source_touches_nothing_windows_lacks_outside_a_platform_check():
    uses = [u for p in sorted((ROOT / "armctl").rglob("*.py")) for u in _posix_only_uses(p)]
    assert not uses, "POSIX-only, unguarded (guard it, or add the place to POSIX_ONLY_PLACES with why):\n" + "\n".join(
        uses
    )


def test_the_source_check_finds_what_it_should(tmp_path):
    probe = tmp_path / "probe.py"
    probe.write_text(
        "import os, signal, sys\nimport fcntl\nsignal.signal(signal.SIGHUP, print)\n"
        "if os.name == 'posix':\n    os.killpg(1, 2)\nif hasattr(signal, 'SIGUSR1'):\n    signal.SIGUSR1\n"
        "def f():\n    try:\n        import termios\n    except ImportError:\n        pass\n    os.fchmod(1, 0)\n",
        encoding="utf-8",
    )
    got = [u.split(" ", 1)[1] for u in _posix_only_uses(probe, "armctl/probe.py")]
    assert got == ["import fcntl", "signal.SIGHUP", "os.fchmod"]
    assert _posix_only_uses(probe, "armctl/sim/pty.py") == []  # a place that is POSIX-only by design


def _text_io_without_encoding(path: Path) -> list[str]:
    """``file:line call`` for each text-mode ``open()``/``read_text()``/``write_text()`` that names no encoding:
    Windows reads and writes those in its ANSI code page (cp1252, ...), not UTF-8."""
    import ast

    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if not isinstance(node, ast.Call) or any(k.arg == "encoding" for k in node.keywords):
            continue
        f = node.func
        if isinstance(f, ast.Attribute) and f.attr in ("read_text", "write_text"):
            found.append(f"{path.name}:{node.lineno} {ast.unparse(node)[:80]}")
        elif isinstance(f, ast.Name) and f.id == "open":
            mode = (
                node.args[1] if len(node.args) > 1 else next((k.value for k in node.keywords if k.arg == "mode"), None)
            )
            text = mode.value if isinstance(mode, ast.Constant) else "r"
            if "b" not in text:
                found.append(f"{path.name}:{node.lineno} {ast.unparse(node)[:80]}")
    return found


def test_the_source_names_the_encoding_of_every_text_file(tmp_path):
    uses = [u for p in sorted((ROOT / "armctl").rglob("*.py")) for u in _text_io_without_encoding(p)]
    assert not uses, "text I/O in the platform's code page (name encoding='utf-8'):\n" + "\n".join(uses)
    probe = tmp_path / "probe.py"
    probe.write_text(
        "open(p)\nopen(p, 'rb')\nopen(p, 'w', encoding='utf-8')\nP.read_text()\nP.write_text(t, encoding='utf-8')\n",
        encoding="utf-8",
    )
    assert [u.split(" ", 1)[1] for u in _text_io_without_encoding(probe)] == ["open(p)", "P.read_text()"]


@pytest.mark.parametrize(
    ("arm", "kw", "state_file"),
    [
        ("seed-3link", {}, "armsim-seed-3link.json"),
        ("so101", {}, "feetechsim-so101.json"),
        ("mearm", {"backend": "pca9685", "calibration": "mearm-pca9685"}, "pca9685sim-mearm.json"),
    ],
)
def test_each_simulator_keeps_its_servos_in_a_state_folder_with_any_name(monkeypatch, tmp_path, arm, kw, state_file):
    """A user's folder may hold spaces, '+', '&', '#' or (Windows) backslashes: the simulators' URLs quote it."""
    import armctl

    name = "Jo Smith+1 & co #2" + ("" if sys.platform == "win32" else " a\\b")
    monkeypatch.setenv("ARMCTL_STATE_DIR", str(tmp_path / name))
    with armctl.connect(arm, **kw) as robot:
        assert robot.port.startswith(state_file.split("-")[0] + "://")
    assert (tmp_path / name / state_file).is_file()


def test_the_board_clock_estimate_survives_a_host_clock_that_did_not_tick():
    """Windows' time.monotonic() before Python 3.13 moves in 15.6 ms steps: a simulator run fast plays ten
    frames within one, and the board-rate estimate divided by zero."""
    from armctl.bus.armproto.backend import ArmProtocolBackend

    be = ArmProtocolBackend.__new__(ArmProtocolBackend)
    be._clock_ref, be._board_rate, be._rate_samples = None, 1.0, 0
    be._measure_clock(10.0, 0)
    be._measure_clock(10.0, 50)
    assert be._board_rate == 1.0
    be._measure_clock(10.5, 100)
    assert be._board_rate == pytest.approx(2.5)  # 100 frames (2 board s) in 0.5 host s: 4, averaged with 1
