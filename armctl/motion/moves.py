"""The moves a plan is made of (line, joint, gripper, wait), the planner's defaults, and MovePlan (one planned move)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from armctl.model.kinematics import TWO_PI  # noqa: F401  (re-exported: armctl.motion.TWO_PI)

DEFAULT_SPEED_M_S = 0.10
DEFAULT_ACCEL_M_S2 = 0.50
DEFAULT_SEGMENT_M = 0.002
DEFAULT_JOINT_SPEED_FRACTION = 0.5
DEFAULT_JOINT_ACCEL_RAD_S2 = math.radians(360.0)
DEFAULT_MAX_JOINT_STEP_RAD = math.radians(1.0)
#: Joint speeds are planned against this fraction of each limit; the sampled
#: trajectory is then verified against the full limit.
SPEED_MARGIN = 0.98
#: The fewest segments a line is cut into (the speed profile needs points to ramp on).
MIN_TIMING_SEGMENTS = 16
# The longest one move (or wait) may take: a speed or acceleration so small that a move would take
# longer is a mistake, and sampling it would fill the memory.
MAX_MOVE_S = 3600.0
#: A segment this short that still moves a joint more than the bound is a jump.
MIN_SEGMENT_M = 1e-6
# (REACH_TOL_M, how far a target may lie outside the reach annulus and count as on its edge: armctl.ik.redundancy)


@dataclass(frozen=True)
class LineMove:
    """Straight-line move of the tool point to ``target_m`` (x, y in m; x, y, z on a base arm).

    ``phi_rad``: tool angle at the end (3-link chains only); None keeps the
    redundancy free (the end angle comes from IK near the start pose, then phi
    is interpolated). ``speed_m_s`` and ``accel_m_s2`` bound the tool point's
    speed and acceleration along the line; ``segment_m`` is the longest
    Cartesian segment. ``end_q_rad`` (optional) is the exact pose the move must
    end in (a joint pose used as a line target). ``jerk_time_s`` > 0 turns the
    trapezoid speed profile into an S-curve whose acceleration ramps over that time. ``reach_q_rad`` (optional):
    joint angles the caller solved for ``target_m`` (inside every limit): the planner checks them (FK) instead of
    solving the end again; angles that do not reach the target (or its tool angle) are ignored.
    ``blend_m`` > 0: the tool may pass the corner at the end of this line within that distance of it,
    without stopping, when the next move is a line too (``plan_moves``; see ``blend_chain``); ``stop``
    forces a rest at the end whatever the blend. ``roll_rad`` (arms with a wrist roll): the roll at the end, turning
    linearly along the line (the whole turn nearest the start's inside the limits); None keeps the start's.
    """

    target_m: tuple[float, ...]
    phi_rad: float | None = None
    speed_m_s: float = DEFAULT_SPEED_M_S
    accel_m_s2: float = DEFAULT_ACCEL_M_S2
    segment_m: float = DEFAULT_SEGMENT_M
    end_q_rad: tuple[float, ...] | None = None
    jerk_time_s: float = 0.0
    label: str = ""
    blend_m: float = 0.0
    stop: bool = False
    reach_q_rad: tuple[float, ...] | None = None
    roll_rad: float | None = None  # an arm with a wrist roll: the roll at the end (None: the roll it has)


@dataclass(frozen=True)
class JointMove:
    """Joint-space move to ``q_rad``; all joints start and stop together.

    ``speed_fraction`` of each joint's speed limit (0..1], ``accel_rad_s2``
    the acceleration bound of every joint (rad/s^2); ``jerk_time_s`` as for LineMove. ``blend_m`` > 0: the
    move after it (a joint move or a line) may start before this one has come to rest, the tool passing within
    that distance of both moves' own paths (``blend_joint_moves``); ``stop`` forces a rest at the end.
    """

    q_rad: tuple[float, ...]
    speed_fraction: float = DEFAULT_JOINT_SPEED_FRACTION
    accel_rad_s2: float = DEFAULT_JOINT_ACCEL_RAD_S2
    jerk_time_s: float = 0.0
    label: str = ""
    blend_m: float = 0.0
    stop: bool = False


@dataclass(frozen=True)
class GripperMove:
    """Move the gripper servo to ``angle_rad`` at its speed limit; the arm holds still."""

    angle_rad: float
    speed_fraction: float = 1.0
    accel_rad_s2: float = math.radians(1800.0)
    label: str = ""


@dataclass(frozen=True)
class Wait:
    """Hold the current pose for ``duration_s`` seconds."""

    duration_s: float
    label: str = ""


Move = LineMove | JointMove | GripperMove | Wait


@dataclass
class MovePlan:
    """One planned move: its samples (local time) and what the summary needs."""

    kind: str
    label: str
    t_s: np.ndarray  # (k+1,) local sample times, 0 .. duration
    q_rad: np.ndarray  # (k+1, n)
    gripper_rad: np.ndarray  # (k+1,)
    points_m: np.ndarray = field(default_factory=lambda: np.zeros((0, 2)))
    segments: int = 0
    line_m: tuple | None = None  # (start point, end point) for line moves
    slowed: bool = False  # joint speed limits made this line move take longer
    path: object = None  # line moves: the LinePath it was planned on (blending re-uses it)
    blended: bool = False  # part of a blended chain (it does not start or end at rest at a shared corner)

    @property
    def duration_s(self) -> float:
        return float(self.t_s[-1])
