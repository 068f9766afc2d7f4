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

import contextlib
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.helpers import require_module

require_module("pyarrow", "datasets are written as Parquet (armctl[dataset])")
require_module("av", "camera video is encoded with PyAV (armctl[dataset])")

from tests.robot.dataset_faults import CAMERA, FRAMES, NAMES, check_whole, frames, record  # noqa: E402 (after require_module)

HERE = Path(__file__).parent
CHILD = [sys.executable, str(HERE / "dataset_faults.py")]
ENV = {**os.environ, "PYTHONPATH": str(HERE.parent.parent)}
SEED = 34


def _doctor(root) -> None:
    from tests.robot.test_dataset import doctor

    doctor(root)


@pytest.fixture(scope="module")
def base(tmp_path_factory):
    """A dataset of 2 episodes with a camera (written by an earlier session)."""
    root = tmp_path_factory.mktemp("base") / "ds"
    record(root, 2, camera=True)
    return root


@pytest.fixture(scope="module")
def plain(tmp_path_factory):
    """A dataset of 2 episodes without camera, as ``armctl follow`` of an SO-101 records it."""
    root = tmp_path_factory.mktemp("plain") / "ds"
    record(root, 2, camera=False)
    return root


def _child(root, kill_at: int, episodes: int, *, forever=False, in_place=False):
    args = [*CHILD, str(root), str(kill_at), str(episodes), "1", "1" if forever else "0"]
    args += ["in-place"] if in_place else []
    return subprocess.Popen(args, env=ENV, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _after_kill(root, saved_at_least: int) -> None:
    """The dataset a kill left: whole, passes lerobot-doctor, holds what was saved; the next session extends it."""
    info = check_whole(root)
    assert info["total_episodes"] >= saved_at_least, (info["total_episodes"], saved_at_least)
    _doctor(root)
    w = record(root, 1, camera=True, task="after the kill")
    info2 = check_whole(root)
    assert info2["total_episodes"] == info["total_episodes"] + 1 == w.episodes
    assert [p.name for p in root.parent.iterdir()] == ["ds"]  # what the killed session left beside it: gone
    assert not list(root.glob(".armctl-*"))
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


def _child_count(base, tmp_path, in_place=False) -> str:
    root = tmp_path / ("count-in-place" if in_place else "count") / "ds"
    shutil.copytree(base, root)
    p = _child(root, 0, 3, in_place=in_place)
    out, err = p.communicate(timeout=60)
    assert p.returncode == 0, err[-2000:]
    return out.split()[-1]


def test_where_no_swap_is_possible_the_next_session_rolls_back_what_a_kill_left(base, tmp_path):
    """Files written in place (no renameat2, a folder above that is not writable): a kill between a data file and
    info.json leaves the data ahead; the next session drops it (info.json is the commit record) and appends."""
    steps = int(_child_count(base, tmp_path, in_place=True))
    ahead = 0
    for kill_at in range(steps // 12, steps, steps // 6)[:6]:
        root = tmp_path / f"in-place{kill_at}" / "ds"
        shutil.copytree(base, root)
        p = _child(root, kill_at, 3, in_place=True)
        out, err = p.communicate(timeout=60)
        assert p.returncode == -signal.SIGKILL, err[-2000:]
        try:
            check_whole(root)
        except AssertionError:
            ahead += 1  # what the next session must roll back
        info = json.loads((root / "meta/info.json").read_text())
        assert info["total_episodes"] >= 2 + out.split().count("saved")
        w = record(root, 1, camera=True, task="after the kill")
        assert check_whole(root)["total_episodes"] == info["total_episodes"] + 1 == w.episodes
        _doctor(root)
    assert ahead >= 2  # the kills did hit the window between the data and info.json


def test_a_dataset_folder_that_is_a_mount_point_under_a_read_only_folder_is_written_in_place(tmp_path):
    """No staging folder beside it (the folder above is read-only) and no swap of a mount point: saved in place
    (info.json last), the session's work inside the dataset folder, gone at the end."""
    with tmpfs(tmp_path / "up", "1m") as up:
        (up / "ds").mkdir()
        subprocess.run(["mount", "-o", "remount,ro", str(up)], check=True)
        with tmpfs(up / "ds", "4m") as root:
            w = record(root, 2, camera=True)
            assert not w._pub.swap and w._pub.scratch.parent == root.resolve()
            assert check_whole(root)["total_episodes"] == 2 and not list(root.glob(".armctl-*"))
            _doctor(root)


def test_a_dataset_left_one_episode_ahead_by_an_earlier_armctl_is_rolled_back_on_append(plain, tmp_path):
    """The issue's case: the data and episodes files one episode ahead of info.json (kill -9 in the 21 ms between
    them); appending repeated episode indexes. Now the next session drops the unsaved episode and appends."""
    root = tmp_path / "ds"
    shutil.copytree(plain, root)
    meta = {p: p.read_bytes() for p in (root / "meta").glob("*.*")}
    record(root, 1, camera=False, start=7)  # episode 2 written ...
    for p, data in meta.items():  # ... but info.json, stats.json, tasks.parquet as before it
        p.write_bytes(data)
    with pytest.raises(AssertionError):
        check_whole(root)
    record(root, 1, camera=False, start=9, task="after the kill")
    info = check_whole(root)
    assert info["total_episodes"] == 3 and info["total_tasks"] == 2
    _doctor(root)


# --- a full disk, a file size limit, a read-only folder, a corrupt tasks table ------------------------------------


@contextlib.contextmanager
def tmpfs(path: Path, size: str):
    """A tmpfs of ``size`` mounted at ``path`` (root only: a full disk or a read-only folder that root too meets)."""
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    path.mkdir(parents=True, exist_ok=True)
    subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path)], check=True)
    try:
        yield path
    finally:
        subprocess.run(["umount", "-l", str(path)], check=False)


def _fill(folder: Path) -> None:
    """Fill the file system of ``folder`` to the last byte."""
    fd = os.open(folder / "filler", os.O_WRONLY | os.O_CREAT)
    try:
        while os.write(fd, b"\0" * 4096):
            pass
    except OSError:
        pass
    finally:
        os.close(fd)


def _follow(root, tmp_path, *extra, preexec=None, duration="4"):
    """``armctl follow`` of a simulated SO-101 leader into dataset ``root`` (episodes of 0.4 s), as a user runs it."""
    argv = [sys.executable, "-m", "armctl", "--arm", "so101", "follow", "--leader", "feetechsim://"]
    argv += ["--duration", duration, "--episode-s", "0.4", "--record-dataset", str(root), "--task", "wave", *extra]
    env = {**ENV, "ARMCTL_STATE_DIR": str(tmp_path / "state")}
    return subprocess.run(argv, env=env, capture_output=True, text=True, timeout=60, preexec_fn=preexec)


def _one_line(proc, code: int, *words) -> str:
    err = proc.stderr
    assert proc.returncode == code, (proc.returncode, err[-3000:])
    assert err.count("\n") == 1 and "Traceback" not in err, err
    for w in words:
        assert w in err, (w, err)
    return err


def _kept(err: str) -> int:
    m = re.search(r"keeps its (\d+) episodes? \(0\.\.(\d+)\); episode (\d+)", err)
    assert m and int(m.group(1)) == int(m.group(2)) + 1 == int(m.group(3)), err
    return int(m.group(1))


def test_a_full_disk_keeps_every_episode_saved_before_it(tmp_path):
    from armctl.errors import StorageError

    with tmpfs(tmp_path / "disk", "320k") as disk:
        root = disk / "ds"
        saved = 0
        with pytest.raises(StorageError) as info:
            from armctl import DatasetWriter

            with DatasetWriter(root, robot_type="so_follower", fps=30, state_names=NAMES, cameras=CAMERA) as w:
                for k in range(500):
                    w.start_episode("pick the cube")
                    state, action, images = frames(k)
                    for i in range(len(state)):
                        w.add_frame(state[i], action[i], {"front": images[i]})
                    w.save_episode()
                    saved += 1
        err = str(info.value)
        assert info.value.exit_code == 5 and "\n" not in err
        assert err.startswith(f"dataset {root}: the disk is full (writing ") and saved >= 2, err
        assert _kept(err) == saved
        assert check_whole(root)["total_episodes"] == saved
        assert sorted(p.name for p in disk.iterdir()) == ["ds"]  # the session's work and staging folders gone
        _doctor(root)


def test_a_full_disk_simulated_without_root_keeps_the_episodes_saved(tmp_path, monkeypatch):
    """The same where no tmpfs can be mounted: the third save's data file meets ENOSPC."""
    import errno

    import pyarrow.parquet as pq

    from armctl import DatasetWriter
    from armctl.errors import StorageError

    write, calls = pq.write_table, []

    def full(table, where, **kw):
        calls.extend(["data"] if "/data/" in str(where) else [])
        if len(calls) == 3:  # the third save's data file
            raise OSError(errno.ENOSPC, "No space left on device")
        return write(table, where, **kw)

    monkeypatch.setattr(pq, "write_table", full)
    root = tmp_path / "ds"
    with pytest.raises(StorageError) as info:
        with DatasetWriter(root, robot_type="so_follower", fps=30, state_names=NAMES) as w:
            for k in range(5):
                w.start_episode("pick the cube")
                state, action, _ = frames(k)
                for i in range(len(state)):
                    w.add_frame(state[i], action[i])
                w.save_episode()
    assert str(info.value) == (
        f"dataset {root}: the disk is full (writing data/chunk-000/file-000.parquet); it keeps its 2 episodes "
        "(0..1); episode 2 was not saved"
    )
    monkeypatch.setattr(pq, "write_table", write)
    assert check_whole(root)["total_episodes"] == 2
    assert [p.name for p in root.parent.iterdir()] == ["ds"]


def test_a_full_disk_before_the_first_episode_is_one_line_and_leaves_no_folder(tmp_path):
    with tmpfs(tmp_path / "disk", "256k") as disk:
        _fill(disk)
        proc = _follow(disk / "ds", tmp_path, duration="1.5")
        _one_line(proc, 5, f"dataset {disk / 'ds'}: the disk is full", "no episode was saved")
        assert not (disk / "ds").exists() and sorted(p.name for p in disk.iterdir()) == ["filler"]


def test_a_file_size_limit_is_one_line_and_keeps_the_episodes_saved(tmp_path):
    import resource

    LIMIT = 35_800  # the episodes table of one session is 35.2 kB with one episode, about 0.3 kB more for each

    def limit():
        resource.setrlimit(resource.RLIMIT_FSIZE, (LIMIT, LIMIT))

    root = tmp_path / "ds"
    proc = _follow(root, tmp_path, preexec=limit, duration="8")
    err = _one_line(proc, 5, f"dataset {root}: the file size limit (ulimit -f) is reached (writing ")
    n = _kept(err)
    assert n >= 1 and check_whole(root)["total_episodes"] == n
    _doctor(root)


def _listing(root: Path) -> list:
    return sorted((str(p.relative_to(root)), p.stat().st_size, p.stat().st_mtime_ns) for p in root.rglob("*"))


def test_a_read_only_folder_is_one_line_and_nothing_moves(plain, tmp_path):
    with tmpfs(tmp_path / "ro", "4m") as ro:
        shutil.copytree(plain, ro / "ds")
        subprocess.run(["mount", "-o", "remount,ro", str(ro)], check=True)
        before = _listing(ro / "ds")
        proc = _follow(ro / "ds", tmp_path, duration="1")
        _one_line(proc, 5, f"dataset {ro / 'ds'}: the folder is read-only", "nothing was written")
        assert _listing(ro / "ds") == before
        # a new dataset in it too
        proc = _follow(ro / "new", tmp_path, duration="1")
        _one_line(proc, 5, f"dataset {ro / 'new'}: the folder is read-only")
    assert not (tmp_path / "state").exists() or not list((tmp_path / "state").glob("*sim*"))  # nothing moved


def test_a_corrupt_tasks_table_on_append_is_one_line_naming_it(plain, tmp_path):
    root = tmp_path / "ds"
    shutil.copytree(plain, root)
    tasks = root / "meta/tasks.parquet"
    tasks.write_bytes(b"PAR1" + os.urandom(200) + b"PAR1")
    before = _listing(root)
    proc = _follow(root, tmp_path, duration="1")
    _one_line(proc, 2, f"{tasks}: not a tasks table LeRobot wrote")
    assert _listing(root) == before
