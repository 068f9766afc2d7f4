"""A policy rollout through lerobot_robot_armctl: an ACT policy with fresh random weights (LeRobot's, in its
virtualenv: act_rollout.py) drives the simulated MeArm on armsim:// with a keep-out box for 20 s at 30 fps, and
the simulated board's own servo log shows every pulse inside the joint limits and the linkage's, no step faster
than the joint's speed limit, no pose inside the box; armctl's count of held actions is exactly the actions an
independent check (joint limits, gripper range, the linkage, the box on the way from the commanded pose) refuses.

About 35 s (LeRobot and torch start in ~10 s); skipped only when the virtualenv is missing."""

from __future__ import annotations

import json
import math
import subprocess
from pathlib import Path

import numpy as np

from armctl.calibration.servo import find_calibration, load_calibration
from armctl.model.arm import load_arm
from armctl.model.zones import first_violation
from tests.lerobot.conftest import lerobot_env
from tests.lerobot.test_plugin_actions import zoned_mearm

SCRIPT = Path(__file__).with_name("act_rollout.py")
SECONDS, FPS = 20, 30
TOL_DEG = 0.15  # one microsecond of pulse is ~0.1 deg on the MeArm's servos
BOX_POSE = [10, 60, -20]  # the keep-out box sits about the tool point of this pose (where the policy goes)


def run_rollout(venv_bin: Path, tmp_path: Path) -> tuple[dict, object]:
    arm_file = zoned_mearm(tmp_path, BOX_POSE)
    cal = find_calibration("mearm")
    proc = subprocess.run(
        [str(venv_bin / "python"), str(SCRIPT), str(arm_file), str(cal), str(SECONDS), str(FPS)],
        capture_output=True,
        text=True,
        timeout=300,
        env=lerobot_env(tmp_path / "hf"),
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1]), load_arm(arm_file)


def expected_refusal(arm, step) -> bool:
    """Would armctl's checks refuse this action? Decided here from the arm model alone."""
    a = step["action"]
    q = np.array([a[f"{n}.pos"] for n in arm.joint_names])
    if np.any(q < np.degrees(arm.q_min) - 0.01) or np.any(q > np.degrees(arm.q_max) + 0.01):
        return True
    if not 0.0 <= a["gripper.pos"] <= 100.0:
        return True
    q = np.clip(np.radians(q), arm.q_min, arm.q_max)
    if not arm.within_limits(q):
        return True
    return first_violation(arm, arm.zones, np.vstack([np.radians(step["q_from_deg"]), q])) is not None


def servo_poses(arm, cal, pulses) -> tuple[list, np.ndarray]:
    """Per channel (times, angles deg) of every pulse change, and the whole pose (rad) after each frame."""
    by_ch = {s.channel: s for s in cal.servos}
    tracks = {ch: ([], []) for ch in by_ch}
    pose = [math.nan] * len(cal.joints)
    poses = []
    for t, ch, w in sorted(pulses, key=lambda p: p[0]):
        if ch not in by_ch:
            continue
        a = float(by_ch[ch].angle_rad(w))
        tracks[ch][0].append(t)
        tracks[ch][1].append(math.degrees(a))
        for i, s in enumerate(cal.joints):
            if s.channel == ch:
                pose[i] = a
        if not any(math.isnan(v) for v in pose):
            poses.append(list(pose))
    return tracks, np.array(poses)


def test_random_act_policy_on_the_mearm_is_held_by_armctl(venv_bin, tmp_path):
    out, arm = run_rollout(venv_bin, tmp_path)
    cal = load_calibration(find_calibration("mearm"))
    steps = out["steps"]
    held = [s["held"] for s in steps]
    expected = [expected_refusal(arm, s) for s in steps]
    zoned = sum(1 for s, e in zip(steps, expected) if e and not expected_refusal(_no_zones(arm), s))
    print(
        f"ACT rollout: {len(steps)} actions at {out['loop_hz']:.2f} Hz, {sum(held)} held by armctl "
        f"({zoned} for the box), {len(out['pulses'])} servo pulse changes"
    )
    assert out["held_actions"] == sum(held) and held == expected
    assert 10 < sum(held) < len(steps) - 10 and zoned > 0  # refusals of both kinds, and actions that moved it
    tracks, poses = servo_poses(arm, cal, out["pulses"])
    for s in cal.servos:
        t, deg = map(np.array, tracks[s.channel])
        assert len(t) > 10, s.name
        if s is cal.gripper:
            lo, hi = sorted(math.degrees(v) for v in (arm.gripper.closed_rad, arm.gripper.open_rad))
            vmax = math.degrees(arm.gripper.max_speed_rad_s)
        else:
            i = cal.joints.index(s)
            lo, hi = math.degrees(arm.q_min[i]), math.degrees(arm.q_max[i])
            vmax = math.degrees(arm.max_speed_rad_s[i])
        assert lo - TOL_DEG <= deg.min() and deg.max() <= hi + TOL_DEG, (s.name, deg.min(), deg.max())
        steps_deg = np.abs(np.diff(deg)) - vmax * np.maximum(np.diff(t), 0.02)
        assert steps_deg.max() <= TOL_DEG, (s.name, steps_deg.max())
    assert all(arm.within_limits(q, tol=math.radians(TOL_DEG)) for q in poses)
    assert first_violation(arm, arm.zones, poses) is None  # the whole played motion clear of the box


def _no_zones(arm):
    from dataclasses import replace

    return replace(arm, zones=None)
