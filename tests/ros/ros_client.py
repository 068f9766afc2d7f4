"""A ROS 2 client node for the tests and bench/ros.py, run in its own process with the python that has rclpy.

It reads one JSON request per line on stdin and answers one JSON line on stdout:

- ``{"op": "watch", "ns": "/arm1"}``: subscribe to the node's joint_states, tool_point, tool_pose and armctl/events;
  answers once joint_states arrive.
- ``{"op": "states", "ns", "seconds"}``: the joint_states received over that long: count, rate (from the message
  stamps and from the arrival times), intervals, names, the last positions, tool point and tool pose (``pose``:
  xyz, quat x y z w, frame).
- ``{"op": "state", "ns"}``: the last joint_states, tool point and tool pose.
- ``{"op": "trajectory", "ns", "names", "points": [[positions, t_s], ...]}``: publish a JointTrajectory.
- ``{"op": "command", "ns", "names", "positions"}``: publish a JointState on joint_commands.
- ``{"op": "stream", "ns", "names", "positions", "rate_hz", "seconds"}``: publish that JointState on joint_commands
  at that rate for that long, as topic_based_ros2_control's ``write()`` does each controller cycle (its publisher:
  reliable, depth 1); answers with the count ``sent``.
- ``{"op": "goal", "ns", "point": [x, y, z], "frame": ""}``: publish a PointStamped on tool_goal.
- ``{"op": "call", "ns", "service": "armctl/stop", "timeout": S, "wait": true}``: call a std_srvs/Trigger service
  and answer with its response and how long it took (``took_s``); ``"wait": false`` answers at once with an
  ``id`` to read the response with ``{"op": "answer", "id": N, "timeout": S}``.
- ``{"op": "params", "ns", "names": [...], "set": "text"}``: the node ``<ns>/armctl``'s string parameters (via
  get_parameters); with ``set``, first try to set each to that text or number (``set_ok``: whether each was set).
- ``{"op": "events", "ns", "since": N, "until": ["done", ...], "timeout": S}``: events from index N on, waiting up
  to S seconds for one of the kinds in ``until``.
"""

from __future__ import annotations

import json
import math
import sys
import threading
import time

import rclpy
from geometry_msgs.msg import PointStamped, PoseStamped
from rcl_interfaces.msg import Parameter, ParameterType, ParameterValue
from rcl_interfaces.srv import GetParameters, SetParameters
from rclpy.executors import SingleThreadedExecutor
from sensor_msgs.msg import JointState
from std_msgs.msg import String
from std_srvs.srv import Trigger
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint


class Arm:
    def __init__(self, node, ns: str):
        self.ns = ns.rstrip("/")
        self.lock = threading.Lock()
        self.events: list[dict] = []
        self.states: list[tuple[float, float, list, list, list]] = []  # (arrival, stamp, names, pos, vel)
        self.tool = None
        self.pose = None
        node.create_subscription(JointState, f"{self.ns}/joint_states", self._state, 50)
        node.create_subscription(PointStamped, f"{self.ns}/tool_point", self._tool, 10)
        node.create_subscription(PoseStamped, f"{self.ns}/tool_pose", self._pose, 10)
        node.create_subscription(String, f"{self.ns}/armctl/events", self._event, 100)
        self.pub_traj = node.create_publisher(JointTrajectory, f"{self.ns}/joint_trajectory", 10)
        self.pub_cmd = node.create_publisher(JointState, f"{self.ns}/joint_commands", 10)
        self.pub_plugin = node.create_publisher(JointState, f"{self.ns}/joint_commands", 1)
        self.pub_goal = node.create_publisher(PointStamped, f"{self.ns}/tool_goal", 10)
        self.clients: dict[str, object] = {}
        self.node = node

    def _state(self, msg) -> None:
        stamp = msg.header.stamp.sec + msg.header.stamp.nanosec * 1e-9
        with self.lock:
            self.states.append((time.monotonic(), stamp, list(msg.name), list(msg.position), list(msg.velocity)))

    def _tool(self, msg) -> None:
        with self.lock:
            self.tool = {"xyz": [msg.point.x, msg.point.y, msg.point.z], "frame": msg.header.frame_id}

    def _pose(self, msg) -> None:
        p, o = msg.pose.position, msg.pose.orientation
        with self.lock:
            self.pose = {"xyz": [p.x, p.y, p.z], "quat": [o.x, o.y, o.z, o.w], "frame": msg.header.frame_id}

    def _event(self, msg) -> None:
        with self.lock:
            self.events.append(json.loads(msg.data))


def wait_for(pub, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while pub.get_subscription_count() == 0 and time.monotonic() < deadline:
        time.sleep(0.01)
    time.sleep(0.05)


def main() -> int:
    rclpy.init()
    node = rclpy.create_node("armctl_test_client")
    ex = SingleThreadedExecutor()
    ex.add_node(node)
    threading.Thread(target=ex.spin, daemon=True).start()
    arms: dict[str, Arm] = {}
    pending: dict[int, tuple] = {}  # id -> (future, start time) of calls made with "wait": false

    def answer(fut, t0: float, timeout: float) -> dict:
        deadline = time.monotonic() + timeout
        while not fut.done() and time.monotonic() < deadline:
            time.sleep(0.01)
        res = fut.result() if fut.done() else None
        took = time.monotonic() - t0
        return dict(success=res.success if res else None, message=res.message if res else "no answer", took_s=took)

    def arm(ns: str) -> Arm:
        if ns not in arms:
            arms[ns] = Arm(node, ns)
        return arms[ns]

    for line in sys.stdin:
        if not line.strip():
            continue
        req = json.loads(line)
        op, a = req["op"], arm(req.get("ns", ""))
        out: dict = {"ok": True}
        if op == "watch":
            deadline = time.monotonic() + req.get("timeout", 20)
            while not a.states and time.monotonic() < deadline:
                time.sleep(0.02)
            out["ok"] = bool(a.states)
        elif op == "states":
            with a.lock:
                a.states.clear()
            time.sleep(req["seconds"])
            with a.lock:
                got = list(a.states)
            arrivals = [s[0] for s in got]
            stamps = [s[1] for s in got]
            d = [b - c for b, c in zip(stamps[1:], stamps[:-1])]
            out.update(
                count=len(got),
                rate_stamp_hz=(len(stamps) - 1) / (stamps[-1] - stamps[0]) if len(stamps) > 1 else 0.0,
                rate_arrival_hz=(len(arrivals) - 1) / (arrivals[-1] - arrivals[0]) if len(arrivals) > 1 else 0.0,
                intervals_s=d,
                names=got[-1][2] if got else [],
                position=got[-1][3] if got else [],
                velocity=got[-1][4] if got else [],
                positions=[s[3] for s in got],
                velocities=[s[4] for s in got],
                tool=a.tool,
                pose=a.pose,
            )
        elif op == "state":
            with a.lock:
                last = a.states[-1] if a.states else None
            if last:
                out.update(names=last[2], position=last[3], velocity=last[4], tool=a.tool, pose=a.pose, t=last[0])
        elif op == "trajectory":
            msg = JointTrajectory()
            msg.joint_names = req["names"]
            for pos, t in req["points"]:
                p = JointTrajectoryPoint()
                p.positions = [float(v) for v in pos]
                p.time_from_start.sec = int(math.floor(t))
                p.time_from_start.nanosec = int(round((t - math.floor(t)) * 1e9))
                msg.points.append(p)
            wait_for(a.pub_traj)
            a.pub_traj.publish(msg)
            out["sent_t"] = time.monotonic()
        elif op == "command":
            msg = JointState()
            msg.name = req["names"]
            msg.position = [float(v) for v in req["positions"]]
            wait_for(a.pub_cmd)
            a.pub_cmd.publish(msg)
            out["sent_t"] = time.monotonic()
        elif op == "stream":
            wait_for(a.pub_plugin)
            period, t_end, sent = 1.0 / req["rate_hz"], time.monotonic() + req["seconds"], 0
            t_next = time.monotonic()
            while t_next < t_end:
                msg = JointState()
                msg.header.stamp = node.get_clock().now().to_msg()
                msg.name = req["names"]
                msg.position = [float(v) for v in req["positions"]]
                a.pub_plugin.publish(msg)
                sent += 1
                t_next += period
                time.sleep(max(0.0, t_next - time.monotonic()))
            out["sent"] = sent
        elif op == "goal":
            msg = PointStamped()
            msg.header.frame_id = req.get("frame", "")
            msg.point.x, msg.point.y, msg.point.z = (float(v) for v in req["point"])
            wait_for(a.pub_goal)
            a.pub_goal.publish(msg)
        elif op == "call":
            name = f"{a.ns}/{req['service']}"
            cli = a.clients.get(name) or node.create_client(Trigger, name)
            a.clients[name] = cli
            if not cli.wait_for_service(timeout_sec=10.0):
                out = {"ok": False, "error": f"no service {name}"}
            else:
                t0 = time.monotonic()
                fut = cli.call_async(Trigger.Request())
                if req.get("wait", True):
                    out.update(answer(fut, t0, req.get("timeout", 15)))
                else:
                    out["id"] = len(pending)
                    pending[out["id"]] = (fut, t0)
        elif op == "answer":
            fut, t0 = pending.pop(req["id"])
            out["answered_before"] = fut.done()
            out.update(answer(fut, t0, req.get("timeout", 15)))
        elif op == "params":
            if "set" in req:
                sname = f"{a.ns}/armctl/set_parameters"
                scli = a.clients.get(sname) or node.create_client(SetParameters, sname)
                a.clients[sname] = scli
                scli.wait_for_service(timeout_sec=10.0)
                if isinstance(req["set"], str):
                    value = ParameterValue(type=ParameterType.PARAMETER_STRING, string_value=req["set"])
                else:
                    value = ParameterValue(type=ParameterType.PARAMETER_DOUBLE, double_value=float(req["set"]))
                sfut = scli.call_async(
                    SetParameters.Request(parameters=[Parameter(name=n, value=value) for n in req["names"]])
                )
                deadline = time.monotonic() + 10
                while not sfut.done() and time.monotonic() < deadline:
                    time.sleep(0.01)
                out["set_ok"] = [r.successful for r in sfut.result().results] if sfut.done() else None
            name = f"{a.ns}/armctl/get_parameters"
            cli = a.clients.get(name) or node.create_client(GetParameters, name)
            a.clients[name] = cli
            if not cli.wait_for_service(timeout_sec=10.0):
                out = {"ok": False, "error": f"no service {name}"}
            else:
                fut = cli.call_async(GetParameters.Request(names=req["names"]))
                deadline = time.monotonic() + 10
                while not fut.done() and time.monotonic() < deadline:
                    time.sleep(0.01)
                vals = fut.result().values if fut.done() else []
                out["values"] = {n: v.string_value for n, v in zip(req["names"], vals)}
        elif op == "events":
            since, until = req.get("since", 0), set(req.get("until", []))
            deadline = time.monotonic() + req.get("timeout", 10)
            while True:
                with a.lock:
                    evs = a.events[since:]
                if any(e["event"] in until for e in evs) or time.monotonic() > deadline:
                    break
                time.sleep(0.01)
            out.update(events=evs, next=since + len(evs))
        else:
            out = {"ok": False, "error": f"unknown op {op!r}"}
        print(json.dumps(out), flush=True)
    ex.shutdown()
    node.destroy_node()
    rclpy.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
