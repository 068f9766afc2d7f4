"""Cameras for datasets: any OpenCV capture source (a device number or path, a video file, a stream URL).

``Camera(name, source)`` opens it and reads a first frame before anything moves (BadInputError naming it
otherwise). A live source (a device, a URL) is read continuously by a thread and ``grab()`` gives the
latest frame; a video file gives its frames one by one, one per ``grab()`` (then its last frame again), so a
dataset made from a file holds exactly the file's frames. Frames are RGB (H, W, 3) uint8, cropped to an
even width and height (what yuv420p video needs). A camera source the app layer opens (``open_cameras``'s
``open_source``: ``simcam://``, ``physicscam://NAME``) is read at each ``grab()``: the frame for that moment.
"""

from __future__ import annotations

import os
import re
import threading
from pathlib import Path

import numpy as np

from armctl.errors import BadInputError, LinkError

NAME_RE = re.compile(r"^[A-Za-z0-9_-]+$")


def parse_camera(text: str) -> tuple[str, str]:
    """``NAME=SOURCE`` -> (name, source); BadInputError for another form or a name LeRobot cannot take."""
    name, sep, source = str(text).partition("=")
    name, source = name.strip(), source.strip()
    if not sep or not name or not source:
        raise BadInputError(f"--camera {text!r}: expected NAME=SOURCE (e.g. front=/dev/video0, top=0, wrist=clip.mp4)")
    if not NAME_RE.match(name):
        raise BadInputError(f"--camera {text!r}: the name may hold letters, digits, _ and - only")
    return name, source


def need_cv2(extra: str = "dataset"):
    """OpenCV, quiet (its own warnings, and its FFmpeg's for a source that cannot be opened, would be several lines
    on stderr; the one line armctl prints names the camera), or a BadInputError naming the extra to install."""
    os.environ.setdefault("OPENCV_FFMPEG_LOGLEVEL", "-8")  # AV_LOG_QUIET
    try:
        import cv2
    except ImportError:
        raise BadInputError(f"cameras need OpenCV: pip install 'armctl[{extra}]'") from None
    log = getattr(getattr(cv2, "utils", None), "logging", None)
    if log is not None and hasattr(log, "setLogLevel"):
        log.setLogLevel(log.LOG_LEVEL_ERROR)
    return cv2


class Camera:
    """An open capture source (see the module docstring): ``name``, ``source``, ``height``, ``width``."""

    def __init__(self, name: str, source: str):
        cv2 = need_cv2()
        self.name, self.source = name, source
        self.is_file = Path(source).is_file()
        what = int(source) if source.isdigit() else source
        if not self.is_file and isinstance(what, str) and what.startswith("/dev/") and not os.path.exists(what):
            raise BadInputError(f"--camera {name}={source}: no such device")
        self.cap = cv2.VideoCapture(what)
        ok, frame = self.cap.read() if self.cap.isOpened() else (False, None)
        if not ok or frame is None or frame.ndim != 3:
            self.cap.release()
            raise BadInputError(
                f"--camera {name}={source}: cannot open it or read a frame (no such device, file or stream, or "
                "not a picture)"
            )
        h, w = frame.shape[:2]
        self.height, self.width = h - h % 2, w - w % 2
        self._latest = self._rgb(frame)
        self._lock = threading.Lock()
        self._closed = False
        self._first = True
        self._error: str | None = None
        self._thread = None
        if not self.is_file:
            self._thread = threading.Thread(target=self._run, name=f"armctl-camera-{name}", daemon=True)
            self._thread.start()

    def _rgb(self, bgr) -> np.ndarray:
        return np.ascontiguousarray(bgr[: self.height, : self.width, ::-1])

    def _run(self) -> None:
        while not self._closed:
            ok, frame = self.cap.read()
            if not ok:
                self._error = "stopped giving frames"
                return
            with self._lock:
                self._latest = self._rgb(frame)

    def grab(self) -> np.ndarray:
        """The frame for now: the latest (a live source), the next one (a file). LinkError if a live source
        stopped giving frames."""
        if self.is_file:
            if self._first:  # the frame read at open is the file's first
                self._first = False
                return self._latest
            ok, frame = self.cap.read()
            if ok and frame is not None:
                self._latest = self._rgb(frame)
            return self._latest
        if self._error is not None:
            raise LinkError(f"camera {self.name} ({self.source}) {self._error}")
        with self._lock:
            return self._latest

    def close(self) -> None:
        """Stop reading and release the source (safe to call twice)."""
        if self._closed:
            return
        self._closed = True
        if self._thread is not None:
            self._thread.join(timeout=1.0)
        self.cap.release()


class SourceCamera(Camera):
    """A camera source opened by the app layer (``read()`` gives BGR frames, ``close()``), read at each ``grab()``."""

    def __init__(self, name: str, source: str, opened):
        self.name, self.source, self.opened = name, source, opened
        self.is_file, self._closed = False, False
        frame = opened.read()
        if frame is None or frame.ndim != 3:
            opened.close()
            raise BadInputError(f"--camera {name}={source}: gives no picture")
        h, w = frame.shape[:2]
        self.height, self.width = h - h % 2, w - w % 2

    def grab(self) -> np.ndarray:
        frame = self.opened.read()
        if frame is None:
            raise LinkError(f"camera {self.name} ({self.source}) stopped giving frames")
        return self._rgb(frame)

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self.opened.close()


def open_cameras(specs, open_source=None) -> dict[str, Camera]:
    """``NAME=SOURCE`` strings -> open cameras (all closed again if one fails); names must differ.
    ``open_source(source)``: a camera source for the sources the app layer opens (``SCHEME://``), else None."""
    cams: dict[str, Camera] = {}
    try:
        for text in specs or ():
            name, source = parse_camera(text)
            if name in cams:
                raise BadInputError(f"--camera {text!r}: a second camera named {name!r}")
            opened = open_source(source) if open_source is not None else None
            cams[name] = Camera(name, source) if opened is None else SourceCamera(name, source, opened)
    except BaseException:
        for c in cams.values():
            c.close()
        raise
    return cams
