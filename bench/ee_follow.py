"""End-effector targets streamed at 100 Hz (``Robot.follow`` with tool targets), one frame each through
``armctl.teleop.tooltarget.tool_frame``, against placo (LeRobot's IK: ``lerobot/model/kinematics.py``,
``RobotKinematics``) on the same targets, the same URDF and the same run.

    python bench/ee_follow.py            # 10,000 targets (100 s of a stream at 100 Hz)
    python bench/ee_follow.py --quick    # 2,000

Targets (fixed seed): the tool poses (x, y, z as the URDF's FK puts the tool, pitch, roll) of a smooth random joint
path of the arm (``--arm``, default ``so101``: its preset's URDF, ``armctl/presets/so101.urdf``, tool
``gripper_frame_link``), every joint inside its limits at no more than half its speed limit, so each target is
reachable and the path a smooth random curve in x, y, z, pitch and roll; the roll given as a LeRobot user gives
it, wrapped into -180..180 deg. Two hard stretches: the target's roll carried past +180 deg (to 190 deg, which reads
-170) and back over 8 s, beyond the roll's limits either way (-162.8..157.2 deg on the SO-101, in armctl's sign: it
must hold at 157.2 deg, not flip to -162.8 deg); and, over 6 s, the tool point pushed outward to 5..30 mm beyond a
bound of the arm's reach and back (the nearest answer, no jump). Simulated time: no sleeping, each frame starts
from the pose the last one sent.

armctl: ``tool_frame(arm, target, last pose, 0.01 s)``: the IK nearest the last pose (exact), the roll at the turn
nearest the last inside its limits, every joint step clipped to its speed limit times 10 ms. placo: LeRobot's
``RobotKinematics.inverse_kinematics`` as its end-effector pipeline calls it, once per target from the last answer
(one ``solver.solve(True)``: one QP step; position weight 1, orientation 0.01), the target a 4x4 pose in the URDF's
base_link (the position shifted by the preset's frame origin, the rotation of the target's pose as the URDF's FK
gives it). Also placo iterated until the tool is within 1e-6 m (at most 50 steps): what an exact answer costs it.

Printed: time per target p50 / p99 / max (us); position error of the answer (reachable targets: the IK's answer,
and the pose sent after the speed limit); armctl's answers through the URDF's FK (placo's), an independent check of
armctl's model; the largest joint step over its speed limit times the period (must be <= 1: armctl clips; LeRobot
sends placo's answer as it is); the largest roll step (a flip across +-180 deg would be ~320-360 deg); out of
reach, the largest miss (mm); ratios armctl/placo in the same run. Each stream runs 3 times (the same answers) and
each frame's least time is kept (this machine is shared: a preemption is no solver's); compare ratios.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from armctl.model.arm import Arm, load_arm  # noqa: E402
from armctl.model.kinematics import tool_pitch, tool_point  # noqa: E402
from armctl.teleop.tooltarget import ToolTarget, tool_frame  # noqa: E402

PERIOD_S = 0.01  # 100 Hz
ROLL_PEAK_DEG = 190.0  # the roll stretch's target roll at its peak (reads -170 deg, wrapped)
PUSH_MM = (5.0, 30.0)  # the out-of-reach stretch: this far beyond the reach
# the hard stretches: where they start (a fraction of the stream) and how long they last (s)
ROLL_STRETCH = (0.30, 8.0)
REACH_STRETCH = (0.60, 6.0)
REPEATS = 3  # each stream run this often (the same answers), each frame's least time kept (preemption is no solver's)
PLACO_ITER_TOL_M = 1e-6
PLACO_MAX_ITER = 50


# --------------------------------------------------------------------------------------------------- targets


def joint_path(arm: Arm, frames: int, rng) -> np.ndarray:
    """A smooth random joint path (frames, n) at 100 Hz: per joint three sines of random frequency and phase, well
    inside the limits (the elbow kept bent: a straight arm is singular) and under half the speed limit."""
    t = np.arange(frames) * PERIOD_S
    q = np.empty((frames, arm.n))
    elbow = arm.chain_start + 1
    for j in range(arm.n):
        lo, hi = float(arm.q_min[j]), float(arm.q_max[j])
        mid, half = 0.5 * (lo + hi), 0.35 * (hi - lo)
        if j == elbow:
            far = lo if abs(lo) > abs(hi) else hi  # bent towards the side the joint turns most
            mid, half = 0.5 * far, 0.3 * abs(far)
        w = 2 * math.pi * rng.uniform(0.03, 0.15, 3)
        amp = min(half, 0.5 * float(arm.max_speed_rad_s[j]) / float(np.sum(w)) * 3.0) / 3.0
        ph = rng.uniform(0, 2 * math.pi, 3)
        q[:, j] = mid + amp * sum(np.sin(w[i] * t + ph[i]) for i in range(3))
    return q


def window(frames: int, span: tuple[float, float]) -> np.ndarray:
    """0 outside the stretch ``span`` (its start as a fraction of the stream, its length in s), a smooth bump
    (sin^2) to 1 and back inside it."""
    x = (np.arange(frames) - span[0] * frames) * PERIOD_S / span[1]
    return np.where((x >= 0) & (x < 1), np.sin(math.pi * np.clip(x, 0, 1)) ** 2, 0.0)


def make_targets(arm: Arm, frames: int, seed: int, point_of=None) -> dict:
    """The stream: targets (x, y, z, pitch, roll as given: wrapped), the generating poses, and which targets are
    reachable as asked, past the roll's limits, pushed out of reach. ``point_of(q)``: the tool point of a pose (the
    URDF's FK when placo is there; armctl's otherwise)."""
    rng = np.random.default_rng(seed)
    q = joint_path(arm, frames, rng)
    p = tool_point(arm, q) if point_of is None else np.array([point_of(qk) for qk in q])
    phi = np.asarray(tool_pitch(arm, q), dtype=float)
    roll = q[:, -1].copy() if arm.roll is not None else np.full(frames, np.nan)
    w_roll = window(frames, ROLL_STRETCH) if arm.roll is not None else np.zeros(frames)
    roll_asked = roll + w_roll * (math.radians(ROLL_PEAK_DEG) - roll)
    w_out = window(frames, REACH_STRETCH)
    shoulder = _shoulder(arm, p)
    d = p - shoulder
    dist = np.linalg.norm(d, axis=1)
    reach = arm.reach_max + (arm.roll.offset_m if arm.roll is not None else 0.0)
    x = (np.arange(frames) - REACH_STRETCH[0] * frames) * PERIOD_S / REACH_STRETCH[1]
    push = 1e-3 * (PUSH_MM[0] + (PUSH_MM[1] - PUSH_MM[0]) * np.sin(math.pi * np.clip(x, 0, 1)))
    far = shoulder + d / dist[:, None] * (reach + push)[:, None]
    p_asked = p + w_out[:, None] * (far - p)
    out = np.linalg.norm(p_asked - shoulder, axis=1) > reach  # beyond any pose's reach
    if arm.roll is not None:
        i = arm.roll_index
        past = (roll_asked > arm.q_max[i]) | (roll_asked < arm.q_min[i])
    else:
        past = np.zeros(frames, dtype=bool)
    targets = [
        ToolTarget(
            *p_asked[k],
            pitch=float(phi[k]),
            roll=None if arm.roll is None else math.remainder(float(roll_asked[k]), 2 * math.pi),
        )
        for k in range(frames)
    ]
    return {
        "targets": targets,
        "q": q,
        "roll_asked": roll_asked,
        "reachable": (w_out == 0) & (w_roll == 0),
        "settled": (w_out == 0) & (w_roll == 0) & ~_after(frames, (ROLL_STRETCH, REACH_STRETCH), 1.0),
        "past_roll": past,
        "out": out,
        "pushed": w_out > 0,
    }


def _after(frames: int, spans, seconds: float) -> np.ndarray:
    """True in the ``seconds`` after each stretch ends (the follower catching up at its speed limits)."""
    k = np.arange(frames)
    out = np.zeros(frames, dtype=bool)
    for span in spans:
        end = int(span[0] * frames + span[1] / PERIOD_S)
        out |= (k >= end) & (k < end + int(seconds / PERIOD_S))
    return out


def _shoulder(arm: Arm, p) -> np.ndarray:
    """The shoulder's axis point in the vertical plane through each tool point (m, (N, 3))."""
    az = np.arctan2(p[:, 1], p[:, 0])
    b = arm.base_offset_m
    return np.stack([b * np.cos(az), b * np.sin(az), np.full(len(p), arm.shoulder_height_m)], axis=1)


# --------------------------------------------------------------------------------------------------- armctl


def run_armctl(arm: Arm, s: dict) -> dict:
    """Every target through ``tool_frame`` from the last pose sent: times, answers, poses sent."""
    targets = s["targets"]
    q = np.array(s["q"][0], dtype=float)
    if arm.roll is not None:
        q[-1] = s["roll_asked"][0]
    times, goals, sent = [], [], []
    for t in targets:
        t0 = time.perf_counter()
        f = tool_frame(arm, t, q, PERIOD_S)
        times.append(time.perf_counter() - t0)
        q = f.q_rad
        goals.append(f.goal_rad)
        sent.append(q)
    return {"times": np.array(times), "goal": np.array(goals), "sent": np.array(sent), "q0": s["q"][0]}


# --------------------------------------------------------------------------------------------------- placo


class Placo:
    """LeRobot's ``RobotKinematics`` (placo) on the arm's URDF: its FK, and its IK as LeRobot calls it."""

    def __init__(self, arm: Arm):
        import placo

        self.arm = arm
        self.robot = placo.RobotWrapper(str(arm.urdf.path))
        self.solver = placo.KinematicsSolver(self.robot)
        self.solver.mask_fbase(True)
        self.frame = arm.urdf.tool_link
        self.task = self.solver.add_frame_task(self.frame, np.eye(4))
        self.names = [m[0] for m in arm.urdf_map]  # armctl's joints, base first; the others stay at 0
        self.offset = np.array([m[1] for m in arm.urdf_map])
        self.sign = np.array([m[2] for m in arm.urdf_map], dtype=float)
        self.origin = np.asarray(arm.urdf.origin_m, dtype=float)
        for name in self.robot.joint_names():
            if name not in self.names:
                self.solver.mask_dof(name)  # the gripper (and a roll armctl holds): not the IK's

    def to_urdf(self, q) -> np.ndarray:
        return self.sign * (np.asarray(q, dtype=float) - self.offset)

    def to_armctl(self, qu) -> np.ndarray:
        return self.offset + self.sign * np.asarray(qu, dtype=float)

    def set(self, q) -> None:
        for name, a in zip(self.names, self.to_urdf(q)):
            self.robot.set_joint(name, float(a))
        self.robot.update_kinematics()

    def fk(self, q) -> np.ndarray:
        """The tool's 4x4 pose in base_link at armctl pose ``q`` (the URDF's FK)."""
        self.set(q)
        return np.array(self.robot.get_T_world_frame(self.frame))

    def point(self, q) -> np.ndarray:
        """The tool point at armctl pose ``q``, in armctl's frame (m)."""
        return self.fk(q)[:3, 3] - self.origin

    def ik_step(self, q_last, T) -> np.ndarray:
        """``RobotKinematics.inverse_kinematics(current, T)`` (LeRobot's defaults): one QP step from ``q_last``."""
        for name, a in zip(self.names, self.to_urdf(q_last)):
            self.robot.set_joint(name, float(a))
        self.task.T_world_frame = T
        self.task.configure(self.frame, "soft", 1.0, 0.01)
        self.solver.solve(True)
        self.robot.update_kinematics()
        return self.to_armctl([self.robot.get_joint(n) for n in self.names])


def placo_goals(pl: Placo, s: dict) -> list[np.ndarray]:
    """Each target as the 4x4 pose placo is given: the position asked (URDF frame), the rotation of the generating
    pose with the roll asked (the URDF's FK; a roll past the limits as if the joint turned there)."""
    out = []
    for k, t in enumerate(s["targets"]):
        q = np.array(s["q"][k], dtype=float)
        if pl.arm.roll is not None:
            q[-1] = s["roll_asked"][k]
        T = pl.fk(q)
        T[:3, 3] = np.array(t.point) + pl.origin
        out.append(T)
    return out


def run_placo(pl: Placo, s: dict, goals, iterate: bool) -> dict:
    """placo on every target from its last answer: one step each (LeRobot), or ``iterate``d to 1e-6 m."""
    q = np.array(s["q"][0], dtype=float)
    if pl.arm.roll is not None:
        q[-1] = s["roll_asked"][0]
    pl.set(q)  # the kinematics at the start pose (LeRobot's loop has them from its last answer)
    times, sent = [], []
    for T in goals:
        t0 = time.perf_counter()
        q = pl.ik_step(q, T)
        for _ in range(PLACO_MAX_ITER - 1 if iterate else 0):
            if np.linalg.norm(np.array(pl.robot.get_T_world_frame(pl.frame))[:3, 3] - T[:3, 3]) < PLACO_ITER_TOL_M:
                break
            q = pl.ik_step(q, T)
        times.append(time.perf_counter() - t0)
        sent.append(q)
    return {"times": np.array(times), "goal": np.array(sent), "sent": np.array(sent), "q0": s["q"][0]}


# --------------------------------------------------------------------------------------------------- figures


def repeated(run) -> dict:
    """``run()`` (a whole stream, from a fresh solver) ``REPEATS`` times: its answers (the same each time, checked)
    and each frame's least time."""
    first = run()
    for _ in range(REPEATS - 1):
        again = run()
        assert np.array_equal(again["sent"], first["sent"]), "the stream's answers changed between runs"
        first["times"] = np.minimum(first["times"], again["times"])
    return first


def figures(arm: Arm, s: dict, r: dict, point_of) -> dict:
    """What a run did: time per target (us), position errors (m), steps over the speed limit, roll steps (deg)."""
    asked = np.array([t.point for t in s["targets"]])
    reach = s["reachable"]
    err_goal = np.array([np.linalg.norm(point_of(q) - p) for q, p in zip(r["goal"], asked)])
    err_sent = np.array([np.linalg.norm(point_of(q) - p) for q, p in zip(r["sent"], asked)])
    steps = np.abs(np.diff(np.vstack([r["q0"], r["sent"]]), axis=0)) / (np.asarray(arm.max_speed_rad_s) * PERIOD_S)
    us = r["times"] * 1e6
    out = {
        "p50": float(np.percentile(us, 50)),
        "p99": float(np.percentile(us, 99)),
        "max": float(us.max()),
        "err_goal": float(err_goal[reach].max()),
        "err_sent": float(err_sent[s["settled"]].max()),
        "err_past_roll": float(err_goal[s["past_roll"]].max()) if s["past_roll"].any() else math.nan,
        "miss_out": float(err_goal[s["out"]].max()) if s["out"].any() else math.nan,
        "step": float(steps.max()),
        "roll_step": math.nan,
        "roll_held": math.nan,
    }
    if arm.roll is not None:
        roll = np.concatenate([[r["q0"][-1]], r["sent"][:, -1]])
        out["roll_step"] = float(np.degrees(np.abs(np.diff(roll)).max()))
        past = s["past_roll"]
        if past.any():
            i = arm.roll_index
            held = np.minimum(np.abs(r["sent"][past, -1] - arm.q_max[i]), np.abs(r["sent"][past, -1] - arm.q_min[i]))
            out["roll_held"] = float(np.degrees(held.max()))
    return out


def report(arm: Arm, s: dict, rows: dict, own: dict) -> None:
    n = len(s["targets"])
    print(
        f"{n} targets at 100 Hz on {arm.name} ({arm.source}): {int(s['reachable'].sum())} reachable as "
        f"asked, {int(s['past_roll'].sum())} with the roll past its limits (asked up to {ROLL_PEAK_DEG:g} deg), "
        f"{int(s['out'].sum())} out of reach (pushed {PUSH_MM[0]:g}..{PUSH_MM[1]:g} mm beyond a bound of the reach)\n"
    )
    truth = "the URDF's FK (placo's)" if len(rows) > 1 else "armctl's own model"
    print(f"errors (m): the tool's distance from the target by {truth}; reachable targets")
    head = f"  {'solver':<26}{'p50 us':>9}{'p99 us':>9}{'max us':>9}{'err IK m':>11}{'err sent m':>11}"
    print(head + f"{'max step/limit':>16}{'roll step deg':>15}{'miss out mm':>13}")
    for name, f in rows.items():
        print(
            f"  {name:<26}{f['p50']:>9.1f}{f['p99']:>9.1f}{f['max']:>9.1f}{f['err_goal']:>11.2e}{f['err_sent']:>11.2e}"
            f"{f['step']:>16.3f}{f['roll_step']:>15.2f}{f['miss_out'] * 1e3:>13.1f}"
        )
    a = rows["armctl"]
    print(
        f"\n  armctl by its own model (FK): error {own['err_goal']:.1e} m (IK), {own['err_sent']:.1e} m (sent); the "
        f"roll past its limits held within {own['roll_held']:.3f} deg of the limit on its side, the point there "
        f"reached to {own['err_past_roll']:.1e} m"
    )
    for name in list(rows)[1:]:
        f = rows[name]
        print(
            f"  armctl / {name}: time p50 {a['p50'] / f['p50']:.2f}x, p99 {a['p99'] / f['p99']:.2f}x; "
            f"error (reachable, IK) {a['err_goal'] / f['err_goal']:.1e}x, (sent) {a['err_sent'] / f['err_sent']:.1e}x"
        )
    ok = a["p99"] < 1000 and a["step"] <= 1 + 1e-9 and own["err_goal"] < 1e-6 and not a["roll_step"] > 90
    verdict = "met" if ok else "NOT met"
    print(f"\n  goal (issue 37): p99 < 1 ms, steps <= 1, no roll flip, error (own model) < 1e-6 m: {verdict}")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="2,000 targets")
    ap.add_argument("--targets", type=int, help="how many targets (default 10,000)")
    ap.add_argument("--arm", default="so101", help="a preset or arm file from a URDF (default so101)")
    ap.add_argument("--seed", type=int, default=37)
    args = ap.parse_args(argv)
    n = args.targets or (2000 if args.quick else 10_000)
    arm = load_arm(args.arm)
    try:
        if arm.urdf is None:
            raise ImportError(f"{arm.name} is not an arm from a URDF")
        pl = Placo(arm)
    except ImportError as e:
        print(f"no placo ({e}; pip install placo): armctl alone, its errors by its own model")
        s = make_targets(arm, n, args.seed)
        own = figures(arm, s, repeated(lambda: run_armctl(arm, s)), lambda q: tool_point(arm, q))
        report(arm, s, {"armctl": own}, own)
        return 0
    s = make_targets(arm, n, args.seed, pl.point)
    r = repeated(lambda: run_armctl(arm, s))
    own = figures(arm, s, r, lambda q: tool_point(arm, q))
    rows = {"armctl": figures(arm, s, r, pl.point)}
    goals = placo_goals(pl, s)
    for name, iterate in (("placo (LeRobot: 1 step)", False), ("placo (iterated to 1e-6)", True)):
        rows[name] = figures(arm, s, repeated(lambda it=iterate: run_placo(Placo(arm), s, goals, it)), pl.point)
    report(arm, s, rows, own)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
