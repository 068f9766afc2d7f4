"""``DynamixelSetupBus``: a Dynamixel Protocol 2.0 bus (``DynamixelBus``) as ``armctl servos`` sees it
(``armctl.bus.setupbus``).

Dynamixel's facts for a setup: a new X-series servo is id 1 at 57600 baud; the id (register 7) and the baud rate
(8, a code: ``BAUD_RATES``) are EEPROM, writable only with the torque off (the setup turns it off first) and kept
without a lock register. A ping answers the model number and the firmware version. In a broadcast ping each
servo answers in turn, spaced by its id, so the listening window covers every id's answer.
"""

from __future__ import annotations

from armctl.bus.dynamixel import protocol
from armctl.bus.dynamixel.client import DynamixelBus, UnknownModel
from armctl.bus.dynamixel.protocol import BAUD_RATES, MAX_ID, MODEL_NUMBERS, get_model
from armctl.bus.servobus import ServoBadReply, ServoNoReply
from armctl.bus.setupbus import ClientSetupBus
from armctl.errors import BadInputError

#: a scan's wait for each answer beyond its bytes' time on the wire (s); U2D2 and OpenRB adapters answer within
#: 1-2 ms (an FTDI one with its default 16 ms latency timer: ``--timeout-ms 20``)
SCAN_TIMEOUT_S = 0.004
FACTORY_BAUD = 57_600


class DynamixelSetupBus(ClientSetupBus):
    """A Dynamixel bus for ``armctl servos``; ``timeout_s``: a scan's wait for each answer."""

    backend = "dynamixel"
    # the factory's rate first, then LeRobot's (1 Mbaud), then the others
    baud_rates = (FACTORY_BAUD, 1_000_000, *(b for b in BAUD_RATES.values() if b not in (FACTORY_BAUD, 1_000_000)))
    factory_id = 1
    factory_baud = FACTORY_BAUD
    max_id = MAX_ID
    models = {number: model.name for number, model in MODEL_NUMBERS.items()}
    protocol = protocol
    no_reply, bad_reply, unknown_model = ServoNoReply, ServoBadReply, (UnknownModel,)
    baud_values = {baud: code for code, baud in BAUD_RATES.items()}
    firmware_registers = ("firmware_version",)
    broadcast_bytes = 14 * (MAX_ID + 1)  # a status packet of a ping (14 bytes) for every id, in turn

    def __init__(self, port: str, *, timeout_s: float = SCAN_TIMEOUT_S):
        super().__init__(port, timeout_s=timeout_s)

    def model_bauds(self, model: str) -> tuple[int, ...]:
        """The rates in the model's own baud table (an XL330 stops at 4 Mbaud; an XL430 runs at 4.5 Mbaud too)."""
        try:
            table = get_model(model).baud_rates
        except BadInputError:
            return self.baud_rates
        return tuple(b for b in self.baud_rates if b in table.values()) or self.baud_rates

    def make_client(self, port: str) -> DynamixelBus:
        return DynamixelBus(port, baudrate=self.factory_baud)

    def firmware(self, regs: dict[str, int]) -> str:
        return str(regs["firmware_version"])
