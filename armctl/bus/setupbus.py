"""What ``armctl servos`` (``armctl.bus.setup``) needs of a bus of servos to give them ids and baud rates, whatever
the bus (Feetech, Dynamixel): ``SetupBus``, and what a ping found (``Found``).

A bus implements a handful of primitives: the host's baud rate, a ping that tells a clean answer from a garbled
one, a broadcast ping where the protocol has one, the id and baud registers (read and write), EEPROM unlock and
lock where the series has a lock, and torque off. Everything else (scanning, refusing a taken id, verifying,
the one-servo-at-a-time setup) is written once over these, in ``armctl.bus.setup``. ``ClientSetupBus`` does the
primitives over a client with ``FeetechBus``'s methods: a bus then names its client, baud table and packets.
"""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from dataclasses import dataclass
from types import ModuleType

from armctl.errors import LinkError

#: tries of a ping whose answer came garbled before it counts as a collision
GARBLED_TRIES = 3


@dataclass(frozen=True)
class Found:
    """What answered a ping at ``id`` on ``baud``: one servo (``model_number``, ``model``: its name, or ``"model N"``
    for a model armctl does not know: ``known`` False; ``firmware`` as ``"MAJOR.MINOR"``), or, ``collided``, a
    garbled answer every time: two servos on one id (or a bus too noisy to talk on), whose model cannot be known."""

    id: int
    baud: int
    model_number: int | None = None
    model: str = ""
    firmware: str = ""
    collided: bool = False
    known: bool = True

    def as_dict(self) -> dict:
        return {
            "id": self.id,
            "baud": self.baud,
            "model_number": self.model_number,
            "model": self.model or None,
            "firmware": self.firmware or None,
            "known_model": self.known and not self.collided,
            "collision": self.collided,
        }


class SetupBus(ABC):
    """A servo bus as a setup sees it. A subclass wraps its bus's client and sets the class facts below.

    Every method talks to one servo by id at the host's current baud rate (``use_baud``); each raises the
    bus's ``LinkError`` when the servo does not answer (``ping`` and ``broadcast`` only report)."""

    backend = ""  #: the ``--backend`` name
    baud_rates: tuple[int, ...] = ()  #: every rate the servos run at, the factory's first
    factory_id = 1  #: the id a new servo comes with
    factory_baud = 0  #: the baud rate a new servo comes with
    max_id = 0  #: the largest id a servo may have (0..max_id)
    models: dict[int, str] = {}  #: the model numbers armctl knows, and their names

    def __init__(self, port: str, *, timeout_s: float):
        self.port = port
        self.scan_timeout_s = timeout_s  #: how long a ping waits for its answer beyond its bytes' time on the wire

    def __enter__(self) -> SetupBus:
        self.open()
        return self

    def __exit__(self, *exc) -> bool:
        self.close()
        return False

    @abstractmethod
    def open(self) -> None:
        """Open the port (at the factory baud rate)."""

    @abstractmethod
    def close(self) -> None:
        """Release the port (safe to call twice)."""

    def model_bauds(self, model: str) -> tuple[int, ...]:
        """The baud rates servo model ``model`` runs at (default: every one of ``baud_rates``)."""
        return self.baud_rates

    @abstractmethod
    def use_baud(self, baud: int) -> None:
        """Talk at ``baud`` from now on (one of ``baud_rates``)."""

    @abstractmethod
    def ping(self, servo_id: int) -> Found | None:
        """Ping ``servo_id`` quickly (a short timeout; a garbled answer asked again): what answered, or None."""

    @abstractmethod
    def broadcast(self) -> tuple[list[int], bool] | None:
        """A broadcast ping: (the ids that answered cleanly, whether anything else came: garbage, a collision),
        or None when the bus has no broadcast ping (then each id is pinged)."""

    @abstractmethod
    def read_id_baud(self, servo_id: int) -> tuple[int, int]:
        """The servo's id and baud rate as its registers hold them."""

    @abstractmethod
    def write_id(self, servo_id: int, new_id: int) -> None:
        """Write the id register of ``servo_id`` (EEPROM: unlocked first where the series locks it)."""

    @abstractmethod
    def write_baud(self, servo_id: int, baud: int) -> None:
        """Write the baud-rate register of ``servo_id`` (the servo answers at ``baud`` afterwards)."""

    @abstractmethod
    def torque_off(self, servo_id: int) -> None:
        """Torque off (some series keep their EEPROM read-only while the torque is on)."""

    def unlock(self, servo_id: int) -> None:  # noqa: B027 (a default: most buses have no lock)
        """Let EEPROM writes be kept (a series with a lock register); nothing by default."""

    def lock(self, servo_id: int) -> None:  # noqa: B027
        """Lock the EEPROM again after ``unlock``; nothing by default."""


class ClientSetupBus(SetupBus):
    """A setup bus over a client with ``FeetechBus``'s interface (``ping``, ``read_many``, ``write``,
    ``set_torque``; ``timeout_s``, ``retries``, ``baudrate``, ``byte_s``, ``serial``). A subclass sets the class
    facts of ``SetupBus`` and those below, makes its client (``make_client``) and says its firmware version."""

    protocol: ModuleType  #: its packets: ``ping_packet``, ``take_packet``, ``BadPacket``, ``BROADCAST_ID``
    no_reply: type[Exception] = LinkError  #: the client's error for silence
    bad_reply: type[Exception] = LinkError  #: the client's error for a garbled answer
    baud_values: dict[int, int] = {}  #: baud rate -> the baud register's value
    firmware_registers: tuple[str, ...] = ()  #: read with ``model_number`` after a ping
    #: the client's errors for a servo that answered a ping but is of a model it has no table for
    unknown_model: tuple[type[Exception], ...] = ()
    #: how long a broadcast ping listens, in bytes' time on the wire (beyond ``scan_timeout_s``): room for the
    #: answers, however the servos space them out
    broadcast_bytes = 300

    def __init__(self, port: str, *, timeout_s: float):
        super().__init__(port, timeout_s=timeout_s)
        self.bus = self.make_client(port)

    @abstractmethod
    def make_client(self, port: str):
        """The client on ``port`` at the factory baud rate, not yet open."""

    @abstractmethod
    def firmware(self, regs: dict[str, int]) -> str:
        """The firmware version from the ``firmware_registers`` read."""

    def open(self) -> None:
        self.bus.open()

    def close(self) -> None:
        self.bus.close()

    def use_baud(self, baud: int) -> None:
        bus = self.bus
        bus.baudrate, bus.byte_s = baud, 10.0 / baud
        try:
            bus.serial.baudrate = baud
        except (OSError, ValueError) as exc:
            raise LinkError(f"{self.port}: cannot set {baud} baud: {exc}") from None

    def ping(self, servo_id: int) -> Found | None:
        bus = self.bus
        saved = bus.timeout_s, bus.retries
        bus.timeout_s, bus.retries = self.scan_timeout_s, 0
        try:
            for _ in range(GARBLED_TRIES):
                try:
                    bus.ping(servo_id)
                    break
                except self.unknown_model:  # it answered: its model number is read below
                    break
                except self.no_reply:
                    return None
                except self.bad_reply:
                    continue
            else:
                return Found(servo_id, bus.baudrate, collided=True)
        finally:
            bus.timeout_s, bus.retries = saved
        regs = bus.read_many(servo_id, [*self.firmware_registers, "model_number"])
        number = regs["model_number"]
        name = self.models.get(number)
        return Found(servo_id, bus.baudrate, number, name or f"model {number}", self.firmware(regs), known=bool(name))

    def broadcast(self) -> tuple[list[int], bool] | None:
        bus, p = self.bus, self.protocol
        ser = bus.serial
        try:
            ser.reset_input_buffer()
            ser.write(p.ping_packet(p.BROADCAST_ID))
            deadline = time.monotonic() + self.broadcast_bytes * bus.byte_s + self.scan_timeout_s
            buf = bytearray()
            while time.monotonic() < deadline:
                buf += ser.read(max(1, ser.in_waiting))
            buf += ser.read(ser.in_waiting)  # what came while this process was not running (a loaded machine)
        except (OSError, ValueError) as exc:
            raise LinkError(f"{self.port}: the bus failed during a broadcast ping: {exc}") from None
        ids, other = [], False
        while True:
            head = bytes(buf[: len(p.HEADER)])
            if head and not p.HEADER.startswith(head):  # bytes before a header (the parser skips them): garbage,
                other = True  # as answers that collided into a broken header leave
            if (item := p.take_packet(buf)) is None:
                break
            if isinstance(item, p.BadPacket):
                other = True
            elif item.id != p.BROADCAST_ID:  # our own request, heard back on an adapter with TX tied to RX
                ids.append(item.id)
        return ids, other or bool(buf)

    def read_id_baud(self, servo_id: int) -> tuple[int, int]:
        regs = self.bus.read_many(servo_id, ["id", "baud_rate"])
        bauds = {v: b for b, v in self.baud_values.items()}
        return regs["id"], bauds.get(regs["baud_rate"], -1)

    def write_id(self, servo_id: int, new_id: int) -> None:
        self._write_unanswered(servo_id, "id", new_id)

    def write_baud(self, servo_id: int, baud: int) -> None:
        self._write_unanswered(servo_id, "baud_rate", self.baud_values[baud])

    def _write_unanswered(self, servo_id: int, name: str, value: int) -> None:
        """One write whose answer may come from the old id or rate or the new one (firmwares differ): sent once,
        its answer taken if it comes; the caller reads the register back."""
        bus = self.bus
        saved = bus.retries
        bus.retries = 0
        try:
            bus.write(servo_id, name, value)
        except (self.no_reply, self.bad_reply):
            pass
        finally:
            bus.retries = saved

    def torque_off(self, servo_id: int) -> None:
        self.bus.set_torque([servo_id], False)
