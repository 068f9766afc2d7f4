"""The calibration workflow's logic and script forms: fits and their refusal, points files, show,
compare, the check square, and the board's stored limits (programmed, persisted, mismatch refused)."""

from __future__ import annotations

import json
import math
import re
import shutil
from pathlib import Path
from types import SimpleNamespace
from urllib.parse import urlencode

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from armctl.bus.armproto.backend import ArmProtocolBackend
from armctl.calibration import procedures as cb
from armctl.calibration.servo import load_calibration, save_calibration, with_servo
from armctl.cli import main
from armctl.core.paths import PRESET_CALIBRATION_DIR
from armctl.model.arm import load_arm
from armctl.robot.robot import Robot

REPO = Path(__file__).resolve().parents[2]
NOMINAL = PRESET_CALIBRATION_DIR / "seed-3link.yaml"


@pytest.fixture(autouse=True)
def _state(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)


@pytest.fixture
def cal_file(tmp_path):
    path = tmp_path / "cal.yaml"
    shutil.copy(NOMINAL, path)
    return path


def sim(tmp_path, **opts) -> str:
    q = {"rate": "50", "seed": "1", "cal": str(NOMINAL), "state": str(tmp_path / "sim.json")}
    q.update({k: str(v) for k, v in opts.items()})
    return "armsim://?" + urlencode(q)


# --- fit ---------------------------------------------------------------------------------------------------


@settings(max_examples=60, deadline=None)
@given(
    zero=st.floats(900, 2100),
    per_deg=st.floats(3, 20),
    direction=st.sampled_from([1, -1]),
    angles=st.lists(st.floats(-100, 100), min_size=2, max_size=6, unique=True),
)
def test_fit_recovers_a_line(zero, per_deg, direction, angles):
    if max(angles) - min(angles) < 5:
        return
    pulses = [zero + direction * per_deg * a for a in angles]
    fit = cb.fit_points(angles, pulses)
    assert fit.zero == pytest.approx(zero, abs=1e-6)
    assert fit.per_deg == pytest.approx(per_deg, rel=1e-9)
    assert fit.direction == direction and fit.max_residual_deg < 1e-6


def test_fit_shows_the_residual_of_three_points():
    fit = cb.fit_points([0, 90, -90], [1500, 2166.5, 833])  # the -90 point is 0.5 us off
    assert 0 < fit.max_residual_deg < 0.1
    assert "residual rms" in fit.describe()[0]
    assert "no residual" in cb.fit_points([0, 90], [1500, 2166]).describe()[0]


def test_inconsistent_points_are_refused_with_the_reason():
    with pytest.raises(cb.FitError) as e:
        cb.fit_points([0, 90, -90], [1500, 2166, 900], label="joint 1 (shoulder)")  # -90 is 9 deg off
    msg = str(e.value)
    assert "joint 1 (shoulder)" in msg and "do not lie on one line" in msg and "-90 deg at 900 us +1.6" in msg
    assert "record the points again" in msg
    with pytest.raises(cb.FitError, match="two or more different angles"):
        cb.fit_points([90, 90], [2166, 2170])
    with pytest.raises(cb.FitError, match="us/deg"):
        cb.fit_points([0, 90], [1500, 1510])  # 0.1 us/deg: not a servo


def test_safe_range_backs_off_each_end():
    assert cb.safe_range(2300, 700, per_deg=7.4, margin_deg=2) == (715.0, 2285.0)
    with pytest.raises(cb.FitError, match="less than 10 deg"):
        cb.safe_range(1500, 1520, per_deg=7.4, margin_deg=2)


def test_reference_poses_stay_inside_the_joint_limits():
    arm = load_arm("seed-3link")
    for i in range(3):
        refs = cb.reference_poses(arm, i)
        assert len(refs) == 3 and [r.angle_deg for r in refs] == [0, 90, -90]
    assert "straight up" in cb.reference_poses(arm, 0)[1].text
    assert "90 deg to link 1" in cb.reference_poses(arm, 1)[1].text


def test_reference_poses_of_a_base_arm_name_the_base_and_the_level_forearm():
    arm = load_arm("mearm")  # base -75..75, shoulder 0..150 from the horizontal, forearm -75..75 from it
    texts = [[r.text for r in cb.reference_poses(arm, i)] for i in range(arm.n)]
    assert "base" in texts[0][0] and "arm points straight ahead" in texts[0][0]
    assert "link 1" in texts[1][0]  # the shoulder: the chain's joint 1
    assert texts[2][0].startswith("the forearm level")  # a parallelogram's joint 2: from the horizontal
    for i in range(arm.n):
        for r in cb.reference_poses(arm, i):
            assert math.radians(r.angle_deg) >= arm.q_min[i] - 1e-9 and math.radians(r.angle_deg) <= arm.q_max[i] + 1e-9


def test_nudges_are_timed_under_the_speed_limit():
    arm = load_arm("seed-3link")
    cal = load_calibration(NOMINAL)
    backend = SimpleNamespace(frame_s=0.020, value_step=lambda channel: None)  # the calibration's step
    n = cb.Nudger(SimpleNamespace(arm=arm, calibration=cal, backend=backend), [1500.0] * 4)
    limit = math.degrees(arm.max_speed_rad_s[0])
    for d in (0.5, 10, 100, 700):
        frames = n.frames_for(0, d)
        assert d / 7.4 / (frames * 0.02) <= cb.NUDGE_SPEED_FRACTION * limit + 1e-9
        assert frames == 1 or d / 7.4 / ((frames - 1) * 0.02) > cb.NUDGE_SPEED_FRACTION * limit


# --- script forms ------------------------------------------------------------------------------------------


def record(cal_file, *args) -> int:
    return main(["--calibration", str(cal_file), "calibrate", *args])


def test_record_fit_save_with_backup(cal_file, tmp_path, capsys):
    before = cal_file.read_bytes()
    for a, us in ((0, 1530), (90, 2200), (-90, 862)):
        assert record(cal_file, "--joint", "1", "--angle", str(a), "--us", str(us)) == 0
    assert record(cal_file, "--joint", "shoulder", "--min-us", "850", "--max-us", "2210") == 0
    assert record(cal_file, "--joint", "gripper", "--angle", "open", "--us", "1790") == 0
    assert record(cal_file, "--joint", "gripper", "--angle", "closed", "--us", "1310") == 0
    points = tmp_path / "seed-3link.points.yaml"  # beside the calibration it is fitted into
    assert points.read_text().count("\n  - {joint:") == 6
    capsys.readouterr()
    assert record(cal_file, "--fit") == 0
    out = capsys.readouterr().out
    assert "joint 1 (shoulder): zero 1530.7 us, 7.433 us/deg, direction +1, residual rms 0.06 deg" in out
    assert "joint 2 (elbow): no points, unchanged" in out
    new = load_calibration(cal_file)
    assert (new.joints[0].min_us, new.joints[0].max_us) == (850, 2210)
    assert (new.gripper.min_us, new.gripper.max_us) == (1310, 1790)
    assert new.joints[1] == load_calibration(NOMINAL).joints[1]
    assert Path(f"{cal_file}.bak").read_bytes() == before
    assert "version: 1" in cal_file.read_text()


def test_fit_from_inconsistent_points_is_refused_and_saves_nothing(cal_file, capsys):
    before = cal_file.read_bytes()
    for a, us in ((0, 1500), (90, 2166), (-90, 900)):
        record(cal_file, "--joint", "2", "--angle", str(a), "--us", str(us))
    capsys.readouterr()
    assert record(cal_file, "--fit") == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "do not lie on one line" in err and "joint 2 (elbow)" in err
    assert cal_file.read_bytes() == before and not Path(f"{cal_file}.bak").exists()
    # a looser limit, asked for explicitly, accepts the same points
    assert record(cal_file, "--fit", "--max-residual-deg", "10") == 0


@pytest.mark.parametrize(
    "args, message",
    [
        (["--joint", "7", "--angle", "0", "--us", "1500"], "expected 1..3"),
        (["--joint", "1", "--angle", "0", "--us", "3000"], "outside 500..2500"),
        (["--joint", "1", "--angle", "0"], "--joint J --angle DEG --us US"),
        (["--joint", "1", "--min-us", "900"], "--min-us US --max-us US"),
        (["--joint", "1", "--angle", "nan", "--us", "1500"], "--angle"),
        (["--fit"], "no points file"),
    ],
)
def test_bad_script_input_is_one_line_exit_2(cal_file, capsys, args, message):
    assert record(cal_file, *args) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err


def test_show_and_compare(cal_file, tmp_path, capsys):
    assert record(cal_file, "--show") == 0
    out = capsys.readouterr().out
    assert "joint 2 (elbow)       1  10   1500.0   7.400  -1     500    2500" in out
    other = tmp_path / "other.yaml"
    cal = load_calibration(cal_file)
    save_calibration(with_servo(cal, 0, zero_us=1500 + 7.4), other)  # shoulder 1 deg off
    assert main(["calibrate", "--compare", str(cal_file), str(other)]) == 0
    out = capsys.readouterr().out
    assert "1.00 deg" in out and "tool up to 15.7 mm apart" in out  # 1 deg at 0.9 m reach
    assert main(["calibrate", "--compare", str(cal_file), str(other), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["max_tool_distance_m"] == pytest.approx(math.radians(1) * 0.9, rel=1e-3)


def test_check_prints_where_to_measure_and_the_simulated_truth(cal_file, tmp_path, capsys):
    port = sim(tmp_path, offset="1.5,0,0")  # the shoulder is 1.5 deg off what the calibration says
    assert main(["--calibration", str(cal_file), "--port", port, "calibrate", "--check", "--speed", "300"]) == 0
    out = capsys.readouterr().out
    assert out.count("should be at") == 4 and "simulated arm at" in out
    errs = [float(v) for v in re.findall(r"off by ([\d.]+) mm", out)]
    corners = cb.check_square(load_arm("seed-3link"))
    expected = [2000 * math.hypot(*c) * math.sin(math.radians(0.75)) for c in corners]  # the shoulder turns 1.5 deg
    assert errs == pytest.approx(expected, abs=0.6)
    # with a calibration that matches the simulated servos, the corners are where they should be
    cal = load_calibration(cal_file)
    save_calibration(with_servo(cal, 0, zero_us=1500 - 1.5 * 7.4), cal_file)
    assert main(["--calibration", str(cal_file), "--port", port, "calibrate", "--push-limits"]) == 0
    capsys.readouterr()
    assert main(["--calibration", str(cal_file), "--port", port, "calibrate", "--check", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)["corners"]
    assert len(rows) == 4 and max(r["error_m"] for r in rows) < 1e-3


def test_check_square_unreachable_is_exit_3_before_any_port(cal_file, capsys):
    args = ["--calibration", str(cal_file), "--port", "/dev/nonexistent", "calibrate", "--check"]
    assert main([*args, "--center", "2", "0"]) == 3


# --- board limits ------------------------------------------------------------------------------------------


def test_fresh_board_gets_the_calibrated_limits_and_keeps_them(cal_file, tmp_path, capsys):
    port = sim(tmp_path)
    assert main(["--calibration", str(cal_file), "--port", port, "home"]) == 0
    saved = json.loads((tmp_path / "sim.json").read_text())["limits_us"]
    # the four calibrated channels carry their limits; the board's spare channels keep 500..2500 us
    assert saved[:4] == [[800, 2200], [500, 2500], [500, 2500], [1250, 1850]]
    assert saved[4:] == [[500, 2500]] * (len(saved) - 4)
    with ArmProtocolBackend(port) as b:  # a new connection: the board remembers (EEPROM)
        assert b.info.limits_us[0] == (800, 2200)
        with pytest.raises(Exception, match="rejected"):  # and enforces them itself
            b.move(1, {0: 2300})
            b.drain()


def test_board_and_host_limits_that_differ_stop_everything(cal_file, tmp_path, capsys):
    port = sim(tmp_path, limits="700:2300,500:2500,500:2500,1250:1850")
    assert main(["--calibration", str(cal_file), "--port", port, "jog", "0.5", "0.2"]) == 4
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert "the board stores 700..2300 us for channel 0 (shoulder)" in err and "800..2200" in err
    assert "armctl calibrate --push-limits" in err
    assert json.loads((tmp_path / "sim.json").read_text())["limits_us"][0] == [700, 2300]  # left alone
    # the fix the message names
    assert main(["--calibration", str(cal_file), "--port", sim(tmp_path), "calibrate", "--push-limits"]) == 0
    assert "channel 0 limits 800..2200 us written" in capsys.readouterr().out
    assert main(["--calibration", str(cal_file), "--port", sim(tmp_path), "jog", "0.5", "0.2"]) == 0


def test_board_refuses_limits_that_exclude_the_held_pulse(tmp_path):
    with ArmProtocolBackend(sim(tmp_path)) as b:
        b.move(1, {0: 900})
        b.drain()
        with pytest.raises(Exception, match=r"held at 900 us, outside the new range"):
            b.set_limits(0, 1000, 2000)
        b.set_limits(0, 850.2, 2000)  # rounded inward to the 0.5 us grid
        assert b.info.limits_us[0] == (850.5, 2000)
        assert b.status().values[0] == 900  # the link survived the rejection


def test_armsim_limits_option_is_checked():
    import serial

    import armctl.bus  # noqa: F401

    with pytest.raises(serial.SerialException, match="LO:HI"):
        serial.serial_for_url("armsim://?limits=900:800")


def test_nudges_over_firmata_are_host_timed_frames_under_the_speed_limit():
    from armctl.bus.firmata import FirmataBackend

    writes, clock = [], [0.0]

    class Fake:
        def __init__(self, **kw):
            pass

        def set_pin_mode_servo(self, pin, lo, hi):
            writes.append(("attach", pin, lo, hi))

        def servo_write(self, pin, value):
            writes.append((clock[0], pin, value))

        def shutdown(self):
            pass

    arm = load_arm("seed-3link")
    cal = load_calibration(NOMINAL)
    b = FirmataBackend(
        "/dev/ttyFAKE",
        pins_range_us={9: (500, 2500)},
        pymata_factory=Fake,
        clock=lambda: clock[0],
        sleep=lambda dt: clock.__setitem__(0, clock[0] + dt),
    )
    pin_cal = with_servo(cal, 0, channel=9)
    with b:
        b.move(1, {9: 1500})
        robot = Robot(arm, pin_cal, b, "/dev/ttyFAKE", calibration_path=NOMINAL)
        n = cb.Nudger(robot, [1500.0, 1500.0, 1500.0, 1800.0])
        n.nudge(0, 100)
        robot.settle()
    assert writes[0] == ("attach", 9, 544, 2500)  # calibrating: the whole pulse range StandardFirmata can send
    moves = [w for w in writes[2:] if w[0] != "attach"]
    assert len(moves) == n.frames_for(0, 100) == 12 and moves[-1][2] == 1600
    steps = np.diff([1500] + [v for _, _, v in moves])
    limit_us_per_frame = cb.NUDGE_SPEED_FRACTION * math.degrees(arm.max_speed_rad_s[0]) * 7.4 * 0.02
    assert max(steps) <= limit_us_per_frame + 1  # whole-us writes round by up to 1 us
