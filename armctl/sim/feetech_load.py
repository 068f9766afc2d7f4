"""What loads a simulated bus servo that moves an arm (``FeetechSim`` with ``arm=``), as ``ArmLoad`` sets it on each
``SimServo`` whenever the bus runs up to a packet:

- ``gravity``: the torque that holds the arm still against gravity at its true angles, the part the gripper holds
  as payload (``armctl.model.statics.gravity_torque`` of the true arm; a part's ``mass_g``, ``truth.Part.mass``),
  as a share of the servo's stall torque (the arm file's ``servo:`` for the joint, else the bus's ``model`` at its
  ``volts``), in Present_Load's unit (0.1 % of stall torque) and sign (the direction the servo pushes in its own
  steps). An arm statics cannot weigh (no masses) has none.
- ``contact``: the part between the jaws (``scene.LiveArm.between_jaws``: the part held, or the one a closing
  gripper would take) stops the gripper servo ``CONTACT_PAST_MID_DEG`` past its open/closed midpoint, where the
  scene takes the part: closing further, it pushes with a load growing with its position error, up to its
  torque limit (``SimServo.update_load``). Opening is free.

The simulator stays kinematic: a servo asked for more than its torque limit reports the limit (and, above
``overload_torque``, trips its overload protection) but does not sag; the physics plant does.
"""

from __future__ import annotations

import math

import numpy as np

from armctl.errors import BadInputError
from armctl.model.servos import MODELS, Servo
from armctl.model.statics import gravity_torque

#: where a part stops the jaws: this far past the gripper's open/closed midpoint (the scene grips past it)
CONTACT_PAST_MID_DEG = 2.0


def _stall_nm(arm, i: int, model_key: str, volts: float) -> float:
    """Joint ``i``'s servo's stall torque (N m): the arm file's servo, else the bus's model at its supply."""
    servo = arm.drive.servo(i) if arm.drive is not None else None
    if servo is None:
        model = MODELS.get(model_key, MODELS["sts3215"])
        lo, hi = model.volts_range
        servo = Servo(model, volts if lo <= volts <= hi else None)
    return servo.stall_nm


def has_masses(arm) -> bool:
    """True if statics can weigh ``arm`` (``gravity_torque`` gives its holding torques)."""
    try:
        gravity_torque(arm, arm.home_rad)
    except BadInputError:
        return False
    return True


class ArmLoad:
    """The gravity and contact of every servo of ``sim`` (a ``FeetechSim`` with an arm; module docstring)."""

    def __init__(self, sim):
        self.sim = sim
        arm = sim.arm
        self.stall_nm = [_stall_nm(arm, i, sim.opts.model, sim.opts.volts) for i in range(arm.n)]
        self.has_masses = has_masses(sim.true_arm)
        self._last: tuple | None = None  # the angles and payload the gravity was last worked out for

    def payload_kg(self) -> float:
        """The mass of the part the gripper holds (kg; 0 when it holds none)."""
        live = self.sim.scene_arm
        part = live.held() if live is not None else None
        return 0.0 if part is None else part.mass()

    def update(self, t: float) -> None:
        """Set each servo's ``gravity`` and the gripper's ``contact`` where the arm stands at ``t`` (the servos run
        up to it)."""
        sim = self.sim
        if self.has_masses:
            self._gravity([sim._true_servo_rad(s, None) for s in sim.cal.joints])
        self._contact(t)

    def _gravity(self, q) -> None:
        sim = self.sim
        q = np.asarray(q, dtype=float)
        key = (*q.round(6), self.payload_kg())
        if not np.all(np.isfinite(q)) or key == self._last:
            return
        self._last = key
        try:
            tau = gravity_torque(sim.true_arm, q, key[-1])
        except BadInputError:
            return
        for i, s in enumerate(sim.cal.joints):
            servo = self._servo(s.id)
            if servo is not None:
                servo.gravity = float(tau[i]) * s.direction / self.stall_nm[i] * 1000.0
                servo.update_load()

    def _contact(self, t: float) -> None:
        sim = self.sim
        g, grip, live = sim.cal.gripper, sim.arm.gripper, sim.scene_arm
        servo = None if g is None else self._servo(g.id)
        if servo is None or grip is None:
            return
        part = None if live is None else live.between_jaws(t)
        if part is None:
            if servo.contact is not None:
                servo.contact = None
                servo.update_load()
            return
        toward = math.copysign(1.0, grip.closed_rad - grip.open_rad)
        at_rad = (grip.open_rad + grip.closed_rad) / 2.0 + toward * math.radians(CONTACT_PAST_MID_DEG)
        closing = 1 if float(g.value(grip.closed_rad)) > float(g.value(grip.open_rad)) else -1
        servo.contact = (float(g.value(at_rad)), closing)
        servo.update_load()

    def _servo(self, servo_id: int):
        try:
            return self.sim.servo(servo_id)
        except KeyError:  # not on the bus (``missing``)
            return None
