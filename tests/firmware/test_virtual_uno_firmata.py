"""The virtual Uno against firmware nobody here wrote: stock StandardFirmata through pymata4.

Proves the simulator itself (pty bridge, DTR-style reset on open, pulse
measurement) before it is used to judge our own firmware.
"""

from __future__ import annotations

from tests.helpers import require_module

import statistics
import sys
import time
from pathlib import Path

import pytest
from tests.helpers import require

from tools.virtual_uno import VirtualUno, build_tools, fetch_firmata

SERVO_PIN = 9
OTHER_PIN = 10


@pytest.fixture(scope="module")
def board(firmata_hex):
    pymata4 = require_module("pymata4.pymata4", "the Firmata backend speaks through pymata4")
    # Paced to wall time: pymata4 and the Servo library are host-timed.
    uno = VirtualUno(firmata_hex, reset_on_open=True).start()
    try:
        # StandardFirmata blinks its version on pin 13 for ~1.9 s after reset.
        b = pymata4.Pymata4(com_port=uno.pty, baud_rate=57600, arduino_wait=2.5)
    except BaseException:
        uno.stop()
        raise
    yield uno, b
    try:
        b.shutdown()
    finally:
        uno.stop()
        uno.cleanup()


def _after(uno, pin, t_mono, n, timeout_s=10.0):
    """Wait for ``n`` pulses on ``pin`` logged after host time ``t_mono``."""
    got = uno.wait_for(
        lambda u: (lambda ps: ps if len(ps) >= n else None)([p for p in u.pulses(pin) if p.mono_s > t_mono]), timeout_s
    )
    assert got, f"fewer than {n} pulses on pin {pin} within {timeout_s} s"
    return got


def test_open_resets_the_board_like_dtr(board):
    uno, _ = board
    names = [e.name for e in uno.events() if e.name in ("reset", "open")]
    assert names[:3] == ["reset", "open", "reset"], names
    assert uno.events("reset")[-1].detail == "open"


def test_attach_pulses_centre_before_any_write(board):
    """Stock Firmata: attaching a servo starts ~1500 us pulses at once (what our firmware avoids)."""
    uno, b = board
    t0 = time.monotonic()
    b.set_pin_mode_servo(SERVO_PIN, 544, 2400)
    b.set_pin_mode_servo(OTHER_PIN, 544, 2400)
    pulses = _after(uno, SERVO_PIN, t0, 5)
    widths = [p.width_us for p in pulses]
    # The Servo library's attach default is 1500 us in raw ticks (no trim): ~1502 us measured.
    assert 1499 <= statistics.median(widths) <= 1504, widths


@pytest.mark.parametrize("us", [1000, 1234, 1500, 1999, 2400, 600])
def test_servo_write_microseconds_measured_within_1us(board, us):
    uno, b = board
    other = 3000 - us if 3000 - us >= 544 else 1500
    t_write = time.monotonic()
    b.servo_write(SERVO_PIN, us)
    b.servo_write(OTHER_PIN, other)
    # the new width appears within a frame or two; then every later pulse must hold it
    first = uno.wait_for(
        lambda u: next((p for p in u.pulses(SERVO_PIN) if p.mono_s > t_write and abs(p.width_us - us) <= 1.0), None),
        10.0,
    )
    assert first, f"no {us} us pulse on pin {SERVO_PIN}"
    steady = uno.wait_for(
        lambda u: (lambda ps: ps if len(ps) >= 12 else None)([p for p in u.pulses(SERVO_PIN) if p.t_us >= first.t_us]),
        10.0,
    )
    assert steady, "the servo stopped pulsing"
    widths = [p.width_us for p in steady]
    assert abs(statistics.median(widths) - us) <= 0.5, widths
    # Timer0's interrupt can delay the Servo library's: a few pulses run a few us long, never short.
    assert all(us - 1.0 <= w <= us + 8.0 for w in widths), widths
    within = sum(abs(w - us) <= 1.0 for w in widths)
    assert within >= len(widths) - 2, widths
    # Frame period of the Servo library: 20 ms
    periods = [b2.t_us - a.t_us for a, b2 in zip(steady, steady[1:])]
    assert 19_900 <= statistics.median(periods) <= 20_100, periods
    other_pulses = _after(uno, OTHER_PIN, first.mono_s, 6)
    assert abs(statistics.median([p.width_us for p in other_pulses[-4:]]) - other) <= 1.0


def test_shutdown_stops_the_pulses(firmata_hex):
    """pymata4's shutdown sends a system reset: StandardFirmata detaches every servo."""
    pymata4 = require_module("pymata4.pymata4", "the Firmata backend speaks through pymata4")
    with VirtualUno(firmata_hex, reset_on_open=True) as uno:
        b = pymata4.Pymata4(com_port=uno.pty, baud_rate=57600, arduino_wait=2.5)
        b.set_pin_mode_servo(SERVO_PIN, 544, 2400)
        t0 = time.monotonic()
        b.servo_write(SERVO_PIN, 1800)
        _after(uno, SERVO_PIN, t0, 3)
        b.shutdown()
        time.sleep(0.2)
        n = len(uno.pulses(SERVO_PIN))
        time.sleep(0.3)
        assert uno.alive()
        assert len(uno.pulses(SERVO_PIN)) == n, "pulses continued after shutdown"
