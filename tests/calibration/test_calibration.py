"""Calibration: angle <-> pulse mapping, strict YAML, atomic save, default lookup."""

from __future__ import annotations

import math
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from armctl.calibration.servo import find_calibration, load_calibration, save_calibration, save_path_for, with_servo
from armctl.core.paths import PRESET_CALIBRATION_DIR
from armctl.errors import ConfigError, JointLimitError, PulseLimitError
from armctl.model.arm import load_arm

SEED3 = PRESET_CALIBRATION_DIR / "seed-3link.yaml"


@pytest.mark.parametrize("name", ["seed-2link", "seed-3link"])
def test_example_files_cover_the_joint_ranges(name):
    cal = load_calibration(PRESET_CALIBRATION_DIR / f"{name}.yaml")
    arm = load_arm(name)
    cal.check_arm(arm)
    for q in (arm.q_min, arm.q_max, arm.home_rad):
        cal.joints_to_values(q)  # inside min/max: no error
    cal.gripper_value(np.array([arm.gripper.open_rad, arm.gripper.closed_rad]))


@given(st.lists(st.floats(-1.5, 1.5), min_size=3, max_size=3))
def test_round_trip_angles(q):
    cal = load_calibration(SEED3)
    us = cal.joints_to_values(np.array(q), check=False)
    assert np.allclose(cal.values_to_joints(us), q, atol=1e-12)


def test_vectorised_and_direction():
    cal = load_calibration(SEED3)
    q = np.radians([[0, 0, 0], [10, 10, 10]])
    us = cal.joints_to_values(q)
    assert us.shape == (2, 3)
    assert np.allclose(us[0], 1500)
    assert np.allclose(us[1], [1574, 1426, 1574])  # the elbow runs the other way


def test_pulse_outside_range_is_a_joint_limit_error():
    cal = load_calibration(SEED3)
    with pytest.raises(PulseLimitError, match=r"joint 1 \(shoulder\) at 95.0 deg needs a 2203.0 us") as err:
        cal.joints_to_values(np.radians([95, 0, 0]))
    assert isinstance(err.value, JointLimitError) and err.value.joint == 0


def _write(tmp_path, text) -> Path:
    p = tmp_path / "cal.yaml"
    p.write_text(textwrap.dedent(text))
    return p


GOOD = """\
    version: 1
    arm: seed-2link
    joints:
      - {name: a, channel: 0, pin: 9, zero_us: 1500, us_per_deg: 7.4, direction: 1, min_us: 800, max_us: 2200}
      - {name: b, channel: 1, pin: 10, zero_us: 1500, us_per_deg: 7.4, direction: -1, min_us: 500, max_us: 2500}
    """


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (("direction: -1", "direction: 2"), r"cal.yaml:5, key 'joints\[1\].direction': expected 1 or -1"),
        (("pin: 10,", "pin: 10, color: red,"), r"cal.yaml:5, key 'joints\[1\].color': unknown key"),
        (("version: 1", "version: 7"), r"cal.yaml:1, key 'version': unsupported calibration version 7"),
        (("min_us: 500", "min_us: 2600"), r"key 'joints\[1\].min_us': 2600 is out of range"),
        (("channel: 1", "channel: 0"), r"share channel 0"),
        (("max_us: 2200", "max_us: 700"), r"max_us \(700\) must be greater"),
    ],
)
def test_strict_validation_names_file_line_key(tmp_path, change, message):
    assert change[0] in GOOD
    p = _write(tmp_path, GOOD.replace(change[0], change[1], 1))
    with pytest.raises(ConfigError, match=message):
        load_calibration(p)


def test_save_round_trip_keeps_backup(tmp_path):
    cal = load_calibration(SEED3)
    target = tmp_path / "c.yaml"
    save_calibration(cal, target)
    again = load_calibration(target)
    assert again.joints == cal.joints and again.gripper == cal.gripper
    changed = with_servo(again, 1, zero_us=1512.5)
    save_calibration(changed, target)
    assert load_calibration(target).joints[1].zero_us == 1512.5
    assert load_calibration(target.with_name("c.yaml.bak")).joints[1].zero_us == 1500
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c.yaml", "c.yaml.bak"]


@pytest.mark.parametrize("die_at_fsync", [1, 2, 3, 4])
def test_killed_save_leaves_a_whole_file(tmp_path, die_at_fsync):
    """SIGKILL inside save (fsyncs: the .bak file, its folder, the new file, its folder): before the rename
    the old file is intact; after it, the new one is whole. The next save removes what the kill left."""
    target = tmp_path / "c.yaml"
    save_calibration(load_calibration(SEED3), target)
    before = target.read_text()
    script = f"""
import os, signal
from armctl.calibration.servo import load_calibration, save_calibration, with_servo
calls = [0]
real = os.fsync
def fsync(fd):
    calls[0] += 1
    if calls[0] == {die_at_fsync}:
        if hasattr(signal, "SIGKILL"):
            os.kill(os.getpid(), signal.SIGKILL)
        os._exit(9)  # Windows has no SIGKILL: the same end, no cleanup (TerminateProcess is what kill does there)
    real(fd)
os.fsync = fsync
cal = load_calibration({str(target)!r})
save_calibration(with_servo(cal, 0, zero_us=1600), {str(target)!r})
"""
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, timeout=60)
    assert proc.returncode == (-9 if hasattr(signal, "SIGKILL") else 9), proc.stderr
    cal = load_calibration(target)  # whole and valid either way
    if die_at_fsync < 4:
        assert target.read_text() == before
    else:
        assert cal.joints[0].zero_us == 1600
    save_calibration(with_servo(cal, 0, zero_us=1610), target)
    assert not list(tmp_path.glob(".*.tmp")), "temporary files of the killed save were left behind"


def test_default_lookup(tmp_path, monkeypatch):
    assert find_calibration("seed-3link", cwd=tmp_path) == PRESET_CALIBRATION_DIR / "seed-3link.yaml"
    assert save_path_for("seed-3link", PRESET_CALIBRATION_DIR / "seed-3link.yaml") == (
        tmp_path / "config" / "calibration" / "seed-3link.yaml"
    )  # the shipped example is never written over
    user = tmp_path / "config" / "calibration" / "seed-3link.yaml"
    user.parent.mkdir(parents=True)
    user.write_text(SEED3.read_text())
    assert find_calibration("seed-3link", cwd=tmp_path) == user  # the user's folder beats the example
    assert save_path_for("seed-3link", user) == user
    (tmp_path / "calibration").mkdir()
    local = tmp_path / "calibration" / "seed-3link.yaml"
    local.write_text(SEED3.read_text())
    assert find_calibration("seed-3link", cwd=tmp_path) == local  # ./calibration beats both
    assert find_calibration("x", "given.yaml") == Path("given.yaml")
    with pytest.raises(ConfigError, match="no calibration for arm 'nope'.*--calibration"):
        find_calibration("nope", cwd=tmp_path)


def test_gripper_mapping():
    cal = load_calibration(SEED3)
    assert cal.gripper_value(math.radians(60)) == pytest.approx(1800)
    with pytest.raises(PulseLimitError, match="gripper"):
        cal.gripper_value(math.radians(90))


BUS_CAL = """version: 1
arm: seed-3link
joints:
  - {name: shoulder, id: 1, zero_steps: 2048, direction: 1, min_steps: 1024, max_steps: 3072}
  - {name: elbow, id: 2, zero_steps: 2048, steps_per_deg: 11.3778, direction: -1, min_steps: 512, max_steps: 3584}
  - {name: wrist, id: 3, zero_steps: 2000, direction: 1, min_steps: 512, max_steps: 3584}
gripper: {name: gripper, id: 6, zero_steps: 1500, direction: 1, min_steps: 1600, max_steps: 2200}
"""


def test_bus_servo_calibration_in_steps(tmp_path):
    path = tmp_path / "bus.yaml"
    path.write_text(BUS_CAL)
    cal = load_calibration(path)
    assert cal.unit == "steps" and [s.channel for s in cal.servos] == [1, 2, 3, 6]
    shoulder = cal.joints[0]
    assert shoulder.steps_per_deg == pytest.approx(4096 / 360) and shoulder.resolution == 1.0
    assert shoulder.value(math.radians(90)) == pytest.approx(2048 + 1024)
    assert cal.values_to_joints(cal.joints_to_values(np.radians([10, -20, 30]))) == pytest.approx(
        np.radians([10, -20, 30])
    )
    with pytest.raises(PulseLimitError, match="steps position, outside the calibrated 1024..3072 steps"):
        cal.joints_to_values(np.radians([95, 0, 0]))
    save_calibration(cal, tmp_path / "again.yaml")
    again = load_calibration(tmp_path / "again.yaml")
    assert again.joints == cal.joints and again.gripper == cal.gripper


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (("id: 2,", "id: 1,"), "share id 1"),
        (
            (
                "{name: wrist, id: 3, zero_steps: 2000, direction: 1, min_steps: 512, max_steps: 3584}",
                "{name: wrist, channel: 2, pin: 11, zero_us: 1500, us_per_deg: 7.4, direction: 1, min_us: 500, "
                "max_us: 2500}",
            ),
            "mix",
        ),
        (("min_steps: 1024, max_steps: 3072", "min_steps: 3072, max_steps: 1024"), "max_steps"),
        (("id: 6,", "id: 254,"), "id"),
    ],
)
def test_bus_servo_calibration_is_checked(tmp_path, change, message):
    path = tmp_path / "bus.yaml"
    path.write_text(BUS_CAL.replace(*change))
    with pytest.raises(ConfigError, match=message):
        load_calibration(path)


def test_a_backend_refuses_the_other_kind_of_servo(tmp_path):
    from armctl import connect
    from armctl.errors import BadInputError

    path = tmp_path / "bus.yaml"
    path.write_text(BUS_CAL)
    # by default the bus backend, which armsim cannot serve: refused before anything opens
    with pytest.raises(BadInputError, match="armsim:// simulates hobby .PWM. servos, which the feetech backend"):
        connect("seed-3link", "armsim://?rate=20", calibration=path)
    with pytest.raises(BadInputError, match="armctl backend drives hobby .PWM. servos.*serial bus servos"):
        connect("seed-3link", "armsim://?rate=20", backend="armctl", calibration=path)
