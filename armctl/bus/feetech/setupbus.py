"""``FeetechSetupBus``: a Feetech bus (``FeetechBus``) as ``armctl servos`` sees it (``armctl.bus.setupbus``).

Feetech's facts for a setup: a new servo is id 1 at 1 Mbaud; the id (register 5) and the baud rate (6, an index
into ``BAUD_RATES``) are EEPROM, kept over a power cycle only when written with the ``lock`` register at 0, so a
write is framed by unlock and lock. The answer to a write of the id or the baud rate may come from the old id or
rate or the new one (firmwares differ), so it is not waited for: the setup reads the registers back instead.
STS servos answer a broadcast ping (one answer each); SCS servos are pinged id by id.
"""

from __future__ import annotations

from armctl.bus.feetech import protocol
from armctl.bus.feetech.client import FeetechBus, ServoBadReply, ServoNoReply
from armctl.bus.feetech.protocol import BAUD_RATES, MAX_ID, MODEL_NAMES
from armctl.bus.setupbus import ClientSetupBus

#: how long a ping waits for its answer beyond the bytes' time on the wire when scanning (s): a CH340 or CP210x
#: adapter answers within 1-2 ms; an FTDI one with its default 16 ms latency timer needs ``timeout_s=0.02``
SCAN_TIMEOUT_S = 0.004


class FeetechSetupBus(ClientSetupBus):
    """A Feetech bus for ``armctl servos``; ``series``: ``sts`` (default) or ``scs``; ``timeout_s``: a scan's
    wait for each answer."""

    backend = "feetech"
    baud_rates = BAUD_RATES
    factory_id = 1
    factory_baud = 1_000_000
    max_id = MAX_ID
    models = MODEL_NAMES
    protocol = protocol
    no_reply, bad_reply = ServoNoReply, ServoBadReply
    baud_values = {baud: index for index, baud in enumerate(BAUD_RATES)}
    firmware_registers = ("firmware_major", "firmware_minor")

    def __init__(self, port: str, *, series: str = "sts", timeout_s: float = SCAN_TIMEOUT_S):
        self.series = series
        super().__init__(port, timeout_s=timeout_s)

    def make_client(self, port: str) -> FeetechBus:
        return FeetechBus(port, series=self.series, baudrate=self.factory_baud)

    def firmware(self, regs: dict[str, int]) -> str:
        return f"{regs['firmware_major']}.{regs['firmware_minor']}"

    def broadcast(self) -> tuple[list[int], bool] | None:
        return super().broadcast() if self.bus.series.sync_read else None  # SCS: no broadcast ping

    def unlock(self, servo_id: int) -> None:
        self.bus.write(servo_id, "lock", 0)

    def lock(self, servo_id: int) -> None:
        self.bus.write(servo_id, "lock", 1)
