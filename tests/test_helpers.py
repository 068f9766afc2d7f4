"""tests/helpers.py's require_module: a missing module skips locally and fails in CI (ARMCTL_REQUIRE_SIM=1), in a
test and at the top of a test module. Checked by running pytest on a scratch test file in a child process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.helpers import require_module

ROOT = Path(__file__).resolve().parents[1]
IN_A_TEST = """
from tests.helpers import require_module

def test_needs_it():
    require_module("armctl_no_such_module", "the scratch test needs it")
"""
AT_THE_TOP = """
from tests.helpers import require_module

require_module("armctl_no_such_module", "the scratch test needs it")

def test_needs_it():
    pass
"""


def _pytest(tmp_path: Path, require_sim: str | None) -> str:
    """pytest on two scratch test files (require_module in a test, and at the top of a module): its output."""
    (tmp_path / "test_in_a_test.py").write_text(IN_A_TEST)
    (tmp_path / "test_at_the_top.py").write_text(AT_THE_TOP)
    env = {k: v for k, v in os.environ.items() if k != "ARMCTL_REQUIRE_SIM"}
    env["PYTHONPATH"] = str(ROOT)
    if require_sim is not None:
        env["ARMCTL_REQUIRE_SIM"] = require_sim
    argv = [
        sys.executable,
        "-m",
        "pytest",
        "-q",
        "-rs",
        "-p",
        "no:cacheprovider",
        "--continue-on-collection-errors",
        ".",
    ]
    proc = subprocess.run(argv, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    return f"exit {proc.returncode}\n{proc.stdout}{proc.stderr}"


def test_a_missing_module_skips_locally(tmp_path):
    out = _pytest(tmp_path, None)
    assert out.startswith("exit 0\n") and "2 skipped" in out, out
    assert "does not import (No module named 'armctl_no_such_module'): the scratch test needs it" in out, out


def test_a_missing_module_fails_under_armctl_require_sim(tmp_path):
    out = _pytest(tmp_path, "1")
    assert not out.startswith(("exit 0\n", "exit 5\n")), out
    assert "1 failed" in out and "1 error" in out and "skipped" not in out, out  # the test, and the module
    assert out.count("required in CI (ARMCTL_REQUIRE_SIM=1) but missing: armctl_no_such_module") == 2, out


def test_a_module_that_imports_is_returned():
    assert require_module("json", "a standard module") is json
