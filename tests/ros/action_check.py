"""Run inside the ROS environment (test_ros.py starts it): the FollowJointTrajectory action's own logic on an
open simulated arm, without control_msgs (not among the PyPI wheels, so rclpy cannot make the action server
here): ``ArmNode.goal_ok`` and ``ArmNode.follow_goal`` with real trajectory_msgs goals, a stand-in for the
action's Result type and a goal handle that records what it was told. Prints one JSON line."""

from __future__ import annotations

import json
import math
import sys
import threading
from types import SimpleNamespace

import rclpy
from builtin_interfaces.msg import Duration
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

import armctl
from armctl.ros.node import ArmNode


class Result:  # the fields of control_msgs/FollowJointTrajectory.Result that the node sets
    INVALID_GOAL = -1

    def __init__(self):
        self.error_code, self.error_string = None, None


class Handle:
    def __init__(self, trajectory):
        self.request = SimpleNamespace(trajectory=trajectory)
        self.outcome = None

    def succeed(self):
        self.outcome = "succeeded"

    def abort(self):
        self.outcome = "aborted"


def goal(names, points):
    t = JointTrajectory()
    t.joint_names = names
    for q, s in points:
        p = JointTrajectoryPoint()
        p.positions = [float(v) for v in q]
        p.time_from_start = Duration(sec=int(s), nanosec=int(round((s - int(s)) * 1e9)))
        t.points.append(p)
    return SimpleNamespace(trajectory=t)


def main() -> int:
    rclpy.init()
    node = rclpy.create_node("armctl_action_check")
    node.declare_parameter("too_fast", "retime")  # (armctl ros declares them, as options)
    node.declare_parameter("tool_speed_m_s", 0.1)
    events = []
    out = {}
    with armctl.connect("seed-3link") as robot:
        arm_node = ArmNode(robot, node, out=sys.stderr)
        said = arm_node.event
        arm_node.event = lambda kind, /, **f: (events.append({"event": kind, **f}), said(kind, **f))
        arm_node.start()
        names = ["shoulder", "elbow", "wrist"]
        q1 = [math.radians(v) for v in (30.0, -60.0, -20.0)]
        good = goal(names, [(q1, 2.0)])
        out["good_ok"] = arm_node.goal_ok(good)
        h = Handle(good.trajectory)
        r = threading.Thread(target=lambda: out.update(result=vars(arm_node.follow_goal(h, Result))))
        r.start()
        r.join(30)
        out["good_outcome"] = h.outcome
        out["where_deg"] = [math.degrees(v) for v in robot.where(settle=True).q_rad]
        for key, bad in (
            ("nan", goal(names, [([math.nan, -1.0, -0.5], 1.0)])),
            ("names", goal(["shoulder", "elbow", "hand"], [(q1, 1.0)])),
            ("limit", goal(names, [([math.radians(170), -1.0, -0.5], 3.0)])),
        ):
            n = len(events)
            out[f"{key}_ok"] = arm_node.goal_ok(bad)
            out[f"{key}_events"] = events[n:]
        # a goal taken that the arm then cannot play (stopped while it plays): the handle aborts, saying why
        back = goal(names, [([math.radians(v) for v in (45.0, -90.0, -45.0)], 3.0)])
        h2 = Handle(back.trajectory)
        r = threading.Thread(target=lambda: out.update(stopped=vars(arm_node.follow_goal(h2, Result))))
        r.start()
        threading.Timer(1.0, lambda: robot.stop("stopped by the check")).start()
        r.join(30)
        out["stopped_outcome"] = h2.outcome
        arm_node.close()
    node.destroy_node()
    rclpy.shutdown()
    print(json.dumps(out), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
