"""The camera a Robot sees through: ``connect(camera=SRC)``, ``--camera SRC`` on the command line.

``ArmCamera.open(text, calibration=, camera_file=)`` opens the source (``armctl.vision.sources``), takes its
intrinsics (the simulated camera knows its own; any other from the camera file ``armctl camera calibrate``
saved, ``camera_file`` or the default one) and where it stands in the arm's base frame (``cam_to_base``: from the
arm's calibration once ``armctl calibrate --camera`` has found it; the simulated camera's own pose until then,
said in a note). Then:

- ``find(marker_id, size_m)``: the part carrying that marker, lying on the table: a ``Part`` (x, y, z, yaw in
  the base frame), from the marker's corners averaged over a few frames; BadInputError when the marker is not
  in view, naming the camera and the markers it does see;
- ``tool_pose()``: the tool marker's frame in the base frame (4x4), or None when it is not in view;
- ``close()``.
"""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass

import numpy as np

from armctl.errors import BadInputError

DEFAULT_MARKER_M = 0.030  # a part's or the tool's marker: the black square's side
FIND_FRAMES = 3  # frames a find averages the marker's corners over


@dataclass(frozen=True)
class Part:
    """A part on the table as the camera sees it: its marker's centre (m, base frame) and yaw (rad, the
    marker's x from the base's x)."""

    marker_id: int
    x_m: float
    y_m: float
    z_m: float
    yaw_rad: float

    @property
    def point_m(self) -> np.ndarray:
        return np.array([self.x_m, self.y_m, self.z_m])

    def __str__(self) -> str:
        return (
            f"marker {self.marker_id} at x={self.x_m * 1000:.1f} y={self.y_m * 1000:.1f} z={self.z_m * 1000:.1f} mm, "
            f"yaw {math.degrees(self.yaw_rad):.1f} deg"
        )


class ArmCamera:
    """A camera source with its intrinsics and where it stands (see the module docstring)."""

    def __init__(self, source, model, cam_to_base, *, tool_marker=(0, DEFAULT_MARKER_M), dictionary="5x5_100"):
        self.source, self.model, self.dictionary = source, model, dictionary
        self.cam_to_base = None if cam_to_base is None else np.asarray(cam_to_base, dtype=float)
        self.tool_marker = (int(tool_marker[0]), float(tool_marker[1]))
        self.name = getattr(source, "name", "") or "the camera"

    @classmethod
    def open(cls, text, *, calibration=None, camera_file=None, tool_marker=None) -> ArmCamera:
        """Open camera ``text`` for an arm with ``calibration`` (see the module docstring)."""
        from armctl.vision.sources import open_camera

        source = open_camera(text)
        try:
            model = source.intrinsics
            if model is None:
                from armctl.vision.intrinsics import load_camera_file

                model = load_camera_file(camera_file)
            cam_to_base = getattr(calibration, "camera_to_base", None)
            if cam_to_base is None and getattr(source, "camera_pose", None) is not None:
                cam_to_base = source.camera_pose
                print(
                    f"armctl: note: {text}: the simulated camera stands where the simulation put it (a real camera's "
                    "place comes from armctl calibrate --camera)",
                    file=sys.stderr,
                )
            marker = tool_marker or getattr(source, "tool_marker", None) or (0, DEFAULT_MARKER_M)
            return cls(source, model, cam_to_base, tool_marker=marker)
        except BaseException:
            source.close()
            raise

    def close(self) -> None:
        self.source.close()

    # --- what it sees -------------------------------------------------------------------------------------

    def frame(self):
        """The next picture (BGR); BadInputError once a folder or a video has given all of theirs."""
        frame = self.source.read()
        if frame is None:
            raise BadInputError(f"camera {self.name}: no more pictures (a folder or a video that has ended)")
        return frame

    def sightings(self, frames: int = FIND_FRAMES) -> dict[int, list[np.ndarray]]:
        """Marker id -> its corners (4, 2) in each of the next ``frames`` pictures it is seen in."""
        from armctl.vision.markers import detect_markers

        seen: dict[int, list[np.ndarray]] = {}
        for _ in range(max(1, frames)):
            for mid, corners in detect_markers(self.frame(), self.dictionary).items():
                seen.setdefault(mid, []).append(corners)
        return seen

    def placed(self, what: str) -> np.ndarray:
        """Where the camera stands (``cam_to_base``), or a BadInputError saying it cannot place ``what`` without."""
        if self.cam_to_base is None:
            raise BadInputError(
                f"camera {self.name}: where it stands is not known, so it cannot say where {what} is: calibrate it "
                "with the arm first (armctl calibrate --camera SRC --marker ID:SIZE_MM)"
            )
        return self.cam_to_base

    def find(self, marker_id: int, size_m: float = DEFAULT_MARKER_M, *, frames: int = FIND_FRAMES) -> Part:
        """The part carrying marker ``marker_id`` (side ``size_m``), lying on the table (see the module docstring)."""
        from armctl.vision.markers import part_on_table

        cam_to_base = self.placed(f"marker {marker_id}")
        seen = self.sightings(frames)
        if marker_id not in seen:
            others = ", ".join(str(m) for m in sorted(seen) if m != self.tool_marker[0]) or "none"
            raise BadInputError(
                f"camera {self.name}: marker {marker_id} is not in view (markers seen: {others}; the tool's is "
                f"{self.tool_marker[0]}): is it face up, in the picture, from the {self.dictionary} dictionary, not "
                "under the arm?"
            )
        corners = np.mean(seen[marker_id], axis=0)
        x, y, yaw, z = part_on_table(corners, size_m, self.model, cam_to_base)
        return Part(int(marker_id), x, y, z, yaw)

    def tool_pose(self, *, frames: int = 1) -> np.ndarray | None:
        """The tool marker's frame (4x4, m) in the base frame, from its corners averaged over ``frames``
        pictures; None when it is not in view."""
        from armctl.vision.markers import marker_pose

        cam_to_base = self.placed("the tool")
        mid, size = self.tool_marker
        seen = self.sightings(frames).get(mid)
        if not seen:
            return None
        return cam_to_base @ marker_pose(np.mean(seen, axis=0), size, self.model)


def pose_from_camera(arm, camera: ArmCamera, *, frames: int = 3):
    """The joint angles (rad) the camera sees the arm in: the tool marker's pose solved back through the IK (its
    position; on a 3-link chain its pitch too), or (None, why) when it cannot say."""
    from armctl import motion
    from armctl.errors import MotionError

    T = camera.tool_pose(frames=frames)
    if T is None:
        return None, f"the tool's marker {camera.tool_marker[0]} is not in view of {camera.name}"
    p = T[:3, 3] if arm.has_base else T[:2, 3]
    phi = None
    if arm.n_links == 3:
        x = T[:3, 0]
        phi = math.atan2(float(x[2]), math.hypot(float(x[0]), float(x[1]))) if arm.has_base else math.atan2(x[1], x[0])
    try:
        return motion.solve_pose(arm, p, phi, arm.home_rad), ""
    except MotionError as exc:
        return None, f"the tool seen at {np.round(p * 1000, 1).tolist()} mm fits no pose of the arm ({exc})"


def attach_camera(robot, text, camera_file=None, *, seen_pose: bool = True) -> None:
    """Open camera ``text`` for ``robot`` (``connect(camera=)``); with ``seen_pose``, an unknown pose (servos
    without pulses that nothing reads, no stored pose to trust) is taken from what the camera sees, before the
    first pulse. Closes the robot on an error opening it."""
    try:
        robot.camera = ArmCamera.open(text, calibration=robot.calibration, camera_file=camera_file)
        if seen_pose and robot.pose_unknown and robot.camera.cam_to_base is not None:
            q, why = pose_from_camera(robot.arm, robot.camera)
            if q is None:
                print(f"armctl: note: the camera cannot say where the arm stands: {why}", file=sys.stderr)
            else:
                robot.assume_pose(q)
                deg = " ".join(f"{math.degrees(v):.1f}" for v in q)
                print(f"armctl: note: the arm stands at {deg} deg, as {robot.camera.name} sees it", file=sys.stderr)
    except BaseException:
        robot.close()
        raise


def tool_across_view(camera: ArmCamera, dim: int, *, frames: int = 5) -> np.ndarray | None:
    """Where the camera sees the tool, x and y (m, base frame; a planar arm: in its plane): the ray through the
    tool marker's centre (averaged over ``frames`` pictures) met with the level plane at the marker's height (from
    its pose; a planar arm's plane itself). Across its view a camera measures to a fraction of a millimetre, along
    it only to a few from a small marker's size: a wrong height moves the point only by that error times the ray's
    slope. None when the marker is not in view."""
    from armctl.vision.markers import marker_centre_px, marker_pose, pixel_to_plane

    seen = camera.sightings(frames).get(camera.tool_marker[0])
    if not seen:
        return None
    corners = np.mean(seen, axis=0)
    cam_to_base = camera.placed("the tool")
    z = 0.0
    if dim == 3:
        z = float((cam_to_base @ marker_pose(corners, camera.tool_marker[1], camera.model))[2, 3])
    return pixel_to_plane(marker_centre_px(corners, camera.model), camera.model, cam_to_base, z)[:2]
