"""Opening the arm on a board, and where the arm is: shared by the CLI commands and the web page.

An arm and its calibration; the port (default: the simulated arm, which keeps
its pose between runs in the state dir); the backend for it (our protocol or
Firmata); the pose the arm holds, measured from the simulated servos when the
port is the simulator; and the standard moves of ``jog`` and ``home``.
"""

from __future__ import annotations

import math
import time
import urllib.parse
from dataclasses import replace
from pathlib import Path

import numpy as np

from . import motion
from .arm import Arm, load_arm
from .bus.armproto import ArmProtocolBackend
from .bus.firmata import FirmataBackend
from .calibration import Calibration, find_calibration, load_calibration
from .kinematics import fk
from .stream import state_dir

_PACKAGE_ROOT = str(Path(__file__).parents[1])


def load_arm_and_calibration(arm: str | Path, calibration: str | Path | None = None) -> tuple[Arm, Calibration, Path]:
    """The arm (preset name or file), its calibration (``calibration`` or the default lookup) and that file."""
    arm_obj = load_arm(arm)
    path = find_calibration(arm_obj.name, calibration)
    cal = load_calibration(path)
    cal.check_arm(arm_obj)
    return arm_obj, cal, path


def default_port(arm: Arm, cal_path: Path) -> str:
    """The simulated arm for ``arm``, keeping its pose in the state dir between runs."""
    query = urllib.parse.urlencode(
        {
            "arm": arm.source
            if arm.source.endswith((".yaml", ".yml")) and not arm.source.startswith(_PACKAGE_ROOT)
            else arm.name,
            "cal": str(cal_path),
            "state": str(state_dir() / f"armsim-{arm.name}.json"),
        }
    )
    return f"armsim://?{query}"


def sim_port_for(port: str, arm: Arm, cal_path: Path) -> str:
    """An armsim:// URL without an arm gets the CLI's arm and calibration, so the simulation matches."""
    parts = urllib.parse.urlsplit(port)
    if parts.scheme != "armsim" or parts.netloc or parts.path.strip("/"):
        return port
    query = urllib.parse.parse_qs(parts.query)
    extra = {}
    if "arm" not in query:
        extra["arm"] = arm.name if arm.source.startswith(_PACKAGE_ROOT) else arm.source
    if "cal" not in query:
        extra["cal"] = str(cal_path)
    if not extra:
        return port
    sep = "&" if parts.query else ""
    return f"armsim://?{parts.query}{sep}{urllib.parse.urlencode(extra)}"


def open_backend(
    port: str | None,
    backend: str,
    arm: Arm,
    cal: Calibration,
    cal_path: Path,
    *,
    wire_log=None,
    attach_range_us: tuple[float, float] | None = None,
    watchdog_s: float = 1.0,
):
    """(backend, calibration in the backend's channel numbers, port URL), not yet opened.

    ``backend`` is "armctl" (our protocol: firmware or simulator) or "firmata" (servos addressed by
    pin, attached with the calibrated min/max, or ``attach_range_us`` while calibrating). ``watchdog_s``:
    our firmware holds and stops after that much silence from the host (0 = off; Firmata has none)."""
    url = sim_port_for(port, arm, cal_path) if port else default_port(arm, cal_path)
    if backend == "firmata":
        ranges = {s.pin: (attach_range_us or (s.min_us, s.max_us)) for s in cal.servos}
        by_pin = replace(
            cal,
            joints=tuple(replace(s, channel=s.pin) for s in cal.joints),
            gripper=None if cal.gripper is None else replace(cal.gripper, channel=cal.gripper.pin),
        )
        return FirmataBackend(url, pins_range_us=ranges, wire_log=wire_log), by_pin, url
    return ArmProtocolBackend(url, wire_log=wire_log, watchdog_s=watchdog_s), cal, url


def pose_report(backend, arm: Arm, cal: Calibration, *, settle: bool) -> dict:
    """Where the arm is: measured from the simulated servos, else from the pulses the board holds."""
    sim = getattr(backend, "sim", None)
    if sim is not None:
        ser = backend.ser
        if settle:
            deadline = time.monotonic() + 10.0
            while time.monotonic() < deadline:
                sim.pump(ser.sim_time_s())
                left = sim.settle_s()
                if left <= 1e-6:
                    break
                time.sleep(min(0.05, left / ser.rate + 0.001))
        sim.pump(ser.sim_time_s())
        q = sim.q_rad()
        g = sim.gripper_rad()
        return {
            "tool_m": [float(v) for v in fk(arm.links_m, q)],
            "q_deg": [math.degrees(v) for v in q],
            "gripper_deg": None if not math.isfinite(g) else math.degrees(g),
            "measured": "simulated servos",
        }
    st = backend.status()
    widths = [st.widths_us[s.channel] if s.channel < len(st.widths_us) else None for s in cal.joints]
    if any(w is None for w in widths):
        return {"tool_m": None, "q_deg": None, "gripper_deg": None, "measured": "unknown (servos without pulses)"}
    q = cal.us_to_joints(np.array(widths))
    return {
        "tool_m": [float(v) for v in fk(arm.links_m, q)],
        "q_deg": [math.degrees(v) for v in q],
        "gripper_deg": None,
        "measured": "commanded pulses",
    }


def jog_move(target_m, phi_rad: float | None, speed_m_s: float) -> motion.LineMove:
    """The straight-line move of ``jog``: tool point to ``target_m`` (m) at ``speed_m_s``, tool angle ``phi_rad``."""
    x, y = float(target_m[0]), float(target_m[1])
    return motion.LineMove((x, y), phi_rad=phi_rad, speed_m_s=speed_m_s, label=f"jog to ({x:g}, {y:g}) m")


def home_move(arm: Arm) -> motion.JointMove:
    """The slow joint move of ``home`` to the arm's home pose (a quarter of each joint's speed limit)."""
    return motion.JointMove(tuple(arm.home_rad), speed_fraction=0.25, label="home")
