"""Redundancy of 3-link chains: the free tool angle (armctl.ik.redundancy; lines in armctl.motion; ik --json)."""

from __future__ import annotations

import json
import math

import numpy as np
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from armctl.cli import main
from armctl.errors import MotionError
from armctl.ik import solve
from armctl.ik.redundancy import best_free_pose, pose_score
from armctl.model.arm import load_arm
from armctl.model.kinematics import tool_point
from armctl.motion import LineMove, branch_ik, branch_of, plan_line_path, plan_move, solve_pose

ARM3 = load_arm("seed-3link")


def test_jog_there_and_on_lands_within_a_millimetre(capsys):
    """The issue's check: refused before (the first IK pose left the shoulder 5 deg from its limit)."""
    assert main(["jog", "0.5", "0.4", "--json"]) == 0
    capsys.readouterr()
    assert main(["jog", "0.3", "0.55", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert math.dist(doc["tool_m"], (0.3, 0.55)) < 0.001


def test_best_pose_beats_a_brute_force_grid():
    rng = np.random.default_rng(5)
    for _ in range(20):
        q = rng.uniform(ARM3.q_min + 0.1, ARM3.q_max - 0.1)
        target = tool_point(ARM3, q)
        q_best, phi, score = best_free_pose(ARM3, target)
        assert np.allclose(tool_point(ARM3, q_best), target, atol=1e-9)
        assert ARM3.within_limits(q_best)
        assert math.isclose(sum(q_best), phi, abs_tol=1e-9) or math.isclose(
            math.remainder(sum(q_best) - phi, 2 * math.pi), 0.0, abs_tol=1e-9
        )
        grid = np.radians(np.arange(-180.0, 180.0, 0.25))
        best_grid = -1.0
        for elbow in (1.0, -1.0):
            qq, excess = branch_ik(ARM3, np.repeat(np.asarray(target)[None], len(grid), axis=0), grid, elbow)
            sc = np.where(excess <= 1e-9, pose_score(ARM3, qq), -np.inf)
            best_grid = max(best_grid, float(sc.max()))
        assert score >= best_grid - 1e-6


def test_ik_json_names_the_criterion(capsys):
    assert main(["ik", "0.5", "0.4", "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["ok"] and d["criterion"] == "limits_singularity"
    assert math.isclose(d["phi_deg"], math.degrees(best_free_pose(ARM3, (0.5, 0.4))[1]), abs_tol=1e-6)
    assert np.allclose(tool_point(ARM3, np.radians(d["q_deg"])), (0.5, 0.4), atol=1e-9)
    # a tool angle given: unchanged (the solver's answer at that angle)
    assert main(["ik", "0.5", "0.4", "--phi", "30", "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    want = solve(ARM3, (0.5, 0.4), phi=math.radians(30))
    assert d["criterion"] == "phi_given" and np.allclose(d["q_deg"], np.degrees(want.q), atol=1e-6)
    # --from: the pose nearest it, as before
    assert main(["ik", "0.5", "0.4", "--from", "45", "-90", "-45", "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    want = solve(ARM3, (0.5, 0.4), q0=np.radians([45, -90, -45]))
    assert d["criterion"] == "nearest_start" and np.allclose(d["q_deg"], np.degrees(want.q), atol=1e-6)
    # a 2-link arm has no free angle: no criterion
    assert main(["--arm", "seed-2link", "ik", "0.5", "0.2", "--json"]) == 0
    assert "criterion" not in json.loads(capsys.readouterr().out)


def test_base_arm_best_pose_and_free_line():
    arm = load_arm("braccio")
    target = (0.2, 0.05, 0.1)
    q, pitch, score = best_free_pose(arm, target)
    assert arm.within_limits(q) and score > 0
    assert np.allclose(tool_point(arm, q), target, atol=1e-9)
    q0 = solve_pose(arm, (0.22, -0.05, 0.15), None, arm.home_rad)
    mp = plan_move(arm, LineMove(target), q0, 0.0)
    assert np.allclose(tool_point(arm, mp.q_rad[-1]), target, atol=1e-6)


def test_phi_given_line_unchanged_by_redundancy():
    """A line with a tool angle never uses the free-angle search: same path as the fixed-angle planner."""
    q0 = ARM3.home_rad
    mv = LineMove((0.55, -0.2), phi_rad=math.radians(-60))
    path = plan_line_path(ARM3, q0, mv)
    assert path.profile is None
    phi = path.phi0 + (path.s / path.length) * path.dphi
    assert np.allclose(np.sum(path.q, axis=1), phi)  # the tool angle turns linearly, as before


def _brute_force_profile_exists(arm, q0, target) -> bool:
    """Independent search: tool-angle profiles piecewise linear through one knot halfway, the knot's and the
    end's angle on a 10 deg grid (1296 profiles), each sampled at 61 points on the start's elbow branch;
    one that stays 1 deg inside every limit and 0.1 mm inside the reach, without a joint jump, exists?"""
    start = tool_point(arm, q0)
    phi0 = float(np.sum(q0))
    _, elbow = branch_of(arm, q0)
    offs = np.radians(np.arange(-180.0, 180.0, 10.0))
    u = np.linspace(0.0, 1.0, 61)
    mid, end = np.meshgrid(offs, offs, indexing="ij")
    mid, end = mid.ravel(), end.ravel()
    prof = np.where(
        u[None, :] <= 0.5, 2 * u[None, :] * mid[:, None], mid[:, None] + (2 * u[None, :] - 1) * (end - mid)[:, None]
    )
    pts = start + u[:, None] * (np.asarray(target) - start)
    P = np.broadcast_to(pts, (len(mid), len(u), 2)).reshape(-1, 2)
    q, excess = branch_ik(arm, P, (phi0 + prof).ravel(), elbow)
    q = q.reshape(len(mid), len(u), 3)
    midr = 0.5 * (arm.q_min + arm.q_max)
    q = q + 2 * math.pi * np.round((midr - q) / (2 * math.pi))
    m = math.radians(1.0)
    inside = np.all((q >= arm.q_min + m) & (q <= arm.q_max - m), axis=2) & (excess.reshape(len(mid), len(u)) <= -1e-4)
    smooth = np.all(np.abs(np.diff(q, axis=1)).max(axis=2) < math.radians(15), axis=1)
    ok = np.all(inside, axis=1) & smooth
    return bool(np.any(ok))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(st.floats(0.03, 0.97), min_size=3, max_size=3),
    st.lists(st.floats(0.03, 0.97), min_size=3, max_size=3),
)
def test_line_refused_only_when_no_tool_angle_profile_exists(a, b):
    """For random reachable start/target pairs, the planner refuses a free-angle line only when a brute-force
    search over tool-angle profiles finds none either."""
    q0 = ARM3.q_min + np.array(a) * (ARM3.q_max - ARM3.q_min)
    qt = ARM3.q_min + np.array(b) * (ARM3.q_max - ARM3.q_min)
    target = tool_point(ARM3, qt)
    assume(math.dist(target, tool_point(ARM3, q0)) > 0.01)
    assume(abs(math.sin(q0[1])) > 0.05)  # not starting at the elbow's singularity
    try:
        path = plan_line_path(ARM3, q0, LineMove(tuple(target)))
    except MotionError:
        assert not _brute_force_profile_exists(ARM3, q0, target)
        return
    assert ARM3.within_limits(path.q.T.reshape(3, -1).T[0])
    assert np.all(path.q >= ARM3.q_min - 1e-9) and np.all(path.q <= ARM3.q_max + 1e-9)
    assert np.allclose(tool_point(ARM3, path.q[-1]), target, atol=1e-6)
