"""What armctl remembers between runs: the pose the arm was left in, per port and arm, and a journal of
where it would stop while it moves.

A board that resets when its port opens (a real Uno) forgets its pulses; the next run then declares the
stored pose as where the arm is before it ramps anywhere (see ``armctl.robot.robot``). While a motion plays,
the Robot's motion runner journals (``armctl.robot.journal``), every servo frame, the pose the board would stop
in if armctl died at that moment, marked *unclean*; the end of a motion (or a controlled stop) stores the
pose the board holds, marked *clean*. So after a kill, a power cut of the PC or a USB hiccup, the next run
starts from the journaled pose and says so.

The servo values (us) are kept beside the joint angles: they are what the servos physically hold, and
stay right when the calibration changes in between. One small file per port and arm in the state folder
(``armctl.core.paths.state_dir``) holds two slots written in turn, each with a sequence number and a CRC; a
write is one positioned write of a slot (cheap enough for 50 a second), a torn write leaves the other slot,
and the reader takes the newest whole one. Nothing else is written: no temporary files to leave behind.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import os
import struct
import time
import zlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from armctl.bus.portlock import port_key
from armctl.core.paths import legacy_state_dir, state_dir
from armctl.errors import write_error
from armctl.model.arm import Arm

SLOT_BYTES = 512
#: A journal claiming the board plays on longer than this (our firmware's longest watchdog, 65 s) or dated
#: further in the future than ``FUTURE_SLACK_S`` is suspect: its pose is not trusted, nothing waits on it.
PLAY_ON_MAX_S = 65.0
FUTURE_SLACK_S = 5.0
#: A stored joint angle this far from what its servo value means (by the calibration it was stored with) is
#: a file that disagrees with itself.
AGREE_TOL_RAD = math.radians(0.5)
_MAGIC = b"ARMJ"
_HEAD = struct.Struct("<4sQH")  # magic, sequence number, length of the JSON body
_CRC = struct.Struct("<I")


@dataclass(frozen=True)
class StoredPose:
    """A pose stored for a port: joint angles (rad), gripper angle (rad, NaN if none), the servo values
    (us per servo, joints then gripper; empty in files from armctl 0.1), whether it was stored at a clean
    end (False: journaled while moving, the run never ended), when (``time.time()`` seconds), and for a
    journal how long after that the board would still play what it had been sent."""

    q_rad: np.ndarray
    gripper_rad: float
    values: tuple[float | None, ...] = ()
    clean: bool = True
    time_s: float = 0.0
    hold_in_s: float = 0.0  # journaled: the board was to play on this long after ``time_s``, then hold
    cal: str = ""  # the digest of the calibration that turned ``values`` into ``q_rad`` (``cal_digest``); "": older


def cal_digest(cal) -> str:
    """A short digest of what a calibration makes of servo values (its servos' angles at a few values): a
    stored pose whose angles disagree with its values is corrupt, unless the calibration changed since."""
    # not the address: the same servos driven by pin (Firmata) or by channel hold the same values
    rows = [[round(float(s.angle_rad(v)), 9) for v in (s.lo, (s.lo + s.hi) / 2, s.hi)] for s in cal.servos]
    return hashlib.sha1(json.dumps(rows).encode()).hexdigest()[:12]


def suspect(stored: StoredPose, now: float | None = None) -> str:
    """Why a stored pose's times cannot be true ("" if they can): dated in the future, or a journal claiming
    the board plays on for longer than any watchdog (a clock gone wrong, a corrupt or forged file)."""
    now = time.time() if now is None else now
    if not (math.isfinite(stored.time_s) and math.isfinite(stored.hold_in_s)):
        return "its times are not finite numbers"
    if stored.time_s > now + FUTURE_SLACK_S:
        return f"it is dated {stored.time_s - now:.0f} s in the future (a clock gone wrong, or a forged file)"
    if not 0.0 <= stored.hold_in_s <= PLAY_ON_MAX_S:
        return f"it claims the board plays on for {stored.hold_in_s:g} s (at most {PLAY_ON_MAX_S:g} s can be true)"
    return ""


def check_stored(stored: StoredPose, arm: Arm, cal) -> str:
    """What is wrong with ``stored`` as the pose of ``arm`` driven through ``cal`` ("" if nothing): times that
    cannot be true, joint angles outside the limits, servo values outside the calibrated range or that
    disagree with the angles (by the same calibration: after a recalibration the values are what counts)."""
    why = suspect(stored)
    if why:
        return why
    for i, q in enumerate(stored.q_rad):
        lo, hi = arm.q_min[i], arm.q_max[i]
        if not lo - AGREE_TOL_RAD / 5 <= q <= hi + AGREE_TOL_RAD / 5:
            return (
                f"joint {i + 1} ({arm.joint_names[i]}) at {math.degrees(q):.1f} deg, outside its limits "
                f"{math.degrees(lo):g}..{math.degrees(hi):g} deg"
            )
    if len(stored.values) != len(cal.servos):
        return ""  # an armctl 0.1 file: angles only
    same_cal = not stored.cal or stored.cal == cal_digest(cal)
    for i, (s, v) in enumerate(zip(cal.servos, stored.values)):
        if v is None:
            continue
        if not s.lo - s.resolution <= v <= s.hi + s.resolution:
            return f"servo {s.name} at {v:g} {s.unit}, outside the calibrated {s.lo:g}..{s.hi:g} {s.unit}"
        if same_cal and i < arm.n and abs(float(s.angle_rad(v)) - stored.q_rad[i]) > AGREE_TOL_RAD:
            return (
                f"its servo values disagree with its joint angles ({s.name}: {v:g} {s.unit} means "
                f"{math.degrees(float(s.angle_rad(v))):.1f} deg, the file says {math.degrees(stored.q_rad[i]):.1f} deg)"
            )
    return ""


def _key(port: str, arm_name: str, key: str) -> str:
    return hashlib.sha1(f"{key}|{arm_name}".encode()).hexdigest()[:12]


def pose_file(port: str, arm_name: str) -> Path:
    """The file that holds the stored pose (and journal) of arm ``arm_name`` on ``port``."""
    return state_dir() / f"pose-{arm_name}-{_key(port, arm_name, port_key(port) or port)}.bin"


def _decode(doc: dict, arm: Arm) -> StoredPose | None:
    stored, _ = _decode_why(doc, arm)
    return stored


def _decode_why(doc, arm: Arm) -> tuple[StoredPose | None, str]:
    """(the pose in a stored document, "") or (None, what is wrong with it)."""
    try:
        q = np.array(doc["q_rad"], dtype=float)
        if q.shape != (arm.n,):
            return None, f"it holds {q.size} joint angles, arm {arm.name!r} has {arm.n}"
        if not np.all(np.isfinite(q)):
            return None, "its joint angles are not finite numbers (" + ", ".join(f"{v:g}" for v in q) + ")"
        g = doc.get("gripper_rad")
        values = tuple(None if v is None else float(v) for v in doc.get("values", ()))
        if not all(v is None or math.isfinite(v) for v in values):
            values = ()
        stored = StoredPose(
            q,
            math.nan if g is None else float(g),
            values,
            bool(doc.get("clean", True)),
            float(doc.get("t", 0.0)),
            float(doc.get("hold_in_s", 0.0)),
            str(doc.get("cal", "")),
        )
        return stored, ""
    except (KeyError, TypeError, ValueError, AttributeError):
        return None, "its record is not a pose (keys missing or of the wrong kind)"


def _slots(data: bytes) -> list[tuple[int, dict]]:
    """(sequence number, document) of every whole slot in ``data``."""
    out = []
    for off in range(0, len(data) - _HEAD.size, SLOT_BYTES):
        magic, seq, n = _HEAD.unpack_from(data, off)
        end = off + _HEAD.size + n
        if magic != _MAGIC or end + _CRC.size > min(len(data), off + SLOT_BYTES):
            continue
        (crc,) = _CRC.unpack_from(data, end)
        if zlib.crc32(data[off:end]) != crc:
            continue  # torn or corrupt: the other slot has the previous pose
        try:
            out.append((seq, json.loads(data[off + _HEAD.size : end])))
        except ValueError:
            continue
    return out


class PoseStore:
    """The stored pose of one arm on one port. ``load`` reads it; ``save`` writes the next slot (the file is
    opened on first use and kept open; ``close`` releases it)."""

    def __init__(self, port: str, arm: Arm):
        self.port, self.arm = port, arm
        self.path = pose_file(port, arm.name)
        self._fd: int | None = None
        self._seq = 0
        self._short = 0  # the file was shorter than its two slots when opened (truncated): bytes it had

    def load(self) -> StoredPose | None:
        """The newest whole pose stored for this arm and port (an armctl 0.1 file too), or None."""
        return self.read()[0]

    def read(self) -> tuple[StoredPose | None, str]:
        """(the newest whole pose stored for this arm and port, "") or (None, one line naming the file and what
        is wrong with it: missing, no whole record (random bytes, truncated), not finite, ...)."""
        try:
            data = self.path.read_bytes()
        except FileNotFoundError:
            data = None
        except OSError as exc:
            return None, f"{self.path}: cannot be read ({exc.strerror or exc})"
        short = self._short or (len(data) if data and len(data) < 2 * SLOT_BYTES else 0)
        if short:  # the newest slot may be the one cut off: the other is an older pose, not this arm's last
            return None, f"{self.path}: truncated ({short} bytes of {2 * SLOT_BYTES})"
        slots = _slots(data) if data else []
        if slots:
            self._seq = max(self._seq, max(s for s, _ in slots))
            stored, why = _decode_why(max(slots, key=lambda s: s[0])[1], self.arm)
            return stored, (f"{self.path}: {why}" if why else "")
        legacy, why = self._legacy()
        if legacy is not None or why:
            return legacy, why
        if data is None or not any(data):  # no file, or one created and never written (a full disk, a kill)
            return None, (
                f"no pose is stored for arm {self.arm.name!r} on this port (nothing in {self.path}: a new PC, or the "
                "state folder was emptied)"
            )
        return None, f"{self.path}: no whole record in its {len(data)} bytes (corrupt or truncated)"

    def _legacy(self) -> tuple[StoredPose | None, str]:
        legacy = legacy_state_dir()  # armctl 0.1: JSON, keyed by the port URL as given (no checksum)
        if legacy is None:
            return None, ""
        name = f"pose-{self.arm.name}-{hashlib.sha1(f'{self.port}|{self.arm.name}'.encode()).hexdigest()[:12]}.json"
        path = legacy / name
        try:
            stored, why = _decode_why(json.loads(path.read_text(encoding="utf-8")), self.arm)
        except FileNotFoundError:
            return None, ""
        except (OSError, ValueError) as exc:
            return None, f"{path}: not a pose file ({getattr(exc, 'strerror', None) or exc})"
        return stored, (f"{path}: {why}" if why else "")

    def checked(self, cal) -> tuple[StoredPose | None, str]:
        """``read``, then ``check_stored`` against the arm and ``cal``: (the pose, "") only if it can be trusted,
        else (None, one line naming the file and what is wrong)."""
        stored, why = self.read()
        if stored is None:
            return None, why
        bad = check_stored(stored, self.arm, cal)
        return (None, f"{self.path}: {bad}") if bad else (stored, "")

    def open(self) -> None:
        """Open (create) the file with room for both slots, so later writes never need a block the disk may
        not have. OSError if the state folder cannot be written."""
        if self._fd is not None:
            return
        if not self._seq:
            self.load()
        with contextlib.suppress(OSError):
            size = self.path.stat().st_size
            if 0 < size < 2 * SLOT_BYTES:
                self._short = size  # (reserving the slots below would hide it)
        self._fd = _open_slots(self.path)

    def save(
        self,
        q_rad,
        gripper_rad: float,
        values=(),
        *,
        clean: bool = True,
        durable: bool = False,
        hold_in_s: float = 0.0,
        cal: str = "",
    ) -> None:
        """Store a pose: ``clean`` at the end of a motion, unclean while journaling one (``hold_in_s``: the board
        reaches it that long from now, then holds). ``durable`` also fsyncs (a clean end: it survives a power
        cut). OSError if the state folder cannot be written."""
        self.open()
        g = float(gripper_rad)
        doc = {
            "q_rad": [float(v) for v in q_rad],
            "gripper_rad": g if math.isfinite(g) else None,
            "values": [None if v is None or not math.isfinite(v) else float(v) for v in values],
            "clean": bool(clean),
            "t": time.time(),
            "hold_in_s": float(hold_in_s),
        }
        if cal:
            doc["cal"] = cal  # older readers ignore it
        body = json.dumps(doc, separators=(",", ":")).encode()
        self._seq += 1
        head = _HEAD.pack(_MAGIC, self._seq, len(body)) + body
        slot = head + _CRC.pack(zlib.crc32(head))
        if len(slot) > SLOT_BYTES:
            raise ValueError(f"a stored pose of {len(slot)} bytes does not fit a {SLOT_BYTES}-byte slot")
        _write_at(self._fd, slot.ljust(SLOT_BYTES, b"\0"), (self._seq % 2) * SLOT_BYTES)
        self._short = 0  # a pose stored now: the newest slot is whole again
        if durable:
            os.fsync(self._fd)

    def close(self) -> None:
        fd, self._fd = self._fd, None
        if fd is not None:
            with contextlib.suppress(OSError):
                os.close(fd)


def _open_slots(path: Path) -> int:
    """Open (create) a two-slot file with room for both slots, so later writes never need a block the disk may
    not have. OSError if the folder cannot be written."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT | getattr(os, "O_BINARY", 0), 0o644)
    try:
        _reserve(fd, 2 * SLOT_BYTES)
    except OSError:
        os.close(fd)
        raise
    return fd


def _reserve(fd: int, size: int) -> None:
    """Make the file at least ``size`` bytes with its blocks allocated (posix_fallocate where the OS has it:
    Linux; elsewhere zeros written), so a full disk shows here, not in the middle of a motion."""
    if hasattr(os, "posix_fallocate"):
        os.posix_fallocate(fd, 0, size)
        return
    have = os.fstat(fd).st_size
    if have < size:
        _write_at(fd, b"\0" * (size - have), have)


def _write_at(fd: int, data: bytes, offset: int) -> None:
    """Write ``data`` at ``offset`` (pwrite where the OS has it; Windows: seek, then write)."""
    if hasattr(os, "pwrite"):
        os.pwrite(fd, data, offset)
        return
    os.lseek(fd, offset, os.SEEK_SET)
    os.write(fd, data)


def live_file(port: str, arm_name: str) -> Path:
    """The file where the armctl that drives ``arm_name`` on ``port`` publishes the pose the board plays now."""
    return state_dir() / f"live-{arm_name}-{_key(port, arm_name, port_key(port) or port)}.bin"


class LiveStore(PoseStore):
    """The pose the board plays *now*, published by the armctl that holds the port (once a frame while it
    moves, clean once it holds), for others to watch without opening the port (``armctl web --watch``,
    ``armctl.robot.robot.Watch``): the same two-slot file as the stored pose, never read back by its writer."""

    def __init__(self, port: str, arm: Arm):
        super().__init__(port, arm)
        self.path = live_file(port, arm.name)

    def _legacy(self) -> tuple[StoredPose | None, str]:
        return None, ""


def save_last_pose(port: str, arm: Arm, q_rad, gripper_rad: float, values=(), *, clean: bool = True) -> None:
    """Store the pose ``arm`` was left in on ``port`` and the servo ``values`` (us) that hold it.
    StorageError (BadInputError: a file where the folder goes) if the state folder cannot be written."""
    store = PoseStore(port, arm)
    try:
        store.save(q_rad, gripper_rad, values, clean=clean, durable=clean)
    except OSError as exc:
        raise write_error(f"cannot write the state folder {store.path.parent}: {exc.strerror or exc}", exc) from None
    finally:
        store.close()


# --- program progress ----------------------------------------------------------------------------------------


def run_file(port: str, arm_name: str) -> Path:
    """The file that holds the progress of the last program run of arm ``arm_name`` on ``port``."""
    return state_dir() / f"run-{arm_name}-{_key(port, arm_name, port_key(port) or port)}.bin"


def program_digest(path: str | Path) -> str:
    """A short digest of a program file's bytes: a record of its progress is only used on the same program."""
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()[:16]


@dataclass(frozen=True)
class RunRecord:
    """How far a program run got: the program (absolute path and digest of its bytes), the step being played
    (``step``: index into the planned steps with the loops unrolled, as ``armctl plan`` numbers them from 1),
    how many there are, ``status`` (``running``: the run never ended, killed or the PC went down;
    ``stopped``: a controlled stop; ``done``), the gripper angle the program has at that step's start (rad,
    NaN if none) and when (``time.time()``)."""

    program: str
    digest: str
    step: int
    steps: int
    status: str
    gripper_rad: float = math.nan
    time_s: float = 0.0


class RunStore:
    """The progress record of program runs of one arm on one port: two slots written in turn, as the pose
    journal (a torn write leaves the other slot; ``durable`` writes are fsynced: they survive a power cut)."""

    def __init__(self, port: str, arm: Arm):
        self.path = run_file(port, arm.name)
        self._fd: int | None = None
        self._seq = 0

    def load(self) -> RunRecord | None:
        """The newest whole record, or None."""
        try:
            slots = _slots(self.path.read_bytes())
        except OSError:
            return None
        if not slots:
            return None
        self._seq = max(self._seq, max(s for s, _ in slots))
        doc = max(slots, key=lambda s: s[0])[1]
        try:
            g = doc.get("g")
            return RunRecord(
                str(doc["program"]),
                str(doc["digest"]),
                int(doc["step"]),
                int(doc["steps"]),
                str(doc["status"]),
                math.nan if g is None else float(g),
                float(doc.get("t", 0.0)),
            )
        except (KeyError, TypeError, ValueError):
            return None

    def save(self, record: RunRecord, *, durable: bool = True) -> None:
        """Write ``record`` to the next slot. OSError if the state folder cannot be written."""
        if self._fd is None:
            if not self._seq:
                self.load()
            self._fd = _open_slots(self.path)
        g = record.gripper_rad
        doc = {
            "program": record.program if len(record.program) <= 300 else "",
            "digest": record.digest,
            "step": record.step,
            "steps": record.steps,
            "status": record.status,
            "g": g if math.isfinite(g) else None,
            "t": record.time_s or time.time(),
        }
        body = json.dumps(doc, separators=(",", ":")).encode()
        self._seq += 1
        head = _HEAD.pack(_MAGIC, self._seq, len(body)) + body
        slot = head + _CRC.pack(zlib.crc32(head))
        _write_at(self._fd, slot.ljust(SLOT_BYTES, b"\0"), (self._seq % 2) * SLOT_BYTES)
        if durable:
            os.fsync(self._fd)

    def close(self) -> None:
        fd, self._fd = self._fd, None
        if fd is not None:
            with contextlib.suppress(OSError):
                os.close(fd)


def stored_values_for_port(port: str) -> list[tuple[str, tuple[float | None, ...], float]]:
    """Every pose stored for ``port`` whatever the arm: (arm name, servo values, joints then gripper, time
    stored), newest first. For ``armctl ports``, which finds a board that lost its pulses but knows no arm."""
    out = []
    try:
        files = list(state_dir().glob("pose-*.bin"))
    except OSError:
        return out
    for path in files:
        name = path.name[len("pose-") : -len(".bin")].rsplit("-", 1)[0]
        if not name or pose_file(port, name) != path:
            continue
        try:
            slots = _slots(path.read_bytes())
        except OSError:
            continue
        if not slots:
            continue
        doc = max(slots, key=lambda s: s[0])[1]
        try:
            values = tuple(None if v is None else float(v) for v in doc.get("values", ()))
            out.append((name, values, float(doc.get("t", 0.0))))
        except (TypeError, ValueError):
            continue
    return sorted(out, key=lambda e: -e[2])
