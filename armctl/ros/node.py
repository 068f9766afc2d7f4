"""armctl as a ROS 2 node: a thin edge over one open ``Robot`` (``armctl ros``; docs in README "ROS 2").

Topics and services, relative to the node's namespace (``--namespace arm1``: ``/arm1/joint_states``, ...):

- publishes ``joint_states`` (sensor_msgs/JointState: the joints as ``messages.RosJoints`` names them, a URDF arm's
  with the URDF's names and angles; positions in rad, velocities in rad/s from successive poses; measured where the
  servos report, commanded otherwise) at ``--rate``, and ``tool_point`` (geometry_msgs/PointStamped, m, in the
  frame ``<namespace>/base_link``, a URDF arm's root link, REP-103: z up) with ``tool_pose`` beside it
  (geometry_msgs/PoseStamped: the same point and the tool frame's full orientation, ``messages.tool_pose_ros``);
- takes ``joint_trajectory`` (trajectory_msgs/JointTrajectory: checked whole, re-timed or refused by the parameter
  ``too_fast``, then played by the Robot; an empty one stops the arm), ``joint_commands`` (sensor_msgs/JointState
  positions, the topic topic_based_ros2_control publishes: the arm follows the latest, under its speed limits,
  after a slow ramp from where it is; a first one farther than the parameter ``first_command_max_deg`` from the
  pose is held until one near it comes) and ``tool_goal`` (geometry_msgs/PointStamped: a straight line, like jog);
- services (std_srvs/Trigger) ``armctl/stop``, ``armctl/home``, ``armctl/gripper_open``, ``armctl/gripper_close``,
  answered when the arm holds or the motion is over (done, or why not);
- ``armctl/events`` (std_msgs/String, one JSON object each: accepted, refused with the reason, the field and the
  first failing point, done, stopped, failed, link_lost, held: a first joint command held);
- a ``follow_joint_trajectory`` action (control_msgs/FollowJointTrajectory) where control_msgs is importable.

The latest command wins: a new trajectory, goal, home or gripper command stops the motion playing first; joint
commands replace the target the arm follows (a queue of one). Nothing here builds a backend or plans its own
motion: every move is the Robot's, with its checks, its limits and its no-jump start.
"""

from __future__ import annotations

import json
import math
import sys
import threading
import time
from collections import deque

import numpy as np

from armctl.errors import ArmctlError, BadInputError, LinkError
from armctl.ros.commands import CommandReading, CommandSource
from armctl.ros.messages import (
    Refused,
    TrajectoryPoint,
    check_command,
    check_tool_goal,
    check_trajectory,
    command_offset,
    ros_joints,
    tool_pose_ros,
)
from armctl.ros.worker import END_MARGIN_FRACTION, END_MARGIN_S, FOLLOW_RATE_HZ, REQUEST_WAIT_S, Worker

VELOCITY_WINDOW_S = 0.1  # joint_states' velocities: the slope of the poses over the last five servo frames
STATES_CATCH_UP_PERIODS = 10  # joint_states this many periods late start their schedule again from now
EVENT_EVERY_S = 0.5  # refusals of joint commands (a stream) are published at most this often
FIRST_COMMAND_MAX_DEG = 10.0  # parameter first_command_max_deg's default: a first joint command farther is held
TOPIC_BASED_START = (
    "likely topic_based_ros2_control's start-up commands (0.0 on every joint, or each state interface's "
    "initial_value, until a controller writes; use_initial_states_as_initial_commands not set)"
)
NO_ACTION = (
    "control_msgs is not importable (it is not among the PyPI wheels): no follow_joint_trajectory action server; "
    "send trajectories on the joint_trajectory topic"
)


def import_rclpy():
    """rclpy and the message modules, or BadInputError saying how to get them."""
    try:
        import rclpy  # noqa: F401
        from geometry_msgs.msg import PointStamped, PoseStamped  # noqa: F401
        from sensor_msgs.msg import JointState  # noqa: F401
        from std_msgs.msg import String  # noqa: F401
        from std_srvs.srv import Trigger  # noqa: F401
        from trajectory_msgs.msg import JointTrajectory  # noqa: F401
    except ImportError as exc:
        raise BadInputError(
            f"armctl ros needs rclpy and the ROS 2 message packages ({exc.name or exc} is missing): "
            "pip install 'armctl[ros]' (x86_64 Linux, Python 3.10-3.13), or source a ROS 2 installation"
        ) from None
    return rclpy


def stamp_s(duration) -> float:
    """builtin_interfaces Duration -> seconds."""
    return float(duration.sec) + float(duration.nanosec) * 1e-9


# --- the node --------------------------------------------------------------------------------------------------


class ArmNode:
    """The ROS 2 interface of one open ``robot`` on the rclpy ``node`` (see the module docstring). ``start()``
    starts publishing; ``close()`` stops the arm under control, then the node's threads (the caller closes the
    robot and the node). ``done`` is set when the node must end (a lost link: ``failed`` holds the error)."""

    def __init__(self, robot, node, *, rate_hz: float = 50.0, frame_id: str = "base_link", out=sys.stdout):
        from geometry_msgs.msg import PointStamped, PoseStamped
        from rclpy.callback_groups import ReentrantCallbackGroup
        from rclpy.qos import QoSProfile
        from sensor_msgs.msg import JointState
        from std_msgs.msg import String
        from std_srvs.srv import Trigger
        from trajectory_msgs.msg import JointTrajectory

        self.robot, self.node, self.arm = robot, node, robot.arm
        self.rate_hz, self.period_s = float(rate_hz), 1.0 / float(rate_hz)
        self.frame_id = frame_id
        self.joints = ros_joints(self.arm)  # the names and angles on the topics (a URDF arm's: the URDF's)
        self.names = self.joints.names
        self.out = out
        self.done = threading.Event()
        self.failed: BaseException | None = None
        self._closing = threading.Event()
        self._source = CommandSource(self.arm)
        self._last_refusal = {}  # source -> (time, suppressed count)
        self._first_taken = False  # a joint command has been followed (the first-command check is over)
        self.held = 0  # joint commands held before the first was taken
        self.worker = Worker(self, self._source, self._closing)  # one command at a time, on the Robot
        self._JointState, self._PointStamped, self._String = JointState, PointStamped, String
        self._PoseStamped = PoseStamped
        events_qos = QoSProfile(depth=50)
        self.pub_states = node.create_publisher(JointState, "joint_states", 10)
        self.pub_tool = node.create_publisher(PointStamped, "tool_point", 10)
        self.pub_pose = node.create_publisher(PoseStamped, "tool_pose", 10)
        self.pub_events = node.create_publisher(String, "armctl/events", events_qos)
        node.create_subscription(JointTrajectory, "joint_trajectory", self._guard(self._on_trajectory), 10)
        node.create_subscription(JointState, "joint_commands", self._guard(self._on_command), 1)
        node.create_subscription(PointStamped, "tool_goal", self._guard(self._on_tool_goal), 10)
        # the services answer when their motion is over: they wait off the executor (``_off_executor``), so one
        # executor thread runs every callback at once (a newer service call stops the older, which then answers);
        # in a reentrant group, as a waiting callback holds a mutually exclusive one (the node's default, the
        # topics') until it returns, also on a single-threaded executor
        self._waiting = ReentrantCallbackGroup()
        for name, kind in (
            ("armctl/stop", "stop"),
            ("armctl/home", "home"),
            ("armctl/gripper_open", "gripper_open"),
            ("armctl/gripper_close", "gripper_close"),
        ):
            node.create_service(Trigger, name, self._service(kind), callback_group=self._waiting)
        self.action = self._action_server()
        self._publisher = threading.Thread(target=self._publish_loop, name="armctl-ros-states", daemon=True)
        self._prev: deque = deque(maxlen=16)  # (t, q) of the last joint_states, for velocities

    def _guard(self, callback):
        """``callback`` that never raises into the executor (an exception there would end the node's spinning)."""

        def safe(msg) -> None:
            try:
                callback(msg)
            except Exception as exc:  # noqa: BLE001 - said as an event, the node goes on
                self.event("failed", source=callback.__name__.removeprefix("_on_"), reason=repr(exc))

        return safe

    # --- lifecycle ---

    def start(self) -> None:
        self.worker.thread.start()
        self._publisher.start()

    def close(self, reason: str = "node shutting down") -> None:
        """Stop the arm under control (it holds its pose), then the node's threads."""
        self._closing.set()
        self.worker.wake()
        self.worker.halt(reason)
        for t in (self.worker.thread, self._publisher):
            if t.is_alive() and t is not threading.current_thread():
                t.join(timeout=5.0)

    def lost(self, exc: BaseException) -> None:
        """A lost link: publish it, stop under control (what can still be sent), end the node."""
        if self.failed is not None:
            return
        self.failed = exc
        self.event("link_lost", reason=str(exc))
        try:
            self.robot.stop("link lost")
        except ArmctlError:
            pass
        self.done.set()

    # --- events ---

    def event(self, kind: str, /, **fields) -> None:
        """Publish one event on ``armctl/events`` (JSON) and say it on stderr if it is a refusal or a failure."""
        data = {"event": kind, "t": time.time(), **fields}
        msg = self._String()
        msg.data = json.dumps(data)
        try:
            self.pub_events.publish(msg)
        except Exception:  # noqa: BLE001 - the node is going down: the event is still said on stderr
            pass
        if kind in ("refused", "failed", "link_lost", "held"):
            what = fields.get("source", "")
            print(f"armctl ros: {kind}{' ' + what if what else ''}: {fields.get('reason', '')}", file=sys.stderr)

    def refused(self, source: str, exc: ArmctlError) -> None:
        detail = exc.to_dict() if isinstance(exc, Refused) else {"reason": str(exc), "field": None, "point": None}
        self.event("refused", source=source, moved=False, **detail)

    # --- joint_states, tool_point and tool_pose ---

    def _publish_loop(self) -> None:
        t_next = time.monotonic()
        while not self._closing.is_set() and not self.done.is_set():
            t_next += self.period_s
            now = time.monotonic()
            # on schedule: a late message (the process was not run for a while) is caught up at once, so the rate
            # holds on a loaded machine; far behind (a stall), the schedule starts again from now
            if t_next < now - STATES_CATCH_UP_PERIODS * self.period_s:
                t_next = now
            if t_next > now:
                time.sleep(t_next - now)
            try:
                self.publish_state()
            except LinkError as exc:
                self.lost(exc)
                return
            except ArmctlError as exc:
                if self._closing.is_set():
                    return
                self.event("failed", source="joint_states", reason=str(exc))

    def publish_state(self) -> None:
        """Publish ``joint_states``, ``tool_point`` and ``tool_pose`` once (the Robot's ``where()``)."""
        pose = self.robot.where()
        t = time.monotonic()
        q = [float(v) for v in pose.q_rad]  # armctl's angles here; the topics' (``self.joints``) in the message
        if self.arm.gripper is not None:
            q.append(math.nan if pose.gripper_rad is None else float(pose.gripper_rad))
        self._prev.append((t, q))
        # the slope of the poses over the last VELOCITY_WINDOW_S (least squares): they move frame by frame (20 ms)
        # and are read at the publisher's own rate and jitter, so two reads may see one frame or skip one
        recent = [(tp, qp) for tp, qp in self._prev if t - tp <= VELOCITY_WINDOW_S]
        vel = [0.0] * len(q)
        if len(recent) >= 2:
            ts = np.array([tp for tp, _ in recent]) - t
            qs = np.array([qp for _, qp in recent], dtype=float)
            dt = ts - ts.mean()
            if float(dt @ dt) > 0:
                slope = dt @ (qs - qs.mean(axis=0)) / float(dt @ dt)
                vel = [float(v) if math.isfinite(v) else 0.0 for v in slope]
        stamp = self.node.get_clock().now().to_msg()
        js = self._JointState()
        js.header.stamp = stamp
        n = self.arm.n
        g, vg = (q[n], vel[n]) if self.arm.gripper is not None else (math.nan, 0.0)
        js.name = self.names
        js.position = self.joints.positions(q[:n], g)
        js.velocity = self.joints.velocities(vel[:n], vg)
        self.pub_states.publish(js)
        ps = self._PointStamped()
        ps.header.stamp = stamp
        ps.header.frame_id = self.frame_id
        (ps.point.x, ps.point.y, ps.point.z), quat = tool_pose_ros(self.arm, pose.q_rad, pose.tool_m)
        self.pub_tool.publish(ps)
        tp = self._PoseStamped()
        tp.header = ps.header
        tp.pose.position.x, tp.pose.position.y, tp.pose.position.z = ps.point.x, ps.point.y, ps.point.z
        o = tp.pose.orientation
        o.x, o.y, o.z, o.w = quat
        self.pub_pose.publish(tp)

    # --- what comes in (the executor thread): checked here, handed to the worker ---

    def _on_trajectory(self, msg) -> None:
        if not msg.points:  # the joint_trajectory_controller's convention: an empty trajectory stops
            self.worker.request("stop", "an empty joint_trajectory")
            return
        points = [
            TrajectoryPoint(list(p.positions), stamp_s(p.time_from_start), list(p.velocities), list(p.accelerations))
            for p in msg.points
        ]
        names = list(msg.joint_names)
        try:  # malformed messages and points outside the limits are refused at once: what plays goes on
            check_trajectory(self.arm, names, points, self.arm.home_rad, math.nan, too_fast="retime")
        except Refused as exc:
            if exc.kind in ("malformed", "limit"):
                self.refused("joint_trajectory", exc)
                return
        self.worker.request("trajectory", (names, points))

    def _on_command(self, msg) -> None:
        try:
            q, g = check_command(self.arm, list(msg.name), list(msg.position))
        except Refused as exc:
            if not self._first_taken and exc.kind == "limit" and msg.position and not any(msg.position):
                self._hold_first(f"the first one is outside the limits ({exc})")  # all 0.0: the plugin's start
                return
            now = time.monotonic()
            last, skipped = self._last_refusal.get("joint_commands", (-math.inf, 0))
            if now - last < EVENT_EVERY_S:
                self._last_refusal["joint_commands"] = (last, skipped + 1)
                return
            self._last_refusal["joint_commands"] = (now, 0)
            detail = exc.to_dict()
            self.event("refused", source="joint_commands", moved=False, suppressed=skipped, **detail)
            return
        if not self._first_taken:
            pose = self.robot.where()
            off, joint = command_offset(self.arm, q, g, pose.q_rad, pose.gripper_rad)
            limit = float(self.node.get_parameter("first_command_max_deg").value)
            if math.degrees(off) > limit:
                self._hold_first(
                    f"the first one is {math.degrees(off):.1f} deg from the arm's pose ({joint}), over "
                    f"first_command_max_deg {limit:g}",
                    offset_deg=round(math.degrees(off), 3),
                    joint=joint,
                )
                return
            self._first_taken = True
        self._source.put(q, g)
        if not self.worker.following():  # else the follow reads the new target within a period
            self.worker.request("follow", None)

    def _hold_first(self, why: str, **fields) -> None:
        """Hold a first joint command far from the arm's pose (not played): one event (and line) for the whole hold;
        the hold ends with the first command within first_command_max_deg of the pose."""
        self.held += 1
        if self.held > 1:
            return
        limit = float(self.node.get_parameter("first_command_max_deg").value)
        reason = (
            f"joint_commands held, not played: {why}; {TOPIC_BASED_START}. The arm follows once a command within "
            f"{limit:g} deg of its pose comes (or raise the parameter first_command_max_deg)"
        )
        self.event("held", source="joint_commands", moved=False, reason=reason, max_deg=limit, **fields)

    def _on_tool_goal(self, msg) -> None:
        p = msg.point
        try:
            target = check_tool_goal(self.arm, p.x, p.y, p.z, msg.header.frame_id, self.frame_id)
        except Refused as exc:
            self.refused("tool_goal", exc)
            return
        self.worker.request("tool_goal", target)

    def _service(self, kind: str):
        async def call(request, response):
            try:
                ok, text = await self._off_executor(self.command_to_end, kind, f"the armctl/{kind} service")
            except Exception as exc:  # noqa: BLE001 - answered, not raised into the executor
                ok, text = False, f"{kind}: internal error: {exc!r}"
            response.success, response.message = bool(ok), text
            return response

        return call

    def _off_executor(self, fn, *args):
        """``fn(*args)`` in a thread of its own, awaited by a coroutine callback: the executor's one thread goes on
        with the topics meanwhile (a thread pool executor would add a thread hop to every message: joint_commands'
        p99 latency was 36-40 ms with four threads, 27-32 ms with one). The done callback's task wakes the
        executor, which then resumes the waiting callback."""
        from rclpy.task import Future as RosFuture

        fut = RosFuture(executor=self.node.executor)
        fut.add_done_callback(lambda _f: None)

        def run() -> None:
            try:
                fut.set_result(fn(*args))
            except BaseException as exc:  # noqa: BLE001 - raised in the awaiting callback
                fut.set_exception(exc)

        threading.Thread(target=run, name="armctl-ros-wait", daemon=True).start()
        return fut

    def command_to_end(self, kind: str, payload) -> tuple[bool, str]:
        """Hand a command to the worker and wait until its motion is over: (True, done and how long) or (False,
        why not: refused, dropped, stopped by a stop or a newer command, failed, lost link, not over in time)."""
        return self.worker.command_to_end(kind, payload)

    # --- the FollowJointTrajectory action (only where control_msgs is importable) ---

    def _action_server(self):
        try:
            from control_msgs.action import FollowJointTrajectory
            from rclpy.action import ActionServer, GoalResponse
        except ImportError:
            print(f"armctl ros: note: {NO_ACTION}", file=sys.stderr, flush=True)
            return None

        async def execute(handle):
            return await self._off_executor(self.follow_goal, handle, FollowJointTrajectory.Result)

        return ActionServer(
            self.node,
            FollowJointTrajectory,
            "follow_joint_trajectory",
            execute_callback=execute,
            goal_callback=lambda request: GoalResponse.ACCEPT if self.goal_ok(request) else GoalResponse.REJECT,
            callback_group=self._waiting,
        )

    def goal_ok(self, request) -> bool:
        """A FollowJointTrajectory goal (``request.trajectory``) the node takes: not malformed, inside the limits
        (a refusal is published on ``armctl/events``); a too-fast one is taken (re-timed, or refused when it
        plays, as ``too_fast`` says)."""
        t = request.trajectory
        pts = [TrajectoryPoint(list(p.positions), stamp_s(p.time_from_start)) for p in t.points]
        try:
            check_trajectory(self.arm, list(t.joint_names), pts, self.arm.home_rad, math.nan)
        except Refused as exc:
            if exc.kind in ("malformed", "limit"):
                self.refused("follow_joint_trajectory", exc)
                return False
        return True

    def follow_goal(self, handle, result_type):
        """Play an accepted goal as ``joint_trajectory`` plays a trajectory, to its end: the handle succeeds
        (``error_code`` 0) or aborts (INVALID_GOAL, ``error_string`` saying why: refused, stopped, lost link)."""
        t = handle.request.trajectory
        pts = [TrajectoryPoint(list(p.positions), stamp_s(p.time_from_start)) for p in t.points]
        result = result_type()
        ok, text = self.command_to_end("trajectory", (list(t.joint_names), pts))
        result.error_code = 0 if ok else result_type.INVALID_GOAL
        result.error_string = "" if ok else text
        handle.succeed() if ok else handle.abort()
        return result


# the node's names, and those of its parts imported from here before they had modules of their own
__all__ = [
    "ArmNode",
    "import_rclpy",
    "stamp_s",
    "CommandReading",
    "CommandSource",
    "FOLLOW_RATE_HZ",
    "FIRST_COMMAND_MAX_DEG",
    "REQUEST_WAIT_S",
    "END_MARGIN_S",
    "END_MARGIN_FRACTION",
    "VELOCITY_WINDOW_S",
    "STATES_CATCH_UP_PERIODS",
    "EVENT_EVERY_S",
    "TOPIC_BASED_START",
    "NO_ACTION",
]
