"""What the clients of serial bus servos (Feetech, Dynamixel) share: ``ServoBus`` and its errors.

A ``ServoBus`` opens any pyserial port or URL (a device path, ``feetechsim://``, ``dynamixelsim://``,
``socket://``...). Every exchange has a bounded timeout and is retried where the protocol allows it (reads,
pings, acknowledged writes); sync writes are unacknowledged and sent once. Every failure is a ``LinkError``
naming the port and the servo: ``ServoNoReply`` (missing id, power, baud), ``ServoBadReply`` (a
``ProtocolError``: corrupt or malformed reply), ``ServoFault`` (the servo answered with error bits: overload,
voltage, overheat...).

A subclass gives its protocol: the packets (``_ping_packet`` ... ``_sync_write_packet``, ``_take_packet``), the
bytes a status packet adds to its parameters (``status_overhead``), its register tables (``_table``: an object with
``register(name)``, ``encode(reg, value)`` and ``decode(reg, data)``, per servo where the models differ) and the
words for a status packet's error code (``_describe``).
"""

from __future__ import annotations

import functools
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from armctl.bus.backend import open_port
from armctl.errors import BadInputError, LinkError, ProtocolError

# --- errors -----------------------------------------------------------------------------------------


class ServoError(LinkError):
    """A failure on a servo bus that names the servo(s): ``servo_ids`` and what was being done."""

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


def ids_text(ids: Sequence[int]) -> str:
    """``servo 3`` or ``servos 3, 4``."""
    return f"servo {ids[0]}" if len(ids) == 1 else "servos " + ", ".join(map(str, ids))


@dataclass(frozen=True)
class ServoState:
    """One servo's feedback registers read at once (``read_states``)."""

    position_steps: int
    speed_steps_s: float
    load_fraction: float  # -1..1 of stall torque (Dynamixel: of its current limit), signed by direction
    voltage_v: float
    temperature_c: int
    moving: bool
    error_bits: int  # the status packet's error bits (0: healthy)
    errors: str = "no error"  # the error bits in words


# --- the client -------------------------------------------------------------------------------------


class ServoBus:
    """A bus of serial servos on a port or URL (see the module note; ``FeetechBus``, ``DynamixelBus``).

    ``timeout_s``: how long to wait for an answer beyond the bytes' time on the wire (USB adapters add up to a
    few ms of latency; FTDI's default latency timer adds 16 ms). ``retries``: extra attempts for exchanges that
    can be repeated safely. ``echo``: the adapter hears its own transmission (TX and RX tied together): each
    packet sent comes back first and is checked and dropped. ``check_errors``: raise ``ServoFault`` when a servo
    reports error bits (else they are only kept in ``error_bits``).

    Lifecycle: ``open()``/``close()`` or a ``with`` block. Not thread-safe: one caller at a time.
    """

    kind = "servo"  #: the bus's maker, in messages ("Feetech", "Dynamixel")
    max_id = 0xFC
    broadcast_id = 0xFE
    status_overhead = 6  #: bytes a status packet has beside its parameters
    header = b""  #: the bytes every packet of the protocol starts with
    sync_reads = True  #: the servos answer SYNC_READ (else ``sync_read`` reads servo by servo)

    def __init__(
        self, port: str, *, baudrate: int, timeout_s: float = 0.05, retries: int = 2, echo=False, check_errors=True
    ):
        if not 0 < timeout_s <= 10:
            raise BadInputError(f"timeout_s {timeout_s} must be in (0, 10] s")
        if not 0 <= retries <= 10:
            raise BadInputError(f"retries {retries} must be in 0..10")
        self.port = port
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

    # --- the protocol (subclasses) ---

    def _table(self, servo_id: int | None = None):
        """The register table of servo ``servo_id`` (None: the bus's default)."""
        raise NotImplementedError

    def _register(self, name: str, servo_id: int | None = None):
        return self._table(servo_id).register(name)

    def has_register(self, name: str, servo_id: int | None = None) -> bool:
        """True if the servo (None: the bus's default model) has register ``name``."""
        try:
            self._register(name, servo_id)
        except BadInputError:
            return False
        return True

    def _describe(self, servo_id: int, code: int) -> str:
        """A status packet's error code in words."""
        raise NotImplementedError

    # --- lifecycle ---

    def open(self):
        """Open the port (LinkError naming it on failure). Nothing is sent: ``ping``/``check_ids`` do that."""
        if self._ser is None:
            self._ser = open_port(self.port, baudrate=self.baudrate, timeout_s=min(0.005, self.timeout_s))
            self._rx.clear()
        return self

    def adopt(self, ser):
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
        """The open pyserial port (``.sim`` on a simulated bus), or None when closed."""
        return self._ser

    def __enter__(self):
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
        reply = self._exchange(servo_id, self._ping_packet(servo_id), self._ping_count, "ping", check=False)
        return reply.code

    _ping_count = 0  #: parameters a ping's answer carries

    def missing(self, ids: Iterable[int]) -> list[int]:
        """The ids of ``ids`` that do not answer a ping (``retries + 1`` tries each)."""
        out = []
        for servo_id in ids:
            try:
                self.ping(servo_id)
            except ServoNoReply:
                out.append(servo_id)
        return out

    def no_reply(self, missing: list[int], ids: list[int]) -> ServoNoReply:
        """The error for ``missing`` ids of ``ids`` that did not answer a ping."""
        return ServoNoReply(
            f"{self.port}: {ids_text(missing)} of {list(ids)} did not answer a ping "
            f"({self._tries()}, {self.baudrate} baud): check ids, power and cable",
            servo_ids=missing,
            operation="ping",
        )

    def check_ids(self, ids: Iterable[int]) -> dict[int, int]:
        """Ping every id and read its model number: ``{id: model_number}``. ServoNoReply naming every
        missing id (pinged ``retries + 1`` times each)."""
        ids = list(ids)
        missing = self.missing(ids)
        if missing:
            raise self.no_reply(missing, ids)
        return {servo_id: self.read(servo_id, "model_number") for servo_id in ids}

    def scan(self, ids: Iterable[int] | None = None, *, timeout_s: float = 0.005) -> dict[int, int]:
        """Ping each id once with a short timeout: ``{id: error_bits}`` of those that answer (discovery)."""
        saved = self.timeout_s, self.retries
        self.timeout_s, self.retries = timeout_s, 0
        found = {}
        try:
            for servo_id in range(self.max_id + 1) if ids is None else ids:
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
        regs = [self._register(n, servo_id) for n in names]
        first, count = span(regs)
        op = f"read {', '.join(names)}"
        reply = self._exchange(servo_id, self._read_packet(servo_id, first, count), count, op)
        table = self._table(servo_id)
        return {n: table.decode(r, reply.params[r.address - first :]) for n, r in zip(names, regs)}

    def write(self, servo_id: int, name: str, value: int) -> None:
        """Write one register of one servo and wait for its acknowledgement (retried if it is lost)."""
        self.write_many(servo_id, {name: value})

    def write_many(self, servo_id: int, values: Mapping[str, int]) -> None:
        """Write registers that sit next to each other in one WRITE, acknowledged."""
        self._check_id(servo_id)
        first, data = self._pack(values, servo_id)
        op = f"write {', '.join(values)}"
        self._exchange(servo_id, self._write_packet(servo_id, first, data), 0, op)

    # --- all servos at once ---

    def sync_write(self, name: str, values: Mapping[int, int]) -> None:
        """One SYNC_WRITE packet setting register ``name`` on every servo in ``values`` ({id: value}).

        Broadcast, so unacknowledged: nothing can tell a lost packet; read back to check.
        """
        if not values:
            return
        data = {}
        reg = None
        for servo_id, value in values.items():
            self._check_id(servo_id)
            reg = self._register(name, servo_id)
            writable(reg)
            data[servo_id] = self._table(servo_id).encode(reg, value)
        self._send(self._sync_write_packet(reg.address, reg.size, data))

    def sync_read(self, name: str, ids: Sequence[int]) -> dict[int, int]:
        """Register ``name`` of every servo in ``ids``: ``{id: value}``, one SYNC_READ."""
        return {i: v[name] for i, v in self.sync_read_many([name], ids).items()}

    def sync_read_many(self, names: Sequence[str], ids: Sequence[int]) -> dict[int, dict[str, int]]:
        """Several adjacent registers of every servo in one SYNC_READ: ``{id: {name: value}}``.

        Servos that miss the first request are asked again (``retries``); servos with no SYNC_READ (Feetech SCS)
        are read one by one.
        """
        ids = list(ids)
        for servo_id in ids:
            self._check_id(servo_id)
        if len(set(ids)) != len(ids):
            raise BadInputError(f"sync read: ids {ids} repeat an id")
        if not ids:
            return {}
        if not self.sync_reads:
            return {servo_id: self.read_many(servo_id, names) for servo_id in ids}
        first, count = span([self._register(n, ids[0]) for n in names])
        request = functools.partial(self._sync_read_packet, first, count)  # (ids) -> the packet asking them
        got = self._gather(request, dict.fromkeys(ids, count), f"sync read {', '.join(names)}")
        return {i: self._decoded(names, i, first, got[i].params) for i in ids}

    def _gather(self, request, counts: dict[int, int], op: str) -> dict:
        """``{id: status packet}`` of every servo in ``counts`` ({id: parameter count}) to ``request(ids)`` (the
        packet asking those ids), asked again of those that missed it (``retries``); their error bits checked."""
        got: dict = {}
        corrupt: set[int] = set()
        wanted = list(counts)
        for attempt in range(self.retries + 1):
            if attempt:
                self.counters["retries"] += 1
            replies, bad = self._round_trip(request(wanted), {i: counts[i] for i in wanted})
            got.update(replies)
            corrupt |= bad
            wanted = [i for i in counts if i not in got]
            if not wanted:
                break
        if wanted:
            raise self._failure(wanted, corrupt, op)
        self._check_status(got, op)
        return got

    def _decoded(self, names: Sequence[str], servo_id: int, first: int, params: bytes) -> dict[str, int]:
        """``{register name: value}`` of servo ``servo_id`` from the parameters of its answer (from ``first``)."""
        table = self._table(servo_id)
        regs = [self._register(n, servo_id) for n in names]
        return {r.name: table.decode(r, params[r.address - first :]) for r in regs}

    def sync_read_once(
        self, names: Sequence[str], ids: Sequence[int], *, timeout_s: float | None = None
    ) -> tuple[dict[int, dict[str, int]], list[int], set[int]]:
        """One SYNC_READ, not retried, for a stream that cannot wait: (``{id: {name: value}}`` of the servos
        that answered, the ids that did not, those of them whose answer came corrupt). ``timeout_s``: how long
        to wait beyond the bytes' time on the wire (default the bus's). ServoFault if an answer has error
        bits. Servos with no SYNC_READ are read one by one, each once."""
        ids = list(ids)
        for servo_id in ids:
            self._check_id(servo_id)
        first, count = span([self._register(n, ids[0] if ids else None) for n in names])
        op = f"sync read {', '.join(names)}"
        if self.sync_reads:
            request = self._sync_read_packet(first, count, ids)
            got, corrupt = self._round_trip(request, dict.fromkeys(ids, count), timeout_s=timeout_s)
        else:
            got, corrupt = {}, set()
            for servo_id in ids:
                request = self._read_packet(servo_id, first, count)
                one, bad = self._round_trip(request, {servo_id: count}, timeout_s=timeout_s)
                got.update(one)
                corrupt |= bad
        self._check_status(got, op)
        values = {i: self._decoded(names, i, first, p.params) for i, p in got.items()}
        missing = [i for i in ids if i not in got]
        return values, missing, corrupt & set(missing)

    # --- what a backend needs per frame ---

    def write_positions(self, steps: Mapping[int, int]) -> None:
        """Goal positions (steps) for every servo in one SYNC_WRITE."""
        self.sync_write("goal_position", {i: int(round(v)) for i, v in steps.items()})

    def read_positions(self, ids: Sequence[int]) -> dict[int, int]:
        """Present positions (steps) of every servo in one SYNC_READ."""
        return self.sync_read("present_position", ids)

    def set_torque(self, ids: Iterable[int], on: bool) -> None:
        """Torque on or off for each servo, one acknowledged write each (so a missing servo is named).

        Every servo is tried even when one fails, and the first failure is raised afterwards: turning
        the torque off must not stop at a dead servo. Error bits (e.g. overload) do not fail a torque-off.
        """
        first_error = None
        for servo_id in ids:
            self._check_id(servo_id)
            reg = self._register("torque_enable", servo_id)
            data = self._table(servo_id).encode(reg, 1 if on else 0)
            packet = self._write_packet(servo_id, reg.address, data)
            try:
                self._exchange(servo_id, packet, 0, f"torque {'on' if on else 'off'}", check=on)
            except LinkError as exc:
                first_error = first_error or exc
        if first_error is not None:
            raise first_error

    def torque_off_all(self) -> None:
        """Broadcast torque off to every servo on the bus in one packet (unacknowledged): for stops."""
        reg = self._register("torque_enable")
        self._send(self._write_packet(self.broadcast_id, reg.address, self._table().encode(reg, 0)))

    # --- internals ---

    def _check_id(self, servo_id) -> None:
        if isinstance(servo_id, bool) or not isinstance(servo_id, int) or not 0 <= servo_id <= self.max_id:
            raise BadInputError(f"servo id {servo_id!r} is outside 0..{self.max_id}")

    def _pack(self, values: Mapping[str, int], servo_id: int | None = None) -> tuple[int, bytes]:
        if not values:
            raise BadInputError("write: no registers given")
        regs = sorted((self._register(n, servo_id) for n in values), key=lambda r: r.address)
        for a, b in zip(regs, regs[1:]):
            if a.address + a.size != b.address:
                raise BadInputError(f"write: registers {a.name} and {b.name} are not adjacent; write them apart")
        for r in regs:
            writable(r)
        table = self._table(servo_id)
        return regs[0].address, b"".join(table.encode(r, values[r.name]) for r in regs)

    def _port(self):
        if self._ser is None:
            raise LinkError(f"{self.port}: the {self.kind} bus is not open")
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
            raise LinkError(f"{self.port}: writing to the {self.kind} bus failed: {exc}") from None
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
            raise LinkError(f"{self.port}: reading from the {self.kind} bus failed: {exc}") from None
        self.counters["bytes_in"] += len(chunk)
        if chunk and self.on_bytes is not None:
            self.on_bytes("<", chunk)
        self._rx += chunk
        return bool(chunk) or not late

    def _round_trip(self, request: bytes, expect: dict[int, int], *, timeout_s: float | None = None):
        """Send ``request`` and collect status packets from the ids in ``expect`` ({id: parameter count}),
        waiting ``timeout_s`` (default the bus's) beyond the bytes' time on the wire.

        Returns the packets that came ({id: packet}) and the ids whose answer (or an answer that may have been
        theirs) was corrupt or malformed. Packets from other ids are dropped (late answers to an earlier request).
        """
        extra = self.status_overhead
        reply_bytes = sum(extra + n for n in expect.values())
        wait = self.timeout_s if timeout_s is None else timeout_s
        deadline = self._send(request) + reply_bytes * self.byte_s + wait
        got: dict = {}
        corrupt: set[int] = set()
        order = list(expect)
        late_reads = noise = 0
        while len(got) < len(expect):
            noise += self._drop_noise()
            item = self._take_packet(self._rx)
            if item is None:
                left = sum(extra + expect[i] for i in order if i not in got) - len(self._rx)
                late_reads += time.monotonic() >= deadline
                if late_reads > 2 or not self._fill(left, deadline):  # a bus that never stops talking ends too
                    break
                continue
            if not self._is_status(item):
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
            if (self._rx or noise) and not corrupt.intersection(pending):  # bytes that made no packet: not silence
                corrupt.add(pending[0])
        return got, corrupt

    def _drop_noise(self) -> int:
        """Drop the bytes before the buffer's first header (an answer whose header was hit on the wire, or
        line noise) and return how many: a servo that was heard this way did answer, though not readably."""
        start = self._rx.find(self.header)
        if start < 0:
            h = self.header
            start = len(self._rx) - next((n for n in range(len(h) - 1, 0, -1) if self._rx.endswith(h[:n])), 0)
        del self._rx[:start]
        return start

    def _is_status(self, item) -> bool:
        """True for a good status packet (``_take_packet``'s); False for a corrupt one (it has ``id``)."""
        raise NotImplementedError

    def _exchange(self, servo_id: int, request: bytes, count: int, op: str, *, check: bool = True):
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
                f"{self.port}: {ids_text(bad)}: corrupt reply to {op} (bad checksum, framing or length, "
                f"{self._tries()}): noise on the bus, a loose cable, or two servos with the same id",
                servo_ids=bad,
                operation=op,
            )
        return ServoNoReply(
            f"{self.port}: {ids_text(missing)}: no reply to {op} within {self.timeout_s * 1000:.0f} ms "
            f"({self._tries()}): check the id, its power and cable, and that it runs at {self.baudrate} baud",
            servo_ids=missing,
            operation=op,
        )

    def _check_status(self, got: Mapping, op: str) -> None:
        faulty = []
        for servo_id, packet in got.items():
            self.error_bits[servo_id] = packet.code
            if packet.code:
                faulty.append(servo_id)
        if faulty and self.check_errors:
            bits = got[faulty[0]].code
            detail = "; ".join(f"servo {i}: {self._describe(i, got[i].code)}" for i in faulty)
            raise ServoFault(
                f"{self.port}: {detail} (status error bits 0x{bits:02x}, reported on {op})",
                servo_ids=faulty,
                operation=op,
                bits=bits,
            )


def span(regs: Sequence) -> tuple[int, int]:
    """(first address, byte count) of the registers ``regs`` and what lies between them."""
    if not regs:
        raise BadInputError("read: no registers given")
    first = min(r.address for r in regs)
    last = max(r.address + r.size for r in regs)
    return first, last - first


def writable(reg) -> None:
    """BadInputError if register ``reg`` is read-only."""
    if not reg.writable:
        raise BadInputError(f"register {reg.name} is read-only")
