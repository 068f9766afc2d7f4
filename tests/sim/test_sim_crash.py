"""No jump after a crash on the simulated arm: `armctl run` on armsim killed (SIGKILL) mid-motion.

armsim is a board inside the host process, so it dies with it. It used to keep only the pose of its last
clean close, so after a kill the simulated arm was back there while the host (rightly) resumed from the pose
its journal says a real board stops in: the next run's first pulses stepped the arm across the table. The
simulator now writes, while the host streams, the pose its board would stop in if the host went silent.
"""

from __future__ import annotations

import os
import random
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

import armctl
from armctl.model.arm import load_arm

ROOT = Path(__file__).resolve().parents[2]
PROGRAM = ROOT / "examples" / "pick_and_place.yaml"
KILLS = 4
#: simulator writes every 0.1 s of wall time (5 frames), the journal once a frame, plus the frame in play
BOUND_FRAMES = 8


def test_killed_runs_leave_the_simulated_arm_where_the_next_run_starts(tmp_path, monkeypatch):
    seed = int(os.environ.get("ARMCTL_KILL_SEED") or random.randrange(1 << 30))
    rng = random.Random(seed)
    port = f"armsim://?rate=1&seed=1&state={tmp_path / 'sim.json'}"
    arm = load_arm("seed-3link")
    bound_deg = BOUND_FRAMES * 0.02 * np.degrees(arm.max_speed_rad_s)
    steps = []
    for _ in range(KILLS):
        proc = subprocess.Popen(
            [sys.executable, "-m", "armctl", "--arm", "seed-3link", "--port", port, "run", str(PROGRAM)],
            cwd=ROOT,
            env=dict(os.environ),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        time.sleep(rng.uniform(1.5, 5.0))  # a random moment of the program (it starts streaming ~1 s in)
        proc.kill()
        proc.communicate(timeout=30)
        with armctl.connect("seed-3link", port) as robot:
            measured = robot.where()  # the simulated servos, before any pulse
            next_start = robot.commanded_pose()  # the pose the next motion is declared from
            assert measured.source == "measured" and next_start.source == "assumed"
            steps.append(np.abs(np.array(measured.q_deg) - np.array(next_start.q_deg)))
            robot.move_joints(next_start.q_deg, degrees=True)  # (sets the pulses: the next kill starts here)
    for step in steps:
        assert np.all(step <= bound_deg), f"jumps {steps} deg (bound {bound_deg}; ARMCTL_KILL_SEED={seed})"
