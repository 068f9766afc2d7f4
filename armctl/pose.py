"""The pose of the arm as read from the board: ``Pose`` (what ``Robot.where()`` returns)."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Pose:
    """Where the arm is: joint angles (rad, base first on a base arm), tool point (m: x, y; x, y, z on a
    base arm), tool angle (rad; on a base arm the pitch from the horizontal), gripper (rad).

    ``source`` says how it is known: ``"measured"`` (servo positions measured by the hardware or the
    simulator), ``"commanded"`` (the pulses the board outputs, or for boards that cannot report them the
    last ones sent) or ``"assumed"`` (servos without pulses yet: the pose stored for this port when the
    arm was last left, else home; the first motion starts by setting it). ``detail`` says it in words;
    ``values`` are the servo values (us) of the pose per servo, joints then gripper (None: the servo has
    none): what the board outputs, or for a measured pose the values that mean it by the calibration.
    """

    q_rad: np.ndarray
    tool_m: np.ndarray
    phi_rad: float
    gripper_rad: float | None
    source: str
    detail: str
    values: tuple[float | None, ...] = ()

    @property
    def measured(self) -> bool:
        """True if measured by the hardware or the simulator (not taken from commanded pulses)."""
        return self.source == "measured"

    @property
    def q_deg(self) -> list[float]:
        """Joint angles in degrees."""
        return [math.degrees(v) for v in self.q_rad]

    @property
    def tool_mm(self) -> list[float]:
        """Tool point in millimetres."""
        return [float(v) * 1000 for v in self.tool_m]

    def to_dict(self) -> dict:
        """JSON-ready: ``tool_m``, ``q_deg``, ``phi_deg``, ``gripper_deg``, ``source``, ``detail``, ``values``."""
        return {
            "tool_m": [float(v) for v in self.tool_m],
            "q_deg": self.q_deg,
            "phi_deg": math.degrees(self.phi_rad),
            "gripper_deg": None if self.gripper_rad is None else math.degrees(self.gripper_rad),
            "source": self.source,
            "detail": self.detail,
            "values": list(self.values),
        }

    def __repr__(self) -> str:
        where = ", ".join(f"{v:.1f}" for v in self.tool_mm)
        joints = ", ".join(f"{v:.1f}" for v in self.q_deg)
        g = "" if self.gripper_rad is None else f", gripper={math.degrees(self.gripper_rad):.1f} deg"
        return (
            f"Pose(tool=({where}) mm, phi={math.degrees(self.phi_rad):.1f} deg, joints=[{joints}] deg{g}, "
            f"{self.source})"
        )

    def _repr_html_(self) -> str:
        """A small table in Jupyter: the tool point (mm), tool angle and joints (deg), gripper, source."""
        from html import escape

        axes = "xyz"[: len(self.tool_mm)]
        rows = [(f"tool {a}", f"{v:.1f} mm") for a, v in zip(axes, self.tool_mm)]
        rows.append(("tool angle (phi)", f"{math.degrees(self.phi_rad):.1f} deg"))
        rows += [(f"joint {i + 1}", f"{v:.2f} deg") for i, v in enumerate(self.q_deg)]
        if self.gripper_rad is not None:
            rows.append(("gripper", f"{math.degrees(self.gripper_rad):.1f} deg"))
        rows.append(("source", f"{self.source}: {self.detail}"))
        body = "".join(
            f"<tr><th style='text-align:left'>{escape(k)}</th><td style='text-align:right'>{escape(v)}</td></tr>"
            for k, v in rows
        )
        return f"<table class='armctl-pose'><caption>Pose</caption>{body}</table>"

    def __str__(self) -> str:
        where = ", ".join(f"{v:.1f}" for v in self.tool_mm)
        g = "" if self.gripper_rad is None else f", gripper {math.degrees(self.gripper_rad):.1f} deg"
        joints = " ".join(f"{v:.2f}" for v in self.q_deg)
        return f"tool at ({where}) mm, joints {joints} deg{g} ({self.source}: {self.detail})"


def _snap_to_limits(q: float, lo: float, hi: float, servo) -> float:
    """A joint angle read back from a pulse, moved onto its limit when it lies outside by less than one
    pulse step: a pose commanded right at a limit comes back from the board's 0.5 us resolution up to
    half a step beyond it, and the next move would refuse to start from there."""
    step = math.radians(servo.resolution / servo.per_deg)
    if lo - step <= q < lo:
        return float(lo)
    if hi < q <= hi + step:
        return float(hi)
    return q
