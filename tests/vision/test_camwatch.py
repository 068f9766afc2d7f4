"""The camera's watch over a run: a PWM servo that stalls mid-run is caught within 0.5 s of the tool leaving the
plan by more than watch_mm, and the arm is stopped; a run that goes as planned is not stopped."""

import subprocess
import sys
import threading
import time

import numpy as np
import pytest

import armctl
from armctl.errors import StopRequested
from armctl.robot.camwatch import CameraWatch
from armctl.sim import scene

pytest.importorskip("cv2")

MOVES = [np.radians([40, 60, -10]), np.radians([-40, 120, 20])]


def _truth_poller(robot, stop, out):
    """When the true tool (the simulator's) first is more than 10 mm from the commanded one."""
    live = scene.latest()
    while not stop.is_set():
        q = robot.board.sample()[0]
        if np.linalg.norm(live.true_tool_m() - robot.arm.tool_point(q)) > 0.010 and "off" not in out:
            out["off"] = time.monotonic()
        time.sleep(0.005)


def test_a_stalled_servo_is_caught_within_half_a_second():
    port = "armsim://?arm=mearm&stall=shoulder@1.2"
    with armctl.connect("mearm", port=port, camera="simcam://?fps=0&seed=4") as robot:
        stop, out = threading.Event(), {}
        poller = threading.Thread(target=_truth_poller, args=(robot, stop, out), daemon=True)
        poller.start()
        try:
            with CameraWatch(robot, watch_mm=10) as watch, pytest.raises(StopRequested, match="off the plan"):
                for q in MOVES:
                    robot.move_joints(q, speed_fraction=0.15)
        finally:
            stop.set()
            poller.join()
        assert watch.tripped and "mm off the plan" in watch.tripped
        caught = watch.tripped_at - out["off"]
        assert 0.0 < caught < 0.5, caught
        assert not robot.moving


def test_a_run_as_planned_is_not_stopped():
    with armctl.connect("mearm", port="armsim://?arm=mearm&rate=3", camera="simcam://?fps=0&seed=5") as robot:
        with CameraWatch(robot, watch_mm=5) as watch:
            for q in MOVES:
                robot.move_joints(q, speed_fraction=0.3)
        assert watch.tripped is None
        assert watch.frames > 20 and watch.worst_mm < 5


def test_cli_run_stopped_by_the_watch_says_where_and_how_to_resume(tmp_path):
    prog = tmp_path / "long.yaml"
    prog.write_text(
        "arm: mearm\nsteps:\n  - joint: {q_deg: [40, 60, -10]}\n    speed_pct: 15\n"
        "  - joint: {q_deg: [-40, 120, 20]}\n    speed_pct: 15\n"
    )
    cmd = [sys.executable, "-m", "armctl", "run", str(prog), "--port", "armsim://?arm=mearm&stall=shoulder@1.2",
           "--camera", "simcam://?fps=0"]  # fmt: skip
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert r.returncode == 4, r.stderr
    line = r.stderr.strip().splitlines()[-1]
    assert "mm off the plan" in line and "--resume" in line
