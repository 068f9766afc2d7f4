"""Shared test helpers.

ARMCTL_REQUIRE_SIM=1 (set by .ci/run) turns a missing AVR toolchain,
simulator or firmware build into a test failure instead of a skip, so CI can
never pass by skipping the hardware-in-the-loop tests.
"""

from __future__ import annotations

import atexit
import os
import shutil
import sys
import tempfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import strategies as st

TOOLS = Path(__file__).resolve().parents[1] / "tools"
sys.path.insert(0, str(TOOLS))  # tools/virtual_uno.py, tools/hil_compare.py


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
    from armctl.arm import Arm

    n = draw(st.sampled_from([2, 3]))
    links = [draw(st.floats(0.05, 1.0)) for _ in range(n)]
    lo = [draw(st.floats(-180, -narrowest_deg)) for _ in range(n)]
    hi = [draw(st.floats(narrowest_deg, 180)) for _ in range(n)]
    arm = Arm.from_lengths(links, q_min_deg=lo, q_max_deg=hi)
    q = [draw(st.floats(a, b)) for a, b in zip(arm.q_min, arm.q_max)]
    return arm, np.array(q)


# Tests never touch the user's own folders: every run gets its own config and state folders (tests that
# need a fresh one per test set them again with monkeypatch).
_TEST_HOME = Path(tempfile.mkdtemp(prefix="armctl-tests-"))
os.environ["ARMCTL_CONFIG_DIR"] = str(_TEST_HOME / "config")
os.environ["ARMCTL_STATE_DIR"] = str(_TEST_HOME / "state")
atexit.register(shutil.rmtree, _TEST_HOME, ignore_errors=True)
