"""The physics plant (armctl.sim.physics.plant, mjcf): the arm MuJoCo builds from armctl's model stands where
armctl's FK says, a gripped part is carried and put down where the tool put it, and bad input is one line."""

from __future__ import annotations

import math
import sys

import numpy as np
import pytest

from armctl import ik
from armctl.errors import BadInputError, ConfigError
from armctl.model.arm import load_arm
from armctl.model.hand import jaw_yaw_roll
from tests.helpers import require_module

require_module("mujoco", "the physics plant runs in MuJoCo (pip install armctl[physics])")

from armctl.sim.physics.plant import Plant  # noqa: E402
from armctl.sim.physics.scenefile import Scene, Table, parse_scene  # noqa: E402

PRESETS = ("so101", "eezybot-mk2", "mearm", "braccio", "seed-2link", "seed-3link")
FAR_TABLE = Scene(table=Table(size_m=(0.1, 0.1, 0.02), center_m=(5.0, 5.0)))  # nothing under the arm
FRAME_S = 0.02  # commands every 20 ms, as armctl streams them


def drive(plant: Plant, q_to, duration_s: float) -> None:
    """Stream a joint-space line from the pose last commanded to ``q_to`` over ``duration_s``, then step to its end."""
    q_from = getattr(plant, "_test_cmd", plant.arm.home_rad)
    n = max(1, round(duration_s / FRAME_S))
    t0 = plant.time_s
    for k in range(1, n + 1):
        for i, v in enumerate(q_from + (np.asarray(q_to) - q_from) * k / n):
            plant.command(i, v, t0 + (k - 1) * FRAME_S)
    plant._test_cmd = np.array(q_to, dtype=float)
    plant.advance(t0 + n * FRAME_S)


def random_poses(arm, count: int, seed: int) -> list:
    """Poses inside every limit (a parallelogram's coupled ones too), 5% of each range from the stops."""
    rng = np.random.default_rng(seed)
    span = arm.q_max - arm.q_min
    out = []
    while len(out) < count:
        q = arm.q_min + span * rng.uniform(0.05, 0.95, arm.n)
        if arm.within_limits(q):
            out.append(q)
    return out


@pytest.mark.parametrize("name", PRESETS)
def test_the_built_arm_stands_where_armctl_fk_says(name):
    """Driven slowly to random poses with no payload, the simulated tool point is armctl's FK of the servos' true
    angles (the MJCF's geometry: measured 6e-8 mm and less) and the servos end within a few degrees of their
    targets (deadband and gravity: measured 0.3-1.3 deg; the PWM arms' deadband is 0.3-1 deg)."""
    arm = load_arm(name)
    plant = Plant(arm, FAR_TABLE)
    worst_mm, worst_deg = 0.0, 0.0
    for q in random_poses(arm, 4, seed=len(name)):
        drive(plant, q, 1.5)
        plant.advance(plant.time_s + 0.5)
        true_q = plant.q_rad()
        pose, want = plant.tool_pose(), arm.tool_pose(true_q)
        worst_mm = max(worst_mm, 1000 * np.linalg.norm(pose[:3, 3] - want[:3, 3]))
        # the physical hand's frame: armctl's tool frame turns its y and z about when a roll-less arm reaches back
        # over the base axis; the level hand's equality is a stiff constraint (measured 7e-5)
        side = 1.0 if arm.roll is not None else float(arm.base_side(true_q))
        assert np.allclose(pose[:3, :3] * [1.0, side, side], want[:3, :3], atol=1e-3)
        worst_deg = max(worst_deg, float(np.max(np.degrees(np.abs(true_q - q)))))
    assert worst_mm < 1e-3
    assert worst_deg < 3.0


def test_world_reports_the_servos_and_parts_as_json():
    import json

    arm = load_arm("so101")
    scene = parse_scene({"parts": [{"name": "red", "shape": "box", "size_m": [0.02] * 3, "mass_g": 10,
                                    "at_m": [0.2, -0.1, 0.0], "yaw_deg": 30}]}, "t.yaml")  # fmt: skip
    plant = Plant(arm, scene)
    plant.advance(0.2)
    w = json.loads(json.dumps(plant.world()))
    assert w["time_s"] == pytest.approx(0.2)
    assert list(w["servos_deg"]) == list(arm.joint_names)
    assert w["gripper_deg"] == pytest.approx(math.degrees(arm.gripper.open_rad), abs=0.5)
    red = w["parts"]["red"]
    assert red["at_m"] == pytest.approx([0.2, -0.1, 0.0], abs=5e-4)  # resting on the table
    assert red["yaw_deg"] == pytest.approx(30.0, abs=0.1)
    assert red["touches"] == ["table"] and not red["held"] and w["held"] is None
    assert len(red["quat_wxyz"]) == 4


def _solve(arm, point, q0, yaw=0.0):
    if arm.roll is not None:  # the jaws straight down, closing across the part
        roll = jaw_yaw_roll(arm.roll, math.atan2(point[1], point[0]), yaw)
        r = ik.solve(arm, point, phi=-math.pi / 2, q0=q0, roll=roll)
    else:
        r = ik.solve(arm, point, q0=q0)
    assert r.ok, r
    return r.q


def pick_and_place(plant: Plant, part: str, place, grip_z: float, lift: float = 0.04):
    """Pick ``part`` with the tool ``grip_z`` above its underside and put it down at ``place`` (its underside's
    centre): (the tool's point when the jaws open, the world then, the world at the end)."""
    arm = plant.arm
    src = np.array(plant.world()["parts"][part]["at_m"]) + [0, 0, grip_z]
    dst = np.asarray(place, dtype=float) + [0, 0, grip_z]
    up = np.array([0.0, 0.0, lift])
    q = arm.home_rad
    for point, secs in ((src + up, 1.5), (src, 1.0)):
        q = _solve(arm, point, q)
        drive(plant, q, secs)
    plant.command_gripper(arm.gripper.closed_rad, plant.time_s + 0.2)
    plant.advance(plant.time_s + 0.8)
    gripped = plant.world()
    for point, secs in ((src + up, 1.0), (dst + up, 1.5), (dst, 1.0)):
        q = _solve(arm, point, q)
        drive(plant, q, secs)
    plant.advance(plant.time_s + 0.3)
    tool = plant.tool_pose()[:3, 3].copy()
    plant.command_gripper(arm.gripper.open_rad)
    plant.advance(plant.time_s + 0.5)
    drive(plant, _solve(arm, dst + up, q), 1.0)
    plant.advance(plant.time_s + 0.5)
    return tool, gripped, plant.world()


def test_so101_carries_a_gripped_cube_and_puts_it_where_the_tool_put_it():
    scene = parse_scene({"parts": [{"name": "red", "shape": "box", "size_m": [0.025] * 3, "mass_g": 12,
                                    "at_m": [0.2, -0.1, 0.0]}]}, "t.yaml")  # fmt: skip
    plant = Plant(load_arm("so101"), scene)
    tool, gripped, end = pick_and_place(plant, "red", [0.18, 0.08, 0.0], grip_z=0.012)
    assert gripped["held"] == "red" and gripped["parts"]["red"]["touches"] == ["gripper", "table"]
    red = end["parts"]["red"]
    assert end["held"] is None and red["touches"] == ["table"]
    below_tool = tool - [0, 0, 0.012]
    assert np.linalg.norm(np.array(red["at_m"]) - below_tool) < 0.005


def test_eezybot_carries_a_part_from_one_pedestal_to_another():
    """A hobby PWM arm (MG996R, an SG90 gripper; its level hand cannot reach the table): a 12 g cube from one
    100 mm pedestal to another, put down within 5 mm of where the tool put it."""
    ped = {"shape": "box", "size_m": [0.06, 0.06, 0.1], "mass_g": 2000}
    scene = parse_scene({"parts": [{**ped, "name": "ped1", "at_m": [0.3, -0.1, 0]},
                                   {**ped, "name": "ped2", "at_m": [0.3, 0.1, 0]},
                                   {"name": "red", "shape": "box", "size_m": [0.025] * 3, "mass_g": 12,
                                    "at_m": [0.3, -0.1, 0.1]}]}, "t.yaml")  # fmt: skip
    plant = Plant(load_arm("eezybot-mk2"), scene)
    tool, gripped, end = pick_and_place(plant, "red", [0.3, 0.1, 0.1], grip_z=0.012)
    assert gripped["held"] == "red"
    red = end["parts"]["red"]
    assert red["touches"] == ["ped2"]
    assert np.linalg.norm(np.array(red["at_m"]) - (tool - [0, 0, 0.012])) < 0.005


def test_a_part_inside_the_table_is_refused_by_the_scene_file():
    with pytest.raises(ConfigError, match="inside the table"):
        parse_scene({"parts": [{"name": "a", "size_m": [0.02] * 3, "mass_g": 5, "at_m": [0.1, 0, -0.01]}]}, "s.yaml")


def test_without_mujoco_the_plant_says_which_extra_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "mujoco", None)  # import mujoco raises ImportError
    with pytest.raises(BadInputError) as e:
        Plant(load_arm("so101"))
    assert "pip install 'armctl[physics]'" in str(e.value) and "\n" not in str(e.value)


@pytest.mark.parametrize("bad", [-0.1, float("nan")])
def test_a_bad_payload_is_refused(bad):
    with pytest.raises(BadInputError, match="payload"):
        Plant(load_arm("so101"), payload_kg=bad)


@pytest.mark.parametrize("bad", [0.0, float("inf"), [10.0], [10.0] * 9])
def test_a_bad_us_per_deg_is_refused(bad):
    with pytest.raises(BadInputError, match="us_per_deg"):
        Plant(load_arm("mearm"), us_per_deg=bad)


def test_us_per_deg_per_joint_sets_each_pwm_servos_deadband():
    plant = Plant(load_arm("mearm"), us_per_deg=[10.0, 20.0, 5.0, 10.0])  # SG90s: 10 us of dead band
    assert [round(math.degrees(s.deadband_rad), 6) for s in plant.servos] == [1.0, 0.5, 2.0, 1.0]
    bus = Plant(load_arm("so101"), us_per_deg=12.0)  # a bus servo's deadband is in degrees already
    assert math.degrees(bus.servos[0].deadband_rad) == pytest.approx(0.088)
