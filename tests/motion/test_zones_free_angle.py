"""A joint move with a free tool angle on an arm with keep-out zones picks, by the same criterion, the best
pose whose joint move from the start is clear of them; without zones nothing changes."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from armctl import motion
from armctl.errors import ZoneError
from armctl.ik.redundancy import best_free_pose, pose_score
from armctl.model.arm import load_arm
from armctl.model.kinematics import tool_point
from armctl.model.zones import first_violation

ROOT = Path(__file__).resolve().parents[2]
ZONED = str(ROOT / "examples" / "seed-3link-zones.yaml")
TARGET = (0.45, 0.0)


def test_the_best_pose_of_all_would_go_through_the_table():
    """Why it matters: the criterion's best pose points the shoulder down into the table."""
    arm = load_arm(ZONED)
    q_all = best_free_pose(arm, TARGET)[0]
    assert np.degrees(q_all) == pytest.approx([-53.7, 79.6, 80.6], abs=0.1)
    with pytest.raises(ZoneError, match="link 1 .* would enter the table"):
        motion.plan_moves(arm, [motion.JointMove(tuple(q_all))], q_start=arm.home_rad)


def test_the_joint_move_pose_is_the_best_zone_free_one():
    arm = load_arm(ZONED)
    q = motion.solve_pose(arm, TARGET, None, arm.home_rad, joint_move=True)
    assert tool_point(arm, q) == pytest.approx(TARGET, abs=1e-6)
    assert first_violation(arm, arm.zones, np.stack([arm.home_rad, q])) is None
    motion.plan_moves(arm, [motion.JointMove(tuple(q))], q_start=arm.home_rad)  # planned: not refused
    # the same criterion: no zone-free pose on a fine grid of tool angles scores better
    phis = np.radians(np.arange(-180.0, 180.0, 0.5))
    score_q = float(pose_score(arm, q[None, :])[0])
    for elbow in (1.0, -1.0):
        for phi in phis:
            try:
                c = motion.solve_pose(arm, TARGET, float(phi), q)
            except Exception:
                continue
            if np.sign(c[1]) != elbow or first_violation(arm, arm.zones, np.stack([arm.home_rad, c])) is not None:
                continue
            assert float(pose_score(arm, c[None, :])[0]) <= score_q + 1e-3
    # not a joint move, or no zones: the pose of all, as before
    assert np.allclose(motion.solve_pose(arm, TARGET, None, arm.home_rad), best_free_pose(arm, TARGET)[0])
    plain = load_arm("seed-3link")
    assert np.allclose(
        motion.solve_pose(plain, TARGET, None, plain.home_rad, joint_move=True), best_free_pose(plain, TARGET)[0]
    )


def test_the_audits_program_plans(tmp_path):
    prog = tmp_path / "jz.yaml"
    prog.write_text("steps: [{joint: {xy_mm: [450, 0]}}]\n")
    r = subprocess.run(
        [sys.executable, "-m", "armctl", "--arm", ZONED, "plan", str(prog), "--summary"],
        capture_output=True,
        text=True,
    )
    assert r.returncode == 0, r.stderr
    from armctl.program import load_program_text, plan_program

    plan = plan_program(load_program_text(prog.read_text(), path=str(prog)), load_arm(ZONED))
    q_end = plan.moves[-1].q_rad[-1]
    assert tool_point(plan.arm, q_end) == pytest.approx(TARGET, abs=1e-6)
    assert first_violation(plan.arm, plan.arm.zones, plan.moves[-1].q_rad) is None


def test_move_to_joint_reaches_the_point_clear_of_the_zones():
    import armctl

    with armctl.connect(ZONED) as r:
        r.move_to(*TARGET, path="joint")
        where = r.where()
        assert where.tool_m == pytest.approx(TARGET, abs=1e-3)  # the simulated servos' steps
        assert first_violation(r.arm, r.arm.zones, np.asarray(where.q_rad)[None, :]) is None


def test_no_zone_free_pose_is_refused_as_before():
    """A target only poses inside a zone reach: the refusal names the zone, as it did."""
    arm = load_arm(ZONED)
    with pytest.raises(ZoneError, match="would enter"):
        q = motion.solve_pose(arm, (0.5, -0.3), None, arm.home_rad, joint_move=True)
        motion.plan_moves(arm, [motion.JointMove(tuple(q))], q_start=arm.home_rad)
