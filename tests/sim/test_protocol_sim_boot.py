"""The simulated board's boot line (docs/protocol.md section 5): sent once after reset, before any reply.

The port opening is the reset. SimArm sends ``- ! BOOT`` at ``SimArm.BOOT_S``
and reads host bytes from then on, so the banner always precedes the first
reply; pyserial's ``reset_input_buffer`` drops only bytes that have arrived.
"""

from __future__ import annotations

import pytest
import serial

import armctl.bus  # noqa: F401  registers armsim://
from armctl.bus import codec
from armctl.bus.armproto.backend import ArmProtocolBackend
from armctl.sim.armsim import SimArm, SimOptions

BANNER = codec.encode(None, "!", "BOOT", "armsim", codec.PROTOCOL_VERSION, "3F2A")


def test_banner_comes_when_the_uart_is_ready_and_before_any_reply():
    sim = SimArm(SimOptions(arm="seed-2link", boot=0x3F2A))
    sim.host_write(codec.hello(0), 0.0)  # sent at once: the board reads it only once booted
    assert sim.host_read(SimArm.BOOT_S - 1e-6) == b""
    got = sim.host_read(SimArm.BOOT_S + 0.05)
    first, rest = got.split(b"\n", 1)
    assert first + b"\n" == BANNER
    assert rest.startswith(b"0 H armsim 2 8 16 20000 3F2A 1000:5000 ")
    assert sim.host_read(1.0) == b""  # once only


def test_reset_input_buffer_keeps_bytes_still_on_the_wire():
    sim = SimArm(SimOptions(arm="seed-2link", boot=0x3F2A))
    sim.pump(0.001)
    sim.drop_pending_output()  # the port opened: nothing has arrived yet
    assert sim.host_read(SimArm.BOOT_S + 0.01) == BANNER
    sim2 = SimArm(SimOptions(arm="seed-2link", boot=0x3F2A))
    sim2.pump(SimArm.BOOT_S + 0.01)
    sim2.drop_pending_output()  # the banner had arrived: dropped like any received byte
    assert sim2.host_read(1.0) == b""


def test_plain_pyserial_port_sees_the_banner_first():
    s = serial.serial_for_url("armsim://seed-2link?rate=1&boot=3F2A", timeout=1)
    try:
        assert s.readline() == BANNER
        s.write(codec.hello(0))
        assert s.readline().startswith(b"0 H armsim 2 8 16 20000 3F2A 1000:5000 ")
    finally:
        s.close()


@pytest.mark.parametrize("rate", [1, 50])
def test_backend_connects_cleanly_with_the_banner_on_the_wire(rate):
    b = ArmProtocolBackend(f"armsim://seed-2link?rate={rate}&boot=3F2A")
    info = b.open()
    try:
        assert info.firmware == "armsim" and info.boot == 0x3F2A
        b.move(1, {0: 1500})
        b.drain()
        st = b.status()
        assert st.values[0] == 1500
        assert b.stats == {"resends": 0, "naks": 0, "bad_lines": 0}
        assert not any(st.counters[k] for k in ("crc", "seq", "dup", "rej", "long"))
    finally:
        b.close()
