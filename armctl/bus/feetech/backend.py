"""Backend for Feetech STS/SCS serial bus servos (the SO-100/SO-101 arms) on one half-duplex line.

Everything a bus of servos that report where they are does alike (host-timed 20 ms frames of SYNC_WRITE goals and
SYNC_READ positions, no jump at start, the stall stop, the servos' faults, load and temperature limits, the gripper
closing until contact, homing offsets and position limits read from the EEPROM) is ``armctl.bus.busservo``'s; here
is what Feetech servos do their own way: Min/Max_Angle_Limit, goal time and goal speed 0 for the servo's own top
speed, Torque_Limit for the gripper's cap (STS; SCS servos have none), Present_Load in 0.1 % of stall torque, and a
homing offset written between Lock 0 and Lock 1 (Present_Position = actual - Homing_Offset).
"""

from __future__ import annotations

from armctl.bus.busservo import LOST_FRAMES, RETRIES, STALL_DEG, STALL_MOVE_DEG, STALL_S, BusServoBackend
from armctl.bus.feetech.client import DEFAULT_BAUD, MODEL_NAMES, FeetechBus
from armctl.bus.watch import WATCH_REGISTERS

__all__ = ["LOST_FRAMES", "STALL_DEG", "STALL_MOVE_DEG", "STALL_S", "FeetechBackend"]


class FeetechBackend(BusServoBackend):
    """Feetech bus servos on ``port`` (a device path at 1 Mbaud, or ``feetechsim://``)."""

    name = "feetech"
    simulator = "feetechsim"
    limit_registers = ("min_angle_limit", "max_angle_limit")
    watch_registers = WATCH_REGISTERS
    offset_sign = 1  # Present_Position = actual - Homing_Offset
    offset_limit = 2047
    model_names = MODEL_NAMES

    def _make_bus(self, port: str, baudrate: int | None) -> FeetechBus:
        return FeetechBus(port, baudrate=baudrate or DEFAULT_BAUD, retries=RETRIES)

    def _no_cap_why(self, servo_id: int) -> str:
        if self.bus.has_register("torque_limit"):
            return ""
        return f"{self.bus.series.name.upper()} servos have no torque limit register"

    def _cap_gripper(self, servo_id: int, cap_pct: float) -> None:
        self.bus.write(servo_id, "torque_limit", round(cap_pct * 10))  # 0.1 % of stall torque, RAM

    def _full_speed(self, servo_id: int) -> None:
        self.bus.write_many(servo_id, {"goal_time": 0, "goal_speed": 0})  # 0: the servo's own maximum

    def _set_speed(self, servo_id: int, steps_s: int) -> None:
        self.bus.write(servo_id, "goal_speed", steps_s)

    def _write_offset(self, servo_id: int, offset: int) -> None:
        """The homing offset, in the EEPROM unlocked for the write and locked again after."""
        self.bus.write(servo_id, "lock", 0)
        self.bus.write(servo_id, "homing_offset", offset)
        self.bus.write(servo_id, "lock", 1)
