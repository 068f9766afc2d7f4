"""The files of a LeRobot dataset: parquet tables and camera video (AV1), each written atomically; pyarrow and
PyAV imported when first needed.

Video is encoded as LeRobot 0.4.4 encodes it (``encode_video_frames``: libsvtav1, yuv420p, g 2, crf 30, preset
12) with the PyAV LeRobot pins (``av>=15,<16``: SVT-AV1 3.0). Two things keep every frame its own picture
(measured on 80 synthetic episodes of 90 frames, 160x120, scene cuts every 1..8 frames; PSNR against the source):

- PyAV other than 15.x is refused (``PYAV_MAJOR``): PyAV 17 and 18 carry SVT-AV1 4.1, which at these settings
  leaves blocks of the picture before in a frame after a change (10 frames below 30 dB, down to 14.1 dB; 5
  even with the key frames below). It says why itself: it maps preset 12 to M11 and logs "Non-RTC M10+ are
  meant for automation tooling usage. Visual artifacts may occur otherwise." (SVT-AV1 3.0 maps it to M10);
- a frame that differs from the one before as a scene cut does (PSNR below ``SCENE_CUT_DB``, on a subsample)
  is sent as a key frame: without it SVT-AV1 3.0 too left a cut that fell on an inter frame (every second
  frame at g 2) partly the old picture (6 frames below 30 dB, down to 14.9 dB); with it none (min 37.5 dB).
  LeRobot's readers take key frames anywhere; the files do not grow (15.5 kB an episode, 15.7 kB without).
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from armctl.errors import BadInputError

VIDEO_CODEC, VIDEO_CODEC_NAME, PIX_FMT = "libsvtav1", "av1", "yuv420p"
VIDEO_OPTIONS = {"g": "2", "crf": "30", "preset": "12"}
PYAV_MAJOR = 15  # PyAV 15.x, as LeRobot 0.4.4-0.6.1 pin it (av>=15,<16); pyproject.toml says the same
SCENE_CUT_DB = 20.0  # a frame this far from the one before (PSNR) is a key frame (cuts measured 7..15 dB)
SCENE_CUT_STRIDE = 4  # every 4th pixel each way is enough to see a cut


def need_pyarrow():
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        raise BadInputError(
            "writing a dataset needs pyarrow (and PyAV, OpenCV for cameras): pip install 'armctl[dataset]'"
        ) from None
    return pa, pq


def need_av():
    try:
        import av
    except ImportError:
        raise BadInputError("a dataset with cameras needs PyAV: pip install 'armctl[dataset]'") from None
    major = str(getattr(av, "__version__", "0")).split(".")[0]
    if major != str(PYAV_MAJOR):
        raise BadInputError(
            f"PyAV {av.__version__} is installed; camera video needs PyAV {PYAV_MAJOR} (LeRobot's pin; PyAV 17 and "
            f"later encode some frames after an abrupt change as other pictures): pip install 'av>={PYAV_MAJOR},"
            f"<{PYAV_MAJOR + 1}'"
        )
    return av


def atomic_bytes(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _fsync(path) -> None:
    """The file's bytes on the disk before it is renamed into place (a power cut after the rename)."""
    fd = os.open(path, os.O_RDWR)  # Windows flushes only a file open for writing
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_table(table, path: Path) -> None:
    """A parquet file written whole, then renamed over ``path`` (snappy, dictionary on, as LeRobot writes)."""
    _, pq = need_pyarrow()
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    os.close(fd)
    try:
        pq.write_table(table, tmp, compression="snappy", use_dictionary=True)
        _fsync(tmp)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


# --- cameras' video --------------------------------------------------------------------------------------------


class EpisodeVideo:
    """One camera's frames of one episode, encoded as they come into a file of their own."""

    def __init__(self, path: Path, fps: int, height: int, width: int):
        av = need_av()
        os.environ.setdefault("SVT_LOG", "1")  # SVT-AV1 prints its settings on stderr otherwise: errors only
        self.path, self.fps, self.frames = path, fps, 0
        self.container = av.open(str(path), mode="w")
        try:
            stream = self.container.add_stream(VIDEO_CODEC, rate=fps, options=dict(VIDEO_OPTIONS))
        except Exception as exc:  # noqa: BLE001 - a PyAV build without the encoder
            self.container.close()
            raise BadInputError(
                f"this PyAV has no {VIDEO_CODEC} encoder ({exc}): pip install 'av>={PYAV_MAJOR},<{PYAV_MAJOR + 1}'"
            ) from None
        stream.width, stream.height, stream.pix_fmt = width, height, PIX_FMT
        self.stream = stream
        self._last: np.ndarray | None = None  # the previous frame's subsample (scene cuts)
        self.key_frames = 0  # frames sent as key frames because the picture changed abruptly

    def add(self, rgb: np.ndarray) -> None:
        import av

        frame = av.VideoFrame.from_ndarray(np.ascontiguousarray(rgb), format="rgb24")
        frame.pts = self.frames
        if self._cut(rgb):
            frame.pict_type = av.video.frame.PictureType.I
            self.key_frames += 1
        for packet in self.stream.encode(frame):
            self.container.mux(packet)
        self.frames += 1

    def _cut(self, rgb: np.ndarray) -> bool:
        """True if ``rgb`` differs from the frame before by a scene cut (PSNR below ``SCENE_CUT_DB``)."""
        sub = rgb[::SCENE_CUT_STRIDE, ::SCENE_CUT_STRIDE].astype(np.float32)
        last, self._last = self._last, sub
        if last is None:
            return False  # the first frame is a key frame anyway
        mse = float(np.mean((sub - last) ** 2))
        return mse > 255.0**2 / 10 ** (SCENE_CUT_DB / 10)

    def close(self) -> None:
        for packet in self.stream.encode():
            self.container.mux(packet)
        self.container.close()


def concat_videos(parts: Sequence[Path], out: Path) -> None:
    """The episodes' videos back to back in one file: packets copied with their times shifted, no re-encoding."""
    av = need_av()
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
        _fsync(tmp)
        os.replace(tmp, out)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
