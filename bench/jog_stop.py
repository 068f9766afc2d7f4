"""How soon the keyboard pendant (``armctl jog`` without a target) and the gamepad (``armctl jog --gamepad``)
stop the arm when a held key, or a stick, is let go.

A terminal sends no key-up: the pendant knows a key is up only when its auto-repeats stop, so the floor is
its release time (twice the repeat interval, at least 50 ms). Each run holds Right (10 mm steps, 50 mm/s)
on a pty for 1.2 s at the given repeat rate against the simulated arm served on a pty by this process,
then measures from the last repeat written to the last servo pulse change on the simulated board. Prints
p50/p99/max per repeat rate, the release time, and what the stop adds after it (Robot.stop to the board,
the 20 ms frame it is in).

The gamepad says when a stick is let go (SDL's axis event): each run pushes the left stick fully right (50 mm/s)
for 1.2 s on SDL's virtual joystick inside the armctl process (the ``ARMCTL_GAMEPAD_SCRIPT`` hook, which logs
when each event was played), lets it go, and measures from then to the last servo pulse change on the simulated
board; printed with its p50 as a ratio of each keyboard row's (needs ``pip install 'armctl[gamepad]'``).

  python bench/jog_stop.py            # 10 runs per repeat rate, and 10 of the gamepad
  python bench/jog_stop.py -n 30
  python bench/jog_stop.py --only gamepad
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
    argv = [sys.executable, "-m", "armctl", "--port", pty.path, "--assume-pose", "home", "jog", "--step", "10"]
    argv += ["--speed", "50"]
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


GAMEPAD_SCRIPT = "0.5 leftx 1.0\n1.7 leftx 0\n2.5 start down\n"


def one_gamepad_run(root: str) -> float:
    """One push of the gamepad's stick and its release: ms from the release to the last pulse change."""
    state = tempfile.mkdtemp(dir=root)
    script, played = Path(state, "pad.txt"), Path(state, "played.txt")
    script.write_text(GAMEPAD_SCRIPT)
    pty = PtySim("armsim://seed-3link?seed=1")
    thread = threading.Thread(target=pty.serve, daemon=True)
    thread.start()
    env = dict(os.environ, PYTHONPATH=str(ROOT), ARMCTL_STATE_DIR=state, ARMCTL_GAMEPAD_SCRIPT=str(script))
    env["ARMCTL_GAMEPAD_PLAYED"] = str(played)
    argv = [
        sys.executable,
        "-m",
        "armctl",
        "--port",
        pty.path,
        "--assume-pose",
        "home",
        "jog",
        "--gamepad",
        "--speed",
        "50",
    ]
    try:
        p = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=60)
        if p.returncode != 0:
            raise SystemExit(f"armctl jog --gamepad failed ({p.returncode}): {p.stderr.strip()}")
        t_rel = next(float(line.split()[0]) for line in played.read_text().splitlines() if "leftx 0\n" in line + "\n")
        t_sim = (t_rel - pty.t0) * pty.rate
        changes = [t for t, _, _ in pty.sim.pulses if t > t_sim - 1.0]
        if not changes:
            raise SystemExit("nothing moved with the gamepad")
        return (max(changes) - t_sim) / pty.rate * 1000
    finally:
        pty.closed = True
        thread.join(2)
        pty.close()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("-n", type=int, default=10, help="runs per repeat rate (default 10)")
    ap.add_argument("--only", choices=("keyboard", "gamepad"), help="measure one of them only")
    args = ap.parse_args()
    keyboard_p50 = []
    with tempfile.TemporaryDirectory(prefix="armctl-bench-") as state:
        print(f"{'auto-repeat':<30} {'release':>8} {'p50':>7} {'p99':>7} {'max':>7}  {'stop after release (p50)':>24}")
        for name, period in RATES if args.only != "gamepad" else []:
            ms = np.array([one_run(period, state) for _ in range(args.n)])
            rel = release_time([period], None) * 1000
            p50, p99, mx = np.percentile(ms, 50), np.percentile(ms, 99), ms.max()
            keyboard_p50.append((name.split(" (")[0], p50))
            print(f"{name:<30} {rel:6.0f}ms {p50:5.0f}ms {p99:5.0f}ms {mx:5.0f}ms  {p50 - rel:22.0f}ms")
        if args.only != "keyboard":
            ms = np.array([one_gamepad_run(state) for _ in range(args.n)])
            p50, p99, mx = np.percentile(ms, 50), np.percentile(ms, 99), ms.max()
            print(f"{'gamepad (stick let go)':<30} {'-':>8} {p50:5.0f}ms {p99:5.0f}ms {mx:5.0f}ms  {p50:22.0f}ms")
            if keyboard_p50:
                ratios = ", ".join(f"{p50 / kb:.2f} of the keyboard's at {rate}" for rate, kb in keyboard_p50)
                print(f"gamepad p50: {ratios}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
