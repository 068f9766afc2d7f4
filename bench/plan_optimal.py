"""Line timing against the time optimum: armctl's speed profile against toppra, same limits.

Every line move of the example programs (and of the same programs with every joint's acceleration limit
cut to a quarter, so that the joint acceleration limits bind) is timed by armctl and by toppra
(time-optimal path parametrization by reachability analysis, an independent library) on the same
geometric path (armctl's segment points and joint angles, a cubic spline through them in toppra), under
the same limits: each joint's speed limit (``max_speed_deg_s``) and acceleration limit
(``max_accel_deg_s2``), and the tool's speed and acceleration along the line (the line's ``speed_mm_s``
and ``accel_mm_s2``, given to toppra as the speed and acceleration limits of one more coordinate, the
path length itself). Both start and end at rest.

Printed per program: the ratio armctl / toppra of each line's duration, p50 / p99 / max over the lines
and the worst line; goal: every line within 5% of the optimum (ratio <= 1.05). armctl's time is its
trapezoid profile's (before rounding up to whole 20 ms samples, which the sampled plan adds; that
figure is printed too). toppra's is its own profile on 1000 grid points (its discretisation makes it
a hair optimistic or pessimistic: ratios under 1 mean armctl's profile came out faster than toppra's
discretised optimum).

  python bench/plan_optimal.py            # needs: pip install -e '.[bench]' (toppra)
"""

from __future__ import annotations

import argparse
import dataclasses
import math
from pathlib import Path

import numpy as np

from armctl import motion
from armctl.model.arm import load_arm
from armctl.motion import (
    LineMove,
    caps_from_joints,
    profile_for,
)
from armctl.program import expand, load_program, step_move

ROOT = Path(__file__).resolve().parents[1]
PROGRAMS = [
    "pick_and_place.yaml",
    "pick_and_place_2link.yaml",
    "pick_and_place_mearm.yaml",
    "pick_and_place_so101.yaml",
]


def armctl_time(arm, path, move: LineMove) -> float:
    """The planner's own profile time for this line (the steps of motion._plan_move, without sampling)."""
    base = move.speed_m_s / path.speed_scale
    acc = move.accel_m_s2 / path.speed_scale
    cap, _ = caps_from_joints(path.s, path.q, arm.max_speed_rad_s, base)
    profile = profile_for(path.s, path.q, arm.max_accel_rad_s2, cap, acc)
    return float(profile(path.s, cap, acc)[1][-1])


def toppra_time(arm, path, move: LineMove, grid: int = 1000) -> float:
    import toppra as ta
    import toppra.algorithm as algo
    import toppra.constraint as constraint

    ta.setup_logging("WARNING")
    s = path.s
    keep = np.concatenate([[True], np.diff(s) > 1e-12])
    s, q = s[keep], path.q[keep]
    way = np.column_stack([q, s])  # the path length as one more coordinate: the tool's limits on it
    spline = ta.SplineInterpolator(s, way)
    vmax = np.concatenate([arm.max_speed_rad_s, [move.speed_m_s / path.speed_scale]])
    amax = np.concatenate([arm.max_accel_rad_s2, [move.accel_m_s2 / path.speed_scale]])
    pc_v = constraint.JointVelocityConstraint(np.column_stack([-vmax, vmax]))
    pc_a = constraint.JointAccelerationConstraint(
        np.column_stack([-amax, amax]), discretization_scheme=constraint.DiscretizationType.Interpolation
    )
    inst = algo.TOPPRA(
        [pc_v, pc_a], spline, gridpoints=np.linspace(s[0], s[-1], grid + 1), parametrizer="ParametrizeConstAccel"
    )
    traj = inst.compute_trajectory(0, 0)
    if traj is None:
        return math.nan
    return float(traj.duration)


def lines_of(prog_path: Path, arm):
    prog = load_program(prog_path)
    q = np.array(arm.home_rad, dtype=float)
    g = arm.gripper.open_rad if arm.gripper is not None else math.nan
    if prog.start is not None:
        from armctl.program import pose_of, pose_target

        xy, phi, q_exact = pose_target(pose_of(prog, prog.start, {}), None, arm)
        q = q_exact if q_exact is not None else motion.solve_pose(arm, xy, phi, arm.home_rad)
    for item in expand(prog):
        move = step_move(prog, item, arm, q)
        mp = motion.plan_move(arm, move, q, g, period_s=prog.settings.period_s)
        if isinstance(move, LineMove) and mp.path is not None and mp.path.length > 0:
            yield move, mp
        q, g = mp.q_rad[-1], float(mp.gripper_rad[-1])


def pct(r):
    r = np.asarray(r)
    return f"p50 {np.percentile(r, 50):.3f} / p99 {np.percentile(r, 99):.3f} / max {r.max():.3f}"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="only the first two programs")
    args = ap.parse_args()
    worst_all = 0.0
    for name in PROGRAMS[: 2 if args.quick else None]:
        prog = load_program(ROOT / "examples" / name)
        base_arm = load_arm(prog.arm_ref)
        for label, arm in (
            ("default joint acceleration limits", base_arm),
            (
                "joint acceleration limits / 4",
                dataclasses.replace(base_arm, max_accel_given_rad_s2=base_arm.max_accel_rad_s2 / 4),
            ),
        ):
            ratios, sampled, names = [], [], []
            for move, mp in lines_of(ROOT / "examples" / name, arm):
                t_a = armctl_time(arm, mp.path, move)
                t_t = toppra_time(arm, mp.path, move)
                ratios.append(t_a / t_t)
                sampled.append(mp.duration_s / t_t)
                names.append(move.label.split(": ", 1)[-1])
            r = np.array(ratios)
            k = int(np.argmax(r))
            worst_all = max(worst_all, float(r.max()))
            print(f"{name} ({arm.name}, {label}): {len(r)} lines, armctl / toppra {pct(r)}")
            print(f"    worst: {names[k]} ({r[k]:.3f}); sampled plan (whole 20 ms samples) / toppra {pct(sampled)}")
    verdict = "met" if worst_all <= 1.05 else "MISSED"
    print(f"goal every line within 5% of toppra's optimum: {verdict} (worst {worst_all:.3f})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
