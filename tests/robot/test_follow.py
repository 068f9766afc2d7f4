"""Leader-follower teleoperation on simulated buses: a simulated SO-101 leader moved by a scripted hand
(``feetechsim://?hand=FILE.csv``), followers on the simulated SO-101 bus and the simulated MeArm board.

Asserted from the follower's own servo log (the goals the simulated bus received, with their times):
- after the start ramp the follower's joints match the leader's (measured on both buses);
- no goal step beyond what the joint speed limit allows in a frame (a quarter of it during the ramp);
- a leader pose beyond the follower's limits is clamped to the limit and reported;
- a leader servo that stops answering stops the follower under control with one line naming it;
- bad inputs (no leader on the port, another model with --map joints, a dataset of another robot or fps,
  an unknown camera) are one line, exit 2 or 4, and the follower's port is never opened.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import time

import numpy as np
import pytest

import armctl
from armctl.bus.feetech.client import SYNC_WRITE
from armctl.calibration.servo import find_calibration, load_calibration
from armctl.cli import main
from armctl.errors import LinkError, StopRequested
from armctl.model.arm import load_arm
from armctl.model.kinematics import tool_point
from tests.helpers import require_module

PERIOD = 1 / 50


@pytest.fixture
def state(user_folders):
    """The test's state folder (user_folders, tests/conftest.py)."""
    return user_folders


def hand_file(path, poses, arm="so101", roll=None):
    """A hand file moving an SO-101 leader through ``poses``: (t_s, [pan, lift, elbow, wrist] deg, gripper deg);
    ``roll``: the wrist roll's steps at each pose (else 2048)."""
    cal = load_calibration(find_calibration(arm))
    rows = ["t_s,id,steps"]
    for k, (t, q, g) in enumerate(poses):
        for s, a in zip(cal.joints, q):
            rows.append(f"{t},{s.id},{float(s.value(math.radians(a))):.2f}")
        rows.append(f"{t},{cal.gripper.id},{float(cal.gripper.value(math.radians(g))):.2f}")
        rows.append(f"{t},5,{2048 if roll is None else roll[k]}")
    path.write_text("\n".join(rows) + "\n")
    return path


def goals(sim, servo_id):
    """(sim time s, goal steps) of every goal the simulated bus received for ``servo_id``."""
    out = []
    for t, p in sim.log:
        if p.code != SYNC_WRITE:
            continue
        params = bytes(p.params)
        size = params[1]
        for k in range(2, len(params), size + 1):
            if params[k] == servo_id:
                out.append((t, int.from_bytes(params[k + 1 : k + 1 + size], "little") & 0x7FFF))
    return out


def run_follow(robot, leader, seconds, **kw):
    frames = []
    m = robot.follow(leader, on_frame=lambda t, q, g, target, meas: frames.append((t, q.copy(), target)), **kw)
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and not m.done:
        time.sleep(0.02)
    return m, frames


def stop(robot, m):
    robot.stop("test over")
    with pytest.raises(StopRequested):
        try:
            m.wait(10)
        except StopRequested:
            raise
        except Exception as exc:  # what ended it, said plainly
            pytest.fail(f"the follow ended with {type(exc).__name__}: {exc}")


def test_so101_follows_so101_joint_to_joint_within_its_speed_limits(tmp_path):
    poses = [
        (0, [0, 76, -74, -5], 10),
        (1.0, [0, 76, -74, -5], 10),
        (3.0, [35, 60, -55, -20], 45),
        (10, [35, 60, -55, -20], 45),
    ]
    leader = armctl.open_leader("so101", f"feetechsim://?hand={hand_file(tmp_path / 'hand.csv', poses)}")
    with leader, armctl.connect("so101") as robot:
        m, frames = run_follow(robot, leader, 4.0)
        lead_q = leader.read().q_rad
        follower = robot.where()
        stop(robot, m)
        sim = robot.backend.bus.serial.sim
        arm, cal = robot.arm, robot.calibration
    assert not m.teleop.status.ramping and m.teleop.status.clamped_frames == 0
    # after the ramp: the follower where the leader is (both measured), and never more than a frame behind
    assert np.max(np.abs(np.degrees(follower.q_rad - lead_q))) < 1.0, (follower.q_deg, np.degrees(lead_q))
    moving = [abs(np.degrees(tg.q_rad - q)).max() for t, q, tg in frames if t - frames[0][0] > 1.5]
    assert max(moving) < 2.5, max(moving)  # 17.5 deg/s: caught up every frame (a stall of 0.14 s would not be)
    # the servo log: no goal step beyond the joint's speed limit in a frame
    for i, s in enumerate(cal.joints):
        g = goals(sim, s.id)
        assert len(g) > 150
        steps = np.abs(np.diff([v for _, v in g]))
        limit = math.degrees(arm.max_speed_rad_s[i]) * s.steps_per_deg * PERIOD
        assert steps.max() <= limit + 1.0, (s.name, steps.max(), limit)
    rate = (len(frames) - 1) / (frames[-1][0] - frames[0][0])
    assert 25 < rate < 55, rate  # (the rate held is measured by bench/follow.py; this machine may be loaded)


def test_the_start_is_a_slow_ramp_from_where_the_follower_is(tmp_path):
    poses = [(0, [70, 90, -60, -20], 40), (20, [70, 90, -60, -20], 40)]  # the leader far from the follower
    leader = armctl.open_leader("so101", f"feetechsim://?hand={hand_file(tmp_path / 'hand.csv', poses)}")
    with leader, armctl.connect("so101") as robot:
        start = robot.where().q_rad
        m, frames = run_follow(robot, leader, 1.5)
        # 70 deg of pan at a quarter of 120 deg/s: still ramping after 1.5 s
        assert m.teleop.status.ramping, (m.done, m.error, m.teleop.status)
        stop(robot, m)
        sim = robot.backend.bus.serial.sim
        arm, cal = robot.arm, robot.calibration
    pan = cal.joints[0]
    g = [v for _, v in goals(sim, pan.id)]
    steps = np.abs(np.diff(g))
    quarter = 0.25 * math.degrees(arm.max_speed_rad_s[0]) * pan.steps_per_deg * PERIOD
    assert steps.max() <= quarter + 1.0 and steps.max() >= quarter - 1.0, (steps.max(), quarter)
    assert abs(g[0] - float(pan.value(start[0]))) <= quarter + 1.0  # it starts where the follower was


def test_a_leader_pose_beyond_the_follower_limits_is_clamped_and_reported(tmp_path):
    arm = load_arm("so101")
    over = math.degrees(arm.q_max[0]) + 12  # the leader's pan beyond the follower's range
    poses = [
        (0, [0, 76, -74, -5], 10),
        (0.5, [0, 76, -74, -5], 10),
        (2.0, [over, 76, -74, -5], 10),
        (9, [over, 76, -74, -5], 10),
    ]
    leader = armctl.open_leader("so101", f"feetechsim://?hand={hand_file(tmp_path / 'hand.csv', poses)}")
    with leader, armctl.connect("so101") as robot:
        m, frames = run_follow(robot, leader, 4.0)
        st = m.teleop.status
        where = robot.where()
        stop(robot, m)
    assert st.clamped_frames > 20 and "shoulder_pan at its limit" in st.clamped and "CLAMPED" in st.line()
    assert max(q[0] for _, q, _ in frames) <= arm.q_max[0] + 1e-9
    assert where.q_rad[0] == pytest.approx(arm.q_max[0], abs=math.radians(0.5))


def test_a_leader_servo_that_stops_answering_stops_the_follower_naming_it(tmp_path):
    poses = [(0, [0, 76, -74, -5], 10), (20, [30, 70, -70, -5], 30)]
    leader = armctl.open_leader("so101", f"feetechsim://?hand={hand_file(tmp_path / 'hand.csv', poses)}")
    with leader, armctl.connect("so101") as robot:
        m, _ = run_follow(robot, leader, 1.0)
        lsim = leader.bus.serial.sim
        lsim.servos.remove(lsim.servo(3))  # the leader's elbow cable comes out
        with pytest.raises(LinkError) as info:
            m.wait(5)
        sim = robot.backend.bus.serial.sim
        sent = len(goals(sim, 1))
        time.sleep(0.3)
        assert len(goals(sim, 1)) == sent + 0  # the follower holds: nothing more is sent
        assert not robot.moving
    text = str(info.value)
    assert "leader servo 3 (elbow_flex)" in text and "the follower was stopped" in text and "\n" not in text


def test_an_so101_leader_moves_a_mearm_by_its_tool_point(tmp_path):
    """--map tool: the leader's tool point about its shoulder, scaled by the reach ratio, is the MeArm's
    (armsim, which measures its joints); a point the MeArm cannot reach is clamped to its reach."""
    poses = [
        (0, [0, 76, -74, -5], 10),
        (1.0, [0, 76, -74, -5], 10),
        (2.5, [25, 60, -60, -5], 50),
        (9, [25, 60, -60, -5], 50),
    ]
    leader = armctl.open_leader("so101", f"feetechsim://?hand={hand_file(tmp_path / 'hand.csv', poses)}")
    with leader, armctl.connect("mearm") as robot:
        m, frames = run_follow(robot, leader, 4.5, map="tool")
        assert not m.done, m.error
        tp = m.teleop
        lq = leader.read().q_rad
        where = robot.where()
        stop(robot, m)
    la, fa = leader.arm, robot.arm
    want = np.array([0, 0, fa.shoulder_height_m]) + tp.scale * (tool_point(la, lq) - [0, 0, la.shoulder_height_m])
    assert tp.scale == pytest.approx(fa.reach_max / la.reach_max)
    if not tp.status.clamped:
        assert np.linalg.norm(where.tool_m - want) < 2e-3, (where.tool_m, want)
    else:
        assert "out of reach" in tp.status.clamped
    # gripper by fraction: the leader at 50 of its 0..60 deg -> the MeArm's at 5/6 of its range
    g = fa.gripper
    assert where.gripper_rad == pytest.approx(g.closed_rad + 5 / 6 * (g.open_rad - g.closed_rad), abs=math.radians(1.5))
    # never a step beyond a joint's limit in a frame (the follower's commands)
    q = np.array([f[1] for f in frames])
    assert np.all(np.abs(np.diff(q, axis=0)) <= fa.max_speed_rad_s * PERIOD + 1e-6)


def test_follow_records_a_dataset_of_what_it_commanded(tmp_path):
    from armctl.dataset.recorder import Recorder, arm_features
    from armctl.dataset.writer import DatasetWriter
    from tests.robot.test_dataset import doctor

    pq = require_module("pyarrow.parquet", "datasets are written as Parquet (armctl[dataset])")
    poses = [
        (0, [0, 76, -74, -5], 10),
        (1.0, [0, 76, -74, -5], 10),
        (3.0, [30, 60, -55, -20], 45),
        (9, [30, 60, -55, -20], 45),
    ]
    leader = armctl.open_leader("so101", f"feetechsim://?hand={hand_file(tmp_path / 'hand.csv', poses)}")
    sent = []
    with leader, armctl.connect("so101") as robot:
        feats = arm_features(robot.arm, robot.calibration)
        writer = DatasetWriter(tmp_path / "ds", robot_type=feats.robot_type, fps=30, state_names=feats.names)
        rec = Recorder(writer, feats)

        def on_frame(t, q, g, target, measured):
            sent.append(feats.values(q, g).astype(np.float32))
            cal = robot.calibration
            qm = [measured[s.channel] for s in cal.joints]
            rec.feed(t, q, g, qm, measured.get(cal.gripper.channel, math.nan))

        m = robot.follow(leader, on_frame=on_frame)
        time.sleep(0.5)
        rec.start_episode("wave")
        time.sleep(3.0)
        stop(robot, m)
        rec.close(save=True)
    doctor(tmp_path / "ds")
    t = pq.read_table(tmp_path / "ds/data/chunk-000/file-000.parquet")
    action = np.array(t.column("action").to_pylist(), dtype=np.float32)
    state = np.array(t.column("observation.state").to_pylist(), dtype=np.float32)
    assert 80 <= len(action) <= 110  # 3 s at 30 fps (and the frames until the stop took)
    sent = np.array(sent)
    # every action is one of the commands sent, in order
    idx = [int(np.argmin(np.abs(sent - a).max(axis=1))) for a in action]
    assert all(np.abs(sent[i] - a).max() == 0 for i, a in zip(idx, action)) and idx == sorted(idx)
    # the state is the measured pose: within the servos' lag of the command (degrees, LeRobot's units)
    assert np.abs(state[:, :4] - action[:, :4]).max() < 3.0
    info = json.loads((tmp_path / "ds/meta/info.json").read_text())
    assert info["robot_type"] == "so_follower" and info["features"]["action"]["names"][0] == "shoulder_pan.pos"
    # LeRobot's degrees: the leader's pan of 30 deg in armctl's angles is -30 in the URDF's (pan axis down)
    assert action[-1, 0] == pytest.approx(-30.0 * 4096 / 4095, abs=0.3)


# --- the command line ------------------------------------------------------------------------------------------


def cli(argv, capsys):
    rc = main(argv)
    out = capsys.readouterr()
    return rc, out.out, out.err


def test_cli_follow_records_an_episode_and_says_where(tmp_path, capsys, state):
    hand = hand_file(tmp_path / "hand.csv", [(0, [0, 76, -74, -5], 10), (4, [20, 70, -70, -5], 30)])
    ds = tmp_path / "ds"
    argv = ["--arm", "so101", "follow", "--leader", f"feetechsim://?hand={hand}", "--duration", "3", "--json"]
    rc, out, err = cli([*argv, "--record-dataset", str(ds), "--task", "wave"], capsys)
    assert rc == 0, err
    report = json.loads(out)
    assert 25 < report["rate_hz"] < 55 and report["episodes_saved"] == [0]
    info = json.loads((ds / "meta/info.json").read_text())
    assert info["total_episodes"] == 1 and 60 <= info["total_frames"] <= 100
    assert json.loads((ds / "meta/armctl.json").read_text())["state_source"] == "measured"


def _sim_files(state):
    return sorted(p.name for p in state.glob("*sim*")) if state.exists() else []


@pytest.mark.parametrize(
    "extra, code, words",
    [
        (["--leader", "feetechsim://?ids=1-3"], 4, "no leader arm 'so101' on feetechsim://?ids=1-3"),
        (["--leader", "feetechsim://", "--map", "joints", "--arm", "mearm"], 2, "--map joints"),
        (
            ["--leader", "feetechsim://", "--record-dataset", "DS", "--task", "x", "--camera", "front=/dev/video99"],
            2,
            "--camera front=/dev/video99",
        ),
        (["--leader", "feetechsim://", "--record-dataset", "DS"], 2, "needs --task"),
        (["--leader", "feetechsim://", "--rate", "1000"], 2, "--rate"),
        (["--leader", "feetechsim://", "--leader-arm", "mearm"], 2, "leader arm 'mearm'"),
    ],
)
def test_cli_bad_inputs_are_one_line_and_nothing_moves(tmp_path, capsys, state, extra, code, words):
    extra = [str(tmp_path / "ds") if e == "DS" else e for e in extra]
    argv = ["--arm", "so101", "follow", *extra]
    if "--arm" in extra:
        i = extra.index("--arm")
        argv = ["--arm", extra[i + 1], "follow", *extra[:i], *extra[i + 2 :]]
    rc, out, err = cli(argv, capsys)
    assert rc == code, err
    assert words in err and err.count("\n") == 1, err
    assert _sim_files(state) == []  # the follower's (simulated) port was never opened


@pytest.mark.parametrize("what", ["robot", "fps"])
def test_cli_refuses_a_dataset_of_another_robot_or_fps(tmp_path, capsys, state, what):
    from armctl.dataset.writer import DatasetWriter

    ds = tmp_path / "ds"
    names = ["a.pos", "b.pos"]
    with DatasetWriter(ds, robot_type="so_follower" if what == "fps" else "koch", fps=30, state_names=names) as w:
        w.start_episode("x")
        w.add_frame([0, 0], [0, 0])
        w.save_episode()
    argv = ["--arm", "so101", "follow", "--leader", "feetechsim://", "--record-dataset", str(ds), "--task", "t"]
    if what == "fps":
        argv += ["--fps", "15"]
    rc, _, err = cli(argv, capsys)
    assert rc == 2 and err.count("\n") == 1, err
    assert ("a dataset of robot 'koch'" if what == "robot" else "at 30 fps, not 15") in err
    assert _sim_files(state) == []


def test_cli_a_lost_leader_is_exit_4_naming_it(tmp_path, capsys, state):
    hand = hand_file(tmp_path / "hand.csv", [(0, [0, 76, -74, -5], 10), (9, [20, 70, -70, -5], 30)])
    argv = ["--arm", "so101", "follow", "--leader", f"feetechsim://?hand={hand}&disconnect=6000", "--duration", "20"]
    t0 = time.monotonic()
    rc, _, err = cli(argv, capsys)
    assert rc == 4 and err.count("\n") == 1, err
    assert "the leader" in err and "follower was stopped" in err
    assert time.monotonic() - t0 < 15  # stopped when the link went, not after the 20 s asked (12 s seen under load)


def test_cli_run_records_each_pass_of_a_top_level_repeat_as_an_episode(tmp_path, capsys, state):
    pq = require_module("pyarrow.parquet", "datasets are written as Parquet (armctl[dataset])")
    from tests.robot.test_dataset import doctor

    prog = tmp_path / "wave.yaml"
    prog.write_text(
        "arm: so101\nposes:\n  a: {q_deg: [0, 80, -80, -5, 0]}\n  b: {q_deg: [20, 90, -70, -10, 0]}\n"
        "steps:\n  - {joint: a}\n  - repeat: 2\n    steps:\n      - {joint: b}\n      - gripper: close\n"
        "      - {joint: a}\n      - gripper: open\n"
    )
    ds = tmp_path / "ds"
    rc, out, err = cli(["run", str(prog), "--record-dataset", str(ds), "--task", "wave", "--json"], capsys)
    assert rc == 0, err
    assert json.loads(out)["episodes_saved"] == [0, 1]
    doctor(ds)
    e = pq.read_table(ds / "meta/episodes/chunk-000/file-000.parquet").to_pylist()
    assert [r["episode_index"] for r in e] == [0, 1] and all(r["length"] > 40 for r in e)
    # the actions are the planned trajectory's poses (LeRobot's units), the states the measured ones
    from armctl.dataset.recorder import arm_features
    from armctl.program import load_program, plan_program

    arm = load_arm("so101")
    cal = load_calibration(find_calibration("so101"))
    traj = plan_program(load_program(prog), arm).trajectory
    feats = arm_features(arm, cal)
    planned = np.array([feats.values(q, g) for q, g in zip(traj.q_rad, traj.gripper_rad)], dtype=np.float32)
    t = pq.read_table(ds / "data/chunk-000/file-000.parquet")
    action = np.array(t.column("action").to_pylist(), dtype=np.float32)
    gap = [np.abs(planned - a).max(axis=1).min() for a in action]
    assert max(gap) < 0.1, max(gap)  # each action is a sample of the plan (servo steps: 0.09 deg)


def test_python_api_names():
    assert callable(armctl.open_leader) and armctl.DatasetWriter.__name__ == "DatasetWriter"
    assert "open_leader" in armctl.__all__ and "DatasetWriter" in armctl.__all__
    assert os.environ.get("ARMCTL_STATE_DIR")


@pytest.mark.skipif(os.name == "nt", reason="Windows has no SIGTERM to catch (TerminateProcess ends at once)")
def test_cli_sigterm_stops_the_follower_under_control_and_keeps_the_episode(tmp_path, state):
    import signal
    import subprocess
    import sys

    pq = require_module("pyarrow.parquet", "datasets are written as Parquet (armctl[dataset])")
    hand = hand_file(tmp_path / "hand.csv", [(0, [0, 76, -74, -5], 10), (20, [30, 70, -70, -5], 30)])
    ds = tmp_path / "ds"
    cmd = [sys.executable, "-m", "armctl", "--arm", "so101", "follow", "--leader", f"feetechsim://?hand={hand}"]
    cmd += ["--record-dataset", str(ds), "--task", "wave"]
    env = {**os.environ, "ARMCTL_STATE_DIR": str(state)}
    proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    time.sleep(4.0)
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 143, err
    assert err.decode() == "armctl follow: stopped by SIGTERM (the arm holds its pose)\n", err
    t = pq.read_table(ds / "data/chunk-000/file-000.parquet")
    assert t.num_rows > 30  # the episode being recorded was kept


def test_cli_enter_ends_and_starts_episodes_and_d_discards(tmp_path, state):
    """Without a terminal: the first episode starts once the follower has caught up; an empty line (Enter)
    ends it (saved), the next starts one, ``d`` discards it, ``q`` ends the follow."""
    import subprocess
    import sys

    pq = require_module("pyarrow.parquet", "datasets are written as Parquet (armctl[dataset])")
    hand = hand_file(tmp_path / "hand.csv", [(0, [0, 76, -74, -5], 10), (20, [30, 70, -70, -5], 30)])
    ds = tmp_path / "ds"
    cmd = [sys.executable, "-m", "armctl", "--arm", "so101", "follow", "--leader", f"feetechsim://?hand={hand}"]
    cmd += ["--record-dataset", str(ds), "--task", "wave", "--json"]
    env = {**os.environ, "ARMCTL_STATE_DIR": str(state)}
    proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    for line, wait in (("", 3.0), ("", 1.0), ("d", 1.0), ("", 1.5), ("", 0.5), ("q", 0.0)):
        time.sleep(wait)
        proc.stdin.write((line + "\n").encode())
        proc.stdin.flush()
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err
    report = json.loads(out)
    assert report["episodes_saved"] == [0, 1] and report["episodes_discarded"] == 1, report
    e = pq.read_table(ds / "meta/episodes/chunk-000/file-000.parquet").to_pylist()
    assert [r["episode_index"] for r in e] == [0, 1]
    assert 5 <= e[1]["length"] <= 40  # 0.5 s at 30 fps, give or take the machine's load


def test_a_leader_with_lerobots_calibration_drives_the_follower(tmp_path, monkeypatch):
    """``--leader-calibration lerobot:ID``: LeRobot's own file for the leader (teleoperators/so_leader), read as
    LeRobot reads it (zero at the middle of each range = the URDF's zero pose)."""
    root = tmp_path / "lerobot-cal"
    monkeypatch.setenv("HF_LEROBOT_CALIBRATION", str(root))
    motors = {"shoulder_pan": 1, "shoulder_lift": 2, "elbow_flex": 3, "wrist_flex": 4, "wrist_roll": 5, "gripper": 6}
    body = {"drive_mode": 0, "homing_offset": 0, "range_min": 1000, "range_max": 3096}
    cal = {n: {"id": i, **body} for n, i in motors.items()}
    cal["wrist_roll"].update(range_min=0, range_max=4095)
    cal["gripper"].update(range_min=2000, range_max=3400)
    (root / "teleoperators/so_leader").mkdir(parents=True)
    (root / "teleoperators/so_leader/my_leader.json").write_text(json.dumps(cal, indent=4))
    leader = armctl.open_leader("so101", "feetechsim://?ids=1-6", calibration="lerobot:my_leader")
    with leader, armctl.connect("so101") as robot:
        zero = np.array([off for _, off, _ in robot.arm.urdf_map])
        assert np.allclose(leader.read().q_rad, zero, atol=math.radians(0.1))  # every servo at 2048: the middle
        m, _ = run_follow(robot, leader, 2.5)
        where = robot.where()
        stop(robot, m)
    assert np.max(np.abs(np.degrees(where.q_rad - zero))) < 0.5, where.q_deg


def test_a_mearm_on_a_pca9685_follows_too(tmp_path):
    """A host-timed board with no feedback (the simulated PCA9685): the same loop, the goals written as they
    come; the chip's pulses end where the leader's tool point maps to."""
    poses = [
        (0, [0, 76, -74, -5], 10),
        (0.5, [0, 76, -74, -5], 10),
        (1.5, [20, 70, -65, -5], 40),
        (9, [20, 70, -65, -5], 40),
    ]
    leader = armctl.open_leader("so101", f"feetechsim://?hand={hand_file(tmp_path / 'hand.csv', poses)}")
    # a fresh simulated chip (no pulses, nothing reads the servos): the arm stands at home, in our word
    with leader, armctl.connect("mearm", backend="pca9685", calibration="mearm-pca9685", assume_pose="home") as robot:
        m, frames = run_follow(robot, leader, 3.5, map="tool")
        assert not m.done, m.error
        tp = m.teleop
        lq = leader.read().q_rad
        where = robot.where()  # from the pulses the chip outputs
        stop(robot, m)
    la, fa = leader.arm, robot.arm
    want = np.array([0, 0, fa.shoulder_height_m]) + tp.scale * (tool_point(la, lq) - [0, 0, la.shoulder_height_m])
    assert where.source == "commanded" and not tp.status.clamped
    assert np.linalg.norm(where.tool_m - want) < 3e-3, (where.tool_m, want)
    q = np.array([f[1] for f in frames])
    assert np.all(np.abs(np.diff(q, axis=0)) <= fa.max_speed_rad_s * PERIOD + 1e-6)


def test_cli_episode_s_and_episodes_record_back_to_back_then_stop(tmp_path, capsys, state):
    hand = hand_file(tmp_path / "hand.csv", [(0, [0, 76, -74, -5], 10), (9, [20, 70, -70, -5], 30)])
    ds = tmp_path / "ds"
    argv = ["--arm", "so101", "follow", "--leader", f"feetechsim://?hand={hand}", "--json"]
    argv += ["--record-dataset", str(ds), "--task", "wave", "--episode-s", "1", "--episodes", "2"]
    rc, out, err = cli(argv, capsys)
    assert rc == 0, err
    report = json.loads(out)
    assert report["episodes_saved"] == [0, 1] and report["stopped"] == "2 episodes recorded", report
    info = json.loads((ds / "meta/info.json").read_text())
    assert info["total_episodes"] == 2 and 40 <= info["total_frames"] <= 70  # 2 x 1 s at 30 fps


def test_cli_follow_with_a_camera_writes_a_video_frame_for_frame(tmp_path, capsys, state):
    av = require_module("av", "camera video is encoded with PyAV (armctl[dataset])")
    require_module("cv2", "camera frames come through OpenCV (armctl[dataset])")
    from tests.robot.test_dataset import _source_video, doctor

    clip = tmp_path / "clip.mkv"
    _source_video(clip, 200)
    hand = hand_file(tmp_path / "hand.csv", [(0, [0, 76, -74, -5], 10), (9, [20, 70, -70, -5], 30)])
    ds = tmp_path / "ds"
    argv = ["--arm", "so101", "follow", "--leader", f"feetechsim://?hand={hand}", "--duration", "2.5", "--json"]
    rc, out, err = cli([*argv, "--record-dataset", str(ds), "--task", "wave", "--camera", f"front={clip}"], capsys)
    assert rc == 0, err
    doctor(ds)
    info = json.loads((ds / "meta/info.json").read_text())
    with av.open(str(ds / "videos/observation.images.front/chunk-000/file-000.mp4")) as c:
        decoded = sum(1 for _ in c.decode(video=0))
    assert decoded == info["total_frames"] > 40
    assert json.loads((ds / "meta/armctl.json").read_text())["cameras"] == {"front": str(clip)}


def test_max_lag_deg_stops_a_follower_left_too_far_behind(tmp_path):
    """A leader that jumps (faster than the follower may turn) after the ramp: with ``max_lag_deg`` the follower
    stops under control once a joint is that far behind, with one line naming it."""
    from armctl.errors import MotionError

    poses = [
        (0, [0, 76, -74, -5], 10),
        (1.5, [0, 76, -74, -5], 10),
        (1.6, [60, 76, -74, -5], 10),
        (9, [60, 76, -74, -5], 10),
    ]
    leader = armctl.open_leader("so101", f"feetechsim://?hand={hand_file(tmp_path / 'hand.csv', poses)}")
    with leader, armctl.connect("so101") as robot:
        m, frames = run_follow(robot, leader, 4.0, max_lag_deg=10)
        with pytest.raises(MotionError) as info:
            m.wait(5)
        assert not robot.moving
    text = str(info.value)
    assert "joint 1 (shoulder_pan) lagged the leader by" in text and "--max-lag-deg 10" in text and "\n" not in text
    q = np.array([f[1] for f in frames])  # it never jumped: at most a frame's worth of its speed limit a frame
    assert np.all(np.abs(np.diff(q[:, 0])) <= load_arm("so101").max_speed_rad_s[0] * PERIOD + 1e-6)


def test_the_follow_motion_stops_by_itself_with_its_reason(tmp_path):
    """``robot.follow`` returns the usual Motion, with stop/cancel/wait (the issue's words): ``motion.stop(why)``
    ends the follow under control, ``wait()`` raises StopRequested naming why, the follower holds and the
    Robot takes the next motion."""
    poses = [(0, [0, 76, -74, -5], 10), (20, [0, 76, -74, -5], 10)]
    leader = armctl.open_leader("so101", f"feetechsim://?hand={hand_file(tmp_path / 'hand.csv', poses)}")
    with leader, armctl.connect("so101") as robot:
        m, _ = run_follow(robot, leader, 1.0)
        assert not m.done, m.error
        m.stop("enough for today")
        with pytest.raises(StopRequested, match="enough for today"):
            m.wait(10)
        assert m.cancelled() and m.stop_reason == "enough for today"
        held = np.array(m.end_q_rad)
        assert np.max(np.abs(np.degrees(robot.where(settle=True).q_rad - held))) < 0.5
        robot.move_joints([5, 76, -74, -5, 0], degrees=True)  # the Robot goes on


@pytest.mark.parametrize(
    "extra, code",
    [
        (["--camera", "front=7"], 2),  # no camera 7: OpenCV and FFmpeg print their own warnings unless told not to
        (["--camera", "front=http://127.0.0.1:9/x.mjpg"], 2),
        ([], 4),  # no leader on the port
    ],
)
def test_cli_a_refused_recording_is_one_line_in_a_fresh_process_and_leaves_no_folder(tmp_path, state, extra, code):
    """Bad inputs in a fresh process: stderr is the one line armctl prints (the C libraries' warnings too), and a
    dataset folder armctl would have made is not left behind empty."""
    ds = tmp_path / "new" / "demos"
    leader = "feetechsim://?ids=1-6" if extra else "feetechsim://?ids=1-3"
    argv = ["--arm", "so101", "follow", "--leader", leader, "--record-dataset", str(ds), "--task", "x", *extra]
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENCV_")}
    p = subprocess.run([sys.executable, "-m", "armctl", *argv], capture_output=True, text=True, env=env, timeout=120)
    assert p.returncode == code, p.stderr
    assert p.stderr.count("\n") == 1 and p.stderr.startswith("armctl follow: error: "), p.stderr
    assert not ds.exists()
    assert _sim_files(state) == []  # the follower's (simulated) port was never opened


def test_a_follower_with_keep_out_zones_holds_at_them_and_follows_on(tmp_path):
    """Keep-out zones are checked on every move (README); a follow too: a leader that takes the tool into a box
    on the follower's bench makes the follower hold at the zone (reported as clamped), never in it, and follow
    again once the leader comes back up."""
    from armctl.model.zones import Zone, Zones, pose_refusal

    poses = [
        (0, [0, 76, -74, -5], 10),
        (1.0, [0, 76, -74, -5], 10),
        (2.5, [0, 40, -30, -40], 10),  # the tool at (390, 0, 137) mm: in the box, whose top is at 170 mm
        (4.0, [0, 40, -30, -40], 10),
        (5.0, [0, 70, -66, -5], 10),  # back above it
        (20, [0, 70, -66, -5], 10),
    ]
    zones = Zones((Zone("box", "box 'tray'", lo=(0.3, -0.05, 0.0), hi=(0.45, 0.05, 0.17)),), link_radius_m=0.0)
    arm = load_arm("so101").with_zones(zones)
    leader = armctl.open_leader("so101", f"feetechsim://?hand={hand_file(tmp_path / 'hand.csv', poses)}")
    with leader, armctl.connect(arm) as robot:
        m, frames = run_follow(robot, leader, 3.8)
        assert not m.done, m.error
        assert "keep-out zone" in m.teleop.status.line()  # held at the box now, and the status line says so
        held = robot.where(settle=True)
        deadline = time.monotonic() + 3.5
        while time.monotonic() < deadline and not m.done:
            time.sleep(0.05)
        end, lead = robot.where(), leader.read().q_rad
        stop(robot, m)
    assert m.teleop.status.clamped_frames > 10
    q = [f[1] for f in frames]
    assert all(pose_refusal(arm, zones, qi) is None for qi in q)  # never a commanded pose in the table
    assert abs(held.tool_m[2] - 0.17) < 0.01, held.tool_m  # it stopped on the box, not short of it
    assert np.max(np.abs(np.degrees(end.q_rad - lead))) < 1.0, (end.q_deg, np.degrees(lead))  # following again


def test_cli_a_camera_that_stops_mid_episode_stops_the_follow_at_once_naming_it(tmp_path, capsys, state, monkeypatch):
    """A live camera that stops giving frames (unplugged) while recording: the follow stops under control at once
    with one line naming the camera (exit 4), rather than following on with nothing recorded until the end."""
    require_module("av", "camera video is encoded with PyAV (armctl[dataset])")
    require_module("cv2", "camera frames come through OpenCV (armctl[dataset])")
    from armctl.dataset.camera import Camera
    from tests.robot.test_dataset import _source_video

    clip = tmp_path / "clip.mkv"
    _source_video(clip, 200)
    calls = {"n": 0}
    grab = Camera.grab

    def unplugged(self):
        calls["n"] += 1
        if calls["n"] > 20:
            raise LinkError(f"camera {self.name} ({self.source}) stopped giving frames")
        return grab(self)

    monkeypatch.setattr(Camera, "grab", unplugged)
    hand = hand_file(tmp_path / "hand.csv", [(0, [0, 76, -74, -5], 10), (30, [20, 70, -70, -5], 30)])
    argv = ["--arm", "so101", "follow", "--leader", f"feetechsim://?hand={hand}", "--duration", "25"]
    argv += ["--record-dataset", str(tmp_path / "ds"), "--task", "wave", "--camera", f"front={clip}"]
    t0 = time.monotonic()
    rc, out, err = cli(argv, capsys)
    assert rc == 4 and err.count("\n") == 1 and "camera front" in err and "stopped giving frames" in err, err
    assert time.monotonic() - t0 < 15  # not at the end of --duration


def test_cli_run_stops_when_its_camera_stops(tmp_path, capsys, state, monkeypatch):
    """run --record-dataset: a camera that stops giving frames stops the run under control at once (exit 4,
    one line naming it); no episode of that run is kept."""
    require_module("av", "camera video is encoded with PyAV (armctl[dataset])")
    require_module("cv2", "camera frames come through OpenCV (armctl[dataset])")
    from armctl.dataset.camera import Camera
    from tests.robot.test_dataset import _source_video

    clip = tmp_path / "clip.mkv"
    _source_video(clip, 200)
    calls = {"n": 0}
    grab = Camera.grab

    def unplugged(self):
        calls["n"] += 1
        if calls["n"] > 10:
            raise LinkError(f"camera {self.name} ({self.source}) stopped giving frames")
        return grab(self)

    monkeypatch.setattr(Camera, "grab", unplugged)
    prog = tmp_path / "slow.yaml"
    prog.write_text(
        "arm: so101\nposes:\n  a: {q_deg: [0, 80, -80, -5, 0]}\n  b: {q_deg: [60, 90, -70, -10, 0]}\n"
        "steps:\n  - repeat: 4\n    steps:\n      - {joint: b}\n      - {joint: a}\n"
    )
    from armctl.program import load_program, plan_program

    planned_s = plan_program(load_program(prog), load_arm("so101")).trajectory.duration_s
    ds = tmp_path / "ds"
    t0 = time.monotonic()
    rc, out, err = cli(
        ["run", str(prog), "--record-dataset", str(ds), "--task", "t", "--camera", f"front={clip}"], capsys
    )
    took = time.monotonic() - t0
    assert rc == 4 and err.count("\n") == 1 and "camera front" in err, err
    assert planned_s > 5 and took < planned_s - 2, (took, planned_s)  # stopped, not played to the end
    assert not (ds / "meta/info.json").exists()


ROLL_POSES = [(0, [0, 76, -74, -5], 10), (1.0, [0, 76, -74, -5], 10), (2.0, [0, 76, -74, -5], 10)]
ROLL_POSES += [(20, [0, 76, -74, -5], 10)]
ROLL_STEPS = [2048, 2048, 2448, 2448]  # the leader's wrist roll turned 35 deg by hand


def test_the_so101_wrist_roll_follows_the_leaders_within_its_speed(tmp_path):
    """The SO-101's wrist roll is a joint of both arms (--map joints): the follower's turns as the leader's does,
    never faster than the joint's speed limit."""
    hand = hand_file(tmp_path / "hand.csv", ROLL_POSES, roll=ROLL_STEPS)
    leader = armctl.open_leader("so101", f"feetechsim://?hand={hand}")
    with leader, armctl.connect("so101") as robot:
        m, frames = run_follow(robot, leader, 4.0)
        assert not m.done, m.error
        stop(robot, m)
        roll_now = robot.where(settle=True).q_rad[robot.arm.roll_index]
        sim = robot.backend.bus.serial.sim
        servo = robot.calibration.joints[robot.arm.roll_index]
        speed = robot.arm.max_speed_rad_s[robot.arm.roll_index]
    assert servo.id == 5 and float(servo.value(roll_now)) == pytest.approx(2448, abs=2), roll_now
    g = [v for _, v in goals(sim, 5)]
    assert len(g) > 100 and abs(g[-1] - 2448) <= 1, g[-5:]
    assert np.abs(np.diff(g)).max() <= math.degrees(speed) * 4096 / 360 * PERIOD * 1.01, np.abs(np.diff(g)).max()


def test_cli_follow_records_the_wrist_roll_it_follows(tmp_path, capsys, state):
    pq = require_module("pyarrow.parquet", "datasets are written as Parquet (armctl[dataset])")
    hand = hand_file(tmp_path / "hand.csv", ROLL_POSES, roll=ROLL_STEPS)
    ds = tmp_path / "ds"
    argv = ["--arm", "so101", "follow", "--leader", f"feetechsim://?hand={hand}", "--duration", "4"]
    rc, out, err = cli([*argv, "--record-dataset", str(ds), "--task", "roll"], capsys)
    assert rc == 0, err
    t = pq.read_table(ds / "data/chunk-000/file-000.parquet")
    roll_deg = (2448 - 2047.5) * 360 / 4095  # LeRobot's degrees for the leader's roll
    action = np.array(t.column("action").to_pylist())[:, 4]
    state_ = np.array(t.column("observation.state").to_pylist())[:, 4]
    assert abs(action[-1] - roll_deg) < 0.2 and abs(state_[-1] - roll_deg) < 0.3, (action[-3:], state_[-3:])
    assert np.ptp(action) > 30  # it turned while recording
