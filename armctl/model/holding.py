"""Can each servo hold the arm? The holding torques of ``armctl.model.statics`` against the servos of
``armctl.model.servos``: each joint's torque margin at a pose (its servo's rated stall torque over the torque
needed) and, over the workspace, the share of poses where each servo holds the arm within ``torque_use`` of its
stall torque, with the worst pose.

A pose is sampled as the workspace pictures sample it: every joint uniform inside its limits (a parallelogram's
link angle kept), the base too (gravity does not care), the roll too (a tool off the roll axis moves with it).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from armctl.model.kinematics import limit_excess
from armctl.model.statics import arm_bodies, gravity_torque

#: below this (N m) a joint needs nothing (a joint whose axis is vertical, a planar arm): no margin is given
NOTHING_NM = 1e-6
_CHUNK = 8192  # poses per batch of torques (memory: about 1 MB per body)


def stall_torques(arm) -> np.ndarray:
    """Each joint's servo's rated stall torque (N m) at its voltage; NaN where the arm file names no servo."""
    return np.array([np.nan if (s := arm.drive.servo(i)) is None else s.stall_nm for i in range(arm.n)])


def torque_margin(arm, torque) -> list:
    """Per joint: the servo's rated stall torque over the torque ``torque`` (N m) needed there; None where the
    joint has no servo or needs nothing (``NOTHING_NM``)."""
    out = []
    for stall, need in zip(stall_torques(arm), np.abs(np.asarray(torque, dtype=float)), strict=True):
        out.append(None if np.isnan(stall) or need < NOTHING_NM else float(stall / need))
    return out


def masses_word(arm) -> str:
    """'urdf' when the masses are a URDF's <inertial>s, 'estimated' when they are estimated from the arm file."""
    return "estimated" if arm_bodies(arm)[2] else "urdf"


def holds(arm, torque) -> np.ndarray:
    """Where each joint's servo gives torque ``torque`` (N m, (..., n)) within ``torque_use`` of its stall torque,
    (..., n) bool; True where the joint has no servo (nothing to check)."""
    limit = arm.drive.torque_use * stall_torques(arm)
    return np.isnan(limit) | (np.abs(np.asarray(torque, dtype=float)) <= np.nan_to_num(limit, nan=np.inf))


def sample_poses(arm, samples: int, seed: int = 0) -> np.ndarray:
    """Poses (rad, (m, n), m <= ``samples``) uniform inside every joint's limits, a parallelogram's link angle kept."""
    rng = np.random.default_rng(seed)
    q = rng.uniform(arm.q_min, arm.q_max, size=(samples, arm.n))
    return q[np.all(limit_excess(arm, q) <= 0, axis=1)]


def torques_at(arm, q, payload_kg: float) -> np.ndarray:
    """``gravity_torque`` of many poses (m, n), in batches (bounded memory)."""
    q = np.asarray(q, dtype=float)
    if not len(q):
        return np.zeros((0, arm.n))
    return np.concatenate([gravity_torque(arm, q[i : i + _CHUNK], payload_kg) for i in range(0, len(q), _CHUNK)])


@dataclass(frozen=True)
class JointHold:
    """One joint over the sampled poses: its servo (None: none named), the torque it may give (N m,
    ``torque_use`` x stall), the share of poses where it holds the arm, the worst pose (rad) and its torque (N m)."""

    name: str
    servo: object
    limit_nm: float | None
    share: float
    worst_q: np.ndarray
    worst_nm: float


@dataclass(frozen=True)
class HoldMap:
    """Where the servos hold the arm with ``payload_kg`` in the jaws: per joint (``joints``), and every sampled
    pose (``q``, rad, (m, n)) with whether every servo holds it (``all_hold``, (m,))."""

    payload_kg: float
    estimated: bool
    joints: tuple
    q: np.ndarray
    all_hold: np.ndarray

    @property
    def share_all(self) -> float:
        return float(np.mean(self.all_hold)) if len(self.all_hold) else 0.0


def hold_map(arm, payload_kg: float = 0.0, *, samples: int = 20_000, seed: int = 0) -> HoldMap:
    """Where each servo can hold the arm with ``payload_kg`` (kg) at the tool, over ``samples`` poses sampled
    inside the limits (``sample_poses``)."""
    q = sample_poses(arm, samples, seed)
    tau = torques_at(arm, q, payload_kg)
    ok = holds(arm, tau)
    stall = stall_torques(arm)
    joints = []
    for i in range(arm.n):
        worst = int(np.argmax(np.abs(tau[:, i]))) if len(q) else 0
        limit = None if np.isnan(stall[i]) else float(arm.drive.torque_use * stall[i])
        joints.append(
            JointHold(
                arm.joint_names[i],
                arm.drive.servo(i),
                limit,
                float(np.mean(ok[:, i])) if len(q) else 0.0,
                q[worst] if len(q) else arm.home_rad,
                float(tau[worst, i]) if len(q) else 0.0,
            )
        )
    return HoldMap(payload_kg, arm_bodies(arm)[2], tuple(joints), q, np.all(ok, axis=1))
