"""An arm found outside its calibrated range, and stops (issue 33, item 3).

- No stop writes a goal outside the calibration: the backend's stop, which every stop ends in (a motion's, a
  follow's Ctrl-C), holds a servo found outside its range at the nearest end of it.
- An arm whose servo stands outside its range (pushed, left there; here: the simulator's state file says so)
  can always be brought back in, as a keep-out zone is left: a motion that only brings each servo back toward
  its range is played (home, a joint move, the gripper), anything else is refused saying the arm is outside
  and how to bring it back, and nothing moves.
- A calibration a real servo cannot follow (a joint over the whole turn, 0..4095) is refused in one line.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

import armctl
from armctl.bus.feetech.client import SYNC_WRITE, WRITE
from armctl.calibration.servo import load_calibration
from armctl.cli import main
from armctl.errors import ConfigError, PulseLimitError

ROOT = Path(__file__).resolve().parents[2]
MY_ARM = ROOT / "tests/lerobot/so_follower/my_arm.json"
BUS_CAL = """version: 1
arm: seed-3link
joints:
  - {name: shoulder, id: 1, zero_steps: 2048, direction: 1, min_steps: 1024, max_steps: 3072}
  - {name: elbow, id: 2, zero_steps: 2048, direction: -1, min_steps: 512, max_steps: 3584}
  - {name: wrist, id: 3, zero_steps: 2048, direction: 1, min_steps: 512, max_steps: 3584}
gripper: {name: gripper, id: 6, zero_steps: 1500, direction: 1, min_steps: 1600, max_steps: 2300}
"""


@pytest.fixture
def bus_cal(tmp_path):
    path = tmp_path / "seed-3link-bus.yaml"
    path.write_text(BUS_CAL)
    return path


def _goals_written(sim, since: float) -> list[tuple[int, int]]:
    """(id, goal) of every goal_position write (WRITE or SYNC_WRITE at address 42) the servos took after ``since``."""
    out = []
    for t, p in list(sim.log):
        if t < since or not p.params or p.params[0] != 42:
            continue
        if p.code == WRITE:
            out.append((p.id, p.params[1] | p.params[2] << 8))
        elif p.code == SYNC_WRITE:
            size, body = p.params[1], p.params[2:]
            out += [(body[k], body[k + 1] | body[k + 2] << 8) for k in range(0, len(body), size + 1)]
    return out


def test_a_stop_never_writes_a_goal_outside_the_calibration(bus_cal):
    """The gripper overshoots past its range with the torque on (pushed, or a servo going the long way); the
    stop holds it at the end of the range, not where it stands (before: goal 2500 against 1600..2300)."""
    with armctl.connect("seed-3link", "feetechsim://?ids=1,2,3,6&start=2048,2048,2048,2000", calibration=bus_cal) as r:
        r.gripper("close")
        sim = r.backend.bus.serial.sim
        sim.servo(6).raw = 2500.0  # beyond max_steps 2300; its servo limits (0..4095) let it stand there
        since = sim.now
        r.backend.stop()
        r.where()  # a read: the servos have taken the stop's goals
        written = _goals_written(sim, since)
        assert (6, 2300) in written, written
        ranges = {s.id: (s.min_steps, s.max_steps) for s in r.calibration.servos}
        assert all(ranges[i][0] <= g <= ranges[i][1] for i, g in written), written
        assert r.backend.goal[6] == 2300


def test_the_escape_rule():
    cal = load_calibration_text(BUS_CAL)
    g = cal.gripper
    assert cal.check_escape([g], [[2000], [2100]]) is False  # starts inside: the ordinary checks apply
    assert cal.check_escape([g], [[2500], [2400], [2300], [2200]]) is True  # back in, and stays in
    assert cal.check_escape([g], [[2500], [2500]]) is True  # stays put (another servo is brought back)
    with pytest.raises(PulseLimitError, match=r"outside its calibrated range: gripper \(servo 6\) stands at 2500"):
        cal.check_escape([g], [[2500], [2600]])  # further out
    with pytest.raises(PulseLimitError, match=r"gripper \(servo 6\) stands at 2500 .* takes it to 2400"):
        cal.check_escape([g], [[2500], [2200], [2400]])  # back out once in
    s1 = cal.joints[0]
    with pytest.raises(PulseLimitError, match=r"shoulder \(servo 1\) is inside its calibrated 1024..3072"):
        cal.check_escape([s1, g], np.array([[2000, 2500], [900, 2400]]))  # another servo leaves its range


def load_calibration_text(text: str):
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / "c.yaml"
        p.write_text(text)
        return load_calibration(p)


def _put_outside(state: Path, present: dict[int, int], offsets: dict[int, int]) -> None:
    """The simulator's state file: servo id's encoder where its present position reads ``present[id]``."""
    data = json.loads(state.read_text())
    for s in data["servos"]:
        sid = bytes.fromhex(s["eeprom"])[5]
        if sid in present:
            s["raw_steps"] = float((present[sid] + offsets[sid]) % 4096)
            s["sram"] = None  # powered off and on: torque off, goal where it stands
    state.write_text(json.dumps(data))


def _cli(tmp_path, *argv):
    env = {**os.environ, "ARMCTL_STATE_DIR": str(tmp_path / "state"), "ARMCTL_CONFIG_DIR": str(tmp_path / "cfg")}
    cmd = [sys.executable, "-m", "armctl", "--arm", "so101", "--calibration", str(MY_ARM), *argv]
    return subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)


def test_an_arm_found_outside_its_lerobot_range_is_brought_back_by_home(tmp_path):
    """The issue's case: the simulator's state file has the gripper at 3643 against 2023..3511-like limits (here
    my_arm.json's 2027..3447) and the pan past its range; before, home, jog and the gripper were refused until
    the state file was deleted. Now a jog (a line) is refused saying why and how, nothing moves; home brings
    the pan back; the gripper comes back with the first motion (its own limits clamp it on torque on)."""
    assert _cli(tmp_path, "status").returncode == 0  # the simulated bus and its state file
    motors = json.loads(MY_ARM.read_text())
    offsets = {m["id"]: m["homing_offset"] for m in motors.values()}
    state = tmp_path / "state" / "feetechsim-so101.json"
    _put_outside(state, {1: 3400, 6: 3643}, offsets)
    jog = _cli(tmp_path, "jog", "0.25", "0.05", "0.15")
    assert jog.returncode == 3, jog.stderr
    err = jog.stderr.strip()
    assert "\n" not in err and "the arm is outside its joint limits now" in err and "shoulder_pan" in err, err
    assert "armctl home" in err and "by hand" in err, err
    home = _cli(tmp_path, "home")
    assert home.returncode == 0, home.stderr
    status = _cli(tmp_path, "status", "--json")
    servos = {s["id"]: s for s in json.loads(status.stdout)["servos"]}
    for m in motors.values():
        assert m["range_min"] <= servos[m["id"]]["position_steps"] <= m["range_max"], (m, servos[m["id"]])
    again = _cli(tmp_path, "jog", "0.25", "0.05", "0.15")
    assert again.returncode == 0, again.stderr


def test_a_gripper_found_outside_is_brought_back_by_a_gripper_command(bus_cal):
    """Only the gripper is outside (the joints inside): opening or closing it is allowed and brings it in."""
    port = "feetechsim://?ids=1,2,3,6&start=2048,2048,2048,2600"
    with armctl.connect("seed-3link", port, calibration=bus_cal) as r:
        r.gripper("open")
        assert 1600 <= r.backend.bus.serial.sim.servo(6).present_steps() <= 2300


@pytest.mark.parametrize("where", ["yaml", "lerobot"])
def test_a_joint_calibrated_over_the_whole_turn_is_refused(tmp_path, where):
    """Its travel crosses the servo's 0/4095, where the position loop never goes: one line naming the servo and
    the values, exit 2, before anything opens."""
    if where == "yaml":
        cal = tmp_path / "c.yaml"
        cal.write_text(
            BUS_CAL.replace(
                "min_steps: 512, max_steps: 3584}\n  - {name: wrist", "min_steps: 0, max_steps: 4095}\n  - {name: wrist"
            )
        )
        argv = ["--arm", "seed-3link", "--calibration", str(cal), "status"]
    else:
        motors = json.loads(MY_ARM.read_text())
        motors["elbow_flex"].update(range_min=0, range_max=4095)
        cal = tmp_path / "robots" / "so_follower" / "whole.json"
        cal.parent.mkdir(parents=True)
        cal.write_text(json.dumps(motors))
        argv = ["--arm", "so101", "--calibration", str(cal), "status"]
    with pytest.raises(ConfigError, match=r"\(servo [23]\): range 0\.\.4095 steps is the whole turn"):
        armctl.connect(argv[1], calibration=argv[3])
    assert main(argv) == 2


def test_a_follow_stopped_while_a_servo_is_pushed_past_its_range_writes_no_goal_outside_it(tmp_path, monkeypatch):
    """The follower's gripper pushed past its calibrated range while following (or sent the long way round, as
    the simulated bus once did), then the follow is stopped (motion.stop(), as Ctrl-C): neither the follow nor
    its stop writes a goal outside the calibration (before: the stop wrote where the servo stood)."""
    monkeypatch.setenv("ARMCTL_CONFIG_DIR", str(tmp_path / "cfg"))
    hand = ROOT / "examples" / "hand_so101.csv"
    leader = armctl.open_leader(arm="so101", port=f"feetechsim://?hand={hand}")
    with leader, armctl.connect("so101") as robot:
        motion = robot.follow(leader, map="joints", rate_hz=50)
        time.sleep(1.5)
        sim = robot.backend.bus.serial.sim
        gs = robot.calibration.gripper
        sim.servo(gs.id).raw = gs.max_steps + 300.0  # pushed open past its range (offset 0 on this bus)
        motion.stop()
        with pytest.raises(armctl.errors.StopRequested):
            motion.wait()
        robot.where()
        ranges = {s.id: (s.min_steps, s.max_steps) for s in robot.calibration.servos}
        written = [(i, g) for i, g in _goals_written(sim, 0.0) if i in ranges]
        assert written and all(ranges[i][0] <= g <= ranges[i][1] for i, g in written), [
            (i, g) for i, g in written if not ranges[i][0] <= g <= ranges[i][1]
        ]
        assert robot.backend.goal[gs.id] == gs.max_steps
