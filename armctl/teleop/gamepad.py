"""A gamepad as a leader: SDL's GameController (the standard mapping of any pad SDL knows: Xbox, PlayStation,
Switch Pro, 8BitDo, ...) read through pysdl2 and its bundled SDL2 (``pip install 'armctl[gamepad]'``), headless
(the joystick subsystem only, no window).

``GamepadLeader`` is a leader for ``Robot.follow`` (``map="joints"``, ``on_frame=leader.commanded``): each read
gives the pose the pad asks for, integrated from the pose the follower was last *commanded* (not from the last
target), so a target never runs ahead of the arm: the sticks give a speed proportional to their deflection (past a
dead zone), and a stick back in its dead zone asks for the commanded pose itself, which stops the arm at once. The
follow then checks every step as it checks a leader arm's: joint and linkage limits, the reach (Cartesian mode:
``armctl.teleop.tooltarget.tool_goal``, the nearest point the arm reaches), the joint speed limits, the keep-out
zones and the servos' torque (``armctl.robot.followplay``). Speeding up is held to the arm's acceleration limits.

``VirtualGamepad`` attaches SDL's virtual joystick (a real SDL device, seen by every SDL call of this process) and
``ScriptPlayer`` plays a small timed script on it: the tests' and the benchmark's gamepad.
"""

from __future__ import annotations

import ctypes
import math
import os
import time
import warnings
from dataclasses import dataclass, field

import numpy as np

from armctl.errors import BadInputError, LinkError, MotionError
from armctl.model.arm import Arm
from armctl.model.kinematics import tool_pitch, tool_point
from armctl.teleop.leader import LeaderReading
from armctl.teleop.tooltarget import ToolTarget, tool_goal

INSTALL = "pip install 'armctl[gamepad]'"
DEAD_ZONE = 0.15  # a stick deflected less than this (fraction of full) is released
AXES = ("leftx", "lefty", "rightx", "righty", "lefttrigger", "righttrigger")
# SDL_GameControllerButton's order
BUTTONS = tuple(
    "a b x y back guide start leftstick rightstick leftshoulder rightshoulder dpup dpdown dpleft dpright".split()
)
MODES = ("tool", "joints")
CART_ACCEL_M_S2 = 0.5  # Cartesian mode speeds up at most this fast (Robot.move_to's default acceleration)
TURN_DEG_S = 30.0  # full deflection turns the tool's pitch / roll this fast (deg/s), scaled with the speed asked
JOINT_FRACTION = 0.5  # joint mode: full deflection moves a joint at this fraction of its speed limit
MAX_DT_S = 0.05  # the longest time one read integrates (a stalled loop does not leap)
LEAD_S = 0.06  # the aim runs at most this much travel ahead of the commanded pose (a few of the board's frames)
LEAD_MIN = 0.003  # ... and at least this (m, rad): more than rounding to the servos' grid ever leaves it behind

_sdl = None


def sdl():
    """pysdl2, its SDL initialised for game controllers (headless); BadInputError naming the extra if missing."""
    global _sdl
    if _sdl is not None:
        return _sdl
    os.environ.setdefault("SDL_VIDEODRIVER", "dummy")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # pysdl2 says which SDL2 binaries it found
            import sdl2
    except ImportError:
        raise BadInputError(f"the gamepad needs SDL2 through pysdl2: {INSTALL}") from None
    sdl2.SDL_SetHint(sdl2.SDL_HINT_JOYSTICK_ALLOW_BACKGROUND_EVENTS, b"1")  # no window: never "in the background"
    if sdl2.SDL_Init(sdl2.SDL_INIT_GAMECONTROLLER | sdl2.SDL_INIT_EVENTS) != 0:
        raise LinkError(f"SDL could not start its game controller support: {sdl2.SDL_GetError().decode()}")
    _sdl = sdl2
    return sdl2


def devices() -> list[tuple[int, str, bool]]:
    """(SDL device index, name, has a GameController mapping) of every joystick SDL sees now."""
    s = sdl()
    s.SDL_PumpEvents()
    out = []
    for i in range(s.SDL_NumJoysticks()):
        name = (s.SDL_JoystickNameForIndex(i) or b"?").decode("utf-8", "replace")
        out.append((i, name, bool(s.SDL_IsGameController(i))))
    return out


def deflection(raw: int) -> float:
    """An SDL axis value (-32768..32767) as -1..1."""
    return max(-1.0, min(1.0, raw / 32767.0))


def dead(v: float) -> float:
    """``v`` (-1..1), 0 inside the dead zone."""
    return 0.0 if abs(v) < DEAD_ZONE else v


@dataclass
class PadState:
    """The pad as last polled: ``axes`` by name (sticks -1..1, y positive *up*; triggers 0..1), ``held`` buttons,
    the button ``presses`` since the previous poll in order, and whether the pad is gone (``removed``)."""

    axes: dict = field(default_factory=lambda: dict.fromkeys(AXES, 0.0))
    held: frozenset = frozenset()
    presses: list = field(default_factory=list)
    removed: bool = False
    t_s: float = 0.0


class Gamepad:
    """An open SDL game controller (``open_gamepad``): ``index``, ``name``; ``poll()`` reads its events and returns
    its ``PadState`` (also ``state``); ``close()``. Poll from one thread (the one that opened it)."""

    def __init__(self, index: int):
        s = sdl()
        self.index = index
        self._gc = s.SDL_GameControllerOpen(index)
        if not self._gc:
            raise LinkError(f"gamepad {index}: SDL could not open it: {s.SDL_GetError().decode()}")
        self.name = (s.SDL_GameControllerName(self._gc) or b"?").decode("utf-8", "replace")
        self.instance = s.SDL_JoystickInstanceID(s.SDL_GameControllerGetJoystick(self._gc))
        self.state = PadState()
        self.poll()
        self.state.presses = []

    def poll(self) -> PadState:
        """Read what happened since the last poll (device removal, button presses) and the axes and buttons now."""
        s, gc = sdl(), self._gc
        removed, presses = self.state.removed, []
        ev = s.SDL_Event()
        while s.SDL_PollEvent(ctypes.byref(ev)):
            kind = ev.type
            if kind in (s.SDL_CONTROLLERDEVICEREMOVED, s.SDL_JOYDEVICEREMOVED) and ev.cdevice.which == self.instance:
                removed = True
            elif kind == s.SDL_CONTROLLERBUTTONDOWN and ev.cbutton.which == self.instance:
                if ev.cbutton.button < len(BUTTONS):
                    presses.append(BUTTONS[ev.cbutton.button])
        if removed or not s.SDL_GameControllerGetAttached(gc):
            self.state = PadState(removed=True, t_s=time.monotonic())
            return self.state
        axes = {n: deflection(s.SDL_GameControllerGetAxis(gc, i)) for i, n in enumerate(AXES)}
        axes["lefty"], axes["righty"] = -axes["lefty"], -axes["righty"]  # SDL's y grows downwards
        held = frozenset(n for i, n in enumerate(BUTTONS) if s.SDL_GameControllerGetButton(gc, i))
        self.state = PadState(axes, held, presses, False, time.monotonic())
        return self.state

    def close(self) -> None:
        gc, self._gc = self._gc, None
        if gc:
            sdl().SDL_GameControllerClose(gc)


def open_gamepad(device: str | int | None = None) -> Gamepad:
    """The game controller ``device`` names: an SDL device index (``0``), a part of its name (``xbox``, any case),
    or None: the first one. LinkError if SDL sees none; BadInputError if ``device`` names none of those it sees."""
    seen = devices()
    pads = [(i, n) for i, n, ok in seen if ok]
    listing = "; ".join(f"{i}: {n}" + ("" if ok else " (no GameController mapping)") for i, n, ok in seen)
    if not seen:
        raise LinkError("no gamepad: SDL sees no joystick or game controller (is it plugged in, or paired?)")
    text = None if device is None else str(device).strip()
    if text is None:
        if not pads:
            raise LinkError(
                f"no gamepad SDL knows the buttons of (it sees {listing}): give it SDL_GAMECONTROLLERCONFIG"
            )
        return Gamepad(pads[0][0])
    if text.isdigit():
        i = int(text)
        if i >= len(seen):
            raise BadInputError(f"--device {text}: SDL sees {len(seen)} device(s): {listing}")
        if not seen[i][2]:
            raise BadInputError(
                f"--device {text}: {seen[i][1]!r} has no GameController mapping (SDL_GAMECONTROLLERCONFIG)"
            )
        return Gamepad(i)
    match = [i for i, n in pads if text.lower() in n.lower()]
    if not match:
        raise BadInputError(f"--device {text!r}: no gamepad by that name; SDL sees {listing}")
    return Gamepad(match[0])


def _ramp(v_now: np.ndarray, v_want: np.ndarray, dv: np.ndarray) -> np.ndarray:
    """The velocity to take: ``v_want`` at once when it is no faster than ``v_now`` (slowing, stopping), else at
    most ``dv`` (per component) faster than ``v_now``."""
    if np.linalg.norm(v_want) <= np.linalg.norm(v_now) + 1e-12:
        return v_want.copy()
    return v_now + np.clip(v_want - v_now, -dv, dv)


class GamepadLeader:
    """A gamepad (``pad``, polled by its owner) as a leader of ``arm`` for ``Robot.follow(leader, map="joints",
    on_frame=leader.commanded)``. ``mode``: ``"tool"`` (Cartesian: the left stick moves the tool in x/y, the right
    stick's y in z on an arm on a rotating base, its x the tool's pitch (3 links); the triggers turn the wrist roll)
    or ``"joints"`` (left stick x/y: joints 1/2, right stick y/x: joints 3/4, the triggers the 5th); full deflection
    is ``speed_mm_s`` of the tool, or half each joint's speed limit. The shoulders, held, close (left) and open
    (right) the gripper at its speed limit. ``start(q_rad, gripper_rad)`` before the follow.

    While a stick is deflected the leader moves an exact aim (tool point, pitch, roll; or the joints) at the speed
    asked, kept within ``LEAD_S`` of travel of the commanded pose (so pulse rounding never creeps in, and an arm
    held back by a limit is never run away from); let go, it asks for the commanded pose itself."""

    def __init__(self, pad, arm: Arm, *, speed_mm_s: float = 50.0, mode: str = "tool"):
        if mode not in MODES:
            raise BadInputError(f"gamepad mode: 'tool' or 'joints', got {mode!r}")
        self.pad, self.arm, self.mode = pad, arm, mode
        self.speed_m_s = speed_mm_s / 1000.0
        self.port = f"gamepad {pad.index} ({pad.name})"
        self.q: np.ndarray = np.array(arm.home_rad, dtype=float)
        self.g = math.nan
        self.v = np.zeros(0)
        self.aim: np.ndarray | None = None  # the exact aim while a stick is deflected (None: released)
        self.t_last: float | None = None
        self.clamped = ""

    def start(self, q_rad, gripper_rad: float = math.nan) -> None:
        """The follower stands at ``q_rad`` (its gripper at ``gripper_rad``): the pad moves it from there."""
        self.q, self.g = np.array(q_rad, dtype=float), float(gripper_rad)
        self.v, self.aim, self.t_last = np.zeros(0), None, None

    def set_mode(self, mode: str) -> None:
        if mode not in MODES:
            raise BadInputError(f"gamepad mode: 'tool' or 'joints', got {mode!r}")
        self.mode, self.v, self.aim = mode, np.zeros(0), None

    def commanded(self, t_s, q_rad, gripper_rad, target=None, measured=None) -> None:
        """What the follow commanded (its ``on_frame``): the next read moves on from here."""
        self.q, self.g = np.array(q_rad, dtype=float), float(gripper_rad)

    def read(self) -> LeaderReading:
        """The pose the pad asks for now; LinkError once it is unplugged."""
        st = self.pad.state
        if st.removed:
            raise LinkError(getattr(self.pad, "gone", None) or f"the gamepad {self.pad.name!r} was unplugged")
        now = time.monotonic()
        dt = 0.0 if self.t_last is None else min(max(now - self.t_last, 0.0), MAX_DT_S)
        self.t_last = now
        q = self.q.copy()
        want, a_max = self._tool_speed(st.axes) if self.mode == "tool" else self._joint_speed(st.axes)
        if self.v.shape != want.shape:
            self.v = np.zeros_like(want)
        self.v = _ramp(self.v, want, np.asarray(a_max, dtype=float) * dt)
        if not np.any(self.v):  # let go: the commanded pose itself, the arm stops at once
            self.aim, self.clamped = None, ""
            q_new = q
        else:
            now_at = self._where(q)
            aim = now_at.copy() if self.aim is None else self.aim
            # the moving coordinates at most a lead ahead; the others kept exact (the arm comes back to them)
            lead = np.where(self.v != 0, np.maximum(np.abs(self.v) * LEAD_S, LEAD_MIN), np.inf)
            self.aim = np.clip(aim + self.v * dt, now_at - lead, now_at + lead)
            q_new = self._solve(self.aim, q, now_at)
        return LeaderReading(now, q_new, self._gripper(st.held, dt), {}, frozenset())

    def _tool_speed(self, axes: dict) -> tuple[np.ndarray, np.ndarray]:
        """Cartesian mode: the speed the sticks ask for (m/s for the tool point; rad/s for the pitch, the roll)
        and how fast it may grow."""
        arm = self.arm
        lin = np.array([dead(axes["leftx"]), dead(axes["lefty"]), dead(axes["righty"])])[: arm.dim]
        turn = math.radians(TURN_DEG_S * self.speed_m_s / 0.05)  # rad/s at full deflection, with the speed asked
        pitch_v = turn * dead(axes["rightx"]) if arm.n_links == 3 else 0.0
        roll_v = turn * dead(axes["righttrigger"] - axes["lefttrigger"]) if arm.roll is not None else 0.0
        want = np.concatenate([lin * self.speed_m_s, [pitch_v, roll_v]])
        return want, np.concatenate([np.full(arm.dim, CART_ACCEL_M_S2), np.full(2, 4.0 * turn)])

    def _joint_speed(self, axes: dict) -> tuple[np.ndarray, np.ndarray]:
        """Joint mode: each joint's speed the sticks ask for (rad/s) and how fast it may grow."""
        arm = self.arm
        trig = axes["righttrigger"] - axes["lefttrigger"]
        sticks = [axes["leftx"], axes["lefty"], axes["righty"], axes["rightx"], trig]
        d = np.array([dead(v) for v in sticks] + [0.0] * max(0, arm.n - 5))[: arm.n]
        return d * np.asarray(arm.max_speed_rad_s, dtype=float) * JOINT_FRACTION, arm.max_accel_rad_s2

    def _where(self, q: np.ndarray) -> np.ndarray:
        """Pose ``q`` in the mode's coordinates: (tool point, pitch, roll) or the joints."""
        arm = self.arm
        if self.mode == "joints":
            return q.copy()
        phi = float(tool_pitch(arm, q)) if arm.n_links == 3 else 0.0
        roll = float(q[arm.roll_index]) if arm.roll is not None else 0.0
        return np.concatenate([tool_point(arm, q), [phi, roll]])

    def _solve(self, aim: np.ndarray, q: np.ndarray, now_at: np.ndarray) -> np.ndarray:
        """The pose for ``aim`` nearest ``q`` (at ``now_at``), inside the joint limits; out of reach, the farthest
        of halving steps towards it the arm reaches (down to 0.1 mm: it stops at the edge), else ``q`` (held)."""
        arm = self.arm
        if self.mode == "joints":
            q_new = np.clip(aim, arm.q_min, arm.q_max)
            out = np.flatnonzero(np.abs(q_new - aim) > 1e-12)
            i = int(out[0]) if len(out) else None
            at = "" if i is None else f"{arm.joint_names[i]} at its limit {math.degrees(q_new[i]):.1f} deg"
            self.clamped = at
            return q_new
        if arm.has_base:  # the solver's nearest (a point out of reach: the arm stretched towards it)
            point, rest = aim[: arm.dim], aim[arm.dim :]
            phi = float(rest[0]) if arm.n_links == 3 else None
            roll = float(rest[1]) if arm.roll is not None else None
            goal, _, self.clamped = tool_goal(arm, ToolTarget(*point, pitch=phi, roll=roll), q)
            return goal
        from armctl import motion

        step, why = aim - now_at, ""
        while np.linalg.norm(step[: arm.dim]) > 1e-4 or abs(step[arm.dim]) > 1e-4:
            there = now_at + step
            phi = float(there[arm.dim]) if arm.n_links == 3 else None
            try:
                goal = motion.solve_pose(arm, there[: arm.dim], phi, q)
            except MotionError as exc:  # the edge of the reach or of a joint: try half as far
                why, step = why or str(exc), step / 2.0
                continue
            self.clamped = why
            return np.asarray(goal, dtype=float)
        self.clamped = why
        return q

    def _gripper(self, held: frozenset, dt: float) -> float:
        grip = self.arm.gripper
        if grip is None or not math.isfinite(self.g):
            return self.g
        way = ("rightshoulder" in held) - ("leftshoulder" in held)  # open / close while held
        if not way:
            return self.g
        lo, hi = sorted((grip.closed_rad, grip.open_rad))
        to = grip.open_rad if way > 0 else grip.closed_rad
        step = math.copysign(grip.max_speed_rad_s * dt, to - self.g)
        return min(max(self.g + step, lo), hi) if abs(to - self.g) > abs(step) else to


# --- SDL's virtual joystick: the tests' and the benchmark's gamepad ------------------------------------------------


class VirtualGamepad:
    """A gamepad made in software by SDL (``SDL_JoystickAttachVirtualEx``, SDL 2.24+) with the standard mapping:
    every SDL call of this process sees it as it sees a pad plugged in. ``set(axis_or_button, value)``: an axis
    -1..1 (sticks, y positive up as ``PadState`` gives it) or 0..1 (triggers), a button True/False; ``unplug()``."""

    def __init__(self, name: str = "armctl virtual gamepad"):
        s = sdl()
        desc = s.SDL_VirtualJoystickDesc()
        desc.version = s.SDL_VIRTUAL_JOYSTICK_DESC_VERSION
        desc.type = s.SDL_JOYSTICK_TYPE_GAMECONTROLLER
        desc.naxes, desc.nbuttons = s.SDL_CONTROLLER_AXIS_MAX, s.SDL_CONTROLLER_BUTTON_MAX
        self._name = name.encode()
        desc.name = self._name
        self.index = s.SDL_JoystickAttachVirtualEx(ctypes.byref(desc))
        if self.index < 0:
            raise LinkError(f"SDL could not attach a virtual joystick: {s.SDL_GetError().decode()}")
        self._js = s.SDL_JoystickOpen(self.index)  # (virtual axes are set through an open joystick)
        self.attached = True

    def set(self, what: str, value) -> None:
        s = sdl()
        if what in AXES:
            v = float(value) * (-1.0 if what in ("lefty", "righty") else 1.0)
            raw = int(round(max(-1.0, min(1.0, v)) * 32767))
            s.SDL_JoystickSetVirtualAxis(self._js, AXES.index(what), raw)
        elif what in BUTTONS:
            s.SDL_JoystickSetVirtualButton(self._js, BUTTONS.index(what), 1 if value else 0)
        else:
            raise BadInputError(f"virtual gamepad: no axis or button {what!r} (axes {AXES}, buttons {BUTTONS})")

    def unplug(self) -> None:
        if self.attached:
            self.attached = False
            s = sdl()
            s.SDL_JoystickClose(self._js)
            s.SDL_JoystickDetachVirtual(self.index)


class ScriptPlayer:
    """A timed script played on a ``VirtualGamepad``: one event a line, ``SECONDS AXIS VALUE``, ``SECONDS BUTTON
    down|up`` or ``SECONDS unplug`` (seconds from ``begin()``; ``#`` comments). ``play(now)`` plays what is due;
    ``played`` holds (time.monotonic(), line) of each event played."""

    def __init__(self, text: str, pad: VirtualGamepad, *, where: str = "script"):
        self.pad, self.events, self.played = pad, [], []
        for n, line in enumerate(text.splitlines(), 1):
            words = line.split("#", 1)[0].split()
            if not words:
                continue
            try:
                t = float(words[0])
                ok = (len(words) == 2 and words[1] == "unplug") or (len(words) == 3 and words[1] in AXES + BUTTONS)
            except ValueError:
                ok = False
            if not ok:
                raise BadInputError(
                    f"{where}:{n}: expected 'SECONDS AXIS VALUE', 'SECONDS BUTTON down|up' or 'SECONDS unplug'"
                )
            self.events.append((t, words[1:], line.strip()))
        self.events.sort(key=lambda e: e[0])
        self.t0: float | None = None

    def begin(self, now: float) -> None:
        self.t0 = now

    def play(self, now: float) -> None:
        if self.t0 is None:
            self.begin(now)
        while self.events and self.events[0][0] <= now - self.t0:
            _, words, line = self.events.pop(0)
            if words[0] == "unplug":
                self.pad.unplug()
            elif words[0] in BUTTONS:
                self.pad.set(words[0], words[1] in ("down", "1"))
            else:
                self.pad.set(words[0], float(words[1]))
            self.played.append((time.monotonic(), line))

    @property
    def finished(self) -> bool:
        return not self.events
