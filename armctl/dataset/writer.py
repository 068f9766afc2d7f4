"""Datasets in LeRobot's format (LeRobotDataset v3.0), written with pyarrow (and PyAV for camera video) only.

    with armctl.DatasetWriter("demos", robot_type="so_follower", fps=30, state_names=names) as ds:
        ds.start_episode("pick the cube")
        for ...:
            ds.add_frame(state, action, images={"front": rgb})   # one frame every 1/fps s
        ds.save_episode()                                         # or ds.discard_episode()

Layout (what LeRobot 0.4-0.6 reads, and what ``lerobot-doctor`` checks)::

    meta/info.json                                 codebase_version v3.0, fps, features, totals, robot_type, ...
    meta/stats.json                                per feature min, max, mean, std, count, q01..q99
    meta/tasks.parquet                             task_index, indexed by task (pandas index metadata)
    meta/episodes/chunk-000/file-NNN.parquet       one row per episode
    data/chunk-000/file-NNN.parquet                one row per frame, episodes back to back
    videos/observation.images.<cam>/chunk-000/file-NNN.mp4   the episodes of one camera back to back
    meta/armctl.json                               armctl's own facts (units, measured or commanded, arm)

Each writer (one recording session) adds its own ``file-NNN`` files, so appending never rewrites earlier
recordings; ``info.json``, ``stats.json`` and ``tasks.parquet`` are rewritten for the whole dataset after
every saved episode. The files of a save appear together (``armctl.dataset.commit``: written aside, then
swapped in), so a kill at any instant leaves a complete dataset with every episode whose save returned; a
full disk, a file size limit or a read-only folder is one line (``StorageError``) saying what the dataset
keeps. An existing dataset of another robot, fps, features or cameras is refused
(``BadInputError``) before anything is written.

Feature values are float32 vectors; ``timestamp`` is ``frame_index / fps``. Video: AV1 (``libsvtav1``,
yuv420p, g 2, crf 30, preset 12, LeRobot's defaults, PyAV 15 as LeRobot pins it; a key frame at a scene cut:
``armctl.dataset.files``), each episode encoded apart (so a discarded one costs
nothing) and the session's file re-muxed from them (packets copied, not re-encoded) when one is saved.
"""

from __future__ import annotations

import json
import shutil
import weakref
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np

from armctl.dataset import meta
from armctl.dataset.commit import Publisher, storage_error
from armctl.dataset.existing import files_ahead, open_existing
from armctl.dataset.files import EpisodeVideo, atomic_bytes, concat_videos, need_av, need_pyarrow, write_table
from armctl.dataset.layout import (
    CODEBASE_VERSION,
    DATA_PATH,
    EPISODES_PATH,
    INDEX_FEATURES,
    VIDEO_PATH,
    check_name,
    features,
)
from armctl.dataset.stats import (  # feature_stats, aggregate_stats, image_stats: re-exported (__all__)
    IMAGE_STATS_STRIDE,
    aggregate_stats,
    feature_stats,
    image_stats,
)
from armctl.errors import ArmctlError, BadInputError

# --- the writer ------------------------------------------------------------------------------------------------


class DatasetWriter:
    """Writes (or appends to) a LeRobotDataset v3.0 in ``root``.

    - ``robot_type``: LeRobot's robot name (``so_follower`` for an SO-101; else armctl's arm name);
    - ``fps``: frames a second (whole number; default 30); every frame added stands for 1/fps s;
    - ``state_names``, ``action_names`` (default: the same): one name per value of ``observation.state``
      and ``action`` (LeRobot's ``shoulder_pan.pos``, ...);
    - ``cameras``: name -> (height, width) of the RGB frames of ``observation.images.<name>``;
    - ``info``: armctl's own facts about the recording (units, ``state_source`` measured or commanded, arm),
      kept in ``meta/armctl.json`` (LeRobot warns about unknown keys in info.json).

    BadInputError (one line) if ``root`` holds a dataset of another robot, fps, features or cameras, or is
    not a dataset folder at all (a non-empty folder without ``meta/info.json``).
    """

    def __init__(
        self,
        root: str | Path,
        *,
        robot_type: str,
        fps: int = 30,
        state_names: Sequence[str],
        action_names: Sequence[str] | None = None,
        cameras: Mapping[str, tuple[int, int]] | None = None,
        info: Mapping | None = None,
    ):
        self.pa, self.pq = need_pyarrow()
        if isinstance(fps, bool) or not isinstance(fps, (int, np.integer)) or not 1 <= int(fps) <= 1000:
            raise BadInputError(f"dataset fps: a whole number of frames a second, 1..1000, got {fps!r}")
        self.root = Path(root)
        self.robot_type = check_name("robot_type", robot_type)
        self.fps = int(fps)
        self.state_names = [check_name("state name", n) for n in state_names]
        self.action_names = [check_name("action name", n) for n in (action_names or state_names)]
        self.cameras = {check_name("camera", k): (int(h), int(w)) for k, (h, w) in (cameras or {}).items()}
        for name, (h, w) in self.cameras.items():
            if h < 2 or w < 2 or h % 2 or w % 2:
                raise BadInputError(f"camera {name!r}: {w}x{h} frames; yuv420p video needs an even width and height")
        if self.cameras:
            need_av()
        self.extra = dict(info or {})
        self.features = features(self.state_names, self.action_names, self.cameras, self.fps)
        found = open_existing(self.root, robot_type=self.robot_type, fps=self.fps, features=self.features, pq=self.pq)
        self._made_root = found.made_root  # removed again by close() if no episode was saved in it
        self.tasks, self._prev_tasks = found.tasks, found.prev_tasks
        self.prev_episodes, self.prev_frames, self.file_index = found.prev_episodes, found.prev_frames, found.file_index
        self._episode: dict | None = None
        self._saved: list[dict] = []  # this session's episodes (rows of the episodes table)
        self._frames: list = []  # this session's frame rows (column lists), per saved episode
        self._writing = "its work folder"  # the file being written (named when the disk refuses it)
        try:
            self._pub = Publisher(self.root)  # saves published all at once (armctl.dataset.commit)
        except OSError as exc:
            if self._made_root:
                shutil.rmtree(self.root, ignore_errors=True)
            raise storage_error(self.root, "making its work folder", exc, "nothing was written") from None
        self._work = self._pub.work
        try:
            self._roll_back()
        except OSError as exc:
            self._pub.close()
            raise storage_error(self.root, f"rolling back {self._writing}", exc, "nothing was written") from None
        # a writer never closed (a script without close() or with): its work files go when it is collected or at exit
        self._cleanup = weakref.finalize(self, shutil.rmtree, str(self._pub.scratch), True)
        self._videos: dict[str, list[Path]] = {k: [] for k in self.cameras}
        self._closed = False

    def _roll_back(self) -> None:
        """Drop what a session killed in the middle of a save left beyond ``info.json``, the dataset's commit
        record (where saves are written in place, and in a dataset an earlier armctl left after a kill): frames
        and episode rows of an episode index >= total_episodes, tasks >= total_tasks; then the meta files again."""
        if not (self.root / "meta" / "info.json").is_file():
            return
        n = self.prev_episodes
        ahead = files_ahead(self.root, n, self.pq)
        if not ahead and len(self.tasks) <= self._prev_tasks:
            return
        import pyarrow.compute as pc

        def write(base: Path) -> None:
            for rel in ahead:
                self._writing = str(rel)
                t = self.pq.read_table(base / rel)
                t = t.filter(pc.less(t.column("episode_index"), n))
                if t.num_rows:
                    write_table(t, base / rel)
                else:
                    (base / rel).unlink()
            self.tasks = {k: v for k, v in self.tasks.items() if v < self._prev_tasks}
            self._write_meta(base)

        self._pub.commit(write)

    # --- episodes ---

    @property
    def episodes(self) -> int:
        """Episodes in the dataset (earlier sessions and this one)."""
        return self.prev_episodes + len(self._saved)

    @property
    def recording(self) -> bool:
        """True between ``start_episode`` and ``save_episode``/``discard_episode``."""
        return self._episode is not None

    @property
    def frames(self) -> int:
        """Frames of the episode being recorded."""
        return 0 if self._episode is None else len(self._episode["state"])

    def start_episode(self, task: str) -> None:
        """Begin an episode of ``task`` (a sentence: what the demonstration does)."""
        if self._closed:
            raise BadInputError(f"the dataset writer for {self.root} is closed")
        if self._episode is not None:
            raise BadInputError("an episode is being recorded: save or discard it first")
        if not isinstance(task, str) or not task.strip():
            raise BadInputError("--task: a sentence saying what the episode does, got nothing")
        videos = {}
        n = self.episodes
        for name, (h, w) in self.cameras.items():
            videos[name] = EpisodeVideo(self._work / f"{name}-{n:06d}.mp4", self.fps, h, w)
        self._episode = {"task": task.strip(), "state": [], "action": [], "videos": videos, "images": {}}

    def add_frame(self, state, action, images: Mapping[str, np.ndarray] | None = None) -> None:
        """One frame: ``state`` and ``action`` (as many values as their names), ``images`` camera -> RGB array
        (H, W, 3) uint8 for every camera."""
        ep = self._episode
        if ep is None:
            raise BadInputError("add_frame: no episode started (start_episode first)")
        s = np.asarray(state, dtype=np.float32).reshape(-1)
        a = np.asarray(action, dtype=np.float32).reshape(-1)
        if len(s) != len(self.state_names) or len(a) != len(self.action_names):
            raise BadInputError(
                f"add_frame: {len(s)} state and {len(a)} action values; the dataset has "
                f"{len(self.state_names)} and {len(self.action_names)}"
            )
        if not (np.all(np.isfinite(s)) and np.all(np.isfinite(a))):
            raise BadInputError("add_frame: a state or action value is not a finite number")
        images = images or {}
        if set(images) != set(self.cameras):
            raise BadInputError(
                f"add_frame: images of {sorted(images)}, the dataset's cameras are {sorted(self.cameras)}"
            )
        for name, img in images.items():
            h, w = self.cameras[name]
            img = np.asarray(img)
            if img.shape != (h, w, 3) or img.dtype != np.uint8:
                raise BadInputError(
                    f"add_frame: camera {name!r} gave {img.shape} {img.dtype}, expected ({h}, {w}, 3) uint8"
                )
            try:
                ep["videos"][name].add(img)
            except OSError as exc:  # the disk is full (the episode's video is written as it comes)
                try:
                    self.discard_episode()
                except OSError:
                    pass  # its video is removed all the same
                what = f"writing the episode's video in {self._work}"
                raise storage_error(
                    self.root, what, exc, self._kept().replace(" was not saved", ", being recorded, is lost")
                ) from None
            ep["images"].setdefault(name, []).append(img[::IMAGE_STATS_STRIDE, ::IMAGE_STATS_STRIDE].copy())
        ep["state"].append(s)
        ep["action"].append(a)

    def discard_episode(self) -> None:
        """Drop the episode being recorded (nothing of it is kept)."""
        ep, self._episode = self._episode, None
        if ep is None:
            return
        for v in ep["videos"].values():
            try:
                v.close()
            finally:
                v.path.unlink(missing_ok=True)

    def save_episode(self) -> int | None:
        """Keep the episode being recorded; the dataset on disk is complete with it when this returns. Returns
        its episode index (None for an empty episode, which is dropped)."""
        ep = self._episode
        if ep is None:
            raise BadInputError("save_episode: no episode started")
        if not ep["state"]:
            self.discard_episode()
            return None
        self._episode = None
        tasks, videos = dict(self.tasks), {k: list(v) for k, v in self._videos.items()}
        saved = len(self._saved)
        try:
            return self._save(ep)
        except BaseException as exc:
            # nothing of this episode is kept (the dataset on disk is as before the save)
            del self._saved[saved:], self._frames[saved:]
            self.tasks, self._videos = tasks, videos
            for v in ep["videos"].values():
                v.path.unlink(missing_ok=True)
            if isinstance(exc, OSError) and not isinstance(exc, ArmctlError):
                raise storage_error(self.root, f"writing {self._writing}", exc, self._kept()) from None
            raise

    def _kept(self) -> str:
        """What the dataset on disk holds after a failed save: '... keeps its 3 episodes (0..2); episode 3 ...'."""
        n = self.episodes
        if n == 0:
            return "no episode was saved"
        return f"it keeps its {n} episode{'s' if n > 1 else ''} (0..{n - 1}); episode {n} was not saved"

    def _save(self, ep: dict) -> int:
        n = len(ep["state"])
        index = self.episodes
        start = self.prev_frames + sum(e["length"] for e in self._saved)
        task_index = self.tasks.setdefault(ep["task"], len(self.tasks))
        state, action = np.stack(ep["state"]), np.stack(ep["action"])
        frame_index = np.arange(n, dtype=np.int64)
        cols = {
            "observation.state": state,
            "action": action,
            "timestamp": (frame_index / self.fps).astype(np.float32),
            "frame_index": frame_index,
            "episode_index": np.full(n, index, dtype=np.int64),
            "index": np.arange(start, start + n, dtype=np.int64),
            "task_index": np.full(n, task_index, dtype=np.int64),
        }
        stats = {k: feature_stats(v if v.ndim > 1 else v[:, None]) for k, v in cols.items()}
        row = {
            "episode_index": index,
            "tasks": [ep["task"]],
            "length": n,
            "data/chunk_index": 0,
            "data/file_index": self.file_index,
            "dataset_from_index": start,
            "dataset_to_index": start + n,
        }
        for name, video in ep["videos"].items():
            self._writing = f"the episode's video ({video.path.name})"
            video.close()
            key = f"observation.images.{name}"
            before = sum(e["length"] for e in self._saved)
            row[f"videos/{key}/chunk_index"] = 0
            row[f"videos/{key}/file_index"] = self.file_index
            row[f"videos/{key}/from_timestamp"] = before / self.fps
            row[f"videos/{key}/to_timestamp"] = (before + n) / self.fps
            self._videos[name].append(video.path)
            stats[key] = image_stats(ep["images"][name]) if ep["images"].get(name) else None
        row["meta/episodes/chunk_index"] = 0
        row["meta/episodes/file_index"] = self.file_index
        row["_stats"] = stats
        self._saved.append(row)
        self._frames.append(cols)
        self._pub.commit(self._write_session)
        return index

    # --- files ---

    def _session_path(self, base: Path, pattern: str, **kw) -> Path:
        self._writing = pattern.format(chunk_index=0, file_index=self.file_index, **kw)
        return base / self._writing

    def _write_session(self, base: Path) -> None:
        """This session's files and the dataset's meta files, all written in ``base`` (the staging folder, or the
        dataset folder itself where no swap is possible: then ``info.json`` last)."""
        pa = self.pa
        for name, parts in self._videos.items():
            key = f"observation.images.{name}"
            concat_videos(parts, self._mkdir(self._session_path(base, VIDEO_PATH, video_key=key)))
        # frames
        cols = {k: np.concatenate([f[k] for f in self._frames]) for k in self._frames[0]}
        arrays, fields = [], []
        for key in ("observation.state", "action"):
            v = cols[key].astype(np.float32)
            arrays.append(pa.FixedSizeListArray.from_arrays(pa.array(v.reshape(-1), pa.float32()), v.shape[1]))
            fields.append(pa.field(key, arrays[-1].type))
        for key in INDEX_FEATURES:
            arrays.append(pa.array(cols[key]))
            fields.append(pa.field(key, arrays[-1].type))
        write_table(pa.Table.from_arrays(arrays, schema=pa.schema(fields)), self._session_path(base, DATA_PATH))
        # episodes
        write_table(meta.episodes_table(self.pa, self._saved), self._session_path(base, EPISODES_PATH))
        self._write_meta(base)

    @staticmethod
    def _mkdir(path: Path) -> Path:
        path.parent.mkdir(parents=True, exist_ok=True)
        return path

    def _write_meta(self, base: Path) -> None:
        stats = meta.dataset_stats(self.features, meta.all_episode_stats(self.pq, base))
        info = meta.info(
            robot_type=self.robot_type,
            fps=self.fps,
            episodes=self.episodes,
            frames=self.prev_frames + sum(e["length"] for e in self._saved),
            tasks=len(self.tasks),
            features=self.features,
            video=bool(self.cameras),
        )
        folder = base / "meta"
        self._writing = "meta/stats.json"
        atomic_bytes(folder / "stats.json", (json.dumps(stats, indent=4) + "\n").encode())
        self._writing = "meta/tasks.parquet"
        write_table(meta.tasks_table(self.pa, self.tasks), folder / "tasks.parquet")
        armctl = {"writer": "armctl", **self.extra}
        self._writing = "meta/armctl.json"
        atomic_bytes(folder / "armctl.json", (json.dumps(armctl, indent=2) + "\n").encode())
        self._writing = "meta/info.json"
        atomic_bytes(folder / "info.json", (json.dumps(info, indent=4) + "\n").encode())  # last: the dataset is whole

    # --- lifecycle ---

    def close(self) -> None:
        """Discard an episode still being recorded, remove the work files. Safe to call twice."""
        if self._closed:
            return
        self._closed = True
        self.discard_episode()
        self._pub.close()
        if self._made_root:  # a recording refused or stopped before its first episode leaves no empty folder
            try:
                self.root.rmdir()
            except OSError:
                pass  # not empty: a dataset

    def __enter__(self) -> DatasetWriter:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<DatasetWriter {str(self.root)!r} {self.robot_type} {self.fps} fps, {self.episodes} episodes>"


__all__ = ["DatasetWriter", "feature_stats", "aggregate_stats", "image_stats", "CODEBASE_VERSION"]
