"""Shared test helpers.

ARMCTL_REQUIRE_SIM=1 (set by .ci/run) turns a missing AVR toolchain,
simulator or firmware build into a test failure instead of a skip, so CI can
never pass by skipping the hardware-in-the-loop tests.
"""

from __future__ import annotations

import os

import pytest


def require(condition: bool, reason: str) -> None:
    """Skip the calling test when ``condition`` is false, or fail under ARMCTL_REQUIRE_SIM=1."""
    if condition:
        return
    if os.environ.get("ARMCTL_REQUIRE_SIM") == "1":
        pytest.fail(f"required in CI (ARMCTL_REQUIRE_SIM=1) but missing: {reason}")
    pytest.skip(reason)
