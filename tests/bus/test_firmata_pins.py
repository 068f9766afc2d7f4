"""Firmata drives servos on any pin the board has: the calibration's ``pin`` list, not D9-D12.

On stock StandardFirmata in the virtual Uno: an arm whose servos sit on D13 and on analog pins used
as digital ones (A0 = 14, A3 = 17, A5 = 19: the last two written with Firmata's extended analog
message) goes where it is sent, measured from the pulses, and nothing pulses on D9-D12. Pins the
board cannot drive (the serial pins, pins it does not have) are refused at connect, naming the pin.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from armctl.bus.firmata import FirmataBackend
from armctl.calibration.servo import find_calibration, load_calibration
from armctl.errors import LinkError
from armctl.model.arm import load_arm
from armctl.model.kinematics import fk
from tests.helpers import require, require_module
from tools.virtual_uno import VirtualUno, build_tools, fetch_firmata

ROOT = Path(__file__).resolve().parents[2]

PINS = {"shoulder": 13, "elbow": 14, "wrist": 17, "gripper": 19}  # D13, A0, A3, A5


class _Board:
    """pymata4 as far as the pin check goes: it found 20 digital pins (an Uno)."""

    def __init__(self, **kw):
        self.digital_pins = [object()] * 20
        self.calls = []

    def set_pin_mode_servo(self, pin, lo, hi):
        self.calls.append(("config", pin))

    def servo_write(self, pin, value):
        self.calls.append(("write", pin, value))

    def _stop_threads(self):
        pass

    serial_port = type("Port", (), {"close": lambda self: None})()


@pytest.mark.parametrize(
    ("pins", "match"),
    [
        ((9, 1), "servo pin 1 on /dev/fake: D1 is the serial link to the host"),
        ((0,), "servo pin 0 on /dev/fake: D0 is the serial link"),
        ((14, 20), r"servo pin 20 on /dev/fake: the board reports pins 0..19"),
    ],
)
def test_pins_the_board_cannot_drive_are_refused_before_anything_is_attached(pins, match):
    made = []

    def factory(**kw):
        made.append(_Board(**kw))
        return made[-1]

    be = FirmataBackend("/dev/fake", pins_range_us=dict.fromkeys(pins, (600, 2400)), pymata_factory=factory)
    with pytest.raises(LinkError, match=match):
        be.open()
    assert made[0].calls == [] and be.board is None


def test_every_board_pin_is_accepted():
    be = FirmataBackend("/dev/fake", pins_range_us=dict.fromkeys(range(2, 20), (600, 2400)), pymata_factory=_Board)
    info = be.open()
    be.move(1, dict.fromkeys(range(2, 20), 1500.0))
    assert {c[1] for c in be.board.calls if c[0] == "config"} == set(range(2, 20))
    assert info.channels == 20
    be.close()


def _calibration(tmp_path: Path) -> Path:
    text = find_calibration("seed-3link").read_text()
    for name, pin in PINS.items():
        old = {"shoulder": 9, "elbow": 10, "wrist": 11, "gripper": 12}[name]
        text = text.replace(f"{{name: {name}, channel:", f"{{name: {name}, channel:", 1)
        text = text.replace(f"pin: {old},", f"pin: {pin},", 1)
    path = tmp_path / "seed-3link.yaml"
    path.write_text(text)
    cal = load_calibration(path)
    assert {s.name: s.pin for s in cal.servos} == PINS
    return path


def test_an_arm_on_d13_and_analog_pins_goes_where_it_is_sent(tmp_path):
    ok, why = build_tools()
    require(ok, f"virtual Uno does not build: {why}")
    hex_path, why = fetch_firmata()
    require(hex_path is not None, why)
    require_module("pymata4", "the Firmata backend speaks through pymata4")
    cal_path = _calibration(tmp_path)
    cal = load_calibration(cal_path)
    arm = load_arm("seed-3link")
    target = (0.5, 0.2)
    env = dict(os.environ, ARMCTL_STATE_DIR=str(tmp_path / "state"))
    # Firmata is host-timed: the board runs at wall-clock pace.
    with VirtualUno(hex_path, reset_on_open=True) as uno:
        cmd = [sys.executable, "-m", "armctl", "--arm", "seed-3link", "--backend", "firmata", "--port", uno.pty]
        cmd += ["--assume-pose", "home"]  # a fresh state folder: armctl has no pose of the arm
        cmd += ["--calibration", str(cal_path), "jog", str(target[0]), str(target[1]), "--speed", "200", "--json"]
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120, cwd=ROOT, env=env)
        assert proc.returncode == 0, proc.stderr[-3000:]
        time.sleep(0.6)  # the servos hold their last pulse after armctl lets go of the port: 30 frames
        pulses = uno.pulses()
    report = json.loads(proc.stdout)
    assert report["tool_m"] == pytest.approx(list(target), abs=1e-3)  # what the whole-us pulses written mean
    assert not [p for p in pulses if p.pin in (9, 10, 11, 12)], "pulses on the default pins"
    held = {}
    for name, pin in PINS.items():
        widths = [p.width_us for p in pulses if p.pin == pin]
        assert len(widths) >= 30, f"{name} on pin {pin}: {len(widths)} pulses"
        # the last 15 frames: the held pulse (the median drops a pulse the Servo library stretched)
        held[name] = float(np.median(widths[-15:]))
        assert all(abs(w - held[name]) <= 8.0 for w in widths[-15:]), (name, widths[-15:])
    # each pin holds the pulse written for it: whole microseconds (the Servo library's ticks add a fraction)
    written = dict(zip([s.name for s in cal.servos], report["values"], strict=True))
    for name, us in written.items():
        assert abs(held[name] - round(us)) <= 1.0, (name, held[name], us)
    joints = cal.values_to_joints(np.array([[held[s.name] for s in cal.joints]]))
    tool = fk(arm.links_m, joints)[0]
    # whole-microsecond writes cost up to ~1 mm on this arm (7.4 us/deg, 0.9 m reach; test_hil_run.py)
    assert np.hypot(*(tool - target)) <= 1.0e-3, tool
