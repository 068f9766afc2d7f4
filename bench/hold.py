"""How soon a feed hold brings the arm to rest: against the controlled stop it is not, and against the hold of
armctl 0.x before issue 33 (the same code with its old settings), in the same run.

    python bench/hold.py            # 8 trials of each
    python bench/hold.py -n 20

The example program runs on the simulated arm (armsim://, in this process, real time); at a random moment
of it (1-20 s in) the run is either held (``Robot.pause()``: decelerate along the path, then hold) or
stopped (``Robot.stop()``: the board drops its queue and holds the pulses it outputs, at once). Measured on
the simulated board's clock, from the request to the last servo pulse change (the arm at rest): p50/p99/max
of each, and their ratios. A hold takes longer by design: it decelerates, within every joint's acceleration
limit, from the end of what the board already has (at most ``LEAD_S``, 0.1 s, plus a 2-frame move); a stop
halts the servos mid-stride. "old hold" plays with the settings armctl had before: 0.3 s queued ahead, moves
merged up to 25 frames, a 0.4 s ramp. Underruns (the board's queue ran dry while the program streamed, before
the request: its ``empty`` counter) show what the shorter queue costs on this machine's load.
"""

from __future__ import annotations

import argparse
import contextlib
import random
import time
from pathlib import Path

import numpy as np

import armctl
import armctl.robot.stream as stream
from armctl.bus.backend import FRAME_S

ROOT = Path(__file__).resolve().parents[1]
PROGRAM = ROOT / "examples" / "pick_and_place.yaml"
SETTLE_S = 0.3  # underruns are counted from this long after the run starts


@contextlib.contextmanager
def _old_settings():
    """The playback as it was before issue 33: 0.3 s queued ahead, moves up to 25 frames, rate 1 -> 0 in 0.4 s."""
    saved = stream.LEAD_S, stream.CONTROLLED_MOVE_FRAMES, stream.Player.__init__.__kwdefaults__["slew"]
    stream.LEAD_S, stream.CONTROLLED_MOVE_FRAMES = 0.3, stream.MAX_SEGMENT_FRAMES
    stream.Player.__init__.__kwdefaults__["slew"] = FRAME_S / 0.4
    try:
        yield
    finally:
        stream.LEAD_S, stream.CONTROLLED_MOVE_FRAMES, stream.Player.__init__.__kwdefaults__["slew"] = saved


def _trial(robot, kind: str, at_s: float) -> tuple[float, int, float]:
    """(request -> at rest in s, underruns before the request, seconds streamed before it)."""
    sim = robot.backend.ser
    board = sim.sim.board
    with _old_settings() if kind == "old" else contextlib.nullcontext():
        m = robot.run(PROGRAM, wait=False)
        while not m.started.is_set():
            time.sleep(0.001)
        time.sleep(SETTLE_S)  # (the motion before it, the home, counts its own end a frame after it is done)
        empty0, t0 = board.counters["empty"], sim.sim_time_s()
        time.sleep(at_s - SETTLE_S)
        t_req = sim.sim_time_s()
        underruns = board.counters["empty"] - empty0
        if kind in ("hold", "old"):
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
    return max(0.0, t_last - t_req), underruns, t_req - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("-n", type=int, default=8, help="trials of each (default 8)")
    args = ap.parse_args()
    rng = random.Random(1)
    kinds = {"hold": "Robot.pause() (feed hold)", "old": "old hold (0.3 s queued)", "stop": "Robot.stop()"}
    got: dict[str, list[tuple[float, int, float]]] = {k: [] for k in kinds}
    with armctl.connect("seed-3link", "armsim://?rate=1&seed=1") as robot:
        for _ in range(args.n):
            at = rng.uniform(1.0, 20.0)
            for kind in kinds:  # interleaved, at the same moment: the machine's load falls on all alike
                got[kind].append(_trial(robot, kind, at))
        extra_s, grown = robot.backend.lead_extra * FRAME_S, robot.backend.underruns
    print(f"{'request -> at rest (board clock)':<34}{'p50':>8}{'p99':>8}{'max':>8}   underruns while streaming")
    p50 = {}
    for kind, label in kinds.items():
        v = np.array([g[0] for g in got[kind]]) * 1000
        p50[kind] = np.percentile(v, 50)
        runs, secs = sum(g[1] for g in got[kind]), sum(g[2] for g in got[kind])
        print(f"{label:<34}{p50[kind]:6.0f}ms{np.percentile(v, 99):6.0f}ms{v.max():6.0f}ms   {runs} in {secs:.0f} s")
    print(f"queue kept ahead at the end: 0.1 s + {extra_s:.2f} s (grown on {grown} underruns, shrinking back)")
    print(f"ratio hold/old hold (p50): {p50['hold'] / p50['old']:.2f}x", end="")
    print(f"; hold/stop (p50): {p50['hold'] / p50['stop']:.0f}x" if p50["stop"] > 0 else "; stop: at rest at once")


if __name__ == "__main__":
    main()
