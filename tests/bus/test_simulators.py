"""The simulator table (armctl.bus.simulators) and the line between the host side (armctl.bus) and the
simulators (armctl.sim): the bus imports nothing of the arm model or the simulators."""

from __future__ import annotations

import subprocess
import sys
import types

import pytest
import serial

from armctl.bus import simulators
from armctl.bus.backend import backend_class, open_port
from armctl.errors import BadInputError

HOST_SIDE = [
    "armctl.bus.backend",
    "armctl.bus.armproto.backend",
    "armctl.bus.feetech.client",
    "armctl.bus.feetech.backend",
    "armctl.bus.firmata",
    "armctl.bus.pca9685.backend",
    "armctl.bus.probe",
    "armctl.bus.simulators",
]


def test_the_bus_imports_nothing_of_the_arm_model_or_the_simulators():
    code = (
        f"import sys\nfor m in {HOST_SIDE!r}: __import__(m)\n"
        "print(sorted(m for m in sys.modules if m.split('.')[:2] in "
        "[['armctl', p] for p in ('model', 'ik', 'motion', 'calibration', 'sim', 'robot')]))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_every_simulator_scheme_is_in_the_one_table():
    assert set(simulators.SIMULATORS) == {"armsim", "feetechsim", "dynamixelsim", "pca9685sim"}
    assert simulators.SIMULATOR_UNITS == {
        "armsim": "us",
        "feetechsim": "steps",
        "dynamixelsim": "steps",
        "pca9685sim": "us",
    }
    for name in ("armctl", "feetech", "pca9685"):
        scheme = backend_class(name).simulator
        assert scheme in simulators.SIMULATORS and simulators.SIMULATOR_UNITS[scheme] == backend_class(name).servo_unit


def test_serial_for_url_still_opens_the_simulators():
    port = serial.serial_for_url("armsim://?rate=20", timeout=1.0)
    try:
        assert port.readline().startswith(b"- ! BOOT armsim")
    finally:
        port.close()


def test_a_bad_simulator_url_is_bad_input():
    with pytest.raises(BadInputError, match="unknown armsim option 'bogus'"):
        open_port("armsim://?bogus=1", baudrate=115200)
    assert issubclass(simulators.BadSimURL, serial.SerialException) and issubclass(simulators.BadSimURL, ValueError)


def test_a_registered_simulator_opens_through_open_port(monkeypatch):
    opened = []
    module = types.ModuleType("fake_simulator")
    module.open_simulator = lambda url, **options: opened.append((url, options)) or "port"
    module.simulator_url = lambda arm, cal_path, state_path: f"fakesim://?state={state_path}"
    monkeypatch.setitem(sys.modules, "fake_simulator", module)
    monkeypatch.setattr(simulators, "SIMULATORS", dict(simulators.SIMULATORS))
    monkeypatch.setattr(simulators, "SIMULATOR_UNITS", dict(simulators.SIMULATOR_UNITS))
    simulators.register_simulator("fakesim", "fake_simulator", unit="us")
    assert open_port("fakesim://?x=1", baudrate=9600) == "port"
    assert opened == [("fakesim://?x=1", {"baudrate": 9600, "timeout": 0.0, "write_timeout": 2.0, "exclusive": True})]
    assert simulators.simulator_url("fakesim", None, None, "s.json") == "fakesim://?state=s.json"
    assert simulators.simulator_url("nosuch", None, None, "s.json") is None
