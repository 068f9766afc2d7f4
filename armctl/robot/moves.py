"""The motion verbs' arguments (``Robot.move_to``, ``gripper``), checked at the edge (``armctl.model.validate``) and
made into the moves the planner takes (``armctl.motion``). SI units: metres, radians, seconds."""

from __future__ import annotations

import math

import numpy as np

from armctl import motion
from armctl.errors import BadInputError
from armctl.ik.roll import check_roll
from armctl.model import validate
from armctl.motion.torque import carrying
from armctl.motion.trajectory import Trajectory


def line_move(arm, x, y, z, phi, speed, accel, label, blend=None, roll=None) -> motion.LineMove:
    """A straight line to (``x``, ``y``[, ``z``]) m, the tool at ``phi`` (rad, 3-link arms), at ``speed`` m/s and
    ``accel`` m/s^2 (None: the planner's defaults), passing the next move's corner within ``blend`` m; the wrist roll
    turned to ``roll`` (rad, arms with one; None: kept)."""
    target = validate.point(arm, x, y, z)
    if phi is not None:
        phi = validate.radians(phi, "phi")
        if arm.n_links != 3:
            raise BadInputError(f"phi (a tool angle) needs a 3-link arm; {arm.name!r} has {arm.n_links} links")
    kw = {}
    if roll is not None:
        kw["roll_rad"] = check_roll(arm, roll)
    if speed is not None:
        kw["speed_m_s"] = validate.tool_speed(speed)
    if accel is not None:
        kw["accel_m_s2"] = validate.positive(accel, "accel")
    if blend is not None:
        kw["blend_m"] = validate.blend(blend)
    label = label or f"move to ({', '.join(f'{v:g}' for v in target)}) m"
    return motion.LineMove(tuple(arm.corrected_target(target)), phi_rad=phi, label=label, **kw)


def gripper_move(arm, state: str | float, degrees: bool) -> motion.GripperMove:
    """The gripper to ``"open"``, ``"close"``/``"closed"`` or an angle (rad, or degrees with ``degrees``)."""
    g = arm.gripper
    if g is None:
        raise BadInputError(f"arm {arm.name!r} has no gripper")
    if isinstance(state, str):
        word = state.strip().lower()
        if word not in ("open", "close", "closed"):
            raise BadInputError(f"gripper: 'open', 'close' or an angle, got {state!r}")
        angle, label = (g.open_rad, "open the gripper") if word == "open" else (g.closed_rad, "close the gripper")
    else:
        angle = validate.number(state, "gripper angle") if degrees else validate.radians(state, "gripper angle")
        angle = math.radians(angle) if degrees else angle
        label = f"gripper to {math.degrees(angle):g} deg"
    return motion.GripperMove(angle, label=label)


def joint_moves_to(arm, line: motion.LineMove, label: str):
    """The moves of a joint move to ``line``'s target, as a function of the pose it starts from (the IK pose
    nearest it), with ``line``'s blend."""

    def joint_move(q0):
        q = motion.solve_pose(arm, np.array(line.target_m), line.phi_rad, q0, joint_move=True, roll=line.roll_rad)
        return [motion.JointMove(tuple(q), label=label, blend_m=line.blend_m)]

    return joint_move


def standing(q0, g0: float, step: str) -> Trajectory:
    """A trajectory of one sample: the arm standing at joint angles ``q0`` (rad), the gripper at ``g0``."""
    return Trajectory(
        t_s=np.zeros(1),
        q_rad=np.array(q0, dtype=float)[None, :],
        gripper_rad=np.array([g0], dtype=float),
        step=np.zeros(1, dtype=int),
        steps=[step],
    )


def _payload(robot) -> float:
    return float(robot.arm.drive.payload_kg)


def _set_payload(robot, kg: float) -> None:
    robot.arm = carrying(robot.arm, kg)


def _torque_check(robot) -> bool:
    return bool(robot.arm.drive.torque_check)


def _set_torque_check(robot, on: bool) -> None:
    if not isinstance(on, bool):
        raise BadInputError(f"torque_check: True or False, got {on!r}")
    robot.arm = carrying(robot.arm, check=on)


#: ``Robot.payload_kg`` and ``Robot.torque_check``: kept on the arm the Robot plans with (``robot.arm.drive``), so
#: every motion planned from then on (``move_to``, ``home``, ``run`` and its ramp, a follow started) uses them.
PAYLOAD_PROPERTIES = (
    property(
        _payload,
        _set_payload,
        doc="The mass (kg) in the jaws, beside the arm's own bodies: every move is checked against the servos' "
        "torque carrying it (``armctl.motion.torque``). The arm file's ``payload_g`` until set; a program's own "
        "``payload_g`` wins while it runs. BadInputError for a negative, non-finite or absurd (> 10 kg) mass.",
    ),
    property(
        _torque_check,
        _set_torque_check,
        doc="True (default): a move that asks a servo for more than the arm's ``torque_use`` of its stall torque is "
        "refused (TorqueLimitError) before anything moves. False: not checked (tests, experts: the arm may sag or "
        "stall).",
    ),
)
