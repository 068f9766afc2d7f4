"""Camera sources, by what the user types after ``--camera``: one registry, as the boards' ports have.

- ``0``, ``1``, ... or ``/dev/videoN``: a USB camera (OpenCV's capture), read live;
- a folder: its pictures (``.png .jpg .jpeg .bmp .tif .tiff``) in name order, one per ``read()``;
- a video file: its frames in order;
- ``SCHEME://...``: the source module registered for the scheme (``simcam://``: the simulated camera;
  ``physicscam://NAME``: camera NAME of the physics scene, ``armctl.vision.physicscam``).

``open_camera(text)`` gives a ``CameraSource``: ``read()`` the next frame (BGR uint8, H x W x 3), or None once a
finite source (a folder, a file) has given all of its; ``size`` (width, height); ``intrinsics`` (a
``CameraModel``, or None: only the simulated camera knows its own); ``close()``. A source that cannot be opened
or gives no frame is a BadInputError naming it, before anything moves.
"""

from __future__ import annotations

import importlib
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from armctl.dataset.camera import need_cv2 as _need_cv2
from armctl.errors import BadInputError, LinkError

PICTURE_SUFFIXES = (".png", ".jpg", ".jpeg", ".bmp", ".tif", ".tiff")

#: scheme -> module path of the source module; the module offers ``open_source(url) -> CameraSource``
CAMERA_SCHEMES: dict[str, str] = {"simcam": "armctl.vision.simcam", "physicscam": "armctl.vision.physicscam"}


def register_camera_scheme(scheme: str, module: str) -> None:
    """Make ``--camera scheme://...`` open ``module.open_source(url)``."""
    CAMERA_SCHEMES[scheme.lower()] = module


@dataclass(frozen=True)
class CameraModel:
    """A pinhole camera: ``matrix`` (3x3: fx, fy, cx, cy), ``dist`` (OpenCV's distortion coefficients, k1 k2
    p1 p2 k3 ...) and ``size`` (width, height) in pixels."""

    matrix: np.ndarray
    dist: np.ndarray
    size: tuple[int, int]

    @property
    def fx(self) -> float:
        return float(self.matrix[0, 0])

    @property
    def fy(self) -> float:
        return float(self.matrix[1, 1])

    @property
    def cx(self) -> float:
        return float(self.matrix[0, 2])

    @property
    def cy(self) -> float:
        return float(self.matrix[1, 2])


def need_cv2():
    """OpenCV, quiet, or a BadInputError saying how to install it (``armctl.dataset.camera.need_cv2``)."""
    return _need_cv2("camera")


class CameraSource:
    """What every source gives (see the module docstring). ``finite``: True for a folder or a file."""

    name: str = ""
    finite: bool = False
    intrinsics: CameraModel | None = None
    size: tuple[int, int] = (0, 0)

    def read(self) -> np.ndarray | None:
        raise NotImplementedError

    def frames(self):
        """Every frame of a finite source, in order (a live source: frames for ever)."""
        while True:
            frame = self.read()
            if frame is None:
                return
            yield frame

    def close(self) -> None:
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class FolderSource(CameraSource):
    """The pictures of a folder, in name order."""

    finite = True

    def __init__(self, path: Path):
        self.name = str(path)
        self.paths = sorted(p for p in path.iterdir() if p.suffix.lower() in PICTURE_SUFFIXES and p.is_file())
        if not self.paths:
            raise BadInputError(f"--camera {path}: no pictures in this folder ({' '.join(PICTURE_SUFFIXES)})")
        self._next = 0
        first = self._load(self.paths[0])
        self.size = (first.shape[1], first.shape[0])

    def _load(self, path: Path) -> np.ndarray:
        cv2 = need_cv2()
        image = cv2.imread(str(path), cv2.IMREAD_COLOR)
        if image is None:
            raise BadInputError(f"--camera {self.name}: {path.name} is not a picture OpenCV can read")
        return image

    def read(self) -> np.ndarray | None:
        if self._next >= len(self.paths):
            return None
        path = self.paths[self._next]
        self._next += 1
        image = self._load(path)
        if (image.shape[1], image.shape[0]) != self.size:
            raise BadInputError(
                f"--camera {self.name}: {path.name} is {image.shape[1]}x{image.shape[0]}, the first picture "
                f"{self.size[0]}x{self.size[1]}: one camera's pictures have one size"
            )
        return image


class CaptureSource(CameraSource):
    """A USB camera (a device number or ``/dev/videoN``) or a video file, through OpenCV's capture."""

    def __init__(self, text: str):
        cv2 = need_cv2()
        self.name = text
        self.finite = Path(text).is_file()
        what: int | str = int(text) if text.isdigit() else text
        if isinstance(what, str) and what.startswith("/dev/") and not os.path.exists(what):
            raise BadInputError(f"--camera {text}: no such device")
        self.cap = cv2.VideoCapture(what)
        ok, frame = self.cap.read() if self.cap.isOpened() else (False, None)
        if not ok or frame is None:
            self.cap.release()
            raise BadInputError(
                f"--camera {text}: cannot open it or read a frame (no such camera, file or folder, or not a video)"
            )
        self._first: np.ndarray | None = frame
        self.size = (frame.shape[1], frame.shape[0])

    def read(self) -> np.ndarray | None:
        if self._first is not None:
            frame, self._first = self._first, None
            return frame
        ok, frame = self.cap.read()
        if ok and frame is not None:
            return frame
        if self.finite:
            return None
        raise LinkError(f"camera {self.name} stopped giving frames")

    def close(self) -> None:
        self.cap.release()


def camera_scheme(text: str) -> str:
    """The scheme of a camera source (``simcam``), lower case; "" for a device, folder or file."""
    return text.split("://", 1)[0].lower() if "://" in text else ""


def scheme_source(text: str) -> CameraSource | None:
    """The registered ``SCHEME://`` source ``text`` names, opened (a dataset records it); None for anything else."""
    return open_camera(text) if camera_scheme(text) in CAMERA_SCHEMES else None


def open_camera(text) -> CameraSource:
    """The camera source ``text`` names (see the module docstring); BadInputError if it cannot be opened."""
    text = str(text).strip()
    if not text:
        raise BadInputError("--camera: empty; give a camera number (0), a folder of pictures, a video or simcam://")
    scheme = camera_scheme(text)
    if scheme:
        module = CAMERA_SCHEMES.get(scheme)
        if module is None:
            raise BadInputError(f"--camera {text}: no camera source {scheme}://; sources: {', '.join(CAMERA_SCHEMES)}")
        return importlib.import_module(module).open_source(text)
    path = Path(text)
    if path.is_dir():
        return FolderSource(path)
    return CaptureSource(text)
