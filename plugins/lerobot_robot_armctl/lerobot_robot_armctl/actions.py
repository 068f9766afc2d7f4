"""LeRobot's actions as armctl follow targets, checked first (no LeRobot import here: tested without it).

``ActionSource`` is what ``armctl.Robot.follow`` follows in place of a leader arm (it has ``arm``, ``calibration``
and ``read()``): the last action accepted. ``offer(action)`` checks each action whole before it becomes the target:

- joints (``map="joints"``): ``<joint>.pos`` in the dataset naming of ``armctl.dataset.recorder.arm_features``
  (the SO-101 on bus servos: LeRobot's own six names and units; any other arm: armctl's joint angles in degrees,
  ``gripper.pos`` 0 closed .. 100 open);
- the tool (``map="tool"``, arms on a rotating base): ``x``, ``y``, ``z`` (m, the arm's frame), ``pitch`` and
  ``roll`` (deg; only for arms that have them), ``gripper`` (0..100), solved nearest the pose commanded
  (``armctl.teleop.tooltarget.tool_goal``).

An action outside a joint's limits (or a linkage's), out of reach, or whose joint move from the commanded pose
enters a keep-out zone is REFUSED, never clipped: the target becomes the pose the arm is commanded to now (it
holds where it is), ``held_actions`` counts it, and each run of refusals (until an action is accepted) is logged
once: one line naming the joint or the zone of its first and the count so far. The follow then steps towards the
target within the speed limits and holds at the zones frame by frame as ``armctl follow`` does (``zone_frames``
counts those frames).
"""

from __future__ import annotations

import logging
import math
import threading
import time

import numpy as np

from armctl.dataset.recorder import ArmFeatures, arm_features
from armctl.errors import BadInputError
from armctl.model.zones import first_violation, refusal
from armctl.teleop.leader import LeaderReading
from armctl.teleop.tooltarget import ToolTarget, tool_goal

log = logging.getLogger("armctl.lerobot")

LIMIT_TOL_DEG = 0.01  # an action this close past a limit is at it (LeRobot's float32 values round)
GRIPPER_RANGE = (0.0, 100.0)
HELD_RANGE = (0.0, 4095.0)  # a held servo's positions (steps)
MAPS = ("joints", "tool")


def tool_keys(arm) -> tuple[str, ...]:
    """The end-effector action keys ``arm`` takes: x, y, z, pitch (3-link chains), roll (a wrist roll), gripper."""
    keys = ["x", "y", "z"]
    if arm.n_links == 3:
        keys.append("pitch")
    if arm.roll is not None:
        keys.append("roll")
    if arm.gripper is not None:
        keys.append("gripper")
    return tuple(keys)


def follow_actions(robot, *, map: str = "joints", rate_hz: float = 50.0):  # noqa: A002
    """Start following LeRobot's actions on the open armctl ``robot``: (the ``ActionSource``, the follow's
    ``Motion``). The target starts where the arm is (``robot.where()``): nothing moves until an action comes."""
    pose = robot.where()
    src = ActionSource(
        robot.arm, robot.calibration, arm_features(robot.arm, robot.calibration), pose.q_rad, pose.gripper_rad, map=map
    )
    return src, robot.follow(src, map="joints", rate_hz=rate_hz, on_frame=src.frame)


class ActionSource:
    """The follow's target from LeRobot's actions (see the module docstring): ``offer(action)`` from LeRobot's
    loop, ``read()`` from armctl's follow, ``frame(...)`` its ``on_frame`` (what was commanded and measured)."""

    def __init__(self, arm, calibration, features: ArmFeatures, q_rad, gripper_rad: float, *, map: str = "joints"):  # noqa: A002
        if map not in MAPS:
            raise BadInputError(f"--robot.map: 'joints' or 'tool', got {map!r}")
        if map == "tool" and not arm.has_base:
            raise BadInputError(
                f"--robot.map tool: end-effector actions (x, y, z) need an arm on a rotating base; {arm.name!r} "
                "works in a plane (use --robot.map joints)"
            )
        self.arm, self.calibration, self.features, self.map = arm, calibration, features, map
        self.port = "LeRobot's actions"
        self.names = tuple(features.names) if map == "joints" else tool_keys(arm)
        q, g = np.array(q_rad, dtype=float), math.nan if gripper_rad is None else float(gripper_rad)
        self._lock = threading.Lock()
        self._q, self._g, self._held = q.copy(), g, {}
        self.q_cmd, self.g_cmd, self.held_cmd = q.copy(), g, {}
        self.q_meas, self.g_meas = None, math.nan
        self.held_actions = 0  #: actions refused (the arm held where it was)
        self.accepted = 0  #: actions taken as the target
        self.zone_frames = 0  #: follow frames held at a keep-out zone on the way to an accepted target
        self.last_refusal = ""  #: why the last refused action was refused
        self._streak: str | None = None  # what the first of the refusals in a row was about (logged once per run)

    # --- armctl's side -----------------------------------------------------------------------------------

    def read(self) -> LeaderReading:
        """The target now, as a leader's reading (``Robot.follow`` reads it every frame)."""
        with self._lock:
            q, g, held = self._q.copy(), self._g, dict(self._held)
        steps = {h.id: h.position_steps + held[h.name] for h in self.calibration.held if h.name in held}
        return LeaderReading(time.monotonic(), q, g, steps, frozenset())

    def frame(self, t_s: float, q_rad, gripper_rad: float, target, measured: dict) -> None:
        """The follow commanded ``q_rad`` and the gripper (its ``on_frame``); ``measured``: angles by servo address."""
        cal = self.calibration
        q_meas, g_meas = None, math.nan
        if measured and all(s.channel in measured for s in cal.joints):
            q_meas = np.array([measured[s.channel] for s in cal.joints], dtype=float)
            if cal.gripper is not None:
                g_meas = float(measured.get(cal.gripper.channel, math.nan))
        with self._lock:
            self.q_cmd, self.g_cmd = np.array(q_rad, dtype=float), float(gripper_rad)
            self.held_cmd = dict(target.held_cmd_steps)
            self.q_meas, self.g_meas = q_meas, g_meas
        if target.clamped.startswith("held at a keep-out zone"):
            self.zone_frames += 1

    def stands(self) -> tuple:
        """``(q_rad, gripper_rad)``: the pose the arm is asked to hold now (where it stood at connect until an
        action is taken): a gamepad leader in the same process starts from it (``armctl.teleop.followers``)."""
        with self._lock:
            return self._q.copy(), self._g

    # --- LeRobot's side ----------------------------------------------------------------------------------

    def observation(self) -> dict[str, float]:
        """The arm's joints and gripper as measured (servos that report), else as commanded, by feature name."""
        with self._lock:
            q = self.q_meas if self.q_meas is not None else self.q_cmd
            g = self.g_meas if math.isfinite(self.g_meas) else self.g_cmd
            held = dict(self.held_cmd)
        values = self.features.values(q, g, held or None)
        return {n: float(v) for n, v in zip(self.features.names, values)}

    def offer(self, action: dict) -> dict[str, float]:
        """Check ``action`` (a dict by feature name); accepted: it becomes the target; refused: the arm holds where
        it is commanded now. Returns the action the arm is sent towards (LeRobot's ``send_action`` result).
        BadInputError (one line) for a malformed action: a missing key, a value that is no number."""
        values = self._values(action)
        with self._lock:
            q_from, g_from, held_from = self.q_cmd.copy(), self.g_cmd, dict(self.held_cmd)
        if self.map == "tool":
            q, g, held, why = self._tool(values, q_from)
        else:
            q, g, held = self.features.pose(values)
            why = None
        why = why or self._refusal(q_from, q, g, held)
        if why is None:
            with self._lock:
                self._q, self._g, self._held = np.array(q, dtype=float), float(g), dict(held)
            self.accepted += 1
            self._streak = None
            return dict(zip(self.names, (float(v) for v in values)))
        self.held_actions += 1
        self.last_refusal = why[1]
        held_off = {h.name: held_from[h.name] - h.position_steps for h in self.calibration.held if h.name in held_from}
        with self._lock:
            self._q, self._g, self._held = q_from, g_from if math.isfinite(g_from) else self._g, held_off
        if self._streak is None:  # the first of a run of refusals (until an action is accepted): one line
            self._streak = why[0]
            log.warning("armctl: action refused, arm held: %s (%d held so far)", why[1], self.held_actions)
        return self._held_action(q_from, g_from, held_from)

    def _values(self, action: dict) -> list[float]:
        out = []
        missing = [n for n in self.names if n not in action]
        if missing:  # a dataset or a policy of another arm: say both sides, as armctl replay does
            extra = [str(k) for k in action if k not in self.names]
            also = f"; extra {', '.join(extra)}" if extra else ""
            raise BadInputError(
                f"action: {', '.join(repr(n) for n in missing)} missing{also} (this arm's actions: "
                f"{', '.join(self.names)}; were they made for another arm?)"
            )
        for name in self.names:
            try:
                out.append(float(action[name]))
            except (TypeError, ValueError):
                raise BadInputError(f"action {name!r}: a number, got {action[name]!r}") from None
        return out

    def _held_action(self, q, g, held_abs) -> dict[str, float]:
        """The pose the arm holds, as an action."""
        if self.map == "tool":
            return dict(zip(self.names, (math.nan,) * len(self.names)))
        values = self.features.values(q, g, held_abs or None)
        return {n: float(v) for n, v in zip(self.names, values)}

    def _tool(self, values: list[float], q_from) -> tuple:
        """An end-effector action solved nearest ``q_from``: (q, gripper, held, (key, why) if refused else None)."""
        arm = self.arm
        v = dict(zip(self.names, values))
        g = v.get("gripper")
        grip = math.nan
        if g is not None:
            if not GRIPPER_RANGE[0] <= g <= GRIPPER_RANGE[1]:
                return q_from, math.nan, {}, ("gripper", f"gripper {g:.2f} outside 0..100")
            gr = arm.gripper
            grip = gr.closed_rad + g / 100.0 * (gr.open_rad - gr.closed_rad)
        if not all(math.isfinite(x) for x in values):
            return q_from, grip, {}, ("nan", "an action that is not a number")
        pitch = None if "pitch" not in v else math.radians(v["pitch"])
        roll = None if "roll" not in v else math.radians(v["roll"])
        goal, err, why = tool_goal(arm, ToolTarget(v["x"], v["y"], v["z"], pitch=pitch, roll=roll), q_from)
        if why:
            return q_from, grip, {}, ("reach", f"tool target ({v['x']:.3f}, {v['y']:.3f}, {v['z']:.3f}) m: {why}")
        if not math.isfinite(grip):
            grip = self._g
        return goal, grip, {}, None

    def _refusal(self, q_from, q, g, held) -> tuple[str, str] | None:
        """(what, why) the pose ``q`` (gripper ``g``, held servos ``held``) is refused for, or None."""
        arm = self.arm
        q = np.asarray(q, dtype=float)
        if not np.all(np.isfinite(q)) or (arm.gripper is not None and not math.isfinite(g)):
            return "nan", "an action that is not a number"
        tol = math.radians(LIMIT_TOL_DEG)
        for name, a, lo, hi in zip(arm.joint_names, q, arm.q_min, arm.q_max):
            if a < lo - tol or a > hi + tol:
                return name, (
                    f"{name} {math.degrees(a):.1f} deg is outside its limits "
                    f"{math.degrees(lo):.1f}..{math.degrees(hi):.1f} deg"
                )
        q[:] = np.clip(q, arm.q_min, arm.q_max)
        if not arm.within_limits(q):
            return "linkage", "the pose is outside the linkage's limits (the forearm against the upper arm)"
        gr = arm.gripper
        if gr is not None:
            lo, hi = sorted((gr.closed_rad, gr.open_rad))
            if not lo - tol <= g <= hi + tol:
                pct = 100.0 * (g - gr.closed_rad) / (gr.open_rad - gr.closed_rad)
                return "gripper", f"gripper {pct:.2f} outside 0..100"
        for h in self.calibration.held:
            if h.name in held and not HELD_RANGE[0] <= h.position_steps + held[h.name] <= HELD_RANGE[1]:
                return h.name, f"{h.name} outside its servo's 0..4095 steps"
        zones = arm.zones
        if zones:
            v = first_violation(arm, zones, np.vstack([q_from, q]))
            if v is not None:
                err = refusal(arm, zones, v, f"{v.at * 100:.0f}% along the joint move to it")
                return f"zone {err.zone}", str(err)
        return None
