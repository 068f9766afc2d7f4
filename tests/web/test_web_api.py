"""armctl web's JSON API on the simulated arm: bad requests move nothing, token, one controller, stops."""

from __future__ import annotations

import socket
import time

import numpy as np
import pytest

from armctl.cli import main
from armctl.cli.web import parse_listen
from armctl.errors import BadInputError
from tests.web.web_helpers import call, events_url, served, sim_now


@pytest.fixture(scope="module")
def server():
    with served(heartbeat_timeout_s=30) as srv:
        yield srv


@pytest.fixture(scope="module")
def session(server):
    status, body = call(server, "POST", "/api/session")
    assert status == 200
    return body["session"]


def test_arm_description(server):
    status, arm = call(server, "GET", "/api/arm")
    assert status == 200
    assert arm["links_mm"] == pytest.approx([400, 300, 200])
    assert arm["min_deg"] == pytest.approx([-90, -135, -135]) and arm["home_deg"] == pytest.approx([45, -90, -45])
    m = arm["reach_map"]
    assert m["width"] == m["height"] == 360 and m["cell_m"] == 0.005 and len(m["bits_b64"]) > 1000
    assert [s["name"] for s in arm["servos"]] == ["shoulder", "elbow", "wrist", "gripper"]
    assert arm["token_required"] is False


def test_state_has_pose_pulses_and_manipulability(server):
    status, st = call(server, "GET", "/api/state")
    assert status == 200 and st["measured"] == "simulated servos" and st["source"] == "measured"
    assert len(st["q_deg"]) == 3 and len(st["joints_mm"]) == 4 and len(st["pulses_us"]) == 4
    assert st["manipulability_m2"] > 0
    assert st["tool_mm"] == pytest.approx(st["joints_mm"][-1])


@pytest.mark.parametrize(
    "raw, why",
    [
        (b"{not json", "not valid JSON"),
        (b'{"x_mm": NaN, "y_mm": 100}', "not valid JSON"),
        (b'{"x_mm": Infinity, "y_mm": 100}', "not valid JSON"),
        (b'{"x_mm": 1e999, "y_mm": 100}', "finite"),
        (b"[400, 100]", "JSON object"),
        (b'{"x_mm": "400", "y_mm": 100}', "must be a number"),
        (b'{"x_mm": true, "y_mm": 100}', "must be a number"),
        (b'{"x_mm": 400}', "missing 'y_mm'"),
        (b'{"x_mm": 1e9, "y_mm": 0}', "out of range"),
        (b'{"x_mm": 400, "y_mm": 0, "speed_mm_s": 0}', "out of range"),
        (b'{"x_mm": 400, "y_mm": 0, "speed_mm_s": -5}', "out of range"),
        (b'{"x_mm": 400, "y_mm": 0, "mode": "teleport"}', "'mode'"),
        (b'{"x_mm": 400, "y_mm": 0, "z_mm": 3}', "unknown key"),
        (b"\xff\xfe", "not valid JSON"),
    ],
)
def test_malformed_moves_are_400_and_move_nothing(server, session, raw, why):
    before = sim_now(server)
    status, body = call(server, "POST", "/api/move", raw=raw, headers={"X-Armctl-Session": session})
    assert status == 400 and body["ok"] is False and why in body["error"]
    after = sim_now(server)
    assert after[1] == before[1]  # no pulse changed


def test_out_of_reach_is_422_with_the_shortfall(server, session):
    before = sim_now(server)
    status, body = call(server, "POST", "/api/move", {"x_mm": 1200, "y_mm": 0}, headers={"X-Armctl-Session": session})
    assert status == 422 and body["shortfall_mm"] == pytest.approx(300) and "nothing moved" in body["error"]
    time.sleep(0.1)
    assert sim_now(server)[1] == before[1]
    assert call(server, "GET", "/api/state")[1]["moving"] is False


def test_other_bad_requests(server, session):
    h = {"X-Armctl-Session": session}
    assert call(server, "POST", "/api/move", {"x_mm": 400, "y_mm": 0}, headers={"Content-Type": "text/plain"})[0] == 415
    assert call(server, "POST", "/api/move", raw=b"x" * 5000, headers=h)[0] == 413
    assert call(server, "POST", "/api/gripper", {"state": "ajar"}, headers=h)[0] == 400
    assert call(server, "POST", "/api/home", {"now": 1}, headers=h)[0] == 400
    assert call(server, "GET", "/api/nothing")[0] == 404
    assert (
        call(server, "POST", "/api/move", {"x_mm": 400, "y_mm": 0}, headers={"Origin": "http://evil.example"})[0] == 403
    )
    status, body = call(server, "GET", "/api/state", headers={"Host": "evil.example:8000"})
    assert status == 403 and "loopback" in body["error"]


def test_second_client_is_read_only(server, session):
    status, body = call(server, "POST", "/api/session")
    assert status == 409 and body["read_only"] is True
    status, body = call(server, "POST", "/api/move", {"x_mm": 400, "y_mm": 0})
    assert status == 409 and "another page controls" in body["error"]
    status, body = call(server, "POST", "/api/move", {"x_mm": 400, "y_mm": 0}, headers={"X-Armctl-Session": "forged"})
    assert status == 409
    assert call(server, "GET", "/api/state")[0] == 200  # viewers may watch
    assert call(server, "POST", "/api/stop")[0] == 200  # and anyone may stop the arm


def test_move_lands_within_a_millimetre(server, session):
    h = {"X-Armctl-Session": session}
    status, body = call(server, "POST", "/api/move", {"x_mm": 500, "y_mm": 200, "speed_mm_s": 300}, headers=h)
    assert status == 200 and body["duration_s"] > 0
    deadline = time.monotonic() + 10
    while call(server, "GET", "/api/state")[1]["moving"] and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(0.1)  # servos settle
    tool, _, _ = sim_now(server)
    assert np.hypot(*(tool - [0.5, 0.2])) < 1e-3
    status, body = call(server, "POST", "/api/move", {"x_mm": 500, "y_mm": 100, "mode": "joint"}, headers=h)
    assert status == 200


def test_token_required_off_loopback(tmp_path):
    with served(host="0.0.0.0") as srv:
        assert srv.token and f"?token={srv.token}" in srv.url
        status, body = call(srv, "GET", "/api/arm")
        assert status == 401 and "token" in body["error"]
        assert call(srv, "POST", "/api/session", headers={"X-Armctl-Token": "wrong"})[0] == 401
        assert call(srv, "POST", "/api/stop")[0] == 401
        status, arm = call(srv, "GET", "/api/arm", headers={"X-Armctl-Token": srv.token})
        assert status == 200 and arm["token_required"] is True


def _open_events(server, session):
    sock = socket.create_connection(("127.0.0.1", server.server_address[1]))
    sock.sendall(f"GET {events_url(server, session)} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".encode())
    head = sock.recv(4096)
    assert b"200 OK" in head and b"text/event-stream" in head
    return sock


def _last_pulse_change_s(server):
    def read(backend):
        sim = backend.ser.sim
        sim.pump(backend.ser.sim_time_s())
        joint_channels = {s.channel for s in server.controller.cal.joints}
        return max(t for t, ch, _ in sim.pulses if ch in joint_channels)

    return server.controller.call(read).result(timeout=10)


def test_closing_the_page_stops_the_arm_within_a_frame(tmp_path):
    """The controller's event stream closes mid-move: the board must stop changing pulses at once."""
    with served(rate=1, heartbeat_timeout_s=30) as srv:
        session = call(srv, "POST", "/api/session")[1]["session"]
        sock = _open_events(srv, session)
        h = {"X-Armctl-Session": session}
        assert call(srv, "POST", "/api/move", {"x_mm": 300, "y_mm": 450, "speed_mm_s": 100}, headers=h)[0] == 200
        time.sleep(0.6)
        _, _, t_close = sim_now(srv)
        sock.close()
        time.sleep(0.5)
        st = call(srv, "GET", "/api/state")[1]
        assert st["moving"] is False and "controlling page closed" in st["message"]
        late_s = _last_pulse_change_s(srv) - t_close
        print(f"pulses kept changing for {late_s * 1000:.1f} ms after the page closed")
        assert late_s < 0.06  # one 20 ms frame plus scheduling slack on a busy machine
        assert call(srv, "POST", "/api/session")[0] == 200  # control is free again


def test_silent_page_stops_the_arm(tmp_path):
    with served(rate=1, heartbeat_timeout_s=0.3) as srv:
        session = call(srv, "POST", "/api/session")[1]["session"]
        sock = _open_events(srv, session)
        h = {"X-Armctl-Session": session}
        assert call(srv, "POST", "/api/move", {"x_mm": 300, "y_mm": 450}, headers=h)[0] == 200
        t0 = time.monotonic()
        while call(srv, "GET", "/api/state")[1]["moving"] and time.monotonic() - t0 < 5:
            time.sleep(0.02)
        st = call(srv, "GET", "/api/state")[1]
        assert "no heartbeat" in st["message"] and time.monotonic() - t0 < 1.5
        sock.close()


def test_stop_button_is_a_controlled_stop(tmp_path):
    with served(rate=1, heartbeat_timeout_s=30) as srv:
        session = call(srv, "POST", "/api/session")[1]["session"]
        h = {"X-Armctl-Session": session}
        assert call(srv, "POST", "/api/move", {"x_mm": 300, "y_mm": 450, "speed_mm_s": 100}, headers=h)[0] == 200
        time.sleep(0.5)
        _, _, t_stop = sim_now(srv)
        assert call(srv, "POST", "/api/stop")[0] == 200
        time.sleep(0.3)
        st = call(srv, "GET", "/api/state")[1]
        assert st["moving"] is False and "stop button" in st["message"]
        assert _last_pulse_change_s(srv) - t_stop < 0.06
        a, _, _ = sim_now(srv)
        time.sleep(0.2)
        b, _, _ = sim_now(srv)
        assert np.hypot(*(a - b)) < 1e-4 and np.hypot(*(b - [0.3, 0.45])) > 0.02


def test_cli_refuses_bad_listen(capsys):
    with pytest.raises(BadInputError):
        parse_listen("8000")
    assert parse_listen("[::1]:8080") == ("::1", 8080)
    assert main(["web", "--listen", "nonsense"]) == 2
    assert "HOST:PORT" in capsys.readouterr().err


def test_a_refusal_names_the_move_once():
    """The planner's messages start with the move's label already: the 422 says it once, then why."""
    from armctl.errors import JointLimitError
    from armctl.web.api import refusal
    from armctl.web.controller import Command

    class Reach:
        def gap_m(self, target):
            return 0.0

    cmd = Command("move", "line to (500, -350) mm", lambda robot: None, (0.5, -0.35))
    exc = JointLimitError("line to (500, -350) mm: joint 1 (shoulder) would cross its limit -90 deg")
    err = refusal(exc, cmd, Reach()).body()["error"]
    assert err == "line to (500, -350) mm: nothing moved: joint 1 (shoulder) would cross its limit -90 deg"
