"""One simulated Feetech servo (``SimServo``): its memory table and its motion, for ``feetechsim.FeetechSim``
(whose module note says what is modelled), and the ``hand`` file that turns servos by hand."""

from __future__ import annotations

import math
from bisect import bisect_right
from pathlib import Path

from armctl.bus.feetech.protocol import BAUD_RATES, Series

MEM_BYTES = 87  # addresses 0..86: the STS table ends with factory registers at 80..86
EEPROM_END = 40  # addresses below this are EEPROM on STS and SCS alike
STEP_S = 0.001  # motion integration step while a servo moves
LOAD_PER_STEP = 20.0  # load (0.1 % of stall torque) per step of position error when pushing on a stop
MOVING_LOAD = 40.0  # load while moving freely (friction)
HEAT_C = 40.0  # temperature rise at full load, steady state
HEAT_TAU_S = 60.0  # thermal time constant
SAG_V = 0.5  # supply drop at full load (an STS3215 stalls at ~2.7 A; ~0.2 ohm of supply and wiring)


def read_hand_file(path: str, steps_per_turn: int = 4096) -> dict[int, tuple[list[float], list[float]]]:
    """A ``hand`` file: CSV rows ``t_s,id,steps`` (simulated seconds since the bus was powered, servo id,
    encoder steps = present position + homing offset), a header line and ``#`` comments allowed; times
    never fall for one id. Returns {id: (times, steps)}. ValueError naming the file and line otherwise."""
    track: dict[int, tuple[list[float], list[float]]] = {}
    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise ValueError(f"cannot read {path}: {getattr(exc, 'strerror', None) or exc}") from None
    seen_data = False
    for number, line in enumerate(lines, 1):
        text = line.split("#", 1)[0].strip()
        if not text:
            continue
        fields = [f.strip() for f in text.split(",")]
        if not seen_data and fields and fields[0].lower() in ("t_s", "t", "time", "time_s"):
            seen_data = True  # the header
            continue
        seen_data = True
        where = f"{path} line {number}"
        if len(fields) != 3:
            raise ValueError(f"{where}: expected t_s,id,steps, got {text!r}")
        try:
            t, servo_id, steps = float(fields[0]), int(fields[1]), float(fields[2])
        except ValueError:
            raise ValueError(f"{where}: expected numbers t_s,id,steps, got {text!r}") from None
        if not (math.isfinite(t) and t >= 0):
            raise ValueError(f"{where}: time {fields[0]} s must be >= 0")
        if not 0 <= servo_id <= 0xFC:
            raise ValueError(f"{where}: id {servo_id} is outside 0..252")
        if not (math.isfinite(steps) and 0 <= steps <= steps_per_turn - 1):
            raise ValueError(f"{where}: steps {fields[2]} outside 0..{steps_per_turn - 1}")
        times, positions = track.setdefault(servo_id, ([], []))
        if times and t < times[-1]:
            raise ValueError(f"{where}: time {t:g} s comes before {times[-1]:g} s, the previous row of id {servo_id}")
        times.append(t)
        positions.append(steps)
    if not track:
        raise ValueError(f"{path} has no rows t_s,id,steps")
    return track


def hand_at(track: tuple[list[float], list[float]], t: float) -> tuple[float, float] | None:
    """Where the hand holds a servo at ``t`` (encoder steps) and how fast it turns it (steps/s), interpolated
    in time; None before its first row (not touched yet); after its last row it stays put."""
    times, steps = track
    k = bisect_right(times, t)
    if k == 0:
        return None
    if k == len(times):
        return steps[-1], 0.0
    t0, t1 = times[k - 1], times[k]
    slope = (steps[k] - steps[k - 1]) / (t1 - t0)  # t1 > t0: equal times make bisect pass the first
    return steps[k - 1] + slope * (t - t0), slope


class SimServo:
    """One simulated servo: its memory table and its motion (see ``feetechsim``'s module note); ``opts``: the
    bus's ``FeetechSimOptions``."""

    def __init__(self, series: Series, servo_id: int, raw_steps: float, opts, eeprom=None):
        self.series = series
        self.opts = opts
        self.res = series.steps_per_turn
        self.mem = bytearray(MEM_BYTES)
        self._defaults(servo_id)
        if eeprom is not None:
            self.mem[:EEPROM_END] = bytes(eeprom)[:EEPROM_END]
        self.saved_eeprom = bytes(self.mem[:EEPROM_END])
        self.raw = float(raw_steps) % self.res  # encoder position, steps
        self.vel = 0.0  # steps/s
        self.t = 0.0
        self.load = 0.0  # 0.1 % of stall torque, signed
        #: the torque (0.1 % of stall, signed in steps) that holds the servo's arm still: gravity and the part the
        #: gripper holds (``feetech_load``; 0 without an arm)
        self.gravity = 0.0
        #: a part between the jaws (a gripper): (where it stops the servo in its own frame, the closing direction)
        self.contact: tuple[float, int] | None = None
        self.over_s = 0.0
        self.overloaded = False
        self.hot_cut = False  # over max_temperature with bit 0x04 in unloading_condition: the output is off
        self.temp_c = opts.temp_c
        self.stops: tuple[float, float] | None = None  # mechanical stops, encoder steps
        self.jammed = False
        self.hand: tuple[list[float], list[float]] | None = None  # a hand's moves (``hand`` option)
        self.pending: tuple[int, bytes] | None = None
        self._power_on_sram()
        self._ctl = None

    # --- memory ---

    def _defaults(self, servo_id: int) -> None:
        top = self.res - 1
        for name, value in (
            ("firmware_major", 3),
            ("firmware_minor", 7),
            ("model_number", self.series.model_number),
            ("id", servo_id),
            ("baud_rate", BAUD_RATES.index(self.opts.baud)),
            ("return_delay", 0),
            ("response_level", 1),
            ("min_angle_limit", 0),
            ("max_angle_limit", top),
            ("max_temperature", 70),
            ("max_voltage", 80),
            ("min_voltage", 40),
            ("max_torque", 1000),
            ("phase", 12),
            ("unloading_condition", 44),
            ("led_alarm_condition", 47),
            ("p_gain", 32),
            ("d_gain", 32),
            ("min_startup_force", 16),
            ("cw_dead_zone", 1),
            ("ccw_dead_zone", 1),
            ("protection_current", 500),
            ("angular_resolution", 1),
            ("protective_torque", 20),
            ("protection_time", 200),
            ("overload_torque", 80),
        ):
            self.put(name, value)

    def _power_on_sram(self) -> None:
        self.mem[EEPROM_END:] = bytes(MEM_BYTES - EEPROM_END)
        self.put("goal_position", self.present_steps())
        self.put("torque_limit", self.get("max_torque"))
        self.overloaded = False
        self.hot_cut = False
        self.over_s = 0.0
        self.vel = 0.0
        self.pending = None
        self._ctl = None

    def get(self, name: str, default: int = 0) -> int:
        """A register's value (``default`` if this series has no such register)."""
        reg = self.series.registers.get(name)
        if reg is None:
            return default
        return self.series.decode(reg, self.mem[reg.address : reg.address + reg.size])

    def put(self, name: str, value: int) -> None:
        """Set a register directly (no side effects; read-only registers too)."""
        reg = self.series.registers.get(name)
        if reg is not None:
            self.mem[reg.address : reg.address + reg.size] = self.series.encode(reg, int(value))

    @property
    def id(self) -> int:
        return self.mem[5]

    @property
    def baud(self) -> int:
        index = self.get("baud_rate")
        return BAUD_RATES[index] if index < len(BAUD_RATES) else -1

    @property
    def torque_on(self) -> bool:
        return self.mem[40] != 0

    @property
    def drives(self) -> bool:
        """Torque on and not cut by the overheat protection: the motor drives."""
        return self.mem[40] != 0 and not self.hot_cut

    def offset(self) -> int:
        return self.get("homing_offset")

    def present_steps(self) -> int:
        """Present position as the servo reports it (homing offset applied, modulo a turn: single-turn feedback,
        Phase bit 4 clear)."""
        return (round(self.raw) - self.offset()) % self.res

    def corrected(self) -> float:
        """Where the servo is in its own frame, the one its position loop, goal and angle limits use: the encoder
        position less the homing offset, modulo a turn (steps, not rounded)."""
        return (self.raw - self.offset()) % self.res

    def _set_corrected(self, c: float) -> None:
        self.raw = (c + self.offset()) % self.res

    def volts(self) -> float:
        """The supply at the servo: ``volts`` less the drop in the supply and wiring under its load."""
        return self.opts.volts - SAG_V * abs(self.load) / 1000.0

    def error_bits(self) -> int:
        bits = 0
        volts = round(self.volts() * 10)
        if not self.get("min_voltage") <= volts <= self.get("max_voltage"):
            bits |= 0x01
        if self.temp_c > self.get("max_temperature"):
            bits |= 0x04
        if self.overloaded:
            bits |= 0x20
        return bits

    def refresh(self) -> None:
        """Copy the modelled state into the feedback registers."""
        self.put("present_position", self.present_steps())
        speed = round(self.vel)
        self.put("present_speed", max(-32767, min(32767, speed)))
        self.put("present_load", max(-1000, min(1000, round(self.load))))
        self.put("present_voltage", round(self.volts() * 10))
        self.put("present_temperature", round(self.temp_c))
        self.put("reg_write_pending", 1 if self.pending else 0)
        self.put("status", self.error_bits())
        self.put("moving", 1 if self.vel != 0.0 else 0)
        self.put("present_current", round(abs(self.load) * 0.4))

    def read(self, address: int, count: int) -> bytes | None:
        if count < 1 or address + count > MEM_BYTES:
            return None
        self.refresh()
        return bytes(self.mem[address : address + count])

    def write(self, address: int, data: bytes) -> bool:
        """Apply a WRITE; returns True when EEPROM was changed and must be kept (``lock`` = 0)."""
        if address + len(data) > MEM_BYTES:
            return False
        before_torque = self.mem[40]
        eeprom = False
        writable = _writable_bytes(self.series)
        for i, byte in enumerate(data):
            a = address + i
            if a in writable:
                self.mem[a] = byte
                eeprom |= a < EEPROM_END
        self._ctl = None
        if address <= 40 < address + len(data):
            eeprom |= self._torque_written(before_torque)
        if eeprom and self.get("lock") == 0:
            self.saved_eeprom = bytes(self.mem[:EEPROM_END])
            return True
        return False

    def _torque_written(self, before: int) -> bool:
        value = self.mem[40]
        self.overloaded = False
        self.hot_cut = False
        self.over_s = 0.0
        if value == 128:  # "make the present position read 2048": sets the homing offset
            self.mem[40] = before
            if "homing_offset" not in self.series.registers:
                return False
            offset = max(-2047, min(2047, round(self.raw) - self.res // 2))
            self.put("homing_offset", offset)
            self.put("goal_position", self.present_steps())
            return True
        self.mem[40] = 1 if value else 0
        if not value:
            self.vel = 0.0
        return False

    # --- motion ---

    def _control(self):
        if self._ctl is None:
            lo, hi = self.get("min_angle_limit"), self.get("max_angle_limit")
            goal = self.get("goal_position")
            if lo or hi:
                goal = min(max(goal, lo), hi)
            target = float(goal)  # in the servo's frame (present = actual - offset), like the goal
            speed = self.get("goal_speed")
            vmax = min(abs(speed), self.opts.speed_steps_s) if speed else self.opts.speed_steps_s
            acc = self.get("acceleration")
            amax = acc * 100.0 if acc else self.opts.accel_steps_s2
            cap = self.get("torque_limit")
            if self.overloaded and self.get("unloading_condition") & 0x20:
                cap = min(cap, 10 * self.get("protective_torque"))
            self._ctl = (target, max(vmax, 1e-9), max(amax, 1e-9), float(cap))
        return self._ctl

    def _bounds(self) -> tuple[float, float]:
        """How far the servo can turn either way from where it is, in its own frame: a jam holds it, mechanical
        stops (encoder steps, so they turn with the encoder, not with the offset) end it; nothing else does."""
        c = self.corrected()
        if self.jammed:
            return c, c
        lo, hi = -math.inf, math.inf
        if self.stops is not None:
            lo, hi = c - (self.raw - self.stops[0]), c + (self.stops[1] - self.raw)
        if self.contact is not None:  # the part stops the jaws closing, not opening
            at, closing = self.contact
            lo, hi = (lo, min(hi, max(at, c))) if closing > 0 else (max(lo, min(at, c)), hi)
        return lo, hi

    def _blocked(self, target: float) -> bool:
        lo, hi = self._bounds()
        c = self.corrected()
        return (target > c and c >= hi) or (target < c and c <= lo)

    def _at_rest(self) -> bool:
        if not self.drives:
            return True
        target = self._control()[0]
        return self.vel == 0.0 and (self.corrected() == target or self._blocked(target))

    def update_load(self) -> None:
        """The load: what holds the arm (``gravity``) plus, blocked short of the goal (a stop, a jam, a part in the
        jaws), a push growing with the position error, or friction while moving; at most the torque limit."""
        if not self.drives:
            self.load = 0.0
            return
        target, _, _, cap = self._control()
        if self.vel == 0.0 and self._blocked(target):
            err = target - self.corrected()
            push = math.copysign(LOAD_PER_STEP * abs(err), err)
        elif self.vel != 0.0:
            push = math.copysign(MOVING_LOAD, self.vel)
        else:
            push = 0.0
        self.load = max(-cap, min(cap, self.gravity + push))

    def _heat_and_protect(self, dt: float) -> None:
        steady = self.opts.temp_c + HEAT_C * abs(self.load) / 1000.0
        self.temp_c = steady + (self.temp_c - steady) * math.exp(-dt / HEAT_TAU_S)
        if self.drives and self.temp_c > self.get("max_temperature") and self.get("unloading_condition") & 0x04:
            self.hot_cut = True  # Feetech: over the temperature limit the output is disabled (until torque is written)
            self.vel = self.load = 0.0
        if self.drives and abs(self.load) >= 10 * self.get("overload_torque", 80):
            self.over_s += dt
            if not self.overloaded and self.over_s >= self.get("protection_time") * 0.01 - 1e-9:
                self.overloaded = True
                self._ctl = None
        else:
            self.over_s = 0.0

    def _trip_in_s(self) -> float:
        if self.overloaded or not self.drives or abs(self.load) < 10 * self.get("overload_torque", 80):
            return math.inf
        return max(0.0, self.get("protection_time") * 0.01 - self.over_s)

    def _step(self, dt: float) -> None:
        # The position loop works in the servo's own frame: the error is goal - present, a plain difference
        # (an absolute position servo), so it turns through the inside of 0..4095 of that frame, never across
        # its 0/4095 (where the encoder reads the homing offset); the encoder's own 0/4095 plays no part.
        target, vmax, amax, _ = self._control()
        lo, hi = self._bounds()
        c = self.corrected()
        err = target - c
        want = math.copysign(min(vmax, math.sqrt(2.0 * amax * abs(err))), err) if err else 0.0
        self.vel += max(-amax * dt, min(amax * dt, want - self.vel))
        move = self.vel * dt
        if (err > 0 and move >= err) or (err < 0 and move <= err) or (err == 0 and abs(self.vel) <= amax * dt):
            c, self.vel = target, 0.0
        else:
            c += move
        if c < lo or c > hi:
            c = min(max(c, lo), hi)
            self.vel = 0.0
        self._set_corrected(c)

    def advance(self, t: float) -> None:
        """Run the servo up to simulated time ``t``."""
        while self.t < t:
            if self._at_rest():
                self.update_load()
                seg = min(t - self.t, self._trip_in_s())
                self._heat_and_protect(seg)
                self.t = t if seg >= t - self.t else self.t + seg
                continue
            dt = min(STEP_S, t - self.t)
            self._step(dt)
            self.update_load()
            self._heat_and_protect(dt)
            self.t += dt
        self.t = max(self.t, t)
        if self.hand is not None and not self.torque_on and not self.jammed:
            self._follow_hand(t)

    def _follow_hand(self, t: float) -> None:
        """Torque off: the servo is where the hand (``hand`` option) holds it at ``t``, turning as fast as it."""
        held = hand_at(self.hand, t)
        if held is None:
            return
        raw, speed = held
        lo, hi = self._bounds()
        self.raw = min(max(raw, lo), hi)
        self.vel = speed if lo < self.raw < hi else 0.0
        self._ctl = None

    def turn_by_hand(self, present_steps: float) -> bool:
        """Turn the horn so the servo reads ``present_steps``; False (nothing moves) with torque on or jammed."""
        if self.torque_on or self.jammed:
            return False
        raw = (present_steps + self.offset()) % self.res
        lo, hi = self._bounds()
        self.raw = min(max(raw, lo), hi)
        self._ctl = None
        return True

    def power_cycle(self) -> None:
        """Power off and on: EEPROM as last kept (writes made with ``lock`` = 1 are lost), SRAM reset."""
        self.mem[:EEPROM_END] = self.saved_eeprom
        self._power_on_sram()


_WRITABLE: dict[str, frozenset[int]] = {}


def _writable_bytes(series: Series) -> frozenset[int]:
    if series.name not in _WRITABLE:
        _WRITABLE[series.name] = frozenset(
            a for r in series.registers.values() if r.writable for a in range(r.address, r.address + r.size)
        )
    return _WRITABLE[series.name]
