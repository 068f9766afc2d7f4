"""Feetech serial bus servos (STS/SMS and SCS series): the protocol and a client, ``FeetechBus``.

The protocol (docs/feetech.md) is Dynamixel-1.0-like, half duplex, 8N1, 1 000 000 baud by default::

    instruction  FF FF ID LEN INSTR PARAM... CHK       LEN = len(PARAM) + 2
    status       FF FF ID LEN ERROR PARAM... CHK       CHK = ~(ID + LEN + INSTR/ERROR + PARAMs) & 0xFF

Registers are bytes at fixed addresses (``REGISTERS``); two-byte values are little-endian on STS/SMS
servos and big-endian on SCS servos, and some are sign-magnitude (bit 15, 11 or 10 is the sign) rather
than two's complement. Positions are servo steps (4096 a turn on STS, 1024 on SCS); this layer knows
nothing of joint angles: the calibration above it does.

``FeetechBus`` opens any pyserial port or URL (a device path, ``feetechsim://``, ``socket://``...). Every
exchange has a bounded timeout and is retried where the protocol allows it (reads, pings, acknowledged
writes); sync writes are unacknowledged and sent once. Every failure is a ``LinkError`` naming the port
and the servo: ``ServoNoReply`` (missing id, power, baud), ``ServoBadReply`` (a ``ProtocolError``:
corrupt or malformed reply), ``ServoFault`` (the servo answered with error bits: overload, voltage,
overheat...).
"""

from __future__ import annotations

import operator
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import NamedTuple

from ..errors import BadInputError, LinkError, ProtocolError
from .backend import open_port

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
INSTRUCTION_NAMES = {
    PING: "ping",
    READ: "read",
    WRITE: "write",
    REG_WRITE: "reg write",
    ACTION: "action",
    SYNC_READ: "sync read",
    SYNC_WRITE: "sync write",
}

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


# --- errors -----------------------------------------------------------------------------------------


class ServoError(LinkError):
    """A failure on a Feetech bus that names the servo(s): ``servo_ids`` and what was being done."""

    def __init__(self, message: str, *, servo_ids: Sequence[int] = (), operation: str = ""):
        super().__init__(message)
        self.servo_ids = tuple(servo_ids)
        self.operation = operation

    @property
    def servo_id(self) -> int | None:
        """The first servo named (most errors name one)."""
        return self.servo_ids[0] if self.servo_ids else None


class ServoNoReply(ServoError):
    """A servo did not answer within the timeout, after every retry (missing id, power, cable, baud)."""


class ServoBadReply(ServoError, ProtocolError):
    """A servo answered, but every answer was corrupt (bad checksum, framing) or malformed."""


class ServoFault(ServoError):
    """A servo answered with error bits set (``bits``): overload, voltage, overheat..."""

    def __init__(self, message: str, *, servo_ids: Sequence[int] = (), operation: str = "", bits: int = 0):
        super().__init__(message, servo_ids=servo_ids, operation=operation)
        self.bits = bits


def _ids_text(ids: Sequence[int]) -> str:
    return f"servo {ids[0]}" if len(ids) == 1 else "servos " + ", ".join(map(str, ids))


# --- the client -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ServoState:
    """One servo's feedback registers read at once (``FeetechBus.read_states``)."""

    position_steps: int
    speed_steps_s: int
    load_fraction: float  # -1..1 of stall torque, signed by direction
    voltage_v: float
    temperature_c: int
    moving: bool
    error_bits: int  # the status packet's error bits (0: healthy)

    @property
    def errors(self) -> str:
        """The error bits in words."""
        return describe_errors(self.error_bits)


_STATE_NAMES = (
    "present_position",
    "present_speed",
    "present_load",
    "present_voltage",
    "present_temperature",
    "moving",
)


class FeetechBus:
    """A Feetech servo bus on a serial port or URL.

    ``series``: ``"sts"`` (STS/SMS, the SO-100/SO-101's STS3215; little-endian) or ``"scs"`` (big-endian,
    no SYNC_READ: ``sync_read`` then reads servo by servo). ``timeout_s``: how long to wait for an answer
    beyond the bytes' time on the wire (USB adapters add up to a few ms of latency; FTDI's default latency
    timer adds 16 ms). ``retries``: extra attempts for exchanges that can be repeated safely.
    ``echo``: the adapter hears its own transmission (TX and RX tied together): each packet sent comes
    back first and is checked and dropped. ``check_errors``: raise ``ServoFault`` when a servo reports
    error bits (else they are only kept in ``error_bits``).

    Lifecycle: ``open()``/``close()`` or a ``with`` block. Not thread-safe: one caller at a time.
    """

    def __init__(
        self,
        port: str,
        *,
        series: str | Series = "sts",
        baudrate: int = DEFAULT_BAUD,
        timeout_s: float = 0.05,
        retries: int = 2,
        echo: bool = False,
        check_errors: bool = True,
    ):
        self.port = port
        self.series = get_series(series)
        if baudrate not in BAUD_RATES:
            raise BadInputError(f"baud rate {baudrate} is not one a Feetech servo runs at: {BAUD_RATES}")
        if not 0 < timeout_s <= 10:
            raise BadInputError(f"timeout_s {timeout_s} must be in (0, 10] s")
        if not 0 <= retries <= 10:
            raise BadInputError(f"retries {retries} must be in 0..10")
        self.baudrate = baudrate
        self.timeout_s = float(timeout_s)
        self.retries = int(retries)
        self.echo = bool(echo)
        self.check_errors = bool(check_errors)
        self.byte_s = 10.0 / baudrate
        self.error_bits: dict[int, int] = {}  #: the last error bits each servo reported
        #: Called with (">", bytes sent) and ("<", bytes received), e.g. a wire log's ``record``.
        self.on_bytes = None
        self.counters = {"packets": 0, "bytes_out": 0, "bytes_in": 0, "retries": 0, "timeouts": 0, "corrupt": 0}
        self._ser = None
        self._rx = bytearray()

    # --- lifecycle ---

    def open(self) -> FeetechBus:
        """Open the port (LinkError naming it on failure). Nothing is sent: ``ping``/``check_ids`` do that."""
        if self._ser is None:
            self._ser = open_port(self.port, baudrate=self.baudrate, timeout_s=min(0.005, self.timeout_s))
            self._rx.clear()
        return self

    def adopt(self, ser) -> FeetechBus:
        """Talk over ``ser``, a pyserial port already open (a port probe's); ``close()`` then closes it."""
        ser.baudrate = self.baudrate
        self._ser = ser
        self._rx.clear()
        return self

    def close(self) -> None:
        """Release the port (safe to call twice)."""
        ser, self._ser = self._ser, None
        if ser is not None:
            try:
                ser.close()
            except Exception:  # closing a dead port must not mask the error that killed it
                pass

    @property
    def is_open(self) -> bool:
        return self._ser is not None

    @property
    def serial(self):
        """The open pyserial port (``.sim`` on a ``feetechsim://`` port), or None when closed."""
        return self._ser

    def __enter__(self) -> FeetechBus:
        return self.open()

    def __exit__(self, *exc) -> bool:
        self.close()
        return False

    # --- single servo ---

    def ping(self, servo_id: int) -> int:
        """Ping one servo; returns its error bits (0: healthy). ServoNoReply if it does not answer.

        A servo reporting error bits is not an error here: ping is how you find out.
        """
        self._check_id(servo_id)
        reply = self._exchange(servo_id, ping_packet(servo_id), 0, "ping", check=False)
        return reply.code

    def check_ids(self, ids: Iterable[int]) -> dict[int, int]:
        """Ping every id and read its model number: ``{id: model_number}``. ServoNoReply naming every
        missing id (pinged ``retries + 1`` times each)."""
        ids = list(ids)
        missing = []
        for servo_id in ids:
            try:
                self.ping(servo_id)
            except ServoNoReply:
                missing.append(servo_id)
        if missing:
            raise ServoNoReply(
                f"{self.port}: {_ids_text(missing)} of {list(ids)} did not answer a ping "
                f"({self._tries()}, {self.baudrate} baud): check ids, power and cable",
                servo_ids=missing,
                operation="ping",
            )
        return {servo_id: self.read(servo_id, "model_number") for servo_id in ids}

    def scan(self, ids: Iterable[int] = range(MAX_ID + 1), *, timeout_s: float = 0.005) -> dict[int, int]:
        """Ping each id once with a short timeout: ``{id: error_bits}`` of those that answer (discovery)."""
        saved = self.timeout_s, self.retries
        self.timeout_s, self.retries = timeout_s, 0
        found = {}
        try:
            for servo_id in ids:
                try:
                    found[servo_id] = self.ping(servo_id)
                except ServoNoReply:
                    pass
        finally:
            self.timeout_s, self.retries = saved
        return found

    def read(self, servo_id: int, name: str) -> int:
        """The value of register ``name`` of one servo."""
        return self.read_many(servo_id, [name])[name]

    def read_many(self, servo_id: int, names: Sequence[str]) -> dict[str, int]:
        """Several registers of one servo in one READ covering them all: ``{name: value}``."""
        self._check_id(servo_id)
        regs = [self.series.register(n) for n in names]
        first, count = _span(regs)
        op = f"read {', '.join(names)}"
        reply = self._exchange(servo_id, read_packet(servo_id, first, count), count, op)
        return {r.name: self.series.decode(r, reply.params[r.address - first :]) for r in regs}

    def write(self, servo_id: int, name: str, value: int) -> None:
        """Write one register of one servo and wait for its acknowledgement (retried if it is lost)."""
        self.write_many(servo_id, {name: value})

    def write_many(self, servo_id: int, values: Mapping[str, int]) -> None:
        """Write registers that sit next to each other (e.g. acceleration, goal_position, goal_time,
        goal_speed) in one WRITE, acknowledged."""
        self._check_id(servo_id)
        first, data = self._pack(values)
        op = f"write {', '.join(values)}"
        self._exchange(servo_id, write_packet(servo_id, first, data), 0, op)

    def reg_write(self, servo_id: int, name: str, value: int) -> None:
        """Register a write that takes effect at the next ``action()`` (acknowledged)."""
        self._check_id(servo_id)
        first, data = self._pack({name: value})
        self._exchange(servo_id, write_packet(servo_id, first, data, instruction=REG_WRITE), 0, f"reg write {name}")

    def action(self) -> None:
        """Broadcast ACTION: every servo applies its registered write now (no answer)."""
        self._send(action_packet())

    # --- all servos at once ---

    def sync_write(self, name: str, values: Mapping[int, int]) -> None:
        """One SYNC_WRITE packet setting register ``name`` on every servo in ``values`` ({id: value}).

        Broadcast, so unacknowledged: nothing can tell a lost packet; read back to check.
        """
        if not values:
            return
        reg = self.series.register(name)
        _writable(reg)
        data = {}
        for servo_id, value in values.items():
            self._check_id(servo_id)
            data[servo_id] = self.series.encode(reg, value)
        self._send(sync_write_packet(reg.address, reg.size, data))

    def sync_read(self, name: str, ids: Sequence[int]) -> dict[int, int]:
        """Register ``name`` of every servo in ``ids``: ``{id: value}``, one SYNC_READ on STS."""
        return {i: v[name] for i, v in self.sync_read_many([name], ids).items()}

    def sync_read_many(self, names: Sequence[str], ids: Sequence[int]) -> dict[int, dict[str, int]]:
        """Several adjacent registers of every servo in one SYNC_READ: ``{id: {name: value}}``.

        Servos that miss the first request are asked again (``retries``); SCS servos, which have no
        SYNC_READ, are read one by one.
        """
        ids = list(ids)
        for servo_id in ids:
            self._check_id(servo_id)
        if len(set(ids)) != len(ids):
            raise BadInputError(f"sync read: ids {ids} repeat an id")
        if not ids:
            return {}
        if not self.series.sync_read:
            return {servo_id: self.read_many(servo_id, names) for servo_id in ids}
        regs = [self.series.register(n) for n in names]
        first, count = _span(regs)
        op = f"sync read {', '.join(names)}"
        got: dict[int, Packet] = {}
        corrupt: set[int] = set()
        wanted = list(ids)
        for attempt in range(self.retries + 1):
            if attempt:
                self.counters["retries"] += 1
            replies, bad = self._round_trip(sync_read_packet(first, count, wanted), {i: count for i in wanted})
            got.update(replies)
            corrupt |= bad
            wanted = [i for i in ids if i not in got]
            if not wanted:
                break
        if wanted:
            raise self._failure(wanted, corrupt, op)
        self._check_status(got, op)
        return {i: {r.name: self.series.decode(r, got[i].params[r.address - first :]) for r in regs} for i in ids}

    def sync_read_once(
        self, names: Sequence[str], ids: Sequence[int], *, timeout_s: float | None = None
    ) -> tuple[dict[int, dict[str, int]], list[int], set[int]]:
        """One SYNC_READ, not retried, for a stream that cannot wait: (``{id: {name: value}}`` of the servos
        that answered, the ids that did not, those of them whose answer came corrupt). ``timeout_s``: how long
        to wait beyond the bytes' time on the wire (default the bus's). ServoFault if an answer has error
        bits. SCS servos (no SYNC_READ) are read one by one, each once."""
        ids = list(ids)
        for servo_id in ids:
            self._check_id(servo_id)
        regs = [self.series.register(n) for n in names]
        first, count = _span(regs)
        op = f"sync read {', '.join(names)}"
        if self.series.sync_read:
            got, corrupt = self._round_trip(
                sync_read_packet(first, count, ids), dict.fromkeys(ids, count), timeout_s=timeout_s
            )
        else:
            got, corrupt = {}, set()
            for servo_id in ids:
                one, bad = self._round_trip(read_packet(servo_id, first, count), {servo_id: count}, timeout_s=timeout_s)
                got.update(one)
                corrupt |= bad
        self._check_status(got, op)
        decode = self.series.decode
        values = {i: {r.name: decode(r, p.params[r.address - first :]) for r in regs} for i, p in got.items()}
        missing = [i for i in ids if i not in got]
        return values, missing, corrupt & set(missing)

    # --- what a backend needs per frame ---

    def write_positions(self, steps: Mapping[int, int]) -> None:
        """Goal positions (steps) for every servo in one SYNC_WRITE."""
        self.sync_write("goal_position", {i: int(round(v)) for i, v in steps.items()})

    def read_positions(self, ids: Sequence[int]) -> dict[int, int]:
        """Present positions (steps) of every servo in one SYNC_READ."""
        return self.sync_read("present_position", ids)

    def read_states(self, ids: Sequence[int]) -> dict[int, ServoState]:
        """Position, speed, load, voltage, temperature and the moving flag of every servo, one SYNC_READ."""
        raw = self.sync_read_many(_STATE_NAMES, ids)
        return {
            i: ServoState(
                position_steps=v["present_position"],
                speed_steps_s=v["present_speed"],
                load_fraction=v["present_load"] / 1000.0,
                voltage_v=v["present_voltage"] / 10.0,
                temperature_c=v["present_temperature"],
                moving=bool(v["moving"]),
                error_bits=self.error_bits.get(i, 0),
            )
            for i, v in raw.items()
        }

    def set_torque(self, ids: Iterable[int], on: bool) -> None:
        """Torque on or off for each servo, one acknowledged write each (so a missing servo is named).

        Every servo is tried even when one fails, and the first failure is raised afterwards: turning
        the torque off must not stop at a dead servo. Error bits (e.g. overload) do not fail a torque-off.
        """
        reg = self.series.register("torque_enable")
        first_error = None
        for servo_id in ids:
            self._check_id(servo_id)
            packet = write_packet(servo_id, reg.address, self.series.encode(reg, 1 if on else 0))
            try:
                self._exchange(servo_id, packet, 0, f"torque {'on' if on else 'off'}", check=on)
            except LinkError as exc:
                first_error = first_error or exc
        if first_error is not None:
            raise first_error

    def torque_off_all(self) -> None:
        """Broadcast torque off to every servo on the bus in one packet (unacknowledged): for stops."""
        reg = self.series.register("torque_enable")
        self._send(write_packet(BROADCAST_ID, reg.address, self.series.encode(reg, 0)))

    # --- internals ---

    def _check_id(self, servo_id) -> None:
        if isinstance(servo_id, bool) or not isinstance(servo_id, int) or not 0 <= servo_id <= MAX_ID:
            raise BadInputError(f"servo id {servo_id!r} is outside 0..{MAX_ID}")

    def _pack(self, values: Mapping[str, int]) -> tuple[int, bytes]:
        if not values:
            raise BadInputError("write: no registers given")
        regs = sorted((self.series.register(n) for n in values), key=lambda r: r.address)
        for a, b in zip(regs, regs[1:]):
            if a.address + a.size != b.address:
                raise BadInputError(f"write: registers {a.name} and {b.name} are not adjacent; write them apart")
        for r in regs:
            _writable(r)
        return regs[0].address, b"".join(self.series.encode(r, values[r.name]) for r in regs)

    def _port(self):
        if self._ser is None:
            raise LinkError(f"{self.port}: the Feetech bus is not open")
        return self._ser

    def _send(self, packet: bytes) -> float:
        """Write ``packet`` (after dropping stale input); returns when its last byte is on the wire."""
        ser = self._port()
        try:
            if self._rx or ser.in_waiting:
                ser.reset_input_buffer()
                self._rx.clear()
            ser.write(packet)
        except (OSError, ValueError) as exc:  # SerialException is an OSError
            raise LinkError(f"{self.port}: writing to the Feetech bus failed: {exc}") from None
        if self.on_bytes is not None:
            self.on_bytes(">", packet)
        self.counters["packets"] += 1
        self.counters["bytes_out"] += len(packet)
        sent = time.monotonic() + len(packet) * self.byte_s
        if self.echo:
            self._take_echo(packet, sent + self.timeout_s)
        return sent

    def _take_echo(self, packet: bytes, deadline: float) -> None:
        while len(self._rx) < len(packet) and self._fill(len(packet) - len(self._rx), deadline):
            pass
        echo = bytes(self._rx[: len(packet)])
        del self._rx[: len(packet)]
        if echo != packet:
            what = "no echo" if not echo else f"echo {echo.hex(' ')} differs"
            raise ProtocolError(
                f"{self.port}: {what} for the packet sent ({packet.hex(' ')}): a bus collision, or an adapter "
                "that does not echo (then open the bus without echo)"
            )

    def _fill(self, need: int, deadline: float | None) -> bool:
        """Read up to ``need`` more bytes into the buffer, waiting at most the port's short poll timeout.

        Once ``deadline`` has passed, only what has already arrived is taken, and False means there was
        nothing: an answer that came while this process was not running (a loaded machine) still counts.
        """
        ser = self._port()
        try:
            if deadline is not None and time.monotonic() >= deadline:
                waiting = ser.in_waiting
                chunk = ser.read(waiting) if waiting else b""
                late = True
            else:
                chunk = ser.read(max(1, need))
                late = False
        except (OSError, ValueError) as exc:
            raise LinkError(f"{self.port}: reading from the Feetech bus failed: {exc}") from None
        self.counters["bytes_in"] += len(chunk)
        if chunk and self.on_bytes is not None:
            self.on_bytes("<", chunk)
        self._rx += chunk
        return bool(chunk) or not late

    def _round_trip(
        self, request: bytes, expect: dict[int, int], *, timeout_s: float | None = None
    ) -> tuple[dict[int, Packet], set[int]]:
        """Send ``request`` and collect status packets from the ids in ``expect`` ({id: parameter count}),
        waiting ``timeout_s`` (default the bus's) beyond the bytes' time on the wire.

        Returns the packets that came and the ids whose answer (or an answer that may have been theirs)
        was corrupt or malformed. Packets from other ids are dropped (late answers to an earlier request).
        """
        reply_bytes = sum(6 + n for n in expect.values())
        wait = self.timeout_s if timeout_s is None else timeout_s
        deadline = self._send(request) + reply_bytes * self.byte_s + wait
        got: dict[int, Packet] = {}
        corrupt: set[int] = set()
        order = list(expect)
        late_reads = 0
        while len(got) < len(expect):
            item = take_packet(self._rx)
            if item is None:
                left = sum(6 + expect[i] for i in order if i not in got) - len(self._rx)
                late_reads += time.monotonic() >= deadline
                if late_reads > 2 or not self._fill(left, deadline):  # a bus that never stops talking ends too
                    break
                continue
            if isinstance(item, BadPacket):
                self.counters["corrupt"] += 1
                pending = [i for i in order if i not in got]
                corrupt.add(item.id if item.id in pending else pending[0])
                continue
            if item.id in expect and item.id not in got:
                if len(item.params) == expect[item.id]:
                    got[item.id] = item
                    corrupt.discard(item.id)
                else:
                    corrupt.add(item.id)  # an answer of the wrong length
        if len(got) < len(expect):
            self.counters["timeouts"] += 1
            pending = [i for i in order if i not in got]
            if self._rx and not corrupt.intersection(pending):  # bytes that never made a packet: not silence
                corrupt.add(pending[0])
        return got, corrupt

    def _exchange(self, servo_id: int, request: bytes, count: int, op: str, *, check: bool = True) -> Packet:
        corrupt: set[int] = set()
        for attempt in range(self.retries + 1):
            if attempt:
                self.counters["retries"] += 1
            got, bad = self._round_trip(request, {servo_id: count})
            if servo_id in got:
                if check:
                    self._check_status(got, op)
                else:
                    self.error_bits[servo_id] = got[servo_id].code
                return got[servo_id]
            corrupt |= bad
        raise self._failure([servo_id], corrupt, op)

    def _tries(self) -> str:
        return "1 try" if self.retries == 0 else f"{self.retries + 1} tries"

    def _failure(self, missing: list[int], corrupt: set[int], op: str) -> ServoError:
        """The error for servos that never answered well: corrupt answers first, else silence."""
        bad = [i for i in missing if i in corrupt]
        if bad:
            return ServoBadReply(
                f"{self.port}: {_ids_text(bad)}: corrupt reply to {op} (bad checksum, framing or length, "
                f"{self._tries()}): noise on the bus, a loose cable, or two servos with the same id",
                servo_ids=bad,
                operation=op,
            )
        return ServoNoReply(
            f"{self.port}: {_ids_text(missing)}: no reply to {op} within {self.timeout_s * 1000:.0f} ms "
            f"({self._tries()}): check the id, its power and cable, and that it runs at {self.baudrate} baud",
            servo_ids=missing,
            operation=op,
        )

    def _check_status(self, got: Mapping[int, Packet], op: str) -> None:
        faulty = []
        for servo_id, packet in got.items():
            self.error_bits[servo_id] = packet.code
            if packet.code:
                faulty.append(servo_id)
        if faulty and self.check_errors:
            bits = got[faulty[0]].code
            detail = "; ".join(f"servo {i}: {describe_errors(got[i].code)}" for i in faulty)
            raise ServoFault(
                f"{self.port}: {detail} (status error bits 0x{bits:02x}, reported on {op})",
                servo_ids=faulty,
                operation=op,
                bits=bits,
            )


def _span(regs: Sequence[Register]) -> tuple[int, int]:
    if not regs:
        raise BadInputError("read: no registers given")
    first = min(r.address for r in regs)
    last = max(r.address + r.size for r in regs)
    return first, last - first


def _writable(reg: Register) -> None:
    if not reg.writable:
        raise BadInputError(f"register {reg.name} is read-only")
