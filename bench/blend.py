"""Blending benchmark: blended corners against stopping at every vertex, same limits.

Two paths on seed-3link, each planned twice with the same tool speed and acceleration and the same joint
speed and acceleration limits: with blending (``blend_mm``; corners rounded, rest only at the end) and
without (every move starts and ends at rest, today's default):

  polygon          a regular 100-vertex polygon, 100 mm radius around (500, 0) mm, tool pointing down,
                   100 mm/s, 500 mm/s^2, blend 1 mm. Also against the same path at constant cruise speed
                   (perimeter / speed: no stops at all, not even at the ends), the issue's goal: <= 1.2x.
  pick and place   examples/pick_and_place.yaml (blend_mm 5): gripper steps and waits still stop; joint moves
                   blend into the move after them (and lines into joint moves), measured against the
                   unblended plan's own tool path.

Printed per path: cycle time blended / stop at every vertex, the ratios, the worst deviation of the tool
from the programmed polyline measured on the sampled trajectory (and 4 points between each pair of
samples, joints interpolated linearly as a servo does between frames) against blend_mm, and the peak
sampled joint speed, joint acceleration and tool acceleration as shares of their limits (<= 1: every
limit held through the corners). Planning time p50/p99/max per plan, blended against not.

  python bench/blend.py [--quick]
"""

from __future__ import annotations

import argparse
import math
import time
from pathlib import Path

import numpy as np

from armctl.model.arm import load_arm
from armctl.model.kinematics import tool_point
from armctl.motion import LineMove, neighbour_lines, plan_moves, solve_pose
from armctl.program import load_program, plan_program, with_blend

ROOT = Path(__file__).resolve().parents[1]
SPEED, ACCEL = 0.10, 0.50


def polygon(n=100, r=0.1, c=(0.5, 0.0)):
    return [(c[0] + r * math.cos(2 * math.pi * k / n), c[1] + r * math.sin(2 * math.pi * k / n)) for k in range(n + 1)]


def dense_tool(arm, q, sub=4):
    f = np.linspace(0.0, 1.0, sub + 1)[:-1]
    qq = (q[:-1, None, :] + f[None, :, None] * np.diff(q, axis=0)[:, None, :]).reshape(-1, q.shape[1])
    return tool_point(arm, np.concatenate([qq, q[-1:]]))


def polyline_deviation(points, vertices) -> float:
    a, b = np.asarray(vertices[:-1], dtype=float), np.asarray(vertices[1:], dtype=float)
    d = b - a
    dd = np.maximum((d * d).sum(-1), 1e-300)
    worst = 0.0
    for chunk in np.array_split(points, max(1, len(points) // 2000)):
        u = np.clip(((chunk[:, None, :] - a[None]) * d[None]).sum(-1) / dd[None], 0.0, 1.0)
        dist = np.linalg.norm(chunk[:, None, :] - (a[None] + u[..., None] * d[None]), axis=-1).min(axis=1)
        worst = max(worst, float(dist.max()))
    return worst


def segment_distance(points, a, b):
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    d = b - a
    u = np.clip(((points - a) @ d) / max(float(d @ d), 1e-300), 0.0, 1.0)
    return np.linalg.norm(points - (a + u[:, None] * d), axis=-1)


def limits_used(arm, traj, tool_accel):
    q, T = traj.q_rad, traj.period_s
    speed = (np.abs(np.diff(q, axis=0)) / T).max(axis=0) / arm.max_speed_rad_s
    acc = (np.abs(np.diff(q, 2, axis=0)) / T**2).max(axis=0) / arm.max_accel_rad_s2
    p = tool_point(arm, q)
    tacc = float(np.linalg.norm(np.diff(p, 2, axis=0), axis=1).max() / T**2) / tool_accel
    return float(speed.max()), float(acc.max()), tacc


def timed(fn, repeats):
    out, ts = None, []
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = fn()
        ts.append(time.perf_counter() - t0)
    return out, np.array(ts)


def pct(ts):
    return (
        f"p50 {1e3 * np.percentile(ts, 50):.1f} / p99 {1e3 * np.percentile(ts, 99):.1f} / max {1e3 * ts.max():.1f} ms"
    )


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="fewer repeats of the planning-time measurement")
    args = ap.parse_args()
    reps = 3 if args.quick else 15
    arm = load_arm("seed-3link")
    goals = []

    # --- the polygon
    pts = polygon()
    phi = -math.pi / 2
    q0 = solve_pose(arm, pts[0], phi, arm.home_rad)
    blend = 0.001
    perimeter = sum(math.dist(a, b) for a, b in zip(pts[:-1], pts[1:], strict=True))
    cruise = perimeter / SPEED

    def plan(b):
        moves = [LineMove(p, phi_rad=phi, speed_m_s=SPEED, accel_m_s2=ACCEL, blend_m=b) for p in pts[1:]]
        return plan_moves(arm, moves, q_start=q0)

    stop, ts_stop = timed(lambda: plan(0.0), reps)
    blended, ts_blend = timed(lambda: plan(blend), reps)
    dev = polyline_deviation(dense_tool(arm, blended.trajectory.q_rad), pts)
    t_b, t_s = blended.trajectory.duration_s, stop.trajectory.duration_s
    print(
        f"polygon (100 vertices, r 100 mm, {SPEED * 1000:g} mm/s, {ACCEL * 1000:g} mm/s^2, blend {blend * 1000:g} mm)"
    )
    print(f"  cycle time: blended {t_b:.2f} s, stop at every vertex {t_s:.2f} s, constant cruise {cruise:.2f} s")
    print(f"  blended / stop {t_b / t_s:.3f}x; blended / constant cruise {t_b / cruise:.3f}x (goal <= 1.2x)")
    print(
        f"  worst deviation from the polygon on the sampled trajectory {dev * 1000:.3f} mm (blend {blend * 1000:g} mm)"
    )
    used = limits_used(arm, blended.trajectory, ACCEL)
    print(
        f"  peak share of limits (blended): joint speed {used[0]:.2f}, joint accel {used[1]:.2f}, "
        f"tool accel {used[2]:.2f}"
    )
    print(
        f"  planning time: blended {pct(ts_blend)}; stop {pct(ts_stop)}; ratio p50 "
        f"{np.percentile(ts_blend, 50) / np.percentile(ts_stop, 50):.2f}x"
    )
    goals.append(("polygon <= 1.2x constant cruise", t_b / cruise <= 1.2))
    goals.append(("polygon deviation <= blend_mm", dev <= blend + 1e-9))
    goals.append(("polygon limits held", max(used) <= 1.0 + 1e-9))

    # --- the example pick-and-place
    prog = load_program(ROOT / "examples" / "pick_and_place.yaml")
    blend_mm = 5.0
    stop_p, ts_stop = timed(lambda: plan_program(prog, arm), max(1, reps // 3))
    blend_p, ts_blend = timed(lambda: plan_program(with_blend(prog, blend_mm), arm), max(1, reps // 3))
    worst = 0.0
    for i, mp in enumerate(blend_p.moves):
        if mp.line_m is None or len(mp.q_rad) < 2:
            continue
        pts_m = dense_tool(arm, mp.q_rad)
        # a blended move's samples near a shared corner are measured against either line of that corner
        segs = [mp.line_m, *neighbour_lines(blend_p.moves, i)]
        worst = max(worst, float(np.max(np.min([segment_distance(pts_m, a, b) for a, b in segs], axis=0))))
    # joint moves blend too (into the move after them): the tool measured against the unblended plan's own
    # tool path, each move's samples against that move and its neighbours
    q_b, q_s = blend_p.trajectory.q_rad, stop_p.trajectory.q_rad
    st_b, st_s = blend_p.trajectory.step, stop_p.trajectory.step
    worst_all = 0.0
    for i in np.unique(st_b):
        mine, near = np.nonzero(st_b == i)[0], np.nonzero(np.abs(st_s - i) <= 2)[0]
        ref = dense_tool(arm, q_s[max(near[0] - 1, 0) : near[-1] + 1], sub=8)
        pts = dense_tool(arm, q_b[max(mine[0] - 1, 0) : mine[-1] + 1], sub=8)
        worst_all = max(worst_all, polyline_deviation(pts, ref))
    t_b, t_s = blend_p.trajectory.duration_s, stop_p.trajectory.duration_s
    print(f"pick and place (examples/pick_and_place.yaml, blend {blend_mm:g} mm; lines and joint moves)")
    print(f"  cycle time: blended {t_b:.2f} s, stop at every vertex {t_s:.2f} s: {t_b / t_s:.3f}x")
    print(f"  worst deviation from the programmed lines on the sampled trajectory {worst * 1000:.3f} mm")
    print(f"  worst deviation from the unblended plan's tool path (joint moves too) {worst_all * 1000:.3f} mm")
    used = limits_used(arm, blend_p.trajectory, 0.6)
    print(f"  peak share of limits (blended): joint speed {used[0]:.2f}, joint accel {used[1]:.2f}")
    print(f"  planning time: blended {pct(ts_blend)}; stop {pct(ts_stop)}")
    goals.append(("pick and place deviation <= blend_mm", max(worst, worst_all) <= blend_mm / 1000 + 1e-9))
    goals.append(("pick and place faster blended", t_b < t_s))
    for what, ok in goals:
        print(f"goal {what}: {'met' if ok else 'MISSED'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
