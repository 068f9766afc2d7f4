"""``type: armctl`` cameras: any source ``armctl --camera`` opens, as a LeRobot camera.

``--robot.cameras='{front: {type: armctl, source: "simcam://?size=160x120", width: 160, height: 120}}'`` gives the
robot a camera reading ``armctl.vision.sources.open_camera(source)``: the simulated camera of the arm simulator
this process drives (``simcam://``), a physics scene's camera (``physicscam://NAME``), a folder of pictures, a video
file, or a USB camera by index. Frames are RGB (LeRobot's order; armctl's sources give BGR), resized to the
config's width x height when the source's differ. A source renders or reads when asked: ``async_read`` is
``read``. Any of LeRobot's cameras (``type: opencv``...) works beside it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from lerobot.cameras.camera import Camera
from lerobot.cameras.configs import CameraConfig


@CameraConfig.register_subclass("armctl")
@dataclass
class ArmctlCameraConfig(CameraConfig):
    """``source``: what ``armctl --camera`` takes (simcam://..., physicscam://NAME, a folder, a video file, 0);
    ``width``/``height``: the frames' size (required: LeRobot sizes the dataset before the camera opens)."""

    source: str = "simcam://"

    def __post_init__(self) -> None:
        if not self.width or not self.height:
            raise ValueError(f"armctl camera {self.source!r}: give width and height (the frames' size, pixels)")
        if self.fps is None:
            self.fps = 30


class ArmctlCamera(Camera):
    """An armctl camera source (``ArmctlCameraConfig``) as a LeRobot ``Camera``."""

    def __init__(self, config: ArmctlCameraConfig):
        super().__init__(config)
        self.config = config
        self._source = None

    def __str__(self) -> str:
        return f"ArmctlCamera({self.config.source})"

    @property
    def is_connected(self) -> bool:
        return self._source is not None

    @staticmethod
    def find_cameras() -> list[dict]:
        """armctl's cameras are named by their source (``simcam://``, a file, an index), not found."""
        return []

    def connect(self, warmup: bool = True) -> None:
        from armctl.vision.sources import open_camera

        if self._source is not None:
            raise RuntimeError(f"{self} is already connected")
        self._source = open_camera(self.config.source)  # BadInputError (one line) for a source that cannot open
        if warmup:
            self.read()

    def read(self, color_mode=None) -> np.ndarray:
        import cv2

        if self._source is None:
            raise RuntimeError(f"{self} is not connected")
        frame = self._source.read()
        if frame is None:
            raise RuntimeError(f"{self}: the source has no more frames")
        size = (self.config.width, self.config.height)
        if (frame.shape[1], frame.shape[0]) != size:
            frame = cv2.resize(frame, size, interpolation=cv2.INTER_AREA)
        return cv2.cvtColor(frame, cv2.COLOR_BGR2RGB)

    def async_read(self, timeout_ms: float = 200) -> np.ndarray:
        return self.read()

    def read_latest(self, max_age_ms: int = 500) -> np.ndarray:
        return self.read()

    def disconnect(self) -> None:
        s, self._source = self._source, None
        if s is not None:
            s.close()
