"""``armctl jog --gamepad``: a gamepad through SDL, tested with SDL's own virtual joystick (a real SDL device made
in this process: ``armctl.teleop.gamepad.VirtualGamepad``) moved by timed scripts, driving a real Robot on the
simulated arm served on a pty by this process (so every pulse the board outputs is recorded with its time).

Proved: a deflection moves the tool in the stick's direction at a speed proportional to it; let go, the arm stops
at once (within the aim's short lead, whatever the machine's timing); pushing into the edge of the workspace stops
there; a gamepad unplugged mid-jog stops the arm with one line (exit 4) and nothing moves after; the buttons.
No absolute times are asserted: distances, directions and ratios.
"""

from __future__ import annotations

import math
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from tests.helpers import require_module

require_module("sdl2", "the gamepad is read through SDL (pip install 'armctl[gamepad]': pysdl2, pysdl2-dll)")

import armctl  # noqa: E402
from armctl.cli import main  # noqa: E402
from armctl.cli.gamepad import GamepadJog, run  # noqa: E402
from armctl.errors import LinkError  # noqa: E402
from armctl.model.kinematics import tool_point  # noqa: E402
from armctl.teleop import gamepad  # noqa: E402
from armctl.teleop.gamepad import LEAD_MIN, LEAD_S, ScriptPlayer, VirtualGamepad, open_gamepad  # noqa: E402
from tests.cli import test_pendant  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
sim = test_pendant.sim  # the fixture: the simulated seed-3link arm on a pty, served by a thread of this process


@pytest.fixture
def vpad():
    pad = VirtualGamepad()
    yield pad
    pad.unplug()


class Run:
    """One in-process gamepad jog on ``robot`` playing ``script``: what was commanded (time, tool point mm, q), what
    was said, the events played, how it ended."""

    def __init__(self, robot, vpad, script: str, *, speed_mm_s: float = 50.0):
        self.robot, self.said, self.frames = robot, [], []
        pad = open_gamepad(str(vpad.index))
        self.player = ScriptPlayer(script, vpad)
        jog = GamepadJog(robot, pad, speed_mm_s=speed_mm_s, say=self.said.append, player=self.player)
        inner = jog.leader.commanded

        def commanded(t_s, q_rad, g, target=None, measured=None):
            self.frames.append((t_s, tool_point(robot.arm, q_rad) * 1000.0, np.array(q_rad), g))
            inner(t_s, q_rad, g, target, measured)

        jog.leader.commanded = commanded
        self.jog, self.error = jog, None
        try:
            self.why = run(jog)
        except LinkError as exc:
            self.error, self.why = exc, None
        finally:
            pad.close()

    def at(self, line: str) -> float:
        """When the script's event ``line`` was played (time.monotonic())."""
        return next(t for t, played in self.player.played if played == line)

    def tool(self, t: float) -> np.ndarray:
        """The tool point commanded last before ``t`` (mm)."""
        return [p for ts, p, _, _ in self.frames if ts <= t][-1]

    def speed(self, t0: float, t1: float) -> np.ndarray:
        """The commanded tool's mean velocity between ``t0`` and ``t1`` (mm/s), over the frames sent then."""
        inside = [(ts, p) for ts, p, _, _ in self.frames if t0 <= ts <= t1]
        (ta, pa), (tb, pb) = inside[0], inside[-1]
        return (pb - pa) / (tb - ta)


def _connect(sim):
    return armctl.connect("seed-3link", sim.path, assume_pose="home")


def test_speed_is_proportional_to_the_deflection_in_the_sticks_direction_and_release_stops(sim, vpad):
    script = """
    0.2 leftx 0.4
    1.2 leftx 0
    1.5 lefty 0.8
    2.5 lefty 0
    2.9 start down
    """
    with _connect(sim) as robot:
        r = Run(robot, vpad, script)
    assert r.why == "q" and r.error is None
    slow = r.speed(r.at("0.2 leftx 0.4") + 0.3, r.at("1.2 leftx 0"))
    fast = r.speed(r.at("1.5 lefty 0.8") + 0.3, r.at("2.5 lefty 0"))
    print(f"commanded: {slow} mm/s at 0.4 right, {fast} mm/s at 0.8 up")
    assert slow[0] > 0 and abs(slow[1]) < 0.05 * slow[0]  # right: +x only
    assert fast[1] > 0 and abs(fast[0]) < 0.05 * fast[1]  # up: +y only
    assert fast[1] / slow[0] == pytest.approx(2.0, rel=0.15)  # twice the deflection, twice the speed
    assert slow[0] == pytest.approx(0.4 * 50.0, rel=0.25)  # 0.4 of the 50 mm/s of full deflection
    ends = (("1.2 leftx 0", slow[0], "1.5 lefty 0.8"), ("2.5 lefty 0", fast[1], "2.9 start down"))
    for release, speed, until in ends:
        t = r.at(release)
        after = [p for ts, p, _, _ in r.frames if t <= ts < r.at(until)]
        moved = max(np.linalg.norm(p - r.tool(t)) for p in after)
        # released: at most the step already sent, towards an aim at most LEAD_S of travel ahead
        assert moved <= max(speed * LEAD_S, LEAD_MIN * 1000) + 0.5, (release, moved)
        assert np.linalg.norm(after[-1] - after[len(after) // 2]) < 0.05  # and then it stands
    # the simulated board: its pulses stop changing after each release (the latency printed, not asserted)
    for release in ("1.2 leftx 0", "2.5 lefty 0"):
        t_sim = (r.at(release) - sim.t0) * sim.rate
        nxt = (r.at("1.5 lefty 0.8") if release.startswith("1.2") else r.at("2.9 start down") - 0.1) - sim.t0
        changes = [t for t, _, _ in list(sim.sim.pulses) if t_sim - 1.0 < t < nxt * sim.rate]
        print(f"{release}: last pulse change {(max(changes) - t_sim) / sim.rate * 1000:.0f} ms after the release")


def test_pushing_into_the_edge_of_the_workspace_stops_there(sim, vpad):
    script = """
    0.2 leftx 1.0
    3.2 leftx 0
    3.4 start down
    """
    with _connect(sim) as robot:
        r = Run(robot, vpad, script, speed_mm_s=200.0)
        final = robot.commanded_pose()
    assert r.error is None and r.why == "q"
    arm = robot.arm
    assert arm.within_limits(final.q_rad)
    pushed = [p for ts, p, _, _ in r.frames if r.at("0.2 leftx 1.0") + 2.5 <= ts <= r.at("3.2 leftx 0")]
    start = r.tool(r.at("0.2 leftx 1.0"))
    assert pushed[-1][0] - start[0] > 100  # it went a long way right ...
    assert np.ptp([p[0] for p in pushed]) < 0.5  # ... and stood at the edge while the stick still pushed
    assert any(line.startswith("held: ") and "reach" in line for line in r.said), r.said  # said once, with why
    with pytest.raises(armctl.MotionError):  # the edge: a step further right at the same tool angle is out
        armctl.motion.solve_pose(arm, (pushed[-1] + [5.0, 0.0]) / 1000.0, final.phi_rad, final.q_rad)


def test_joint_mode_stops_at_the_joint_limit_and_says_so(sim, vpad):
    script = """
    0.1 x down
    0.2 x up
    0.3 leftx 1.0
    1.8 leftx 0
    1.9 start down
    """
    with _connect(sim) as robot:
        r = Run(robot, vpad, script)
        final = robot.commanded_pose()
    assert r.why == "q"
    q_max = robot.arm.q_max[0]
    pushed = [q[0] for ts, _, q, _ in r.frames if r.at("0.3 leftx 1.0") + 1.2 <= ts <= r.at("1.8 leftx 0")]
    assert max(pushed) <= q_max + 1e-9 and q_max - min(pushed) < math.radians(0.2)  # at its limit, held there
    assert final.q_rad[0] == pytest.approx(q_max, abs=math.radians(0.2))
    assert any(line.startswith("held: shoulder at its limit 90.0 deg") for line in r.said), r.said


def test_an_unplugged_gamepad_stops_the_arm_and_nothing_moves_after(sim, vpad):
    script = """
    0.2 leftx 0.8
    1.0 unplug
    """
    with _connect(sim) as robot:
        r = Run(robot, vpad, script)
        assert isinstance(r.error, LinkError) and "unplugged" in str(r.error)
        assert len(str(r.error).splitlines()) == 1
        t = r.at("1.0 unplug")
        after = [p for ts, p, _, _ in r.frames if ts >= t]
        assert all(np.linalg.norm(p - r.tool(t)) <= 0.8 * 50 * LEAD_S + 0.5 for p in after)
        n = len(sim.sim.pulses)
        time.sleep(0.3)
        assert len(sim.sim.pulses) == n  # nothing moves after
        assert not robot.moving


def test_buttons_switch_to_joint_mode_move_the_gripper_and_home(sim, vpad):
    script = """
    0.1 x down
    0.2 x up
    0.3 leftx 0.6
    0.9 leftx 0
    1.0 leftshoulder down
    1.15 leftshoulder up
    1.5 y down
    1.6 y up
    4.0 start down
    """
    with _connect(sim) as robot:
        home = np.array(robot.arm.home_rad)
        r = Run(robot, vpad, script)
        end = robot.commanded_pose()
    assert r.why == "q", r.said
    assert "joint mode: the sticks turn joints" in r.said and "home (B stops)" in r.said
    t = r.at("0.9 leftx 0")
    q = [qq for ts, _, qq, _ in r.frames if ts <= t][-1]
    assert q[0] - home[0] > math.radians(5) and np.allclose(q[1:], home[1:], atol=math.radians(0.1))  # joint 1
    g = [gg for ts, _, _, gg in r.frames if ts <= r.at("1.15 leftshoulder up")]
    grip = robot.arm.gripper
    assert g[-1] < g[0] - math.radians(5) and g[-1] > grip.closed_rad  # closed while held, not all the way
    assert np.allclose(end.q_rad, home, atol=math.radians(0.2))  # Y: home


def test_the_command_line_stops_with_one_line_and_exit_4_when_unplugged(sim, tmp_path):
    """``armctl jog --gamepad`` in its own process, its virtual gamepad played from ARMCTL_GAMEPAD_SCRIPT."""
    script = tmp_path / "pad.txt"
    script.write_text("0.3 leftx 0.8\n1.2 unplug\n")
    env = dict(os.environ, PYTHONPATH=str(ROOT), ARMCTL_GAMEPAD_SCRIPT=str(script))
    env["ARMCTL_GAMEPAD_PLAYED"] = str(tmp_path / "played")
    argv = [sys.executable, "-m", "armctl", "--port", sim.path, "--assume-pose", "home", "jog", "--gamepad"]
    before = len(sim.sim.pulses)
    p = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=60)
    assert p.returncode == 4, p.stderr
    assert p.stderr.strip().splitlines() == [
        "armctl jog: error: the gamepad 'armctl virtual gamepad' was unplugged mid-jog: the arm stopped and holds "
        "its pose"
    ]
    assert "left the arm" not in p.stdout
    assert len(sim.sim.pulses) > before  # it moved while the stick was pushed
    n = len(sim.sim.pulses)
    time.sleep(0.3)
    assert len(sim.sim.pulses) == n
    t_unplug = float((tmp_path / "played").read_text().splitlines()[-1].split()[0])
    late = [t for t, _, _ in list(sim.sim.pulses) if t > (t_unplug - sim.t0) * sim.rate]
    print(f"pulse changes after the unplug: {len(late)}")


def test_without_sdl_one_line_names_the_extra_and_nothing_opens(monkeypatch, capsys, tmp_path):
    monkeypatch.setitem(sys.modules, "sdl2", None)
    monkeypatch.setattr(gamepad, "_sdl", None)
    assert main(["--port", str(tmp_path / "nothing"), "jog", "--gamepad"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "pip install 'armctl[gamepad]'" in err[0], err


@pytest.mark.parametrize(
    ("argv", "why"),
    [
        (["jog", "--gamepad", "--release-ms", "100"], "--release-ms is for the keyboard pendant"),
        (["jog", "--gamepad", "0.5", "0.2"], "--gamepad jogs without a target"),
        (["jog", "--device", "0"], "--device picks the gamepad of --gamepad"),
        (["jog", "--gamepad", "--speed", "0"], "--speed: 0 mm/s is outside"),
        (["jog", "--gamepad", "--device", "no such pad"], "--device 'no such pad': no gamepad by that name"),
    ],
)
def test_bad_gamepad_options_get_one_line_and_exit_2(argv, why, vpad, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and why in err[0], err
