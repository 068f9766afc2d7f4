"""Cameras in the physics scene: a MuJoCo picture of the world, rendered headless (EGL or OSMesa, from Debian).

``gl_backend()`` chooses MuJoCo's headless OpenGL (``MUJOCO_GL``): the one the user set, else EGL when
``libEGL.so.1`` loads (Debian: ``libegl1 libegl-mesa0``), else OSMesa (``libosmesa6``); with neither it is one
BadInputError saying which packages to install. It must run before ``import mujoco`` picks its GL; when mujoco
is already imported (the plant imports it) the chosen context is put in its place, so the order does not matter.

``PhysicsCamera(model, data, cam)`` renders ``cam`` (a ``scenefile.SceneCamera``: ``at_m``, ``look_at_m``,
``fov_deg``, ``width``, ``height``, in the arm's frame, which is MuJoCo's world frame) as a free camera: no
camera needs to be in the model. ``render()`` gives RGB (H, W, 3) uint8, top row first; ``intrinsics()`` the
pinhole it is (fx = fy from the vertical field of view, the principal point at the picture's middle);
``pose()`` the camera's frame in the arm's frame (4x4, camera to base, OpenCV's axes: x right, y down, z ahead).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import math
import os
import sys
import threading

import numpy as np

from armctl.errors import BadInputError

#: MUJOCO_GL values that render without a display
HEADLESS = ("egl", "osmesa")
NO_GL = (
    "cameras in the physics scene render headless through EGL or OSMesa, and neither loads: "
    "apt-get install libegl1 libegl-mesa0 (or libosmesa6, then MUJOCO_GL=osmesa)"
)


def _loads(names: tuple[str, ...]) -> bool:
    for name in names:
        try:
            ctypes.CDLL(name)
            return True
        except OSError:
            continue
    return False


def gl_backend() -> str:
    """The headless GL MuJoCo renders with (``egl`` or ``osmesa``), set in ``MUJOCO_GL``; BadInputError naming
    the Debian packages when neither library loads."""
    chosen = os.environ.get("MUJOCO_GL", "").strip().lower()
    if chosen not in HEADLESS:
        if _loads(("libEGL.so.1", ctypes.util.find_library("EGL") or "libEGL.so.1")):
            chosen = "egl"
        elif _loads(("libOSMesa.so.8", "libOSMesa.so.6", ctypes.util.find_library("OSMesa") or "libOSMesa.so")):
            chosen = "osmesa"
        else:
            raise BadInputError(NO_GL)
        os.environ["MUJOCO_GL"] = chosen
    if chosen == "egl":
        os.environ.setdefault("PYOPENGL_PLATFORM", "egl")
    if "mujoco" in sys.modules:
        _use_context(chosen)
    return chosen


def _use_context(chosen: str) -> None:
    """mujoco is imported already (with another GL, perhaps): render through ``chosen``'s context."""
    try:
        from mujoco.rendering.classic import gl_context
    except ImportError:  # (an older mujoco: its own module)
        from mujoco import gl_context
    try:
        if chosen == "egl":
            from mujoco.egl import GLContext
        else:
            from mujoco.osmesa import GLContext
    except (ImportError, OSError, AttributeError) as exc:
        raise BadInputError(f"{NO_GL} ({exc})") from None
    gl_context.GLContext = GLContext


def _release() -> None:
    """Leave no GL context current in this thread, so the next render may be in another (a dataset's writer)."""
    backend = os.environ.get("MUJOCO_GL", "")
    if backend == "egl":
        from mujoco.egl import EGL

        EGL.eglReleaseThread()
    elif backend == "osmesa":
        from mujoco import osmesa as mesa

        mesa.osmesa.OSMesaMakeCurrent(None, None, mesa.GL.GL_FLOAT, 0, 0)


def look_at(at_m, look_at_m) -> np.ndarray:
    """The camera's frame (4x4, camera to world; x right, y down, z ahead) at ``at_m`` looking at ``look_at_m``,
    the picture's up toward +z (toward +x when looking straight down or up)."""
    at, look = np.asarray(at_m, dtype=float), np.asarray(look_at_m, dtype=float)
    z = (look - at) / np.linalg.norm(look - at)
    up = np.array([0.0, 0.0, 1.0]) if abs(z[2]) < 0.999 else np.array([1.0, 0.0, 0.0])
    x = np.cross(z, up)
    x /= np.linalg.norm(x)
    y = np.cross(z, x)
    out = np.eye(4)
    out[:3, 0], out[:3, 1], out[:3, 2], out[:3, 3] = x, y, z, at
    return out


class PhysicsCamera:
    """A scene camera rendering MuJoCo ``model``/``data`` (see the module docstring). ``close()`` frees it."""

    def __init__(self, model, data, cam):
        gl_backend()
        import mujoco

        self.model, self.data, self.cam = model, data, cam
        self._lock = threading.Lock()
        self.name = cam.name
        self.size = (int(cam.width), int(cam.height))
        glob = model.vis.global_
        glob.offwidth, glob.offheight = max(glob.offwidth, self.size[0]), max(glob.offheight, self.size[1])
        try:
            self.renderer = mujoco.Renderer(model, height=self.size[1], width=self.size[0])
            _release()
        except Exception as exc:  # noqa: BLE001 (the GL libraries' own errors: one line on how to get them)
            raise BadInputError(f"{NO_GL} ({str(exc).splitlines()[0] if str(exc) else type(exc).__name__})") from None
        self.free = mujoco.MjvCamera()
        self.free.type = mujoco.mjtCamera.mjCAMERA_FREE
        at, look = np.asarray(cam.at_m, dtype=float), np.asarray(cam.look_at_m, dtype=float)
        ahead = look - at
        dist = float(np.linalg.norm(ahead))
        self.free.lookat[:] = look
        self.free.distance = dist
        self.free.azimuth = math.degrees(math.atan2(ahead[1], ahead[0]))
        self.free.elevation = math.degrees(math.asin(max(-1.0, min(1.0, ahead[2] / dist))))

    def render(self) -> np.ndarray:
        """The picture now (RGB, H x W x 3, uint8, top row first)."""
        with self._lock:  # one GL context: current in one thread at a time, released after each picture
            self.model.vis.global_.fovy = float(self.cam.fov_deg)  # (a free camera's field of view is the model's)
            self.renderer.update_scene(self.data, camera=self.free)
            try:
                return self.renderer.render()
            finally:
                _release()

    def intrinsics(self):
        """The pinhole camera it is (``armctl.vision``'s CameraModel fields: matrix, dist, size)."""
        w, h = self.size
        f = (h / 2.0) / math.tan(math.radians(self.cam.fov_deg) / 2.0)
        return np.array([[f, 0.0, w / 2.0], [0.0, f, h / 2.0], [0.0, 0.0, 1.0]]), np.zeros(5), (w, h)

    def pose(self) -> np.ndarray:
        """Camera to arm base (4x4, OpenCV's camera axes)."""
        return look_at(self.cam.at_m, self.cam.look_at_m)

    def close(self) -> None:
        renderer, self.renderer = getattr(self, "renderer", None), None
        if renderer is not None:
            with self._lock:
                renderer.close()
                _release()
