"""The physics plant: an arm in a scene in MuJoCo (``armctl[physics]``), driven as its servos drive it, read as a
camera or the servos' own sensors would read it. No transport: the simulators (``armsim://``, ``feetechsim://``,
``pca9685sim://`` with ``?physics=1``) put their wire protocol in front of it.

    plant = Plant(load_arm("so101"), load_scene("scene.yaml"), payload_kg=0.05)
    plant.command(1, math.radians(60), t=0.0)   # joint 1 (the shoulder) to 60 deg, from simulated time 0
    plant.advance(1.0)                          # step to simulated time 1 s
    plant.q_rad(), plant.world()["parts"]["red"]["center_m"]

A servo is modelled as hobby and bus servos work: its commanded target moves toward the last command at the
servo's no-load speed (the speed limit), the servo drives toward it only once further than its deadband, with at
most its stall torque less what its speed takes (a DC motor's torque-speed line), or a share of it
(``torque_limit``; ``armctl.sim.physics.mjcf``: gains, damping, the rotor's inertia). A load beyond the stall
torque makes the joint sag or stall short of its target; ``actuator_torque_nm() / stall`` is the load a bus servo
reports. Everything in armctl's units and joint directions (rad, m, s, N m), times are simulated seconds; the same
command sequence gives the same world, step for step.
"""

from __future__ import annotations

import math

import numpy as np

from armctl.errors import BadInputError
from armctl.model.kinematics import chain_angles, joint_angles
from armctl.sim.physics.mjcf import build_mjcf

INSTALL_HINT = "the physics plant needs MuJoCo: pip install 'armctl[physics]'"
TIMESTEP_S = 0.002  # MuJoCo's step (s): 500 Hz, as a servo's control loop
_TOUCH_M = 1e-4  # two geoms closer than this touch (MuJoCo reports contacts inside their margin)


def import_mujoco():
    """The ``mujoco`` module; BadInputError in one line naming the extra to install when it is missing."""
    try:
        import mujoco
    except ImportError:
        raise BadInputError(INSTALL_HINT) from None
    return mujoco


class Plant:
    """``arm`` (``armctl.model.arm.Arm``) in ``scene`` (``scenefile.Scene``; None: a bare table) with ``payload_kg``
    held at the tool point, stepped every ``timestep`` s. ``us_per_deg`` (a number, or one per joint then the
    gripper) turns PWM servos' deadbands (us) into angles, as the calibration does (None: 10 us/deg). The arm
    starts at ``q0_rad`` (default its home pose) with the gripper at ``gripper0_rad`` (default open), holding
    there. ``model`` and ``data`` are MuJoCo's (cameras render from them); ``servos`` the actuators' figures
    (``mjcf.ServoSpec``: stall torque, speed, deadband), the arm's joints in order then the gripper's."""

    def __init__(
        self, arm, scene=None, *, payload_kg: float = 0.0, timestep: float = TIMESTEP_S, us_per_deg=None,
        q0_rad=None, gripper0_rad=None,
    ):  # fmt: skip
        from armctl.sim.physics.scenefile import Scene

        if not (math.isfinite(payload_kg) and 0.0 <= payload_kg <= 10.0):
            raise BadInputError(f"payload must be a mass of 0..10 kg, got {payload_kg!r}")
        if not (math.isfinite(timestep) and 1e-5 <= timestep <= 0.01):
            raise BadInputError(f"the physics timestep must be 1e-5..0.01 s, got {timestep!r}")
        self._mj = import_mujoco()
        self.arm = arm
        self.scene = scene if scene is not None else Scene()
        self.payload_kg = float(payload_kg)
        built = build_mjcf(arm, self.scene, payload_kg=payload_kg, timestep=timestep, us_per_deg=us_per_deg)
        self.xml = built.xml
        self.servos = built.servos
        self._grip_per_m = built.grip_rad_per_m
        self.model = self._mj.MjModel.from_xml_string(built.xml)
        self.data = self._mj.MjData(self.model)
        self._index_model(built.parts)
        n_act = len(self.servos)
        self._speed = np.array([s.speed_rad_s for s in self.servos])
        self._speed_dt = self._speed * self.model.opt.timestep
        self._share = np.ones(n_act)
        self._dead = np.array([s.deadband_rad for s in self.servos])
        self._stall = np.array([s.stall_nm for s in self.servos])
        self._target = np.zeros(n_act)
        self._setpoint = np.zeros(n_act)
        self.set_pose(arm.home_rad if q0_rad is None else q0_rad, gripper0_rad)

    # --- set up ---------------------------------------------------------------------------------------------

    def _index_model(self, parts) -> None:
        m, mj = self.model, self._mj
        arm = self.arm

        def qadr(name):
            return int(m.jnt_qposadr[mj.mj_name2id(m, mj.mjtObj.mjOBJ_JOINT, name)])

        names = arm.joint_names
        c = arm.chain_start
        chain = [names[c + k] for k in range(arm.n_links)]
        if arm.parallelogram:
            chain[1] = f"{chain[1]}_relative"
        self._q_base = qadr(names[0]) if arm.has_base else None
        self._q_chain = [qadr(j) for j in chain]
        self._q_roll = qadr(names[-1]) if arm.roll is not None else None
        self._q_level = qadr("hand_level") if arm.parallelogram else None
        self._q_jaws = [qadr("jaw_left"), qadr("jaw_right")] if arm.gripper is not None else []
        self._tool = mj.mj_name2id(m, mj.mjtObj.mjOBJ_SITE, "tool")
        self._parts = {p: mj.mj_name2id(m, mj.mjtObj.mjOBJ_BODY, f"part/{p}") for p in parts}
        self._part_of_body = {b: p for p, b in self._parts.items()}
        self._heights = {p.name: p.height for p in self.scene.parts}

    def set_pose(self, q_rad, gripper_rad=None) -> None:
        """Put the arm at ``q_rad`` (rad, armctl's joints) and the gripper at ``gripper_rad`` (None: open), at rest,
        the servos holding there (no motion: a reset, not a move)."""
        arm = self.arm
        q = np.asarray(q_rad, dtype=float)
        if q.shape != (arm.n,) or not np.all(np.isfinite(q)):
            raise BadInputError(f"a pose of {arm.name} is {arm.n} finite angles, got {q_rad!r}")
        d = self.data
        chain = chain_angles(arm, q)
        if arm.has_base:
            d.qpos[self._q_base] = q[0]
        for adr, a in zip(self._q_chain, chain):
            d.qpos[adr] = a
        if self._q_level is not None:
            d.qpos[self._q_level] = -(chain[0] + chain[1])
        if self._q_roll is not None:
            d.qpos[self._q_roll] = q[-1]
        if arm.gripper is not None:
            g = arm.gripper.open_rad if gripper_rad is None else float(gripper_rad)
            s = (g - arm.gripper.closed_rad) / self._grip_per_m / 2.0
            d.qpos[self._q_jaws] = min(max(s, 0.0), self.model.jnt_range[self._jaw_joint(), 1])
        d.qvel[:] = 0.0
        self._mj.mj_forward(self.model, d)
        self._target[:] = d.actuator_length
        self._setpoint[:] = d.actuator_length

    def _jaw_joint(self) -> int:
        return self._mj.mj_name2id(self.model, self._mj.mjtObj.mjOBJ_JOINT, "jaw_left")

    # --- drive ----------------------------------------------------------------------------------------------

    def command(self, joint_index: int, target_rad: float, t: float | None = None) -> None:
        """Joint ``joint_index``'s servo to ``target_rad`` (rad, armctl's angle) from simulated time ``t`` (s; the
        plant steps there first; None or a past time: now)."""
        if not (0 <= joint_index < self.arm.n):
            raise BadInputError(f"{self.arm.name} has joints 0..{self.arm.n - 1}, not {joint_index!r}")
        self._command(joint_index, target_rad, t)

    def command_gripper(self, target_rad: float, t: float | None = None) -> None:
        """The gripper's servo to ``target_rad`` (rad, its angle: the arm's ``Gripper`` open/closed angles)."""
        if self.arm.gripper is None:
            raise BadInputError(f"{self.arm.name} has no gripper")
        g = self.arm.gripper
        self._command(self.arm.n, target_rad - g.closed_rad, t)

    def _command(self, i: int, value: float, t: float | None) -> None:
        if not math.isfinite(value):
            raise BadInputError(f"a servo target must be a finite angle, got {value!r}")
        if t is not None:
            self.advance(t)
        self._target[i] = value

    def advance(self, t: float) -> None:
        """Step the world to simulated time ``t`` (s): to its last step at or before ``t`` (never past it; the next call
        steps the rest); nothing when it is already there. The bodies', sites' and cameras' poses in ``data`` are
        then those of the joints' positions now (contacts and forces are the last step's)."""
        if not math.isfinite(t):
            raise BadInputError(f"a simulated time must be a finite number of seconds, got {t!r}")
        m, d, step = self.model, self.data, self._mj.mj_step
        n = math.floor((float(t) - d.time) / m.opt.timestep + 1e-6)
        for _ in range(max(n, 0)):
            self._drive()
            step(m, d)
        if n > 0:  # a step leaves the bodies where they were before it: put them where the joints now are
            self._mj.mj_kinematics(m, d)
            self._mj.mj_camlight(m, d)

    def torque_limit(self, index: int, share: float) -> None:
        """Limit servo ``index`` (the joints in order, then the gripper) to ``share`` (0..1) of its stall torque, as a
        bus servo's torque limit register does; 0 leaves it limp (torque off), 1 (the start) gives it all."""
        if not (0 <= index < len(self.servos)):
            raise BadInputError(f"{self.arm.name} has servos 0..{len(self.servos) - 1}, not {index!r}")
        if not (math.isfinite(share) and 0.0 <= share <= 1.0):
            raise BadInputError(f"a torque limit is a share of the stall torque, 0..1, got {share!r}")
        self._share[index] = share

    def _drive(self) -> None:
        """The servos' control for one step: the commanded target moved toward the command at the servo's no-load
        speed; no drive inside the deadband, past it the error beyond it (the gain in MuJoCo); the torque at most
        the stall torque (times the torque limit) less what the motor's back EMF takes at its speed: a DC motor's
        line from stall torque at rest to none at the no-load speed (braking gets the stall torque)."""
        sp = self._setpoint
        sp += np.clip(self._target - sp, -self._speed_dt, self._speed_dt)
        d = self.data
        length = d.actuator_length
        e = sp - length
        d.ctrl[:] = length + np.sign(e) * np.maximum(np.abs(e) - self._dead, 0.0)
        top = self._stall * self._share
        w = d.actuator_velocity / self._speed
        rng = self.model.actuator_forcerange
        rng[:, 1] = top * np.clip(1.0 - w, 0.0, 1.0)
        rng[:, 0] = -top * np.clip(1.0 + w, 0.0, 1.0)

    # --- read -----------------------------------------------------------------------------------------------

    @property
    def time_s(self) -> float:
        return float(self.data.time)

    def q_rad(self) -> np.ndarray:
        """The joints' true angles (rad, armctl's joints: a parallelogram's forearm from the horizontal)."""
        qp = self.data.qpos
        chain = np.array([qp[a] for a in self._q_chain])
        base = qp[self._q_base] if self._q_base is not None else None
        roll = qp[self._q_roll] if self._q_roll is not None else None
        return joint_angles(self.arm, chain, base, roll)

    def gripper_rad(self) -> float | None:
        """The gripper servo's true angle (rad; None: no gripper)."""
        if self.arm.gripper is None:
            return None
        return self.arm.gripper.closed_rad + float(self.data.actuator_length[self.arm.n])

    def tool_pose(self) -> np.ndarray:
        """The tool's frame (4x4, m) in the arm's frame, as ``kinematics.tool_pose`` defines it (the physical hand's:
        a roll-less arm reaching back over its base axis has its y and z turned about, where armctl's flip)."""
        out = np.eye(4)
        out[:3, :3] = self.data.site_xmat[self._tool].reshape(3, 3)
        out[:3, 3] = self.data.site_xpos[self._tool]
        return out

    def actuator_torque_nm(self) -> np.ndarray:
        """The torque (N m) each joint's servo gives now, armctl's joints in order (limited to its stall torque)."""
        return np.array(self.data.actuator_force[: self.arm.n])

    def gripper_torque_nm(self) -> float | None:
        """The gripper servo's torque (N m; None: no gripper)."""
        return None if self.arm.gripper is None else float(self.data.actuator_force[self.arm.n])

    def load(self) -> np.ndarray:
        """Each servo's torque as a share of its stall torque (-1..1), the joints then the gripper: what a bus
        servo reports as its load."""
        return np.asarray(self.data.actuator_force) / self._stall

    def contacts(self) -> list:
        """The contacts now: [{"a": name, "b": name, "force_n": normal force (N), "normal": (3,) from a to b}] with
        names ``table``, ``jaw_left``, ``jaw_right``, ``part/NAME`` (only these collide)."""
        m, d, mj = self.model, self.data, self._mj
        out = []
        force = np.zeros(6)
        for i in range(d.ncon):
            con = d.contact[i]
            if con.dist > _TOUCH_M:
                continue
            mj.mj_contactForce(m, d, i, force)
            a = mj.mj_id2name(m, mj.mjtObj.mjOBJ_GEOM, con.geom1) or f"geom{con.geom1}"
            b = mj.mj_id2name(m, mj.mjtObj.mjOBJ_GEOM, con.geom2) or f"geom{con.geom2}"
            out.append({"a": a, "b": b, "force_n": float(force[0]), "normal": [float(v) for v in con.frame[:3]]})
        return out

    def _touches(self) -> tuple[dict, str | None]:
        """({part: what it touches: "gripper", "table", other parts}, the part held): held is a part both jaws
        press along their closing line (not one they only brush with their ends)."""
        touch = {p: set() for p in self._parts}
        squeezed = {p: set() for p in self._parts}
        line = self.tool_pose()[:3, 1]
        for c in self.contacts():
            for x, y in ((c["a"], c["b"]), (c["b"], c["a"])):
                if not x.startswith("part/"):
                    continue
                x = x[5:]
                touch[x].add("gripper" if y.startswith("jaw_") else y[5:] if y.startswith("part/") else y)
                if y.startswith("jaw_") and abs(float(np.dot(c["normal"], line))) > 0.7:
                    squeezed[x].add(y)
        held = next((p for p, jaws in squeezed.items() if len(jaws) == 2), None)
        return touch, held

    def part_pose(self, name: str) -> np.ndarray:
        """Part ``name``'s frame (4x4, m) in the arm's frame: its centre, its axes (z its height's)."""
        b = self._parts[name]
        out = np.eye(4)
        out[:3, :3] = self.data.xmat[b].reshape(3, 3)
        out[:3, 3] = self.data.xpos[b]
        return out

    def held_part(self) -> str | None:
        """The part both jaws press along their closing line (None: none)."""
        return self._touches()[1]

    def world(self) -> dict:
        """The world's state, JSON-able: ``time_s``; ``servos_deg`` (each joint's true angle by name, armctl's),
        ``gripper_deg``; ``parts``: by name ``center_m``, ``at_m`` (its bottom face's centre, as the scene file
        places it), ``yaw_deg``, ``quat_wxyz``, ``touches`` (sorted: ``gripper``, ``table``, other parts), ``held``;
        ``held``: the part both jaws press along their closing line, or None."""
        q = np.degrees(self.q_rad())
        g = self.gripper_rad()
        touches, held = self._touches()
        parts = {}
        for p, b in self._parts.items():
            T = self.part_pose(p)
            bottom = T[:3, 3] - T[:3, 2] * self._heights[p] / 2.0
            parts[p] = {
                "center_m": [float(v) for v in T[:3, 3]],
                "at_m": [float(v) for v in bottom],
                "yaw_deg": math.degrees(math.atan2(T[1, 0], T[0, 0])),
                "quat_wxyz": [float(v) for v in self.data.xquat[b]],
                "touches": sorted(touches[p]),
                "held": p == held,
            }
        return {
            "time_s": self.time_s,
            "servos_deg": {n: float(v) for n, v in zip(self.arm.joint_names, q)},
            "gripper_deg": None if g is None else math.degrees(g),
            "parts": parts,
            "held": held,
        }
