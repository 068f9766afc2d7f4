"""The servo table and the servos an arm file names (armctl.model.servos)."""

import math

import pytest
import yaml

from armctl.errors import ConfigError
from armctl.model.arm import load_arm, parse_arm
from armctl.model.servos import KGCM_NM, MODELS

ARM = {
    "name": "t",
    "links_m": [0.1, 0.1],
    "base": {"name": "base", "min_deg": -90, "max_deg": 90, "max_speed_deg_s": 90},
    "joints": [
        {"name": "shoulder", "min_deg": 0, "max_deg": 150, "max_speed_deg_s": 90},
        {"name": "elbow", "min_deg": -120, "max_deg": 120, "max_speed_deg_s": 90},
    ],
    "home_deg": [0, 90, -90],
}


def _arm(**changes):
    data = yaml.safe_load(yaml.safe_dump(ARM))
    for key, value in changes.items():
        if key in ("base", "shoulder", "elbow"):
            target = data["base"] if key == "base" else data["joints"][0 if key == "shoulder" else 1]
            target.update(value)
        else:
            data[key] = value
    return parse_arm(data, "t.yaml")


def test_the_table_holds_every_model_the_issue_names_with_a_source():
    for key in ("sg90", "mg90s", "mg996r", "ds3218", "sr431", "sr311", "sts3215", "sts3215-12v", "scs0009"):
        m = MODELS[key]
        assert m.source and m.mass_g > 0 and m.ratings
        assert all(r.stall_kgcm > 0 and r.s_per_60deg > 0 for r in m.ratings)
    assert MODELS["mg996r"].at(4.8).stall_kgcm == 9.4
    assert MODELS["mg996r"].at(6.0).stall_kgcm == 11.0
    assert MODELS["sts3215-12v"].at().stall_kgcm == 30.0
    assert MODELS["sg90"].deadband_us == 10.0


def test_between_and_beyond_rated_voltages():
    m = MODELS["mg996r"]
    assert m.at(5.4).stall_kgcm == pytest.approx((9.4 + 11.0) / 2)
    assert m.at(7.2).stall_kgcm == pytest.approx(11.0 * 7.2 / 6.0)  # scales with the voltage past the last rating
    with pytest.raises(ValueError, match="4.8..7.2 V"):
        m.at(12.0)


def test_joints_name_their_servos_and_the_voltage():
    arm = _arm(supply_volts=6.0, base={"servo": "mg996r"}, shoulder={"servo": {"model": "ds3218", "volts": 5}})
    base, shoulder, elbow = arm.drive.servos
    assert base.stall_nm == pytest.approx(11.0 * KGCM_NM)
    assert shoulder.says() == "a DS3218 gives 19 kg.cm at 5 V"
    assert elbow is None
    assert base.speed_rad_s == pytest.approx(math.radians(60) / 0.14)


def test_a_custom_servo_takes_its_figures_from_the_file():
    arm = _arm(elbow={"servo": {"model": "custom", "stall_kgcm": 4.5, "s_per_60deg": 0.2, "volts": 6, "mass_g": 30}})
    s = arm.drive.servos[2]
    assert s.stall_nm == pytest.approx(4.5 * KGCM_NM) and s.mass_kg == 0.03
    assert s.says() == "a custom servo gives 4.5 kg.cm at 6 V"


@pytest.mark.parametrize(
    "changes, words",
    [
        ({"shoulder": {"servo": "mg995x"}}, ["joints[0].servo", "unknown servo model 'mg995x'", "mg996r"]),
        ({"shoulder": {"servo": {"model": "custom", "stall_kgcm": 4}}}, ["volts"]),
        ({"shoulder": {"servo": {"model": "sg90", "volts": 12}}}, ["4..6 V, not 12 V"]),
        ({"shoulder": {"mass_g": -5}}, ["mass_g"]),
        ({"torque_use": 1.5}, ["torque_use"]),
        ({"payload_g": -1}, ["payload_g"]),
    ],
)
def test_bad_servo_keys_are_one_line_naming_the_key(changes, words):
    with pytest.raises(ConfigError) as e:
        _arm(**changes)
    text = str(e.value)
    assert "\n" not in text and "t.yaml" in text
    for w in words:
        assert w in text


def test_the_presets_name_their_makers_servos():
    def models(name):
        a = load_arm(name)
        return [s.model.key for s in a.drive.servos], a.gripper.servo.model.key

    assert models("mearm") == (["sg90"] * 3, "sg90")
    assert models("eezybot-mk2") == (["mg996r"] * 3, "sg90")
    assert models("braccio") == (["sr431"] * 4, "sr311")
    assert models("so101") == (["sts3215"] * 5, "sts3215")


def test_a_sidecar_names_servos_per_urdf_joint(tmp_path):
    from armctl.core.paths import PRESET_DIR

    (tmp_path / "so101.urdf").write_text((PRESET_DIR / "so101.urdf").read_text())
    side = yaml.safe_load((PRESET_DIR / "so101.armctl.yaml").read_text())
    side["servo"] = {"shoulder_lift": "sts3215-12v", "elbow_flex": {"model": "sts3215", "volts": 6}}
    side["torque_use"] = 0.5
    side["payload_g"] = 50
    (tmp_path / "so101.armctl.yaml").write_text(yaml.safe_dump(side))
    arm = load_arm(tmp_path / "so101.urdf")
    keys = [None if s is None else s.model.key for s in arm.drive.servos]
    assert keys == [None, "sts3215-12v", "sts3215", None, None]
    assert arm.drive.servos[2].rating.stall_kgcm == pytest.approx(19.5 * 6 / 7.4)
    assert arm.drive.torque_use == 0.5 and arm.drive.payload_kg == 0.05
