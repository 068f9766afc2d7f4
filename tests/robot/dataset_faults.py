"""Helpers of test_dataset_faults: a recording session in a child process that can be killed at a chosen file
step (or from outside), and a check that a dataset is whole (what LeRobot's readers rely on).

Run as a script, it is the child: ``python dataset_faults.py ROOT KILL_AT EPISODES CAMERA [FOREVER [in-place]]`` appends
EPISODES episodes of ``FRAMES`` frames (with a 32x24 camera if CAMERA is 1) to ROOT, counting every file step
(a write, rename, link, fsync, unlink, mkdir, directory exchange); at step KILL_AT it SIGKILLs itself before the
step runs (0: never; then it prints the number of steps). FOREVER 1: record until killed from outside;
``in-place``: as where the folders cannot be swapped.
"""

from __future__ import annotations

import json
import os
import signal
import sys
from pathlib import Path

import numpy as np

FRAMES = 12
NAMES = [f"{m}.pos" for m in ("shoulder_pan", "shoulder_lift", "elbow_flex", "wrist_flex", "wrist_roll", "gripper")]
CAMERA = {"front": (24, 32)}
HOOKED_OS = ("replace", "rename", "link", "fsync", "unlink", "mkdir", "rmdir", "open")


def frames(k: int, n: int = FRAMES):
    state = np.stack([np.sin(np.arange(n) / 30.0 + i + k) * 40 for i in range(6)], axis=1)
    images = [np.full((24, 32, 3), (k * 37 + i * 5) % 256, np.uint8) for i in range(n)]
    return state, state + 0.5, images


def record(root, episodes, *, camera: bool, task: str = "pick the cube", start: int = 0, forever: bool = False):
    from armctl import DatasetWriter

    with DatasetWriter(
        root, robot_type="so_follower", fps=30, state_names=NAMES, cameras=CAMERA if camera else None
    ) as w:
        k = start
        while forever or k < start + episodes:
            w.start_episode(task)
            state, action, images = frames(k)
            for i in range(len(state)):
                w.add_frame(state[i], action[i], {"front": images[i]} if camera else None)
            w.save_episode()
            print("saved", flush=True)  # the save returned: the episode must survive any kill from now on
            k += 1
    return w


def check_whole(root) -> dict:
    """Asserts that ``root`` is a whole dataset: info.json's totals agree with the frames, the episodes tables and
    the tasks (episode indexes 0..N-1 once each, frame indexes 0..F-1 once each, each episode's range its frames,
    its video inside its file). Returns info.json."""
    import pyarrow.parquet as pq

    root = Path(root)
    info = json.loads((root / "meta/info.json").read_text())
    n, f = info["total_episodes"], info["total_frames"]
    data = [pq.read_table(p) for p in sorted((root / "data").glob("*/*.parquet"))]
    ep_index = np.concatenate([t.column("episode_index").to_numpy() for t in data])
    index = np.concatenate([t.column("index").to_numpy() for t in data])
    assert len(index) == f, f"{len(index)} frames in data/, info.json says {f}"
    assert sorted(index.tolist()) == list(range(f)), "frame indexes repeated or missing"
    assert sorted(set(ep_index.tolist())) == list(range(n)), f"episodes in data/ {sorted(set(ep_index.tolist()))}, {n}"
    rows = [r for p in sorted((root / "meta/episodes").glob("*/*.parquet")) for r in pq.read_table(p).to_pylist()]
    assert sorted(r["episode_index"] for r in rows) == list(range(n)), [r["episode_index"] for r in rows]
    for r in rows:
        sel = index[ep_index == r["episode_index"]]
        assert (int(sel.min()), int(sel.max()) + 1, len(sel)) == (
            r["dataset_from_index"],
            r["dataset_to_index"],
            r["length"],
        ), r
        for key in info["features"]:
            if info["features"][key]["dtype"] == "video":
                path = root / info["video_path"].format(
                    video_key=key, chunk_index=r[f"videos/{key}/chunk_index"], file_index=r[f"videos/{key}/file_index"]
                )
                import av

                with av.open(str(path)) as c:
                    s = c.streams.video[0]
                    seconds = float(s.duration * s.time_base) if s.duration else c.duration / 1e6
                assert r[f"videos/{key}/to_timestamp"] <= seconds + 1e-6, (path, r, seconds)
    tasks = pq.read_table(root / "meta/tasks.parquet").to_pylist()
    assert len(tasks) == info["total_tasks"]
    assert set(json.loads((root / "meta/stats.json").read_text())) >= {"observation.state", "action"}
    return info


def _hook(fn, counter, kill_at):
    def wrapped(*a, **k):
        counter[0] += 1
        if counter[0] == kill_at:
            os.kill(os.getpid(), signal.SIGKILL)
        return fn(*a, **k)

    return wrapped


def _no_swap(a, b):
    import errno

    raise OSError(errno.ENOSYS, "no renameat2 here", str(a))


def main(argv) -> None:
    root, kill_at, episodes, camera = argv[0], int(argv[1]), int(argv[2]), argv[3] == "1"
    forever = len(argv) > 4 and argv[4] == "1"
    in_place = len(argv) > 5 and argv[5] == "in-place"  # as where no swap is possible: files written in place
    import pyarrow.parquet as pq

    counter = [0]
    if camera:
        import av

        open_av = av.open
        av.open = _hook(open_av, counter, kill_at)
    for name in HOOKED_OS:
        if hasattr(os, name):
            setattr(os, name, _hook(getattr(os, name), counter, kill_at))
    pq.write_table = _hook(pq.write_table, counter, kill_at)
    try:
        import armctl.dataset.commit as commit  # the directory exchange, where there is one

        commit.exchange = _hook(_no_swap if in_place else commit.exchange, counter, kill_at)
    except ImportError:
        pass
    print("ready", flush=True)
    record(root, episodes, camera=camera, start=100, forever=forever)
    print(counter[0], flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
