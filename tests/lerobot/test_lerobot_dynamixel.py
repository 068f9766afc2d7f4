"""LeRobot's own ``DynamixelMotorsBus`` (its Koch follower, over ROBOTIS's ``dynamixel_sdk``) connects to, reads,
calibrates and moves the simulated Dynamixel bus (``dynamixelsim://`` on a pty), in LeRobot's virtualenv.

The virtualenv is shared and not ours to install into: ROBOTIS's SDK (pure Python) is lent to it from this
Python's installation through a folder on PYTHONPATH holding only that package.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.helpers import require_module
from tests.lerobot.conftest import lerobot_env

HERE = Path(__file__).resolve().parent
KOCH = "ids=1-6&baud=1000000&model=xl330-m288,1:xl430-w250,2:xl430-w250"  # LeRobot's Koch follower


def _hand(path: Path) -> Path:
    """A hand turning the joints LeRobot records ranges for (2, 3, 4, 6) back and forth, for a minute."""
    rows = ["t_s,id,steps"]
    for k in range(121):
        for servo_id, (lo, hi) in {2: (1200, 2900), 3: (1000, 3100), 4: (1500, 2600), 6: (1900, 2500)}.items():
            rows.append(f"{k * 0.5:.1f},{servo_id},{lo if k % 2 else hi}")
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    return path


def test_lerobot_koch_follower_connects_calibrates_and_moves(venv_bin, tmp_path):
    sdk = require_module("dynamixel_sdk", "LeRobot's Dynamixel bus runs over it: pip install dynamixel-sdk")
    lend = tmp_path / "lend"
    lend.mkdir()
    (lend / "dynamixel_sdk").symlink_to(Path(sdk.__file__).parent)
    url = f"dynamixelsim://?{KOCH}&hand={_hand(tmp_path / 'hand.csv')}"
    server = subprocess.Popen([sys.executable, "-m", "armctl.bus.sim_pty", url], stdout=subprocess.PIPE, text=True)
    try:
        pty = server.stdout.readline().strip()
        env = lerobot_env(tmp_path / "hf")
        env["PYTHONPATH"] = f"{lend}:{env['PYTHONPATH']}"
        run = subprocess.run(
            [venv_bin / "python", HERE / "koch_dynamixel_calibrate.py", pty, tmp_path / "cal", "2.5"],
            capture_output=True,
            text=True,
            timeout=240,
            env=env,
        )
    finally:
        server.terminate()
        server.wait(5)
    assert run.returncode == 0, run.stderr[-2000:]
    seen = json.loads(run.stdout.split("RESULT ", 1)[1])
    assert seen["models"] == {
        "shoulder_pan": 1060,
        "shoulder_lift": 1060,
        "elbow_flex": 1200,
        "wrist_flex": 1200,
        "wrist_roll": 1200,
        "gripper": 1200,
    }
    cal = seen["calibration"]
    assert seen["calibrated"] and seen["file"]["elbow_flex"]["range_min"] == cal["elbow_flex"]["range_min"]
    for motor, (lo, hi) in {"shoulder_lift": (1200, 2900), "elbow_flex": (1000, 3100)}.items():
        assert cal[motor]["range_min"] <= lo + 150 and cal[motor]["range_max"] >= hi - 150, (motor, cal[motor])
    assert (cal["shoulder_pan"]["range_min"], cal["shoulder_pan"]["range_max"]) == (0, 4095)
    # half-turn homings: the pan and roll joints, which the hand does not turn, read mid-range (2047)
    assert seen["raw"]["shoulder_pan"] == 2047 and seen["raw"]["wrist_roll"] == 2047
    assert seen["modes"] == {m: (5 if m == "gripper" else 4) for m in seen["modes"]}
    assert abs(seen["after_move"] - 20.0) < 2.0
