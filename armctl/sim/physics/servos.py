"""The physics plant behind a simulator (``?physics=1&scene=FILE.yaml``): its servos move the plant's joints.

``PhysicsWorld(arm, scene_path)`` builds the plant (``armctl.sim.physics.plant.Plant``: MuJoCo, ``armctl[physics]``)
for the simulator's arm and the scene file's table, parts and cameras, and keeps it at the simulator's time
(``advance(t)``: the plant only runs forward). A simulator's servo model becomes a plant-backed one with the
same interface as its kinematic model (``PlantPwmServo`` for ``PwmServo``): a commanded pulse or goal becomes a
target angle the plant's position actuator drives toward with the servo's torque and speed, and the servo's
true angle (what encoders and Present_Position read, what the scene and the cameras see) is the plant's.

``world.world()`` is the plant's state (JSON-able: time, the servos' true angles, the parts' poses, contacts,
the part held); ``world.camera(name)`` a scene camera (``armctl.sim.physics.camera.PhysicsCamera``).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

from armctl.errors import BadInputError
from armctl.sim.feetech_servo import SimServo
from armctl.sim.physics.placing import Placements
from armctl.sim.pwm_servo import PwmServo

NO_MUJOCO = "the physics plant needs MuJoCo: pip install 'armctl[physics]'"


def need_mujoco():
    """The mujoco module, or one BadInputError naming the extra to install."""
    try:
        import mujoco
    except ImportError:
        raise BadInputError(NO_MUJOCO) from None
    return mujoco


class PhysicsWorld:
    """The plant for one simulator (see the module docstring)."""

    def __init__(self, arm, scene_path: str | None, *, us_per_deg=None):
        if not scene_path:
            raise BadInputError("option physics=1 needs scene=FILE.yaml: the table, parts and cameras (a scene file)")
        need_mujoco()
        from armctl.sim.physics.plant import Plant
        from armctl.sim.physics.scenefile import load_scene

        self.scene = load_scene(scene_path)
        self.plant = Plant(arm, self.scene, us_per_deg=us_per_deg)
        self.t = 0.0
        #: wall seconds spent stepping the plant: the simulator's clock stands still meanwhile (``SimSerial``), so
        #: a speed the plant cannot keep up with slows the simulation down instead of starving the board
        self.compute_wall_s = 0.0
        self._cameras: dict = {}
        self.placements = Placements(arm, self.plant.q_rad(), {p.name: (p.at_m, p.height) for p in self.scene.parts})

    def start(self, q_rad, gripper_rad=None) -> None:
        """The arm at rest at ``q_rad`` (the gripper at ``gripper_rad``) before anything runs: where the simulator's
        servos start (its ``start``, its state file), held there."""
        self.plant.set_pose(q_rad, gripper_rad)
        self.placements.q[:] = q_rad

    def advance(self, t: float) -> None:
        """Run the plant up to simulated time ``t`` (nothing for a time already passed)."""
        if t > self.t:
            start = time.perf_counter()
            self.plant.advance(t)
            self.t = t
            self.compute_wall_s += time.perf_counter() - start

    def load(self, index: int | None) -> float:
        """Servo ``index``'s (None: the gripper's) torque as a share of its stall torque, -1..1."""
        return float(self.plant.load()[self.plant.arm.n if index is None else index])

    def angle_rad(self, index: int | None, t: float) -> float:
        """Joint ``index``'s true angle (None: the gripper's) at ``t`` (now, if ``t`` has passed)."""
        self.advance(t)
        return float(self.plant.gripper_rad() if index is None else self.plant.q_rad()[index])

    def command(self, index: int | None, target_rad: float, t: float) -> None:
        self.advance(t)
        if index is None:
            self.placements.gripper(target_rad)
            self.plant.command_gripper(target_rad, t)
        else:
            self.placements.joint(index, target_rad)
            self.plant.command(index, target_rad, t)

    def torque_limit(self, index: int | None, share: float) -> None:
        """Servo ``index`` (None: the gripper's) limited to ``share`` of its stall torque (0: limp)."""
        self.plant.torque_limit(self.plant.arm.n if index is None else index, share)

    def world(self) -> dict:
        """The plant's world (``Plant.world``) with ``placed``: where each part carried should be (m), and
        ``not_placed``: a line for each farther than 5 mm from it (``placing.Placements``)."""
        out = self.plant.world()
        out["placed"] = self.placements.placed()
        out["not_placed"] = self.placements.misplaced(out["parts"])
        return out

    def camera(self, name: str):
        """The scene's camera ``name`` (rendering this plant); BadInputError naming the cameras there are."""
        if name not in self._cameras:
            cams = {c.name: c for c in self.scene.cameras}
            if name not in cams:
                there = ", ".join(cams) or "none"
                raise BadInputError(f"no camera {name!r} in scene {self.scene.source} (cameras: {there})")
            from armctl.sim.physics.camera import PhysicsCamera

            self._cameras[name] = PhysicsCamera(self.plant.model, self.plant.data, cams[name])
        return self._cameras[name]

    def close(self) -> None:
        for cam in self._cameras.values():
            cam.close()
        self._cameras.clear()


@dataclass
class PlantPwmServo(PwmServo):
    """A hobby servo whose horn is the plant's joint ``index`` (None: the gripper); ``PwmServo``'s interface.

    A pulse becomes the target angle it stands for (the calibration and the hidden errors); with no pulse the
    servo keeps its last target (the plant's actuator holds). ``position_us`` is the pulse that would hold the
    joint where the plant has it."""

    world: PhysicsWorld | None = None
    index: int | None = None
    #: within this of its target (rad) a servo counts as there (a hobby servo's deadband is a few us)
    AT_RAD = math.radians(0.5)

    def angle_rad(self, t: float) -> float:
        return self.world.angle_rad(self.index, t)

    def position_us(self, t: float) -> float:
        return self.us_for_angle(self.angle_rad(t))

    def command(self, t: float, width_us: float | None) -> None:
        self.t_s = t
        if width_us is None:  # no pulses: the actuator holds its last target
            self.world.advance(t)
            return
        self.target_us = width_us
        self.world.command(self.index, self.hidden_rad(width_us), t)

    def settle_s(self, t: float) -> float:
        if self.target_us is None:
            return 0.0
        left = abs(self.hidden_rad(self.target_us) - self.angle_rad(t))
        if left <= self.AT_RAD:
            return 0.0
        return abs(self.target_us - self.position_us(t)) / self.slew_us_s


class PlantBusServo(SimServo):
    """A Feetech bus servo (``feetech_servo.SimServo``: its memory table, goal, limits, torque switch, load, heat and
    overload protection) whose horn is the plant's joint ``index`` (None: the gripper), ``cal`` its calibration
    (steps <-> angle). With torque on the goal (clamped to the angle limits) is the plant's target and the torque
    limit register caps the actuator; torque off leaves the joint limp. The present position is where the plant
    has the joint; the load is the actuator's torque over its stall torque."""

    def attach(self, world: PhysicsWorld, index: int | None, cal) -> PlantBusServo:
        self.world, self.index, self.cal = world, index, cal
        self._told: tuple[float, float] | None = None  # (target rad, torque share) last given to the plant
        return self

    def _tell_plant(self) -> None:
        """The goal and torque as the registers have them now, given to the plant (at ``self.t``) when changed."""
        if self.drives:
            target, _, _, cap = self._control()
            told = (float(self.cal.angle_rad(target)), min(1.0, cap / 1000.0))
        else:
            told = (self._told[0] if self._told else self.world.angle_rad(self.index, self.t), 0.0)
        if told != self._told:
            self.world.command(self.index, told[0], self.t)
            self.world.torque_limit(self.index, told[1])
            self._told = told

    def write(self, address: int, data: bytes) -> bool:
        kept = super().write(address, data)
        self._tell_plant()  # (the bus ran every servo up to this packet's time: the plant is there)
        return kept

    def advance(self, t: float) -> None:
        if t <= self.t:
            return
        self._tell_plant()
        dt, before = t - self.t, self.corrected()
        c = float(self.cal.value(self.world.angle_rad(self.index, t)))
        self._set_corrected(c)
        v = (c - before) / dt
        self.vel = v if abs(v) >= 1.0 else 0.0
        load = self.world.load(self.index)
        self.load = max(-1000.0, min(1000.0, 1000.0 * load)) if self.drives else 0.0
        self._heat_and_protect(dt)
        self.t = t


def bus_servos(world: PhysicsWorld | None, servos: list, cal) -> list:
    """feetechsim's servos, as they are (``world`` None) or each on the plant's joint its calibration names (a
    servo no joint or gripper uses stays kinematic)."""
    if world is None or cal is None:
        return servos
    by_id = {s.id: (i if i < len(cal.joints) else None, s) for i, s in enumerate(cal.servos)}
    out = []
    for servo in servos:
        if servo.id in by_id:
            plant_servo = PlantBusServo.__new__(PlantBusServo)  # the same servo, its memory as it is
            plant_servo.__dict__.update(servo.__dict__)
            servo = plant_servo.attach(world, *by_id[servo.id])
        out.append(servo)
    return out


def pwm_servo(world, index, cal, sign: float, scale: float, offset_rad: float, slew_us_s: float) -> PwmServo:
    """A servo for channel ``cal``: kinematic (``world`` None), else the physics plant's joint ``index`` (None: the
    gripper), ``armctl.sim.physics.servos.PlantPwmServo``."""
    if world is None:
        return PwmServo(cal, sign, scale, offset_rad, 0.0, slew_us_s=slew_us_s)
    return PlantPwmServo(cal, sign, scale, offset_rad, 0.0, slew_us_s=slew_us_s, world=world, index=index)


def physics_world(opts, arm, cal=None):
    """The physics plant the simulator options ``opts`` ask for (``physics=1``, ``scene``), or None; ValueError
    (bad input) for a physics option without the other, a truth file with physics, a missing mujoco, a bad scene."""
    if getattr(opts, "physics", 0) not in (0, 1):
        raise ValueError(f"option physics is 0 (the kinematic servos) or 1 (the physics plant), got {opts.physics}")
    if not getattr(opts, "physics", 0):
        if getattr(opts, "scene", None):
            raise ValueError(f"option scene={opts.scene} is the physics scene: give physics=1 too")
        return None
    if arm is None:
        raise ValueError("option physics=1 needs arm=NAME: the arm the servos move in the physics scene")
    if getattr(opts, "truth", None):
        raise ValueError("options physics=1 and truth= do not combine: the physics plant is the arm as it is")
    for name in ("stall", "stops", "hand"):  # what the kinematic servos fake, the plant does not take (yet)
        if getattr(opts, name, None):
            raise ValueError(f"options physics=1 and {name}= do not combine: {name} acts on the kinematic servos")
    pwm = cal is not None and cal.unit == "us"
    return PhysicsWorld(arm, opts.scene, us_per_deg=[s.us_per_deg for s in cal.servos] if pwm else None)
