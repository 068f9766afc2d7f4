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
"""

from __future__ import annotations

import argparse
import math
import os
import random
import tempfile
import threading
import time

import numpy as np

LEROBOT_FPS = 60


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


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seconds", type=float, default=10.0)
    ap.add_argument("--rates", default="50,100")
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
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
