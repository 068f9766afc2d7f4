"""Our firmware on a virtual Uno that resets when its port opens (as a real one does), driving PWM servos whose
position nothing reads. With the pose file lost or corrupt, `armctl jog` must refuse on one line (exit 2) and the
firmware must put out no pulse at all after the reset; with `--assume-pose` the first pulse is that pose's and
no step passes a joint's speed limit. Asserted from the firmware's pulse log, not from what armctl says."""

from __future__ import annotations

import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np

from tools.virtual_uno import VirtualUno

from armctl.model.arm import load_arm
from armctl.calibration.servo import find_calibration, load_calibration

ROOT = Path(__file__).resolve().parents[2]

PINS = {0: 9, 1: 10, 2: 11, 3: 12}  # channel -> Arduino pin
FAR_DEG = [-40.0, 70.0, -30.0]


def _armctl(env: dict, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "armctl", *args],
        cwd=ROOT,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
    )


def _after_last_reset(uno: VirtualUno) -> list:
    t = uno.events("reset")[-1].t_us
    return [p for p in uno.pulses() if p.t_us > t]


def test_a_lost_or_corrupt_pose_file_sends_no_pulse_and_assume_pose_ramps_from_it(firmware_hex, tmp_path):
    arm = load_arm("seed-3link")
    cal = load_calibration(find_calibration(arm.name))
    state = tmp_path / "state"
    env = dict(os.environ, ARMCTL_STATE_DIR=str(state))
    with VirtualUno(firmware_hex, reset_on_open=True) as uno:
        # a new PC: nothing stored
        res = _armctl(env, "--port", uno.pty, "jog", "0.5", "0.1")
        assert res.returncode == 2 and len(res.stderr.strip().splitlines()) == 1, res.stderr
        assert "the arm's pose is unknown: no pose is stored" in res.stderr and "--assume-pose" in res.stderr
        assert uno.events("reset") and _after_last_reset(uno) == [], "a pulse went out"
        # the user's word: the arm stands at home; then it is left at FAR_DEG
        q = ",".join(f"{v:g}" for v in FAR_DEG)
        res = _armctl(env, "--port", uno.pty, "--assume-pose", "home", "jog", "0.5", "0.1")
        assert res.returncode == 0, res.stderr
        res = _armctl(env, "--port", uno.pty, "run", str(_joint_program(tmp_path, FAR_DEG)))
        assert res.returncode == 0, res.stderr
        # the pose file overwritten by random bytes, then truncated: refused, no pulse
        (pose_file,) = state.glob("pose-seed-3link-*.bin")
        for damage in (os.urandom(1024), pose_file.read_bytes()[:200]):
            pose_file.write_bytes(damage)
            resets = len(uno.events("reset"))
            res = _armctl(env, "--port", uno.pty, "jog", "0.5", "0.1")
            assert res.returncode == 2 and len(res.stderr.strip().splitlines()) == 1, res.stderr
            assert str(pose_file) in res.stderr, res.stderr
            assert len(uno.events("reset")) > resets and _after_last_reset(uno) == [], "a pulse went out"
        # the user's word: the arm stands at FAR_DEG (where it is): the first pulses are that pose's, no jump
        res = _armctl(env, "--port", uno.pty, f"--assume-pose={q}", "jog", "0.5", "0.1")
        assert res.returncode == 0, res.stderr
        after = _after_last_reset(uno)
    for i, s in enumerate(cal.joints):
        widths = [p.width_us for p in after if p.pin == PINS[s.channel]]
        assert abs(widths[0] - float(s.value(math.radians(FAR_DEG[i])))) <= 2.0, (s.name, widths[:3])
        per_frame = math.degrees(arm.max_speed_rad_s[i]) * 0.020 * s.per_deg
        assert float(np.max(np.abs(np.diff(widths)))) <= per_frame + 2.0, s.name


def _joint_program(tmp_path: Path, q_deg) -> Path:
    path = tmp_path / "far.yaml"
    q = ", ".join(f"{v:g}" for v in q_deg)
    path.write_text(f"arm: seed-3link\nposes:\n  far: {{q_deg: [{q}]}}\nsteps:\n  - {{joint: far}}\n", encoding="utf-8")
    return path


def test_standard_firmata_with_no_stored_pose_attaches_no_servo(tmp_path):
    """StandardFirmata pulses 1500 us the moment a servo is attached: with the pose unknown nothing is attached."""
    from tests.helpers import require
    from tools.virtual_uno import build_tools, fetch_firmata

    ok, why = build_tools()
    require(ok, f"virtual Uno does not build: {why}")
    hex_path, why = fetch_firmata()
    require(hex_path is not None, f"no StandardFirmata build: {why}")
    env = dict(os.environ, ARMCTL_STATE_DIR=str(tmp_path / "state"))
    with VirtualUno(hex_path, reset_on_open=True) as uno:
        res = _armctl(env, "--backend", "firmata", "--port", uno.pty, "home")
        errors = [line for line in res.stderr.splitlines() if "error" in line]  # (pymata4 prints its banner)
        assert res.returncode == 2 and len(errors) == 1, res.stderr
        assert "the arm's pose is unknown" in errors[0] and errors[0] == res.stderr.strip().splitlines()[-1]
        assert uno.events("reset") and _after_last_reset(uno) == [], "a servo was attached"
        res = _armctl(env, "--backend", "firmata", "--port", uno.pty, "--assume-pose", "home", "home")
        assert res.returncode == 0, res.stderr
        assert _after_last_reset(uno), "the user's word did not start the servos"
