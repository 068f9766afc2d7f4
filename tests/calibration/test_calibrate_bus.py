"""armctl calibrate on bus servos, driven as a user would: the torque goes off, each joint is turned by
hand (the simulated bus's test hook) to the poses the screen names, Enter records where the servo says it
is. The servos have a hidden mapping unlike the old calibration's; the saved calibration finds it, and a
move afterwards lands where it should, measured by the servos. --write-offsets puts each zero at 2048.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

import armctl
from armctl.calibration.servo import load_calibration
from armctl.sim.pty import PtySim
from tests.hand_bus import PER_DEG, TRUE, serve_until_stopped, true_steps
from tests.terminal import Term

REPO = Path(__file__).resolve().parents[2]
OLD = """version: 1
arm: seed-3link
joints:
  - {name: shoulder, id: 1, zero_steps: 2048, direction: 1, min_steps: 1024, max_steps: 3072}
  - {name: elbow, id: 2, zero_steps: 2048, direction: 1, min_steps: 512, max_steps: 3584}
  - {name: wrist, id: 3, zero_steps: 2048, direction: 1, min_steps: 512, max_steps: 3584}
gripper: {name: gripper, id: 6, zero_steps: 1500, direction: 1, min_steps: 1600, max_steps: 2300}
"""


def _start(tmp_path: Path, bus: PtySim, *extra: str, old: str = OLD) -> Term:
    cal = tmp_path / "seed-3link.yaml"
    cal.write_text(old)
    env = dict(os.environ, ARMCTL_STATE_DIR=str(tmp_path / "state"), PYTHONPATH=str(REPO), TERM="xterm")
    argv = [sys.executable, "-m", "armctl", "--calibration", str(cal), "--port", bus.path, "calibrate", *extra]
    return Term(argv, cwd=tmp_path, env=env)


def _put(t: Term, bus: PtySim, servo_id: int, steps: float) -> None:
    """Turn a servo by hand to ``steps``, wait until the screen shows it, press Enter."""
    assert bus.sim.turn_by_hand(servo_id, steps), "the servo resisted: its torque is on"
    t.wait(rf"position {round(steps)} steps")
    t.send("\r")


def _home_by_hand(bus: PtySim) -> None:
    """Put the arm back to its home pose by hand (calibrating left it at mechanical ends)."""
    for sid, angle in ((1, 45), (2, -90), (3, -45), (6, 60)):
        offset = bus.sim.servo(sid).get("homing_offset")  # the servo reports its position less this
        assert bus.sim.turn_by_hand(sid, true_steps(sid, angle) - offset)


def _calibrate(t: Term, bus: PtySim, held=None) -> None:
    for i, sid in enumerate((1, 2, 3)):
        for k, angle in enumerate((0, 90, -90)):
            t.wait(rf"reference pose {k + 1} of 3")
            _put(t, bus, sid, true_steps(sid, angle))
        t.wait("fit from 3 points")
        t.send("y")
        lo, hi = (-90, 90) if i == 0 else (-135, 135)  # the arm file's limits: the mechanical ends here
        t.wait("safe range, end 1 of 2")
        _put(t, bus, sid, true_steps(sid, lo - 5))
        t.wait("safe range, end 2 of 2")
        _put(t, bus, sid, true_steps(sid, hi + 5))
    t.wait(r"Gripper, id 6: open")
    _put(t, bus, 6, true_steps(6, 60))
    t.wait(r"Gripper, id 6: closed")
    _put(t, bus, 6, true_steps(6, 10))
    if held is not None:
        held()
    t.wait("Calibration finished")
    t.send("y")


def test_calibrate_by_hand_finds_the_servos_mapping(tmp_path, bus):
    t = _start(tmp_path, bus)
    t.wait("torque off")
    assert not any(bus.sim.servo(i).torque_on for i in (1, 2, 3, 6))
    _calibrate(t, bus)
    assert t.finish() == 0, t.screen()
    cal = load_calibration(tmp_path / "seed-3link.yaml")
    for s in cal.servos:
        zero, direction = TRUE[s.id]
        assert s.zero_steps == pytest.approx(zero, abs=1) and s.direction == direction, s
        assert s.steps_per_deg == pytest.approx(PER_DEG, rel=1e-3)
    shoulder = cal.joints[0]
    assert shoulder.min_steps == pytest.approx(true_steps(1, -95) + 2 * PER_DEG, abs=1)  # backed off 2 deg
    assert (tmp_path / "seed-3link.yaml.bak").read_text() == OLD
    # and a move with it lands where it should, by the servos' own encoders
    _home_by_hand(bus)
    with armctl.connect("seed-3link", bus.path, calibration=tmp_path / "seed-3link.yaml") as robot:
        robot.move_to(0.5, 0.2, speed=0.3)
        assert np.hypot(*(robot.where(settle=True).tool_m - [0.5, 0.2])) < 1e-3


def test_write_offsets_puts_each_zero_at_2048(tmp_path, bus):
    t = _start(tmp_path, bus, "--write-offsets")
    _calibrate(t, bus)
    assert t.finish() == 0, t.screen()
    cal = load_calibration(tmp_path / "seed-3link.yaml")
    assert [round(s.zero_steps) for s in cal.joints] == [2048, 2048, 2048]
    for s in cal.joints:
        offset = bus.sim.servo(s.id).get("homing_offset")
        assert offset == round(TRUE[s.id][0] - 2048)
    _home_by_hand(bus)
    with armctl.connect("seed-3link", bus.path, calibration=tmp_path / "seed-3link.yaml") as robot:
        robot.move_to(0.5, 0.2, speed=0.3)
        assert np.hypot(*(robot.where(settle=True).tool_m - [0.5, 0.2])) < 1e-3


def test_calibrate_records_where_the_held_servo_is_turned_by_hand(tmp_path):
    """A held servo (a wrist roll, id 5) gets its own screen after the gripper: turned by hand, Enter records
    its position as the one the arm holds from then on."""
    start = ",".join(str(round(true_steps(i, a))) for i, a in ((1, 45), (2, -90), (3, -45), (6, 60)))
    pty = PtySim(f"feetechsim://?ids=1,2,3,6,5&start={start},3000")
    stop = threading.Event()
    thread = threading.Thread(target=serve_until_stopped, args=(pty, stop), daemon=True)
    thread.start()
    try:
        old = OLD + "hold: [{name: wrist_roll, id: 5, position_steps: 2048, speed_deg_s: 90}]\n"
        t = _start(tmp_path, pty, old=old)

        def held():
            t.wait(r"Held servo wrist_roll, id 5")
            _put(t, pty, 5, 2300)

        _calibrate(t, pty, held)
        assert t.finish() == 0, t.screen()
        cal = load_calibration(tmp_path / "seed-3link.yaml")
        assert [(h.id, h.position_steps, h.speed_deg_s) for h in cal.held] == [(5, 2300, 90)]
        assert not pty.sim.servo(5).torque_on  # released with the joints while calibrating
        _home_by_hand(pty)
        pty.sim.turn_by_hand(5, 1800)
        with armctl.connect("seed-3link", pty.path, calibration=tmp_path / "seed-3link.yaml") as robot:
            robot.move_to(0.5, 0.2, speed=0.3)
            robot.where(settle=True)
            assert pty.sim.servo(5).present_steps() == 2300
    finally:
        stop.set()
        thread.join(timeout=5)
        pty.close()


def test_quit_leaves_the_old_calibration(tmp_path, bus):
    t = _start(tmp_path, bus)
    t.wait("reference pose 1 of 3")
    _put(t, bus, 1, true_steps(1, 0))
    t.wait("reference pose 2 of 3")
    t.send("q")
    assert t.finish() == 130
    assert (tmp_path / "seed-3link.yaml").read_text() == OLD


def _reads(t: Term, seconds: float = 0.6) -> None:
    """The user reads the screen for a while (several live-refresh periods) without pressing a key."""
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        t._pump(0.05)


def test_the_fit_refusal_and_save_screens_wait_for_the_users_key(tmp_path, bus):
    """A user reads the fit before answering: each screen stays until a key, however long that takes (the
    live-position refresh must not answer it), and the final y saves (exit 0, not a quit)."""
    t = _start(tmp_path, bus)
    # joint 1: a point far off the line, so the fit is refused; that screen waits for r
    for k, angle in enumerate((0, 90, -60)):
        t.wait(rf"reference pose {k + 1} of 3")
        _put(t, bus, 1, true_steps(1, angle))
    t.wait("the fit is refused")
    _reads(t)
    assert "the fit is refused" in t.screen()
    t.send("r")
    for k, angle in enumerate((0, 90, -90)):
        t.wait(rf"reference pose {k + 1} of 3")
        _put(t, bus, 1, true_steps(1, angle))
    t.wait("fit from 3 points")
    _reads(t)
    assert "fit from 3 points" in t.screen(), t.screen()
    t.send("y")
    t.wait("safe range, end 1 of 2")
    _put(t, bus, 1, true_steps(1, -95))
    t.wait("safe range, end 2 of 2")
    _put(t, bus, 1, true_steps(1, 95))
    for sid in (2, 3):  # skip the other joints and the gripper
        t.wait(rf"id {sid}: reference pose 1 of 3")
        t.send("s")
    t.wait(r"Gripper, id 6: open")
    t.send("s")
    t.wait("Calibration finished")
    _reads(t)
    assert "Calibration finished" in t.screen()
    t.send("y")
    assert t.finish() == 0, t.screen()
    assert load_calibration(tmp_path / "seed-3link.yaml").joints[0].zero_steps == pytest.approx(TRUE[1][0], abs=1)


def test_the_script_forms_record_fit_and_show_a_bus_calibration(tmp_path, capsys):
    """--joint/--angle/--us record positions in steps for bus servos, --fit fits them as bus servos, and
    --show --json prints the calibration's own keys (these assumed PWM servos: 500..2500 us, min_us...)."""
    from armctl.cli import main

    cal = tmp_path / "seed-3link.yaml"
    cal.write_text(OLD)
    base = ["--calibration", str(cal), "calibrate"]
    for angle in (0, 90, -90):
        assert main([*base, "--joint", "1", "--angle", str(angle), "--us", f"{true_steps(1, angle):.0f}"]) == 0
    assert main([*base, "--joint", "1", "--min-us", "1100", "--max-us", "3100"]) == 0
    assert main([*base, "--joint", "1", "--angle", "0", "--us", "5000"]) == 2
    assert "outside 0..4095 steps" in capsys.readouterr().err
    assert main([*base, "--fit"]) == 0
    assert "safe range 1100..3100 steps" in capsys.readouterr().out
    shoulder = load_calibration(cal).joints[0]
    assert shoulder.zero_steps == pytest.approx(TRUE[1][0], abs=0.5) and shoulder.direction == 1
    assert (shoulder.min_steps, shoulder.max_steps) == (1100, 3100)
    assert main(["--calibration", str(cal), "calibrate", "--show", "--json"]) == 0
    import json

    shown = json.loads(capsys.readouterr().out)["servos"][0]
    assert shown == {
        "name": "shoulder",
        "id": 1,
        "zero_steps": shoulder.zero_steps,
        "steps_per_deg": shoulder.steps_per_deg,
        "direction": 1,
        "min_steps": 1100.0,
        "max_steps": 3100.0,
    }
