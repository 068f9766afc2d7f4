"""``armctl jog --gamepad [--device N|NAME]``: jog the arm with a gamepad, read through SDL (``armctl.teleop.gamepad``:
SDL's standard GameController mapping, so any pad SDL knows has the same buttons), no terminal needed.

The sticks give a speed proportional to their deflection (past a dead zone); a stick let go (back in its dead
zone) stops the arm at once. The arm follows the pad through ``Robot.follow``: every step checked as a leader
arm's (joint and linkage limits, reach, speed, keep-out zones, torque; speeding up within the acceleration
limits). Unplugged mid-jog, the arm stops at once and armctl exits 4 with one line.

The hidden test hook ``ARMCTL_GAMEPAD_SCRIPT=FILE`` attaches SDL's virtual joystick in this process and plays
FILE on it (``armctl.teleop.gamepad.ScriptPlayer``; ``ARMCTL_GAMEPAD_PLAYED=FILE`` logs when each event played):
the tests' and ``bench/jog_stop.py``'s gamepad.
"""

from __future__ import annotations

import os
import time

from armctl.core import stopsignals
from armctl.errors import ArmctlError, BadInputError, LinkError, StopRequested

POLL_S = 0.002  # the pad is read this often
STOP_WAIT_S = 2.0  # unplugged: how long the stop may take to reach the board before the line is printed
FOLLOW_RATE_HZ = 100.0
DEFAULT_SPEED_MM_S = 50.0
SPEEDS_MM_S = (5.0, 10.0, 25.0, 50.0, 100.0, 200.0)

HELP = """\
gamepad (--gamepad; SDL's standard mapping, Xbox names):
  left stick        x / y of the tool (joint mode: joints 1 / 2)
  right stick       up/down: z, on an arm on a rotating base (joint mode: joint 3);
                    left/right: the tool's pitch, 3-link arms (joint mode: joint 4)
  triggers          the wrist roll, right + / left - (joint mode: joint 5)
  shoulders         held: left closes, right opens the gripper
  X                 switch Cartesian / joint mode        Y   home
  B                 stop (the arm holds)                 Start   quit, holding the pose
  D-pad up / down   full-deflection speed up / down (5 .. 200 mm/s)
  Speed is proportional to how far a stick is pushed (past a 15% dead zone); let go and the arm stops at once.
  A gamepad unplugged mid-jog stops the arm (exit 4)."""


class GamepadJog:
    """The gamepad's jog on an open ``robot``: the follow of ``leader`` (restarted after home or a stop), the
    buttons, and what is said (``say``)."""

    def __init__(self, robot, pad, *, speed_mm_s: float, say=print, player=None):
        from armctl.teleop.gamepad import GamepadLeader

        self.robot, self.pad, self.say, self.player = robot, pad, say, player
        self.leader = GamepadLeader(pad, robot.arm, speed_mm_s=speed_mm_s)
        self.follow = None  # the follow playing (None: stopped, or homing)
        self.homing = None
        self.quit: str | None = None
        self.held_why = ""  # why the arm holds while a stick pushes, as last said

    def start(self) -> None:
        """Follow the pad from the pose the arm is commanded to."""
        pose = self.robot.commanded_pose()
        self.leader.start(pose.q_rad, getattr(pose, "gripper_rad", float("nan")))
        self.follow = self.robot.follow(
            self.leader, map="joints", rate_hz=FOLLOW_RATE_HZ, on_frame=self.leader.commanded
        )

    def lost(self) -> LinkError:
        """The pad was unplugged: the arm stops now (and has stopped when this returns); the error to exit with."""
        self.robot.stop("gamepad unplugged")
        for m in (self.follow, self.homing):
            if m is not None:
                try:
                    m.wait(timeout=STOP_WAIT_S)  # the board told to stop: what it had queued is dropped
                except (ArmctlError, TimeoutError):
                    pass
        return LinkError(f"the gamepad {self.pad.name!r} was unplugged mid-jog: the arm stopped and holds its pose")

    def step(self) -> None:
        """One poll of the pad: unplugged (raise), the follow's end, the buttons."""
        now = time.monotonic()
        if self.player is not None:
            self.player.play(now)
        st = self.pad.poll()
        if st.removed:
            raise self.lost()
        for m in (self.follow, self.homing):
            if m is not None and m.done and m.error is not None and not isinstance(m.error, StopRequested):
                raise m.error  # a lost link, a motion error: the arm has stopped
        self._held_note()
        if self.homing is not None and self.homing.done:
            self.homing = None
            self.start()
        for b in st.presses:
            self.button(b)
            if self.quit is not None:
                return

    def _held_note(self) -> None:
        """Once per run of them: why the arm holds while a stick pushes (a limit, the reach, a zone, the torque)."""
        why = self.leader.clamped or (self.follow.teleop.status.clamped if self.follow is not None else "")
        if why and why != self.held_why:
            self.say(f"held: {why}")
        self.held_why = why

    def button(self, b: str) -> None:
        leader = self.leader
        if b == "start":
            self.robot.stop("quit")
            self.quit = "q"
        elif b == "b":
            self._stop("stopped (B): the arm holds its pose")
            self.start()
        elif b == "x":
            leader.set_mode("joints" if leader.mode == "tool" else "tool")
            self.say("joint mode: the sticks turn joints" if leader.mode == "joints" else "Cartesian mode")
        elif b == "y" and self.homing is None:
            self._stop("")
            self.homing = self.robot.home(wait=False)
            self.say("home (B stops)")
        elif b in ("dpup", "dpdown"):
            now = leader.speed_m_s * 1000.0
            faster = [v for v in SPEEDS_MM_S if v > now + 1e-9]
            slower = [v for v in SPEEDS_MM_S if v < now - 1e-9]
            pick = (faster[:1] or [now]) if b == "dpup" else (slower[-1:] or [now])
            leader.speed_m_s = pick[0] / 1000.0
            self.say(f"full deflection: {pick[0]:g} mm/s")

    def _stop(self, said: str) -> None:
        self.robot.stop("gamepad")
        self.follow = self.homing = None
        if said:
            self.say(said)


def run(jog: GamepadJog) -> str:
    """Poll the pad until Start, Ctrl-C or SIGHUP/SIGTERM (the arm stops at once); why it ended. LinkError for an
    unplugged pad or a lost link (the arm stopped)."""

    def on_signal(signum, frame):
        name = stopsignals.signal_name(signum)
        jog.robot.stop(name)
        jog.quit = name

    restore = stopsignals.install(on_signal)
    try:
        jog.start()
        while jog.quit is None:
            jog.step()
            time.sleep(POLL_S)
    except KeyboardInterrupt:
        jog.robot.stop("interrupted")
        jog.quit = "ctrl-c"
    finally:
        restore()
    return jog.quit


def script_player():
    """The test hook: ``ARMCTL_GAMEPAD_SCRIPT`` set, a virtual gamepad attached in this process playing it."""
    path = os.environ.get("ARMCTL_GAMEPAD_SCRIPT")
    if not path:
        return None
    from armctl.teleop.gamepad import ScriptPlayer, VirtualGamepad

    try:
        text = open(path, encoding="utf-8").read()
    except OSError as exc:
        raise BadInputError(f"ARMCTL_GAMEPAD_SCRIPT: cannot read {path}: {exc.strerror}") from None
    return ScriptPlayer(text, VirtualGamepad(), where=path)


def check_options(args) -> float:
    """The options the gamepad takes (the keyboard's --record, --step, --release-ms refused); the speed, mm/s."""
    from armctl.core.units import parse_float

    for opt in ("record", "step", "release_ms"):
        if getattr(args, opt, None) is not None:
            raise BadInputError(
                f"--{opt.replace('_', '-')} is for the keyboard pendant; the gamepad's sticks say when they are let go"
            )
    if args.json:
        raise BadInputError("--json needs a target (armctl jog X Y); the gamepad is interactive")
    speed = DEFAULT_SPEED_MM_S if args.speed is None else parse_float(args.speed, what="--speed")
    if not 0 < speed <= 1000:
        raise BadInputError(f"--speed: {args.speed} mm/s is outside (0, 1000] mm/s")
    return speed


def cmd_gamepad(args) -> int:
    """``armctl jog --gamepad``."""
    from armctl.cli import EXIT_INTERRUPTED
    from armctl.cli.common import open_robot, setup
    from armctl.cli.pendant_screen import xyz_text
    from armctl.teleop.gamepad import open_gamepad, sdl

    speed = check_options(args)
    arm, cal = setup(args)
    sdl()  # a missing pysdl2: one line naming the extra, before any port opens
    player = script_player()
    pad = open_gamepad(args.device if args.device is not None else (None if player is None else player.pad.index))
    try:
        with open_robot(args, arm, cal) as robot:
            print(f"armctl jog: gamepad {pad.index} {pad.name!r}, Cartesian mode, {speed:g} mm/s at full deflection")
            jog = GamepadJog(robot, pad, speed_mm_s=speed, player=player)
            try:
                why = run(jog)
            finally:
                _log_played(player)
            pose = robot.commanded_pose()
    finally:
        pad.close()
    print(f"armctl jog: left the arm at {xyz_text(pose.tool_mm, width=0)} ({why}); it holds its pose")
    if why == "q":
        return 0
    if why.startswith("SIG"):
        import signal

        return 128 + int(signal.Signals[why])
    return EXIT_INTERRUPTED


def _log_played(player) -> None:
    path = os.environ.get("ARMCTL_GAMEPAD_PLAYED")
    if player is not None and path:
        with open(path, "w", encoding="utf-8") as f:
            f.writelines(f"{t:.6f} {line}\n" for t, line in player.played)
