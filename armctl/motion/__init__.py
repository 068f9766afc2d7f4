"""Motion planning: line and joint moves -> segments -> a timed joint trajectory.

A *line move* takes the tool point along a straight Cartesian line, in the plane
(x, y) or, on an arm with a rotating base, in space (x, y, z) (and, on a 3-link
chain, turns the tool angle phi linearly from its start value to the target's).
The line is cut into segments no longer than ``segment_m``; every segment point
is solved by closed-form IK on the branch the move starts on (the elbow, and on
a base arm the side of the base axis the chain reaches to: the base is atan2 of
the point, or half a turn from it), each angle unwrapped against the previous
point (the exact limit of a warm-started Newton continuation, without its
iterations). A line starting on the base axis first turns the base (the tool
stays put) to the line's direction. Where a joint moves
more than ``max_joint_step_rad`` in one segment, that segment is cut finer; a
change that does not shrink when cut finer is a jump (the path crosses a
singularity or needs the other elbow branch) and is refused with a
``MotionError`` naming where along the line it happens.

A *joint move* interpolates every joint linearly, so all joints start and stop
together; its time is set by the joint that needs longest under its speed and
acceleration limits.

Timing: a speed profile along the path parameter ``s`` under a speed cap and an
acceleration bound (trapezoid: a forward/backward pass over the segment points,
done with cumulative minima, no Python loop). The cap is the move's speed, and
at each segment also what keeps every joint under its speed limit, so the arm
slows down where it is near full extension instead of commanding the
impossible. Every move starts and ends at rest; its duration is rounded up to a
whole number of sample periods (by slowing it slightly) so every move begins
and ends exactly on a sample. The sampled trajectory is then checked against
the joint speed and angle limits and re-timed locally where a sample would
exceed a speed limit.

SI units throughout: metres, radians, seconds.

The package, by job (each module imports only those above it):

  rows         per-row max/min/any of (points, joints) arrays, column by column (numpy's axis=1 is slow)
  moves        the move types (LineMove, JointMove, GripperMove, Wait), the defaults, MovePlan
  refusals     a move's error located by its label; the JointLimitError builder
  poses        solve_pose (end poses inside the limits), branch_of
  lines        line moves cut into segments and solved (LinePath, plan_line_path)
  timing       speed profiles (trapezoid, S-curve, joint acceleration limits) and sampling
  one_move     plan_move: one move into timed samples, checked against keep-out zones
  summary      the plan summary (peak joint speeds, worst path deviation)
  torque       the torque check: what each servo is asked, holding the pose and accelerating (check_torque)
  blend        lines through rounded corners (ChainPath, blend_chain)
  blend_joint  joint moves blended into the move after them (blend_joint_moves)
  plan         Plan, PlanBudget, plan_moves, assemble
"""

from __future__ import annotations

from armctl.errors import JointLimitError, MotionError, UnreachableError
from armctl.ik.branch import arm_branch_ik, branch_ik
from armctl.ik.redundancy import (
    CRITERION_BEST,
    CRITERION_NEAREST,
    CRITERION_PHI,
    REACH_TOL_M,
    best_free_pose,
    free_angle_profile,
    pose_score,
)
from armctl.motion.blend import (
    BLEND_CHECK_SUB_MAX,
    BLEND_DEVIATION_TRIES,
    BLEND_MARGIN,
    BLEND_NORMAL_SHARE,
    BLEND_TANGENT_SHARE,
    MAX_BLEND_TURN_COS,
    ChainPath,
    blend_chain,
    corner_reach,
)
from armctl.motion.blend_joint import blend_joint_moves
from armctl.motion.lines import LinePath, plan_line_path
from armctl.motion.moves import (
    DEFAULT_ACCEL_M_S2,
    DEFAULT_JOINT_ACCEL_RAD_S2,
    DEFAULT_JOINT_SPEED_FRACTION,
    DEFAULT_MAX_JOINT_STEP_RAD,
    DEFAULT_SEGMENT_M,
    DEFAULT_SPEED_M_S,
    MAX_MOVE_S,
    MIN_SEGMENT_M,
    MIN_TIMING_SEGMENTS,
    SPEED_MARGIN,
    TWO_PI,
    GripperMove,
    JointMove,
    LineMove,
    Move,
    MovePlan,
    Wait,
)
from armctl.motion.one_move import check_zones, plan_move
from armctl.motion.plan import Plan, PlanBudget, assemble, blend_moves, plan_moves
from armctl.motion.poses import branch_of, solve_pose
from armctl.motion.refusals import limit_error, located
from armctl.motion.summary import line_deviation, neighbour_lines, summarize
from armctl.motion.timing import (
    caps_from_joints,
    joint_accel_bounds,
    joint_accel_profile,
    profile_for,
    s_curve,
    speed_profile,
)
from armctl.motion.trajectory import DEFAULT_PERIOD_S, Trajectory

__all__ = [
    "BLEND_CHECK_SUB_MAX",
    "BLEND_DEVIATION_TRIES",
    "BLEND_MARGIN",
    "BLEND_NORMAL_SHARE",
    "BLEND_TANGENT_SHARE",
    "CRITERION_BEST",
    "CRITERION_NEAREST",
    "CRITERION_PHI",
    "ChainPath",
    "DEFAULT_ACCEL_M_S2",
    "DEFAULT_JOINT_ACCEL_RAD_S2",
    "DEFAULT_JOINT_SPEED_FRACTION",
    "DEFAULT_MAX_JOINT_STEP_RAD",
    "DEFAULT_PERIOD_S",
    "DEFAULT_SEGMENT_M",
    "DEFAULT_SPEED_M_S",
    "GripperMove",
    "JointLimitError",
    "JointMove",
    "LineMove",
    "LinePath",
    "MAX_BLEND_TURN_COS",
    "MAX_MOVE_S",
    "MIN_SEGMENT_M",
    "MIN_TIMING_SEGMENTS",
    "MotionError",
    "Move",
    "MovePlan",
    "Plan",
    "REACH_TOL_M",
    "SPEED_MARGIN",
    "TWO_PI",
    "Trajectory",
    "UnreachableError",
    "Wait",
    "arm_branch_ik",
    "assemble",
    "best_free_pose",
    "blend_chain",
    "blend_joint_moves",
    "blend_moves",
    "branch_ik",
    "branch_of",
    "caps_from_joints",
    "check_zones",
    "corner_reach",
    "free_angle_profile",
    "joint_accel_bounds",
    "joint_accel_profile",
    "limit_error",
    "line_deviation",
    "located",
    "neighbour_lines",
    "plan_line_path",
    "plan_move",
    "plan_moves",
    "PlanBudget",
    "pose_score",
    "profile_for",
    "s_curve",
    "solve_pose",
    "speed_profile",
    "summarize",
]
