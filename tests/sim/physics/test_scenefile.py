"""The physics scene file (armctl.sim.physics.scenefile): what it reads, and the one-line refusals."""

import pytest
import yaml

from armctl.errors import ConfigError
from armctl.sim.physics.scenefile import load_scene

SCENE = """\
table: {size_m: [0.8, 0.6, 0.02], center_m: [0.2, 0.0], friction: 0.9}
parts:
  - {name: red, shape: box, size_m: [0.025, 0.025, 0.025], mass_g: 12, at_m: [0.20, 0.05, 0], yaw_deg: 30}
  - {name: can, shape: cylinder, radius_m: 0.015, height_m: 0.04, mass_g: 20, at_m: [0.18, -0.1, 0]}
cameras:
  - {name: top, at_m: [0.2, 0.0, 0.7], look_at_m: [0.2, 0.0, 0.0], width: 640, height: 480}
"""


def test_a_scene_reads_its_table_parts_and_cameras(tmp_path):
    f = tmp_path / "s.yaml"
    f.write_text(SCENE)
    s = load_scene(f)
    assert s.table.size_m == (0.8, 0.6, 0.02) and s.table.friction == 0.9
    red, can = s.parts
    assert red.mass_kg == pytest.approx(0.012) and red.height == 0.025 and red.yaw_rad == pytest.approx(0.5236, 1e-3)
    assert can.shape == "cylinder" and can.height == 0.04 and can.radius_m == 0.015
    assert s.cameras[0].width == 640 and s.cameras[0].fov_deg == 60.0


@pytest.mark.parametrize(
    "change, words",
    [
        ("parts[0].at_m=[0.2, 0.05, -0.01]", ["parts[0].at_m", "inside the table"]),
        ("parts[0].mass_g=-3", ["parts[0].mass_g", "> 0"]),
        ("parts[1].shape='sphere'", ["parts[1].shape", "box, cylinder"]),
        ("parts[1].at_m=[0.2, 0.05, 0.0]", ["'red' and 'can' start inside each other"]),
        ("parts[1].name='red'", ["two parts are named 'red'"]),
        ("cameras[0].look_at_m=[0.2, 0.0, 0.7]", ["looks at its own position"]),
        ("parts[0].colour='red'", ["unknown key 'parts[0].colour'"]),
    ],
)
def test_bad_scenes_are_one_line_naming_the_key(tmp_path, change, words):
    data = yaml.safe_load(SCENE)
    target, _, value = change.partition("=")
    where, _, key = target.rpartition(".")
    name, _, idx = where.partition("[")
    data[name][int(idx.rstrip("]"))][key] = yaml.safe_load(value)
    f = tmp_path / "bad.yaml"
    f.write_text(yaml.safe_dump(data))
    with pytest.raises(ConfigError) as e:
        load_scene(f)
    text = str(e.value)
    assert "\n" not in text and "bad.yaml" in text
    for w in words:
        assert w in text


def test_a_table_top_below_the_arms_zero_carries_the_parts_and_the_refusals(tmp_path):
    """``top_z_m``: the table's top in the arm's frame (an arm measured from its shoulder axis has it below 0); a
    part's at_m z starts there, and one whose bottom lies below it starts inside the table."""
    data = yaml.safe_load(SCENE)
    assert load_scene(_write(tmp_path, data)).table.top_z_m == 0.0
    data["table"]["top_z_m"] = -0.03
    for part in data["parts"]:
        part["at_m"][2] = -0.03
    s = load_scene(_write(tmp_path, data))
    assert s.table.top_z_m == -0.03 and [p.at_m[2] for p in s.parts] == [-0.03, -0.03]
    data["parts"][1]["at_m"][2] = -0.031
    with pytest.raises(ConfigError) as e:
        load_scene(_write(tmp_path, data))
    assert "\n" not in str(e.value) and "parts[1].at_m" in str(e.value)
    assert "'can' starts inside the table: its bottom is at z -0.031 m, below the table's top -0.03 m" in str(e.value)
    data["table"]["top_z_m"] = 3
    with pytest.raises(ConfigError, match=r"table\.top_z_m.*out of range"):
        load_scene(_write(tmp_path, data))


def _write(tmp_path, data):
    f = tmp_path / "scene.yaml"
    f.write_text(yaml.safe_dump(data))
    return f
