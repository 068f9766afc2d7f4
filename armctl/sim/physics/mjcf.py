"""The MuJoCo model (MJCF, a string) of an arm in a scene, built from armctl's own model of the arm: the segment
frames of ``armctl.model.statics`` (the same frames the gravity torques are computed in), the link lengths, joint
limits, masses and centres of mass, the servos of ``Arm.drive``, the wrist roll (``armctl.model.hand``), the gripper,
and the scene file's table, parts and cameras (``armctl.sim.physics.scenefile``).

The world frame is the arm's frame: x, y from the base axis, z up as the arm file counts it, the table's top at
the scene's ``top_z_m`` (0: the surface the arm stands on; an arm measured from its shoulder axis has it below).
A planar arm lies in z = 0 with vertical joint axes (its plane seen from above).

Bodies: ``base`` (the base joint, on an arm with one), ``link1`` .. ``linkN`` (one hinge each, the chain's serial
angle: a parallelogram's elbow is relative to the upper arm and the forearm's servo drives the tendon
``forearm`` = shoulder + elbow, which is exactly how its linkage transmits the servo's torque; the hand is held
level by a joint ``hand_level`` bound by an equality to minus the forearm's angle), ``hand`` (the wrist roll's
body, on an arm with one), the jaws ``jaw_left`` and ``jaw_right`` (slides along the jaws' closing line, tips at
the tool point, bound to open alike) and each part as ``part/NAME`` (a free body). The site ``tool`` carries
armctl's tool frame (``kinematics.tool_pose``).

Each servo is a position actuator on its joint (the gripper's on the tendon ``grip``: the servo's angle from its
closed angle, ``GRIP_GAP_M`` of opening at the open angle): force range its stall torque, the gain full torque at
``FULL_TORQUE_ERR_RAD`` of error, damping ratio 1, the rotor's inertia through the gears as the joint's armature
(``T_MECH_S``). The speed limit and the deadband act on the commanded target (``armctl.sim.physics.plant``).
Only the jaws, the table and the parts collide (the links are drawn, not touched: stated, not modelled).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from armctl.errors import BadInputError
from armctl.model.servos import MODELS, Servo

GRIP_GAP_M = 0.05  # the jaws' gap at the gripper's open angle (closed: touching); an estimate, no arm file gives it
PAD_M = (0.03, 0.006, 0.02)  # a jaw pad: length along the tool axis (back from the tip), thickness, width
FULL_TORQUE_ERR_RAD = math.radians(1.0)  # a servo gives its stall torque this far from its target
T_MECH_S = 0.02  # a hobby servo's mechanical time constant: rotor inertia through the gears = stall * T / speed
DEFAULT_SERVO = "mg996r"  # a joint (or gripper) whose arm file names no servo: the commonest hobby servo
DEFAULT_US_PER_DEG = 10.0  # a PWM servo's pulse per degree without a calibration (500..2300 us over 180 deg)
DEFAULT_DEADBAND_US = 5.0  # a PWM servo whose maker publishes no dead band (the MG996R's)
BODY_RADIUS_M = 0.015  # each body of the arm's masses is taken as a solid sphere this big for its inertia
LEVEL = 5  # the segment of a parallelogram arm's level hand (statics.HAND is a wrist roll's)
JAW_KG = 1e-4  # each jaw pad: next to nothing, the jaws' mass is in the arm's bodies (statics.arm_bodies)


@dataclass(frozen=True)
class ServoSpec:
    """One actuator: its MuJoCo ``name``, stall torque (N m), no-load speed (rad/s) the commanded target moves at,
    deadband (rad: no drive while the servo is this close to its target), and ``says`` (the model, for messages)."""

    name: str
    stall_nm: float
    speed_rad_s: float
    deadband_rad: float
    says: str


@dataclass(frozen=True)
class Built:
    """The MJCF ``xml`` and what the plant needs to drive it: the ``servos`` (the arm's joints in order, then the
    gripper's if any), the gripper tendon's rad per m of jaw travel (``grip_rad_per_m``; None: no gripper), the
    scene's part names in order."""

    xml: str
    servos: tuple
    grip_rad_per_m: float | None
    parts: tuple


def _v(a) -> str:
    return " ".join(f"{float(x):.10g}" for x in np.ravel(a))


def _xyaxes(R) -> str:
    R = np.asarray(R, dtype=float)
    return _v(np.concatenate([R[:, 0], R[:, 1]]))


def servo_spec(name: str, servo: Servo | None, us_per_deg: float | None) -> ServoSpec:
    """The actuator of a joint driven by ``servo`` (None: ``DEFAULT_SERVO``), its deadband through ``us_per_deg``
    (PWM servos; None: ``DEFAULT_US_PER_DEG``)."""
    servo = servo or Servo(MODELS[DEFAULT_SERVO])
    m = servo.model
    if m.bus:
        dead = math.radians(m.deadband_deg or 0.0)
    else:
        us = m.deadband_us if m.deadband_us is not None else DEFAULT_DEADBAND_US
        dead = math.radians(us / (us_per_deg or DEFAULT_US_PER_DEG))
    return ServoSpec(name, servo.stall_nm, servo.speed_rad_s, dead, servo.says())


def armature(spec: ServoSpec) -> float:
    """The rotor's inertia seen at the joint (kg m^2): the torque that brings it to full speed in ``T_MECH_S``."""
    return spec.stall_nm * T_MECH_S / spec.speed_rad_s


def _actuator(spec: ServoSpec, target: str) -> str:
    kp = spec.stall_nm / FULL_TORQUE_ERR_RAD
    return (
        f'<position name="{spec.name}" {target} kp="{kp:.10g}" dampratio="1" '
        f'forcerange="{-spec.stall_nm:.10g} {spec.stall_nm:.10g}"/>'
    )


# --- masses ---------------------------------------------------------------------------------------------------


def segment_masses(arm, payload_kg: float = 0.0) -> dict:
    """{segment: [(mass kg, point (3,) in the segment's body frame)]}: the arm's bodies as ``statics.arm_bodies``
    gives them (a URDF's ``<inertial>``s, else its estimates from the arm file), each moved from its reference pose
    into its segment's frame (a planar arm's bodies on the ground are left out: they never move), and
    ``payload_kg`` at the tool point."""
    from armctl.model import statics

    bodies, ref, _ = statics.arm_bodies(arm)
    frames = statics.segment_frames(arm, np.asarray(ref, dtype=float))
    out: dict = {}
    for b in bodies:
        seg = b.segment
        if seg == statics.HAND and arm.roll is None:
            seg = arm.n_links
        if seg == 0 and not arm.has_base:
            continue
        R0, o0 = frames[min(seg, arm.n_links)]
        local = R0.T @ (np.asarray(b.point_m, dtype=float) - o0)
        if seg == statics.HAND:
            local = statics._roll_about_axis(arm, local, -ref[-1]) - roll_foot(arm)
        out.setdefault(seg, []).append((b.mass_kg, local))
    if payload_kg > 0:
        seg, point = tool_site(arm)
        out.setdefault(seg, []).append((payload_kg, point[:3, 3]))
    return out


def inertial(points) -> str:
    """One ``<inertial>`` for point masses [(kg, (3,))], each a solid sphere of ``BODY_RADIUS_M``."""
    m = np.array([p[0] for p in points], dtype=float)
    x = np.array([p[1] for p in points], dtype=float).reshape(-1, 3)
    total = float(m.sum())
    if total <= 0:
        return '<inertial pos="0 0 0" mass="1e-6" diaginertia="1e-10 1e-10 1e-10"/>'
    c = (m[:, None] * x).sum(axis=0) / total
    d = x - c
    inertia = np.eye(3) * 0.4 * BODY_RADIUS_M**2 * total
    for mi, di in zip(m, d):
        inertia += mi * (di @ di * np.eye(3) - np.outer(di, di))
    full = [inertia[0, 0], inertia[1, 1], inertia[2, 2], inertia[0, 1], inertia[0, 2], inertia[1, 2]]
    return f'<inertial pos="{_v(c)}" mass="{total:.10g}" fullinertia="{_v(full)}"/>'


# --- the arm's geometry -----------------------------------------------------------------------------------------


def roll_foot(arm) -> np.ndarray:
    """Where the roll axis meets the hand body's origin, in the last link's frame (as ``statics``: the tool point at
    roll 0 less its offset from the axis)."""
    r = arm.roll
    ca, sa = math.cos(r.axis_rad), math.sin(r.axis_rad)
    normal = np.array([-sa, ca, 0.0])
    tool0 = np.array([float(arm.links_m[-1]), 0.0, r.lateral_m])
    return tool0 - r.offset_up_m * normal - r.offset_right_m * np.array([0.0, 0.0, 1.0])


def tool_site(arm) -> tuple[int, np.ndarray]:
    """(segment of the body the tool site rides on, its 4x4 frame in that body): armctl's tool frame at the pose
    where that body's joint and every joint before it is 0 (the hand's frame at roll 0)."""
    out = np.eye(4)
    n = arm.n_links
    if arm.roll is not None:
        r = arm.roll
        x = np.array([math.cos(r.axis_rad), math.sin(r.axis_rad), 0.0])
        left = np.array([0.0, 0.0, -1.0])
        z0 = np.cross(x, left)
        y = math.cos(r.jaw_rad) * left + math.sin(r.jaw_rad) * z0
        out[:3, :3] = np.stack([x, y, np.cross(x, y)], axis=1)
        out[:3, 3] = np.array([float(arm.links_m[-1]), 0.0, r.lateral_m]) - roll_foot(arm)
        return 4, out
    if not arm.has_base:  # a planar arm: x along the last link, y its left, z up
        out[0, 3] = float(arm.links_m[-1])
        return n, out
    if arm.parallelogram:  # the level hand: x along the arm's direction, y its left, z up
        return LEVEL, out
    out[:3, :3] = np.array([[1.0, 0, 0], [0, 0, 1.0], [0, -1.0, 0]])  # x along the link, y the arm's left, z up
    out[0, 3] = float(arm.links_m[-1])
    return n, out


def _radius(length: float) -> float:
    return float(min(max(0.07 * length, 0.006), 0.025))


def _joint(name: str, axis, lo: float, hi: float, arm_kg: float) -> str:
    return f'<joint name="{name}" type="hinge" axis="{_v(axis)}" range="{lo:.10g} {hi:.10g}" armature="{arm_kg:.10g}"/>'


def _jaws_xml(arm, site, grip: ServoSpec | None) -> str:
    """The tool site and the two jaws in the tool's body: slides along the tool frame's y, tips at the tool point;
    each carries the gripper servo's rotor inertia through its gears and the jaws' linkage as armature."""
    length, thick, width = PAD_M
    zc = 0.0 if arm.has_base else width / 2 + 0.001  # a planar arm's jaws stand on the table's plane
    out = [f'<site name="tool" pos="{_v(site[:3, 3])}" xyaxes="{_xyaxes(site[:3, :3])}" size="0.004"/>']
    if arm.gripper is None:
        return out[0]
    per_m = (arm.gripper.open_rad - arm.gripper.closed_rad) / GRIP_GAP_M
    jaw_kg = 2.0 * armature(grip) * per_m**2  # the two jaws, bound to move alike, share the rotor's energy
    for name, side in (("jaw_left", 1.0), ("jaw_right", -1.0)):
        out.append(
            f'<body name="{name}" pos="{_v(site[:3, 3])}" xyaxes="{_xyaxes(site[:3, :3])}">'
            f'<joint name="{name}" type="slide" axis="0 {side:g} 0" range="0 {GRIP_GAP_M / 2:.10g}" '
            f'armature="{jaw_kg:.10g}"/>'
            f'<geom name="{name}" class="jaw" type="box" size="{_v([length / 2, thick / 2, width / 2])}" '
            f'pos="{_v([-length / 2, side * thick / 2, zc])}" mass="{JAW_KG:g}"/></body>'
        )
    return "".join(out)


def _chain_xml(arm, masses: dict, specs: list, grip: ServoSpec | None) -> str:
    """The arm's bodies from the innermost out: the tool's body with the jaws, the links, the base."""
    names, c, n = arm.joint_names, arm.chain_start, arm.n_links
    seg, site = tool_site(arm)
    inner = _jaws_xml(arm, site, grip)
    flip = "1 0 0 0 0 -1"  # x along the link, y the arm's left: the level hand (and a roll-less tool) in a link
    if arm.roll is not None:
        r, i = arm.roll, arm.n - 1
        axis = [math.cos(r.axis_rad), math.sin(r.axis_rad), 0.0]
        joint = _joint(names[i], axis, arm.q_min[i], arm.q_max[i], armature(specs[i]))
        inner = f'<body name="hand" pos="{_v(roll_foot(arm))}">{joint}{inertial(masses.get(4, []))}{inner}</body>'
    elif arm.parallelogram:
        inner = (
            f'<body name="hand" pos="{float(arm.links_m[-1]):.10g} 0 0" xyaxes="{flip}">'
            f'<joint name="hand_level" type="hinge" axis="0 -1 0"/>{inertial(masses.get(LEVEL, []))}{inner}</body>'
        )
    for k in range(n, 0, -1):
        length = float(arm.links_m[k - 1])
        j = c + k - 1
        if arm.parallelogram and k == 2:
            la = arm.link_angle_rad
            joint = _joint(f"{names[j]}_relative", [0, 0, 1], la[0] - math.pi, la[1] - math.pi, 0.0)
        else:
            joint = _joint(names[j], [0, 0, 1], arm.q_min[j], arm.q_max[j], armature(specs[j]))
        if k == 1:
            shoulder = f'pos="{arm.base_offset_m:.10g} 0 {arm.shoulder_height_m:.10g}" xyaxes="1 0 0 0 0 1"'
            place = shoulder if arm.has_base else ""
        else:
            place = f'pos="{float(arm.links_m[k - 2]):.10g} 0 0"'
        geom = f'<geom class="link" type="capsule" fromto="0 0 0 {length:.10g} 0 0" size="{_radius(length):.10g}"/>'
        inner = f'<body name="link{k}" {place}>{joint}{inertial(masses.get(k, []))}{geom}{inner}</body>'
    if not arm.has_base:
        return inner
    h = max(arm.shoulder_height_m, 0.01)
    column = f'<geom class="link" type="cylinder" fromto="0 0 0 0 0 {h:.10g}" size="{_radius(h) + 0.01:.10g}"/>'
    base = _joint(names[0], [0, 0, 1], arm.q_min[0], arm.q_max[0], armature(specs[0]))
    return f'<body name="base">{base}{inertial(masses.get(0, []))}{column}{inner}</body>'


def _drive_xml(arm, specs: list, grip: ServoSpec | None, timestep: float) -> tuple[str, float | None]:
    """The tendons, equalities, actuators and contact exclusions; and the gripper's rad per m of jaw travel."""
    names, c = arm.joint_names, arm.chain_start
    tendons, equal, acts = [], [], []
    for i, spec in enumerate(specs):
        if arm.parallelogram and i == c + 1:
            rel = f"{names[i]}_relative"
            tendons.append(
                f'<fixed name="forearm" range="{arm.q_min[i]:.10g} {arm.q_max[i]:.10g}">'
                f'<joint joint="{names[c]}" coef="1"/><joint joint="{rel}" coef="1"/></fixed>'
                f'<fixed name="level"><joint joint="{names[c]}" coef="1"/><joint joint="{rel}" coef="1"/>'
                f'<joint joint="hand_level" coef="1"/></fixed>'
            )
            equal.append(f'<tendon name="hand_level" tendon1="level" polycoef="0 0 0 0 0" {_stiff(timestep)}/>')
            acts.append(_actuator(spec, 'tendon="forearm"'))
        else:
            acts.append(_actuator(spec, f'joint="{names[i]}"'))
    per_m = None
    excludes = ""
    if grip is not None:
        per_m = (arm.gripper.open_rad - arm.gripper.closed_rad) / GRIP_GAP_M
        tendons.append(
            f'<fixed name="grip"><joint joint="jaw_left" coef="{per_m:.10g}"/>'
            f'<joint joint="jaw_right" coef="{per_m:.10g}"/></fixed>'
        )
        equal.append('<joint name="jaws" joint1="jaw_left" joint2="jaw_right"/>')
        acts.append(_actuator(grip, 'tendon="grip"'))
        excludes = '<exclude body1="jaw_left" body2="jaw_right"/>'
    text = (
        f"<tendon>{''.join(tendons)}</tendon><equality>{''.join(equal)}</equality>"
        f"<actuator>{''.join(acts)}</actuator><contact>{excludes}</contact>"
    )
    return text, per_m


def _part_xml(p) -> str:
    h = p.height
    pos = [p.at_m[0], p.at_m[1], p.at_m[2] + h / 2]
    quat = [math.cos(p.yaw_rad / 2), 0.0, 0.0, math.sin(p.yaw_rad / 2)]
    if p.shape == "box":
        shape = f'type="box" size="{_v(np.asarray(p.size_m) / 2)}"'
    else:
        shape = f'type="cylinder" size="{p.radius_m:.10g} {h / 2:.10g}"'
    return (
        f'<body name="part/{p.name}" pos="{_v(pos)}" quat="{_v(quat)}"><freejoint name="part/{p.name}"/>'
        f'<geom name="part/{p.name}" class="part" {shape} mass="{p.mass_kg:.10g}" '
        f'friction="{p.friction:.10g} 0.005 0.0001"/></body>'
    )


def camera_xyaxes(at, look_at) -> np.ndarray:
    """A MuJoCo camera's x (right) and y (up) axes looking from ``at`` at ``look_at`` (image up toward +z, or +x
    when looking straight up or down)."""
    f = np.asarray(look_at, dtype=float) - np.asarray(at, dtype=float)
    f /= np.linalg.norm(f)
    x = np.cross(f, [0.0, 0.0, 1.0])
    if np.linalg.norm(x) < 1e-6:
        x = np.cross(f, [1.0, 0.0, 0.0])
    x /= np.linalg.norm(x)
    return np.stack([x, np.cross(-f, x)], axis=1)


def _scene_xml(scene, timestep: float) -> str:
    t = scene.table
    sx, sy, sz = t.size_m
    out = [
        '<light name="sun" pos="0 0 2" dir="0 0 -1" directional="true"/>',
        f'<geom name="table" type="box" size="{_v([sx / 2, sy / 2, sz / 2])}" '
        f'pos="{_v([t.center_m[0], t.center_m[1], t.top_z_m - sz / 2])}" friction="{t.friction:.10g} 0.005 0.0001" '
        f'contype="1" conaffinity="1" {_stiff(timestep)} rgba="0.6 0.5 0.4 1"/>',
    ]
    for cam in scene.cameras:
        axes = _xyaxes(camera_xyaxes(cam.at_m, cam.look_at_m))
        out.append(
            f'<camera name="{cam.name}" pos="{_v(cam.at_m)}" xyaxes="{axes}" '
            f'fovy="{cam.fov_deg:.10g}" resolution="{cam.width} {cam.height}"/>'
        )
    out.extend(_part_xml(p) for p in scene.parts)
    return "".join(out)


def _stiff(timestep: float) -> str:
    """A constraint as stiff as the step allows: time constant two steps, impedance 0.99."""
    return f'solref="{2 * timestep:.10g} 1" solimp="0.99 0.999 0.0005"'


def _defaults(timestep: float) -> str:
    """Only the jaws, the table and the parts collide, and all their contacts are as stiff as the step allows
    (time constant two steps, impedance 0.99; the table's in ``_scene_xml``). MuJoCo's default soft contacts
    (0.02 s) scale with the lighter body: a servo's grip on a light part would sink the jaws into it by
    centimetres, and a stack of light parts sinks about 0.3 mm a layer, leans, and creeps as long as it stands
    (the SO-101's three 8 g cubes: 0.02 mm a simulated second, 4 to 5 mm by the end of its run at speed=30)."""
    return (
        '<default><geom contype="0" conaffinity="0"/>'
        '<default class="link"><geom rgba="0.85 0.85 0.9 1" mass="0"/></default>'
        '<default class="jaw"><geom contype="1" conaffinity="1" condim="4" friction="1 0.005 0.0001" priority="1" '
        f'{_stiff(timestep)} rgba="0.2 0.2 0.2 1"/></default>'
        f'<default class="part"><geom contype="1" conaffinity="1" condim="3" {_stiff(timestep)} '
        'rgba="0.8 0.2 0.2 1"/></default>'
        "</default>"
    )


def _us_per_deg(arm, us_per_deg) -> list:
    """One us/deg (or None: the default) per joint then the gripper; BadInputError for anything else."""
    per = list(us_per_deg) if np.ndim(us_per_deg) else [us_per_deg] * (arm.n + 1)
    if len(per) == arm.n:
        per.append(None)
    ok = len(per) == arm.n + 1 and all(v is None or (math.isfinite(v) and 1.0 <= v <= 50.0) for v in per)
    if not ok:
        raise BadInputError(
            f"us_per_deg must be None, a number of 1..50 us per degree, or one per joint of {arm.name} "
            f"({arm.n}, then the gripper's), got {us_per_deg!r}"
        )
    return per


def build_mjcf(arm, scene, *, payload_kg: float = 0.0, timestep: float = 0.002, us_per_deg=None) -> Built:
    """The MJCF of ``arm`` in ``scene`` (``scenefile.Scene``) with ``payload_kg`` at the tool point; ``us_per_deg``
    (a number, or one per joint then the gripper's) sets PWM servos' deadbands (None: ``DEFAULT_US_PER_DEG``)."""
    per = _us_per_deg(arm, us_per_deg)
    specs = [servo_spec(arm.joint_names[i], arm.drive.servo(i), per[i]) for i in range(arm.n)]
    grip = None
    if arm.gripper is not None:
        grip = servo_spec("gripper", arm.gripper.servo, per[arm.n] if len(per) > arm.n else None)
    drive, per_m = _drive_xml(arm, specs, grip, timestep)
    masses = segment_masses(arm, payload_kg)
    w = max([640] + [c.width for c in scene.cameras])
    h = max([480] + [c.height for c in scene.cameras])
    xml = (
        f'<mujoco model="armctl {arm.name}"><compiler angle="radian" autolimits="true"/>'
        f'<option timestep="{timestep:.10g}" integrator="implicitfast" cone="elliptic" impratio="10"/>'
        f'<visual><global offwidth="{w}" offheight="{h}"/></visual>{_defaults(timestep)}'
        f"<worldbody>{_scene_xml(scene, timestep)}{_chain_xml(arm, masses, specs, grip)}</worldbody>{drive}</mujoco>"
    )
    servos = tuple(specs) + ((grip,) if grip is not None else ())
    return Built(xml, servos, per_m, tuple(p.name for p in scene.parts))
