"""Feetech serial bus servos (STS/SMS and SCS series): the client, ``FeetechBus``, and its errors.

The protocol (constants, register tables, packets) is in ``feetech_protocol``; its names are importable
from here too, where they were first.

``FeetechBus`` opens any pyserial port or URL (a device path, ``feetechsim://``, ``socket://``...). Every
exchange has a bounded timeout and is retried where the protocol allows it (reads, pings, acknowledged
writes); sync writes are unacknowledged and sent once. Every failure is a ``LinkError`` naming the port
and the servo: ``ServoNoReply`` (missing id, power, baud), ``ServoBadReply`` (a ``ProtocolError``:
corrupt or malformed reply), ``ServoFault`` (the servo answered with error bits: overload, voltage,
overheat...).
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from armctl.bus.backend import open_port
from armctl.bus.feetech.protocol import *  # noqa: F403  (the protocol's names, importable from here as before)
from armctl.bus.feetech.protocol import (
    BAUD_RATES,
    BROADCAST_ID,
    DEFAULT_BAUD,
    MAX_ID,
    REG_WRITE,
    BadPacket,
    Packet,
    Register,
    Series,
    action_packet,
    describe_errors,
    get_series,
    ping_packet,
    read_packet,
    sync_read_packet,
    sync_write_packet,
    take_packet,
    write_packet,
)
from armctl.errors import BadInputError, LinkError, ProtocolError

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
