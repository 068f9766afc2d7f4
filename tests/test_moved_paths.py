"""The module paths from before the package tree (0.3) still import, as the very modules at the new paths."""

from __future__ import annotations

import subprocess
import sys

from armctl.core.lazy import MOVED

CHECK = """
import importlib, sys
from armctl.core.lazy import MOVED
bad = []
for old, new in MOVED.items():
    a = importlib.import_module(old)
    b = importlib.import_module(new)
    if a is not b or b.__spec__.name != new or sys.modules[old] is not b:
        bad.append((old, new, a.__spec__.name))
print(bad)
"""


def test_every_old_path_is_the_new_module_in_a_fresh_interpreter():
    r = subprocess.run([sys.executable, "-c", CHECK], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and r.stdout.strip() == "[]", r.stdout + r.stderr


def test_old_imports_from_the_readme_of_0_2_still_work():
    code = (
        "from armctl.arm import load_arm; from armctl.kinematics import tool_point; "
        "from armctl.workspace import nearest_reachable; from armctl.draw import load_drawing, plan_drawing; "
        "from armctl.limits import set_limit; from armctl.calibration import Calibration, load_calibration; "
        "from armctl.robot import Robot, connect; from armctl.bus.feetech import FeetechBus; "
        "from armctl.dataset import DatasetWriter; print(load_arm('mearm').name)"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and r.stdout.strip() == "mearm", r.stderr


def test_every_moved_module_exists_at_its_new_path():
    import importlib.util

    missing = [new for new in MOVED.values() if importlib.util.find_spec(new) is None]
    assert not missing, missing
