"""``armctl follow`` on a terminal (a pseudo-terminal, POSIX): Enter starts and ends an episode, Ctrl-C (a key in
the terminal's raw mode) stops the follower under control (exit 130) and keeps the episode being recorded, and
the live status line shows the rate, the lag and the recording."""

from __future__ import annotations

import os
import select
import subprocess
import sys
import time
from pathlib import Path

from tests.helpers import require_module

pty = require_module("pty", "a pseudo-terminal (POSIX)")
pq = require_module("pyarrow.parquet", "datasets are written as Parquet (armctl[dataset])")

ROOT = Path(__file__).resolve().parents[2]
HAND = ROOT / "examples" / "hand_so101.csv"


def _run(tmp_path, keys):
    env = {**os.environ, "ARMCTL_STATE_DIR": str(tmp_path / "state")}
    ds = tmp_path / "ds"
    master, slave = pty.openpty()
    cmd = [sys.executable, "-m", "armctl", "--arm", "so101", "follow", "--leader", f"feetechsim://?hand={HAND}"]
    cmd += ["--record-dataset", str(ds), "--task", "wave"]
    proc = subprocess.Popen(cmd, stdin=slave, stdout=subprocess.PIPE, stderr=slave, env=env, cwd=ROOT)
    os.close(slave)
    screen = b""
    try:
        for key, wait in keys:
            deadline = time.monotonic() + wait
            while (left := deadline - time.monotonic()) > 0:
                if select.select([master], [], [], left)[0]:
                    screen += os.read(master, 65536)
            os.write(master, key)
        out, _ = proc.communicate(timeout=30)
        while select.select([master], [], [], 0.2)[0]:
            try:
                data = os.read(master, 65536)
            except OSError:
                break
            if not data:
                break
            screen += data
    finally:
        if proc.poll() is None:
            proc.kill()
        os.close(master)
    return proc.returncode, out.decode(), screen.decode(errors="replace"), ds


def test_enter_records_an_episode_and_q_quits(tmp_path):
    rc, out, screen, ds = _run(tmp_path, [(b"\r", 1.5), (b"\r", 1.0), (b"q", 0.5)])
    assert rc == 0, screen[-2000:]
    assert "1 episode (0) saved to" in out
    assert "Hz  lag" in screen and "[REC " in screen  # the live status line
    assert 15 <= pq.read_table(ds / "data/chunk-000/file-000.parquet").num_rows <= 45


def test_ctrl_c_stops_under_control_and_keeps_the_episode(tmp_path):
    rc, _, screen, ds = _run(tmp_path, [(b"\r", 1.5), (b"\x03", 1.0)])
    assert rc == 130, screen[-2000:]
    assert "armctl follow: interrupted" in screen
    assert pq.read_table(ds / "data/chunk-000/file-000.parquet").num_rows >= 15


def test_d_discards_the_episode_being_recorded(tmp_path):
    """LeRobot's keys on a terminal: Enter starts an episode, ``d`` throws it away, Enter starts another and Enter
    saves it; only that one is in the dataset."""
    keys = [(b"\r", 1.5), (b"d", 0.8), (b"\r", 0.5), (b"\r", 1.0), (b"q", 0.5)]
    rc, out, screen, ds = _run(tmp_path, keys)
    assert rc == 0, screen[-2000:]
    assert "1 episode (0) saved to" in out, out
    assert "not recording" in screen  # after d, the status line says so
    t = pq.read_table(ds / "data/chunk-000/file-000.parquet")
    assert set(t.column("episode_index").to_pylist()) == {0}
    assert 15 <= t.num_rows <= 45, t.num_rows  # the 1 s episode only, not the 0.8 s discarded before it
