"""The physics plant's contacts (armctl.sim.physics.mjcf): parts set down stay where they were set down. A stack
of light cubes, each a little off the one under it as a gripper leaves them, neither sinks into the table or
into each other nor leans and creeps while it stands (MuJoCo's default soft contacts let the SO-101 example's
stack creep 0.02 mm a simulated second: part3 4-6 mm off by the end of a run at speed=30), and a part on a table
raised or lowered by ``top_z_m`` rests on its top."""

from __future__ import annotations

import numpy as np
import pytest

from armctl.model.arm import load_arm
from tests.helpers import require_module

require_module("mujoco", "the physics plant runs in MuJoCo (pip install armctl[physics])")

from armctl.sim.physics.plant import Plant  # noqa: E402
from armctl.sim.physics.scenefile import parse_scene  # noqa: E402


def _stack(top_z: float) -> dict:
    """Three 20 mm cubes stacked at (0.5, 0) on a table whose top is at ``top_z`` (out of the SO-101's reach),
    each 2 mm to the left of the one under it, set down 0.1 mm above it."""
    cube = {"shape": "box", "size_m": [0.02, 0.02, 0.02], "mass_g": 8}
    parts = [{"name": f"c{k}", **cube, "at_m": [0.5, 0.002 * k, top_z + k * 0.0201]} for k in range(3)]
    return {"table": {"size_m": [0.3, 0.3, 0.02], "center_m": [0.5, 0.0], "top_z_m": top_z}, "parts": parts}


@pytest.mark.parametrize("top_z", [0.0, -0.03])
def test_a_stack_of_light_cubes_stands_where_it_was_set_down(top_z):
    plant = Plant(load_arm("so101"), parse_scene(_stack(top_z), "<stack>"))
    plant.advance(1.0)
    settled = {p: np.array(v["at_m"]) for p, v in plant.world()["parts"].items()}
    for k in range(3):  # on the table's top and on each other, 20 mm a layer, within 0.1 mm
        assert settled[f"c{k}"][2] == pytest.approx(top_z + 0.02 * k, abs=1e-4)
        assert settled[f"c{k}"][:2] == pytest.approx([0.5, 0.002 * k], abs=2e-4)
    plant.advance(31.0)
    for p, v in plant.world()["parts"].items():  # 30 s standing: it has not crept
        assert np.linalg.norm(np.array(v["at_m"]) - settled[p]) < 5e-5, p
