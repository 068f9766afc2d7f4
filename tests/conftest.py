"""Shared test helpers.

ARMCTL_REQUIRE_SIM=1 (set by .ci/run) turns a missing AVR toolchain,
simulator or firmware build into a test failure instead of a skip, so CI can
never pass by skipping the hardware-in-the-loop tests.
"""

from __future__ import annotations

import atexit
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import strategies as st

TESTS = Path(__file__).resolve().parent
TOOLS = TESTS.parent / "tools"
sys.path.insert(0, str(TOOLS))  # tools/virtual_uno.py, tools/hil_compare.py
# tests/<layer>/ (tests/README.md): a test may import helpers of another layer's test (web_helpers, a fixture)
sys.path[1:1] = [str(d) for d in sorted(TESTS.iterdir()) if d.is_dir() and any(d.glob("test_*.py"))]

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


def require(condition: bool, reason: str) -> None:
    """Skip the calling test when ``condition`` is false, or fail under ARMCTL_REQUIRE_SIM=1."""
    if condition:
        return
    if os.environ.get("ARMCTL_REQUIRE_SIM") == "1":
        pytest.fail(f"required in CI (ARMCTL_REQUIRE_SIM=1) but missing: {reason}")
    pytest.skip(reason)


@pytest.fixture(scope="session")
def firmware_hex():
    """Our firmware's .hex, built with the virtual Uno it runs on (fails in CI if either cannot be built)."""
    from virtual_uno import FIRMWARE_HEX, build_firmware, build_tools

    ok, why = build_tools()
    require(ok, f"virtual Uno does not build: {why}")
    ok, why = build_firmware()
    require(ok, f"firmware does not build: {why}")
    return FIRMWARE_HEX


@st.composite
def arm_and_pose(draw, narrowest_deg: float = 20.0):
    """A random 2- or 3-link arm with random limits (each side at least ``narrowest_deg`` from 0), and
    a pose inside them."""
    from armctl.model.arm import Arm

    n = draw(st.sampled_from([2, 3]))
    links = [draw(st.floats(0.05, 1.0)) for _ in range(n)]
    lo = [draw(st.floats(-180, -narrowest_deg)) for _ in range(n)]
    hi = [draw(st.floats(narrowest_deg, 180)) for _ in range(n)]
    arm = Arm.from_lengths(links, q_min_deg=lo, q_max_deg=hi)
    q = [draw(st.floats(a, b)) for a, b in zip(arm.q_min, arm.q_max)]
    return arm, np.array(q)


@st.composite
def base_arm_and_pose(draw, narrowest_deg: float = 20.0, base: bool | None = None, linkage: str | None = None):
    """A random arm with a rotating base and/or a parallelogram linkage (``base``/``linkage`` None: drawn),
    random limits (link angles too), shoulder offsets, and a pose inside every limit."""
    from armctl.model.arm import Arm

    has_base = draw(st.booleans()) if base is None else base
    kind = linkage or draw(st.sampled_from(["serial", "parallelogram"]))
    if not has_base and kind == "serial":
        kind = "parallelogram"  # a planar serial arm is arm_and_pose's
    k = 2 if kind == "parallelogram" else draw(st.sampled_from([2, 3]))
    links = [draw(st.floats(0.05, 1.0)) for _ in range(k)]
    lo = [draw(st.floats(-180, -narrowest_deg)) for _ in range(k)]
    hi = [draw(st.floats(narrowest_deg, 180)) for _ in range(k)]
    la = None
    if kind == "parallelogram":
        a = draw(st.floats(0, 150))
        la = [a, draw(st.floats(a + 20, 180))]
    extra = {}
    if has_base:
        lo.insert(0, draw(st.floats(-180, -narrowest_deg)))
        hi.insert(0, draw(st.floats(narrowest_deg, 180)))
        extra = {"base_offset_m": draw(st.floats(-0.1, 0.1)), "shoulder_height_m": draw(st.floats(-0.2, 0.2))}
    from hypothesis import assume

    from armctl.errors import ConfigError

    try:
        arm = Arm.from_lengths(
            links, q_min_deg=lo, q_max_deg=hi, base=has_base, linkage=kind, link_angle_deg=la, **extra
        )
    except ConfigError:  # joint limits that cannot keep the link angle: not an arm
        assume(False)
    # a pose inside every limit: the chain's joints drawn inside their box (serial angles for a
    # parallelogram's forearm, so the link angle is inside too), then checked
    from armctl.model.kinematics import joint_angles

    ch = arm.chain
    c = [draw(st.floats(a, b)) for a, b in zip(ch.q_min, ch.q_max)]
    b = draw(st.floats(arm.q_min[0], arm.q_max[0])) if has_base else None
    q = joint_angles(arm, np.array(c), b)
    assume(arm.within_limits(q))
    return arm, q


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


# Tests never touch the user's own folders: every run gets its own config and state folders (tests that
# need a fresh one per test set them again with monkeypatch).
_TEST_HOME = Path(tempfile.mkdtemp(prefix="armctl-tests-"))
os.environ["ARMCTL_CONFIG_DIR"] = str(_TEST_HOME / "config")
os.environ["ARMCTL_STATE_DIR"] = str(_TEST_HOME / "state")
atexit.register(shutil.rmtree, _TEST_HOME, ignore_errors=True)
