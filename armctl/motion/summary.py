"""The plan summary: peak joint speeds and the worst path deviation of line moves."""

from __future__ import annotations

import numpy as np

from armctl.model.arm import Arm
from armctl.model.kinematics import tool_point
from armctl.motion.moves import MovePlan
from armctl.motion.trajectory import Trajectory


def neighbour_lines(moves: list[MovePlan], i: int) -> list:
    """The lines a blended move shares corners with (its samples near a corner belong to either line)."""
    if not moves[i].blended:
        return []
    out = []
    for j in (i - 1, i + 1):
        if 0 <= j < len(moves) and moves[j].blended and moves[j].line_m is not None:
            out.append(moves[j].line_m)
    return out


def line_deviation(arm: Arm, q_samples, start, end, *, sub: int = 4, also=()) -> float:
    """Worst distance (m) of the tool from the segment start-end, at the samples and ``sub`` points
    between each pair of samples (joints interpolated linearly, as a servo does between frames).
    ``also``: more (start, end) segments; the distance is then to the nearest of them (a blended chain's
    samples near a shared corner)."""
    q = np.asarray(q_samples, dtype=float)
    if len(q) < 2:
        return 0.0
    f = np.linspace(0.0, 1.0, sub + 1)[:-1]
    qq = (q[:-1, None, :] + f[None, :, None] * np.diff(q, axis=0)[:, None, :]).reshape(-1, q.shape[1])
    qq = np.concatenate([qq, q[-1:]])
    p = tool_point(arm, qq)
    best = None
    for sa, sb in [(start, end), *also]:
        a, b = np.asarray(sa, dtype=float), np.asarray(sb, dtype=float)
        d = b - a
        dd = float(d @ d)
        u = np.clip(((p - a) @ d) / dd, 0.0, 1.0) if dd > 0 else np.zeros(len(p))
        off = p - (a + u[:, None] * d)
        dist = np.hypot(*off.T) if off.shape[-1] == 2 else np.linalg.norm(off, axis=-1)
        best = dist if best is None else np.minimum(best, dist)
    return float(np.max(best))


def summarize(arm: Arm, traj: Trajectory, moves: list[MovePlan]) -> dict:
    """The plan summary: duration (s), segments, peak sampled joint speeds and limits (deg/s), worst path
    deviation (m) of line moves, and the steps where joint speed limits slowed a line down."""
    q = traj.q_rad
    if len(q) > 1:
        peak = np.abs(np.diff(q, axis=0)).max(axis=0) / traj.period_s
    else:
        peak = np.zeros(arm.n)
    dev = max(
        (
            line_deviation(arm, mp.q_rad, *mp.line_m, also=neighbour_lines(moves, i))
            for i, mp in enumerate(moves)
            if mp.line_m is not None
        ),
        default=0.0,
    )
    out = {
        "duration_s": traj.duration_s,
        "segments": int(sum(mp.segments for mp in moves)),
        "samples": len(traj),
        "period_s": traj.period_s,
        "joint_names": list(arm.joint_names),
        "peak_joint_speed_deg_s": [round(float(x), 6) for x in np.degrees(peak)],
        "joint_speed_limit_deg_s": [round(float(x), 6) for x in np.degrees(arm.max_speed_rad_s)],
        "max_path_deviation_m": dev,
        "slowed_by_joint_limits": [mp.label.split(": ", 1)[-1] for mp in moves if mp.slowed],
    }
    if arm.gripper is not None and len(traj) > 1:
        peak_g = np.abs(np.diff(traj.gripper_rad)).max() / traj.period_s
        out["peak_gripper_speed_deg_s"] = round(float(np.degrees(peak_g)), 6)
        out["gripper_speed_limit_deg_s"] = round(float(np.degrees(arm.gripper.max_speed_rad_s)), 6)
    return out
