"""Camera intrinsics from views of a ChArUco board, and the camera file that keeps them.

``collect_views`` finds the board's chessboard corners in every frame of a source (OpenCV's ``CharucoDetector``;
a view with fewer than ``MIN_CORNERS`` corners, or with its corners on one line, is skipped), ``calibrate`` fits
the pinhole camera and its lens distortion to them (``cv2.calibrateCamera`` on the corners matched to the board's
own points: ``CharucoBoard.matchImagePoints``) and gives the reprojection error. The camera file (YAML:
``camera_matrix`` 3x3, ``dist_coeffs``, ``image_size``, ``rms_px``, the board, the views used, the date) is saved
in the calibration folder (``default_camera_file``: ``./calibration/camera.yaml`` when that exists, else
``camera.yaml`` in the user's calibration folder) or where ``--camera-file`` says; ``load_camera_file`` reads it
back as a ``CameraModel`` for the commands that use the camera.
"""

from __future__ import annotations

import json
import math
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from armctl.core.config import Section, load_yaml_file, load_yaml_text
from armctl.core.paths import atomic_write, user_calibration_dir
from armctl.errors import BadInputError, ConfigError
from armctl.vision.board import BoardSpec, charuco_board, charuco_detector
from armctl.vision.sources import CameraModel, CameraSource, need_cv2

MIN_CORNERS = 6  # fewer corners in a view: it is skipped
MIN_VIEWS = 4  # fewer usable views: no calibration
LIVE_VIEWS = 20  # a live camera: this many views, each with the board moved since the last one
LIVE_MOVE_PX = 25.0  # how far (mean over the corners both views saw) the board must move to count again
MIN_TILT_DEG = 10.0  # the largest tilt of the board over the views must reach this (else the focal is unobservable)
MAX_STD = 0.02  # a standard deviation over this share of the focal length (fx, fy) or picture size (cx, cy): refused
CAMERA_FILE = "camera.yaml"
FORMAT_VERSION = 1
_DIST_COUNTS = (4, 5, 8, 12, 14)  # the lengths OpenCV's distortion vector may have


@dataclass
class Views:
    """The board's corners found in a source's frames: per usable view, object points (N, 3, metres on the board)
    and their pixels (N, 2); ``seen`` frames were looked at, ``size`` (width, height) is theirs."""

    object_points: list[np.ndarray] = field(default_factory=list)
    image_points: list[np.ndarray] = field(default_factory=list)
    seen: int = 0
    with_board: int = 0
    size: tuple[int, int] = (0, 0)

    @property
    def used(self) -> int:
        return len(self.image_points)


@dataclass(frozen=True)
class CameraCalibration:
    """A camera's intrinsics as fitted (or as read back from a camera file)."""

    model: CameraModel
    rms_px: float
    board: str = ""
    views_used: int = 0
    views_seen: int = 0
    source: str = ""
    date: str = ""
    #: one standard deviation of fx, fy, cx, cy (px), from the fit's own covariance (OpenCV's estimate)
    std_px: tuple[float, ...] = ()
    #: each used view's reprojection error (rms, px), in the order seen
    view_rms_px: tuple[float, ...] = ()

    def to_dict(self) -> dict:
        """The JSON of ``armctl camera calibrate --json``."""
        m = self.model
        return {
            "camera_matrix": [[float(v) for v in row] for row in m.matrix],
            "dist_coeffs": [float(v) for v in np.ravel(m.dist)],
            "image_size": [int(m.size[0]), int(m.size[1])],
            "rms_px": float(self.rms_px),
            "fx": m.fx,
            "fy": m.fy,
            "cx": m.cx,
            "cy": m.cy,
            "std_px": dict(zip(("fx", "fy", "cx", "cy"), self.std_px)),
            "view_rms_px": list(self.view_rms_px),
            "board": self.board,
            "views_used": self.views_used,
            "views_seen": self.views_seen,
            "source": self.source,
            "date": self.date,
        }


# --- finding the board ------------------------------------------------------------------------------------------


def detect_corners(image: np.ndarray, spec: BoardSpec, detector=None, board=None):
    """The board's chessboard corners in ``image`` (BGR or gray): (object points (N, 3), pixels (N, 2)), both
    float32, or None when fewer than ``MIN_CORNERS`` were found or they lie on one line."""
    cv2 = need_cv2()
    board = board if board is not None else charuco_board(spec)
    detector = detector if detector is not None else charuco_detector(spec)
    gray = image if image.ndim == 2 else cv2.cvtColor(image, cv2.COLOR_BGR2GRAY)
    corners, ids, _, _ = detector.detectBoard(gray)
    if ids is None or len(ids) < MIN_CORNERS or board.checkCharucoCornersCollinear(ids):
        return None
    obj, img = board.matchImagePoints(corners, ids)
    return obj.reshape(-1, 3).astype(np.float32), img.reshape(-1, 2).astype(np.float32)


def collect_views(source: CameraSource, spec: BoardSpec, *, live_views: int = LIVE_VIEWS, progress=None) -> Views:
    """The usable views of ``source``: every frame of a finite source (a folder, a video, rendered views); from a
    live camera, frames until ``live_views`` views where the board has moved since the last kept one.
    ``progress(views)`` is called after each frame."""
    board, detector = charuco_board(spec), charuco_detector(spec)
    views = Views(size=tuple(source.size))
    last: np.ndarray | None = None
    for frame in source.frames():
        views.seen += 1
        views.size = (frame.shape[1], frame.shape[0])
        found = detect_corners(frame, spec, detector, board)
        if found is not None:
            views.with_board += 1
            if source.finite or last is None or _moved_px(last, found) >= LIVE_MOVE_PX:
                views.object_points.append(found[0])
                views.image_points.append(found[1])
                last = found
        if progress is not None:
            progress(views)
        if not source.finite and views.used >= live_views:
            break
    return views


def _moved_px(a, b) -> float:
    """How far the corners both views saw moved (mean, pixels); inf when they share none."""
    ka = {tuple(p): q for p, q in zip(a[0].round(6).tolist(), a[1])}
    moves = [np.linalg.norm(ka[tuple(p)] - q) for p, q in zip(b[0].round(6).tolist(), b[1]) if tuple(p) in ka]
    return float(np.mean(moves)) if moves else math.inf


# --- the fit --------------------------------------------------------------------------------------------------


def check_views(views: Views, spec: BoardSpec, where: str) -> None:
    """BadInputError (one line) when ``views`` cannot calibrate: no board anywhere, or fewer than MIN_VIEWS."""
    if views.seen == 0:
        raise BadInputError(f"--camera {where}: gave no picture")
    if views.with_board == 0:
        raise BadInputError(
            f"--camera {where}: no ChArUco board {spec.text} in any of the {views.seen} pictures (is --board the "
            "printed board: squares, sizes and dictionary?)"
        )
    if views.used < MIN_VIEWS:
        raise BadInputError(
            f"--camera {where}: only {views.used} of {views.seen} pictures show the board with >= {MIN_CORNERS} "
            f"corners; calibration needs at least {MIN_VIEWS} (better 10-20, the board tilted in different ways)"
        )


def calibrate(views: Views, spec: BoardSpec, *, source: str = "") -> CameraCalibration:
    """The camera's matrix and distortion fitted to ``views`` (``cv2.calibrateCamera``, OpenCV's default model:
    k1 k2 p1 p2 k3; through ``calibrateCameraExtended``, the same fit that also gives the intrinsics' standard
    deviations and each view's error) and the reprojection error (rms, pixels). BadInputError when they cannot
    calibrate."""
    cv2 = need_cv2()
    check_views(views, spec, source)
    try:
        fit = cv2.calibrateCameraExtended(views.object_points, views.image_points, views.size, None, None)
        rms, K, dist, rvecs, std, per_view = fit[0], fit[1], fit[2], fit[3], fit[5], fit[7]
    except cv2.error as exc:
        why = str(exc).strip().splitlines()[-1] if str(exc).strip() else "no solution"
        raise BadInputError(f"--camera {source}: the calibration did not converge ({why})") from None
    K = np.asarray(K, dtype=float)
    if not (np.all(np.isfinite(K)) and np.all(np.isfinite(dist)) and K[0, 0] > 0 and K[1, 1] > 0):
        raise BadInputError(f"--camera {source}: the calibration did not converge (tilt the board more between views)")
    check_observable(K, np.ravel(std)[:4], rvecs, views.size, source)
    model = CameraModel(K, np.asarray(dist, dtype=float).ravel(), (int(views.size[0]), int(views.size[1])))
    return CameraCalibration(
        model,
        float(rms),
        board=spec.text,
        views_used=views.used,
        views_seen=views.seen,
        source=source,
        date=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        std_px=tuple(float(v) for v in np.ravel(std)[:4]),
        view_rms_px=tuple(float(v) for v in np.ravel(per_view)),
    )


def check_observable(K: np.ndarray, std, rvecs, size, source: str) -> None:
    """BadInputError naming the parameter the views cannot pin down: the focal length when the board is nearly
    square-on in every view (less than ``MIN_TILT_DEG``: a frontal board looks the same near with a long focal
    length as far with a short one), any of fx, fy, cx, cy whose standard deviation is over ``MAX_STD`` of the focal
    length or of the picture's size."""
    cv2 = need_cv2()
    tilts = [math.degrees(math.acos(min(1.0, abs(cv2.Rodrigues(np.asarray(r, float))[0][2, 2])))) for r in rvecs]
    if max(tilts) < MIN_TILT_DEG:
        raise BadInputError(
            f"--camera {source}: the focal length is not observable: the board is nearly square-on in every view "
            f"(tilted {max(tilts):.0f} deg at most); tilt it 20-40 deg in different directions"
        )
    scales = (K[0, 0], K[1, 1], size[0], size[1])
    for name, sigma, scale in zip(("fx", "fy", "cx", "cy"), np.ravel(std), scales):
        if not (math.isfinite(sigma) and sigma <= MAX_STD * scale):
            raise BadInputError(
                f"--camera {source}: {name} is not observable from these views (+- {sigma:.3g} px): show the board "
                "at more places, near the picture's edges too, and tilted in different directions"
            )


# --- the camera file ------------------------------------------------------------------------------------------


def default_camera_file(*, cwd: Path | None = None) -> Path:
    """Where the camera file is saved and looked for when ``--camera-file`` is not given:
    ``./calibration/camera.yaml`` when it exists (a project folder, as for the arms' calibrations), else
    ``camera.yaml`` in the user's calibration folder (``armctl.core.paths.user_calibration_dir``)."""
    local = (cwd or Path.cwd()) / "calibration" / CAMERA_FILE
    return local if local.is_file() else user_calibration_dir() / CAMERA_FILE


def _num(v: float) -> str:
    return f"{float(v):.10g}"


def to_yaml(cal: CameraCalibration) -> str:
    """The camera file's text."""
    m = cal.model
    rows = ", ".join("[" + ", ".join(_num(v) for v in row) + "]" for row in m.matrix)
    return (
        f"# armctl camera calibration: {cal.views_used} views of {cal.board or 'a board'}, {cal.date}\n"
        f"version: {FORMAT_VERSION}\n"
        f"camera_matrix: [{rows}]   # [[fx, 0, cx], [0, fy, cy], [0, 0, 1]], pixels\n"
        f"dist_coeffs: [{', '.join(_num(v) for v in np.ravel(m.dist))}]   # OpenCV's k1, k2, p1, p2, k3\n"
        f"image_size: [{int(m.size[0])}, {int(m.size[1])}]   # width, height\n"
        f"rms_px: {_num(cal.rms_px)}   # reprojection error\n"
        + (
            f"std_px: [{', '.join(_num(v) for v in cal.std_px)}]   # one sigma of fx, fy, cx, cy\n"
            if cal.std_px
            else ""
        )
        + f"board: {json.dumps(cal.board)}\n"
        f"views_used: {cal.views_used}\n"
        f"views_seen: {cal.views_seen}\n"
        f"source: {json.dumps(cal.source)}\n"
        f"date: {json.dumps(cal.date)}\n"
    )


def save_camera_file(cal: CameraCalibration, path: str | Path) -> Path:
    """Write the camera file atomically, the previous one kept as ``<file>.bak``; read back before writing.
    BadInputError naming the place when it cannot be written."""
    path = Path(path)
    text = to_yaml(cal)
    parse_camera_file(load_yaml_text(text, path), path)
    try:
        if path.exists():
            atomic_write(path.with_name(path.name + ".bak"), path.read_bytes())
        return atomic_write(path, text)
    except OSError as exc:
        raise BadInputError(
            f"cannot save the camera file to {path}: {exc.strerror or exc}; choose another place with --camera-file"
        ) from None


def read_camera_file(path: str | Path) -> CameraCalibration:
    """A camera file, validated; ConfigError naming the file, key and line of what is wrong."""
    return parse_camera_file(load_yaml_file(path), Path(path))


def load_camera_file(path: str | Path | None = None) -> CameraModel:
    """The camera (matrix, distortion, image size) a camera file holds (None: ``default_camera_file()``, with a
    line saying how to make it when it is missing)."""
    if path is None:
        path = default_camera_file()
        if not path.is_file():
            raise ConfigError(
                "no camera file: run 'armctl camera calibrate --camera SRC' first, or give --camera-file", path=path
            )
    return read_camera_file(path).model


def parse_camera_file(data, path) -> CameraCalibration:
    """Validate a parsed camera file (see ``to_yaml``)."""
    sec = Section(data, path=path)
    version = sec.number("version", FORMAT_VERSION)
    if version != FORMAT_VERSION:
        raise sec.error("version", f"unsupported camera file version {version:g} (this armctl reads {FORMAT_VERSION})")
    K = _matrix(sec)
    dist = sec.numbers("dist_coeffs", count=_DIST_COUNTS)
    size = sec.numbers("image_size", count=2)
    if any(v < 1 or v != int(v) or v > 100_000 for v in size):
        raise sec.error("image_size", f"expected [width, height] in whole pixels, found {size}")
    cal = CameraCalibration(
        CameraModel(K, np.array(dist), (int(size[0]), int(size[1]))),
        sec.number("rms_px", math.nan, lo=0.0),
        board=sec.string("board", ""),
        views_used=int(sec.number("views_used", 0, lo=0)),
        views_seen=int(sec.number("views_seen", 0, lo=0)),
        source=sec.string("source", ""),
        date=str(sec.raw("date", "")),
        std_px=tuple(sec.numbers("std_px", [], count=4)),
    )
    sec.done()
    return cal


def _matrix(sec: Section) -> np.ndarray:
    rows = sec.items("camera_matrix")
    ok = len(rows) == 3 and all(isinstance(r, list) and len(r) == 3 for r in rows)
    if ok:
        ok = all(not isinstance(v, bool) and isinstance(v, (int, float)) and math.isfinite(v) for r in rows for v in r)
    if not ok:
        raise sec.error("camera_matrix", "expected 3 rows of 3 numbers: [[fx, 0, cx], [0, fy, cy], [0, 0, 1]]")
    K = np.array(rows, dtype=float)
    if K[0, 0] <= 0 or K[1, 1] <= 0 or K[1, 0] != 0 or np.any(K[2] != [0, 0, 1]):
        raise sec.error("camera_matrix", "not a camera matrix: fx and fy > 0, the rows [0, fy, cy] and [0, 0, 1]")
    return K
