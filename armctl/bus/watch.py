"""Watching bus servos' load and temperature as they move, and a gripper that closes until contact.

The Robot gives a bus servo backend (Feetech, Dynamixel: ``armctl.bus.busservo``) a ``WatchLimits``
(``armctl.robot.servowatch`` makes it from the arm file's ``max_load_pct``, ``max_temp_c`` and ``gripper: {close:
until_contact, max_load_pct}``, and the model's expectation). With one, the backend's per-frame SYNC_READ takes the
position through the temperature (Feetech: addresses 56..63, 8 bytes a servo instead of 2; Dynamixel: Present_Current
or Present_Load through Present_Temperature) and ``ServoWatch.check`` runs on every answer, each servo's load read
by ``load_of`` (Feetech: Present_Load in 0.1 %; Dynamixel: Present_Current over the servo's Current_Limit):

- a servo whose load stays above ``max_load_pct`` for ``LOAD_FRAMES`` frames in a row, or whose temperature is
  above ``max_temp_c``, raises ``ServoOverload`` (a LinkError: exit 4): one line naming the servo, its load or
  temperature, the limit and the load the model expects for the pose (blocked, or carrying more than the model
  knows); the backend first has every servo hold where it stands, so a blocked one stops pushing;
- the gripper (``GripLimits``) closing until contact: its servo's torque is capped before it first moves (STS:
  Torque_Limit, 48, 0.1 % of stall torque; a Dynamixel in current-based position mode: Goal_Current; SCS servos and
  Dynamixels in plain position mode have no cap), so it never gives more; when it stands
  still short of its goal with the load at the cap it has met a part (``contact``): from then on it is sent
  ``HOLD_SQUEEZE_DEG`` past where it stands (no squeeze without a torque limit), and holds there, pushing with
  the capped torque, until it is sent toward open past that point. A gripper holding a part is neither stalled
  nor waited for.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from armctl.errors import LinkError

#: what the per-frame read takes with a watch: present position (56) through present temperature (63)
WATCH_REGISTERS = ("present_position", "present_load", "present_temperature")
LOAD_FRAMES = 3  # a load above the limit this many frames in a row (60 ms) stops the arm: not one spike
GRIP_MARGIN_PCT = 5.0  # a gripper closing until contact may read this much above its cap (the servo's own loop)
CONTACT_TOL_PCT = 2.0  # the load at the cap, give or take this: the jaws met a part
CONTACT_SHORT_DEG = 1.0  # ... standing this far short of its goal ...
CONTACT_STILL_STEPS = 1  # ... having moved at most this many steps since the frame before
HOLD_SQUEEZE_DEG = 3.0  # holding a part: sent this far past where it stands, its torque capped


class ServoOverload(LinkError):
    """A bus servo over its load or temperature limit: the arm was stopped (``servo_id``, ``what``)."""

    def __init__(self, message: str, *, servo_id: int | None = None, what: str = ""):
        super().__init__(message)
        self.servo_id = servo_id
        self.what = what


def _present_load(servo_id: int, state: dict[str, int]) -> float | None:
    """Feetech's Present_Load (0.1 % of stall torque, signed by its direction bit) as a fraction."""
    return state["present_load"] / 1000.0 if "present_load" in state else None


@dataclass(frozen=True)
class GripLimits:
    """A gripper that closes until contact: its servo ``id``, ``closing`` (+1: closing turns it toward more steps),
    ``cap_pct`` (its torque cap, % of stall torque) and ``per_deg`` (steps per degree)."""

    id: int
    closing: int
    cap_pct: float
    per_deg: float


@dataclass(frozen=True)
class WatchLimits:
    """What to watch: ``max_load_pct`` and ``max_temp_c`` (None: not watched), the gripper that closes until
    contact (``grip``), and ``expect``: given the joints' angles by servo id (rad), the load (fraction of stall
    torque, unsigned) the model expects of each joint servo to hold that pose (None: no model)."""

    max_load_pct: float | None = None
    max_temp_c: float | None = None
    grip: GripLimits | None = None
    expect: Callable[[dict[int, float]], dict[int, float]] | None = None

    @property
    def active(self) -> bool:
        return self.max_load_pct is not None or self.max_temp_c is not None or self.grip is not None


@dataclass
class ServoWatch:
    """The watch's state over a session (one per backend); ``loads``/``temps`` the last reading per id (load as a
    fraction of stall torque, signed by Present_Load's direction bit), ``contact`` where the gripper met a part
    (steps; None: it holds none)."""

    limits: WatchLimits
    names: dict[int, str] = field(default_factory=dict)  # servo id -> its joint's name
    loads: dict[int, float] = field(default_factory=dict)
    temps: dict[int, int] = field(default_factory=dict)
    contact: float | None = None
    capped: bool = False  # the gripper's torque is capped (Torque_Limit, Goal_Current)
    #: one servo's load (fraction of its stall torque or current limit, signed) from its answer ``{register: value}``
    #: and its id; None: the answer has none
    load_of: Callable[[int, dict[str, int]], float | None] = field(default=None, repr=False)
    _over: dict[int, int] = field(default_factory=dict)  # frames in a row above the load limit, per id
    _last_grip: int | None = None

    def take(self, states: dict[int, dict[str, int]]) -> None:
        """The answers of one frame's read (``{id: {register: value}}``)."""
        for i, v in states.items():
            load = self.load_of(i, v) if self.load_of is not None else _present_load(i, v)
            if load is not None:
                self.loads[i] = load
            if "present_temperature" in v:
                self.temps[i] = v["present_temperature"]

    def load_limit_pct(self, servo_id: int) -> float | None:
        """The load above which servo ``servo_id`` stops the arm (%): ``max_load_pct``, for a gripper closing until
        contact at least its cap (plus ``GRIP_MARGIN_PCT``)."""
        lim, grip = self.limits.max_load_pct, self.limits.grip
        if grip is not None and servo_id == grip.id:
            return max(lim or 0.0, grip.cap_pct + GRIP_MARGIN_PCT)
        return lim

    def check(self, states: dict[int, dict[str, int]], angles: Callable[[], dict[int, float]]) -> None:
        """ServoOverload for the first servo over a limit in this frame's ``states``; ``angles()``: the joints'
        angles by id (rad), asked only to word the line."""
        self.take(states)
        hot = self.limits.max_temp_c
        for i in states:
            temp = self.temps.get(i)
            if hot is not None and temp is not None and temp > hot:
                raise ServoOverload(
                    f"servo {i} ({self.names.get(i, i)}) is at {temp} degC, above max_temp_c {hot:g}; the arm was "
                    "stopped, each servo holding where it stands (let it cool: a lighter load heats it less)",
                    servo_id=i,
                    what="temperature",
                )
            limit, load = self.load_limit_pct(i), self.loads.get(i)
            if limit is None or load is None or abs(load) * 100.0 <= limit:
                self._over.pop(i, None)
                continue
            self._over[i] = self._over.get(i, 0) + 1
            if self._over[i] >= LOAD_FRAMES:
                raise ServoOverload(self._overload_line(i, abs(load) * 100.0, limit, angles), servo_id=i, what="load")

    def _overload_line(self, i: int, pct: float, limit: float, angles) -> str:
        expect = self.limits.expect
        model = ""
        if expect is not None:
            try:
                want = expect(angles()).get(i)
            except (ValueError, ArithmeticError):  # a model that cannot say: the line without it
                want = None
            if want is not None:
                why = ": blocked, or carrying more than the arm file says" if abs(want) * 100 < pct - 10 else ""
                model = f" (the model expects {abs(want) * 100:.0f}% to hold this pose{why})"
        return (
            f"servo {i} ({self.names.get(i, i)}) reports {pct:.0f}% load, above max_load_pct {limit:g}% for "
            f"{LOAD_FRAMES} frames{model}; the arm was stopped, each servo holding where it stands"
        )

    # --- the gripper closing until contact ---

    def grip_goal(self, goal: float) -> float:
        """The goal (steps) to send the gripper for the goal ``goal`` it is given: while it holds a part, where it
        holds it, unless ``goal`` lies toward open past that point (then it lets go: ``goal``)."""
        grip = self.limits.grip
        if grip is None or self.contact is None:
            return goal
        hold = self.hold_steps()
        if (goal - hold) * grip.closing >= 0:
            return hold
        self.contact = None
        return goal

    def hold_steps(self) -> float:
        """Where the gripper is sent while it holds a part: ``HOLD_SQUEEZE_DEG`` past where it met it (with a
        torque cap; exactly there without one)."""
        grip = self.limits.grip
        squeeze = HOLD_SQUEEZE_DEG * grip.per_deg if self.capped else 0.0
        return self.contact + grip.closing * squeeze

    def find_contact(self, present: dict[int, int], goal: float | None) -> bool:
        """True when the gripper has just met a part: closing toward ``goal`` (steps), standing still short of it
        with its load at the cap (then ``contact`` is where it stands)."""
        grip = self.limits.grip
        if grip is None or grip.id not in present:
            return False
        here, last = present[grip.id], self._last_grip
        self._last_grip = here
        load = self.loads.get(grip.id)
        if self.contact is not None or goal is None or load is None or last is None:
            return False
        short = (goal - here) * grip.closing
        still = abs(here - last) <= CONTACT_STILL_STEPS
        if short > CONTACT_SHORT_DEG * grip.per_deg and still and abs(load) * 100.0 >= grip.cap_pct - CONTACT_TOL_PCT:
            self.contact = float(here)
            return True
        return False

    def holding(self, servo_id: int) -> bool:
        """True for the gripper while it holds a part."""
        grip = self.limits.grip
        return grip is not None and servo_id == grip.id and self.contact is not None
