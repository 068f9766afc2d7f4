"""Planning benchmark: a 1 m straight line at 1 mm segments on both presets, against roboticstoolbox-python.

For each preset arm, one 1 m line inside its workspace (and its joint limits):

  seed-2link  (0.30, -0.50) -> (0.30, 0.50) m, elbow down
  seed-3link  (0.50, -0.50) -> (0.50, 0.50) m, position only (the tool angle is free)

armctl, same run:
  path    ``plan_line_path``: cut into 1000 segments, closed-form IK per point on the
          start's elbow branch, continuity, joint-step refinement, reach and limit checks
  full    ``plan_move``: the path plus the speed profile under the joint speed limits,
          sampling every 20 ms and the sampled speed/limit verification

Peer: roboticstoolbox-python ``ctraj`` (1001 SE3 poses) and ``ik_LM`` (its C++
Levenberg-Marquardt) per point, warm-started from the previous point's solution,
position-only mask, joint limits on, tolerance 1e-18 on 0.5*|e|^2 (about 1e-9 m,
like ours). The peer only solves the points: it does no timing or checking.

Rates are segments per second, best of several repeats (the machine is shared and
noisy: compare ratios, not absolute times). Also printed: each planner's worst tool
error against the line at its points, so a fast wrong answer would show.

  python bench/plan.py            # 30 repeats for armctl, 3 for the peer
  python bench/plan.py --quick    # fewer repeats
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np

from armctl.model.arm import load_arm
from armctl.model.kinematics import fk
from armctl.motion import LineMove, branch_ik, plan_line_path, plan_move

LINES = {
    "seed-2link": ((0.30, -0.50), (0.30, 0.50), None),
    "seed-3link": ((0.50, -0.50), (0.50, 0.50), -math.pi / 4),  # start pose: tool at -45 deg, elbow down
}
SEGMENT_M = 0.001


def best_time(fn, repeats: int) -> float:
    best = math.inf
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def line_error(points, a, b) -> float:
    a, b = np.asarray(a), np.asarray(b)
    d = b - a
    u = np.clip(((points - a) @ d) / (d @ d), 0, 1)
    return float(np.max(np.hypot(*(points - (a + u[:, None] * d)).T)))


def peer(arm, q0, a, b, n_seg: int):
    """ctraj + warm-started ik_LM per point: (function to time, checker)."""
    from roboticstoolbox import ET, ctraj
    from spatialmath import SE3

    ets = ET.Rz(qlim=[arm.q_min[0], arm.q_max[0]]) * ET.tx(float(arm.links_m[0]))
    for i in range(1, arm.n):
        ets = ets * ET.Rz(qlim=[arm.q_min[i], arm.q_max[i]]) * ET.tx(float(arm.links_m[i]))
    mask = np.array([1.0, 1, 0, 0, 0, 0])
    out = {}

    def run():
        poses = ctraj(SE3(a[0], a[1], 0), SE3(b[0], b[1], 0), n_seg + 1)
        q = np.asarray(q0, dtype=float)
        qs, ok = [], 0
        for T in poses:
            sol = ets.ik_LM(T.A, q0=q, mask=mask, joint_limits=True, tol=1e-18)
            q = np.asarray(sol.q)
            ok += bool(sol.success)
            qs.append(q)
        out["q"], out["ok"] = np.array(qs), ok

    return run, out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="fewer repeats")
    args = ap.parse_args(argv)
    reps, peer_reps = (5, 1) if args.quick else (30, 3)
    print(
        f"1 m line at {SEGMENT_M * 1000:.0f} mm segments; rates in segments/s, best of {reps} "
        f"(peer best of {peer_reps})"
    )
    print(f"{'arm':<11} {'planner':<34} {'segments':>8} {'rate seg/s':>12} {'ms/line':>9} {'worst off-line':>15}")
    for name, (a, b, phi) in LINES.items():
        arm = load_arm(name)
        q0 = branch_ik(arm, np.array([a]), None if phi is None else np.array([phi]), -1.0)[0][0]
        move = LineMove(b, segment_m=SEGMENT_M)
        path = plan_line_path(arm, q0, move)
        mp = plan_move(arm, move, q0, 0.0)
        n_seg = len(path.s) - 1
        t_path = best_time(lambda: plan_line_path(arm, q0, move), reps)  # noqa: B023
        t_full = best_time(lambda: plan_move(arm, move, q0, 0.0), reps)  # noqa: B023
        err_ours = line_error(fk(arm.links_m, path.q), a, b)
        rows = [
            ("armctl path (segments + IK + checks)", n_seg, t_path, err_ours),
            (f"armctl full (+ timing, {len(mp.t_s)} samples)", n_seg, t_full, err_ours),
        ]
        try:
            run, out = peer(arm, q0, a, b, n_seg)
        except ImportError:
            run = None
            print("  (roboticstoolbox-python not installed: pip install -e '.[bench]')")
        if run is not None:
            t_peer = best_time(run, peer_reps)
            err_peer = line_error(fk(arm.links_m, out["q"]), a, b)
            rows.append((f"rtb ctraj + ik_LM ({out['ok']}/{n_seg + 1} ok)", n_seg, t_peer, err_peer))
        for label, n, t, err in rows:
            print(f"{name:<11} {label:<34} {n:>8} {n / t:>12,.0f} {1000 * t:>9.2f} {1000 * err:>12.2e} mm")
        if run is not None:
            print(f"{name:<11} ratio armctl/peer: path {t_peer / t_path:,.0f}x, full plan {t_peer / t_full:,.0f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
