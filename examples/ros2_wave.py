"""Wave a seed-3link arm run by `armctl ros --namespace arm1` (README "ROS 2"): python examples/ros2_wave.py [arm1]"""

import json
import sys

import rclpy
from builtin_interfaces.msg import Duration
from std_msgs.msg import String
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

ns = sys.argv[1] if len(sys.argv) > 1 else "arm1"
rclpy.init()
node, events = rclpy.create_node("wave"), []
node.create_subscription(String, f"/{ns}/armctl/events", lambda m: events.append(json.loads(m.data)), 10)
pub = node.create_publisher(JointTrajectory, f"/{ns}/joint_trajectory", 10)
while pub.get_subscription_count() == 0:  # wait for the node
    rclpy.spin_once(node, timeout_sec=0.1)
wave = [0.4, 1.0, 0.4, 1.0, 0.785]  # the shoulder, rad, a point a second (time_from_start); elbow, wrist held
pts = [JointTrajectoryPoint(positions=[s, -1.2, -0.6], time_from_start=Duration(sec=1 + i)) for i, s in enumerate(wave)]
pub.publish(JointTrajectory(joint_names=["shoulder", "elbow", "wrist"], points=pts))
while not any(e["event"] in ("done", "refused", "failed") for e in events):
    rclpy.spin_once(node, timeout_sec=0.1)
print(events[-1])
rclpy.shutdown()
