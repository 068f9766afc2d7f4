"""The LeRobot virtualenv the tests here run LeRobot's commands with (``venv_bin``), and its environment."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from tests.helpers import require

ROOT = Path(__file__).resolve().parents[2]
PLUGINS = [ROOT / "plugins" / "lerobot_robot_armctl", ROOT / "plugins" / "lerobot_teleoperator_armctl"]


def lerobot_python() -> Path:
    return Path(os.environ.get("ARMCTL_LEROBOT_PYTHON") or ROOT / ".cache" / "lerobot-venv" / "bin" / "python")


@pytest.fixture(scope="module")
def venv_bin() -> Path:
    py = lerobot_python()
    require(py.exists(), f"no LeRobot virtualenv at {py} (bash .ci/run makes it; or set ARMCTL_LEROBOT_PYTHON)")
    probe = subprocess.run(
        [
            py,
            "-c",
            "import lerobot, lerobot_robot_armctl, lerobot_teleoperator_armctl, armctl; print(lerobot.__file__)",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        env=lerobot_env(),
    )
    assert probe.returncode == 0, f"{py} cannot import LeRobot and the plugins: {probe.stderr.strip()[-400:]}"
    return py.parent


def lerobot_env(hf_home: Path | None = None) -> dict:
    env = dict(os.environ)
    # this tree's armctl and plugins in every process (the venv may have others installed editable)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), *map(str, PLUGINS), *filter(None, [env.get("PYTHONPATH")])])
    env["HF_HUB_OFFLINE"] = "1"
    env.pop("DISPLAY", None)
    if hf_home is not None:
        env["HF_HOME"] = str(hf_home)
    return env
