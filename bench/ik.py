"""IK benchmark: armctl's solvers against roboticstoolbox-python and ikpy, same targets, same run.

Target sets (fixed seed), on both preset arms:
  reachable       tool points of random poses inside the joint limits
  near-reach      within 0.5% of full reach (the arm almost straight)
  near-singular   poses inside the limits with every joint but the shoulder within 0.01 rad of
                  straight: the target within about 1e-5 m of the rim, the Jacobian nearly rank 1
  unreachable     5% to 100% beyond full reach, in directions the shoulder can point
  behind-shoulder 5% to 100% beyond full reach, in directions the shoulder cannot point
  limit-blocked   inside the reach annulus, but no pose inside the joint limits reaches them
                  (the nearest pose of a 1-3 degree joint grid is over 2 cm away)

Every solver runs on the same targets, interleaved target by target (so the machine's load falls
on all of them alike), and prints success, position error, median iterations and the time per
solve: p50, p99 and max in microseconds. Then the ratios peer time / our time, of p50 (and of
p99), measured in this run, and at the end the goals with "met" or "MISSED".

"armctl dls" uses the C kernel when it is built (the first line printed says); "armctl dls (pure
Python)" is the same solver with it switched off, as on a machine without a C compiler. "armctl
batch" is ``solve_batch`` on the whole set: time per target, best of 5 runs.

"Success" on reachable sets: error < 1e-6 m with the pose inside the joint limits. On the other
sets: the solver says it failed, the pose is inside the limits and its error is within 1e-6 m of
the true shortfall (the distance from the target to the closest point the arm reaches inside its
limits: |target| - reach on "unreachable"; on "behind-shoulder" and "limit-blocked" the best of a
joint grid refined by scipy's L-BFGS-B, independent of armctl).

Peers: roboticstoolbox-python's C++ ``ik_LM`` on an ETS with the same joint limits
(``joint_limits=True``), position-only mask, tolerance 1e-18 on its residual 0.5*|e|^2 (matches
our 1e-9 m); ikpy's ``inverse_kinematics`` (scipy least squares) with the same bounds, on the
first 100 targets of each set (it is slow). Cold = from the home pose, warm = from the true pose
plus 0.05 rad of noise per joint.

  python bench/ik.py            # 500 targets per set
  python bench/ik.py --quick    # 100 targets per set

This machine is shared and noisy: compare ratios, not absolute times.
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
import time
import warnings
from pathlib import Path

import numpy as np

# the armctl of this checkout, not whichever one is installed
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from armctl import ik  # noqa: E402
from armctl.ik import solve, solve_batch  # noqa: E402
from armctl.model.arm import load_arm  # noqa: E402
from armctl.model.kinematics import fk  # noqa: E402

GOAL_SINGLE = 3.0  # rtb ik_LM p50 / armctl dls p50, every set
GOAL_BATCH_3LINK = 15.0  # rtb ik_LM p50 / armctl batch per target, 3 links
GOAL_P99_US = 200.0  # armctl dls p99 on the sets the arm cannot reach
OUT_SETS = ("unreachable", "behind-shoulder", "limit-blocked")


# ----------------------------------------------------------------------------
# Target sets


def _grid(arm, step_deg):
    """Joint grid over the limits and the tool point of every grid pose."""
    axes = [
        np.linspace(lo, hi, max(2, int(math.ceil(math.degrees(hi - lo) / step_deg)) + 1))
        for lo, hi in zip(arm.q_min, arm.q_max)
    ]
    q = np.stack(np.meshgrid(*axes, indexing="ij"), axis=-1).reshape(-1, arm.n)
    return q, fk(arm.links_m, q)


def closest_distance(arm, targets, grid):
    """Distance from each target to the closest point the arm reaches inside its joint limits: the best
    grid poses near the target in space, each refined by L-BFGS-B with the limits as bounds."""
    from scipy.optimize import minimize
    from scipy.spatial import cKDTree

    gq, gp = grid
    tree = cKDTree(gp)
    _, idx = tree.query(targets, k=4)
    bounds = list(zip(arm.q_min, arm.q_max))
    links = arm.links_m
    out = np.empty(len(targets))
    for i, t in enumerate(targets):

        def f(q, t=t):
            a = np.cumsum(q)
            c, s = links * np.cos(a), links * np.sin(a)
            ex, ey = c.sum() - t[0], s.sum() - t[1]
            jx = -np.cumsum(s[::-1])[::-1]
            jy = np.cumsum(c[::-1])[::-1]
            return ex * ex + ey * ey, 2 * (ex * jx + ey * jy)

        best = math.inf
        for j in idx[i]:
            res = minimize(
                f,
                gq[j],
                jac=True,
                bounds=bounds,
                method="L-BFGS-B",
                options={"ftol": 1e-20, "gtol": 1e-14, "maxiter": 500},
            )
            best = min(best, math.sqrt(max(res.fun, 0.0)))
        out[i] = best
    return out


def target_sets(arm, count, rng, *, with_reference=True):
    """name -> (targets (N, 2), true poses or None, true shortfall per target or None (reachable))."""
    q = rng.uniform(arm.q_min, arm.q_max, (count, arm.n))
    sets = {"reachable": (fk(arm.links_m, q), q, None)}
    # near full reach: shoulder anywhere in its limits, the other joints almost straight
    for name, draw in (
        ("near-reach", lambda: rng.normal(0, 0.06, arm.n - 1)),
        ("near-singular", lambda: rng.uniform(-0.01, 0.01, arm.n - 1)),
    ):
        near_q = []
        while len(near_q) < count:
            cand = np.concatenate([rng.uniform(arm.q_min[:1], arm.q_max[:1]), draw()])
            if np.linalg.norm(fk(arm.links_m, cand)) >= 0.995 * arm.reach_max and arm.within_limits(cand):
                near_q.append(cand)
        near_q = np.array(near_q)
        sets[name] = (fk(arm.links_m, near_q), near_q, None)
    ang = rng.uniform(arm.q_min[0], arm.q_max[0], count)
    r = arm.reach_max * rng.uniform(1.05, 2.0, count)
    sets["unreachable"] = (np.stack([r * np.cos(ang), r * np.sin(ang)], axis=1), None, r - arm.reach_max)
    # behind the shoulder: beyond reach where the shoulder cannot point
    span = 2 * math.pi - (arm.q_max[0] - arm.q_min[0])
    if span > 0.0:
        ang = arm.q_max[0] + rng.uniform(0.0, span, count)
        r = arm.reach_max * rng.uniform(1.05, 2.0, count)
        sets["behind-shoulder"] = (np.stack([r * np.cos(ang), r * np.sin(ang)], axis=1), None, None)
    grid = _grid(arm, 1.0 if arm.n == 2 else 3.0)
    # limit-blocked: points of the annulus the joint grid misses by over 2 cm (so no pose reaches them)
    from scipy.spatial import cKDTree

    tree = cKDTree(grid[1])
    blocked = []
    while len(blocked) < count:
        r = np.sqrt(rng.uniform(arm.reach_min**2, arm.reach_max**2, 4 * count))
        ang = rng.uniform(-math.pi, math.pi, 4 * count)
        pts = np.stack([r * np.cos(ang), r * np.sin(ang)], axis=1)
        d, _ = tree.query(pts)
        blocked.extend(pts[d > 0.02])
    sets["limit-blocked"] = (np.array(blocked[:count]), None, None)
    if with_reference:
        for name in ("behind-shoulder", "limit-blocked"):
            if name in sets:
                t = sets[name][0]
                sets[name] = (t, None, closest_distance(arm, t, grid))
    return sets


# ----------------------------------------------------------------------------
# Solvers


def timed(fn):
    """fn() and its time in us: the second of two calls, so every solver is timed with its code and data
    in the caches (as in a loop of solves), whichever solver ran before it."""
    fn()
    t0 = time.perf_counter()
    out = fn()
    return out, (time.perf_counter() - t0) * 1e6


def judge(arm, target, q, claimed_ok, shortfall):
    """(success, error): reachable (shortfall None): on target inside the limits; else failure said,
    inside the limits, and the error equal to the true shortfall."""
    err = float(np.linalg.norm(fk(arm.links_m, q) - target))
    inside = arm.within_limits(q)
    if shortfall is None:
        return err < 1e-6 and inside, err
    return (not claimed_ok) and inside and abs(err - shortfall) < 1e-6, err


class Ours:
    def __init__(self, arm, method="dls", warm=False, pure_python=False):
        self.arm, self.method, self.warm, self.pure = arm, method, warm, pure_python
        self.name = f"armctl {method}" + (" warm" if warm else "") + (" (pure Python)" if pure_python else "")

    def __call__(self, target, q_true, rng):
        q0 = None
        if self.warm and q_true is not None:
            q0 = np.clip(q_true + rng.normal(0, 0.05, self.arm.n), self.arm.q_min, self.arm.q_max)
        core, ik.kernel.core = ik.kernel.core, (None if self.pure else ik.kernel.core)
        try:
            res, us = timed(lambda: solve(self.arm, target, q0=q0, method=self.method))
        finally:
            ik.kernel.core = core
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
    limit = 100  # targets per set: it takes milliseconds a solve

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


def run_solvers(solvers, arm, targets, qs, shortfall):
    """Every solver on every target, interleaved target by target; per solver its summary row."""
    rows = {s.name: {"ok": [], "err": [], "it": [], "us": []} for s in solvers}
    rngs = {s.name: np.random.default_rng(1) for s in solvers}
    for i, t in enumerate(targets):
        for s in solvers:
            if i >= getattr(s, "limit", len(targets)):
                continue
            q, claimed, it, us = s(t, None if qs is None else qs[i], rngs[s.name])
            claimed = (shortfall is None and judge(arm, t, q, False, None)[0]) if claimed is None else claimed
            ok, err = judge(arm, t, q, claimed, None if shortfall is None else shortfall[i])
            r = rows[s.name]
            r["ok"].append(ok)
            r["err"].append(err)
            r["it"].append(it)
            r["us"].append(us)
    return {name: summary(r["ok"], r["err"], r["it"], r["us"]) for name, r in rows.items()}


def summary(oks, errs, its, times):
    return {
        "success": float(np.mean(oks)),
        "err_med": statistics.median(errs),
        "err_max": max(errs),
        "iters": statistics.median(its),
        "p50": float(np.percentile(times, 50)),
        "p99": float(np.percentile(times, 99)),
        "max": max(times),
    }


def run_batch(arm, targets, shortfall, repeats=5):
    best = math.inf
    for _ in range(repeats):
        t0 = time.perf_counter()
        res = solve_batch(arm, targets)
        best = min(best, (time.perf_counter() - t0) * 1e6)
    oks, errs = [], []
    for i, t in enumerate(targets):
        ok, err = judge(arm, t, res.q[i], bool(res.ok[i]), None if shortfall is None else shortfall[i])
        oks.append(ok)
        errs.append(err)
    per = best / len(targets)
    row = summary(oks, errs, res.iterations.tolist(), [per])
    row["p99"] = row["max"] = math.nan  # one time for the whole set
    return row


RATIOS = (
    ("armctl dls", "rtb ik_LM"),
    ("armctl dls warm", "rtb ik_LM warm"),
    ("armctl analytic", "rtb ik_LM"),
    ("armctl batch (dls)", "rtb ik_LM"),
    ("armctl dls", "ikpy"),
    ("armctl dls (pure Python)", "rtb ik_LM"),
)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="100 targets per set instead of 500")
    ap.add_argument("--count", type=int, default=None, help="targets per set")
    ap.add_argument("--no-ikpy", action="store_true", help="skip ikpy (the slowest peer)")
    ap.add_argument("--arm", action="append", help="preset to run (repeatable; default both seed arms)")
    ap.add_argument("--set", action="append", dest="sets", help="target set to run (repeatable; default all)")
    args = ap.parse_args(argv)
    count = args.count or (100 if args.quick else 500)
    print(
        f"IK benchmark, {count} targets per set; success = error < 1e-6 m inside the joint limits "
        "(sets out of reach: failure reported, inside the limits, error == true shortfall)"
    )
    kernel = "C (armctl.ik._core)" if ik.kernel.core is not None else "pure Python (armctl.ik._core not built)"
    print(f"armctl from {Path(ik.__file__).parent}; IK kernel: {kernel}")
    print("times in us per solve; batch: per target, best of 5 runs\n")
    goals = []
    for name in args.arm or ("seed-2link", "seed-3link"):
        arm = load_arm(name)
        sets = target_sets(arm, count, np.random.default_rng(20261202))
        solvers = [Ours(arm), Ours(arm, warm=True), Ours(arm, "analytic"), Ours(arm, "newton"), Ours(arm, "broyden")]
        if ik.kernel.core is not None:
            solvers.insert(2, Ours(arm, pure_python=True))
        try:
            solvers += [RtbLM(arm), RtbLM(arm, warm=True)]
        except ImportError:
            print("  (roboticstoolbox-python not installed: pip install -e '.[bench]')")
        if not args.no_ikpy:
            try:
                solvers.append(Ikpy(arm))
            except ImportError:
                print("  (ikpy not installed: pip install -e '.[bench]')")
        for set_name, (targets, qs, shortfall) in sets.items():
            if args.sets and set_name not in args.sets:
                continue
            print(f"{name} / {set_name}")
            print(
                f"  {'solver':<26}{'success':>9}{'err med':>10}{'err max':>10}{'iters':>6}"
                f"{'p50 us':>9}{'p99 us':>9}{'max us':>9}"
            )
            rows = run_solvers(solvers, arm, targets, qs, shortfall)
            rows["armctl batch (dls)"] = run_batch(arm, targets, shortfall)
            for key, r in rows.items():
                print(
                    f"  {key:<26}{r['success'] * 100:>8.1f}%{r['err_med']:>10.1e}{r['err_max']:>10.1e}"
                    f"{r['iters']:>6.0f}{r['p50']:>9.1f}{r['p99']:>9.1f}{r['max']:>9.1f}"
                )
            ratios = []
            for ours, peer in RATIOS:
                if ours in rows and peer in rows:
                    p50 = rows[peer]["p50"] / rows[ours]["p50"]
                    p99 = rows[peer]["p99"] / rows[ours]["p99"]
                    ratios.append(f"{peer}/{ours} = {p50:.1f}x" + ("" if math.isnan(p99) else f" (p99 {p99:.1f}x)"))
            if ratios:
                print("  speed-up, peer time / our time, p50 (p99):\n    " + "\n    ".join(ratios))
            print()
            dls = rows["armctl dls"]
            if "rtb ik_LM" in rows:
                ratio = rows["rtb ik_LM"]["p50"] / dls["p50"]
                goals.append(
                    (
                        f"{name} / {set_name}: single dls vs ik_LM",
                        f"{ratio:.1f}x",
                        ratio >= GOAL_SINGLE,
                        f">= {GOAL_SINGLE:g}x",
                    )
                )
                if arm.n == 3:
                    ratio = rows["rtb ik_LM"]["p50"] / rows["armctl batch (dls)"]["p50"]
                    goals.append(
                        (
                            f"{name} / {set_name}: batch vs ik_LM",
                            f"{ratio:.1f}x",
                            ratio >= GOAL_BATCH_3LINK,
                            f">= {GOAL_BATCH_3LINK:g}x",
                        )
                    )
            if set_name in OUT_SETS:
                goals.append(
                    (
                        f"{name} / {set_name}: dls p99",
                        f"{dls['p99']:.0f} us",
                        dls["p99"] < GOAL_P99_US,
                        f"< {GOAL_P99_US:g} us",
                    )
                )
    print("Goals (measured in this run)")
    for what, value, met, goal in goals:
        print(f"  {what:<52}{value:>9}  {goal:<10} {'met' if met else 'MISSED'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
