"""The dataset a recording session appends to: the folder checked (writable, a dataset or empty), an existing
dataset's ``info.json`` checked against this recording (robot, fps, features, cameras), its totals and tasks read,
this session's file number picked (``open_existing``); what a session killed in the middle of a save left beyond
``info.json`` (``files_ahead``)."""

from __future__ import annotations

import errno
import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from armctl.dataset.commit import clean_orphans, storage_error
from armctl.dataset.layout import CHUNKS_SIZE, CODEBASE_VERSION
from armctl.errors import BadInputError, ConfigError


@dataclass
class Existing:
    """What a session appends to: the dataset's totals and tasks (none for a new one), the session's file number,
    and whether the folder was made for it (``made_root``: removed again if no episode is saved in it)."""

    made_root: bool
    tasks: dict[str, int] = field(default_factory=dict)
    prev_episodes: int = 0
    prev_frames: int = 0
    prev_tasks: int = 0
    file_index: int = 0


def why(exc: BaseException) -> str:
    """pyarrow's reason in a few words: its first line, without the path it repeats."""
    line = (str(exc).splitlines() or [type(exc).__name__])[0]
    return re.sub(r"^.*input source '[^']*': ", "", line)[:160]


def _read_only(path: Path) -> bool:
    try:
        return bool(os.statvfs(path).f_flag & os.ST_RDONLY)
    except (OSError, AttributeError):  # AttributeError: no statvfs (Windows)
        return False


def open_existing(root: Path, *, robot_type: str, fps: int, features: dict, pq) -> Existing:
    """Read an existing dataset's totals and tasks (refusing one that does not match); pick this session's
    file number. A new or empty folder is made (and given file number 0)."""
    info_path = root / "meta" / "info.json"
    found = Existing(made_root=not root.exists())
    if root.is_dir():
        clean_orphans(root)  # what recording sessions killed before left
        if not os.access(root, os.W_OK):
            err = OSError(errno.EROFS if _read_only(root) else errno.EACCES, "not writable")
            raise storage_error(root, "recording into it", err, "nothing was written")
    if not info_path.is_file():
        _make_folder(root)
        return found
    have = _read_info(info_path)
    where = f"--record-dataset {root}"
    _check_robot(have, where, robot_type, fps)
    _check_features(have, where, features)
    found.prev_episodes = int(have.get("total_episodes", 0))
    found.prev_frames = int(have.get("total_frames", 0))
    found.prev_tasks = int(have.get("total_tasks", 0))
    found.tasks = _read_tasks(root / "meta" / "tasks.parquet", pq)
    found.file_index = _next_file_index(root, where)
    return found


def _make_folder(root: Path) -> None:
    """A new dataset's folder: made if missing; BadInputError for a file or a folder holding something else."""
    if root.exists() and not root.is_dir():
        raise BadInputError(f"--record-dataset {root}: not a folder")
    if root.is_dir() and any(p for p in root.iterdir() if not p.name.startswith(".")):
        raise BadInputError(
            f"--record-dataset {root}: the folder is not empty and holds no dataset (no meta/info.json): "
            "give a new or empty folder, or an armctl/LeRobot dataset to append to"
        )
    try:
        root.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise storage_error(root, "making the folder", exc, "nothing was written") from None


def _read_info(info_path: Path) -> dict:
    try:
        have = json.loads(info_path.read_bytes())  # JSON is UTF-8 (LeRobot writes it so)
    except (OSError, ValueError) as exc:
        raise ConfigError(f"cannot read the dataset's info.json: {exc}", path=info_path) from None
    if not isinstance(have, dict):
        raise ConfigError("not a LeRobot info.json (a JSON object)", path=info_path)
    return have


def _check_robot(have: dict, where: str, robot_type: str, fps: int) -> None:
    """The dataset's version, robot and fps are this recording's."""
    if have.get("codebase_version") != CODEBASE_VERSION:
        raise BadInputError(
            f"{where}: a LeRobot dataset of version {have.get('codebase_version')!r}; armctl appends to "
            f"{CODEBASE_VERSION} only (convert it with LeRobot's convert_dataset_v21_to_v30)"
        )
    if have.get("robot_type") != robot_type:
        raise BadInputError(
            f"{where}: a dataset of robot {have.get('robot_type')!r}, not {robot_type!r}: record into another folder"
        )
    if have.get("fps") != fps:
        raise BadInputError(f"{where}: a dataset at {have.get('fps')} fps, not {fps}: give --fps to match")


def _check_features(have: dict, where: str, features: dict) -> None:
    """The dataset's state and action names, its cameras and their sizes are this recording's."""
    feats = have.get("features", {})
    for key in ("observation.state", "action"):
        if feats.get(key, {}).get("names") != features[key]["names"]:
            raise BadInputError(
                f"{where}: its {key} is {feats.get(key, {}).get('names')}, this arm records "
                f"{features[key]['names']}: record into another folder"
            )
    cams = sorted(k for k in feats if k.startswith("observation.images."))
    want = sorted(k for k in features if k.startswith("observation.images."))
    if cams != want:
        raise BadInputError(
            f"{where}: its cameras are {[c.rsplit('.', 1)[-1] for c in cams] or 'none'}, this recording has "
            f"{[c.rsplit('.', 1)[-1] for c in want] or 'none'}: give the same --camera names"
        )
    for k in want:
        if feats[k]["shape"] != features[k]["shape"]:
            raise BadInputError(
                f"{where}: camera {k.rsplit('.', 1)[-1]!r} is {feats[k]['shape']} there, "
                f"{features[k]['shape']} now: give a camera of the same size"
            )


def _read_tasks(tasks_path: Path, pq) -> dict[str, int]:
    tasks: dict[str, int] = {}
    if tasks_path.is_file():
        try:
            t = pq.read_table(tasks_path)
            for task, index in zip(t.column("task").to_pylist(), t.column("task_index").to_pylist()):
                tasks[task] = int(index)
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise ConfigError(
                f"not a tasks table LeRobot wrote (task, task_index): {why(exc)}", path=tasks_path
            ) from None
    return tasks


def _next_file_index(root: Path, where: str) -> int:
    taken = [
        int(m.group(1))
        for p in (root / "data").glob("chunk-*/file-*.parquet")
        if (m := re.search(r"file-(\d+)", p.name))
    ]
    file_index = max(taken, default=-1) + 1
    if file_index >= CHUNKS_SIZE:
        raise BadInputError(f"{where}: {CHUNKS_SIZE} recording sessions already; start another dataset")
    return file_index


def files_ahead(root: Path, episodes: int, pq) -> list[Path]:
    """The data and episodes files (relative to ``root``) holding rows of an episode index >= ``episodes`` (the
    dataset's ``total_episodes``): what a session killed in the middle of a save wrote beyond ``info.json``."""
    ahead = []
    for sub in ("data", "meta/episodes"):
        for p in sorted((root / sub).glob("chunk-*/file-*.parquet")):
            try:
                idx = pq.read_table(p, columns=["episode_index"]).column(0).to_numpy()
            except (OSError, ValueError, KeyError) as exc:
                raise ConfigError(f"not a LeRobot table: {why(exc)}", path=p) from None
            if len(idx) and idx.max() >= episodes:
                ahead.append(p.relative_to(root))
    return ahead
