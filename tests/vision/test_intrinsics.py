"""Camera intrinsics from a ChArUco board: the spec, the views rendered through a camera of known intrinsics, the
fit checked against the truth (1%) and against OpenCV's own calibrateCamera on the corners OpenCV's chessboard
detector finds in the same pictures (0.5%; also its ChArUco recipe written out, and its ArUco markers' corners),
the camera file.

OpenCV 5.x has no ``cv2.aruco.calibrateCameraCharuco`` (4.x's contrib function): the independent path is
``cv2.findChessboardCorners`` (it finds a ChArUco board's inner corners: the markers sit inside the white squares)
with ``cornerSubPix``, the object points from the spec, and ``cv2.calibrateCamera``."""

import numpy as np
import pytest

from armctl.errors import BadInputError, ConfigError
from armctl.vision.board import parse_board
from armctl.vision.boardviews import board_views_source, render_board_views
from armctl.vision.intrinsics import (
    Views,
    calibrate,
    collect_views,
    load_camera_file,
    read_camera_file,
    save_camera_file,
)
from armctl.vision.sources import CameraModel, open_camera
from tests.helpers import require_module

cv2 = require_module("cv2", "the camera features need OpenCV (pip install 'armctl[camera]')")

SPEC = parse_board("charuco:7x5@30mm/22mm:5x5_100")
TRUTH = CameraModel(
    np.array([[612.0, 0.0, 331.0], [0.0, 604.0, 236.0], [0.0, 0.0, 1.0]]),
    np.array([-0.16, 0.07, 0.0012, -0.0008, 0.0]),
    (640, 480),
)


def _fxyc(K) -> np.ndarray:
    K = np.asarray(K)
    return np.array([K[0, 0], K[1, 1], K[0, 2], K[1, 2]])


def _pct(a, b) -> np.ndarray:
    return 100 * np.abs(_fxyc(a) / _fxyc(b) - 1)


@pytest.fixture(scope="module")
def pictures():
    return [v.image for v in render_board_views(SPEC, TRUTH, 14, seed=3, blur_px=0.6, noise_gray=2.0)]


class _Pictures:
    """A finite source of given pictures (what a folder gives, without the disk)."""

    finite = True

    def __init__(self, images, name="pictures"):
        self.images, self.name = images, name
        self.size = (images[0].shape[1], images[0].shape[0])

    def frames(self):
        yield from self.images


# --- the spec -----------------------------------------------------------------------------------------------------


def test_board_spec_reads_the_default_and_units():
    assert parse_board(None) == SPEC and SPEC.text == "charuco:7x5@30mm/22mm:5x5_100"
    s = parse_board("charuco:9x6@3cm/0.022m:DICT_4X4_100")
    assert (s.cols, s.rows, s.dictionary) == (9, 6, "4x4_100") and s.square_m == pytest.approx(0.03)
    assert parse_board(s.text) == s
    assert parse_board("charuco:7x5@30mm/22mm").dictionary == "5x5_100"
    assert parse_board("charuco:5x5@20mm/15mm:aruco_original").markers == 12


@pytest.mark.parametrize(
    ("text", "part"),
    [
        ("chessboard:7x5@30mm/22mm", "not a board spec"),
        ("charuco:7by5@30mm/22mm", "'7by5' is not COLSxROWS"),
        ("charuco:7x5", "'7x5' is not COLSxROWS"),
        ("charuco:7x5@30mm", "'30mm' is not SQUARE/MARKER"),
        ("charuco:7x5@30/22mm", "square size '30' has no unit"),
        ("charuco:7x5@30mm/2ft", "marker size"),
        ("charuco:7x5@30mm/30mm", "must be smaller"),
        ("charuco:7x5@30mm/22mm:5x5_10", "'5x5_10' is not an ArUco dictionary"),
        ("charuco:20x20@10mm/7mm:4x4_50", "need 200 markers, dictionary 4x4_50 has 50"),
        ("charuco:1x5@30mm/22mm", "1x5 squares"),
    ],
)
def test_a_bad_board_spec_is_one_line_naming_the_part(text, part):
    with pytest.raises(BadInputError) as e:
        parse_board(text)
    assert part in str(e.value) and "\n" not in str(e.value)


# --- the fit ------------------------------------------------------------------------------------------------------


def test_known_intrinsics_are_recovered_within_1pct(pictures):
    views = collect_views(_Pictures(pictures), SPEC)
    assert views.used == 14
    cal = calibrate(views, SPEC)
    err = _pct(cal.model.matrix, TRUTH.matrix)
    print(f"known intrinsics: error fx fy cx cy % {np.round(err, 3)}, rms {cal.rms_px:.3f} px")
    assert np.all(err < 1.0), err
    assert 0 < cal.rms_px < 0.5
    assert cal.model.size == (640, 480)


@pytest.mark.parametrize("size,f,dist", [((800, 600), 700.0, (-0.25, 0.1, 0, 0, 0)), ((640, 480), 520.0, (0,) * 5)])
def test_other_cameras_within_1pct(size, f, dist):
    K = np.array([[f, 0, size[0] / 2 + 7], [0, f * 1.004, size[1] / 2 - 5], [0, 0, 1]])
    truth = CameraModel(K, np.array(dist, dtype=float), size)
    source = board_views_source(SPEC, 12, model=truth, seed=11, blur_px=0.5)
    assert source.finite and source.intrinsics is truth and source.size == size
    cal = calibrate(collect_views(source, SPEC), SPEC)
    assert np.all(_pct(cal.model.matrix, K) < 1.0), (cal.model.matrix, K)


def test_random_cameras_within_1pct_and_agreeing_with_opencv():
    """Eight cameras drawn at random (focal 450-800 px, aspect within 1%, centre up to 25 px off, barrel or pincushion
    distortion), 14 views each with sensor grain: every focal length and centre within 1% of the truth, and within
    0.5% of OpenCV's own calibration from its chessboard detector on the same pictures."""
    rng = np.random.default_rng(36)
    worst, apart = np.zeros(4), np.zeros(4)
    for seed in range(8):
        f = rng.uniform(450, 800)
        K = np.array([[f, 0, 320 + rng.uniform(-25, 25)], [0, f * rng.uniform(0.99, 1.01), 240 + rng.uniform(-25, 25)]])
        K = np.vstack([K, [0, 0, 1]])
        dist = np.array([rng.uniform(-0.25, 0.05), rng.uniform(-0.05, 0.1), *rng.uniform(-1e-3, 1e-3, 2), 0.0])
        model = CameraModel(K, dist, (640, 480))
        pictures = [v.image for v in render_board_views(SPEC, model, 14, seed=seed, noise_gray=2.0)]
        cal = calibrate(collect_views(_Pictures(pictures), SPEC), SPEC)
        worst = np.maximum(worst, _pct(cal.model.matrix, K))
        sigmas = np.max(np.abs(_fxyc(cal.model.matrix) - _fxyc(K)) / np.array(cal.std_px))
        assert sigmas < 4, f"the truth is {sigmas:.1f} standard deviations off: the fit's sigma is not honest"
        _, K_cv, *_, same = _chessboard_reference(pictures)
        apart = np.maximum(apart, _pct(calibrate(collect_views(_Pictures(same), SPEC), SPEC).model.matrix, K_cv))
        assert cal.rms_px < 0.5
    print(f"8 random cameras: worst error fx fy cx cy % {np.round(worst, 3)}, from OpenCV's {np.round(apart, 3)}")
    assert np.all(worst < 1.0) and np.all(apart < 0.5), (worst, apart)


def _chessboard_reference(pictures):
    """OpenCV alone: its chessboard detector (not the ChArUco one) on the pictures, sub-pixel corners, the board's
    inner corners as object points from the spec, cv2.calibrateCamera. The pictures it finds the board in are
    given back: armctl is compared on those (the same views)."""
    inner = (SPEC.cols - 1, SPEC.rows - 1)
    grid = np.zeros((inner[0] * inner[1], 3), np.float32)
    grid[:, :2] = (np.mgrid[0 : inner[0], 0 : inner[1]].T.reshape(-1, 2) + 1) * SPEC.square_m
    obj, img, found = [], [], []
    for image in pictures:
        gray = cv2.cvtColor(image, cv2.COLOR_BGR2GRAY)
        ok, corners = cv2.findChessboardCorners(gray, inner, flags=cv2.CALIB_CB_ADAPTIVE_THRESH)
        if ok:
            crit = (cv2.TERM_CRITERIA_EPS + cv2.TERM_CRITERIA_MAX_ITER, 50, 1e-4)
            img.append(cv2.cornerSubPix(gray, corners, (5, 5), (-1, -1), crit))
            obj.append(grid)
            found.append(image)
    assert len(found) >= 10, f"OpenCV's chessboard detector found the board in {len(found)} of {len(pictures)}"
    return (*cv2.calibrateCamera(obj, img, (640, 480), None, None), found)


def _marker_reference(pictures):
    """OpenCV alone: its ArUco marker detector (sub-pixel corners) on the same pictures, the markers' corners on
    the board (CharucoBoard.getObjPoints), cv2.calibrateCamera."""
    board = cv2.aruco.CharucoBoard((7, 5), 0.03, 0.022, cv2.aruco.getPredefinedDictionary(cv2.aruco.DICT_5X5_100))
    params = cv2.aruco.DetectorParameters()
    params.cornerRefinementMethod = cv2.aruco.CORNER_REFINE_SUBPIX
    detector = cv2.aruco.ArucoDetector(board.getDictionary(), params)
    ids_on_board, corners_on_board = list(board.getIds().ravel()), board.getObjPoints()
    obj, img = [], []
    for image in pictures:
        corners, ids, _ = detector.detectMarkers(cv2.cvtColor(image, cv2.COLOR_BGR2GRAY))
        obj.append(np.concatenate([corners_on_board[ids_on_board.index(i)] for i in ids.ravel()]).astype(np.float32))
        img.append(np.concatenate(corners).reshape(-1, 1, 2).astype(np.float32))
    return (*cv2.calibrateCamera(obj, img, (640, 480), None, None), pictures)


def _charuco_recipe(pictures):
    """OpenCV's ChArUco recipe written out here: CharucoDetector, matchImagePoints, calibrateCamera (armctl must add
    nothing to it and drop nothing from it)."""
    board = cv2.aruco.CharucoBoard((7, 5), 0.03, 0.022, cv2.aruco.getPredefinedDictionary(cv2.aruco.DICT_5X5_100))
    detector = cv2.aruco.CharucoDetector(board)
    obj, img = [], []
    for image in pictures:
        corners, ids, _, _ = detector.detectBoard(cv2.cvtColor(image, cv2.COLOR_BGR2GRAY))
        o, i = board.matchImagePoints(corners, ids)
        obj.append(o)
        img.append(i)
    return (*cv2.calibrateCamera(obj, img, (640, 480), None, None), pictures)


@pytest.mark.parametrize(
    ("reference", "within_pct"),
    [
        (_chessboard_reference, 0.5),  # another detector's corners (the same chessboard corners): the Done-when
        (_charuco_recipe, 1e-6),
        (_marker_reference, 1.5),  # the markers' own corners, a noisier measurement (rms ~0.6 px): a looser check
    ],
    ids=["chessboard", "charuco-recipe", "markers"],
)
def test_agrees_with_opencvs_own_calibration_on_the_same_views(pictures, reference, within_pct):
    rms, K, *_, same = reference(pictures)
    cal = calibrate(collect_views(_Pictures(same), SPEC), SPEC)
    err = _pct(cal.model.matrix, K)
    print(f"{reference.__name__}: armctl vs OpenCV fx fy cx cy % {np.round(err, 3)}; rms {cal.rms_px:.3f} / {rms:.3f}")
    assert np.all(err < within_pct), err


def test_views_with_few_corners_are_skipped_and_counted(pictures):
    blank = np.full_like(pictures[0], 140)
    half = pictures[0].copy()
    half[:, : int(_corner_column(pictures[0]))] = 140  # keeps only a few corners at one side
    views = collect_views(_Pictures([blank, *pictures[:5], half]), SPEC)
    assert views.seen == 7 and views.with_board in (5, 6) and views.used == views.with_board
    assert calibrate(views, SPEC).views_used == views.used


def _corner_column(image) -> float:
    """A column left of which all but the board's last column or two of corners lie."""
    views = collect_views(_Pictures([image]), SPEC)
    xs = np.sort(views.image_points[0][:, 0])
    return xs[-5] + 1


def test_no_board_or_too_few_views_is_one_line(pictures):
    blank = np.full_like(pictures[0], 140)
    with pytest.raises(BadInputError, match="no ChArUco board .* in any of the 3 pictures"):
        calibrate(collect_views(_Pictures([blank] * 3, "shots"), SPEC), SPEC, source="shots")
    with pytest.raises(BadInputError, match="only 3 of 4 pictures show the board .* at least 4"):
        calibrate(collect_views(_Pictures([blank, *pictures[:3]]), SPEC), SPEC, source="shots")
    other = parse_board("charuco:7x5@30mm/22mm:4x4_50")  # the wrong dictionary: no marker of it is seen
    with pytest.raises(BadInputError, match="no ChArUco board charuco:7x5@30mm/22mm:4x4_50"):
        calibrate(collect_views(_Pictures(pictures[:4]), other), other)
    with pytest.raises(BadInputError, match="views=0"):
        board_views_source(SPEC, 0)


# --- the camera file ----------------------------------------------------------------------------------------------


def test_camera_file_round_trip_and_default_place(pictures, tmp_path, monkeypatch):
    cal = calibrate(collect_views(_Pictures(pictures[:6]), SPEC), SPEC, source="a 'quoted' C:\\path")
    out = save_camera_file(cal, tmp_path / "cam.yaml")
    back = read_camera_file(out)
    assert np.allclose(back.model.matrix, cal.model.matrix, rtol=1e-9) and np.allclose(back.model.dist, cal.model.dist)
    assert back.model.size == (640, 480) and back.rms_px == pytest.approx(cal.rms_px)
    assert (back.board, back.views_used, back.source) == (SPEC.text, 6, "a 'quoted' C:\\path")
    assert np.allclose(back.std_px, cal.std_px) and len(cal.std_px) == 4 and min(cal.std_px) > 0
    save_camera_file(cal, out)
    assert (tmp_path / "cam.yaml.bak").exists()
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ConfigError, match="no camera file: run 'armctl camera calibrate"):
        load_camera_file()
    (tmp_path / "calibration").mkdir()
    (tmp_path / "calibration" / "camera.yaml").write_text(out.read_text())
    assert np.allclose(load_camera_file().matrix, cal.model.matrix)


@pytest.mark.parametrize(
    ("change", "words"),
    [
        (("image_size: [640, 480]", "image_size: [640]"), "cam.yaml:5, key 'image_size': expected 2 numbers"),
        (("[0, 0, 1]]", "[0, 1, 1]]"), "cam.yaml:3, key 'camera_matrix': not a camera matrix"),
        (("dist_coeffs: [", "dist_coeffs: [1, 2, "), "dist_coeffs.*expected 4 or 5 or 8 or 12 or 14"),
        (("views_used:", "colour: red\nviews_used:"), "unknown key 'colour'"),
        (("version: 1", ""), None),  # the optional keys may be left out
        (("rms_px:", "rms_px: -1 #"), "key 'rms_px': -1 is out of range"),
        (("camera_matrix", "matrix"), "missing required key 'camera_matrix'"),
    ],
)
def test_camera_file_errors_name_file_key_and_line(pictures, tmp_path, change, words):
    cal = calibrate(collect_views(_Pictures(pictures[:5]), SPEC), SPEC)
    out = save_camera_file(cal, tmp_path / "cam.yaml")
    out.write_text(out.read_text().replace(*change, 1))
    if words is None:
        assert load_camera_file(out).size == (640, 480)
        return
    with pytest.raises(ConfigError, match=words) as e:
        load_camera_file(out)
    assert "cam.yaml" in str(e.value) and "\n" not in str(e.value)


def test_rendered_views_show_the_board_where_opencv_projects_it():
    """The rendering itself: the detected corners are where cv2.projectPoints puts the board's corners."""
    board = cv2.aruco.CharucoBoard((7, 5), 0.03, 0.022, cv2.aruco.getPredefinedDictionary(cv2.aruco.DICT_5X5_100))
    detector = cv2.aruco.CharucoDetector(board)
    for view in render_board_views(SPEC, TRUTH, 4, seed=5):
        corners, ids, _, _ = detector.detectBoard(cv2.cvtColor(view.image, cv2.COLOR_BGR2GRAY))
        truth = board.getChessboardCorners()[ids.ravel()]
        px, _ = cv2.projectPoints(truth, cv2.Rodrigues(view.R)[0], view.t, TRUTH.matrix, TRUTH.dist)
        assert len(ids) == 24 and np.abs(px.reshape(-1, 2) - corners.reshape(-1, 2)).max() < 0.5


def test_a_folder_of_written_views_calibrates_like_the_pictures(pictures, tmp_path):
    for i, image in enumerate(pictures):
        cv2.imwrite(str(tmp_path / f"view{i:02d}.png"), image)
    with open_camera(tmp_path) as source:
        views = collect_views(source, SPEC)
    direct = calibrate(collect_views(_Pictures(pictures), SPEC), SPEC)
    assert isinstance(views, Views) and views.used == 14
    assert np.allclose(calibrate(views, SPEC).model.matrix, direct.model.matrix)


class _Live:
    """A live camera (not finite) that shows each picture three times, then the next, for ever."""

    finite = False
    name = "live"

    def __init__(self, images):
        self.images, self.size, self.given = images, (640, 480), 0

    def frames(self):
        while True:
            self.given += 1
            yield self.images[(self.given - 1) // 3 % len(self.images)]


def test_a_live_camera_keeps_a_view_only_after_the_board_moved(pictures):
    live = _Live(pictures)
    views = collect_views(live, SPEC, live_views=5)
    assert views.used == 5 and live.given == 13  # 5 pictures, each kept once: frames 1, 4, 7, 10, 13
    assert len({v.tobytes() for v in views.image_points}) == 5


def test_a_fit_the_views_cannot_pin_down_is_refused_naming_the_parameter(pictures, monkeypatch):
    import armctl.vision.boardviews as boardviews

    monkeypatch.setattr(boardviews, "TILT_DEG", (0.0, 3.0))  # every view square-on: the focal is unobservable
    frontal = [v.image for v in render_board_views(SPEC, TRUTH, 8, seed=4)]
    with pytest.raises(BadInputError, match=r"the focal length is not observable: .*\(tilted [0-4] deg at most\)"):
        calibrate(collect_views(_Pictures(frontal), SPEC), SPEC, source="shots")
    with pytest.raises(BadInputError, match="is not observable"):  # one view five times over
        calibrate(collect_views(_Pictures([pictures[0]] * 5), SPEC), SPEC, source="shots")
    views = collect_views(_Pictures(pictures[:4]), SPEC)
    views.image_points = [
        p + np.random.default_rng(1).normal(0, 3.0, p.shape).astype(np.float32) for p in views.image_points
    ]
    with pytest.raises(BadInputError, match=r"(fx|fy|cx|cy) is not observable from these views \(\+- "):
        calibrate(views, SPEC, source="shots")  # 4 views and corners 3 px off: too loose to trust
