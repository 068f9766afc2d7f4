"""How much of the link status polling takes while a program streams, and what it costs the host.

    python bench/link.py [--program examples/pick_and_place.yaml] [--targets sim,uno]

The example program is run through the Robot, twice on each board, in the same run:
- ``timed``: today's flow control: while the board's queue is full the host asks for the status when a
  slot is due to free (from ``left`` and the lengths of the queued moves), and when draining, when the
  queue is due to be done;
- ``back-to-back``: the previous behaviour, a new status request as soon as the last one is answered.
Boards: ``sim`` (the simulated arm served on a pty at 115200 baud, in another process, real time) and
``uno`` (our firmware on the virtual Uno, paced at real time; needs `make -C firmware` and `make -C tools`).
Printed per run: board-to-host and host-to-board bytes/s as a share of the link (115200 baud, 10 bits a
byte), status requests per second, host CPU while streaming (this process, planning excluded) as a share
of a core, and the board's
``empty`` counter (frames it had nothing to play: underruns). The ratio line compares the two.
"""

from __future__ import annotations

import argparse
import ast
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))

import armctl  # noqa: E402
from armctl.bus.armproto.backend import ArmProtocolBackend  # noqa: E402
from armctl.model.arm import load_arm  # noqa: E402
from armctl.program import load_program, plan_program  # noqa: E402

LINK_BPS = 115200 / 10


class BackToBack(ArmProtocolBackend):
    """The polling armctl did before: a status request whenever none is pending."""

    def _poll_when_due(self, now: float) -> None:
        if "Q" not in self._pending_imm:
            self._immediate("Q")


def _traffic(log: Path) -> tuple[int, int, int, float]:
    """(bytes host->board, bytes board->host, status requests, seconds) of a wire log."""
    out = inn = polls = 0
    t_first = t_last = None
    for line in log.read_text().splitlines():
        parts = line.split(None, 2)
        if len(parts) != 3 or parts[1] not in "<>":
            continue
        data = ast.literal_eval(parts[2])
        t = float(parts[0])
        t_first = t if t_first is None else t_first
        t_last = t
        if parts[1] == ">":
            out += len(data)
            polls += data.count(b" Q *")
        else:
            inn += len(data)
    return out, inn, polls, (t_last or 0) - (t_first or 0)


def run(port: str, program: Path, backend, state: Path) -> dict:
    log = state / "wire.log"
    os.environ["ARMCTL_STATE_DIR"] = str(state / "state")
    plan = plan_program(load_program(program), load_arm("seed-3link"))  # planning is not streaming
    with armctl.connect("seed-3link", port, backend=backend, wire_log=log, watchdog_s=1.0) as robot:
        cpu0, t0 = time.process_time(), time.monotonic()
        robot.run(plan)
        cpu, wall = time.process_time() - cpu0, time.monotonic() - t0
        empty = robot.board_status().counters.get("empty", 0)
    out, inn, polls, seconds = _traffic(log)
    return {
        "h2b": out / seconds / LINK_BPS,
        "b2h": inn / seconds / LINK_BPS,
        "polls_s": polls / seconds,
        "cpu": cpu / wall,
        "empty": empty,
        "seconds": seconds,
    }


def _sim_port(stack) -> str:
    proc = subprocess.Popen(
        [sys.executable, "-m", "armctl.bus.sim_pty", "armsim://?rate=1&baud=115200"],
        stdout=subprocess.PIPE,
        text=True,
        cwd=ROOT,
    )
    stack.append(proc)
    return proc.stdout.readline().strip()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--program", default=str(ROOT / "examples" / "pick_and_place.yaml"))
    ap.add_argument("--targets", default="sim,uno")
    args = ap.parse_args()
    program = Path(args.program)
    print(
        f"{'board':<5} {'polling':<13} {'board->host':>12} {'host->board':>12} {'status/s':>9} {'host CPU':>9} "
        f"{'underruns':>9}"
    )
    for target in args.targets.split(","):
        rows = {}
        for mode, backend in (("timed", "armctl"), ("back-to-back", BackToBack)):
            stack: list = []
            with tempfile.TemporaryDirectory() as tmp:
                try:
                    if target == "sim":
                        port = _sim_port(stack)
                    else:
                        from virtual_uno import FIRMWARE_HEX, VirtualUno

                        uno = VirtualUno(FIRMWARE_HEX, reset_on_open=True).start()
                        stack.append(uno)
                        port = uno.pty
                    r = rows[mode] = run(port, program, backend, Path(tmp))
                finally:
                    for p in stack:
                        (p.terminate if isinstance(p, subprocess.Popen) else p.stop)()
            print(
                f"{target:<5} {mode:<13} {r['b2h']:>11.1%} {r['h2b']:>12.1%} {r['polls_s']:>9.1f} {r['cpu']:>9.1%} "
                f"{r['empty']:>9}"
            )
        a, b = rows["timed"], rows["back-to-back"]
        print(
            f"{target:<5} ratio back-to-back/timed: board->host {b['b2h'] / a['b2h']:.1f}x, "
            f"status requests {b['polls_s'] / max(a['polls_s'], 1e-9):.1f}x, host CPU {b['cpu'] / a['cpu']:.1f}x"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
