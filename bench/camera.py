"""Marker detection at 640x480 on the simulated camera's frames: armctl's detector beside OpenCV's own, on the
same frames, in the same run; and the time to draw a frame.

    python bench/camera.py              # 150 frames of each scene
    python bench/camera.py -n 400

Scenes (a MeArm in a random pose each frame, the tool's marker facing up, ``simcam://`` defaults otherwise:
640x480, focal 600 px, 0.6 m over the middle of the reach; noise 0, so the corners' error is the detector's own):

  easy   the tool's marker alone (30 mm: 30 px wide)
  hard   the tool's marker 20 mm (20 px), blurred (sigma 1 px), dim (light 0.3), six parts on the table, each
         with its own 30 mm marker

For each frame, back to back (the machine's load falls on all alike):

  armctl        ``markers.detect_markers`` on the gray frame (OpenCV's ArucoDetector with armctl's parameters,
                corners refined by the marker's edges)
  armctl-noedge the same without the edge refinement (what the edges cost)
  opencv        ``cv2.aruco.ArucoDetector`` with OpenCV's default parameters, on the same gray frame
  render        drawing the frame (``SimCamera.render``); again with the default noise (0.5 px: jittered corners
                and sensor grain)

and prints p50/p99/max of each (ms), the ratio armctl/opencv, how many frames each found the tool's marker in,
its corners' rms error against the truth (px; the drawn marker's true corners, projected), and whether
detection keeps 30 frames/s (33 ms a frame) at p99.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import cv2  # noqa: E402

from armctl.model.arm import load_arm  # noqa: E402
from armctl.vision import markers, simcam  # noqa: E402
from tests.vision.test_simcam import Part, SimScene, make_sim, marker_up_poses  # noqa: E402

FRAME_BUDGET_MS = 1000.0 / 30.0
SCENES = {
    "easy": ("&noise=0", 0),
    "hard": ("&noise=0&marker=0:20&blur=1&light=0.3", 6),
}


def _parts(rng, n: int) -> list:
    out: list = []
    while len(out) < n:
        r, th = rng.uniform(0.06, 0.23), rng.uniform(-1.3, 1.3)
        x, y = r * np.cos(th), r * np.sin(th)
        if all(np.hypot(x - p.x_m, y - p.y_m) > 0.06 for p in out):
            out.append(Part(10 + len(out), 0.030, x, y, rng.uniform(-np.pi, np.pi), 0.0))
    return out


def _true_corners(cam, size_m: float) -> np.ndarray:
    T = cam.scene.true_tool_pose()
    pts = markers.marker_object_points(size_m) @ T[:3, :3].T + T[:3, 3]
    return cam.renderer.project((pts - cam.camera_pose[:3, 3]) @ cam.camera_pose[:3, :3])


def _timed(fn, *args, **kw):
    t0 = time.perf_counter()
    out = fn(*args, **kw)
    return out, (time.perf_counter() - t0) * 1000.0


def run_scene(name: str, n: int, seed: int = 1) -> dict[str, dict]:
    options, n_parts = SCENES[name]
    arm = load_arm("mearm")
    rng = np.random.default_rng(seed)
    opencv = cv2.aruco.ArucoDetector(markers.aruco_dictionary("5x5_100"), cv2.aruco.DetectorParameters())
    keys = ("armctl", "armctl-noedge", "opencv", "render", "render noise=0.5")
    got = {k: {"ms": [], "found": 0, "err": []} for k in keys}
    first = SimScene(make_sim("mearm", arm.home_rad))
    cam = simcam.open_source(f"simcam://?seed={seed}&fps=0{options}", scene=first)  # one camera, as a live one
    noisy = simcam.open_source(f"simcam://?seed={seed}&fps=0{options}&noise=0.5", scene=first)
    for q in marker_up_poses(arm, n, rng):
        cam.scene = noisy.scene = SimScene(make_sim("mearm", q), _parts(rng, n_parts))
        frame, ms = _timed(cam.render)
        got["render"]["ms"].append(ms)
        got["render noise=0.5"]["ms"].append(_timed(noisy.render)[1])
        gray = cv2.cvtColor(frame, cv2.COLOR_BGR2GRAY)
        true = _true_corners(cam, cam.opts.marker[1])
        for key, fn, kw in (
            ("armctl", markers.detect_markers, {}),
            ("armctl-noedge", markers.detect_markers, {"edges": False}),
            ("opencv", _opencv, {"detector": opencv}),
        ):
            found, ms = _timed(fn, gray, **kw)
            got[key]["ms"].append(ms)
            if 0 in found:
                got[key]["found"] += 1
                got[key]["err"].append(float(np.sqrt(np.mean((np.asarray(found[0]) - true) ** 2))))
    return got


def _opencv(gray, *, detector) -> dict:
    """OpenCV's own detector, its answer as ``detect_markers`` gives one."""
    corners, ids, _ = detector.detectMarkers(gray)
    return {} if ids is None else {int(i): c.reshape(4, 2) for c, i in zip(corners, ids.ravel())}


def report(name: str, got: dict, n: int) -> None:
    print(f"\n{name}: {n} frames 640x480{'':14}{'p50':>8}{'p99':>8}{'max':>8}   tool marker found   corner rms")
    for key, g in got.items():
        v = np.array(g["ms"])
        found = "" if key.startswith("render") else f"{g['found']:>5}/{n}"
        err = f"{np.mean(g['err']):8.3f} px" if g["err"] else ""
        times = f"{np.percentile(v, 50):7.2f}ms{np.percentile(v, 99):6.2f}ms{v.max():6.2f}ms"
        print(f"  {key:<34}{times}   {found:>11}   {err}")
    ours, theirs = np.array(got["armctl"]["ms"]), np.array(got["opencv"]["ms"])
    print(
        f"  ratio armctl/opencv: p50 {np.percentile(ours, 50) / np.percentile(theirs, 50):.2f}x, "
        f"p99 {np.percentile(ours, 99) / np.percentile(theirs, 99):.2f}x"
    )
    p99 = np.percentile(ours, 99)
    both = np.percentile(ours + np.array(got["render noise=0.5"]["ms"]), 99)
    keeps = "keeps" if p99 <= FRAME_BUDGET_MS else "does NOT keep"
    budget = f"{p99:.1f} ms of {FRAME_BUDGET_MS:.1f}"
    print(f"  detection {keeps} 30 frames/s at p99 ({budget}); render (noise 0.5) + detect {both:.1f} ms")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("-n", type=int, default=150, help="frames of each scene (default 150)")
    args = ap.parse_args()
    cv2.setNumThreads(1)  # one core each, as a camera thread beside the arm's would have on 2 cores
    for name in SCENES:
        report(name, run_scene(name, args.n), args.n)


if __name__ == "__main__":
    main()
