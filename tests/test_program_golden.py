"""Golden test: the planned output of a small program must not change unnoticed.

A change in planning that moves any sample by more than 1e-6 deg (or 1e-7 m)
fails here; if the change is intended, regenerate the golden file with
``ARMCTL_UPDATE_GOLDEN=1 pytest tests/test_program_golden.py`` and review the diff.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest

from armctl.cli import main

GOLDEN = Path(__file__).with_name("golden")
PROGRAM = GOLDEN / "small_program.yaml"
EXPECTED = GOLDEN / "small_program.json"


def planned(capsys) -> dict:
    code = main(["--arm", "seed-3link", "plan", str(PROGRAM), "--json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    doc = json.loads(out)
    doc["program"] = PROGRAM.name  # not the absolute path of this checkout
    return doc


def test_small_program_matches_golden(capsys):
    doc = planned(capsys)
    if os.environ.get("ARMCTL_UPDATE_GOLDEN") == "1":
        EXPECTED.write_text(json.dumps(doc, indent=1) + "\n")
        pytest.skip("golden file rewritten")
    want = json.loads(EXPECTED.read_text())
    assert doc["steps"] == want["steps"]
    assert doc["period_s"] == want["period_s"] and doc["joint_names"] == want["joint_names"]
    assert len(doc["samples"]) == len(want["samples"])
    for key, atol in (("t_s", 1e-9), ("q_deg", 1e-6), ("tool_m", 1e-7), ("gripper_deg", 1e-6), ("step", 0)):
        got = np.array([s[key] for s in doc["samples"]], dtype=float)
        exp = np.array([s[key] for s in want["samples"]], dtype=float)
        assert np.allclose(got, exp, rtol=0, atol=atol), key
    assert np.allclose(doc["points_m"], want["points_m"], rtol=0, atol=1e-7)
    for key in ("duration_s", "segments", "samples"):
        assert doc["summary"][key] == pytest.approx(want["summary"][key])
    assert np.allclose(doc["summary"]["peak_joint_speed_deg_s"], want["summary"]["peak_joint_speed_deg_s"], atol=1e-4)


def test_golden_is_sane():
    """What the golden file itself says: starts at home at rest, ends above the part, inside the limits."""
    want = json.loads(EXPECTED.read_text())
    s = want["summary"]
    assert want["samples"][0]["q_deg"] == pytest.approx([45, -90, -45])
    assert want["samples"][-1]["tool_m"] == pytest.approx([0.52, -0.19], abs=1e-6)
    assert all(p <= lim for p, lim in zip(s["peak_joint_speed_deg_s"], s["joint_speed_limit_deg_s"], strict=True))
    assert s["max_path_deviation_m"] < 1e-5
