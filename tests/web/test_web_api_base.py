"""armctl web's JSON API with an arm on a rotating base (the MeArm preset on the simulated arm)."""

from __future__ import annotations

import time

import numpy as np
import pytest

from armctl.model.arm import load_arm
from armctl.model.workspace import shortfall
from armctl.web.reach_map import reach_map, top_map
from tests.web.web_helpers import call, served, sim_now


@pytest.fixture(scope="module")
def server():
    with served(arm_name="mearm", heartbeat_timeout_s=30) as srv:
        yield srv


@pytest.fixture(scope="module")
def session(server):
    status, body = call(server, "POST", "/api/session")
    assert status == 200
    return body["session"]


def test_arm_description_has_the_base_and_both_maps(server):
    status, arm = call(server, "GET", "/api/arm")
    assert status == 200 and arm["dim"] == 3 and arm["linkage"] == "parallelogram"
    assert arm["base"] == {"name": "base", "min_deg": pytest.approx(-75), "max_deg": pytest.approx(75)}
    assert arm["joint_names"] == ["base", "shoulder", "elbow"] and arm["link_angle_deg"] == pytest.approx([30, 150])
    assert arm["base_offset_mm"] == pytest.approx(68) and arm["home_tool_mm"] == pytest.approx([148, 0, 80])
    for key in ("reach_map", "top_map"):
        assert arm[key]["width"] > 100 and arm[key]["cell_m"] < 0.002


def test_state_has_the_tool_in_space(server):
    status, st = call(server, "GET", "/api/state")
    assert status == 200 and len(st["q_deg"]) == 3 and len(st["tool_mm"]) == 3
    assert len(st["joints_mm"]) == 5 and all(len(p) == 3 for p in st["joints_mm"])  # foot, axis, shoulder, ...
    assert st["tool_mm"] == pytest.approx(st["joints_mm"][-1])


@pytest.mark.parametrize(
    "body, status, why",
    [
        ({"x_mm": 150, "y_mm": 20}, 400, "missing 'z_mm'"),
        ({"x_mm": 150, "y_mm": 20, "z_mm": "0"}, 400, "must be a number"),
        ({"x_mm": 150, "y_mm": 20, "z_mm": 0, "phi_deg": 10}, 400, "3-link"),
        ({"x_mm": 150, "y_mm": 20, "z_mm": 0, "w_mm": 1}, 400, "unknown key"),
        ({"x_mm": 400, "y_mm": 0, "z_mm": 0}, 422, "outside the reach of arm 'mearm' inside its joint limits"),
        ({"x_mm": -150, "y_mm": 0, "z_mm": 0}, 422, "nothing moved"),
    ],
)
def test_bad_moves_move_nothing(server, session, body, status, why):
    before = sim_now(server)
    got, reply = call(server, "POST", "/api/move", body, headers={"X-Armctl-Session": session})
    assert got == status and why in reply["error"]
    if status == 422:
        arm = load_arm("mearm")
        want = shortfall(arm, np.array([body["x_mm"], body["y_mm"], body["z_mm"]]) / 1000)
        assert reply["shortfall_mm"] == pytest.approx(want * 1000) and len(reply["nearest_mm"]) == 3
    assert sim_now(server)[1] == before[1]


def test_a_move_in_space_lands_within_a_millimetre(server, session):
    got, reply = call(
        server, "POST", "/api/move", {"x_mm": 160, "y_mm": -40, "z_mm": 5}, headers={"X-Armctl-Session": session}
    )
    assert got == 200 and reply["duration_s"] > 0
    deadline = time.monotonic() + 20
    while call(server, "GET", "/api/state")[1]["moving"] and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(0.1)
    tool, _, _ = sim_now(server)
    assert np.linalg.norm(tool - [0.16, -0.04, 0.005]) < 1e-3


def test_maps_agree_with_the_exact_reach():
    arm = load_arm("mearm")
    side, top = reach_map(arm), top_map(arm)
    rng = np.random.default_rng(3)
    # side view: cell centres of the arm's plane at base 0 (u along x, z up)
    h, w = side.cells.shape
    for r, c in zip(rng.integers(0, h, 200), rng.integers(0, w, 200)):
        u = side.origin_m[0] + (c + 0.5) * side.cell_m
        z = side.origin_m[1] + (r + 0.5) * side.cell_m
        assert side.cells[r, c] == (shortfall(arm, (u, 0.0, z)) <= 1e-9), (u, z)
    # top view: a cell is reachable iff the closed form reaches its centre at some height (1 mm steps), with
    # the base inside its range pointing at it or half a turn from it
    from armctl.ik import batch_closed_form

    heights = np.arange(-0.12, 0.2, 0.001)
    h, w = top.cells.shape
    agree = 0
    cells = list(zip(rng.integers(0, h, 400), rng.integers(0, w, 400)))
    for r, c in cells:
        x = top.origin_m[0] + (c + 0.5) * top.cell_m
        y = top.origin_m[1] + (r + 0.5) * top.cell_m
        rho, az = np.hypot(x, y), np.arctan2(y, x)
        hit = False
        for u, a in ((rho, az), (-rho, az + np.pi)):
            a = np.remainder(a + np.pi, 2 * np.pi) - np.pi
            if arm.q_min[0] <= a <= arm.q_max[0]:
                start = np.broadcast_to(arm.home_rad, (len(heights), 3))
                hit |= bool(
                    batch_closed_form(arm, np.full(len(heights), u - arm.base_offset_m), heights, start)[1].any()
                )
        agree += hit == bool(top.cells[r, c])
    assert agree >= 0.98 * len(cells)  # cells on the border may go either way
