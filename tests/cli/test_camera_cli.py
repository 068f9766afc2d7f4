"""``armctl camera board`` and ``armctl camera calibrate``: a folder of rendered views of known intrinsics through
the command (a real process), its --json keys and the camera file; bad inputs are one line and exit 2."""

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from armctl.cli import main
from tests.helpers import require, require_module

cv2 = require_module("cv2", "the camera features need OpenCV (pip install 'armctl[camera]')")

from armctl.vision.boardviews import render_board_views  # noqa: E402  (after OpenCV is known to be there)
from armctl.vision.intrinsics import load_camera_file  # noqa: E402
from armctl.vision.sources import CameraModel  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
TRUTH = CameraModel(
    np.array([[590.0, 0.0, 316.0], [0.0, 594.0, 247.0], [0.0, 0.0, 1.0]]),
    np.array([-0.12, 0.04, 0.0, 0.0006, 0.0]),
    (640, 480),
)


@pytest.fixture(scope="module")
def shots(tmp_path_factory):
    folder = tmp_path_factory.mktemp("shots")
    for i, view in enumerate(render_board_views("charuco:7x5@30mm/22mm:5x5_100", TRUTH, 12, seed=7, noise_gray=1.5)):
        cv2.imwrite(str(folder / f"shot{i:02d}.png"), view.image)
    return folder


def test_calibrate_a_folder_as_a_process_json(shots, tmp_path):
    out = tmp_path / "cam.yaml"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run(
        [sys.executable, "-m", "armctl", "camera", "calibrate", "--camera", str(shots), "--json", "--camera-file",
         str(out)],
        capture_output=True, text=True, env=env, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    got = json.loads(proc.stdout)
    assert {"camera_matrix", "dist_coeffs", "image_size", "rms_px"} <= set(got)
    K = np.array(got["camera_matrix"])
    assert K.shape == (3, 3) and got["image_size"] == [640, 480] and len(got["dist_coeffs"]) == 5
    err = 100 * np.abs(K[[0, 1, 0, 1], [0, 1, 2, 2]] / TRUTH.matrix[[0, 1, 0, 1], [0, 1, 2, 2]] - 1)
    print(f"CLI: fx fy cx cy error % {np.round(err, 3)}, rms {got['rms_px']:.3f} px, {got['seconds']} s")
    assert np.all(err < 1.0) and 0 < got["rms_px"] < 0.5
    assert got["views_used"] == 12 and got["camera_file"] == str(out) and len(got["view_rms_px"]) == 12
    assert set(got["std_px"]) == {"fx", "fy", "cx", "cy"} and 0 < got["std_px"]["cx"] < 3
    assert np.allclose(load_camera_file(out).matrix, K)


def test_calibrate_prints_the_figures_and_saves_in_the_calibration_folder(shots, tmp_path, capsys):
    assert main(["camera", "calibrate", "--camera", str(shots)]) == 0
    text = capsys.readouterr().out
    for words in ("views: 12 used of 12", "fx ", "fy ", "cx ", "cy ", "distortion (k1 k2 p1 p2 k3):", "px rms"):
        assert words in text, text
    saved = tmp_path / "config" / "calibration" / "camera.yaml"  # the user's calibration folder (conftest)
    assert f"saved {saved}" in text and load_camera_file(saved).size == (640, 480)


def test_calibrate_a_video_file(tmp_path, capsys):
    video = tmp_path / "board.avi"
    writer = cv2.VideoWriter(str(video), cv2.VideoWriter_fourcc(*"MJPG"), 10, (640, 480))
    if not writer.isOpened():
        pytest.skip("this OpenCV cannot write an MJPG AVI")
    for view in render_board_views("charuco:7x5@30mm/22mm:5x5_100", TRUTH, 10, seed=8):
        writer.write(view.image)
    writer.release()
    assert (
        main(["camera", "calibrate", "--camera", str(video), "--json", "--camera-file", str(tmp_path / "cam.yaml")])
        == 0
    )
    got = json.loads(capsys.readouterr().out)
    assert got["views_used"] == 10 and np.allclose(np.array(got["camera_matrix"]), TRUTH.matrix, rtol=0.01)


def test_board_writes_a_pdf(tmp_path, capsys):
    assert main(["camera", "board", "-o", str(tmp_path / "b.pdf"), "--board", "charuco:5x4@20mm/15mm:4x4_50"]) == 0
    assert "board 100 x 80 mm on a 170 x" in capsys.readouterr().out
    assert (tmp_path / "b.pdf").read_bytes().startswith(b"%PDF-")


def _blank_folder(tmp_path, n):
    folder = tmp_path / "blank"
    folder.mkdir()
    for i in range(n):
        cv2.imwrite(str(folder / f"{i}.png"), np.full((480, 640, 3), 140, np.uint8))
    return folder


@pytest.mark.parametrize(
    ("argv", "fragment"),
    [
        (
            ["camera", "calibrate", "--camera", "BLANK"],
            "no ChArUco board charuco:7x5@30mm/22mm:5x5_100 in any of the 3",
        ),
        (["camera", "calibrate", "--camera", "FEW"], "only 3 of 3 pictures show the board"),
        (["camera", "calibrate", "--camera", "SAME"], "is not observable"),  # one shot five times over
        (["camera", "calibrate", "--camera", "5"], "--camera 5: cannot open it or read a frame"),
        (["camera", "calibrate", "--camera", "/dev/video97"], "--camera /dev/video97: no such device"),
        (["camera", "calibrate", "--camera", "nowhere.mp4"], "--camera nowhere.mp4: cannot open it"),
        (["camera", "calibrate", "--camera", "EMPTY"], "no pictures in this folder"),
        (["camera", "calibrate", "--camera", "FEW", "--board", "charuco:7x5@30mm/22:5x5_100"], "marker size '22'"),
        (["camera", "board", "-o", "b.svg"], "-o b.svg: give a .pdf or .png file"),
        (["camera", "board", "-o", "b.png", "--board", "charuco:7x5@30mm/22mm:3x3_9"], "'3x3_9' is not an ArUco"),
        (["camera", "calibrate"], "the following arguments are required: --camera"),
    ],
)
def test_bad_input_is_one_line_exit_2(shots, tmp_path, monkeypatch, capsys, argv, fragment):
    monkeypatch.chdir(tmp_path)
    few = tmp_path / "few"
    few.mkdir()
    for name in sorted(os.listdir(shots))[:3]:
        (few / name).write_bytes((shots / name).read_bytes())
    (tmp_path / "empty").mkdir()
    same = tmp_path / "same"
    same.mkdir()
    for i in range(5):
        (same / f"{i}.png").write_bytes((few / sorted(os.listdir(few))[0]).read_bytes())
    places = {"BLANK": str(_blank_folder(tmp_path, 3)), "FEW": str(few), "EMPTY": str(tmp_path / "empty")}
    places["SAME"] = str(same)
    assert main([places.get(a, a) for a in argv]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and fragment in err and "Traceback" not in err, err
    assert not (tmp_path / "config" / "calibration" / "camera.yaml").exists()  # nothing saved


def test_calibrate_the_simulated_cameras_board_views(capsys):
    """``simcam://?board=SPEC&views=N``: rendered views through the simulated camera's own intrinsics (its
    ``size``, ``focal`` and ``dist`` options), no camera, no simulator needed."""
    simcam = require_module("armctl.vision.simcam", "the simulated camera (simcam://)")
    require(
        "board" in simcam.OPTIONS, "simcam:// does not take board= yet (armctl.vision.boardviews.board_views_source)"
    )
    url = "simcam://?board=charuco:7x5@30mm/22mm:5x5_100&views=14&focal=560&dist=-0.1,0.02,0,0&noise=0.5&seed=2"
    assert main(["camera", "calibrate", "--camera", url, "--json"]) == 0
    got = json.loads(capsys.readouterr().out)
    K = np.array(got["camera_matrix"])
    assert got["views_used"] == 14 and got["image_size"] == [640, 480]
    assert np.allclose(K[[0, 1, 0, 1], [0, 1, 2, 2]], [560, 560, 320, 240], rtol=0.01), K
    bad = url.replace("5x5_100", "5x5_10")
    assert main(["camera", "calibrate", "--camera", bad]) == 2
    assert "'5x5_10' is not an ArUco dictionary" in capsys.readouterr().err
