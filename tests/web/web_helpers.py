"""Helpers for the web tests: a server on the simulated arm, and small HTTP calls (standard library)."""

from __future__ import annotations

import contextlib
import http.client
import json
import urllib.parse

from armctl import connect
from armctl.program.recording import Recorder
from armctl.web import app


@contextlib.contextmanager
def served(
    *, arm_name="seed-3link", rate=20, host="127.0.0.1", token=None, heartbeat_timeout_s=None, record=None, cal=None,
    torque_check=True,
):  # fmt: skip
    """Yield an ArmServer on a free port, driving a fresh simulated arm; stops and closes both after.
    ``record``: a program file the page's "Record pose" button writes (``armctl web --record``); ``cal``: the
    calibration (default the arm's); ``torque_check``: ``robot.torque_check``."""
    with connect(arm_name, f"armsim://?rate={rate}&seed=1", calibration=cal) as robot:
        robot.torque_check = torque_check
        recorder = None if record is None else Recorder(record, robot.arm)
        server = app.start(
            robot, host=host, port=0, token=token, heartbeat_timeout_s=heartbeat_timeout_s, recorder=recorder
        )
        try:
            yield server
        finally:
            app.stop(server)


def call(server, method, path, body=None, *, headers=None, raw=None):
    """(status, JSON reply) of one request to ``server``; ``raw`` bytes replace the JSON body."""
    port = server.server_address[1]
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=20)
    h = {"Content-Type": "application/json", **(headers or {})}
    data = raw if raw is not None else (None if body is None else json.dumps(body).encode())
    if method == "POST" and data is None:
        data = b"{}"
    conn.request(method, path, body=data, headers=h)
    resp = conn.getresponse()
    text = resp.read()
    conn.close()
    return resp.status, json.loads(text) if text else None


def sim_now(server):
    """(true tool point (m), number of pulse changes so far, simulated time s), read on the arm's thread."""

    def read(backend):
        sim = backend.ser.sim
        sim.pump(backend.ser.sim_time_s())
        return sim.tool_m().copy(), len(sim.pulses), sim.now

    return server.controller.call(read).result(timeout=10)


def events_url(server, session="", token=None):
    q = {k: v for k, v in {"session": session, "token": token}.items() if v}
    return "/api/events" + ("?" + urllib.parse.urlencode(q) if q else "")
