"""URDF import (armctl/model/urdf/derive.py): the importer's forward kinematics against an independent URDF library
(yourdfpy, meshes off) on chains the tests write (random origins, rpy, offsets beside the plane, fixed joints,
a base, a parallelogram through <mimic>) and on the SO-101's published joint figures; the refusals; the CLI."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from armctl.cli import main
from armctl.errors import ConfigError
from armctl.model.arm import load_arm, load_urdf_arm
from armctl.model.kinematics import tool_point
from armctl.model.urdf.derive import armctl_angles, urdf_angles
from tests.helpers import require

try:
    import yourdfpy
except ImportError:  # pragma: no cover - the test extra installs it
    yourdfpy = None


def _urdf_fk(path: Path, tool: str, q: dict) -> np.ndarray:
    """The tool link's origin (m) in the root frame by yourdfpy (meshes off), for URDF angles ``q`` (rad)."""
    require(yourdfpy is not None, "yourdfpy (pip install -e '.[test]')")
    robot = yourdfpy.URDF.load(str(path), load_meshes=False, load_collision_meshes=False, build_scene_graph=True)
    robot.update_cfg({name: q.get(name, 0.0) for name in robot.actuated_joint_names})
    return robot.get_transform(tool, robot.base_link)[:3, 3]


def _rot(rpy):
    r, p, y = rpy
    rx = np.array([[1, 0, 0], [0, math.cos(r), -math.sin(r)], [0, math.sin(r), math.cos(r)]])
    ry = np.array([[math.cos(p), 0, math.sin(p)], [0, 1, 0], [-math.sin(p), 0, math.cos(p)]])
    rz = np.array([[math.cos(y), -math.sin(y), 0], [math.sin(y), math.cos(y), 0], [0, 0, 1]])
    return rz @ ry @ rx


class Chain:
    """Writes a URDF joint by joint, keeping each link's pose at the zero configuration (root frame), so a
    joint's axis can be given in the root frame whatever the random rpy of its origin."""

    def __init__(self, rng):
        self.rng = rng
        self.links = ["root"]
        self.joints = []
        self.R = {"root": np.eye(3)}
        self.t = {"root": np.zeros(3)}

    def add(self, name, jtype, parent, *, at=None, xyz=None, axis_world=None, limits=(-2.0, 2.0), velocity=1.5,
            mimic=None, rpy=None):  # fmt: skip
        """A joint whose origin is at root-frame point ``at`` (or parent-frame ``xyz``), random rpy."""
        child = f"{name}_link"
        rpy = tuple(float(v) for v in (self.rng.uniform(-math.pi, math.pi, 3) if rpy is None else rpy))
        Rp, tp = self.R[parent], self.t[parent]
        if at is not None:
            xyz = Rp.T @ (np.asarray(at, float) - tp)
        R = Rp @ _rot(rpy)
        self.R[child], self.t[child] = R, tp + Rp @ np.asarray(xyz, float)
        body = f'<origin xyz="{" ".join(map(repr, map(float, xyz)))}" rpy="{" ".join(map(repr, rpy))}"/>'
        if axis_world is not None:
            axis = R.T @ np.asarray(axis_world, float)
            body += f'<axis xyz="{" ".join(map(repr, map(float, axis)))}"/>'
        if jtype == "revolute":
            body += f'<limit lower="{limits[0]}" upper="{limits[1]}" effort="1" velocity="{velocity}"/>'
        if mimic is not None:
            body += f'<mimic joint="{mimic[0]}" multiplier="{mimic[1]}" offset="{mimic[2]}"/>'
        self.joints.append(
            f'<joint name="{name}" type="{jtype}"><parent link="{parent}"/><child link="{child}"/>{body}</joint>'
        )
        self.links.append(child)
        return child

    def point(self, link) -> np.ndarray:
        return self.t[link]

    def write(self, path: Path, name="gen") -> Path:
        links = "".join(f'<link name="{n}"/>' for n in self.links)
        path.write_text(f'<?xml version="1.0"?>\n<robot name="{name}">{links}{"".join(self.joints)}</robot>\n')
        return path


def _random_arm(rng, *, base: bool, k: int, parallelogram: bool = False):
    """A random chain that fits armctl's model: (Chain, tool link, actuated joint names, heading)."""
    c = Chain(rng)
    psi = rng.uniform(-math.pi, math.pi)  # the arm's direction at the zero pose
    u = np.array([math.cos(psi), math.sin(psi), 0.0])
    w = np.array([-math.sin(psi), math.cos(psi), 0.0])  # the pitch axes (either sign)
    z = np.array([0.0, 0.0, 1.0])
    parent = c.add("mount", "fixed", "root", xyz=rng.uniform(-0.05, 0.05, 3))
    names = []
    axis_pt = c.point(parent) + np.array([rng.uniform(-0.05, 0.05), rng.uniform(-0.05, 0.05), 0.02])
    if base:
        parent = c.add("yaw", "revolute", parent, at=axis_pt, axis_world=z * rng.choice([-1, 1]), limits=(-2.5, 2.5))
        names.append("yaw")
    here = axis_pt + np.array([0, 0, rng.uniform(0.02, 0.1)]) + u * rng.uniform(-0.03, 0.05)
    for i in range(k):
        lateral = w * rng.uniform(-0.03, 0.03)
        at = here + lateral
        if rng.uniform() < 0.5:  # a fixed joint in between, at a random place
            parent = c.add(f"fix{i}", "fixed", parent, at=at + rng.uniform(-0.05, 0.05, 3))
        if parallelogram and i == 1:
            parent = c.add("pgram", "revolute", parent, at=at, axis_world=w, mimic=("j0", -1, 0.0), limits=(-9, 9))
        name = f"j{i}"
        sign = 1 if parallelogram else rng.choice([-1, 1])  # the mimic (axis +w, multiplier -1) cancels j0
        parent = c.add(name, "revolute", parent, at=at, axis_world=w * sign, limits=(-1.2, 1.3))
        names.append(name)
        ang = rng.uniform(-math.pi, math.pi)
        if parallelogram:  # upper arm raised, forearm ahead: 40..160 deg apart at the zero pose
            ang = math.radians(rng.uniform(60, 120) if i == 0 else rng.uniform(-40, 20))
        here = here + rng.uniform(0.08, 0.3) * (math.cos(ang) * u + math.sin(ang) * z)
    if parallelogram:  # a level hand: the wrist mimics the elbow joint back
        parent = c.add("hand", "revolute", parent, at=here + w * 0.01, axis_world=w, mimic=("j1", -1, 0.0))
        here = here + 0.04 * u - 0.02 * z
    tool = c.add("tool", "fixed", parent, at=here if base else here + w * rng.uniform(-0.02, 0.02))
    return c, tool, names


def _compare(tmp_path, c: Chain, tool: str, names, rng, *, n=25, sidecar: str | None = None):
    path = c.write(tmp_path / "arm.urdf")
    if sidecar is not None:
        (tmp_path / "arm.armctl.yaml").write_text(sidecar)
    arm = load_urdf_arm(path)
    worst = 0.0
    for _ in range(n):
        q = {name: rng.uniform(-1.0, 1.0) for name in names}
        got = arm.urdf.to_urdf_point(tool_point(arm, armctl_angles(arm, q)))
        want = _urdf_fk(path, tool, q)
        if not arm.has_base:  # a planar arm's tool point has no coordinate across its plane
            w = np.cross(np.asarray(arm.urdf.plane_u), [0, 0, 1])
            want = want - ((want - np.asarray(arm.urdf.origin_m)) @ w) * w
        worst = max(worst, float(np.linalg.norm(got - want)))
        assert urdf_angles(arm, armctl_angles(arm, q)) == pytest.approx(q, abs=1e-12)
    return arm, worst


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("base,k", [(True, 3), (True, 2), (False, 3), (False, 2)])
def test_random_chains_match_yourdfpy(tmp_path, seed, base, k):
    rng = np.random.default_rng(1000 * seed + 10 * k + base)
    c, tool, names = _random_arm(rng, base=base, k=k)
    arm, worst = _compare(tmp_path, c, tool, names, rng)
    assert arm.has_base == base and arm.n_links == k and arm.linkage == "serial"
    assert worst < 1e-9
    assert [m[0] for m in arm.urdf_map] == names
    # the ranges are the URDF's limits through the map
    for (name, off, sign), lo, hi in zip(arm.urdf_map, arm.q_min, arm.q_max):
        ulo, uhi = (-2.5, 2.5) if name == "yaw" else (-1.2, 1.3)
        assert sorted([off + sign * ulo, off + sign * uhi]) == pytest.approx([lo, hi])


@pytest.mark.parametrize("seed", range(4))
def test_a_parallelogram_through_mimic_matches_yourdfpy(tmp_path, seed):
    rng = np.random.default_rng(seed)
    c, tool, names = _random_arm(rng, base=True, k=2, parallelogram=True)
    arm, worst = _compare(tmp_path, c, tool, names, rng)
    assert arm.linkage == "parallelogram" and arm.n_links == 2
    assert worst < 1e-9
    assert arm.within_limits(arm.home_rad)


# --- the SO-101: its published joint figures, kept here as numbers -------------------------------------------
# TheRobotStudio/SO-ARM100 Simulation/SO101/so101_new_calib.urdf (fda892c; unchanged since 385e8d7):
# joint, parent, child, origin xyz (m), origin rpy (rad), axis, limits (rad)
PI = math.pi
SO101 = [
    ("shoulder_pan", "base_link", "shoulder_link", (0.0388353, 0, 0.0624), (PI, 0, -PI), (-1.91986, 1.91986)),
    ("shoulder_lift", "shoulder_link", "upper_arm_link", (-0.0303992, -0.0182778, -0.0542), (-PI / 2, -PI / 2, 0),
     (-1.74533, 1.74533)),
    ("elbow_flex", "upper_arm_link", "lower_arm_link", (-0.11257, -0.028, 0), (0, 0, PI / 2), (-1.69, 1.69)),
    ("wrist_flex", "lower_arm_link", "wrist_link", (-0.1349, 0.0052, 0), (0, 0, -PI / 2), (-1.65806, 1.65806)),
    ("wrist_roll", "wrist_link", "gripper_link", (0, -0.0611, 0.0181), (PI / 2, 0.0487, PI), (-2.74385, 2.84121)),
    ("gripper", "gripper_link", "moving_jaw_so101_v1_link", (0.0202, 0.0188, -0.0234), (PI / 2, 0, 0),
     (-0.174533, 1.74533)),
]  # fmt: skip
SO101_TOOL = ("gripper_frame_joint", "gripper_link", "gripper_frame_link", (-0.0079, -0.0002, -0.0981), (0, PI, 0))
SO101_FLOOR_Z = -0.0024  # the base meshes' lowest vertex in base_link
SO101_JOINTS = ("shoulder_pan", "shoulder_lift", "elbow_flex", "wrist_flex")  # the base and the pitch joints


def _published(v: float) -> str:
    """A figure as the published URDF writes it (onshape-to-robot rounds pi/2 to 1.5708, pi to 3.14159)."""
    for exact, text in ((math.pi / 2, "1.5708"), (math.pi, "3.14159")):
        if abs(abs(v) - exact) < 1e-12:
            return ("-" if v < 0 else "") + text
    return repr(v)


def _write_so101(path: Path, *, rounded: bool = False, held: bool = False) -> Path:
    """The SO-101's chain (its published figures) with a sidecar; ``held``: the wrist roll held at 0 (no joint)."""
    fmt = _published if rounded else repr
    links = {"base_link"} | {j[2] for j in SO101} | {SO101_TOOL[2]}
    out = ['<?xml version="1.0"?>', '<robot name="so101_test">'] + [f'<link name="{n}"/>' for n in sorted(links)]
    for name, parent, child, xyz, rpy, (lo, hi) in SO101:
        out.append(
            f'<joint name="{name}" type="revolute"><origin xyz="{" ".join(map(str, xyz))}" '
            f'rpy="{" ".join(map(fmt, rpy))}"/><parent link="{parent}"/><child link="{child}"/>'
            f'<axis xyz="0 0 1"/><limit effort="10" velocity="10" lower="{lo}" upper="{hi}"/></joint>'
        )
    name, parent, child, xyz, rpy = SO101_TOOL
    out.append(
        f'<joint name="{name}" type="fixed"><origin xyz="{" ".join(map(str, xyz))}" rpy="{" ".join(map(fmt, rpy))}"/>'
        f'<parent link="{parent}"/><child link="{child}"/></joint></robot>'
    )
    path.write_text("\n".join(out))
    path.with_name(path.stem + ".armctl.yaml").write_text(
        f"tool_link: gripper_frame_link\nfloor_z_m: {SO101_FLOOR_Z}\n{'held_joints: {wrist_roll: 0}' if held else ''}\n"
        "gripper: {joint: gripper, open_deg: 60, closed_deg: 0}\n"
    )
    return path


def test_the_so101_figures_match_yourdfpy_and_the_preset(tmp_path):
    path = _write_so101(tmp_path / "so101_test.urdf")
    arm = load_urdf_arm(path)
    rng = np.random.default_rng(7)
    for _ in range(40):
        q = {n: rng.uniform(-1.5, 1.5) for n in (*SO101_JOINTS, "wrist_roll")}
        got = arm.urdf.to_urdf_point(tool_point(arm, armctl_angles(arm, q)))
        assert np.linalg.norm(got - _urdf_fk(path, "gripper_frame_link", q)) < 1e-5  # the tool 7 um off the plane
    # what the importer derives from the published figures (FACTS-lerobot.md section 7)
    assert arm.links_m == pytest.approx([0.1160, 0.1350, 0.1594], abs=5e-5)
    assert arm.base_offset_m == pytest.approx(0.0304, abs=5e-5)
    assert arm.shoulder_height_m == pytest.approx(0.1190, abs=5e-5)  # was 0.1491 in the old preset
    assert arm.urdf.origin_m == pytest.approx((0.0388353, 0.0, SO101_FLOOR_Z))
    assert [(n, s) for n, _, s in arm.urdf_map] == [
        ("shoulder_pan", -1),
        ("shoulder_lift", -1),
        ("elbow_flex", -1),
        ("wrist_flex", -1),
        ("wrist_roll", -1),  # driven: the pose's last angle, 0 at the URDF's zero
    ]
    assert np.degrees([o for _, o, _ in arm.urdf_map]) == pytest.approx([0, 76.0, -73.8, -5.0, 0], abs=0.06)
    assert np.degrees(arm.q_min) == pytest.approx([-110, -24.0, -170.7, -100.0, -162.8], abs=0.1)
    assert np.degrees(arm.q_max) == pytest.approx([110, 176.0, 23.0, 90.0, 157.2], abs=0.1)
    assert arm.gripper_urdf_joint == "gripper"
    # the shipped preset is built from the same figures through the importer
    preset = load_arm("so101")
    assert preset.urdf is not None and preset.urdf.tool_link == "gripper_frame_link"
    for key in ("links_m", "q_min", "q_max"):
        assert getattr(preset, key) == pytest.approx(getattr(arm, key), abs=1e-9)
    assert (preset.base_offset_m, preset.shoulder_height_m) == pytest.approx((arm.base_offset_m, arm.shoulder_height_m))
    for (n1, o1, s1), (n2, o2, s2) in zip(preset.urdf_map, arm.urdf_map):
        assert (n1, s1) == (n2, s2) and o1 == pytest.approx(o2, abs=1e-9)


def test_the_published_rounding_and_a_fixed_side_frame_are_accepted(tmp_path):
    """The published file writes pi/2 as 1.5708 and carries a dummy frame on a fixed side branch (0c8e289's
    baseframe): both import, within micrometres of yourdfpy, and give the same figures."""
    path = _write_so101(tmp_path / "so101_pub.urdf", rounded=True, held=True)  # the roll held: 4 joints
    text = path.read_text().replace(
        "</robot>",
        '<link name="baseframe"/><joint name="baseframe_frame" type="fixed"><parent link="base_link"/>'
        '<child link="baseframe"/><origin xyz="0.020791 0.0157608 0.0324817"/></joint></robot>',
    )
    path.write_text(text)
    assert "1.5708" in text
    arm = load_urdf_arm(path)
    exact = load_urdf_arm(_write_so101(tmp_path / "so101_exact.urdf", held=True))
    assert arm.n == exact.n == 4 and arm.roll is None and arm.urdf.held_deg == {"wrist_roll": 0}
    assert arm.links_m == pytest.approx(exact.links_m, abs=1e-5)
    assert arm.shoulder_height_m == pytest.approx(exact.shoulder_height_m, abs=1e-5)
    rng = np.random.default_rng(11)
    for _ in range(20):
        q = {n: rng.uniform(-1.5, 1.5) for n in SO101_JOINTS}
        got = arm.urdf.to_urdf_point(tool_point(arm, armctl_angles(arm, q)))
        assert np.linalg.norm(got - _urdf_fk(path, "gripper_frame_link", q)) < 5e-5


def test_so101_tool_point_equals_the_urdf_after_the_frame_shift_within_1mm():
    """The done-when of issue 21: armctl's tool point for so101 joint angles is the URDF's gripper_frame_link
    (x from the pan axis, z from the table), within 1 mm, on the shipped preset and its URDF."""
    arm = load_arm("so101")
    urdf = Path(arm.source)
    rng = np.random.default_rng(3)
    for _ in range(30):
        q_arm = rng.uniform(arm.q_min, arm.q_max)
        q = urdf_angles(arm, q_arm)
        want = _urdf_fk(urdf, "gripper_frame_link", q) - np.array([0.0388353, 0.0, -0.0024])
        assert np.linalg.norm(tool_point(arm, q_arm) - want) < 1e-3


def test_so101_directions_follow_the_urdf_and_lerobots_convention():
    """LeRobot's degrees are URDF angles and its steps are 2048 + 4096/360 * deg at each joint (zero at the
    middle): through armctl's example calibration, LeRobot's pose gives the tool point the URDF gives; +30 deg
    of pan turns the arm towards -y (the URDF's pan axis points down)."""
    from armctl.calibration.servo import load_calibration
    from armctl.core.paths import PRESET_CALIBRATION_DIR

    arm = load_arm("so101")
    cal = load_calibration(PRESET_CALIBRATION_DIR / "so101.yaml")
    cal.check_arm(arm)
    for lerobot_deg in ([30, 0, 0, 0, 0], [-45, 20, -30, 40, 70], [10, -60, 50, -20, -120]):
        steps = 2048 + 4096 / 360 * np.array(lerobot_deg, float)
        q_arm = cal.values_to_joints(steps)
        q = dict(zip((*SO101_JOINTS, "wrist_roll"), np.radians(lerobot_deg)))
        want = _urdf_fk(Path(arm.source), "gripper_frame_link", q) - np.array([0.0388353, 0.0, -0.0024])
        assert np.linalg.norm(tool_point(arm, q_arm) - want) < 1e-3, lerobot_deg
        if lerobot_deg[0] == 30:
            assert want[1] < -0.1 and tool_point(arm, q_arm)[1] < -0.1
    # every direction is the URDF joint's sign (derived by the importer, not typed in)
    assert [s.direction for s in cal.joints] == [sign for _, _, sign in arm.urdf_map]


def test_an_so101_calibration_with_the_old_pan_direction_is_refused_in_one_line(tmp_path, capsys):
    from armctl.core.paths import PRESET_CALIBRATION_DIR

    text = (PRESET_CALIBRATION_DIR / "so101.yaml").read_text()
    old = tmp_path / "so101.yaml"
    old.write_text(text.replace("id: 1, zero_steps: 2048, direction: -1", "id: 1, zero_steps: 2048, direction: 1"))
    assert old.read_text() != text
    assert main(["--arm", "so101", "--calibration", str(old), "status"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "shoulder_pan direction 1 mirrors the base" in err and "direction: -1" in err


# --- refusals ----------------------------------------------------------------------------------------------

GOOD = """<?xml version="1.0"?>
<robot name="toy">
  <link name="base"/><link name="l1"/><link name="l2"/><link name="l3"/><link name="tip"/>
  <joint name="pan" type="revolute"><parent link="base"/><child link="l1"/><origin xyz="0 0 0.05"/>
    <axis xyz="0 0 1"/><limit lower="-2" upper="2" effort="1" velocity="{v}"/></joint>
  <joint name="lift" type="revolute"><parent link="l1"/><child link="l2"/><origin xyz="0.02 0 0.04"/>
    <axis xyz="{lift_axis}"/><limit lower="-1.5" upper="1.5" effort="1" velocity="2"/></joint>
  <joint name="elbow" type="{elbow_type}"><parent link="l2"/><child link="l3"/><origin xyz="0.2 0 0"/>
    <axis xyz="0 1 0"/><limit lower="-2" upper="2" effort="1" velocity="2"/></joint>
  <joint name="tipj" type="fixed"><parent link="l3"/><child link="tip"/><origin xyz="0.15 0 0"/></joint>
  {extra}
</robot>
"""


def _toy(tmp_path, name="toy.urdf", *, v="1.5", lift_axis="0 -1 0", elbow_type="revolute", extra=""):
    p = tmp_path / name
    p.write_text(GOOD.format(v=v, lift_axis=lift_axis, elbow_type=elbow_type, extra=extra))
    return p


def test_a_toy_urdf_is_derived(tmp_path, capsys):
    arm = load_arm(str(_toy(tmp_path)))
    assert arm.has_base and arm.n_links == 2 and arm.links_m == pytest.approx([0.2, 0.15])
    assert (arm.base_offset_m, arm.shoulder_height_m) == pytest.approx((0.02, 0.09))
    assert arm.urdf_map == ((("pan", 0.0, 1), ("lift", 0.0, 1), ("elbow", 0.0, -1)))
    assert arm.max_speed_rad_s == pytest.approx([1.5, 2, 2])
    assert main(["--arm", str(_toy(tmp_path)), "workspace", "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["urdf"]["tool_link"] == "tip" and d["urdf"]["origin_in_urdf_m"] == [0, 0, 0]
    assert [j["urdf_joint"] for j in d["urdf"]["joints"]] == ["pan", "lift", "elbow"]
    assert d["shoulder_height_m"] == pytest.approx(0.09) and d["links_m"] == pytest.approx([0.2, 0.15])
    assert main(["--arm", str(_toy(tmp_path)), "workspace"]) == 0
    out = capsys.readouterr().out
    assert "frame shift" in out and "lift" in out and "tool link tip" in out


def test_velocity_zero_or_missing_takes_the_stated_default_printed_once(tmp_path, capsys):
    path = _toy(tmp_path, "slow.urdf", v="0")
    assert main(["--arm", str(path), "workspace", "--json"]) == 0
    cap = capsys.readouterr()
    d = json.loads(cap.out)
    assert d["joints"][0]["max_speed_deg_s"] == pytest.approx(60.0)
    assert d["urdf"]["joints"][0]["speed_from"] == "default"
    assert cap.err.count("no velocity limit") == 1 and "pan" in cap.err and "60 deg/s" in cap.err
    (tmp_path / "slow.armctl.yaml").write_text("default_speed_deg_s: 45\nmax_speed_deg_s: {elbow: 30}\n")
    arm = load_arm(str(path))
    assert np.degrees(arm.max_speed_rad_s) == pytest.approx([45, math.degrees(2), 30])


def test_the_speed_note_is_printed_once_when_the_arm_is_given_by_a_relative_path(tmp_path, capsys, monkeypatch):
    """status loads the arm in the CLI (as given: 'fast.urdf') and in the simulator (its absolute path)."""
    path = _toy(tmp_path, "fast.urdf", v="0")
    (tmp_path / "fast.yaml").write_text(
        "version: 1\narm: toy\njoints:\n"
        + "".join(
            f"  - {{name: {n}, channel: {i}, pin: {9 + i}, zero_us: 1500, us_per_deg: 7.4, direction: 1, "
            "min_us: 500, max_us: 2500}\n"
            for i, n in enumerate(("pan", "lift", "elbow"))
        )
    )
    monkeypatch.chdir(tmp_path)
    capsys.readouterr()
    assert main(["--arm", path.name, "--calibration", "fast.yaml", "status"]) == 0
    assert capsys.readouterr().err.count("no velocity limit") == 1


def test_tool_link_option_and_the_default_longest_chain(tmp_path, capsys):
    path = _toy(tmp_path)
    assert load_arm(str(path)).urdf.tool_link == "tip"
    with pytest.raises(ConfigError, match="joint 'elbow' turns a link of zero length"):
        load_arm(f"{path}#l3")  # the elbow's own link: its axis is the tool point
    assert main(["--arm", str(path), "--tool-link", "nope", "workspace"]) == 2
    assert "tool link 'nope' is no link" in capsys.readouterr().err
    assert main(["--arm", "seed-3link", "--tool-link", "tip", "workspace"]) == 2
    assert "--tool-link applies to an arm from a URDF" in capsys.readouterr().err
    # two chains of the same length: armctl asks which
    extra = (
        '<link name="cam"/><joint name="camj" type="fixed"><parent link="l3"/><child link="cam"/>'
        '<origin xyz="0 0 0.01"/></joint>'
    )
    two = _toy(tmp_path, "two.urdf", extra=extra)
    with pytest.raises(ConfigError, match="2 chains are longest .*--tool-link"):
        load_arm(str(two))
    assert load_arm(f"{two}#tip").urdf.tool_link == "tip"
    with pytest.raises(ConfigError, match="joint 'finger' \\(revolute\\) moves links beyond the tool link 'tip'"):
        load_arm(f"{_toy(tmp_path, 'finger.urdf', extra=FINGER)}#tip")
    assert main(["--arm", str(two), "--tool-link", "tip", "fk", "0", "0", "0"]) == 0


FINGER = (
    '<link name="f"/><joint name="finger" type="revolute"><parent link="tip"/><child link="f"/>'
    '<axis xyz="1 0 0"/><limit lower="-1" upper="1" effort="1" velocity="1"/></joint>'
)
REFUSALS = [
    ("axis off the plane", dict(lift_axis="0 -1 0.3"), "joint 'lift': axis"),
    ("tilted pitch axis", dict(lift_axis="0.2 -1 0"), "joint 'elbow': axis (0, 1, 0) is not parallel to joint 'lift'"),
    ("prismatic", dict(elbow_type="prismatic"), "joint 'elbow' is a prismatic joint"),
    (
        "second branch",
        dict(
            extra='<link name="b"/><joint name="side" type="revolute"><parent link="l1"/><child link="b"/>'
            '<axis xyz="0 1 0"/><limit lower="-1" upper="1" effort="1" velocity="1"/></joint>'
        ),
        "joint 'side' (revolute, from link 'l1') is a second branch",
    ),
    ("floating", dict(elbow_type="floating"), "joint 'elbow' is a floating joint"),
    (
        "branch at the tool",  # a moving joint not named as a gripper's: a second branch ("finger" would be taken)
        dict(
            extra=FINGER.replace('"finger"', '"flap"')
            + '<link name="g"/><joint name="gj" type="fixed"><parent link="tip"/><child link="g"/></joint>'
            '<link name="h"/><joint name="hj" type="fixed"><parent link="g"/><child link="h"/></joint>'
        ),
        "joint 'flap' (revolute, from link 'tip') is a second branch",
    ),
]


@pytest.mark.parametrize("what,kw,message", REFUSALS, ids=[r[0] for r in REFUSALS])
def test_a_urdf_that_does_not_fit_is_refused_in_one_line_exit_2(tmp_path, capsys, what, kw, message):
    path = _toy(tmp_path, **kw)
    assert main(["--arm", str(path), "workspace"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err and str(path) in err, err


def test_malformed_urdfs_get_one_line_exit_2(tmp_path, capsys):
    bad = tmp_path / "bad.urdf"
    bad.write_text('<robot name="x"><link name="a"></robot>')
    assert main(["--arm", str(bad), "workspace"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "not a valid URDF (XML)" in err and "line 1" in err
    bad.write_text("<sdf/>")
    assert main(["--arm", str(bad), "ik", "0.1", "0", "0.1"]) == 2
    assert "not a URDF" in capsys.readouterr().err
    assert main(["--arm", str(tmp_path / "missing.urdf"), "workspace"]) == 2
    assert "cannot read the URDF" in capsys.readouterr().err
    (tmp_path / "toy.armctl.yaml").write_text("tool_lnk: tip\n")
    assert main(["--arm", str(_toy(tmp_path)), "workspace"]) == 2
    assert "unknown key 'tool_lnk'" in capsys.readouterr().err


def test_a_passive_branch_that_mimics_a_chain_joint_is_no_second_branch(tmp_path):
    extra = (
        '<link name="rod"/><joint name="rod_j" type="revolute"><parent link="l1"/><child link="rod"/>'
        '<origin xyz="0.0 0 0.02"/><axis xyz="0 1 0"/><limit lower="-2" upper="2" effort="1" velocity="1"/>'
        '<mimic joint="lift" multiplier="-1"/></joint>'
    )
    arm = load_arm(str(_toy(tmp_path, extra=extra)))
    assert arm.urdf.tool_link == "tip" and arm.joint_names == ("pan", "lift", "elbow")


def test_a_yaw_joint_after_a_pitch_joint_and_a_tool_beside_the_plane_are_refused(tmp_path):
    text = GOOD.format(v="1", lift_axis="0 -1 0", elbow_type="revolute", extra="")
    p = tmp_path / "yaw.urdf"
    p.write_text(text.replace('<axis xyz="0 1 0"/>', '<axis xyz="0 0 1"/>'))
    with pytest.raises(ConfigError, match="joint 'elbow': a vertical axis after pitch joint 'lift'"):
        load_arm(str(p))
    p.write_text(text.replace('<origin xyz="0.15 0 0"/>', '<origin xyz="0.15 0.02 0"/>'))
    with pytest.raises(ConfigError, match="tool link 'tip' lies 20.0 mm beside the plane"):
        load_arm(str(p))


# --- driving an arm defined only by a URDF ------------------------------------------------------------------

CAL = """version: 1
arm: toy
joints:
  - {name: pan, channel: 0, pin: 9, zero_us: 1500, us_per_deg: 7.4, direction: 1, min_us: 500, max_us: 2500}
  - {name: lift, channel: 1, pin: 10, zero_us: 1500, us_per_deg: 7.4, direction: 1, min_us: 500, max_us: 2500}
  - {name: elbow, channel: 2, pin: 11, zero_us: 1500, us_per_deg: 7.4, direction: -1, min_us: 500, max_us: 2500}
"""


def test_jog_run_and_status_drive_an_arm_from_a_urdf_on_the_simulated_arm(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    path = _toy(tmp_path)
    (tmp_path / "calibration").mkdir()
    (tmp_path / "calibration" / "toy.yaml").write_text(CAL)  # found as ./calibration/<robot name>.yaml
    arm = load_arm(str(path))
    target = tool_point(arm, np.radians([20, 30, -60]))
    assert main(["--arm", str(path), "jog", *map(str, target), "--speed", "100", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert np.linalg.norm(np.array(out["tool_m"]) - target) < 1e-3
    assert main(["--arm", str(path), "status", "--json"]) == 0
    st = json.loads(capsys.readouterr().out)
    assert np.linalg.norm(np.array(st["tool_m"]) - target) < 1e-3
    prog = tmp_path / "p.yaml"
    prog.write_text(
        "arm: toy.urdf\nposes:\n  a: {xyz_mm: [250, 50, 60]}\n  b: {xyz_mm: [200, -80, 100]}\n"
        "steps:\n  - {joint: a}\n  - {line: b, speed_mm_s: 100}\n"
    )
    assert main(["run", str(prog), "--json"]) == 0
    res = json.loads(capsys.readouterr().out)
    assert np.linalg.norm(np.array(res["tool_m"]) - [0.2, -0.08, 0.1]) < 1e-3


def test_connect_takes_a_urdf(tmp_path, monkeypatch):
    import armctl

    path = _toy(tmp_path)
    cal = tmp_path / "toy-cal.yaml"
    cal.write_text(CAL)
    with armctl.connect(arm=str(path), calibration=cal) as robot:
        assert robot.arm.urdf_map is not None and robot.arm.joint_names == ("pan", "lift", "elbow")
        robot.move_to(0.22, 0.05, 0.12, speed=0.1)
        assert np.linalg.norm(robot.where(settle=True).tool_m - [0.22, 0.05, 0.12]) < 1e-3


def test_no_calibration_for_an_arm_from_a_urdf_names_the_urdf_in_the_hint(tmp_path, capsys, monkeypatch):
    """'armctl --arm toy calibrate' would be an unknown arm: the hint names the file --arm takes."""
    monkeypatch.chdir(tmp_path)
    path = _toy(tmp_path)
    assert main(["--arm", path.name, "status"]) == 2
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert "no calibration for arm 'toy'" in err and f"run 'armctl --arm {path.resolve()} calibrate'" in err
