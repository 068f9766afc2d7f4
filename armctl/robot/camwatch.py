"""The camera's watch over a run: ``with CameraWatch(robot, watch_mm=10): robot.run(program)``.

While it is on, a thread reads the robot's camera (``robot.camera``: ``connect(camera=)``) as fast as it gives
pictures, finds the tool's marker and compares it with where the arm was sent: the tool point of the commanded
pose (``robot.board.sample()``, read between two frames of the motion), projected into the picture through where
the camera stands. The distance is measured across the camera's view, in millimetres at the tool's depth (a
single camera sees depth poorly; a stalled servo, a slipping horn or a collision moves the tool across it too), to
the nearest of the poses commanded over the last ``lag_s`` (a servo follows its pulses a little late). When the
tool stays more than ``watch_mm`` off for ``hold_s`` (0.3 s), the watch stops the arm (``robot.stop``) with one line
saying where and how far off: the run ends as any stopped run does, its journal kept for ``--resume``.

A tool whose marker is out of view is not judged (``hidden_s`` counts how long). The arm must be calibrated by
the camera (``armctl calibrate --camera``) for ``watch_mm`` to be small: an arm 5-15 mm off everywhere is off.
"""

from __future__ import annotations

import threading
import time
from collections import deque

import numpy as np

from armctl.errors import BadInputError

DEFAULT_WATCH_MM = 10.0
HOLD_S = 0.3
LAG_S = 0.25


class CameraWatch:
    """See the module docstring. ``tripped``: the stop's line once it stopped the arm, else None; ``worst_mm``:
    the largest distance seen; ``frames``: pictures judged."""

    def __init__(self, robot, *, watch_mm: float = DEFAULT_WATCH_MM, hold_s: float = HOLD_S, lag_s: float = LAG_S):
        cam = robot.camera
        if cam is None:
            raise BadInputError("the camera's watch needs a camera that sees the arm (--camera SRC)")
        if cam.cam_to_base is None:
            raise BadInputError(
                f"camera {cam.name}: where it stands is not known, so it cannot watch the tool: calibrate it with the "
                "arm first (armctl calibrate --camera SRC --marker ID:SIZE_MM)"
            )
        self.robot, self.camera = robot, cam
        self.watch_m, self.hold_s, self.lag_s = float(watch_mm) / 1000.0, float(hold_s), float(lag_s)
        self._base_to_cam = np.linalg.inv(cam.cam_to_base)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.tripped: str | None = None
        self.tripped_at: float | None = None
        self.worst_mm = 0.0
        self.frames = 0
        self.hidden_s = 0.0

    def __enter__(self) -> CameraWatch:
        self._thread = threading.Thread(target=self._run, name="armctl-camera-watch", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=2.0)

    # --- one picture ----------------------------------------------------------------------------------

    def _project(self, points_base: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Pixels (N, 2) and depths (N,) of base-frame points (N, 3)."""
        from armctl.vision.sources import need_cv2

        pc = points_base @ self._base_to_cam[:3, :3].T + self._base_to_cam[:3, 3]
        px, _ = need_cv2().projectPoints(pc.reshape(-1, 1, 3), np.zeros(3), np.zeros(3), self.camera.model.matrix,
                                         self.camera.model.dist)  # fmt: skip
        return px.reshape(-1, 2), pc[:, 2]

    def _tool_m(self, q) -> np.ndarray:
        p = np.asarray(self.robot.arm.tool_point(q), dtype=float)
        return p if len(p) == 3 else np.array([p[0], p[1], 0.0])

    def off_m(self, frame, sent: list[np.ndarray]) -> float | None:
        """How far (m, across the view) the tool's marker in ``frame`` is from the nearest of the base-frame tool
        points ``sent``; None when the marker is not in view."""
        from armctl.vision.markers import detect_markers, marker_centre_px

        corners = detect_markers(frame, self.camera.dictionary).get(self.camera.tool_marker[0])
        if corners is None:
            return None
        seen = marker_centre_px(corners, self.camera.model)
        px, depth = self._project(np.array(sent))
        d = np.linalg.norm(px - seen, axis=1) * depth / self.camera.model.fx
        return float(np.min(d))

    # --- the thread -----------------------------------------------------------------------------------

    def _run(self) -> None:
        sent: deque[tuple[float, np.ndarray]] = deque()
        off_since: float | None = None
        last = time.monotonic()
        while not self._stop.is_set():
            try:
                frame = self.camera.source.read()
                q = self.robot.board.sample()[0]
            except Exception:  # noqa: BLE001 - a camera or a robot gone: the run says why, the watch just ends
                return
            now = time.monotonic()
            if frame is None:
                return
            sent.append((now, self._tool_m(q)))
            while sent and now - sent[0][0] > self.lag_s:
                sent.popleft()
            off = self.off_m(frame, [p for _, p in sent])
            if off is None:
                self.hidden_s += now - last
            else:
                self.frames += 1
                self.worst_mm = max(self.worst_mm, off * 1000.0)
                off_since = (off_since or now) if off > self.watch_m else None
                if off_since is not None and now - off_since >= self.hold_s:
                    self._trip(off, sent[-1][1], now - off_since)
                    return
            last = now

    def _trip(self, off_m: float, where: np.ndarray, for_s: float) -> None:
        at = " ".join(f"{k}={v * 1000:.1f}" for k, v in zip("xyz", where))
        self.tripped = (
            f"the camera saw the tool {off_m * 1000:.1f} mm off the plan for {for_s:.2f} s near {at} mm (over the "
            f"{self.watch_m * 1000:g} mm watch: a stalled or slipping servo, a collision?)"
        )
        self.tripped_at = time.monotonic()
        self.robot.stop(self.tripped)
