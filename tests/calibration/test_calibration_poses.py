"""No calibration pose outside the arm's own limits, for any preset.

The MeArm's calibration held its upper arm and forearm at 180 deg (the shoulder's 0 deg reference with the
forearm level) and near 20 deg, where ``armctl fk`` refuses the pose (the parallelogram's 30..150 deg): a real
linkage binds there and a 9 g servo stalls. Here every preset's calibration is run as a user runs it (``g`` to
each reference pose, Enter, accept the fit, Enter at each end, the gripper) on the simulated arm, and every pose
the procedure commands is checked with ``Arm.within_limits``, the check ``armctl fk`` makes; and the poses the
procedure plans (``calibrate.calibration_poses``) likewise, for every preset, bus servos included.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import armctl
from armctl.calibration import procedures as cb
from armctl.cli.calibrate_flow import Workflow
from armctl.model.arm import load_arm, preset_names
from armctl.model.kinematics import limit_excess, limit_names

PWM_PRESETS = ["braccio", "eezybot-mk2", "mearm", "seed-2link", "seed-3link"]


def _outside(arm, q, tol_deg: float = 1e-6) -> str:
    """'' if ``q`` (rad) is inside every limit of ``arm`` (within ``tol_deg``), else which limit and how far."""
    ex = np.degrees(limit_excess(arm, q))
    worst = int(np.argmax(ex))
    return "" if ex[worst] <= tol_deg else f"{limit_names(arm)[worst]} {ex[worst]:.2f} deg past its limit"


@pytest.mark.parametrize("preset", sorted(preset_names()))
def test_every_planned_calibration_pose_is_inside_the_arms_limits(preset):
    arm = load_arm(preset)
    poses = cb.calibration_poses(arm)
    assert poses
    bad = [(what, np.round(np.degrees(q), 1).tolist(), _outside(arm, q)) for what, q in poses if _outside(arm, q)]
    assert not bad, bad
    for i in range(arm.n):  # three reference poses a joint (or two and the fit's residual unchecked)
        assert len(cb.reference_poses(arm, i)) >= 2


class _Keys:
    """The user: ``g`` then Enter at each reference pose, ``y`` to each fit, Enter at each end, ``y`` to save."""

    def __init__(self):
        self.screen: list[str] = []
        self.heading = None

    def draw(self, lines):
        self.screen = lines

    def key(self, timeout_s=None):
        text = "\n".join(self.screen)
        assert "the fit is refused" not in text, text
        if "Calibration finished" in text or "accept and go on" in text:
            return "y"
        heading = self.screen[2] if len(self.screen) > 2 else ""
        if "g go to the estimate" in text and heading != self.heading:
            self.heading = heading
            return "g"
        return "enter"

    def restore(self):
        pass


@pytest.mark.parametrize("preset", PWM_PRESETS)
def test_the_interactive_calibration_never_commands_a_pose_outside_the_arms_limits(preset, tmp_path, monkeypatch):
    arm = load_arm(preset)
    with armctl.connect(preset, "armsim://?rate=50", calibrating=True) as robot:
        cal = robot.calibration
        nudger = cb.Nudger(robot, robot.servo_values())
        seen = [("start", cal.values_to_joints(np.array(nudger.values[: arm.n])))]
        go = nudger.go

        def recording_go(index, target_us):
            out = go(index, target_us)
            # the simulated servos follow the shipped calibration exactly: this is the pose the arm is put in
            seen.append((f"servo {index} to {out:g} us", cal.values_to_joints(np.array(nudger.values[: arm.n]))))
            return out

        nudger.go = recording_go
        flow = Workflow(
            _Keys(), nudger, arm, cal, header="test", out=tmp_path / "out.yaml", margin_deg=2.0, max_residual_deg=1.0
        )
        new = flow.run()
    assert new is not None
    assert len(seen) > 3 * arm.n
    # (pulses on the board's 0.5 us grid: up to 0.05 deg off the planned angle on these servos)
    bad = [
        (what, np.round(np.degrees(q), 1).tolist(), _outside(arm, q, 0.1)) for what, q in seen if _outside(arm, q, 0.1)
    ]
    assert not bad, bad
    # and the fits found the calibration the simulated servos follow
    for s_new, s_old in zip(new.joints, cal.joints):
        assert s_new.zero_us == pytest.approx(s_old.zero_us, abs=1.0) and s_new.direction == s_old.direction


def test_mearm_shoulder_reference_at_0_deg_tilts_the_forearm_down_into_the_linkages_range():
    arm = load_arm("mearm")
    home = np.asarray(arm.home_rad, dtype=float)  # base 0, upper arm up (90), forearm level (0): 90 deg between
    q = cb.pose_for(arm, 1, 0.0, home)
    # upper arm level: the forearm tilted 35 deg down, 145 deg between them (not 180: the linkage binds at 150)
    assert np.degrees(q) == pytest.approx([0, 0, -35])
    assert math.degrees(float(np.pi + q[2] - q[1])) == pytest.approx(145)
