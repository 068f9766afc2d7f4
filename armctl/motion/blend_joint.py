"""Blending joint moves: a joint move into the move after it (and a line into a joint move), their motions
overlapped."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np

from armctl.model.arm import Arm
from armctl.model.kinematics import tool_point
from armctl.motion.moves import JointMove, LineMove, MovePlan
from armctl.motion.refusals import outside_limits


def _speed_bound(arm: Arm, move) -> np.ndarray:
    """Each joint's speed bound (rad/s) in a move: its share of the limit in a joint move, the limit on a line."""
    if isinstance(move, JointMove):
        return move.speed_fraction * arm.max_speed_rad_s
    return np.asarray(arm.max_speed_rad_s, dtype=float)


def _accel_bound(arm: Arm, move) -> np.ndarray:
    """Each joint's acceleration bound (rad/s^2) in a move: a joint move's ``accel_rad_s2`` within each joint's
    limit, the limit on a line."""
    if isinstance(move, JointMove):
        return np.minimum(move.accel_rad_s2, arm.max_accel_rad_s2)
    return np.asarray(arm.max_accel_rad_s2, dtype=float)


def _tool_bounds(arm: Arm, move, mp: MovePlan, period: float) -> tuple[float, float]:
    """(speed m/s, acceleration m/s^2) the tool may reach in a move: a line's own, or what the joint move
    reached on its own (its samples; it has no tool limits, and blending must not make it faster)."""
    if isinstance(move, LineMove):
        return move.speed_m_s, move.accel_m_s2
    p = tool_point(arm, mp.q_rad)
    v = float(np.linalg.norm(np.diff(p, axis=0), axis=1).max(initial=0.0)) / period
    a = float(np.linalg.norm(np.diff(p, 2, axis=0), axis=1).max(initial=0.0)) / period**2
    return v, a


def _dense(q, sub: int):
    """``q`` (K, n) with ``sub`` points per interval, joints interpolated linearly (as a servo moves)."""
    f = np.linspace(0.0, 1.0, sub + 1)[:-1]
    qq = (q[:-1, None, :] + f[None, :, None] * np.diff(q, axis=0)[:, None, :]).reshape(-1, q.shape[1])
    return np.concatenate([qq, q[-1:]])


def _distance_to_polyline(points, poly) -> np.ndarray:
    """Distance of each point (M, d) to the polyline ``poly`` (S + 1, d)."""
    a, b = poly[:-1], poly[1:]
    d = b - a
    dd = np.maximum((d * d).sum(-1), 1e-300)
    out = np.full(len(points), np.inf)
    for lo in range(0, len(points), 256):
        p = points[lo : lo + 256]
        u = np.clip(((p[:, None, :] - a[None]) * d[None]).sum(-1) / dd[None], 0.0, 1.0)
        out[lo : lo + 256] = np.linalg.norm(p[:, None, :] - (a[None] + u[..., None] * d[None]), axis=-1).min(axis=1)
    return out


def _joint_corner_overlap(
    arm: Arm, m1, m2, p1: MovePlan, p2: MovePlan, period: float, blend: float, own1=None, before=None
) -> int:
    """How many samples the start of ``p2`` may overlap the end of ``p1`` (both at rest at their shared pose B):
    the trajectory q1(t) + q2(t - t1 + k T) - B, the second move starting k samples before the first ends.
    The largest k for which, on the sampled trajectory, every joint stays inside its limits, under the larger
    speed and acceleration bound of the two moves, the tool no faster and no harder accelerated than either
    move on its own allows, and within ``blend`` of the two moves' own tool paths (measured between samples
    too). 0: no overlap works. The deviation is measured from the moves' unblended paths: ``own1`` the samples
    of ``p1``'s move before any blend (default ``p1``'s; they end at the same pose, at the same time before
    its end), ``before`` the tail of the move before it, ending where ``p1``'s move starts, where that move
    already overlaps ``p1``'s start (a joint move overlapped at both ends)."""
    if len(p1.q_rad) - 1 < 2 or len(p2.q_rad) - 1 < 2:
        return 0
    kmax = _overlap_kmax(arm, p1.q_rad, p2.q_rad)
    if kmax < 1:
        return 0
    return _largest_overlap(_Overlap(arm, m1, m2, p1, p2, period, blend, own1, before), kmax)


def _overlap_kmax(arm: Arm, q1, q2) -> int:
    """The most samples two moves (``q1`` into ``q2``) may overlap: the overlap cannot pass either move's top
    speed, so at most the first's slowing down and the second's speeding up."""
    n1, n2 = len(q1) - 1, len(q2) - 1
    r1 = (np.abs(np.diff(q1, axis=0)) / arm.max_speed_rad_s).max(axis=1)
    r2 = (np.abs(np.diff(q2, axis=0)) / arm.max_speed_rad_s).max(axis=1)
    k_dec = n1 - int(np.nonzero(r1 >= r1.max() * (1 - 1e-9))[0][-1])
    k_acc = int(np.nonzero(r2 >= r2.max() * (1 - 1e-9))[0][0]) + 1
    return min(n1 - 1, n2 - 1, k_dec + k_acc)


def _largest_overlap(ov: _Overlap, kmax: int) -> int:
    """The largest k <= ``kmax`` that passes ``ov``'s checks (0: none): the limits from the top down, then the
    deviation (it grows with the overlap) by bisection."""
    k = kmax
    while k >= 1 and not ov.cheap_ok(k):
        k -= 1
    if k < 1:
        return 0
    if ov.deviation_ok(k):
        return k
    lo, hi = 0, k  # deviation grows with the overlap: the largest k that keeps within blend, by bisection
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if ov.deviation_ok(mid):
            lo = mid
        else:
            hi = mid
    while lo >= 1 and not (ov.cheap_ok(lo) and ov.deviation_ok(lo)):
        lo -= 1
    return lo


class _Overlap:
    """Two moves at rest at their shared pose B, the second started k samples before the first ends (the
    trajectory q1(t) + q2(t - t1 + k T) - B), and the checks of ``_joint_corner_overlap`` on it."""

    def __init__(self, arm: Arm, m1, m2, p1: MovePlan, p2: MovePlan, period: float, blend: float, own1, before):
        self.arm, self.period, self.blend, self.before = arm, period, blend, before
        self.q1, self.q2 = p1.q_rad, p2.q_rad
        self.u1 = self.q1 if own1 is None else own1
        self.n1 = len(self.q1) - 1
        self.first_violation = None
        if arm.zones:
            from armctl.model.zones import first_violation

            self.first_violation = first_violation
        self.b_pose = self.q2[0]
        self.vb = np.maximum(_speed_bound(arm, m1), _speed_bound(arm, m2)) * (1 + 1e-9)
        self.ab = np.maximum(_accel_bound(arm, m1), _accel_bound(arm, m2)) * (1 + 1e-9)
        self.vt, self.at = (
            max(x, y) * (1 + 1e-9) for x, y in zip(_tool_bounds(arm, m1, p1, period), _tool_bounds(arm, m2, p2, period))
        )

    def combined(self, k: int):
        """The overlapped samples with two samples either side."""
        q1, q2, n1 = self.q1, self.q2, self.n1
        c = q1[n1 - k :] + (q2[: k + 1] - self.b_pose)
        return np.concatenate([q1[max(n1 - k - 2, 0) : n1 - k], c, q2[k + 1 : k + 3]])

    def cheap_ok(self, k: int) -> bool:
        """Inside the joint limits and the zones, the joints and the tool within the moves' bounds."""
        arm, period = self.arm, self.period
        w = self.combined(k)
        if np.any(outside_limits(arm, w)):
            return False
        if arm.zones and self.first_violation(arm, arm.zones, w) is not None:
            return False  # the overlap cuts into a keep-out zone (each move was checked alone)
        dq = np.diff(w, axis=0) / period
        if np.any(np.abs(dq) > self.vb) or np.any(np.abs(np.diff(dq, axis=0)) / period > self.ab):
            return False
        p = tool_point(arm, w)
        dp = np.diff(p, axis=0) / period
        return bool(
            np.linalg.norm(dp, axis=1).max() <= self.vt
            and np.linalg.norm(np.diff(dp, axis=0), axis=1).max() / period <= self.at
        )

    def deviation_ok(self, k: int) -> bool:
        """The tool within ``blend`` of the two moves' own tool paths (between samples too)."""
        arm, q1, q2, n1, u1, before = self.arm, self.q1, self.q2, self.n1, self.u1, self.before
        c = q1[n1 - k :] + (q2[: k + 1] - self.b_pose)
        # the two moves' own tool paths over the overlap and a sample either side, as a servo plays them
        own = [u1[max(len(u1) - k - 2, 0) :], q2[1 : k + 2]]
        if before is not None and n1 - k - 1 <= len(before) - 1:  # this overlap reaches into the one before
            own = [before, u1[1:], q2[1 : k + 2]]
        ref = tool_point(arm, _dense(np.concatenate(own), 4))
        step = float(np.linalg.norm(np.diff(tool_point(arm, c), axis=0), axis=1).max())
        sub = int(min(16, max(4, math.ceil(step / (0.05 * self.blend)))))
        dev = _distance_to_polyline(tool_point(arm, _dense(c, sub)), ref).max() + 0.5 * step / sub
        return bool(dev <= self.blend)


def blend_joint_moves(arm: Arm, moves, plans: list[MovePlan], *, period_s: float) -> list[MovePlan]:
    """Blend each joint move into the line or joint move after it (and each line into a joint move after it)
    where the first asks for a blend (``blend_m`` > 0, no ``stop``): the second move starts before the first
    has come to rest, their motions added (``_joint_corner_overlap``: as many samples as keep every limit and
    keep the tool within ``blend_m`` of both moves' own paths). Lines into lines are ``blend_chain``'s. The
    overlapped samples go to the joint move's plan (a line's plan keeps only samples on its line). Returns
    the new plans; nothing changes where no move asks for a blend."""
    out = list(plans)
    before = None  # the unblended tail of the move before out[i] where it overlaps out[i]'s start
    for i in range(len(out) - 1):
        tail, before = before, None
        m1, m2 = moves[i], moves[i + 1]
        if not isinstance(m1, (LineMove, JointMove)) or not isinstance(m2, (LineMove, JointMove)):
            continue
        if isinstance(m1, LineMove) and isinstance(m2, LineMove):
            continue
        if m1.blend_m <= 0 or m1.stop:
            continue
        p1, p2 = out[i], out[i + 1]
        if p1.kind not in ("line", "joint") or p2.kind not in ("line", "joint"):
            continue
        k = _joint_corner_overlap(arm, m1, m2, p1, p2, period_s, m1.blend_m, plans[i].q_rad, tail)
        if k < 1:
            continue
        q1, q2 = p1.q_rad, p2.q_rad
        n1 = len(q1) - 1
        c = q1[n1 - k :] + (q2[: k + 1] - q2[0])
        if isinstance(m2, LineMove):  # the overlap goes to the joint move p1; the line keeps its own samples
            a, b = np.concatenate([q1[: n1 - k], c]), q2[k:]
        else:
            a, b = q1[: n1 - k + 1], np.concatenate([c, q2[k + 1 :]])
        # last word: the joined samples, across the junction, inside every joint's speed and acceleration
        # limit (the overlap's own checks compare with the two moves; a line that only turns the tool can
        # sit at a limit already, and the sum passed it)
        w = np.vstack([a[max(0, len(a) - k - 3) :], b[1 : k + 4]])
        if len(w) >= 3:
            v = np.abs(np.diff(w, axis=0)) / period_s
            acc = np.abs(np.diff(w, 2, axis=0)) / period_s**2
            if np.any(v > arm.max_speed_rad_s * (1 + 1e-9)) or np.any(acc > arm.max_accel_rad_s2 * (1 + 1e-9)):
                continue
        g = float(p1.gripper_rad[-1])
        if not isinstance(m2, LineMove):  # the overlap is now the start of out[i + 1]: what it overlapped
            before = plans[i].q_rad[max(len(plans[i].q_rad) - k - 2, 0) :]
        out[i] = replace(p1, t_s=np.arange(len(a)) * period_s, q_rad=a, gripper_rad=np.full(len(a), g))
        out[i + 1] = replace(p2, t_s=np.arange(len(b)) * period_s, q_rad=b, gripper_rad=np.full(len(b), g))
    return out
