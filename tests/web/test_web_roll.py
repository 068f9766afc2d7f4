"""armctl web with an arm that has a wrist roll: the page learns the roll's range, ``POST /api/move`` takes
``roll_deg`` (the roll turned, the tool where it was asked), the state reports it, bad rolls move nothing."""

from __future__ import annotations

import math
import time

import numpy as np
import pytest

from armctl.model.arm import load_arm
from armctl.model.kinematics import tool_point
from tests.cli.roll_arm import write_roll_arm
from tests.web.web_helpers import call, served, sim_now


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    folder = tmp_path_factory.mktemp("rollarm")
    arm_file = write_roll_arm(folder)
    with served(arm_name=str(arm_file), cal=str(folder / "rollcal.yaml"), heartbeat_timeout_s=30) as srv:
        srv.arm_file = arm_file
        yield srv


@pytest.fixture(scope="module")
def session(server):
    status, body = call(server, "POST", "/api/session")
    assert status == 200
    return body["session"]


def _settle(server):
    deadline = time.monotonic() + 20
    while call(server, "GET", "/api/state")[1]["moving"] and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(0.1)


def test_the_arm_description_and_state_have_the_roll(server):
    status, arm = call(server, "GET", "/api/arm")
    assert status == 200 and arm["roll"] == {"name": "wrist_roll", "min_deg": pytest.approx(-157), "max_deg": 163}
    status, st = call(server, "GET", "/api/state")
    assert status == 200 and len(st["q_deg"]) == 5 and st["roll_deg"] == pytest.approx(0, abs=0.2)


def test_a_move_with_a_roll_turns_it_and_puts_the_tool_on_the_target(server, session):
    got, reply = call(
        server,
        "POST",
        "/api/move",
        {"x_mm": 220, "y_mm": 40, "z_mm": 120, "roll_deg": 75},
        headers={"X-Armctl-Session": session},
    )
    assert got == 200 and reply["duration_s"] > 0
    _settle(server)
    st = call(server, "GET", "/api/state")[1]
    assert st["roll_deg"] == pytest.approx(75, abs=0.3)
    arm = load_arm(str(server.arm_file))
    # the simulated servos' own pose (the tool 12.6 mm off the roll axis: a roll not modelled would miss)
    assert np.linalg.norm(tool_point(arm, np.radians(st["q_deg"])) - [0.22, 0.04, 0.12]) < 1.5e-3
    tool, _, _ = sim_now(server)
    assert np.linalg.norm(tool - [0.22, 0.04, 0.12]) < 1.5e-3
    # a move without one keeps it
    got, _ = call(
        server, "POST", "/api/move", {"x_mm": 200, "y_mm": 0, "z_mm": 110}, headers={"X-Armctl-Session": session}
    )
    assert got == 200
    _settle(server)
    assert call(server, "GET", "/api/state")[1]["roll_deg"] == pytest.approx(75, abs=0.3)


@pytest.mark.parametrize(
    "roll, why", [(170, "outside the limits of 'wrist_roll'"), ("x", "must be a number"), (math.inf, "number")]
)
def test_a_bad_roll_moves_nothing(server, session, roll, why):
    before = sim_now(server)
    body = {"x_mm": 200, "y_mm": 0, "z_mm": 110, "roll_deg": roll}
    got, reply = call(server, "POST", "/api/move", body, headers={"X-Armctl-Session": session})
    assert got == 400 and why in reply["error"]
    assert sim_now(server)[1] == before[1]


def test_a_roll_on_an_arm_without_one_is_refused():
    with served(arm_name="mearm") as srv:
        status, body = call(srv, "POST", "/api/session")
        got, reply = call(
            srv,
            "POST",
            "/api/move",
            {"x_mm": 150, "y_mm": 0, "z_mm": 50, "roll_deg": 10},
            headers={"X-Armctl-Session": body["session"]},
        )
        assert got == 400 and "no wrist roll" in reply["error"]
        assert call(srv, "GET", "/api/arm")[1]["roll"] is None


def test_the_page_turns_the_roll_with_its_buttons(browser, tmp_path):
    from tests.web.browser import api_state, settle, shot, wait

    arm_file = write_roll_arm(tmp_path)
    with served(arm_name=str(arm_file), cal=str(tmp_path / "rollcal.yaml"), rate=4) as srv:
        browser.get(srv.url)
        wait(lambda: browser.find_element("id", "status").text == "in control", what="the page to take control")
        for shown in ("jog-roll+", "jog-roll-", "roll-row", "roll-state"):
            assert browser.find_element("id", shown).is_displayed(), shown
        before = api_state(srv)
        browser.find_element("id", "jog-roll+").click()  # one step (10 deg) about the tool axis
        wait(lambda: api_state(srv)["moving"] or abs(api_state(srv)["roll_deg"] - 10) < 0.3, what="the roll to turn")
        settle(srv)
        after = api_state(srv)
        assert after["roll_deg"] == pytest.approx(before["roll_deg"] + 10, abs=0.3)
        assert np.allclose(after["tool_mm"], before["tool_mm"], atol=1.0)  # the tool point held (12.6 mm off axis)
        wait(lambda: "10.0°" in browser.find_element("id", "tool-roll").text, what="the roll in the state table")
        shot(browser, tmp_path, "web_roll.png")
    with served(arm_name="mearm", rate=4) as srv:
        browser.get(srv.url)
        wait(lambda: browser.find_element("id", "status").text == "in control", what="the page to take control")
        assert not browser.find_element("id", "jog-roll+").is_displayed()
