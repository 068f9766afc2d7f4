"""What the load and temperature watch costs a frame: one SYNC_READ of six STS3215s taking Present_Position only
(56..57), and Present_Position through Present_Temperature (56..63, ``armctl.bus.feetech.watch``), at 1 000 000
baud on the simulated bus, in this process (``feetechsim://``) or on a pty (``python -m armctl.bus.sim_pty``).

    python bench/feetech_watch.py [--reads 500] [--pty]

The wire's share: 6 more bytes a servo's answer, 36 for six servos: 0.36 ms at 1 Mbaud. Prints the p50 per read
of each, three rounds.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time

from armctl.bus.feetech.client import FeetechBus
from armctl.bus.feetech.watch import WATCH_REGISTERS

IDS = [1, 2, 3, 4, 5, 6]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reads", type=int, default=500)
    ap.add_argument("--pty", action="store_true", help="the simulated bus on a pty, in another process")
    args = ap.parse_args()
    url, proc = "feetechsim://?ids=1-6", None
    if args.pty:
        proc = subprocess.Popen([sys.executable, "-m", "armctl.bus.sim_pty", url], stdout=subprocess.PIPE, text=True)
        url = proc.stdout.readline().strip()
    try:
        with FeetechBus(url) as bus:
            for names in (("present_position",), WATCH_REGISTERS) * 3:
                ts = []
                for _ in range(args.reads):
                    t = time.perf_counter()
                    _, missing, _ = bus.sync_read_once(names, IDS, timeout_s=0.02)
                    ts.append(time.perf_counter() - t)
                    assert not missing, missing
                print(f"{names[0]}..{names[-1]}: p50 {statistics.median(ts) * 1e3:.3f} ms per read")
    finally:
        if proc is not None:
            proc.terminate()
            proc.wait()


if __name__ == "__main__":
    main()
