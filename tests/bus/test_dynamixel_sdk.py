"""ROBOTIS's own Python SDK (``dynamixel-sdk`` on PyPI, module ``dynamixel_sdk``), unchanged, against our simulated
Dynamixel bus served on a pty by ``python -m armctl.bus.sim_pty 'dynamixelsim://...'``.

The independent check that the simulator speaks Protocol 2.0 as the servos do: none of armctl's encoding is used
on the client side. Under CI (ARMCTL_REQUIRE_SIM=1) a missing SDK fails instead of skipping.
"""

from __future__ import annotations

import subprocess
import sys
import time

import pytest

from tests.bus.test_feetech_sdk import _poll, _Steady
from tests.helpers import require_module

# X-series addresses, from the e-manual (not from armctl's tables)
MAX_POSITION_LIMIT, TORQUE_ENABLE, LED, STATUS_RETURN_LEVEL, HARDWARE_ERROR = 48, 64, 65, 68, 70
BAUD_RATE, POSITION_P_GAIN, PROFILE_VELOCITY, GOAL_POSITION, MOVING = 8, 84, 112, 116, 122
PRESENT_CURRENT, PRESENT_POSITION, PRESENT_VOLTAGE, PRESENT_TEMPERATURE = 126, 132, 144, 146


@pytest.fixture
def dxl():
    return require_module("dynamixel_sdk", "ROBOTIS's SDK checks the simulator: pip install dynamixel-sdk")


@pytest.fixture
def bus_on_pty(dxl):
    """``open(url)`` serves the simulated bus on a pty and returns the SDK's (port, packet handler, steady caller)."""
    procs, ports = [], []

    def open_bus(url: str):
        proc = subprocess.Popen([sys.executable, "-m", "armctl.bus.sim_pty", url], stdout=subprocess.PIPE, text=True)
        procs.append(proc)
        path = proc.stdout.readline().strip()
        port = dxl.PortHandler(path)
        assert port.openPort() and port.setBaudRate(57600), f"the SDK cannot open {path}"
        ports.append(port)
        return port, dxl.PacketHandler(2.0), _Steady(dxl, port)

    yield open_bus
    for port in ports:
        port.closePort()
    for proc in procs:
        proc.terminate()
        proc.wait(5)


def test_ping_gives_each_models_number(dxl, bus_on_pty):
    port, ph, ok = bus_on_pty("dynamixelsim://?ids=1-4&model=xl430,2:xl330-m288,3:xm430-w350,4:xm540")
    numbers = {1: 1060, 2: 1200, 3: 1020, 4: 1120}
    for servo_id, number in numbers.items():
        assert ok(ph.ping, port, servo_id) == (number, dxl.COMM_SUCCESS, 0)
    assert ph.ping(port, 9)[1] == dxl.COMM_RX_TIMEOUT  # nobody has id 9
    found, result = ph.broadcastPing(port)
    assert result == dxl.COMM_SUCCESS and {i: v[0] for i, v in found.items()} == numbers


def test_read_and_write_each_size(dxl, bus_on_pty):
    port, ph, ok = bus_on_pty("dynamixelsim://?ids=1&start=1234")
    assert ok(ph.write1ByteTxRx, port, 1, LED, 1) == (dxl.COMM_SUCCESS, 0)
    assert ok(ph.read1ByteTxRx, port, 1, LED) == (1, dxl.COMM_SUCCESS, 0)
    assert ok(ph.write2ByteTxRx, port, 1, POSITION_P_GAIN, 900) == (dxl.COMM_SUCCESS, 0)
    assert ok(ph.read2ByteTxRx, port, 1, POSITION_P_GAIN) == (900, dxl.COMM_SUCCESS, 0)
    assert ok(ph.write4ByteTxRx, port, 1, PROFILE_VELOCITY, 100) == (dxl.COMM_SUCCESS, 0)
    assert ok(ph.read4ByteTxRx, port, 1, PROFILE_VELOCITY) == (100, dxl.COMM_SUCCESS, 0)
    assert ok(ph.read4ByteTxRx, port, 1, PRESENT_POSITION) == (1234, dxl.COMM_SUCCESS, 0)
    data, result, error = ok(ph.readTxRx, port, 1, 0, 3)  # model number and firmware in one read
    assert (result, error, data[:2]) == (dxl.COMM_SUCCESS, 0, [1060 & 0xFF, 1060 >> 8])


def test_sync_write_moves_and_sync_read_reads(dxl, bus_on_pty):
    port, ph, ok = bus_on_pty("dynamixelsim://?ids=1-3")
    for servo_id in (1, 2, 3):
        assert ok(ph.write1ByteTxRx, port, servo_id, TORQUE_ENABLE, 1) == (dxl.COMM_SUCCESS, 0)
    writer = dxl.GroupSyncWrite(port, ph, GOAL_POSITION, 4)
    goal = {1: 1000, 2: 2500, 3: 3000}
    for servo_id, steps in goal.items():
        assert writer.addParam(servo_id, list(steps.to_bytes(4, "little")))
    assert writer.txPacket() == dxl.COMM_SUCCESS
    reader = dxl.GroupSyncRead(port, ph, PRESENT_POSITION, 4)
    for servo_id in goal:
        assert reader.addParam(servo_id)

    def read_all():
        assert ok(reader.txRxPacket) == dxl.COMM_SUCCESS
        return {i: reader.getData(i, PRESENT_POSITION, 4) for i in goal}

    assert _poll(read_all, lambda got: got == goal) == goal
    assert _poll(lambda: ok(ph.read1ByteTxRx, port, 2, MOVING), lambda r: r[0] == 0)[0] == 0


def test_bulk_read_reads_other_addresses_of_each_servo(dxl, bus_on_pty):
    port, ph, ok = bus_on_pty("dynamixelsim://?ids=1-3&start=100,200,300&volts=11.1&temp=31")
    reader = dxl.GroupBulkRead(port, ph)
    assert reader.addParam(1, PRESENT_POSITION, 4)
    assert reader.addParam(2, PRESENT_VOLTAGE, 2)
    assert reader.addParam(3, PRESENT_TEMPERATURE, 1)
    assert ok(reader.txRxPacket) == dxl.COMM_SUCCESS
    assert reader.getData(1, PRESENT_POSITION, 4) == 100
    assert reader.getData(2, PRESENT_VOLTAGE, 2) == 111
    assert reader.getData(3, PRESENT_TEMPERATURE, 1) == 31


def test_a_corrupted_answer_and_a_lost_one(dxl, bus_on_pty):
    port, ph, ok = bus_on_pty("dynamixelsim://?ids=1,2&garble=2")
    assert ok(ph.ping, port, 1)[1] == dxl.COMM_SUCCESS
    assert ph.ping(port, 2)[1] == dxl.COMM_RX_CORRUPT  # a bit flipped: the CRC does not match
    port, ph, ok = bus_on_pty("dynamixelsim://?ids=1&drop=1")
    assert ph.ping(port, 1)[1] == dxl.COMM_RX_TIMEOUT  # lost on the way


def test_servos_sharing_an_id_answer_as_garbage(dxl, bus_on_pty):
    port, ph, ok = bus_on_pty("dynamixelsim://?ids=1,1,1")  # three factory-new servos
    assert ph.ping(port, 1)[1] == dxl.COMM_RX_CORRUPT


def test_eeprom_is_locked_while_the_torque_is_on(dxl, bus_on_pty):
    port, ph, ok = bus_on_pty("dynamixelsim://?ids=1")
    assert ok(ph.write1ByteTxRx, port, 1, TORQUE_ENABLE, 1) == (dxl.COMM_SUCCESS, 0)
    assert ok(ph.write4ByteTxRx, port, 1, MAX_POSITION_LIMIT, 3000) == (dxl.COMM_SUCCESS, 7)  # access error
    assert ph.getRxPacketError(7).endswith("not available to target address!")
    assert ok(ph.read4ByteTxRx, port, 1, MAX_POSITION_LIMIT)[0] == 4095
    assert ok(ph.write1ByteTxRx, port, 1, TORQUE_ENABLE, 0) == (dxl.COMM_SUCCESS, 0)
    assert ok(ph.write4ByteTxRx, port, 1, MAX_POSITION_LIMIT, 3000) == (dxl.COMM_SUCCESS, 0)
    assert ok(ph.read4ByteTxRx, port, 1, MAX_POSITION_LIMIT)[0] == 3000
    assert ok(ph.write1ByteTxRx, port, 1, TORQUE_ENABLE, 1) == (dxl.COMM_SUCCESS, 0)
    assert ok(ph.write4ByteTxRx, port, 1, GOAL_POSITION, 3500) == (dxl.COMM_SUCCESS, 6)  # past the limit


def test_a_baud_change_takes_effect_after_the_answer(dxl, bus_on_pty):
    port, ph, ok = bus_on_pty("dynamixelsim://?ids=1,2")
    assert ok(ph.write1ByteTxRx, port, 1, BAUD_RATE, 3) == (dxl.COMM_SUCCESS, 0)  # answered at 57600
    assert ph.ping(port, 1)[1] == dxl.COMM_RX_TIMEOUT  # now at 1 Mbaud
    assert ok(ph.ping, port, 2)[1] == dxl.COMM_SUCCESS
    assert port.setBaudRate(1_000_000)
    assert ok(ph.ping, port, 1) == (1060, dxl.COMM_SUCCESS, 0)
    assert ph.ping(port, 2)[1] == dxl.COMM_RX_TIMEOUT


def test_status_return_level_one_answers_reads_only(dxl, bus_on_pty):
    port, ph, ok = bus_on_pty("dynamixelsim://?ids=1")
    assert ok(ph.write1ByteTxRx, port, 1, STATUS_RETURN_LEVEL, 1) == (dxl.COMM_SUCCESS, 0)
    assert ph.write1ByteTxRx(port, 1, LED, 1)[0] == dxl.COMM_RX_TIMEOUT  # written, not answered
    assert ok(ph.read1ByteTxRx, port, 1, LED) == (1, dxl.COMM_SUCCESS, 0)


def test_an_overload_raises_the_alert_and_a_reboot_clears_it(dxl, bus_on_pty):
    port, ph, ok = bus_on_pty("dynamixelsim://?ids=1&model=xm430&stall=1")
    assert ok(ph.write1ByteTxRx, port, 1, TORQUE_ENABLE, 1) == (dxl.COMM_SUCCESS, 0)
    assert ok(ph.write4ByteTxRx, port, 1, GOAL_POSITION, 3000) == (dxl.COMM_SUCCESS, 0)
    alert = _poll(lambda: ok(ph.ping, port, 1), lambda r: r[2] & 0x80, timeout_s=5.0)
    assert alert == (1020, dxl.COMM_SUCCESS, 0x80)
    assert ok(ph.read1ByteTxRx, port, 1, HARDWARE_ERROR) == (0x20, dxl.COMM_SUCCESS, 0x80)  # overload
    assert ok(ph.read1ByteTxRx, port, 1, TORQUE_ENABLE)[0] == 0  # shut down (shutdown has the overload bit)
    assert ok(ph.reboot, port, 1) == (dxl.COMM_SUCCESS, 0x80)  # answered, then rebooted
    time.sleep(0.1)
    assert ok(ph.read1ByteTxRx, port, 1, HARDWARE_ERROR) == (0, dxl.COMM_SUCCESS, 0)
