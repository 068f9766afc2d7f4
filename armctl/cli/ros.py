"""``armctl ros``: the arm as a ROS 2 node (topics, services, events: ``armctl.ros.node``)."""

from __future__ import annotations

import argparse
import math
import sys
import time

from armctl.cli import add_command
from armctl.core.units import parse_float
from armctl.errors import BadInputError
from armctl.model.validate import positive_text

EPILOG = """\
Topics under the namespace: joint_states, tool_point and tool_pose (published), joint_trajectory, joint_commands
and tool_goal (taken), armctl/events (JSON refusals and results); services armctl/stop, armctl/home,
armctl/gripper_open, armctl/gripper_close (std_srvs/Trigger). Parameters arm, port, backend,
calibration (the global options; fixed while the node runs), too_fast (retime|refuse),
tool_speed_m_s and first_command_max_deg (a first joint command farther from the pose is held).
Needs rclpy: pip install 'armctl[ros]', or a sourced ROS 2 installation.
examples:
  armctl ros                                             # the simulated arm, node /armctl
  armctl --arm mearm ros --namespace arm2 --rate 100
  armctl ros --namespace arm1 --ros-args -p port:=/dev/ttyACM0 -p too_fast:=refuse"""

RATE_RANGE_HZ = (1.0, 500.0)
GLOBAL_PARAMS = ("arm", "port", "backend", "calibration")


DESCRIPTION = (
    "Run a ROS 2 node that owns the arm: it publishes joint_states and the tool point and takes "
    "joint trajectories, joint commands (topic_based_ros2_control) and tool goals, each checked whole."
)


def register(sub, parents) -> None:
    p = add_command(sub, "ros", parents=parents, epilog=EPILOG, description=DESCRIPTION)
    p.add_argument("--namespace", metavar="NS", default="", help="the node's namespace, e.g. arm1 (default: none)")
    p.add_argument("--rate", metavar="HZ", default="50", help="joint_states rate, Hz (default 50)")
    p.add_argument(
        "--too-fast",
        choices=["retime", "refuse"],
        default="retime",
        help="a trajectory segment faster than a joint's speed limit: slow it down (default) or refuse the "
        "trajectory (parameter too_fast)",
    )
    p.add_argument(
        "--tool-speed", metavar="MM_S", default="100", help="tool_goal lines: tool speed, mm/s (default 100)"
    )
    p.add_argument("--wire-log", metavar="FILE", help="write every byte sent and received, with times, to FILE")
    from armctl.cli.common import torque_options

    torque_options(p)  # trajectories, commands and goals checked against the servos' torque carrying --payload
    p.add_argument(
        "--ros-args",
        dest="ros_args",
        nargs=argparse.REMAINDER,
        default=None,
        help="everything after it goes to ROS (-p NAME:=VALUE parameters, -r remappings)",
    )
    p.set_defaults(func=cmd_ros)


def _rate(text: str) -> float:
    hz = parse_float(text, what="--rate")
    if not RATE_RANGE_HZ[0] <= hz <= RATE_RANGE_HZ[1]:
        raise BadInputError(f"--rate: {hz:g} Hz is outside {RATE_RANGE_HZ[0]:g}..{RATE_RANGE_HZ[1]:g} Hz")
    return hz


def _namespace(text: str) -> str:
    ns = text.strip().strip("/")
    parts = ns.split("/") if ns else []
    for part in parts:
        if not part or not (part[0].isalpha() or part[0] == "_") or not all(c.isalnum() or c == "_" for c in part):
            raise BadInputError(
                f"--namespace: {text!r} is not a ROS name (letters, digits and _, not starting with a digit, "
                "parts joined by /)"
            )
    return "/" + ns if ns else ""


def cmd_ros(args) -> int:
    rate = _rate(args.rate)
    ns = _namespace(args.namespace)
    speed = positive_text(args.tool_speed, "--tool-speed", unit="mm/s", quote=True) / 1000.0
    from armctl.ros.node import import_rclpy

    rclpy = import_rclpy()
    from rclpy.signals import SignalHandlerOptions

    ros_args = ["--ros-args", *args.ros_args] if args.ros_args else None
    rclpy.init(args=ros_args, signal_handler_options=SignalHandlerOptions.NO)
    try:
        node = rclpy.create_node("armctl", namespace=ns or None)
        _declare_parameters(node, args, speed)
        _serve(args, node, ns, rate)
        return 0
    finally:
        try:
            rclpy.shutdown()
        except Exception:  # noqa: BLE001 - already shut down
            pass
        sys.stdout.flush()


def _declare_parameters(node, args, speed: float) -> None:
    """The node's parameters: the global options (``args`` takes their values), too_fast and the numbers, each
    checked (a wrong one: BadInputError, one line, not a traceback) here and when set later."""
    from rcl_interfaces.msg import ParameterDescriptor, SetParametersResult

    from armctl.ros.node import FIRST_COMMAND_MAX_DEG

    # the global options, as parameters of the same names (given with --ros-args -p, or the options); read
    # here, then declared again read-only with the values in use once the robot is open (a read-only one
    # cannot be undeclared)
    for name in GLOBAL_PARAMS:
        value = getattr(args, name)
        node.declare_parameter(name, "" if value is None else str(value))
        got = node.get_parameter(name).value
        setattr(args, name, got if got != "" else None)
    args.arm = args.arm or "seed-3link"
    node.declare_parameter("too_fast", args.too_fast)
    # numbers: any type is taken (10 as well as 10.0) and checked here, so a wrong one is one line, not a traceback
    numbers = {"tool_speed_m_s": (speed, "m/s"), "first_command_max_deg": (FIRST_COMMAND_MAX_DEG, "deg")}
    for name, (default, _) in numbers.items():
        node.declare_parameter(name, default, ParameterDescriptor(dynamic_typing=True))

    def bad(name: str, value) -> str | None:
        if name == "too_fast" and value not in ("retime", "refuse"):
            return f"parameter too_fast: 'retime' or 'refuse', got {value!r}"
        if name in numbers and not _positive_number(value):
            return f"parameter {name}: a number > 0 ({numbers[name][1]}), got {value!r}"
        return None

    def check_params(params):
        for p in params:
            why = bad(p.name, p.value)
            if why:
                return SetParametersResult(successful=False, reason=why)
        return SetParametersResult(successful=True)

    node.add_on_set_parameters_callback(check_params)
    for name in ("too_fast", *numbers):
        why = bad(name, node.get_parameter(name).value)
        if why:
            raise BadInputError(why)


def _serve(args, node, ns: str, rate: float) -> None:
    """Open the arm and run the node on it until it is done (Ctrl-C, a stop signal, a lost link: raised)."""
    from rcl_interfaces.msg import ParameterDescriptor
    from rclpy.executors import SingleThreadedExecutor

    from armctl.cli.common import open_robot, setup
    from armctl.ros.messages import frame_name
    from armctl.ros.node import ArmNode

    fixed = ParameterDescriptor(read_only=True, description="a global option of armctl; restart the node")
    arm, cal = setup(args)
    with open_robot(args, arm, cal) as robot:
        in_use = {
            "arm": arm.name,
            "port": str(robot.port),
            "backend": robot.backend.name,
            "calibration": str(robot.calibration.source),
        }
        for name in GLOBAL_PARAMS:
            node.undeclare_parameter(name)
            node.declare_parameter(name, in_use[name], fixed, ignore_override=True)
        frame = (ns.strip("/") + "/" if ns else "") + frame_name(arm)
        arm_node = ArmNode(robot, node, rate_hz=rate, frame_id=frame)
        # one thread runs every callback (the services and the action wait for their motion off it)
        executor = SingleThreadedExecutor()
        executor.add_node(node)
        spinner = threading_spin(executor)
        arm_node.start()
        pose = robot.where()
        print(
            f"armctl ros: node {node.get_fully_qualified_name()} drives {arm.name!r} on {robot.port} "
            f"({robot.backend.name}); joint_states at {rate:g} Hz ({pose.source}), frame {frame!r}",
            flush=True,
        )
        arm_node.event("started", node=node.get_fully_qualified_name(), port=robot.port, arm=arm.name)
        try:
            while not arm_node.done.wait(0.1):
                pass
        finally:
            arm_node.close("interrupted" if arm_node.failed is None else "link lost")
            time.sleep(0.05)  # let the last events go out
            executor.shutdown(timeout_sec=2.0)
            spinner.join(timeout=2.0)
            node.destroy_node()
        if arm_node.failed is not None:
            raise arm_node.failed


def _positive_number(value) -> bool:
    """A parameter's value is a finite number > 0 (an integer or a float, not a bool)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and 0 < value < math.inf


def threading_spin(executor):
    import threading

    t = threading.Thread(target=executor.spin, name="armctl-ros-executor", daemon=True)
    t.start()
    return t
