"""What the backends of bus servos (Feetech, Dynamixel) share: ``BusServoBackend``, host-timed frames on one
half-duplex line of servos that report where they are.

Servos are addressed by bus id (the calibration's ``id``) and driven in steps (4096 a turn). Every 20 ms frame one
SYNC_WRITE sets the interpolated goal position of every servo that moves, and one SYNC_READ reads back where they all
are, so the backend knows the tracking error (how far each servo is behind the path) and sees a stalled joint: one
more than ``STALL_DEG`` from its goal that has not moved ``STALL_MOVE_DEG`` in ``STALL_S`` stops the motion with a
LinkError naming it (a servo merely lagging a fast move is moving); a servo reporting error bits (overload, voltage,
overheat) does too (``ServoFault``). Given ``watch_servos(WatchLimits)``, the same read takes each servo's load and
temperature, and one over ``max_load_pct`` or ``max_temp_c`` stops the arm; a gripper closes until contact with its
torque capped (``armctl.bus.watch``).

No jump at start, exactly: a bus servo reports where it is, so the Robot starts every motion from the present
positions. Torque goes on only when a move starts, servo by servo, after its goal has been set to where it is.
``close()`` leaves the servos holding (torque on); ``release()`` turns the torque off (teaching, calibrating by hand).

When the port opens each servo's homing offset and position limits are read from its EEPROM (as LeRobot reads them;
armctl never writes them unless asked): a servo whose offset differs from the one the calibration was made with
(``homing_offset``, LeRobot's) is refused with a LinkError naming it (only noted when calibrating), and a calibrated
range beyond the servo's own limits is clamped to them (``notes``).

Servos the calibration holds (``hold:``, no joint of the model) turn to their ``position_steps`` at ``speed_deg_s``
when the arm first moves (and after a release or a stop), and hold there.

A subclass gives the bus (``_make_bus``: a ``armctl.bus.servobus.ServoBus``), its register names (``limit_registers``,
``watch_registers``), how its homing offset counts (``offset_sign``, ``offset_limit``) and the few things its servos
do their own way (``_full_speed``, ``_cap_gripper``, ``_set_speed``, ``_write_offset``, ``_load_of``).
"""

from __future__ import annotations

import contextlib
import time

from armctl.bus.backend import FRAME_S, Backend, BoardInfo, BoardStatus, Capabilities
from armctl.bus.servobus import ServoBadReply, ServoError, ServoNoReply
from armctl.bus.watch import ServoOverload, ServoWatch, WatchLimits
from armctl.errors import LinkError

LOST_FRAMES = 10  # this many frames in a row without a position reply from a servo: the link is lost
RETRIES = 4  # extra tries of an exchange that can be repeated (reads, pings, acknowledged writes)
STALL_DEG = 5.0  # a servo this far from its goal ...
STALL_MOVE_DEG = 0.5  # ... that has not moved this much ...
STALL_S = 0.3  # ... in this long is stalled (blocked, overloaded, unpowered)
SETTLE_STEPS = 1  # at rest: within a step of the goal


class BusServoBackend(Backend):
    """Bus servos on ``port`` that report where they are (see the module note); subclasses name the bus."""

    servo_unit = "steps"
    caps = Capabilities(measures_positions=True, releases=True)
    measured_by = "servo encoders"
    runs_on_frames = 0.0  # host-timed: when armctl dies, the servos hold the last goal
    #: the servos' position limit registers (EEPROM), lowest then highest
    limit_registers = ("min_position_limit", "max_position_limit")
    #: what the per-frame read takes with a watch (adjacent registers, present_position among them)
    watch_registers: tuple[str, ...] = ("present_position",)
    #: +1: Present_Position = actual - Homing_Offset (Feetech); -1: actual + Homing_Offset (Dynamixel)
    offset_sign = 1
    offset_limit = 2047  #: the largest homing offset the register holds
    model_names: dict[int, str] = {}  #: model number -> model name, for ``info.firmware``
    #: what else ``_read_eeprom`` reads of each servo (into ``eeprom``), where the servos have it
    eeprom_extra: tuple[str, ...] = ()

    @classmethod
    def create(cls, port: str, cal, *, wire_log=None, watchdog_s: float = 1.0, calibrating: bool = False):
        """Bus servos on ``port``, each addressed by its calibration ``id``. No watchdog (host-timed).
        ``calibrating``: homing offsets that differ from the calibration's are noted, not refused."""
        return cls(port, cal, wire_log=wire_log, strict_offsets=not calibrating)

    def _make_bus(self, port: str, baudrate: int | None):
        """The bus client (``armctl.bus.servobus.ServoBus``) on ``port``, not yet open."""
        raise NotImplementedError

    def __init__(self, port: str, cal, *, baudrate: int | None = None, wire_log=None, strict_offsets: bool = True):
        self.port = port
        self.cal = cal
        self.strict_offsets = strict_offsets
        self.notes: list[str] = []  #: what open() found and did about it (limits clamped, offsets), for the user
        self.homing_offsets: dict[int, int] = {}  #: each servo's Homing_Offset register (EEPROM), read at open
        self.position_limits: dict[int, tuple[int, int]] = {}  #: each servo's Min/Max_Position_Limit, at open
        self.eeprom: dict[int, dict[str, int]] = {}  #: what ``_read_eeprom`` read of each servo
        self.bus = self._make_bus(port, baudrate)
        self.wire_log_path = wire_log
        self.info: BoardInfo | None = None
        self.held = {h.id: h for h in cal.held}  # servos kept at one position, not joints
        self.ids = [s.id for s in cal.servos] + list(self.held)
        self.goal: dict[int, float | None] = dict.fromkeys(self.ids)  # last goal sent per id (None: none yet)
        self.torque: dict[int, bool] = dict.fromkeys(self.ids, False)
        self.present: dict[int, int] = {}
        self.tracking: dict[int, float] = dict.fromkeys(self.ids, 0.0)  #: worst |present - goal| (steps) per id
        self._behind_since: dict[int, float] = {}
        self._unheard: dict[int, int] = dict.fromkeys(self.ids, 0)  # frames in a row without a position reply
        self._unheard_corrupt: set[int] = set()
        self._next_frame_t: float | None = None
        self._played = 0
        self._fast: set[int] = set()  # servos this session set to follow their goals at top speed (``_full_speed``)
        self.watch: ServoWatch | None = None  #: load, temperature and the gripper's contact (``watch_servos``)
        self._frame_states: dict[int, dict[str, int]] = {}  # the last frame's read, every register taken
        self.log = None

    def use_calibration(self, cal) -> None:
        """Angles, names and held positions from ``cal`` from now on (the same servos, newly calibrated), each
        range inside the servo's own limits."""
        self.cal = self._clamped(cal) if self.position_limits else cal
        self.held = {h.id: h for h in cal.held if h.id in self.held}

    def watch_servos(self, limits: WatchLimits | None) -> list[str]:
        """Watch the servos' load and temperature as they move, and close the gripper until contact, as ``limits``
        says (None, or nothing to watch: no watch, and the per-frame read takes the positions only). Returns notes
        for the user."""
        if limits is None or not limits.active:
            self.watch = None
            return []
        names = {s.id: s.name for s in (*self.cal.servos, *self.cal.held)}
        self.watch = ServoWatch(limits, names=names, load_of=self._load_of)
        if limits.grip is not None:
            why = self._no_cap_why(limits.grip.id)
            if why:
                return [
                    f"servo {limits.grip.id} ({names.get(limits.grip.id)}): {why}: the gripper closing until contact "
                    "stops where its load reaches the cap and holds there without squeezing"
                ]
        return []

    # --- what each bus does its own way ---

    _load_of = None  #: ``ServoWatch.load_of`` (None: Feetech's Present_Load)

    def _no_cap_why(self, servo_id: int) -> str:
        """Why servo ``servo_id`` cannot have its torque capped, in words; "" if it can (``_cap_gripper``)."""
        return ""

    def _cap_gripper(self, servo_id: int, cap_pct: float) -> None:
        """Cap the gripper's torque at ``cap_pct`` % (RAM), before it first moves (only where ``_no_cap_why`` is "")."""

    def _full_speed(self, servo_id: int) -> None:
        """Make servo ``servo_id`` follow each goal at its own top speed (no profile of its own)."""

    def _set_speed(self, servo_id: int, steps_s: int) -> None:
        """Make servo ``servo_id`` turn to its goals at no more than ``steps_s`` steps/s (a held servo)."""

    def _write_offset(self, servo_id: int, offset: int) -> None:
        """Write servo ``servo_id``'s homing offset (EEPROM), as asked."""
        raise NotImplementedError

    def _open_bus(self) -> None:
        self.bus.open()  # (a subclass may find the servos' baud rate here)

    def _limits_of(self, servo_id: int, got: dict[str, int]) -> tuple[int, int]:
        """The position limits servo ``servo_id`` applies, from what ``_read_eeprom`` read; (0, 0): none."""
        lo_name, hi_name = self.limit_registers
        return got[lo_name], got[hi_name]

    # --- lifecycle ---

    def open(self) -> BoardInfo:
        from armctl.bus.backend import WireLog

        self.log = WireLog(self.wire_log_path) if self.wire_log_path else None
        if self.log is not None:
            self.bus.on_bytes = self.log.record
        try:
            self._open_bus()
            models = self.bus.check_ids(self.ids)  # a missing servo is named here, before anything moves
            self.torque = {i: bool(self.bus.read(i, "torque_enable")) for i in self.ids}
            self.present = self.bus.read_positions(self.ids)
            held = [i for i in self.ids if self.torque[i]]  # servos left holding (by an earlier run): their goals
            for i, v in self.bus.sync_read("goal_position", held).items() if held else ():
                self.goal[i] = float(v)
            self._read_eeprom()
        except ServoError as exc:
            self.close()
            raise LinkError(self._named(str(exc))) from None
        except BaseException:
            self.close()
            raise
        names = sorted({self.model_names.get(m, f"model {m}").upper() for m in models.values()})
        self.info = BoardInfo(
            firmware=f"{self.name} " + ", ".join(names),
            protocol=self.name,
            channels=len(self.ids),
            depth=0,
        )
        return self.info

    def _read_eeprom(self) -> None:
        """Each servo's homing offset and position limits (EEPROM), as LeRobot reads them: an offset that differs
        from the one the calibration was made with is refused (LinkError naming the servo; noted when
        calibrating); a calibrated range beyond the servo's limits is clamped to them, with a note."""
        for i in self.ids:
            names = (*self.limit_registers, "homing_offset", *self.eeprom_extra)
            got = self.bus.read_many(i, [n for n in names if self.bus.has_register(n, i)])
            self.eeprom[i] = got
            self.position_limits[i] = self._limits_of(i, got)
            if "homing_offset" in got:
                self.homing_offsets[i] = got["homing_offset"]
        wrong = [
            s
            for s in (*self.cal.servos, *self.cal.held)
            if s.homing_offset is not None
            and self.homing_offsets.get(s.id) is not None
            and s.homing_offset != self.homing_offsets[s.id]
        ]
        for s in wrong:
            want, have = s.homing_offset, self.homing_offsets[s.id]
            twin = next((t for t in wrong if t is not s and t.homing_offset == have), None)
            if twin is not None and self.homing_offsets[twin.id] == want:
                text = (
                    f"servos {s.id} ({s.name}) and {twin.id} ({twin.name}) look swapped: servo {s.id} carries homing "
                    f"offset {have:+d}, which calibration {self.cal.source} gives servo {twin.id}, and servo "
                    f"{twin.id} carries {want:+d}, which it gives servo {s.id}; check the ids (the servos' wiring "
                    "or the file)"
                )
            else:
                off_deg = abs(have - want) / s.per_deg
                text = (
                    f"servo {s.id} ({s.name}) carries homing offset {have:+d} in its EEPROM, but calibration "
                    f"{self.cal.source} was made with {want:+d}: its angles would be {off_deg:.1f} deg off. LeRobot "
                    "would call it uncalibrated too; calibrate again (LeRobot's or armctl's), or give the "
                    "calibration made since"
                )
            if self.strict_offsets:
                raise LinkError(f"{self.port}: {text}")
            self.notes.append(text)
        self.cal = self._clamped(self.cal)

    def _clamped(self, cal):
        """``cal`` with each servo's range inside the servo's own position limits (a note for each one moved)."""
        from dataclasses import replace

        out = []
        for s in cal.servos:
            lo, hi = self.position_limits.get(s.id, (0, 0))
            if (lo, hi) == (0, 0) or (lo <= s.min_steps and s.max_steps <= hi):  # 0, 0: no limits (multi-turn)
                out.append(s)
                continue
            new_lo, new_hi = max(s.min_steps, lo), min(s.max_steps, hi)
            if new_hi <= new_lo:
                raise LinkError(
                    f"{self.port}: servo {s.id} ({s.name}) limits itself to {lo}..{hi} steps (Min/Max_Position_Limit), "
                    f"outside all of calibration {cal.source}'s {s.min_steps:g}..{s.max_steps:g}: recalibrate"
                )
            self.notes.append(
                f"servo {s.id} ({s.name}): the calibrated range {s.min_steps:g}..{s.max_steps:g} steps is clamped to "
                f"the servo's own limits {new_lo:g}..{new_hi:g} (Min/Max_Position_Limit in its EEPROM)"
            )
            out.append(replace(s, min_steps=float(new_lo), max_steps=float(new_hi)))
        n = len(cal.joints)
        return replace(cal, joints=tuple(out[:n]), gripper=out[n] if cal.gripper is not None else None)

    def close(self) -> None:
        """Release the port; the servos keep their torque and hold their goal."""
        self.bus.close()
        if self.log is not None:
            self.log.close()

    def release(self) -> None:
        """Torque off on every servo (they can be moved by hand; nothing holds the arm up)."""
        self.bus.set_torque(self.ids, False)
        self.torque = dict.fromkeys(self.ids, False)
        self.goal = dict.fromkeys(self.ids)
        if self.watch is not None:
            self.watch.contact = None

    # --- motion ---

    def _within_limits(self, servo_id: int, steps):
        """``steps`` clamped into the servo's own Min/Max_Position_Limit, as the servo clamps a goal it is given."""
        lo, hi = self.position_limits.get(servo_id, (0, 0))
        return steps if (lo, hi) == (0, 0) else min(max(steps, lo), hi)

    def _torque_on(self, ids) -> None:
        """Before a servo first moves: its goal where it is, then torque on (it does not jump). A servo found
        beyond its own position limits (moved there by hand) takes the nearest limit as its goal, as it would
        anyway: that is the goal it holds."""
        off = [i for i in ids if not self.torque.get(i)]
        if not off:
            return
        here = {i: self._within_limits(i, v) for i, v in self.bus.read_positions(off).items()}
        for i in off:  # acknowledged (and retried): a lost goal here would be a jump when the torque goes on
            self.bus.write(i, "goal_position", here[i])
        self.bus.set_torque(off, True)
        for i in off:
            self.torque[i] = True
            self.goal[i] = float(here[i])

    def _hold(self, skip=()) -> None:
        """Each held servo not yet holding its position: its goal speed, its goal where it stands, torque on,
        then its position as the goal: the servo turns there at no more than its speed. ``skip``: ids driven
        by the caller this frame (a follow turning the wrist roll as the leader's)."""
        todo = [
            h
            for h in self.held.values()
            if h.id not in skip and (not self.torque.get(h.id) or self.goal.get(h.id) != round(h.position_steps))
        ]
        if not todo:
            return
        for h in todo:
            self._set_speed(h.id, h.speed_steps_s)
        self._torque_on([h.id for h in todo])
        for h in todo:
            self.bus.write(h.id, "goal_position", round(h.position_steps))
            self.goal[h.id] = float(round(h.position_steps))

    def _at_full_speed(self, ids) -> None:
        """The first time this session a servo is driven as a joint (the host times its frames): no speed profile of
        its own (``_full_speed``). A speed an earlier hold left in its RAM (it keeps it until power-off, torque on or
        not) would make it lag the frames it is sent. The gripper closing until contact gets its torque cap."""
        for i in ids:
            if i not in self._fast:
                self._full_speed(i)  # acknowledged, retried
                self._fast.add(i)
        w = self.watch
        grip = None if w is None else w.limits.grip
        if grip is not None and grip.id in ids and not w.capped and not self._no_cap_why(grip.id):
            self._cap_gripper(grip.id, grip.cap_pct)
            w.capped = True

    def _sent(self, servo_id: int, steps: float) -> float:
        """The goal to send servo ``servo_id`` for goal ``steps``: the gripper holding a part holds it."""
        w = self.watch
        if w is None or w.limits.grip is None or servo_id != w.limits.grip.id:
            return steps
        return w.grip_goal(steps)

    def move(self, frames: int, values: dict[int, float | None]) -> None:
        """Host-timed: each frame one SYNC_WRITE of the interpolated goals, one SYNC_READ of the positions."""
        targets = {i: v for i, v in values.items() if v is not None}
        if self.held:
            with self._naming():
                self._hold()
        self._at_full_speed(targets)
        self._torque_on([i for i in targets if self.goal.get(i) is None or not self.torque.get(i)])
        starts = {i: self.goal[i] if self.goal[i] is not None else v for i, v in targets.items()}
        now = time.monotonic()
        if self._next_frame_t is None or self._next_frame_t < now - FRAME_S:
            self._next_frame_t = now
        for k in range(1, frames + 1):
            self._waiting()
            delay = self._next_frame_t - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            # a goal beyond the servo's own limits (a motion bringing it back from there) is the limit: the servo
            # takes it so, and so it is the goal it is watched against
            goals = {i: self._within_limits(i, starts[i] + (v - starts[i]) * k / frames) for i, v in targets.items()}
            with self._naming():
                self.bus.write_positions({i: round(self._sent(i, v)) for i, v in goals.items()})  # lost: next follows
                for i, v in goals.items():
                    self.goal[i] = v
                self._watch(self._feedback(self._next_frame_t + FRAME_S))
            self._next_frame_t += FRAME_S
            self._played += 1

    def set_goal(self, values: dict[int, float | None]) -> None:
        """Teleoperation, one step: one SYNC_WRITE of the goals now and one SYNC_READ of the positions (waiting
        at most ``FRAME_S / 2`` for them); no frame clock (the caller paces the steps)."""
        targets = {i: self._within_limits(i, v) for i, v in values.items() if v is not None}
        with self._naming():
            if self.held:
                self._hold(skip=targets)
            self._at_full_speed(targets)
            self._torque_on([i for i in targets if self.goal.get(i) is None or not self.torque.get(i)])
            self.bus.write_positions({i: round(self._sent(i, v)) for i, v in targets.items()})
            for i, v in targets.items():
                self.goal[i] = v
            self._watch(self._feedback(time.monotonic() + FRAME_S / 2))
        self._next_frame_t = None
        self._played += 1

    def held_steps(self) -> dict[int, float]:
        """The held servos' positions (steps) read in the last frame, per id (no bus traffic)."""
        return {i: float(self.present[i]) for i in self.held if i in self.present}

    def last_measured(self) -> dict[int, float]:
        """The positions read in the last frame (no bus traffic), as angles (rad) by the calibration, per id."""
        if not self.present:
            return self.measured()
        return {s.id: float(s.angle_rad(self.present[s.id])) for s in self.cal.servos if s.id in self.present}

    def _feedback(self, next_frame_t: float) -> dict[int, int]:
        """One SYNC_READ of the positions, waiting for the answers no later than the next frame is due: a lost
        or corrupt answer only makes that servo's feedback late (its last position stands). ``LOST_FRAMES``
        frames in a row without one from a servo is a lost link (ServoNoReply/ServoBadReply naming it)."""
        wait = max(0.002, next_frame_t - time.monotonic() - 0.002)
        names = self.watch_registers if self.watch is not None else ("present_position",)
        got, missing, corrupt = self.bus.sync_read_once(names, self.ids, timeout_s=wait)
        self._frame_states = got
        for i in got:
            self._unheard[i] = 0
            self._unheard_corrupt.discard(i)
        for i in missing:
            self._unheard[i] += 1
            if i in corrupt:
                self._unheard_corrupt.add(i)
        lost = [i for i in missing if self._unheard[i] >= LOST_FRAMES]
        if lost:
            i = lost[0]
            bad = i in self._unheard_corrupt
            what = "only corrupt replies (noise on the bus, a loose cable)" if bad else "no reply (cable, power)"
            raise (ServoBadReply if bad else ServoNoReply)(
                f"{self.port}: servo {i}: {what} to {LOST_FRAMES} position reads in a row "
                f"({LOST_FRAMES * FRAME_S:.1f} s): the link is lost; the arm was stopped",
                servo_ids=lost,
                operation="sync read present_position",
            )
        return {i: v["present_position"] for i, v in got.items()}

    def _named(self, text: str) -> str:
        """``text`` with each "servo N" followed by its joint name."""
        for s in (*self.cal.servos, *self.cal.held):
            text = text.replace(f"servo {s.id} ", f"servo {s.id} ({s.name}) ").replace(
                f"servo {s.id}:", f"servo {s.id} ({s.name}):"
            )
        return text

    def _watch(self, present: dict[int, int]) -> None:
        """Track how far each moving servo is behind its goal; a stalled one raises LinkError naming it; with a
        watch (``watch_servos``) one over its load or temperature limit raises ServoOverload, every servo held
        where it stands first, and the gripper closing until contact is watched for the part.
        ``present``: the servos heard from this frame (the others keep their last position)."""
        self.present = {**self.present, **present}
        if self.watch is not None:
            self._watch_load(present)
        now = time.monotonic()
        for s in (*self.cal.servos, *self.cal.held):
            goal = self.goal.get(s.id)
            if goal is None or not self.torque.get(s.id) or s.id not in present or self._holding(s.id):
                continue
            behind = abs(present[s.id] - goal)
            self.tracking[s.id] = max(self.tracking[s.id], behind)
            if behind <= STALL_DEG * s.per_deg:
                self._behind_since.pop(s.id, None)
                continue
            since, where = self._behind_since.setdefault(s.id, (now, present[s.id]))
            if abs(present[s.id] - where) > STALL_MOVE_DEG * s.per_deg:
                self._behind_since[s.id] = (now, present[s.id])  # lagging, but moving
            elif now - since >= STALL_S:
                gripper = self.cal.gripper is not None and s.id == self.cal.gripper.id
                hint = "; a gripper closing on a part: give it close: until_contact in the arm file" if gripper else ""
                raise LinkError(
                    f"servo {s.id} ({s.name}) is stalled: {behind / s.per_deg:.1f} deg from its goal and not moving "
                    f"for {now - since:.2f} s (blocked, overloaded or without power?{hint}); the arm was stopped"
                )

    def _holding(self, servo_id: int) -> bool:
        return self.watch is not None and self.watch.holding(servo_id)

    def _watch_load(self, present: dict[int, int]) -> None:
        """This frame's loads and temperatures against the limits (ServoOverload, every servo held first); the
        gripper's contact with a part."""
        w = self.watch
        grip = w.limits.grip
        states = {i: v for i, v in self._frame_states.items() if i in present}
        if grip is not None and w.find_contact(present, self.goal.get(grip.id)):
            self.bus.write_positions({grip.id: round(w.hold_steps())})  # from now on it holds there
        try:
            w.check(states, self._joint_angles)
        except ServoOverload:
            try:
                self.stop()
            except LinkError:
                pass
            raise

    def _joint_angles(self) -> dict[int, float]:
        return {s.id: float(s.angle_rad(self.present[s.id])) for s in self.cal.joints if s.id in self.present}

    def drain(self, *, timeout_s: float | None = None) -> None:
        """Wait for the frame clock, then until every servo has reached its goal (bounded)."""
        self._waiting()
        delay = (self._next_frame_t or 0) - time.monotonic()
        if delay > 0:
            time.sleep(delay)
        self._settle(1.0 if timeout_s is None else timeout_s)

    def _settle(self, timeout_s: float) -> None:
        """Until every servo with torque is within a step of its goal (at most ``timeout_s``). A servo that
        stands still short of its goal is sent its goal again: the last frame of a motion may have been lost."""
        deadline = time.monotonic() + timeout_s
        moving = [i for i in self.ids if self.torque.get(i) and self.goal.get(i) is not None and not self._holding(i)]
        last: dict[int, int] = {}
        while moving and time.monotonic() < deadline:
            with self._naming():
                present = self._feedback(time.monotonic() + FRAME_S / 2)
                still = {i: round(self._sent(i, self.goal[i])) for i in moving if present.get(i, -1) == last.get(i)}
                self.bus.write_positions(still)
            self._watch(present)
            last.update(present)
            moving = [
                i
                for i in moving
                if not self._holding(i) and (i not in present or abs(present[i] - self.goal[i]) > SETTLE_STEPS)
            ]
            if moving:
                self._waiting()
                time.sleep(FRAME_S / 2)

    def stop(self) -> None:
        """Nothing is queued on the bus: each servo holds where it is now (its goal set to its position), or, if it
        stands outside its calibrated range (pushed, overshooting), at the nearest end of it: a stop never writes a
        goal outside the calibration."""
        self._next_frame_t = None
        ranges = {s.id: (s.min_steps, s.max_steps) for s in self.cal.servos}
        try:
            here = self.bus.read_positions([i for i in self.ids if self.torque.get(i)])
            for i, v in here.items():
                lo, hi = ranges.get(i, (v, v))
                here[i] = self._within_limits(i, round(min(max(v, lo), hi)))
                if self._holding(i):  # the gripper keeps its part
                    here[i] = round(self.watch.hold_steps())
            if here:
                self.bus.write_positions(here)
                for i, v in here.items():
                    self.goal[i] = float(v)
        except ServoError as exc:
            raise LinkError(self._named(str(exc))) from None

    def status(self) -> BoardStatus:
        """The goal each servo holds (None with its torque off), by id, and in ``servos`` what each reports:
        ``{id: {torque, goal_steps, position_steps, speed_steps_s, load_fraction, voltage_v, temperature_c,
        moving, errors}}`` (one SYNC_READ), a held servo's ``held_at_steps`` (its calibrated position), and with a
        watch whose model weighs the arm, ``expected_load_fraction`` of each joint servo (unsigned)."""
        with self._naming():
            states = self.bus.read_states(self.ids)
        top = max(self.ids) + 1
        goals = tuple(self.goal.get(i) if self.torque.get(i) else None for i in range(top))
        servos = {
            i: {
                "torque": bool(self.torque.get(i)),
                "goal_steps": goals[i],
                "position_steps": st.position_steps,
                "speed_steps_s": st.speed_steps_s,
                "load_fraction": st.load_fraction,
                "voltage_v": st.voltage_v,
                "temperature_c": st.temperature_c,
                "moving": st.moving,
                "errors": st.errors,
            }
            for i, st in states.items()
        }
        for i, h in self.held.items():
            servos[i]["held_at_steps"] = h.position_steps
        expect = None if self.watch is None else self.watch.limits.expect
        if expect is not None:  # beside what each joint servo reports, what the model expects of it here
            angles = {s.id: float(s.angle_rad(states[s.id].position_steps)) for s in self.cal.joints if s.id in states}
            for i, want in expect(angles).items():
                servos[i]["expected_load_fraction"] = round(want, 4)
        return BoardStatus(values=goals, servos=servos)

    def played_frames(self) -> int:
        return self._played

    def measured(self, *, settle_s: float = 0.0) -> dict[int, float]:
        """Present positions, as angles (rad) by the calibration, per id; ``settle_s``: first wait until the
        servos with torque have reached their goals."""
        if settle_s > 0:
            self._settle(settle_s)
        with self._naming():
            present = self.bus.read_positions(self.ids)
        self.present = present
        return {s.id: float(s.angle_rad(present[s.id])) for s in self.cal.servos}

    def held_positions(self) -> dict[int, int]:
        """Present positions (steps) of the held servos, per id."""
        with self._naming():
            return self.bus.read_positions(list(self.held))

    @contextlib.contextmanager
    def _naming(self):
        """A ServoError inside becomes a LinkError whose line names each servo's joint."""
        try:
            yield
        except ServoError as exc:
            raise LinkError(self._named(str(exc))) from None

    def add_homing_offsets(self, deltas: dict[int, int]) -> dict[int, int]:
        """Change the servos' homing offsets (EEPROM) so that each reports its position ``deltas[id]`` steps lower
        (Feetech: the offset plus delta; Dynamixel: minus, ``offset_sign``). Returns {id: new offset} of those
        written; an offset past the register's ``offset_limit`` is skipped."""
        written = {}
        try:
            for i, delta in deltas.items():
                new = self.bus.read(i, "homing_offset") + self.offset_sign * int(delta)
                if abs(new) > self.offset_limit:
                    continue
                self._write_offset(i, new)
                written[i] = new
        except ServoError as exc:
            raise LinkError(self._named(str(exc))) from None
        return written

    def tracking_deg(self) -> dict[int, float]:
        """Per id, the farthest (deg) a servo was behind its goal since the last ``reset_tracking``."""
        return {s.id: self.tracking[s.id] / s.per_deg for s in self.cal.servos}

    def reset_tracking(self) -> None:
        self.tracking = dict.fromkeys(self.ids, 0.0)
        self._behind_since.clear()
