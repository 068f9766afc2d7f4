"""Arm YAML files: presets load, bad files name the file, line and key."""

import math

import numpy as np
import pytest

from armctl.errors import ConfigError
from armctl.model.arm import load_arm, preset_names

GOOD = """\
name: bench-arm
links_m: [0.25, 0.20]
joints:
  - {name: shoulder, min_deg: -90, max_deg: 90, max_speed_deg_s: 90}
  - {name: elbow, min_deg: -120, max_deg: 120, max_speed_deg_s: 120}
home_deg: [30, -60]
"""


def write(tmp_path, text, name="arm.yaml"):
    path = tmp_path / name
    path.write_text(text)
    return path


def test_presets_load():
    assert {"seed-2link", "seed-3link", "mearm", "eezybot-mk2", "braccio", "so101"} <= set(preset_names())
    arm = load_arm("seed-3link")
    assert np.allclose(arm.links_m, [0.40, 0.30, 0.20])
    assert arm.n == 3 and arm.gripper is not None
    assert np.allclose(np.degrees(arm.q_min), [-90, -135, -135])
    assert arm.within_limits(arm.home_rad)
    assert np.allclose(load_arm("seed-2link").links_m, [0.40, 0.30])


def test_exponents_are_numbers_as_in_yaml_1_2(tmp_path):
    from armctl.core.config import load_yaml_text

    doc = load_yaml_text("a: 1e3\nb: -3E-4\nc: 1.5e3\nd: [4e-1, .5e1]\ne: 1e\nf: 500mm\ng: 2\n")
    assert doc == {"a": 1000.0, "b": -3e-4, "c": 1500.0, "d": [0.4, 5.0], "e": "1e", "f": "500mm", "g": 2}
    text = GOOD.replace("links_m: [0.25, 0.20]", "links_m: [2.5e-1, 2e-1]")
    assert text != GOOD
    assert np.allclose(load_arm(write(tmp_path, text)).links_m, [0.25, 0.20])


def test_a_file_loads_in_si_units(tmp_path):
    arm = load_arm(write(tmp_path, GOOD))
    assert arm.name == "bench-arm" and arm.gripper is None
    assert math.isclose(arm.max_speed_rad_s[1], math.radians(120))
    assert np.allclose(arm.home_rad, np.radians([30, -60]))


@pytest.mark.parametrize(
    "old, new, expect",
    [
        ("links_m: [0.25, 0.20]", "links_m: [0.25]", "links_m.*expected 2 or 3 numbers"),
        ("links_m: [0.25, 0.20]", "links_m: [0.25, -0.2]", "link 2 length must be > 0"),
        ("links_m: [0.25, 0.20]", "links_m: [0.25, .nan]", "links_m.*finite"),
        ("max_speed_deg_s: 90}", "max_speed_deg_s: fast}", r"arm.yaml:4, key 'joints\[0\].max_speed_deg_s'.*number"),
        ("max_speed_deg_s: 90}", "max_speed_deg_s: -5}", "must be > 0"),
        ("min_deg: -120, max_deg: 120", "min_deg: 120, max_deg: -120", "must be greater than min_deg"),
        ("home_deg: [30, -60]", "home_deg: [30, -160]", "outside its limits"),
        ("home_deg: [30, -60]", "home_deg: [30, -60]\ncolour: red", "arm.yaml:7, key 'colour'.*unknown key"),
        ("home_deg: [30, -60]\n", "", "missing required key 'home_deg'"),
        ("{name: shoulder,", "{nme: shoulder,", "unknown key 'joints\\[0\\].nme'"),
        ("links_m: [0.25, 0.20]", "links_m: [0.25, 0.20", "arm.yaml:\\d+: YAML syntax error"),
    ],
)
def test_bad_files_say_where_and_what(tmp_path, old, new, expect):
    assert old in GOOD
    path = write(tmp_path, GOOD.replace(old, new))
    with pytest.raises(ConfigError, match=expect) as info:
        load_arm(path)
    assert str(path) in str(info.value)


def test_missing_file_and_unknown_preset(tmp_path):
    with pytest.raises(ConfigError, match="file not found"):
        load_arm(tmp_path / "nope.yaml")
    presets = "braccio, eezybot-mk2, koch, koch-leader, mearm, omx, seed-2link, seed-3link, so101"
    with pytest.raises(ConfigError, match=f"presets: {presets}"):
        load_arm("seed-9link")


def test_empty_and_non_mapping_files(tmp_path):
    with pytest.raises(ConfigError, match="expected a mapping"):
        load_arm(write(tmp_path, ""))
    with pytest.raises(ConfigError, match="expected a mapping"):
        load_arm(write(tmp_path, "- 1\n- 2\n"))


def test_duplicate_key_is_an_error(tmp_path):
    with pytest.raises(ConfigError, match="arm.yaml:3.*duplicate key 'links_m'"):
        load_arm(write(tmp_path, GOOD.replace("joints:", "links_m: [1, 1]\njoints:", 1)))


@pytest.mark.parametrize(
    "text, expect",
    [
        (GOOD.replace("[0.25, 0.20]", "[" + "9" * 400 + ", 0.20]"), r"arm.yaml:2, key 'links_m'.*finite"),
        (GOOD + "[1, 2]: 3\n", r"arm.yaml:7: a key must be plain text, found a list"),
        (GOOD + "{a: 1}: 3\n", r"arm.yaml:7: a key must be plain text, found a mapping"),
        ("a: " + "[" * 50000 + "]" * 50000 + "\n", r"arm.yaml:1: values nested more than 64 deep"),
        (GOOD.replace("home_deg", "home\x00deg"), r"arm.yaml:6: not a text file: character '\\x00'"),
        (GOOD.replace("joints:", "joints: {a: 1}\nold:"), r"key 'joints': expected a list, found a mapping$"),
        ("- 1\n", r"expected a mapping \(key: value lines\), found a list$"),
    ],
)
def test_hostile_yaml_is_one_config_error(tmp_path, text, expect):
    """Huge integers, list keys, deep nesting and control characters: one ConfigError line, no traceback."""
    with pytest.raises(ConfigError, match=expect) as info:
        load_arm(write(tmp_path, text))
    assert "\n" not in str(info.value)


BASE = """\
name: desk-arm
links_m: [0.08, 0.08]
linkage: parallelogram
link_angle_deg: [30, 150]
base: {name: turntable, min_deg: -90, max_deg: 90, max_speed_deg_s: 120}
base_offset_m: 0.068
shoulder_height_m: 0.05
joints:
  - {name: shoulder, min_deg: 0, max_deg: 150, max_speed_deg_s: 120}
  - {name: elbow, min_deg: -75, max_deg: 75, max_speed_deg_s: 100}
home_deg: [10, 90, 0]
"""


def test_a_base_arm_file_loads_base_first(tmp_path):
    arm = load_arm(write(tmp_path, BASE))
    assert arm.has_base and arm.parallelogram and arm.layered
    assert arm.n == 3 and arm.n_links == 2 and arm.dim == 3
    assert arm.joint_names == ("turntable", "shoulder", "elbow")
    assert np.allclose(np.degrees(arm.q_min), [-90, 0, -75]) and np.allclose(np.degrees(arm.home_rad), [10, 90, 0])
    assert math.isclose(math.degrees(arm.max_speed_rad_s[0]), 120) and math.isclose(arm.base_offset_m, 0.068)
    assert np.allclose(np.degrees(arm.link_angle_rad), [30, 150])
    # the planar solver's view: serial angles, the coupled limits as their bounding box
    assert np.allclose(np.degrees(arm.chain.q_min), [0, -150]) and np.allclose(np.degrees(arm.chain.q_max), [150, -30])
    serial = load_arm(write(tmp_path, BASE.replace("linkage: parallelogram\nlink_angle_deg: [30, 150]\n", "")))
    assert serial.linkage == "serial" and serial.link_angle_rad is None


@pytest.mark.parametrize(
    "old, new, expect",
    [
        ("links_m: [0.08, 0.08]", "links_m: [0.08, 0.08, 0.05]", "parallelogram linkage drives 2 links"),
        ("link_angle_deg: [30, 150]", "link_angle_deg: [30, 190]", r"link_angle_deg.*0\.\.180 deg, found \[30, 190\]"),
        ("link_angle_deg: [30, 150]", "link_angle_deg: [-5, 150]", r"0\.\.180 deg"),
        ("link_angle_deg: [30, 150]", "link_angle_deg: [150, 30]", "must be the smaller"),
        ("link_angle_deg: [30, 150]", "link_angle_deg: [30]", "expected 2 numbers"),
        ("linkage: parallelogram", "linkage: scissor", "'scissor' is not one of: serial, parallelogram"),
        ("linkage: parallelogram\n", "", "link_angle_deg applies only with 'linkage: parallelogram'"),
        ("home_deg: [10, 90, 0]", "home_deg: [90, 0]", "expected 3 numbers"),
        ("home_deg: [10, 90, 0]", "home_deg: [100, 90, 0]", "home angle of the base"),
        ("home_deg: [10, 90, 0]", "home_deg: [10, 140, -20]", "home pose puts 20 deg between upper arm and forearm"),
        ("max_speed_deg_s: 120}\nbase_off", "max_speed_deg_s: 0}\nbase_off", "must be > 0"),
        (
            "{name: elbow, min_deg: -75, max_deg: 75,",
            "{name: elbow, min_deg: 151, max_deg: 175,",
            "no shoulder and forearm",
        ),
    ],
)
def test_bad_base_arm_files_say_where_and_what(tmp_path, old, new, expect):
    assert old in BASE
    path = write(tmp_path, BASE.replace(old, new))
    with pytest.raises(ConfigError, match=expect) as info:
        load_arm(path)
    assert str(path) in str(info.value) and "\n" not in str(info.value)


def test_offsets_need_a_base(tmp_path):
    with pytest.raises(ConfigError, match="base_offset_m places the shoulder relative to a base"):
        load_arm(write(tmp_path, GOOD + "base_offset_m: 0.02\n"))
