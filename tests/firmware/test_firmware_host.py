"""The firmware's protocol core (firmware/proto.c) built for the host and unit-tested there.

`make -C firmware test` builds firmware/test_proto.c with the host compiler
(under AddressSanitizer/UBSan when available) and runs it; this test makes
CI run it too.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from tests.helpers import require

FIRMWARE = Path(__file__).resolve().parents[2] / "firmware"


def _make_test(extra: list[str]) -> subprocess.CompletedProcess:
    return subprocess.run(
        ["make", "-s", "-C", str(FIRMWARE), "test", *extra], capture_output=True, text=True, timeout=300
    )


def test_protocol_core_unit_tests_pass_on_the_host():
    require(shutil.which("make") is not None and shutil.which("cc") is not None, "make and a C compiler")
    proc = _make_test([])
    if proc.returncode != 0 and "sanitize" in proc.stderr and "test_proto:" not in proc.stdout + proc.stderr:
        proc = _make_test(["HOST_SAN="])  # a toolchain without libasan/libubsan
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out
    assert "all" in out and "checks passed" in out, out
