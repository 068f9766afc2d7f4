"""Run control from Python: feed hold (``motion.pause()``), resume, ``robot.speed_override``; and the progress
record of program runs (``resume=True``, ``from_step``). On the simulated arm, asserted from the pulses its
board put out frame by frame (armsim's record), not from what armctl says it sent."""

from __future__ import annotations

import math
import time
from pathlib import Path

import numpy as np
import pytest

import armctl
from armctl.bus.hosttimed import HostTimed
from armctl.errors import BadInputError
from armctl.model.kinematics import tool_point
from armctl.robot.runcontrol import RunControl
from armctl.robot.stream import Player, Pulses, prepare

ROOT = Path(__file__).resolve().parents[2]
PROGRAM = ROOT / "examples" / "pick_and_place.yaml"


def _frames(robot, t0: float = 0.0) -> np.ndarray:
    """The board's output per 20 ms frame from sim time ``t0``: (frames, channels) in us, forward-filled."""
    sim = robot.backend.ser.sim
    rows = [(t, ch, w) for t, ch, w in list(sim.pulses) if w is not None]
    channels = max(ch for _, ch, _ in rows) + 1
    last = [math.nan] * channels
    out, frame = [], None
    for t, ch, w in rows:
        f = round(t / 0.02)
        if frame is not None and f != frame and frame * 0.02 >= t0:
            out.extend([list(last)] * (f - frame))
        frame = f
        last[ch] = w
    out.append(list(last))
    return np.array(out)


def _tool(robot, frames: np.ndarray) -> np.ndarray:
    cal = robot.calibration
    q = np.column_stack([s.angle_rad(frames[:, s.channel]) for s in cal.joints])
    return tool_point(robot.arm, q)


def _per_frame_limit_us(robot) -> np.ndarray:
    cal, arm = robot.calibration, robot.arm
    return np.array([math.degrees(v) * s.per_deg * 0.02 for s, v in zip(cal.joints, arm.max_speed_rad_s)])


def test_hold_stays_on_the_line_decelerates_and_resumes(tmp_path):
    with armctl.connect("seed-3link", f"armsim://?rate=2&seed=1&state={tmp_path / 's.json'}") as robot:
        robot.move_to(0.45, -0.05, phi=math.radians(-90), path="joint")
        t_start = robot.backend.ser.sim.now
        m = robot.move_to(0.45, -0.30, phi=math.radians(-90), speed=0.1, wait=False)
        time.sleep(0.6)  # host seconds: 1.2 s of board time into a 2.5 s line
        m.pause()
        assert m.paused
        deadline = time.monotonic() + 10
        while robot.control.state != "held" and time.monotonic() < deadline:
            time.sleep(0.01)
        assert robot.control.state == "held" and not m.done
        time.sleep(0.2)  # the simulated servos reach the pulses held
        held = robot.where().tool_m
        time.sleep(0.5)
        assert np.allclose(robot.where().tool_m, held, atol=1e-6), "the arm moved while held"
        assert -0.28 < held[1] < -0.07, f"held at {held}: not part-way along the line"
        m.resume()
        m.wait(timeout=30)
        end = robot.where(settle=True).tool_m
        frames = _frames(robot, t_start)
    assert np.allclose(end, [0.45, -0.30], atol=1e-3)
    tool = _tool(robot, frames)
    # every frame the board played lies on the planned path: the polyline through the planned samples in servo
    # space (what the board plays at full speed), within the merge tolerance (0.5 us) and resolution (0.5 us)
    planned = prepare(m.trajectory, robot.calibration).us[:, :3]
    off = _max_off_path_us(frames[:, :3], planned)
    assert off <= 1.01, f"a frame {off:.2f} us off the planned path"
    assert np.max(np.abs(tool[:, 0] - 0.45)) < 1e-3  # (so the tool stayed on the line x = 0.45)
    # no servo stepped faster than its joint's speed limit
    steps = np.abs(np.diff(frames[:, :3], axis=0))
    assert np.all(steps <= _per_frame_limit_us(robot) + 0.6)
    # the hold decelerated: the tool's speed came down over several frames, not at once
    speed = np.abs(np.diff(tool[:, 1])) / 0.02
    still = np.flatnonzero(speed < 1e-6)
    moving = np.flatnonzero(speed > 0.05)
    stop = still[still > moving[0]][0]  # the first frame at rest after the motion began: the hold
    assert stop < len(speed) - 10, "no hold in the middle of the line"
    before = speed[stop - 12 : stop]
    assert before[0] > 0.06 and 0 < before[-1] < 0.5 * before[0], f"no deceleration: {before}"
    assert np.sum((before > 0.01) & (before < 0.09)) >= 4, f"the hold was abrupt: {before}"


def _max_off_path_us(frames: np.ndarray, planned: np.ndarray) -> float:
    """How far (us, per servo) the farthest of ``frames`` lies from the polyline through ``planned`` (both (N, c))."""
    a, b = planned[:-1], planned[1:]
    d = b - a
    worst = 0.0
    for row in frames:
        u = np.clip(np.einsum("ij,ij->i", row - a, d) / np.maximum(np.einsum("ij,ij->i", d, d), 1e-12), 0, 1)
        worst = max(worst, float(np.min(np.max(np.abs(a + u[:, None] * d - row), axis=1))))
    return worst


def test_a_hold_decelerates_at_once_on_the_path_within_the_joint_limits(tmp_path):
    """GRBL's feed hold: the deceleration starts within a few frames of the request (not after the board's queue
    and a long merged move play out), along the planned path, and no joint passes its speed or acceleration limit.
    Real time (rate 1), so frames of the board are frames of the host."""
    with armctl.connect("seed-3link", f"armsim://?rate=1&seed=1&state={tmp_path / 's.json'}") as robot:
        q0, q1 = np.radians([-60, -120, -100]), np.radians([60, 120, 100])
        robot.move_joints(q0, speed_fraction=1.0)
        sim = robot.backend.ser.sim
        t0 = sim.now
        m = robot.move_joints(q1, speed_fraction=0.6, wait=False)  # the example's joint speed: about 2.7 s
        time.sleep(1.2)  # cruising, in one long move of the plan
        t_hold = sim.now
        extra = robot.backend.lead_extra  # frames kept queued beyond LEAD_S after underruns (a busy machine)
        m.pause()
        deadline = time.monotonic() + 10
        while robot.control.state != "held" and time.monotonic() < deadline:
            time.sleep(0.01)
        assert robot.control.state == "held" and not m.done
        time.sleep(0.1)
        m.resume()
        m.wait(timeout=30)
        frames = _frames(robot, t0)[:, :3]
        assert np.allclose(robot.where(settle=True).q_rad, q1, atol=1e-3)
    cal, arm = robot.calibration, robot.arm
    f_hold = round(t_hold / 0.02) - round(t0 / 0.02)  # the frame (from t0) in which the hold was asked for
    still = np.all(np.diff(frames, axis=0) == 0, axis=1)
    rest = next(f for f in range(f_hold, len(still) - 5) if still[f : f + 5].all())  # held: at rest for 5+ frames
    # the frames as sent: a frame the board repeated because the host was late (an underrun on a busy machine,
    # which only delays the rest) is left out, so the check is of the playback, not of the machine's load
    seen = frames[f_hold - 20 : rest + 1]
    keep = np.concatenate([[True], ~np.all(np.diff(seen, axis=0) == 0, axis=1)])
    played, late = seen[keep], int(np.sum(~keep[:21]))
    steps = np.abs(np.diff(played, axis=0))
    speed = steps[:, 1]  # the elbow: the fastest joint of this move
    at_hold = 20 - late
    cruise = np.median(speed[at_hold - 10 : at_hold])
    assert cruise > 5, "not cruising when held"
    slower = at_hold + np.flatnonzero(speed[at_hold:] < 0.9 * cruise)[0]
    # the deceleration starts within the lead (LEAD_S: 5 frames, more after underruns) and a move (2 frames), plus
    # a frame of estimate
    assert slower - at_hold <= 9 + extra, f"the deceleration started {slower - at_hold} frames after the hold"
    assert len(played) - 1 - slower <= 8, f"it took {len(played) - 1 - slower} frames to come to rest"
    # on the planned path (the straight line in joint space of a joint move), within resolution and merging
    planned = prepare(m.trajectory, cal).us[:, :3]
    assert _max_off_path_us(played, planned) <= 1.01
    # within every joint's speed and acceleration limit (+ the board's 0.5 us resolution, on each frame's value)
    assert np.all(steps <= _per_frame_limit_us(robot) + 0.6)
    accel = np.abs(np.diff(played, 2, axis=0))
    a_max = np.array([math.degrees(a) * s.per_deg * 0.02**2 for s, a in zip(cal.joints, arm.max_accel_rad_s2)])
    assert np.all(accel <= a_max + 1.0), f"a joint accelerated {np.max(accel / a_max):.2f} x its limit"


def test_a_queue_that_ran_dry_is_kept_longer(tmp_path):
    """The short queue that makes a hold prompt is for a host that keeps up: once the board ran dry while it was
    being fed (the host stalled longer than the queue), armctl keeps more queued (up to the 0.3 s it used to)."""
    with armctl.connect("seed-3link", f"armsim://?rate=1&seed=1&state={tmp_path / 's.json'}") as robot:
        q0, q1 = np.radians([-60, -120, -100]), np.radians([60, 120, 100])
        robot.move_joints(q0, speed_fraction=1.0)
        be, board = robot.backend, robot.backend.ser.sim.board
        move, left = be.move, []

        def late_move(frames, values):
            be.ser.sim.pump(be.ser.sim_time_s())
            left.append(board.left_frames)
            if len(left) == 20:
                time.sleep(0.25)  # the host stalls (a busy machine): the 0.1 s on the board runs out
            move(frames, values)

        be.move = late_move
        robot.move_joints(q1, speed_fraction=0.6)
    assert be.underruns >= 1, "the stall was not seen as an underrun"
    assert be.lead_extra > 0
    before, after = np.median(left[5:20]), np.median(left[30:])
    assert after >= before + 1.5, f"{after} frames queued after the underrun, {before} before it"


def test_the_queue_kept_ahead_grows_on_an_underrun_only_while_fed_and_shrinks_back():
    from armctl.bus.armproto.backend import FEED_SETTLE_S, LEAD_GROW_FRAMES, LEAD_MAX_S, ArmProtocolBackend

    be = ArmProtocolBackend("armsim://")  # (not opened: the bookkeeping alone)
    be.note_empty(3, 0.0)  # not feeding: a run-out the host chose (the end of a motion, a hold)
    be.note_empty(4, 0.1)
    assert be.underruns == 0 and be.lead_extra == 0
    be._feeding_since = 1.0
    be.note_empty(5, 1.0 + FEED_SETTLE_S / 2)  # the end of what played before may still show
    be.note_empty(5, 1.0 + FEED_SETTLE_S)
    assert be.underruns == 0
    be.note_empty(6, 1.2)  # ran dry while fed
    assert be.underruns == 1 and be.lead_extra == LEAD_GROW_FRAMES
    for i in range(5):
        be.note_empty(7 + i, 1.3 + 0.1 * i)
    assert be.lead_extra == LEAD_MAX_S / 0.02  # at most the 0.3 s kept before
    be.note_empty(11, 3.7)  # 2 s without one
    assert be.lead_extra == pytest.approx(LEAD_MAX_S / 0.02 - 1.0)


class _HostTimedRecorder(HostTimed):
    """A board the host times frame by frame (as Firmata, the PCA9685, bus servos), on a fake clock: records
    every frame's values."""

    name = "recorder"

    def __init__(self):
        self.current = {0: 1500.0, 1: 1500.0}
        self.t, self.frames = 0.0, []
        self._init_timing(clock=lambda: self.t, sleep=self._sleep)

    def _sleep(self, seconds: float) -> None:
        self.t += seconds

    def _write_frame(self, values) -> None:
        self.current.update(values)

    def move(self, frames, values) -> None:
        start = dict(self.current)
        for i in range(frames):  # (one frame at a time, to record each)
            super().move(1, {a: start[a] + (v - start[a]) * (i + 1) / frames for a, v in values.items()})
            self.frames.append([self.current[0], self.current[1]])

    def idle(self, seconds: float) -> None:
        self._waiting()
        self.frames.append([self.current[0], self.current[1]])

    open = close = status = lambda self: None  # noqa: E731

    @classmethod
    def create(cls, *a, **k):
        return cls()


def test_a_hold_on_a_host_timed_board_decelerates_from_the_next_frame():
    """Firmata, the PCA9685 and bus servos are timed from the host: the hold changes the very next frame, not
    the end of a long merged move (25 frames of a straight line in servo space)."""
    board, ctl = _HostTimedRecorder(), RunControl()
    line = np.column_stack([np.linspace(1500, 2000, 101), np.linspace(1500, 1700, 101)])
    pulses = Pulses((0, 1), line, np.zeros(101, dtype=int), ["line"], 1)
    asked = []

    def tick():
        if len(board.frames) == 30 and not asked:
            ctl.pause()
            asked.append(len(board.frames))
        elif ctl.state == "held":
            ctl.resume()

    Player(board, tick=tick, control=ctl).play([pulses])
    got = np.array(board.frames)
    step = np.abs(np.diff(got[:, 0]))
    at = asked[0]
    assert step[at - 2] == pytest.approx(5.0)  # full speed until the hold
    assert step[at] < 4.5, f"still at full speed {np.flatnonzero(step[at:] < 4.5)[0] + 1} frames after the hold"
    rest = at + np.flatnonzero(step[at:] == 0)[0]
    assert rest - at <= 6  # from full speed in HOLD_RAMP_S (5 frames)
    assert np.allclose((got[:, 1] - 1500) * 2.5, got[:, 0] - 1500, atol=1e-6)  # on the line, every frame
    assert np.allclose(got[-1], [2000, 1700])  # and on to its end after the resume


def test_speed_override_scales_the_motion_and_never_passes_a_joint_limit(tmp_path):
    with armctl.connect("seed-3link", f"armsim://?rate=5&seed=1&state={tmp_path / 's.json'}") as robot:
        robot.move_to(0.45, -0.05, phi=math.radians(-90), path="joint")
        robot.speed_override = 0.5
        slow = robot.move_to(0.45, -0.25, phi=math.radians(-90), speed=0.1)
        robot.speed_override = 2.0
        fast = robot.move_to(0.45, -0.05, phi=math.radians(-90), speed=0.1)
        t0 = robot.backend.ser.sim.now
        robot.move_joints([0.0, 0.0, 0.0], speed_fraction=1.0)  # every joint at its limit already
        frames = _frames(robot, t0)
    assert slow.result.frames > 1.8 * fast.result.frames * 2 - 40  # 0.5x vs 2x of the same line
    steps = np.abs(np.diff(frames[:, :3], axis=0))
    limit = _per_frame_limit_us(robot)
    assert np.all(steps <= limit + 0.6), f"a servo stepped {np.max(steps / limit):.2f} x its limit"
    assert np.max(steps / limit) > 0.9  # it did run at the limit (the override could not take it past)


def test_speed_override_refuses_percent_and_out_of_range(tmp_path):
    with armctl.connect("seed-3link", f"armsim://?rate=20&seed=1&state={tmp_path / 's.json'}") as robot:
        with pytest.raises(BadInputError, match="0.5 for 50 %"):
            robot.speed_override = 50
        with pytest.raises(BadInputError, match="outside"):
            robot.speed_override = 0.05
        with pytest.raises(BadInputError):
            robot.speed_override = "1"
        robot.speed_override = 1.5
        assert robot.speed_override == 1.5


def test_program_progress_is_recorded_and_resumed(tmp_path):
    port = f"armsim://?rate=10&seed=1&state={tmp_path / 's.json'}"
    with armctl.connect("seed-3link", port) as robot:
        m = robot.run(PROGRAM, wait=False)
        time.sleep(1.2)  # 12 s of board time: past the first part
        robot.stop("test")
        with pytest.raises(armctl.errors.StopRequested):
            m.wait(timeout=30)
        rec = robot.last_run()
        assert rec.status == "stopped" and 5 <= rec.step < rec.steps and rec.program == str(PROGRAM.resolve())
        pr = robot.prepare_run(PROGRAM, resume=True)
        assert pr.first_step == rec.step and f"resuming at step {rec.step + 1} of {rec.steps}" in pr.describe
        robot.run(pr)
        assert robot.last_run().status == "done"
        with pytest.raises(BadInputError, match="nothing to resume"):
            robot.prepare_run(PROGRAM, resume=True)
        # start at a named step: the gripper is set first (closed at 'lift'), then the move to its start
        pr = robot.prepare_run(PROGRAM, from_step="lift")
        assert pr.first_step == 4 and "the gripper first goes from open to closed" in pr.describe
        g = pr.trajectory.gripper_rad
        moved = np.flatnonzero(np.any(np.abs(np.diff(pr.trajectory.q_rad, axis=0)) > 1e-9, axis=1))
        assert abs(g[moved[0]] - robot.arm.gripper.closed_rad) < 1e-6, "the arm moved before the gripper closed"
        with pytest.raises(BadInputError, match="no step"):
            robot.prepare_run(PROGRAM, from_step="nope")
        with pytest.raises(BadInputError, match="1..31"):
            robot.prepare_run(PROGRAM, from_step="99")


def test_a_motion_asked_for_while_held_waits_at_its_start_and_a_stop_ends_the_hold(tmp_path):
    with armctl.connect("seed-3link", f"armsim://?rate=5&seed=1&state={tmp_path / 's.json'}") as robot:
        before = robot.where(settle=True).tool_m
        robot.pause()
        m = robot.move_to(0.45, -0.1, phi=math.radians(-90), wait=False)
        deadline = time.monotonic() + 10
        while robot.control.state != "held" and time.monotonic() < deadline:
            time.sleep(0.01)
        time.sleep(0.3)
        assert robot.control.state == "held" and not m.done
        assert np.allclose(robot.where().tool_m, before, atol=1e-6), "it moved while held"
        robot.stop("test")
        with pytest.raises(armctl.errors.StopRequested):
            m.wait(timeout=10)
        assert not robot.paused
        robot.move_to(0.45, -0.1, phi=math.radians(-90))
        assert np.allclose(robot.where(settle=True).tool_m, [0.45, -0.1], atol=1e-3)


def test_hold_and_resume_on_bus_servos(tmp_path):
    """The same hold on Feetech bus servos (host-timed goals; the simulated bus measures where they are)."""
    with armctl.connect("so101", f"feetechsim://?state={tmp_path / 'bus.json'}") as robot:
        start = robot.where(settle=True).tool_m
        target = start + np.array([0.0, 0.08, 0.0])
        m = robot.move_to(*target, speed=0.04, wait=False)  # 2 s
        time.sleep(0.8)
        m.pause()
        deadline = time.monotonic() + 10
        while robot.control.state != "held" and time.monotonic() < deadline:
            time.sleep(0.01)
        assert robot.control.state == "held" and not m.done
        time.sleep(0.3)  # the servos reach their last goals
        a = robot.where().tool_m
        time.sleep(0.5)
        b = robot.where().tool_m
        assert np.linalg.norm(a - b) < 2e-4, "the servos moved while held"
        assert 0.01 < np.linalg.norm(a - start) < 0.07, "not held part-way"
        m.resume()
        m.wait(timeout=30)
        assert np.linalg.norm(robot.where(settle=True).tool_m - target) < 2e-3


def test_a_restart_inside_a_blended_chain_starts_where_the_chain_starts(tmp_path):
    from armctl.program import load_program, with_blend

    prog = with_blend(load_program(PROGRAM), 20)  # lift, over the stack, down to the slot: one chain of lines
    with armctl.connect("seed-3link", f"armsim://?rate=20&seed=1&state={tmp_path / 's.json'}") as robot:
        pr = robot.prepare_run(prog, from_step="over the stack")
        assert pr.plan.moves[5].blended and pr.plan.moves[4].blended
        assert pr.first_step == 4 and "step 5 of 31: step 1.5 'lift'" in pr.describe
        lead = pr.trajectory.step < pr.offset
        start = pr.trajectory.q_rad[int(np.count_nonzero(lead))]
        speed = np.abs(pr.trajectory.q_rad[int(np.count_nonzero(lead)) + 1] - start)
        assert np.max(speed) < 1e-3, "the program part does not start at rest"
