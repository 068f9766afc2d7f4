"""``armctl teach PROGRAM.yaml``: guide the arm by hand and record poses into a program.

On bus servos (a backend that can let its servos go limp and still say where they are): the torque goes
off and the screen shows where the arm is, live. Move it by hand; Enter asks for a name and records the
pose (``armctl.program.recording``: a named joint pose and a step that goes there), ``g`` closes or opens the
gripper (the arm holds still while it moves, then goes limp again), ``u`` takes the last record back,
``q`` quits (every record is already in the file). ``armctl plan PROGRAM.yaml`` and ``armctl run
PROGRAM.yaml`` then play it back. On hobby (PWM) servos, which cannot say where a hand left them, it is
the keyboard pendant recording into the same file (``armctl jog --record PROGRAM.yaml``).
"""

from __future__ import annotations

import math
import sys
import time

from armctl.cli import add_command
from armctl.core import stopsignals
from armctl.errors import ArmctlError, BadInputError

EPILOG = """\
keys: move the arm by hand; Enter record the pose (asks a name)   g close/open the gripper
      u undo the last record   q quit (the records are saved as they are made)
On hobby (PWM) servos it is the keyboard pendant of 'armctl jog' recording into PROGRAM.yaml.
examples:
  armctl --calibration so101.yaml --port /dev/ttyUSB0 teach pick.yaml
  armctl teach pick.yaml          # the simulated arm: the keyboard pendant"""
REFRESH_S = 0.1


DESCRIPTION = "Record poses into a program that 'armctl plan' and 'armctl run' play back."


def register(sub, parents) -> None:
    p = add_command(sub, "teach", parents=parents, epilog=EPILOG, description=DESCRIPTION)
    p.add_argument("program", metavar="PROGRAM.yaml", help="the program to record into (created if missing)")
    p.add_argument("--wire-log", metavar="FILE", help="write every byte sent and received, with times, to FILE")
    p.set_defaults(func=cmd_teach)


class Teach:
    """The teaching screen's state: the records, the name being typed, the last message."""

    def __init__(self, robot, recorder):
        self.robot, self.recorder = robot, recorder
        self.prompt: str | None = None
        self.message = f"torque off: move the arm by hand. Records go to {recorder.path}"
        self.records: list[str] = []
        self.quit: str | None = None
        self.pose = robot.where()

    def key(self, name: str) -> None:
        if self.prompt is not None:
            self._prompt_key(name)
        elif name in ("q", "ctrl-c", "ctrl-d"):
            self.quit = name
        elif name == "enter":
            self.prompt = ""
            self.message = f"name of the pose (Enter: {self.recorder.next_name()}, Esc: cancel)"
        elif name == "g":
            self._gripper()
        elif name == "u":
            try:
                self.message = self.recorder.undo()
                if self.records:
                    self.records.pop()
            except ArmctlError as exc:
                self.message = f"nothing undone: {exc}"

    def _prompt_key(self, name: str) -> None:
        if name in ("esc", "escape"):
            self.prompt, self.message = None, "not recorded"
        elif name == "enter":
            typed, self.prompt = self.prompt.strip() or self.recorder.next_name(), None
            self._record(typed)
        elif name == "backspace":
            self.prompt = self.prompt[:-1]
        elif len(name) == 1 and name.isprintable() and len(self.prompt) < 40:
            self.prompt += name

    def _record(self, name: str) -> None:
        from armctl.program.recording import gripper_state

        pose = self.robot.where()
        try:
            done = self.recorder.record(name, pose.q_rad, gripper=gripper_state(self.robot.arm, pose.gripper_rad))
        except ArmctlError as exc:
            self.message = f"not recorded: {exc}"
            return
        self.records.append(done.name)
        self.message = f"recorded {done.name!r} ({_count(done.poses, 'pose')} in {done.path.name})"

    def _gripper(self) -> None:
        from armctl.program.recording import gripper_state

        arm = self.robot.arm
        if arm.gripper is None:
            self.message = "this arm has no gripper"
            return
        now = gripper_state(arm, self.pose.gripper_rad)
        want = "close" if now == "open" else "open"
        self.message = f"{want} the gripper: the arm holds still meanwhile"
        try:
            self.robot.gripper(want)
        except ArmctlError as exc:
            self.message = f"gripper not moved: {exc}"  # stays on the screen until the next key
        else:
            self.message = f"gripper {'closed' if want == 'close' else 'open'}; torque off again"
        finally:
            self.robot.release()

    def refresh(self) -> None:
        self.pose = self.robot.where()

    def screen(self) -> list[str]:
        p, arm = self.pose, self.robot.arm
        where = " ".join(f"{v:.1f}" for v in p.tool_mm)
        lines = [
            f"armctl teach: arm {arm.name} on {self.robot.port}",
            "",
            f"tool at ({where}) mm, tool angle {math.degrees(p.phi_rad):.1f} deg ({p.source}: {p.detail})",
            "joints " + "  ".join(f"{n} {v:7.2f} deg" for n, v in zip(arm.joint_names, p.q_deg)),
        ]
        if p.gripper_rad is not None:
            lines.append(f"gripper {math.degrees(p.gripper_rad):.1f} deg")
        lines += ["", self.message]
        if self.prompt is not None:
            lines.append(f"pose name: {self.prompt}_")
        lines += [
            "",
            f"recorded: {', '.join(self.records) if self.records else 'nothing yet'}",
            "keys: Enter record the pose   g close/open the gripper   u undo   q quit",
        ]
        return lines


def cmd_teach(args) -> int:
    from armctl.cli.common import open_robot, setup
    from armctl.core.terminal import Terminal
    from armctl.program.recording import Recorder

    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        raise BadInputError("armctl teach is interactive and needs a terminal")
    arm, cal = setup(args)
    recorder = Recorder(args.program, arm)  # a broken program fails before the port opens
    with open_robot(args, arm, cal) as robot:
        if not robot.backend.caps.releases:
            robot.close()
            return _pendant_instead(args)
        robot.release()
        teach = Teach(robot, recorder)
        term = Terminal()
        fired: list[int] = []

        def on_signal(signum, frame):  # SIGHUP (the SSH link dropped) or SIGTERM: leave, the arm stays limp
            fired.append(signum)
            teach.quit = stopsignals.signal_name(signum)

        restore = stopsignals.install(on_signal)
        try:
            last = 0.0
            while teach.quit is None:
                for name, _ in term.keys(REFRESH_S):
                    teach.key(name)
                if time.monotonic() - last >= REFRESH_S:
                    teach.refresh()
                    last = time.monotonic()
                term.draw(teach.screen())
        except KeyboardInterrupt:
            teach.quit = "ctrl-c"
        finally:
            term.restore()
            restore()
    try:
        print(f"armctl teach: {_count(len(teach.records), 'pose')} recorded into {recorder.path} (the servos are limp)")
        if teach.records:
            print(f"check it with 'armctl plan {recorder.path}', play it with 'armctl run {recorder.path}'")
    except OSError:
        pass
    if fired:
        return 128 + fired[0]
    if teach.quit == "ctrl-c" and stopsignals.hung_up():  # a closing Windows console
        return stopsignals.HANGUP_EXIT
    return 0


def _pendant_instead(args) -> int:
    """Hobby servos cannot say where a hand put them: jog with the keys and record the same way."""
    from armctl.cli.pendant import cmd_pendant

    args.record = args.program
    args.json = False
    args.step = args.speed = args.release_ms = None
    return cmd_pendant(args)


def _count(n: int, word: str) -> str:
    """'1 pose', '2 poses'."""
    return f"{n} {word}{'' if n == 1 else 's'}"
