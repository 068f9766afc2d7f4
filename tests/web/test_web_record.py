"""armctl web --record: the page's "Record pose" button through the JSON API, on the simulated arm.

The pose the arm holds goes into the program file (with a joint move to it, and a gripper step when the
gripper changed); the program plans and runs back to the same poses within 1 mm. Nothing is recorded
while the arm moves, for a page without control, or under a bad or taken name; undo takes records back.
"""

from __future__ import annotations

import math
import time

import numpy as np
import pytest

import armctl
from armctl.model.kinematics import fk
from armctl.program import load_program, plan_program
from tests.web.web_helpers import call, served, sim_now


def _settle(server, timeout_s=15.0):
    deadline = time.monotonic() + timeout_s
    while call(server, "GET", "/api/state")[1]["moving"]:
        assert time.monotonic() < deadline, "the arm did not stop"
        time.sleep(0.03)
    time.sleep(0.15)  # the simulated servos reach their pulses


def test_without_record_there_is_no_recording():
    with served() as srv:
        session = call(srv, "POST", "/api/session")[1]["session"]
        assert call(srv, "GET", "/api/arm")[1]["record_file"] is None
        status, body = call(srv, "POST", "/api/record", {"name": "a"}, headers={"X-Armctl-Session": session})
        assert status == 404 and "--record" in body["error"]


def test_record_pose_writes_a_program_that_runs_back_to_the_poses(tmp_path):
    path = tmp_path / "taught.yaml"
    with served(record=path) as srv:
        h = {"X-Armctl-Session": call(srv, "POST", "/api/session")[1]["session"]}
        assert call(srv, "GET", "/api/arm")[1]["record_file"] == str(path)
        st = call(srv, "GET", "/api/state")[1]
        assert st["recorded"] == [] and st["record_next"] == "p1" and st["can_undo"] is False

        truth = {}
        assert call(srv, "POST", "/api/move", {"x_mm": 500, "y_mm": 200, "phi_deg": -20}, headers=h)[0] == 200
        _settle(srv)
        status, body = call(srv, "POST", "/api/record", {"name": "above"}, headers=h)
        assert status == 200 and body["name"] == "above" and body["poses"] == 1 and body["file"] == str(path)
        assert body["tool_mm"] == pytest.approx([500, 200], abs=0.6)
        truth["above"] = sim_now(srv)[0]

        assert call(srv, "POST", "/api/gripper", {"state": "close"}, headers=h)[0] == 200
        _settle(srv)  # a new command would stop the gripper half way
        assert call(srv, "POST", "/api/move", {"x_mm": 450, "y_mm": -100}, headers=h)[0] == 200
        status, body = call(srv, "POST", "/api/record", {}, headers=h)
        assert status == 409 and "moving" in body["error"]  # not while it moves
        _settle(srv)
        status, body = call(srv, "POST", "/api/record", {}, headers=h)  # no name: the next free one
        assert status == 200 and body["name"] == "p1" and body["steps"] == ["{gripper: close}", "{joint: p1}"]
        truth["p1"] = sim_now(srv)[0]
        st = call(srv, "GET", "/api/state")[1]
        assert st["recorded"] == ["above", "p1"] and st["record_next"] == "p2" and st["can_undo"] is True
        assert "recorded 'p1'" in st["message"]

        before = path.read_bytes()
        for bad, why in [
            ({"name": "above"}, "already has a pose named 'above'"),
            ({"name": "two words"}, "pose name"),
            ({"name": 5}, "must be text"),
            ({"name": "a", "x": 1}, "unknown key"),
        ]:
            status, body = call(srv, "POST", "/api/record", bad, headers=h)
            assert status == 400 and why in body["error"], (bad, body)
        assert call(srv, "POST", "/api/record", {"name": "x"})[0] in (403, 409)  # no control session
        assert path.read_bytes() == before

        assert call(srv, "POST", "/api/move", {"x_mm": 400, "y_mm": 0}, headers=h)[0] == 200
        _settle(srv)
        assert call(srv, "POST", "/api/record", {"name": "extra"}, headers=h)[0] == 200
        status, body = call(srv, "POST", "/api/record/undo", {}, headers=h)
        assert status == 200 and body["name"] == "extra"
        assert path.read_bytes() == before
        arm = srv.controller.arm

        prog = load_program(path)
        assert list(prog.poses) == ["above", "p1"] and [s.action for s in prog.steps] == ["joint", "gripper", "joint"]
        plan = plan_program(prog, arm)
        ends = [mp.q_rad[-1] for mp in plan.moves if mp.kind == "joint"]
        for q, name in zip(ends, ["above", "p1"], strict=True):
            assert np.hypot(*(fk(arm.links_m, q) - truth[name])) < 1e-3
        assert math.degrees(float(np.sum(ends[0]))) == pytest.approx(-20, abs=0.1)

    # Played back on the simulated arm from elsewhere, it ends where p1 was recorded.
    with armctl.connect("seed-3link", "armsim://?rate=20&seed=1") as r2:
        r2.move_to(0.35, 0.35)
        r2.run(path)
        got = r2.where(settle=True).tool_m
    assert np.hypot(*(got - truth["p1"])) < 1e-3


def test_undo_with_nothing_recorded_is_409(tmp_path):
    with served(record=tmp_path / "t.yaml") as srv:
        h = {"X-Armctl-Session": call(srv, "POST", "/api/session")[1]["session"]}
        status, body = call(srv, "POST", "/api/record/undo", {}, headers=h)
        assert status == 409 and "nothing to undo" in body["error"]
        assert not (tmp_path / "t.yaml").exists()
