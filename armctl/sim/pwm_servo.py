"""A simulated hobby (PWM) servo, as ``armsim://`` and ``pca9685sim://`` drive them: its horn slews toward the
commanded pulse at a fixed speed and stays where it is without pulses; its joint angle comes from the pulse
through the calibration, bent by hidden ``offset``/``scale``/``flip`` errors and then by the arm's truth
(``armctl.sim.truth.TrueServo``) when one is given."""

from __future__ import annotations

import math
from dataclasses import dataclass

from armctl.calibration.servo import ServoCal
from armctl.sim.truth import TrueServo


@dataclass
class PwmServo:
    cal: ServoCal
    sign: float
    scale: float
    offset_rad: float
    p_us: float  # horn position, in the pulse that would hold it there
    t_s: float = 0.0
    target_us: float | None = None
    slew_us_s: float = 3000.0
    truth: TrueServo | None = None
    stall_at_s: float | None = None  # from this simulated time on the horn is stuck where it is (a jammed servo)

    def position_us(self, t: float) -> float:
        if self.stall_at_s is not None:
            t = min(t, max(self.stall_at_s, self.t_s))
        if self.target_us is None or t <= self.t_s:
            return self.p_us
        step = self.slew_us_s * (t - self.t_s)
        d = self.target_us - self.p_us
        return self.target_us if abs(d) <= step else self.p_us + math.copysign(step, d)

    def command(self, t: float, width_us: float | None) -> None:
        self.p_us = self.position_us(t)
        if self.truth is not None:  # the horn turns another way from now: the backlash settles where it is
            self.truth.angle_rad(self.hidden_rad(self.p_us), self.p_us, settle=True)
        self.t_s = t
        self.target_us = width_us

    def settle_s(self, t: float) -> float:
        if self.target_us is None:
            return 0.0
        return abs(self.target_us - self.position_us(t)) / self.slew_us_s

    def hidden_rad(self, us: float) -> float:
        """The joint angle (rad) at pulse ``us`` with the hidden offset/scale/flip errors, before the truth."""
        return self.sign * float(self.cal.angle_rad(us)) / self.scale + self.offset_rad

    def angle_rad(self, t: float) -> float:
        """The joint's true angle (rad) at simulated time ``t``: the hidden errors, then the truth."""
        us = self.position_us(t)
        a = self.hidden_rad(us)
        return a if self.truth is None else self.truth.angle_rad(a, us)

    def us_for_angle(self, angle_rad: float) -> float:
        """The pulse (us) that holds the joint at ``angle_rad`` with the hidden errors (before the truth)."""
        return float(self.cal.pulse_us((angle_rad - self.offset_rad) * self.scale * self.sign))
