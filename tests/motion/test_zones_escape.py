"""Keep-out zones when the arm is already inside one: only a move that takes it out is allowed (its depth
never grows until it is out, and it does not go back in); everything else is refused saying so."""

from __future__ import annotations

import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from armctl import motion
from armctl.errors import ZoneError
from armctl.model.arm import load_arm
from armctl.model.zones import ESCAPE_STEP_M, clearances, first_violation

ROOT = Path(__file__).resolve().parents[2]
ZONED = str(ROOT / "examples" / "seed-3link-zones.yaml")
#: What the unzoned seed-3link preset's free-angle IK picks for a joint move to (0.45, 0): the shoulder
#: points down, link 1 ends 42 mm below the zoned arm file's table (y = -280 mm).
Q_IN = np.radians([-53.7, 79.6, 80.6])


def _arm():
    return load_arm(ZONED)


def _depth(arm, q, link=0, zone=0):
    return -float(clearances(arm, arm.zones, np.asarray(q, dtype=float))[0][link, zone])


def test_the_start_pose_is_inside_the_table():
    arm = _arm()
    assert _depth(arm, Q_IN) > 0.05  # link 1's end 42 mm below the table, plus the 15 mm capsule radius
    assert first_violation(arm, arm.zones, Q_IN[None, :]) is not None  # a pose inside is still a violation


@pytest.mark.parametrize(
    "q_end",
    [None, np.radians([-20.0, 79.6, 80.6]), np.radians([-30.0, 60.0, 60.0])],
    ids=["home", "shoulder-up", "all-joints"],
)
def test_a_move_out_of_the_table_is_planned_and_ends_outside(q_end):
    arm = _arm()
    q_end = arm.home_rad if q_end is None else q_end
    plans = motion.plan_moves(arm, [motion.JointMove(tuple(q_end), label="out")], q_start=Q_IN)
    q = plans.moves[-1].q_rad
    assert np.allclose(q[-1], q_end)
    assert first_violation(arm, arm.zones, q[-1][None, :]) is None  # ends outside every zone
    d = np.array([_depth(arm, p) for p in q])
    out = int(np.flatnonzero(d <= 0)[0])
    assert np.all(np.diff(d[: out + 1]) <= 1e-9)  # never deeper until out
    assert np.all(d[out:] <= 0)  # and not back in


def test_a_move_deeper_is_refused_saying_the_arm_is_already_inside():
    arm = _arm()
    with pytest.raises(ZoneError) as e:
        motion.plan_moves(arm, [motion.JointMove(tuple(np.radians([-70.0, 79.6, 80.6])), label="down")], q_start=Q_IN)
    err = e.value
    assert err.exit_code == 3
    assert err.zone.startswith("the table") and err.link == "link 1 (shoulder to elbow)"
    msg = str(err)
    assert "down: link 1 (shoulder to elbow) is already inside the table (y = -280 mm) (57.4 mm deep" in msg
    assert "only a move that takes it out is allowed" in msg and "takes it deeper 0% through the joint move" in msg


def test_a_move_along_the_table_at_the_same_depth_or_of_other_links_is_allowed():
    """Links 1 and 2 stay as deep (the shoulder does not turn, link 2's lowest point is the elbow): the
    wrist and elbow may move up, clear of the zones; but link 3 may not enter the table on the way."""
    arm = _arm()
    assert first_violation(arm, arm.zones, np.stack([Q_IN, np.radians([-53.7, 100.0, 60.0])])) is None
    v = first_violation(arm, arm.zones, np.stack([Q_IN, np.radians([-53.7, 40.0, 40.0])]))
    assert v is not None and (v.link, v.zone, v.inside_m) == (2, 0, 0.0)
    with pytest.raises(ZoneError, match=r"^link 3 \(wrist to tool\) would enter the table .* through the joint move"):
        motion.plan_moves(arm, [motion.JointMove(tuple(np.radians([-53.7, 40.0, 40.0])))], q_start=Q_IN)


def test_leaving_and_coming_back_in_is_refused():
    """A motion (as the planner samples one) that takes link 1 out of the table and back in."""
    arm = _arm()
    q_out = np.radians([-20.0, 79.6, 80.6])
    q = np.concatenate([np.linspace(Q_IN, q_out, 30), np.linspace(q_out, Q_IN + np.radians([5.0, 0, 0]), 30)[1:]])
    v = first_violation(arm, arm.zones, q)
    assert v is not None and v.back_in and v.link == 0 and v.zone == 0
    assert 29 < v.at < 59  # on the way back, where link 1 comes in again
    assert v.inside_m == pytest.approx(_depth(arm, Q_IN))
    mp = motion.MovePlan(
        kind="joint", label="out and in", t_s=np.arange(len(q)) * 0.02, q_rad=q, gripper_rad=np.zeros(len(q))
    )
    with pytest.raises(ZoneError, match=r"is already inside the table .* takes it back in \d+% through the joint move"):
        motion.check_zones(arm, mp)


def test_follow_steps_may_leave_a_zone_but_not_go_deeper():
    """followplay checks each teleop step [q_cmd, q_new] with first_violation: the same rule."""
    arm = _arm()
    up, down = Q_IN + np.radians([0.5, 0, 0]), Q_IN - np.radians([0.5, 0, 0])
    assert first_violation(arm, arm.zones, np.stack([Q_IN, up])) is None
    v = first_violation(arm, arm.zones, np.stack([Q_IN, down]))
    assert v is not None and v.inside_m > 0 and not v.back_in


def test_moves_from_inside_match_a_dense_sampling_oracle():
    """Random joint moves from inside the table: an accepted one, sampled 4000 times, never takes link 1
    deeper (beyond what ESCAPE_STEP_M lets pass between checked poses) until it is out, and never into any
    zone otherwise; a refused one does go deeper, back in, or into another zone somewhere."""
    arm = _arm()
    rng = np.random.default_rng(25)
    accepted = refused = 0
    for _ in range(40):
        q1 = rng.uniform(arm.q_min, arm.q_max)
        v = first_violation(arm, arm.zones, np.stack([Q_IN, q1]))
        s = np.linspace(0.0, 1.0, 4001)[:, None]
        c = clearances(arm, arm.zones, Q_IN + s * (q1 - Q_IN))[0]  # (K, links, zones)
        inside = c[0] < 0
        others = c.copy()
        worst_growth = 0.0
        for li, zi in np.argwhere(inside):  # each pair inside at the start: its depth until it is out
            d = -c[:, li, zi]
            out = np.flatnonzero(d <= 0)
            e = int(out[0]) if out.size else len(d)
            if e > 1:
                worst_growth = max(worst_growth, float((d[1:e] - np.minimum.accumulate(d[:e])[:-1]).max()))
            others[:e, li, zi] = np.inf
        if v is None:
            accepted += 1
            assert worst_growth <= 0.5 * ESCAPE_STEP_M + 1e-6
            assert others.min() >= -1e-5
        else:
            refused += 1
            assert worst_growth > 0 or others.min() < 0
    assert accepted and refused


def test_cli_home_from_inside_the_table(tmp_path):
    """The audit's repro: the preset seed-3link leaves the simulated arm inside the zoned arm file's table;
    `home` on the zoned arm takes it out (it used to be refused at 0%, exit 3)."""
    import armctl

    with armctl.connect() as r:
        r.move_to(0.45, 0, path="joint")
        assert np.allclose(r.where().q_rad, Q_IN, atol=math.radians(0.1))
    run = subprocess.run(
        [sys.executable, "-m", "armctl", "--arm", ZONED, "home"], capture_output=True, text=True, cwd=tmp_path
    )
    assert run.returncode == 0, run.stderr
    with armctl.connect(ZONED) as r:
        q = r.where().q_rad
        assert np.allclose(q, r.arm.home_rad, atol=1e-3)
        assert first_violation(r.arm, r.arm.zones, np.asarray(q)[None, :]) is None
        with pytest.raises(ZoneError):  # outside now: the usual rule
            r.move_joints(Q_IN)
