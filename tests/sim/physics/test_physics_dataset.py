"""A physics scene's camera recorded in a LeRobot dataset: ``armctl run ... --record-dataset DIR --camera
top=physicscam://top`` writes the rendered pictures as the camera's video, a frame per dataset frame."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np

from tests.helpers import require_module

REPO = Path(__file__).resolve().parents[3]


def test_run_records_the_physics_camera(tmp_path):
    require_module("mujoco", "the physics plant")
    av = require_module("av", "datasets' video")
    pq = require_module("pyarrow.parquet", "datasets' tables")
    scene = REPO / "examples" / "scenes" / "pick_and_place_2link.yaml"
    out = tmp_path / "ds"
    cmd = [sys.executable, "-m", "armctl", "run", str(REPO / "examples" / "pick_and_place_2link.yaml"), "--port",
           f"armsim://?arm=seed-2link&physics=1&scene={scene}&speed=4", "--record-dataset", str(out), "--task",
           "line up three cubes", "--camera", "top=physicscam://top", "--fps", "10"]  # fmt: skip
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=300, cwd=REPO)
    assert p.returncode == 0, p.stderr[-3000:]
    info = json.loads((out / "meta" / "info.json").read_text())
    assert info["features"]["observation.images.top"]["shape"][:2] == [240, 320]
    rows = sum(pq.read_table(f).num_rows for f in (out / "data").rglob("*.parquet"))
    videos = list((out / "videos" / "observation.images.top").rglob("*.mp4"))
    with av.open(str(videos[0])) as container:
        frames = [f.to_ndarray(format="rgb24") for f in container.decode(video=0)]
    assert len(frames) == rows > 5
    assert frames[0].shape == (240, 320, 3)
    moved = np.abs(frames[0].astype(int) - frames[len(frames) // 2].astype(int)).mean()
    assert moved > 0.5  # the arm moved between them: rendered live, not one picture again
