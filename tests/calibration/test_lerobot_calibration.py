"""LeRobot's calibration files used as they are (armctl/calibration/lerobot.py).

The fixtures in tests/lerobot/ were written by hand from LeRobot's documented formats (FACTS-lerobot.md
section 2): the per-motor layout of LeRobot 0.3-0.6 (one file under robots/so_follower/, the >= 0.4.3 name,
one under robots/so101_follower/, the earlier one, with a reversed gripper), the legacy list layout of
before June 2025, and files armctl must refuse. The expected angles are computed here with LeRobot's own
formula (degrees = (steps - mid) * 360 / 4095, mid the middle of the recorded range) and the URDF relation
armctl angle = offset + sign * URDF angle, never with armctl's calibration code; the tool point is checked
against the URDF's forward kinematics by yourdfpy.
"""

from __future__ import annotations

import json
import math
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import armctl
from armctl.calibration.lerobot import (
    find_lerobot_calibration,
    lerobot_calibration_root,
    open_calibration,
)
from armctl.calibration.servo import load_calibration
from armctl.errors import ConfigError, LinkError
from armctl.model.arm import load_arm
from tests.helpers import require, so101_with_held_roll

FIXTURES = Path(__file__).resolve().parents[1] / "lerobot"
REPO = Path(__file__).resolve().parents[2]
BODY = ["shoulder_pan", "shoulder_lift", "elbow_flex", "wrist_flex"]
JOINTS = [*BODY, "wrist_roll"]  # the so101 drives its wrist roll: the pose's last angle


def lerobot_deg(steps: float, motor: dict) -> float:
    """LeRobot's DEGREES reading (motors_bus.py): zero at the middle of the recorded range, 4095 a turn."""
    return (steps - (motor["range_min"] + motor["range_max"]) / 2) * 360 / 4095


def lerobot_gripper_percent(steps: float, motor: dict) -> float:
    """LeRobot's RANGE_0_100 reading: clamped, 0 at range_min; drive_mode 1 reversed."""
    lo, hi = motor["range_min"], motor["range_max"]
    x = (min(max(steps, lo), hi) - lo) / (hi - lo) * 100
    return 100 - x if motor["drive_mode"] else x


@pytest.fixture
def so101():
    arm = load_arm("so101")
    assert arm.urdf_map is not None, "the so101 preset is derived from its URDF (i21-urdf)"
    return arm


@pytest.fixture
def lerobot_home(tmp_path, monkeypatch):
    """LeRobot's calibration folder with the fixtures where LeRobot keeps them."""
    root = tmp_path / "hf" / "calibration"
    for sub in ("so_follower", "so101_follower", "koch_follower"):
        shutil.copytree(FIXTURES / sub, root / "robots" / sub)
    monkeypatch.setenv("HF_LEROBOT_CALIBRATION", str(root))
    return root


@pytest.mark.parametrize("fixture", ["so_follower/my_arm.json", "so101_follower/erics_first_so101.json"])
def test_joint_angles_are_lerobots_degrees_through_the_urdf(so101, fixture):
    path = FIXTURES / fixture
    motors = json.loads(path.read_text())
    cal, _, notes = open_calibration(path, so101)
    assert notes == []
    assert [s.name for s in cal.joints] == JOINTS and [s.id for s in cal.joints] == [1, 2, 3, 4, 5]
    assert cal.held == ()
    for k, ((name, offset_rad, sign), servo) in enumerate(zip(so101.urdf_map, cal.joints)):
        m = motors[name]
        assert servo.homing_offset == m["homing_offset"]  # compared with the EEPROM at open, never applied
        if name == "wrist_roll":  # LeRobot gives the roll the whole turn 0..4095: the range is the joint's limits
            assert (m["range_min"], m["range_max"]) == (0, 4095)
            ends = sorted(2047.5 + sign * 4095 / 360 * math.degrees(a) for a in (so101.q_min[k], so101.q_max[k]))
            assert (servo.min_steps, servo.max_steps) == (math.ceil(ends[0]), math.floor(ends[1]))
        else:
            assert (servo.min_steps, servo.max_steps) == (m["range_min"], m["range_max"])
        for steps in np.linspace(m["range_min"], m["range_max"], 7):
            want = math.degrees(offset_rad) + sign * lerobot_deg(steps, m)
            assert math.degrees(float(servo.angle_rad(steps))) == pytest.approx(want, abs=1e-9)  # well within 0.1
            assert float(servo.value(math.radians(want))) == pytest.approx(steps, abs=1e-9)


@pytest.mark.parametrize("fixture", ["so_follower/my_arm.json", "so101_follower/erics_first_so101.json"])
def test_the_gripper_maps_lerobots_percent_onto_closed_to_open(so101, fixture):
    path = FIXTURES / fixture
    m = json.loads(path.read_text())["gripper"]
    cal, _, _ = open_calibration(path, so101)
    g = cal.gripper
    closed, opened = math.degrees(so101.gripper.closed_rad), math.degrees(so101.gripper.open_rad)
    for steps in np.linspace(m["range_min"], m["range_max"], 5):
        percent = lerobot_gripper_percent(steps, m)
        assert math.degrees(float(g.angle_rad(steps))) == pytest.approx(closed + percent / 100 * (opened - closed))
    assert (g.id, g.min_steps, g.max_steps) == (6, m["range_min"], m["range_max"])


def test_the_wrist_roll_is_a_joint_at_lerobots_zero_or_held_there(so101, tmp_path):
    cal, _, _ = open_calibration(FIXTURES / "so_follower/my_arm.json", so101)
    roll = cal.joints[so101.roll_index]
    assert (roll.name, roll.id, roll.homing_offset) == ("wrist_roll", 5, -40)
    assert float(roll.value(0.0)) == pytest.approx(2047.5)  # (0 + 4095) / 2: LeRobot reads 0 deg there
    # a user who holds the roll (held_joints in the sidecar): the arm has 4 joints, the roll servo is held there
    cal, _, _ = open_calibration(FIXTURES / "so_follower/my_arm.json", so101_with_held_roll(tmp_path))
    (roll,) = cal.held
    assert (roll.name, roll.id, roll.homing_offset) == ("wrist_roll", 5, -40)
    assert roll.position_steps == pytest.approx(2047.5)


def test_the_legacy_list_layout(so101, tmp_path):
    """Before June 2025: degrees = (s * steps + homing_offset) * 180 / 2048 (s = -1 with drive_mode), the offset
    applied in software (so not compared with the EEPROM); gripper % = (steps - start) / (end - start) * 100.
    Zero is where those degrees are 0; the direction is the URDF's whatever drive_mode says (it turned only the
    old degrees round), so armctl = sign * s * legacy degrees."""
    path = FIXTURES / "legacy/main_follower.json"
    data = json.loads(path.read_text())
    cal, _, notes = open_calibration(path, so101)
    assert len(notes) == 1 and "legacy LeRobot calibration" in notes[0] and "check 'armctl status'" in notes[0]
    for k, ((_, _, sign), servo) in enumerate(zip(so101.urdf_map, cal.joints)):
        assert servo.id == k + 1 and servo.homing_offset is None
        s = -1 if data["drive_mode"][k] else 1
        for steps in (servo.min_steps, (servo.min_steps + servo.max_steps) / 2, servo.max_steps):
            legacy = (s * steps + data["homing_offset"][k]) * 180 / 2048
            got, want = math.degrees(float(servo.angle_rad(steps))), sign * s * legacy
            if k == so101.roll_index:  # the roll's legacy degrees may be whole turns off (zero -2048 steps here)
                want = got + math.remainder(want - got, 360.0)
            assert got == pytest.approx(want, abs=1e-9)
        assert servo.direction == sign
    g, start, end = cal.gripper, data["start_pos"][5], data["end_pos"][5]
    assert math.degrees(float(g.angle_rad(start))) == pytest.approx(math.degrees(so101.gripper.closed_rad))
    assert math.degrees(float(g.angle_rad(end))) == pytest.approx(math.degrees(so101.gripper.open_rad))
    assert cal.joints[4].id == 5 and cal.held == ()
    # legacy LINEAR motors ignored drive_mode (only DEGREE ones were turned round): the same gripper with it
    data["drive_mode"][5] = 1
    flipped = tmp_path / "main_follower.json"
    flipped.write_text(json.dumps(data))
    g2 = open_calibration(flipped, so101)[0].gripper
    for steps in (start, (start + end) / 2, end):
        assert float(g2.angle_rad(steps)) == pytest.approx(float(g.angle_rad(steps)))


def test_legacy_files_convert_to_a_yaml_armctl_reads_back(tmp_path, monkeypatch):
    out = tmp_path / "legacy.yaml"
    run = _armctl(
        "--arm", "so101", "calibrate", "--from-lerobot", str(FIXTURES / "legacy/main_follower.json"),
        "--out", str(out), tmp_path=tmp_path,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    assert "note: " in run.stdout and "legacy LeRobot calibration" in run.stdout
    back = load_calibration(out)
    assert [s.id for s in back.servos] == [1, 2, 3, 4, 5, 6] and all(s.homing_offset is None for s in back.servos)
    back.check_arm(load_arm("so101"))  # the so101's steps follow its URDF: a drive_mode 1 joint is no reversed servo


def test_status_takes_a_legacy_file_whose_drive_mode_reverses_a_joint(tmp_path):
    """The fixture's shoulder_lift has drive_mode 1 (as many legacy SO-100 files do): the arm opens with it."""
    assert json.loads((FIXTURES / "legacy/main_follower.json").read_text())["drive_mode"][1] == 1
    run = _armctl(
        "--arm", "so101", "--calibration", str(FIXTURES / "legacy/main_follower.json"), "status", tmp_path=tmp_path
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    assert "legacy LeRobot calibration" in run.stderr and "error" not in run.stderr


def test_lerobot_id_is_found_where_lerobot_keeps_it(tmp_path, monkeypatch):
    for var in ("HF_LEROBOT_CALIBRATION", "HF_LEROBOT_HOME", "HF_HOME"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("USERPROFILE", str(tmp_path / "home"))  # Windows' home (Path.home() there)
    default = tmp_path / "home/.cache/huggingface/lerobot/calibration"
    assert lerobot_calibration_root() == default
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hfhome"))
    assert lerobot_calibration_root() == tmp_path / "hfhome/lerobot/calibration"
    monkeypatch.setenv("HF_LEROBOT_HOME", str(tmp_path / "lrhome"))
    assert lerobot_calibration_root() == tmp_path / "lrhome/calibration"
    monkeypatch.setenv("HF_LEROBOT_CALIBRATION", str(tmp_path / "cal"))
    assert lerobot_calibration_root() == tmp_path / "cal"
    older = tmp_path / "cal/robots/so101_follower/erics_first_so101.json"
    older.parent.mkdir(parents=True)
    shutil.copy(FIXTURES / "so101_follower/erics_first_so101.json", older)
    assert find_lerobot_calibration("erics_first_so101") == older
    newer = tmp_path / "cal/robots/so_follower/erics_first_so101.json"  # LeRobot >= 0.4.3's folder comes first
    newer.parent.mkdir(parents=True)
    shutil.copy(older, newer)
    assert find_lerobot_calibration("erics_first_so101") == newer


def test_a_missing_id_lists_the_ids_found(lerobot_home):
    with pytest.raises(
        ConfigError, match=r"no LeRobot calibration 'nope' under .*ids found: my_arm \(in robots/so_fol"
    ):
        find_lerobot_calibration("nope")


@pytest.mark.parametrize(
    ("which", "match"),
    [
        ("other/broken.json", r"broken.json:2: not valid JSON"),
        ("other/extra_key.json", r"motor 'shoulder_pan' has unknown key\(s\) calib_mode"),
        ("other/lekiwi.json", r"a calibration of another robot\? it has motors arm_shoulder_pan, base_left_wheel"),
    ],
)
def test_files_that_are_not_an_so_arms_calibration_are_refused(so101, which, match):
    with pytest.raises(ConfigError, match=match):
        open_calibration(FIXTURES / which, so101)


def test_an_so100_file_on_the_so101_preset_gets_a_note(so101, tmp_path):
    path = tmp_path / "robots/so100_follower/old_arm.json"
    path.parent.mkdir(parents=True)
    shutil.copy(FIXTURES / "so_follower/my_arm.json", path)
    notes = open_calibration(path, so101)[2]
    assert len(notes) == 1 and "for an SO-100 (so100_follower)" in notes[0] and "SO101 URDF" not in notes[0]
    assert open_calibration(FIXTURES / "so101_follower/erics_first_so101.json", so101)[2] == []


def test_an_arm_not_from_a_urdf_is_refused(tmp_path):
    with pytest.raises(ConfigError, match="not derived from a URDF"):
        open_calibration(FIXTURES / "so_follower/my_arm.json", load_arm("seed-3link"))


def test_an_offset_past_the_register_is_refused(tmp_path):
    data = json.loads((FIXTURES / "so_follower/my_arm.json").read_text())
    data["elbow_flex"]["homing_offset"] = 3000  # a Dynamixel-sized offset: no Feetech servo holds it
    path = tmp_path / "big.json"
    path.write_text(json.dumps(data))
    with pytest.raises(ConfigError, match=r"elbow_flex.homing_offset 3000: the feetech servos of arm 'so101' hold"):
        open_calibration(path, load_arm("so101"))


# --- the command line ------------------------------------------------------------------------------------------


def _armctl(*argv, env_extra=None, tmp_path):
    env = {
        "PATH": "/usr/bin:/bin",
        "HOME": str(tmp_path / "home"),
        "ARMCTL_STATE_DIR": str(tmp_path / "state"),
        "ARMCTL_CONFIG_DIR": str(tmp_path / "config"),
        "PYTHONPATH": str(REPO),
        **(env_extra or {}),
    }
    return subprocess.run([sys.executable, "-m", "armctl", *argv], capture_output=True, text=True, env=env, timeout=120)


@pytest.mark.parametrize(
    ("spec", "fragment"),
    [
        ("lerobot:nope", "ids found: my_arm (in robots/so_follower); erics_first_so101 (in robots/so101_follower)"),
        ("robots/koch_follower/koch.json", "a calibration of LeRobot's koch_follower, not of an SO-100/SO-101 arm"),
        ("other/broken.json", "not valid JSON"),
        ("other/lekiwi.json", "a calibration of another robot?"),
    ],
)
def test_bad_lerobot_calibrations_get_one_line_and_exit_2(tmp_path, lerobot_home, spec, fragment):
    if spec.endswith(".json"):
        spec = str(lerobot_home / spec) if spec.startswith("robots/") else str(FIXTURES / spec)
    run = _armctl(
        "--arm", "so101", "--calibration", spec, "status", tmp_path=tmp_path,
        env_extra={"HF_LEROBOT_CALIBRATION": str(lerobot_home)},
    )  # fmt: skip
    assert run.returncode == 2 and run.stdout == "", run
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1 and fragment in lines[0] and "Traceback" not in run.stderr, run.stderr


def test_lerobots_json_under_a_yaml_name_is_named_as_lerobots(tmp_path):
    """The issue's first symptom ('missing required key version') now says what the file is."""
    renamed = tmp_path / "my_arm.yaml"
    shutil.copy(FIXTURES / "so_follower/my_arm.json", renamed)
    run = _armctl("--arm", "so101", "--calibration", str(renamed), "status", tmp_path=tmp_path)
    assert run.returncode == 2 and run.stdout == ""
    (line,) = run.stderr.strip().splitlines()
    assert "missing required key 'version'" in line and "holds LeRobot's calibration" in line


def test_status_reads_lerobots_angles_and_the_urdfs_tool_point(tmp_path, lerobot_home, so101):
    """The done-when of issue 21 on the default simulated bus (its servos carry the file's offsets and limits)."""
    run = _armctl(
        "--arm", "so101", "--calibration", "lerobot:my_arm", "status", "--json", tmp_path=tmp_path,
        env_extra={"HF_LEROBOT_CALIBRATION": str(lerobot_home)},
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    out = json.loads(run.stdout)
    motors = json.loads((FIXTURES / "so_follower/my_arm.json").read_text())
    lerobot = [lerobot_deg(steps, motors[name]) for name, steps in zip(JOINTS, out["values"])]
    want = [math.degrees(off) + sign * d for (_, off, sign), d in zip(so101.urdf_map, lerobot)]
    assert np.allclose(out["q_deg"], want, atol=0.1)
    assert list(out["urdf_deg"]) == JOINTS and np.allclose(list(out["urdf_deg"].values()), lerobot, atol=0.1)
    assert np.allclose(out["tool_m"], urdf_tool_point(dict(zip(JOINTS, lerobot))), atol=1e-3)
    text = _armctl(
        "--arm", "so101", "--calibration", "lerobot:my_arm", "status", tmp_path=tmp_path,
        env_extra={"HF_LEROBOT_CALIBRATION": str(lerobot_home)},
    ).stdout  # fmt: skip
    line = next(x for x in text.splitlines() if x.startswith("URDF joint angles "))
    assert [float(v) for v in line.split()[4:13:2]] == pytest.approx(lerobot, abs=0.01), line


def urdf_tool_point(lerobot_degrees: dict) -> np.ndarray:
    """Where the URDF puts gripper_frame_link for LeRobot's degrees (its joint angles), in armctl's frame: x, y
    from the shoulder_pan axis (0.0388353 m ahead of base_link's origin), z from the base's underside (2.4 mm
    below base_link's origin); figures of SO-ARM100's so101_new_calib.urdf (FACTS-lerobot section 7)."""
    try:
        import yourdfpy
    except ImportError:
        yourdfpy = None
    require(yourdfpy is not None, "yourdfpy (an independent URDF library): pip install yourdfpy")
    urdf_path = REPO / "armctl/presets/so101.urdf"
    robot = yourdfpy.URDF.load(str(urdf_path), load_meshes=False, build_collision_scene_graph=False)
    cfg = {name: math.radians(deg) for name, deg in lerobot_degrees.items()}
    robot.update_cfg(cfg)
    p = robot.get_transform("gripper_frame_link", "base_link")[:3, 3]
    return np.array([p[0] - 0.0388353, p[1], p[2] + 0.0024])


def test_from_lerobot_writes_the_armctl_calibration_it_means(tmp_path, lerobot_home):
    out = tmp_path / "mine.yaml"
    run = _armctl(
        "--arm", "so101", "calibrate", "--from-lerobot", "my_arm", "--out", str(out), tmp_path=tmp_path,
        env_extra={"HF_LEROBOT_CALIBRATION": str(lerobot_home)},
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    assert f"saved {out}" in run.stdout and "wrist_roll" in run.stdout
    written = load_calibration(out)
    direct, _, _ = open_calibration(lerobot_home / "robots/so_follower/my_arm.json", load_arm("so101"))
    for a, b in zip((*written.servos, *written.held), (*direct.servos, *direct.held)):
        assert (a.name, a.id, a.homing_offset) == (b.name, b.id, b.homing_offset)
        for attr in ("zero_steps", "steps_per_deg", "direction", "min_steps", "max_steps", "position_steps"):
            assert getattr(a, attr, None) == pytest.approx(getattr(b, attr, None)), (a.name, attr)
    same = _armctl(
        "--arm", "so101", "calibrate", "--from-lerobot", "lerobot:my_arm", "--out", str(tmp_path / "same.yaml"),
        tmp_path=tmp_path, env_extra={"HF_LEROBOT_CALIBRATION": str(lerobot_home)},
    )  # fmt: skip
    assert same.returncode == 0, same.stderr  # lerobot:ID, as --calibration takes it
    assert (tmp_path / "same.yaml").read_text().split("\n", 1)[1] == out.read_text().split("\n", 1)[1]
    argv = ("--arm", "so101", "calibrate", "--from-lerobot", "--out", str(tmp_path / "only.yaml"))
    env = {"HF_LEROBOT_CALIBRATION": str(lerobot_home)}
    several = _armctl(*argv, tmp_path=tmp_path, env_extra=env)  # no id, and LeRobot has two: listed, exit 2
    assert several.returncode == 2 and "give the file or id (2 LeRobot calibrations" in several.stderr
    shutil.rmtree(lerobot_home / "robots/so101_follower")
    only = _armctl(*argv, tmp_path=tmp_path, env_extra=env)  # no id, and LeRobot has one: that one
    assert only.returncode == 0 and load_calibration(tmp_path / "only.yaml").joints[0].homing_offset == -1024


def test_compare_takes_lerobots_calibration(tmp_path, lerobot_home):
    """calibrate --compare, like --show, takes lerobot:ID: the YAML --from-lerobot writes is the same mapping
    (0 mm), the shipped example is not (LeRobot's zero is the middle of each recorded range)."""
    env = {"HF_LEROBOT_CALIBRATION": str(lerobot_home)}
    out = tmp_path / "mine.yaml"
    assert _armctl("--arm", "so101", "calibrate", "--from-lerobot", "my_arm", "--out", str(out),
                   tmp_path=tmp_path, env_extra=env).returncode == 0  # fmt: skip
    for other, lo, hi in ((str(out), 0.0, 1e-9), (str(REPO / "armctl/presets/calibration/so101.yaml"), 0.01, 1.0)):
        run = _armctl("--arm", "so101", "calibrate", "--compare", "lerobot:my_arm", other, "--json",
                      tmp_path=tmp_path, env_extra=env)  # fmt: skip
        assert run.returncode == 0, run.stderr
        assert lo <= json.loads(run.stdout)["max_tool_distance_m"] <= hi, run.stdout


# --- the servos' EEPROM ------------------------------------------------------------------------------------------


def _bus(*options: str) -> str:
    return "feetechsim://?ids=1-6&" + "&".join(options)


def test_a_homing_offset_that_differs_is_one_line_naming_the_servo(tmp_path):
    cal_path = FIXTURES / "so_follower/my_arm.json"
    good = "offsets=1:-1024,2:312,3:-180,4:95,5:-40,6:-1407"
    with armctl.connect("so101", _bus(good), calibration=cal_path) as robot:
        assert robot.where().source == "measured"
    bad = "offsets=1:-1024,2:357,3:-180,4:95,5:-40,6:-1407"  # an armctl --write-offsets since: +45 steps
    with pytest.raises(LinkError, match=r"servo 2 \(shoulder_lift\) carries homing offset \+357 in its EEPROM, but "):
        armctl.connect("so101", _bus(bad), calibration=cal_path)


def test_a_range_beyond_the_servos_own_limits_is_clamped_with_a_note(tmp_path, capsys):
    """The example calibration's lift range on servos LeRobot limited to 862..3128."""
    example = load_calibration(REPO / "armctl/presets/calibration/so101.yaml")
    lift = example.joints[1]
    assert lift.max_steps > 3128 or lift.min_steps < 862
    with armctl.connect("so101", _bus("limits=2:862:3128")) as robot:
        clamped = robot.calibration.joints[1]
        assert (clamped.min_steps, clamped.max_steps) == (max(lift.min_steps, 862), min(lift.max_steps, 3128))
    err = capsys.readouterr().err
    assert "servo 2 (shoulder_lift): the calibrated range" in err and "clamped to the servo's own limits" in err


def test_write_offsets_refuses_over_offsets_lerobot_stored_unless_forced(tmp_path):
    """Nothing is written without --force (LeRobot would rewrite its own at its next connect); with it the
    session starts (and is quit here: nothing saved, EEPROM untouched)."""
    import threading
    import time

    from armctl.sim.pty import PtySim
    from tests.calibration.test_calibrate_bus import OLD
    from tests.terminal import Term

    pty = PtySim("feetechsim://?ids=1,2,3,6&offsets=1:-1024,2:312")
    stop = threading.Event()

    def serve():
        while not stop.is_set() and not pty.closed:
            pty.serve(until=time.monotonic() + 0.1)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        cal = tmp_path / "seed-3link.yaml"
        cal.write_text(OLD)
        env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "TERM": "xterm", "PYTHONPATH": str(REPO)}
        env["ARMCTL_STATE_DIR"] = str(tmp_path / "state")
        argv = [sys.executable, "-m", "armctl", "--calibration", str(cal), "--port", pty.path, "calibrate"]
        t = Term([*argv, "--write-offsets"], cwd=tmp_path, env=env)
        t.wait(r"servos 1 \(shoulder\) -1024, 2 \(elbow\) \+312 already carry homing offsets")
        assert t.finish() == 2
        assert "pass --force to write anyway; nothing was changed" in " ".join(t.screen().split())
        t = Term([*argv, "--write-offsets", "--force"], cwd=tmp_path, env=env)
        t.wait("torque off")
        t.send("q")
        assert t.finish() == 130
        assert [pty.sim.servo(i).get("homing_offset") for i in (1, 2, 3, 6)] == [-1024, 312, 0, 0]
        assert cal.read_text() == OLD
    finally:
        stop.set()
        thread.join(timeout=5)
        pty.close()
