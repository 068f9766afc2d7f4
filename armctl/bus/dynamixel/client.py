"""ROBOTIS Dynamixel X-series servos on one Protocol 2.0 bus: the client, ``DynamixelBus``.

``DynamixelBus`` opens any pyserial port or URL (a device path, ``dynamixelsim://``, ``socket://``...); what it
shares with the Feetech client (timeouts, retries, the errors naming port and servo: ``ServoNoReply``,
``ServoBadReply``, ``ServoFault``) is ``armctl.bus.servobus``'s. Registers are named as in ``protocol``'s control
tables, per servo: a ping tells each servo's model (number), and its own table reads and writes it, so one bus may
mix models (the Koch arm's XL430 and XL330). Present_Current (models that sense current) and Present_Load (the
XL430, XC430: 0.1 % of the maximum torque) share address 126: either name reads whichever the servo has.
``read_units``/``write_units`` take the registers' units (rpm, V, mA, degC...) instead of counts.

A status packet's error byte is an error number (access, data range, data limit...) plus the alert bit: a
hardware error (overload, overheating, input voltage...), which ``ServoFault``'s line spells out from the servo's
Hardware_Error_Status; the servo then keeps its torque off until it is rebooted (``reboot``).
"""

from __future__ import annotations

import re
import time
from collections.abc import Mapping, Sequence

from armctl.bus.dynamixel.protocol import (
    ALERT,
    BAUD_RATES,
    BROADCAST_ID,
    DEFAULT_BAUD,
    HEADER,
    MAX_ID,
    MODEL_NUMBERS,
    MODELS,
    RPM_PER_VELOCITY_UNIT,
    STEPS_PER_TURN,
    BadPacket,
    Model,
    Packet,
    bulk_read_packet,
    describe_error,
    describe_hardware_errors,
    get_model,
    ping_packet,
    read_packet,
    reboot_packet,
    sync_read_packet,
    sync_write_packet,
    take_packet,
    write_packet,
)
from armctl.bus.servobus import ServoBadReply, ServoBus, ServoError, ServoFault, ServoNoReply, ServoState, span
from armctl.errors import BadInputError

STEPS_S_PER_VELOCITY_UNIT = RPM_PER_VELOCITY_UNIT * STEPS_PER_TURN / 60.0  # 0.229 rpm in steps/s
REBOOT_S = 1.0  # how long a rebooting servo may take to answer again
#: the baud rates ``find_baud`` looks for the servos at, in this order: LeRobot's arms', then the factory's
BAUDS = (1_000_000, 57_600)
FIND_TIMEOUT_S = 0.02  # a first ping at each baud rate
#: the two names of address 126, by what a servo of the other kind calls it
LOAD_ALIASES = {"present_current": "present_load", "present_load": "present_current"}
_STATE_NAMES = (
    "moving",
    "present_current",
    "present_velocity",
    "present_position",
    "present_input_voltage",
    "present_temperature",
)


__all__ = ["DynamixelBus", "ServoBadReply", "ServoError", "ServoFault", "ServoNoReply", "UnknownModel", "scaled"]


class UnknownModel(ServoError):
    """A servo answered a ping with a model number armctl has no control table for."""


class DynamixelBus(ServoBus):
    """A bus of Dynamixel X-series servos on a serial port or URL (``armctl.bus.servobus.ServoBus``).

    ``model``: the table used for a servo not yet pinged (default XL430-W250); ``baudrate``: the servos' (the
    factory's 57600 by default; LeRobot's arms run at 1 000 000). ``timeout_s``, ``retries``, ``echo``,
    ``check_errors``: as ``ServoBus``'s.
    """

    kind = "Dynamixel"
    max_id = MAX_ID
    broadcast_id = BROADCAST_ID
    header = HEADER
    status_overhead = 11  # header 4, id, length 2, instruction, error, CRC 2
    _ping_count = 3  # model number (2), firmware version

    def __init__(
        self,
        port: str,
        *,
        model: str | int | Model = "xl430-w250",
        baudrate: int = DEFAULT_BAUD,
        timeout_s: float = 0.05,
        retries: int = 2,
        echo: bool = False,
        check_errors: bool = True,
    ):
        if baudrate not in BAUD_RATES.values():
            raise BadInputError(
                f"baud rate {baudrate} is not one a Dynamixel X servo runs at: {sorted(BAUD_RATES.values())}"
            )
        self.model = get_model(model)
        self.models: dict[int, Model] = {}  #: each servo's model, learned from its ping
        self._current_limits: dict[int, int] = {}
        super().__init__(
            port, baudrate=baudrate, timeout_s=timeout_s, retries=retries, echo=echo, check_errors=check_errors
        )

    # --- the protocol ---

    def _table(self, servo_id: int | None = None) -> Model:
        return self.models.get(servo_id, self.model)

    def _register(self, name: str, servo_id: int | None = None):
        table = self._table(servo_id)
        if name not in table.registers and name in LOAD_ALIASES:
            name = LOAD_ALIASES[name]
        return table.register(name)

    def _describe(self, servo_id: int, code: int) -> str:
        text = describe_error(code)
        if code & ALERT:
            try:
                request = read_packet(servo_id, 70, 1)  # hardware_error_status
                reply = self._exchange(servo_id, request, 1, "read hardware_error_status", check=False)
                text += f": {describe_hardware_errors(reply.params[0])} (reboot the servo to clear it)"
            except ServoError:
                pass
        return text

    _ping_packet = staticmethod(ping_packet)
    _read_packet = staticmethod(read_packet)
    _write_packet = staticmethod(write_packet)
    _sync_read_packet = staticmethod(sync_read_packet)
    _sync_write_packet = staticmethod(sync_write_packet)

    @staticmethod
    def _take_packet(buf: bytearray):
        """The next status packet or corrupt frame (instruction packets heard on the bus are skipped)."""
        while True:
            item = take_packet(buf)
            if not (isinstance(item, Packet) and not item.status):
                return item

    def _is_status(self, item) -> bool:
        return not isinstance(item, BadPacket)

    # --- servos and their models ---

    def ping(self, servo_id: int) -> int:
        """Ping one servo; returns its error byte (0: healthy) and learns its model (``models``). ServoNoReply if
        it does not answer; UnknownModel if armctl has no table for its model number."""
        self._check_id(servo_id)
        reply = self._exchange(servo_id, ping_packet(servo_id), self._ping_count, "ping", check=False)
        number = int.from_bytes(reply.params[:2], "little")
        model = MODEL_NUMBERS.get(number)
        if model is None:
            known = ", ".join(sorted(m for m in MODELS if "-" in m))
            raise UnknownModel(
                f"{self.port}: servo {servo_id} is Dynamixel model number {number}, which armctl does not know "
                f"(it knows {known})",
                servo_ids=[servo_id],
                operation="ping",
            )
        self.models[servo_id] = model
        return reply.code

    def check_ids(self, ids) -> dict[int, int]:
        """Ping every id: ``{id: model_number}``. ServoNoReply naming every missing id (pinged ``retries + 1``
        times each); UnknownModel for a model armctl does not know."""
        ids = list(ids)
        missing = self.missing(ids)
        if missing:
            raise self.no_reply(missing, ids)
        return {i: self.models[i].number for i in ids}

    def model_of(self, servo_id: int) -> Model:
        """Servo ``servo_id``'s model (pinged first if it has not been)."""
        if servo_id not in self.models:
            self.ping(servo_id)
        return self.models[servo_id]

    def find_baud(self, servo_id: int, bauds: Sequence[int] = BAUDS) -> int:
        """Switch the open bus to the first of ``bauds`` servo ``servo_id`` answers a ping at (a short timeout, one
        retry each) and return it; ServoNoReply naming the port, the servo and the rates tried if none."""
        saved = self.timeout_s, self.retries
        try:
            self.timeout_s, self.retries = FIND_TIMEOUT_S, 1
            for baud in bauds:
                self.baudrate, self.byte_s = baud, 10.0 / baud
                self._port().baudrate = baud
                try:
                    self.ping(servo_id)
                    return baud
                except ServoNoReply:
                    continue
        finally:
            self.timeout_s, self.retries = saved
        raise ServoNoReply(
            f"{self.port}: no Dynamixel servo {servo_id} answers at {' nor '.join(map(str, bauds))} baud (Protocol "
            "2.0): check its id, power and cable, and its baud rate",
            servo_ids=[servo_id],
            operation="ping",
        )

    def reboot(self, servo_id: int) -> None:
        """REBOOT one servo (hardware errors cleared, torque off, RAM back to its defaults) and wait until it
        answers a ping again (at most ``REBOOT_S``)."""
        self._check_id(servo_id)
        self._exchange(servo_id, reboot_packet(servo_id), 0, "reboot", check=False)
        deadline = time.monotonic() + REBOOT_S
        while True:
            try:
                self.ping(servo_id)
                return
            except ServoNoReply:
                if time.monotonic() >= deadline:
                    raise

    # --- several servos ---

    def bulk_read(self, reads: Mapping[int, Sequence[str]]) -> dict[int, dict[str, int]]:
        """One BULK_READ: for each servo id its own adjacent registers (``{id: [name, ...]}``), each read from its
        own model's table: ``{id: {name: value}}``. Servos that miss it are asked again (``retries``)."""
        spans = {}
        for servo_id, names in reads.items():
            self._check_id(servo_id)
            spans[servo_id] = span([self._register(n, servo_id) for n in names])

        def request(wanted):
            return bulk_read_packet([(i, *spans[i]) for i in wanted])

        got = self._gather(request, {i: n for i, (_, n) in spans.items()}, "bulk read")
        return {i: self._decoded(reads[i], i, spans[i][0], got[i].params) for i in spans}

    def read_states(self, ids: Sequence[int]) -> dict[int, ServoState]:
        """Position, speed, load (current over the current limit, or Present_Load), voltage, temperature and the
        moving flag of every servo, one SYNC_READ (addresses 122..146)."""
        raw = self.sync_read_many(_STATE_NAMES, ids)
        states = {}
        for i, v in raw.items():
            bits = self.error_bits.get(i, 0)
            states[i] = ServoState(
                position_steps=v["present_position"],
                speed_steps_s=v["present_velocity"] * STEPS_S_PER_VELOCITY_UNIT,
                load_fraction=self.load_fraction(i, v) or 0.0,
                voltage_v=v["present_input_voltage"] / 10.0,
                temperature_c=v["present_temperature"],
                moving=bool(v["moving"]),
                error_bits=bits,
                errors=describe_error(bits),
            )
        return states

    def load_fraction(self, servo_id: int, state: Mapping[str, int]) -> float | None:
        """Servo ``servo_id``'s load from a read of it (``{register: value}``), signed: Present_Current over its
        Current_Limit, or Present_Load (0.1 %) on models without current sensing; None if the read has neither."""
        if "present_current" in state:
            return state["present_current"] / self.current_limit(servo_id)
        if "present_load" in state:
            return state["present_load"] / 1000.0
        return None

    def current_limit(self, servo_id: int) -> int:
        """Servo ``servo_id``'s Current_Limit (EEPROM, read once; 1 if it is 0, so loads stay finite)."""
        if servo_id not in self._current_limits:
            self._current_limits[servo_id] = max(1, self.read(servo_id, "current_limit"))
        return self._current_limits[servo_id]

    # --- units ---

    def read_units(self, servo_id: int, names: Sequence[str]) -> dict[str, tuple[float, str]]:
        """Registers of one servo in their units: ``{name: (value, unit)}`` (e.g. ``(11.9, "V")``, ``(0.0,
        "rpm")``, ``(2048, "step")``); a register counted in no unit gives its count and ""."""
        raw = self.read_many(servo_id, names)
        return {n: scaled(self._register(n, servo_id).unit, v) for n, v in raw.items()}

    def write_units(self, servo_id: int, name: str, value: float) -> None:
        """Write register ``name`` of one servo from a value in its unit (rounded to the register's counts)."""
        per, _ = scaled(self._register(name, servo_id).unit, 1)
        self.write(servo_id, name, round(value / per))


_UNIT = re.compile(r"^\s*([0-9.]+)\s+([A-Za-z%/^0-9 ]+?)\s*(\(|$)")


def scaled(unit: str, count: int) -> tuple[float, str]:
    """``count`` of a register whose unit is ``unit`` (``"0.229 rpm"``, ``"step"``, ``"degC"``), in that unit:
    ``(value, unit name)``."""
    m = _UNIT.match(unit or "")
    if m:
        return count * float(m.group(1)), m.group(2)
    word = (unit or "").split(" (")[0].strip()
    return float(count), word if re.fullmatch(r"[A-Za-z%]+", word) else ""
