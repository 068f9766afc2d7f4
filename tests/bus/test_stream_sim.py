"""End to end through the real encoder/decoder: programs streamed to the simulated arm by the Robot."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pytest

from armctl import connect
from armctl.bus.backend import BoardStatus, Capabilities
from armctl.calibration.servo import load_calibration
from armctl.core.paths import PRESET_CALIBRATION_DIR
from armctl.errors import LinkError
from armctl.model.arm import load_arm
from armctl.model.kinematics import fk
from armctl.program import load_program, plan_program
from armctl.robot.robot import Robot
from armctl.robot.state import save_last_pose
from armctl.robot.stream import prepare, segments

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def _setup(name="seed-3link", program="pick_and_place.yaml"):
    arm = load_arm(name)
    cal = load_calibration(PRESET_CALIBRATION_DIR / f"{name}.yaml")
    plan = plan_program(load_program(EXAMPLES / program), arm)
    return arm, cal, plan


def _settle(backend):
    sim, ser = backend.ser.sim, backend.ser
    for _ in range(200):
        sim.pump(ser.sim_time_s())
        if sim.settle_s() < 1e-9:
            return
        time.sleep(0.005)


def _check_pulses(sim, arm, cal, *, start_s=0.0):
    """Every recorded pulse within min/max; joint speeds (from consecutive frames) within the limits."""
    for s in cal.servos:
        rec = [(t, w) for t, ch, w in sim.pulses if ch == s.channel and t >= start_s]
        widths = np.array([w for _, w in rec if w is not None])
        assert np.all(widths >= s.min_us) and np.all(widths <= s.max_us), s.name
    for i, s in enumerate(cal.joints):
        rec = [(t, w) for t, ch, w in sim.pulses if ch == s.channel and w is not None and t >= start_s]
        t = np.array([r[0] for r in rec])
        q = cal.joints[i].angle_rad(np.array([r[1] for r in rec]))
        if len(t) > 1:
            speed = np.abs(np.diff(q)) / np.maximum(np.diff(t), 0.02)
            assert speed.max() <= arm.max_speed_rad_s[i] * 1.02, s.name


@pytest.mark.parametrize(
    ("name", "program"), [("seed-3link", "pick_and_place.yaml"), ("seed-2link", "pick_and_place_2link.yaml")]
)
def test_program_on_sim(name, program):
    arm, cal, plan = _setup(name, program)
    traj = plan.trajectory
    with connect(name, f"armsim://{name}?rate=20&seed=5") as robot:
        result = robot.run(plan).result
        _settle(robot.backend)
        sim = robot.backend.ser.sim
        assert np.linalg.norm(sim.tool_m() - fk(arm.links_m, traj.q_rad[-1])) < 1e-3
        _check_pulses(sim, arm, cal)
        assert result.frames == len(traj) - 1
        counters = robot.board_status().counters
    assert counters["rej"] == 0 and counters["crc"] == 0


def test_merged_segments_reproduce_every_sample():
    arm, cal, plan = _setup()
    p = prepare(plan.trajectory, cal)
    segs = list(segments(p.us))
    assert len(segs) < len(p.us) / 3  # merging pays
    a = 0
    for b, frames in segs:
        assert frames == b - a
        k = np.arange(1, b - a + 1)[:, None]
        line = p.us[a] + (p.us[b] - p.us[a]) * k / (b - a)
        assert np.max(np.abs(line - p.us[a + 1 : b + 1])) <= 0.5 + 1e-9
        a = b
    assert a == len(p.us) - 1


def test_ramp_from_elsewhere_is_slow():
    """The simulated arm starts away from the program's start: the first motion is a slow ramp, no jump."""
    arm, cal, plan = _setup()
    with connect(arm, "armsim://?rate=20&start=0,0,0") as robot:
        # the host declares where the arm is (its stored pose): straight out
        save_last_pose(robot.port, arm, [0.0, 0.0, 0.0], arm.gripper.open_rad)
        result = robot.run(plan).result
        assert result.ramp_frames > 0
        _check_pulses(robot.backend.ser.sim, arm, cal)
        first = [w for t, ch, w in robot.backend.ser.sim.pulses if ch == 0][:1]
        assert first == [1500.0]  # set where the arm is, not where the program starts


class _HeldBoard:
    """A board that reports fixed pulses (for the start pose alone)."""

    name, port, info, caps = "fake", "fake://", None, Capabilities(reports_pulses=True)

    def __init__(self, widths):
        self.widths = tuple(widths)

    def status(self):
        return BoardStatus(values=self.widths)


def test_a_pose_on_a_joint_limit_reads_back_inside_it():
    """Commanded right at a limit, a joint's pulse is rounded to the board's 0.5 us; read back, the angle
    may lie beyond the limit by a fraction of a step. The next move must still start from there."""
    from armctl.calibration.servo import with_servo

    arm, cal, _ = _setup()
    q = np.array(arm.home_rad)
    q[0] = arm.q_max[0]
    for offset in np.arange(0.05, 0.5, 0.05):  # a calibration whose limit pulse rounds outwards
        c = with_servo(cal, 0, zero_us=cal.joints[0].zero_us + offset)
        widths = [None] * 4
        for i, s in enumerate(c.servos):
            widths[s.channel] = float(np.round(s.pulse_us(q[i] if i < 3 else arm.gripper.open_rad) / 0.5) * 0.5)
        if c.joints[0].angle_rad(widths[c.joints[0].channel]) > arm.q_max[0]:
            break
    else:
        pytest.fail("no calibration offset rounds the limit pulse outwards")
    robot = Robot(arm, c, _HeldBoard(widths), "fake://", calibration_path=Path(c.source))
    pose = robot.where()
    assert pose.source == "commanded" and pose.q_rad[0] == arm.q_max[0] and arm.within_limits(pose.q_rad)
    # and beyond one step it is not quietly moved: that arm really is outside its limits
    widths[c.joints[0].channel] += 2.0 * c.joints[0].direction
    robot.backend.widths = tuple(widths)
    assert robot.where().q_rad[0] > arm.q_max[0]


@pytest.mark.parametrize("fault", ["drop=0.01", "corrupt=0.01", "drop=0.01&corrupt=0.01&delay=5"])
def test_faults_complete_with_no_wrong_pulse(fault):
    arm, cal, plan = _setup()
    traj = plan.trajectory
    with connect(arm, "armsim://?rate=20&seed=9") as robot:
        robot.run(plan)
        clean = [(ch, w) for _, ch, w in robot.backend.ser.sim.pulses]
    with connect(arm, f"armsim://?rate=20&seed=9&{fault}") as robot:
        robot.run(plan)
        sim = robot.backend.ser.sim
        faulty = [(ch, w) for _, ch, w in sim.pulses]
        assert sum(sim.faults.values()) > 0
        _settle(robot.backend)
        assert np.linalg.norm(sim.tool_m() - fk(arm.links_m, traj.q_rad[-1])) < 1e-3
    # the sequence of pulse widths per channel is the same: nothing skipped, repeated or corrupted
    for ch in range(4):
        assert [w for c, w in faulty if c == ch] == [w for c, w in clean if c == ch]


def test_disconnect_mid_program_names_the_step_and_sends_nothing_more():
    arm, cal, plan = _setup()
    robot = connect(arm, "armsim://?rate=20&disconnect=3000")
    sim = robot.backend.ser.sim
    try:
        with pytest.raises(LinkError, match=r"lost the link.*disconnect.*during .*nothing more was sent"):
            robot.run(plan)
        assert sim.writes_after_disconnect == 0
        assert sim.host_bytes == 3000
    finally:
        robot.close()
    assert sim.writes_after_disconnect == 0  # close() did not try either
