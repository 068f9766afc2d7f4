"""The X series' control tables (ROBOTIS e-manual, one page per model): addresses, sizes, access, ranges,
defaults and units, and the units, operating modes and baud rates they share. ``protocol`` re-exports them.

Sources: the e-manual's pages for XL330-M077, XL330-M288, XL430-W250, XC430-W150, XM430-W350 and XM540-W270
(emanual.robotis.com/docs/en/dxl/x/<model>/, "Control Table of EEPROM Area" / "of RAM Area").
"""

from __future__ import annotations

import operator
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property

from armctl.errors import BadInputError

MAX_ID = 0xFC

# --- units, modes, baud rates -----------------------------------------------------------------------

#: Baud rates by the value of ``baud_rate`` (8); the XL330 stops at 6 (4 Mbps).
BAUD_RATES = {0: 9_600, 1: 57_600, 2: 115_200, 3: 1_000_000, 4: 2_000_000, 5: 3_000_000, 6: 4_000_000, 7: 4_500_000}

CURRENT_MODE, VELOCITY_MODE, POSITION_MODE, EXTENDED_POSITION_MODE, CURRENT_POSITION_MODE, PWM_MODE = 0, 1, 3, 4, 5, 16
#: ``operating_mode`` (11) values
OPERATING_MODES = {
    CURRENT_MODE: "current",
    VELOCITY_MODE: "velocity",
    POSITION_MODE: "position",
    EXTENDED_POSITION_MODE: "extended position",
    CURRENT_POSITION_MODE: "current-based position",
    PWM_MODE: "pwm",
}

STEPS_PER_TURN = 4096  # 0.088 degree a step
DEGREES_PER_STEP = 360 / STEPS_PER_TURN
RPM_PER_VELOCITY_UNIT = 0.229
RPM2_PER_ACCELERATION_UNIT = 214.577  # rev/min^2 per profile_acceleration unit
VOLTS_PER_UNIT = 0.1
PWM_PERCENT_PER_UNIT = 0.113
#: ``drive_mode`` (10) bits
DRIVE_REVERSE, DRIVE_TIME_BASED_PROFILE, DRIVE_TORQUE_ON_BY_GOAL = 0x01, 0x04, 0x08


def to_signed(raw: int, size: int) -> int:
    """The two's complement value of ``size`` bytes."""
    bits = 8 * size
    return raw - (1 << bits) if raw & (1 << (bits - 1)) else raw


def from_signed(value: int, size: int) -> int:
    """``value`` as ``size`` bytes' two's complement (unsigned integer)."""
    return value & ((1 << (8 * size)) - 1)


# --- control tables ---------------------------------------------------------------------------------

EEPROM_END = 64  # addresses below are the EEPROM area: writable only with torque off


@dataclass(frozen=True)
class Register:
    """One entry of a control table: address, size (bytes), access, range and unit as the e-manual gives them.

    ``default``: the factory value (None: set at run time). ``minimum``/``maximum``: the range a write must
    respect (the servo answers a data limit error otherwise); None where the range depends on other
    registers (goal position within the position limits, goal velocity within the velocity limit...).
    """

    name: str
    address: int
    size: int
    writable: bool = True
    signed: bool = False
    default: int | None = 0
    minimum: int | None = None
    maximum: int | None = None
    unit: str = ""

    @property
    def eeprom(self) -> bool:
        return self.address < EEPROM_END

    @property
    def bounds(self) -> tuple[int, int]:
        """What the register's bytes can hold (signed or not)."""
        bits = 8 * self.size
        return (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if self.signed else (0, (1 << bits) - 1)


R = Register


def _eeprom(p: Mapping[str, int]) -> list[Register]:
    return [
        R("model_number", 0, 2, writable=False, default=p["model_number"]),
        R("model_information", 2, 4, writable=False),
        R("firmware_version", 6, 1, writable=False, default=p["firmware"]),
        R("id", 7, 1, default=1, minimum=0, maximum=MAX_ID),
        R("baud_rate", 8, 1, default=1, minimum=0, maximum=p["max_baud"], unit="index into BAUD_RATES"),
        R("return_delay_time", 9, 1, default=250, minimum=0, maximum=254, unit="2 us"),
        R("drive_mode", 10, 1, minimum=0, maximum=p["max_drive_mode"], unit="bits: 1 reverse, 4 time-based profile"),
        R("operating_mode", 11, 1, default=POSITION_MODE, minimum=0, maximum=16, unit="OPERATING_MODES"),
        R("secondary_id", 12, 1, default=255, minimum=0, maximum=255),
        R("protocol_type", 13, 1, default=2, minimum=1, maximum=22),
        R("homing_offset", 20, 4, signed=True, minimum=-1_044_479, maximum=1_044_479, unit="step"),
        R("moving_threshold", 24, 4, default=p["moving_threshold"], minimum=0, maximum=1023, unit="0.229 rpm"),
        R("temperature_limit", 31, 1, default=p["temperature_limit"], minimum=0, maximum=100, unit="degC"),
        R("max_voltage_limit", 32, 2, default=p["vmax"], minimum=p["vlow"], maximum=p["vhigh"], unit="0.1 V"),
        R("min_voltage_limit", 34, 2, default=p["vmin"], minimum=p["vlow"], maximum=p["vhigh"], unit="0.1 V"),
        R("pwm_limit", 36, 2, default=885, minimum=0, maximum=885, unit="0.113 %"),
        R("velocity_limit", 44, 4, default=p["velocity_limit"], minimum=0, maximum=p["velocity_max"], unit="0.229 rpm"),
        R("max_position_limit", 48, 4, default=4095, minimum=0, maximum=4095, unit="step"),
        R("min_position_limit", 52, 4, default=0, minimum=0, maximum=4095, unit="step"),
        R("shutdown", 63, 1, default=p["shutdown"], minimum=0, maximum=0x3F, unit="HARDWARE_ERROR_BITS"),
    ]


def _gains(p: Mapping[str, int]) -> list[Register]:
    gain = {"minimum": 0, "maximum": 16_383}
    return [
        R("velocity_i_gain", 76, 2, default=p["vel_i"], **gain),
        R("velocity_p_gain", 78, 2, default=p["vel_p"], **gain),
        R("position_d_gain", 80, 2, default=p["pos_d"], **gain),
        R("position_i_gain", 82, 2, default=p["pos_i"], **gain),
        R("position_p_gain", 84, 2, default=p["pos_p"], **gain),
        R("feedforward_2nd_gain", 88, 2, **gain),
        R("feedforward_1st_gain", 90, 2, **gain),
    ]


def _ram(p: Mapping[str, int]) -> list[Register]:
    ro = {"writable": False, "default": None}
    return [
        R("torque_enable", 64, 1, minimum=0, maximum=1),
        R("led", 65, 1, minimum=0, maximum=1),
        R("status_return_level", 68, 1, default=2, minimum=0, maximum=2, unit="0 ping only, 1 +read, 2 all"),
        R("registered_instruction", 69, 1, writable=False),
        R("hardware_error_status", 70, 1, writable=False, unit="HARDWARE_ERROR_BITS"),
        *_gains(p),
        R("bus_watchdog", 98, 1, minimum=0, maximum=127, unit="20 ms"),
        R("goal_pwm", 100, 2, signed=True, default=None, unit="0.113 %"),
        R("goal_velocity", 104, 4, signed=True, default=None, unit="0.229 rpm"),
        R("profile_acceleration", 108, 4, minimum=0, maximum=32_767, unit="214.577 rev/min^2 (time-based: ms)"),
        R("profile_velocity", 112, 4, minimum=0, maximum=32_767, unit="0.229 rpm (time-based: ms)"),
        R("goal_position", 116, 4, signed=True, default=None, unit="step"),
        R("realtime_tick", 120, 2, unit="ms", **ro),
        R("moving", 122, 1, writable=False),
        R("moving_status", 123, 1, writable=False, unit="bits: 1 in position, 2 profile ongoing"),
        R("present_pwm", 124, 2, signed=True, unit="0.113 %", **ro),
        R("present_velocity", 128, 4, signed=True, unit="0.229 rpm", **ro),
        R("present_position", 132, 4, signed=True, unit="step", **ro),
        R("velocity_trajectory", 136, 4, signed=True, unit="0.229 rpm", **ro),
        R("position_trajectory", 140, 4, signed=True, unit="step", **ro),
        R("present_input_voltage", 144, 2, unit="0.1 V", **ro),
        R("present_temperature", 146, 1, unit="degC", **ro),
    ]


@dataclass(frozen=True)
class Model:
    """One X-series model: its number, control table and what it can do.

    ``current_ma``: mA per unit of ``goal_current``/``present_current`` (None: the model has no current
    sensing and reports ``present_load`` in 0.1 % instead). ``modes``: the ``operating_mode`` values it takes.
    """

    name: str
    number: int
    firmware: int
    registers: Mapping[str, Register]
    modes: tuple[int, ...]
    current_ma: float | None
    baud_rates: Mapping[int, int] = field(default_factory=dict)
    recommended_v: float = 12.0  # the e-manual's recommended supply

    @property
    def has_current_position_mode(self) -> bool:
        return CURRENT_POSITION_MODE in self.modes

    def register(self, name: str) -> Register:
        """The register called ``name``; BadInputError listing the known names otherwise."""
        try:
            return self.registers[name]
        except KeyError:
            known = ", ".join(sorted(self.registers))
            raise BadInputError(f"{self.name.upper()} has no register {name!r}; known: {known}") from None

    def at(self, address: int) -> Register | None:
        """The register starting at ``address`` (None if none does)."""
        return self._by_address.get(address)

    @cached_property
    def _by_address(self) -> dict[int, Register]:
        return {r.address: r for r in self.registers.values()}

    def encode(self, reg: Register, value: int) -> bytes:
        """``value`` as the register's bytes (two's complement where signed)."""
        try:
            value = operator.index(value)
        except TypeError:
            if not (isinstance(value, float) and value.is_integer()):
                raise BadInputError(f"register {reg.name}: {value!r} is not an integer") from None
            value = int(value)
        low, high = reg.bounds
        if reg.minimum is not None:
            low, high = reg.minimum, reg.maximum
        if not low <= value <= high:
            raise BadInputError(f"register {reg.name}: {value} is outside {low}..{high}")
        return from_signed(value, reg.size).to_bytes(reg.size, "little")

    def decode(self, reg: Register, data: bytes) -> int:
        """The register's value from its bytes."""
        raw = int.from_bytes(data[: reg.size], "little")
        return to_signed(raw, reg.size) if reg.signed else raw


_COMMON = {"max_drive_mode": 13, "moving_threshold": 10, "shutdown": 52, "max_baud": 7, "velocity_max": 1023}
_X430 = {**_COMMON, "vel_i": 1920, "vel_p": 100, "pos_d": 0, "pos_i": 0, "pos_p": 800}
_XM = {**_X430, "temperature_limit": 80, "vmax": 160, "vmin": 95, "vlow": 95, "vhigh": 160}
_XL330 = {
    **_COMMON,
    "max_drive_mode": 13,
    "max_baud": 6,
    "velocity_max": 2047,
    "temperature_limit": 70,
    "vmax": 70,
    "vmin": 35,
    "vlow": 31,
    "vhigh": 70,
    "shutdown": 53,
    "vel_i": 400,
    "vel_p": 40,
    "pos_d": 0,
    "pos_i": 0,
    "pos_p": 400,
}
ALL_MODES = (CURRENT_MODE, VELOCITY_MODE, POSITION_MODE, EXTENDED_POSITION_MODE, CURRENT_POSITION_MODE, PWM_MODE)
NO_CURRENT_MODES = (VELOCITY_MODE, POSITION_MODE, EXTENDED_POSITION_MODE, PWM_MODE)


def _model(name, number, firmware, p, *, current_ma=None, current_limit=0, extra=(), volts=12.0) -> Model:
    regs = [*_eeprom({**p, "model_number": number, "firmware": firmware}), *_ram(p), *extra]
    if current_ma is not None:
        regs += [
            R("current_limit", 38, 2, default=current_limit, minimum=0, maximum=current_limit, unit=f"{current_ma} mA"),
            R("goal_current", 102, 2, signed=True, default=None, unit=f"{current_ma} mA"),
            R("present_current", 126, 2, signed=True, default=None, writable=False, unit=f"{current_ma} mA"),
        ]
    else:
        regs.append(R("present_load", 126, 2, signed=True, default=None, writable=False, unit="0.1 % of max torque"))
    table = {r.name: r for r in sorted(regs, key=lambda r: r.address)}
    modes = ALL_MODES if current_ma is not None else NO_CURRENT_MODES
    bauds = {k: v for k, v in BAUD_RATES.items() if k <= p["max_baud"]}
    return Model(name, number, firmware, table, modes, current_ma, bauds, volts)


_STARTUP = R("startup_configuration", 60, 1, minimum=0, maximum=3, unit="bits: 1 torque on at boot, 2 RAM restore")
_PWM_SLOPE = R("pwm_slope", 62, 1, default=140, minimum=1, maximum=255, unit="1.977 mV/ms")
_BACKUP = R("backup_ready", 147, 1, writable=False)
_EXT_PORTS = tuple(R(f"external_port_mode_{i}", 55 + i, 1, default=3, minimum=0, maximum=3) for i in (1, 2, 3))

XL330_M077 = _model(
    "xl330-m077",
    1190,
    46,
    {**_XL330, "velocity_limit": 1620},
    current_ma=1.0,
    current_limit=1750,
    extra=(_STARTUP, _PWM_SLOPE, _BACKUP),
    volts=5.0,
)
XL330_M288 = _model(
    "xl330-m288",
    1200,
    46,
    {**_XL330, "velocity_limit": 445},
    current_ma=1.0,
    current_limit=1750,
    extra=(_STARTUP, _PWM_SLOPE, _BACKUP),
    volts=5.0,
)
XL430_W250 = _model(
    "xl430-w250",
    1060,
    46,
    {
        **_COMMON,
        "temperature_limit": 72,
        "vmax": 140,
        "vmin": 60,
        "vlow": 60,
        "vhigh": 140,
        "velocity_limit": 265,
        "vel_i": 1000,
        "vel_p": 100,
        "pos_d": 4000,
        "pos_i": 0,
        "pos_p": 640,
    },
    extra=(_STARTUP, _BACKUP),
    volts=11.1,
)
XC430_W150 = _model(
    "xc430-w150",
    1070,
    46,
    {
        **_X430,
        "max_drive_mode": 5,
        "moving_threshold": 20,
        "temperature_limit": 80,
        "vmax": 160,
        "vmin": 60,
        "vlow": 60,
        "vhigh": 160,
        "velocity_limit": 460,
        "pos_p": 460,
    },
    extra=(_STARTUP, _BACKUP),
)
XM430_W350 = _model(
    "xm430-w350", 1020, 46, {**_XM, "velocity_limit": 200}, current_ma=2.69, current_limit=1193, extra=(_BACKUP,)
)
XM540_W270 = _model(
    "xm540-w270",
    1120,
    46,
    {**_XM, "velocity_limit": 128},
    current_ma=2.69,
    current_limit=2047,
    extra=(*_EXT_PORTS, _BACKUP),
)

#: Models by name; short names (``xl430``, ``xm430``...) name the one model of each family armctl knows.
MODELS = {m.name: m for m in (XL330_M077, XL330_M288, XL430_W250, XC430_W150, XM430_W350, XM540_W270)} | {
    "xl330": XL330_M288,
    "xl430": XL430_W250,
    "xc430": XC430_W150,
    "xm430": XM430_W350,
    "xm540": XM540_W270,
}
MODEL_NUMBERS = {m.number: m for m in MODELS.values()}


def get_model(name: str | int | Model) -> Model:
    """The model for a name (``xl430``, ``xl430-w250``...) or a model number (1060...)."""
    if isinstance(name, Model):
        return name
    if isinstance(name, int) and name in MODEL_NUMBERS:
        return MODEL_NUMBERS[name]
    key = str(name).lower().removesuffix("-t").removesuffix("-r")
    if key in MODELS:
        return MODELS[key]
    known = ", ".join(sorted(MODELS))
    raise BadInputError(f"unknown Dynamixel model {name!r}; known: {known}")
