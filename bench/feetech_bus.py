"""Feetech bus round trip: one SYNC_WRITE of six goal positions + one SYNC_READ of six present positions
(what a backend does every 20 ms frame), at 1 000 000 baud on the simulated bus.

    python bench/feetech_bus.py [--frames 2000]

Three ways, measured in the same run:
1. armctl's FeetechBus through the ``feetechsim://`` URL handler (simulator in this process),
2. armctl's FeetechBus on a pty served by ``python -m armctl.bus.sim_pty`` (simulator in another process),
3. the vendor's SDK (scservo_sdk: GroupSyncWrite + GroupSyncRead) on the same kind of pty: the peer.
The floor is the bytes' time on the wire: 26 + 14 + 6 x 8 = 88 bytes x 10 bits at 1 Mbaud = 0.88 ms.
Prints p50/p99/max per frame and the ratios to the wire time and to the SDK.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time

import numpy as np

from armctl.bus.feetech.client import FeetechBus

IDS = [1, 2, 3, 4, 5, 6]
WIRE_MS = (26 + 14 + 6 * 8) * 10 / 1_000_000 * 1000


def _serve_pty(url: str):
    proc = subprocess.Popen([sys.executable, "-m", "armctl.bus.sim_pty", url], stdout=subprocess.PIPE, text=True)
    return proc, proc.stdout.readline().strip()


def _ours(port: str, frames: int) -> tuple[np.ndarray, int]:
    out = []
    with FeetechBus(port) as bus:
        bus.check_ids(IDS)
        for k in range(frames):
            t0 = time.perf_counter()
            bus.write_positions({i: 1000 + k % 100 for i in IDS})
            bus.read_positions(IDS)
            out.append(time.perf_counter() - t0)
        retries = bus.counters["retries"]
    return np.array(out) * 1000, retries


def _sdk(path: str, frames: int) -> tuple[np.ndarray | None, int]:
    try:
        import scservo_sdk as scs
    except ImportError:
        return None, 0
    port = scs.PortHandler(path)
    assert port.openPort()
    ph = scs.PacketHandler(0)
    writer = scs.GroupSyncWrite(port, ph, 42, 2)
    reader = scs.GroupSyncRead(port, ph, 56, 2)
    for i in IDS:
        writer.addParam(i, [0, 4])
        reader.addParam(i)
    out, failed = [], 0
    try:
        for k in range(frames):
            steps = 1000 + k % 100
            t0 = time.perf_counter()
            for i in IDS:
                writer.changeParam(i, [scs.SCS_LOBYTE(steps), scs.SCS_HIBYTE(steps)])
            writer.txPacket()
            result = reader.txRxPacket()
            out.append(time.perf_counter() - t0)
            failed += result != scs.COMM_SUCCESS  # the SDK's own ~35 ms timeout, on a loaded machine
    finally:
        port.closePort()
    return np.array(out) * 1000, failed


def _line(name: str, ms: np.ndarray, peer: np.ndarray | None) -> str:
    p50, p99, top = np.percentile(ms, 50), np.percentile(ms, 99), ms.max()
    vs = f", {p50 / np.percentile(peer, 50):.2f}x the SDK's p50" if peer is not None else ""
    return f"{name:34s} p50 {p50:6.3f} ms  p99 {p99:6.3f} ms  max {top:6.3f} ms  = {p50 / WIRE_MS:.2f}x wire time{vs}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--frames", type=int, default=2000)
    args = ap.parse_args()
    url_ms, url_retries = _ours("feetechsim://?ids=1-6", args.frames)
    procs = []
    try:
        proc, path = _serve_pty("feetechsim://?ids=1-6")
        procs.append(proc)
        pty_ms, pty_retries = _ours(path, args.frames)
        proc, path = _serve_pty("feetechsim://?ids=1-6")
        procs.append(proc)
        sdk_ms, sdk_failed = _sdk(path, args.frames)
    finally:
        for proc in procs:
            proc.terminate()
            proc.wait(5)
    print(f"sync write (6 goals) + sync read (6 positions), {args.frames} frames, 1 Mbaud; wire time {WIRE_MS:.2f} ms")
    print(_line("FeetechBus, feetechsim:// URL", url_ms, sdk_ms) + f"  ({url_retries} retries)")
    print(_line("FeetechBus, pty (sim_pty)", pty_ms, sdk_ms) + f"  ({pty_retries} retries)")
    if sdk_ms is None:
        print("vendor SDK: not installed (pip install feetech-servo-sdk)")
    else:
        print(_line("vendor SDK (scservo_sdk), pty", sdk_ms, None) + f"  ({sdk_failed} failed frames)")
        if sdk_failed:
            print(
                "  note: the SDK never drops stale input, so after a failed frame it reads the previous frame's "
                "answers from then on: its later times are not round trips (rerun on a quieter machine)"
            )


if __name__ == "__main__":
    main()
