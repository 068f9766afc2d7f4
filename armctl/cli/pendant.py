"""``armctl jog`` without a target: a full-screen keyboard pendant in the terminal (raw terminal I/O, no X
server: it works over SSH).

Keys: arrows move the tool in x/y (PgUp/PgDn in z on an arm with a rotating base), ``[``/``]`` the step
(0.1, 1, 10, 50 mm; the tool angle turns by the same number of degrees, at most 15), ``<``/``>`` the speed,
``,``/``.`` turn the tool angle (3 links), ``;``/``'`` the wrist roll (an arm with one, by the tool angle's step),
``o``/``c`` the gripper, ``h`` home, Space stops at once, Enter
records the pose (``--record FILE.yaml``), ``u`` takes the last record back, ``q`` quits holding the pose.

**A held key.** Terminals send no key-up event (nor does SSH): a held key repeats, and the repeats are the
"still held" signal. Every press plans one step, a short straight line from the pendant's target to the
target plus the step, checked whole by the Robot (reach, joint, speed and pulse limits) before anything
moves; a refused step shows why and moves nothing. An event of the same key within ``REPEAT_GAP_S`` of the
previous one is an auto-repeat: the key is *held*, and the pendant jogs continuously, as GRBL's ``$J=``
jogging does: one straight line at the speed shown towards a look-ahead point (``LOOK_AHEAD_S`` of travel
ahead, or as far along that line as the arm reaches: the farthest of halving distances the planner accepts),
checked whole like a step; the step size is no speed cap. At most one motion waits behind the one playing
(repeats arriving meanwhile are dropped), so nothing piles up in the Robot's queue; when no repeat has come
for the release time (twice the repeat interval seen, 50..250 ms, or ``--release-ms``) the key counts as
released and the jog is cancelled: the Robot stops at once (its controlled stop: the board drops what it
has queued and holds the pulses it outputs). Single presses are never cut short: each plays its whole step
(up to ``MAX_WAITING`` wait behind the one playing). The tool-angle keys step on while held (no look-ahead).

The pendant keeps its target (x, y, tool angle) exact and plans every step from it, so steps add up
without the 0.5 us pulse rounding creeping in; after a stop (release, Space, home) the target is read
back from the pulses the board holds (``Robot.commanded_pose``).
"""

from __future__ import annotations

import math
import sys
import time
from collections import deque
from dataclasses import dataclass

import numpy as np

from armctl.cli.pendant_screen import KEY_NAMES, Screen, screen_size, xyz_text
from armctl.core import stopsignals
from armctl.core.terminal import REPEAT_GAP_S, Terminal, release_time  # noqa: F401 (release_time: bench, tests)
from armctl.errors import ArmctlError, BadInputError, LinkError, MotionError, StopRequested

STEPS_MM = (0.1, 1.0, 10.0, 50.0)
SPEEDS_MM_S = (2.0, 5.0, 10.0, 25.0, 50.0, 100.0, 200.0)
DEFAULT_STEP_MM = 1.0
DEFAULT_SPEED_MM_S = 25.0
MAX_TURN_DEG = 15.0  # the tool angle turns by the step's number of millimetres in degrees, at most this
MAX_WAITING = 4  # single presses that may wait behind the step playing
IDLE_REFRESH_S = 0.2  # the screen (and the board's watchdog) while nothing moves
MOVING_REFRESH_S = 0.05
LOOK_AHEAD_S = 10.0  # a held key's jog heads this many seconds of travel ahead (cancelled on release)

# Cartesian directions of the motion keys: (x, y, z). z (a rotating base) is refused on planar arms.
AXES = {
    "right": (1.0, 0.0, 0.0),
    "left": (-1.0, 0.0, 0.0),
    "up": (0.0, 1.0, 0.0),
    "down": (0.0, -1.0, 0.0),
    "pgup": (0.0, 0.0, 1.0),
    "pgdn": (0.0, 0.0, -1.0),
}
TURNS = {".": 1.0, ",": -1.0}  # tool angle: '.' counter-clockwise (+), ',' clockwise (-)
ROLLS = {"'": 1.0, ";": -1.0}  # the wrist roll about the tool axis: "'" + (right-handed), ';' -


# --- the terminal ------------------------------------------------------------------------------------------
# The pendant's keys and screen: armctl.core.terminal (raw keys with their arrival times, full-screen redraws on
# the alternate screen; POSIX and Windows).

# --- the pendant ---------------------------------------------------------------------------------------------


@dataclass
class Message:
    """The line under the arm's state: ``kind`` is "info", "refused" or "error"."""

    text: str
    kind: str = "info"


class Pendant(Screen):
    """The pendant's state and keys, on an open ``robot`` (an ``armctl.robot.robot.Robot``); ``recorder`` (an
    ``armctl.program.recording.Recorder``) or None. Call ``key(name, t)`` for every key, ``tick(t)`` often, and
    ``screen()`` for the lines to draw. Times are ``time.monotonic()`` seconds."""

    def __init__(
        self,
        robot,
        *,
        recorder=None,
        step_mm: float = DEFAULT_STEP_MM,
        speed_mm_s: float = DEFAULT_SPEED_MM_S,
        release_s: float | None = None,
    ):
        self.robot, self.arm, self.recorder = robot, robot.arm, recorder
        self.step_mm, self.speed_mm_s, self.release_override_s = step_mm, speed_mm_s, release_s
        self.axes = self.arm.dim  # Cartesian axes the arm moves in (a rotating base adds z)
        # (x, y) m, tool angle, wrist roll (None: no roll); None: read back from the board
        self.target: tuple[np.ndarray, float | None, float | None] | None = None
        self.motions: list = []  # our motions not yet over
        self.held: str | None = None
        self.look_ahead = None  # the motion a held key jogs along (cancelled on release)
        self.last_key: str | None = None
        self.last_t = -math.inf
        self.gaps: deque[float] = deque(maxlen=4)
        self.message = Message("ready: arrows move the tool; the screen shows where it is")
        self.prompt: str | None = None  # the pose name being typed
        self.pending_record: str | None = None
        self.recorded: list[str] = []
        self.since_record: list[str] = []  # what was done since the last record, in order: "move", "gripper"
        self.note = ""  # said before the next motion's line (a pose recorded on the pendant's own accord)
        self.pose = None  # the last Pose read for the screen
        self.quit: str | None = None  # why the pendant ends ("q", "ctrl-c", ...)
        self.stops: list[tuple[float, str]] = []  # (time, reason) of every stop the pendant asked for
        self.failure: BaseException | None = None  # a motion ended on a link error: the pendant ends

    # --- motion ----------------------------------------------------------------------------------------

    def _pending(self) -> list:
        """Our motions not over yet; those that ended are dropped, their errors kept (see ``_ended``)."""
        still = []
        for m in self.motions:
            if m.done:
                self._ended(m)
            else:
                still.append(m)
        self.motions = still
        return still

    def _ended(self, m) -> None:
        """A motion of ours is over: a motion error is shown (the target is read back); a link error (or
        any other failure) ends the pendant at the next ``tick``; a stop is what we asked for."""
        err = m.error
        if err is None or isinstance(err, StopRequested):
            return
        if isinstance(err, MotionError):
            self.message = Message(f"{m.label}: {err}", "error")
            self.target = None
        elif self.failure is None:
            self.failure = err

    def _waiting(self) -> list:
        return [m for m in self._pending() if not m.started.is_set()]

    def _target(self) -> tuple[np.ndarray, float | None, float | None]:
        if self.target is None:
            pose = self.robot.commanded_pose()
            phi = float(pose.phi_rad) if self.arm.n_links == 3 else None
            self.target = (np.array(pose.tool_m, dtype=float), phi, getattr(pose, "roll_rad", None))
        return self.target

    def stop(self, reason: str, t: float) -> None:
        """The Robot's controlled stop, now; the target is read back from the board afterwards."""
        self.robot.stop(reason)
        self.stops.append((t, reason))
        self.held = None
        self.look_ahead = None
        self.target = None

    def turn_step_deg(self) -> float:
        """How far one press turns the tool angle (deg): the step's millimetres, at most 15."""
        return min(MAX_TURN_DEG, self.step_mm)

    def _jog(self, key: str, t: float) -> None:
        gap = t - self.last_t if key == self.last_key else math.inf
        if self.held is not None and key != self.held:
            self._release(t)  # another key: the terminal stopped repeating the held one
        self.last_key, self.last_t = key, t
        repeat = gap <= REPEAT_GAP_S
        if repeat:
            self.held = key
            self.gaps.append(gap)
        else:
            self.gaps.clear()  # a new press: this hold's repeat rate is measured afresh
        waiting = self._waiting()
        if repeat and waiting:
            return  # still held, and one step already waits: nothing piles up
        if repeat and key in AXES:
            if self.look_ahead is not None and not self.look_ahead.done:
                return  # still held: the jog heading its way goes on
            if self._look_ahead(key):
                return
        if not repeat and len(waiting) >= MAX_WAITING:
            self.message = Message(f"{len(waiting)} steps already wait: press ignored (Space stops)", "refused")
            return
        step_m = self.step_mm / 1000.0
        if key in AXES:
            d = np.array(AXES[key][: self.axes]) * step_m
            if not np.any(d):
                self.message = Message(
                    f"refused: {KEY_NAMES[key]} moves z, and arm '{self.arm.name}' has no z axis (no rotating base)",
                    "refused",
                )
                return
            dphi = droll = 0.0
            what = f"{KEY_NAMES[key]} {self.step_mm:g} mm"
        elif key in ROLLS:
            if self.arm.roll is None:
                self.message = Message(f"refused: arm '{self.arm.name}' has no wrist roll to turn", "refused")
                return
            d, dphi = np.zeros(self.axes), 0.0
            droll = math.radians(ROLLS[key] * self.turn_step_deg())
            what = f"roll {ROLLS[key] * self.turn_step_deg():+g} deg"
        else:
            if self.arm.n_links != 3:
                self.message = Message(
                    f"refused: arm '{self.arm.name}' has {self.arm.n_links} links: no tool angle to turn", "refused"
                )
                return
            d, droll = np.zeros(self.axes), 0.0
            dphi = math.radians(TURNS[key] * self.turn_step_deg())
            what = f"tool angle {TURNS[key] * self.turn_step_deg():+g} deg"
        xy, phi, roll = self._target()
        new_xy = xy + d
        new_phi = None if phi is None else math.remainder(phi + dphi, 2.0 * math.pi)  # (turned round and round)
        new_roll = None if roll is None else roll + droll
        label = f"jog {what}"
        self._before_arm_move()
        try:
            m = self.robot.move_to(
                *(float(v) for v in new_xy),  # x, y (and z on an arm with a rotating base)
                phi=new_phi,
                speed=self.speed_mm_s / 1000.0,
                label=label,
                wait=False,
                **({} if new_roll is None else {"roll": new_roll}),
            )
        except LinkError:
            raise
        except ArmctlError as exc:
            why = str(exc).removeprefix(f"{label}: ")
            self.message = Message(f"refused ({what}), nothing moved: {why}", "refused")
            return
        self.motions.append(m)
        self.since_record.append("move")
        self.target = (new_xy, new_phi, new_roll)
        if not repeat:
            self.message = Message(self._noted(f"jog {what} ({m.trajectory.duration_s:.2f} s)"))

    def _look_ahead(self, key: str) -> bool:
        """A held motion key: one line at the speed shown towards the farthest of LOOK_AHEAD_S of travel ahead,
        half that, a quarter, ... the planner accepts (never shorter than a step). False if none is."""
        direction = np.array(AXES[key][: self.axes])
        if not np.any(direction):
            return False
        xy, phi, roll = self._target()
        speed = self.speed_mm_s / 1000.0
        arm = self.arm
        dist = min(speed * LOOK_AHEAD_S, 2.0 * (arm.extent_m))
        label = f"jog {KEY_NAMES[key]} held"
        self._before_arm_move()
        while dist > self.step_mm / 1000.0:
            end = xy + direction * dist
            try:
                kw = {} if roll is None else {"roll": roll}
                m = self.robot.move_to(*(float(v) for v in end), phi=phi, speed=speed, label=label, wait=False, **kw)
            except LinkError:
                raise
            except ArmctlError:
                dist /= 2.0
                continue
            self.motions.append(m)
            self.since_record.append("move")
            self.look_ahead = m
            self.target = (end, phi, roll)
            self.message = Message(
                self._noted(
                    f"jog {KEY_NAMES[key]} at {self.speed_mm_s:g} mm/s while held (look-ahead {dist * 1000:.0f} mm; "
                    "let go to stop)"
                )
            )
            return True
        return False

    def _release(self, t: float) -> None:
        """The held key was let go: stop now if a step still plays or waits."""
        key, self.held = self.held, None
        if self._pending():
            self.stop("key released", t)
            self.message = Message(
                f"{KEY_NAMES.get(key, key)} released: stopped {(t - self.last_t) * 1000:.0f} ms after its last repeat"
            )

    # --- keys ------------------------------------------------------------------------------------------

    def key(self, name: str, t: float) -> None:
        """Handle one key read at time ``t``."""
        if name in ("ctrl-c", "ctrl-d"):
            self.stop("quit", t)
            self.quit = name
            return
        if self.prompt is not None:
            self._prompt_key(name)
            return
        if name in AXES or name in TURNS or name in ROLLS:
            self._jog(name, t)
            return
        if self.held is not None:
            self._release(t)
        if name == " ":
            self.stop("Space", t)
            self.message = Message("stopped (Space): the arm holds its pose")
        elif name in ("q", "Q"):
            self.stop("quit", t)
            self.quit = "q"
        elif name in ("[", "]"):
            self.step_mm = _next(STEPS_MM, self.step_mm, -1 if name == "[" else 1)
            self.message = Message(f"step {self.step_mm:g} mm")
        elif name in ("<", ">"):
            self.speed_mm_s = _next(SPEEDS_MM_S, self.speed_mm_s, -1 if name == "<" else 1)
            self.message = Message(f"speed {self.speed_mm_s:g} mm/s")
        elif name in ("o", "c"):
            self._submit(lambda: self.robot.gripper("open" if name == "o" else "close", wait=False), "gripper")
        elif name == "h":
            self._before_arm_move()
            if self._submit(lambda: self.robot.home(wait=False), "move"):
                self.target = None  # read back: the end of the home move
        elif name == "enter":
            if self.recorder is None:
                self.message = Message("not recording: start with 'armctl jog --record FILE.yaml' to record poses")
            else:
                self.prompt = ""
                self.message = Message(f"name of the pose (Enter: {self.recorder.next_name()}, Esc: cancel)", "prompt")
        elif name == "u":
            self._undo()
        elif name in ("escape", "backspace"):
            pass
        else:
            self.message = Message(f"key {name!r} does nothing here (the keys are listed below)", "refused")

    def _submit(self, start, kind: str) -> bool:
        """Start a motion (``kind``: ``"move"`` of the arm, or ``"gripper"``); False if it was refused."""
        try:
            m = start()
        except LinkError:
            raise
        except ArmctlError as exc:
            self.message = Message(f"refused, nothing moved: {exc}", "refused")
            return False
        self.motions.append(m)
        self.since_record.append(kind)
        self.message = Message(self._noted(f"{m.label} ({m.trajectory.duration_s:.2f} s)"))
        return True

    def _noted(self, text: str) -> str:
        """``text`` after the note kept for the next motion's line, if any (then dropped)."""
        note, self.note = self.note, ""
        return f"{note}; {text}" if note else text

    def _gripper_after_move(self) -> bool:
        """True if, since the last record, the gripper acted after the arm had moved: where it acted is the pose
        the arm is commanded to now, and its step follows the move there."""
        ev = self.since_record
        return "gripper" in ev and "move" in ev[: len(ev) - 1 - ev[::-1].index("gripper")]

    def _before_arm_move(self) -> None:
        """Recording, the arm about to leave the pose where the gripper acted after a move: that pose is recorded
        first (a name of its own), so the program opens or closes the gripper where the user did."""
        if self.recorder is not None and self.pending_record is None and self._gripper_after_move():
            self._record(self.recorder.next_name(), auto=True)

    def _prompt_key(self, name: str) -> None:
        if name == "escape":
            self.prompt = None
            self.message = Message("not recorded")
        elif name == "enter":
            typed = self.prompt.strip() or self.recorder.next_name()
            self.prompt = None
            self.pending_record = typed
            if self._pending():
                self.message = Message(f"recording {typed!r} once the arm stops")
        elif name == "backspace":
            self.prompt = self.prompt[:-1]
        elif len(name) == 1 and name.isprintable() and len(self.prompt) < 40:
            self.prompt += name

    def _record(self, name: str, *, auto: bool = False) -> None:
        """Record the commanded pose as ``name``, with the gripper step (if any) in the order it was done;
        ``auto``: recorded by the pendant where the gripper acted, before the arm moves on."""
        from armctl.program.recording import gripper_state

        pose = self.robot.commanded_pose()
        try:
            rec = self.recorder.record(
                name,
                pose.q_rad,
                gripper=gripper_state(self.arm, pose.gripper_rad),
                gripper_after=self._gripper_after_move(),
            )
        except ArmctlError as exc:
            self.message = Message(f"not recorded: {exc}", "refused")
            if auto:
                self.note = f"the pose where the gripper acted was not recorded: {exc}"
            return
        self.since_record = []
        self.recorded.append(rec.name)
        where = ", ".join(f"{v:.1f}" for v in pose.tool_mm)
        if len(rec.steps) == 1:
            extra = ""
        else:  # the gripper step before the move, or after it
            extra = f" after {rec.steps[0]}" if rec.steps[0].startswith("{gripper") else f" then {rec.steps[1]}"
        if auto:
            self.note = f"recorded {rec.name!r}{extra} where the gripper acted, before the arm moves on"
        note = "" if rec.kept_layout else " (written anew: its comments could not be kept)"
        count = f"{rec.poses} pose" + ("s" if rec.poses != 1 else "")
        self.message = Message(f"recorded {rec.name!r} at ({where}) mm{extra} in {rec.path}: {count}{note}")

    def _undo(self) -> None:
        if self.recorder is None:
            self.message = Message("not recording: nothing to undo", "refused")
            return
        try:
            name = self.recorder.undo()
        except ArmctlError as exc:
            self.message = Message(str(exc), "refused")
            return
        if name in self.recorded:
            self.recorded.remove(name)
        self.message = Message(f"took back {name!r} from {self.recorder.path}")

    # --- time ------------------------------------------------------------------------------------------

    def release_s(self) -> float:
        """How long after the held key's last repeat the pendant stops (s)."""
        return release_time(self.gaps, self.release_override_s)

    def tick(self, t: float) -> None:
        """Release a held key whose repeats stopped; record once the arm stopped; show motion errors, and
        raise the link error a motion ended on."""
        if self.held is not None and t - self.last_t > self.release_s():
            self._release(t)
        self._pending()
        if self.failure is not None:
            raise self.failure
        if self.pending_record is not None and not self._pending():
            name, self.pending_record = self.pending_record, None
            self._record(name)

    def busy(self) -> bool:
        """True while a key is held or a motion of ours plays or waits."""
        return self.held is not None or bool(self._pending())

    # --- the screen ------------------------------------------------------------------------------------

    def refresh(self) -> None:
        """Read the pose for the screen (which also keeps the board's watchdog fed), and the target if it
        is to be read back (after a stop)."""
        self.pose = self.robot.where()
        if self.target is None and not self._pending():
            self._target()


def _next(values: tuple[float, ...], now: float, way: int) -> float:
    """The next value of ``values`` above (``way`` 1) or below (-1) ``now``; ``now`` at the ends."""
    if way > 0:
        return next((v for v in values if v > now + 1e-9), now)
    return next((v for v in reversed(values) if v < now - 1e-9), now)


# --- running it ------------------------------------------------------------------------------------------------


def run(pendant: Pendant, term: Terminal) -> str:
    """The pendant's loop until a quit key, or SIGHUP/SIGTERM (the SSH link dropped, a kill: the arm stops
    at once, from the handler, and the loop ends); returns why it ended."""

    def on_signal(signum, frame):
        name = stopsignals.signal_name(signum)
        pendant.robot.stop(name)  # safe from a signal handler; the loop notices quit within a tick
        pendant.quit = name

    restore = stopsignals.install(on_signal)
    last_draw = -math.inf
    try:
        pendant.refresh()
        while pendant.quit is None:
            busy = pendant.busy()
            timeout = 0.005 if pendant.held is not None else (0.02 if busy else IDLE_REFRESH_S)
            keys = term.keys(timeout)
            for name, t in keys:
                pendant.key(name, t)
                if pendant.quit is not None:
                    break
            now = time.monotonic()
            pendant.tick(now)
            if keys or now - last_draw >= (MOVING_REFRESH_S if pendant.busy() else IDLE_REFRESH_S):
                pendant.refresh()
                width, height = screen_size()
                term.draw([line[:width] for line in pendant.screen(width, height)])
                last_draw = now
    except KeyboardInterrupt:
        pendant.stop("interrupted", time.monotonic())
        pendant.quit = "ctrl-c"
    finally:
        restore()
    return pendant.quit


def parse_step_mm(text: str | None) -> float:
    """``--step MM`` (default 1): a length in mm, > 0 and at most 100."""
    from armctl.core.units import parse_float

    if text is None:
        return DEFAULT_STEP_MM
    v = parse_float(text, what="--step")
    if not 0 < v <= 100:
        raise BadInputError(f"--step: {text} mm is outside (0, 100] mm")
    return v


def cmd_pendant(args) -> int:
    """``armctl jog`` with no target."""
    from armctl.cli import EXIT_INTERRUPTED
    from armctl.cli.common import open_robot, setup
    from armctl.core.units import parse_float
    from armctl.program.recording import Recorder

    if args.json:
        raise BadInputError("--json needs a target (armctl jog X Y); the pendant is interactive")
    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        raise BadInputError(
            "armctl jog without a target is the keyboard pendant and needs a terminal; in scripts give a "
            "target: armctl jog X Y"
        )
    step = parse_step_mm(args.step)
    speed = DEFAULT_SPEED_MM_S if args.speed is None else parse_float(args.speed, what="--speed")
    if not 0 < speed <= 1000:
        raise BadInputError(f"--speed: {args.speed} mm/s is outside (0, 1000] mm/s")
    release = None
    if args.release_ms is not None:
        release = parse_float(args.release_ms, what="--release-ms") / 1000.0
        if not 0.01 <= release <= 1.0:
            raise BadInputError(f"--release-ms: {args.release_ms} is outside 10..1000 ms")
    arm, cal = setup(args)
    recorder = Recorder(args.record, arm) if args.record else None  # a broken program fails before the port opens
    with open_robot(args, arm, cal) as robot:
        pendant = Pendant(robot, recorder=recorder, step_mm=step, speed_mm_s=speed, release_s=release)
        term = Terminal()
        try:
            why = run(pendant, term)
        finally:
            term.restore()
        pose = robot.commanded_pose()
    try:
        print(f"armctl jog: left the arm at {xyz_text(pose.tool_mm, width=0)} ({why}); it holds its pose")
        if recorder is not None and pendant.recorded:
            n = len(pendant.recorded)
            print(
                f"recorded {n} pose{'' if n == 1 else 's'} into {recorder.path}: check it with "
                f"'armctl plan {recorder.path}', play it with 'armctl run {recorder.path}'"
            )
    except OSError:  # the terminal went away with the SSH link
        pass
    if why == "q":
        return 0
    if why.startswith("SIG"):  # SIGTERM 143, SIGHUP 129, SIGBREAK 149: as every moving command (docs)
        import signal

        return 128 + int(signal.Signals[why])
    if why == "ctrl-c" and stopsignals.hung_up():  # a closing Windows console
        return stopsignals.HANGUP_EXIT
    return EXIT_INTERRUPTED
