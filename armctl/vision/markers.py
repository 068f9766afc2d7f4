"""ArUco markers: finding them in a picture, and where they are in space.

- ``detect_markers(frame, dictionary="5x5_100")`` -> ``{id: corners}``, each (4, 2) pixels in ArUco's order
  (the marker's top-left, top-right, bottom-right, bottom-left as printed), each the crossing of two of the
  marker's outer edges, fitted to sub-pixel (``refine_by_edges``);
- ``marker_pose(corners, size_m, model)`` -> the marker's frame in the camera's (4x4, metres; OpenCV's
  ``solvePnP`` with ``SOLVEPNP_IPPE_SQUARE``): origin the marker's centre, x to the right of the printed
  marker, y up it, z out of its face (toward a camera that sees it);
- ``marker_centre_px(corners, model)``: where the marker's centre is in the picture (its diagonals' crossing,
  in the undistorted picture: a square's centre under perspective, not the corners' mean);
- ``pixel_to_plane(px, model, cam_to_base, z_m)``: the point of the horizontal plane z = ``z_m`` (base frame)
  a pixel sees;
- ``part_on_table(corners, size_m, model, cam_to_base)`` -> ``(x, y, yaw, z)``: a part lying flat on the table,
  its marker face up, in the base frame (what ``robot.find(marker=ID)`` and ``pick --marker`` use).

``size_m`` is the side of the marker's black square (ArUco's marker length), not counting the white quiet zone
around it. The dictionary is named as ArUco's constants are, with or without ``DICT_``: ``5x5_100`` (the
default, ``DICT_5X5_100``), ``4x4_50``, ``6x6_250``, ``aruco_original``, ``apriltag_36h11`` ...

The detector (``marker_detector``): OpenCV's ``ArucoDetector`` with sub-pixel corners (a window of half a cell
where OpenCV's relative default takes 0.3), reading each cell from its middle (8 pixels a cell, 30% of a
cell's margin left out, where OpenCV reads 4 and leaves 13%: a blurred marker's cells bleed into each other at
their edges) and correcting up to 80% of the bit errors the dictionary can (OpenCV: 60%). On the simulated
camera's pictures (``bench/camera.py``: 150 frames, MeArm, 640x480) the corners come out 0.012 px rms from the
truth on a sharp 30 px marker (OpenCV's defaults: 0.57 px), 0.21 px on a 20 px, blurred, dim one (1.08 px),
which it finds in 138 frames of 150 where OpenCV's defaults find 54; in 1.5-3.5 ms a frame (OpenCV's: 0.7-0.9
ms; the edges cost about 0.4 ms a marker): 30 frames/s (33 ms a frame) kept at p99 with room to spare.
"""

from __future__ import annotations

import functools
import math

import numpy as np

from armctl.errors import BadInputError
from armctl.vision.sources import CameraModel, need_cv2

DEFAULT_DICTIONARY = "5x5_100"


@functools.cache
def aruco_dictionary(name: str = DEFAULT_DICTIONARY):
    """OpenCV's predefined ArUco dictionary ``name`` (``5x5_100`` or ``DICT_5X5_100``); BadInputError if none."""
    cv2 = need_cv2()
    key = str(name).strip().upper()
    key = key if key.startswith("DICT_") else "DICT_" + key
    value = getattr(cv2.aruco, key, None)
    if not isinstance(value, int):
        known = sorted(k[5:].lower() for k in dir(cv2.aruco) if k.startswith("DICT_"))
        raise BadInputError(f"ArUco dictionary {name!r}: no such dictionary; known: {', '.join(known)}")
    return cv2.aruco.getPredefinedDictionary(value)


def detector_parameters():
    """The detector's parameters (see the module docstring): sub-pixel corners, cells read from their middles."""
    cv2 = need_cv2()
    p = cv2.aruco.DetectorParameters()
    p.cornerRefinementMethod = cv2.aruco.CORNER_REFINE_SUBPIX
    p.relativeCornerRefinmentWinSize = 0.5
    p.perspectiveRemovePixelPerCell = 8
    p.perspectiveRemoveIgnoredMarginPerCell = 0.3
    p.errorCorrectionRate = 0.8
    return p


@functools.cache
def marker_detector(dictionary: str = DEFAULT_DICTIONARY):
    """The ArUco detector armctl uses for ``dictionary`` (one per dictionary, kept)."""
    return need_cv2().aruco.ArucoDetector(aruco_dictionary(dictionary), detector_parameters())


def detect_markers(
    frame, dictionary: str = DEFAULT_DICTIONARY, *, detector=None, edges: bool = True
) -> dict[int, np.ndarray]:
    """The markers of ``dictionary`` in ``frame`` (BGR or gray uint8): id -> corners (4, 2) float pixels, in
    ArUco's order, refined by the marker's edges (``refine_by_edges``; ``edges=False``: as the detector gives
    them). An id seen twice keeps its largest sighting. ``detector``: another ArucoDetector (to compare)."""
    cv2 = need_cv2()
    image = np.asarray(frame)
    gray = cv2.cvtColor(image, cv2.COLOR_BGR2GRAY) if image.ndim == 3 else image
    corners, ids, _ = (detector or marker_detector(dictionary)).detectMarkers(gray)
    found: dict[int, np.ndarray] = {}
    if ids is None:
        return found
    for c, i in zip(corners, ids.ravel()):
        c = np.asarray(c, dtype=float).reshape(4, 2)
        old = found.get(int(i))
        if old is None or cv2.contourArea(c.astype(np.float32)) > cv2.contourArea(old.astype(np.float32)):
            found[int(i)] = c
    if edges:
        cells = marker_cells(dictionary)
        found = {i: refine_by_edges(gray, c, cells) for i, c in found.items()}
    return found


def _edge_points(gray, c: np.ndarray, cells: int) -> tuple[np.ndarray, np.ndarray]:
    """Sub-pixel points of the marker's four outer edges (corner k to corner k+1, between the black border and
    the white quiet zone), (4, S, 2) and which are found (4, S): along each edge's middle 70%, where each
    cross-section (1.5 cells long, a quarter-pixel step) crosses halfway between its darkest and brightest."""
    cv2 = need_cv2()
    a, b = c, np.roll(c, -1, axis=0)
    length = np.linalg.norm(b - a, axis=1)
    t = (b - a) / np.maximum(length, 1e-9)[:, None]
    n = np.column_stack([t[:, 1], -t[:, 0]])
    n *= np.where(np.sum(n * ((a + b) / 2.0 - c.mean(axis=0)), axis=1) > 0, 1.0, -1.0)[:, None]  # outward
    ss = np.linspace(0.15, 0.85, max(5, int(length.mean() / 1.5)))
    cell = float(length.mean()) / cells
    offs = np.arange(-0.75 * cell, 0.75 * cell + 1e-9, 0.25)
    on_edge = a[:, None, :] + ss[None, :, None] * (b - a)[:, None, :]  # (4, S, 2)
    pts = on_edge[:, :, None, :] + offs[None, None, :, None] * n[:, None, None, :]  # (4, S, O, 2)
    flat = pts.reshape(-1, len(offs), 2).astype(np.float32)
    prof = cv2.remap(gray, flat[..., 0], flat[..., 1], cv2.INTER_LINEAR).astype(float)  # (4S, O)
    lo, hi = prof.min(axis=1), prof.max(axis=1)
    above = prof >= ((lo + hi) / 2.0)[:, None]
    first = np.argmax(above, axis=1)  # the first sample, from the black side, at or above halfway
    ok = (hi - lo > 8.0) & (first > 0) & above[:, -1]
    rows = np.arange(len(prof))
    f0, f1 = prof[rows, np.maximum(first - 1, 0)], prof[rows, first]
    step = offs[1] - offs[0]
    at = offs[np.maximum(first - 1, 0)] + step * ((lo + hi) / 2.0 - f0) / np.maximum(f1 - f0, 1e-9)
    found = on_edge + at.reshape(4, -1)[..., None] * n[:, None, :]
    return found, ok.reshape(4, -1)


def refine_by_edges(gray, corners, cells: int) -> np.ndarray:
    """The corners (4, 2) as the crossings of the marker's four outer edges, each a line fitted to its
    sub-pixel edge points (``_edge_points``): a blurred square's corners are rounded, its edges' halfway lines
    are not, so this is unbiased where a corner detector pulls each corner into the black. An edge with too
    few points keeps the corners as given."""
    c = np.asarray(corners, dtype=float).reshape(4, 2)
    pts, ok = _edge_points(gray, c, cells)
    if np.any(ok.sum(axis=1) < 3):
        return c
    w = ok.astype(float) / ok.sum(axis=1, keepdims=True)
    mean = np.einsum("es,esk->ek", w, pts)  # (4, 2): a point of each edge's line
    d = pts - mean[:, None, :]
    cxx, cyy, cxy = (np.einsum("es,es->e", w, d[..., i] * d[..., j]) for i, j in ((0, 0), (1, 1), (0, 1)))
    angle = 0.5 * np.arctan2(2.0 * cxy, cxx - cyy)  # each edge's direction: its points' principal axis
    u = np.column_stack([np.cos(angle), np.sin(angle)])
    p, e, q, f = np.roll(mean, 1, axis=0), np.roll(u, 1, axis=0), mean, u  # corner k: edge k-1 meets edge k
    det = e[:, 0] * -f[:, 1] + f[:, 0] * e[:, 1]
    if np.any(np.abs(det) < 1e-9):
        return c
    r = q - p
    s = (r[:, 0] * -f[:, 1] + f[:, 0] * r[:, 1]) / det
    return p + s[:, None] * e


def marker_image(marker_id: int, dictionary: str = DEFAULT_DICTIONARY, *, cell_px: int = 20, quiet_cells: int = 1):
    """Marker ``marker_id`` as printed (gray uint8): its cells ``cell_px`` pixels each, a white quiet zone of
    ``quiet_cells`` cells around its black border."""
    cv2 = need_cv2()
    d = aruco_dictionary(dictionary)
    if not 0 <= int(marker_id) < d.bytesList.shape[0]:
        raise BadInputError(f"marker id {marker_id}: ArUco {dictionary} has ids 0..{d.bytesList.shape[0] - 1}")
    cells = d.markerSize + 2
    image = cv2.aruco.generateImageMarker(d, int(marker_id), cells * cell_px, borderBits=1)
    q = quiet_cells * cell_px
    return cv2.copyMakeBorder(image, q, q, q, q, cv2.BORDER_CONSTANT, value=255)


def marker_cells(dictionary: str = DEFAULT_DICTIONARY) -> int:
    """Cells across a marker of ``dictionary``, its black border included (7 for 5x5)."""
    return aruco_dictionary(dictionary).markerSize + 2


def marker_object_points(size_m: float) -> np.ndarray:
    """The corners (4, 3) of a marker of side ``size_m`` in its own frame, in ArUco's order (z = 0)."""
    h = size_m / 2.0
    return np.array([[-h, h, 0.0], [h, h, 0.0], [h, -h, 0.0], [-h, -h, 0.0]])


def _rt_to_matrix(rvec, tvec) -> np.ndarray:
    T = np.eye(4)
    T[:3, :3] = need_cv2().Rodrigues(np.asarray(rvec, dtype=float).reshape(3))[0]
    T[:3, 3] = np.asarray(tvec, dtype=float).reshape(3)
    return T


def marker_poses(corners, size_m: float, model: CameraModel) -> list[np.ndarray]:
    """Both poses (4x4 marker-to-camera) IPPE finds for a square marker, best reprojection first (a small or
    distant marker's two are close: a flat view cannot tell a tilt from its mirror)."""
    cv2 = need_cv2()
    img = np.asarray(corners, dtype=np.float64).reshape(4, 1, 2)
    n, rvecs, tvecs, _ = cv2.solvePnPGeneric(
        marker_object_points(size_m), img, model.matrix, model.dist, flags=cv2.SOLVEPNP_IPPE_SQUARE
    )
    return [_rt_to_matrix(rvecs[i], tvecs[i]) for i in range(int(n))]


def marker_pose(corners, size_m: float, model: CameraModel) -> np.ndarray:
    """The marker's frame in the camera's (4x4, metres; see the module docstring), IPPE's best."""
    return marker_poses(corners, size_m, model)[0]


def undistort_px(px, model: CameraModel) -> np.ndarray:
    """Pixels (N, 2) of the picture as an ideal pinhole camera of the same matrix would see them."""
    cv2 = need_cv2()
    p = np.asarray(px, dtype=np.float64).reshape(-1, 1, 2)
    if not np.any(np.asarray(model.dist, dtype=float) != 0.0):
        return p.reshape(-1, 2).copy()
    return cv2.undistortPoints(p, model.matrix, model.dist, P=model.matrix).reshape(-1, 2)


def _crossing(a, b, c, d) -> np.ndarray:
    """Where line a-c crosses line b-d (2D)."""
    r, s = c - a, d - b
    den = r[0] * s[1] - r[1] * s[0]
    if abs(den) < 1e-12:
        return (a + b + c + d) / 4.0
    t = ((b[0] - a[0]) * s[1] - (b[1] - a[1]) * s[0]) / den
    return a + t * r


def marker_centre_px(corners, model: CameraModel | None = None) -> np.ndarray:
    """The marker's centre in the picture (2,): its diagonals' crossing, taken in the undistorted picture when
    ``model`` is given (then put back through the lens: a pixel of the picture as it is)."""
    c = np.asarray(corners, dtype=float).reshape(4, 2)
    if model is None:
        return _crossing(*c)
    ideal = _crossing(*undistort_px(c, model))
    if not np.any(np.asarray(model.dist, dtype=float) != 0.0):
        return ideal
    cv2 = need_cv2()
    ray = np.linalg.solve(model.matrix, np.array([ideal[0], ideal[1], 1.0]))
    out, _ = cv2.projectPoints(ray.reshape(1, 1, 3), np.zeros(3), np.zeros(3), model.matrix, model.dist)
    return out.reshape(2)


def pixel_rays(px, model: CameraModel) -> np.ndarray:
    """Directions (N, 3) in the camera frame (z = 1) of what pixels (N, 2) see, the lens undone."""
    ideal = undistort_px(px, model)
    return np.column_stack([(ideal - [model.cx, model.cy]) / [model.fx, model.fy], np.ones(len(ideal))])


def pixel_to_plane(px, model: CameraModel, cam_to_base, z_m: float) -> np.ndarray:
    """The point (3,) of the plane z = ``z_m`` (base frame, metres) that pixel ``px`` sees; ``cam_to_base`` is
    the camera's frame in the base (4x4). BadInputError when the pixel's ray never meets the plane."""
    T = np.asarray(cam_to_base, dtype=float)
    d = T[:3, :3] @ pixel_rays(np.reshape(px, (1, 2)), model)[0]
    o = T[:3, 3]
    if abs(d[2]) < 1e-12 or (z_m - o[2]) / d[2] <= 0.0:
        raise BadInputError(f"pixel {tuple(np.round(np.ravel(px), 1))} does not see the plane z = {z_m:.3f} m")
    return o + d * (z_m - o[2]) / d[2]


def part_on_table(corners, size_m: float, model: CameraModel, cam_to_base) -> tuple[float, float, float, float]:
    """A part lying on the table, its marker (side ``size_m``) face up: ``(x, y, yaw, z)`` in the base frame
    (metres, radians; yaw: the marker's x axis from the base's x, in (-pi, pi]; z: the marker's height).

    The part lies flat, so its marker's plane is level: the corners' rays (the lens undone) meet a level plane,
    the one where the square they make has the marker's side; its centre and its edges' directions are the
    part's (a level square's pose has 4 unknowns, which the 8 corner coordinates give with room to spare: no
    tilt to guess, as a free pose from a small marker must). BadInputError when a corner is not seen below
    the camera."""
    T = np.asarray(cam_to_base, dtype=float)
    R = T[:3, :3]
    rays = R @ pixel_rays(corners, model).T  # (3, 4) in the base frame's orientation
    down = -rays[2]
    if np.any(down <= 1e-9):
        raise BadInputError("marker seen at or above the camera's height: it cannot lie on the table")
    pts = (rays / down).T  # the corners on the level plane 1 m below the camera
    side = np.mean([np.linalg.norm(pts[i] - pts[(i + 1) % 4]) for i in range(4)])
    pts *= size_m / side
    centre = pts.mean(axis=0) + T[:3, 3]
    x_dir = (pts[1] + pts[2] - pts[0] - pts[3])[:2]
    y_dir = (pts[0] + pts[1] - pts[2] - pts[3])[:2]
    heading = x_dir / np.linalg.norm(x_dir) + np.array([y_dir[1], -y_dir[0]]) / np.linalg.norm(y_dir)
    yaw = math.atan2(float(heading[1]), float(heading[0]))
    return float(centre[0]), float(centre[1]), yaw, float(centre[2])
