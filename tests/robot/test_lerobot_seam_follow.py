"""A follow of examples/hand_so101.csv with the repository's own LeRobot calibrations, whose ranges put the
encoder (present + homing offset) past 4095 or below 0 (erics_first_so101.json: shoulder_lift, elbow_flex,
wrist_flex, wrist_roll; my_arm.json: shoulder_pan), recorded as a dataset: every joint follows the leader the
short way, inside its calibrated range, and the gripper stays in its range. Before the simulator turned in the
servo's own frame (docs/feetech.md, "Homing offset and the seam"), erics_first_so101's wrist_flex and wrist_roll
went the long way round: p95 |state - action| 138 and 157 deg."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from tests.helpers import require_module

pq = require_module("pyarrow.parquet", "datasets are written as Parquet (armctl[dataset])")

ROOT = Path(__file__).resolve().parents[2]
HAND = ROOT / "examples" / "hand_so101.csv"
CALS = [
    ROOT / "tests/lerobot/so101_follower/erics_first_so101.json",
    ROOT / "tests/lerobot/so_follower/my_arm.json",
]


@pytest.mark.parametrize("cal", CALS, ids=lambda p: p.stem)
def test_a_follow_with_seam_crossing_calibrations_never_turns_the_long_way(tmp_path, cal):
    motors = json.loads(cal.read_text())
    crossing = [n for n, m in motors.items() if not 0 <= m["range_min"] + m["homing_offset"] <= 4095] + [
        n for n, m in motors.items() if not 0 <= m["range_max"] + m["homing_offset"] <= 4095
    ]
    assert crossing  # the point of these samples: their encoder positions cross the encoder's 0/4095
    env = {**os.environ, "ARMCTL_STATE_DIR": str(tmp_path / "state"), "ARMCTL_CONFIG_DIR": str(tmp_path / "cfg")}
    ds = tmp_path / "ds"
    cmd = [sys.executable, "-m", "armctl", "--arm", "so101", "--calibration", str(cal), "follow"]
    cmd += ["--leader", f"feetechsim://?hand={HAND}", "--leader-calibration", str(cal), "--duration", "11"]
    cmd += ["--record-dataset", str(ds), "--task", "wave", "--json"]
    run = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=90, stdin=subprocess.DEVNULL)
    assert run.returncode == 0, run.stderr[-2000:]
    table = pq.read_table(ds / "data/chunk-000/file-000.parquet").to_pydict()
    names = json.loads((ds / "meta/info.json").read_text())["features"]["action"]["names"]
    state, action = np.array(table["observation.state"]), np.array(table["action"])
    assert len(state) > 250
    for k, name in enumerate(names):
        motor = motors[name.removesuffix(".pos")]
        gap = np.abs(state[:, k] - action[:, k])
        if name == "gripper.pos":  # 0..100 %: the follower's gripper starts open and ramps to the leader's
            assert np.percentile(gap, 95) < 5, (name, np.percentile(gap, 95))
            assert state[:, k].min() > 0 and state[:, k].max() < 100, name  # never clamped at an end
            continue
        assert np.percentile(gap, 95) < 4, (name, np.percentile(gap, 95))  # before: 138 / 157 deg
        assert np.max(np.abs(np.diff(state[:, k]))) < 10, name  # no turn round the back between two frames
        mid = (motor["range_min"] + motor["range_max"]) / 2
        lo, hi = ((motor[e] - mid) * 360 / 4095 for e in ("range_min", "range_max"))
        assert lo - 0.5 <= state[:, k].min() and state[:, k].max() <= hi + 0.5, name


def test_a_leader_wrist_roll_turned_past_its_seam_does_not_send_the_follower_the_long_way(tmp_path):
    """The leader's wrist roll (0..4095) turned by hand up past 4095 reads from 0 again. The follower's cannot
    follow across its own 0/4095 (its position loop never passes it): it waits at its end (the joint's limit, the
    URDF's +162.8 deg, since the roll is a joint), and does not turn the whole way back round to 0..300 (before: it
    went there, 3800 steps the long way)."""
    hand = tmp_path / "hand.csv"
    rows = ["t_s,id,steps"]
    for t in (0, 8):
        rows += [f"{t},1,2048", f"{t},2,2048", f"{t},3,2050", f"{t},4,2047", f"{t},6,2276"]
    rows += ["0,5,2048", "2,5,2048", "4,5,3900", "5,5,4095", "5.001,5,0", "6,5,300", "8,5,300"]
    hand.write_text("\n".join(rows) + "\n")
    env = {**os.environ, "ARMCTL_STATE_DIR": str(tmp_path / "state"), "ARMCTL_CONFIG_DIR": str(tmp_path / "cfg")}
    ds = tmp_path / "ds"
    cmd = [sys.executable, "-m", "armctl", "--arm", "so101", "follow", "--leader", f"feetechsim://?hand={hand}"]
    cmd += ["--duration", "9", "--record-dataset", str(ds), "--task", "roll", "--json"]
    run = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=90, stdin=subprocess.DEVNULL)
    assert run.returncode == 0, run.stderr[-2000:]
    table = pq.read_table(ds / "data/chunk-000/file-000.parquet").to_pydict()
    names = json.loads((ds / "meta/info.json").read_text())["features"]["action"]["names"]
    k = names.index("wrist_roll.pos")
    state = np.array(table["observation.state"])[:, k]
    t = np.array(table["timestamp"]).ravel()
    top = state.max()
    assert top == pytest.approx(162.8, abs=0.5), top  # it followed up to its end (the URDF's upper limit)
    after = state[t >= t[int(np.argmax(state))]]
    assert after.min() > top - 2, (top, after.min())  # and stayed there
