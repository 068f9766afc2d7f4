"""IK on arms with a rotating base, against ikpy and roboticstoolbox-python (3D chains), same targets, same run.

Arms: the presets ``mearm`` and ``eezybot-mk2`` (base + parallelogram 2-link arm) and ``base-3link`` (a
serial 3-link chain on a base, built here: 125/125/60 mm, shoulder 72 mm up; position only, so
redundant). Target sets (fixed seed): ``reachable`` (tool points of random poses inside every limit,
the parallelogram's coupled ones included) and ``unreachable`` (5% to 100% beyond the reach; on the
3-link arm beyond the arm stretched straight in a direction its limits allow, whose shortfall is known).

Peers solve the same 3D chain: base yaw, the shoulder's offset and height, pitch joints (serial angles:
neither peer models a parallelogram, so they get its coupled limits' bounding box and their answers are
judged against the true limits); position-only; from the home pose. rtb: ``ETS.ik_LM`` (C++) with
``joint_limits=True``, tolerance 1e-18 on 0.5*|e|^2 (our 1e-9 m); ikpy: ``Chain.inverse_kinematics``
(scipy) with the same bounds. Before timing, both peers' forward kinematics are checked against ours.

"Success" on reachable targets: error < 1e-6 m with the pose inside every limit; on unreachable ones: the
failure reported, the pose inside every limit and the final error within 1e-6 m of the true shortfall
(the distance to the nearest point the arm reaches inside its limits: ``workspace.nearest_reachable``,
exact for 2-link chains; the stretched arm's for the 3-link one).

Single solves run interleaved in blocks of 25 targets, so every solver sees the same machine. Times per
solve in microseconds: p50 / p99 / max over the targets (single solves), and for
``armctl batch`` (``solve_batch``, all targets in one call) the time per target, p50 / p99 / max over
repeated calls. Ratios = peer p50 / our p50, measured in the same run.

  python bench/ik_arm.py            # 400 targets per set (ikpy: 100)
  python bench/ik_arm.py --quick    # 100 targets per set (ikpy: 40)

This machine is shared and noisy: compare ratios, not absolute times.
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings

import numpy as np

from armctl import ik
from armctl.model.arm import Arm, load_arm
from armctl.model.kinematics import chain_angles, joint_angles, limit_excess, tool_point
from armctl.model.workspace import nearest_reachable


def base_3link() -> Arm:
    return Arm.from_lengths(
        [0.125, 0.125, 0.06],
        name="base-3link",
        base=True,
        shoulder_height_m=0.072,
        q_min_deg=[-90, -15, -150, -120],
        q_max_deg=[90, 165, 150, 120],
        max_speed_deg_s=[90, 90, 90, 120],
        home_deg=[0, 90, -90, -45],
    )


def poses_inside(arm: Arm, count: int, rng) -> np.ndarray:
    """Random poses inside every limit (drawn in the chain's box, kept where the coupled limits hold)."""
    out = []
    ch = arm.chain
    while sum(len(x) for x in out) < count:
        c = rng.uniform(ch.q_min, ch.q_max, (count, arm.n_links))
        b = rng.uniform(arm.q_min[0], arm.q_max[0], count)
        q = joint_angles(arm, c, b)
        out.append(q[np.all(limit_excess(arm, q) <= 0, axis=1)])
    return np.concatenate(out)[:count]


def target_sets(arm: Arm, count: int, rng):
    q = poses_inside(arm, count, rng)
    az = rng.uniform(arm.q_min[0], arm.q_max[0], count)
    if arm.n_links == 2:  # anywhere beyond the reach: the exact nearest point is known (every limit)
        reach = arm.reach_max + abs(arm.base_offset_m)
        r = reach * rng.uniform(1.05, 2.0, count)
        z = arm.shoulder_height_m + rng.uniform(-0.5, 0.5, count) * reach
    else:  # 3 links: beyond the arm stretched straight inside its limits (as bench/ik.py's planar sets)
        el = rng.uniform(arm.q_min[1], arm.q_max[1], count)
        el = np.where(np.cos(el) < 0.05, 0.0, el)  # ahead of the base axis
        s = arm.reach_max * rng.uniform(1.05, 2.0, count)
        r = arm.base_offset_m + s * np.cos(el)
        z = arm.shoulder_height_m + s * np.sin(el)
    far = np.stack([r * np.cos(az), r * np.sin(az), z], axis=1)
    return {"reachable": (tool_point(arm, q), False), "unreachable": (far, True)}


def timed(fn):
    t0 = time.perf_counter()
    out = fn()
    return out, (time.perf_counter() - t0) * 1e6


# --------------------------------------------------------------------------------------------- solvers


class Ours:
    def __init__(self, arm, method="dls"):
        self.arm, self.method, self.name = arm, method, f"armctl {method}"

    def __call__(self, t):
        res, us = timed(lambda: ik.solve(self.arm, t, method=self.method))
        return res.q, res.ok, us


class RtbLM:
    name = "rtb ik_LM"

    def __init__(self, arm: Arm):
        from roboticstoolbox import ET

        ch = arm.chain  # serial angles; a parallelogram's coupled limits as their bounding box
        ets = ET.Rz(qlim=[arm.q_min[0], arm.q_max[0]]) * ET.tx(arm.base_offset_m) * ET.tz(arm.shoulder_height_m)
        for i in range(arm.n_links):
            ets = ets * ET.Ry(flip=True, qlim=[ch.q_min[i], ch.q_max[i]]) * ET.tx(float(arm.links_m[i]))
        self.ets, self.arm = ets, arm
        self.q0 = np.concatenate([[arm.home_rad[0]], ch.home_rad])
        self.mask = np.array([1.0, 1, 1, 0, 0, 0])

    def fk(self, q_serial):
        return self.ets.fkine(q_serial).t

    def __call__(self, t):
        T = np.eye(4)
        T[:3, 3] = t
        sol, us = timed(lambda: self.ets.ik_LM(T, q0=self.q0, mask=self.mask, joint_limits=True, tol=1e-18))
        q = np.asarray(sol.q)
        return joint_angles(self.arm, q[1:], q[0]), bool(sol.success), us


class Ikpy:
    name = "ikpy"

    def __init__(self, arm: Arm):
        from ikpy.chain import Chain
        from ikpy.link import OriginLink, URDFLink

        ch = arm.chain
        links = [OriginLink()]
        links.append(
            URDFLink(
                name="base",
                origin_translation=[0, 0, 0],
                origin_orientation=[0, 0, 0],
                rotation=[0, 0, 1],
                bounds=(float(arm.q_min[0]), float(arm.q_max[0])),
            )
        )
        offset = [arm.base_offset_m, 0.0, arm.shoulder_height_m]
        for i, length in enumerate(arm.links_m):
            links.append(
                URDFLink(
                    name=f"j{i + 1}",
                    origin_translation=offset,
                    origin_orientation=[0, 0, 0],
                    rotation=[0, -1, 0],
                    bounds=(float(ch.q_min[i]), float(ch.q_max[i])),
                )
            )
            offset = [float(length), 0.0, 0.0]
        links.append(URDFLink(name="tool", origin_translation=offset, origin_orientation=[0, 0, 0], joint_type="fixed"))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            self.chain = Chain(links, active_links_mask=[False] + [True] * (arm.n_links + 1) + [False])
        self.arm = arm
        self.init = np.concatenate([[0.0, arm.home_rad[0]], ch.home_rad, [0.0]])

    def fk(self, q_serial):
        return self.chain.forward_kinematics(np.concatenate([[0.0], q_serial, [0.0]]))[:3, 3]

    def __call__(self, t):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            full, us = timed(lambda: self.chain.inverse_kinematics(list(t), initial_position=self.init))
        q = np.asarray(full[1:-1])
        return joint_angles(self.arm, q[1:], q[0]), None, us


# --------------------------------------------------------------------------------------------- running


def judge(arm, t, q, claimed_ok, unreachable, shortfall):
    err = float(np.linalg.norm(tool_point(arm, q) - t))
    inside = bool(np.all(limit_excess(arm, q) <= 1e-9))
    if unreachable:
        return (not claimed_ok) and inside and abs(err - shortfall) < 1e-6
    return err < 1e-6 and inside


def stats(times):
    t = np.asarray(times)
    return float(np.percentile(t, 50)), float(np.percentile(t, 99)), float(t.max())


BLOCK = 25  # targets each solver solves in a row before the next one takes the same targets


def run_solvers(solvers, limits, arm, targets, unreachable, shortfalls):
    """Every solver on every target, interleaved in blocks of BLOCK targets (each solver solves a block,
    then the next solver the same block, the order rotating), so that all of them see the same machine
    (a busy moment slows them alike) while each keeps its own caches warm within a block.
    ``limits``: targets per solver."""
    oks = {s.name: [] for s in solvers}
    times = {s.name: [] for s in solvers}
    for k, start in enumerate(range(0, len(targets), BLOCK)):
        for solver in solvers[k % len(solvers) :] + solvers[: k % len(solvers)]:
            for i in range(start, min(start + BLOCK, len(targets), limits[solver.name])):
                t, short = targets[i], shortfalls[i]
                q, claimed, us = solver(t)
                if claimed is None:  # ikpy does not say: ok if it reached the target inside every limit
                    claimed = judge(arm, t, q, False, False, 0.0)
                oks[solver.name].append(judge(arm, t, q, claimed, unreachable, short))
                times[solver.name].append(us)
    return {name: (float(np.mean(oks[name])), stats(times[name])) for name in oks}


def run_batch(arm, targets, unreachable, shortfalls, repeats=9):
    per = []
    for _ in range(repeats):
        res, us = timed(lambda: ik.solve_batch(arm, targets))
        per.append(us / len(targets))
    oks = [
        judge(arm, t, res.q[i], bool(res.ok[i]), unreachable, s) for i, (t, s) in enumerate(zip(targets, shortfalls))
    ]
    return float(np.mean(oks)), stats(per)


def check_peer_fk(peer, arm, rng) -> float:
    """Largest difference (m) between the peer's forward kinematics and ours on random poses."""
    q = poses_inside(arm, 50, rng)
    return max(
        float(np.linalg.norm(peer.fk(np.concatenate([[qi[0]], chain_angles(arm, qi)])) - tool_point(arm, qi)))
        for qi in q
    )


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="100 targets per set (ikpy 40)")
    ap.add_argument("--count", type=int, default=None, help="targets per set")
    ap.add_argument("--no-ikpy", action="store_true", help="skip ikpy (the slowest peer)")
    args = ap.parse_args(argv)
    count = args.count or (100 if args.quick else 400)
    n_ikpy = max(10, count // 4 if not args.quick else 40)
    kernel = "C (armctl.ik._core)" if ik.kernel.core is not None else "pure Python (armctl.ik._core not built)"
    print(f"IK on base arms, {count} targets per set (ikpy {n_ikpy}); planar kernel: {kernel}")
    print("times in us per solve: p50 / p99 / max; batch: per target, over 9 calls of solve_batch\n")
    verdict = []
    for arm in (load_arm("mearm"), load_arm("eezybot-mk2"), base_3link(), load_arm("braccio")):
        rng = np.random.default_rng(20260515)
        peers = []
        for cls in (RtbLM, Ikpy):
            if cls is Ikpy and args.no_ikpy:
                continue
            try:
                peer = cls(arm)
            except ImportError:
                print(f"  ({cls.name} not installed: pip install -e '.[bench]')")
                continue
            gap = check_peer_fk(peer, arm, rng)
            assert gap < 1e-9, f"{peer.name}'s model of {arm.name} differs from ours by {gap} m"
            peers.append(peer)
        for set_name, (targets, unreachable) in target_sets(arm, count, rng).items():
            shortfalls = [nearest_reachable(arm, t).shortfall_m if unreachable else 0.0 for t in targets]
            print(f"{arm.name} ({arm.linkage}, {arm.n_links} links) / {set_name}")
            print(f"  {'solver':<22}{'success':>9}{'p50 us':>10}{'p99 us':>10}{'max us':>10}")
            solvers = [Ours(arm), Ours(arm, "analytic"), *peers]
            limits = {sv.name: n_ikpy if isinstance(sv, Ikpy) else count for sv in solvers}
            rows = run_solvers(solvers, limits, arm, targets, unreachable, shortfalls)
            rows["armctl batch"] = run_batch(arm, targets, unreachable, shortfalls)
            for name, (succ, (p50, p99, mx)) in rows.items():
                print(f"  {name:<22}{succ * 100:>8.1f}%{p50:>10.1f}{p99:>10.1f}{mx:>10.1f}")
            ratios = []
            for ours, peer in (
                ("armctl dls", "rtb ik_LM"),
                ("armctl batch", "rtb ik_LM"),
                ("armctl dls", "ikpy"),
                ("armctl batch", "ikpy"),
            ):
                if ours in rows and peer in rows:
                    r = rows[peer][1][0] / rows[ours][1][0]
                    ratios.append(f"{peer}/{ours} {r:.1f}x")
                    need = 10.0 if ours == "armctl batch" else 2.0
                    verdict.append((f"{arm.name}/{set_name}: {peer}/{ours}", r, need))
            print("  speed-up (peer p50 / our p50): " + "; ".join(ratios) + "\n")
    short = [v for v in verdict if v[1] < v[2]]
    print(f"margins: {len(verdict) - len(short)} of {len(verdict)} at least 2x (single) / 10x (batch)")
    for name, r, need in short:
        print(f"  below: {name} {r:.1f}x < {need:.0f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
