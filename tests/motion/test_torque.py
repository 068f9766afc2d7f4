"""The torque check (``armctl.motion.torque``): a planned move, program, follow step or ROS trajectory asking a
servo for more than ``torque_use`` of its stall torque, holding the pose plus the acceleration's share, is refused
before anything moves, naming the joint, the step, the time, the torque needed and the servo's.

The torques asked are checked against ``armctl.model.statics`` computed here sample by sample (gravity_torque plus
mass_matrix times the samples' second differences), and the shipped examples pass at their default payload."""

from __future__ import annotations

import dataclasses
import math
import re
from pathlib import Path

import numpy as np
import pytest

from armctl.errors import BadInputError, ConfigError, MotionError, TorqueLimitError
from armctl.model.arm import load_arm
from armctl.model.servos import KGCM_NM, MODELS, Servo
from armctl.model.statics import gravity_torque, mass_matrix
from armctl.motion import JointMove, Wait, plan_moves
from armctl.motion.torque import (
    StreamCheck,
    accelerations,
    carrying,
    check_torque,
    joint_torques,
    torque_note,
)
from armctl.program import load_program, load_program_text, plan_program
from armctl.program.payload import step_payloads, with_payload

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = sorted((ROOT / "examples").glob("pick_and_place*.yaml"))
SO101 = load_arm("so101")
MEARM = load_arm("mearm")
SEED2 = load_arm("seed-2link")


def _stretched_so101():
    """SO-101 poses: home (holding 120 g there asks 9.3 kg.cm of shoulder_lift's 19.5), and the arm at its zero
    pose, out in front (13.7 kg.cm with 120 g: more than 60% of 19.5)."""
    home = np.array(SO101.home_rad)
    out = home.copy()
    out[1:4] = 0.0
    return home, out


def test_every_shipped_pick_and_place_passes_at_its_default_payload():
    for path in EXAMPLES:
        prog = load_program(path)
        plan = plan_program(prog, load_arm(prog.arm_ref))
        use = plan.torque
        assert use is not None and use.joint is not None, path.name  # every preset names its servos
        assert 0.0 < use.share <= plan.arm.drive.torque_use, (path.name, use.line())


def test_a_hold_needs_exactly_the_gravity_torque_and_names_joint_step_time_and_servo():
    _, out = _stretched_so101()
    arm = carrying(SO101, 0.12)
    moves = [JointMove(tuple(out), label="reach out"), Wait(0.2, label="hold it there")]
    with pytest.raises(TorqueLimitError) as err:
        plan_moves(arm, moves, q_start=SO101.home_rad)
    e = err.value
    assert isinstance(e, MotionError) and e.exit_code == 3
    assert SO101.joint_names[e.joint] == "shoulder_lift"
    msg = str(e)
    assert msg.startswith("shoulder_lift needs ")
    assert "with the 120 g part; an STS3215 (7.4 V) gives 19.5 at 7.4 V (60% of it: 11.7)" in msg
    assert re.search(r"t = \d+\.\d\d s", msg) and "in 'reach out'" in msg
    need = float(re.search(r"needs ([\d.]+) kg.cm", msg).group(1))
    assert need == pytest.approx(e.need_nm / KGCM_NM, abs=0.05)
    # the torque named is statics' own at that sample: gravity plus the inertia times the acceleration
    plan = plan_moves(carrying(arm, check=False), moves, q_start=SO101.home_rad)
    traj = plan.trajectory
    k = int(round(e.t_s / traj.period_s))
    assert 0 < k < len(traj) - 1
    q = traj.q_rad
    qdd = (q[k + 1] - 2 * q[k] + q[k - 1]) / traj.period_s**2
    tau = gravity_torque(SO101, q[k], 0.12) + mass_matrix(SO101, q[k], 0.12) @ qdd
    assert e.need_nm == pytest.approx(abs(tau[e.joint]), rel=1e-6)
    assert e.hold_nm == pytest.approx(abs(gravity_torque(SO101, q[k], 0.12)[e.joint]), rel=1e-6)
    assert abs(tau[e.joint]) > 0.6 * MODELS["sts3215"].at().stall_kgcm * KGCM_NM


def test_the_first_sample_asking_too_much_is_the_one_named():
    home, out = _stretched_so101()
    arm = carrying(SO101, 0.12)
    plan = plan_moves(carrying(arm, check=False), [JointMove(tuple(out))], q_start=home)
    traj = plan.trajectory
    tau, _ = joint_torques(SO101, traj.q_rad, accelerations(traj.q_rad, traj.period_s), 0.12)
    stall = np.array([SO101.drive.servo(i).stall_nm for i in range(SO101.n)])
    over = np.any(np.abs(tau) / stall > 0.6, axis=1)
    assert over.any() and not over[0]
    with pytest.raises(TorqueLimitError) as err:
        check_torque(arm, traj)
    assert err.value.t_s == pytest.approx(traj.t_s[int(np.argmax(over))])


def test_torque_use_sets_the_share_allowed():
    home, out = _stretched_so101()
    moves = [JointMove(tuple(out), speed_fraction=0.1)]
    strict = dataclasses.replace(SO101, drive=dataclasses.replace(SO101.drive, torque_use=0.3))
    use = plan_moves(SO101, moves, q_start=home).torque
    assert 0.3 < use.share < 0.6  # passes at the default 60% ...
    with pytest.raises(TorqueLimitError, match=r"\(30% of it: 5\.85\)"):
        plan_moves(strict, moves, q_start=home)  # ... not at 30%


def test_a_horizontal_arm_has_only_the_acceleration_share():
    weak = Servo(MODELS["sg90"])
    arm = dataclasses.replace(SEED2, drive=dataclasses.replace(SEED2.drive, servos=(weak, weak)))
    q1 = (math.radians(-40), math.radians(-30))
    held = plan_moves(arm, [Wait(0.5)]).trajectory  # the arm still: nothing asked at all
    assert np.all(joint_torques(arm, held.q_rad, accelerations(held.q_rad, 0.02))[0] == 0.0)
    slow = plan_moves(arm, [JointMove(q1, speed_fraction=0.05, accel_rad_s2=0.5)])
    assert slow.torque.share < 0.6
    with pytest.raises(TorqueLimitError) as err:  # the same move at full speed and acceleration
        plan_moves(arm, [JointMove(q1, speed_fraction=1.0, accel_rad_s2=20.0)])
    assert err.value.hold_nm == 0.0 and "move slower" in str(err.value)
    assert "holding the pose alone takes" not in str(err.value) or "0.00" in str(err.value)


def test_an_arm_naming_no_servo_is_not_checked_and_says_so():
    bare = dataclasses.replace(MEARM, drive=dataclasses.replace(MEARM.drive, servos=()))
    plan = plan_moves(carrying(bare, 2.0), [JointMove((0.3, 1.2, -0.2))])
    assert plan.torque.joint is None
    assert "names no servo" in plan.torque.note and plan.torque.line().startswith("torque: arm 'mearm' names no servo")
    assert torque_note(MEARM) == ""
    assert torque_note(carrying(MEARM, check=False)) == "the torque check is off"


def test_the_check_off_lets_a_payload_through():
    far = (0.0, math.radians(60.0), math.radians(10.0))
    with pytest.raises(TorqueLimitError, match=r"with the 200 g part; an SG90 gives 1.8 at 4.8 V \(60% of it: 1.08\)"):
        plan_moves(carrying(MEARM, 0.2), [JointMove(far)])
    plan = plan_moves(carrying(MEARM, 0.2, check=False), [JointMove(far)])
    assert plan.torque.joint is None and plan.torque.note == "the torque check is off"


def test_carrying_refuses_a_bad_mass():
    for bad in (-0.01, float("nan"), float("inf"), 11.0, "heavy", True):
        with pytest.raises(BadInputError, match="payload"):
            carrying(MEARM, bad)


PICK = """\
arm: so101
payload_g: {payload}
poses:
  part: {{xyz_mm: [250, 0, 40]}}
  far: {{xyz_mm: [330, 0, 120]}}
steps:
  - pick: part
    part_g: {part}
  - line: far
  - gripper: open
  - line: far
    offset_mm: [-60, 0, 0]
"""


def test_a_picked_part_is_carried_from_the_grip_until_the_gripper_opens():
    prog = load_program_text(PICK.format(payload=0, part=250))
    from armctl.program.plan import expand

    flat = expand(prog)
    loads = step_payloads(prog, flat, 0.010)
    names = [it.step.name or it.step.action for it in flat]
    grip = names.index("pick part: grip")
    assert loads[:grip] == pytest.approx([0.010] * grip)  # the program's payload_g all along
    assert loads[grip : grip + 3] == pytest.approx([0.260] * 3)  # grip, up, the line out, the open
    assert loads[-1] == pytest.approx(0.010)


def test_a_heavy_part_is_refused_at_the_step_that_carries_it_and_a_light_one_passes():
    plan = plan_program(load_program_text(PICK.format(payload=0, part=20), "pick.yaml"), SO101)
    assert plan.torque.share < 0.6
    with pytest.raises(TorqueLimitError) as err:
        plan_program(load_program_text(PICK.format(payload=0, part=900), "pick.yaml"), SO101)
    msg = str(err.value)
    assert msg.startswith("pick.yaml:7: shoulder_lift needs ")
    assert "at step 1.4 'pick part: grip' (line 7), t = " in msg  # it closes on the part: carried from there
    assert "with the 900 g part" in msg
    # carried all along (payload_g), the same mass is refused before the pick
    with pytest.raises(TorqueLimitError, match=r"at step 1\.1 'pick part: above'.* with the 900 g part"):
        plan_program(load_program_text(PICK.format(payload=900, part=0), "pick.yaml"), SO101)


def test_run_payload_replaces_the_programs_payload_g():
    prog = load_program_text(PICK.format(payload=900, part=0), "pick.yaml")
    assert plan_program(with_payload(prog, 0.0), SO101).torque.share < 0.6
    with pytest.raises(BadInputError, match="--payload"):
        with_payload(prog, -1.0)


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("steps:\n  - gripper: open\n    part_g: 20\n", "part_g is the mass of a part the gripper closes on"),
        ("steps:\n  - gripper: close\n    part_g: -5\n", "part_g"),
        ("payload_g: -1\nsteps:\n  - wait_s: 1\n", "payload_g"),
        ("part_g: heavy\nsteps:\n  - wait_s: 1\n", "part_g"),
        ("steps:\n  - place: {xy_mm: [300, 100]}\n    part_g: 5\n", "unknown key 'part_g'"),
    ],
)
def test_bad_masses_in_a_program_are_one_config_error_line(text, words):
    with pytest.raises(ConfigError, match=words) as err:
        load_program_text(text, "p.yaml")
    assert err.value.line is not None and err.value.exit_code == 2


def test_a_follow_holds_at_a_target_asking_too_much_and_may_leave_a_pose_that_does():
    home, out = _stretched_so101()
    check = StreamCheck(carrying(SO101, 0.12))
    why = check.why(home, out, 0.0)
    assert why.startswith("held: shoulder_lift needs ") and "at the target with the 120 g part" in why
    assert check.why(home, home + 0.001, 0.02) == ""  # a target it can hold: taken
    inward = out + 0.2 * (home - out)  # still too much to hold, but less than where it stands: the way out, taken
    assert StreamCheck(carrying(SO101, 0.12)).why(out, inward, 0.0) == ""
    assert StreamCheck(carrying(SO101, 0.12)).why(inward, out, 0.0).startswith("held: ")  # and not back out
    assert StreamCheck(carrying(SO101, 0.12, check=False)).why(home, out, 0.0) == ""


def test_a_follow_counts_the_streams_acceleration():
    """Targets swinging shoulder_lift up against gravity, fast: the same targets pass when they come slowly."""
    home, out = _stretched_so101()
    low = home + 0.3 * (out - home)  # holding 100 g here takes 10.7 kg.cm of the 11.7 allowed

    def swing(period_s: float) -> list[str]:
        check = StreamCheck(carrying(SO101, 0.10))
        out = []
        for k in range(2 * StreamCheck.SPAN + 1):
            lift = 0.0 if k < StreamCheck.SPAN else 0.02 * (k - StreamCheck.SPAN) ** 2  # accelerating upwards
            out.append(check.why(low, low + np.array([0.0, lift, 0.0, 0.0, 0.0]), period_s))
        return out

    assert not any(swing(1.0))
    fast = swing(0.01)
    assert fast[-1].startswith("held: shoulder_lift needs ") and "holding the pose alone takes" in fast[-1]


def test_a_long_program_is_checked_fast():
    """Thousands of samples: the check is vectorised (a few tens of ms per thousand samples)."""
    import time

    prog = load_program(ROOT / "examples" / "pick_and_place_so101.yaml")
    plan = plan_program(prog, SO101)
    traj = plan.trajectory
    reps = max(1, 20000 // len(traj))
    long = dataclasses.replace(traj, q_rad=np.tile(traj.q_rad, (reps, 1)), step=np.tile(traj.step, reps))
    long.t_s = np.arange(len(long.q_rad)) * traj.period_s
    t0 = time.perf_counter()
    check_torque(SO101, long)
    took = time.perf_counter() - t0
    assert took < 5.0, f"{len(long.q_rad)} samples took {took:.2f} s"
