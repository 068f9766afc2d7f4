"""The ROBOTIS Dynamixel Protocol 2.0 (X series): constants, control tables, packets.

The protocol (ROBOTIS e-manual, "Protocol 2.0") is half duplex, 8N1, 57 600 baud from the factory::

    instruction  FF FF FD 00 ID LEN_L LEN_H INSTR PARAM... CRC_L CRC_H     LEN = len(INSTR PARAM...) + 2
    status       FF FF FD 00 ID LEN_L LEN_H 55 ERROR PARAM... CRC_L CRC_H

The CRC is CRC-16 with polynomial 0x8005 (MSB first, initial value 0, no final xor) over every byte from
the header to the last parameter. Wherever ``FF FF FD`` appears after the length field, the sender adds
one ``FD`` (byte stuffing) and the length counts it; the receiver removes it. The status error byte is an
error number (1..7, ``ERRORS``) plus the alert bit 0x80 (a hardware error: read ``hardware_error_status``).

Values are little-endian two's complement where signed. Control tables are per model (``MODELS``): the X
series shares the addresses and differs in ranges, defaults, units (current) and the registers it has.
This layer knows nothing of joint angles: the calibration above it does.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import NamedTuple

from armctl.bus.dynamixel.tables import (  # noqa: F401  (the tables' names, importable from here)
    ALL_MODES,
    BAUD_RATES,
    CURRENT_MODE,
    CURRENT_POSITION_MODE,
    DEGREES_PER_STEP,
    DRIVE_REVERSE,
    DRIVE_TIME_BASED_PROFILE,
    DRIVE_TORQUE_ON_BY_GOAL,
    EEPROM_END,
    EXTENDED_POSITION_MODE,
    MAX_ID,
    MODEL_NUMBERS,
    MODELS,
    NO_CURRENT_MODES,
    OPERATING_MODES,
    POSITION_MODE,
    PWM_MODE,
    PWM_PERCENT_PER_UNIT,
    RPM2_PER_ACCELERATION_UNIT,
    RPM_PER_VELOCITY_UNIT,
    STEPS_PER_TURN,
    VELOCITY_MODE,
    VOLTS_PER_UNIT,
    XC430_W150,
    XL330_M077,
    XL330_M288,
    XL430_W250,
    XM430_W350,
    XM540_W270,
    Model,
    Register,
    from_signed,
    get_model,
    to_signed,
)
from armctl.errors import BadInputError

BROADCAST_ID = 0xFE
DEFAULT_BAUD = 57_600  # the factory's (baud_rate = 1)
HEADER = b"\xff\xff\xfd\x00"
STUFF_PATTERN = b"\xff\xff\xfd"
MAX_PACKET_BYTES = 1024  # the vendor SDK's TX/RX packet limit

PING = 0x01
READ = 0x02
WRITE = 0x03
REG_WRITE = 0x04
ACTION = 0x05
FACTORY_RESET = 0x06
REBOOT = 0x08
CLEAR = 0x10
STATUS = 0x55
SYNC_READ = 0x82
SYNC_WRITE = 0x83
FAST_SYNC_READ = 0x8A
BULK_READ = 0x92
BULK_WRITE = 0x93

INSTRUCTIONS = {
    PING: "ping",
    READ: "read",
    WRITE: "write",
    REG_WRITE: "reg write",
    ACTION: "action",
    FACTORY_RESET: "factory reset",
    REBOOT: "reboot",
    CLEAR: "clear",
    STATUS: "status",
    SYNC_READ: "sync read",
    SYNC_WRITE: "sync write",
    FAST_SYNC_READ: "fast sync read",
    BULK_READ: "bulk read",
    BULK_WRITE: "bulk write",
}

#: FACTORY_RESET's parameter: what is reset
RESET_ALL, RESET_ALL_BUT_ID, RESET_ALL_BUT_ID_AND_BAUD = 0xFF, 0x01, 0x02
#: CLEAR's parameters: reset the multi-turn count of the present position (X series)
CLEAR_MULTI_TURN = bytes((0x01, 0x44, 0x58, 0x4C, 0x22))

# --- errors -----------------------------------------------------------------------------------------

ALERT = 0x80
RESULT_FAIL = 1
INSTRUCTION_ERROR = 2
CRC_ERROR = 3
DATA_RANGE_ERROR = 4
DATA_LENGTH_ERROR = 5
DATA_LIMIT_ERROR = 6
ACCESS_ERROR = 7

#: Status packet error numbers (the low 7 bits of the error byte), as the e-manual names them.
ERRORS = {
    RESULT_FAIL: "result fail",
    INSTRUCTION_ERROR: "instruction error",
    CRC_ERROR: "CRC error",
    DATA_RANGE_ERROR: "data range error",
    DATA_LENGTH_ERROR: "data length error",
    DATA_LIMIT_ERROR: "data limit error",
    ACCESS_ERROR: "access error",
}

HW_INPUT_VOLTAGE = 0x01
HW_OVERHEATING = 0x04
HW_MOTOR_ENCODER = 0x08
HW_ELECTRICAL_SHOCK = 0x10
HW_OVERLOAD = 0x20

#: Bits of ``hardware_error_status`` (70) and of ``shutdown`` (63: which of them turn the torque off).
HARDWARE_ERROR_BITS = {
    HW_INPUT_VOLTAGE: "input voltage error",
    HW_OVERHEATING: "overheating error",
    HW_MOTOR_ENCODER: "motor encoder error",
    HW_ELECTRICAL_SHOCK: "electrical shock error",
    HW_OVERLOAD: "overload error",
}


def describe_error(error: int) -> str:
    """A status packet's error byte in words, e.g. ``"access error"`` or ``"hardware alert"``."""
    words = []
    number = error & ~ALERT
    if number:
        words.append(ERRORS.get(number, f"unknown error number {number}"))
    if error & ALERT:
        words.append("hardware alert")
    return ", ".join(words) or "no error"


def describe_hardware_errors(bits: int) -> str:
    """The bits of ``hardware_error_status`` in words, e.g. ``"overload error"``."""
    words = [text for bit, text in HARDWARE_ERROR_BITS.items() if bits & bit]
    other = bits & ~sum(HARDWARE_ERROR_BITS)
    if other:
        words.append(f"unknown hardware error bits 0x{other:02x}")
    return ", ".join(words) or "no error"


# --- CRC and byte stuffing --------------------------------------------------------------------------


def _crc_table() -> tuple[int, ...]:
    table = []
    for byte in range(256):
        crc = byte << 8
        for _ in range(8):
            crc = ((crc << 1) ^ 0x8005) if crc & 0x8000 else crc << 1
        table.append(crc & 0xFFFF)
    return tuple(table)


CRC_TABLE = _crc_table()


def crc16(data: bytes, crc: int = 0) -> int:
    """The Protocol 2.0 CRC-16 (polynomial 0x8005) of ``data``, continuing from ``crc``."""
    for byte in data:
        crc = ((crc << 8) ^ CRC_TABLE[((crc >> 8) ^ byte) & 0xFF]) & 0xFFFF
    return crc


def stuff(payload: bytes) -> bytes:
    """``payload`` (instruction onward) with an ``FD`` added after every ``FF FF FD``."""
    out = bytearray()
    for i, byte in enumerate(payload):
        out.append(byte)
        if byte == 0xFD and i >= 2 and payload[i - 2 : i] == b"\xff\xff":
            out.append(0xFD)
    return bytes(out)


def unstuff(payload: bytes) -> bytes:
    """``payload`` with the ``FD`` added after each ``FF FF FD`` removed."""
    out = bytearray()
    i = 0
    while i < len(payload):
        out.append(payload[i])
        if out[-3:] == STUFF_PATTERN and payload[i + 1 : i + 2] == b"\xfd":
            i += 1
        i += 1
    return bytes(out)


# --- packets ----------------------------------------------------------------------------------------


class Packet(NamedTuple):
    """A decoded packet. ``code`` is the instruction (host to servo) or, in a status packet (servo to host,
    ``status`` true), the error byte; ``params`` are unstuffed."""

    id: int
    code: int
    params: bytes
    status: bool = False


class BadPacket(NamedTuple):
    """A framed packet whose CRC or length is wrong; ``id`` is what its id byte says (it may be the bad byte)."""

    id: int
    raw: bytes


def _frame(servo_id: int, payload: bytes) -> bytes:
    if not 0 <= servo_id <= BROADCAST_ID:
        raise BadInputError(f"servo id {servo_id} is outside 0..{MAX_ID} (or {BROADCAST_ID} for broadcast)")
    body = stuff(payload)
    if len(body) + 9 > MAX_PACKET_BYTES:
        raise BadInputError(f"packet of {len(body) + 9} bytes is over the {MAX_PACKET_BYTES}-byte limit")
    head = HEADER + bytes((servo_id,)) + (len(body) + 2).to_bytes(2, "little")
    crc = crc16(head + body)
    return head + body + crc.to_bytes(2, "little")


def encode_packet(servo_id: int, instruction: int, params: bytes = b"") -> bytes:
    """A whole instruction packet: header, stuffed instruction and parameters, CRC."""
    return _frame(servo_id, bytes((instruction,)) + bytes(params))


def encode_status(servo_id: int, error: int = 0, params: bytes = b"") -> bytes:
    """A whole status packet (what a servo answers)."""
    return _frame(servo_id, bytes((STATUS, error)) + bytes(params))


def take_packet(buf: bytearray) -> Packet | BadPacket | None:
    """Remove and return the first packet at the front of ``buf`` (None: more bytes are needed).

    Bytes before a header are discarded; a frame with a bad CRC or an impossible length comes back as
    ``BadPacket`` and only its header is consumed, so a packet hidden behind a corrupt length is still found.
    """
    while True:
        start = buf.find(HEADER)
        if start < 0:
            keep = next((n for n in (3, 2, 1) if buf.endswith(HEADER[:n])), 0)
            del buf[: len(buf) - keep]
            return None
        del buf[:start]
        if len(buf) < 7:
            return None
        length = int.from_bytes(buf[5:7], "little")
        if length < 3 or length + 7 > MAX_PACKET_BYTES:
            bad = BadPacket(buf[4], bytes(buf[:7]))
            del buf[: len(HEADER)]
            return bad
        end = 7 + length
        if len(buf) < end:
            return None
        raw = bytes(buf[:end])
        if crc16(raw[:-2]) != int.from_bytes(raw[-2:], "little"):
            del buf[: len(HEADER)]
            return BadPacket(raw[4], raw)
        del buf[:end]
        payload = unstuff(raw[7:-2])
        if payload[0] != STATUS:
            return Packet(raw[4], payload[0], payload[1:])
        if len(payload) < 2:
            return BadPacket(raw[4], raw)
        return Packet(raw[4], payload[1], payload[2:], status=True)


def _u16(value: int) -> bytes:
    return int(value).to_bytes(2, "little")


def ping_packet(servo_id: int) -> bytes:
    """PING: the servo answers with its model number (2 bytes) and firmware version (1 byte)."""
    return encode_packet(servo_id, PING)


def read_packet(servo_id: int, address: int, count: int) -> bytes:
    """READ ``count`` bytes from ``address``."""
    return encode_packet(servo_id, READ, _u16(address) + _u16(count))


def write_packet(servo_id: int, address: int, data: bytes, *, instruction: int = WRITE) -> bytes:
    """WRITE (or REG_WRITE, applied at the next ACTION) ``data`` at ``address``."""
    return encode_packet(servo_id, instruction, _u16(address) + bytes(data))


def action_packet(servo_id: int = BROADCAST_ID) -> bytes:
    """ACTION: apply the registered writes (broadcast by default: nobody answers)."""
    return encode_packet(servo_id, ACTION)


def reboot_packet(servo_id: int) -> bytes:
    """REBOOT: the servo answers, then restarts (hardware errors cleared, RAM back to its defaults)."""
    return encode_packet(servo_id, REBOOT)


def factory_reset_packet(servo_id: int, what: int = RESET_ALL_BUT_ID_AND_BAUD) -> bytes:
    """FACTORY_RESET: the control table back to the factory's (``RESET_ALL``, ``RESET_ALL_BUT_ID``,
    ``RESET_ALL_BUT_ID_AND_BAUD``)."""
    return encode_packet(servo_id, FACTORY_RESET, bytes((what,)))


def clear_packet(servo_id: int, params: bytes = CLEAR_MULTI_TURN) -> bytes:
    """CLEAR: reset the multi-turn count of the present position (torque off, not moving)."""
    return encode_packet(servo_id, CLEAR, params)


def sync_read_packet(address: int, count: int, ids: Sequence[int], *, instruction: int = SYNC_READ) -> bytes:
    """SYNC_READ: every listed servo answers with its own status packet, in the listed order."""
    return encode_packet(BROADCAST_ID, instruction, _u16(address) + _u16(count) + bytes(ids))


def sync_write_packet(address: int, size: int, data: Mapping[int, bytes]) -> bytes:
    """SYNC_WRITE: ``size`` bytes at ``address`` for every id in ``data``, in one broadcast packet."""
    params = bytearray(_u16(address) + _u16(size))
    for servo_id, chunk in data.items():
        if len(chunk) != size:
            raise BadInputError(f"sync write: servo {servo_id} has {len(chunk)} bytes, expected {size}")
        params.append(servo_id)
        params += chunk
    return encode_packet(BROADCAST_ID, SYNC_WRITE, bytes(params))


def bulk_read_packet(reads: Sequence[tuple[int, int, int]]) -> bytes:
    """BULK_READ: ``(id, address, count)`` each; the servos answer in the listed order."""
    params = bytearray()
    for servo_id, address, count in reads:
        params += bytes((servo_id,)) + _u16(address) + _u16(count)
    return encode_packet(BROADCAST_ID, BULK_READ, bytes(params))


def bulk_write_packet(writes: Sequence[tuple[int, int, bytes]]) -> bytes:
    """BULK_WRITE: ``(id, address, data)`` each, in one broadcast packet."""
    params = bytearray()
    for servo_id, address, data in writes:
        params += bytes((servo_id,)) + _u16(address) + _u16(len(data)) + bytes(data)
    return encode_packet(BROADCAST_ID, BULK_WRITE, bytes(params))


# --- decoding instruction parameters (what a servo does with them) ---------------------------------


class Access(NamedTuple):
    """One servo's part of a read or write: ``data`` is empty for reads."""

    id: int
    address: int
    count: int
    data: bytes = b""


def parse_params(instruction: int, params: bytes) -> list[Access]:
    """The accesses an instruction's parameters ask for (READ, WRITE, REG_WRITE, SYNC_/BULK_READ/WRITE).

    Raises ValueError when the parameters do not split as the instruction says (a data length error).
    """
    if instruction in (READ, WRITE, REG_WRITE):
        if len(params) < (4 if instruction == READ else 3):
            raise ValueError("too short")
        address = int.from_bytes(params[:2], "little")
        if instruction == READ:
            return [Access(-1, address, int.from_bytes(params[2:4], "little"))]
        return [Access(-1, address, len(params) - 2, bytes(params[2:]))]
    if instruction in (SYNC_READ, FAST_SYNC_READ, SYNC_WRITE):
        return _parse_sync(instruction, params)
    if instruction in (BULK_READ, BULK_WRITE):
        return _parse_bulk(instruction, params)
    raise ValueError(f"instruction 0x{instruction:02x} has no accesses")


def _parse_sync(instruction: int, params: bytes) -> list[Access]:
    if len(params) < 4:
        raise ValueError("too short")
    address, count = int.from_bytes(params[:2], "little"), int.from_bytes(params[2:4], "little")
    rest = params[4:]
    if instruction != SYNC_WRITE:
        return [Access(i, address, count) for i in rest]
    step = count + 1
    if count == 0 or len(rest) % step:
        raise ValueError("sync write data do not split into id + count bytes")
    return [Access(rest[k], address, count, bytes(rest[k + 1 : k + step])) for k in range(0, len(rest), step)]


def _parse_bulk(instruction: int, params: bytes) -> list[Access]:
    out, k = [], 0
    while k < len(params):
        if k + 5 > len(params):
            raise ValueError("bulk entry cut short")
        servo_id = params[k]
        address, count = (
            int.from_bytes(params[k + 1 : k + 3], "little"),
            int.from_bytes(params[k + 3 : k + 5], "little"),
        )
        k += 5
        data = b""
        if instruction == BULK_WRITE:
            data = bytes(params[k : k + count])
            if len(data) != count:
                raise ValueError("bulk write data cut short")
            k += count
        out.append(Access(servo_id, address, count, data))
    return out
