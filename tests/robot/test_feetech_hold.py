"""A bus servo held at one position (the SO-101's wrist roll, id 5, for a user who holds it: ``held_joints`` in the
arm's sidecar): ``hold:`` in the calibration.

The YAML key is checked like the rest; the backend brings the held servo from wherever it stands to its
``position_steps`` no faster than ``speed_deg_s`` (no jump, not at start, not after a release or a
stop), holds it there with its torque on, releases it with the joints, names it when it is missing, and
``status`` lists it. The vendor's SDK, reading the simulated bus afterwards, finds it held there.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest

import armctl
from armctl.bus.feetech.client import WRITE
from armctl.calibration.servo import HeldServo, load_calibration, parse_calibration, save_calibration, to_yaml
from armctl.cli import main
from armctl.core.config import load_yaml_text
from armctl.core.paths import PRESET_CALIBRATION_DIR
from armctl.errors import ConfigError, LinkError
from tests.helpers import so101_with_held_roll

ARM = "so101.urdf"  # the so101 with its roll held (``held_arm``), in the working folder
# its calibration: the preset's, the roll servo held at its zero instead of a joint
ROLL_JOINT = "  - {name: wrist_roll, id: 5, zero_steps: 2048, direction: -1, min_steps: 260, max_steps: 3900}\n"
HELD_CAL = (PRESET_CALIBRATION_DIR / "so101.yaml").read_text().replace(ROLL_JOINT, "") + (
    "hold:\n  - {name: wrist_roll, id: 5, position_steps: 2048, speed_deg_s: 60}\n"
)
PER_DEG = 4096 / 360
START = "2048,2048,2050,2048,2731,3000"  # ids 1,2,3,4,6,5: home, and the roll stands 952 steps (84 deg) off its hold


def _port(extra: str = "") -> str:
    return f"feetechsim://?ids=1,2,3,4,6,5&start={START}&rate=1" + (f"&{extra}" if extra else "")


def _parse(text: str):
    return parse_calibration(load_yaml_text(text, "t.yaml"), "t.yaml")


BASE = HELD_CAL.split("\nhold:")[0] + "\n"


@pytest.fixture(autouse=True)
def held_arm(tmp_path, monkeypatch):
    """The working folder holds the arm (so101.urdf, its sidecar holding the roll) and ./calibration/so101.yaml."""
    folder = tmp_path / "arm"
    (folder / "calibration").mkdir(parents=True)
    so101_with_held_roll(folder)
    (folder / "calibration" / "so101.yaml").write_text(HELD_CAL)
    monkeypatch.chdir(folder)
    return folder / "calibration" / "so101.yaml"


def test_the_held_roll_is_held_at_its_calibrated_zero(held_arm):
    assert ROLL_JOINT in (PRESET_CALIBRATION_DIR / "so101.yaml").read_text()
    cal = load_calibration(held_arm)
    assert cal.held == (HeldServo(name="wrist_roll", id=5, position_steps=2048, speed_deg_s=60),)
    assert 5 not in [s.id for s in cal.servos]  # not a joint: the model has no roll
    again = _parse(to_yaml(cal))  # saved and read back: the same hold
    assert again.held == cal.held


@pytest.mark.parametrize(
    "hold, fragment",
    [
        ("[{name: roll, id: 5, position_steps: 2048, spin: 1}]", "unknown key 'hold[0].spin'"),
        ("[{name: roll, id: 4, position_steps: 2048}]", "share id 4"),
        ("[{name: roll, id: 5, position_steps: 5000}]", "hold[0].position_steps"),
        ("[{name: roll, id: 5}]", "missing required key 'hold[0].position_steps'"),
        ("[{name: roll, id: 5, position_steps: 2048, speed_deg_s: 2}]", "hold[0].speed_deg_s"),
        ("{name: roll, id: 5, position_steps: 2048}", "key 'hold': expected a list"),
    ],
)
def test_a_bad_hold_entry_is_one_line_naming_the_key(hold, fragment):
    with pytest.raises(ConfigError) as err:
        _parse(BASE + f"hold: {hold}\n")
    assert fragment in str(err.value) and "\n" not in str(err.value)


def test_a_pwm_calibration_refuses_hold():
    pwm = (PRESET_CALIBRATION_DIR / "mearm.yaml").read_text()
    with pytest.raises(ConfigError, match="only bus servos .* can be held"):
        _parse(pwm + "hold: [{name: roll, id: 5, position_steps: 2048}]\n")


def _trace(robot, servo_id: int) -> list[tuple[float, float]]:
    """Record (simulated time, position) of servo ``servo_id`` every time the simulation advances it."""
    servo = robot.backend.bus.serial.sim.servo(servo_id)
    trace: list[tuple[float, float]] = []
    advance = servo.advance

    def recorded(t: float) -> None:
        advance(t)
        trace.append((servo.t, servo.raw))

    servo.advance = recorded
    return trace


def _fastest(trace, window_s: float = 0.02) -> float:
    """The highest speed (steps/s) over any ``window_s`` of the trace."""
    best, j = 0.0, 0
    for i in range(len(trace)):
        while trace[i][0] - trace[j][0] > window_s:
            j += 1
        if j < i and trace[i][0] - trace[j][0] > window_s / 2:
            best = max(best, abs(trace[i][1] - trace[j][1]) / (trace[i][0] - trace[j][0]))
    return best


def test_the_roll_turns_to_its_hold_no_faster_than_its_speed_and_stays(tmp_path):
    limit = 60 * PER_DEG  # speed_deg_s 60 in steps/s
    with armctl.connect(ARM, _port()) as robot:
        sim = robot.backend.bus.serial.sim
        roll = sim.servo(5)
        assert not roll.torque_on and roll.present_steps() == 3000  # opening moves nothing
        trace = _trace(robot, 5)
        robot.move_to(0.25, 0.05, 0.1, speed=0.1)
        robot.where(settle=True)
        assert roll.torque_on and roll.present_steps() == 2048 and roll.get("goal_position") == 2048
        assert trace[0][1] == pytest.approx(3000, abs=1)  # it started from where it stood ...
        assert _fastest(trace) <= limit * 1.02  # ... and never turned faster than its speed
        assert _fastest(trace) > limit * 0.8  # (it did turn: the test sees motion)
        writes = [p for _, p in sim.log if p.code == WRITE and p.id == 5]
        assert writes[0].params[0] == 46 and int.from_bytes(bytes(writes[0].params[1:3]), "little") == round(limit)
        # a second move leaves it where it is: no new goal for the roll
        before = len([p for _, p in sim.log if p.id == 5 and p.code == WRITE])
        robot.move_to(0.25, -0.05, 0.1, speed=0.1)
        assert len([p for _, p in sim.log if p.id == 5 and p.code == WRITE]) == before
        assert roll.present_steps() == 2048
        # released (teach, calibrate) it goes limp with the joints; the next move brings it back, as slowly
        robot.release()
        assert not roll.torque_on
        assert sim.turn_by_hand(5, 1200)
        trace.clear()
        robot.move_to(0.25, 0.0, 0.12, speed=0.1)
        robot.where(settle=True)
        assert roll.present_steps() == 2048 and trace[0][1] == pytest.approx(1200, abs=1)
        assert limit * 0.8 < _fastest(trace) <= limit * 1.02


def test_a_missing_held_servo_is_named_before_anything_moves():
    with pytest.raises(LinkError, match=r"servo 5 \(wrist_roll\)") as err:
        armctl.connect(ARM, _port("missing=5"))
    assert "\n" not in str(err.value)


def test_status_lists_the_held_servo(capsys):
    assert main(["--arm", ARM, "--port", _port(), "home"]) == 0
    capsys.readouterr()
    assert main(["--arm", ARM, "--port", _port(), "status", "--json"]) == 0
    roll = [s for s in json.loads(capsys.readouterr().out)["servos"] if s["id"] == 5]
    assert roll and roll[0]["name"] == "wrist_roll" and roll[0]["held_at_steps"] == 2048
    assert main(["--arm", ARM, "--port", _port(), "status"]) == 0
    assert "held at 2048" in capsys.readouterr().out


def test_a_saved_hold_position_is_what_the_next_run_holds(tmp_path, held_arm):
    cal = load_calibration(held_arm)
    mine = tmp_path / "so101.yaml"
    save_calibration(
        type(cal)(**{**cal.__dict__, "held": (HeldServo("wrist_roll", 5, 2500.0, 90.0),), "source": str(mine)}),
        mine,
    )
    with armctl.connect(ARM, _port(), calibration=mine) as robot:
        robot.home()
        robot.where(settle=True)
        assert robot.backend.bus.serial.sim.servo(5).present_steps() == 2500


def test_the_vendor_sdk_reads_the_roll_held_at_its_zero(tmp_path):
    """Our run holds the roll; the vendor's SDK, on the same simulated bus (its state file, served on a pty),
    then reads id 5 at 2048 with its torque on."""
    scs = _sdk()
    state = tmp_path / "bus.json"
    with armctl.connect(ARM, _port(f"state={state}")) as robot:
        robot.home()
        robot.where(settle=True)
    proc = subprocess.Popen(
        [sys.executable, "-m", "armctl.bus.sim_pty", f"feetechsim://?ids=1-6&state={state}"],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        path = proc.stdout.readline().strip()
        port = scs.PortHandler(path)
        assert port.openPort()
        ph = scs.PacketHandler(0)
        for _ in range(4):  # the SDK waits a fixed time: a loaded machine can answer late
            port.ser.reset_input_buffer()
            position, result, error = ph.read2ByteTxRx(port, 5, 56)
            if result == scs.COMM_SUCCESS:
                break
        assert (result, error, position) == (scs.COMM_SUCCESS, 0, 2048)
        for _ in range(4):
            port.ser.reset_input_buffer()
            torque, result, _ = ph.read1ByteTxRx(port, 5, 40)
            if result == scs.COMM_SUCCESS:
                break
        assert torque == 1
        port.closePort()
    finally:
        proc.terminate()
        proc.wait(5)


def _sdk():
    from tests.helpers import require

    try:
        import scservo_sdk
    except ImportError:
        scservo_sdk = None
    require(scservo_sdk is not None, "the vendor's Feetech SDK: pip install feetech-servo-sdk")
    return scservo_sdk


def test_a_simulated_bus_saved_before_the_roll_was_held_gets_it_plugged_in(tmp_path, capsys):
    """The default port's state file from a run whose calibration had no id 5: the next run opens (the
    simulated bus plugs the servo in) instead of reporting servo 5 missing."""
    from armctl.sim.feetechsim import FeetechSim, FeetechSimOptions

    state = tmp_path / "state" / "feetechsim-so101.json"
    home = [2048, 2048, 2050, 2048, 2731]
    FeetechSim(FeetechSimOptions(ids=[1, 2, 3, 4, 6], start_steps=home, state=str(state))).save_state()
    assert main(["--arm", ARM, "home"]) == 0
    capsys.readouterr()
    assert main(["--arm", ARM, "status", "--json"]) == 0
    roll = [s for s in json.loads(capsys.readouterr().out)["servos"] if s["id"] == 5][0]
    assert roll["position_steps"] == 2048 and roll["torque"]


def test_calibrate_show_lists_the_held_servo(capsys):
    assert main(["--arm", ARM, "calibrate", "--show"]) == 0
    assert re.search(r"wrist_roll\s+5 held at 2048 steps, turned there at 60 deg/s", capsys.readouterr().out)
    assert main(["--arm", ARM, "calibrate", "--show", "--json"]) == 0
    hold = json.loads(capsys.readouterr().out)["hold"]
    assert hold == [{"name": "wrist_roll", "id": 5, "position_steps": 2048, "speed_deg_s": 60}]
