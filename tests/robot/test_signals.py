"""SIGTERM and SIGHUP (systemd, `timeout`, a closed SSH session) are the same controlled stop as Ctrl-C:
the board is told to stop at once (an ``X`` in the wire log, no move after it), the arm holds, and the
command exits 143 or 129 with one line on stderr."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from armctl.cli import main

ROOT = Path(__file__).resolve().parents[2]
PROGRAM = ROOT / "examples" / "pick_and_place.yaml"
MOVING = {
    "run": ["run", str(PROGRAM)],
    "jog": ["jog", "0.3", "0.45", "--speed", "20"],
    "home": ["home"],
    "calibrate --check": ["calibrate", "--check", "--speed", "20"],
}


def _start(tmp_path: Path, argv: list[str], port: str, *, log: Path | None = None) -> subprocess.Popen:
    env = dict(os.environ, ARMCTL_STATE_DIR=str(tmp_path / "state"))
    extra = ["--wire-log", str(log)] if log else []
    return subprocess.Popen(
        [sys.executable, "-m", "armctl", "--port", port, *argv, *extra],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _wait_for(path: Path, pattern: str, timeout_s: float = 30.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not (path.exists() and re.search(pattern, path.read_text())):
        assert time.monotonic() < deadline, f"{pattern!r} never appeared in {path}"
        time.sleep(0.02)


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP], ids=["SIGTERM", "SIGHUP"])
@pytest.mark.parametrize("command", list(MOVING))
def test_a_signal_stops_a_moving_command_under_control(tmp_path, monkeypatch, capsys, command, sig):
    port = f"armsim://?rate=1&seed=1&state={tmp_path / 'sim.json'}"
    if command == "home":  # first somewhere far from home, quickly
        fast = port.replace("rate=1", "rate=50")
        assert main(["--port", fast, "jog", "0.3", "0.45", "--speed", "500"]) == 0
        capsys.readouterr()
    log = tmp_path / "wire.log"
    proc = _start(tmp_path, MOVING[command], port, log=log)
    _wait_for(log, r"> b'\d+ M ")  # moving
    time.sleep(0.3)
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=60)
    name = signal.Signals(sig).name
    assert proc.returncode == 128 + sig, err
    assert err.count("\n") == 1 and f"stopped by {name}" in err, err
    sent = [line for line in log.read_text().splitlines() if " > " in line]
    stops = [i for i, line in enumerate(sent) if re.search(r"b'\d+ X ", line)]
    assert stops, "the board was never told to stop"
    assert not [line for line in sent[stops[0] :] if re.search(r"b'\d+ M ", line)], "a move after the stop"


def test_web_on_sigterm_stops_with_one_line(tmp_path):
    proc = _start(tmp_path, ["web", "--listen", "127.0.0.1:0"], f"armsim://?rate=1&seed=1&state={tmp_path / 's.json'}")
    line = ""
    deadline = time.monotonic() + 30
    while "open http" not in line:
        assert time.monotonic() < deadline, "armctl web did not start"
        line = proc.stdout.readline()
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 143
    assert err.count("\n") == 1 and "stopped by SIGTERM" in err and "Traceback" not in err, err
