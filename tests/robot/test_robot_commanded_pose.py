"""``Robot.commanded_pose``: the pose the arm is commanded to (what jogging plans from and recording
stores), on the simulated arm: home before anything moved, the planned end of queued motions, the pulses
the board holds after a stop; never the measurement, which a servo error makes differ."""

from __future__ import annotations

import math

import numpy as np
import pytest

import armctl
from armctl.model.kinematics import fk

FAST = "armsim://?rate=20&seed=1"


def test_before_anything_moved_it_is_the_pose_the_servos_will_be_set_to():
    with armctl.connect("seed-3link", FAST) as robot:
        pose = robot.commanded_pose()
        assert pose.source == "assumed" and "without pulses" in pose.detail
        assert pose.q_deg == pytest.approx([45, -90, -45], abs=0.05)
        assert pose.values[0] is not None and pose.gripper_rad == pytest.approx(robot.arm.gripper.open_rad, abs=1e-3)


def test_queued_motions_give_their_planned_end_exactly():
    with armctl.connect("seed-3link", FAST) as robot:
        robot.move_to(0.5, 0.1, phi=math.radians(-30), wait=False)
        last = robot.move_to(0.45, 0.05, phi=math.radians(-40), wait=False)
        pose = robot.commanded_pose()
        assert pose.source == "commanded" and pose.detail == "where the motions still to play end"
        assert pose.tool_m == pytest.approx([0.45, 0.05], abs=1e-9)
        assert math.degrees(pose.phi_rad) == pytest.approx(-40)
        assert np.array_equal(pose.q_rad, last.end_q_rad)
        last.wait()
        held = robot.commanded_pose()  # now from the pulses the board holds: 0.5 us steps
        assert held.source == "commanded" and held.detail == "pulses the board outputs"
        assert np.hypot(*(held.tool_m - [0.45, 0.05])) < 0.5e-3


def test_after_a_stop_it_is_where_the_board_holds():
    with armctl.connect("seed-3link", FAST) as robot:
        m = robot.move_to(0.3, 0.3, speed=0.05, wait=False)
        m.started.wait(5)
        for _ in range(10_000):  # part of the way
            if robot.where().tool_m[1] > -0.05 or m.done:
                break
        robot.stop("test")
        pose = robot.commanded_pose()
        assert m.done and m.cancelled() and isinstance(m.error, armctl.errors.StopRequested)
        assert pose.source == "commanded"
        assert np.hypot(*(pose.tool_m - [0.3, 0.3])) > 0.05  # it did not go on to the target
        measured = robot.where(settle=True)
        assert np.hypot(*(measured.tool_m - pose.tool_m)) < 1e-4


def test_it_is_never_the_measurement():
    # Servos whose true angle is 2 deg off what the calibration says: the measured pose differs, the
    # commanded one is what was asked for.
    with armctl.connect("seed-3link", FAST + "&offset=2,0,0") as robot:
        robot.move_joints([40, -80, -45], degrees=True)
        commanded, measured = robot.commanded_pose(), robot.where(settle=True)
        assert measured.source == "measured"
        assert commanded.q_deg == pytest.approx([40, -80, -45], abs=0.03)
        assert measured.q_deg[0] == pytest.approx(42, abs=0.05)
        assert np.hypot(*(fk(robot.arm.links_m, commanded.q_rad) - commanded.tool_m)) < 1e-12
