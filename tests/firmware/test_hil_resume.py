"""Restart where it stopped, on a virtual Uno that resets when its port opens (like a real one): `armctl run`
killed (SIGKILL) while it carries a part, then `armctl run PROGRAM --resume`. The program must finish with
every part placed on its slot, and the gripper must never open between a pick and its place: asserted from
the servo pulses the firmware put out (the simulator's pulse log), not from what armctl says it did.
"""

from __future__ import annotations

import math
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from tools.virtual_uno import VirtualUno

from armctl.model.arm import load_arm
from armctl.calibration.servo import find_calibration, load_calibration
from armctl.model.kinematics import tool_point
from armctl.program import load_program

ROOT = Path(__file__).resolve().parents[2]

PROGRAM = ROOT / "examples" / "pick_and_place.yaml"
PINS = {0: 9, 1: 10, 2: 11, 3: 12}  # channel -> Arduino pin (the gripper on channel 3, D12)
GRIP_PIN = 12
TOL_US = 2.0


def _armctl(pty: str, env: dict, *args: str) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "armctl", "--port", pty, *args],
        cwd=ROOT,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _closes(uno: VirtualUno, closed_us: float) -> int:
    """How many times the gripper's pulses reached the closed width."""
    w = [p.width_us for p in uno.pulses(GRIP_PIN)]
    return sum(1 for a, b in zip(w, w[1:]) if abs(b - closed_us) < 0.3 and abs(a - closed_us) >= 0.3)


def test_kill_mid_carry_then_resume_places_every_part(firmware_hex, tmp_path):
    arm = load_arm("seed-3link")
    cal = load_calibration(find_calibration(arm.name))
    grip = cal.gripper
    closed_us = float(grip.value(arm.gripper.closed_rad))
    open_us = float(grip.value(arm.gripper.open_rad))
    toward_open = math.copysign(1.0, open_us - closed_us)
    prog = load_program(PROGRAM)
    slots = [np.array(prog.poses[f"stack{i}"].point_m) for i in (1, 2, 3)]
    env = dict(os.environ, ARMCTL_STATE_DIR=str(tmp_path / "state"))
    with VirtualUno(firmware_hex, reset_on_open=True) as uno:
        run = _armctl(uno.pty, env, "run", str(PROGRAM), "--assume-pose", "home")  # a fresh state folder on a board that resets: the user's word
        assert uno.wait_for(lambda u: _closes(u, closed_us) >= 2, 90), "the second part was never picked"
        time.sleep(1.2)  # the wait after closing (0.2 s), then lifting part 2 (0.8 s at 100 mm/s): carrying it
        run.kill()
        run.communicate(timeout=30)
        killed_at = uno.pulses(GRIP_PIN)[-1].t_us
        # no terminal (stdin is /dev/null: a service, a cron job) and no option: no guess, nothing moves
        guess = _armctl(uno.pty, env, "run", str(PROGRAM))
        out, err = guess.communicate(timeout=120)
        assert guess.returncode == 2 and len(err.strip().splitlines()) == 2, err  # the note, then the refusal
        assert all(opt in err for opt in ("--resume", "--from-step", "--restart")), err
        reset = uno.events("reset")[-1].t_us
        assert reset > killed_at and not [p for p in uno.pulses() if p.t_us > reset], "a pulse went out"
        resumed = _armctl(uno.pty, env, "run", str(PROGRAM), "--resume")
        out, err = resumed.communicate(timeout=180)
        assert resumed.returncode == 0, err
        assert "resuming at step" in err and "the gripper stays closed" in err, err
        pulses = uno.pulses()
        resets = [e.t_us for e in uno.events("reset")]
    assert any(t > killed_at for t in resets), "the Uno did not reset when the resumed run opened its port"
    # The gripper's pulses in order; the joints' widths at each moment, to know where the tool was.
    last = {}
    picks, places, opened_early = 0, [], []
    carrying = False
    for p in pulses:
        if p.pin != GRIP_PIN:
            last[p.pin] = p.width_us
            continue
        w = p.width_us
        if not carrying and abs(w - closed_us) < 0.3:
            carrying, picks = True, picks + 1
        elif carrying and (w - closed_us) * toward_open > TOL_US:
            q = np.array([s.angle_rad(last[PINS[s.channel]]) for s in cal.joints])
            tool = tool_point(arm, q)
            near = [float(np.linalg.norm(tool - s)) for s in slots]
            if min(near) > 0.003:
                opened_early.append((p.t_us, w, tool.tolist()))
            places.append(int(np.argmin(near)))
            carrying = False
    assert not opened_early, f"the gripper opened away from every slot while carrying: {opened_early[:3]}"
    assert picks == 3, f"{picks} picks (the resumed run must not pick part 2 again)"
    assert places == [0, 1, 2], f"parts placed on slots {places}"


def test_hold_and_resume_on_standard_firmata(tmp_path, monkeypatch):
    """The feed hold on stock StandardFirmata (host-timed writes): the pulses stop changing while held, and the
    line finishes where planned after the resume."""
    from tests.helpers import require
    from tools.virtual_uno import build_tools, fetch_firmata

    import armctl

    ok, why = build_tools()
    require(ok, f"virtual Uno does not build: {why}")
    hex_path, why = fetch_firmata()
    require(hex_path is not None, f"no StandardFirmata build: {why}")
    with VirtualUno(hex_path, reset_on_open=True) as uno:
        with armctl.connect("seed-3link", uno.pty, backend="firmata", assume_pose="home") as robot:
            robot.move_to(0.45, -0.05, phi=math.radians(-90), path="joint")
            m = robot.move_to(0.45, -0.30, phi=math.radians(-90), speed=0.1, wait=False)
            time.sleep(1.0)
            m.pause()
            deadline = time.monotonic() + 10
            while robot.control.state != "held" and time.monotonic() < deadline:
                time.sleep(0.01)
            assert robot.control.state == "held" and not m.done
            time.sleep(0.1)
            held = [uno.pulses(pin)[-1].width_us for pin in (9, 10, 11)]
            time.sleep(0.6)
            assert [uno.pulses(pin)[-1].width_us for pin in (9, 10, 11)] == pytest.approx(held, abs=1.5)  # Servo jitter
            m.resume()
            m.wait(timeout=30)
            assert np.allclose(robot.where().tool_m, [0.45, -0.30], atol=1e-3)


def test_hold_on_our_firmware_outlasts_its_watchdog(firmware_hex, tmp_path, monkeypatch):
    """A hold longer than the board's 1 s watchdog: the link is kept alive, the pulses do not change, and the
    motion goes on when resumed (at 200 %) to where it was planned."""
    import armctl

    with VirtualUno(firmware_hex, reset_on_open=True) as uno:
        with armctl.connect("seed-3link", uno.pty, assume_pose="home") as robot:
            robot.move_to(0.45, -0.05, phi=math.radians(-90), path="joint")
            m = robot.move_to(0.45, -0.30, phi=math.radians(-90), speed=0.1, wait=False)
            time.sleep(1.0)
            m.pause()
            deadline = time.monotonic() + 10
            while robot.control.state != "held" and time.monotonic() < deadline:
                time.sleep(0.01)
            assert robot.control.state == "held" and not m.done
            held = [uno.pulses(pin)[-1].width_us for pin in (9, 10, 11)]
            time.sleep(1.6)
            assert [uno.pulses(pin)[-1].width_us for pin in (9, 10, 11)] == held
            robot.speed_override = 2.0
            m.resume()
            m.wait(timeout=30)
            assert np.allclose(robot.where().tool_m, [0.45, -0.30], atol=1e-3)
