"""A synthetic eye-to-hand camera calibration for the tests: a random truth (zeros, bows, backlash, link lengths, as
the simulators' truth files say them), the pose set driven through it, the marker's corners projected by
``cv2.projectPoints`` with pixel noise. Independent of the fit's model code: it applies the truth as the simulators
do (the believed angle from the calibration, plus the offset, the bow of the pulse's place in min..max, the
backlash's lag against the last move) and asks only ``kinematics.tool_pose`` where the marker is."""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

import numpy as np

from armctl.calibration.cameramodel import CameraObservations, marker_corners_m
from armctl.calibration.cameraposes import PoseSet, camera_poses, default_view
from armctl.calibration.files import find_calibration
from armctl.calibration.servo import load_calibration
from armctl.model.arm import load_arm
from armctl.model.kinematics import tool_pose

ARMS = ("mearm", "eezybot-mk2", "seed-3link", "so101")


@dataclass(frozen=True)
class Truth:
    zero_deg: np.ndarray
    curve: np.ndarray  # fraction of the servo's range at mid-pulse
    backlash_deg: np.ndarray
    links_m: np.ndarray
    base_offset_m: float

    def arm(self, arm):
        if arm.has_base:
            return dataclasses.replace(arm, links_m=self.links_m, base_offset_m=self.base_offset_m)
        return dataclasses.replace(arm, links_m=self.links_m)


def random_truth(arm, rng, *, zero=8.0, curve=0.03, backlash=1.5, length_mm=3.0) -> Truth:
    n = arm.n
    return Truth(
        zero_deg=rng.uniform(-zero, zero, n),
        curve=rng.uniform(-curve, curve, n),
        backlash_deg=rng.uniform(0.0, backlash, n),
        links_m=arm.links_m + rng.uniform(-length_mm, length_mm, arm.n_links) / 1000.0,
        base_offset_m=arm.base_offset_m + (rng.uniform(-length_mm, length_mm) / 1000.0 if arm.has_base else 0.0),
    )


def true_angles(cal, truth: Truth, values, approach) -> np.ndarray:
    """The angles (rad) the truth gives servo ``values`` reached moving in ``approach``."""
    values = np.asarray(values, dtype=float)
    believed = np.degrees(cal.values_to_joints(values))
    lo = np.array([s.lo for s in cal.joints])
    hi = np.array([s.hi for s in cal.joints])
    rng_deg = np.abs(np.degrees([s.angle_rad(s.hi) - s.angle_rad(s.lo) for s in cal.joints]))
    s = (values - lo) / (hi - lo)
    bow = truth.curve * rng_deg * 4.0 * s * (1.0 - s)
    return np.radians(believed + truth.zero_deg + bow - np.asarray(approach) * truth.backlash_deg / 2.0)


def sightings(arm, cal, truth, view, values, approach, rng, *, sigma=0.5, marker_m=0.030, dist=None):
    """The marker's corner pixels (N, 4, 2) for the truth at these values, with noise ``sigma`` px."""
    import cv2

    q = true_angles(cal, truth, values, approach)
    T = tool_pose(truth.arm(arm), q)
    pts = np.einsum("nij,kj->nki", T[:, :3, :3], marker_corners_m(marker_m)) + T[:, None, :3, 3]
    base_to_cam = np.linalg.inv(view.camera_to_base)
    rvec = cv2.Rodrigues(base_to_cam[:3, :3])[0]
    dist = np.zeros(5) if dist is None else dist
    px, _ = cv2.projectPoints(pts.reshape(-1, 3), rvec, base_to_cam[:3, 3], view.matrix, dist)
    return px.reshape(len(q), 4, 2) + rng.normal(0.0, sigma, (len(q), 4, 2))


def open_arm(name):
    arm = load_arm(name)
    return arm, load_calibration(find_calibration(name))


@dataclass
class Case:
    arm: object
    cal: object
    truth: Truth
    view: object
    poses: PoseSet
    train: CameraObservations
    test: CameraObservations


def make_case(name: str, seed: int, *, n: int = 160, sigma: float = 0.5, view=None, **truth_kw) -> Case:
    arm, cal = open_arm(name)
    rng = np.random.default_rng(seed)
    truth = random_truth(arm, rng, **truth_kw)
    view = view or default_view(arm)
    poses = camera_poses(arm, cal, n, view=view, seed=seed)
    sel = poses.observe
    px = sightings(arm, cal, truth, view, poses.values[sel], poses.approach[sel], rng, sigma=sigma)
    obs, held = poses.sightings(px, view.matrix, np.zeros(5), sigma_px=sigma)
    return Case(arm, cal, truth, view, poses, obs.subset(~held), obs.subset(held))


def true_tool_error_mm(case: Case, fit, obs: CameraObservations) -> np.ndarray:
    """Per sighting, the distance (mm) between the tool the fit predicts and the true tool, both in the camera's
    frame (the base frame is the fit's own gauge: its camera pose ties it to the true one)."""
    q_true = true_angles(case.cal, case.truth, obs.values, obs.approach)
    p_true = tool_pose(case.truth.arm(case.arm), q_true)[:, :3, 3]
    cam_true = np.linalg.inv(case.view.camera_to_base)
    p_true_cam = p_true @ cam_true[:3, :3].T + cam_true[:3, 3]
    p_fit = tool_pose(fit.arm, fit.angles(obs.values, obs.approach))[:, :3, 3]
    T = fit.base_to_camera
    p_fit_cam = p_fit @ T[:3, :3].T + T[:3, 3]
    return 1000.0 * np.linalg.norm(p_fit_cam - p_true_cam, axis=-1)


def degrees(x) -> float:
    return math.degrees(x)


def board_reference(case: Case, rng, *, cols=7, rows=5, square_m=0.030, sigma=0.5):
    """A ChArUco board's inner corners lying on the table (z = 0) under the camera, seen with noise ``sigma``,
    and the ``TableReference`` the fit takes from them."""
    import cv2

    from armctl.calibration.camerafit import table_reference

    gx, gy = np.meshgrid(np.arange(1, cols) * square_m, np.arange(1, rows) * square_m)
    board = np.stack([gx.ravel(), gy.ravel(), np.zeros(gx.size)], axis=-1)
    centre = case.view.camera_to_base[:3, 3]
    yaw = rng.uniform(-0.5, 0.5)
    in_base = np.eye(4)
    in_base[:3, :3] = [[math.cos(yaw), -math.sin(yaw), 0], [math.sin(yaw), math.cos(yaw), 0], [0, 0, 1]]
    in_base[:3, 3] = [centre[0] - 0.09, centre[1] - 0.06, 0.0]
    pts = board @ in_base[:3, :3].T + in_base[:3, 3]
    base_to_cam = np.linalg.inv(case.view.camera_to_base)
    rvec = cv2.Rodrigues(base_to_cam[:3, :3])[0]
    px, _ = cv2.projectPoints(pts, rvec, base_to_cam[:3, 3], case.view.matrix, np.zeros(5))
    px = px.reshape(-1, 2) + rng.normal(0.0, sigma, (len(pts), 2))
    return table_reference(board, px, in_base, case.view.matrix, np.zeros(5))
