"""A leader arm: bus servos moved by hand (torque off) whose positions are read every frame, for teleoperation.

    leader = armctl.open_leader(arm="so101", port="/dev/ttyACM1")           # or feetechsim://?hand=FILE.csv
    with armctl.connect("so101", port="/dev/ttyACM0") as robot:
        robot.follow(leader).wait()                                         # until Ctrl-C or robot.stop()

``open_leader`` checks that every servo of the leader's calibration answers (LinkError naming the servo and
the port otherwise: no leader there), turns their torque off (the arm goes limp, to be moved by hand) and
from then on only reads: ``read()`` is one SYNC_READ of the present positions, not retried (a stream that
cannot wait): a servo that misses a reply keeps its last position, and ``LOST_FRAMES`` frames in a row
without one from a servo is a lost leader (LinkError naming the servo). The leader's port is locked like a
follower's (one process per port). Angles through the leader's own calibration, in SI units.
"""

from __future__ import annotations

import math
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from armctl.bus.feetech.client import DEFAULT_BAUD, FeetechBus
from armctl.bus.portlock import PortLock
from armctl.bus.servobus import ServoBus, ServoError
from armctl.bus.simulators import SIMULATOR_BUSES, url_scheme
from armctl.calibration.servo import Calibration
from armctl.errors import BadInputError, LinkError
from armctl.model.arm import Arm, load_arm

LOST_FRAMES = 10  # reads in a row without a reply from a leader servo: the leader is lost
READ_TIMEOUT_S = 0.004  # beyond the bytes' time on the wire, per read


@dataclass(frozen=True)
class LeaderReading:
    """One read of the leader: ``t_s`` (time.monotonic() when the reply came), joint angles ``q_rad`` (rad, by
    the leader's calibration, base first), ``gripper_rad`` (NaN: none), ``steps`` {id: present position}, and
    ``fresh`` (the ids that answered this time; the others keep their last position)."""

    t_s: float
    q_rad: np.ndarray
    gripper_rad: float
    steps: dict[int, int]
    fresh: frozenset[int]


class Leader:
    """An open leader arm (made by ``open_leader``): ``arm``, ``calibration``, ``port``; ``read()``, ``close()``."""

    def __init__(self, arm: Arm, calibration: Calibration, port: str, bus: ServoBus, lock: PortLock | None):
        self.arm, self.calibration, self.port = arm, calibration, port
        self.bus, self._lock = bus, lock
        # the held servos too (the SO-101's wrist roll): a follower of the same model follows them (--map joints)
        self.ids = [s.id for s in calibration.servos] + [h.id for h in calibration.held]
        self._last: dict[int, int] = {}
        self._unheard = dict.fromkeys(self.ids, 0)
        self._closed = False
        self._io = threading.Lock()  # one read at a time (the follow loop, and a caller's own read)

    def _name(self, servo_id: int) -> str:
        for s in (*self.calibration.servos, *self.calibration.held):
            if s.id == servo_id:
                return f"leader servo {servo_id} ({s.name})"
        return f"leader servo {servo_id}"

    def read(self) -> LeaderReading:
        """One SYNC_READ of the leader's positions (see the module docstring); LinkError if the leader is lost.
        Safe from several threads (one read at a time)."""
        with self._io:
            return self._read()

    def _read(self) -> LeaderReading:
        if self._closed:
            raise LinkError(f"the leader on {self.port} is closed")
        try:
            got, missing, corrupt = self.bus.sync_read_once(["present_position"], self.ids, timeout_s=READ_TIMEOUT_S)
        except ServoError as exc:
            ids = getattr(exc, "servo_ids", ()) or ()
            who = self._name(ids[0]) if ids else "the leader"
            raise LinkError(f"{who} on {self.port}: {exc}; the follower was stopped") from None
        except LinkError as exc:
            text = str(exc)
            text = text[len(self.port) + 2 :] if text.startswith(f"{self.port}: ") else text
            raise LinkError(f"the leader on {self.port}: {text}; the follower was stopped") from None
        now = time.monotonic()
        for i, v in got.items():
            self._last[i] = v["present_position"]
            self._unheard[i] = 0
        for i in missing:
            self._unheard[i] += 1
            if self._unheard[i] >= LOST_FRAMES or i not in self._last:
                what = "only corrupt replies" if i in corrupt else "no reply"
                raise LinkError(
                    f"{self._name(i)} on {self.port}: {what} to {self._unheard[i]} reads in a row: the leader is lost "
                    "(cable, power); the follower was stopped"
                )
        cal = self.calibration
        q = np.array([float(s.angle_rad(self._last[s.id])) for s in cal.joints])
        g = float(cal.gripper.angle_rad(self._last[cal.gripper.id])) if cal.gripper is not None else math.nan
        return LeaderReading(now, q, g, dict(self._last), frozenset(got))

    def close(self) -> None:
        """Release the leader's port (its servos stay limp). Safe to call twice."""
        if self._closed:
            return
        with self._io:
            self._closed = True
        try:
            self.bus.close()
        finally:
            if self._lock is not None:
                self._lock.release()

    def __enter__(self) -> Leader:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<Leader {self.arm.name!r} on {self.port}>"


def check_leader(arm: Arm, cal: Calibration) -> None:
    """ConfigError unless ``cal`` is ``arm``'s; BadInputError unless its servos report where they are (bus servos)."""
    cal.check_arm(arm)
    if cal.unit != "steps":
        raise BadInputError(
            f"leader arm {arm.name!r}: its calibration {cal.source} is for hobby (PWM) servos, which cannot say "
            "where they are; a leader must be bus servos (e.g. --leader-arm so101)"
        )


def _leader_bus(arm: Arm, url: str, baudrate: int | None) -> ServoBus:
    """The bus the leader's servos speak (not yet open): a simulator's (``dynamixelsim://``, ``feetechsim://``), else
    Dynamixel for an arm of Dynamixel servos (the koch-leader), else Feetech."""
    scheme = url_scheme(url)
    by_arm = arm.drive is not None and arm.drive.protocol == "dynamixel"
    sim = SIMULATOR_BUSES.get(scheme)
    speaks = arm.drive.protocol if arm.drive is not None else None
    if sim is not None and speaks is not None and sim[1] != speaks:
        raise BadInputError(
            f"--leader {scheme}:// simulates {sim[0]} servos, but the leader arm {arm.name!r} has {speaks} servos: "
            f"give the --leader-arm of an arm of {sim[0]} servos, or a port of {speaks} servos"
        )
    if scheme == "dynamixelsim" or (scheme != "feetechsim" and by_arm):
        from armctl.bus.dynamixel.client import DynamixelBus

        return DynamixelBus(url, baudrate=baudrate or 1_000_000, retries=4)
    return FeetechBus(url, baudrate=baudrate or DEFAULT_BAUD, retries=4)


def open_leader(
    arm: str | Path | Arm = "so101",
    port: str | None = None,
    calibration: str | Path | Calibration | None = None,
    *,
    baudrate: int | None = None,
) -> Leader:
    """Open a leader arm of bus servos on ``port`` (a device path or URL; ``feetechsim://?...`` or
    ``dynamixelsim://?...`` for a simulated one, ``&hand=FILE.csv`` moving it as a hand would): ``arm`` its model
    (default so101; its servos say the bus: Feetech, or Dynamixel for a koch-leader), ``calibration`` its servo
    calibration (an armctl YAML, ``lerobot:ID`` or LeRobot's JSON file; default as for ``connect``); ``baudrate``:
    the servos' (default Feetech's 1 Mbaud; Dynamixels are looked for at 1 Mbaud, then 57600).
    Every servo must answer (LinkError naming the first that does not: no leader on the port); then their
    torque goes off. BadInputError for a calibration of PWM servos (a leader must report where it is)."""
    if port is None or not str(port).strip():
        raise BadInputError("--leader: give the leader arm's port (a device path, or feetechsim://... to simulate)")
    arm_obj = arm if isinstance(arm, Arm) else load_arm(arm)
    if isinstance(calibration, Calibration):
        cal = calibration
    else:
        from armctl.calibration.lerobot import open_calibration

        cal, _, _ = open_calibration(calibration, arm_obj)  # armctl's YAML, or LeRobot's (lerobot:ID, .json)
    check_leader(arm_obj, cal)
    url = str(port)
    lock = PortLock(url)
    lock.acquire()
    bus = _leader_bus(arm_obj, url, baudrate)
    try:
        try:
            bus.open()
        except LinkError as exc:
            raise LinkError(f"no leader arm {arm_obj.name!r}: {exc}") from None
        ids = [s.id for s in (*cal.servos, *cal.held)]
        try:
            if hasattr(bus, "find_baud") and baudrate is None:  # Dynamixels: 1 Mbaud or the factory's 57600
                bus.find_baud(ids[0])
            bus.check_ids(ids)
            bus.set_torque(ids, False)
        except ServoError as exc:
            raise LinkError(f"no leader arm {arm_obj.name!r} on {url}: {exc}") from None
    except BaseException:
        bus.close()
        lock.release()
        raise
    leader = Leader(arm_obj, cal, url, bus, lock)
    leader.read()  # every servo answers a sync read too
    return leader
