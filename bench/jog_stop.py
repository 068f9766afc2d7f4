"""How soon the keyboard pendant (``armctl jog`` without a target) stops the arm when a held key is let go.

A terminal sends no key-up: the pendant knows a key is up only when its auto-repeats stop, so the floor is
its release time (twice the repeat interval, at least 50 ms). Each run holds Right (10 mm steps, 50 mm/s)
on a pty for 1.2 s at the given repeat rate against the simulated arm served on a pty by this process,
then measures from the last repeat written to the last servo pulse change on the simulated board. Prints
p50/p99/max per repeat rate, the release time, and what the stop adds after it (Robot.stop to the board,
the 20 ms frame it is in).

  python bench/jog_stop.py            # 10 runs per repeat rate
  python bench/jog_stop.py -n 30
"""

from __future__ import annotations

import argparse
import os
import select
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from armctl.cli.pendant import release_time  # noqa: E402
from armctl.sim.pty import PtySim  # noqa: E402

RIGHT = b"\x1b[C"
RATES = [("30 Hz (Linux console, GNOME)", 0.033), ("25 Hz (X11 default)", 0.040), ("11 Hz (macOS default)", 0.090)]


class Child:
    def __init__(self, argv, env):
        self.master, slave = os.openpty()
        self.proc = subprocess.Popen(argv, stdin=slave, stdout=slave, stderr=slave, env=env, start_new_session=True)
        os.close(slave)
        self.out = b""

    def pump(self, wait_s):
        end = time.monotonic() + wait_s
        while (left := end - time.monotonic()) > 0:
            if select.select([self.master], [], [], left)[0]:
                try:
                    self.out += os.read(self.master, 65536)
                except OSError:
                    return

    def wait_for(self, text: bytes, timeout_s=20.0):
        deadline = time.monotonic() + timeout_s
        while text not in self.out.rsplit(b"\x1b[H", 2)[-1] and text not in self.out[-3000:]:
            if time.monotonic() > deadline:
                raise SystemExit(f"the pendant did not show {text!r}")
            self.pump(0.05)


def one_run(period_s: float, root: str) -> float:
    state = tempfile.mkdtemp(dir=root)  # a fresh arm each run: the pose a port was left in is remembered
    pty = PtySim("armsim://seed-3link?seed=1")
    thread = threading.Thread(target=pty.serve, daemon=True)
    thread.start()
    env = dict(os.environ, PYTHONPATH=str(ROOT), ARMCTL_STATE_DIR=state)
    argv = [sys.executable, "-m", "armctl", "--port", pty.path, "jog", "--step", "10", "--speed", "50"]
    child = Child(argv, env)
    try:
        child.wait_for(b"idle")
        child.out = b""
        os.write(child.master, RIGHT)  # the press; the first repeat comes after the terminal's delay
        child.pump(0.4)
        last = 0.0
        for _ in range(int(1.2 / period_s)):
            last = time.monotonic()
            os.write(child.master, RIGHT)
            child.pump(period_s - (time.monotonic() - last))
        child.pump(1.0)
        t_last = (last - pty.t0) * pty.rate
        changes = [t for t, _, _ in pty.sim.pulses if t > t_last - 1.0]
        if not changes:
            screen = child.out.rsplit(b"\x1b[H", 1)[-1].decode("utf-8", "replace")
            raise SystemExit(f"nothing moved; the pendant's screen:\n{screen}")
        os.write(child.master, b"q")
        child.proc.wait(10)
        return (max(changes) - t_last) / pty.rate * 1000
    finally:
        if child.proc.poll() is None:
            child.proc.kill()
        os.close(child.master)
        pty.closed = True
        thread.join(2)
        pty.close()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("-n", type=int, default=10, help="runs per repeat rate (default 10)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="armctl-bench-") as state:
        print(f"{'auto-repeat':<30} {'release':>8} {'p50':>7} {'p99':>7} {'max':>7}  {'stop after release (p50)':>24}")
        for name, period in RATES:
            ms = np.array([one_run(period, state) for _ in range(args.n)])
            rel = release_time([period], None) * 1000
            p50, p99, mx = np.percentile(ms, 50), np.percentile(ms, 99), ms.max()
            print(f"{name:<30} {rel:6.0f}ms {p50:5.0f}ms {p99:5.0f}ms {mx:5.0f}ms  {p50 - rel:22.0f}ms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
