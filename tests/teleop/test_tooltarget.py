"""End-effector targets streamed to an arm with a wrist roll (``armctl.teleop.tooltarget``), one frame at a time as
``Robot.follow`` and bench/ee_follow.py take them, on an SO-101-like arm (the maker's link lengths, the roll axis a
little off the last link, the tool point beside it).

Targets come from a smooth random joint path (so each is reachable, and the pose that reaches it is known), at
100 Hz. Asserted over ~2,000 frames: no joint step above its speed limit times the period; every reachable target
reached to 1e-6 m; the answer never jumps (no frame needs a step the speed limit clips: the pose nearest the last);
the roll continuous across +-180 deg (a joint that turns past it follows the target round; one that cannot holds at
the limit on its side, never flips to the other); out of reach: the nearest answer, inside the limits. The timing
(< 1 ms p99 on a quiet machine) is the bench's, not asserted here. And ``--map tool``'s roll (``Teleop``): the
leader's roll carried over, or the follower's kept.
"""

from __future__ import annotations

import math
from types import SimpleNamespace

import numpy as np
import pytest
import yaml

from armctl.errors import BadInputError
from armctl.model.arm import parse_arm
from armctl.model.kinematics import tool_pitch, tool_point
from armctl.teleop.follow import Teleop
from armctl.teleop.tooltarget import ToolTarget, as_tool_target, tool_frame

PERIOD = 0.01
FRAMES = 2000

ARM = """
name: roll-arm
links_m: [0.116, 0.135, 0.1594]
base: {name: pan, min_deg: -110, max_deg: 110, max_speed_deg_s: 120}
shoulder_height_m: 0.119
base_offset_m: 0.0304
joints:
  - {name: lift, min_deg: -20, max_deg: 172, max_speed_deg_s: 120}
  - {name: elbow, min_deg: -166, max_deg: 18, max_speed_deg_s: 120}
  - {name: wrist, min_deg: -95, max_deg: 85, max_speed_deg_s: 150}
roll: {name: wrist_roll, min_deg: ROLL_MIN, max_deg: ROLL_MAX, max_speed_deg_s: 180, axis_deg: 2.8,
       tool_offset_m: [0.0079, 0.0002]}
home_deg: [0, 76, -74, -5, 0]
gripper: {open_deg: 60, closed_deg: 0, max_speed_deg_s: 180}
"""


def roll_arm(lo: float = -157.2, hi: float = 162.8):
    """The test arm, its roll turning ``lo``..``hi`` deg (the SO-101's by default)."""
    text = ARM.replace("ROLL_MIN", str(lo)).replace("ROLL_MAX", str(hi))
    return parse_arm(yaml.safe_load(text), "roll-arm.yaml")


def joint_path(arm, frames: int, seed: int, roll_deg):
    """A smooth random joint path (frames, n), each joint well inside its limits and under half its speed limit;
    the roll ``roll_deg(s)`` (deg) at the path's parameter s in 0..1."""
    rng = np.random.default_rng(seed)
    s = np.linspace(0.0, 1.0, frames)
    t = s * frames * PERIOD
    q = np.empty((frames, arm.n))
    for j in range(arm.n - 1):
        lo, hi = float(arm.q_min[j]), float(arm.q_max[j])
        mid, half = 0.5 * (lo + hi), 0.3 * (hi - lo)
        if j == 2:  # the elbow bent (no straight arm: a singular pose has no pose nearest)
            mid, half = math.radians(-80), math.radians(35)
        w = rng.uniform(0.3, 0.8, 2)
        amp = min(half, 0.25 * float(arm.max_speed_rad_s[j]) / w.max())
        ph = rng.uniform(0, 2 * math.pi, 2)
        q[:, j] = mid + 0.6 * amp * np.sin(w[0] * t + ph[0]) + 0.4 * amp * np.sin(w[1] * t + ph[1])
    q[:, -1] = np.radians(roll_deg(s))
    return q


def targets_of(arm, q):
    """The tool targets the poses ``q`` reach (the roll wrapped into -180..180 deg, as a LeRobot user gives it)."""
    p = tool_point(arm, q)
    phi = tool_pitch(arm, q)
    return [
        ToolTarget(*p[k], pitch=float(phi[k]), roll=math.remainder(float(q[k, -1]), 2 * math.pi)) for k in range(len(q))
    ]


def stream(arm, targets, q0):
    """Play ``targets`` through ``tool_frame`` from ``q0``: the poses sent (frames, n) and the frames."""
    q, sent, frames = np.array(q0, dtype=float), [], []
    for t in targets:
        f = tool_frame(arm, t, q, PERIOD)
        q = f.q_rad
        sent.append(q)
        frames.append(f)
    return np.array(sent), frames


def check_steps(arm, q0, sent):
    steps = np.abs(np.diff(np.vstack([q0, sent]), axis=0))
    ratio = steps / (np.asarray(arm.max_speed_rad_s) * PERIOD)
    assert ratio.max() <= 1.0 + 1e-9, f"a joint stepped {ratio.max():.3f} x its speed limit"
    return ratio


def test_a_smooth_stream_is_reached_exactly_with_the_roll_across_180():
    """A roll joint turning -200..200 deg, the target's roll crossing +-180 back and forth (wrapped): the roll
    follows it round continuously, every target is reached to 1e-6 m, no step is clipped."""
    arm = roll_arm(-200, 200)
    q = joint_path(arm, FRAMES, 1, lambda s: 150 + 45 * np.sin(2 * math.pi * 2 * s))
    targets = targets_of(arm, q)
    assert any(t.roll < -math.radians(170) for t in targets) and any(t.roll > math.radians(170) for t in targets)
    sent, frames = stream(arm, targets, q[0])
    ratio = check_steps(arm, q[0], sent)
    assert max(f.error_m for f in frames) < 1e-6
    assert all(f.clamped == "" for f in frames)
    assert ratio.max() < 0.999, "a step was clipped: the answer jumped away from the last pose"
    reached = np.linalg.norm(tool_point(arm, sent) - np.array([t.point for t in targets]), axis=1)
    assert reached.max() < 1e-6
    np.testing.assert_allclose(sent[:, -1], q[:, -1], atol=1e-9)  # the roll as turned, not as wrapped


def test_a_roll_that_cannot_turn_past_180_holds_at_its_limit_and_never_flips():
    """The SO-101's roll (-157.2..162.8 deg): a target roll going 150 -> 200 (= -160) -> 150 deg holds the roll
    at 162.8 deg while it is out of the limits (not at -157.2 deg, the long way round), the point still reached."""
    arm = roll_arm()
    q = joint_path(arm, FRAMES, 2, lambda s: 150 + 50 * np.sin(math.pi * s))
    targets = targets_of(arm, q)
    sent, frames = stream(arm, targets, np.append(q[0, :-1], math.radians(150)))
    check_steps(arm, q[0], sent)
    hi = float(arm.q_max[-1])
    out = q[:, -1] > hi
    assert out.sum() > 100
    np.testing.assert_allclose(sent[out, -1], hi, atol=1e-12)
    assert np.max(np.abs(np.diff(sent[:, -1]))) < math.radians(2)
    assert all("roll" in f.clamped for f, o in zip(frames, out) if o)
    assert max(f.error_m for f in frames) < 1e-6


def test_out_of_reach_gives_the_nearest_answer_without_a_jump():
    """Targets pushed 5..40 mm beyond the arm's reach and back: the answer stays inside the limits, steps within
    the speed limits, misses by no more than the push (the arm stretched towards the target), says why, and is
    back on the path once the targets are."""
    arm = roll_arm()
    q = joint_path(arm, 800, 3, lambda s: 20 + 0 * s)
    targets = targets_of(arm, q)
    reach = arm.reach_max + arm.roll.offset_m  # from the shoulder, any roll
    pushed, beyond = [], []
    for k, t in enumerate(targets):
        p = np.array(t.point)
        az = math.atan2(p[1], p[0])
        shoulder = np.array([arm.base_offset_m * math.cos(az), arm.base_offset_m * math.sin(az), arm.shoulder_height_m])
        d = p - shoulder
        if 200 <= k < 500:
            far = reach + 0.005 + 0.035 * math.sin(math.pi * (k - 200) / 300)
            p = shoulder + d / np.linalg.norm(d) * far
            t = ToolTarget(*p, pitch=t.pitch, roll=t.roll)
        pushed.append(t)
        beyond.append(np.linalg.norm(p - shoulder) - reach)
    sent, frames = stream(arm, pushed, q[0])
    check_steps(arm, q[0], sent)
    assert all(arm.within_limits(s) for s in sent)
    for k in range(200, 500):
        assert beyond[k] <= frames[k].error_m < beyond[k] + 0.02, k
        assert "out of reach" in frames[k].clamped
    assert max(f.error_m for f in frames[650:]) < 1e-6


def test_missing_pitch_roll_keep_the_arms_own():
    arm = roll_arm()
    q0 = np.radians([10, 70, -80, -10, 40])
    p = tool_point(arm, q0) + np.array([0.0, 0.002, 0.0])
    f = tool_frame(arm, {"x": p[0], "y": p[1], "z": p[2]}, q0, PERIOD)
    assert f.error_m < 1e-9 and f.clamped == ""
    assert f.goal_rad[-1] == pytest.approx(q0[-1], abs=1e-12)
    assert float(tool_pitch(arm, f.goal_rad)) == pytest.approx(float(tool_pitch(arm, q0)), abs=1e-9)


@pytest.mark.parametrize(
    ("raw", "words"),
    [
        ({"x": 0.2, "y": 0, "z": 0.1, "yaw": 1}, "unknown key 'yaw'"),
        ({"x": 0.2, "y": 0}, "'z' is missing"),
        ({"x": float("nan"), "y": 0, "z": 0.1}, "tool target x (m): must be a finite number"),
        ({"x": 0.2, "y": 0, "z": 0.1, "roll": 90}, "more than a turn"),
        ({"x": 0.2, "y": 0, "z": 0.1, "gripper": 100}, "0 (closed) .. 1 (open), got 100 (LeRobot's 0..100"),
        ({"x": "0.2", "y": 0, "z": 0.1}, "expected a number"),
        ((0.2, 0, 0.1), "a ToolTarget or a dict"),
    ],
)
def test_bad_targets_are_one_line(raw, words):
    with pytest.raises(BadInputError) as e:
        as_tool_target(raw)
    assert words in str(e.value) and "\n" not in str(e.value)


def test_a_roll_for_an_arm_without_one_is_refused():
    from armctl.model.arm import load_arm

    arm = load_arm("braccio")
    with pytest.raises(BadInputError, match="has no wrist roll"):
        tool_frame(arm, ToolTarget(0.2, 0.0, 0.2, roll=0.3), arm.home_rad, PERIOD)


def leader_at(arm, q):
    """A stand-in leader arm reading pose ``q``."""
    reading = SimpleNamespace(t_s=0.0, q_rad=np.asarray(q, dtype=float), gripper_rad=math.nan, steps={})
    return SimpleNamespace(arm=arm, read=lambda: reading, port="test")


def test_map_tool_carries_the_leaders_roll():
    arm = roll_arm()
    tp = Teleop(leader_at(arm, np.radians([5, 80, -90, -5, 120])), arm, map="tool", scale=1.0)
    tp.start(np.radians([0, 76, -74, -5, -30]), 0.0)
    target = tp.target()
    assert math.degrees(target.q_rad[-1]) == pytest.approx(120, abs=1e-9)
    assert target.clamped == ""
    np.testing.assert_allclose(target.q_rad, np.radians([5, 80, -90, -5, 120]), atol=1e-7)


def test_map_tool_from_a_leader_without_a_roll_keeps_the_followers():
    from armctl.model.arm import load_arm

    arm = roll_arm()
    leader = load_arm("braccio")
    tp = Teleop(leader_at(leader, np.radians([10, 90, -30, -60])), arm, map="tool")
    tp.start(np.radians([0, 76, -74, -5, -30]), 0.0)
    target = tp.target()
    assert math.degrees(target.q_rad[-1]) == pytest.approx(-30, abs=1e-9)
