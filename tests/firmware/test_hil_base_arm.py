"""End to end on real firmware, arms on a rotating base: `armctl run` drives the MeArm preset (base,
parallelogram shoulder and elbow, gripper: 4 channels) and the Braccio preset (base, shoulder, elbow,
wrist, gripper: 5 channels, 0-3 and 5, so on both of the firmware's lanes) through our firmware on the
virtual Uno, and the pulse log is read back through the calibration and the arm's forward kinematics.

- every pick and place point (where the gripper closes or opens) within 1 mm of the program's target,
  measured from the pulses;
- the whole tool path within 1 mm of the planned one, the final pose within 0.5 mm;
- every pulse within 1 us of what the host commanded (the firmware plays base arms like any other);
- no frame outside the parallelogram's coupled limits.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from tests.helpers import require

from tools import hil_compare as hc
from tools.virtual_uno import ARMCTL_PINS, FIRMWARE_HEX, VirtualUno, build_firmware, build_tools

from armctl.model.arm import load_arm
from armctl.calibration.servo import find_calibration, load_calibration
from armctl.model.kinematics import limit_excess, tool_point
from armctl.program import load_program, plan_program

ROOT = Path(__file__).resolve().parents[2]

PROGRAMS = {
    "mearm": ROOT / "examples" / "pick_and_place_mearm.yaml",
    "braccio": ROOT / "examples" / "pick_and_place_braccio.yaml",
}
PINS = list(ARMCTL_PINS)  # channel k of our firmware on pin PINS[k]: every channel, used or not


@pytest.fixture(scope="module", params=sorted(PROGRAMS))
def arm_name(request):
    return request.param


@pytest.fixture(scope="module")
def plan(arm_name):
    arm = load_arm(arm_name)
    cal = load_calibration(find_calibration(arm.name))
    prog = load_program(PROGRAMS[arm_name])
    return arm, cal, prog, plan_program(prog, arm)


@pytest.fixture(scope="module")
def run(tmp_path_factory, arm_name):
    ok, why = build_tools()
    require(ok, f"virtual Uno does not build: {why}")
    ok, why = build_firmware()
    require(ok, f"firmware does not build: {why}")
    tmp = tmp_path_factory.mktemp(arm_name)
    wire = tmp / "wire.log"
    env = {**__import__("os").environ, "ARMCTL_STATE_DIR": str(tmp / "state")}
    with VirtualUno(FIRMWARE_HEX, reset_on_open=True, free_run=True) as uno:
        cmd = [sys.executable, "-m", "armctl", "--arm", arm_name, "--port", uno.pty, "--watchdog", "10"]
        cmd += ["--assume-pose", "home"]  # a fresh state folder on a board that resets: the user's word
        cmd += ["run", str(PROGRAMS[arm_name]), "--json", "--wire-log", str(wire)]
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300, cwd=ROOT, env=env)
        assert proc.returncode == 0, f"armctl run failed ({proc.returncode}):\n{proc.stderr[-3000:]}"
        pulses = uno.pulses()
    frames = hc.from_first_pulse(hc.frames_from_pulses(pulses, PINS))
    return json.loads(proc.stdout), frames, wire


def _measured(frames, cal, arm):
    """Tool points (N, 3) m and joint angles (N, 3) rad from the joint pulses, gripper pulses (N,) us."""
    widths = np.array([f.widths_us for f in frames], dtype=float)[:, [s.channel for s in cal.servos]]
    assert not np.isnan(widths).any(), "a servo without pulses in some frame"
    q = cal.values_to_joints(widths[:, : arm.n])
    return tool_point(arm, q), q, widths[:, arm.n]


def test_every_pick_and_place_lands_within_1mm_of_its_target(run, plan):
    _, frames, _ = run
    arm, cal, prog, planned = plan
    pts, _, grip = _measured(frames, cal, arm)
    # the gripper's pulse changes only while the arm holds still at a pick (closing) or place (opening)
    moving = np.flatnonzero(np.abs(np.diff(grip)) > 0.25) + 1
    runs = np.split(moving, np.flatnonzero(np.diff(moving) > 1) + 1)
    targets = [tool_point(arm, mp.q_rad[-1]) for mp in planned.moves if mp.kind == "gripper" and len(mp.t_s) > 1]
    parts = [prog.poses[f"part{i}"].point_m for i in (1, 2, 3)]
    stacks = [prog.poses[f"stack{i}"].point_m for i in (1, 2, 3)]
    assert np.allclose(targets, [p for pair in zip(parts, stacks) for p in pair], atol=1e-9)
    assert len(runs) == len(targets), f"{len(runs)} gripper moves in the pulses, {len(targets)} planned"
    for r, want in zip(runs, targets):
        err = np.linalg.norm(pts[r] - want, axis=1)
        assert err.max() <= 1e-3, f"tool {err.max() * 1e3:.3f} mm from the target {want} while the gripper moved"


def test_tool_path_within_1mm_final_within_half_mm(run, plan):
    report, frames, _ = run
    arm, cal, _, planned = plan
    pts, q, _ = _measured(frames, cal, arm)
    traj = planned.trajectory
    s = np.linspace(0.0, 1.0, 8, endpoint=False)
    dense = (traj.q_rad[:-1, None, :] + np.diff(traj.q_rad, axis=0)[:, None, :] * s[None, :, None]).reshape(-1, arm.n)
    path = tool_point(arm, np.vstack([dense, traj.q_rad[-1:]]))
    dev = hc.distance_to_path(pts, path)
    assert dev.max() <= 1e-3, f"tool path off the plan by {dev.max() * 1e3:.3f} mm"
    final = np.linalg.norm(pts[-1] - tool_point(arm, traj.q_rad[-1]))
    assert final <= 0.5e-3, f"final pose off by {final * 1e3:.3f} mm"
    assert len(report["tool_m"]) == 3 and report["backend"] == "armctl"
    # pulses quantised to 0.5 us (under 0.05 deg here) may sit on a limit: none goes further
    assert np.all(limit_excess(arm, q) <= np.radians(0.1)), "a frame outside the coupled limits"


def test_every_pulse_within_1us_of_commanded(run, plan):
    _, frames, wire = run
    _, cal, _, _ = plan
    # pulses on exactly the calibrated channels (braccio: 5, on both lanes), none on the others
    used = {ch for f in frames for ch, w in enumerate(f.widths_us) if w is not None}
    assert used == {s.channel for s in cal.servos}
    commanded = hc.commanded_frames(hc.host_bytes_from_wire_log(wire))
    ok, late, worst, where = hc.match_with_holds([f.widths_us for f in frames], commanded, tol_us=0.07)
    assert ok, where
    assert worst <= 0.07
    assert late <= max(3, len(frames) // 100)
