"""The layout of a LeRobotDataset v3.0 (what LeRobot 0.4-0.6 reads): its version, file paths and sizes, the
features a recording has (``features``) and the names LeRobot takes (``check_name``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from armctl.dataset.files import PIX_FMT, VIDEO_CODEC_NAME
from armctl.errors import BadInputError

CODEBASE_VERSION = "v3.0"
CHUNKS_SIZE = 1000
DATA_FILES_SIZE_MB = 100
VIDEO_FILES_SIZE_MB = 200
DATA_PATH = "data/chunk-{chunk_index:03d}/file-{file_index:03d}.parquet"
VIDEO_PATH = "videos/{video_key}/chunk-{chunk_index:03d}/file-{file_index:03d}.mp4"
EPISODES_PATH = "meta/episodes/chunk-{chunk_index:03d}/file-{file_index:03d}.parquet"
INDEX_FEATURES = ("timestamp", "frame_index", "episode_index", "index", "task_index")


def check_name(kind: str, name: str) -> str:
    """``name`` if LeRobot takes it (a name without '/'), else BadInputError naming the ``kind``."""
    if not isinstance(name, str) or "/" in name or not name.strip():
        raise BadInputError(f"{kind} {name!r}: a name without '/' (LeRobot refuses it)")
    return name


def features(
    state_names: Sequence[str], action_names: Sequence[str], cameras: Mapping[str, tuple[int, int]], fps: int
) -> dict:
    """info.json's ``features``: state, action, one video per camera (name -> (height, width)), the index columns."""
    f = {
        "observation.state": {"dtype": "float32", "shape": [len(state_names)], "names": state_names},
        "action": {"dtype": "float32", "shape": [len(action_names)], "names": action_names},
    }
    for name, (h, w) in cameras.items():
        f[f"observation.images.{name}"] = {
            "dtype": "video",
            "shape": [h, w, 3],
            "names": ["height", "width", "channels"],
            "info": {
                "video.height": h,
                "video.width": w,
                "video.codec": VIDEO_CODEC_NAME,
                "video.pix_fmt": PIX_FMT,
                "video.is_depth_map": False,
                "video.fps": fps,
                "video.channels": 3,
                "has_audio": False,
            },
        }
    f["timestamp"] = {"dtype": "float32", "shape": [1], "names": None}
    for k in INDEX_FEATURES[1:]:
        f[k] = {"dtype": "int64", "shape": [1], "names": None}
    return f
