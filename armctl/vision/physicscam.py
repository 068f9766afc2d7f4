"""The physics scene's cameras: ``--camera physicscam://NAME``, MuJoCo's picture of the live physics world.

URL format::

    physicscam://NAME

NAME is a camera of the scene file the simulator opened last in this process was given
(``--port 'armsim://?physics=1&scene=FILE.yaml'``, ``feetechsim://``, ``pca9685sim://``; the file's
``cameras:``, ``armctl.sim.physics.scenefile``). Each ``read()`` runs the simulation up to its current time
and renders what that camera sees then (headless: EGL or OSMesa, ``armctl.sim.physics.camera``), BGR as every
source gives. ``intrinsics`` is the pinhole it is (from the file's ``fov_deg``, ``width``, ``height``);
``camera_pose`` where it stands (camera to base, 4x4). No live physics simulator, or no camera of that name: one
BadInputError saying what to open.
"""

from __future__ import annotations

import urllib.parse

import numpy as np

from armctl.errors import BadInputError, LinkError
from armctl.vision.sources import CameraModel, CameraSource

NO_PHYSICS = (
    "physicscam:// renders the physics scene of a simulator opened in this process: give "
    "--port 'armsim://?physics=1&scene=FILE.yaml' (or feetechsim://, pca9685sim:// with physics=1)"
)


def live_physics():
    """The live simulated arm opened last whose simulator runs a physics plant (``armctl.sim.scene``); else
    BadInputError."""
    from armctl.sim import scene

    for live in reversed(scene.live_arms()):
        if getattr(live.sim, "physics", None) is not None:
            return live
    raise BadInputError(NO_PHYSICS)


class PhysicsCameraSource(CameraSource):
    """One scene camera of a live physics simulator (see the module docstring)."""

    def __init__(self, live, name: str, url: str):
        self.live, self.name = live, url
        with live.lock:
            self.camera = live.sim.physics.camera(name)
        self.size = self.camera.size
        matrix, dist, size = self.camera.intrinsics()
        self.intrinsics = CameraModel(matrix, dist, size)
        self.camera_pose = self.camera.pose()

    def read(self) -> np.ndarray:
        sim = self.live.sim
        if sim is None or getattr(sim, "scene_arm", None) is not self.live:
            raise LinkError(f"camera {self.name}: its simulator was closed")
        with self.live.lock:
            sim.physics.advance(self.live.now_s())  # the simulation run up to its current time
            rgb = self.camera.render()
        return np.ascontiguousarray(rgb[..., ::-1])


def open_source(url: str) -> PhysicsCameraSource:
    """The camera ``physicscam://NAME`` names; BadInputError for no name, no live physics simulator, no camera
    NAME in its scene."""
    parts = urllib.parse.urlsplit(url)
    name = urllib.parse.unquote(parts.netloc + parts.path).strip("/")
    if parts.query or not name:
        raise BadInputError(f"--camera {url}: expected physicscam://NAME, NAME a camera of the physics scene file")
    return PhysicsCameraSource(live_physics(), name, url)
