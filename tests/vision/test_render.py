"""The renderer draws a flat picture where a pinhole camera sees it: OpenCV's ArUco detector finds a rendered
marker's corners where cv2.projectPoints puts them, with and without lens distortion."""

import numpy as np
import pytest

from armctl.vision.render import Renderer, look_at
from armctl.vision.sources import CameraModel

cv2 = pytest.importorskip("cv2")


@pytest.mark.parametrize("dist", [np.zeros(5), np.array([-0.2, 0.05, 0.001, -0.001, 0.0])])
def test_rendered_marker_corners_are_where_opencv_projects_them(dist):
    model = CameraModel(np.array([[600.0, 0, 320], [0, 600.0, 240], [0, 0, 1]]), dist, (640, 480))
    r = Renderer(model)
    d = cv2.aruco.getPredefinedDictionary(cv2.aruco.DICT_5X5_100)
    tex = cv2.copyMakeBorder(cv2.aruco.generateImageMarker(d, 7, 350, borderBits=1), 50, 50, 50, 50,
                             cv2.BORDER_CONSTANT, value=255)  # fmt: skip
    side, q = 0.06, 0.06 * 450 / 350
    params = cv2.aruco.DetectorParameters()
    params.cornerRefinementMethod = cv2.aruco.CORNER_REFINE_SUBPIX
    det = cv2.aruco.ArucoDetector(d, params)
    rng = np.random.default_rng(1)
    errs = []
    for _ in range(10):
        c = np.array([rng.uniform(-0.2, 0.2), rng.uniform(-0.15, 0.15), 0.6])
        a = rng.uniform(0, 2 * np.pi)
        R = np.array([[np.cos(a), -np.sin(a), 0], [np.sin(a), np.cos(a), 0], [0, 0, 1]])

        def at(u, v, c=c, R=R):
            return c + R @ np.array([u, v, 0.0])

        canvas = r.blank()
        assert r.draw_quad(canvas, tex, [at(-q / 2, -q / 2), at(q / 2, -q / 2), at(q / 2, q / 2), at(-q / 2, q / 2)])
        corners, ids, _ = det.detectMarkers(r.finish(canvas))
        assert ids is not None and list(ids.ravel()) == [7]
        h = side / 2
        true = r.project(np.array([at(-h, -h), at(h, -h), at(h, h), at(-h, h)]))
        errs.append(np.abs(corners[0].reshape(4, 2) - true).max())
    assert max(errs) < 0.6, errs  # the detector's own error on a 60 px marker (sub-pixel corners)


def test_back_and_behind_are_not_drawn():
    model = CameraModel(np.array([[600.0, 0, 320], [0, 600.0, 240], [0, 0, 1]]), np.zeros(5), (640, 480))
    r = Renderer(model)
    tex = np.zeros((10, 10), np.uint8)
    front = np.array([[-0.1, -0.1, 1], [0.1, -0.1, 1], [0.1, 0.1, 1], [-0.1, 0.1, 1]])
    assert r.draw_quad(r.blank(), tex, front)
    assert not r.draw_quad(r.blank(), tex, front[::-1])  # its back
    assert not r.draw_quad(r.blank(), tex, front * [1, 1, -1])  # behind the camera
    T = look_at([0, 0, 0.6], [0, 0, 0])
    assert np.allclose(T[:3, 2], [0, 0, -1]) and np.allclose(T[:3, :3] @ T[:3, :3].T, np.eye(3))
