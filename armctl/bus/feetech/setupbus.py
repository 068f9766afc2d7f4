"""``FeetechSetupBus``: a Feetech bus (``FeetechBus``) as ``armctl servos`` sees it (``armctl.bus.setupbus``).

Feetech's facts for a setup: a new servo is id 1 at 1 Mbaud; the id (register 5) and the baud rate (6, an index
into ``BAUD_RATES``) are EEPROM, kept over a power cycle only when written with the ``lock`` register at 0, so a
write is framed by unlock and lock. The answer to a write of the id or the baud rate may come from the old id or
rate or the new one (firmwares differ), so it is not waited for: the setup reads the registers back instead.
STS servos answer a broadcast ping (one answer each); SCS servos are pinged id by id.
"""

from __future__ import annotations

import time

from armctl.bus.feetech.client import FeetechBus, ServoBadReply, ServoNoReply
from armctl.bus.feetech.protocol import (
    BAUD_RATES,
    BROADCAST_ID,
    MAX_ID,
    MODEL_NAMES,
    BadPacket,
    ping_packet,
    take_packet,
)
from armctl.bus.setupbus import Found, SetupBus
from armctl.errors import LinkError

#: how long a ping waits for its answer beyond the bytes' time on the wire when scanning (s): a CH340 or CP210x
#: adapter answers within 1-2 ms; an FTDI one with its default 16 ms latency timer needs ``timeout_s=0.02``
SCAN_TIMEOUT_S = 0.004
#: tries of a ping whose answer came garbled before it counts as a collision
GARBLED_TRIES = 3


class FeetechSetupBus(SetupBus):
    """A Feetech bus for ``armctl servos``; ``series``: ``sts`` (default) or ``scs``; ``timeout_s``: a scan's
    wait for each answer."""

    backend = "feetech"
    baud_rates = BAUD_RATES
    factory_id = 1
    factory_baud = 1_000_000
    max_id = MAX_ID
    models = MODEL_NAMES

    def __init__(self, port: str, *, series: str = "sts", timeout_s: float = SCAN_TIMEOUT_S):
        super().__init__(port, timeout_s=timeout_s)
        self.bus = FeetechBus(port, series=series, baudrate=self.factory_baud)

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
                except ServoNoReply:
                    return None
                except ServoBadReply:
                    continue
            else:
                return Found(servo_id, bus.baudrate, collided=True)
        finally:
            bus.timeout_s, bus.retries = saved
        regs = bus.read_many(servo_id, ["firmware_major", "firmware_minor", "model_number"])
        number = regs["model_number"]
        return Found(
            servo_id,
            bus.baudrate,
            model_number=number,
            model=MODEL_NAMES.get(number, f"model {number}"),
            firmware=f"{regs['firmware_major']}.{regs['firmware_minor']}",
            known=number in MODEL_NAMES,
        )

    def broadcast(self) -> tuple[list[int], bool] | None:
        bus = self.bus
        if not bus.series.sync_read:  # SCS: no broadcast ping (nor SYNC_READ)
            return None
        ser = bus.serial
        try:
            ser.reset_input_buffer()
            ser.write(ping_packet(BROADCAST_ID))
            # room for a few dozen answers of 6 bytes after the request's own 6
            deadline = time.monotonic() + 200 * bus.byte_s + self.scan_timeout_s
            buf = bytearray()
            while time.monotonic() < deadline:
                buf += ser.read(max(1, ser.in_waiting))
            buf += ser.read(ser.in_waiting)  # what came while this process was not running (a loaded machine)
        except (OSError, ValueError) as exc:
            raise LinkError(f"{self.port}: the Feetech bus failed during a broadcast ping: {exc}") from None
        ids, other = [], False
        while (item := take_packet(buf)) is not None:
            if isinstance(item, BadPacket):
                other = True
            elif item.id != BROADCAST_ID:  # our own request, heard back on an adapter with TX tied to RX
                ids.append(item.id)
        return ids, other or bool(buf)

    def read_id_baud(self, servo_id: int) -> tuple[int, int]:
        regs = self.bus.read_many(servo_id, ["id", "baud_rate"])
        index = regs["baud_rate"]
        return regs["id"], BAUD_RATES[index] if index < len(BAUD_RATES) else -1

    def write_id(self, servo_id: int, new_id: int) -> None:
        self._write_unanswered(servo_id, "id", new_id)

    def write_baud(self, servo_id: int, baud: int) -> None:
        self._write_unanswered(servo_id, "baud_rate", BAUD_RATES.index(baud))

    def _write_unanswered(self, servo_id: int, name: str, value: int) -> None:
        """One write whose answer may not come from where it was sent (see the module note): sent once, its
        answer taken if it comes; the caller reads the register back."""
        bus = self.bus
        saved = bus.retries
        bus.retries = 0
        try:
            bus.write(servo_id, name, value)
        except (ServoNoReply, ServoBadReply):
            pass
        finally:
            bus.retries = saved

    def torque_off(self, servo_id: int) -> None:
        self.bus.set_torque([servo_id], False)

    def unlock(self, servo_id: int) -> None:
        self.bus.write(servo_id, "lock", 0)

    def lock(self, servo_id: int) -> None:
        self.bus.write(servo_id, "lock", 1)
