"""The vendor's own Python SDK (``feetech-servo-sdk`` on PyPI, module ``scservo_sdk``), unchanged, against
our simulated bus served on a pty by ``python -m armctl.bus.sim_pty 'feetechsim://...'``.

This is the independent check that the simulator speaks the real protocol: none of armctl's encoding
is used on the client side. Under CI (ARMCTL_REQUIRE_SIM=1) a missing SDK fails instead of skipping.
"""

from __future__ import annotations

import subprocess
import sys
import time

import pytest

from tests.helpers import require

try:
    import scservo_sdk
except ImportError:  # pragma: no cover - the test extra installs it
    scservo_sdk = None

IDS = [1, 2, 3, 4, 5, 6]
# STS3215 addresses, from the vendor's memory table (not from armctl's table)
PROTECTION_TIME, TORQUE_ENABLE, ACCELERATION, GOAL_POSITION, GOAL_SPEED = 35, 40, 41, 42, 46
PRESENT_POSITION, PRESENT_SPEED, PRESENT_LOAD, PRESENT_VOLTAGE, PRESENT_TEMPERATURE, MOVING = 56, 58, 60, 62, 63, 66


@pytest.fixture
def scs():
    require(scservo_sdk is not None, "the vendor's Feetech SDK: pip install feetech-servo-sdk")
    return scservo_sdk


@pytest.fixture
def bus_on_pty(scs):
    """``open(url, protocol_end)`` serves the simulated bus on a pty and returns the SDK's (port, packet handler)."""
    procs, ports = [], []

    def open_bus(url: str, protocol_end: int = 0):
        proc = subprocess.Popen([sys.executable, "-m", "armctl.bus.sim_pty", url], stdout=subprocess.PIPE, text=True)
        procs.append(proc)
        path = proc.stdout.readline().strip()
        port = scs.PortHandler(path)
        assert port.openPort(), f"the SDK cannot open {path}"
        ports.append(port)
        return port, scs.PacketHandler(protocol_end)  # sets the SDK's global byte order

    yield open_bus
    for port in ports:
        port.closePort()
    for proc in procs:
        proc.terminate()
        proc.wait(5)


class _Steady:
    """Calls into the SDK that must succeed, made independent of the machine's load.

    The SDK waits a fixed ~34 ms for an answer and never drops stale input: on a loaded machine the
    simulator process can be scheduled later than that, and the late answer is then taken as the answer
    to the next request. So stale input is dropped before each call, and an exchange that timed out is
    repeated (3 times at most) once any late answer has had time to land and be dropped. A simulator
    that does not answer still fails; the fault tests call the SDK directly.
    """

    def __init__(self, scs, port):
        self.scs, self.port = scs, port

    def __call__(self, fn, *args):
        for attempt in range(4):
            if attempt:
                time.sleep(0.25)
            self.port.ser.reset_input_buffer()
            out = fn(*args)
            result = out if isinstance(out, int) else out[-2]  # (..., result, error) or a bare result
            if result != self.scs.COMM_RX_TIMEOUT:
                break
        return out


def _poll(fn, until, *, timeout_s: float = 10.0):
    """Call ``fn`` until ``until(result)`` holds or ``timeout_s`` passes; returns the last result."""
    end = time.monotonic() + timeout_s
    while True:
        result = fn()
        if until(result) or time.monotonic() > end:
            return result
        time.sleep(0.01)


def test_sdk_pings_every_servo(scs, bus_on_pty):
    port, ph = bus_on_pty("feetechsim://?ids=1-6")
    ok = _Steady(scs, port)
    for servo_id in IDS:
        assert ok(ph.ping, port, servo_id) == (777, scs.COMM_SUCCESS, 0)  # STS3215's model number
    assert ph.ping(port, 7)[1] == scs.COMM_RX_TIMEOUT


def test_sdk_reads_and_writes_positions(scs, bus_on_pty):
    port, ph = bus_on_pty("feetechsim://?start=100,200,300,400,500,600")
    ok = _Steady(scs, port)
    assert [ok(ph.read2ByteTxRx, port, i, PRESENT_POSITION) for i in IDS] == [
        (100 * i, scs.COMM_SUCCESS, 0) for i in IDS
    ]
    assert ok(ph.write1ByteTxRx, port, 3, TORQUE_ENABLE, 1) == (scs.COMM_SUCCESS, 0)
    assert ok(ph.write2ByteTxRx, port, 3, GOAL_SPEED, 400) == (scs.COMM_SUCCESS, 0)
    assert ok(ph.write2ByteTxRx, port, 3, GOAL_POSITION, 100) == (scs.COMM_SUCCESS, 0)
    cruise = lambda r: scs.SCS_TOHOST(r[0], 15) == -400  # noqa: E731  (moving down: the sign is bit 15)
    assert cruise(_poll(lambda: ok(ph.read2ByteTxRx, port, 3, PRESENT_SPEED), cruise))
    assert ok(ph.read1ByteTxRx, port, 3, MOVING) == (1, scs.COMM_SUCCESS, 0)
    at = _poll(lambda: ok(ph.read2ByteTxRx, port, 3, PRESENT_POSITION), lambda r: r[0] == 100)
    assert at == (100, scs.COMM_SUCCESS, 0)
    assert _poll(lambda: ok(ph.read1ByteTxRx, port, 3, MOVING), lambda r: r[0] == 0)[0] == 0


def test_sdk_sync_write_and_sync_read(scs, bus_on_pty):
    port, ph = bus_on_pty("feetechsim://?ids=1-6")
    ok = _Steady(scs, port)
    for servo_id in IDS:
        assert ok(ph.write1ByteTxRx, port, servo_id, TORQUE_ENABLE, 1) == (scs.COMM_SUCCESS, 0)
    writer = scs.GroupSyncWrite(port, ph, GOAL_POSITION, 2)
    goal = {i: 1000 + 250 * i for i in IDS}
    for servo_id, steps in goal.items():
        assert writer.addParam(servo_id, [scs.SCS_LOBYTE(steps), scs.SCS_HIBYTE(steps)])
    assert writer.txPacket() == scs.COMM_SUCCESS

    reader = scs.GroupSyncRead(port, ph, PRESENT_POSITION, 11)  # position .. moving in one go
    for servo_id in IDS:
        assert reader.addParam(servo_id)

    def read_all():
        assert ok(reader.txRxPacket) == scs.COMM_SUCCESS
        return {i: (reader.getData(i, PRESENT_POSITION, 2), reader.getData(i, MOVING, 1)) for i in IDS}

    arrived = {i: (steps, 0) for i, steps in goal.items()}  # there, and no longer moving
    assert _poll(read_all, lambda got: got == arrived) == arrived
    assert {reader.getData(i, PRESENT_VOLTAGE, 1) for i in IDS} == {74}  # 7.4 V
    assert {reader.getData(i, PRESENT_TEMPERATURE, 1) for i in IDS} == {25}


def test_sdk_reg_write_and_action(scs, bus_on_pty):
    port, ph = bus_on_pty("feetechsim://?ids=1-2")
    ok = _Steady(scs, port)
    assert ok(ph.regWriteTxRx, port, 2, ACCELERATION, 1, [17]) == (scs.COMM_SUCCESS, 0)
    assert ok(ph.read1ByteTxRx, port, 2, ACCELERATION) == (0, scs.COMM_SUCCESS, 0)
    ph.action(port, scs.BROADCAST_ID)
    assert ok(ph.read1ByteTxRx, port, 2, ACCELERATION) == (17, scs.COMM_SUCCESS, 0)


def test_sdk_scs_servos_are_big_endian(scs, bus_on_pty):
    port, ph = bus_on_pty("feetechsim://?model=scs0009&ids=1", protocol_end=1)
    ok = _Steady(scs, port)
    assert ok(ph.ping, port, 1) == (1284, scs.COMM_SUCCESS, 0)  # SCS0009's model number
    assert ok(ph.read2ByteTxRx, port, 1, PRESENT_POSITION) == (512, scs.COMM_SUCCESS, 0)  # half of 1024 steps
    ph_little = scs.PacketHandler(0)  # the same bytes read the STS way: 0x02 0x00 -> 2
    assert ok(ph_little.read2ByteTxRx, port, 1, PRESENT_POSITION) == (2, scs.COMM_SUCCESS, 0)


def test_sdk_sees_the_simulated_faults(scs, bus_on_pty):
    port, ph = bus_on_pty("feetechsim://?missing=4&garble=3&stall=2&seed=1")
    ok = _Steady(scs, port)
    assert ph.ping(port, 4)[1] == scs.COMM_RX_TIMEOUT  # a missing id
    for _ in range(5):  # a servo whose answers come corrupt
        port.ser.reset_input_buffer()
        assert ph.read2ByteTxRx(port, 3, PRESENT_POSITION)[1] == scs.COMM_RX_CORRUPT
    # a jammed servo: full load, then overload after the protection time (here 10 x 10 ms)
    assert ok(ph.write1ByteTxRx, port, 2, PROTECTION_TIME, 10) == (scs.COMM_SUCCESS, 0)
    assert ok(ph.write1ByteTxRx, port, 2, TORQUE_ENABLE, 1) == (scs.COMM_SUCCESS, 0)
    assert ok(ph.write2ByteTxRx, port, 2, GOAL_POSITION, 3000) == (scs.COMM_SUCCESS, 0)
    _, result, error = _poll(lambda: ok(ph.ping, port, 2), lambda r: r[2] != 0)
    assert result == scs.COMM_SUCCESS and ph.getRxPacketError(error) == "[RxPacketError] Overload error!"
    load, result, _ = ok(ph.read2ByteTxRx, port, 2, PRESENT_LOAD)
    assert result == scs.COMM_SUCCESS and scs.SCS_TOHOST(load, 10) == 200  # down to the protective 20 %
    assert ok(ph.read2ByteTxRx, port, 2, PRESENT_POSITION)[0] == 2048  # it never moved
    assert ok(ph.read2ByteTxRx, port, 1, PRESENT_POSITION) == (2048, scs.COMM_SUCCESS, 0)  # the others are fine
