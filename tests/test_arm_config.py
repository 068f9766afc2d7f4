"""Arm YAML files: presets load, bad files name the file, line and key."""

import math

import numpy as np
import pytest

from armctl.arm import load_arm, preset_names
from armctl.errors import ConfigError

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
    assert {"seed-2link", "seed-3link"} <= set(preset_names())
    arm = load_arm("seed-3link")
    assert np.allclose(arm.links_m, [0.40, 0.30, 0.20])
    assert arm.n == 3 and arm.gripper is not None
    assert np.allclose(np.degrees(arm.q_min), [-90, -135, -135])
    assert arm.within_limits(arm.home_rad)
    assert np.allclose(load_arm("seed-2link").links_m, [0.40, 0.30])


def test_exponents_are_numbers_as_in_yaml_1_2(tmp_path):
    from armctl.config import load_yaml_text

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
    with pytest.raises(ConfigError, match="presets: seed-2link"):
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
        ("a: " + "[" * 50000 + "]" * 50000 + "\n", r"arm.yaml: YAML nested too deeply"),
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
