"""Reconnecting at a real prompt, typed into line by line on a pseudo-terminal: ``python -i`` and IPython's
terminal, on the simulated arm. An error shows as the student's own frames and one line; a Robot nobody can use
any more (kept only by the last error's traceback, the prompt's ``_``, IPython's ``Out``) is taken over by the next
``connect()``, which says so; one that a variable, a kept ``Motion`` or another thread still holds is refused,
naming that holder and the one call that frees it."""

from __future__ import annotations

import os
import re
import sys
import textwrap
from pathlib import Path

import pytest

from tests.helpers import require_module

pexpect = require_module("pexpect", "pexpect (IPython's dependency) drives a prompt on a pty")
pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="a pseudo-terminal is POSIX")

ROOT = Path(__file__).resolve().parents[2]
_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
CONNECT = "robot = armctl.connect('seed-3link')"


class Prompt:
    """An interactive Python (``python -i``, or IPython's terminal) on a pty: ``type(line)`` gives what it
    printed, the echo of the line left out, up to the next prompt."""

    def __init__(self, state: Path, *, ipython: bool = False, env: dict | None = None):
        env = dict(os.environ, ARMCTL_STATE_DIR=str(state), TERM="dumb", PYTHON_BASIC_REPL="1", **env or {})
        env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
        if ipython:
            argv = ["-m", "IPython", "--simple-prompt", "--colors=NoColor", "--no-banner", "--no-confirm-exit"]
            argv += ["--HistoryManager.enabled=False"]
            self.prompt = r"In \[\d+\]: |   \.\.\.: "
        else:
            argv, self.prompt = ["-i", "-q"], r">>> |\.\.\. "
        self.p = pexpect.spawn(
            sys.executable, argv, env=env, cwd=str(ROOT), encoding="utf-8", timeout=90, dimensions=(50, 2000)
        )
        self.p.expect(self.prompt)

    def type(self, line: str) -> list[str]:
        self.p.sendline(line)
        self.p.expect(self.prompt)
        out = _ANSI.sub("", self.p.before).replace("\r\n", "\n").replace("\r", "").split("\n")[1:]
        while out and not out[-1].strip():
            out.pop()
        while out and not out[0].strip():
            out.pop(0)
        return out

    def block(self, code: str) -> list[str]:
        """Type a block (a def), line by line, ended by an empty line."""
        out: list[str] = []
        for line in [*textwrap.dedent(code).strip("\n").splitlines(), ""]:
            out += self.type(line)
        return out

    def close(self) -> None:
        self.p.sendline("exit()")
        self.p.expect(pexpect.EOF)
        self.p.close()


@pytest.fixture
def prompt(tmp_path):
    made: list[Prompt] = []

    def start(**kw) -> Prompt:
        made.append(Prompt(tmp_path / f"state{len(made)}", **kw))  # each its own simulated arm
        return made[-1]

    yield start
    for p in made:
        p.close()


def _one_error(out: list[str], *, most: int) -> str:
    """The error line of what the prompt printed for an error (its last line), checked to come with at most
    ``most`` lines in all and none through armctl's own files."""
    assert len(out) <= most, "\n".join(out)
    assert not any("armctl/" in line or "armctl\\" in line for line in out[:-1]), "\n".join(out)
    return out[-1]


def test_python_prompt_shows_one_line_and_reconnects_after_an_unreachable_move(prompt):
    py = prompt()
    py.type("import armctl")
    assert py.type(CONNECT) == []
    out = py.type("robot.move_to(2.0, 0.0)")
    # Traceback (most recent call last): / File "<stdin>", line 1, in <module> / the error: 3 lines (main: 23)
    assert out[:2] == ["Traceback (most recent call last):", '  File "<stdin>", line 1, in <module>'], out
    line = _one_error(out, most=3)
    assert line.startswith("armctl.errors.UnreachableError: move to (2, 0) m: target (2.0000, 0.0000) m is 1100.0 mm")
    py.type("del robot")
    assert py.type(CONNECT) == []  # the traceback no longer holds it: let go by its finalizer, nothing to say
    assert py.type("print(robot.where().tool_mm)")[0].startswith("[")


def test_a_robot_kept_by_the_last_traceback_is_taken_over(prompt):
    """The student's own function holds the Robot in the last error's traceback (its frame's locals), and with
    ARMCTL_TRACEBACK=full so do armctl's frames: the next connect() closes it and says so in one line."""
    py = prompt()
    py.type("import armctl")
    py.type(CONNECT)
    py.block(
        """
        def pick(r):
            r.move_to(0.5, 0.2)
            r.move_to(2.0, 0.0)
        """
    )
    out = py.type("pick(robot)")
    assert out[1:3] == ['  File "<stdin>", line 1, in <module>', '  File "<stdin>", line 3, in pick'], out
    _one_error(out, most=4)
    py.type("del robot")
    out = py.type(CONNECT)
    assert len(out) == 1 and out[0].startswith("armctl: took over port armsim://"), out
    assert "from an earlier Robot of arm 'seed-3link' that no variable holds any more" in out[0]
    assert out[0].endswith("(only the last error's traceback): it was closed"), out
    where = py.type("print(robot.where().tool_mm)")[0]
    assert [float(v) for v in re.findall(r"-?\d+\.\d+", where)] == pytest.approx([500.0, 200.0], abs=1.0)

    full = prompt(env={"ARMCTL_TRACEBACK": "full"})  # every frame kept, as before: armctl's frames hold it
    full.type("import armctl")
    full.type(CONNECT)
    out = full.type("robot.move_to(2.0, 0.0)")
    assert len(out) > 10 and any("armctl/robot/robot.py" in line for line in out), out
    full.type("del robot")
    out = full.type(CONNECT)
    assert len(out) == 1 and "(only the last error's traceback): it was closed" in out[0], out


def test_a_motion_playing_that_only_the_prompts_underscore_holds_comes_to_rest_and_is_taken_over(prompt):
    py = prompt()
    py.type("import armctl, time")
    py.type(CONNECT)
    py.type("robot.move_to(0.5, 0.2)")
    shown = py.type("robot.move_to(0.5, -0.3, speed=0.05, wait=False)")  # shown, so kept in _
    assert shown == ["<Motion 'move to (0.5, -0.3) m' 10.12 s pending>"], shown
    py.type("time.sleep(1.0); del robot")
    out = py.type(CONNECT)
    assert len(out) == 1, out
    assert "(only the prompt's _ (the last value shown)): its motion 'move to (0.5, -0.3) m' came to rest" in out[0]
    assert out[0].endswith("along its path and it was closed")
    where = py.type("print(robot.moving, robot.where().tool_mm)")[0]
    moving, tool = where.split(" ", 1)
    x, y = (float(v) for v in re.findall(r"-?\d+\.\d+", tool))
    assert moving == "False"
    assert x == pytest.approx(500.0, abs=1.0) and -300.0 < y < 160.0  # at rest on its line, short of its end


def test_a_kept_motion_or_another_name_is_named_with_the_call_that_frees_it(prompt):
    py = prompt()
    py.type("import armctl")
    py.type(CONNECT)
    py.type("m = robot.move_to(0.5, 0.2)")
    py.type("del robot")
    out = py.type(CONNECT)
    line = _one_error(out, most=3)
    assert line.startswith("armctl.errors.LinkError: port 'armsim://")
    assert (
        "in use by pid" in line and "this process: the Robot of arm 'seed-3link' made by an earlier connect()" in line
    )
    assert line.endswith(
        "is still held by the variable 'm' (as m.robot): use that Robot, or m.robot.close() to free the port, "
        "then connect again"
    ), line
    py.type("arm = m.robot; del m")  # another name for it
    line = _one_error(py.type(CONNECT), most=3)
    assert "still held by the variable 'arm': use that Robot, or arm.close() to free the port" in line
    assert py.type("arm.close()") == []
    assert py.type(CONNECT) == []  # closed: nothing to take over, nothing to say
    assert py.type("print(robot.moving)") == ["False"]


def test_a_robot_another_thread_moves_is_never_taken_over(prompt):
    py = prompt()
    py.type("import armctl, threading, time")
    py.type(CONNECT)
    py.type("done = []; robot.move_to(0.5, 0.2).label")  # the label shown: _ does not hold the Robot
    py.block(
        """
        def work(r):
            done.append(r.move_to(0.5, -0.1, speed=0.05).label)
        """
    )
    py.type("t = threading.Thread(target=work, args=(robot,), name='mover'); t.start(); time.sleep(0.5)")
    py.type("del robot")
    line = _one_error(py.type(CONNECT), most=3)
    assert "still held by the thread 'mover', running work() at <stdin>:2 with it as 'r'" in line, line
    assert line.endswith(
        "armctl takes over no Robot that running code uses; let that code finish or close the Robot there, "
        "then connect again"
    )
    assert py.type("t.join(); print(done)") == ["['move to (0.5, -0.1) m']"]  # its motion played to its end
    assert py.type(CONNECT) == []
    tool = py.type("print(robot.where().tool_mm)")[0]
    assert [float(v) for v in re.findall(r"-?\d+\.\d+", tool)] == pytest.approx([500.0, -100.0], abs=1.0)


def test_ipython_shows_the_cell_and_one_line_and_takes_over_from_its_output_history(prompt):
    require_module("IPython", "the classroom REPL is IPython (pip install -e '.[test]')")
    ip = prompt(ipython=True)
    ip.type("import armctl")
    ip.type(CONNECT)
    out = ip.type("robot.move_to(2.0, 0.0)")
    # ---- / UnreachableError  Traceback / Cell In[3], line 1 / ----> 1 robot.move_to(2.0, 0.0) / (blank) / the
    # error: 6 lines (main: 45, through robot.py, runner.py, motion/plan.py and motion/one_move.py)
    assert out[2:4] == ["Cell In[3], line 1", "----> 1 robot.move_to(2.0, 0.0)"], out
    assert _one_error(out, most=6).startswith("UnreachableError: move to (2, 0) m: target (2.0000, 0.0000) m")
    assert ip.type("robot.move_to(0.5, 0.2)") == ["Out[4]: <Motion 'move to (0.5, 0.2) m' 3.50 s done>"]
    ip.type("del robot")
    out = ip.type(CONNECT)  # Out[4] and _ hold the Motion, which holds the Robot
    assert len(out) == 1 and out[0].startswith("armctl: took over port armsim://"), out
    assert "that no variable holds any more (only the output history (_, _4, _oh, Out)): it was closed" in out[0]
    ip.type("m = robot.move_to(0.5, 0.25)")
    ip.type("del robot")
    out = ip.type(CONNECT)
    line = _one_error(out, most=6)
    assert line.startswith("LinkError: port 'armsim://") and "still held by the variable 'm' (as m.robot)" in line
    assert "m.robot.close() to free the port" in line
    ip.type("m.robot.close()")
    assert ip.type(CONNECT) == []
    ip.block(  # IPython's own record of the last error (its frames' locals) holds it too
        """
        def pick(r):
            r.move_to(3.0, 0.0)
        """
    )
    out = ip.type("pick(robot)")
    assert any(line.startswith("Cell In[") and line.endswith("line 2, in pick(r)") for line in out), out
    assert not any("armctl/" in line for line in out), out
    ip.type("del robot")
    out = ip.type(CONNECT)
    assert len(out) == 1 and out[0].startswith("armctl: took over port armsim://"), out
    assert "the last error's traceback" in out[0] and out[0].endswith("it was closed"), out


def test_scripts_are_left_as_they_are(tmp_path):
    """No hook in a script: an error it catches keeps its traceback, one that ends it prints as Python prints it."""
    import subprocess

    code = textwrap.dedent(
        """
        import sys, traceback, armctl
        robot = armctl.connect("seed-3link")
        print(sys.excepthook is sys.__excepthook__)
        try:
            robot.move_to(2.0, 0.0)
        except armctl.UnreachableError:
            print(len(traceback.format_exc().splitlines()) > 10)
        robot.move_to(2.0, 0.0)
        """
    )
    env = dict(os.environ, ARMCTL_STATE_DIR=str(tmp_path / "state"))
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=90, env=env, cwd=ROOT)
    assert r.returncode == 1 and r.stdout.split() == ["True", "True"], r.stderr
    assert "armctl/robot/robot.py" in r.stderr and r.stderr.strip().splitlines()[-1].startswith(
        "armctl.errors.Unreachable"
    )


# --- armctl.core.holders on its own: what it says holds an object ------------------------------------------------


class _Thing:
    pass


def test_holders_name_a_variable_and_the_python_that_reaches_it(monkeypatch):
    import types
    import weakref

    from armctl.core.holders import holders

    mod = types.ModuleType("lab")
    monkeypatch.setitem(sys.modules, "lab", mod)
    mod.bench = _Thing()
    mod.bench.arms = {"left": [None, _Thing()]}
    ref = weakref.ref(mod.bench.arms["left"][1])
    found = holders(ref())
    assert [(h.what, h.reach, h.usable) for h in found] == [
        ("the variable 'lab.bench'", "lab.bench.arms['left'][1]", True)
    ]


def test_holders_tell_a_finished_traceback_from_a_running_thread(monkeypatch):
    import threading
    import weakref

    from armctl.core.holders import holders

    def fail(thing):
        raise ValueError("no")

    try:
        fail(_Thing())
    except ValueError as exc:  # what the prompt keeps of an error it showed
        monkeypatch.setattr(sys, "last_value", exc, raising=False)
        monkeypatch.setattr(sys, "last_traceback", exc.__traceback__, raising=False)
    ref = weakref.ref(sys.last_traceback.tb_next.tb_frame.f_locals["thing"])
    assert [(h.what, h.usable) for h in holders(ref())] == [("the last error's traceback", False)]

    go = threading.Event()

    def work(thing):
        go.wait(30)

    t = threading.Thread(target=work, args=(_Thing(),), name="worker")
    t.start()
    try:
        ref = weakref.ref(t._args[0])
        found = holders(ref())
        assert found[0].live and found[0].usable
        assert (
            found[0].what.startswith("the thread 'worker', running work() at ")
            and "with it as 'thing'" in found[0].what
        )
    finally:
        go.set()
        t.join()
