"""Pictures of a printed ChArUco board held before a camera: what ``armctl camera calibrate`` is given by a user
without a camera, and by the tests, through a camera whose intrinsics are known.

``render_board_views(spec, model, count)`` draws the board (on its white paper, on a gray table) at ``count``
poses drawn from a seeded generator: 0.25-0.45 m from the camera (farther where a long focal length needs it),
tilted 20-35 degrees every way, turned up to 30 degrees in its plane, its middle anywhere over the
picture while the whole board stays in view, then through the lens distortion of ``model``
(``armctl.vision.render.Renderer``). ``board_views_source`` gives them as a finite camera source
(``simcam://?board=SPEC&views=N`` opens one), its ``intrinsics`` the truth.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from armctl.errors import BadInputError
from armctl.vision.board import BoardSpec, board_image, parse_board
from armctl.vision.render import Renderer
from armctl.vision.sources import CameraModel, CameraSource, need_cv2

DISTANCE_M = (0.25, 0.45)
TILT_DEG = (20.0, 35.0)  # a board seen square-on tells nothing of the focal length: every view is tilted
TURN_DEG = 30.0
PX_PER_SQUARE = 120  # the board's texture (drawn smaller through mip levels: no aliasing)
MAX_VIEWS = 500


def default_model() -> CameraModel:
    """The simulated camera's default: 640x480, focal 600 px, centred, no distortion."""
    return CameraModel(np.array([[600.0, 0.0, 320.0], [0.0, 600.0, 240.0], [0.0, 0.0, 1.0]]), np.zeros(5), (640, 480))


@dataclass(frozen=True)
class BoardView:
    """One rendered view: the picture (BGR) and the board's pose in the camera frame (``R``, ``t``: a board point
    p, metres, in the board's frame of OpenCV's object points, is at ``R @ p + t``)."""

    image: np.ndarray
    R: np.ndarray
    t: np.ndarray


def _rotation(axis, angle: float) -> np.ndarray:
    return need_cv2().Rodrigues(np.asarray(axis, dtype=float) * angle)[0]


def _paper(spec: BoardSpec) -> tuple[np.ndarray, np.ndarray]:
    """The board's texture on white paper (half a square around it) and the paper's corners (4, 3) in the board
    frame: top-left, top-right, bottom-right, bottom-left."""
    cv2 = need_cv2()
    pad = PX_PER_SQUARE // 2
    tex = cv2.copyMakeBorder(board_image(spec, PX_PER_SQUARE), pad, pad, pad, pad, cv2.BORDER_CONSTANT, value=255)
    m = spec.square_m * pad / PX_PER_SQUARE
    w, h = spec.size_m
    corners = np.array([[-m, -m, 0.0], [w + m, -m, 0.0], [w + m, h + m, 0.0], [-m, h + m, 0.0]])
    return tex, corners


def _distances(model: CameraModel, corners: np.ndarray) -> tuple[float, float]:
    """The board's distances: ``DISTANCE_M``, moved out as far as a camera of long focal length needs for the
    paper to fill at most 85% of the picture at the nearest."""
    paper = corners.max(axis=0) - corners.min(axis=0)
    fits = max(model.fx * paper[0] / (0.85 * model.size[0]), model.fy * paper[1] / (0.85 * model.size[1]))
    near = max(DISTANCE_M[0], fits)
    return near, max(DISTANCE_M[1], near * DISTANCE_M[1] / DISTANCE_M[0])


def _pose(spec: BoardSpec, model: CameraModel, corners: np.ndarray, rng, i: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """A pose (R, t) of the board whose paper is wholly in the picture (at most 1000 draws). The ``i``-th view's
    middle is drawn in the ``i``-th cell of a 3 x 3 grid over the picture and it leans towards the ``i``-th of
    eight directions (views spread over the picture and tilted every way, as a user is told to hold them)."""
    cv2 = need_cv2()
    w, h = model.size
    middle = np.array([spec.size_m[0] / 2, spec.size_m[1] / 2, 0.0])
    near, far = _distances(model, corners)
    for _ in range(1000):
        az = (i % 8 + rng.uniform(0.0, 1.0)) * math.pi / 4
        turn = _rotation([0, 0, 1], math.radians(rng.uniform(-1, 1) * TURN_DEG))
        R = _rotation([math.cos(az), math.sin(az), 0.0], math.radians(rng.uniform(*TILT_DEG))) @ turn
        cell = (i * 4 + rng.integers(0, 2)) % 9 if _ > 100 else (i * 4) % 9  # 4 is prime to 9: every cell in turn
        u = w * (0.1 + 0.8 * (cell % 3 + rng.uniform(0.0, 1.0)) / 3)
        v = h * (0.1 + 0.8 * (cell // 3 + rng.uniform(0.0, 1.0)) / 3)
        ray = np.linalg.solve(model.matrix, [u, v, 1.0])
        t = ray / np.linalg.norm(ray) * rng.uniform(near, far) - R @ middle
        cam = corners @ R.T + t
        if np.any(cam[:, 2] <= 0.05):
            continue
        px, _ = cv2.projectPoints(cam, np.zeros(3), np.zeros(3), model.matrix, model.dist)
        px = px.reshape(-1, 2)
        if np.all((px >= 2) & (px <= [w - 3, h - 3])):
            return R, t
    raise BadInputError(
        f"board {spec.text} does not fit in a {w}x{h} picture of focal {model.fx:.0f} px at {near:.2f}-{far:.2f} m"
    )


def render_board_views(
    spec: BoardSpec | str,
    model: CameraModel | None = None,
    count: int = 14,
    *,
    seed: int = 0,
    blur_px: float = 0.0,
    light: float = 1.0,
    noise_gray: float = 0.0,
):
    """``count`` views (``BoardView``, one at a time) of board ``spec`` seen by ``model`` (the module docstring)."""
    spec = parse_board(spec) if isinstance(spec, str) else spec
    model = model or default_model()
    rng = np.random.default_rng(seed)
    renderer = Renderer(model)
    tex, corners = _paper(spec)
    for i in range(count):
        R, t = _pose(spec, model, corners, rng, i)
        canvas = renderer.blank()
        renderer.draw_quad(canvas, tex, corners @ R.T + t)
        image = renderer.finish(canvas, blur_px=blur_px, light=light, noise_gray=noise_gray, rng=rng)
        yield BoardView(image, R, t)


class BoardViewsSource(CameraSource):
    """The rendered views as a finite camera source; ``intrinsics`` is the camera they were drawn through."""

    finite = True

    def __init__(self, spec: BoardSpec, model: CameraModel, count: int, name: str, **options):
        self.name = name
        self.spec = spec
        self.intrinsics = model
        self.size = (int(model.size[0]), int(model.size[1]))
        self.views = render_board_views(spec, model, count, **options)

    def read(self) -> np.ndarray | None:
        view = next(self.views, None)
        return None if view is None else view.image


def board_views_source(
    board: str | BoardSpec | None = None,
    views: int | str = 14,
    *,
    model: CameraModel | None = None,
    seed: int | str = 0,
    blur_px: float = 0.0,
    light: float = 1.0,
    noise_gray: float = 0.0,
    name: str = "",
) -> BoardViewsSource:
    """A camera source of ``views`` rendered views of ``board`` (a spec; None: the default board) seen by
    ``model`` (default: ``default_model()``). ``simcam://?board=SPEC&views=N`` is this, with the simulated camera's
    model and picture options (its ``noise=PX`` as sensor grain, ``noise_gray`` = 4 gray levels a pixel: a printed
    board is one rigid thing, its corners are not moved one by one as a marker's are). BadInputError for a bad
    board or count."""
    where = name or "simcam://"
    spec = board if isinstance(board, BoardSpec) else parse_board(board, what=f"--camera {where}: board")
    count = _count(views, where)
    options = {"blur_px": blur_px, "light": light, "noise_gray": noise_gray}
    return BoardViewsSource(
        spec,
        model or default_model(),
        count,
        name or f"simcam://?board={spec.text}&views={count}",
        seed=int(seed),
        **{k: float(v) for k, v in options.items()},
    )


def _count(views, where: str) -> int:
    text = str(views).strip()
    if not text.isdigit() or not 1 <= int(text) <= MAX_VIEWS:
        raise BadInputError(f"--camera {where}: views={views}: give a whole number of views, 1..{MAX_VIEWS}")
    return int(text)
