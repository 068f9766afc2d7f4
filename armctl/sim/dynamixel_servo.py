"""One simulated Dynamixel X-series servo (``DxlServo``): its control table and its motion, for
``dynamixelsim.DynamixelSim`` (whose module note says what is modelled).

The rules are the e-manual's: the EEPROM area (addresses below 64) is written only with torque off (else the
access error); a write must cover whole registers (data length error), stay in each register's range (data
range error) and, for goals, within the limits (data limit error: goal position within the position limits in
position mode, goal velocity within the velocity limit, goal current within the current limit); read-only or
undefined addresses refuse writes (access error). Present position = shaft + homing offset, multi-turn.
"""

from __future__ import annotations

import math

from armctl.bus.dynamixel.protocol import (
    ACCESS_ERROR,
    BAUD_RATES,
    CURRENT_POSITION_MODE,
    DATA_LENGTH_ERROR,
    DATA_LIMIT_ERROR,
    DATA_RANGE_ERROR,
    DRIVE_REVERSE,
    DRIVE_TIME_BASED_PROFILE,
    EEPROM_END,
    EXTENDED_POSITION_MODE,
    HW_INPUT_VOLTAGE,
    HW_OVERHEATING,
    HW_OVERLOAD,
    POSITION_MODE,
    RPM2_PER_ACCELERATION_UNIT,
    RPM_PER_VELOCITY_UNIT,
    STEPS_PER_TURN,
    VELOCITY_MODE,
    Model,
    Register,
)
from armctl.sim.feetech_servo import hand_at

MEM_BYTES = 662  # addresses 0..661 (the indirect data of the 430/540 series end at 661)
STEP_S = 0.001  # motion integration step while a servo moves
STEPS_S_PER_VELOCITY_UNIT = RPM_PER_VELOCITY_UNIT * STEPS_PER_TURN / 60.0
STEPS_S2_PER_ACCEL_UNIT = RPM2_PER_ACCELERATION_UNIT * STEPS_PER_TURN / 3600.0
PUSH_PER_STEP = 0.02  # load (fraction of the current limit) per step of position error when pushing on a stop
MOVING_LOAD = 0.04  # load while moving freely (friction)
HEAT_C = 45.0  # temperature rise at full load, steady state
HEAT_TAU_S = 60.0  # thermal time constant
OVERLOAD_S = 1.0  # above OVERLOAD_FRACTION of the limit this long: the overload error
OVERLOAD_FRACTION = 0.9


class DxlServo:
    """One simulated servo (see the module note); ``opts``: the bus's ``DynamixelSimOptions``."""

    def __init__(self, model: Model, servo_id: int, raw_steps: float, opts, eeprom: bytes | None = None):
        self.model = model
        self.opts = opts
        self.mem = bytearray(MEM_BYTES)
        for reg in model.registers.values():
            if reg.default is not None:
                self.put(reg.name, reg.default)
        self.put("id", servo_id)
        self.put("baud_rate", next(k for k, v in BAUD_RATES.items() if v == opts.baud))
        if eeprom is not None:
            self.mem[:EEPROM_END] = bytes(eeprom)[:EEPROM_END]
        self.saved_eeprom = bytes(self.mem[:EEPROM_END])
        self.raw = float(raw_steps)  # the shaft, steps (multi-turn: not wrapped)
        self.vel = 0.0  # steps/s
        self.t = 0.0
        self.load = 0.0  # fraction of full output (current limit), signed
        self.temp_c = opts.temp_c
        self.hw_errors = 0  # hardware_error_status bits
        self.over_s = 0.0
        self.stops: tuple[float, float] | None = None  # mechanical stops, shaft steps
        self.jammed = False
        self.hand: tuple[list[float], list[float]] | None = None
        self.pending: tuple[int, bytes] | None = None  # REG_WRITE, applied at ACTION
        self.restart_pending = False  # a factory reset restarts the servo once it has answered
        self._profile: tuple[float, float] | None = None  # a time-based profile's (vmax, amax)
        self.power_on_ram()

    # --- memory ---

    def power_on_ram(self) -> None:
        """The RAM area as at power-on (and after a reboot): defaults, torque off, goal where the servo stands."""
        for reg in self.model.registers.values():
            if reg.address >= EEPROM_END and reg.writable:
                self.put(reg.name, reg.default or 0)
        self.hw_errors = 0
        self.over_s = 0.0
        self.vel = 0.0
        self.pending = None
        self.put("goal_position", self.present_steps())
        self._reset_goals()

    def _reset_goals(self) -> None:
        """What changing the operating mode resets (e-manual): profiles 0, goal PWM/current at their limits."""
        self.put("profile_velocity", 0)
        self.put("profile_acceleration", 0)
        self.put("goal_pwm", self.get("pwm_limit"))
        if "goal_current" in self.model.registers:
            self.put("goal_current", self.get("current_limit"))
        self.put("goal_velocity", 0)
        self._profile = None

    def get(self, name: str, default: int = 0) -> int:
        """A register's value (``default`` if this model has no such register)."""
        reg = self.model.registers.get(name)
        if reg is None:
            return default
        return self.model.decode(reg, self.mem[reg.address : reg.address + reg.size])

    def put(self, name: str, value: int) -> None:
        """Set a register directly (no checks, no side effects; read-only registers too)."""
        reg = self.model.registers.get(name)
        if reg is not None:
            raw = int(value) & ((1 << (8 * reg.size)) - 1)
            self.mem[reg.address : reg.address + reg.size] = raw.to_bytes(reg.size, "little")

    @property
    def id(self) -> int:
        return self.mem[7]

    @property
    def baud(self) -> int:
        return BAUD_RATES.get(self.mem[8], -1)

    @property
    def torque_on(self) -> bool:
        return self.mem[64] != 0

    @property
    def mode(self) -> int:
        return self.mem[11]

    @property
    def sign(self) -> int:
        """-1 in reverse mode (drive mode bit 0): positions, velocities and currents read mirrored."""
        return -1 if self.mem[10] & DRIVE_REVERSE else 1

    def present_steps(self) -> int:
        """Present position: the shaft (mirrored in reverse mode) plus the homing offset, multi-turn."""
        return round(self.sign * self.raw) + self.get("homing_offset")

    def _shaft(self, present: float) -> float:
        return (present - self.get("homing_offset")) * self.sign

    def volts(self) -> float:
        """The supply (the ``volts`` option, else the model's recommended one)."""
        return self.model.recommended_v if self.opts.volts is None else self.opts.volts

    def error_byte(self) -> int:
        """The status packet's alert bit: set while a hardware error stands."""
        return 0x80 if self.hw_errors else 0

    def refresh(self) -> None:
        """Copy the modelled state into the present-value registers."""
        self.put("present_position", self.present_steps())
        velocity = round(self.sign * self.vel / STEPS_S_PER_VELOCITY_UNIT)
        self.put("present_velocity", velocity)
        self.put("velocity_trajectory", velocity)
        self.put("position_trajectory", self.get("goal_position"))
        if self.model.current_ma is not None:
            self.put("present_current", round(self.sign * self.load * self.get("current_limit")))
        else:
            self.put("present_load", round(self.sign * self.load * 1000))
        self.put("present_pwm", round(self.sign * self.load * self.get("pwm_limit")))
        self.put("present_input_voltage", round(self.volts() * 10))
        self.put("present_temperature", round(self.temp_c))
        self.put("hardware_error_status", self.hw_errors)
        self.put("registered_instruction", 1 if self.pending else 0)
        self.put("moving", 1 if self.vel else 0)
        self.put("moving_status", (0 if self.vel else 1) | (2 if self.vel else 0))
        self.put("realtime_tick", round(self.t * 1000) % 32768)

    def read(self, address: int, count: int) -> bytes | int:
        """The bytes at ``address``, or an error number (a read past the table's end: access error)."""
        if count < 1 or address + count > MEM_BYTES:
            return ACCESS_ERROR
        self.refresh()
        return bytes(self.mem[address : address + count])

    # --- writes ---

    def check_write(self, address: int, data: bytes) -> int:
        """The error number a WRITE of ``data`` at ``address`` earns (0: it may be applied)."""
        end = address + len(data)
        if not data or end > MEM_BYTES:
            return ACCESS_ERROR
        covered = [r for r in self.model.registers.values() if r.address < end and address < r.address + r.size]
        if sum(r.size for r in covered) != len(data):
            undefined = any(not any(r.address <= a < r.address + r.size for r in covered) for a in range(address, end))
            return ACCESS_ERROR if undefined else DATA_LENGTH_ERROR
        for reg in covered:
            if reg.address < address or reg.address + reg.size > end:
                return DATA_LENGTH_ERROR
            if not reg.writable or (reg.eeprom and self.torque_on):
                return ACCESS_ERROR
            value = self.model.decode(reg, data[reg.address - address : reg.address - address + reg.size])
            if reg.minimum is not None and not reg.minimum <= value <= reg.maximum:
                return DATA_RANGE_ERROR
            if self._over_limit(reg, value, address, data):
                return DATA_LIMIT_ERROR
        return 0

    def _over_limit(self, reg: Register, value: int, address: int, data: bytes) -> bool:
        if reg.name == "goal_position" and self.mode == POSITION_MODE:
            return not self.get("min_position_limit") <= value <= self.get("max_position_limit")
        limit = {"goal_velocity": "velocity_limit", "goal_current": "current_limit", "goal_pwm": "pwm_limit"}
        if reg.name in limit:
            return abs(value) > self.get(limit[reg.name])
        if reg.name == "profile_velocity" and not self.mem[10] & DRIVE_TIME_BASED_PROFILE:
            return value > self.get("velocity_limit")
        if reg.name == "operating_mode":
            return value not in self.model.modes
        return False

    def write(self, address: int, data: bytes) -> tuple[int, bool]:
        """Apply a WRITE: (error number, whether EEPROM changed and must be kept)."""
        error = self.check_write(address, data)
        if error:
            return error, False
        torque_before, mode_before = self.mem[64], self.mode
        self.mem[address : address + len(data)] = data
        if self.mem[64] and not torque_before:
            self._torque_on()
        if address <= 116 < address + len(data) or address <= 108 < address + len(data):
            self._plan_profile()
        if self.mode != mode_before:
            self._reset_goals()
        if not self.mem[64]:
            self.vel = 0.0
        eeprom = address < EEPROM_END
        if eeprom:
            self.saved_eeprom = bytes(self.mem[:EEPROM_END])
        return 0, eeprom

    def _torque_on(self) -> None:
        if self.hw_errors & self.get("shutdown"):  # shut down: only a reboot clears it
            self.mem[64] = 0
            return
        self.over_s = 0.0

    def _plan_profile(self) -> None:
        """A time-based profile (drive mode bit 2): profile velocity is the move's time, profile acceleration the
        time to reach speed (ms); the speed and acceleration follow from the distance."""
        self._profile = None
        if not self.mem[10] & DRIVE_TIME_BASED_PROFILE:
            return
        total, ramp = self.get("profile_velocity") / 1000.0, self.get("profile_acceleration") / 1000.0
        distance = abs(self._target() - self.raw)
        if total <= 0 or distance == 0:
            return
        ramp = min(ramp, total / 2)
        vmax = distance / max(total - ramp, 1e-6)
        self._profile = (vmax, vmax / ramp if ramp > 0 else math.inf)

    # --- motion ---

    def _target(self) -> float:
        """The shaft position the position loop aims at (position modes)."""
        goal = self.get("goal_position")
        if self.mode == POSITION_MODE:
            goal = min(max(goal, self.get("min_position_limit")), self.get("max_position_limit"))
        return self._shaft(goal)

    def _limits(self) -> tuple[float, float]:
        """(top speed step/s, acceleration step/s^2) from the profile registers (0: the ``speed``/``accel`` options)."""
        if self._profile is not None:
            return self._profile
        cap = self.get("velocity_limit") * STEPS_S_PER_VELOCITY_UNIT or self.opts.speed_steps_s
        pv, pa = self.get("profile_velocity"), self.get("profile_acceleration")
        vmax = min(pv * STEPS_S_PER_VELOCITY_UNIT, cap) if pv else min(self.opts.speed_steps_s, cap)
        amax = pa * STEPS_S2_PER_ACCEL_UNIT if pa else self.opts.accel_steps_s2
        return max(vmax, 1e-9), max(amax, 1e-9)

    def _want_velocity(self) -> float:
        vmax, amax = self._limits()
        if self.mode == VELOCITY_MODE:
            return self.sign * self.get("goal_velocity") * STEPS_S_PER_VELOCITY_UNIT
        if self.mode in (POSITION_MODE, EXTENDED_POSITION_MODE, CURRENT_POSITION_MODE):
            err = self._target() - self.raw
            return math.copysign(min(vmax, math.sqrt(2.0 * amax * abs(err))), err) if err else 0.0
        return 0.0  # current and PWM control: not modelled, the servo holds still

    def _cap(self) -> float:
        """The largest load (fraction of the current limit) the servo gives: less in current-based position mode."""
        if self.mode == CURRENT_POSITION_MODE and self.get("current_limit"):
            return min(1.0, abs(self.get("goal_current")) / self.get("current_limit"))
        return 1.0

    def _bounds(self) -> tuple[float, float]:
        if self.jammed:
            return self.raw, self.raw
        return self.stops if self.stops is not None else (-math.inf, math.inf)

    def _at_rest(self) -> bool:
        if not self.torque_on:
            return True
        want = self._want_velocity()
        lo, hi = self._bounds()
        blocked = (want > 0 and self.raw >= hi) or (want < 0 and self.raw <= lo)
        return self.vel == 0.0 and (want == 0.0 or blocked)

    def _step(self, dt: float) -> None:
        _, amax = self._limits()
        want = self._want_velocity()
        self.vel += max(-amax * dt, min(amax * dt, want - self.vel))
        move = self.vel * dt
        if self.mode != VELOCITY_MODE:
            err = self._target() - self.raw
            if (err > 0 and move >= err) or (err < 0 and move <= err) or (err == 0 and abs(self.vel) <= amax * dt):
                self.raw, self.vel, move = self._target(), 0.0, 0.0
        lo, hi = self._bounds()
        self.raw = min(max(self.raw + move, lo), hi)
        if self.raw in (lo, hi):
            self.vel = 0.0

    def _update_load(self) -> None:
        if not self.torque_on:
            self.load = 0.0
            return
        lo, hi = self._bounds()
        err = (self._target() - self.raw) if self.mode != VELOCITY_MODE else self._want_velocity() / 10.0
        blocked = (err > 0 and self.raw >= hi) or (err < 0 and self.raw <= lo)
        push = math.copysign(PUSH_PER_STEP * abs(err), err) if blocked and err else 0.0
        if self.vel:
            push = math.copysign(MOVING_LOAD, self.vel)
        cap = self._cap()
        self.load = max(-cap, min(cap, push))

    def _protect(self, dt: float) -> None:
        """Heat, overload and supply: set hardware error bits; those in ``shutdown`` turn the torque off."""
        steady = self.opts.temp_c + HEAT_C * abs(self.load)
        self.temp_c = steady + (self.temp_c - steady) * math.exp(-dt / HEAT_TAU_S)
        if self.temp_c > self.get("temperature_limit"):
            self.hw_errors |= HW_OVERHEATING
        if not self.get("min_voltage_limit") <= round(self.volts() * 10) <= self.get("max_voltage_limit"):
            self.hw_errors |= HW_INPUT_VOLTAGE
        if self.torque_on and abs(self.load) >= OVERLOAD_FRACTION * self._cap() and self.mode != CURRENT_POSITION_MODE:
            self.over_s += dt
            if self.over_s >= OVERLOAD_S - 1e-9:
                self.hw_errors |= HW_OVERLOAD
        else:
            self.over_s = 0.0
        if self.hw_errors & self.get("shutdown") and self.torque_on:
            self.mem[64] = 0
            self.vel = self.load = 0.0

    def advance(self, t: float) -> None:
        """Run the servo up to simulated time ``t``."""
        while self.t < t:
            dt = min(STEP_S, t - self.t) if not self._at_rest() else t - self.t
            if self.torque_on and not self._at_rest():
                self._step(dt)
            self._update_load()
            if self.torque_on and abs(self.load) >= OVERLOAD_FRACTION * self._cap():
                dt = min(dt, max(STEP_S, OVERLOAD_S - self.over_s))
            self._protect(dt)
            self.t += dt
        if self.hand is not None and not self.torque_on and not self.jammed:
            held = hand_at(self.hand, t)
            if held is not None:
                self.raw, self.vel = self._shaft(held[0]), held[1] * self.sign
        self.t = max(self.t, t)

    def turn_by_hand(self, present_steps: float) -> bool:
        """Turn the horn so the servo reads ``present_steps``; False (nothing moves) with torque on or jammed."""
        if self.torque_on or self.jammed:
            return False
        lo, hi = self._bounds()
        self.raw = min(max(self._shaft(present_steps), lo), hi)
        return True

    def reboot(self) -> None:
        """REBOOT (and power cycle): hardware errors cleared, RAM back to its defaults, the position within a
        turn again (the multi-turn count is lost)."""
        self.mem[:EEPROM_END] = self.saved_eeprom
        self.raw = self.raw % STEPS_PER_TURN
        self.power_on_ram()
