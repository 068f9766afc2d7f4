"""What stock StandardFirmata's Servo library does with what armctl sends it, measured on the virtual Uno.

- ``Servo::write(value)`` takes a value below 544 as an angle in degrees: the shipped seed-3link calibration
  reaches 508 us at elbow +134 deg, which StandardFirmata turned into about 2,500 us (a jump to the far end
  while armctl reported 134 deg). Over Firmata no pulse below 544 us is sent: the range is narrowed at connect
  with one note a servo, a target past it is refused naming the pulse and why, the calibration's nudges stop
  at 544 us with the reason on screen, and the write path clamps at 544 us whatever it is given.
- ``Servo::attach(pin, min, max)`` keeps its limits as int8_t counts of 4 us: the firmware clamps where
  ``library_limits`` says (a wrapped range, 224..2876 us for 1250..1850, clamps nothing), and armctl attaches
  with ``attach_limits``, which the library holds exactly and which never cut into the calibrated range.
"""

from __future__ import annotations

from tests.helpers import require_module

import math
import statistics
import sys
import time
from pathlib import Path

import pytest
from tests.helpers import require

from tools.virtual_uno import VirtualUno, build_tools, fetch_firmata

import armctl
from armctl.bus.firmata import FirmataBackend, attach_limits, library_limits
from armctl.calibration.procedures import Nudger
from armctl.errors import BadInputError, PulseLimitError

ELBOW, WRIST = 10, 11  # seed-3link's pins (its shipped calibration)
# the elbow at full speed (150 deg/s at 7.4 us/deg) moves 22 us a 20 ms frame, but host-timed writes bunch when
# the host runs late (a few frames' steps in one; test_hil_run.py): a step of a few frames, never the ~1,950 us
# jump to the far end that a value below 544 gave
MAX_STEP_US = 250.0


@pytest.fixture(scope="module")
def uno():
    ok, why = build_tools()
    require(ok, f"virtual Uno does not build: {why}")
    hex_path, why = fetch_firmata()
    require(hex_path is not None, why)
    require_module("pymata4", "the Firmata backend speaks through pymata4")
    with VirtualUno(hex_path, reset_on_open=True) as board:  # host-timed: paced to wall time
        yield board


def _widths(uno, pin, since_s):
    return [p.width_us for p in uno.pulses(pin) if p.mono_s >= since_s]


def _settled(uno, pin, since_s, n=8):
    """The median of the last ``n`` pulses on ``pin`` (after ``since_s``), once there are ``n`` new ones."""
    got = uno.wait_for(lambda u: (lambda w: w if len(w) >= n else None)(_widths(u, pin, since_s)), 5.0)
    assert got, f"no pulses on pin {pin}"
    return statistics.median(got[-n:])


def test_seed_3link_elbow_past_129_deg_never_sends_below_544_us(uno, tmp_path, monkeypatch, capsys):
    with armctl.connect("seed-3link", uno.pty, backend="firmata", assume_pose="home") as robot:
        t0 = uno.events("reset")[-1].mono_s  # the port's opening reset the board: its pulses from here
        notes = [line for line in capsys.readouterr().err.splitlines() if line.startswith("armctl: note:")]
        # one line a servo narrowed: the elbow loses +129.2..135.1 deg, the wrist -135.1..-129.2
        assert len(notes) == 2, notes
        assert "elbow: 544..2500 us on this board, not the calibrated 500..2500 us" in notes[0]
        assert "-135.1..129.2 deg" in notes[0] and "Servo.write() takes a value below 544" in notes[0]
        assert "wrist" in notes[1] and "-129.2..135.1 deg" in notes[1]
        robot.move_joints([60, 120, -120], degrees=True)
        # the reported pose of the issue: refused before anything moves, naming the joint, the pulse and why
        with pytest.raises(PulseLimitError, match=r"joint 2 \(elbow\) at 129\.\d deg needs a 54[0-3]\.\d us") as e:
            robot.move_joints([60, 134, -134], degrees=True)
        assert "narrowed on this board: StandardFirmata's Servo.write()" in str(e.value)
        assert [round(math.degrees(v), 3) for v in robot.where().q_rad] == [60, 120, -120]
        robot.move_joints([60, 129.1, -129.1], degrees=True)  # 544.7 us: as far as Firmata goes
        # the write path, handed 508 us below every check: clamped at 544, never sent as "508 degrees"
        robot.call(lambda be: be.move(5, {ELBOW: 508.0, WRIST: 508.0}))
        t_guard = time.monotonic()
        robot.settle()
        writes = robot.call(lambda be: list(be.writes))
    assert min(us for _, pin, us in writes if pin in (ELBOW, WRIST)) == 544
    for pin in (ELBOW, WRIST):
        widths = _widths(uno, pin, t0)
        jumps = [abs(b - a) for a, b in zip(widths, widths[1:])]
        # before: the elbow jumped 1,948 us in one frame, to 2,500 us; now no step beyond a frame at full speed
        assert max(jumps) <= MAX_STEP_US, (pin, max(jumps))
        assert min(widths) >= 543.5 and max(widths) <= 2170, (pin, min(widths), max(widths))
        assert abs(_settled(uno, pin, t_guard) - 544) <= 1.0


def test_calibrate_nudges_stop_at_544_us_on_firmata(uno, tmp_path, monkeypatch):
    with armctl.connect("seed-3link", uno.pty, backend="firmata", calibrating=True, assume_pose="home") as robot:
        t0 = uno.events("reset")[-1].mono_s
        n = Nudger(robot, robot.servo_values())
        assert n.go(1, 700) == 700 and n.note == ""
        assert n.go(1, 500) == 544  # the calibration's 500 us and its old PgDn: clamped, with the reason
        assert n.note.startswith("544 us is the lowest the firmata backend can send: StandardFirmata's Servo.write()")
        assert n.nudge(1, -0.5) == 544 and n.note
        with pytest.raises(BadInputError, match=r"servo value 520.0 outside 544..2500 us.*takes a value below 544"):
            robot.move_servo(1, 520.0, 5)
        robot.settle()
        t_end = time.monotonic()
    assert abs(_settled(uno, ELBOW, t_end) - 544) <= 1.0
    widths = _widths(uno, ELBOW, t0)
    assert min(widths) >= 543.5
    assert max(abs(b - a) for a, b in zip(widths, widths[1:])) <= MAX_STEP_US


def test_attach_limits_clamp_where_the_servo_library_says(uno):
    """The gripper of seed-3link (1250..1850 us) and its shoulder (800..2200): pulses commanded past the limits
    straight to pymata4 (below armctl's own clamp) come out where the library's int8_t limits put them."""
    gripper, shoulder, raw = 12, 9, 13
    be = FirmataBackend(uno.pty, pins_range_us={shoulder: (800, 2200), gripper: (1250, 1850)}, arduino_wait_s=10.0)
    be.open()
    try:
        be.move(1, {shoulder: 1500.0, gripper: 1500.0})  # attached with attach_limits
        assert attach_limits(1250, 1850) == (1056, 1892) and attach_limits(800, 2200) == (800, 2200)
        # what armctl sent before: the calibrated values as they are, which the library wraps
        assert library_limits(1250, 1850) == (224, 2876)
        be.board.set_pin_mode_servo(raw, 1250, 1850)
        measured = {}
        for label, writes in (("high", {shoulder: 2300, gripper: 2400, raw: 2400}), ("low", {shoulder: 700, gripper: 600, raw: 600})):
            t = time.monotonic()
            for pin, us in writes.items():
                be.board.servo_write(pin, us)
            time.sleep(0.1)
            measured[label] = {pin: _settled(uno, pin, t + 0.05) for pin in writes}
    finally:
        be.close()
    # now: clamped at the limits armctl attached with, which the library holds as sent
    assert measured["high"][shoulder] == pytest.approx(2200, abs=1.0)
    assert measured["low"][shoulder] == pytest.approx(800, abs=1.0)
    assert measured["high"][gripper] == pytest.approx(1892, abs=1.0)
    assert measured["low"][gripper] == pytest.approx(1056, abs=1.0)
    # before: 1250..1850 sent as it is wrapped to 224..2876: nothing was clamped (library_limits is the firmware)
    assert measured["high"][raw] == pytest.approx(2400, abs=1.0)
    assert measured["low"][raw] == pytest.approx(600, abs=1.0)
