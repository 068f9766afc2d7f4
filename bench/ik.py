"""IK benchmark: armctl's solvers against roboticstoolbox-python and ikpy, same targets, same run.

Target sets (fixed seed), on both preset arms:
  reachable   tool points of random poses inside the joint limits
  near-reach  within 0.5% of full reach (the arm almost straight, near singular)
  unreachable 5% to 100% beyond full reach

For each solver: success rate, median and worst position error, median
iterations, and median and mean microseconds per solve; then our/peer time
ratios (of medians). "armctl dls" uses the C kernel when it is built (the
first line printed says); "armctl dls (pure Python)" is the same solver with
it switched off, as on a machine without a C compiler.
"Success" on reachable sets: error < 1e-6 m with the pose inside the joint
limits. On the unreachable set: the solver says it failed and its final
error equals the true shortfall within 1e-6 m (the arm stretched straight
towards the target).

Peers: roboticstoolbox-python's C++ ``ik_LM`` on an ETS with the same joint
limits (``joint_limits=True``), position-only mask, tolerance 1e-18 on its
residual 0.5*|e|^2 (matches our 1e-9 m); ikpy's ``inverse_kinematics``
(scipy least squares) with the same bounds. Cold = from the home pose,
warm = from the true pose plus 0.05 rad of noise per joint.

  python bench/ik.py            # 500 targets per set
  python bench/ik.py --quick    # 100 targets per set, under a minute

This machine is shared and noisy: compare ratios, not absolute times.
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
import time
import warnings

import numpy as np

from armctl import ik
from armctl.arm import load_arm
from armctl.ik import solve, solve_batch
from armctl.kinematics import fk


def target_sets(arm, count, rng):
    q = rng.uniform(arm.q_min, arm.q_max, (count, arm.n))
    reachable = (fk(arm.links_m, q), q)
    # near full reach: shoulder anywhere in its limits, the other joints almost straight
    near_q = []
    while len(near_q) < count:
        cand = np.concatenate([rng.uniform(arm.q_min[:1], arm.q_max[:1]), rng.normal(0, 0.06, arm.n - 1)])
        if np.linalg.norm(fk(arm.links_m, cand)) >= 0.995 * arm.reach_max and arm.within_limits(cand):
            near_q.append(cand)
    near_q = np.array(near_q)
    near = (fk(arm.links_m, near_q), near_q)
    ang = rng.uniform(arm.q_min[0], arm.q_max[0], count)
    r = arm.reach_max * rng.uniform(1.05, 2.0, count)
    unreachable = (np.stack([r * np.cos(ang), r * np.sin(ang)], axis=1), None)
    return {"reachable": reachable, "near-reach": near, "unreachable": unreachable}


def timed(fn, *args):
    t0 = time.perf_counter()
    out = fn(*args)
    return out, (time.perf_counter() - t0) * 1e6


def judge(arm, target, q, claimed_ok, unreachable):
    err = float(np.linalg.norm(fk(arm.links_m, q) - target))
    if unreachable:
        shortfall = float(np.linalg.norm(target)) - arm.reach_max
        return (not claimed_ok) and abs(err - shortfall) < 1e-6, err
    return err < 1e-6 and arm.within_limits(q), err


class Ours:
    def __init__(self, arm, method="dls", warm=False, pure_python=False):
        self.arm, self.method, self.warm, self.pure = arm, method, warm, pure_python
        self.name = f"armctl {method}" + (" warm" if warm else "") + (" (pure Python)" if pure_python else "")

    def __call__(self, target, q_true, rng):
        q0 = None
        if self.warm and q_true is not None:
            q0 = np.clip(q_true + rng.normal(0, 0.05, self.arm.n), self.arm.q_min, self.arm.q_max)
        core, ik._core = ik._core, (None if self.pure else ik._core)
        try:
            res, us = timed(lambda: solve(self.arm, target, q0=q0, method=self.method))
        finally:
            ik._core = core
        return res.q, res.ok, res.iterations, us


class RtbLM:
    def __init__(self, arm, warm=False):
        from roboticstoolbox import ET

        # Grown one ET at a time: multiplying separately built (Rz * tx) pieces
        # would give every joint index 0.
        ets = ET.Rz(qlim=[arm.q_min[0], arm.q_max[0]]) * ET.tx(float(arm.links_m[0]))
        for i in range(1, arm.n):
            ets = ets * ET.Rz(qlim=[arm.q_min[i], arm.q_max[i]])
            ets = ets * ET.tx(float(arm.links_m[i]))
        self.ets, self.arm, self.warm = ets, arm, warm
        self.mask = np.array([1.0, 1, 0, 0, 0, 0])
        self.name = "rtb ik_LM" + (" warm" if warm else "")

    def __call__(self, target, q_true, rng):
        T = np.eye(4)
        T[0, 3], T[1, 3] = target
        q0 = self.arm.home_rad
        if self.warm and q_true is not None:
            q0 = np.clip(q_true + rng.normal(0, 0.05, self.arm.n), self.arm.q_min, self.arm.q_max)
        sol, us = timed(lambda: self.ets.ik_LM(T, q0=q0, mask=self.mask, joint_limits=True, tol=1e-18))
        return np.asarray(sol.q), bool(sol.success), int(sol.iterations), us


class Ikpy:
    def __init__(self, arm):
        from ikpy.chain import Chain
        from ikpy.link import OriginLink, URDFLink

        links = [OriginLink()]
        offset = 0.0
        for i, length in enumerate(arm.links_m):
            links.append(
                URDFLink(
                    name=f"j{i + 1}",
                    origin_translation=[offset, 0, 0],
                    origin_orientation=[0, 0, 0],
                    rotation=[0, 0, 1],
                    bounds=(float(arm.q_min[i]), float(arm.q_max[i])),
                )
            )
            offset = float(length)
        links.append(
            URDFLink(name="tool", origin_translation=[offset, 0, 0], origin_orientation=[0, 0, 0], joint_type="fixed")
        )
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            self.chain = Chain(links, active_links_mask=[False] + [True] * arm.n + [False])
        self.arm = arm
        self.name = "ikpy"

    def __call__(self, target, q_true, rng):
        init = np.concatenate([[0.0], self.arm.home_rad, [0.0]])
        full, us = timed(lambda: self.chain.inverse_kinematics([target[0], target[1], 0.0], initial_position=init))
        return np.asarray(full[1:-1]), None, -1, us


def run_solver(solver, arm, targets, qs, unreachable, rng):
    oks, errs, its, times = [], [], [], []
    for i, t in enumerate(targets):
        q, claimed, it, us = solver(t, None if qs is None else qs[i], rng)
        claimed = judge(arm, t, q, False, False)[0] if claimed is None else claimed
        ok, err = judge(arm, t, q, claimed, unreachable)
        oks.append(ok)
        errs.append(err)
        its.append(it)
        times.append(us)
    return {
        "success": float(np.mean(oks)),
        "err_med": statistics.median(errs),
        "err_max": max(errs),
        "iters": statistics.median(its),
        "us": statistics.median(times),
        "us_mean": statistics.mean(times),
    }


def run_batch(arm, targets, unreachable, repeats=5):
    best = math.inf
    for _ in range(repeats):
        res, us = timed(lambda: solve_batch(arm, targets))
        best = min(best, us)
    oks, errs = [], []
    for i, t in enumerate(targets):
        ok, err = judge(arm, t, res.q[i], bool(res.ok[i]), unreachable)
        oks.append(ok)
        errs.append(err)
    return {
        "success": float(np.mean(oks)),
        "err_med": statistics.median(errs),
        "err_max": max(errs),
        "iters": float(np.median(res.iterations)),
        "us": best / len(targets),
        "us_mean": best / len(targets),
    }


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="100 targets per set instead of 500")
    ap.add_argument("--count", type=int, default=None, help="targets per set")
    ap.add_argument("--no-ikpy", action="store_true", help="skip ikpy (the slowest peer)")
    args = ap.parse_args(argv)
    count = args.count or (100 if args.quick else 500)
    print(
        f"IK benchmark, {count} targets per set, medians; success = error < 1e-6 m inside the joint limits "
        "(unreachable: failure reported and error == shortfall)"
    )
    kernel = "C (armctl._ikcore)" if ik._core is not None else "pure Python (armctl._ikcore not built)"
    print(f"armctl IK kernel: {kernel}; batch time is per target, best of 5 runs\n")
    for name in ("seed-2link", "seed-3link"):
        arm = load_arm(name)
        rng = np.random.default_rng(20261202)
        sets = target_sets(arm, count, rng)
        solvers = [Ours(arm), Ours(arm, warm=True), Ours(arm, "analytic"), Ours(arm, "newton"), Ours(arm, "broyden")]
        if ik._core is not None:
            solvers.insert(2, Ours(arm, pure_python=True))
        peers = []
        try:
            peers += [RtbLM(arm), RtbLM(arm, warm=True)]
        except ImportError:
            print("  (roboticstoolbox-python not installed: pip install -e '.[bench]')")
        if not args.no_ikpy:
            try:
                peers.append(Ikpy(arm))
            except ImportError:
                print("  (ikpy not installed: pip install -e '.[bench]')")
        for set_name, (targets, qs) in sets.items():
            unreachable = set_name == "unreachable"
            print(f"{name} / {set_name}")
            print(
                f"  {'solver':<26}{'success':>9}{'err med':>11}{'err max':>11}{'iters':>7}{'us med':>9}{'us mean':>9}"
            )
            rows = {}
            for solver in solvers + peers:
                n = count if not isinstance(solver, Ikpy) else min(count, 100)
                row = run_solver(
                    solver, arm, targets[:n], None if qs is None else qs[:n], unreachable, np.random.default_rng(1)
                )
                rows[solver.name] = row
            rows["armctl batch (dls)"] = run_batch(arm, targets, unreachable)
            for key, r in rows.items():
                print(
                    f"  {key:<26}{r['success'] * 100:>8.1f}%{r['err_med']:>11.1e}{r['err_max']:>11.1e}"
                    f"{r['iters']:>7.0f}{r['us']:>9.1f}{r['us_mean']:>9.1f}"
                )
            ratios = []
            for ours, peer in (
                ("armctl dls", "rtb ik_LM"),
                ("armctl dls warm", "rtb ik_LM warm"),
                ("armctl analytic", "rtb ik_LM"),
                ("armctl batch (dls)", "rtb ik_LM"),
                ("armctl dls", "ikpy"),
                ("armctl dls (pure Python)", "rtb ik_LM"),
            ):
                if ours in rows and peer in rows:
                    ratios.append(f"{peer}/{ours} = {rows[peer]['us'] / rows[ours]['us']:.1f}x")
            if ratios:
                print("  speed-up (peer time / our time): " + "; ".join(ratios))
            print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
