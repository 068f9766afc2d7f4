"""The meta files of a LeRobotDataset v3.0, built from what was recorded: the episodes table
(``meta/episodes/*.parquet``: one row per episode, with its stats), the dataset's stats (``meta/stats.json``:
each feature's episodes aggregated), ``meta/info.json`` and the tasks table (``meta/tasks.parquet``, indexed by
task as pandas writes it)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from armctl.dataset.layout import (
    CHUNKS_SIZE,
    CODEBASE_VERSION,
    DATA_FILES_SIZE_MB,
    DATA_PATH,
    VIDEO_FILES_SIZE_MB,
    VIDEO_PATH,
)
from armctl.dataset.stats import STATS, aggregate_stats, jsonable


def episodes_table(pa, rows: list[dict]):
    """The episodes table of ``rows`` (one dict per episode, its stats under ``_stats``)."""
    data: dict[str, list] = {}
    for r in rows:
        for k, v in r.items():
            if k != "_stats":
                data.setdefault(k, []).append(v)
        for feat, st in r["_stats"].items():
            if st is None:
                continue
            for name in STATS:
                data.setdefault(f"stats/{feat}/{name}", []).append(np.asarray(st[name]).tolist())
    table = {}
    for k, v in data.items():
        if k == "tasks":
            table[k] = pa.array(v, pa.list_(pa.string()))
        elif k.startswith("stats/") and k.endswith("/count"):
            table[k] = pa.array(v, pa.list_(pa.int64()))
        elif k.startswith("stats/observation.images."):
            table[k] = pa.array(v, pa.list_(pa.list_(pa.list_(pa.float64()))))
        elif k.startswith("stats/"):
            table[k] = pa.array(v, pa.list_(pa.float64()))
        elif k.endswith("_timestamp"):
            table[k] = pa.array(v, pa.float64())
        else:
            table[k] = pa.array(v, pa.int64())
    return pa.table(table)


def all_episode_stats(pq, base: Path) -> list[dict]:
    """Per-episode stats of the whole dataset in ``base`` (earlier sessions from their episodes files)."""
    out = []
    for path in sorted((base / "meta" / "episodes").glob("chunk-*/file-*.parquet")):
        t = pq.read_table(path)
        cols = {c: t.column(c).to_pylist() for c in t.column_names if c.startswith("stats/")}
        for i in range(t.num_rows):
            ep: dict[str, dict] = {}
            for c, vals in cols.items():
                _, feat, name = c.split("/", 2)
                if vals[i] is not None:
                    ep.setdefault(feat, {})[name] = np.asarray(vals[i], dtype=np.float64)
            out.append(ep)
    return out


def dataset_stats(features: dict, per_episode: list[dict]) -> dict:
    """stats.json: each feature's stats over every episode that has them (``all_episode_stats``)."""
    stats = {}
    for feat in features:
        parts = [ep[feat] for ep in per_episode if feat in ep and "count" in ep[feat]]
        if parts:
            agg = aggregate_stats(parts)
            agg["count"] = np.asarray(agg["count"]).astype(np.int64)
            stats[feat] = jsonable(agg)
    return stats


def info(*, robot_type: str, fps: int, episodes: int, frames: int, tasks: int, features: dict, video: bool) -> dict:
    """info.json of a dataset of ``episodes`` episodes, ``frames`` frames and ``tasks`` tasks."""
    return {
        "codebase_version": CODEBASE_VERSION,
        "robot_type": robot_type,
        "total_episodes": episodes,
        "total_frames": frames,
        "total_tasks": tasks,
        "chunks_size": CHUNKS_SIZE,
        "data_files_size_in_mb": DATA_FILES_SIZE_MB,
        "video_files_size_in_mb": VIDEO_FILES_SIZE_MB,
        "fps": fps,
        "splits": {"train": f"0:{episodes}"},
        "data_path": DATA_PATH,
        "video_path": VIDEO_PATH if video else None,
        "features": features,
    }


def tasks_table(pa, tasks: dict[str, int]):
    """``task_index`` with the task as the pandas index, as LeRobot reads it (pandas metadata by hand)."""
    order = sorted(tasks.items(), key=lambda kv: kv[1])
    pandas_meta = {
        "index_columns": ["task"],
        "column_indexes": [
            {
                "name": None,
                "field_name": None,
                "pandas_type": "unicode",
                "numpy_type": "object",
                "metadata": {"encoding": "UTF-8"},
            }
        ],
        "columns": [
            {
                "name": "task_index",
                "field_name": "task_index",
                "pandas_type": "int64",
                "numpy_type": "int64",
                "metadata": None,
            },
            {
                "name": "task",
                "field_name": "task",
                "pandas_type": "unicode",
                "numpy_type": "object",
                "metadata": None,
            },
        ],
        "creator": {"library": "pyarrow", "version": pa.__version__},
        "pandas_version": "2.2.3",
    }
    schema = pa.schema(
        [pa.field("task_index", pa.int64()), pa.field("task", pa.string())],
        metadata={b"pandas": json.dumps(pandas_meta).encode()},
    )
    return pa.table({"task_index": [i for _, i in order], "task": [t for t, _ in order]}, schema=schema)
