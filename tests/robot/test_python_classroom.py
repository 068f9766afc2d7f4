"""Python for a classroom, driven as a student would: real Python processes (a script, and IPython's shell
running cells as a notebook kernel does), Ctrl-C as a real SIGINT. A dropped Robot lets go of its port; a second
connect() says what to do; Ctrl-C stops under control with one line and reaches wait=False motions; unit mistakes
get a hint; help() shows the student API first; exceptions, Pose and plots as a notebook shows them."""

from __future__ import annotations

import math
import os
import pydoc
import re
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

import armctl
from armctl import errors
from tests.helpers import require_module

ROOT = Path(__file__).resolve().parents[2]


def _python(code: str, tmp_path: Path, *, timeout: float = 90) -> subprocess.CompletedProcess:
    env = dict(os.environ, ARMCTL_STATE_DIR=str(tmp_path / "state"), MPLBACKEND="Agg")
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=timeout, env=env
    )


def _start(code: str, tmp_path: Path) -> subprocess.Popen:
    env = dict(os.environ, ARMCTL_STATE_DIR=str(tmp_path / "state"))
    return subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(code)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )


def _interrupt_when_ready(p: subprocess.Popen, after_s: float = 1.5) -> tuple[str, str]:
    assert p.stdout.readline().strip() == "ready"
    time.sleep(after_s)
    p.send_signal(signal.SIGINT)
    return p.communicate(timeout=60)


# --- the port: a dropped Robot lets go, a second connect() says what to do ----------------------------------


def test_a_dropped_robot_releases_its_port(tmp_path):
    r = _python(
        """
        import armctl
        robot = armctl.connect("seed-3link")
        robot.move_to(0.5, 0.2)
        m = robot.move_to(0.5, 0.25, wait=False)    # a background motion: its worker must let go too
        m.wait()
        del m
        del robot                                    # no close(): the finalizer releases the port
        robot = armctl.connect("seed-3link")
        print("again", robot.where().tool_mm)
        robot = None                                 # reassigned, never closed
        robot = armctl.connect("seed-3link")
        print("and again")
        """,
        tmp_path,
    )
    assert r.returncode == 0, r.stderr
    assert "again" in r.stdout and "and again" in r.stdout
    tool = [float(v) for v in re.findall(r"[-\d.]+", r.stdout.splitlines()[0].split("again", 1)[1])]
    assert tool == pytest.approx([500.0, 250.0], abs=1.0)  # the new Robot finds the arm where the old one left it


def test_notebook_cell_run_twice_says_what_to_do(tmp_path):
    """Two runs of the cell ``robot = armctl.connect()`` in IPython's shell (what a Jupyter kernel runs)."""
    require_module("IPython", "the classroom REPL is IPython (pip install -e '.[test]')")
    r = _python(
        """
        from IPython.core.interactiveshell import InteractiveShell
        sh = InteractiveShell.instance(colors="NoColor")
        sh.run_cell("import armctl")
        print("first", sh.run_cell("robot = armctl.connect('seed-3link')").success, flush=True)
        again = sh.run_cell("robot = armctl.connect('seed-3link')")
        print("second", again.success, type(again.error_in_exec).__name__, "|", again.error_in_exec, flush=True)
        print("third", sh.run_cell("robot.close(); robot = armctl.connect('seed-3link')").success, flush=True)
        gone = sh.run_cell("del robot").success
        print("fourth", gone and sh.run_cell("robot = armctl.connect('seed-3link')").success)
        """,
        tmp_path,
    )
    assert r.returncode == 0, r.stderr
    lines = {
        line.split(" ", 1)[0]: line
        for line in r.stdout.splitlines()
        if line.split(" ", 1)[0] in ("first", "second", "third", "fourth")
    }
    assert lines["first"] == "first True"
    second = lines["second"]
    assert second.startswith("second False LinkError")
    assert "in use by pid" in second and "this process: the Robot of arm 'seed-3link'" in second
    assert "still held by the variable 'robot'" in second
    assert "robot.close() to free the port" in second and "del robot" not in second  # del would not free it
    assert lines["third"] == "third True"
    assert lines["fourth"] == "fourth True"


def test_another_process_is_still_named(tmp_path):
    holder = _start(
        """
        import armctl, sys
        robot = armctl.connect("seed-3link")
        print("ready", flush=True)
        sys.stdin.read() if False else __import__("time").sleep(30)
        """,
        tmp_path,
    )
    try:
        assert holder.stdout.readline().strip() == "ready"
        r = _python("import armctl\narmctl.connect('seed-3link')\n", tmp_path)
        assert r.returncode == 1
        last = r.stderr.strip().splitlines()[-1]
        assert f"in use by pid {holder.pid}" in last and "this process" not in last and "robot.close" not in last
    finally:
        holder.kill()
        holder.communicate()


# --- Ctrl-C -----------------------------------------------------------------------------------------------


def test_ctrl_c_in_a_blocking_move_stops_it_with_one_line(tmp_path):
    p = _start(
        """
        import atexit, armctl
        robot = armctl.connect("seed-3link")
        robot.move_to(0.5, 0.2)
        atexit.register(lambda: print("after", robot.moving, robot.where().tool_mm, flush=True))
        print("ready", flush=True)
        robot.move_to(0.5, -0.3, speed=0.02)          # 25 s at 20 mm/s: interrupted after 1.5 s
        """,
        tmp_path,
    )
    out, err = _interrupt_when_ready(p)
    assert p.returncode == -signal.SIGINT  # Python ends an unhandled KeyboardInterrupt by dying of SIGINT
    lines = err.strip().splitlines()
    assert lines[-1].startswith("KeyboardInterrupt: Ctrl-C: seed-3link stopped under control and holds its pose at (")
    assert len(lines) <= 6, err  # the user's line and one armctl frame, not the playback's internals
    assert "stream.py" not in err and "_run" not in err
    moving, tool = out.split("after ", 1)[1].split(" ", 1)
    tool = [float(v) for v in re.findall(r"-?\d+\.\d+", tool)]
    assert moving == "False"
    assert tool[0] == pytest.approx(500.0, abs=1.0) and 120.0 < tool[1] < 195.0  # stopped early on the line


def test_ctrl_c_reaches_wait_false_motions(tmp_path):
    p = _start(
        """
        import time, armctl
        robot = armctl.connect("seed-3link")
        robot.move_to(0.5, 0.2)
        a = robot.move_to(0.5, -0.3, speed=0.02, wait=False)
        b = robot.move_to(0.5, 0.2, wait=False)
        print("ready", flush=True)
        try:
            time.sleep(30)                            # the student's own code: not in armctl
        except KeyboardInterrupt:
            time.sleep(0.5)
            print("after", robot.moving, a.done, type(a.error).__name__, b.done, type(b.error).__name__,
                  robot.where().tool_mm, flush=True)
        """,
        tmp_path,
    )
    out, err = _interrupt_when_ready(p)
    assert p.returncode == 0, err
    words = out.split("after ", 1)[1].split()
    assert words[:5] == ["False", "True", "StopRequested", "True", "StopRequested"]
    y = float(re.findall(r"-?\d+\.\d+", " ".join(words[5:]))[1])
    assert 120.0 < y < 195.0


def test_a_notebook_interrupt_in_other_code_stops_wait_false_motions(tmp_path):
    """A Jupyter kernel's interrupt lands wherever the cell is (here: the student's own loop); IPython swaps the
    SIGINT handler around each cell, so armctl stops the background motions from IPython's interrupt too."""
    require_module("IPython", "the classroom REPL is IPython (pip install -e '.[test]')")
    r = _python(
        """
        from IPython.core.interactiveshell import InteractiveShell
        sh = InteractiveShell.instance(colors="NoColor")
        sh.run_cell("import armctl, time; robot = armctl.connect('seed-3link'); robot.move_to(0.5, 0.2)")
        sh.run_cell("m = robot.move_to(0.5, -0.3, speed=0.02, wait=False); time.sleep(1.0); raise KeyboardInterrupt")
        sh.run_cell("time.sleep(0.5); print('after', robot.moving, m.done, type(m.error).__name__)")
        """,
        tmp_path,
    )
    assert r.returncode == 0, r.stderr
    words = r.stdout.split("after ", 1)[1].split()
    assert words[:3] == ["False", "True", "StopRequested"], r.stdout
    assert "KeyboardInterrupt" in r.stdout  # shown as IPython shows it


def test_ctrl_c_while_waiting_on_a_motion(tmp_path):
    p = _start(
        """
        import armctl
        robot = armctl.connect("seed-3link")
        robot.move_to(0.5, 0.2)
        m = robot.move_to(0.5, -0.3, speed=0.02, wait=False)
        later = robot.home(wait=False)
        print("ready", flush=True)
        m.wait()
        """,
        tmp_path,
    )
    out, err = _interrupt_when_ready(p)
    lines = err.strip().splitlines()
    assert lines[-1].startswith("KeyboardInterrupt: Ctrl-C: seed-3link stopped under control"), err
    assert len(lines) <= 6, err


# --- unit mistakes ----------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def robot():
    with armctl.connect("seed-3link", port="armsim://") as r:
        yield r


@pytest.fixture(scope="module")
def mearm():
    with armctl.connect("mearm", port="armsim://") as r:
        yield r


def test_speed_in_mm_s_given_as_m_s(robot):
    with pytest.raises(armctl.BadInputError, match=r"speed: 50 m/s is faster than 2 m/s.*mm/s given as m/s\? 50 mm/s"):
        robot.move_to(0.5, 0.2, speed=50)
    robot.move_to(0.5, 0.2, speed=2.0, wait=True)  # 2 m/s itself is a speed, slowed by the joint limits


def test_angle_in_degrees_given_as_radians(robot, mearm):
    with pytest.raises(armctl.BadInputError, match=r"phi: 90 rad is more than a turn.*degrees given as radians\?"):
        robot.move_to(0.5, 0.2, phi=90)
    with pytest.raises(armctl.BadInputError, match=r"joint 1: 45 rad.*degrees given as radians\?.*math.radians\(45\)"):
        robot.move_joints([45, -90, -45])


def test_millimetres_given_as_metres(robot, mearm):
    with pytest.raises(
        armctl.UnreachableError, match=r"millimetres given as metres\?.*\(500, 200\) mm is \(0.5, 0.2\)"
    ) as e:
        robot.move_to(500, 200)
    assert e.value.shortfall_m == pytest.approx(math.hypot(500, 200) - 0.9, abs=1e-3)
    with pytest.raises(armctl.UnreachableError, match=r"millimetres given as metres\?"):
        mearm.move_to(150, 40, 20)
    with pytest.raises(armctl.UnreachableError) as near:  # only 3 reaches out: a plain miss, no unit hint
        robot.move_to(2.0, 0.0)
    assert "millimetres" not in str(near.value)


# --- help, exceptions, Pose, plots ----------------------------------------------------------------------


README_NAMES = ["move_to", "move_joints", "home", "gripper", "run", "where", "plan_to", "stop", "close", "release"]


BOARD_NAMES = ["servo_values", "commanded_pose", "call", "board_status", "move_servo", "hold_stored_pose"]


def test_help_shows_the_student_api_first():
    text = pydoc.render_doc(armctl.Robot, renderer=pydoc.plaintext)
    head = text.split("Methods defined here")[0]  # the class docstring: the example, then the student API
    assert "armctl.connect(" in head
    board_access = head.index("Board access")
    for name in README_NAMES + ["plot"]:
        listed = re.search(rf"``{name}\(", head)
        assert listed and listed.start() < board_access, f"{name} not named before the board access"
    assert armctl.Robot.__mro__[1:] == (object,)  # the board access is a collaborator (robot.board), no base class
    for name in README_NAMES + BOARD_NAMES:
        assert callable(getattr(armctl.Robot, name))  # every name armctl's tools and the README use still works
        assert re.search(rf"\n \|  {name}\(", text), f"help(armctl.Robot) does not list {name}"
    for name in BOARD_NAMES:
        assert f"``board.{name}``" in getattr(armctl.Robot, name).__doc__
        assert f"``{name}(" in head[board_access:]


def test_exceptions_are_importable_from_armctl():
    for name in ("UnreachableError", "JointLimitError", "PulseLimitError", "BadInputError", "ConfigError", "LinkError"):
        assert getattr(armctl, name) is getattr(errors, name)
        assert name in armctl.__all__
    from armctl import UnreachableError

    assert issubclass(UnreachableError, armctl.MotionError)


def test_pose_in_a_repl_and_in_jupyter(robot, mearm):
    robot.move_to(0.5, 0.2, phi=math.radians(-30))
    pose = robot.where()
    text = repr(pose)
    assert re.fullmatch(
        r"Pose\(tool=\(50\d\.\d, \d+\.\d\) mm, phi=-\d+\.\d deg, joints=\[[-\d., ]+\] deg, "
        r"gripper=[\d.]+ deg, measured\)",
        text,
    ), text
    html = pose._repr_html_()
    assert html.startswith("<table") and html.count("<tr>") == 2 + 1 + 3 + 1 + 1
    assert re.search(r"<th style='text-align:left'>tool x</th><td style='text-align:right'>50\d\.\d mm</td>", html)
    base = mearm.where()._repr_html_()
    assert "tool z" in base and "joint 3" in base


def test_plots_are_figures(robot, mearm):
    require_module("matplotlib", "plots are drawn with matplotlib (armctl[plot])")
    from matplotlib.figure import Figure

    fig = robot.plot()
    assert isinstance(fig, Figure) and len(fig.axes) == 1
    top, side = mearm.plot().axes
    assert "at z =" in top.get_title() and "side view" in side.get_title()
    traj = robot.plan_to(0.45, -0.1, phi=math.radians(-60))
    fig = traj.plot()
    assert isinstance(fig, Figure) and len(fig.axes) == 3
    assert "segments" in fig.get_suptitle()


def test_jupyter_shows_pose_table_and_inline_figure(tmp_path):
    """IPython's display formatter (what Jupyter renders): a Pose gives text/html, a figure image/png."""
    require_module("IPython", "the classroom REPL is IPython (pip install -e '.[test]')")
    r = _python(
        """
        from IPython.core.interactiveshell import InteractiveShell
        sh = InteractiveShell.instance()
        sh.run_cell("import armctl; robot = armctl.connect('mearm')")
        from IPython.core.pylabtools import select_figure_formats
        select_figure_formats(sh, {"png"})  # what Jupyter's inline backend sets up
        fmt = sh.display_formatter.format
        pose, _ = fmt(sh.user_ns["robot"].where())
        fig, _ = fmt(sh.user_ns["robot"].plot())
        plan, _ = fmt(sh.user_ns["robot"].plan_to(0.15, -0.05, 0.03).plot())
        print(sorted(pose), sorted(fig), sorted(plan))
        print(pose["text/html"][:6], fig["image/png"][:4] if isinstance(fig["image/png"], bytes) else "str")
        """,
        tmp_path,
    )
    assert r.returncode == 0, r.stderr
    kinds, head = r.stdout.strip().splitlines()[-2:]
    assert "'text/html'" in kinds.split("]")[0] and kinds.count("'image/png'") == 2
    assert head.startswith("<table")


def test_watch_an_arm_another_process_drives(tmp_path, monkeypatch):
    """armctl.Watch reads the pose the driving armctl publishes, without touching its port or its lock."""
    env = dict(os.environ)
    jog = subprocess.Popen(
        [sys.executable, "-m", "armctl", "jog", "0.3", "0.45", "--speed", "40", "--json"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    watch = armctl.Watch("seed-3link")
    seen, drivers = [], set()
    deadline = time.monotonic() + 30
    while jog.poll() is None and time.monotonic() < deadline:
        pose = watch.where()
        if watch.moving:
            seen.append(pose.tool_mm)
            drivers.add(watch.driver())
        time.sleep(0.05)
    out, err = jog.communicate(timeout=30)
    assert jog.returncode == 0, err  # never disturbed
    assert len(seen) > 10 and any(f"pid {jog.pid}" in (d or "") for d in drivers)
    xs = [p[0] for p in seen]
    assert xs[0] > xs[-1] + 50  # it watched the tool travel towards x = 300 mm
    end = watch.where()
    assert not watch.moving and watch.driver() is None and end.source == "watched"
    import json

    assert end.tool_mm == pytest.approx([v * 1000 for v in json.loads(out)["tool_m"]], abs=1.0)
