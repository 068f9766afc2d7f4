"""armctl ros over loopback: command-to-servo latency and joint_states jitter, beside the Python API.

Run with a python that has rclpy (``.cache/ros-venv/bin/python bench/ros.py``; ``bash .ci/run`` makes it, or
``pip install -e '.[ros]'``). Each path drives the simulated seed-3link arm served on a pty by this process, so
every servo pulse change is seen with its time:

- ``ros joint_commands``: ``armctl ros`` in its own process; this process publishes a sensor_msgs/JointState on
  ``joint_commands`` (as topic_based_ros2_control does) and times it to the first pulse change on the board;
- ``python follow``: the same path without ROS: ``robot.follow`` of the latest command in a child process, told
  each command on a pipe (as the node is told on a topic);
- ``python move_joints``: a planned joint move (``robot.move_joints(wait=False)``) in that child, same timing.

Each command turns the shoulder 1 degree from rest, sent at a random phase of the board's 20 ms frames (sent
always at one phase, the figures would be one point of the spread). The pulse changes at a frame boundary.
Then ``joint_states`` jitter: arrival intervals at the client (50 Hz asked) against a Python loop calling
``robot.where()`` at 50 Hz. p50/p99/max; the goal: ROS p99 under 2 frames (40 ms).

  .cache/ros-venv/bin/python bench/ros.py          # 40 commands per path
  .cache/ros-venv/bin/python bench/ros.py -n 100
"""

from __future__ import annotations

import argparse
import math
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from armctl.sim.pty import PtySim  # noqa: E402

NAMES = ["shoulder", "elbow", "wrist"]
BASE = np.radians([45.0, -90.0, -45.0])  # seed-3link's home
FRAME_MS = 20.0


def serve(url: str) -> tuple[PtySim, threading.Thread]:
    pty = PtySim(url)
    t = threading.Thread(target=pty.serve, daemon=True)
    t.start()
    return pty, t


def wait_rest(pty: PtySim, quiet_s: float = 0.25, timeout_s: float = 10.0) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        last = pty.sim.pulses[-1][0] / pty.rate + pty.t0 if pty.sim.pulses else 0.0
        if time.monotonic() - last > quiet_s:
            return
        time.sleep(0.02)


def latencies(pty: PtySim, send, n: int) -> np.ndarray:
    """Per command: ms from ``send(q)`` to the first pulse change after it."""
    out = []
    rng = np.random.default_rng(7)
    for i in range(n):
        wait_rest(pty)
        time.sleep(rng.uniform(0.0, FRAME_MS / 1000))  # at every phase of the board's frame, not one
        k = len(pty.sim.pulses)
        q = BASE + np.radians([1.0 if i % 2 == 0 else 0.0, 0.0, 0.0])
        t_send = time.monotonic()
        send(q)
        deadline = t_send + 2.0
        while len(pty.sim.pulses) <= k and time.monotonic() < deadline:
            time.sleep(0.001)
        if len(pty.sim.pulses) <= k:
            raise SystemExit("no pulse changed within 2 s of a command")
        t_pulse = pty.t0 + pty.sim.pulses[k][0] / pty.rate
        out.append((t_pulse - t_send) * 1000)
    return np.array(out)


def stats(ms: np.ndarray) -> str:
    return f"{np.percentile(ms, 50):7.1f} {np.percentile(ms, 99):7.1f} {ms.max():7.1f}"


def ros_path(n: int, state: str, seconds: float):
    import rclpy
    from rclpy.executors import SingleThreadedExecutor
    from sensor_msgs.msg import JointState

    pty, thread = serve("armsim://seed-3link?seed=1")
    env = dict(os.environ, ARMCTL_STATE_DIR=state, ROS_AUTOMATIC_DISCOVERY_RANGE="LOCALHOST", PYTHONPATH=str(ROOT))
    env.setdefault("ROS_DOMAIN_ID", str(10 + os.getpid() % 90))
    os.environ.update({k: env[k] for k in ("ROS_AUTOMATIC_DISCOVERY_RANGE", "ROS_DOMAIN_ID")})
    node_p = subprocess.Popen(
        [sys.executable, "-m", "armctl", "--arm", "seed-3link", "--port", pty.path, "ros", "--namespace", "bench"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env=env,
    )
    try:
        line = node_p.stdout.readline()
        if not line.startswith("armctl ros: node"):
            raise SystemExit(f"armctl ros did not start: {line!r}")
        rclpy.init()
        node = rclpy.create_node("armctl_bench")
        arrivals: list[float] = []
        node.create_subscription(JointState, "/bench/joint_states", lambda m: arrivals.append(time.monotonic()), 50)
        pub = node.create_publisher(JointState, "/bench/joint_commands", 10)
        ex = SingleThreadedExecutor()
        ex.add_node(node)
        threading.Thread(target=ex.spin, daemon=True).start()
        while pub.get_subscription_count() == 0 or not arrivals:
            time.sleep(0.02)
        arrivals.clear()
        time.sleep(seconds)
        got = np.array(arrivals)
        jitter = np.abs(np.diff(got) * 1000 - 20.0)

        def send(q) -> None:
            msg = JointState()
            msg.name = NAMES
            msg.position = [float(v) for v in q]
            pub.publish(msg)

        send(BASE)  # the follow starts with a slow ramp: first let it catch up
        time.sleep(1.5)
        lat = latencies(pty, send, n)
        ex.shutdown()
        node.destroy_node()
        rclpy.shutdown()
        return lat, jitter
    finally:
        node_p.terminate()
        node_p.wait(10)
        pty.closed = True
        thread.join(2)
        pty.close()


def child(port: str, seconds: float) -> int:
    """The Python API in its own process (as the node is): where() at 50 Hz, then one command per stdin line
    (``move Q1 Q2 Q3``: move_joints; ``follow``: start following; ``put Q1 Q2 Q3``: the followed target)."""
    import json

    import armctl
    from armctl.ros.node import CommandSource

    with armctl.connect("seed-3link", port=port) as robot:
        t_next, times = time.monotonic(), []
        end = t_next + seconds
        while t_next < end:  # joint_states' loop without ROS: where() at 50 Hz
            t_next += 0.02
            time.sleep(max(0.0, t_next - time.monotonic()))
            robot.where()
            times.append(time.monotonic())
        print(json.dumps(list(np.diff(times) * 1000)), flush=True)
        src = CommandSource(robot.arm)
        for line in sys.stdin:
            word, *vals = line.split()
            q = np.array([float(v) for v in vals])
            if word == "move":
                robot.move_joints(q, wait=False)
            elif word == "follow":
                src.put(BASE, math.nan)
                robot.follow(src, map="joints", rate_hz=100)
            elif word == "put":
                src.put(q, math.nan)
            elif word == "quit":
                break
        robot.stop()
    return 0


def python_paths(n: int, state: str, seconds: float):
    import json

    pty, thread = serve("armsim://seed-3link?seed=1")
    env = dict(os.environ, ARMCTL_STATE_DIR=state, PYTHONPATH=str(ROOT))
    p = subprocess.Popen(
        [sys.executable, __file__, "--child", pty.path, "--seconds", str(seconds)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    )

    def say(word: str, q=()) -> None:
        p.stdin.write(" ".join([word, *(repr(float(v)) for v in q)]) + "\n")
        p.stdin.flush()

    try:
        jitter = np.abs(np.array(json.loads(p.stdout.readline())) - 20.0)
        say("move", BASE)
        lat_move = latencies(pty, lambda q: say("move", q), n)
        wait_rest(pty)
        say("follow")
        time.sleep(1.5)
        lat_follow = latencies(pty, lambda q: say("put", q), n)
        say("quit")
        p.wait(10)
        return lat_follow, lat_move, jitter
    finally:
        if p.poll() is None:
            p.kill()
        pty.closed = True
        thread.join(2)
        pty.close()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("-n", type=int, default=40, help="commands per path (default 40)")
    ap.add_argument("--seconds", type=float, default=5.0, help="joint_states window, s (default 5)")
    ap.add_argument("--child", metavar="PORT", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        return child(args.child, args.seconds)
    with tempfile.TemporaryDirectory(prefix="armctl-bench-ros-") as root:
        os.makedirs(f"{root}/a")
        os.makedirs(f"{root}/b")
        ros_lat, ros_jit = ros_path(args.n, f"{root}/a", args.seconds)
        py_follow, py_move, py_jit = python_paths(args.n, f"{root}/b", args.seconds)
    print(f"command -> first pulse change on the simulated arm, ms ({args.n} commands each)")
    print(f"{'path':<34} {'p50':>7} {'p99':>7} {'max':>7}  p50 vs python follow")
    base = np.percentile(py_follow, 50)
    for name, ms in (
        ("ros joint_commands (loopback)", ros_lat),
        ("python follow (same path, no ROS)", py_follow),
        ("python move_joints (planned)", py_move),
    ):
        print(f"{name:<34} {stats(ms)}  {np.percentile(ms, 50) / base:5.2f}x")
    p99 = np.percentile(ros_lat, 99)
    print(f"goal: ros p99 under 2 frames (40 ms): {p99:.1f} ms {'met' if p99 < 2 * FRAME_MS else 'MISSED'}")
    print(f"\njoint_states interval jitter |dt - 20 ms|, ms ({args.seconds:g} s at 50 Hz)")
    print(f"{'path':<34} {'p50':>7} {'p99':>7} {'max':>7}")
    print(f"{'ros joint_states (arrival)':<34} {stats(ros_jit)}")
    print(f"{'python where() loop':<34} {stats(py_jit)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
