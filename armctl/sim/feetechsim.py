"""A simulated Feetech servo bus (``FeetechSim``): servos with ids on one half-duplex line.

Transport-free, like ``SimArm``: the pyserial URL handler (``protocol_feetechsim``) and the pty runner
(``pty``) feed it the host's bytes and ask it for the bytes that reached the host, giving it the
simulated time. Times are simulated seconds; the ``rate`` option only maps them to wall time.

- Link: every byte takes 10 bit times at the host's baud rate; servos whose ``baud_rate`` register
  differs from the host's do not understand it (they stay silent). A reply starts after the servo's
  ``return_delay`` (2 us units) once the request is on the wire; SYNC_READ replies follow each other in
  the listed order. Whole packets are dropped or get one bit flipped with probability ``drop``/``corrupt``
  in each direction, and arrive ``delay`` ms late. With ``echo`` the host hears its own bytes first (an
  adapter with TX and RX tied). Host bytes sent while a servo answers are not modelled as collisions.
- Servos (``SimServo``): a memory table as in ``feetech.STS``/``SCS``; EEPROM (addresses below 40) is
  kept in the ``state`` file when written with ``lock`` = 0 and reverts at ``power_cycle()`` otherwise.
  With torque on a servo moves toward the goal (clamped to the angle limits) in its own frame (present =
  actual - homing offset, read modulo a turn) under the goal speed (0: ``speed``) and acceleration
  (register x 100 step/s^2; 0: ``accel``) limits: the error is goal - present, so it never turns across
  that frame's 0/4095 (where the encoder reads the offset), whatever the encoder's own 0/4095 (docs/feetech.md,
  "Homing offset and the seam"). Mechanical stops (``stops``) and a jammed servo (``stall``) stop it: then it
  pushes with a load proportional to the position error, up to ``torque_limit``; above
  ``overload_torque`` for ``protection_time`` it reports overload (error bit 0x20) and, when
  ``unloading_condition`` has that bit, drops to ``protective_torque`` until torque is written again. Over
  ``max_temperature`` it reports overheat (0x04) and, with that bit in ``unloading_condition`` (the default), its
  output is off (no load, no motion) until torque is written again.
  With torque off it holds still and ``turn_by_hand`` moves it, or a ``hand`` file (rows ``t_s,id,steps``:
  a hand's moves in time, encoder steps, interpolated) does. Temperature rises with the load, and the
  voltage it reports sags under it (``SAG_V`` at full load).
- Arm (``arm``, ``cal``, ``truth``): given an arm, the servos move its joints (the calibration maps each id to
  one) and the simulator offers the true joint angles and tool (``true_q_rad``, ``true_tool_m``, ...: the truth
  file applied to the angle each servo's position gives; ``armctl.sim.truth``). The truth lies between the
  servo's shaft and the joint (a horn mounted off, a bowed linkage, play, other link lengths): the present
  position reads the shaft, as a real servo's encoder does, and only the camera sees the rest. The servos then
  carry the arm (``feetech_load``): their load holds it against gravity, with the part the gripper holds, and a
  part between the jaws stops a closing gripper, which then pushes on it.
- Setup: several servos may share an id (factory-new ones: id 1): their answers collide, and the host hears
  garbage; the ``connected`` file plugs them in and out between exchanges (``armctl.sim.connected``).
"""

from __future__ import annotations

import random
from collections import deque
from dataclasses import dataclass, field

from armctl.bus.feetech.protocol import (
    ACTION,
    BROADCAST_ID,
    PING,
    READ,
    REG_WRITE,
    SYNC_READ,
    SYNC_WRITE,
    WRITE,
    Packet,
    encode_packet,
    get_series,
    take_packet,
)
from armctl.sim.connected import ConnectedFile
from armctl.sim.feetech_load import ArmLoad
from armctl.sim.feetech_servo import EEPROM_END, MEM_BYTES, SimServo, read_hand_file
from armctl.sim.link import LinkOptions, TimedLink
from armctl.sim.physics.servos import bus_servos, physics_world
from armctl.sim.servobus import ServoBusSim
from armctl.sim.truth import simulated_arm, true_arm

#: packets ``FeetechSim.log`` keeps, the newest (about 0.2 KiB each: 2 MB full; at 50 Hz a follower takes two
#: packets a frame, a goal write and a position read, so this is the last 100 s of a follow)
LOG_PACKETS = 10_000


@dataclass
class FeetechSimOptions(LinkOptions):
    """Every simulator option, as given in the ``feetechsim://`` URL (units in the names or documented; the
    link's in ``LinkOptions``)."""

    ids: list[int] = field(default_factory=lambda: [1, 2, 3, 4, 5, 6])
    model: str = "sts3215"
    baud: int = 1_000_000
    rate: float = 1.0
    start_steps: list[float] | None = None
    speed_steps_s: float = 3400.0
    accel_steps_s2: float = 25400.0
    volts: float = 7.4
    temp_c: float = 25.0
    echo: bool = False
    missing: list[int] = field(default_factory=list)
    stall: list[int] = field(default_factory=list)
    garble: list[int] = field(default_factory=list)
    stops: dict[int, tuple[float, float]] = field(default_factory=dict)
    state: str | None = None
    plug: list[int] = field(default_factory=list)
    offsets: dict[int, int] = field(default_factory=dict)
    limits: dict[int, tuple[int, int]] = field(default_factory=dict)
    hand: str | None = None
    #: the ``hand`` file read: {id: (times s, encoder steps)}; read from ``hand`` when None
    hand_track: dict[int, tuple[list[float], list[float]]] | None = None
    arm: str | None = None  # the arm the servos move (armctl.sim.truth.simulated_arm), with ``cal`` and ``truth``
    cal: str | None = None
    truth: str | None = None
    physics: int = 0  # 1: the servos move a physics plant (armctl.sim.physics), the world of ``scene``
    scene: str | None = None  # the physics scene file (armctl.sim.physics.scenefile)
    connected: str | None = None  # the file naming the servos plugged in now (armctl.sim.connected)


class FeetechSim(ServoBusSim):
    """A simulated bus; feed it host bytes with ``host_write`` and take its answers with ``host_read``."""

    def __init__(self, opts: FeetechSimOptions | None = None):
        self.opts = o = opts or FeetechSimOptions()
        self.series = get_series(o.model)
        self.arm, self.cal, self.truth = simulated_arm(o.arm, o.cal, o.truth, unit="steps", scheme="feetechsim")
        self.true_arm = true_arm(self.arm, self.truth)
        self._true_servos = self.truth.servos(self.cal) if self.truth is not None else {}
        self.scene_arm = None  # the scene's view of this arm while its port is open (armctl.sim.scene)
        self.rng = random.Random(o.seed)
        self.host_baud = o.baud  #: the host's baud rate (the URL handler and the pty runner keep it current)
        self.link = TimedLink(o, self.rng, "servos")
        self.link.faults["ignored_packets"] = 0
        self.frame_gap_s = 0.01 * max(1.0, o.rate)  # a servo forgets a half-received packet after this silence
        self.now = 0.0
        #: The packets the servos took in, in order: (simulated time, Packet), for tests to assert on; the last
        #: ``LOG_PACKETS`` of them (a ring: a long follow or stream runs flat, not 0.2 KiB a packet for ever)
        self.log: deque[tuple[float, Packet]] = deque(maxlen=LOG_PACKETS)
        self.physics = physics_world(o, self.arm, self.cal)  # None: the kinematic servo model
        everyone = bus_servos(self.physics, self._make_servos(), self.cal)
        if self.physics is not None:
            self._start_plant(everyone)
        self.servos: list[SimServo] = [s for s in everyone if s.id not in o.missing]  #: the servos on the bus
        self._absent = [s for s in everyone if s.id in o.missing]  # unplugged, but kept in the state file
        self._init_wire()
        #: gravity and contact (``feetech_load``) for the kinematic servos (a physics plant carries the arm itself)
        self.arm_load = ArmLoad(self) if self.arm is not None and getattr(self, "physics", None) is None else None
        self._connected = ConnectedFile(o.connected, len(self.servos)) if o.connected else None
        self._plugged = self.servos

    def _make_servos(self) -> list[SimServo]:
        o = self.opts
        saved = self._load_state()
        if saved is not None:
            servos = [SimServo(self.series, 0, raw, o, eeprom=eeprom) for eeprom, raw, _ in saved]
            known = {servo.id for servo in servos}
            added = [i for i in o.plug if i not in known]  # plugged in since the state was saved: half a turn
            servos += [SimServo(self.series, i, self.series.steps_per_turn // 2, o) for i in added]
            saved += [(b"", 0.0, None)] * len(added)
            for servo in servos:
                self._preset_eeprom(servo)
        else:
            start = o.start_steps or []
            servos = []
            for k, servo_id in enumerate(o.ids):
                servos.append(SimServo(self.series, servo_id, 0.0, o))
                self._preset_eeprom(servos[-1])
                present = start[k] if k < len(start) else self.series.steps_per_turn // 2
                servos[-1].raw = float(present + servos[-1].offset()) % self.series.steps_per_turn
        if saved is not None and o.start_steps:
            for servo, present in zip(servos, o.start_steps):
                servo.raw = float(present + servo.offset()) % servo.res
        for k, servo in enumerate(servos):
            servo._power_on_sram()
            sram = saved[k][2] if saved is not None else None
            if sram:  # the servos stayed powered between runs: torque, goal and the rest as they were left
                servo.mem[EEPROM_END:] = bytes.fromhex(sram)[: MEM_BYTES - EEPROM_END]
                if o.start_steps:  # moved to start= by hand: limp, its goal where it is
                    servo.mem[40] = 0
                    servo.put("goal_position", servo.present_steps())
            if servo.id in o.stops:
                servo.stops = tuple(float(v) for v in o.stops[servo.id])
            servo.jammed = servo.id in o.stall
        if o.hand is not None and o.hand_track is None:
            o.hand_track = read_hand_file(o.hand, self.series.steps_per_turn)
        for servo in servos:
            servo.hand = (o.hand_track or {}).get(servo.id)
        return servos

    def _start_plant(self, servos: list[SimServo]) -> None:
        """The plant's arm at rest where the servos stand (their start, their state file)."""
        where = {s.id: s.corrected() for s in servos}
        q = [float(s.angle_rad(where[s.id])) if s.id in where else 0.0 for s in self.cal.joints]
        g = self.cal.gripper
        self.physics.start(q, float(g.angle_rad(where[g.id])) if g is not None and g.id in where else None)

    @property
    def compute_wall_s(self) -> float:
        """Wall seconds spent computing the physics (0 without): the port's clock stands still meanwhile."""
        return 0.0 if self.physics is None else self.physics.compute_wall_s

    def world(self) -> dict | None:
        """The physics plant's world now (``PhysicsWorld.world``), None without ``physics=1``."""
        return None if self.physics is None else self.physics.world()

    def _preset_eeprom(self, servo: SimServo) -> None:
        """The ``offsets`` and ``limits`` options: EEPROM as a calibration left it (over the state file's)."""
        o = self.opts
        if servo.id in o.offsets and "homing_offset" in self.series.registers:
            servo.put("homing_offset", o.offsets[servo.id])
        if servo.id in o.limits:
            servo.put("min_angle_limit", o.limits[servo.id][0])
            servo.put("max_angle_limit", o.limits[servo.id][1])
        servo.saved_eeprom = bytes(servo.mem[:EEPROM_END])

    # --- test hooks ---

    def set_stops(self, servo_id: int, lo_steps: float | None, hi_steps: float | None = None) -> None:
        """Mechanical stops (encoder steps, i.e. present + homing offset) or an obstacle; None removes them."""
        s = self.servo(servo_id)
        s.advance(self.now)
        s.stops = None if lo_steps is None else (float(lo_steps), float(hi_steps))
        s._ctl = None

    def power_cycle(self) -> None:
        """Power the servos off and on (EEPROM kept only where written with lock 0; torque off)."""
        for s in self.servos:
            s.advance(self.now)
            s.power_cycle()

    def settle_s(self) -> float:
        """Simulated seconds until every servo with torque on stands still (a bound; 0 if all rest)."""
        worst = 0.0
        for s in self.servos:
            if not s._at_rest():
                target, vmax, amax, _ = s._control()
                worst = max(worst, abs(target - s.corrected()) / vmax + vmax / amax + 0.01)
        return worst

    # --- link ---

    # --- the servos' side of the protocol ---

    def _listening(self) -> list[SimServo]:
        return [s for s in self._plugged if s.baud == self.host_baud]

    def _reply(self, servo: SimServo, servo_id: int, t: float, params: bytes = b"", *, collide: bool = False) -> None:
        packet = encode_packet(servo_id, servo.error_bits(), params)
        delay_s = servo.get("return_delay") * 2e-6
        self._send(packet, t, delay_s, collide=collide, garble=servo.id in self.opts.garble)

    _take = staticmethod(take_packet)
    scheme = "feetechsim"
    eeprom_end = EEPROM_END

    @property
    def state_series(self) -> str:
        return self.series.name

    def _encode(self, packet: Packet) -> bytes:
        return encode_packet(packet.id, packet.code, packet.params)

    def _cal_position(self, servo: SimServo) -> float:
        return servo.corrected()

    def _execute(self, packet: Packet, t: float) -> None:
        if self._connected is not None:  # plugged in and out between exchanges (``connected``)
            places = self._connected.places()
            self._plugged = [s for k, s in enumerate(self.servos) if k in places]
        servos = self._listening()
        for s in servos:
            s.advance(t)
        self.log.append((t, packet))
        self._bus_free = max(self._bus_free, t)
        code, params = packet.code, packet.params
        if packet.id == BROADCAST_ID:
            self._broadcast(servos, code, params, t)
            return
        targets = [s for s in servos if s.id == packet.id]
        for s in targets:
            reply = self._unicast(s, code, params)
            if reply is not None:  # two servos with one id answer at once: the host hears garbage
                self._reply(s, packet.id, t, reply, collide=len(targets) > 1)

    def _unicast(self, s: SimServo, code: int, params: bytes) -> bytes | None:
        """Carry out an instruction addressed to ``s``; the reply's parameters, or None for no reply."""
        answer_all = s.get("response_level") != 0
        if code == PING:
            return b""
        if code == READ and len(params) == 2:
            return s.read(params[0], params[1])
        if code == WRITE and len(params) >= 2:
            if s.write(params[0], params[1:]):
                self.save_state()
            return b"" if answer_all else None
        if code == REG_WRITE and len(params) >= 2:
            s.pending = (params[0], bytes(params[1:]))
            return b"" if answer_all else None
        if code == ACTION and not params:
            self._action(s)
            return b"" if answer_all else None
        self.faults["ignored_packets"] += 1
        return None

    def _action(self, s: SimServo) -> None:
        if s.pending is not None:
            address, data = s.pending
            s.pending = None
            if s.write(address, data):
                self.save_state()

    def _broadcast(self, servos: list[SimServo], code: int, params: bytes, t: float) -> None:
        if code == SYNC_WRITE and len(params) >= 2:
            address, size = params[0], params[1]
            body = params[2:]
            if size == 0 or len(body) % (size + 1):
                self.faults["ignored_packets"] += 1
                return
            by_id = {s.id: s for s in servos}
            keep = False
            for k in range(0, len(body), size + 1):
                s = by_id.get(body[k])
                if s is not None:
                    keep |= s.write(address, body[k + 1 : k + 1 + size])
            if keep:
                self.save_state()
        elif code == SYNC_READ and len(params) >= 3 and self.series.sync_read:
            address, count = params[0], params[1]
            by_id = {s.id: s for s in servos}
            for servo_id in params[2:]:
                s = by_id.get(servo_id)
                data = None if s is None else s.read(address, count)
                if data is not None:
                    self._reply(s, servo_id, t, data)
        elif code == PING and not params:
            ids = [s.id for s in servos]
            for s in sorted(servos, key=lambda s: s.id):
                self._reply(s, s.id, t, collide=ids.count(s.id) > 1)
        elif code == WRITE and len(params) >= 2:
            if any([s.write(params[0], params[1:]) for s in servos]):
                self.save_state()
        elif code == REG_WRITE and len(params) >= 2:
            for s in servos:
                s.pending = (params[0], bytes(params[1:]))
        elif code == ACTION and not params:
            for s in servos:
                self._action(s)
        else:
            self.faults["ignored_packets"] += 1
