"""``armctl ik --targets FILE`` against the solve alone, on the same rows, in the same run.

Two files on seed-3link, written once to a temporary folder:

  reachable   tool points of random poses inside the joint limits ('%.6f,%.6f' lines)
  blocked     the same, with 31% of the rows replaced by targets inside the reach that the joint
              limits block (behind the shoulder: found by solving a pool of candidates)

For each file and output (CSV, --json), each repeat times, back to back:

  solve       ``solve_batch`` on the file's rows in the CLI's chunks (32768 rows), in this process
  cli         ``python -m armctl ik --targets FILE [--json] > /dev/null`` in a subprocess: start-up,
              reading, checking, solving, formatting and writing

and prints p50/p99/max of each, of the ratio cli/solve (goal: <= 2), and the CLI's peak RSS.
Both files are a million rows by default: on a small file the CLI's start-up (0.2 s) would swamp the ratio.

  python bench/targets.py                       # 1,000,000 rows in each file
  python bench/targets.py --rows 100000 --blocked-rows 100000 --repeats 3
  python bench/targets.py --peer /path/to/other/checkout   # also time another armctl (e.g. before)
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

from armctl.ik import solve_batch  # noqa: E402
from armctl.model.arm import load_arm  # noqa: E402
from armctl.model.kinematics import fk  # noqa: E402

CHUNK = 1 << 15


# Peak RSS of the command itself, by GNU time (a fork's own maximum would include this process's).
TIME = ["/usr/bin/time", "-f", "%M"] if Path("/usr/bin/time").exists() else []


def _peak_rss_kib(proc) -> float:
    err = proc.stderr.read().decode(errors="replace").strip().splitlines() if proc.stderr else []
    try:
        return float(err[-1]) if TIME and err else float("nan")
    except ValueError:
        return float("nan")


def make_files(folder: Path, rows: int, blocked_rows: int, seed: int = 1) -> dict[str, Path]:
    arm = load_arm("seed-3link")
    rng = np.random.default_rng(seed)
    q = rng.uniform(arm.q_min, arm.q_max, size=(max(rows, blocked_rows), arm.n))
    points = fk(arm.links_m, q)
    files = {"reachable": folder / "reachable.csv", "blocked": folder / "blocked.csv"}
    np.savetxt(files["reachable"], points[:rows], fmt="%.6f", delimiter=",")
    # Behind the shoulder (x < 0), inside the reach: many of these the joint limits block.
    cand = np.column_stack([rng.uniform(-0.85, 0.0, 400), rng.uniform(-0.85, 0.85, 400)])
    cand = cand[np.hypot(*cand.T) < 0.88]
    res = solve_batch(arm, cand)
    blocked = cand[(~res.ok) & np.array(["joint limits" in (r or "") for r in res.reasons])]
    mixed = points[:blocked_rows].copy()
    k = round(0.31 * blocked_rows)
    mixed[rng.choice(blocked_rows, k, replace=False)] = blocked[rng.integers(0, len(blocked), k)]
    np.savetxt(files["blocked"], mixed, fmt="%.6f", delimiter=",")
    return files


def time_solve(path: Path) -> float:
    arm = load_arm("seed-3link")
    t = np.loadtxt(path, delimiter=",", ndmin=2)
    t0 = time.perf_counter()
    for i in range(0, len(t), CHUNK):
        solve_batch(arm, t[i : i + CHUNK])
    return time.perf_counter() - t0


def time_cli(root: Path, path: Path, json_out: bool) -> tuple[float, float]:
    """Wall time (s) and peak RSS (MiB) of one CLI run."""
    cmd = [sys.executable, "-m", "armctl", "ik", "--targets", str(path)] + (["--json"] if json_out else [])
    env = dict(os.environ, PYTHONPATH=str(root))
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # as installed: bytecode cached after the first run
    t0 = time.perf_counter()
    proc = subprocess.Popen([*TIME, *cmd], cwd=root, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    rss_kib = _peak_rss_kib(proc)
    wall = time.perf_counter() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode not in (0, 3):
        raise SystemExit(f"{' '.join(cmd)} exited {proc.returncode}")
    return wall, rss_kib / 1024


def stats(values) -> str:
    v = np.asarray(values)
    return f"p50 {np.percentile(v, 50):7.3f}  p99 {np.percentile(v, 99):7.3f}  max {v.max():7.3f}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=1_000_000, help="rows of the reachable file")
    ap.add_argument("--blocked-rows", type=int, default=1_000_000, help="rows of the file with 31%% blocked")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--peer", type=Path, help="another armctl checkout to time the same way (e.g. before)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        files = make_files(Path(tmp), args.rows, args.blocked_rows)
        print(f"ik --targets on seed-3link, {args.repeats} repeats; times in s, ratio = cli / solve alone")
        for name, path in files.items():
            rows = sum(1 for _ in open(path))
            for json_out in (False, True):
                runs = {"solve": [], "cli": [], "ratio": [], "rss": []}
                peer = {"cli": [], "ratio": [], "rss": []}
                for _ in range(args.repeats):
                    s = time_solve(path)
                    c, rss = time_cli(ROOT, path, json_out)
                    runs["solve"].append(s)
                    runs["cli"].append(c)
                    runs["ratio"].append(c / s)
                    runs["rss"].append(rss)
                    if args.peer:
                        pc, prss = time_cli(args.peer, path, json_out)
                        peer["cli"].append(pc)
                        peer["ratio"].append(pc / s)
                        peer["rss"].append(prss)
                label = f"{name} ({rows} rows){' --json' if json_out else ''}"
                print(f"\n{label}")
                print(f"  solve alone   {stats(runs['solve'])}   ({1e6 * np.median(runs['solve']) / rows:.2f} us/row)")
                print(f"  armctl ik     {stats(runs['cli'])}   ({1e6 * np.median(runs['cli']) / rows:.2f} us/row)")
                print(f"  ratio         {stats(runs['ratio'])}   (goal <= 2)")
                print(f"  peak RSS MiB  {stats(runs['rss'])}")
                if args.peer:
                    print(f"  peer ik       {stats(peer['cli'])}   ({1e6 * np.median(peer['cli']) / rows:.2f} us/row)")
                    print(f"  peer ratio    {stats(peer['ratio'])}")
                    print(f"  peer RSS MiB  {stats(peer['rss'])}")


if __name__ == "__main__":
    main()
