"""No jump after a crash: `armctl run` killed (SIGKILL) at random moments on a virtual Uno that resets when
its port opens, like a real one. Each next run must start its servos where the killed one left them.

Without the journal, 3 kills gave first pulses 114-252 us away on the joints and 500 us on the gripper
(the next run started from the pose of the last *clean* end). With it, the next run starts from the
pose the killed run journaled, every frame, as the one the board would stop in.
"""

from __future__ import annotations

import os
import random
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from tools.virtual_uno import VirtualUno

from armctl.model.arm import load_arm
from armctl.calibration.servo import find_calibration, load_calibration

ROOT = Path(__file__).resolve().parents[2]

PROGRAM = ROOT / "examples" / "pick_and_place.yaml"
PINS = {0: 9, 1: 10, 2: 11, 3: 12}  # channel -> Arduino pin
KILLS = 10
#: The bound armctl states: after a kill, a servo's first pulse is within this many frames of its motion
#: at its speed limit from the last pulse before (the journal is written once a frame; the board plays on
#: until its watchdog, counted from the last byte it heard, which may come up to a frame after the last
#: journal write; the host's estimate of the frame being played adds under a frame). seed-3link: 53, 67,
#: 80 us on the joints (7.2, 9, 10.8 deg), 108 us on the gripper (10.8 deg).
BOUND_FRAMES = 3


def _run(pty: str, env: dict, *args: str) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "armctl", "--port", pty, *args],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _steps_at_resets(uno: VirtualUno) -> list[dict[int, float]]:
    """For each reset after the first: per pin, |first pulse after - last pulse before| (us)."""
    pulses = uno.pulses()
    resets = [e.t_us for e in uno.events("reset")]
    out = []
    for t in resets[1:]:
        step = {}
        for pin in PINS.values():
            before = [p.width_us for p in pulses if p.pin == pin and p.t_us < t]
            after = [p.width_us for p in pulses if p.pin == pin and p.t_us > t]
            if before and after:
                step[pin] = abs(after[0] - before[-1])
        out.append(step)
    return out


def test_killed_runs_restart_where_they_stopped(firmware_hex, tmp_path):
    seed = int(os.environ.get("ARMCTL_KILL_SEED") or random.randrange(1 << 30))
    rng = random.Random(seed)
    env = dict(os.environ, ARMCTL_STATE_DIR=str(tmp_path / "state"))
    notes = []
    with VirtualUno(firmware_hex, reset_on_open=True) as uno:
        for kill in range(KILLS):
            opened = len(uno.events("open"))
            first = ["--assume-pose", "home"] if kill == 0 else []  # a fresh state folder: the user's word
            proc = _run(uno.pty, env, "run", str(PROGRAM), *first)
            assert uno.wait_for(lambda u, n=opened: len(u.events("open")) > n, 60), "armctl never opened the port"
            time.sleep(rng.uniform(0.3, 4.0))  # a random moment of the program (it starts streaming ~0.2 s in)
            proc.kill()
            _, err = proc.communicate(timeout=30)
            notes.append(err)
        last = _run(uno.pty, env, "home")  # the run after the last kill
        out, err = last.communicate(timeout=120)
        assert last.returncode == 0, err
        notes.append(err)
        steps = _steps_at_resets(uno)
    arm = load_arm("seed-3link")
    cal = load_calibration(find_calibration(arm.name))
    per_deg = {PINS[s.channel]: s.us_per_deg for s in cal.servos}
    speeds = [*np.degrees(arm.max_speed_rad_s), np.degrees(arm.gripper.max_speed_rad_s)]
    bound = {PINS[s.channel]: BOUND_FRAMES * 0.02 * v * s.us_per_deg + 0.5 for s, v in zip(cal.servos, speeds)}
    assert len(steps) >= KILLS, f"only {len(steps)} restarts seen (seed {seed})"
    worst = {pin: max(st.get(pin, 0.0) for st in steps) for pin in bound}
    print(  # the figure for the note: pytest -s tests/firmware/test_hil_crash.py
        f"largest first step after {len(steps)} kills (seed {seed}): "
        + ", ".join(f"pin {p} {us:.1f} us ({us / per_deg[p]:.2f} deg, bound {bound[p]:.1f})" for p, us in worst.items())
    )
    for step in steps:
        for pin, us in step.items():
            assert us <= bound[pin], (
                f"pin {pin} stepped {us:.1f} us ({us / per_deg[pin]:.2f} deg) when a run started after a kill "
                f"(bound {bound[pin]:.1f} us; ARMCTL_KILL_SEED={seed}); steps: {steps}"
            )
    # every run after a kill said so, on one line
    recovered = [e for e in notes[1:] if "ended without a clean stop" in e]
    assert len(recovered) >= KILLS - 1, notes
