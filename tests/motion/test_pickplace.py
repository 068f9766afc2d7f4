"""Program steps ``pick`` and ``place``: a part where a camera found it (``{marker: ID}``) or at a pose, as the
line and gripper moves they are, planned and checked as any other."""

import numpy as np
import pytest

from armctl.errors import ConfigError
from armctl.model.arm import load_arm
from armctl.program import expand, load_program_text, markers_of, plan_program, with_parts

PROGRAM = """
arm: mearm
poses:
  bin: {xyz_mm: [120, -80, 20]}
steps:
  - pick: {marker: 3}
  - place: bin
    hover_mm: 30
  - pick: {xyz_mm: [140, 40, 10]}
    speed_mm_s: 50
  - place: {marker: 5}
"""


def test_pick_and_place_expand_into_moves_at_the_parts():
    prog = load_program_text(PROGRAM)
    assert markers_of(prog) == [3, 5]
    arm = load_arm("mearm")
    with pytest.raises(ConfigError, match=r"step 1\.1: the part with marker 3: no camera said where it lies"):
        plan_program(prog, arm)
    part3, part5 = (0.15, 0.05, 0.01), (0.13, -0.02, 0.0)
    prog = with_parts(prog, {3: part3, 5: part5})
    flat = expand(prog)
    assert [f.step.number for f in flat[:5]] == ["1.1", "1.2", "1.3", "1.4", "1.5"]
    assert [f.step.action for f in flat] == ["line", "gripper", "line", "gripper", "line"] + ["line", "line", "gripper",
        "line"] + ["line", "gripper", "line", "gripper", "line"] + ["line", "line", "gripper", "line"]  # fmt: skip
    plan = plan_program(prog, arm)
    traj = plan.trajectory
    ends = [arm.tool_point(mp.q_rad[-1]) for mp in plan.moves]
    assert np.allclose(ends[0], [0.15, 0.05, 0.05], atol=1e-6)  # above the part: 40 mm up by default
    assert np.allclose(ends[2], part3, atol=1e-6)  # down at it, then the grip closes
    assert plan.moves[3].gripper_rad[-1] == pytest.approx(arm.gripper.closed_rad)
    assert np.allclose(ends[5], [0.12, -0.08, 0.05], atol=1e-6)  # place: 30 mm above the bin
    assert plan.moves[7].gripper_rad[-1] == pytest.approx(arm.gripper.open_rad)
    assert np.allclose(ends[-2], part5, atol=1e-6)
    assert np.all(np.abs(np.diff(traj.q_rad, axis=0)) <= arm.max_speed_rad_s * traj.period_s * 1.0001 + 1e-12)


@pytest.mark.parametrize(
    ("step", "message"),
    [
        ("pick: {marker: -1}", "takes one marker id"),
        ("pick: {marker: 2, x: 1}", "takes one marker id"),
        ("pick: {marker: true}", "takes one marker id"),
        ("place: {marker: 1}\n    hover_mm: 0", "hover_mm"),
        ("pick: nowhere", "unknown pose 'nowhere'"),
        ("pick: {marker: 1}\n    blend_mm: 3", "unknown key 'blend_mm'"),
    ],
)
def test_bad_pick_steps_name_the_step(step, message):
    with pytest.raises(ConfigError, match=message) as err:
        load_program_text(f"arm: mearm\nsteps:\n  - {step}\n")
    assert str(err.value).startswith(("<program>:3: step 1", "<program>:4: step 1"))


def test_a_part_out_of_reach_is_refused_at_planning_naming_the_step():
    prog = with_parts(load_program_text(PROGRAM), {3: (0.5, 0.0, 0.0), 5: (0.13, -0.02, 0.0)})
    with pytest.raises(Exception, match=r"step 1\.1") as err:
        plan_program(prog, load_arm("mearm"))
    assert getattr(err.value, "exit_code", 3) == 3
