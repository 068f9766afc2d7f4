"""The pick-and-place examples in physics: ``armctl run`` on the simulator with ``physics=1`` and the example's
scene (examples/scenes/) stacks or places every part within 5 mm of its programmed place, and a part not carried
is reported (one line naming it, where it is, where it should be) with exit code 1."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import yaml

from tests.helpers import require_module

REPO = Path(__file__).resolve().parents[3]
EXAMPLES = REPO / "examples"

#: example -> (its simulator URL with physics, (part, its pick pose, its place pose) for every part)
CASES = {
    "braccio": (
        "armsim://?arm=braccio&physics=1&scene={scene}&speed=30",
        [("part1", "part1", "stack1"), ("part2", "part2", "stack2"), ("part3", "part3", "stack3")],
    ),
}


def _programmed_places(example: str, scene: Path, moves) -> dict[str, np.ndarray]:
    """Part -> where the program puts its bottom centre (m): its place pose's tool point plus the part's offset from
    its pick pose's tool point in the scene file (the part held as it was taken)."""
    poses = yaml.safe_load((EXAMPLES / f"pick_and_place_{example}.yaml").read_text())["poses"]
    parts = {p["name"]: np.array(p["at_m"], dtype=float) for p in yaml.safe_load(scene.read_text())["parts"]}
    out = {}
    for part, pick, place in moves:
        pick_m, place_m = (np.array(poses[k]["xyz_mm"], dtype=float) / 1000.0 for k in (pick, place))
        out[part] = place_m + (parts[part] - pick_m)
    return out


def _run(example: str, url: str):
    cmd = [sys.executable, "-m", "armctl", "run", str(EXAMPLES / f"pick_and_place_{example}.yaml"), "--json"]
    return subprocess.run([*cmd, "--port", url], capture_output=True, text=True, timeout=300, cwd=REPO)


@pytest.mark.parametrize("example", sorted(CASES))
def test_every_part_ends_within_5_mm_of_its_programmed_place(example):
    require_module("mujoco", "the physics plant")
    url, moves = CASES[example]
    scene = EXAMPLES / "scenes" / f"pick_and_place_{example}.yaml"
    p = _run(example, url.format(scene=scene))
    assert p.returncode == 0, p.stderr
    world = json.loads(p.stdout)["world"]
    assert world["not_placed"] == []
    for part, should in _programmed_places(example, scene, moves).items():
        now = np.array(world["parts"][part]["at_m"])
        assert np.linalg.norm(now - should) < 0.005, (part, now, should)


def test_a_part_the_jaws_cannot_take_is_reported(tmp_path):
    """part2 made wider than the open jaws: never gripped; the line names it, where it is and where it should be."""
    require_module("mujoco", "the physics plant")
    text = (EXAMPLES / "scenes" / "pick_and_place_braccio.yaml").read_text()
    wide = text.replace(
        "size_m: [0.02, 0.02, 0.02], mass_g: 8, at_m: [0.270, -0.189, 0]",
        "size_m: [0.07, 0.07, 0.02], mass_g: 8, at_m: [0.270, -0.189, 0]",
    )
    assert wide != text
    scene = tmp_path / "wide.yaml"
    scene.write_text(wide)
    p = _run("braccio", CASES["braccio"][0].format(scene=scene))
    assert p.returncode == 1, p.stderr
    lines = [line for line in p.stderr.splitlines() if "part2" in line]
    assert len(lines) == 1, p.stderr
    assert lines[0].startswith("armctl run: part part2 was not carried to its place: it is at (27")
    assert "from where the program put it, (2" in lines[0]
