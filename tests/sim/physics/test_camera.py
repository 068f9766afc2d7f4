"""Cameras in the physics scene (armctl.sim.physics.camera): headless pictures that show the world where the
camera's pinhole says, and one line when no headless GL can be had."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from armctl.errors import BadInputError
from armctl.sim.physics import camera
from armctl.sim.physics.scenefile import SceneCamera
from tests.helpers import require_module

MJCF = """<mujoco><worldbody>
<light pos="0 0 2" dir="0 0 -1"/>
<geom type="plane" size="1 1 0.1" rgba="0.2 0.2 0.2 1"/>
<body pos="{x} {y} {z}"><geom type="sphere" size="0.02" rgba="1 0 0 1" contype="0" conaffinity="0"/></body>
</worldbody></mujoco>"""


def _world(x, y, z):
    mujoco = require_module("mujoco", "the physics plant")
    model = mujoco.MjModel.from_xml_string(MJCF.format(x=x, y=y, z=z))
    data = mujoco.MjData(model)
    mujoco.mj_forward(model, data)
    return model, data


def _red_centre(img: np.ndarray) -> np.ndarray:
    red = img[..., 0].astype(int) - img[..., 1] > 40  # red, lit or in shade
    assert red.sum() > 20, "the red ball is not in the picture"
    rows, cols = np.nonzero(red)
    return np.array([cols.mean(), rows.mean()])


def _project(cam: camera.PhysicsCamera, point) -> np.ndarray:
    matrix, _, _ = cam.intrinsics()
    base_to_cam = np.linalg.inv(cam.pose())
    p = base_to_cam[:3, :3] @ np.asarray(point, dtype=float) + base_to_cam[:3, 3]
    uv = matrix @ (p / p[2])
    return uv[:2]


@pytest.mark.parametrize(
    ("at", "look", "ball"),
    [
        ((0.0, 0.0, 0.8), (0.0, 0.0, 0.0), (0.10, 0.05, 0.02)),  # straight down: +x up the picture
        ((0.5, -0.4, 0.4), (0.1, 0.0, 0.0), (0.05, 0.08, 0.03)),  # oblique
    ],
)
def test_the_picture_shows_the_world_where_the_pinhole_says(at, look, ball):
    model, data = _world(*ball)
    cam = camera.PhysicsCamera(model, data, SceneCamera("top", at, look, 50.0, 320, 240))
    try:
        img = cam.render()
        assert img.shape == (240, 320, 3) and img.dtype == np.uint8
        found, expected = _red_centre(img), _project(cam, ball)
        # a lit ball's centroid is a pixel or two off its centre's image
        assert np.linalg.norm(found - expected) < 3.0, (found, expected)
    finally:
        cam.close()


def test_straight_down_the_base_x_points_up_the_picture():
    model, data = _world(0.15, 0.0, 0.02)
    cam = camera.PhysicsCamera(model, data, SceneCamera("top", (0.0, 0.0, 0.8), (0.0, 0.0, 0.0), 60.0, 160, 120))
    try:
        u, v = _red_centre(cam.render())
        assert abs(u - 80) < 2 and v < 50  # ahead of the base (+x) is the picture's top
    finally:
        cam.close()


def test_a_bigger_picture_than_the_model_buffer_renders():
    model, data = _world(0.0, 0.0, 0.02)
    cam = camera.PhysicsCamera(model, data, SceneCamera("big", (0.0, 0.0, 0.8), (0.0, 0.0, 0.0), 60.0, 1024, 768))
    try:
        assert cam.render().shape == (768, 1024, 3)
    finally:
        cam.close()


def test_no_headless_gl_is_one_line_naming_the_packages(monkeypatch):
    monkeypatch.delenv("MUJOCO_GL", raising=False)
    monkeypatch.setattr(camera, "_loads", lambda names: False)
    with pytest.raises(BadInputError) as err:
        camera.gl_backend()
    text = str(err.value)
    assert "\n" not in text and "apt-get install libegl1 libegl-mesa0" in text and "libosmesa6" in text


def test_gl_is_chosen_even_when_mujoco_was_imported_first():
    """The plant imports mujoco before any camera: the picture still renders headless (a fresh process)."""
    require_module("mujoco", "the physics plant")
    code = (
        "import os; os.environ.pop('MUJOCO_GL', None); import mujoco\n"
        "from tests.sim.physics.test_camera import _world, camera, SceneCamera\n"
        "m, d = _world(0, 0, 0.02)\n"
        "c = camera.PhysicsCamera(m, d, SceneCamera('t', (0, 0, 0.5), (0, 0, 0), 60, 64, 48))\n"
        "print(c.render().shape, os.environ['MUJOCO_GL'])\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "(48, 64, 3) egl" in out.stdout


def test_a_picture_renders_in_another_thread_than_the_first():
    """A dataset's writer thread grabs the frames: the GL context is not kept by the thread that made it."""
    import threading

    model, data = _world(0.0, 0.0, 0.02)
    cam = camera.PhysicsCamera(model, data, SceneCamera("t", (0.0, 0.0, 0.5), (0.0, 0.0, 0.0), 60.0, 64, 48))
    try:
        first = cam.render()
        out = []
        thread = threading.Thread(target=lambda: out.append(cam.render()))
        thread.start()
        thread.join()
        assert len(out) == 1 and np.array_equal(out[0], first) and np.array_equal(cam.render(), first)
    finally:
        cam.close()
