"""What ``armctl servos`` (``armctl.bus.setup``) needs of a bus of servos to give them ids and baud rates, whatever
the bus (Feetech, Dynamixel): ``SetupBus``, and what a ping found (``Found``).

A bus implements a handful of primitives: the host's baud rate, a ping that tells a clean answer from a garbled
one, a broadcast ping where the protocol has one, the id and baud registers (read and write), EEPROM unlock and
lock where the series has a lock, and torque off. Everything else (scanning, refusing a taken id, verifying,
the one-servo-at-a-time setup) is written once over these, in ``armctl.bus.setup``.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass


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
