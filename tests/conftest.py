"""Shared test helpers.

ARMCTL_REQUIRE_SIM=1 (set by .ci/run) turns a missing AVR toolchain,
simulator or firmware build into a test failure instead of a skip, so CI can
never pass by skipping the hardware-in-the-loop tests.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

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
