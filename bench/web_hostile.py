"""The web server under hostile requests: heartbeats and idle event streams, against the same server at rest.

    python bench/web_hostile.py          # 3 rounds of hostile previews
    python bench/web_hostile.py -n 10

A server drives the simulated arm (in this process, real time) while a page holds control and sends a heartbeat
every 20 ms. Two phases, measured in the same run: (a) at rest; (b) while a line runs, each hostile program of
tests/web/test_web_hostile.py (alias bomb, merge-key bomb, nesting 5000 deep, repeat 10^9) is sent to the
preview, back to back, until the line ends. Printed: heartbeat latency p50/p99/max of each phase and their
ratio, each hostile preview's answer time, and where the line ended. Then 200 read-only event streams are
opened on the arm at rest: the server's CPU share over 5 s (the goal: < 5% of a core), against one stream.
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "web"))

from test_web_hostile import HOSTILE_PROGRAMS  # noqa: E402
from web_helpers import call, served  # noqa: E402


def _beats(srv, session, stop: threading.Event, out: list[float]) -> None:
    h = {"X-Armctl-Session": session}
    while not stop.is_set():
        t0 = time.perf_counter()
        call(srv, "POST", "/api/heartbeat", headers=h)
        out.append(time.perf_counter() - t0)
        time.sleep(0.02)


def _stats(xs: list[float]) -> str:
    a = np.array(xs) * 1000
    return (
        f"p50 {np.percentile(a, 50):6.1f} ms  p99 {np.percentile(a, 99):6.1f} ms  max {a.max():6.1f} ms  (n={len(a)})"
    )


def _cpu_s() -> float:
    with open(f"/proc/{os.getpid()}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _streams_share(srv, n: int, seconds: float) -> float:
    import socket

    socks = []
    try:
        for _ in range(n):
            s = socket.create_connection(("127.0.0.1", srv.server_address[1]), timeout=10)
            s.sendall(b"GET /api/events HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            socks.append(s)
        for s in socks:
            s.recv(4096)
        time.sleep(1.0)
        c0, t0 = _cpu_s(), time.monotonic()
        time.sleep(seconds)
        return (_cpu_s() - c0) / (time.monotonic() - t0)
    finally:
        for s in socks:
            s.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-n", type=int, default=3, help="rounds of the hostile previews at least (default 3)")
    args = ap.parse_args()
    with served(rate=1, heartbeat_timeout_s=0.5) as srv:
        session = call(srv, "POST", "/api/session")[1]["session"]
        h = {"X-Armctl-Session": session}
        rest: list[float] = []
        stop = threading.Event()
        t = threading.Thread(target=_beats, args=(srv, session, stop, rest), daemon=True)
        t.start()
        time.sleep(3.0)
        stop.set()
        t.join()

        hostile: list[float] = []
        answers: dict[str, list[float]] = {k: [] for k in HOSTILE_PROGRAMS}
        stop = threading.Event()
        t = threading.Thread(target=_beats, args=(srv, session, stop, hostile), daemon=True)
        t.start()
        status, reply = call(srv, "POST", "/api/home", {}, headers=h)  # the line below is 1.4 s from home
        while call(srv, "GET", "/api/state")[1]["moving"]:
            time.sleep(0.05)
        status, reply = call(srv, "POST", "/api/move", {"x_mm": 450, "y_mm": 150, "mode": "line"}, headers=h)
        assert status == 200, reply
        print(f"the line: {reply['duration_s']:.2f} s planned")
        rounds = 0
        while rounds < args.n or call(srv, "GET", "/api/state")[1]["moving"]:  # hostile previews all along the line
            for name, text in HOSTILE_PROGRAMS.items():
                t0 = time.perf_counter()
                status, _ = call(srv, "POST", "/api/program/preview", {"text": text, "name": "x.yaml"}, headers=h)
                answers[name].append(time.perf_counter() - t0)
                assert status == 422
            rounds += 1
        stop.set()
        t.join()
        state = call(srv, "GET", "/api/state")[1]
        print("heartbeats at rest:                 " + _stats(rest))
        print("heartbeats during hostile previews: " + _stats(hostile))
        ratio = np.percentile(hostile, 99) / np.percentile(rest, 99)
        print(f"  p99 ratio hostile / rest: {ratio:.2f}x")
        for name, xs in answers.items():
            print(f"  preview refused ({name}): " + _stats(xs))
        tool = state["tool_mm"]
        print(f"  the line ended at ({tool[0]:.1f}, {tool[1]:.1f}) mm (planned 450, 150); {rounds} rounds of previews")

        if sys.platform.startswith("linux"):
            one = _streams_share(srv, 1, 5.0)
            many = _streams_share(srv, 200, 5.0)
            print(f"event streams at rest: 1 stream {100 * one:.1f}% of a core, 200 streams {100 * many:.1f}%")


if __name__ == "__main__":
    main()
