"""When armctl does not know the pose: a board that reset when its port opened (its servos have no pulses) and
cannot read where they are (``armsim://?encoders=0``: a real Uno's PWM servos), with the stored pose lost or
corrupt. Nothing may move until the user says where the arm stands: one line naming the file and what is wrong
with it, exit 2, and the simulated board logs no pulse. With ``assume_pose`` / ``--assume-pose`` the first
motion starts from that pose and ramps within the speed limits. A journal whose times cannot be true is not
waited on (it used to hold ``connect`` for 66 s).
"""

from __future__ import annotations

import math
import os
import shutil
import sys
import time
from pathlib import Path

import numpy as np
import pytest

import armctl
from armctl.calibration.servo import find_calibration, load_calibration
from armctl.cli import main
from armctl.errors import PoseUnknownError
from armctl.model.arm import load_arm
from armctl.robot.state import PoseStore, cal_digest

ARM = "seed-3link"
FAR_DEG = [-60.0, 60.0, -40.0]  # far from home: declaring home here would be a jump of 75..150 deg


def _port(tmp_path: Path, encoders: int = 0) -> str:
    return f"armsim://?rate=20&seed=1&encoders={encoders}&state={tmp_path / 'sim.json'}"


def _left_far(tmp_path: Path) -> tuple[str, Path]:
    """The arm driven to FAR_DEG and left there (a clean close): (port, its pose file)."""
    port = _port(tmp_path)
    with armctl.connect(ARM, port, assume_pose="home") as robot:  # the simulated arm starts at home
        robot.move_joints(FAR_DEG, degrees=True, speed_fraction=1.0)
        path = robot._journal.store.path
        url = robot.port
    assert path.is_file()
    return url, path


def _crafted(url: str, **change) -> None:
    """Store (whole, with a valid checksum) the pose FAR_DEG with ``change`` applied to its fields."""
    arm = load_arm(ARM)
    cal = load_calibration(find_calibration(ARM))
    q = np.radians(FAR_DEG)
    values = [float(s.value(a)) for s, a in zip(cal.joints, q)] + [float(cal.gripper.value(arm.gripper.open_rad))]
    fields = {"q_rad": q, "gripper_rad": arm.gripper.open_rad, "values": values, "cal": cal_digest(cal)}
    fields.update(change)
    store = PoseStore(url, arm)
    try:
        store.save(
            fields.pop("q_rad"),
            fields.pop("gripper_rad"),
            fields.pop("values"),
            clean=fields.pop("clean", True),
            **fields,
        )
    finally:
        store.close()


def _corrupt(case: str, url: str, path: Path) -> str:
    """Damage the stored pose as ``case`` says; returns the words the refusal must contain."""
    cal = load_calibration(find_calibration(ARM))
    if case == "random bytes":
        path.write_bytes(os.urandom(1024))
        return "no whole record"
    if case == "truncated":
        path.write_bytes(path.read_bytes()[:300])  # the older slot is whole, the newest cut off: not a pose to use
        return "truncated (300 bytes of 1024)"
    if case == "empty state folder":
        shutil.rmtree(path.parent)  # a new PC
        return "no pose is stored"
    if case == "nan angles":
        _crafted(url, q_rad=[math.nan, math.radians(60), math.radians(-40)])
        return "not finite"
    if case == "outside the limits":
        q = np.radians([-60.0, 200.0, -40.0])
        _crafted(url, q_rad=q, values=[float(s.value(a)) for s, a in zip(cal.joints, q)] + [None])
        return "outside its limits"
    if case == "values disagree":
        _crafted(url, values=[float(s.value(0.0)) for s in cal.joints] + [None])
        return "disagree with its joint angles"
    raise AssertionError(case)


CASES = ["random bytes", "truncated", "nan angles", "outside the limits", "values disagree", "empty state folder"]


@pytest.mark.parametrize("case", CASES)
def test_an_unknown_pose_moves_nothing_and_says_why(case, tmp_path):
    url, path = _left_far(tmp_path)
    words = _corrupt(case, url, path)
    with armctl.connect(ARM, _port(tmp_path)) as robot:
        why = robot.pose_unknown
        assert words in why and str(path) in why, why
        assert robot.where().source == "unknown" and robot.hold_stored_pose() == {}
        with pytest.raises(PoseUnknownError) as err:
            robot.move_to(0.4, 0.1)
        assert err.value.exit_code == 2 and "\n" not in str(err.value) and "--assume-pose" in str(err.value)
        with pytest.raises(PoseUnknownError):
            robot.home()
        sim = robot.backend.ser.sim
        sim.pump(robot.backend.ser.sim_time_s())
        assert list(sim.pulses) == []  # not one pulse: the servos still stand where they were


@pytest.mark.parametrize("case", CASES)
def test_the_command_line_refuses_in_one_line_exit_2_no_pulse(case, tmp_path, capsys, monkeypatch):
    url, path = _left_far(tmp_path)
    words = _corrupt(case, url, path)
    monkeypatch.setattr("sys.stdin.isatty", lambda: False, raising=False)
    wire = tmp_path / "wire.txt"
    code = main(["--port", _port(tmp_path), "jog", "0.4", "0.1", "--wire-log", str(wire)])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1, err
    assert words in err[0] and str(path) in err[0] and "--assume-pose" in err[0], err
    sent = wire.read_text() if wire.exists() else ""
    assert " M " not in sent and "b'1 M" not in sent  # no move line went to the board


def test_a_board_that_reads_its_servos_starts_from_what_it_measures(tmp_path):
    """Ask the board, not its kind: the simulator with encoders (encoders=1) needs no word from the user."""
    url, path = _left_far(tmp_path)
    path.write_bytes(os.urandom(1024))
    with armctl.connect(ARM, _port(tmp_path, encoders=1)) as robot:
        assert robot.pose_unknown == ""
        start = robot.commanded_pose()
        assert start.source == "assumed" and "measured" in start.detail
        assert start.q_deg == pytest.approx(FAR_DEG, abs=0.2)  # no jump


def _assumed_first_pulses_and_speed(robot, q_deg) -> None:
    """The first pulse of every joint is the assumed pose's; no later step passes the joint's speed limit."""
    sim = robot.backend.ser.sim
    sim.pump(robot.backend.ser.sim_time_s())
    cal, arm = robot.calibration, robot.arm
    for i, s in enumerate(cal.joints):
        widths = [w for _, ch, w in sim.pulses if ch == s.channel and w is not None]
        assert widths[0] == pytest.approx(float(s.value(math.radians(q_deg[i]))), abs=s.resolution)
        per_frame = math.degrees(arm.max_speed_rad_s[i]) * 0.020 * s.per_deg
        assert float(np.max(np.abs(np.diff(widths)))) <= per_frame + 2 * s.resolution, s.name


def test_assume_pose_home_ramps_from_home_within_the_speed_limits(tmp_path):
    with armctl.connect(ARM, _port(tmp_path), assume_pose="home") as robot:  # a new PC: nothing stored
        robot.move_to(0.4, 0.1)
        _assumed_first_pulses_and_speed(robot, np.degrees(robot.arm.home_rad))
        assert robot.where().tool_m == pytest.approx([0.4, 0.1], abs=1e-3)


def test_assume_pose_by_joint_angles_on_the_command_line(tmp_path, capsys):
    url, path = _left_far(tmp_path)
    path.write_bytes(b"")  # lost
    wire = tmp_path / "wire.txt"
    q = ",".join(f"{v:g}" for v in FAR_DEG)
    assert main(["--port", _port(tmp_path), f"--assume-pose={q}", "home", "--wire-log", str(wire)]) == 0, (
        capsys.readouterr().err
    )
    with armctl.connect(ARM, _port(tmp_path, encoders=1)) as robot:
        assert robot.where().q_deg == pytest.approx(list(np.degrees(robot.arm.home_rad)), abs=0.2)
    # the first move line sets the pose the user gave: the arm was there, so no jump
    cal = load_calibration(find_calibration(ARM))
    first = next(line for line in wire.read_text().splitlines() if " > " in line and " M " in line)
    for s, deg in zip(cal.joints, FAR_DEG):
        assert (
            f"{float(s.value(math.radians(deg))):g}" in first
            or str(round(float(s.value(math.radians(deg))) * 2)) in first
        )


def test_assume_pose_outside_the_limits_is_refused_before_the_port_opens(tmp_path):
    with pytest.raises(armctl.BadInputError, match="outside its limits"):
        armctl.connect(ARM, _port(tmp_path), assume_pose=[0.0, math.radians(200), 0.0])


def test_a_terminal_is_asked_and_only_yes_moves(tmp_path, monkeypatch, capsys):
    import io

    class Tty(io.StringIO):
        def isatty(self):
            return True

    monkeypatch.setattr("sys.stderr", Tty())
    monkeypatch.setattr("sys.stdin", Tty("n\n"))
    assert main(["--port", _port(tmp_path), "home", "--json"]) == 2  # (--json: no progress line)
    assert "is it at home? [y/N]" in sys.stderr.getvalue()
    monkeypatch.setattr("sys.stdin", Tty("y\n"))
    assert main(["--port", _port(tmp_path), "home", "--json"]) == 0


def test_an_older_record_without_a_calibration_digest_is_accepted(tmp_path):
    url, _ = _left_far(tmp_path)
    _crafted(url, cal="")  # as armctl before this check wrote it (checksummed, no digest)
    with armctl.connect(ARM, _port(tmp_path)) as robot:
        assert robot.pose_unknown == ""
        assert robot.commanded_pose().q_deg == pytest.approx(FAR_DEG, abs=0.1)


@pytest.mark.parametrize(
    "change",
    [
        {"time_s": 1e9, "hold_in_s": 0.5},  # dated 30 years in the future
        {"time_s": 0.0, "hold_in_s": 1e9},  # the board plays on for 30 years
    ],
)
def test_a_journal_whose_times_cannot_be_true_is_not_waited_on(tmp_path, change, monkeypatch):
    url, _ = _left_far(tmp_path)
    real = time.time
    monkeypatch.setattr("armctl.robot.state.time.time", lambda: real() + change["time_s"])
    _crafted(url, clean=False, hold_in_s=change["hold_in_s"])
    monkeypatch.setattr("armctl.robot.state.time.time", real)
    t0 = time.monotonic()
    with armctl.connect(ARM, _port(tmp_path)) as robot:
        took = time.monotonic() - t0
        assert "suspect" in robot.recovered
        assert "future" in robot.pose_unknown or "plays on" in robot.pose_unknown
    assert took < 3.0, f"connect waited {took:.1f} s on a file"


def test_a_long_but_possible_journal_wait_is_capped(tmp_path):
    url, _ = _left_far(tmp_path)
    _crafted(url, clean=False, hold_in_s=60.0)  # possible with a 65 s watchdog: waited on, but a few s at most
    t0 = time.monotonic()
    with armctl.connect(ARM, _port(tmp_path)) as robot:
        took = time.monotonic() - t0
        assert robot.pose_unknown == ""
    assert took < 4.0, f"connect waited {took:.1f} s on a file"
