"""Recording what an arm does into a LeRobot dataset (``armctl.dataset.writer.DatasetWriter``): which values, under
which names, sampled at the dataset's fps, with camera frames, written by a thread of its own so the motion's
loop never waits for a video encoder.

Values (``ArmFeatures``):

- an SO-101 on bus servos: LeRobot's six ``<motor>.pos`` (``shoulder_pan.pos`` ... ``gripper.pos``) in LeRobot's
  units (0.4.4 and later, ``use_degrees``; ``lerobot.normalize``): body joints in degrees from the middle
  of the servo's range, ``(steps - mid) * 360 / 4095``, where ``mid`` is the step at the URDF's zero pose
  (``Arm.urdf_map``'s offsets, 0 / 76.0 / -73.8 / -5.0 deg in armctl's angles; the middle of the range in a
  LeRobot calibration), which is the URDF angle LeRobot feeds its kinematics, the wrist roll alike (the middle of
  the 0..4095 LeRobot gives it; held by the sidecar's ``held_joints``: where a follow turned it, else at its held
  position); the gripper LeRobot's RANGE_0_100 over its
  calibrated range with the calibration's drive_mode (0 closed, 100 open); ``robot_type`` ``so_follower``;
- any other arm: armctl's joint names, ``<joint>.pos`` in degrees (armctl's angles), and ``gripper.pos`` as
  0..100 % open (closed 0, open 100); ``robot_type`` the arm's name.

``observation.state`` is the measured pose where the servos report one (bus servos, the simulators), else
the commanded one (PWM servos), as ``meta/armctl.json`` says; ``action`` is what the follower was commanded.
"""

from __future__ import annotations

import math
import queue
import threading
import time
from dataclasses import dataclass

import numpy as np

from armctl.calibration.lerobot import (
    DEGREES,
    LEROBOT_STEPS_PER_DEG,
    RANGE_0_100,
    gripper_drive_mode,
    lerobot_degrees,
    normalize,
)
from armctl.dataset.writer import DatasetWriter

SO101_MOTORS = ("shoulder_pan", "shoulder_lift", "elbow_flex", "wrist_flex", "wrist_roll", "gripper")
WRIST_ROLL_RANGE = (0, 4095)  # LeRobot forces the wrist roll's range to 0..4095


@dataclass(frozen=True)
class ArmFeatures:
    """How one arm's poses are recorded: ``robot_type``, ``names`` (state and action alike), ``units``."""

    robot_type: str
    names: tuple[str, ...]
    units: str
    arm: object
    calibration: object

    @property
    def lerobot_so101(self) -> bool:
        return self.robot_type == "so_follower"

    def values(self, q_rad, gripper_rad: float, held_steps=None) -> np.ndarray:
        """The recorded values for joint angles ``q_rad`` (rad) and the gripper (rad; NaN: unknown); ``held_steps``:
        the held servos' positions by name (steps; the wrist roll a follow turns), else where they are held."""
        arm, cal = self.arm, self.calibration
        q = np.asarray(q_rad, dtype=float)
        if self.lerobot_so101:
            out = []
            for s, a, (_, a0, _) in zip(cal.joints, q, arm.urdf_map):  # the wrist roll too, when the arm drives it
                out.append(lerobot_degrees(s.value(a), s.value(a0)))
            if arm.roll is None:  # the wrist roll held (the sidecar's held_joints)
                roll = next((h for h in cal.held if h.name == "wrist_roll"), None)
                pos = None if roll is None else (held_steps or {}).get(roll.name, roll.position_steps)
                out.append(0.0 if pos is None else normalize(pos, DEGREES, *WRIST_ROLL_RANGE))
            g = cal.gripper
            if g is None or arm.gripper is None or not math.isfinite(gripper_rad):
                out.append(0.0)
            else:
                mode = gripper_drive_mode(g, g.value(arm.gripper.closed_rad))
                out.append(normalize(g.value(gripper_rad), RANGE_0_100, g.lo, g.hi, mode))
            return np.array(out)
        out = list(np.degrees(q))
        if arm.gripper is not None:
            gr = arm.gripper
            frac = (
                0.0 if not math.isfinite(gripper_rad) else (gripper_rad - gr.closed_rad) / (gr.open_rad - gr.closed_rad)
            )
            # 0..100 as LeRobot's grippers read (it clamps to the range): a servo reading a step past an end (the
            # koch's open end is 2730.7 steps, the servo reads 2731) must not make a dataset LeRobot's robots refuse
            out.append(100.0 * min(max(frac, 0.0), 1.0))
        return np.array(out)

    def pose(self, values) -> tuple[np.ndarray, float, dict[str, float]]:
        """The inverse of ``values``: (joint angles (rad), gripper angle (rad; NaN: no gripper), the held servos'
        steps from their held positions by name (the SO-101's wrist roll)) for recorded values ``values`` (one
        per name, in ``names`` order). Not clamped: a value outside the range gives an angle outside it."""
        arm, cal = self.arm, self.calibration
        v = [float(x) for x in values]
        if len(v) != len(self.names):
            raise ValueError(f"{len(self.names)} values ({', '.join(self.names)}), got {len(v)}")
        held: dict[str, float] = {}
        if self.lerobot_so101:
            q = [
                float(s.angle_rad(s.value(a0) + d * LEROBOT_STEPS_PER_DEG))
                for s, d, (_, a0, _) in zip(cal.joints, v, arm.urdf_map)
            ]
            roll = next((h for h in cal.held if h.name == "wrist_roll"), None) if arm.roll is None else None
            if roll is not None:
                held[roll.name] = sum(WRIST_ROLL_RANGE) / 2.0 + v[4] * LEROBOT_STEPS_PER_DEG - roll.position_steps
            g, gs = v[-1], cal.gripper
            if gs is None or arm.gripper is None:
                return np.array(q), math.nan, held
            frac = g / 100.0
            if gripper_drive_mode(gs, gs.value(arm.gripper.closed_rad)):
                frac = 1.0 - frac
            return np.array(q), float(gs.angle_rad(gs.lo + frac * (gs.hi - gs.lo))), held
        q = np.radians(v[: arm.n])
        if arm.gripper is None:
            return q, math.nan, held
        gr = arm.gripper
        return q, gr.closed_rad + v[arm.n] / 100.0 * (gr.open_rad - gr.closed_rad), held


def arm_features(arm, calibration) -> ArmFeatures:
    """What a dataset of ``arm`` (with ``calibration``, in the backend's addressing or not) records."""
    motors = SO101_MOTORS[:4] if arm.roll is None else SO101_MOTORS[:5]  # the wrist roll driven, or held
    so101 = arm.name == "so101" and tuple(arm.joint_names) == motors and arm.urdf_map is not None
    if so101 and calibration.unit == "steps":
        return ArmFeatures(
            "so_follower",
            tuple(f"{m}.pos" for m in SO101_MOTORS),
            "LeRobot's: body joints in degrees from the middle of the range (use_degrees), gripper 0..100",
            arm,
            calibration,
        )
    names = [f"{n}.pos" for n in arm.joint_names] + (["gripper.pos"] if arm.gripper is not None else [])
    units = "joint angles in degrees (armctl's convention, base first)" + (
        ", gripper 0..100 % open" if arm.gripper is not None else ""
    )
    return ArmFeatures(arm.name, tuple(names), units, arm, calibration)


class Recorder:
    """Samples a motion at the dataset's fps into episodes, with camera frames, through a writer thread.

    ``feed(t_s, q_cmd, g_cmd, q_meas, g_meas)`` is called by the motion's loop as often as it likes (cheap:
    it only queues); frame k of an episode is the first sample at or after ``start + k / fps`` (a sample late
    by a whole frame or more fills the frames it missed with itself, so ``timestamp`` stays frame_index/fps).
    ``start_episode``, ``save_episode``, ``discard_episode`` from any thread."""

    def __init__(self, writer: DatasetWriter, features: ArmFeatures, cameras=None):
        self.writer, self.features = writer, features
        self.cameras = dict(cameras or {})
        self.fps = writer.fps
        self._q: queue.Queue = queue.Queue()
        self._lock = threading.Lock()
        self._t0: float | None = None
        self._next_k = 0
        self._episode = False
        self.error: BaseException | None = None
        self.saved: list[int] = []
        self.discarded = 0
        self._thread = threading.Thread(target=self._run, name="armctl-dataset", daemon=True)
        self._thread.start()

    @property
    def recording(self) -> bool:
        return self._episode

    def feed(
        self, t_s: float, q_cmd, g_cmd: float, q_meas=None, g_meas: float = math.nan, held_cmd=None, held_meas=None
    ) -> None:
        with self._lock:
            if not self._episode:
                return
            if self._t0 is None:
                self._t0 = t_s
            due = self._t0 + self._next_k / self.fps
            if t_s + 1e-9 < due:
                return
            n = 1 + int((t_s - due) * self.fps + 1e-9)
            self._next_k += n
        action = self.features.values(q_cmd, g_cmd, held_cmd)
        if q_meas is not None and np.all(np.isfinite(q_meas)):
            state = self.features.values(q_meas, g_meas if math.isfinite(g_meas) else g_cmd, held_meas or held_cmd)
        else:
            state = action
        for _ in range(n):
            self._q.put(("frame", state, action))

    def start_episode(self, task: str) -> None:
        with self._lock:
            if self._episode:
                return
            self._t0, self._next_k, self._episode = None, 0, True
        self._q.put(("start", task))

    def save_episode(self) -> None:
        with self._lock:
            if not self._episode:
                return
            self._episode = False
        self._q.put(("save",))

    def discard_episode(self) -> None:
        with self._lock:
            if not self._episode:
                return
            self._episode = False
        self._q.put(("discard",))

    def frames(self) -> int:
        """Frames of the episode being recorded (queued or written)."""
        return self._next_k if self._episode else 0

    def _run(self) -> None:
        while True:
            item = self._q.get()
            if item is None:
                return
            if self.error is not None:
                continue
            try:
                kind = item[0]
                if kind == "start":
                    self.writer.start_episode(item[1])
                elif kind == "frame":
                    images = {name: cam.grab() for name, cam in self.cameras.items()}
                    self.writer.add_frame(item[1], item[2], images)
                elif kind == "save":
                    index = self.writer.save_episode()
                    if index is not None:
                        self.saved.append(index)
                elif kind == "discard":
                    self.writer.discard_episode()
                    self.discarded += 1
            except BaseException as exc:  # noqa: BLE001 - reported by close()
                self.error = exc

    def close(self, *, save: bool = True, timeout_s: float = 120.0) -> None:
        """End the episode being recorded (saved, or discarded with ``save=False``), write what is queued, close
        the writer and the cameras. Raises what the writer raised, if anything."""
        if save:
            self.save_episode()
        else:
            self.discard_episode()
        self._q.put(None)
        deadline = time.monotonic() + timeout_s
        self._thread.join(timeout=max(0.0, deadline - time.monotonic()))
        try:
            self.writer.close()
        finally:
            for cam in self.cameras.values():
                cam.close()
        if self.error is not None:
            raise self.error
