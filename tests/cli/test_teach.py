"""armctl teach, as a user would: guide the bus-servo arm by hand (the simulated bus's hook), record poses
with Enter, toggle the gripper with g; the program it writes plans and plays back to the same poses within
1 mm, measured by the servos. On hobby servos it is the keyboard pendant recording into the same file."""

from __future__ import annotations

import os
import re
import sys
import time
from pathlib import Path

import numpy as np
import pytest

import armctl
from armctl.cli import main
from armctl.model.kinematics import fk
from tests.hand_bus import TRUE, true_steps
from tests.terminal import Term

REPO = Path(__file__).resolve().parents[2]
SERVO = "{{name: {}, id: {}, zero_steps: {:g}, direction: {}, min_steps: {}, max_steps: {}}}"
CAL = (
    "version: 1\narm: seed-3link\njoints:\n"
    + "".join(
        f"  - {SERVO.format(n, i, *TRUE[i], 600, 3500)}\n" for n, i in (("shoulder", 1), ("elbow", 2), ("wrist", 3))
    )
    + f"gripper: {SERVO.format('gripper', 6, *TRUE[6], 1850, 2550)}\n"
)
JOINTS_RE = r"joints shoulder\s+(-?[\d.]+) deg\s+elbow\s+(-?[\d.]+) deg\s+wrist\s+(-?[\d.]+) deg"


def _term(tmp_path: Path, port: str, *args: str) -> Term:
    env = dict(os.environ, ARMCTL_STATE_DIR=str(tmp_path / "state"), PYTHONPATH=str(REPO), TERM="xterm")
    argv = [sys.executable, "-m", "armctl", "--port", port, *args]
    return Term(argv, cwd=tmp_path, env=env)


def _guide(sim_bus, q_deg) -> None:
    for sid, angle in zip((1, 2, 3), q_deg):
        assert sim_bus.sim.turn_by_hand(sid, true_steps(sid, angle)), "the servo resisted: its torque is on"


def _shows(t: Term, q_deg, timeout_s: float = 20.0) -> None:
    """Wait until the screen shows the joints within 0.1 deg of ``q_deg`` (a step is 0.09 deg)."""
    deadline = time.monotonic() + timeout_s
    while True:
        m = re.findall(
            r"joints shoulder\s+(-?[\d.]+) deg\s+elbow\s+(-?[\d.]+) deg\s+wrist\s+(-?[\d.]+) deg", t.screen()
        )
        if m and np.allclose([float(v) for v in m[-1]], q_deg, atol=0.1):
            return
        assert time.monotonic() < deadline, f"the screen never showed {q_deg}: {m[-1:] if m else t.screen()[-500:]}"
        t._pump(0.05)


def test_teach_by_hand_records_a_program_that_plays_back(tmp_path, bus):  # noqa: F811
    cal = tmp_path / "bus.yaml"
    cal.write_text(CAL)
    prog = tmp_path / "taught.yaml"
    poses = [(60.0, -80.0, -40.0), (30.0, -60.0, -30.0), (50.0, -100.0, -20.0)]
    t = _term(tmp_path, bus.path, "--calibration", str(cal), "teach", str(prog))
    t.wait("torque off: move the arm by hand")
    for k, q in enumerate(poses):
        _guide(bus, q)
        _shows(t, q)
        if k == 1:
            t.send("g")  # close the gripper before the second record
            t.wait("gripper closed; torque off again")
            _guide(bus, q)  # the arm held still while the gripper moved; it is limp again
        t.send("\r")
        t.wait("name of the pose")
        t.send(f"p{k}\r")
        t.wait(f"recorded 'p{k}'")
    t.send("q")
    assert t.finish() == 0, t.screen()
    text = prog.read_text()
    assert "p0:" in text and "p2:" in text and "gripper: close" in text
    assert main(["--calibration", str(cal), "plan", str(prog), "--summary"]) == 0
    with armctl.connect("seed-3link", bus.path, calibration=cal) as robot:
        robot.run(prog)
        got = robot.where(settle=True)
    want = fk(robot.arm.links_m, np.radians(poses[-1]))
    assert np.hypot(*(got.tool_m - want)) < 1e-3
    assert got.gripper_rad == pytest.approx(robot.arm.gripper.closed_rad, abs=np.radians(0.5))


def test_teach_on_hobby_servos_is_the_pendant(tmp_path):
    prog = tmp_path / "jogged.yaml"
    port = f"armsim://?rate=20&seed=1&state={tmp_path / 'sim.json'}"
    t = _term(tmp_path, port, "teach", str(prog))
    t.wait(r"step")  # the pendant's screen
    t.send("\r")
    t.wait("name of the pose")
    t.send("start\r")
    t.wait("start")
    t.send("q")
    assert t.finish() == 0, t.screen()
    assert "start:" in prog.read_text()


def test_a_gripper_that_cannot_move_says_so_and_the_message_stays(tmp_path, monkeypatch):
    """g with a gripper whose calibrated range does not reach 'closed': the screen says why it did not
    move (the success line must not overwrite it), nothing moved, and the arm is limp again."""
    from armctl.cli.teach import Teach
    from armctl.program.recording import Recorder

    cal = tmp_path / "bus.yaml"
    cal.write_text(CAL.replace("1850, max_steps: 2550", "2300, max_steps: 2550"))  # closed (10 deg) is 1913
    start = ",".join(str(round(true_steps(i, a))) for i, a in ((1, 45), (2, -90), (3, -45), (6, 60)))
    with armctl.connect("seed-3link", f"feetechsim://?ids=1,2,3,6&start={start}", calibration=cal) as robot:
        robot.release()
        teach = Teach(robot, Recorder(tmp_path / "taught.yaml", robot.arm))
        teach.key("g")
        assert teach.message.startswith("gripper not moved:") and "gripper" in teach.message[18:], teach.message
        assert any(teach.message in line for line in teach.screen())
        sim = robot.backend.bus.serial.sim
        assert not sim.servo(6).torque_on and sim.servo(6).present_steps() == round(true_steps(6, 60))
