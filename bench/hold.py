"""How soon a feed hold brings the arm to rest, against the controlled stop it is not.

    python bench/hold.py            # 8 trials of each
    python bench/hold.py -n 20

The example program runs on the simulated arm (armsim://, in this process, real time); at a random moment
of it (1-20 s in) the run is either held (``Robot.pause()``: decelerate along the path, then hold) or
stopped (``Robot.stop()``: the board drops its queue and holds the pulses it outputs, at once). Measured on
the simulated board's clock, from the request to the last servo pulse change (the arm at rest): p50/p99/max
of each, and their ratio. A hold takes longer by design: it plays what is queued (at most about 0.3 s, plus
the move being sent) and then decelerates over 0.4 s, where a stop halts the servos mid-stride.
"""

from __future__ import annotations

import argparse
import random
import time
from pathlib import Path

import numpy as np

import armctl

ROOT = Path(__file__).resolve().parents[1]
PROGRAM = ROOT / "examples" / "pick_and_place.yaml"


def _trial(robot, kind: str, at_s: float) -> float:
    sim = robot.backend.ser
    m = robot.run(PROGRAM, wait=False)
    time.sleep(at_s)
    t_req = sim.sim_time_s()
    if kind == "hold":
        robot.pause()
        deadline = time.monotonic() + 10
        while robot.control.state != "held" and time.monotonic() < deadline:
            time.sleep(0.005)
        time.sleep(0.2)
        t_last = max(t for t, _, w in list(sim.sim.pulses) if w is not None)
        robot.stop("trial over")
        robot.resume()
    else:
        robot.stop("trial")
        time.sleep(0.3)
        t_last = max(t for t, _, w in list(sim.sim.pulses) if w is not None)
    try:
        m.wait(timeout=30)
    except armctl.errors.StopRequested:
        pass
    robot.home()
    return max(0.0, t_last - t_req)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("-n", type=int, default=8, help="trials of each (default 8)")
    args = ap.parse_args()
    rng = random.Random(1)
    got: dict[str, list[float]] = {"hold": [], "stop": []}
    with armctl.connect("seed-3link", "armsim://?rate=1&seed=1") as robot:
        for _ in range(args.n):
            for kind in ("hold", "stop"):  # interleaved: the machine's load falls on both alike
                got[kind].append(_trial(robot, kind, rng.uniform(1.0, 20.0)))
    print(f"{'request -> at rest (board clock)':<34}{'p50':>8}{'p99':>8}{'max':>8}")
    for kind, label in (("hold", "Robot.pause() (feed hold)"), ("stop", "Robot.stop() (controlled stop)")):
        v = np.array(got[kind]) * 1000
        print(f"{label:<34}{np.percentile(v, 50):7.0f}ms{np.percentile(v, 99):6.0f}ms{v.max():6.0f}ms")
    h, s = np.median(got["hold"]), np.median(got["stop"])
    print(f"ratio hold/stop (p50): {h / s:.1f}x" if s > 0 else "stop: at rest at once")


if __name__ == "__main__":
    main()
