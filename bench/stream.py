"""Streaming benchmark on the simulated arm over a pseudo-terminal at 115200 baud.

    python bench/stream.py [--seconds 5]

1. Throughput: 4-channel moves sent back to back as fast as flow control allows, with the board's
   frame clock run 50x faster (``rate=50``) so the board never limits, and the simulated baud set to
   115200/50 so the wire still runs at 115200 in wall time: sustained bytes/s of moves (with acks,
   resends, everything) as a fraction of 11520 B/s (115200 baud, 10 bits per byte).
2. Latency: a 50 Hz stream (a move every 20 ms, host-timed, real-time sim): how late each command
   leaves the host against its schedule, p50/p99/max.
"""

from __future__ import annotations

import argparse
import statistics
import threading
import time

import numpy as np

from armctl.bus import codec
from armctl.bus.armproto.backend import ArmProtocolBackend
from armctl.sim.pty import PtySim


def _serve(sim: PtySim, stop: threading.Event) -> None:
    while not stop.is_set():
        sim.serve(until=time.monotonic() + 0.1)


def throughput(seconds: float) -> dict:
    rate = 50.0
    sim = PtySim(f"armsim://?rate={rate}&baud={int(115200 / rate)}&depth=64")
    stop = threading.Event()
    th = threading.Thread(target=_serve, args=(sim, stop), daemon=True)
    th.start()
    try:
        with ArmProtocolBackend(sim.path, watchdog_s=0) as b:
            widths = {0: 1500.5, 1: 1500.5, 2: 1500.5, 3: 1500.5}
            # the line these moves make on this board (its version and channel count)
            line_len = len(codec.move(123, 1, [3001] * 4 + [None] * (b.info.channels - 4), version=b.version))
            t0 = time.monotonic()
            n = 0
            while time.monotonic() - t0 < seconds:
                widths[0] = 1000.5 + (n % 1000)
                b.move(1, widths)
                n += 1
            b.flush()
            elapsed = time.monotonic() - t0
            sent = b.bytes_out
            counters = b.status().counters
    finally:
        stop.set()
        th.join(1)
        sim.close()
    return {
        "commands": n,
        "elapsed_s": elapsed,
        "rate_per_s": n / elapsed,
        "line_bytes": line_len,
        "bytes_per_s": sent / elapsed,
        "fraction": sent / elapsed / (115200 / 10),
        "board": counters,
    }


def latency(seconds: float) -> dict:
    sim = PtySim("armsim://?rate=1&baud=115200")
    stop = threading.Event()
    th = threading.Thread(target=_serve, args=(sim, stop), daemon=True)
    th.start()
    late = []
    try:
        with ArmProtocolBackend(sim.path) as b:
            t0 = time.monotonic() + 0.05
            for k in range(int(seconds * 50)):
                due = t0 + k * 0.020
                while time.monotonic() < due:
                    b._service(max(0.0, min(0.002, due - time.monotonic())))
                sent_at = time.monotonic()
                b.move(1, {0: 1500 + (k % 200), 1: 1500, 2: 1500, 3: 1500})
                late.append((sent_at - due) * 1000)
            b.drain()
            counters = b.status().counters
    finally:
        stop.set()
        th.join(1)
        sim.close()
    a = np.array(late)
    return {
        "n": len(a),
        "p50_ms": float(np.percentile(a, 50)),
        "p99_ms": float(np.percentile(a, 99)),
        "max_ms": float(a.max()),
        "mean_ms": statistics.fmean(a),
        "board": counters,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seconds", type=float, default=5.0)
    args = ap.parse_args()
    t = throughput(args.seconds)
    print(
        f"throughput: {t['commands']} moves (~{t['line_bytes']} bytes each) in {t['elapsed_s']:.2f} s = "
        f"{t['rate_per_s']:.1f} moves/s, {t['bytes_per_s']:.0f} B/s = {100 * t['fraction']:.1f}% of 115200 baud"
    )
    print(f"  board counters: {t['board']}")
    lat = latency(args.seconds)
    print(
        f"50 Hz stream, {lat['n']} moves: lateness leaving the host p50 {lat['p50_ms']:.3f} ms, "
        f"p99 {lat['p99_ms']:.3f} ms, max {lat['max_ms']:.3f} ms"
    )
    print(f"  board counters: {lat['board']}")


if __name__ == "__main__":
    main()
