"""Leader-follower teleoperation: latency from a leader position change to the follower's servo command, and the
rate the follow loop holds, at 50 and 100 Hz, on the simulated buses.

    python bench/follow.py [--seconds 10] [--rates 50,100]

Leader: a simulated SO-101 bus (``feetechsim://``, in this process) whose shoulder_pan a "hand" thread turns
by a small step (well under the follower's speed limit, so no lag from the limits) at random moments, noting
the time of each change. Followers: the simulated SO-101 bus (``--map joints``; host-timed goals) and the
simulated MeArm board (``armsim://``, ``--map tool``; a board that plays queued 20 ms frames, so it takes at
most 50 commands a second whatever the loop's rate). Latency: from the moment the hand turned the leader to
the moment ``Robot.follow`` hands the follower's backend the command that follows it (the goals go on the
wire then). Rate: the loop's frames (one leader read each) a second over the run, against the rate asked;
and the commands a second the follower took.

Beside it, the figure of LeRobot's own loop (``lerobot-teleoperate``, default ``fps=60``: each cycle reads the
follower, reads the leader, writes the follower, then waits out the cycle; FACTS-lerobot.md section 6): one
cycle is 16.7 ms, so a change waits up to one cycle plus its reads and write. LeRobot needs torch and Python
>= 3.12 and is not measured here; its cycle is printed as the reference. Goal: p99 under 2 frames, rate
within 1 % of the asked.

    python bench/follow.py --memory [--frames 180000] [--paths so101,ros] [--trace] [--json]

Memory over a long follow (issue 34: "a one-hour follow at 50 Hz ends within 10 MB of its memory after the
first minute"), faster than real time: the simulated buses run at ``rate=20`` and the leader has news at every
read (as ``armctl ros``' joint_commands has), so ``Robot.follow`` takes its frames back to back, the whole
product path at CPU speed; 180,000 frames (the default) are an hour at 50 Hz. Paths: ``so101``, a simulated
SO-101 leader whose pan a hand turns (a sine of 8 deg) followed by the simulated SO-101 bus; ``ros``, the
``joint_commands`` source of ``armctl ros`` (its own class, a new command each read) followed by the simulated
seed-3link board at ``armctl ros``' rate. Each path in its own process (what the process had freed before
would hide growth): its resident memory (RSS, after a collection) at the first minute (3,000 frames), at the
end, the growth per frame over the last third (every bounded buffer full by then) and the hour it means,
beside the issue's budget (10 MB) and main before the fix (0.75 KiB a frame, the simulated bus keeping its
packets). ``--trace``: also the allocation sites that grew most after the first minute (tracemalloc: slower,
and its own bookkeeping adds to the RSS then).
"""

from __future__ import annotations

import argparse
import gc
import json
import math
import os
import random
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

LEROBOT_FPS = 60
MINUTE_FRAMES = 3_000  # the first minute of a follow at 50 Hz
HOUR_FRAMES = 180_000  # an hour at 50 Hz
BUDGET_MB = 10.0  # issue 34: within 10 MB of the memory after the first minute
MAIN_B_FRAME = 750.0  # main before the fix (issue 34: "about 0.75 KiB a frame"; RSS, this script's so101 path)


def _run(follower: str, rate: float, seconds: float, seed: int) -> dict:
    import armctl

    os.environ["ARMCTL_STATE_DIR"] = tempfile.mkdtemp(prefix="armctl-bench-follow-")
    leader = armctl.open_leader("so101", "feetechsim://?ids=1-6")
    sim = leader.bus.serial.sim
    pan = leader.calibration.joints[0]
    changes: list[tuple[float, float]] = []  # (wall time, leader pan angle rad)
    sent: list[tuple[float, float]] = []  # (wall time the command went out, when the leader was read for it)
    rng = random.Random(seed)
    done = threading.Event()

    def hand() -> None:
        base = float(pan.value(0.0))
        k = 0
        while not done.is_set():
            time.sleep(rng.uniform(0.04, 0.12))
            k += 1
            steps = base + (8 if k % 2 else -8) * (1 + k % 3)  # 0.7..2.1 deg from centre: a few deg/s
            sim.turn_by_hand(pan.id, steps)
            changes.append((time.monotonic(), float(pan.angle_rad(round(steps)))))

    kw = {"map": "tool"} if follower == "mearm" else {}
    with leader, armctl.connect(follower) as robot:
        m = robot.follow(
            leader,
            rate_hz=rate,
            on_frame=lambda t, q, g, tg, meas: sent.append((time.monotonic(), tg.leader_t_s)),
            **kw,
        )
        while m.teleop.status.ramping and not m.done:
            time.sleep(0.05)
        t0 = time.monotonic()
        sent.clear()
        th = threading.Thread(target=hand, daemon=True)
        th.start()
        time.sleep(seconds)
        done.set()
        th.join()
        robot.stop("bench over")
        try:
            m.wait(10)
        except Exception:  # noqa: BLE001 - StopRequested: stopped as asked
            pass
    # latency: for each change, the first command sent from a leader read made after it
    t_sent = np.array([s[0] for s in sent])
    t_read = np.array([s[1] for s in sent])
    lat = []
    for tc, _ in changes:
        i = int(np.searchsorted(t_read, tc, side="right"))
        if i < len(sent) and t_sent[i] > t0:
            lat.append(t_sent[i] - tc)
    reads = np.array([t for t in m.teleop.read_times if t >= t0])  # the loop's frames: one leader read each
    got_rate = (len(reads) - 1) / (reads[-1] - reads[0]) if len(reads) > 1 else 0.0
    cmd = t_sent[t_sent >= t0]
    cmd_rate = (len(cmd) - 1) / (cmd[-1] - cmd[0]) if len(cmd) > 1 else 0.0
    return {"latency_ms": np.array(lat) * 1000, "rate": got_rate, "cmd_rate": cmd_rate, "changes": len(changes)}


# --- memory over a long follow -------------------------------------------------------------------------------


class _EagerLeader:
    """A simulated SO-101 leader with news at every read (``arrived`` always set), its pan turned by hand a
    little every read (a sine of 8 deg): the follower's goals change every frame, as in a teleoperation."""

    def __init__(self, leader):
        self.leader, self.arm, self.calibration, self.port = leader, leader.arm, leader.calibration, leader.port
        self.arrived = threading.Event()
        self.arrived.set()
        self._pan = leader.calibration.joints[0]
        self._centre = float(self._pan.value(0.0))
        self._k = 0

    def read(self):
        self._k += 1
        steps = self._centre + 8.0 * self._pan.steps_per_deg * math.sin(self._k / 40)
        self.leader.bus.serial.sim.turn_by_hand(self._pan.id, steps)
        reading = self.leader.read()
        self.arrived.set()
        return reading


def _eager_commands(arm):
    """``armctl ros``' joint_commands source (the node's own class) with a new command at every read: a slow
    sine of 5 deg about home on every joint."""
    from armctl.ros.node import CommandSource

    class EagerCommands(CommandSource):
        def __init__(self):
            super().__init__(arm)
            self._home = np.array(arm.home_rad, dtype=float)
            self._k = 0

        def read(self):
            self._k += 1
            self.put(self._home + math.radians(5.0) * math.sin(self._k / 40), math.nan)
            return super().read()

    return EagerCommands()


def _rss_b() -> int:
    """Resident memory of this process (bytes) after a full collection; Linux (/proc)."""
    gc.collect()
    return int(Path("/proc/self/statm").read_text().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def _memory_run(path: str, frames: int, every: int, trace: bool) -> dict:
    """One path's follow of ``frames`` frames in this process: RSS every ``every`` frames."""
    import armctl

    if trace:
        import tracemalloc

        tracemalloc.start(1)
    marks = sorted({*range(every, frames, every), MINUTE_FRAMES, frames})
    points, snap0 = [], None
    leader, kw = None, {}
    if path == "so101":
        leader = armctl.open_leader("so101", "feetechsim://?ids=1-6&rate=20")
        robot = armctl.connect("so101", port="feetechsim://?rate=20")
        source = _EagerLeader(leader)
    elif path == "ros":
        from armctl.ros.node import FOLLOW_RATE_HZ

        robot = armctl.connect("seed-3link", port="armsim://seed-3link?rate=20")
        source, kw = _eager_commands(robot.arm), {"rate_hz": FOLLOW_RATE_HZ}
    else:
        raise SystemExit(f"--paths: so101 or ros, got {path!r}")
    t0 = time.monotonic()
    with robot:
        m = robot.follow(source, **kw)
        try:
            for mark in marks:
                while m.teleop.status.frames < mark and not m.done:
                    time.sleep(0.01)
                if m.done:
                    m.wait(1)  # raises what ended it
                points.append((m.teleop.status.frames, _rss_b(), time.monotonic() - t0))
                if trace and mark == MINUTE_FRAMES:
                    snap0 = tracemalloc.take_snapshot()
            snap1 = tracemalloc.take_snapshot() if trace else None
        finally:
            robot.stop("bench over")
            try:
                m.wait(10)
            except Exception:  # noqa: BLE001 - StopRequested: stopped as asked
                pass
            if leader is not None:
                leader.close()
    out = {"path": path, "points": points}
    if trace and snap0 is not None:
        n = points[-1][0] - MINUTE_FRAMES
        flt = [tracemalloc.Filter(False, tracemalloc.__file__)]
        grew = snap1.filter_traces(flt).compare_to(snap0.filter_traces(flt), "lineno")[:8]
        out["grew"] = [(str(st.traceback), st.size_diff / n, st.count_diff) for st in grew]
    return out


def memory_figures(points: list) -> dict:
    """From (frames, RSS bytes, s) points: MB at the first minute and at the end, the growth per frame over the
    last third after the first minute (least squares; every bounded buffer is full by then), and the hour."""
    pts = np.array(points, dtype=float)
    f, b = pts[:, 0], pts[:, 1]
    minute = int(np.searchsorted(f, MINUTE_FRAMES))
    start = max(minute, int(np.searchsorted(f, f[-1] - (f[-1] - f[minute]) / 3, side="right")) - 1)
    tail = np.arange(len(f)) >= start
    slope = float(np.polyfit(f[tail], b[tail], 1)[0]) if tail.sum() >= 2 else math.nan
    hour = (b[-1] - b[minute] + slope * max(0.0, HOUR_FRAMES - f[-1])) / 1e6
    return {
        "frames": int(f[-1]),
        "wall_s": float(pts[-1, 2]),
        "minute_frames": int(f[minute]),
        "mb_minute": b[minute] / 1e6,
        "mb_end": b[-1] / 1e6,
        "tail_from_frame": int(f[tail][0]),
        "slope_b_frame": slope,
        "hour_mb": hour,
    }


def memory_main(args) -> None:
    if args.memory_child:
        with tempfile.TemporaryDirectory(prefix="armctl-bench-follow-memory-") as state:
            os.environ["ARMCTL_STATE_DIR"] = state
            print(json.dumps(_memory_run(args.memory_child, args.frames, args.every, args.trace)))
        return
    rows = []
    for path in args.paths.split(","):
        cmd = [sys.executable, __file__, "--memory-child", path, "--frames", str(args.frames), "--every"]
        cmd += [str(args.every)] + (["--trace"] if args.trace else [])
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
        res = subprocess.run(cmd, capture_output=True, text=True, env=env, check=False)
        if res.returncode != 0:
            raise SystemExit(f"{path}: {res.stderr.strip().splitlines()[-1] if res.stderr.strip() else res.returncode}")
        run = json.loads(res.stdout.strip().splitlines()[-1])
        rows.append({**run, **memory_figures(run["points"])})
    if args.json:
        print(json.dumps(rows))
        return
    what = {"so101": "SO-101 leader -> SO-101 bus", "ros": "joint_commands -> seed-3link"}
    print(
        f"issue 34 budget: within {BUDGET_MB:g} MB of the first minute after an hour at 50 Hz "
        f"({HOUR_FRAMES} frames); main before the fix: {MAIN_B_FRAME:.0f} B a frame"
    )
    print(
        f"{'path':<30} {'frames':>7} {'wall s':>7} {'MB 1 min':>8} {'MB end':>7} {'B/frame':>8} {'tail from':>9} "
        f"{'hour MB':>8} {'vs budget':>9} {'vs main':>8}"
    )
    for r in rows:
        print(
            f"{what[r['path']]:<30} {r['frames']:7d} {r['wall_s']:7.1f} {r['mb_minute']:8.2f} {r['mb_end']:7.2f} "
            f"{r['slope_b_frame']:8.1f} {r['tail_from_frame']:9d} {r['hour_mb']:8.2f} "
            f"{r['hour_mb'] / BUDGET_MB:8.2f}x {r['slope_b_frame'] / MAIN_B_FRAME:7.3f}x"
        )
        for site, b_frame, count in r.get("grew", []):
            print(f"    {b_frame:8.2f} B/frame {count:+7d} blocks  {site}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seconds", type=float, default=10.0)
    ap.add_argument("--rates", default="50,100")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--memory", action="store_true", help="memory over a long follow (see above)")
    ap.add_argument("--frames", type=int, default=HOUR_FRAMES, help="--memory: frames per path (180000: an hour)")
    ap.add_argument("--every", type=int, default=1000, help="--memory: RSS every this many frames")
    ap.add_argument("--paths", default="so101,ros", help="--memory: so101, ros")
    ap.add_argument("--trace", action="store_true", help="--memory: the allocation sites that grew (tracemalloc)")
    ap.add_argument("--json", action="store_true", help="--memory: the figures as JSON")
    ap.add_argument("--memory-child", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.memory or args.memory_child:
        memory_main(args)
        return
    rates = [float(r) for r in args.rates.split(",")]
    cycle = 1000 / LEROBOT_FPS
    print(f"LeRobot lerobot-teleoperate (reference, FACTS section 6): {LEROBOT_FPS} Hz, one cycle {cycle:.1f} ms")
    print(
        f"{'follower':<28} {'asked':>6} {'held':>8} {'off %':>6} {'cmds/s':>7} {'changes':>7} "
        f"{'p50 ms':>7} {'p99 ms':>7} {'max ms':>7} {'p99/frame':>9} {'p99 vs LeRobot cycle':>21}"
    )
    for follower, what in (("so101", "SO-101 bus (feetechsim)"), ("mearm", "MeArm board (armsim)")):
        for rate in rates:
            r = _run(follower, rate, args.seconds, args.seed)
            lat = r["latency_ms"]
            frame_ms = 1000 / rate
            if follower == "mearm":
                frame_ms = max(frame_ms, 20.0)  # the board plays 20 ms frames: commands at most 50 a second
            p50, p99, mx = (np.percentile(lat, 50), np.percentile(lat, 99), lat.max()) if len(lat) else (math.nan,) * 3
            print(
                f"{what:<28} {rate:6.0f} {r['rate']:8.2f} {100 * (r['rate'] / rate - 1):+6.2f} {r['cmd_rate']:7.1f} "
                f"{len(lat):7d} "
                f"{p50:7.2f} {p99:7.2f} {mx:7.2f} {p99 / frame_ms:9.2f} {p99 / (1000 / LEROBOT_FPS):20.2f}x"
            )


if __name__ == "__main__":
    main()
