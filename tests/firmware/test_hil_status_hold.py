"""`status` and `ports` never leave an arm limp: on a virtual Uno that resets when its port opens (as a real
one does), the servos lose their pulses at each open; after `status` or `ports` they must pulse again, at the
widths they held before the reset (the pose stored when the arm was last left), with no motion between."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from tools.virtual_uno import VirtualUno

ROOT = Path(__file__).resolve().parents[2]

PINS = (9, 10, 11, 12)


def _armctl(env: dict, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "armctl", *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )


def _held_across_last_reset(uno: VirtualUno) -> dict[int, tuple[float, list[float]]]:
    """Per pin: the last width before the last reset, and every width after it."""
    t = uno.events("reset")[-1].t_us
    out = {}
    for pin in PINS:
        pulses = uno.pulses(pin)
        before = [p.width_us for p in pulses if p.t_us < t]
        out[pin] = (before[-1] if before else None, [p.width_us for p in pulses if p.t_us > t])
    return out


def test_status_and_ports_restore_the_pose_after_the_reset_on_open(firmware_hex, tmp_path):
    env = dict(os.environ, ARMCTL_STATE_DIR=str(tmp_path / "state"))
    with VirtualUno(firmware_hex, reset_on_open=True) as uno:
        done = _armctl(env, "--port", uno.pty, "--assume-pose", "home", "jog", "0.5", "0.1")
        assert done.returncode == 0, done.stderr
        for command in (["--port", uno.pty, "status"], ["ports", uno.pty]):
            resets = len(uno.events("reset"))
            res = _armctl(env, *command)
            assert res.returncode == 0, res.stderr
            assert len(uno.events("reset")) > resets, f"{command}: the board did not reset on open"
            time.sleep(0.3)
            held = _held_across_last_reset(uno)
            for pin, (before, after) in held.items():
                assert before is not None and after, f"{command}: pin {pin} has no pulses after the reset (limp)"
                moved = [w for w in after if abs(w - before) > 0.5]
                assert not moved, f"{command}: pin {pin} moved: {before} -> {moved[:5]}"
            if command[0] == "ports":
                assert "[reset on open]" in res.stdout and "servos set to the pose stored for seed-3link" in res.stdout
            else:
                assert "set to the pose stored" in res.stdout, res.stdout
