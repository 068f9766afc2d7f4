"""``armctl plan --json`` and ``--csv -`` on long programs, against planning alone, in the same run.

A pick cycle (joint move, two lines, gripper, wait: 6 moves) repeated R times on seed-3link. For
each R: ``plan_program`` alone in this process (plan), then ``python -m armctl plan P --json`` and
``--csv -`` to /dev/null in subprocesses (start-up, YAML, planning, output): p50/p99/max wall time,
us per move, the ratio to planning alone, and the CLI's peak RSS (MiB) and RSS per move (KiB).

  python bench/plan_output.py                    # R = 1000 and 4000, 3 repeats
  python bench/plan_output.py --reps 1000 16666 --repeats 1   # up to 99,996 moves
  python bench/plan_output.py --peer /path/to/other/checkout  # also another armctl (e.g. before)
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from armctl import limits  # noqa: E402
from armctl.model.arm import load_arm  # noqa: E402
from armctl.program import load_program, plan_program  # noqa: E402

limits.set_limit("moves", 1_000_000)  # long programs on purpose (README "Limits")
limits.set_limit("segments", 100_000_000)

PROGRAM = """arm: seed-3link
settings: {{speed_mm_s: 200, accel_mm_s2: 1000, segment_mm: 5, joint_speed_pct: 80}}
poses:
  part: {{xy_mm: [520, -250], phi_deg: -90}}
steps:
  - repeat: {reps}
    steps:
      - {{joint: part, offset_mm: [0, 60]}}
      - {{line: part, speed_mm_s: 100}}
      - gripper: close
      - wait_s: 0.1
      - {{line: part, offset_mm: [0, 60]}}
      - gripper: open
"""


# Peak RSS of the command itself, by GNU time (a fork's own maximum would include this process's).
TIME = ["/usr/bin/time", "-f", "%M"] if Path("/usr/bin/time").exists() else []


def _peak_rss_kib(proc) -> float:
    err = proc.stderr.read().decode(errors="replace").strip().splitlines() if proc.stderr else []
    try:
        return float(err[-1]) if TIME and err else float("nan")
    except ValueError:
        return float("nan")


def run_cli(root: Path, argv: list[str]) -> tuple[float, float]:
    # long programs on purpose: above armctl's default move and segment limits (README "Limits")
    env = dict(os.environ, PYTHONPATH=str(root), ARMCTL_LIMITS="moves=1000000,segments=100000000")
    t0 = time.perf_counter()
    proc = subprocess.Popen(
        [*TIME, sys.executable, "-m", "armctl", *argv],
        cwd=root,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    _, status, usage = os.wait4(proc.pid, 0)
    rss_kib = _peak_rss_kib(proc)
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"armctl {' '.join(argv)} failed")
    return time.perf_counter() - t0, rss_kib / 1024


def line(label: str, v, moves: int, base=None) -> str:
    v = np.asarray(v)
    s = f"  {label:<22} p50 {np.median(v):7.2f}  p99 {np.percentile(v, 99):7.2f}  max {v.max():7.2f} s"
    s += f"  {1e6 * np.median(v) / moves:6.0f} us/move"
    if base is not None:
        s += f"  ratio {np.median(v) / np.median(base):5.2f}"
    return s


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--reps", type=int, nargs="+", default=[1000, 4000], help="repeats of the 6-move cycle")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--peer", type=Path)
    args = ap.parse_args()
    roots = [("", ROOT)] + ([("peer ", args.peer)] if args.peer else [])
    with tempfile.TemporaryDirectory() as tmp:
        for reps in args.reps:
            path = Path(tmp) / f"p{reps}.yaml"
            path.write_text(PROGRAM.format(reps=reps))
            plan_t, res = [], {}
            samples = moves = 0
            for _ in range(args.repeats):
                t0 = time.perf_counter()
                plan = plan_program(load_program(path), load_arm("seed-3link"))
                plan.summary()
                plan_t.append(time.perf_counter() - t0)
                samples, moves = len(plan.trajectory), len(plan.moves)
                del plan
                for prefix, root in roots:
                    for out in (["--json"], ["--csv", "-"]):
                        t, rss = run_cli(root, ["plan", str(path), *out])
                        res.setdefault(prefix + "plan " + out[0], []).append((t, rss))
            print(f"\n{moves} moves, {samples} samples ({reps} repeats of the cycle)")
            print(line("plan alone", plan_t, moves))
            for label, runs in res.items():
                ts = [t for t, _ in runs]
                rss = np.median([m for _, m in runs])
                print(line(label, ts, moves, plan_t) + f"  RSS {rss:6.0f} MiB ({1024 * rss / moves:4.1f} KiB/move)")


if __name__ == "__main__":
    main()
