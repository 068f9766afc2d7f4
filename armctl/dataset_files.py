"""The files of a LeRobot dataset: parquet tables and camera video (AV1), each written atomically; pyarrow and
PyAV imported when first needed."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from .errors import BadInputError

VIDEO_CODEC, VIDEO_CODEC_NAME, PIX_FMT = "libsvtav1", "av1", "yuv420p"
VIDEO_OPTIONS = {"g": "2", "crf": "30", "preset": "12"}


def _need_pyarrow():
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        raise BadInputError(
            "writing a dataset needs pyarrow (and PyAV, OpenCV for cameras): pip install 'armctl[dataset]'"
        ) from None
    return pa, pq


def _need_av():
    try:
        import av
    except ImportError:
        raise BadInputError("a dataset with cameras needs PyAV: pip install 'armctl[dataset]'") from None
    return av


def _atomic_bytes(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _write_table(table, path: Path) -> None:
    """A parquet file written whole, then renamed over ``path`` (snappy, dictionary on, as LeRobot writes)."""
    _, pq = _need_pyarrow()
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    os.close(fd)
    try:
        pq.write_table(table, tmp, compression="snappy", use_dictionary=True)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


# --- cameras' video --------------------------------------------------------------------------------------------


class _EpisodeVideo:
    """One camera's frames of one episode, encoded as they come into a file of their own."""

    def __init__(self, path: Path, fps: int, height: int, width: int):
        av = _need_av()
        os.environ.setdefault("SVT_LOG", "1")  # SVT-AV1 prints its settings on stderr otherwise: errors only
        self.path, self.fps, self.frames = path, fps, 0
        self.container = av.open(str(path), mode="w")
        try:
            stream = self.container.add_stream(VIDEO_CODEC, rate=fps, options=dict(VIDEO_OPTIONS))
        except Exception as exc:  # noqa: BLE001 - a PyAV build without the encoder
            self.container.close()
            raise BadInputError(f"this PyAV has no {VIDEO_CODEC} encoder ({exc}): pip install 'av>=15'") from None
        stream.width, stream.height, stream.pix_fmt = width, height, PIX_FMT
        self.stream = stream

    def add(self, rgb: np.ndarray) -> None:
        import av

        frame = av.VideoFrame.from_ndarray(np.ascontiguousarray(rgb), format="rgb24")
        frame.pts = self.frames
        for packet in self.stream.encode(frame):
            self.container.mux(packet)
        self.frames += 1

    def close(self) -> None:
        for packet in self.stream.encode():
            self.container.mux(packet)
        self.container.close()


def _concat_videos(parts: Sequence[Path], out: Path) -> None:
    """The episodes' videos back to back in one file: packets copied with their times shifted, no re-encoding."""
    av = _need_av()
    fd, tmp = tempfile.mkstemp(dir=out.parent, prefix=f".{out.name}.", suffix=".mp4")
    os.close(fd)
    try:
        dst = av.open(tmp, mode="w")
        try:
            ostream, offset = None, 0
            for part in parts:
                with av.open(str(part)) as src:
                    istream = src.streams.video[0]
                    if ostream is None:
                        ostream = dst.add_stream_from_template(istream, opaque=True)
                    last = 0
                    for packet in src.demux(istream):
                        if packet.dts is None:
                            continue
                        packet.stream = ostream
                        packet.pts = (packet.pts if packet.pts is not None else packet.dts) + offset
                        packet.dts += offset
                        last = max(last, packet.pts + max(int(packet.duration or 0), 1))
                        dst.mux(packet)
                    offset = last
        finally:
            dst.close()
        os.replace(tmp, out)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
