"""A simulated Dynamixel X-series bus (``DynamixelSim``): servos with ids on one half-duplex line, Protocol 2.0.

Transport-free, like ``FeetechSim``, with which it shares the wire (``servobus``: framing, faults, timing, the
arm's truth); the pyserial URL handler (``protocol_dynamixelsim``) and the pty runner feed it the host's bytes.

- Link: every byte takes 10 bit times at the host's baud rate; servos whose ``baud_rate`` differs stay silent.
  A reply starts ``return_delay_time`` (2 us units) after the request; SYNC_READ and BULK_READ replies follow
  each other in the listed order. ``drop``/``corrupt``/``delay``/``echo``/``disconnect`` as ``feetechsim``. A
  packet corrupted on its way to the servos reaches them with a bad CRC: the servo it names answers with the
  CRC error (3), as a real one does.
- Servos (``DxlServo``): each model's number, firmware and control table (``dynamixel.tables``); the status
  return level (0: ping only, 1: ping and read, 2: all; broadcasts other than ping, sync and bulk read are
  never answered); the error numbers (instruction, CRC, data range/length/limit, access: EEPROM written with
  torque on); hardware errors (overload, overheating, input voltage) with the alert bit, torque cut where
  ``shutdown`` says so, cleared by REBOOT; ID and baud changes taking effect after the answer; REG_WRITE and
  ACTION; FACTORY_RESET (torque off only) and CLEAR (the multi-turn count). Motion: position, extended
  position, current-based position (the goal current caps the output) and velocity modes, shaped by the
  profile velocity and acceleration (velocity-based or, with drive mode bit 2, time-based). Current and PWM
  modes hold still. Indirect addressing is not simulated (its addresses read as zeros); FAST_SYNC_READ answers in
  one packet.
- Servos sharing an id (factory-new ones, all id 1) answer together: the host hears garbage. The ``connected``
  file plugs them in and out between exchanges (``armctl.sim.connected``).
- Arm (``arm``, ``cal``, ``truth``): the servos move the arm's joints and the simulator offers the truth
  (``true_q_rad``, ``true_tool_m``) as ``feetechsim`` does; the arm's weight is not modelled on these servos.
"""

from __future__ import annotations

import random
from collections import deque
from dataclasses import dataclass, field

from armctl.bus.dynamixel.protocol import (
    ACCESS_ERROR,
    ACTION,
    BROADCAST_ID,
    BULK_READ,
    BULK_WRITE,
    CLEAR,
    CRC_ERROR,
    DATA_LENGTH_ERROR,
    EEPROM_END,
    FACTORY_RESET,
    FAST_SYNC_READ,
    INSTRUCTION_ERROR,
    MODEL_NUMBERS,
    PING,
    READ,
    REBOOT,
    REG_WRITE,
    RESET_ALL,
    RESET_ALL_BUT_ID,
    RESULT_FAIL,
    STEPS_PER_TURN,
    SYNC_READ,
    SYNC_WRITE,
    WRITE,
    BadPacket,
    Packet,
    encode_fast_status,
    encode_packet,
    encode_status,
    get_model,
    parse_params,
    take_packet,
)
from armctl.sim.connected import ConnectedFile
from armctl.sim.dynamixel_servo import DxlServo
from armctl.sim.feetech_servo import read_hand_file
from armctl.sim.link import LinkOptions, TimedLink
from armctl.sim.servobus import ServoBusSim
from armctl.sim.truth import simulated_arm, true_arm

LOG_PACKETS = 10_000  # packets ``DynamixelSim.log`` keeps, the newest


@dataclass
class DynamixelSimOptions(LinkOptions):
    """Every simulator option, as given in the ``dynamixelsim://`` URL (the link's in ``LinkOptions``)."""

    ids: list[int] = field(default_factory=lambda: [1, 2, 3, 4, 5, 6])
    model: str = "xl430-w250"
    models: dict[int, str] = field(default_factory=dict)  # per id, over ``model``
    baud: int = 57_600
    rate: float = 1.0
    start_steps: list[float] | None = None
    speed_steps_s: float = 4000.0  # with profile velocity 0 (the servo's own top speed)
    accel_steps_s2: float = 40000.0  # with profile acceleration 0
    volts: float | None = None  # None: each model's recommended supply
    temp_c: float = 25.0
    echo: bool = False
    missing: list[int] = field(default_factory=list)
    stall: list[int] = field(default_factory=list)
    garble: list[int] = field(default_factory=list)
    stops: dict[int, tuple[float, float]] = field(default_factory=dict)
    state: str | None = None
    offsets: dict[int, int] = field(default_factory=dict)
    modes: dict[int, int] = field(default_factory=dict)
    limits: dict[int, tuple[int, int]] = field(default_factory=dict)
    hand: str | None = None
    hand_track: dict[int, tuple[list[float], list[float]]] | None = None
    connected: str | None = None  # the file naming the servos plugged in now (armctl.sim.connected)
    arm: str | None = None
    cal: str | None = None
    truth: str | None = None


class DynamixelSim(ServoBusSim):
    """A simulated Dynamixel bus; feed it host bytes with ``host_write`` and take its answers with ``host_read``."""

    def __init__(self, opts: DynamixelSimOptions | None = None):
        self.opts = o = opts or DynamixelSimOptions()
        self.arm, self.cal, self.truth = simulated_arm(o.arm, o.cal, o.truth, unit="steps", scheme="dynamixelsim")
        self.true_arm = true_arm(self.arm, self.truth)
        self._true_servos = self.truth.servos(self.cal) if self.truth is not None else {}
        self.rng = random.Random(o.seed)
        self.host_baud = o.baud  #: the host's baud rate (the URL handler and the pty runner keep it current)
        self.link = TimedLink(o, self.rng, "servos")
        self.link.faults["ignored_packets"] = 0
        self.frame_gap_s = 0.01 * max(1.0, o.rate)
        self.now = 0.0
        self.log: deque[tuple[float, Packet]] = deque(maxlen=LOG_PACKETS)  #: (time, packet) the servos took in
        everyone = self._make_servos()
        self.servos: list[DxlServo] = [s for s in everyone if s.id not in o.missing]  #: the servos on the bus
        self._absent = [s for s in everyone if s.id in o.missing]
        self._connected = ConnectedFile(o.connected, len(self.servos)) if o.connected else None
        self._plugged = self.servos
        self._init_wire()

    def _model_of(self, servo_id: int):
        return get_model(self.opts.models.get(servo_id, self.opts.model))

    def _make_servos(self) -> list[DxlServo]:
        o = self.opts
        saved = self._load_state()
        if saved is not None:
            servos = [DxlServo(get_model(int.from_bytes(e[:2], "little")), 0, raw, o, e) for e, raw, _ in saved]
        else:
            start = o.start_steps or []
            servos = []
            for k, servo_id in enumerate(o.ids):
                s = DxlServo(self._model_of(servo_id), servo_id, STEPS_PER_TURN // 2, o)
                if servo_id in o.offsets:
                    s.put("homing_offset", o.offsets[servo_id])
                if servo_id in o.modes:
                    s.put("operating_mode", o.modes[servo_id])
                if servo_id in o.limits:
                    s.put("min_position_limit", o.limits[servo_id][0])
                    s.put("max_position_limit", o.limits[servo_id][1])
                s.saved_eeprom = bytes(s.mem[:EEPROM_END])
                if k < len(start):
                    s.raw = s._shaft(start[k])
                servos.append(s)
        if o.hand is not None and o.hand_track is None:
            o.hand_track = read_hand_file(o.hand, STEPS_PER_TURN)
        for k, s in enumerate(servos):
            s.power_on_ram()
            if saved is not None and saved[k][2]:  # stayed powered between runs: RAM as it was left
                s.mem[EEPROM_END:] = bytes.fromhex(saved[k][2])[: len(s.mem) - EEPROM_END]
            s.stops = tuple(float(v) for v in o.stops[s.id]) if s.id in o.stops else None
            s.jammed = s.id in o.stall
            s.hand = (o.hand_track or {}).get(s.id)
        return servos

    # --- test hooks ---

    def power_cycle(self) -> None:
        """Power the servos off and on: RAM to its defaults, hardware errors cleared, torque off."""
        for s in self.servos:
            s.advance(self.now)
            s.reboot()

    def set_stops(self, servo_id: int, lo_steps: float | None, hi_steps: float | None = None) -> None:
        """Mechanical stops (shaft steps) or an obstacle; None removes them."""
        s = self.servo(servo_id)
        s.advance(self.now)
        s.stops = None if lo_steps is None else (float(lo_steps), float(hi_steps))

    def settle_s(self) -> float:
        """Simulated seconds until every servo with torque on stands still (a bound; 0 if all rest)."""
        worst = 0.0
        for s in self.servos:
            if not s._at_rest():
                vmax, amax = s._limits()
                worst = max(worst, abs(s._target() - s.raw) / vmax + vmax / amax + 0.01)
        return worst

    # --- the wire (ServoBusSim) ---

    _take = staticmethod(take_packet)
    scheme = "dynamixelsim"
    eeprom_end = EEPROM_END
    state_series = "dynamixel"

    def _saved_eeprom_ok(self, eeprom: bytes) -> bool:
        return super()._saved_eeprom_ok(eeprom) and int.from_bytes(eeprom[:2], "little") in MODEL_NUMBERS

    def _encode(self, packet: Packet) -> bytes:
        return encode_packet(packet.id, packet.code, packet.params)

    def _cal_position(self, servo: DxlServo) -> float:
        return servo.sign * servo.raw + servo.get("homing_offset")

    def _bad(self, bad_packet: BadPacket, t: float) -> None:
        self.link.deliver(self._to_servos, t + self.link.delay_s, bad_packet)  # the servo it names says so

    def _corrupt(self, packet: Packet, faulted: bytes, t: float) -> None:
        item = take_packet(bytearray(faulted))
        if isinstance(item, BadPacket):  # else the flip hid the packet (its length): lost
            self.link.deliver(self._to_servos, t, item)

    def _status(self, s: DxlServo, servo_id: int, t: float, error: int = 0, params: bytes = b"", collide=False):
        packet = encode_status(servo_id, error | s.error_byte(), params)
        delay_s = s.get("return_delay_time") * 2e-6
        self._send(packet, t, delay_s, collide=collide, garble=s.id in self.opts.garble)

    # --- the servos' side of the protocol ---

    def _listening(self) -> list[DxlServo]:
        if self._connected is not None:  # plugged in and out between exchanges (``connected``)
            places = self._connected.places()
            self._plugged = [s for k, s in enumerate(self.servos) if k in places]
        return [s for s in self._plugged if s.baud == self.host_baud]

    def _execute(self, packet: Packet | BadPacket, t: float) -> None:
        servos = self._listening()
        for s in servos:
            s.advance(t)
        self._bus_free = max(self._bus_free, t)
        if isinstance(packet, BadPacket):  # framed, bad CRC: the servo it names says so
            targets = [s for s in servos if s.id == packet.id]
            for s in targets:
                if s.get("status_return_level") == 2:
                    self._status(s, packet.id, t, CRC_ERROR, collide=len(targets) > 1)
            return
        self.log.append((t, packet))
        if packet.status:
            return  # another servo's answer (echo): not for the servos
        if packet.id == BROADCAST_ID:
            self._broadcast(servos, packet, t)
            return
        targets = [s for s in servos if s.id == packet.id]
        for s in targets:
            answer = self._unicast(s, packet)
            if answer is not None:  # servos sharing an id answer at once: the host hears garbage
                self._status(s, packet.id, t, *answer, collide=len(targets) > 1)
            self._after(s, packet)

    def _unicast(self, s: DxlServo, packet: Packet) -> tuple[int, bytes] | None:
        """Carry out an instruction addressed to ``s``: (error, parameters) of its answer, or None."""
        code, params, level = packet.code, packet.params, s.get("status_return_level")
        if code == PING:
            return 0, s.model.number.to_bytes(2, "little") + bytes((s.model.firmware,))
        if code == READ:
            error, data = self._read(s, params)
            return (error, data) if level >= 1 else None
        error = self._apply(s, code, params)
        return (error, b"") if level >= 2 else None

    def _read(self, s: DxlServo, params: bytes) -> tuple[int, bytes]:
        try:
            access = parse_params(READ, params)[0]
        except ValueError:
            return DATA_LENGTH_ERROR, b""
        data = s.read(access.address, access.count)
        return (data, b"") if isinstance(data, int) else (0, data)

    def _apply(self, s: DxlServo, code: int, params: bytes) -> int:
        """WRITE, REG_WRITE, ACTION, REBOOT, FACTORY_RESET, CLEAR on ``s``: the error number (0: done)."""
        if code in (WRITE, REG_WRITE):
            try:
                access = parse_params(code, params)[0]
            except ValueError:
                return DATA_LENGTH_ERROR
            if code == REG_WRITE:
                error = s.check_write(access.address, access.data)
                s.pending = None if error else (access.address, access.data)
                return error
            return self._write(s, access.address, access.data)
        if code == ACTION:
            return self._action(s)
        if code == REBOOT:
            return 0  # done after the answer (``_after``)
        if code == FACTORY_RESET:
            return self._factory_reset(s, params[:1])
        if code == CLEAR:
            if s.torque_on or s.vel:
                return RESULT_FAIL
            s.raw %= STEPS_PER_TURN
            return 0
        self.faults["ignored_packets"] += 1
        return INSTRUCTION_ERROR

    def _write(self, s: DxlServo, address: int, data: bytes) -> int:
        error, eeprom = s.write(address, data)
        if eeprom:
            self.save_state()
        return error

    def _action(self, s: DxlServo) -> int:
        if s.pending is None:
            return 0
        (address, data), s.pending = s.pending, None
        return self._write(s, address, data)

    def _factory_reset(self, s: DxlServo, what: bytes) -> int:
        if s.torque_on:
            return ACCESS_ERROR
        keep_id, keep_baud = s.id, s.mem[8]
        fresh = DxlServo(s.model, 1, s.raw, self.opts)
        s.mem[:EEPROM_END] = fresh.mem[:EEPROM_END]
        s.mem[8] = 1  # the factory's 57600
        if what != bytes((RESET_ALL,)):
            s.put("id", keep_id)
            if what != bytes((RESET_ALL_BUT_ID,)):
                s.mem[8] = keep_baud
        s.restart_pending = True
        return 0

    def _after(self, s: DxlServo, packet: Packet) -> None:
        """What happens once the answer is out: a reboot, a factory reset's restart."""
        if packet.code == REBOOT or s.restart_pending:
            s.restart_pending = False
            s.saved_eeprom = bytes(s.mem[:EEPROM_END])
            s.reboot()
            self.save_state()

    def _broadcast(self, servos: list[DxlServo], packet: Packet, t: float) -> None:
        code, params = packet.code, packet.params
        if code == PING:
            ids = [s.id for s in servos]
            for s in sorted(servos, key=lambda s: s.id):
                self._status(s, s.id, t, *self._unicast(s, packet), collide=ids.count(s.id) > 1)
            return
        if code == FAST_SYNC_READ:
            self._fast_sync_read(servos, params, t)
            return
        try:
            accesses = parse_params(code, params) if code in (SYNC_READ, SYNC_WRITE, BULK_READ, BULK_WRITE) else None
        except ValueError:
            accesses = None
        if accesses is None:
            for s in servos:
                if code in (WRITE, REG_WRITE, ACTION, REBOOT, FACTORY_RESET, CLEAR):
                    self._apply(s, code, params)
                    self._after(s, packet)
            if code not in (WRITE, REG_WRITE, ACTION, REBOOT, FACTORY_RESET, CLEAR):
                self.faults["ignored_packets"] += 1
            return
        by_id: dict[int, list[DxlServo]] = {}
        for s in servos:
            by_id.setdefault(s.id, []).append(s)
        for access in accesses:
            for s in by_id.get(access.id, []):
                if code in (SYNC_READ, BULK_READ) and s.get("status_return_level") >= 1:
                    data = s.read(access.address, access.count)
                    error, data = (data, b"") if isinstance(data, int) else (0, data)
                    self._status(s, s.id, t, error, data, collide=len(by_id[access.id]) > 1)
                elif code in (SYNC_WRITE, BULK_WRITE):
                    self._write(s, access.address, access.data)

    def _fast_sync_read(self, servos: list[DxlServo], params: bytes, t: float) -> None:
        """FAST_SYNC_READ: the listed servos answer in one status packet (``encode_fast_status``), each adding its
        segment after the one before it; a servo missing from the list's chain ends the packet there."""
        try:
            accesses = parse_params(FAST_SYNC_READ, params)
        except ValueError:
            return
        by_id = {s.id: s for s in servos}
        answers, first = [], None
        for access in accesses:
            s = by_id.get(access.id)
            if s is None or s.get("status_return_level") < 1:
                break
            data = s.read(access.address, access.count)
            error, data = (
                (data | s.error_byte(), bytes(access.count)) if isinstance(data, int) else (s.error_byte(), data)
            )
            answers.append((s.id, error, data))
            first = first or s
        if answers:
            self._send(encode_fast_status(answers), t, first.get("return_delay_time") * 2e-6)
