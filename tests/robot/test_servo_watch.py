"""Issue 38: bus servos watched as they move. A load above the arm file's ``max_load_pct`` (a blocked joint, a part
heavier than the arm file says) or a temperature above ``max_temp_c`` (a slow heat-up under load) stops the arm
with one line naming the servo, its load or temperature, the limit (and the load the model expects), exit 4, and
nothing moves after; the gripper closes until contact (``gripper: {close: until_contact, max_load_pct}``): on a
part it stops and holds it with its load at the cap, on nothing it closes fully. All on the simulated bus."""

from __future__ import annotations

import re
import time
from collections import Counter
from pathlib import Path

import pytest
import yaml

import armctl
from armctl.bus.feetech.client import SYNC_READ, SYNC_WRITE
from armctl.bus.feetech.watch import GRIP_MARGIN_PCT, LOAD_FRAMES, ServoOverload, ServoWatch, WatchLimits
from armctl.cli import main
from armctl.core.paths import PRESET_DIR
from armctl.errors import ConfigError, LinkError
from armctl.model.arm import load_arm
from armctl.program import load_program_text
from armctl.sim import scene
from tests.robot.test_feetech_robot import BUS_CAL as CAL  # the same bus servos, ids 1, 2, 3 and 6

ARM = """\
name: seed-3link
links_m: [0.40, 0.30, 0.20]
joints:
  - {name: shoulder, min_deg: -90, max_deg: 90, max_speed_deg_s: 120, servo: sts3215}
  - {name: elbow, min_deg: -135, max_deg: 135, max_speed_deg_s: 150, servo: sts3215}
  - {name: wrist, min_deg: -135, max_deg: 135, max_speed_deg_s: 180, servo: sts3215}
home_deg: [45, -90, -45]
gripper: {open_deg: 60, closed_deg: 10, max_speed_deg_s: 180, servo: sts3215GRIP}
"""
PORT = "feetechsim://?ids=1,2,3,6&start=2560,3072,1536,2183&rate=1"
PICK = "steps:\n  - pick: {xyz_mm: [190, -120, 30]}\n    hover_mm: 20\n"  # a 30 mm part lying at (190, -120)


def _arm(tmp_path, extra: str = "", grip: str = "") -> tuple[Path, Path]:
    arm, cal = tmp_path / "arm.yaml", tmp_path / "cal.yaml"
    arm.write_text(ARM.replace("GRIP", grip) + extra)
    cal.write_text(CAL)
    return arm, cal


def _so101(tmp_path, top: dict | None = None, gripper: dict | None = None) -> str:
    """A copy of the so101 preset with ``top`` keys added to its sidecar and ``gripper`` keys changed."""
    (tmp_path / "so101.urdf").write_text((PRESET_DIR / "so101.urdf").read_text())
    side = yaml.safe_load((PRESET_DIR / "so101.armctl.yaml").read_text())
    side.update(top or {})
    side["gripper"].update(gripper or {})
    side["gripper"] = {k: v for k, v in side["gripper"].items() if v is not None}
    (tmp_path / "so101.armctl.yaml").write_text(yaml.safe_dump(side))
    return str(tmp_path / "so101.urdf")


def _goal_writes(sim) -> int:
    return sum(1 for _, p in sim.log if p.code == SYNC_WRITE and p.params[0] == 42)


def test_a_blocked_joint_over_max_load_pct_stops_the_arm_in_one_line(tmp_path, capsys):
    arm, cal = _arm(tmp_path, "max_load_pct: 50\n")
    port = PORT + "&stops=1:2555:2700"  # an obstacle 0.4 deg on from where the shoulder starts, 4.3 deg short
    argv = ["--arm", str(arm), "--calibration", str(cal), "--port", port, "jog", "0.62", "-0.1", "--speed", "100"]
    assert main(argv) == 4
    err = capsys.readouterr().err
    assert err.count("\n") == 1, err
    assert re.search(r"servo 1 \(shoulder\) reports \d+% load, above max_load_pct 50% for 3 frames", err), err
    assert "the arm was stopped" in err and "stalled" not in err  # the load speaks before the stall watch


def test_after_the_stop_nothing_moves_and_the_blocked_servo_stops_pushing(tmp_path):
    arm, cal = _arm(tmp_path, "max_load_pct: 50\n")
    with armctl.connect(str(arm), PORT, calibration=cal) as robot:
        sim = robot.backend.bus.serial.sim
        robot.move_to(0.5, 0.2, speed=0.3)
        shoulder = sim.servo(1)
        sim.set_stops(1, shoulder.raw - 40, shoulder.raw + 40)  # a hand, a wall: the shoulder is held
        with pytest.raises(LinkError, match=r"servo 1 \(shoulder\) reports \d+% load, above max_load_pct 50%"):
            robot.move_to(0.62, -0.1, speed=0.3)
        writes = _goal_writes(sim)
        sim.pump(sim.now + 0.2)  # the servos come to rest where the stop caught them
        here = {s.id: s.present_steps() for s in sim.servos}
        time.sleep(0.3)
        sim.pump(sim.now + 1.0)
        assert _goal_writes(sim) == writes  # nothing more was sent
        assert {s.id: s.present_steps() for s in sim.servos} == here  # nothing moved
        assert all(s.get("goal_position") == s.present_steps() for s in sim.servos if s.torque_on)  # each holds
        assert shoulder.load == 0 and not shoulder.overloaded  # held where it stands: no longer pushing


def test_a_part_heavier_than_the_arm_file_says_overloads_the_shoulder(tmp_path):
    urdf = _so101(tmp_path, {"max_load_pct": 60})
    truth = tmp_path / "truth.yaml"
    truth.write_text("parts:\n  - {marker: 1, x_mm: 190, y_mm: -120, size_mm: 30, mass_g: 600}\n")
    port = f"feetechsim://?arm={urdf}&truth={truth}&rate=20"
    with armctl.connect(urdf, port) as robot:
        with pytest.raises(LinkError) as err:
            robot.run(load_program_text(PICK, "<pick>"))
        live = scene.latest()
        assert live.held() is not None  # it took the part, and then could not lift it within the limit
    line = str(err.value)
    assert "\n" not in line
    found = re.search(
        r"servo (\d) \((\w+)\) reports (\d+)% load, above max_load_pct 60% for 3 frames \(the model expects "
        r"(\d+)% to hold this pose: blocked, or carrying more than the arm file says\); the arm was stopped",
        line,
    )
    assert found, line
    assert found[2] in ("shoulder_lift", "elbow_flex") and int(found[3]) > 60 and int(found[4]) < int(found[3]) - 10


def test_a_slow_heat_up_over_max_temp_c_stops_the_arm(tmp_path):
    urdf = _so101(tmp_path, {"max_temp_c": 30})
    with armctl.connect(urdf, f"feetechsim://?arm={urdf}&rate=50") as robot:  # 50 simulated s a second
        sim = robot.backend.bus.serial.sim
        with pytest.raises(LinkError) as err:
            for k in range(200):  # the arm holds itself up: about 30 % load, 25 + 0.3 x 40 degC in the end
                robot.move_joints([0, 76 - 10 * (k % 2), -74, -5, 0], degrees=True)
        temps = {s.id: s.temp_c for s in sim.servos}
    found = re.search(
        r"servo (\d) \((\w+)\) is at (\d+) degC, above max_temp_c 30; the arm was stopped", str(err.value)
    )
    assert found, err.value
    assert int(found[3]) == 31 and 30.5 <= temps[int(found[1])] < 31.5  # caught as it passed the limit
    assert sim.now > 20.0  # a slow heat-up: tens of simulated seconds


def test_the_gripper_closes_until_contact_and_holds_the_part_at_its_torque_cap(tmp_path):
    urdf = _so101(tmp_path, gripper={"max_load_pct": 30})
    truth = tmp_path / "truth.yaml"
    truth.write_text("parts:\n  - {marker: 1, x_mm: 190, y_mm: -120, size_mm: 30, mass_g: 50}\n")
    with armctl.connect(urdf, f"feetechsim://?arm={urdf}&truth={truth}&rate=20") as robot:
        sim, be = robot.backend.bus.serial.sim, robot.backend
        grip = sim.servo(robot.calibration.gripper.id)
        robot.run(load_program_text(PICK, "<pick>"))
        robot.move_to(0.2, 0.05, 0.12, speed=0.1)  # carried away, still held
        assert scene.latest().held() is not None
        assert grip.get("torque_limit") == 300  # the cap, in the servo's own register
        assert 0.29 <= abs(grip.load) / 1000 <= 0.30 + GRIP_MARGIN_PCT / 100  # pushing on it with the capped torque
        assert not grip.overloaded and grip.temp_c < 40
        closed = robot.calibration.gripper.value(robot.arm.gripper.closed_rad)
        assert be.watch.contact == pytest.approx(grip.present_steps(), abs=2)
        assert abs(grip.present_steps() - closed) > 200  # stopped by the part, far from closed
        robot.gripper("open")
        assert scene.latest().held() is None and be.watch.contact is None


def test_the_gripper_closing_until_contact_on_nothing_closes_fully(tmp_path):
    urdf = _so101(tmp_path, gripper={"max_load_pct": 30})
    with armctl.connect(urdf, f"feetechsim://?arm={urdf}&rate=20") as robot:
        grip = robot.backend.bus.serial.sim.servo(robot.calibration.gripper.id)
        robot.gripper("open")
        robot.gripper("close")
        closed = robot.calibration.gripper.value(robot.arm.gripper.closed_rad)
        assert abs(grip.present_steps() - closed) <= 1 and robot.backend.watch.contact is None
        assert abs(grip.load) < 50  # closed, nothing in the jaws


def test_the_per_frame_read_takes_load_and_temperature_only_when_watched(tmp_path):
    plain, cal = _arm(tmp_path)
    watched = tmp_path / "watched.yaml"
    watched.write_text(plain.read_text() + "max_temp_c: 60\n")
    counts = {}
    for arm in (plain, watched):
        with armctl.connect(str(arm), PORT, calibration=cal) as robot:
            robot.move_to(0.5, 0.2, speed=0.3)
            reads = [tuple(p.params[:2]) for _, p in robot.backend.bus.serial.sim.log if p.code == SYNC_READ]
            counts[arm.stem] = Counter(reads)
    # the frames' reads: 56..57 (the position), or 56..63 (position to temperature); the one 56..66 is status()
    assert counts["arm"][(56, 2)] > 40 and counts["arm"][(56, 8)] == 0
    assert counts["watched"][(56, 8)] > 40 and counts["watched"][(56, 2)] < 10


def test_close_and_max_load_pct_in_arm_files_and_sidecars(tmp_path, capsys):
    arm, _ = _arm(tmp_path, grip=", close: until_contact, max_load_pct: 25")
    g = load_arm(str(arm)).gripper
    assert (g.close, g.max_load_pct) == ("until_contact", 25.0)
    arm, _ = _arm(tmp_path, grip=", close: until_contact")
    assert load_arm(str(arm)).gripper.max_load_pct == 30.0  # the default cap
    assert (load_arm("seed-3link").gripper.close, load_arm("seed-3link").gripper.max_load_pct) == ("position", None)
    g = load_arm(_so101(tmp_path, gripper={"max_load_pct": 35})).gripper
    assert (g.close, g.max_load_pct) == ("until_contact", 35.0)
    g = load_arm(_so101(tmp_path, gripper={"close": "position", "max_load_pct": None})).gripper
    assert (g.close, g.max_load_pct) == ("position", None)


@pytest.mark.parametrize(
    ("grip", "fragment"),
    [
        (
            ", max_load_pct: 30",
            "key 'gripper.max_load_pct': caps the gripper's torque closing until contact: add close",
        ),
        (", close: squeeze", "key 'gripper.close': 'squeeze' is not one of: position, until_contact"),
        (", close: until_contact, max_load_pct: 0", "key 'gripper.max_load_pct': 0 is out of range: must be > 0"),
        (", close: until_contact, max_load_pct: 150", "key 'gripper.max_load_pct': 150 is out of range"),
    ],
)
def test_bad_gripper_close_keys_are_one_line_exit_2(tmp_path, capsys, grip, fragment):
    arm, _ = _arm(tmp_path, grip=grip)
    assert main(["--arm", str(arm), "fk", "45", "-90", "-45"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and fragment in err, err


def test_until_contact_needs_a_bus_servo(tmp_path):
    arm = tmp_path / "arm.yaml"
    arm.write_text(ARM.replace("servo: sts3215GRIP", "servo: mg996r, close: until_contact"))
    with pytest.raises(
        ConfigError, match="until_contact needs a bus servo that reports its load; the gripper's is MG996R"
    ):
        load_arm(str(arm))


def test_a_load_spike_shorter_than_the_watch_frames_does_not_stop_the_arm():
    watch = ServoWatch(WatchLimits(max_load_pct=50.0), names={2: "elbow"})
    over, under = {2: {"present_load": 600}}, {2: {"present_load": 300}}
    for _ in range(2):  # a spike of LOAD_FRAMES - 1 frames, then back under: nothing
        for _ in range(LOAD_FRAMES - 1):
            watch.check(over, dict)
        watch.check(under, dict)
    for _ in range(LOAD_FRAMES - 1):
        watch.check({2: {"present_load": -600}}, dict)  # the direction bit plays no part
    with pytest.raises(ServoOverload, match=r"servo 2 \(elbow\) reports 60% load, above max_load_pct 50% for 3 fr"):
        watch.check(over, dict)


def test_status_gives_the_load_the_model_expects_beside_the_one_reported(capsys):
    """The SO-101 preset (its gripper closes until contact: watched) holding its home pose on the simulated bus:
    each joint servo reports the load the model expects (the simulator carries the same arm), to the register's
    0.1 %; the gripper has no model."""
    with armctl.connect("so101", "feetechsim://?arm=so101&rate=10") as robot:
        robot.home()
        servos = robot.backend.status().servos
    for i in (1, 2, 3, 4, 5):
        assert abs(servos[i]["load_fraction"]) == pytest.approx(servos[i]["expected_load_fraction"], abs=1.5e-3), i
    assert servos[2]["expected_load_fraction"] > 0.2 and "expected_load_fraction" not in servos[6]
    assert main(["--arm", "so101", "--port", "feetechsim://?arm=so101&rate=10", "status"]) == 0
    assert re.search(r"shoulder_lift .* load +0\.0 % .*\(model: \d+ %\)", capsys.readouterr().out)  # torque off
