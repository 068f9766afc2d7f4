"""The commands of an ``ArmNode`` played on its Robot, one at a time, in a thread of their own: the latest wins
(one waits at most; an older one is dropped, and said). What a command starts is checked from where the arm is,
timed with the Robot's ramp to its start, and watched to its end (published as an event)."""

from __future__ import annotations

import math
import threading
import time
from concurrent.futures import Future

import numpy as np

from armctl import motion
from armctl.errors import ArmctlError, BadInputError, LinkError, MotionError, StopRequested, UnreachableError
from armctl.robot.runcontrol import RAMP_SPEED_FRACTION
from armctl.ros.messages import Refused, check_trajectory

FOLLOW_RATE_HZ = 100.0  # how often the followed target is looked at (a ros2_control update rate)
REQUEST_WAIT_S = 10.0
# a service or action waits for its motion's end: its planned duration (ramp included) plus this much, plus this
# fraction of it (a loaded machine plays late; the simulated servos settle after the last pulse)
END_MARGIN_S, END_MARGIN_FRACTION = 2.0, 0.25


class Worker:
    """The worker of ``owner`` (the ArmNode: its robot, arm, rclpy node, events and the count of held joint
    commands): ``request`` hands it a command, ``command_to_end`` also waits for the motion's end, ``halt`` stops
    what plays. ``source`` is the joint_commands leader a follow reads; ``closing`` ends the thread."""

    def __init__(self, owner, source, closing: threading.Event):
        self.owner, self.robot, self.arm = owner, owner.robot, owner.arm
        self.source, self.closing = source, closing
        self._lock = threading.Lock()
        self._slot: tuple | None = None  # (kind, payload, future): the one command waiting for the worker
        self._wake = threading.Condition(self._lock)
        self.motion = None  # the Motion last handed to the Robot
        self.follow = None  # the follow motion fed by joint_commands, while it runs
        self._planned_s: dict[int, float] = {}  # id(the latest Motion) -> its planned duration, ramp included
        self.thread = threading.Thread(target=self._work, name="armctl-ros-commands", daemon=True)

    def wake(self) -> None:
        """Wake the thread (to see ``closing``)."""
        with self._lock:
            self._wake.notify_all()

    def following(self) -> bool:
        """True while joint_commands are followed, or a follow waits to start: a new command needs no request."""
        f = self.follow
        if f is not None and not f.done:
            return True
        with self._lock:
            return self._slot is not None and self._slot[0] == "follow"

    def command_to_end(self, kind: str, payload) -> tuple[bool, str]:
        """Hand a command to the worker and wait until its motion is over: (True, done and how long) or (False,
        why not: refused, dropped, stopped by a stop or a newer command, failed, lost link, not over in time)."""
        try:
            ok, text, m = self.request(kind, payload).result(timeout=REQUEST_WAIT_S)
        except Exception as exc:  # noqa: BLE001 - the worker did not take it in time
            return False, f"{kind}: not started: {exc or type(exc).__name__}"
        if not ok or m is None:
            return bool(ok), text
        planned = self._planned_s.get(id(m), float(m.trajectory.duration_s))
        limit = planned + END_MARGIN_S + END_MARGIN_FRACTION * planned
        source = "joint_trajectory" if kind == "trajectory" else kind
        t0 = time.monotonic()
        try:
            m.wait(timeout=limit)
        except TimeoutError:
            return (
                False,
                f"{source}: not over {limit:.2f} s after it was accepted (planned {planned:.2f} s); it goes on",
            )
        except StopRequested:
            return False, f"{source}: stopped ({m.stop_reason}) after {time.monotonic() - t0:.2f} s"
        except LinkError as exc:
            return False, f"{source}: link lost: {exc}"
        except ArmctlError as exc:
            return False, f"{source}: failed: {exc}"
        return True, f"{source}: done in {time.monotonic() - t0:.2f} s (planned {planned:.2f} s)"

    def request(self, kind: str, payload) -> Future:
        """Hand a command to the worker: the latest wins (one waiting at most; an older one is dropped, and said)."""
        fut: Future = Future()
        with self._lock:
            old, self._slot = self._slot, (kind, payload, fut)
            self._wake.notify_all()
        if old is not None:
            old[2].set_result((False, f"dropped: a newer command ({kind}) came before it started", None))
            self.owner.event("dropped", source=old[0], reason=f"superseded by {kind} before it started")
        return fut

    def _work(self) -> None:
        while True:
            with self._lock:
                while self._slot is None and not self.closing.is_set():
                    self._wake.wait(0.5)
                if self.closing.is_set():
                    item, self._slot = self._slot, None
                    if item is not None:
                        item[2].set_result((False, "the node is shutting down", None))
                    return
                item, self._slot = self._slot, None
            kind, payload, fut = item
            try:
                fut.set_result(self._do(kind, payload))
            except LinkError as exc:
                fut.set_result((False, str(exc), None))
                self.owner.lost(exc)
            except ArmctlError as exc:
                fut.set_result((False, str(exc), None))
                self.owner.refused(kind if kind != "trajectory" else "joint_trajectory", exc)
            except Exception as exc:  # noqa: BLE001 - a bug must not kill the worker silently
                fut.set_result((False, f"internal error: {exc!r}", None))
                self.owner.event("failed", source=kind, reason=repr(exc))

    def halt(self, reason: str) -> None:
        """Stop whatever plays, under control, and wait until it has stopped (the arm holds where it is)."""
        robot = self.robot
        if not robot.moving:
            return
        robot.stop(reason)
        for m in (self.follow, self.motion):
            if m is not None:
                try:
                    m.wait(timeout=5.0)
                except (ArmctlError, TimeoutError):
                    pass
        deadline = time.monotonic() + 5.0
        while robot.moving and time.monotonic() < deadline:
            time.sleep(0.005)

    def _do(self, kind: str, payload) -> tuple[bool, str, object]:
        """Start command ``kind``: (ok, what was done, the Motion started or None)."""
        robot = self.robot
        if kind == "stop":
            was = robot.moving
            self.halt(f"stopped by {payload}")
            self.owner.event("stopped", source=payload, moving_before=was)
            return True, "stopped: the arm holds its pose" if was else "the arm was not moving", None
        if kind == "follow":
            f = self.follow
            if f is not None and not f.done:
                return True, "following", None
            self.halt("joint_commands")
            m = robot.follow(self.source, map="joints", rate_hz=FOLLOW_RATE_HZ)
            self.follow = m
            self._watch(m, "joint_commands")
            self.owner.event("accepted", source="joint_commands", label=m.label, held=self.owner.held)
            return True, "following joint_commands", None
        if kind in ("trajectory", "tool_goal"):  # refused from where the arm is now, before what plays is stopped
            pose = robot.where() if robot.moving else robot.commanded_pose()
            if kind == "trajectory":  # too fast
                g0 = math.nan if pose.gripper_rad is None else pose.gripper_rad
                too_fast = self.owner.node.get_parameter("too_fast").value
                check_trajectory(self.arm, *payload, pose.q_rad, g0, too_fast=too_fast)
            else:  # out of reach or outside the joint limits
                try:
                    motion.solve_pose(self.arm, np.array(payload, dtype=float), None, pose.q_rad)
                except MotionError as exc:
                    why = "reach" if isinstance(exc, UnreachableError) else "limit"
                    raise Refused(str(exc), field="point", kind=why) from None
        self.halt(f"a new {kind}")
        pose = robot.commanded_pose()  # where the arm holds: the motion ramps from here to its start if elsewhere
        if kind == "trajectory":
            names, points = payload
            g0 = math.nan if pose.gripper_rad is None else pose.gripper_rad
            too_fast = self.owner.node.get_parameter("too_fast").value
            checked = check_trajectory(self.arm, names, points, pose.q_rad, g0, too_fast=too_fast)
            m = robot.run(motion.Plan(checked.trajectory, [], self.arm), wait=False)
            info = {
                "duration_s": checked.duration_s,
                "asked_s": checked.asked_s,
                "retimed": checked.retimed,
                "points": len(points),
            }
            source = "joint_trajectory"
        elif kind == "tool_goal":
            speed = float(self.owner.node.get_parameter("tool_speed_m_s").value)
            m = robot.move_to(*payload, speed=speed, wait=False)
            info, source = {"target_m": list(payload), "duration_s": float(m.trajectory.duration_s)}, "tool_goal"
        elif kind == "home":
            m = robot.home(wait=False)
            info, source = {"duration_s": float(m.trajectory.duration_s)}, "home"
        elif kind in ("gripper_open", "gripper_close"):
            m = robot.gripper("open" if kind == "gripper_open" else "close", wait=False)
            info, source = {"duration_s": float(m.trajectory.duration_s)}, kind
        else:
            raise BadInputError(f"unknown command {kind!r}")
        ramp = self._ramp_s(pose, m.trajectory)
        info["ramp_s"] = ramp
        info["duration_s"] = float(info["duration_s"]) + ramp
        self._planned_s = {id(m): info["duration_s"]}  # the latest motion's only: the latest command wins
        self.motion = m
        self._watch(m, source)
        self.owner.event("accepted", source=source, **info)
        return True, f"{source}: accepted, {info['duration_s']:.2f} s", m

    def _ramp_s(self, pose, traj) -> float:
        """How long the Robot's slow ramp from ``pose`` to the start of ``traj`` takes (0 if it starts there): the
        same joint and gripper moves at RAMP_SPEED_FRACTION as the runner plays before the motion."""
        q1, g1 = np.asarray(traj.q_rad[0], dtype=float), float(traj.gripper_rad[0])
        g0 = math.nan if pose.gripper_rad is None else float(pose.gripper_rad)
        moves = []
        if np.max(np.abs(q1 - pose.q_rad)) > 1e-4:
            moves.append(motion.JointMove(tuple(q1), speed_fraction=RAMP_SPEED_FRACTION))
        if self.arm.gripper is not None and math.isfinite(g1) and math.isfinite(g0) and abs(g1 - g0) > 1e-4:
            moves.append(motion.GripperMove(g1, speed_fraction=RAMP_SPEED_FRACTION))
        if not moves:
            return 0.0
        try:
            plan = motion.plan_moves(
                self.arm,
                moves,
                q_start=pose.q_rad,
                gripper_start=g0 if math.isfinite(g0) else None,
                period_s=traj.period_s,
            )
        except ArmctlError:  # the runner says so when the motion starts
            return 0.0
        return float(plan.trajectory.duration_s)

    def _watch(self, m, source: str) -> None:
        """Publish how motion ``m`` ended (done, stopped, failed; a lost link ends the node)."""

        def over(m) -> None:
            err = m.error
            if err is None:
                self.owner.event("done", source=source)
            elif isinstance(err, StopRequested):
                self.owner.event("stopped", source=source, reason=m.stop_reason)
            elif isinstance(err, LinkError):
                self.owner.lost(err)
            else:
                self.owner.event("failed", source=source, reason=str(err))

        m.add_done_callback(over)
