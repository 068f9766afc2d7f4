"""What a StandardFirmata board can be sent, asked of the backend object: never a pulse below 544 us, and attach
limits the Servo library can hold (int8_t counts of 4 us), for every servo armctl ships a calibration for.

The same on stock StandardFirmata, measured: tests/firmware/test_firmata_servo_library.py.
"""

from __future__ import annotations

import pytest

import armctl
from armctl.bus.armproto.backend import ArmProtocolBackend
from armctl.bus.firmata import FirmataBackend, attach_limits, library_limits
from armctl.calibration.servo import load_calibration, narrowed
from armctl.core.paths import PRESET_CALIBRATION_DIR
from armctl.errors import ConfigError

#: every hobby servo armctl ships a calibration for on the Uno (the PCA9685 files repeat two of them)
UNO_FILES = [p for p in sorted(PRESET_CALIBRATION_DIR.glob("*.yaml")) if "pca9685" not in p.name]
SERVOS = [
    (f"{p.stem}/{s.name}", s) for p in UNO_FILES for s in load_calibration(p).servos if load_calibration(p).unit == "us"
]


def test_twenty_servos_are_shipped():
    assert len(SERVOS) == 20


@pytest.mark.parametrize(("label", "servo"), SERVOS, ids=[label for label, _ in SERVOS])
def test_attach_limits_are_held_by_the_servo_library_and_keep_the_calibrated_range(label, servo):
    backend = FirmataBackend("/dev/null", pins_range_us={servo.pin: (servo.lo, servo.hi)})
    lo, hi = backend.ranges[servo.pin]  # the host's clamp: the calibrated range, from 544 us up
    assert lo == max(servo.lo, 544) and hi == servo.hi
    got = attach_limits(lo, hi)
    assert library_limits(*got) == got  # held exactly: nothing wraps, nothing rounds
    assert 544 <= got[0] <= lo and hi <= got[1]  # never cuts into the range: the firmware never moves a servo
    # as near as the library gets: within one 4 us step, or its tightest (1056 us min, 1892 us max)
    assert got[0] > lo - 4 or got[0] == 1056
    assert got[1] < hi + 4 or got[1] == 1892


def test_the_calibrated_values_as_they_are_wrap_in_the_servo_library():
    """What armctl sent before, the calibrated values rounded: 7 of the 20 shipped servos got a firmware clamp
    far from them (an int8_t count of 4 us out of -128..127 wraps)."""
    sent = {label: (round(s.lo), round(s.hi)) for label, s in SERVOS}
    wrapped = sorted(label for label, v in sent.items() if any(abs(a - b) >= 4 for a, b in zip(library_limits(*v), v)))
    assert library_limits(1250, 1850) == (224, 2876)  # seed-3link's gripper (Servo.h: 544 - 4 * int8_t)
    assert wrapped == [
        "braccio/gripper",
        "eezybot-mk2/elbow",
        "eezybot-mk2/gripper",
        "eezybot-mk2/shoulder",
        "mearm/gripper",
        "seed-2link/gripper",
        "seed-3link/gripper",
    ]


class _Pymata:
    def __init__(self, **kw):
        self.calls = []
        self.digital_pins = [object()] * 20

    def set_pin_mode_servo(self, pin, lo, hi):
        self.calls.append(("attach", pin, lo, hi))

    def servo_write(self, pin, value):
        self.calls.append(("write", pin, value))

    def _stop_threads(self):
        pass

    serial_port = type("Port", (), {"close": lambda self: None})()


def test_the_write_path_never_sends_below_544_us():
    be = FirmataBackend(
        "/dev/fake", pins_range_us={10: (500, 2500)}, pymata_factory=_Pymata, clock=lambda: 0.0, sleep=lambda s: None
    )
    with be:
        be.move(1, {10: 600.0})
        be.move(3, {10: 500.0})
        be.set_goal({10: 508.0})
        calls = be.board.calls
    assert calls[0] == ("attach", 10, 544, 2500)
    assert min(v for c, _, v, *_ in calls if c == "write") == 544


def test_the_rule_is_asked_of_the_backend():
    servo = load_calibration(PRESET_CALIBRATION_DIR / "seed-3link.yaml").joints[1]
    firmata = FirmataBackend("/dev/fake", pins_range_us={10: (500, 2500)})
    ours = ArmProtocolBackend.create("armsim://", load_calibration(PRESET_CALIBRATION_DIR / "seed-3link.yaml"))
    assert firmata.value_range(servo) == (544, 2500) and ours.value_range(servo) == (500, 2500)
    assert "Servo.write() takes a value below 544 as an angle" in firmata.beyond_note(servo, 500)
    assert firmata.beyond_note(servo, 544) == "" and ours.beyond_note(servo, 500) == ""


def test_a_calibration_reaching_below_544_is_narrowed_with_one_line_per_servo():
    cal = load_calibration(PRESET_CALIBRATION_DIR / "seed-2link.yaml")
    be = FirmataBackend("/dev/fake", pins_range_us={})
    out, notes = be.fit_calibration(cal)
    assert [s.lo for s in out.servos] == [800, 544, 1250] and out.gripper == cal.gripper
    assert len(notes) == 1 and notes[0].startswith(
        "elbow: 544..2500 us on this board, not the calibrated 500..2500 us, "
        "so -135.1..129.2 deg, not -135.1..135.1 deg:"
    )
    assert out.joints[1].zero_us == cal.joints[1].zero_us  # the mapping is the file's
    assert narrowed(out, be.value_range, why="x") == (out, [])  # nothing more to cut


def test_a_servo_wholly_below_544_is_refused_before_the_port_opens(tmp_path, monkeypatch):
    text = (PRESET_CALIBRATION_DIR / "seed-2link.yaml").read_text()
    text = text.replace("direction: -1, min_us: 500, max_us: 2500", "direction: -1, min_us: 500, max_us: 540")
    path = tmp_path / "seed-2link.yaml"
    path.write_text(text)
    # no such device: a LinkError if the port were opened; the calibration is refused first
    with pytest.raises(
        ConfigError,
        match=r"elbow: its calibrated 500..540 us lies wholly outside the 544..2500 us this board can send, so none",
    ):
        armctl.connect("seed-2link", str(tmp_path / "no-such-port"), backend="firmata", calibration=path)
