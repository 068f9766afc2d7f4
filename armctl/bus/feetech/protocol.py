"""The Feetech serial bus servo protocol (STS/SMS and SCS series): constants, register tables, packets.

The protocol (docs/feetech.md) is Dynamixel-1.0-like, half duplex, 8N1, 1 000 000 baud by default::

    instruction  FF FF ID LEN INSTR PARAM... CHK       LEN = len(PARAM) + 2
    status       FF FF ID LEN ERROR PARAM... CHK       CHK = ~(ID + LEN + INSTR/ERROR + PARAMs) & 0xFF

Registers are bytes at fixed addresses (``REGISTERS``); two-byte values are little-endian on STS/SMS
servos and big-endian on SCS servos, and some are sign-magnitude (bit 15, 11 or 10 is the sign) rather
than two's complement. Positions are servo steps (4096 a turn on STS, 1024 on SCS); this layer knows
nothing of joint angles: the calibration above it does. The client is ``feetech.FeetechBus``.
"""

from __future__ import annotations

import operator
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import NamedTuple

from armctl.errors import BadInputError

BROADCAST_ID = 0xFE
MAX_ID = 0xFC
DEFAULT_BAUD = 1_000_000
HEADER = b"\xff\xff"
MAX_PACKET_BYTES = 250  # the vendor SDK's TX/RX packet limit

PING = 0x01
READ = 0x02
WRITE = 0x03
REG_WRITE = 0x04
ACTION = 0x05
SYNC_READ = 0x82
SYNC_WRITE = 0x83

#: Status-packet error bits (also the bits of the ``status`` register), as the vendor documents them.
ERROR_BITS = {
    0x01: "input voltage out of range",
    0x02: "angle sensor error",
    0x04: "overheat",
    0x08: "overcurrent",
    0x10: "angle error",
    0x20: "overload",
}

#: Baud rates by the value of the ``baud_rate`` register (the same table on STS and SCS).
BAUD_RATES = (1_000_000, 500_000, 250_000, 128_000, 115_200, 76_800, 57_600, 38_400)

#: Model numbers (register ``model_number``) of servos we know by name.
MODEL_NAMES = {777: "sts3215", 2825: "sts3250", 11272: "sm8512bl", 1284: "scs0009"}


# --- registers --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Register:
    """One entry of a servo's memory table.

    ``sign_bit``: the value is sign-magnitude with this bit as the sign (None: unsigned).
    ``eeprom``: kept across power cycles (unless the ``lock`` register is set when written).
    ``unit``: what one count means (for docs and error messages).
    """

    name: str
    address: int
    size: int
    writable: bool = True
    eeprom: bool = False
    sign_bit: int | None = None
    unit: str = ""

    @property
    def limit(self) -> int:
        """Largest magnitude the register holds."""
        if self.sign_bit is not None:
            return (1 << self.sign_bit) - 1
        return (1 << (8 * self.size)) - 1


def _table(*rows) -> dict[str, Register]:
    return {r.name: r for r in rows}


def _common_eeprom() -> tuple[Register, ...]:
    return (
        Register("firmware_major", 0, 1, writable=False, eeprom=True),
        Register("firmware_minor", 1, 1, writable=False, eeprom=True),
        Register("model_number", 3, 2, writable=False, eeprom=True),
        Register("id", 5, 1, eeprom=True),
        Register("baud_rate", 6, 1, eeprom=True, unit="index into BAUD_RATES"),
        Register("return_delay", 7, 1, eeprom=True, unit="2 us"),
        Register("response_level", 8, 1, eeprom=True, unit="0: answer only ping/read, 1: answer all"),
        Register("min_angle_limit", 9, 2, eeprom=True, unit="step"),
        Register("max_angle_limit", 11, 2, eeprom=True, unit="step"),
        Register("max_temperature", 13, 1, eeprom=True, unit="degC"),
        Register("max_voltage", 14, 1, eeprom=True, unit="0.1 V"),
        Register("min_voltage", 15, 1, eeprom=True, unit="0.1 V"),
        Register("max_torque", 16, 2, eeprom=True, unit="0.1 % of stall torque"),
        Register("phase", 18, 1, eeprom=True),
        Register("unloading_condition", 19, 1, eeprom=True, unit="error bits that cut the torque"),
        Register("led_alarm_condition", 20, 1, eeprom=True),
        Register("p_gain", 21, 1, eeprom=True),
        Register("d_gain", 22, 1, eeprom=True),
        Register("i_gain", 23, 1, eeprom=True),
        Register("min_startup_force", 24, 2, eeprom=True, unit="0.1 %"),
        Register("cw_dead_zone", 26, 1, eeprom=True, unit="step"),
        Register("ccw_dead_zone", 27, 1, eeprom=True, unit="step"),
    )


def _common_feedback() -> tuple[Register, ...]:
    return (
        Register("torque_enable", 40, 1, unit="0 off, 1 on, 128 make the present position read 2048"),
        Register("acceleration", 41, 1, unit="100 step/s^2 (0: the servo's maximum)"),
        Register("goal_position", 42, 2, unit="step"),
        Register("goal_time", 44, 2, unit="ms"),
        Register("goal_speed", 46, 2, unit="step/s (0: the servo's maximum)"),
        Register("present_position", 56, 2, writable=False, unit="step"),
        Register("present_speed", 58, 2, writable=False, unit="step/s"),
        Register("present_load", 60, 2, writable=False, unit="0.1 % of stall torque"),
        Register("present_voltage", 62, 1, writable=False, unit="0.1 V"),
        Register("present_temperature", 63, 1, writable=False, unit="degC"),
        Register("reg_write_pending", 64, 1, writable=False, unit="1 after a reg write, 0 after action"),
        Register("status", 65, 1, writable=False, unit="error bits"),
        Register("moving", 66, 1, writable=False, unit="1 while moving"),
    )


def _signed(reg: Register, bit: int) -> Register:
    return Register(reg.name, reg.address, reg.size, reg.writable, reg.eeprom, bit, reg.unit)


def _sts_table() -> dict[str, Register]:
    feedback = {r.name: r for r in _common_feedback()}
    for name in ("goal_position", "goal_speed", "present_position", "present_speed"):
        feedback[name] = _signed(feedback[name], 15)
    feedback["present_load"] = _signed(feedback["present_load"], 10)
    return _table(
        *_common_eeprom(),
        Register("protection_current", 28, 2, eeprom=True, unit="6.5 mA"),
        Register("angular_resolution", 30, 1, eeprom=True),
        Register("homing_offset", 31, 2, eeprom=True, sign_bit=11, unit="step (present = actual - offset)"),
        Register("operating_mode", 33, 1, eeprom=True, unit="0 position, 1 speed, 2 PWM, 3 step"),
        Register("protective_torque", 34, 1, eeprom=True, unit="% of stall torque once overloaded"),
        Register("protection_time", 35, 1, eeprom=True, unit="10 ms above overload_torque before overload"),
        Register("overload_torque", 36, 1, eeprom=True, unit="% of stall torque"),
        Register("velocity_p_gain", 37, 1, eeprom=True, unit="speed-mode loop P coefficient"),
        Register("over_current_protection_time", 38, 1, eeprom=True),
        Register("velocity_i_gain", 39, 1, eeprom=True, unit="speed-mode loop I coefficient"),
        *feedback.values(),
        Register("torque_limit", 48, 2, unit="0.1 % of stall torque"),
        Register("lock", 55, 1, unit="1: EEPROM writes are not kept over a power cycle"),
        Register("present_current", 69, 2, writable=False, unit="6.5 mA"),
        Register("goal_position_2", 71, 2, writable=False, unit="step"),
        # the factory area: LeRobot writes max_acceleration (85) at every connect and reads none of them
        Register("moving_velocity_threshold", 80, 1),
        Register("dts", 81, 1, unit="ms"),
        Register("velocity_unit_factor", 82, 1),
        Register("hts", 83, 1, unit="ns (firmware >= 2.54, else 0)"),
        Register("max_velocity_limit", 84, 1),
        Register("max_acceleration", 85, 1),
        Register("acceleration_multiplier", 86, 1, unit="in effect when acceleration is 0"),
    )


def _scs_table() -> dict[str, Register]:
    # LeRobot's SCS table leaves every register unsigned; Feetech's SCS manual gives the feedback speed and
    # load a direction bit as on STS (15 and 10), which is what a reading of "1074" for load -50 means.
    feedback = {r.name: r for r in _common_feedback()}
    feedback["present_speed"] = _signed(feedback["present_speed"], 15)
    feedback["present_load"] = _signed(feedback["present_load"], 10)
    return _table(
        *_common_eeprom(),
        Register("protective_torque", 37, 1, eeprom=True, unit="% of stall torque once overloaded"),
        Register("protection_time", 38, 1, eeprom=True, unit="10 ms above the limit before overload"),
        *feedback.values(),
        Register("lock", 48, 1, unit="1: EEPROM writes are not kept over a power cycle"),
    )


@dataclass(frozen=True)
class Series:
    """A family of servos that share byte order, register table and instruction set."""

    name: str
    byteorder: str  # "little" (STS/SMS) or "big" (SCS)
    registers: Mapping[str, Register]
    steps_per_turn: int
    model_number: int  # of the family's common model (what the simulator reports)
    sync_read: bool  # SCS servos do not implement SYNC_READ

    def register(self, name: str) -> Register:
        """The register called ``name``; BadInputError listing the known names otherwise."""
        try:
            return self.registers[name]
        except KeyError:
            known = ", ".join(sorted(self.registers))
            raise BadInputError(f"unknown {self.name.upper()} register {name!r}; known: {known}") from None

    def encode(self, reg: Register, value: int) -> bytes:
        """``value`` as the register's bytes (sign-magnitude where the register is signed)."""
        try:
            value = operator.index(value)
        except TypeError:
            if not (isinstance(value, float) and value.is_integer()):
                raise BadInputError(f"register {reg.name}: {value!r} is not an integer") from None
            value = int(value)
        if reg.sign_bit is not None:
            if abs(value) > reg.limit:
                raise BadInputError(f"register {reg.name}: {value} is outside -{reg.limit}..{reg.limit}")
            raw = to_sign_magnitude(value, reg.sign_bit)
        else:
            if not 0 <= value <= reg.limit:
                raise BadInputError(f"register {reg.name}: {value} is outside 0..{reg.limit}")
            raw = value
        return raw.to_bytes(reg.size, self.byteorder)

    def decode(self, reg: Register, data: bytes) -> int:
        """The register's value from its bytes."""
        raw = int.from_bytes(data[: reg.size], self.byteorder)
        return raw if reg.sign_bit is None else from_sign_magnitude(raw, reg.sign_bit)


STS = Series("sts", "little", _sts_table(), 4096, 777, sync_read=True)
SCS = Series("scs", "big", _scs_table(), 1024, 1284, sync_read=False)
SERIES = {
    "sts": STS,
    "sms": STS,
    "sts3215": STS,
    "sts3250": STS,
    "sm8512bl": STS,
    "scs": SCS,
    "scs0009": SCS,
}


def get_series(name: str | Series) -> Series:
    """The series for a series or model name (``sts``, ``sts3215``, ``scs``, ``scs0009``...)."""
    if isinstance(name, Series):
        return name
    try:
        return SERIES[str(name).lower()]
    except KeyError:
        raise BadInputError(f"unknown Feetech servo series {name!r}; expected one of {', '.join(SERIES)}") from None


def to_sign_magnitude(value: int, sign_bit: int) -> int:
    """``value`` with ``sign_bit`` set for negatives and the magnitude below it (Feetech's signed form)."""
    return (-value) | (1 << sign_bit) if value < 0 else value


def from_sign_magnitude(raw: int, sign_bit: int) -> int:
    """The integer a sign-magnitude register holds."""
    mask = 1 << sign_bit
    return -(raw & ~mask) if raw & mask else raw


def describe_errors(bits: int) -> str:
    """The error bits of a status packet in words, e.g. ``"overload"``."""
    words = [text for bit, text in ERROR_BITS.items() if bits & bit]
    other = bits & ~sum(ERROR_BITS)
    if other:
        words.append(f"unknown error bits 0x{other:02x}")
    return ", ".join(words) or "no error"


# --- packets ----------------------------------------------------------------------------------------


class Packet(NamedTuple):
    """A decoded packet: ``code`` is the instruction (host to servo) or the error bits (servo to host)."""

    id: int
    code: int
    params: bytes


def checksum(body: bytes) -> int:
    """The checksum of everything after the header: id, length, instruction/error and parameters."""
    return ~sum(body) & 0xFF


def encode_packet(servo_id: int, code: int, params: bytes = b"") -> bytes:
    """A whole packet, header and checksum included."""
    if not 0 <= servo_id <= BROADCAST_ID:
        raise BadInputError(f"servo id {servo_id} is outside 0..{MAX_ID} (or {BROADCAST_ID} for broadcast)")
    if len(params) + 6 > MAX_PACKET_BYTES:
        raise BadInputError(f"packet of {len(params) + 6} bytes is over the {MAX_PACKET_BYTES}-byte limit")
    body = bytes((servo_id, len(params) + 2, code)) + bytes(params)
    return HEADER + body + bytes((checksum(body),))


class BadPacket(NamedTuple):
    """A framed packet whose checksum is wrong; ``id`` is what its id byte says (it may be the bad byte)."""

    id: int
    raw: bytes


def take_packet(buf: bytearray) -> Packet | BadPacket | None:
    """Remove and return the first packet at the front of ``buf`` (None: more bytes are needed).

    Bytes before a header are discarded; a frame with a bad checksum comes back as ``BadPacket`` and
    only its header is consumed, so a packet hidden behind a corrupt length byte is still found.
    """
    while True:
        start = buf.find(HEADER)
        if start < 0:
            del buf[: max(0, len(buf) - 1) if buf[-1:] == b"\xff" else len(buf)]
            return None
        del buf[:start]
        if len(buf) < 4:
            return None
        if buf[2] == 0xFF:  # FF FF FF: the header starts one byte later
            del buf[0]
            continue
        length = buf[3]
        if length < 2:
            bad = BadPacket(buf[2], bytes(buf[:4]))
            del buf[:2]
            return bad
        end = 4 + length
        if len(buf) < end:
            return None
        raw = bytes(buf[:end])
        if checksum(raw[2:-1]) != raw[-1]:
            del buf[:2]
            return BadPacket(raw[2], raw)
        del buf[:end]
        return Packet(raw[2], raw[4], raw[5:-1])


def ping_packet(servo_id: int) -> bytes:
    """PING: the servo answers with an empty status packet."""
    return encode_packet(servo_id, PING)


def read_packet(servo_id: int, address: int, count: int) -> bytes:
    """READ ``count`` bytes from ``address``."""
    return encode_packet(servo_id, READ, bytes((address, count)))


def write_packet(servo_id: int, address: int, data: bytes, *, instruction: int = WRITE) -> bytes:
    """WRITE (or REG_WRITE, applied at the next ACTION) ``data`` at ``address``."""
    return encode_packet(servo_id, instruction, bytes((address,)) + bytes(data))


def action_packet(servo_id: int = BROADCAST_ID) -> bytes:
    """ACTION: apply the registered writes (broadcast by default: nobody answers)."""
    return encode_packet(servo_id, ACTION)


def sync_write_packet(address: int, size: int, data: Mapping[int, bytes]) -> bytes:
    """SYNC_WRITE: ``size`` bytes at ``address`` for every id in ``data``, in one broadcast packet."""
    params = bytearray((address, size))
    for servo_id, chunk in data.items():
        if len(chunk) != size:
            raise BadInputError(f"sync write: servo {servo_id} has {len(chunk)} bytes, expected {size}")
        params.append(servo_id)
        params += chunk
    return encode_packet(BROADCAST_ID, SYNC_WRITE, bytes(params))


def sync_read_packet(address: int, count: int, ids: Sequence[int]) -> bytes:
    """SYNC_READ: every listed servo answers with its own status packet, in the listed order."""
    return encode_packet(BROADCAST_ID, SYNC_READ, bytes((address, count, *ids)))
