"""What the camera calibration of an arm fits, and how its parameters make a marker's pixels (eye-to-hand: the
camera on a stand, an ArUco marker on the tool; ``armctl.calibration.camerafit`` fits them).

- ``CameraObservations``: per pose, the servo values commanded (us or steps, as the calibration maps them), the
  direction of each joint's last move (+1/-1), and the marker's 4 corner pixels (ArUco's order: top-left, top-right,
  bottom-right, bottom-left of the marker, x right and y up in its frame) or its centre; and the camera model.
- ``ParamModel``: the parameter vector and its names: the base-to-camera transform (OpenCV's rvec, tvec), then per
  joint its zero (rad), gain (sign = direction, size = scale error), curve (the bow, a fraction of the servo's
  angle range at mid-pulse) and backlash (rad), then the link lengths (m), ``base_offset_m`` and
  ``shoulder_height_m`` on a base arm. A joint's true angle is

      zero + gain * believed + curve * range * 4 s (1 - s) - approach * backlash / 2

  with ``believed`` the calibration's (linear) angle for the value, ``range`` the servo's angle range min..max and
  ``s`` the value's place in min..max (``ServoCal``'s curve has this shape); the marker's frame is
  ``kinematics.tool_pose`` of the arm with the fitted lengths.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

import numpy as np

from armctl.errors import BadInputError
from armctl.model.kinematics import tool_pose

CAMERA_NAMES = ("camera rx", "camera ry", "camera rz", "camera tx", "camera ty", "camera tz")
PARAM_KINDS = ("zero", "gain", "curve", "backlash")
DEFAULT_MARKER_M = 0.030
DEFAULT_PIXEL_SIGMA = 0.5


def marker_corners_m(size_m: float) -> np.ndarray:
    """The 4 corners (4, 3) of a square marker of side ``size_m`` in its own frame, in ArUco's order (top-left,
    top-right, bottom-right, bottom-left; x right, y up, z out of its face): what ``cv2.solvePnP`` takes with
    ``SOLVEPNP_IPPE_SQUARE``."""
    h = size_m / 2.0
    return np.array([[-h, h, 0.0], [h, h, 0.0], [h, -h, 0.0], [-h, -h, 0.0]])


def need_cv2():
    """OpenCV, or BadInputError saying how to install it (the ``camera`` extra)."""
    try:
        import cv2
    except ImportError:
        raise BadInputError("the camera calibration needs OpenCV: pip install 'armctl[camera]'") from None
    return cv2


@dataclass(frozen=True)
class CameraObservations:
    """Marker sightings of an arm (see the module's doc): ``values`` (N, n) servo values, ``approach`` (N, n) the
    sign of each joint's last move, ``pixels`` (N, 4, 2) the marker's corners or (N, 1, 2) its centre, ``matrix``
    (3x3) and ``dist`` the camera's intrinsics, ``marker_m`` the marker's side, ``sigma_px`` the pixel noise."""

    values: np.ndarray
    approach: np.ndarray
    pixels: np.ndarray
    matrix: np.ndarray
    dist: np.ndarray
    marker_m: float = DEFAULT_MARKER_M
    sigma_px: float = DEFAULT_PIXEL_SIGMA

    def __post_init__(self):
        values = np.atleast_2d(np.asarray(self.values, dtype=float))
        approach = np.sign(np.asarray(self.approach, dtype=float)).reshape(values.shape)
        pixels = np.asarray(self.pixels, dtype=float)
        if pixels.ndim == 2:
            pixels = pixels[:, None, :]
        if pixels.shape[1:] not in ((4, 2), (1, 2)) or len(pixels) != len(values):
            raise BadInputError(
                f"marker pixels: expected ({len(values)}, 4, 2) corners or (N, 2) centres, "
                f"got shape {np.shape(self.pixels)}"
            )
        if np.any(approach == 0) or not np.all(np.isfinite(values)) or not np.all(np.isfinite(pixels)):
            raise BadInputError("camera observations: every value and pixel must be finite, every approach +1 or -1")
        matrix = np.asarray(self.matrix, dtype=float)
        if matrix.shape != (3, 3) or not self.marker_m > 0 or not self.sigma_px > 0:
            raise BadInputError("camera observations: the camera matrix is 3x3, marker size and pixel noise > 0")
        for name, v in (("values", values), ("approach", approach), ("pixels", pixels), ("matrix", matrix)):
            object.__setattr__(self, name, v)
        object.__setattr__(self, "dist", np.asarray(self.dist, dtype=float).ravel())

    def __len__(self) -> int:
        return len(self.values)

    @property
    def object_points(self) -> np.ndarray:
        """The observed points (k, 3) in the marker's frame: its corners, or its centre."""
        return marker_corners_m(self.marker_m) if self.pixels.shape[1] == 4 else np.zeros((1, 3))

    def subset(self, which) -> CameraObservations:
        """These observations at ``which`` (a mask or indices)."""
        return dataclasses.replace(
            self, values=self.values[which], approach=self.approach[which], pixels=self.pixels[which]
        )


def rt_to_matrix(rvec, tvec) -> np.ndarray:
    """The 4x4 transform of OpenCV's (rvec, tvec)."""
    cv2 = need_cv2()
    out = np.eye(4)
    out[:3, :3] = cv2.Rodrigues(np.asarray(rvec, dtype=float).reshape(3, 1))[0]
    out[:3, 3] = np.asarray(tvec, dtype=float).ravel()
    return out


def matrix_to_rt(T) -> np.ndarray:
    """(rx, ry, rz, tx, ty, tz): OpenCV's rvec and tvec of a 4x4 transform."""
    cv2 = need_cv2()
    T = np.asarray(T, dtype=float)
    return np.concatenate([cv2.Rodrigues(T[:3, :3])[0].ravel(), T[:3, 3]])


class ParamModel:
    """The parameters of ``arm`` driven through ``cal`` (see the module's doc): ``names``, ``believed`` (the
    vector the arm file and calibration say, camera zeros), ``scale`` (a typical size, for the solver and the
    rank test), and the functions from a vector to joint angles, the arm and the marker's pixels."""

    def __init__(self, arm, cal):
        self.arm, self.cal = arm, cal
        self.n = arm.n
        names = list(CAMERA_NAMES)
        for kind in PARAM_KINDS:
            names += [f"{j} {kind}" for j in arm.joint_names]
        names += [f"links_m[{i}]" for i in range(arm.n_links)]
        if arm.has_base:
            names += ["base_offset_m", "shoulder_height_m"]
        self.names = tuple(names)
        servos = cal.joints
        self.lo = np.array([s.lo for s in servos])
        self.hi = np.array([s.hi for s in servos])
        self.range_rad = np.abs(np.array([s.angle_rad(s.hi) - s.angle_rad(s.lo) for s in servos], dtype=float))
        n = self.n
        believed = np.concatenate([np.zeros(6), np.zeros(n), np.ones(n), np.zeros(n), np.zeros(n), arm.links_m])
        if arm.has_base:
            believed = np.concatenate([believed, [arm.base_offset_m, arm.shoulder_height_m]])
        self.believed = believed
        # a typical size of each (rad, m, ratio): the solver's x_scale and the rank test's column scaling
        scale = np.concatenate([np.full(6 + 4 * n, 0.01), np.full(len(believed) - 6 - 4 * n, 0.001)])
        self.scale = scale

    def index(self, name: str) -> int:
        """Where parameter ``name`` sits in the vector."""
        return self.names.index(name)

    def group(self, kind: str) -> slice:
        """The slice of one per-joint kind ("zero", "gain", "curve", "backlash")."""
        start = 6 + PARAM_KINDS.index(kind) * self.n
        return slice(start, start + self.n)

    def angles(self, x, values, approach) -> np.ndarray:
        """Joint angles (rad, (N, n)) of servo ``values`` reached moving in ``approach``, under parameters ``x``."""
        values = np.asarray(values, dtype=float)
        believed = self.cal.values_to_joints(values)
        s = np.clip((values - self.lo) / (self.hi - self.lo), 0.0, 1.0)
        bow = x[self.group("curve")] * self.range_rad * 4.0 * s * (1.0 - s)
        return (
            x[self.group("zero")]
            + x[self.group("gain")] * believed
            + bow
            - np.asarray(approach, dtype=float) * x[self.group("backlash")] / 2.0
        )

    def arm_of(self, x):
        """The arm with the lengths (and base offset, shoulder height) of ``x``."""
        k = 6 + 4 * self.n
        links = np.array(x[k : k + self.arm.n_links], dtype=float)
        if not self.arm.has_base:
            return dataclasses.replace(self.arm, links_m=links)
        offset, height = x[k + self.arm.n_links : k + self.arm.n_links + 2]
        return dataclasses.replace(
            self.arm, links_m=links, base_offset_m=float(offset), shoulder_height_m=float(height)
        )

    def marker_points(self, x, obs: CameraObservations) -> np.ndarray:
        """The observed marker points (N, k, 3) in the base frame under ``x``."""
        T = tool_pose(self.arm_of(x), self.angles(x, obs.values, obs.approach))
        return np.einsum("nij,kj->nki", T[:, :3, :3], obs.object_points) + T[:, None, :3, 3]

    def project(self, x, obs: CameraObservations) -> np.ndarray:
        """The marker's pixels (N, k, 2) under ``x``."""
        cv2 = need_cv2()
        pts = self.marker_points(x, obs).reshape(-1, 3)
        px, _ = cv2.projectPoints(pts, x[0:3].reshape(3, 1), x[3:6].reshape(3, 1), obs.matrix, obs.dist)
        return px.reshape(len(obs), -1, 2)

    def display(self, name: str, value: float) -> tuple[float, str]:
        """A parameter in the unit a person reads it in: degrees, mm, % or a ratio."""
        if name.endswith((" zero", " backlash")) or name in CAMERA_NAMES[:3]:
            return math.degrees(value), "deg"
        if name.endswith(" curve"):
            return 100.0 * value, "%"
        if name.endswith(" gain"):
            return value, ""
        return 1000.0 * value, "mm"
