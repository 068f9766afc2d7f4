"""Start-up of the Firmata backend on the virtual Uno running stock StandardFirmata (reset on open, like a
real Uno), against pymata4 as shipped (it sleeps ``arduino_wait`` = 4 s after opening), in the same run,
interleaved; our firmware's start-up beside them. Each run starts a fresh virtual Uno and times
``armctl.connect(...)`` until it returns (the board answered, the pins are mapped). Prints p50/p99/max and
the ratio of p50s to pymata4's.

Needs the virtual Uno (make -C tools) and StandardFirmata (tools/fetch_firmata.sh, or
ARMCTL_FIRMATA_CACHE pointing at the folder with StandardFirmata.cpp.hex).

  python bench/firmata_start.py          # 5 runs each
  python bench/firmata_start.py -n 10
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tools"))

import armctl  # noqa: E402
from armctl.bus.firmata import FirmataBackend  # noqa: E402


class Pymata4AsShipped(FirmataBackend):
    """The Firmata backend with pymata4's own start-up: a fixed 4 s sleep after opening the port."""

    def open(self):
        from pymata4 import pymata4

        self._factory = pymata4.Pymata4
        return super().open()


def time_connect(hex_path, backend) -> float:
    from virtual_uno import VirtualUno

    with tempfile.TemporaryDirectory(prefix="armctl-bench-") as state:
        os.environ["ARMCTL_STATE_DIR"] = state
        with VirtualUno(hex_path, reset_on_open=True) as uno:
            time.sleep(0.2)
            t0 = time.perf_counter()
            with armctl.connect("seed-3link", uno.pty, backend):
                took = time.perf_counter() - t0
    return took


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("-n", type=int, default=5, help="runs each (default 5)")
    args = ap.parse_args()
    from virtual_uno import FIRMWARE_HEX, build_firmware, build_tools, fetch_firmata

    ok, why = build_tools()
    if not ok:
        raise SystemExit(f"the virtual Uno does not build: {why}")
    firmata, why = fetch_firmata()
    if firmata is None:
        raise SystemExit(why)
    ours_ok, _ = build_firmware()
    cases = [
        ("StandardFirmata, pymata4 as shipped", firmata, Pymata4AsShipped),
        ("StandardFirmata, armctl (waits for the answer)", firmata, "firmata"),
    ]
    if ours_ok:
        cases.append(("our firmware, armctl backend", FIRMWARE_HEX, "armctl"))
    times: dict[str, list[float]] = {name: [] for name, _, _ in cases}
    for _ in range(args.n):
        for name, hex_path, backend in cases:  # interleaved: load on the machine hits every case alike
            times[name].append(time_connect(hex_path, backend))
    base = np.percentile(times[cases[0][0]], 50)
    print(f"{'start-up (connect until ready)':<48} {'p50':>7} {'p99':>7} {'max':>7}  {'p50 / pymata4':>13}")
    for name, _, _ in cases:
        t = np.array(times[name])
        p50 = np.percentile(t, 50)
        print(f"{name:<48} {p50:6.2f}s {np.percentile(t, 99):6.2f}s {t.max():6.2f}s  {p50 / base:13.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
