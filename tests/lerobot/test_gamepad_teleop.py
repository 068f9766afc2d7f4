"""The gamepad as a LeRobot teleoperator (``--teleop.type=armctl --teleop.gamepad=NAME``) in LeRobot's own
``lerobot-teleoperate``, driving the simulated MeArm through ``--robot.type=armctl``: SDL's virtual joystick made
inside LeRobot's process (``ARMCTL_GAMEPAD_SCRIPT``: the plugin attaches it and plays the script on it) pushes the
left stick right, then lets go; the arm ends to the right of where it started, by about the distance the stick
asked for, nowhere else; unplugged mid-teleoperation, LeRobot stops with the line that says so. About 30 s
(LeRobot imports torch)."""

from __future__ import annotations

import math
import os
import subprocess

import numpy as np

from armctl.model.arm import load_arm
from armctl.model.kinematics import tool_point
from tests.lerobot.conftest import lerobot_env
from tests.lerobot.test_lerobot_cli import status_deg

ARGS = [
    "--robot.type=armctl", "--robot.arm=mearm", "--teleop.type=armctl", "--teleop.gamepad=virtual",
    "--teleop.follower_arm=mearm", "--teleop.gamepad_speed_mm_s=50", "--fps=30",
]  # fmt: skip


def port(tmp_path) -> str:
    return f"armsim://mearm?state={tmp_path / 'follower.json'}"  # the simulated board keeps its pose there


def teleoperate(venv_bin, tmp_path, script: str, seconds: float) -> subprocess.CompletedProcess:
    (tmp_path / "pad.txt").write_text(script)
    env = lerobot_env(tmp_path / "hf")
    env["ARMCTL_GAMEPAD_SCRIPT"] = str(tmp_path / "pad.txt")
    return subprocess.run(
        [str(venv_bin / "lerobot-teleoperate"), *ARGS, f"--robot.port={port(tmp_path)}", f"--teleop_time_s={seconds}"],
        capture_output=True,
        text=True,
        timeout=240,
        env=env,
        cwd=tmp_path,
    )


def tool_mm(tmp_path) -> np.ndarray:
    arm = load_arm("mearm")
    return tool_point(arm, np.radians(status_deg("mearm", port(tmp_path)))) * 1000.0


def test_the_gamepad_leads_the_mearm_in_lerobot_teleoperate(venv_bin, tmp_path):
    arm = load_arm("mearm")
    home = tool_point(arm, np.array(arm.home_rad)) * 1000.0
    proc = teleoperate(venv_bin, tmp_path, "1.0 leftx 0.8\n2.0 leftx 0\n", 4)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "gamepad" in proc.stderr and "armctl virtual gamepad" in proc.stderr, proc.stderr[-2000:]
    assert "action refused" not in proc.stderr
    moved = tool_mm(tmp_path) - home
    print(f"the gamepad moved the MeArm's tool by {moved} mm (asked: 40 mm right)")
    assert 20.0 < moved[0] < 60.0 and math.hypot(moved[1], moved[2]) < 3.0, moved


def test_the_gamepad_starts_from_where_the_follower_stands_not_from_home(venv_bin, tmp_path):
    """The MeArm left 60 mm to the left of and 30 mm below home (an earlier run): the gamepad moves it from there
    (armctl.teleop.followers: the robot in LeRobot's process says where it stands), it is not driven home first."""
    import armctl

    arm = load_arm("mearm")
    home = tool_point(arm, np.array(arm.home_rad)) * 1000.0
    with armctl.connect("mearm", port=port(tmp_path)) as robot:
        robot.move_to(*((home + [0.0, 60.0, -30.0]) / 1000.0))
    start = tool_mm(tmp_path)
    assert np.linalg.norm(start - home) > 50.0, start
    proc = teleoperate(venv_bin, tmp_path, "1.0 leftx 0.8\n2.0 leftx 0\n", 4)
    assert proc.returncode == 0, proc.stderr[-3000:]
    moved = tool_mm(tmp_path) - start
    print(f"from {start} mm the gamepad moved the MeArm's tool by {moved} mm (asked: 40 mm right)")
    assert 20.0 < moved[0] < 60.0 and math.hypot(moved[1], moved[2]) < 3.0, moved


def test_an_unplugged_gamepad_ends_lerobot_teleoperate_with_the_line_that_says_so(venv_bin, tmp_path):
    proc = teleoperate(venv_bin, tmp_path, "0.8 leftx 0.8\n1.5 unplug\n", 6)
    assert proc.returncode != 0
    assert "the gamepad 'armctl virtual gamepad' was unplugged" in proc.stderr, proc.stderr[-2000:]
    assert os.environ.get("ARMCTL_GAMEPAD_SCRIPT") is None  # (the hook is the test's own process's only)


def test_the_keyboard_leads_the_mearm_in_lerobot_teleoperate(venv_bin, tmp_path):
    """``--teleop.keyboard=true``: lerobot-teleoperate's terminal (a pty here) gets Right held for 0.8 s (the
    terminal's auto-repeat, 30 a second); the arm ends about 40 mm to the right at 50 mm/s, nowhere else."""
    import pty
    import threading
    import time

    arm = load_arm("mearm")
    home = tool_point(arm, np.array(arm.home_rad)) * 1000.0
    args = [a for a in ARGS if not a.startswith("--teleop.gamepad=")] + ["--teleop.keyboard=true"]
    master, slave = pty.openpty()
    proc = subprocess.Popen(
        [str(venv_bin / "lerobot-teleoperate"), *args, f"--robot.port={port(tmp_path)}", "--teleop_time_s=5"],
        stdin=slave, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=lerobot_env(tmp_path / "hf"),
        cwd=tmp_path,
    )  # fmt: skip
    os.close(slave)
    lines, ready = [], threading.Event()

    def read_out():
        for line in proc.stdout:
            lines.append(line)
            if "the keyboard leads" in line:
                ready.set()

    reader = threading.Thread(target=read_out, daemon=True)
    reader.start()
    try:
        assert ready.wait(120), "".join(lines)[-2000:]  # LeRobot connected the plugin (torch imports first)
        time.sleep(0.5)
        t_end = time.monotonic() + 0.8
        while time.monotonic() < t_end:
            os.write(master, b"\x1b[C")
            time.sleep(1 / 30)
        stderr = proc.stderr.read()
        proc.wait(timeout=120)
        reader.join(timeout=10)
    finally:
        os.close(master)
        if proc.poll() is None:
            proc.kill()
    stdout = "".join(lines)
    assert proc.returncode == 0, stderr[-3000:]
    assert "the keyboard leads the mearm" in stdout, stdout[-2000:]
    moved = tool_mm(tmp_path) - home
    print(f"the keyboard moved the MeArm's tool by {moved} mm (asked: 40 mm right)")
    assert 20.0 < moved[0] < 60.0 and math.hypot(moved[1], moved[2]) < 3.0, moved
