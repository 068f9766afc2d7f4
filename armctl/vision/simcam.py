"""The simulated camera: ``--camera simcam://``, a live picture of the simulated arm as it truly is.

URL format::

    simcam://[?option=value[&option=value...]]

It looks at the simulator opened last in this process (``--port armsim://...``, ``feetechsim://``,
``pca9685sim://``) and draws, at each ``read()``, what a camera would see at that moment: the table, the parts
on it (each a box top carrying its own ArUco marker, id and size from the scene), the arm's links as bars from
the TRUE arm's geometry and joint angles (a truth file's lengths and zeros, not what armctl believes), the
gripper's jaws, and the marker fixed to the tool: its centre at the tool point, face up along the tool frame's z
(``kinematics.tool_pose``), its x along the tool's heading, with a white quiet zone of one cell around it.
Flat things are drawn through a pinhole camera with the lens's distortion by ``armctl.vision.render``.

Options (metres, degrees and pixels, as named):

- ``pose=x,y,z,roll,pitch,yaw``  the camera in the base frame (m, deg). With roll = pitch = yaw = 0 it looks
                            straight down with the base's +x up the picture; roll, pitch and yaw then turn
                            it about the base's x, y and z axes (roll first). Default: 0.6 m above the
                            middle of the arm's reach (the box around every tool point its joint limits
                            allow), looking straight down; where that reach (and the marker around it) does
                            not fit in the picture at 0.6 m, the camera goes up, a centimetre at a time,
                            until it does (the MeArm fits at 0.6 m; an SO-101, reaching 0.43 m all round
                            and up to 0.53 m, needs 1.3 m, where a 30 mm marker is 14 px wide:
                            give it a nearer ``pose`` or a larger ``marker``). A planar arm's plane is the base
                            frame's z = 0: "above" it is in front of that plane, facing it.
- ``size=WxH``              picture size, pixels (default 640x480)
- ``focal=PX``              focal length, pixels (default 600); the principal point is the picture's middle
- ``dist=k1,k2,p1,p2[,k3]`` lens distortion, OpenCV's coefficients (default none)
- ``noise=PX``              corner noise: every marker's corners move by a Gaussian of PX pixels in
                            each frame (what a real corner detector's error looks like), with sensor grain of
                            4 gray levels a pixel of it (default 0.5, as issue 36's accuracy tests take)
- ``blur=PX``               Gaussian blur, sigma in pixels (default 0: sharp)
- ``light=F``               light level (default 1; 0.3 is a dim room)
- ``marker=ID:SIZE_MM``     the tool's marker: its id in ``DICT_5X5_100`` and its side (the black square)
                            in mm (default 0:30)
- ``seed=N``                the noise's random seed (default: a fresh one)
- ``fps=N``                 frames a second (default 30): ``read()`` waits for the next frame's time, and
                            the frame shows the arm at the wall time it is read at; 0: no waiting

- ``board=SPEC&views=N``   instead of the arm: N views (default 14) of the ChArUco board SPEC
                            (``charuco:7x5@30mm/22mm:5x5_100``) at varied poses, a finite source for
                            ``armctl camera calibrate`` (``armctl.vision.boardviews``; no simulator needed)

``source.intrinsics`` is its ``CameraModel``; ``source.camera_pose`` the camera's frame in the base frame (4x4,
camera to base): the truth, for tests, which a camera calibration must find on its own.
"""

from __future__ import annotations

import math
import time
import urllib.parse
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from armctl.errors import BadInputError, LinkError
from armctl.vision.markers import marker_cells, marker_image
from armctl.vision.render import Renderer
from armctl.vision.sources import CameraModel, CameraSource

EXPECTED = (
    "expected simcam://?pose=x,y,z,roll,pitch,yaw&size=WxH&focal=PX&dist=k1,k2,p1,p2[,k3]&noise=PX&blur=PX"
    "&light=F&marker=ID:SIZE_MM&seed=N&fps=N (metres, degrees, pixels), or simcam://?board=SPEC&views=N"
)
NO_SIMULATOR = "simcam:// renders a simulated arm: open one first (--port armsim://...)"
DICTIONARY = "5x5_100"
DEFAULT_HEIGHT_M = 0.6
TABLE_GRAY = 140
LINK_BGR = (55, 55, 60)
JAW_BGR = (30, 30, 160)
#: sensor grain, gray levels per pixel of corner noise
GRAIN_PER_PX = 4.0
#: the pixels kept free at the picture's edge around the reach (the detector skips markers nearer than 3 px)
EDGE_PX = 6
#: looking straight down, the base's +x up the picture: the columns are the camera's x, y, z in the base frame
STRAIGHT_DOWN = np.array([[0.0, -1.0, 0.0], [-1.0, 0.0, 0.0], [0.0, 0.0, -1.0]])


class Scene(Protocol):
    """What the camera asks of the live simulator (``armctl.sim.scene.LiveArm``): the truth, now."""

    def true_tool_pose(self) -> np.ndarray: ...  # 4x4 in the base frame, true geometry

    def true_q_rad(self) -> np.ndarray: ...  # the joints' true angles (rad)

    def true_gripper_rad(self) -> float: ...  # the gripper's true angle (rad; nan: no gripper)

    @property
    def true_arm(self): ...  # the arm as it truly is (an Arm: true lengths)

    def parts_now(self) -> list: ...  # Part(marker_id, size_m, x_m, y_m, yaw_rad, z_m) as they are now


def live_scene() -> Scene:
    """The simulator the camera looks at: the one opened last in this process (``armctl.sim.scene.latest()``),
    or BadInputError when none is open. The one place the camera meets the simulators."""
    try:
        from armctl.sim import scene as sim_scene
    except ImportError:  # (before the simulators keep a scene)
        sim_scene = None
    found = sim_scene.latest() if sim_scene is not None else None
    if found is None:
        raise BadInputError(NO_SIMULATOR)
    return found


def scene_is_live(scene) -> bool:
    """Whether the simulator ``scene`` shows is still open (its port not closed); a scene not from
    ``armctl.sim.scene`` (a test's) always is."""
    try:
        from armctl.sim import scene as sim_scene
    except ImportError:  # (before the simulators keep a scene)
        return True
    if not isinstance(scene, sim_scene.LiveArm):
        return True
    return any(live is scene for live in sim_scene.live_arms())


@dataclass
class SimcamOptions:
    """The ``simcam://`` URL's options (see the module docstring)."""

    pose: tuple[float, ...] | None = None
    size: tuple[int, int] = (640, 480)
    focal_px: float = 600.0
    dist: tuple[float, ...] = (0.0, 0.0, 0.0, 0.0, 0.0)
    noise_px: float = 0.5
    blur_px: float = 0.0
    light: float = 1.0
    marker: tuple[int, float] = (0, 0.030)
    seed: int | None = None
    fps: float = 30.0
    board: str | None = None  # board=SPEC: rendered views of a ChArUco board instead (armctl.vision.boardviews)
    views: str = "14"
    table: tuple[str, float, float, float] | None = None  # table=SPEC@X,Y,YAW: a board lying on the table (mm, deg)


def _floats(text: str, counts: tuple[int, ...]) -> tuple[float, ...]:
    values = tuple(float(v) for v in text.split(","))
    if len(values) not in counts or not all(math.isfinite(v) for v in values):
        raise ValueError(text)
    return values


def _at_least(lo: float, *, above: bool = False, hi: float = math.inf):
    def conv(text: str) -> float:
        v = float(text)
        if not (v > lo if above else v >= lo) or not v <= hi:
            raise ValueError(text)
        return v

    return conv


def _size(text: str) -> tuple[int, int]:
    w, h = (int(v) for v in text.lower().split("x"))
    if not (16 <= w <= 8192 and 16 <= h <= 8192):
        raise ValueError(text)
    return w, h


def _marker(text: str) -> tuple[int, float]:
    ident, size_mm = text.split(":")
    i, s = int(ident), float(size_mm)
    if not (0 <= i < 100 and 0.0 < s <= 1000.0):
        raise ValueError(text)
    return i, s / 1000.0


def _table(text: str) -> tuple[str, float, float, float]:
    """``SPEC@X,Y,YAW``: a ChArUco board lying face up on the table, its top-left corner (as printed) at X, Y mm
    of the base frame, its top edge YAW deg from the base's x (the form of ``calibrate --table-board``)."""
    spec, at, where = text.rpartition("@")
    x, y, yaw = _floats(where, (3,))
    if not at:
        raise ValueError(text)
    return spec or "charuco:7x5@30mm/22mm:5x5_100", x, y, yaw


OPTIONS = {
    "pose": ("pose", lambda v: _floats(v, (6,))),
    "size": ("size", _size),
    "focal": ("focal_px", _at_least(0.0, above=True)),
    "dist": ("dist", lambda v: _floats(v, (4, 5))),
    "noise": ("noise_px", _at_least(0.0, hi=50.0)),
    "blur": ("blur_px", _at_least(0.0, hi=50.0)),
    "light": ("light", _at_least(0.0, above=True, hi=10.0)),
    "marker": ("marker", _marker),
    "seed": ("seed", int),
    "fps": ("fps", _at_least(0.0, hi=1000.0)),
    "board": ("board", str),
    "views": ("views", str),
    "table": ("table", _table),
}


def parse_url(url: str) -> SimcamOptions:
    """The options of a ``simcam://`` URL; BadInputError naming the option (one line, the URL's form)."""
    from armctl.sim.simurl import BadSimURL, parse_options

    try:
        opts, rest = parse_options(url, "simcam", OPTIONS, SimcamOptions(), EXPECTED)
    except BadSimURL as exc:
        raise BadInputError(f"--camera {url}: {exc}") from None
    if rest:
        raise BadInputError(f"--camera {url}: simcam:// takes options only, not {rest!r}; {EXPECTED}")
    return opts


def camera_model(opts: SimcamOptions) -> CameraModel:
    """The camera's intrinsics: ``focal`` px both ways, the principal point at the picture's middle."""
    w, h = opts.size
    K = np.array([[opts.focal_px, 0.0, w / 2.0], [0.0, opts.focal_px, h / 2.0], [0.0, 0.0, 1.0]])
    return CameraModel(K, np.array(opts.dist, dtype=float), (w, h))


def _rot(axis: int, deg: float) -> np.ndarray:
    c, s = math.cos(math.radians(deg)), math.sin(math.radians(deg))
    i, j = [(1, 2), (2, 0), (0, 1)][axis]
    R = np.eye(3)
    R[i, i], R[i, j], R[j, i], R[j, j] = c, -s, s, c
    return R


def pose_matrix(x: float, y: float, z: float, roll: float, pitch: float, yaw: float) -> np.ndarray:
    """The camera-to-base transform (4x4) of ``pose=x,y,z,roll,pitch,yaw`` (m, deg; see the module docstring)."""
    T = np.eye(4)
    T[:3, :3] = _rot(2, yaw) @ _rot(1, pitch) @ _rot(0, roll) @ STRAIGHT_DOWN
    T[:3, 3] = (x, y, z)
    return T


def reach_points(arm, samples: int = 20000) -> tuple[np.ndarray, np.ndarray]:
    """Poses (N, n) spread over ``arm``'s joint limits, the same every time, and their tool points (N, 3; z = 0 on
    a planar arm): its reach, as a cloud."""
    q = np.random.default_rng(0).uniform(arm.q_min, arm.q_max, size=(samples, arm.n))
    return q, _tool_points(arm, q)


def _tool_points(arm, q) -> np.ndarray:
    p = np.asarray(arm.tool_point(q), dtype=float)
    return p if p.shape[1] == 3 else np.column_stack([p, np.zeros(len(p))])


def _farthest(arm, score, q, p, starts: int = 4) -> float:
    """The highest ``score`` (of tool points (N, 3) -> (N,)) over the reach: the cloud's best ``starts`` poses,
    each pushed further by a pattern search inside the joint limits (a cloud's edge falls short of the reach's)."""
    best_all = -math.inf
    eye = np.concatenate([np.eye(arm.n), -np.eye(arm.n)])
    for i in np.argsort(score(p))[-starts:]:
        x, best, step = q[i], float(score(p[i : i + 1])[0]), math.radians(8.0)
        while step > math.radians(0.02):
            cand = np.clip(x + eye * step, arm.q_min, arm.q_max)
            s = score(_tool_points(arm, cand))
            k = int(np.argmax(s))
            if s[k] > best + 1e-12:
                x, best = cand[k], float(s[k])
            else:
                step /= 2.0
        best_all = max(best_all, best)
    return best_all


def default_camera_pose(arm, model: CameraModel, margin_m: float = 0.0) -> np.ndarray:
    """Straight down over the middle of ``arm``'s reach, 0.6 m above it or higher, a centimetre at a time, until
    every tool point of the reach, ``margin_m`` around it, is in the picture (see the module docstring)."""
    q, p = reach_points(arm)
    x_hi, x_lo, y_hi, y_lo = (
        _farthest(arm, lambda pts, k=k, s=s: s * pts[:, k], q, p) for k, s in ((0, 1), (0, -1), (1, 1), (1, -1))
    )
    mx, my = (x_hi - x_lo) / 2.0, (y_hi - y_lo) / 2.0
    # looking straight down: the picture's width runs along the base's y, its height along x
    half_w, half_h = model.cx - EDGE_PX, model.cy - EDGE_PX

    def height_needed(pts):  # how high the camera must be for each point to be in the picture
        across = (np.abs(pts[:, 1] - my) + margin_m) * model.fx / half_w
        along = (np.abs(pts[:, 0] - mx) + margin_m) * model.fy / half_h
        return pts[:, 2] + np.maximum(across, along)

    height = _farthest(arm, height_needed, q, p)
    height = DEFAULT_HEIGHT_M if height <= DEFAULT_HEIGHT_M else math.ceil(round(height * 100.0, 6)) / 100.0
    return pose_matrix(mx, my, height, 0.0, 0.0, 0.0)


def _square(centre, x_axis, y_axis, half: float) -> np.ndarray:
    """The corners (4, 3) of a square picture, side ``2 * half``, centred on ``centre``, its x (rightward as
    printed) along ``x_axis`` and its upward along ``y_axis``: top-left, top-right, bottom-right, bottom-left
    (its face looks along x_axis cross y_axis)."""
    c, x, y = (np.asarray(v, dtype=float) for v in (centre, x_axis, y_axis))
    return np.array([c + half * (-x + y), c + half * (x + y), c + half * (x - y), c + half * (-x - y)])


class SimCamera(CameraSource):
    """A live camera over a simulated arm (see the module docstring)."""

    finite = False

    def __init__(self, scene: Scene, opts: SimcamOptions | None = None, name: str = "simcam://"):
        self.scene = scene
        self.opts = o = opts or SimcamOptions()
        self.name = name
        self.intrinsics = camera_model(o)
        self.size = self.intrinsics.size
        self.renderer = Renderer(self.intrinsics)
        self.rng = np.random.default_rng(o.seed)
        cells = marker_cells(DICTIONARY)
        self._quiet = (cells + 2) / cells  # the marker's printed side (quiet zone in) per its black square
        self._textures: dict[int, np.ndarray] = {}
        self._board: tuple[np.ndarray, int] | None = None
        self.camera_pose = (
            pose_matrix(*o.pose)
            if o.pose is not None
            else default_camera_pose(self._arm(), self.intrinsics, margin_m=o.marker[1] * self._quiet / math.sqrt(2))
        )
        self._base_to_cam = np.linalg.inv(self.camera_pose)
        self._next_s = time.monotonic()
        self.frame_time_s = math.nan  #: monotonic time the last frame shows

    def _arm(self):
        return self.scene.true_arm

    def _texture(self, marker_id: int) -> np.ndarray:
        if marker_id not in self._textures:
            self._textures[marker_id] = marker_image(marker_id, DICTIONARY)
        return self._textures[marker_id]

    def _cam(self, pts) -> np.ndarray:
        p = np.asarray(pts, dtype=float).reshape(-1, 3)
        return p @ self._base_to_cam[:3, :3].T + self._base_to_cam[:3, 3]

    # --- drawing -------------------------------------------------------------------------------

    def _draw_marker(self, canvas, marker_id: int, size_m: float, frame: np.ndarray) -> None:
        """Marker ``marker_id`` (side ``size_m``, quiet zone around it) centred on ``frame``'s origin, its x and
        y along the frame's, face along its z."""
        corners = _square(frame[:3, 3], frame[:3, 0], frame[:3, 1], size_m * self._quiet / 2.0)
        jitter = self.opts.noise_px
        self.renderer.draw_quad(canvas, self._texture(marker_id), self._cam(corners), jitter_px=jitter, rng=self.rng)

    def _draw_table_board(self, canvas) -> None:
        """The ChArUco board lying on the table (``table=SPEC@X,Y,YAW``), white paper a square wide around it."""
        from armctl.vision.board import board_image, parse_board

        text, x, y, yaw = self.opts.table
        spec = parse_board(text, what="simcam table")
        if self._board is None:
            px = 60
            self._board = (np.pad(board_image(spec, px), px, constant_values=255), px)
        image, px = self._board
        c, s = math.cos(math.radians(yaw)), math.sin(math.radians(yaw))
        right, down = np.array([c, s, 0.0]), np.array([s, -c, 0.0])  # face up: the print's y runs to the right's right
        origin = np.array([x, y, 0.0]) / 1000.0 - (right + down) * spec.square_m
        w, h = (spec.cols + 2) * spec.square_m, (spec.rows + 2) * spec.square_m
        corners = [origin, origin + right * w, origin + right * w + down * h, origin + down * h]
        self.renderer.draw_quad(canvas, image, self._cam(np.array(corners)))

    def _draw_part(self, canvas, part) -> None:
        """A part: a cube of side ``size_m`` standing at ``z_m``, its marker (black square ``size_m``, quiet zone
        around it) on its top face."""
        yaw = float(part.yaw_rad)
        frame = np.eye(4)
        frame[:3, 0] = (math.cos(yaw), math.sin(yaw), 0.0)
        frame[:3, 1] = (-math.sin(yaw), math.cos(yaw), 0.0)
        frame[:3, 3] = (part.x_m, part.y_m, part.z_m + part.size_m)
        self._draw_marker(canvas, int(part.marker_id), float(part.size_m), frame)

    def _draw_arm(self, canvas, arm, tool: np.ndarray) -> None:
        pts = np.asarray(arm.points(self.scene.true_q_rad()), dtype=float)
        if pts.shape[1] == 2:
            pts = np.column_stack([pts, np.zeros(len(pts))])
        width = max(0.008, 0.15 * float(np.mean(arm.links_m)))
        cam = self._cam(pts)
        for a, b in zip(cam[:-1], cam[1:]):
            self.renderer.draw_segment(canvas, a, b, width_m=width, color=LINK_BGR)
        self._draw_jaws(canvas, arm, tool, width)

    def _draw_jaws(self, canvas, arm, tool: np.ndarray, width: float) -> None:
        """Two jaws ahead of the tool point along its heading, apart as far as the gripper is open."""
        g = arm.gripper
        angle = float(self.scene.true_gripper_rad())
        if g is None or not math.isfinite(angle):
            return
        span = g.open_rad - g.closed_rad
        opening = 0.0 if abs(span) < 1e-9 else min(1.0, max(0.0, (angle - g.closed_rad) / span))
        length = self.opts.marker[1] * self._quiet / 2.0 + 2.0 * width
        c, x, y = tool[:3, 3], tool[:3, 0], tool[:3, 1]
        for side in (-1.0, 1.0):
            off = c + side * (0.5 * width + opening * width) * y
            a, b = self._cam(np.stack([off, off + length * x]))
            self.renderer.draw_segment(canvas, a, b, width_m=0.4 * width, color=JAW_BGR)

    def render(self) -> np.ndarray:
        """The picture of the scene as it is now (BGR uint8, H x W x 3)."""
        o = self.opts
        canvas = self.renderer.blank(TABLE_GRAY)
        if o.table is not None:
            self._draw_table_board(canvas)
        parts = sorted(
            self.scene.parts_now(), key=lambda p: -float(self._cam([[p.x_m, p.y_m, p.z_m + p.size_m]])[0, 2])
        )
        for part in parts:
            self._draw_part(canvas, part)
        tool = np.asarray(self.scene.true_tool_pose(), dtype=float)
        self._draw_arm(canvas, self._arm(), tool)
        self._draw_marker(canvas, o.marker[0], o.marker[1], tool)
        grain = GRAIN_PER_PX * o.noise_px
        return self.renderer.finish(canvas, blur_px=o.blur_px, light=o.light, noise_gray=grain, rng=self.rng)

    def read(self) -> np.ndarray:
        """The next frame: at ``fps``, waiting for its time; it shows the arm at the moment it is returned.
        LinkError once the simulator it looks at is closed."""
        if not scene_is_live(self.scene):
            raise LinkError(f"camera {self.name}: the simulated arm it looked at is closed")
        if self.opts.fps > 0.0:
            wait = self._next_s - time.monotonic()
            if wait > 0.0:
                time.sleep(wait)
            self._next_s = max(self._next_s, time.monotonic()) + 1.0 / self.opts.fps
        self.frame_time_s = time.monotonic()
        return self.render()


def open_source(url: str, *, scene: Scene | None = None) -> SimCamera:
    """The simulated camera ``url`` names (``simcam://?...``), looking at ``scene`` (default: the simulator
    opened last, ``live_scene()``). BadInputError for a bad option or no simulator."""
    opts = parse_url(url)
    if opts.board is not None:  # views of a ChArUco board, for 'armctl camera calibrate' (no simulator needed)
        from armctl.vision.boardviews import board_views_source

        grain = GRAIN_PER_PX * opts.noise_px
        return board_views_source(
            opts.board,
            opts.views,
            model=camera_model(opts),
            seed=opts.seed or 0,
            blur_px=opts.blur_px,
            light=opts.light,
            noise_gray=grain,
            name=urllib.parse.unquote(url),
        )
    return SimCamera(scene if scene is not None else live_scene(), opts, name=urllib.parse.unquote(url))
