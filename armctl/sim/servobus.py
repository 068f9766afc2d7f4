"""What the simulated servo buses (``feetechsim``, ``dynamixelsim``) share: the half-duplex wire between the
host and the servos, in simulated time, and the arm the servos move.

``ServoBusSim`` (mixed into a bus simulator) frames the host's bytes as a servo's receiver does (each byte 10 bit
times at the host's baud rate; a silence longer than ``frame_gap_s`` forgets a half-received packet), passes
each packet through the link's faults (``TimedLink``) to the servos, runs the servos up to each packet, and
answers the host with ``_send``. The simulator gives its protocol (``_take``: the packet parser; ``_encode``: a
packet's bytes again; ``_execute``: what the servos do with a packet), its servos (``servos``: each with ``id``,
``advance(t)`` and ``turn_by_hand``) and, with an arm, ``_cal_position(servo)`` (what the calibration reads).
"""

from __future__ import annotations

import json
import math
import os
import tempfile
from pathlib import Path

from armctl.bus.simulators import BadSimURL
from armctl.core.limits import get as get_limit
from armctl.core.limits import json_depth_ok
from armctl.core.paths import atomic_write
from armctl.errors import BadInputError
from armctl.sim.link import OverLink
from armctl.sim.truth import TrueArmView


class ServoBusSim(TrueArmView, OverLink):
    """The wire and the arm of a simulated servo bus (see the module note)."""

    host_baud: int
    frame_gap_s: float
    arm = None
    arm_load = None
    scene_arm = None

    def _init_wire(self) -> None:
        self._rx = bytearray()
        self._rx_last = -math.inf
        self._tx_free = 0.0
        self._bus_free = 0.0
        self._to_servos: list = []

    # --- the protocol, given by the simulator ---

    def _take(self, buf: bytearray):
        raise NotImplementedError

    def _encode(self, packet) -> bytes:
        raise NotImplementedError

    def _execute(self, packet, t: float) -> None:
        raise NotImplementedError

    def _bad(self, bad_packet, t: float) -> None:
        """A framed packet with a bad checksum or length reached the servos at ``t`` (default: they ignore it)."""
        self.faults["ignored_packets"] += 1

    def _corrupt(self, packet, faulted: bytes, t: float) -> None:
        """A packet the link corrupted on its way to the servos (default: lost, as a checksum catches it)."""

    def _cal_position(self, servo) -> float:
        raise NotImplementedError

    # --- the wire ---

    def host_write(self, data: bytes, t: float) -> None:
        """Bytes the host sends at simulated time ``t``; raises LinkGone once disconnected."""
        self.link.check()
        t = max(t, self.now)  # the servos have already lived up to now
        self.pump(t)
        data = self.link.cut(data)
        byte_s = 10.0 / self.host_baud
        start = max(t, self._tx_free)
        for i, byte in enumerate(data):
            self._servo_byte(byte, start + (i + 1) * byte_s)
        self._tx_free = start + len(data) * byte_s
        if self.opts.echo and data:
            self.link.deliver(self.link.to_host, self._tx_free, bytes(data))
        self.link.check()

    def _servo_byte(self, byte: int, t: float) -> None:
        """One byte reaches the servos at ``t``: frame packets as a servo's receiver does."""
        if t - self._rx_last > self.frame_gap_s:
            self._rx.clear()
        self._rx_last = t
        self._rx.append(byte)
        while True:
            item = self._take(self._rx)
            if item is None:
                return
            if not hasattr(item, "params"):  # a bad packet (checksum, length)
                self._bad(item, t)
                continue
            raw = self._encode(item)
            faulted = self.link.fault(raw, "servos")
            if faulted is None:
                continue
            if faulted != raw:
                self._corrupt(item, faulted, t + self.link.delay_s)
                continue
            self.link.deliver(self._to_servos, t + self.link.delay_s, item)

    def _send(self, packet: bytes, t: float, return_delay_s: float, *, collide: bool = False, garble: bool = False):
        """A servo's answer, started ``return_delay_s`` after ``t`` (after the answers before it, unless it
        ``collide``s with them: then, as with ``garble``, the host hears it with a bit flipped)."""
        byte_s = 10.0 / self.host_baud
        start = t + return_delay_s
        if not collide:
            start = max(start, self._bus_free)
        self._bus_free = start + len(packet) * byte_s
        if collide or garble:
            packet = self.link.flip(packet, 2)
        self.link.send_to_host(packet, self._bus_free)

    def pump(self, t: float) -> None:
        """Run the servos and the link up to simulated time ``t``."""
        while self._to_servos and self._to_servos[0][0] <= t:
            at, _, packet = self._to_servos.pop(0)
            self._observe(at)
            self._execute(packet, at)
        for s in self.servos:
            s.advance(t)
        self.now = max(self.now, t)
        self._observe(t)

    def next_arrival_s(self) -> float:
        """Simulated time at which something may next reach the host or the servos (inf: nothing pending)."""
        cands = [self.link.next_to_host_s()]
        if self._to_servos:
            cands.append(self._to_servos[0][0])
        return min(cands)

    # --- state file (the servos' EEPROM, where they stand and their RAM, between runs) ---

    #: the URL scheme of this simulator (``feetechsim``, ``dynamixelsim``): the state file's marker, and in errors
    scheme: str
    #: the servos' EEPROM ends here (their RAM follows)
    eeprom_end: int

    @property
    def state_series(self) -> str:
        """What the state file must be of (``sts``, ``dynamixel``): a file of other servos is not read."""
        raise NotImplementedError

    def _saved_eeprom_ok(self, eeprom: bytes) -> bool:
        """True if a state file's EEPROM is one of this simulator's servos (a subclass checks more)."""
        return len(eeprom) == self.eeprom_end

    def _load_state(self) -> list[tuple[bytes, float, str | None]] | None:
        """The ``state`` file's servos: (EEPROM, encoder position, RAM as hex or None); None without one (or an
        empty file). BadSimURL naming the option, the path and why, for a file that is not this simulator's state
        (nothing else is overwritten) or a place the state cannot be written."""
        if not self.opts.state:
            return None
        path = Path(self.opts.state)
        why = state_place_error(path)
        if why is None and path.is_file() and path.stat().st_size > 0:
            try:
                return self._parse_state(_read_json(path))
            except ValueError as exc:
                why = f"{exc}; it is left as it is (give another file)"
        if why is not None:
            raise BadSimURL(f"{self.scheme} option state={self.opts.state}: {why}")
        return None

    def _parse_state(self, data) -> list[tuple[bytes, float, str | None]]:
        """The servos of a state file's JSON ``data``; ValueError saying why it is not this simulator's state."""
        if not isinstance(data, dict) or "servos" not in data or "series" not in data:
            raise ValueError(f"not a {self.scheme} state file (JSON without its 'series' and 'servos')")
        writer = data.get("simulator", self.scheme)  # files written before the marker: known by their series
        if writer != self.scheme:
            raise ValueError(f"the state of another simulator ({writer}), not {self.scheme}'s")
        if data["series"] != self.state_series:
            raise ValueError(f"the state of {data['series']!r} servos, not the {self.state_series} ones simulated")
        try:
            servos = [(bytes.fromhex(s["eeprom"]), float(s["raw_steps"]), s.get("sram")) for s in data["servos"]]
            good = all(self._saved_eeprom_ok(e) and math.isfinite(r) for e, r, _ in servos)
            good = good and all(ram is None or bytes.fromhex(ram) is not None for _, _, ram in servos)
        except (KeyError, TypeError, AttributeError, ValueError):
            good = False
        if not good:
            raise ValueError(f"not a {self.scheme} state file (its servos do not read as {self.state_series} ones)")
        return servos

    def save_state(self) -> None:
        """Write each servo's kept EEPROM, encoder position and RAM to the ``state`` file (atomically)."""
        if not self.opts.state:
            return
        data = {
            "simulator": self.scheme,
            "series": self.state_series,
            "servos": [
                {"eeprom": s.saved_eeprom.hex(), "raw_steps": s.raw, "sram": s.mem[self.eeprom_end :].hex()}
                for s in self.servos + self._absent
            ],
        }
        atomic_write(self.opts.state, json.dumps(data), durable=False)

    # --- test hooks ---

    def servo(self, servo_id: int):
        """The servo that has id ``servo_id`` now (KeyError naming the ids on the bus if none)."""
        for s in self.servos:
            if s.id == servo_id:
                return s
        raise KeyError(f"no servo with id {servo_id} on the simulated bus (ids: {[s.id for s in self.servos]})")

    def turn_by_hand(self, servo_id: int, present_steps: float) -> bool:
        """Turn a servo by hand so it reads ``present_steps``; False if its torque is on (it resists)."""
        s = self.servo(servo_id)
        s.advance(self.now)
        return s.turn_by_hand(present_steps)

    # --- the arm the servos move (with ``arm``) ---

    def _observe(self, t: float) -> None:
        """The servos run up to ``t``: their backlash settles there, and the scene sees the motion so far
        (before a packet may change it: exact while each servo turns one way between two packets)."""
        if self.arm is None:
            return
        for s in self.servos:
            s.advance(t)
        for s in self.cal.joints:
            if s.id in self._true_servos:
                self._true_servo_rad(s, None, settle=True)
        if self.scene_arm is not None:
            self.scene_arm.observe(t)
        if self.arm_load is not None:
            self.arm_load.update(t)

    def _true_servo_rad(self, servo_cal, t: float | None, *, settle: bool = False) -> float:
        """A servo's true joint angle (rad) where it stands (the servos are integrated step by step: a time
        ahead runs them up to it; an earlier one reads where they stand now)."""
        if t is not None and t > self.now:
            self.pump(t)
        try:
            pos = self._cal_position(self.servo(servo_cal.id))
        except KeyError:  # not on the bus (``missing``)
            return float("nan")
        believed = float(servo_cal.angle_rad(pos))
        truth = self._true_servos.get(servo_cal.id)
        return believed if truth is None else truth.angle_rad(believed, pos, settle=settle)


#: the most a state file holds (253 servos' memories as hex, with room to spare): a bigger file is something else
STATE_MAX_BYTES = 4 << 20


def _read_json(path: Path):
    """The JSON in ``path``; ValueError saying why it is not a state file (binary, not JSON, too big)."""
    if path.stat().st_size > STATE_MAX_BYTES:
        raise ValueError(f"not a state file ({path.stat().st_size} bytes, more than any holds)")
    try:
        text = path.read_bytes().decode("utf-8")
        json_depth_ok(text)  # nested thousands deep: json.loads would recurse out of the stack
        return json.loads(text)
    except BadInputError:
        raise ValueError(f"not a state file (JSON nested deeper than {get_limit('nesting')})") from None
    except UnicodeDecodeError:
        raise ValueError("not a state file (not text)") from None
    except ValueError:
        raise ValueError("not a state file (not JSON)") from None


def state_place_error(path: Path) -> str | None:
    """Why a state file cannot be kept at ``path`` (a folder, something not a file, a folder that cannot be
    written: tried with a file created and removed), None if it can (the folders to it made when it is saved)."""
    try:
        if path.is_dir():
            return "it is a folder, not a file"
        if path.exists() and not path.is_file():
            return "it is not a regular file"
        if path.exists() and not os.access(path, os.R_OK):
            return "it cannot be read"
        folder = path.absolute().parent
        while not folder.exists() and folder != folder.parent:
            folder = folder.parent
        if not folder.is_dir():
            return f"{folder} is not a folder"
    except OSError as exc:
        return f"cannot reach it ({exc.strerror or exc})"
    try:
        fd, probe = tempfile.mkstemp(dir=folder, prefix=".armctl-probe-")
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        return f"cannot write in {folder} ({exc.strerror or exc})"
    return None
