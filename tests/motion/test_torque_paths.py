"""Every path a motion takes to the servos goes through the torque check (``armctl.motion.torque``): the Robot's
moves and programs (``robot.payload_kg``, ``robot.torque_check``), a follow of tool targets (the follower holds
where a goal asks a servo too much, and says why), and a ROS joint trajectory (refused, naming the point). Refused
before anything moves: the simulated arm's pulses are unchanged."""

from __future__ import annotations

import math

import numpy as np
import pytest

import armctl
from armctl.errors import BadInputError, TorqueLimitError
from armctl.model.arm import load_arm
from armctl.model.kinematics import tool_point
from armctl.motion.torque import carrying
from armctl.program import load_program_text
from armctl.ros.messages import Refused, TrajectoryPoint, check_trajectory, ros_joints

FAST = "armsim://?rate=50&seed=1"
SO101 = load_arm("so101")


def _pulses(robot):
    def read(backend):
        sim = backend.ser.sim
        sim.pump(backend.ser.sim_time_s())
        return list(sim.pulses)

    return robot.call(read)


def test_a_robot_carrying_too_much_refuses_the_move_and_moves_nothing():
    with armctl.connect("mearm", FAST) as robot:
        assert robot.payload_kg == 0.0 and robot.torque_check
        robot.move_to(0.15, 0.04, 0.05)
        before = _pulses(robot)
        robot.payload_kg = 0.15
        with pytest.raises(TorqueLimitError, match=r"with the 150 g part; an SG90 gives 1\.8 at 4\.8 V") as err:
            robot.move_to(0.15, 0.04, 0.02)
        assert err.value.exit_code == 3 and robot.arm.joint_names[err.value.joint] in ("shoulder", "elbow")
        assert _pulses(robot) == before  # not one pulse changed
        with pytest.raises(BadInputError, match="payload"):
            robot.payload_kg = -1.0
        robot.torque_check = False  # forced through: the move is played
        robot.move_to(0.15, 0.04, 0.02)
        assert _pulses(robot) != before
        robot.torque_check = True
        robot.payload_kg = 0.0
        robot.move_to(0.15, 0.04, 0.05)  # and the arm still works
        with pytest.raises(BadInputError, match="torque_check"):
            robot.torque_check = "no"


PROGRAM = """\
arm: mearm
payload_g: {payload}
steps:
  - line: {{xyz_mm: [150, 40, 60]}}
  - line: {{xyz_mm: [150, 40, 20]}}
"""


def test_robot_run_checks_the_programs_payload():
    with armctl.connect("mearm", FAST) as robot:
        before = _pulses(robot)
        with pytest.raises(TorqueLimitError, match=r"^prog\.yaml:4: \w+ needs .* at step 1 .*with the 150 g part"):
            robot.run(load_program_text(PROGRAM.format(payload=150), "prog.yaml"))
        assert _pulses(robot) == before
        robot.payload_kg = 0.15  # the program's own payload_g wins over the robot's
        robot.run(load_program_text(PROGRAM.format(payload=0), "prog.yaml"))


def _out(arm):
    """SO-101 at its zero pose (out in front): holding 120 g there asks more than 60% of shoulder_lift's STS3215."""
    q = np.array(arm.home_rad)
    q[1:4] = 0.0
    return q


def test_a_follow_holds_where_a_target_asks_too_much_and_says_why():
    with armctl.connect("so101") as robot:
        robot.payload_kg = 0.12
        home = np.array(robot.where().q_rad)
        far = tool_point(robot.arm, _out(robot.arm))
        near = tool_point(robot.arm, home)
        targets = [{"x": p[0], "y": p[1], "z": p[2]} for p in np.linspace(near, far, 40)]
        m = robot.follow(iter(targets))
        m.wait(30)
        status = m.teleop.status
        where = robot.where()
    assert status.clamped_frames > 0
    assert status.clamped.startswith("held: shoulder_lift needs ") and "with the 120 g part" in status.clamped
    assert np.linalg.norm(where.tool_m - far) > 0.02  # it did not go out there


def test_a_ros_trajectory_asking_too_much_is_refused_at_its_point():
    arm = carrying(SO101, 0.12)
    home, out = np.array(SO101.home_rad), _out(SO101)
    rj = ros_joints(SO101)  # the SO-101's names and angles on the topics are the URDF's
    pts = [TrajectoryPoint(list(rj.to_ros(q)), t) for q, t in ((home + 0.1 * (out - home), 1.0), (out, 3.0))]
    with pytest.raises(Refused) as err:
        check_trajectory(arm, rj.joints, pts, home, math.nan)
    e = err.value
    assert e.kind == "torque" and e.point == 1 and e.field == "points[1].positions"
    assert "shoulder_lift needs " in str(e) and "on the way to it, t = " in str(e) and "with the 120 g part" in str(e)
    ok = check_trajectory(SO101, rj.joints, pts, home, math.nan)
    assert ok.duration_s == pytest.approx(3.0)


def test_a_ros_trajectory_is_checked_with_the_accelerations_its_points_give():
    """Points joined by straight lines: holding torques everywhere, and at a point the acceleration it gives (a
    change of speed there without one is the servos' to smooth)."""
    seed = load_arm("seed-3link")  # a horizontal arm: only the acceleration asks anything
    q0 = np.array(seed.home_rad)
    q1, q2 = q0 + np.radians([20.0, -15.0, 10.0]), np.radians([30.0, -60.0, -20.0])
    names = ["shoulder", "elbow", "wrist"]
    plain = [TrajectoryPoint(list(q1), 1.5), TrajectoryPoint(list(q2), 3.0)]
    assert check_trajectory(seed, names, plain, q0, math.nan).duration_s == pytest.approx(3.0)
    hard = [TrajectoryPoint(list(q1), 1.5, accelerations=[30.0, 0.0, 0.0]), plain[1]]
    with pytest.raises(Refused) as err:
        check_trajectory(seed, names, hard, q0, math.nan)
    e = err.value
    assert e.kind == "torque" and e.point == 0 and e.field == "points[0].positions"
    assert str(e).startswith("points[0].positions: shoulder needs ") and "kg.cm at it, t = 1.50 s" in str(e)
    assert "a DS3218 gives 21.5 at 6.8 V (60% of it: 12.9); all of it to accelerate" in str(e)
    soft = [TrajectoryPoint(list(q1), 1.5, accelerations=[0.5, 0.0, 0.0]), plain[1]]
    assert check_trajectory(seed, names, soft, q0, math.nan).duration_s == pytest.approx(3.0)
