"""``armctl camera check``: the tool's error over a grid, measured by the camera, is the truth's (within a
millimetre across the view), plotted and saved; a marker never seen is one line, exit 2."""

import json
import subprocess
import sys

import numpy as np
import pytest
import yaml

import armctl
from armctl.cli.camera_check import measure
from armctl.sim import scene

pytest.importorskip("cv2")

TRUTH = "zero_offset_deg: {base: 2.5, shoulder: -4.0, elbow: 3.0}\nlinks_mm: [81.5, 78.2]\n"


def test_measured_errors_are_the_truths(tmp_path):
    truth = tmp_path / "truth.yaml"
    truth.write_text(TRUTH)
    targets = np.array([[0.10, -0.06, 0.08], [0.14, 0.0, 0.08], [0.12, 0.08, 0.06], [0.16, 0.04, 0.04]])
    port = f"armsim://?arm=mearm&rate=20&truth={truth}"
    with armctl.connect("mearm", port=port, camera="simcam://?fps=0&seed=7") as robot:
        live = scene.latest()
        landed = measure(robot, targets, frames=5)
        for t, seen in zip(targets, landed):
            robot.move_to(*t, path="joint")
            robot.board.settle()
            true_xy = live.true_tool_m()[:2]
            assert np.linalg.norm(true_xy - t[:2]) > 0.004  # the truth moves the tool: 4+ mm
            assert np.linalg.norm(seen - true_xy) < 0.0015  # the camera sees where: within 1.5 mm


def test_cli_check_prints_plots_and_saves(tmp_path):
    truth = tmp_path / "truth.yaml"
    truth.write_text(TRUTH)
    base = [sys.executable, "-m", "armctl", "--arm", "mearm", "--port", f"armsim://?arm=mearm&rate=40&truth={truth}",
            "camera", "check", "--spacing", "50", "--frames", "2"]  # fmt: skip
    r = subprocess.run([*base, "--camera", "simcam://?fps=0", "--json", "--plot", "map.png", "--out", "map.yaml"],
                       capture_output=True, text=True, timeout=300, cwd=tmp_path)  # fmt: skip
    assert r.returncode == 0, r.stderr
    report = json.loads(r.stdout)
    assert report["measured"] == report["points"] > 5
    assert 3.0 < report["mean_mm"] < 15.0
    assert (tmp_path / "map.png").read_bytes()[:4] == b"\x89PNG"
    saved = yaml.safe_load((tmp_path / "map.yaml").read_text())["accuracy_map"]
    assert saved["z_m"] == pytest.approx(report["z_m"]) and len(saved["error_mm"]) == len(saved["ys_m"])
    r = subprocess.run([*base, "--camera", "simcam://?fps=0&marker=5:30"], capture_output=True, text=True,
                       timeout=300, cwd=tmp_path)  # fmt: skip
    assert r.returncode == 2
    assert "marker was never seen" in r.stderr.strip().splitlines()[-1]
