"""``armctl replay`` of an episode recorded by LeRobot's own ``lerobot-record`` (issue 39: "reproduces its actions
within 0.5 deg"): the simulated MeArm following a scripted SO-101 leader's hand by its tool point, one episode of
2 s, in LeRobot's virtualenv; then armctl (this interpreter) replays it on armsim:// and the servos' commanded
poses are the recorded actions within 0.5 deg. Skipped only when the virtualenv is missing (as
tests/lerobot/test_lerobot_cli.py); about 30-40 s, most of it LeRobot importing torch."""

from __future__ import annotations

import math
import time
from pathlib import Path

import numpy as np

from tests.helpers import require_module
from tests.lerobot.test_lerobot_cli import FPS, hand, lerobot

require_module("pyarrow", "datasets are read as Parquet (armctl[dataset])")

import pyarrow.parquet as pq  # noqa: E402 (after require_module)

TOL_DEG = 0.5


def test_replay_of_a_lerobot_record_episode_reproduces_its_actions(venv_bin, tmp_path, user_folders):
    import armctl
    from armctl import motion
    from armctl.cli import _parse
    from armctl.cli.replay import default_arm, plan_replay, read_info
    from armctl.dataset.recorder import arm_features

    root = tmp_path / "ds"
    lerobot(
        venv_bin, tmp_path, "record", "--robot.type=armctl", "--robot.arm=mearm", "--teleop.type=armctl",
        f"--teleop.port={hand(tmp_path)}", "--teleop.follower_arm=mearm", "--dataset.repo_id=local/armctl",
        f"--dataset.root={root}", "--dataset.single_task=follow the hand", "--dataset.num_episodes=1",
        "--dataset.episode_time_s=2", "--dataset.push_to_hub=false", "--dataset.video=false",
        f"--dataset.fps={FPS}", "--display_data=false", "--play_sounds=false",
    )  # fmt: skip
    data = pq.read_table(next(Path(root, "data").glob("chunk-*/file-*.parquet")))
    T = np.asarray(data.column("timestamp").to_numpy(), dtype=float)
    A = np.array(data.column("action").to_pylist())
    assert default_arm(read_info(root)) == "mearm"  # the dataset names its arm: armctl replay needs no --arm
    plan = plan_replay(_parse(["--arm", "mearm", "replay", str(root)]))
    arm, cal, traj, P = plan.arm, plan.cal, plan.traj, plan.times_s  # P: when each frame plays
    assert plan.frames == len(T) > 30
    feats = arm_features(arm, cal)
    Q = np.array([feats.pose(a)[0] for a in A])
    with armctl.connect("mearm") as robot:
        m = robot.run(motion.Plan(traj, [], arm), wait=False)
        seen = []
        while not m.done:
            q, _, _, _, index = robot.sample()
            if index >= 0:
                seen.append((index, np.array(q)))
            time.sleep(0.005)
        m.wait()
        end = robot.where(settle=True)
    worst = 0.0
    for index, q in seen:
        t = index * traj.period_s
        want = [np.interp(t, P, Q[:, j]) for j in range(arm.n)]
        worst = max(worst, float(np.abs(q - want).max()))
    print(f"armctl replay of lerobot-record: {len(seen)} samples, worst {math.degrees(worst):.3f} deg from the actions")
    assert len(seen) > 30 and worst <= math.radians(TOL_DEG), math.degrees(worst)
    assert np.abs(end.q_rad - Q[-1]).max() <= math.radians(TOL_DEG)
