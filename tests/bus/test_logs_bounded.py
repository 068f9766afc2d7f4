"""What a backend or a simulator keeps of a long session is bounded (issue 34: a long follow runs flat).

A follow writes every frame for as long as it runs: the Firmata backend's record of its servo writes and the
simulators' logs (Feetech packets, PCA9685 write transactions and output changes) are rings of a documented
size, the newest kept. The SO-101 bus and the board (``armsim.PULSES_KEPT``) are measured over a whole long
follow in tests/robot/test_follow_memory.py.
"""

from __future__ import annotations

from armctl.bus import pca9685_chip as hw
from armctl.bus.feetech.protocol import PING, encode_packet
from armctl.bus.firmata import WRITES_KEPT, FirmataBackend
from armctl.sim import feetechsim, pca9685_sim
from armctl.sim.feetechsim import FeetechSim, FeetechSimOptions
from armctl.sim.pca9685_sim import SimI2CBus, parse_url


class Clock:
    def __init__(self):
        self.t = 0.0

    def __call__(self):
        return self.t


class _Board:
    """pymata4 as far as servo writes go (an Uno's 20 pins); keeps nothing."""

    digital_pins = [object()] * 20

    def __init__(self, **kw):
        pass

    def set_pin_mode_servo(self, pin, lo, hi):
        pass

    def servo_write(self, pin, value):
        pass

    def _stop_threads(self):
        pass

    serial_port = type("Port", (), {"close": lambda self: None})()


def test_firmata_keeps_its_last_servo_writes_only():
    clock = [0.0]

    def sleep(dt):
        clock[0] += dt

    pins = dict.fromkeys((9, 10), (600, 2400))
    be = FirmataBackend("/dev/fake", pins_range_us=pins, pymata_factory=_Board, clock=lambda: clock[0], sleep=sleep)
    with be:
        for k in range(WRITES_KEPT):  # two pins a frame: twice the ring
            be.move(1, {9: 1000.0 + k % 500, 10: 2000.0 - k % 500})
        be.drain()
    assert len(be.writes) == WRITES_KEPT
    assert be.writes[-1][1:] == (10, 2000 - (WRITES_KEPT - 1) % 500)  # the newest kept


def test_the_feetech_simulator_keeps_its_last_packets_only():
    sim = FeetechSim(FeetechSimOptions(ids=[1]))
    ping = encode_packet(1, PING)
    t = 0.0
    for _ in range(feetechsim.LOG_PACKETS + 500):
        t += 0.001
        sim.host_write(ping, t)
        sim.host_read(t + 0.0005)
    assert len(sim.log) == feetechsim.LOG_PACKETS
    assert sim.log[-1][1].code == PING and sim.log[-1][0] > t - 0.001  # the newest kept


def test_the_pca9685_simulator_keeps_its_last_writes_and_output_changes_only():
    clock = Clock()
    bus = SimI2CBus(parse_url("pca9685sim://"), clock=clock)
    bus.write(0x40, bytes((hw.MODE1, hw.AI)))
    for k in range(pca9685_sim.LOG_KEPT + 500):  # one output change a write: past both rings
        clock.t += 0.001
        off = 200 + k % 200
        bus.write(0x40, bytes((hw.channel_reg(0), 0, 0, off & 0xFF, off >> 8)))
    chip = bus.chips[0x40]
    assert len(chip.writes) == pca9685_sim.WRITES_KEPT and len(bus.log) == pca9685_sim.LOG_KEPT
    assert bus.log[-1][2] == 0 and chip.writes[-1][1][0] == hw.channel_reg(0)  # the newest kept
