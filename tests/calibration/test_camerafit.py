"""The camera calibration's math (armctl.calibration.camerafit, cameramodel, cameraposes) on synthetic sightings
from random truths (tests/calibration/camera_synth.py: the truth applied as the simulators do, projected with
cv2.projectPoints, 0.5 px noise). The full sweep (20 truths per arm) is ARMCTL_SLOW=1."""

from __future__ import annotations

import math
import os
import statistics

import numpy as np
import pytest

pytest.importorskip("cv2")
pytest.importorskip("scipy")

from armctl.calibration.camerafit import believed_fit, fit_camera, to_calibration, tool_error_mm  # noqa: E402
from armctl.calibration.cameramodel import CameraObservations, marker_corners_m  # noqa: E402
from armctl.calibration.files import parse_calibration, to_yaml  # noqa: E402
from armctl.calibration.maps import ServoCal  # noqa: E402
from armctl.core.config import load_yaml_text  # noqa: E402
from armctl.errors import BadInputError, ConfigError  # noqa: E402
from armctl.model.kinematics import limit_excess, tool_pose  # noqa: E402

from .camera_synth import ARMS, board_reference, make_case, true_tool_error_mm  # noqa: E402


def recovery(name, seed, n=160):
    """(case, fit with a table reference, zero errors deg, length errors mm, held-out error before and after mm)."""
    case = make_case(name, seed, n=n)
    ref = board_reference(case, np.random.default_rng(seed + 1000))
    fit = fit_camera(case.arm, case.cal, case.train, reference=ref)
    zeros = np.degrees([fit.value(f"{j} zero") for j in case.arm.joint_names]) - case.truth.zero_deg
    lengths = 1000 * (np.array([fit.value(f"links_m[{i}]") for i in range(case.arm.n_links)]) - case.truth.links_m)
    before = true_tool_error_mm(case, believed_fit(case.arm, case.cal, case.train, reference=ref), case.test)
    after = true_tool_error_mm(case, fit, case.test)
    return case, fit, zeros, lengths, before, after


@pytest.mark.parametrize("name", ARMS)
def test_random_truth_recovered_with_a_table_reference(name):
    case, fit, zeros, lengths, before, after = recovery(name, seed=1)
    assert not fit.held
    assert 0.35 < fit.rms_px < 0.65  # the pixel noise: the model fits the truth
    assert np.max(before) > 5.0
    assert np.max(after) <= 1.5 and np.mean(after) <= 1.0
    sig_len = 1000 * np.array([fit.sigma_of(f"links_m[{i}]") for i in range(case.arm.n_links)])
    assert np.all(np.abs(lengths) <= np.maximum(0.5, 3 * sig_len))  # eezybot's forearm: weakly seen, says so
    sig_zero = np.degrees([fit.sigma_of(f"{j} zero") for j in case.arm.joint_names])
    assert np.all(np.abs(zeros) <= np.maximum(0.3, 3 * sig_zero))
    if name != "eezybot-mk2":  # its 44-degree forearm range leaves the shoulder's zero ~0.3 deg uncertain
        assert np.all(np.abs(zeros) <= 0.3)
    if not case.arm.parallelogram:  # a level hand seen from straight above: the forearm's length is ~0.5 mm
        assert np.all(np.abs(lengths) <= 0.5)  # uncertain (its effect lies mostly along the camera's view)
    truth_b = case.truth.backlash_deg
    assert np.allclose(np.degrees([fit.value(f"{j} backlash") for j in case.arm.joint_names]), truth_b, atol=0.2)


def test_gauge_held_and_named_without_a_reference():
    case = make_case("mearm", 3, n=40)
    fit = fit_camera(case.arm, case.cal, case.train)
    assert set(fit.held) == {"base zero", "shoulder_height_m"}
    assert "camera's yaw" in fit.held["base zero"] and "camera's height" in fit.held["shoulder_height_m"]
    assert fit.value("base zero") == 0.0 and fit.sigma_of("base zero") == 0.0
    assert any("held: unobservable" in line for line in fit.lines())
    assert np.max(tool_error_mm(fit, case.test)) < 1.5  # across the view, as the camera sees it
    planar = make_case("seed-3link", 3, n=40)
    assert set(fit_camera(planar.arm, planar.cal, planar.train).held) == {"shoulder zero"}


def test_a_joint_that_never_moves_is_named_and_held():
    case = make_case("seed-3link", 4, n=40)
    obs = case.train
    values = obs.values.copy()
    values[:, 2] = 1700.0  # the wrist stays put (27 deg): its gain and curve move the marker as its zero
    from .camera_synth import sightings

    px = sightings(case.arm, case.cal, case.truth, case.view, values, obs.approach, np.random.default_rng(0))
    stuck = CameraObservations(values, obs.approach, px, obs.matrix, obs.dist)
    fit = fit_camera(case.arm, case.cal, stuck)
    assert {"wrist gain", "wrist curve"} <= set(fit.held)
    assert fit.held["wrist gain"].startswith("unobservable: it moves the marker as")


def test_sightings_of_something_else_are_refused_naming_a_parameter():
    case = make_case("mearm", 5, n=40)
    obs = case.train
    shuffled = CameraObservations(obs.values, obs.approach, obs.pixels[::-1], obs.matrix, obs.dist)
    with pytest.raises(BadInputError, match=r"did not converge .*: (camera|base|shoulder|elbow|links|base_offset)"):
        fit_camera(case.arm, case.cal, shuffled)
    with pytest.raises(BadInputError, match="cannot hold 'wrist zero'"):
        fit_camera(case.arm, case.cal, obs, hold=("wrist zero",))
    with pytest.raises(BadInputError, match="marker pixels"):
        CameraObservations(obs.values, obs.approach, obs.pixels[:, :3], obs.matrix, obs.dist)


def test_hand_eye_agrees_with_opencv_on_so101():
    """cv2.calibrateHandEye (eye-to-hand: base-to-gripper from the fitted model, marker-to-camera from
    cv2.solvePnP) gives the camera's pose the fit found. Only the SO-101's tool turns about two non-parallel axes
    (the pan and the pitch); the MeArm and EEZYbot hold the hand level (yaw only) and the planar seed-3link turns
    only about z: for them calibrateHandEye's translation along that axis is undetermined (Tsai's degenerate case).
    At 0.01 px: calibrateHandEye builds on each 30 mm marker's own PnP rotation, which 0.5 px of noise tilts by
    degrees (PARK then misses the camera's height by ~100 mm there; the fit, on every corner at once, does not)."""
    import cv2

    case = make_case("so101", 6, n=100, sigma=0.01)
    fit = fit_camera(case.arm, case.cal, case.train)
    obs = case.train
    T = tool_pose(fit.arm, fit.angles(obs.values, obs.approach))
    inv = np.linalg.inv(T)
    R_t2c, t_t2c = [], []
    for px in obs.pixels:
        ok, rvec, tvec = cv2.solvePnP(marker_corners_m(0.03), px, obs.matrix, obs.dist, flags=cv2.SOLVEPNP_IPPE_SQUARE)
        assert ok
        R_t2c.append(cv2.Rodrigues(rvec)[0])
        t_t2c.append(tvec)
    R, t = cv2.calibrateHandEye(inv[:, :3, :3], inv[:, :3, 3], R_t2c, t_t2c, method=cv2.CALIB_HAND_EYE_PARK)
    ours = fit.camera_to_base
    assert np.linalg.norm(ours[:3, 3] - t.ravel()) < 0.001
    cos = (np.trace(ours[:3, :3].T @ R) - 1) / 2
    assert math.degrees(math.acos(min(1.0, cos))) < 0.2


def test_calibration_file_version_2_round_trip_and_version_1_unchanged():
    case = make_case("mearm", 7, n=60)
    fit = fit_camera(case.arm, case.cal, case.train)
    new = to_calibration(fit, case.cal)
    text = to_yaml(new)
    assert "version: 2" in text and "curve_pct" in text and "backlash_deg" in text and "links_m" in text
    back = parse_calibration(load_yaml_text(text, "x.yaml"), "x.yaml")
    obs = case.test
    mid = fit.angles(obs.values, obs.approach) + obs.approach * fit.x[fit.model.group("backlash")] / 2
    assert np.allclose(back.values_to_joints(obs.values), mid, atol=math.radians(1e-3))
    assert np.allclose(back.joints_to_values(mid, check=False), obs.values, atol=0.05)
    arm = back.corrected_arm(case.arm)
    assert np.allclose(arm.links_m, fit.arm.links_m, atol=1e-6) and arm.base_offset_m == pytest.approx(
        fit.arm.base_offset_m, abs=1e-6
    )
    assert to_yaml(case.cal).count("version: 1") == 1  # a calibration with no curve writes version 1 as before
    old = text.replace("version: 2", "version: 1").replace(text.splitlines()[2], "arm: mearm")
    with pytest.raises(ConfigError, match="needs calibration version 2"):
        parse_calibration(load_yaml_text(old, "x.yaml"), "x.yaml")


def test_curve_is_monotone_and_inverts_and_a_line_is_exact():
    line = ServoCal("s", 0, 9, 1500.0, 11.0, -1, 600.0, 2400.0)
    bent = ServoCal("s", 0, 9, 1500.0, 11.0, -1, 600.0, 2400.0, curve_pct=3.0)
    v = np.linspace(500.0, 2500.0, 2001)
    assert np.array_equal(line.angle_rad(v), np.radians((v - 1500.0) / (-11.0)))
    a = bent.angle_rad(v)
    assert np.all(np.diff(a) < 0)
    assert np.allclose(bent.value(a), v, atol=1e-9)
    mid = (bent.angle_rad(1500.0) - line.angle_rad(1500.0)) / (np.radians(1800.0 / 11.0))
    assert mid == pytest.approx(0.03)


def test_camera_poses_cover_the_ranges_from_both_sides_in_view():
    case = make_case("mearm", 8)
    poses = case.poses
    assert poses.motion_s < 180.0  # the budget for the MeArm
    wp = poses.waypoints_rad
    assert np.all(limit_excess(case.arm, wp) <= 1e-9)
    obs = wp[poses.observe & ~poses.held_out]
    app = poses.approach[poses.observe & ~poses.held_out]
    assert np.array_equal(obs[0::2], obs[1::2]) and np.all(app[0::2] == -app[1::2])
    span = (obs.max(axis=0) - obs.min(axis=0)) / (case.arm.q_max - case.arm.q_min)
    assert np.all(span > 0.6)
    T = tool_pose(case.arm, obs)
    px, depth = case.view.pixels(T[:, :3, 3])
    assert np.all((px >= 0) & (px <= case.view.size)) and np.all(depth > 0)
    assert poses.held_out.sum() == 20 and poses.observe.sum() == 2 * 160 + 20


def test_mearm_fit_is_fast():
    case = make_case("mearm", 9)
    times = [fit_camera(case.arm, case.cal, case.train).seconds for _ in range(3)]
    assert statistics.median(times) < 5.0


@pytest.mark.skipif(not os.environ.get("ARMCTL_SLOW"), reason="the full sweep (20 truths per arm): ARMCTL_SLOW=1")
@pytest.mark.parametrize("name", ARMS)
def test_sweep_twenty_truths(name):
    """The issue's figures over 20 random truths: zeros, lengths, held-out tool error (mean over the held-out
    poses, the worst truth), printed; asserted where a camera straight above can see them (see the fast test)."""
    rows = [recovery(name, seed) for seed in range(20)]
    zero = max(np.max(np.abs(r[2])) for r in rows)
    length = max(np.max(np.abs(r[3])) for r in rows)
    before = min(np.mean(r[4]) for r in rows), max(np.mean(r[4]) for r in rows)
    after = max(np.mean(r[5]) for r in rows), max(np.max(r[5]) for r in rows)
    print(
        f"\n{name}: worst zero {zero:.3f} deg, worst length {length:.3f} mm, held-out before {before[0]:.1f}.."
        f"{before[1]:.1f} mm (mean), after worst mean {after[0]:.2f} mm, worst pose {after[1]:.2f} mm, fit p50 "
        f"{statistics.median(r[1].seconds for r in rows):.2f} s"
    )
    assert after[0] <= 1.0
    if name in ("so101", "seed-3link"):
        assert zero <= 0.3
    if name == "so101":
        assert length <= 0.5


def test_report_judges_on_held_out_sightings_and_bus_servos_round_trip():
    from armctl.calibration.camerafit import calibrate_from_sightings

    case = make_case("so101", 10, n=60)
    obs = case.poses
    sel = obs.observe
    allobs = CameraObservations(
        np.concatenate([case.train.values, case.test.values]),
        np.concatenate([case.train.approach, case.test.approach]),
        np.concatenate([case.train.pixels, case.test.pixels]),
        case.train.matrix,
        case.train.dist,
    )
    held = np.arange(len(allobs)) >= len(case.train)
    assert held.sum() == obs.held_out[sel].sum()
    report = calibrate_from_sightings(case.arm, case.cal, allobs, held)
    assert np.mean(report.before_mm) > 3.0 * np.mean(report.after_mm) and np.mean(report.after_mm) < 1.0
    assert report.lines()[-1].startswith(f"tool error on {held.sum()} held-out poses: before")
    new = to_calibration(report.fit, case.cal)
    back = parse_calibration(load_yaml_text(to_yaml(new), "so101.yaml"), "so101.yaml")
    assert back.unit == "steps" and back.version == 2
    mid = report.fit.angles(case.test.values, case.test.approach)
    mid = mid + case.test.approach * report.fit.x[report.fit.model.group("backlash")] / 2
    assert np.allclose(back.values_to_joints(case.test.values), mid, atol=math.radians(1e-3))
    with pytest.raises(BadInputError, match="keep some sightings out"):
        calibrate_from_sightings(case.arm, case.cal, allobs, np.zeros(len(allobs), bool))


def test_misdetected_sightings_are_left_out_and_said():
    case = make_case("mearm", 11, n=60)
    obs = case.train
    pixels = obs.pixels.copy()
    pixels[[3, 50, 97]] += np.array([40.0, -25.0])  # three sightings of something else
    bad = CameraObservations(obs.values, obs.approach, pixels, obs.matrix, obs.dist)
    fit = fit_camera(case.arm, case.cal, bad)
    assert fit.dropped == (3, 50, 97) and fit.n_poses == len(obs) - 3
    assert any(line.startswith("left out 3 sightings") for line in fit.lines())
    assert np.mean(true_tool_error_mm(case, fit, case.test)) < 1.0


def test_marker_centres_alone_leave_the_scale_to_the_arm_file():
    case = make_case("seed-3link", 12, n=60)
    obs = case.train
    centres = CameraObservations(obs.values, obs.approach, obs.pixels.mean(axis=1), obs.matrix, obs.dist)
    fit = fit_camera(case.arm, case.cal, centres)
    scale = [nm for nm, why in fit.held.items() if "scale of the whole scene" in why]
    assert len(scale) == 1 and scale[0].startswith("links_m")
