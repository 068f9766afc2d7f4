"""The terminal's keys as a gamepad (``armctl.teleop.keypad``), the keyboard leader of LeRobot's teleoperator: on a
pty, a held arrow (the terminal's auto-repeat) moves the MeArm's tool the arrow's way through ``GamepadLeader`` and
``Robot.follow`` and stops once the repeats stop; m switches joint mode; the
end of input (Ctrl-D) is the leader gone (LinkError)."""

from __future__ import annotations

import io
import math
import os
import pty
import time

import numpy as np
import pytest

import armctl
from armctl.core.terminal import Terminal
from armctl.errors import LinkError
from armctl.model.arm import load_arm
from armctl.model.kinematics import tool_point
from armctl.teleop.gamepad import GamepadLeader
from armctl.teleop.keypad import KeyboardPad

RIGHT = b"\x1b[C"


@pytest.fixture
def keys():
    """(the pad reading the pty's slave end, a function writing to its master end)."""
    master, slave = pty.openpty()
    pad = KeyboardPad(Terminal(fullscreen=False, fd_in=slave, out=io.StringIO(), raw=False))
    yield pad, lambda data: os.write(master, data)
    pad.close()
    os.close(master)
    os.close(slave)


def _poll_for(pad, seconds: float, every: float = 0.01):
    states, end = [], time.monotonic() + seconds
    while time.monotonic() < end:
        states.append(pad.poll())
        time.sleep(every)
    return states


def test_a_held_arrow_is_the_stick_pushed_until_its_repeats_stop(keys):
    pad, write = keys
    for _ in range(10):  # auto-repeat at 30 a second
        write(RIGHT)
        pad.poll()
        time.sleep(1 / 30)
    assert pad.state.axes["leftx"] == 1.0 and pad.state.axes["lefty"] == 0.0
    states = _poll_for(pad, 0.3)
    released = next(k for k, s in enumerate(states) if s.axes["leftx"] == 0.0)
    assert 0.03 < released * 0.01 < 0.2  # about twice the repeat interval after the last repeat
    write(b"m")
    assert pad.poll().presses == ["x"]  # the gamepad's X: joint / Cartesian mode


def test_the_end_of_input_is_the_leader_gone(keys):
    pad, write = keys
    write(b"\x04")  # Ctrl-D: the end of input (Ctrl-C stays the terminal's interrupt signal: keys in cbreak mode)
    time.sleep(0.05)
    assert pad.poll().removed
    leader = GamepadLeader(pad, load_arm("mearm"))
    with pytest.raises(LinkError, match="the keyboard's terminal closed"):
        leader.read()


def test_the_arrow_keys_lead_the_mearm_through_the_follow(keys):
    pad, write = keys
    with armctl.connect("mearm") as robot:
        arm = robot.arm
        pose = robot.where()
        leader = GamepadLeader(pad, arm, speed_mm_s=50)
        leader.start(pose.q_rad, pose.gripper_rad)
        start = tool_point(arm, np.array(pose.q_rad)) * 1000
        m = robot.follow(leader, map="joints", on_frame=leader.commanded)
        try:
            t_end = time.monotonic() + 1.0
            while time.monotonic() < t_end:  # Right held for a second, repeats at 30 a second
                write(RIGHT)
                pad.poll()
                time.sleep(1 / 30)
            _poll_for(pad, 0.6)
            stopped = tool_point(arm, np.array(robot.where().q_rad)) * 1000
            _poll_for(pad, 0.4)
            later = tool_point(arm, np.array(robot.where().q_rad)) * 1000
        finally:
            m.cancel()
    moved = stopped - start
    print(f"a second of Right at 50 mm/s moved the tool {moved} mm")
    assert 20 < moved[0] < 60 and math.hypot(moved[1], moved[2]) < 3.0, moved
    assert np.abs(later - stopped).max() < 0.5  # released: it stands


def test_the_keyboard_with_no_terminal_is_one_line(monkeypatch):
    """LeRobot's --teleop.keyboard=true started with no terminal (a script, a service): one line, not termios.error."""
    import pytest

    from armctl.errors import BadInputError

    monkeypatch.setattr("sys.stdin", io.StringIO(""))
    with pytest.raises(BadInputError, match="standard input is not a terminal"):
        KeyboardPad()
