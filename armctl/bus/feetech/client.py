"""Feetech serial bus servos (STS/SMS and SCS series): the client, ``FeetechBus``, and its errors.

The protocol (constants, register tables, packets) is in ``feetech_protocol``; its names are importable
from here too, where they were first.

``FeetechBus`` opens any pyserial port or URL (a device path, ``feetechsim://``, ``socket://``...); what it
shares with the Dynamixel client (timeouts, retries, the errors naming port and servo: ``ServoNoReply``,
``ServoBadReply``, ``ServoFault``) is ``armctl.bus.servobus``'s, whose errors import from here too.
"""

from __future__ import annotations

from collections.abc import Sequence

from armctl.bus.feetech.protocol import *  # noqa: F403  (the protocol's names, importable from here as before)
from armctl.bus.feetech.protocol import (
    BAUD_RATES,
    DEFAULT_BAUD,
    HEADER,
    REG_WRITE,
    BadPacket,
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
from armctl.bus.servobus import (  # noqa: F401  (the errors, importable from here as before)
    ServoBadReply,
    ServoBus,
    ServoError,
    ServoFault,
    ServoNoReply,
    ServoState,
)
from armctl.errors import BadInputError

# --- the client -------------------------------------------------------------------------------------


_STATE_NAMES = (
    "present_position",
    "present_speed",
    "present_load",
    "present_voltage",
    "present_temperature",
    "moving",
)


class FeetechBus(ServoBus):
    """A Feetech servo bus on a serial port or URL (``armctl.bus.servobus.ServoBus``: timeouts, retries, errors).

    ``series``: ``"sts"`` (STS/SMS, the SO-100/SO-101's STS3215; little-endian) or ``"scs"`` (big-endian,
    no SYNC_READ: ``sync_read`` then reads servo by servo). ``timeout_s``, ``retries``, ``echo``,
    ``check_errors``: as ``ServoBus``'s.
    """

    kind = "Feetech"
    header = HEADER
    status_overhead = 6

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
        self.series = get_series(series)
        if baudrate not in BAUD_RATES:
            raise BadInputError(f"baud rate {baudrate} is not one a Feetech servo runs at: {BAUD_RATES}")
        self.sync_reads = self.series.sync_read
        super().__init__(
            port, baudrate=baudrate, timeout_s=timeout_s, retries=retries, echo=echo, check_errors=check_errors
        )

    # --- the protocol ---

    def _table(self, servo_id: int | None = None) -> Series:
        return self.series

    def _describe(self, servo_id: int, code: int) -> str:
        return describe_errors(code)

    _ping_packet = staticmethod(ping_packet)
    _read_packet = staticmethod(read_packet)
    _write_packet = staticmethod(write_packet)
    _sync_read_packet = staticmethod(sync_read_packet)
    _sync_write_packet = staticmethod(sync_write_packet)
    _take_packet = staticmethod(take_packet)

    def _is_status(self, item) -> bool:
        return not isinstance(item, BadPacket)

    def scan(self, ids=None, *, timeout_s: float = 0.005) -> dict[int, int]:
        """Ping each id once with a short timeout: ``{id: error_bits}`` of those that answer (discovery)."""
        return super().scan(ids, timeout_s=timeout_s)

    def reg_write(self, servo_id: int, name: str, value: int) -> None:
        """Register a write that takes effect at the next ``action()`` (acknowledged)."""
        self._check_id(servo_id)
        first, data = self._pack({name: value})
        self._exchange(servo_id, write_packet(servo_id, first, data, instruction=REG_WRITE), 0, f"reg write {name}")

    def action(self) -> None:
        """Broadcast ACTION: every servo applies its registered write now (no answer)."""
        self._send(action_packet())

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
                errors=describe_errors(self.error_bits.get(i, 0)),
            )
            for i, v in raw.items()
        }
