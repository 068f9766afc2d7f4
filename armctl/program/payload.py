"""What a program carries, sample by sample, and its torque check (``armctl.motion.torque``).

A program carries its ``payload_g:`` all along (a pen, a tool; none given: the arm file's ``payload_g``, or
``--payload``/``robot.payload_kg``), and, from each gripper close (``gripper: close`` or a pick's grip) until the
gripper opens again, the part it closed on: that step's ``part_g:`` (a pick's, or a close's), else the program's
``part_g:`` (default 0). The part counts from the close's first sample to the open's last (the jaws closing on it,
and letting it go, hold it already)."""

from __future__ import annotations

import dataclasses

import numpy as np

from armctl import motion
from armctl.motion.torque import check_torque, payload_mass


def part_mass(sec, number: str, closes: bool = True) -> float | None:
    """A close's ``part_g`` (the part's mass, g: 0..10000) in kg, from step ``number``'s section ``sec``; None when
    not given. ConfigError (file, line) on an open or a bad number."""
    if sec.has("part_g") and not closes:
        raise sec.error("part_g", f"step {number}: part_g is the mass of a part the gripper closes on: not on an open")
    grams = sec.number("part_g", None, lo=0.0, hi=10000.0)
    return None if grams is None else grams / 1000.0


def step_payloads(prog, flat, base_kg: float) -> np.ndarray:
    """The mass (kg) carried in each step of ``flat`` (``expand(prog)``): ``base_kg`` plus the part held."""
    out = np.full(len(flat), float(base_kg))
    held = 0.0
    for i, item in enumerate(flat):
        st = item.step
        if st.action == "gripper" and st.gripper == "close":
            held = prog.part_kg if st.part_kg is None else st.part_kg
        out[i] += held
        if st.action == "gripper" and st.gripper == "open":
            held = 0.0
    return out


def base_payload(prog, arm) -> float:
    """What ``prog`` carries all along on ``arm``: the program's ``payload_g``, else the arm's."""
    return arm.drive.payload_kg if prog.payload_kg is None else prog.payload_kg


def with_payload(prog, payload_kg: float | None):
    """``prog`` carrying ``payload_kg`` all along in place of its ``payload_g`` (``armctl run --payload``); itself
    when None. BadInputError for a negative or non-finite mass."""
    if payload_kg is None:
        return prog
    return dataclasses.replace(prog, payload_kg=payload_mass(payload_kg, "--payload"))


def check_program_torque(prog, arm, flat, traj, base_kg: float):
    """The torque check of program ``prog``'s trajectory ``traj`` on ``arm`` (``check_torque``), each sample with
    what its step carries; a refusal located at the step's file and line. The ``TorqueUse``, and the mass carried
    at each sample (kg)."""
    per_step = step_payloads(prog, flat, base_kg)
    step = np.asarray(traj.step, dtype=int)
    loads = per_step[np.clip(step, 0, max(len(per_step) - 1, 0))] if len(per_step) else np.full(len(step), base_kg)
    try:
        return check_torque(arm, traj, loads), loads
    except motion.MotionError as exc:
        k = getattr(exc, "step", 0)
        line = flat[k].step.line if 0 <= k < len(flat) else None
        raise motion.located(exc, f"{prog.path}:{line}" if line else prog.path) from None
