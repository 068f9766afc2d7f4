"""The torque check: no servo is asked for more than ``torque_use`` of its stall torque (``Arm.drive``), holding the
pose against gravity plus the acceleration's share, anywhere along a planned trajectory, before anything moves.

At every sample the torque is tau = M(q) qdd + g(q, payload) (``armctl.model.statics``: the arm's bodies, a URDF's
rotational inertia, the payload at the tool point; the velocity terms are left out), qdd the samples' second
differences (a ROS trajectory's: what its points give; a follow's: its targets'). A joint is
checked where the arm file (or a URDF's sidecar) names its servo; an arm that names none is not checked
(``torque_note`` says so, once, where a program is checked); ``Drive.torque_check`` False turns the check off (tests
that force a payload through, experts). The payload is the arm's (``Drive.payload_kg``: the arm file's ``payload_g``,
``--payload``, ``robot.payload_kg``) or one per sample (a program's, with the parts its gripper carries).

N m inside; kg.cm (kgf.cm, as servo makers give them) in the messages.
"""

from __future__ import annotations

import dataclasses
import math
from collections import deque
from dataclasses import dataclass

import numpy as np

from armctl.errors import BadInputError, TorqueLimitError
from armctl.model.holding import stall_torques
from armctl.model.servos import KGCM_NM
from armctl.model.statics import gravity_torque, mass_matrix
from armctl.motion.trajectory import Trajectory

#: samples whose joints all accelerate less than this (rad/s^2) ask nothing of the inertia (held, cruising)
STILL_RAD_S2 = 1e-6


@dataclass(frozen=True)
class TorqueUse:
    """The most a trajectory asks of any checked servo: joint ``joint`` (None: nothing checked) at ``sample`` (time
    ``t_s``, step label ``step``) needs ``need_nm``, ``share`` of its servo's stall torque (``stall_nm``), against
    the ``torque_use`` allowed; ``note`` says why the arm is not checked ("" when it is)."""

    joint: int | None = None
    name: str = ""
    share: float = 0.0
    need_nm: float = 0.0
    stall_nm: float = 0.0
    sample: int = 0
    t_s: float = 0.0
    step: str = ""
    torque_use: float = 0.0
    note: str = ""

    def line(self) -> str:
        """'torque: at most 43% of a servo's stall (shoulder, 4.1 of 9.4 kg.cm at t = 1.20 s); allowed 60%', or the
        note."""
        if self.joint is None:
            return f"torque: {self.note}" if self.note else "torque: nothing to check"
        return (
            f"torque: at most {100 * self.share:.0f}% of a servo's stall ({self.name}, {kgcm(self.need_nm)} of "
            f"{kgcm(self.stall_nm)} kg.cm at t = {self.t_s:.2f} s); allowed {100 * self.torque_use:.0f}%"
        )


def kgcm(nm: float) -> str:
    """N m as kg.cm: one decimal, two under 10 kg.cm (a micro servo's 1.08 and 1.13 tell apart)."""
    v = nm / KGCM_NM
    return f"{v:.2f}" if abs(v) < 10.0 else f"{v:.1f}"


def part_words(payload_kg: float) -> str:
    """'the 50 g part' (or 'no part')."""
    if payload_kg <= 0.0:
        return "no part"
    return f"the {round(payload_kg * 1000.0, 1):g} g part"


def checked_joints(arm) -> list[int]:
    """The joints whose servo the arm names (none when ``Drive.torque_check`` is off)."""
    drive = arm.drive
    if not getattr(drive, "torque_check", True):
        return []
    return [i for i in range(arm.n) if drive.servo(i) is not None]


def torque_note(arm) -> str:
    """Why moves of ``arm`` are not (or only partly) checked for torque; "" when every joint is."""
    if not getattr(arm.drive, "torque_check", True):
        return "the torque check is off"
    joints = checked_joints(arm)
    if not joints:
        return f"arm {arm.name!r} names no servo for its joints (servo: in the arm file): moves are not checked"
    missing = [arm.joint_names[i] for i in range(arm.n) if i not in joints]
    if missing:
        return f"not checked: {', '.join(missing)} (no servo: in the arm file)"
    return ""


def carrying(arm, payload_kg: float | None = None, *, check: bool | None = None):
    """``arm`` carrying ``payload_kg`` (kg in the jaws, beside its own bodies; None: as it is) with the torque check
    on or off (``check``; None: as it is). BadInputError for a negative or non-finite mass."""
    changes = {}
    if payload_kg is not None:
        changes["payload_kg"] = payload_mass(payload_kg)
    if check is not None:
        changes["torque_check"] = bool(check)
    if not changes:
        return arm
    return dataclasses.replace(arm, drive=dataclasses.replace(arm.drive, **changes))


def payload_mass(kg, what: str = "payload") -> float:
    """``kg`` as a payload mass (0 .. 10 kg); BadInputError naming ``what`` otherwise."""
    from armctl.core.units import MAX_MASS_KG

    try:
        value = float(kg)
    except (TypeError, ValueError):
        value = math.nan
    if isinstance(kg, bool) or not (math.isfinite(value) and 0.0 <= value <= MAX_MASS_KG):
        raise BadInputError(f"{what}: a mass of 0..{MAX_MASS_KG:g} kg, got {kg!r}")
    return value


def accelerations(q, period_s: float) -> np.ndarray:
    """The joints' accelerations (rad/s^2, (N, n)) at samples ``q`` (rad, (N, n)) ``period_s`` apart: second
    differences; the first and last samples take their neighbour's (a trajectory starts and ends at rest)."""
    q = np.asarray(q, dtype=float)
    qdd = np.zeros_like(q)
    if len(q) >= 3:
        qdd[1:-1] = (q[2:] - 2.0 * q[1:-1] + q[:-2]) / (period_s * period_s)
        qdd[0], qdd[-1] = qdd[1], qdd[-2]
    return qdd


def joint_torques(arm, q, qdd, payload_kg=0.0) -> tuple[np.ndarray, np.ndarray]:
    """(the torque each joint gives, the part of it that holds the pose against gravity), N m, (N, n), at poses
    ``q`` with accelerations ``qdd`` (rad, rad/s^2, (N, n)) carrying ``payload_kg`` (kg, one or one per sample)."""
    q = np.atleast_2d(np.asarray(q, dtype=float))
    qdd = np.atleast_2d(np.asarray(qdd, dtype=float))
    loads = np.broadcast_to(np.asarray(payload_kg, dtype=float), (len(q),))
    fresh = np.ones(len(q), dtype=bool)  # a sample repeating the one before (the arm still) repeats its holding torque
    fresh[1:] = np.any(q[1:] != q[:-1], axis=1) | (loads[1:] != loads[:-1])
    first = np.flatnonzero(fresh)
    hold = np.zeros_like(q)
    total = np.zeros_like(q)
    moving = np.max(np.abs(qdd), axis=1, initial=0.0) > STILL_RAD_S2
    for load in np.unique(loads):
        rows = first[loads[first] == load]
        hold[rows] = gravity_torque(arm, q[rows], float(load))
        acc = np.flatnonzero(moving & (loads == load))
        if len(acc):
            total[acc] = np.einsum("kij,kj->ki", mass_matrix(arm, q[acc], float(load)), qdd[acc])
    hold = hold[np.cumsum(fresh) - 1]
    return total + hold, hold


#: samples whose torques are worked out at once (a replay of 500,000 samples held 1.3 GB when all were)
TORQUE_CHUNK = 20_000


def check_torque(arm, traj: Trajectory, payload_kg=None, *, qdd=None) -> TorqueUse:
    """Check trajectory ``traj`` of ``arm``: every checked joint's torque at every sample at most ``torque_use`` of
    its servo's stall torque. ``payload_kg``: one mass, or one per sample (None: the arm's); ``qdd``: the joints'
    accelerations at each sample (rad/s^2, (N, n); None: the samples' second differences). The most asked
    (``TorqueUse``); TorqueLimitError naming the joint, the step, the time, the torque needed and the servo's at the
    first sample asking more."""
    drive = arm.drive
    joints = checked_joints(arm)
    if not joints or len(traj) == 0:
        return TorqueUse(note=torque_note(arm), torque_use=drive.torque_use)
    q = np.asarray(traj.q_rad, dtype=float)
    loads = np.broadcast_to(np.asarray(drive.payload_kg if payload_kg is None else payload_kg, dtype=float), (len(q),))
    qdd = accelerations(q, traj.period_s) if qdd is None else np.asarray(qdd, dtype=float)
    stall = stall_torques(arm)[joints]
    best = (-1.0, 0, 0, 0.0)  # (share, sample, checked joint, torque N m): the most asked so far
    for a in range(0, len(q), TORQUE_CHUNK):  # in chunks: a long trajectory's torques are not all held at once
        b = min(a + TORQUE_CHUNK, len(q))
        tau, hold = joint_torques(arm, q[a:b], qdd[a:b], loads[a:b])
        share = np.abs(tau[:, joints]) / stall  # (chunk, checked)
        over = share > drive.torque_use * (1.0 + 1e-9)
        if np.any(over):
            k = int(np.argmax(np.any(over, axis=1)))
            c = int(np.argmax(np.where(over[k], share[k], -1.0)))
            need, held = float(abs(tau[k, joints[c]])), float(abs(hold[k, joints[c]]))
            raise refusal(arm, traj, a + k, joints[c], need, held, float(loads[a + k]))
        k, c = np.unravel_index(int(np.argmax(share)), share.shape)
        if share[k, c] > best[0]:
            best = (float(share[k, c]), a + int(k), int(c), float(abs(tau[k, joints[int(c)]])))
    _, k, c, need = best
    j = joints[c]
    return TorqueUse(
        joint=j,
        name=arm.joint_names[j],
        share=best[0],
        need_nm=need,
        stall_nm=float(stall[c]),
        sample=int(k),
        t_s=float(traj.t_s[k]),
        step=_step_label(traj, int(k)),
        torque_use=drive.torque_use,
        note=torque_note(arm),
    )


def _step_label(traj: Trajectory, k: int) -> str:
    if not traj.steps or len(traj.step) <= k:
        return ""
    i = int(traj.step[k])
    return traj.steps[i] if 0 <= i < len(traj.steps) else ""


def need_words(arm, j: int, need_nm: float, hold_nm: float, payload_kg: float) -> str:
    """What follows 'shoulder needs 11.2 kg.cm at step 4': 'with the 50 g part; an MG996R gives 9.4 at 4.8 V (60% of
    it: 5.6)', what holding the pose alone takes (when the acceleration adds to it) and what to do."""
    servo, use = arm.drive.servo(j), arm.drive.torque_use
    gives = servo.says().replace(" kg.cm at ", " at ")
    allowed = use * servo.stall_nm
    if hold_nm > allowed:
        hint = "hold it nearer the base, lighten the part, or fit a stronger servo"
    else:
        hint = "move slower (a lower speed or acceleration), or fit a stronger servo"
    held = "" if abs(need_nm - hold_nm) < 0.05 * KGCM_NM else f"; holding the pose alone takes {kgcm(hold_nm)}"
    held = "; all of it to accelerate" if hold_nm < 0.005 * KGCM_NM else held
    return f"with {part_words(payload_kg)}; {gives} ({100 * use:.0f}% of it: {kgcm(allowed)}){held}; {hint}"


def refusal(arm, traj: Trajectory, k: int, j: int, need_nm: float, hold_nm: float, payload_kg: float):
    """TorqueLimitError for joint ``j`` needing ``need_nm`` (``hold_nm`` of it against gravity) at sample ``k``."""
    step = _step_label(traj, k)
    where = f"at {step}" if step.startswith("step ") else f"in '{step}'" if step else "along the move"
    t = float(traj.t_s[k])
    words = need_words(arm, j, need_nm, hold_nm, payload_kg)
    text = f"{arm.joint_names[j]} needs {kgcm(need_nm)} kg.cm {where}, t = {t:.2f} s, {words}"
    return TorqueLimitError(
        text,
        joint=j,
        step=int(traj.step[k]) if len(traj.step) > k else 0,
        t_s=t,
        need_nm=need_nm,
        hold_nm=hold_nm,
        stall_nm=arm.drive.servo(j).stall_nm,
        payload_kg=payload_kg,
    )


class StreamCheck:
    """The torque check of a stream of targets played as they come (``Robot.follow``: a leader, tool targets, ROS
    joint_commands): each target's holding torque plus the stream's acceleration share, the targets' own
    acceleration (their second difference over ``SPAN`` frames of the follow's own time, the ``dt`` each frame steps
    for: it smooths a leader's sensor steps), at most each joint's ``max_accel_rad_s2``. ``why()`` says why a target
    is refused (the follower holds where it is, as at a keep-out zone); out of a pose that already asks too much, a
    target asking less is taken. The inertia is taken again only where the targets moved ``REUSE_M_RAD`` from where
    it last was."""

    SPAN = 5  # frames
    REUSE_M_RAD = 0.02  # the joint-space inertia changes by about a per cent over this

    def __init__(self, arm):
        self.arm, self.joints = arm, checked_joints(arm)
        self.stall = stall_torques(arm)[self.joints]
        self.goals: deque = deque(maxlen=2 * self.SPAN + 1)
        self._m = None  # (pose, its mass matrix)
        self.t_s = 0.0  # the follow's own time: the frames' dt summed

    def _accel(self) -> np.ndarray | None:
        """The targets' acceleration (rad/s^2), None while too few have come (or they stand still)."""
        g = self.goals
        if len(g) < g.maxlen:
            return None
        (t0, g0), (t1, g1), (t2, g2) = g[0], g[len(g) // 2], g[-1]
        if not t0 < t1 < t2:
            return None
        amax = np.asarray(self.arm.max_accel_rad_s2, dtype=float)
        qdd = np.clip(2.0 * ((g2 - g1) / (t2 - t1) - (g1 - g0) / (t1 - t0)) / (t2 - t0), -amax, amax)
        return qdd if np.max(np.abs(qdd)) > STILL_RAD_S2 else None

    def _torque(self, goal) -> tuple[np.ndarray, np.ndarray]:
        """(torque, holding torque) at target ``goal`` with the stream's acceleration (N m, (n,))."""
        load = self.arm.drive.payload_kg
        hold = gravity_torque(self.arm, goal, load)
        qdd = self._accel()
        if qdd is None:
            return hold, hold
        if self._m is None or np.max(np.abs(self._m[0] - goal)) > self.REUSE_M_RAD:
            self._m = (goal, mass_matrix(self.arm, goal, load))
        return hold + self._m[1] @ qdd, hold

    def why(self, q_cmd, goal, dt: float) -> str:
        """Why target ``goal`` (rad), a frame of ``dt`` s after the one before, must not be stepped to from ``q_cmd``
        ("" when it may): 'held: shoulder needs 11.2 kg.cm at the target with no part; an MG996R gives ...'."""
        if not self.joints:
            return ""
        arm, use = self.arm, self.arm.drive.torque_use
        goal = np.asarray(goal, dtype=float)
        self.t_s += float(dt)
        self.goals.append((self.t_s, goal))
        tau, hold = self._torque(goal)
        share = np.abs(tau[self.joints]) / self.stall
        worst = float(share.max())
        if worst <= use * (1.0 + 1e-9):
            return ""
        here = np.abs(gravity_torque(arm, np.asarray(q_cmd, dtype=float), arm.drive.payload_kg))[self.joints]
        if worst < float(np.max(here / self.stall)):
            return ""  # the way out of a pose that asks too much already
        j = self.joints[int(np.argmax(share))]
        need, held = float(abs(tau[j])), float(abs(hold[j]))
        words = need_words(arm, j, need, held, arm.drive.payload_kg)
        return f"held: {arm.joint_names[j]} needs {kgcm(need)} kg.cm at the target {words}"
