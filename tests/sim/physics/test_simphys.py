"""The simulators in physics (``?physics=1&scene=FILE.yaml``): the wire protocol and everything above it unchanged,
the servos' true angles the plant's, the world readable (``status --json`` key ``world``, ``LiveArm.world()``), the
scene's cameras a camera source (``physicscam://NAME``), and bad input one line, exit 2."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import armctl
from armctl.errors import BadInputError
from armctl.sim import scene as sim_scene
from tests.helpers import require_module

REPO = Path(__file__).resolve().parents[3]
SCENE = REPO / "examples" / "scenes" / "pick_and_place_braccio.yaml"
URL = f"armsim://?arm=braccio&physics=1&scene={SCENE}&speed=10"


@pytest.fixture(autouse=True)
def _mujoco():
    require_module("mujoco", "the physics plant")


def test_a_move_turns_the_plant_joints_and_the_encoders_read_them():
    with armctl.connect("braccio", URL) as robot:
        robot.move_joints([20, 80, -40, -50], degrees=True, speed_fraction=0.8)
        live = sim_scene.latest()
        plant = live.sim.physics.plant
        q_plant = np.degrees(plant.q_rad())
        assert q_plant == pytest.approx([20, 80, -40, -50], abs=1.0)  # the servos hold the arm within 1 deg
        where = robot.where(settle=True)
        assert where.source == "measured"
        assert np.degrees(where.q_rad) == pytest.approx(np.degrees(plant.q_rad()), abs=0.3)
        world = live.world()
        assert set(world["servos_deg"]) == {"base", "shoulder", "elbow", "wrist"}
        assert world["servos_deg"]["base"] == pytest.approx(20, abs=1.0)
        assert set(world["parts"]) == {"part1", "part2", "part3"}
        json.dumps(world)  # JSON-able


def test_a_gripper_closing_on_a_part_carries_it():
    """The part moves because the jaws squeeze it, not because a kinematic rule says so."""
    with armctl.connect("braccio", URL) as robot:
        robot.gripper("open")
        start = np.array(sim_scene.latest().world()["parts"]["part3"]["at_m"])
        robot.move_to(0.310, -0.113, 0.055, phi=math.radians(-45), path="joint")
        robot.move_to(0.310, -0.113, 0.015, phi=math.radians(-45), speed=0.03)
        robot.gripper("close")
        robot.move_to(0.310, -0.113, 0.075, phi=math.radians(-45), speed=0.03)
        world = sim_scene.latest().world()
        part = world["parts"]["part3"]
        assert world["held"] == "part3" and part["held"] and "table" not in part["touches"]
        assert part["at_m"][2] - start[2] == pytest.approx(0.060, abs=0.005)  # lifted with the tool


def test_physics_camera_source_renders_the_live_scene():
    from armctl.vision.sources import open_camera

    with armctl.connect("braccio", URL):
        with open_camera("physicscam://top") as cam:
            frame = cam.read()
            assert frame.shape == (240, 320, 3) and frame.dtype == np.uint8
            assert cam.size == (320, 240) and cam.intrinsics.fx == pytest.approx(120 / math.tan(math.radians(30)))
            assert frame.std() > 5  # a picture, not a blank
        with pytest.raises(BadInputError, match=r"no camera 'front' in scene .*cameras: top, side"):
            open_camera("physicscam://front")
    with pytest.raises(BadInputError, match="physicscam:// renders the physics scene"):
        open_camera("physicscam://top")


def test_kinematic_armsim_has_no_world():
    with armctl.connect("braccio", "armsim://?arm=braccio&rate=20"):
        live = sim_scene.latest()
        assert live.world() is None and live.sim.physics is None


def armctl_cli(*argv, timeout=120):
    return subprocess.run([sys.executable, "-m", "armctl", *argv], capture_output=True, text=True, timeout=timeout)


def test_status_json_gives_the_world():
    p = armctl_cli("--arm", "braccio", "--port", URL, "status", "--json")
    assert p.returncode == 0, p.stderr
    world = json.loads(p.stdout)["world"]
    assert world["parts"]["part1"]["at_m"] == pytest.approx([0.212, -0.253, 0.0], abs=0.001)
    assert world["servos_deg"]["shoulder"] == pytest.approx(90, abs=1.5)


@pytest.mark.parametrize(
    ("query", "says"),
    [
        ("physics=1", "option physics=1 needs scene=FILE.yaml"),
        ("physics=1&scene=/nonexistent/scene.yaml", "/nonexistent/scene.yaml"),
        (f"scene={SCENE}", "give physics=1 too"),
        (f"physics=2&scene={SCENE}", "physics is 0 (the kinematic servos) or 1"),
        ("speed=5", "unknown armsim option 'speed' (without physics=1: rate=X)"),
        (f"physics=1&scene={SCENE}&truth={SCENE}", "physics=1 and truth= do not combine"),
        (f"physics=1&scene={SCENE}&stall=shoulder@1", "physics=1 and stall= do not combine"),
    ],
)
def test_bad_physics_options_are_one_line_exit_2(query, says):
    p = armctl_cli("--arm", "braccio", "--port", f"armsim://?arm=braccio&{query}", "status", timeout=60)
    assert p.returncode == 2, p.stderr
    assert says in p.stderr and len(p.stderr.strip().splitlines()) == 1, p.stderr


def test_a_bad_scene_is_one_line_naming_the_file(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("parts:\n  - {name: a, shape: box, size_m: [0.02, 0.02, 0.02], mass_g: 5, at_m: [0.2, 0, -0.01]}\n")
    p = armctl_cli("--arm", "braccio", "--port", f"armsim://?arm=braccio&physics=1&scene={bad}", "status", timeout=60)
    assert p.returncode == 2 and "inside the table" in p.stderr and str(bad) in p.stderr, p.stderr
    assert len(p.stderr.strip().splitlines()) == 1


def test_missing_mujoco_is_one_line_naming_the_extra():
    code = (
        "import sys; sys.modules['mujoco'] = None\n"
        "from armctl.cli import main\n"
        f"sys.exit(main(['--arm', 'braccio', '--port', {URL!r}, 'status']))\n"
    )
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert p.returncode == 2, p.stderr
    assert "pip install 'armctl[physics]'" in p.stderr and len(p.stderr.strip().splitlines()) == 1, p.stderr


SO101_SCENE = REPO / "examples" / "scenes" / "pick_and_place_so101.yaml"
SO101_URL = f"feetechsim://?arm=so101&physics=1&scene={SO101_SCENE}&speed=10"


def test_feetech_bus_servos_move_the_plant_and_report_its_load():
    """Present_Position is where the plant has each joint; Present_Load is its actuator's torque over stall: the
    shoulder holding the arm out carries load, the base turning about the vertical none."""
    with armctl.connect("so101", SO101_URL) as robot:
        robot.move_joints([20, 60, -60, 10, 30], degrees=True, speed_fraction=0.5)
        plant = sim_scene.latest().sim.physics.plant
        where = robot.where(settle=True)
        assert where.source == "measured"
        assert np.degrees(where.q_rad) == pytest.approx(np.degrees(plant.q_rad()), abs=0.2)  # a step is 0.088 deg
        assert np.degrees(plant.q_rad()) == pytest.approx([20, 60, -60, 10, 30], abs=1.0)
        loads = {sid: sv["load_fraction"] for sid, sv in robot.board_status().servos.items()}
        expected = plant.load()
        assert loads[2] == pytest.approx(expected[1], abs=0.02) and abs(loads[2]) > 0.1
        assert abs(loads[1]) < 0.02


def test_feetech_torque_off_leaves_the_joint_limp():
    """Torque off: the plant's actuator gives nothing, and the arm falls under gravity (the shoulder leaves 60 deg)."""
    with armctl.connect("so101", SO101_URL) as robot:
        robot.move_joints([0, 60, -60, 10, 0], degrees=True, speed_fraction=0.5)
        live = sim_scene.latest()
        before = np.degrees(live.sim.physics.plant.q_rad())[1]
        servo = next(s for s in live.sim.servos if s.id == 2)
        with live.lock:
            servo.write(40, bytes([0]))  # Torque_Enable 0, as a host would write it
        robot_time = live.now_s()
        while live.now_s() < robot_time + 1.0:
            pass
        after = np.degrees(live.sim.physics.plant.q_rad())[1]
        assert abs(after - before) > 5.0


def test_pca9685_outputs_move_the_plant():
    """A PCA9685's outputs drive the plant's servos: the true angles (the scene's) are the plant's, in real time."""
    url = f"pca9685sim://?arm=braccio&physics=1&scene={SCENE}"
    with armctl.connect("braccio", url, assume_pose="home") as robot:
        robot.move_joints([20, 80, -40, -50], degrees=True, speed_fraction=0.8)
        live = sim_scene.latest()
        world = live.world()
        assert np.degrees(live.true_q_rad()) == pytest.approx(list(world["servos_deg"].values()), abs=0.05)
        assert world["servos_deg"]["base"] == pytest.approx(20, abs=1.0)
        assert world["servos_deg"]["shoulder"] == pytest.approx(80, abs=1.5)
