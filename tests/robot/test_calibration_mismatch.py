"""A LeRobot calibration that does not match the servos is refused before anything moves (exit 4), naming the servo
and both values: a file edited after calibrating (a homing offset other than the one the servo holds), and two
servos' ids swapped. On the simulated bus as on a real one: the simulated servos keep the EEPROM written to them
(the state file), so a file changed since no longer matches them."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "tests" / "lerobot" / "so101_follower" / "erics_first_so101.json"


def _armctl(tmp_path, *args):
    env = dict(os.environ, ARMCTL_STATE_DIR=str(tmp_path / "state"), PYTHONPATH=str(ROOT))
    return subprocess.run(
        [sys.executable, "-m", "armctl", "--arm", "so101", *args], env=env, capture_output=True, text=True, timeout=120
    )


def _joints(out: str) -> str:
    return re.search(r"joints ([-\d. ]+) deg", out).group(1)


@pytest.fixture
def calibrated(tmp_path):
    """The sample file, after a first run on a new simulated bus (its servos now hold the file's offsets)."""
    cal = tmp_path / "my_arm.json"
    cal.write_text(SAMPLE.read_text())
    r = _armctl(tmp_path, "--calibration", str(cal), "home")
    assert r.returncode == 0, r.stderr
    return cal


def _edited(tmp_path, cal, change) -> Path:
    data = json.loads(cal.read_text())
    change(data)
    out = tmp_path / "edited.json"
    out.write_text(json.dumps(data, indent=4))
    return out


def test_a_homing_offset_edited_after_calibrating_is_refused_naming_both_values(tmp_path, calibrated):
    before = _joints(_armctl(tmp_path, "--calibration", str(calibrated), "status").stdout)
    want = json.loads(calibrated.read_text())["elbow_flex"]["homing_offset"]
    edited = _edited(tmp_path, calibrated, lambda d: d["elbow_flex"].update(homing_offset=want + 227))  # 20 deg
    r = _armctl(tmp_path, "--calibration", str(edited), "home")
    assert r.returncode == 4, r.stderr
    line = r.stderr.strip()
    assert len(line.splitlines()) == 1 and "Traceback" not in line
    assert "servo 3 (elbow_flex)" in line and f"{want:+d}" in line and f"{want + 227:+d}" in line, line
    assert "20.0 deg off" in line
    after = _joints(_armctl(tmp_path, "--calibration", str(calibrated), "status").stdout)
    assert after == before, "the refused run moved the arm"


def test_swapped_ids_are_named_as_swapped(tmp_path, calibrated):
    def swap(d):
        d["shoulder_lift"]["id"], d["elbow_flex"]["id"] = d["elbow_flex"]["id"], d["shoulder_lift"]["id"]

    edited = _edited(tmp_path, calibrated, swap)
    r = _armctl(tmp_path, "--calibration", str(edited), "home")
    assert r.returncode == 4, r.stderr
    line = r.stderr.strip()
    assert len(line.splitlines()) == 1
    assert "look swapped" in line and "shoulder_lift" in line and "elbow_flex" in line, line


def test_the_python_api_refuses_it_too(tmp_path, calibrated, monkeypatch):
    import armctl
    from armctl.errors import LinkError

    want = json.loads(calibrated.read_text())["wrist_flex"]["homing_offset"]
    moved = want + (100 if want < 0 else -100)  # 8.8 deg, inside -2047..2047
    edited = _edited(tmp_path, calibrated, lambda d: d["wrist_flex"].update(homing_offset=moved))
    with pytest.raises(LinkError, match=r"servo 4 \(wrist_flex\) carries homing offset"):
        armctl.connect("so101", calibration=str(edited))
