"""Start-up of ``armctl`` commands against ``python -c "import numpy, yaml"``, in the same run.

Each command runs N times in a fresh subprocess (``python -m armctl ...`` from this checkout, with
bytecode cached as an install has it: one warm-up run first), interleaved with the baseline so
load on the machine hits both alike. Prints p50/p99/max wall time (ms) and the ratio of p50s to
the baseline (goal: <= 1.2 for ``ik`` and ``--help``), and the peak RSS (MiB).

  python bench/startup.py              # 30 runs each
  python bench/startup.py -n 10 --peer /path/to/other/checkout   # also the same commands there
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent

BASELINE = ("numpy+yaml baseline", ["-c", "import numpy, yaml"])
COMMANDS = [
    ("armctl --help", ["-m", "armctl", "--help"]),
    ("armctl ik 0.5 0.4", ["-m", "armctl", "ik", "0.5", "0.4"]),
    ("armctl fk 45 -90 -45", ["-m", "armctl", "fk", "45", "-90", "-45"]),
    ("armctl ik --help", ["-m", "armctl", "ik", "--help"]),
    ("armctl plan --help", ["-m", "armctl", "plan", "--help"]),
    ("armctl run --help", ["-m", "armctl", "run", "--help"]),
]


# Peak RSS of the command itself, by GNU time (a fork's own maximum would include this process's).
TIME = ["/usr/bin/time", "-f", "%M"] if Path("/usr/bin/time").exists() else []


def _peak_rss_kib(proc) -> float:
    err = proc.stderr.read().decode(errors="replace").strip().splitlines() if proc.stderr else []
    try:
        return float(err[-1]) if TIME and err else float("nan")
    except ValueError:
        return float("nan")


def run_once(root: Path, argv: list[str]) -> tuple[float, float]:
    env = dict(os.environ, PYTHONPATH=str(root))
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # an install has its bytecode; without it every run compiles
    t0 = time.perf_counter()
    proc = subprocess.Popen(
        [*TIME, sys.executable, *argv], cwd=root, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    _, status, usage = os.wait4(proc.pid, 0)
    rss_kib = _peak_rss_kib(proc)
    wall = time.perf_counter() - t0
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{argv} failed")
    return 1000 * wall, rss_kib / 1024


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("-n", type=int, default=30, help="runs of each command")
    ap.add_argument("--peer", type=Path, help="another armctl checkout, timed the same way (e.g. before)")
    args = ap.parse_args()
    roots = [("", ROOT)] + ([("peer ", args.peer)] if args.peer else [])
    cases = [(BASELINE[0], ROOT, BASELINE[1])]
    cases += [(prefix + name, root, argv) for prefix, root in roots for name, argv in COMMANDS]
    for _, root, argv in cases:
        run_once(root, argv)  # warm-up: bytecode written, files in the page cache
    times: dict[str, list] = {name: [] for name, _, _ in cases}
    rss: dict[str, list] = {name: [] for name, _, _ in cases}
    for _ in range(args.n):
        for name, root, argv in cases:
            t, m = run_once(root, argv)
            times[name].append(t)
            rss[name].append(m)
    base = np.median(times[BASELINE[0]])
    print(f"start-up, {args.n} runs each, ms (ratio: p50 / baseline p50; goal <= 1.2 for ik and --help)")
    for name, _, _ in cases:
        v = np.asarray(times[name])
        print(
            f"  {name:<32} p50 {np.median(v):6.1f}  p99 {np.percentile(v, 99):6.1f}  max {v.max():6.1f}"
            f"  ratio {np.median(v) / base:5.2f}  RSS {np.median(rss[name]):5.1f} MiB"
        )


if __name__ == "__main__":
    main()
