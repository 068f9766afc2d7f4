"""Pictures of flat things through a pinhole camera: what the simulated camera draws with.

A ``Renderer`` holds one camera (``CameraModel``: matrix, distortion, size). Scenes are drawn on an
undistorted canvas (``blank``), each flat picture by the homography its four corners give (``draw_quad``: a
plane seen through a pinhole is exactly a homography), lines by their projected ends (``draw_segment``); then
``finish`` bends the canvas through the lens's distortion (for every pixel of the picture, where the undistorted
ray lands: OpenCV's ``undistortPoints`` of the whole grid, computed once per camera), and adds blur, light and
sensor noise. ``jitter_px`` moves each projected corner by a Gaussian of that many pixels: the error a real
corner detector makes (the simulated camera's ``noise``).

Points are in the camera's frame (OpenCV's: x right, y down, z forward), metres.
"""

from __future__ import annotations

import numpy as np

from armctl.vision.sources import CameraModel, need_cv2

#: how far (px) the sensor noise's window moves over its field, each way
GRAIN_SLACK = 64


class Renderer:
    """Draws flat pictures and segments seen by ``model`` (see the module docstring)."""

    def __init__(self, model: CameraModel):
        self.model = model
        self.size = (int(model.size[0]), int(model.size[1]))
        self._map: tuple[np.ndarray, np.ndarray] | None = None
        self._levels: dict[int, list[np.ndarray]] = {}
        self._grain_field: np.ndarray | None = None

    # --- projection -------------------------------------------------------------------------------

    def project_ideal(self, pts_cam) -> np.ndarray:
        """Pixels (N, 2) of camera-frame points (N, 3) on the undistorted canvas (no lens distortion)."""
        p = np.asarray(pts_cam, dtype=float).reshape(-1, 3)
        K = self.model.matrix
        z = p[:, 2]
        return np.stack([K[0, 0] * p[:, 0] / z + K[0, 2], K[1, 1] * p[:, 1] / z + K[1, 2]], axis=1)

    def project(self, pts_cam) -> np.ndarray:
        """Pixels (N, 2) of camera-frame points (N, 3) in the finished (distorted) picture."""
        cv2 = need_cv2()
        p = np.asarray(pts_cam, dtype=float).reshape(-1, 1, 3)
        out, _ = cv2.projectPoints(p, np.zeros(3), np.zeros(3), self.model.matrix, self.model.dist)
        return out.reshape(-1, 2)

    # --- drawing ----------------------------------------------------------------------------------

    def blank(self, gray: int = 140) -> np.ndarray:
        """An undistorted canvas (BGR) of one gray: the table."""
        w, h = self.size
        return np.full((h, w, 3), gray, dtype=np.uint8)

    def _level(self, texture: np.ndarray, want_px: float) -> tuple[np.ndarray, int]:
        """The texture halved until it is at most twice ``want_px`` wide (no aliasing when it is drawn small), and
        how many times it was halved."""
        levels = self._levels.setdefault(id(texture), [texture])
        i = 0
        while levels[i].shape[1] > 2 * want_px and min(levels[i].shape[:2]) >= 8:
            if i + 1 == len(levels):
                levels.append(need_cv2().pyrDown(levels[i]))
            i += 1
        return levels[i], i

    def draw_quad(self, canvas, texture, corners_cam, *, jitter_px: float = 0.0, rng=None) -> bool:
        """Draw ``texture`` (H x W, gray or BGR) on the plane whose corners (top-left, top-right, bottom-right,
        bottom-left of the picture; (4, 3) in the camera frame) are given. Nothing is drawn (False) when a corner
        is behind the camera or the picture shows its back."""
        cv2 = need_cv2()
        c = np.asarray(corners_cam, dtype=float).reshape(4, 3)
        if np.any(c[:, 2] <= 1e-6):
            return False
        normal = np.cross(c[1] - c[0], c[3] - c[0])  # the picture's x cross y: away from a viewer facing its front
        if float(np.dot(normal, c.mean(axis=0))) <= 0.0:
            return False
        px = self.project_ideal(c)
        if jitter_px > 0.0:
            px = px + (rng or np.random.default_rng()).normal(0.0, jitter_px, size=px.shape)
        width_px = float(max(np.linalg.norm(px[1] - px[0]), np.linalg.norm(px[2] - px[3]), 1.0))
        tex, halved = self._level(texture, width_px)
        if tex.ndim == 2:
            tex = cv2.cvtColor(tex, cv2.COLOR_GRAY2BGR)
        h, w = texture.shape[:2]
        # pyrDown centres a level's pixel j on pixel 2j of the one above: the texture's edges in the level's pixels
        src = (np.array([[0, 0], [w, 0], [w, h], [0, h]], dtype=np.float32) - 0.5) / 2**halved
        H = cv2.getPerspectiveTransform(src, px.astype(np.float32))
        cv2.warpPerspective(tex, H, self.size, dst=canvas, flags=cv2.INTER_LINEAR, borderMode=cv2.BORDER_TRANSPARENT)
        return True

    def draw_segment(self, canvas, a_cam, b_cam, *, width_m: float, color=(60, 60, 60)) -> None:
        """A bar from ``a_cam`` to ``b_cam`` (camera frame), ``width_m`` wide: an arm's link."""
        cv2 = need_cv2()
        a, b = np.asarray(a_cam, dtype=float), np.asarray(b_cam, dtype=float)
        if a[2] <= 1e-6 or b[2] <= 1e-6:
            return
        pa, pb = self.project_ideal(np.stack([a, b]))
        thick = max(1, int(round(self.model.fx * width_m / max(1e-6, 0.5 * (a[2] + b[2])))))
        cv2.line(canvas, tuple(int(round(v)) for v in pa), tuple(int(round(v)) for v in pb), color, thick, cv2.LINE_AA)

    # --- the lens and the sensor ------------------------------------------------------------------

    def _distortion_map(self) -> tuple[np.ndarray, np.ndarray]:
        if self._map is None:
            cv2 = need_cv2()
            w, h = self.size
            xs, ys = np.meshgrid(np.arange(w, dtype=np.float64), np.arange(h, dtype=np.float64))
            grid = np.stack([xs.ravel(), ys.ravel()], axis=1).reshape(-1, 1, 2)
            ideal = cv2.undistortPoints(grid, self.model.matrix, self.model.dist, P=self.model.matrix)
            ideal = ideal.reshape(h, w, 2).astype(np.float32)
            self._map = (ideal[..., 0].copy(), ideal[..., 1].copy())
        return self._map

    def finish(self, canvas, *, blur_px: float = 0.0, light: float = 1.0, noise_gray: float = 0.0, rng=None):
        """The picture the camera gives: ``canvas`` through the lens distortion, blurred (Gaussian sigma
        ``blur_px``), scaled by ``light`` (1: as drawn, 0.3: a dim room) and with sensor noise (sigma in gray
        levels). BGR uint8."""
        cv2 = need_cv2()
        img = canvas
        if np.any(np.asarray(self.model.dist, dtype=float) != 0.0):
            mx, my = self._distortion_map()
            img = cv2.remap(canvas, mx, my, cv2.INTER_LINEAR, borderMode=cv2.BORDER_REPLICATE)
        if blur_px > 0.0:
            img = cv2.GaussianBlur(img, (0, 0), blur_px)
        if light != 1.0 or noise_gray > 0.0:
            f = img.astype(np.float32)
            if light != 1.0:
                f *= float(light)
            if noise_gray > 0.0:
                f += self._grain(noise_gray, rng)
            img = np.clip(f, 0, 255, out=f).astype(np.uint8)
        return img

    def _grain(self, sigma: float, rng=None) -> np.ndarray:
        """Sensor noise (H x W x 3, float32, Gaussian of ``sigma`` gray levels): a window, at a random place, of a
        larger field drawn once per renderer (a fresh Gaussian field a frame costs 20-35 ms at 640x480 on 2
        cores: more than a 30 frames/s camera has), so every pixel's noise still changes from frame to frame."""
        w, h = self.size
        if self._grain_field is None:
            field = np.random.default_rng(36).standard_normal((h + GRAIN_SLACK, w + GRAIN_SLACK, 3), dtype=np.float32)
            self._grain_field = field
        dy, dx = (rng or np.random.default_rng()).integers(0, GRAIN_SLACK + 1, size=2)
        return self._grain_field[dy : dy + h, dx : dx + w] * np.float32(sigma)


def look_at(eye, target, up=(0.0, 1.0, 0.0)) -> np.ndarray:
    """The camera-to-world transform (4x4) of a camera at ``eye`` looking at ``target`` (world frame), its
    image's up (-y) toward ``up`` as far as it can."""
    eye, target = np.asarray(eye, dtype=float), np.asarray(target, dtype=float)
    z = target - eye
    z /= np.linalg.norm(z)
    down = -np.asarray(up, dtype=float)
    x = np.cross(down, z)
    if np.linalg.norm(x) < 1e-9:
        x = np.cross(np.array([0.0, 0.0, 1.0]) if abs(z[2]) < 0.9 else np.array([1.0, 0.0, 0.0]), z)
    x /= np.linalg.norm(x)
    y = np.cross(z, x)
    T = np.eye(4)
    T[:3, 0], T[:3, 1], T[:3, 2], T[:3, 3] = x, y, z, eye
    return T
