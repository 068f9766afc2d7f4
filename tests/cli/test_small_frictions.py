"""Small frictions new users met on the command line (issue 33, item 9): what `status --json` lists, showing a
shipped calibration by name, an unreadable config folder, and an arm name that is also a folder here."""

from __future__ import annotations

import errno
import json
import os
from pathlib import Path

import pytest

from armctl.cli import main
from armctl.core.paths import PRESET_CALIBRATION_DIR


@pytest.fixture(autouse=True)
def _folders(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)


def _json(capsys, argv):
    assert main(argv) == 0, capsys.readouterr().err
    return json.loads(capsys.readouterr().out)


@pytest.mark.parametrize(
    ("arm", "channels"),
    [("so101", [1, 2, 3, 4, 5, 6]), ("mearm", [0, 1, 2, 3])],  # so101: its 5 joints' ids (the roll driven), gripper
)
def test_status_json_lists_a_width_for_each_of_the_arms_servos_and_no_more(arm, channels, capsys):
    """Used to list the backend's whole list: 7 widths for the SO-101's 6 servos (a bus's list is indexed by
    id from 0), 8 for the MeArm's 4 channels."""
    assert main(["--arm", arm, "home"]) == 0
    capsys.readouterr()
    st = _json(capsys, ["--arm", arm, "status", "--json"])
    assert st["servo_channels"] == channels
    assert len(st["widths_us"]) == len(channels) and None not in st["widths_us"], st["widths_us"]
    if arm == "so101":
        assert st["channels"] == len(st["widths_us"]) == 6
        goals = {s["id"]: s["goal_steps"] for s in st["servos"]}
        assert st["widths_us"] == [goals[c] for c in channels]
    else:  # each width is the one its joint's angle gives through the calibration
        assert st["widths_us"] == pytest.approx(st["values"], abs=0.01)


@pytest.mark.parametrize("name", ["mearm-pca9685", "mearm-pca9685.yaml", "eezybot-mk2-pca9685"])
def test_calibrate_show_takes_a_shipped_calibration_by_name(name, capsys):
    """Used to say 'mearm-pca9685: file not found' although --calibration takes the same name."""
    out = _json(capsys, ["calibrate", "--show", name, "--json"])
    stem = name.removesuffix(".yaml")
    assert Path(out["source"]) == PRESET_CALIBRATION_DIR / f"{stem}.yaml"
    assert out["arm"] == stem.removesuffix("-pca9685") and out["servos"]
    assert main(["calibrate", "--show", name]) == 0
    assert f"{stem}.yaml" in capsys.readouterr().out.splitlines()[0]


def test_calibrate_show_a_file_here_wins_over_a_shipped_name(tmp_path, capsys):
    (tmp_path / "mearm-pca9685").write_text((PRESET_CALIBRATION_DIR / "mearm.yaml").read_text())
    out = _json(capsys, ["calibrate", "--show", "mearm-pca9685", "--json"])
    assert Path(out["source"]).resolve() == (tmp_path / "mearm-pca9685").resolve()
    assert main(["calibrate", "--show", "no-such-calibration"]) == 2
    assert "no-such-calibration: file not found" in capsys.readouterr().err


def test_compare_takes_shipped_calibrations_by_name(capsys):
    assert main(["--arm", "mearm", "calibrate", "--compare", "mearm", "mearm-pca9685"]) == 0
    assert "mearm-pca9685.yaml" in capsys.readouterr().out


@pytest.fixture
def unreadable_config(tmp_path, monkeypatch):
    """$ARMCTL_CONFIG_DIR without read/search permission. As root (CI) permission bits stop nothing, so every
    look inside it fails as the kernel fails it for a user (EACCES from stat/open)."""
    locked = tmp_path / "locked-config"
    (locked / "calibration").mkdir(parents=True)
    monkeypatch.setenv("ARMCTL_CONFIG_DIR", str(locked))
    if os.name == "posix" and os.geteuid() != 0:
        locked.chmod(0)
        yield locked
        locked.chmod(0o755)
        return
    prefix = str(locked) + os.sep

    def guard(fn):
        def call(p, *a, **k):
            if isinstance(p, (str, os.PathLike)) and os.path.abspath(os.fspath(p)).startswith(prefix):
                raise PermissionError(errno.EACCES, "Permission denied", os.fspath(p))
            return fn(p, *a, **k)

        return call

    for name in ("stat", "lstat", "open", "scandir", "listdir"):
        monkeypatch.setattr(os, name, guard(getattr(os, name)))
    yield locked


@pytest.mark.parametrize("argv", [["status"], ["home"], ["calibrate", "--show"]])
def test_an_unreadable_config_folder_is_one_line_naming_it(unreadable_config, argv, capsys):
    """Used to end in a PermissionError traceback from Path.is_file (exit 1)."""
    assert main(["--arm", "mearm", *argv]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    assert str(unreadable_config / "calibration") in err and "Permission denied" in err and "ARMCTL_CONFIG_DIR" in err


def test_an_arm_name_that_is_also_a_folder_here_is_the_preset(tmp_path, capsys):
    """`--arm so101` in a folder holding a folder so101 (a LeRobot checkout, a dataset) used to try to read the
    folder: 'so101: cannot read file: [Errno 21] Is a directory'."""
    (tmp_path / "so101").mkdir()
    (tmp_path / "mearm").mkdir()
    assert main(["--arm", "so101", "fk", "0", "0", "0", "0", "0", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["tool_m"]
    assert main(["--arm", "mearm", "workspace"]) == 0
    assert "presets/mearm.yaml" in capsys.readouterr().out.replace(os.sep, "/")
    (tmp_path / "myarm").mkdir()  # a folder and no preset: said so, in one line
    assert main(["--arm", "myarm", "workspace"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "'myarm' is a folder, not an arm file" in err and "so101" in err
    (tmp_path / "arm.yaml").mkdir()
    assert main(["--arm", "arm.yaml", "workspace"]) == 2
    assert "'arm.yaml' is a folder, not an arm file" in capsys.readouterr().err
