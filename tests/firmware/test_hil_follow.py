"""Hardware in the loop: a simulated SO-101 leader (a scripted hand on ``feetechsim://?hand=``) drives a MeArm
on the virtual Uno by its tool point (``armctl follow --map tool``), through our firmware and through stock
StandardFirmata. From the pulses the Uno put out:

- the follower ends where the leader's tool point maps to (its forward kinematics from the pulses), within 2 mm;
- no servo's pulse moves faster than its joint's speed limit: in any one 20 ms frame on our firmware (it plays
  the host's one-frame moves on its own clock), over any five frames on Firmata (the host writes pulses that
  the Servo library picks up at its own frame edges, so two writes may land in one frame and none in the next).
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from tests.helpers import require

from tools import hil_compare as hc
from tools.virtual_uno import FIRMWARE_HEX, VirtualUno, build_firmware, build_tools, fetch_firmata

from armctl.model.arm import load_arm
from armctl.calibration.servo import find_calibration, load_calibration
from armctl.teleop.follow import Teleop
from armctl.model.kinematics import tool_point

ROOT = Path(__file__).resolve().parents[2]

POSES = [
    (0, [0, 76, -74, -5], 10),
    (1.5, [0, 76, -74, -5], 10),
    (4.0, [25, 60, -60, -5], 50),
    (30, [25, 60, -60, -5], 50),
]
FRAME_S = 0.02


def _hand(path: Path) -> Path:
    cal = load_calibration(find_calibration("so101"))
    rows = ["t_s,id,steps"]
    for t, q, g in POSES:
        for s, a in zip(cal.joints, q):
            rows.append(f"{t},{s.id},{float(s.value(math.radians(a))):.2f}")
        rows += [f"{t},{cal.gripper.id},{float(cal.gripper.value(math.radians(g))):.2f}", f"{t},5,2048"]
    path.write_text("\n".join(rows) + "\n")
    return path


def _expected_tool():
    la, fa = load_arm("so101"), load_arm("mearm")
    tp = Teleop(SimpleNamespace(arm=la), fa, map="tool")
    q = np.radians([*POSES[-1][1], 0.0])  # the leader's roll at its zero (2048 steps)
    return np.array([0, 0, fa.shoulder_height_m]) + tp.scale * (tool_point(la, q) - [0, 0, la.shoulder_height_m])


@pytest.mark.parametrize("backend", ["armctl", "firmata"])
def test_a_leader_drives_a_mearm_on_the_virtual_uno(tmp_path, backend):
    ok, why = build_tools()
    require(ok, f"virtual Uno does not build: {why}")
    if backend == "armctl":
        ok, why = build_firmware()
        require(ok, f"firmware does not build: {why}")
        hex_path = FIRMWARE_HEX
    else:
        hex_path, why = fetch_firmata()
        require(hex_path is not None, why)
    arm, cal = load_arm("mearm"), load_calibration(find_calibration("mearm"))
    pins = [s.pin if backend == "firmata" else (9, 10, 11, 12)[s.channel] for s in cal.servos]
    env = {**os.environ, "ARMCTL_STATE_DIR": str(tmp_path / "state")}
    hand = _hand(tmp_path / "hand.csv")
    with VirtualUno(hex_path, reset_on_open=True) as uno:  # real time: the follow is paced by the host
        cmd = [sys.executable, "-m", "armctl", "--arm", "mearm", "--port", uno.pty, "--backend", backend]
        cmd += ["--assume-pose", "home"]  # a fresh state folder on a board that resets: the user's word
        cmd += ["follow", "--leader", f"feetechsim://?hand={hand}", "--map", "tool", "--duration", "7", "--json"]
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120, cwd=ROOT, env=env)
        assert proc.returncode == 0, f"armctl follow failed ({proc.returncode}):\n{proc.stderr[-3000:]}"
        pulses = uno.pulses()
    report = json.loads(proc.stdout)
    assert report["clamped_frames"] == 0 and report["frames"] > 200, report
    frames = hc.from_first_pulse(hc.frames_from_pulses(pulses, pins))
    widths = np.array([[np.nan if w is None else w for w in f.widths_us] for f in frames], dtype=float)
    widths = widths[~np.isnan(widths).any(axis=1)]
    assert len(widths) > 200
    # where it ended: the leader's tool point, mapped
    q = cal.values_to_joints(widths[-1, : arm.n])
    end = tool_point(arm, q)
    assert np.linalg.norm(end - _expected_tool()) < 2e-3, (end, _expected_tool())
    # never faster than the speed limits (pulses measured to 1/16 us; the board's resolution is 0.5 us)
    limits = [math.degrees(v) * s.us_per_deg * FRAME_S for v, s in zip(arm.max_speed_rad_s, cal.joints)]
    limits.append(math.degrees(arm.gripper.max_speed_rad_s) * cal.gripper.us_per_deg * FRAME_S)
    step = np.abs(np.diff(widths, axis=0))
    for i, lim in enumerate(limits):
        if backend == "armctl":
            assert step[:, i].max() <= lim + 1.0, (cal.servos[i].name, step[:, i].max(), lim)
        else:
            window = np.abs(widths[5:, i] - widths[:-5, i])
            assert window.max() <= 5 * lim + 1.0, (cal.servos[i].name, window.max(), 5 * lim)
