"""Board-side pulse limits in our firmware on the virtual Uno: ``L`` is stored in EEPROM, survives a
reset (the handshake reports it), and the firmware itself refuses a pulse beyond it (``R ... RANGE``),
so no host bug can drive a servo past its calibrated range."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tools.virtual_uno import VirtualUno

from armctl.bus import codec
from armctl.bus.armproto.backend import ArmProtocolBackend
from armctl.errors import ProtocolError

ROOT = Path(__file__).resolve().parents[2]


def test_limits_persist_in_eeprom_and_the_firmware_refuses_pulses_beyond_them(firmware_hex):
    with VirtualUno(firmware_hex, free_run=True) as uno:
        with ArmProtocolBackend(uno.pty, watchdog_s=0) as b:
            assert b.info.firmware == "armctl-fw"
            assert b.info.limits_us[0] == (500, 2500)  # erased EEPROM: the factory range
            b.move(1, {0: 1500})
            b.drain()
            b.set_limits(0, 800, 2200.5)
            b.set_limits(2, 600, 2400)
            b.set_limits(7, 700.5, 2300)  # the last record (EEPROM bytes 58..63)
            first_boot = b.info.boot
        resets = len(uno.events("reset"))
        uno.reset()  # the reset button: RAM is gone, EEPROM is not
        assert uno.wait_for(lambda u: len(u.events("reset")) > resets, 5.0)
        with ArmProtocolBackend(uno.pty, watchdog_s=0) as b:
            assert b.info.boot != first_boot
            assert b.info.limits_us == ((800, 2200.5), (500, 2500), (600, 2400), *[(500, 2500)] * 4, (700.5, 2300))
            b.move(10, {0: 2200.5})
            b.drain()
            with pytest.raises(ProtocolError, match=r"rejected a command \(RANGE\)"):
                b.move(1, {0: 2300})
                b.drain()
        at_limit = uno.wait_for(lambda u: [p for p in u.pulses(pin=9) if abs(p.width_us - 2200.5) < 0.5], 5.0)
        assert at_limit  # the pulse log is written by the simulator process: wait for it
        assert [p for p in uno.pulses(pin=9) if p.width_us > 2201.5] == []  # never beyond the stored range


def test_raw_lines_report_the_refusal(firmware_hex):
    """The same refusal as the bytes on the wire, without the host backend."""
    import serial

    with VirtualUno(firmware_hex, reset_on_open=True, free_run=True) as uno:
        ser = serial.Serial(uno.pty, 115200, timeout=3)
        try:
            lines = []

            def ask(line: bytes) -> codec.Line:
                ser.write(line)
                while True:
                    raw = ser.readline()
                    assert raw, f"no reply to {line!r}"
                    f = codec.split_line(raw)
                    if f.kind != "!":
                        lines.append(raw)
                        return f

            ask(codec.hello(0))
            assert ask(codec.limits(1, 1, 1400, 3600)).kind == "A"  # channel 1: 700..1800 us
            assert ask(codec.move(2, 1, [None, 3700, *[None] * 6])).kind == "R"  # 1850 us
            assert lines[-1].split()[4] == b"RANGE"
            assert ask(codec.move(3, 1, [None, 3600, *[None] * 6])).kind == "A"  # 1800 us: at the limit
        finally:
            ser.close()
        assert all(p.width_us < 1800.6 for p in uno.pulses(pin=10))
