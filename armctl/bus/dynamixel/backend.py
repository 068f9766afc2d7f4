"""Backend for ROBOTIS Dynamixel X-series bus servos (Protocol 2.0: the Koch arm, OpenManipulator-X): ``--backend
dynamixel``.

Everything a bus of servos that report where they are does alike (host-timed 20 ms frames of SYNC_WRITE goals and
SYNC_READ positions, no jump at start, the stall stop, the servos' faults, load and temperature limits, the gripper
closing until contact, homing offsets and position limits read from the EEPROM and never written unless asked) is
``armctl.bus.busservo``'s; here is what Dynamixel servos do their own way:

- the baud rate: the servos are looked for at 1 000 000 (LeRobot's arms) then at the factory's 57 600;
- each servo's model comes from its ping, and its own control table reads it (a bus may mix XL430 and XL330);
- Min/Max_Position_Limit bind only in position mode (Operating_Mode 3); in extended position (4, LeRobot's Koch
  joints) and current-based position (5, its gripper) they do not, so nothing is clamped to them;
- Homing_Offset counts the other way round from Feetech's: Present_Position = actual + Homing_Offset; it is in the
  EEPROM, written (only when asked: ``add_homing_offsets``) with the servo's torque off, as the servo demands;
- the load watched is Present_Current over the servo's Current_Limit (Present_Load, 0.1 %, on the XL430/XC430,
  which sense no current); voltage and temperature are Present_Input_Voltage and Present_Temperature;
- a gripper closing until contact in current-based position mode (Operating_Mode 5, on models that have it) has
  its current capped by Goal_Current (RAM); in position mode there is no cap (a note says so: armctl does not
  change the operating mode, an EEPROM register);
- profile velocity and acceleration 0 (the servo's own top speed) for joints the host times frame by frame, the
  profile velocity as a held servo's speed;
- a servo's hardware alert (overload, overheating, voltage: the status packet's alert bit) stops the arm with a line
  naming the servo and the error; the servo keeps its torque off until it is rebooted (``DynamixelBus.reboot``).
"""

from __future__ import annotations

import math

from armctl.bus.busservo import RETRIES, BusServoBackend
from armctl.bus.dynamixel.client import STEPS_S_PER_VELOCITY_UNIT, DynamixelBus
from armctl.bus.dynamixel.protocol import CURRENT_POSITION_MODE, MODEL_NUMBERS, OPERATING_MODES, POSITION_MODE
from armctl.bus.servobus import ServoNoReply
from armctl.errors import LinkError

#: the baud rates the servos are looked for at, in this order: LeRobot's arms', then the factory's
BAUDS = (1_000_000, 57_600)
FIND_TIMEOUT_S = 0.02  # a first ping at each baud rate


class DynamixelBackend(BusServoBackend):
    """Dynamixel X-series bus servos on ``port`` (a device path, or ``dynamixelsim://``)."""

    name = "dynamixel"
    simulator = "dynamixelsim"
    limit_registers = ("min_position_limit", "max_position_limit")
    eeprom_extra = ("operating_mode",)
    watch_registers = ("present_current", "present_velocity", "present_position", "present_input_voltage",
                       "present_temperature")  # fmt: skip
    offset_sign = -1  # Present_Position = actual + Homing_Offset
    offset_limit = 1_044_479
    model_names = {n: m.name for n, m in MODEL_NUMBERS.items()}

    def _make_bus(self, port: str, baudrate: int | None) -> DynamixelBus:
        self.baudrate = baudrate  #: None: found at open (``BAUDS``)
        return DynamixelBus(port, baudrate=baudrate or BAUDS[0], retries=RETRIES)

    def _open_bus(self) -> None:
        """Open the bus at the servos' baud rate: the one given, else the first of ``BAUDS`` the first servo answers
        a ping at (LinkError naming the port and the rates tried if none)."""
        self.bus.open()
        if self.baudrate is not None or not self.ids:
            return
        first = self.ids[0]
        saved = self.bus.timeout_s, self.bus.retries
        try:
            for baud in BAUDS:
                self.bus.baudrate, self.bus.byte_s = baud, 10.0 / baud
                self.bus.serial.baudrate = baud
                self.bus.timeout_s, self.bus.retries = FIND_TIMEOUT_S, 1
                try:
                    self.bus.ping(first)
                    return
                except ServoNoReply:
                    continue
        finally:
            self.bus.timeout_s, self.bus.retries = saved
        rates = " nor ".join(str(b) for b in BAUDS)
        raise LinkError(
            f"{self.port}: no Dynamixel servo {first} answers at {rates} baud (Protocol 2.0): check its id, power and "
            "cable, and its baud rate (armctl servos scan finds it)"
        )

    def _limits_of(self, servo_id: int, got: dict[str, int]) -> tuple[int, int]:
        if got.get("operating_mode") != POSITION_MODE:  # extended / current-based position: no limits bind
            return (0, 0)
        return got["min_position_limit"], got["max_position_limit"]

    def _load_of(self, servo_id: int, state: dict[str, int]) -> float | None:
        return self.bus.load_fraction(servo_id, state)

    def _no_cap_why(self, servo_id: int) -> str:
        model = self.bus.model_of(servo_id)
        if not model.has_current_position_mode:
            return f"the {model.name.upper()} has no current-based position mode"
        mode = self.eeprom.get(servo_id, {}).get("operating_mode")
        if mode != CURRENT_POSITION_MODE:
            return (
                f"it runs in {OPERATING_MODES.get(mode, mode)} mode (Operating_Mode {mode}), not current-based "
                f"position ({CURRENT_POSITION_MODE}, as LeRobot sets a Koch gripper), which caps its current"
            )
        return ""

    def _cap_gripper(self, servo_id: int, cap_pct: float) -> None:
        limit = self.bus.current_limit(servo_id)
        self.bus.write(servo_id, "goal_current", max(1, round(cap_pct / 100.0 * limit)))  # RAM

    def _full_speed(self, servo_id: int) -> None:
        # 0: no profile, the servo's top speed and acceleration (the host times every frame)
        self.bus.write_many(servo_id, {"profile_acceleration": 0, "profile_velocity": 0})

    def _set_speed(self, servo_id: int, steps_s: int) -> None:
        self.bus.write(servo_id, "profile_velocity", max(1, math.ceil(steps_s / STEPS_S_PER_VELOCITY_UNIT)))

    def _write_offset(self, servo_id: int, offset: int) -> None:
        """The homing offset, in the EEPROM, which the servo writes only with its torque off."""
        if self.torque.get(servo_id):
            self.bus.set_torque([servo_id], False)
            self.torque[servo_id] = False
            self.goal[servo_id] = None
        self.bus.write(servo_id, "homing_offset", offset)
