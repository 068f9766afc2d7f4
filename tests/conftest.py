"""Fixtures for every test (tests/README.md): each test's own state and config folders, the firmware build, a
simulated bus on a pty. A folder's own fixtures are in its conftest.py; plain helpers in tests/helpers.py.
"""

from __future__ import annotations

import atexit
import os
import shutil
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

import pytest

from tests.helpers import require

# What a test needs, by where it is (tests/README.md, "Markers"); registered in pyproject.toml
BROWSER = {
    "test_web_browser.py",
    "test_web_browser_base.py",
    "test_web_browser_edges.py",
    "test_web_run_control.py",
    "test_web_zones.py",
    "test_draw_browser.py",
    "test_web_record.py",
}


def pytest_collection_modifyitems(config, items):
    for item in items:
        path = Path(str(item.fspath))
        if path.parent.name == "firmware":
            item.add_marker(pytest.mark.firmware)
            if path.name.startswith("test_hil_"):
                item.add_marker(pytest.mark.hil)
        if path.name in BROWSER:
            item.add_marker(pytest.mark.browser)
        if path.name == "test_ros.py":
            item.add_marker(pytest.mark.ros)
        if path.name in ("test_lerobot_cli.py", "test_lerobot_rollout.py"):
            item.add_marker(pytest.mark.lerobot)


@pytest.fixture(autouse=True)
def user_folders(tmp_path, monkeypatch):
    """Each test its own state and config folders (``tmp_path / "state"``, ``tmp_path / "config"``): journals,
    locks, simulator state or presets left by another test cannot change what it sees. A test that needs
    another folder sets ARMCTL_STATE_DIR/ARMCTL_CONFIG_DIR itself; returns the state folder."""
    monkeypatch.setenv("ARMCTL_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.setenv("ARMCTL_CONFIG_DIR", str(tmp_path / "config"))
    return tmp_path / "state"


@pytest.fixture(scope="session")
def firmware_hex():
    """Our firmware's .hex, built with the virtual Uno it runs on (fails in CI if either cannot be built)."""
    from tools.virtual_uno import FIRMWARE_HEX, build_firmware, build_tools

    ok, why = build_tools()
    require(ok, f"virtual Uno does not build: {why}")
    ok, why = build_firmware()
    require(ok, f"firmware does not build: {why}")
    return FIRMWARE_HEX


@pytest.fixture(scope="session")
def firmata_hex():
    """StandardFirmata's .hex (tools/fetch_firmata.sh), with the virtual Uno built to run it."""
    from tools.virtual_uno import build_tools, fetch_firmata

    ok, why = build_tools()
    require(ok, f"virtual Uno does not build: {why}")
    path, why = fetch_firmata()
    require(path is not None, why)
    return path


@pytest.fixture
def bus():
    """The simulated feetech bus (servos 1, 2, 3, 6 at a hidden mapping, tests/hand_bus.py) on a pty, served from
    this process: the test turns its servos by hand."""
    from armctl.sim.pty import PtySim
    from tests.hand_bus import serve_until_stopped, true_steps

    start = ",".join(str(round(true_steps(i, a))) for i, a in ((1, 45), (2, -90), (3, -45), (6, 60)))
    pty = PtySim(f"feetechsim://?ids=1,2,3,6&start={start}")
    stop = threading.Event()
    thread = threading.Thread(target=serve_until_stopped, args=(pty, stop), daemon=True)
    thread.start()
    yield pty
    stop.set()
    thread.join(timeout=5)
    pty.close()


@pytest.fixture
def pty_bus():
    """``serve(url)``: a simulated bus (``python -m armctl.bus.sim_pty URL``) on a pty; returns its path. Stopped
    after the test."""
    procs = []

    def serve(url: str) -> str:
        proc = subprocess.Popen([sys.executable, "-m", "armctl.bus.sim_pty", url], stdout=subprocess.PIPE, text=True)
        procs.append(proc)
        return proc.stdout.readline().strip()

    yield serve
    for proc in procs:
        proc.terminate()
        proc.wait(5)


# Tests never touch the user's own folders: every run gets its own config and state folders, for what runs
# outside a test (session and module fixtures); each test gets fresh ones (user_folders).
_TEST_HOME = Path(tempfile.mkdtemp(prefix="armctl-tests-"))
os.environ["ARMCTL_CONFIG_DIR"] = str(_TEST_HOME / "config")
os.environ["ARMCTL_STATE_DIR"] = str(_TEST_HOME / "state")
atexit.register(shutil.rmtree, _TEST_HOME, ignore_errors=True)
