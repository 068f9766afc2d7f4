"""The Robot on real firmware: the pose is read fresh from the board before every move.

Our firmware on the virtual Uno *without* a reset on open keeps its pulses between connections, as a
real board does when its port does not pulse DTR. ``armctl calibrate --check`` once planned every corner
of its square from a snapshot taken at connect; on such a board the second run stepped 41-130 us per
20 ms frame, 280-880 deg/s against limits of 120-180. Here two runs back to back, and every pulse step of
both must stay within the joint speed limits.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
from tests.helpers import require

from tools import hil_compare as hc
from tools.virtual_uno import VirtualUno

from armctl.model.arm import load_arm
from armctl.calibration.servo import find_calibration, load_calibration

ROOT = Path(__file__).resolve().parents[2]

PINS = [9, 10, 11, 12]  # channels 0..3


def test_two_check_runs_on_a_board_that_keeps_its_pulses_never_step_past_the_speed_limits(firmware_hex, tmp_path):
    arm = load_arm("seed-3link")
    cal = load_calibration(find_calibration(arm.name))
    env = dict(os.environ, ARMCTL_STATE_DIR=str(tmp_path / "state"))
    reports = []
    with VirtualUno(firmware_hex, reset_on_open=False, free_run=True) as uno:
        for _ in range(2):
            proc = subprocess.run(
                [sys.executable, "-m", "armctl", "--port", uno.pty, "--watchdog", "10", "--assume-pose", "home"]
                + ["calibrate", "--check", "--speed", "300", "--json"],
                capture_output=True,
                text=True,
                timeout=300,
                cwd=ROOT,
                env=env,
            )
            assert proc.returncode == 0, proc.stderr[-2000:]
            reports.append(json.loads(proc.stdout))
        pulses = uno.pulses()
        resets = uno.events("reset")
    require(len(resets) <= 1, "the virtual Uno reset on open although asked not to")
    frames = hc.frames_from_pulses(pulses, PINS)
    assert len(frames) > 200, "too few frames"
    widths = np.array([[np.nan if w is None else w for w in f.widths_us] for f in frames])
    frame_us = np.diff([f.t_us for f in frames])
    assert np.all(np.isfinite(widths[:, :3])), "a joint lost its pulses"
    for i, s in enumerate(cal.joints):
        deg = np.abs(np.diff(widths[:, s.channel])) / s.us_per_deg
        speed = deg / (frame_us / 1e6)
        limit = np.degrees(arm.max_speed_rad_s[i])
        worst = int(np.argmax(speed))
        # a 0.5 us pulse step more than the limit allows is rounding (0.07 deg), not a jump
        assert speed[worst] <= limit * 1.02 + 0.5 / s.us_per_deg / 0.02, (
            f"joint {i + 1} moved {deg[worst]:.2f} deg in one frame ({speed[worst]:.0f} deg/s, limit {limit:g}) "
            f"at frame {worst} of {len(frames)}"
        )
    # the second run started where the first ended: the board's pulses, not a stale or stored pose
    assert [c["corner"] for c in reports[1]["corners"]] == [1, 2, 3, 4]
