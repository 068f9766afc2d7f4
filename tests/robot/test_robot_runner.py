"""The Robot's motion runner (``armctl.robot.runner``): one thread owns the board and plays the motions in order;
calls are served between two frames; board jobs wait until no motion plays; a stop drops what is queued;
whatever goes wrong on the runner thread reaches the caller."""

from __future__ import annotations

import threading
import time

import pytest

import armctl
from armctl.errors import LinkError, StopRequested

FAST = "armsim://?rate=5&seed=1"


@pytest.fixture(autouse=True)
def _folders(tmp_path, monkeypatch):
    for var, sub in (("ARMCTL_STATE_DIR", "state"), ("ARMCTL_CONFIG_DIR", "config")):
        monkeypatch.setenv(var, str(tmp_path / sub))


def test_a_motion_queued_while_one_plays_plays_after_it_in_order():
    ended = []
    with armctl.connect("seed-3link", FAST) as robot:
        first = robot.move_to(0.45, 0.1, wait=False)
        first.add_done_callback(lambda m: ended.append(m.label))
        assert first.started.wait(5)
        second = robot.move_to(0.4, 0.25, wait=False)  # queued while the first one plays
        second.add_done_callback(lambda m: ended.append(m.label))
        assert robot.moving and not second.started.is_set()
        res = second.wait(30)
        assert first.done and first.result is not None
        assert ended == [first.label, second.label]
        assert res.planned_tool_m == pytest.approx([0.4, 0.25])
        assert not robot.moving


def test_motions_play_on_the_runner_thread_and_calls_are_served_between_frames():
    threads, poses = set(), []
    with armctl.connect("seed-3link", FAST, progress=lambda *a: threads.add(threading.current_thread().name)) as robot:
        m = robot.move_to(0.45, 0.1, wait=False)
        assert m.started.wait(5)
        while not m.done:
            poses.append(robot.where())  # answered while the motion plays, not after it
        m.wait(30)
        assert threads and all(name.startswith("armctl-robot-") for name in threads)
        assert threading.current_thread().name not in threads
        assert len(poses) >= 2 and poses[0].source == "measured"


def test_a_board_job_waits_until_no_motion_plays():
    with armctl.connect("seed-3link", FAST) as robot:
        m = robot.move_to(0.45, 0.1, wait=False)
        assert m.started.wait(5)
        status = robot.board_status()  # the board to itself: after the motion
        assert m.done and status.left_frames == 0


def test_stop_ends_the_motion_playing_drops_the_queued_ones_and_the_next_one_plays():
    with armctl.connect("seed-3link", FAST) as robot:
        playing = robot.move_to(0.45, 0.1, speed=0.05, wait=False)
        queued = robot.move_to(0.4, 0.25, wait=False)
        assert playing.started.wait(5)
        robot.stop("test stop")
        with pytest.raises(StopRequested, match="test stop"):
            playing.wait(10)
        with pytest.raises(StopRequested, match="not started"):
            queued.wait(10)
        assert playing.cancelled() and playing.stop_reason == "test stop"
        assert not robot.moving
        robot.move_to(0.4, 0.25)  # a motion asked for after the stop plays as usual
        assert robot.where(settle=True).tool_m == pytest.approx([0.4, 0.25], abs=1e-3)


def test_an_exception_on_the_runner_thread_reaches_the_caller():
    def progress(fraction, step, left):
        if fraction > 0.2:
            raise RuntimeError("progress hook failed")

    with armctl.connect("seed-3link", FAST, progress=progress) as robot:
        with pytest.raises(RuntimeError, match="progress hook failed"):
            robot.move_to(0.45, 0.1)
        assert not robot.moving
        with pytest.raises(ZeroDivisionError):
            robot.call(lambda backend: 1 / 0)
        robot.progress = None
        robot.move_to(0.4, 0.25)  # the runner lives on
        assert robot.where(settle=True).tool_m == pytest.approx([0.4, 0.25], abs=1e-3)


def test_a_closed_robot_refuses_work():
    robot = armctl.connect("seed-3link", FAST)
    robot.close()
    with pytest.raises(LinkError, match="closed"):
        robot.where()
    with pytest.raises(LinkError, match="closed"):
        robot.move_to(0.4, 0.25)


def test_a_done_callback_may_move_again_and_wait():
    ended = []
    with armctl.connect("seed-3link", FAST) as robot:

        def then(m):
            ended.append(robot.move_to(0.4, 0.25).result)  # on the runner thread: played there, not a deadlock

        robot.move_to(0.45, 0.1, wait=False).add_done_callback(then)
        deadline = time.monotonic() + 30
        while not ended and time.monotonic() < deadline:
            time.sleep(0.05)
        assert ended and ended[0].planned_tool_m == pytest.approx([0.4, 0.25])
