"""The Python API: ``armctl.connect()`` and the ``Robot`` on the simulated arm.

Moves land where they should (measured from the simulated servos); bad targets move nothing; a stop
from another thread stops the board at once; the port belongs to one handle; ``Robot.run`` and
``armctl run`` put the same bytes on the wire.
"""

from __future__ import annotations

import ast
import math
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

import armctl
from armctl.cli import main
from armctl.errors import BadInputError, JointLimitError, LinkError, StopRequested, UnreachableError
from armctl.model.kinematics import fk

ROOT = Path(__file__).resolve().parents[2]
PROGRAM = ROOT / "examples" / "pick_and_place.yaml"
GOLDEN_MOVES = ROOT / "tests" / "golden" / "pick_and_place.moves"
FAST = "armsim://?rate=20&seed=1"


def _sim(robot):
    """(recorded pulses so far, simulated time), read on the robot's board thread."""

    def read(backend):
        sim = backend.ser.sim
        sim.pump(backend.ser.sim_time_s())
        return list(sim.pulses), sim.now

    return robot.call(read)


def test_moves_land_within_a_millimetre_measured_from_the_servos():
    with armctl.connect("seed-3link", FAST) as robot:
        start = robot.where()
        assert start.source == "measured" and start.detail == "simulated servos"
        assert start.q_deg == pytest.approx([45, -90, -45])
        res = robot.move_to(0.5, 0.2, phi=math.radians(-30), speed=0.2).result
        pose = robot.where(settle=True)
        assert np.hypot(*(pose.tool_m - [0.5, 0.2])) < 1e-3
        assert math.degrees(pose.phi_rad) == pytest.approx(-30, abs=0.2)
        assert res.planned_tool_m == pytest.approx([0.5, 0.2]) and res.frames > 0 and res.duration_s > 0
        robot.move_joints([30, -60, 10], degrees=True)
        assert robot.where(settle=True).q_deg == pytest.approx([30, -60, 10], abs=0.1)
        robot.gripper("close")
        assert math.degrees(robot.where(settle=True).gripper_rad) == pytest.approx(10, abs=0.2)
        robot.gripper(math.radians(35))
        assert math.degrees(robot.where(settle=True).gripper_rad) == pytest.approx(35, abs=0.2)
        robot.home()
        assert robot.where(settle=True).q_deg == pytest.approx([45, -90, -45], abs=0.1)
        robot.run(PROGRAM)
        end = robot.where(settle=True)
        assert np.hypot(*(end.tool_m - [0.4950, -0.1293])) < 1e-3  # the program ends at home


def test_plan_to_moves_nothing_and_starts_where_the_arm_is():
    with armctl.connect("seed-3link", FAST) as robot:
        robot.move_to(0.6, 0.1)
        before = len(_sim(robot)[0])
        traj = robot.plan_to(0.4, 0.3, speed=0.05)
        assert len(_sim(robot)[0]) == before
        start = fk(robot.arm.links_m, traj.q_rad[0])
        # from the pulses the board holds (0.5 us steps: a fraction of a millimetre)
        assert start == pytest.approx([0.6, 0.1], abs=5e-4) and traj.duration_s > 3


@pytest.mark.parametrize(
    ("act", "error"),
    [
        (lambda r: r.move_to(1.2, 0.0), UnreachableError),
        (lambda r: r.move_to(-0.5, -0.5), JointLimitError),
        (lambda r: r.move_joints([100, 0, 0], degrees=True), JointLimitError),
        (lambda r: r.move_joints([0, 0]), BadInputError),
        (lambda r: r.move_to(float("nan"), 0.2), BadInputError),
        (lambda r: r.move_to(0.5, 0.2, speed=0), BadInputError),
        (lambda r: r.gripper("squeeze"), BadInputError),
    ],
)
def test_errors_move_nothing(act, error):
    with armctl.connect("seed-3link", FAST) as robot:
        robot.move_to(0.5, 0.1)
        before = _sim(robot)[0]
        with pytest.raises(error):
            act(robot)
        time.sleep(0.05)
        assert _sim(robot)[0] == before  # not one pulse changed
        robot.move_to(0.55, 0.1)  # and the arm still works


def test_unreachable_has_the_shortfall():
    with armctl.connect("seed-3link", FAST) as robot, pytest.raises(UnreachableError) as err:
        robot.move_to(1.2, 0.0)
    assert err.value.shortfall_m == pytest.approx(0.3)


def test_stop_from_another_thread_stops_the_board_within_a_frame():
    with armctl.connect("seed-3link", "armsim://?rate=1&seed=1") as robot:
        motion = robot.move_to(0.3, 0.45, speed=0.1, wait=False)  # several seconds of motion
        queued = robot.move_to(0.6, 0.0, wait=False)
        assert not motion.done and robot.moving
        time.sleep(0.5)
        t_stop = {}

        def stopper():
            t_stop["sim"] = _sim(robot)[1]
            robot.stop("test")

        threading.Thread(target=stopper).start()
        with pytest.raises(StopRequested, match=r"stopped \(test\)"):
            motion.wait(5)
        with pytest.raises(StopRequested):
            queued.wait(5)  # the queued one never started
        assert motion.stop_reason == "test" and not robot.moving
        time.sleep(0.3)
        pulses, _ = _sim(robot)
        joints = {s.channel for s in robot.calibration.joints}
        last_change = max(t for t, ch, _ in pulses if ch in joints)
        # the stop went out at once; the board holds from the next frame boundary (+ the link's line time)
        assert last_change - t_stop["sim"] < 0.045, last_change - t_stop["sim"]
        robot.move_to(0.5, 0.0)  # usable again
        assert np.hypot(*(robot.where(settle=True).tool_m - [0.5, 0.0])) < 1e-3


def test_non_blocking_moves_run_in_order_and_report():
    with armctl.connect("seed-3link", FAST) as robot:
        done = []
        a = robot.move_to(0.5, 0.3, wait=False)
        b = robot.move_to(0.6, 0.0, wait=False)
        c = robot.gripper("close", wait=False)
        for m in (a, b, c):
            m.add_done_callback(lambda m: done.append(m.label))
        assert c.wait(30).label == "close the gripper"
        assert done == ["move to (0.5, 0.3) m", "move to (0.6, 0) m", "close the gripper"]
        assert a.result.planned_tool_m == pytest.approx([0.5, 0.3]) and b.done and c.error is None
        # b was planned from where a ends: one continuous path, no ramp in between
        assert b.result.ramp_frames == 0
        assert np.hypot(*(robot.where(settle=True).tool_m - [0.6, 0.0])) < 1e-3


def test_cancel_drops_a_queued_motion():
    with armctl.connect("seed-3link", FAST) as robot:
        a = robot.move_to(0.5, 0.3, wait=False)
        b = robot.move_to(0.6, 0.0, wait=False)
        b.cancel()
        a.wait(30)
        with pytest.raises(StopRequested):
            b.wait(5)
        assert np.hypot(*(robot.where(settle=True).tool_m - [0.5, 0.3])) < 1e-3


def test_where_during_a_motion_answers_from_another_thread():
    with armctl.connect("seed-3link", "armsim://?rate=1&seed=1") as robot:
        m = robot.move_to(0.4, 0.3, speed=0.1, wait=False)
        seen = []
        while not m.done:
            t0 = time.monotonic()
            seen.append((robot.where().tool_m.copy(), time.monotonic() - t0))
            time.sleep(0.05)
        m.wait()
        assert len(seen) > 5
        xs = [p[0] for p, _ in seen]
        assert xs[0] > xs[-1]  # it watched the tool travel (x shrinks from home towards 0.4)


def test_two_handles_on_one_port_the_second_is_refused(tmp_path):
    port = f"armsim://?rate=20&seed=1&state={tmp_path / 'sim.json'}"
    with armctl.connect("seed-3link", port) as robot:
        with pytest.raises(LinkError, match=rf"in use by pid {os.getpid()}"):
            armctl.connect("seed-3link", port)
        robot.move_to(0.5, 0.2)  # the holder did not notice
    with armctl.connect("seed-3link", port) as robot:  # released on close
        assert robot.where().tool_m == pytest.approx([0.5, 0.2], abs=1e-3)


def test_a_second_process_is_refused_at_once_and_the_first_completes(tmp_path):
    """`armctl status` on the port of a running program used to send its handshake into the stream."""
    state = tmp_path / "sim.json"
    port = f"armsim://?rate=1&seed=1&state={state}"
    env = dict(os.environ, ARMCTL_STATE_DIR=os.environ["ARMCTL_STATE_DIR"])
    with armctl.connect("seed-3link", port) as robot:
        m = robot.move_to(0.4, 0.3, speed=0.1, wait=False)
        t0 = time.monotonic()
        proc = subprocess.run(
            [sys.executable, "-m", "armctl", "--port", port, "status"],
            capture_output=True,
            text=True,
            timeout=60,
            cwd=ROOT,
            env=env,
        )
        assert proc.returncode == 4, proc.stderr
        assert proc.stderr.count("\n") == 1 and f"in use by pid {os.getpid()}" in proc.stderr
        assert not m.done or time.monotonic() - t0 > 1.0
        res = m.wait(60)  # the first one finished its move
        assert res.planned_tool_m == pytest.approx([0.4, 0.3])


def _moves_sent(wire_log: Path) -> list[bytes]:
    """The move lines (``<seq> M ...``) the host sent, in order, from a wire log; a line sent again (a resend
    after a lost reply) counts once: only the next sequence number is taken."""
    out, expect = [], None
    for line in wire_log.read_text().splitlines():
        parts = line.split(None, 2)
        if len(parts) != 3 or parts[1] != ">":
            continue
        for chunk in ast.literal_eval(parts[2]).split(b"\n"):
            fields = chunk.split(b" ")
            if len(fields) < 3 or fields[1] in (b"H", b"Q", b"X"):  # unsequenced lines
                continue
            seq = int(fields[0])
            if expect is not None and seq != expect:
                continue  # a resend
            expect = (seq + 1) % 256
            if fields[1] == b"M":
                out.append(chunk + b"\n")
    return out


def test_robot_run_and_armctl_run_send_the_same_moves(tmp_path, capsys):
    # the golden moves are what a version 1 board (4 channels, widths in us) gets, in moves of at most 2 frames
    # (CONTROLLED_MOVE_FRAMES: a feed hold starts at once)
    port = FAST + "&protocol=1"
    api_log, cli_log = tmp_path / "api.log", tmp_path / "cli.log"
    with armctl.connect("seed-3link", port, wire_log=api_log) as robot:
        robot.run(PROGRAM)
    assert main(["--port", port, "run", str(PROGRAM), "--wire-log", str(cli_log), "--json"]) == 0
    capsys.readouterr()
    api, cli = _moves_sent(api_log), _moves_sent(cli_log)
    assert len(api) > 50 and api == cli
    if os.environ.get("ARMCTL_UPDATE_GOLDEN") == "1":
        GOLDEN_MOVES.write_bytes(b"".join(api))
    assert b"".join(api) == GOLDEN_MOVES.read_bytes(), "the moves of the example program changed"


def test_the_simulated_arm_is_the_default_and_keeps_its_pose():
    with armctl.connect() as robot:  # seed-3link on the simulated arm, state in ARMCTL_STATE_DIR
        assert robot.port.startswith("armsim://") and robot.arm.name == "seed-3link"
        robot.move_to(0.5, 0.25, speed=0.5)
    with armctl.connect() as robot:
        pose = robot.where()
        assert pose.measured and np.hypot(*(pose.tool_m - [0.5, 0.25])) < 1e-3


def test_closed_robot_refuses_work():
    robot = armctl.connect("seed-3link", FAST)
    robot.close()
    robot.close()  # twice is fine
    with pytest.raises(LinkError, match="closed"):
        robot.move_to(0.5, 0.2)


def test_empty_port_is_bad_input():
    with pytest.raises(BadInputError, match="empty"):
        armctl.connect("seed-3link", "")


def test_help_is_enough_to_start():
    doc = armctl.connect.__doc__
    for word in ("arm", "port", "backend", "calibration", "LinkError", "with"):
        assert word in doc
    for name in ("move_to", "move_joints", "home", "gripper", "run", "where", "stop", "plan_to", "close"):
        assert getattr(armctl.Robot, name).__doc__, name


def _grip_events(robot, sim) -> list[tuple[bool, np.ndarray]]:
    """(closing?, tool point m) each time the gripper starts to close or to open, from the simulated
    board's pulses (a pause in the middle of a gripper move, the board waiting for the host, is no event)."""
    cal = robot.calibration
    joints = {s.channel: i for i, s in enumerate(cal.joints)}
    widths, events, prev, going = [0.0] * len(joints), [], None, None
    for _, ch, w in sim.pulses:
        if ch in joints and w is not None:
            widths[joints[ch]] = w
        elif ch == cal.gripper.channel and w is not None:
            if prev is not None and w != prev:
                closing = bool(cal.gripper.angle_rad(w) < cal.gripper.angle_rad(prev))
                if closing != going:
                    events.append((closing, fk(robot.arm.links_m, cal.values_to_joints(np.array(widths)))))
                going = closing
            prev = w
    return events


def test_the_python_example_does_what_the_yaml_example_does(monkeypatch):
    """examples/pick_and_place.py grips and releases at the same points as examples/pick_and_place.yaml."""
    import importlib.util

    with armctl.connect("seed-3link", "armsim://?rate=50&seed=1") as robot:
        robot.run(PROGRAM)
        want = _grip_events(robot, robot.backend.ser.sim)
    robots = []
    real_connect = armctl.connect

    def keep(*args, **kw):
        robot = real_connect(*args, **kw)
        robots.append((robot, robot.backend.ser.sim))
        return robot

    monkeypatch.setattr(armctl, "connect", keep)
    spec = importlib.util.spec_from_file_location("pick_and_place_example", ROOT / "examples" / "pick_and_place.py")
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    monkeypatch.setattr(example.time, "sleep", lambda s: None)  # the simulator runs 50x: no wall-clock waits
    example.main("armsim://?rate=50&seed=1")
    got = _grip_events(*robots[0])
    assert [c for c, _ in want] == [True, False] * 3
    assert [c for c, _ in got] == [c for c, _ in want]
    for (_, a), (_, b) in zip(got, want):
        assert np.hypot(*(a - b)) < 1e-3


def test_cancel_mid_way_the_next_motion_starts_where_the_arm_stopped():
    """A gripper close queued after a move used to ramp the arm to the cancelled move's target first."""
    with armctl.connect("seed-3link", "armsim://?rate=2&seed=1") as robot:
        a = robot.move_to(0.3, 0.4, speed=0.05, wait=False)
        g = robot.gripper("close", wait=False)
        a.started.wait(10)
        time.sleep(0.5)
        a.cancel()
        with pytest.raises(StopRequested):
            a.wait(30)
        stopped = robot.where(settle=True).tool_m
        assert np.hypot(*(stopped - [0.3, 0.4])) > 0.02  # it stopped well short of the target
        res = g.wait(30)
        assert g.replanned and res.ramp_frames == 0
        pose = robot.where(settle=True)
        assert np.hypot(*(pose.tool_m - stopped)) < 1e-3  # the gripper closed where the arm stopped
        assert pose.gripper_rad == pytest.approx(robot.arm.gripper.closed_rad, abs=math.radians(1))


def test_cancel_a_queued_move_the_one_after_it_goes_from_where_the_arm_is():
    with armctl.connect("seed-3link", FAST) as robot:
        a = robot.move_to(0.5, 0.3, wait=False)
        b = robot.move_to(0.6, 0.0, wait=False)
        c = robot.gripper("close", wait=False)
        b.cancel()
        a.wait(30)
        c.wait(30)
        assert c.replanned and not a.replanned
        assert np.hypot(*(robot.where(settle=True).tool_m - [0.5, 0.3])) < 1e-3  # never went to b's target


def test_a_long_program_streams_from_its_first_frame(tmp_path):
    """A 50-minute program was cut into moves whole before the first was sent: the board's watchdog (1 s)
    fired at the start and the run died. Its moves are now cut as they are sent."""
    import yaml

    prog = yaml.safe_load(PROGRAM.read_text())
    prog["steps"] = [{"repeat": 120, "steps": prog["steps"]}]
    path = tmp_path / "long.yaml"
    path.write_text(yaml.safe_dump(prog))
    with armctl.connect("seed-3link", "armsim://?rate=1&seed=1") as robot:
        m = robot.run(path, wait=False)
        assert m.trajectory.duration_s > 3000
        m.started.wait(60)
        # (planning 30 000 moves the arm stood still a while: the watchdog may have fired then, harmlessly)
        fired = robot.call(lambda b: b.ser.sim.board.counters["wdog"])
        time.sleep(3.0)  # board seconds: three times its watchdog
        assert not m.done, m.error
        robot.stop("test over")
        with pytest.raises(StopRequested):
            m.wait(30)
        assert robot.board_status().counters["wdog"] == fired


def test_the_watchdog_that_fired_while_the_arm_stood_still_is_on_again_for_the_next_move():
    """Idle for longer than the board's watchdog: it fires (harmless, the arm holds) and turns itself off.
    The next move used to play without one; a host that died then left the board playing its whole queue."""
    with armctl.connect("seed-3link", "armsim://?rate=1&seed=1") as robot:
        robot.move_to(0.5, 0.2)
        time.sleep(1.6)

        def watchdog_s(backend):
            backend.ser.sim.pump(backend.ser.sim_time_s())
            return backend.ser.sim.board.wdog_s

        assert robot.call(watchdog_s) == 0  # it fired: off
        robot.move_to(0.5, 0.25)
        assert robot.call(watchdog_s) == 1  # on again (1 s)


def test_a_script_that_ends_while_the_arm_moves_stops_it_under_control(tmp_path):
    """No close(), no wait(): the interpreter used to cut the stream off mid-motion (the board played on
    until its watchdog; the next run found an unclean end). Now the motion stops under control at exit."""
    port = f"armsim://?rate=1&seed=1&state={tmp_path / 'sim.json'}"
    script = (
        "import sys, time, armctl\n"
        "r = armctl.connect('seed-3link', sys.argv[1])\n"
        "m = r.move_to(0.3, 0.4, speed=0.05, wait=False)\n"
        "m.started.wait(30); time.sleep(1.0)\n"
    )
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    out = subprocess.run([sys.executable, "-c", script, port], capture_output=True, text=True, env=env, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "the program ended while the arm" in out.stderr and "stopped under control" in out.stderr
    with armctl.connect("seed-3link", port) as robot:
        assert robot.recovered is None  # a clean stop, not a crash
        here = robot.where().tool_m
        assert 0.01 < np.hypot(*(here - fk(robot.arm.links_m, np.radians([45, -90, -45]))))
        assert np.hypot(*(here - [0.3, 0.4])) > 0.05  # stopped part way


def test_the_api_refuses_what_is_not_a_number_or_a_radian_and_a_closed_robot_says_closed():
    with armctl.connect("seed-3link", FAST) as robot:
        start = robot.where().q_deg
        bad = [
            (lambda: robot.move_joints([0.5, -1.0, -0.5], speed_fraction="0.5"), "speed_fraction: expected a number"),
            (lambda: robot.move_to(0.5, 0.2, phi=-90), "phi: -90 rad is more than a turn"),
            (lambda: robot.move_to(True, 0.2), "x: expected a number, got True"),
            (lambda: robot.move_to("0.5", 0.2), "x: expected a number, got '0.5'"),
            (lambda: robot.move_joints([45, -90, -45]), "joint 1: 45 rad is more than a turn"),
            (lambda: robot.gripper(30), "gripper angle: 30 rad is more than a turn"),
        ]
        for call, msg in bad:
            with pytest.raises(BadInputError, match=msg):
                call()
        assert robot.where().q_deg == pytest.approx(start)  # nothing moved
        robot.move_joints(np.radians([45, -80, -45]))  # numpy numbers are numbers
        robot.gripper(30, degrees=True)
    for call in (robot.hold, robot.settle, robot.push_limits, robot.board_status, robot.board_limits, robot.where):
        with pytest.raises(LinkError, match="is closed"):
            call()


def test_lock_files_go_with_their_lock_and_a_crashed_holders_file_blocks_nobody(tmp_path):
    """Every port used to leave its lock file behind in the state folder for good. The lock itself is
    filelock's (flock on POSIX, LockFileEx on Windows); its race with a file removed on release is filelock's
    to handle (it checks the locked file is still the one at the path)."""
    from armctl.bus import portlock

    port = f"armsim://?rate=20&seed=1&state={tmp_path / 'sim.json'}"
    locks = Path(os.environ["ARMCTL_STATE_DIR"]) / "locks"
    with armctl.connect("seed-3link", port):
        names = sorted(p.suffix for p in locks.iterdir())
        assert names == [".holder", ".lock"]
    assert list(locks.iterdir()) == []
    a = portlock.PortLock("/dev/ttyFAKE0")
    a.acquire()
    assert f"pid {os.getpid()}" in a.holder_path.read_text()
    with pytest.raises(LinkError, match=f"in use by pid {os.getpid()}"):
        portlock.PortLock("/dev/ttyFAKE0").acquire()  # a second handle in the same process
    a.release()
    # a holder that died (a kill, a power cut) leaves its files; they hold nothing
    a.path.write_text("")
    a.holder_path.write_text("pid 1 (armctl run)\n")
    b = portlock.PortLock("/dev/ttyFAKE0")
    b.acquire()
    assert b.held and f"pid {os.getpid()}" in b.holder_path.read_text()
    b.release()
