"""`armctl calibrate --check` on arms with a rotating base, run as a user does: a square in the horizontal
plane at a stated height (default: the tool's height at home), every corner where it should be on the
simulated arm."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from armctl.model.arm import load_arm
from armctl.model.kinematics import tool_point


def _check(tmp_path, arm, *extra):
    env = dict(os.environ, ARMCTL_STATE_DIR=str(tmp_path / "state"))
    p = subprocess.run(
        [sys.executable, "-m", "armctl", "--arm", arm, "calibrate", "--check", "--speed", "80", *extra],
        capture_output=True,
        text=True,
        timeout=180,
        env=env,
    )
    return p.returncode, p.stdout, p.stderr


@pytest.mark.parametrize("arm", ["mearm", "braccio", "so101"])
def test_square_at_the_home_height(tmp_path, arm):
    code, out, err = _check(tmp_path, arm, "--json")
    assert code == 0, err
    d = json.loads(out)
    z = float(tool_point(load_arm(arm), load_arm(arm).home_rad)[2])
    targets = np.array([c["target_m"] for c in d["corners"]])
    assert targets.shape == (4, 3) and np.allclose(targets[:, 2], z)
    edges = np.roll(targets, -1, axis=0) - targets
    assert np.allclose(np.linalg.norm(edges, axis=1), d["side_m"]) and d["side_m"] > 0.02
    assert abs(float(np.dot(edges[0], edges[1]))) < 1e-9  # a square, counter-clockwise seen from above
    assert edges[0][0] * edges[1][1] - edges[0][1] * edges[1][0] > 0
    for c in d["corners"]:
        assert c["error_m"] < 0.001  # the simulated arm measured at the corner


def test_square_at_a_stated_height_in_text(tmp_path):
    code, out, err = _check(tmp_path, "mearm", "--height", "40mm", "--side", "30mm")
    assert code == 0, err
    lines = out.strip().splitlines()
    assert lines[0].startswith("check square: side 30.0 mm") and "horizontal plane at z = 40.0 mm" in lines[0]
    assert len(lines) == 5 and all("z=   40.0 mm" in line and "off by" in line for line in lines[1:])
