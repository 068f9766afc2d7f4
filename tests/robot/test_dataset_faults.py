"""Datasets under faults (issue 34): a recording session killed at any instant, a full disk, a file size limit, a
read-only folder, a corrupt tasks.parquet.

- 20 kills of a recording session that appends to a dataset of 2 episodes: 14 injected before a file step
  (a write, rename, link, fsync, unlink, mkdir, open, the directory exchange) spread over the whole session
  (seeded), 6 from outside at random instants (SIGKILL). Each leaves a whole dataset (``check_whole``) that
  ``lerobot-doctor check --ci`` passes, holding every episode whose save returned (the child says which) and
  at most the one being saved, and that the next session extends with no repeated episode index;
- a full disk (a tmpfs of a few hundred kB, as root) and ``RLIMIT_FSIZE``: one line naming the file, exit 5,
  every episode saved before the fault kept;
- a read-only folder (a read-only tmpfs) and a corrupt ``meta/tasks.parquet`` on append: one line, nothing
  written.
"""

from __future__ import annotations

import os
import random
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("pyarrow")
pytest.importorskip("av")

from dataset_faults import FRAMES, check_whole, record  # noqa: E402

HERE = Path(__file__).parent
CHILD = [sys.executable, str(HERE / "dataset_faults.py")]
ENV = {**os.environ, "PYTHONPATH": str(HERE.parent.parent)}
SEED = 34


def _doctor(root) -> None:
    from test_dataset import doctor

    doctor(root)


@pytest.fixture(scope="module")
def base(tmp_path_factory):
    """A dataset of 2 episodes with a camera (written by an earlier session)."""
    root = tmp_path_factory.mktemp("base") / "ds"
    record(root, 2, camera=True)
    return root


def _child(root, kill_at: int, episodes: int, *, forever=False):
    args = [*CHILD, str(root), str(kill_at), str(episodes), "1", "1" if forever else "0"]
    return subprocess.Popen(args, env=ENV, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _after_kill(root, saved_at_least: int) -> None:
    """The dataset a kill left: whole, passes lerobot-doctor, holds what was saved; the next session extends it."""
    info = check_whole(root)
    assert info["total_episodes"] >= saved_at_least, (info["total_episodes"], saved_at_least)
    _doctor(root)
    w = record(root, 1, camera=True, task="after the kill")
    info2 = check_whole(root)
    assert info2["total_episodes"] == info["total_episodes"] + 1 == w.episodes
    assert info2["total_frames"] == info["total_frames"] + FRAMES


def test_kills_at_file_steps_and_from_outside_leave_whole_datasets(base, tmp_path):
    steps = int(_child_count(base, tmp_path))
    rng = random.Random(SEED)
    # 14 injected kills spread over the session's steps (one in each 14th of them), 6 from outside
    picks = sorted({1 + (i * steps) // 14 + rng.randrange(max(1, steps // 14)) for i in range(14)})
    failures = []
    for n, kill_at in enumerate(picks):
        root = tmp_path / f"inj{n}" / "ds"
        shutil.copytree(base, root)
        p = _child(root, kill_at, 3)
        out, err = p.communicate(timeout=60)
        assert p.returncode == -signal.SIGKILL, (kill_at, p.returncode, err[-2000:])
        try:
            _after_kill(root, 2 + out.split().count("saved"))
        except AssertionError as exc:
            failures.append(f"step {kill_at}/{steps}: {str(exc)[:300]}")
    for n in range(6):
        root = tmp_path / f"ext{n}" / "ds"
        shutil.copytree(base, root)
        p = _child(root, 0, 0, forever=True)
        assert p.stdout.readline().strip() == "ready"
        time.sleep(rng.uniform(0.05, 1.2))
        p.send_signal(signal.SIGKILL)
        out, _ = p.communicate(timeout=30)
        try:
            _after_kill(root, 2 + out.split().count("saved"))
        except AssertionError as exc:
            failures.append(f"outside kill {n}: {str(exc)[:300]}")
    kills = len(picks) + 6
    print(f"{kills - len(failures)} of {kills} kills left a whole dataset")
    assert not failures, "\n".join(failures)


def _child_count(base, tmp_path) -> str:
    root = tmp_path / "count" / "ds"
    shutil.copytree(base, root)
    p = _child(root, 0, 3)
    out, err = p.communicate(timeout=60)
    assert p.returncode == 0, err[-2000:]
    return out.split()[-1]
