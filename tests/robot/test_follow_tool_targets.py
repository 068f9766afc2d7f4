"""``Robot.follow`` fed end-effector targets from Python (``armctl.ToolTarget`` or dicts, from a generator) on the
simulated SO-101 bus: solved each frame nearest the pose last sent (``armctl.teleop.tooltarget.tool_frame``), at
100 Hz, the follow ending by itself where the last target puts the tool.

Asserted from the simulated bus's own log of goals: no goal step beyond the joint's speed limit in a frame; the
wrist roll (when the arm drives one) following a target roll that crosses +-180 deg without a flip; the tool where
the last target is; a malformed target mid-stream stops the follow under control with one line, nothing more sent;
bad sources are refused before anything moves. And ``follow(leader, map="tool")`` (``armctl follow --map tool``):
a simulated SO-101 leader's wrist roll carried to the follower's.
"""

from __future__ import annotations

import math
import time

import numpy as np
import pytest

import armctl
from armctl.calibration.servo import find_calibration, load_calibration
from armctl.errors import BadInputError, StopRequested
from armctl.model.kinematics import tool_pitch, tool_point
from tests.robot.test_follow import goals

PERIOD = 0.01


def path(arm, q0, frames: int):
    """Tool targets along a smooth path from pose ``q0``: the tool 60 mm round a circle and back, the pitch
    swinging 15 deg; the roll from 150 deg out past 180 (to 190: reads -170) and back."""
    p0 = tool_point(arm, q0)
    phi0 = float(tool_pitch(arm, q0))
    for k in range(frames):
        s = k / (frames - 1)
        a = math.sin(math.pi * s)
        p = p0 + np.array([0.0, 0.06 * a, 0.03 * math.sin(2 * math.pi * s)])
        target = {"x": p[0], "y": p[1], "z": p[2], "pitch": phi0 + math.radians(15) * a, "gripper": 1.0 - a}
        target["roll"] = math.remainder(math.radians(150 + 40 * a), 2 * math.pi)
        yield target


def test_a_stream_of_tool_targets_is_followed_within_the_speed_limits_to_its_end():
    with armctl.connect("so101") as robot:
        arm, cal = robot.arm, robot.calibration
        assert arm.roll is not None  # (the so101 preset drives its wrist roll)
        q0 = np.array(robot.where().q_rad)
        robot.move_joints(np.append(q0[:-1], math.radians(150))).wait()
        q0 = np.array(robot.where().q_rad)
        targets = list(path(arm, q0, 300))
        seen = []
        m = robot.follow(iter(targets), on_frame=lambda t, q, g, target, meas: seen.append(q.copy()))
        result = m.wait(30)
        where = robot.where()
        sim = robot.backend.bus.serial.sim
    assert result.label == "follow tool targets" and result.frames >= 300
    last = targets[-1]
    assert np.linalg.norm(where.tool_m - [last["x"], last["y"], last["z"]]) < 2e-3, where.tool_m
    assert where.gripper_rad == pytest.approx(arm.gripper.open_rad, abs=math.radians(2))  # gripper 1.0: open
    assert m.teleop.status.rate_hz == pytest.approx(100, rel=0.3)
    for i, s in enumerate(cal.joints):
        g = [v for _, v in goals(sim, s.id)]
        steps = np.abs(np.diff(g))
        limit = math.degrees(arm.max_speed_rad_s[i]) * s.steps_per_deg * PERIOD
        assert steps.max() <= limit + 1.0, (s.name, steps.max(), limit)
    # the roll held at its upper limit while the target is past 180 deg (-170 reads): never the long way round
    roll = np.degrees([q[-1] for q in seen])
    assert roll.min() > 100 and np.max(np.abs(np.diff(roll))) < 5, (roll.min(), np.abs(np.diff(roll)).max())
    assert roll.max() == pytest.approx(math.degrees(arm.q_max[-1]), abs=0.2)


def test_a_bad_target_mid_stream_stops_the_follow_and_nothing_more_is_sent():
    with armctl.connect("so101") as robot:
        p = robot.where().tool_m

        def source():
            for k in range(50):
                yield armctl.ToolTarget(p[0], p[1] + 0.0002 * k, p[2])
            yield {"x": p[0], "y": p[1], "z": float("nan")}

        m = robot.follow(source())
        with pytest.raises(BadInputError) as info:
            m.wait(10)
        sim = robot.backend.bus.serial.sim
        sent = len(goals(sim, 1))
        time.sleep(0.2)
        assert len(goals(sim, 1)) == sent and not robot.moving
        robot.move_to(*p).wait(10)  # the robot goes on
    assert "tool target z (m): must be a finite number" in str(info.value) and "\n" not in str(info.value)


@pytest.mark.parametrize(
    ("arm", "source", "kw", "words"),
    [
        ("seed-3link", [{"x": 0.5, "y": 0.2, "z": 0.0}], {}, "need an arm on a rotating base"),
        ("so101", [{"x": 0.3, "y": 0.0, "z": 0.2}], {"map": "joints"}, "tool targets are followed by the tool"),
        ("so101", [{"x": 0.3, "y": 0.0, "z": 0.2}], {"scale": 2.0}, "scale and offset are for a leader arm"),
        ("so101", 42, {}, "a leader arm (armctl.open_leader) or an iterable of tool targets"),
        ("so101", {"x": 0.3, "y": 0.0, "z": 0.2}, {}, "one tool target is no stream of them"),
        ("so101", [], {"rate_hz": 500}, "--rate: 500 Hz is outside"),
    ],
)
def test_bad_sources_are_refused_before_anything_moves(arm, source, kw, words):
    with armctl.connect(arm) as robot:
        with pytest.raises(BadInputError, match=words.replace("(", r"\(").replace(")", r"\)")):
            robot.follow(source, **kw)
        assert not robot.moving


def test_map_tool_carries_the_leaders_wrist_roll(tmp_path):
    """An SO-101 leader turned to 60 deg of roll (and moved): the SO-101 follower by its tool point and pitch, and
    its roll where the leader's is; every roll goal within the roll's speed limit in a frame of 50 Hz."""
    cal = load_calibration(find_calibration("so101"))
    poses = [
        (0, [0, 76, -74, -5, 0]),
        (1.0, [0, 76, -74, -5, 0]),
        (3.0, [15, 70, -70, -15, 60]),
        (9, [15, 70, -70, -15, 60]),
    ]
    rows = ["t_s,id,steps"]
    for t, q in poses:
        rows += [f"{t},{j.id},{float(j.value(math.radians(a))):.2f}" for j, a in zip(cal.joints, q)]
        rows.append(f"{t},{cal.gripper.id},{float(cal.gripper.value(0.2)):.2f}")
    hand = tmp_path / "hand.csv"
    hand.write_text("\n".join(rows) + "\n")
    leader = armctl.open_leader("so101", f"feetechsim://?hand={hand}")
    with leader, armctl.connect("so101") as robot:
        assert robot.arm.roll is not None  # (the so101 preset drives its wrist roll)
        m = robot.follow(leader, map="tool")
        time.sleep(5.0)
        lead = leader.read().q_rad
        where = robot.where()
        robot.stop("test over")
        with pytest.raises(StopRequested):
            m.wait(10)
        sim = robot.backend.bus.serial.sim
        arm, roll = robot.arm, robot.calibration.joints[-1]
    assert math.degrees(lead[-1]) == pytest.approx(60, abs=0.5)
    assert math.degrees(where.q_rad[-1]) == pytest.approx(math.degrees(lead[-1]), abs=0.5)
    assert np.linalg.norm(where.tool_m - tool_point(arm, lead)) < 2e-3
    g = np.array([v for _, v in goals(sim, roll.id)], dtype=float)
    assert np.abs(np.diff(g)).max() <= math.degrees(arm.max_speed_rad_s[-1]) * roll.steps_per_deg * 0.02 + 1.0
