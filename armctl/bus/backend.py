"""The one interface every board backend offers, the registry of backends, and the port opener they share.

A backend speaks in servo **addresses** (our firmware's channel, a Firmata pin, a bus servo's id) and
**servo values** in its own unit, ``servo_unit``: "us" (pulse widths, PWM boards) or "steps" (bus servo
positions); a float, or None = leave this servo alone. ``move(frames, values)``, ``set_goal(values)`` and
the ``values`` of ``BoardStatus``/``BoardInfo`` all carry that unit. Timing is in 20 ms servo frames:
``move(frames, values)`` reaches ``values`` linearly over ``frames`` frames, right after the previous move.
Lifecycle: ``create`` (not yet open), ``open()`` (connects and checks the board), ``close()``, or a ``with``
block.

Backends are registered by name (``register_backend``); each maps a calibration onto its own addressing
(``address``) and declares what it can do (``caps``), so callers never probe for features.

A new backend (a subclass of ``Backend``) MUST give:

- ``name`` (its ``--backend`` name), ``servo_unit`` and ``caps`` (class attributes);
- ``create(port, cal, *, wire_log, watchdog_s, calibrating)`` (a classmethod: the backend, not yet open);
- ``open()`` -> ``BoardInfo`` and ``close()``;
- ``move(frames, values)``, ``drain()``, ``stop()`` and ``status()`` -> ``BoardStatus``.

It MAY override, where its board can do more than the defaults (which suit a board that plays what it is
sent at once, stores nothing and measures nothing):

- ``address(cal)``: its own addressing of the calibration's servos (default: the ``channel``; Firmata: the
  ``pin``; bus servos: the ``id``);
- ``set_goal(values)``: teleoperation steps (default: a one-frame ``move``), and ``drop_waiting()`` (default:
  not possible, False);
- the queue of timed moves: ``played_frames``, ``queued_frames``, ``wait_queued``, ``idle``,
  ``silent_frames`` and ``runs_on_frames`` (default: nothing queued);
- ``set_limits`` (with ``caps.stores_limits``), ``measured``/``last_measured`` (``caps.measures_positions``),
  ``release`` (``caps.releases``), ``tracking_deg``/``reset_tracking``, ``use_calibration``, ``watch_servos``
  (servos that report their load and temperature: limits, a gripper closing until contact);
- ``simulator``: the URL scheme of its simulated board (``armctl.bus.simulators``), the default port;
- ``cal`` (the calibration it drives by once open, where it changed the one given: bus servos clamped to their own
  position limits), ``notes`` (what ``open()`` found and did about it, for the user), ``homing_offsets`` and
  ``held_steps()`` (bus servos' EEPROM offsets and held servos' positions); defaults: None, none, none, {};
- ``sendable`` and ``sendable_why``: the values its protocol can send at all, and why no others (Firmata: no
  pulse below 544 us). Callers ask ``value_range(servo)``; ``fit_calibration`` narrows a calibration to it.
"""

from __future__ import annotations

import importlib
import math
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from types import MappingProxyType

import serial

from armctl.bus import __name__ as _bus  # noqa: F401  (registers armsim:// with pyserial)
from armctl.bus import codec
from armctl.bus.simulators import BadSimURL, is_simulator, open_simulator, simulator_url
from armctl.errors import BadInputError, LinkError, write_error

FRAME_S = 0.020
#: The widest pulse range (us) any board takes, a hobby servo's full travel (calibration.PULSE_RANGE_US).
PULSE_RANGE_US = tuple(t / codec.TICKS_PER_US for t in codec.LIMITS_TICKS)


@dataclass
class BoardInfo:
    """What the board told us at connect."""

    firmware: str
    protocol: int | str
    channels: int
    depth: int
    boot: int | None = None
    limits_us: tuple[tuple[float, float], ...] = ()
    #: what the board outputs right now, per address, in the backend's ``servo_unit`` (None: nothing)
    values: tuple[float | None, ...] = ()


@dataclass
class BoardStatus:
    """A status snapshot: the values output now (per address, in the backend's ``servo_unit``; None: no
    pulses, no goal), queue and counters."""

    values: tuple[float | None, ...]
    left_frames: int = 0
    counters: dict = field(default_factory=dict)
    frame: int | None = None
    #: Per address, what a servo reports of itself (bus servos: position, load, voltage, temperature...).
    servos: dict = field(default_factory=dict)


@dataclass(frozen=True)
class Capabilities:
    """What a backend (on the port it opened) can do.

    - ``reports_pulses``: ``status()`` gives the values the board outputs now (else the last ones sent);
    - ``measures_positions``: ``measured()`` gives joint angles measured by the hardware (bus servos, through
      the calibration) or the simulator;
    - ``timed_moves``: the board plays queued moves on its own clock (else the host times every frame);
    - ``stores_limits``: the board keeps per-servo limits (``set_limits``) and refuses values outside them;
    - ``releases``: ``release()`` turns the servos limp and ``measured()`` still says where they are (an arm
      you can guide by hand: teaching, calibrating by feel).
    """

    reports_pulses: bool = False
    measures_positions: bool = False
    timed_moves: bool = False
    stores_limits: bool = False
    releases: bool = False


class Backend(ABC):
    """A board we can stream timed servo pulses to."""

    name = "backend"
    info: BoardInfo | None = None
    port: str = ""
    caps = Capabilities()
    #: What the servos are driven in: "us" (PWM pulse widths) or "steps" (bus servo positions).
    servo_unit = "us"
    #: The frame period (s): one servo value per servo per frame.
    frame_s = FRAME_S
    #: The URL scheme of this backend's simulated board ("armsim"), if it has one (``simulator_url``).
    simulator = ""
    #: What ``measured()`` reads, in words ("simulated servos", "servo encoders"), for reports.
    measured_by = ""
    #: If this program dies, how many more frames the board plays of what it was sent before it holds
    #: (inf: all of it; 0: it holds at once, nothing is queued). The crash journal predicts the stop pose.
    runs_on_frames: float = 0.0
    #: Called every few ms from inside the blocking waits of ``move`` and ``drain`` (set by the streamer);
    #: it may raise to abandon the wait, e.g. on a stop request from another thread.
    on_wait: Callable[[], None] | None = None
    #: The servo values (``servo_unit``) this board's protocol can send at all, (lowest, highest), whatever a
    #: calibration allows; None: every value a servo takes (its ``full_range``). Asked through ``value_range``.
    sendable: tuple[float, float] | None = None
    #: Why nothing beyond ``sendable`` can be sent, in words, for the one line the user sees.
    sendable_why: str = ""
    #: The calibration the backend drives by once open, where it changed the one given (bus servos: each range
    #: clamped to the servo's own position limits); None: the one given, as it was.
    cal = None
    #: What ``open()`` found and did about it (limits clamped, offsets), one line each, for the user.
    notes: Sequence[str] = ()
    #: Each servo's homing offset register (bus servos' EEPROM), per address, read at open; none on other boards.
    homing_offsets: Mapping[int, int] = MappingProxyType({})

    def value_range(self, servo) -> tuple[float, float]:
        """The values (``servo_unit``) this board can drive ``servo`` to: its ``full_range`` inside ``sendable``.
        The one answer to "can this board send that?": the calibration is narrowed to it at connect
        (``fit_calibration``), the calibration's nudges stop at it, and a backend's write path never passes it."""
        lo, hi = servo.full_range
        if self.sendable is not None:
            lo, hi = max(lo, self.sendable[0]), min(hi, self.sendable[1])
        return float(lo), float(hi)

    def beyond_note(self, servo, value: float) -> str:
        """One line if ``value`` lies past what this board can send to ``servo`` though the servo itself takes it
        (a limit of the board's protocol, not of the servo), else ""."""
        lo, hi = self.value_range(servo)
        full_lo, full_hi = servo.full_range
        if value < lo - 1e-9 and lo > full_lo:
            return f"{lo:g} {servo.unit} is the lowest the {self.name} backend can send: {self.sendable_why}"
        if value > hi + 1e-9 and hi < full_hi:
            return f"{hi:g} {servo.unit} is the highest the {self.name} backend can send: {self.sendable_why}"
        return ""

    def fit_calibration(self, cal):
        """(``cal`` with every servo's range narrowed to what this board can send (``value_range``), one note per
        servo narrowed: its range and joint angles here and why). ConfigError naming the servo if none of its
        range is left. ``connect`` calls it before the port opens, so a refusal moves nothing."""
        from armctl.calibration.servo import narrowed  # (the bus loads nothing of the calibration until it is used)

        return narrowed(cal, self.value_range, why=self.sendable_why)

    def _waiting(self) -> None:
        if self.on_wait is not None:
            self.on_wait()

    @abstractmethod
    def open(self) -> BoardInfo:
        """Open the port, handshake, return the board's description. LinkError on any failure."""

    @abstractmethod
    def close(self) -> None:
        """Release the port (safe to call twice)."""

    @abstractmethod
    def move(self, frames: int, values: dict[int, float | None]) -> None:
        """Queue a linear move over ``frames`` 20 ms frames to ``values`` (address -> ``servo_unit``)."""

    @abstractmethod
    def drain(self, *, timeout_s: float | None = None) -> None:
        """Block until every queued move has been played."""

    @abstractmethod
    def stop(self) -> None:
        """Controlled stop: drop queued moves, hold the current pulses."""

    @abstractmethod
    def status(self) -> BoardStatus:
        """Current pulses and counters."""

    def played_frames(self) -> int:
        """Frames of queued motion played so far (for progress), best estimate."""
        return 0

    def wait_queued(self, frames: float) -> None:
        """Block (calling ``on_wait``) until at most about ``frames`` frames of the motion sent are left for the
        board to play, so what is sent next can still be changed soon (a feed hold). Backends that time every
        frame on the host queue nothing and return at once; a backend may keep more queued than asked where its
        link needs it (a simulator run faster than real time)."""
        return None

    def idle(self, seconds: float) -> None:
        """Wait ``seconds`` with nothing to send (a feed hold): the servos hold the last values, the link is
        kept alive (a board's watchdog fed), ``on_wait`` is called."""
        self._waiting()
        time.sleep(seconds)

    def silent_frames(self) -> float:
        """Board frames since this host last sent the board a byte: a board that plays on for
        ``runs_on_frames`` after its host dies counts them from there, not from now."""
        return 0.0

    def value_step(self, channel: int) -> float | None:
        """The smallest change of servo value the board makes on ``channel`` (in ``servo_unit``) where its grid is
        coarser than the calibration's ``resolution``: a PCA9685's count (4.88 us at 50 Hz). None: the
        calibration's (our firmware's 0.5 us ticks, a bus servo's whole steps)."""
        return None

    def set_limits(self, channel: int, lo_us: float, hi_us: float) -> None:
        """Store ``channel``'s safe pulse range (us) on the board, which then refuses widths outside it.

        Boards that cannot store limits (StandardFirmata: the range is given when a servo is
        attached) do nothing here; ``info.limits_us`` is empty for them.
        """
        return None

    def sync_limits(self, cal) -> None:  # noqa: B027 - a no-op for boards that store no limits
        """Before anything moves: make the limits the board stores agree with ``cal`` (already ``address``-ed),
        or raise BoardLimitsError naming the servo and the fix. Boards that store no limits do nothing."""

    def measured(self, *, settle_s: float = 0.0) -> dict[int, float]:
        """Measured angles (address -> rad: joint angle, or gripper angle), if ``caps.measures_positions``;
        with ``settle_s`` > 0, first wait up to that long for the servos to stop moving. Not available: {}."""
        return {}

    def last_measured(self) -> dict[int, float]:
        """The latest measured angles (address -> rad) without a wait: what the board last reported (bus servos:
        the position read in the last frame), else ``measured()``; {} if the board cannot measure."""
        return self.measured() if self.caps.measures_positions else {}

    def set_goal(self, values: dict[int, float | None]) -> None:
        """Teleoperation, one step: the servos go to ``values`` (address -> ``servo_unit``) as soon as the board
        can, with no frame clock of the backend's own (the caller paces the calls and keeps each step under the
        speed limits). Default: a one-frame move (boards that play queued 20 ms frames; see ``queued_frames``)."""
        self.move(1, values)

    def drop_waiting(self) -> bool:
        """Teleoperation on boards that queue 20 ms frames, where every step is a one-frame move (``set_goal``):
        drop the steps that wait behind the one playing, which ends (it already outputs its end), so that the next
        ``set_goal`` (the latest goal) starts at the next frame boundary instead of a frame or two later. Where the
        servos then hold is the end of whichever step played when the board heard of it: the caller knows it only
        when all the steps it may find unfinished went to one pose. False, and nothing done, when nothing is queued
        or the board cannot (the default)."""
        return False

    def queued_frames(self) -> float:
        """Frames sent and not yet played (boards with a queue of timed moves; 0 for host-timed boards)."""
        return 0.0

    def held_steps(self) -> dict[int, float]:
        """The positions (``servo_unit``) of the servos held at one position (not joints: the calibration's
        ``held``) read in the last frame, per address, with no bus traffic; {} if the board holds none."""
        return {}

    def tracking_deg(self) -> dict[int, float] | None:
        """Per address, the farthest (deg) a servo lagged its commanded path since ``reset_tracking``;
        None for boards that cannot measure it."""
        return None

    def reset_tracking(self) -> None:  # noqa: B027 - a no-op for boards that do not track
        """Start a new tracking record (see ``tracking_deg``)."""

    def use_calibration(self, cal) -> None:  # noqa: B027 - a no-op for boards that map nothing themselves
        """From now on the servos of ``cal`` (a new calibration of the same servos, already ``address``-ed)."""

    def watch_servos(self, limits) -> list[str]:
        """Watch the servos' load and temperature as they move, and close the gripper until contact, as ``limits``
        (``armctl.bus.feetech.watch.WatchLimits``) says: bus servos that report them do; this board's servos do not,
        so nothing is watched, and notes say what is not done (a gripper closing until contact closes by position)."""
        if limits is None or limits.grip is None:
            return []
        return [f"the {self.name} board's servos report no load: the gripper closes by position, not until contact"]

    def release(self) -> None:
        """Let the servos go limp, so the arm can be moved by hand (``caps.releases``)."""
        raise NotImplementedError(f"the {self.name} backend cannot release its servos")

    @classmethod
    def address(cls, cal):
        """``cal`` with each servo's ``channel`` set to this backend's address for it (default: as is)."""
        return cal

    @classmethod
    def simulator_url(cls, arm, cal_path, state_path) -> str | None:
        """The URL of a simulated board for ``arm`` with the calibration in ``cal_path``, keeping its servos
        in ``state_path`` between runs (the default port); None if this backend has no simulator. Made by
        the simulator of ``simulator`` (``armctl.bus.simulators``)."""
        return simulator_url(cls.simulator, arm, cal_path, state_path) if cls.simulator else None

    @classmethod
    @abstractmethod
    def create(cls, port: str, cal, *, wire_log=None, watchdog_s: float = 1.0, calibrating: bool = False):
        """A backend (not yet open) for ``port`` driving the servos of ``cal`` (already ``address``-ed).

        ``wire_log``: file for every byte sent and received; ``watchdog_s``: how long the board may hear
        nothing before it holds and stops (boards that have a watchdog); ``calibrating``: the servos may be
        driven anywhere in 500..2500 us (as far as the board can send: ``value_range``), not only in the calibrated
        range."""

    def __enter__(self):
        self.open()
        return self

    def __exit__(self, *exc):
        self.close()
        return False


def board_limits_us(servo) -> tuple[float, float]:
    """The limits (us, 0.5 us steps) a board should store for a servo: its min/max rounded inward."""
    r = servo.resolution
    return (math.ceil(servo.lo / r - 1e-6) * r, math.floor(servo.hi / r + 1e-6) * r)


class BoardLimitsError(LinkError):
    """The board's stored pulse limits differ from the host's calibration, or the board refused new ones."""


class WireLog:
    """Writes every byte sent (``>``) and received (``<``) with its time, one chunk per line.

    A log that cannot be written (disk full) raises BadInputError once, naming the file: at open, before the
    port is opened, or mid-run, where the board is then stopped under control; later records are dropped."""

    def __init__(self, path):
        self.path = path
        try:
            # line-buffered: a wire log is for bug reports, and must hold what was sent up to a crash
            self.f = open(path, "w", encoding="ascii", errors="backslashreplace", buffering=1)  # noqa: SIM115
            self.f.write("# armctl wire log: seconds since open, direction (> host to board, < board to host), bytes\n")
            self.f.flush()  # a full disk shows here, before anything is sent
        except OSError as exc:
            raise write_error(f"--wire-log {path}: cannot write: {exc.strerror or exc}", exc) from None
        self.t0 = time.monotonic()

    def record(self, direction: str, data: bytes) -> None:
        """Log ``data`` sent (``>``) or received (``<``) now."""
        if not data or self.f.closed:
            return
        try:
            self.f.write(f"{time.monotonic() - self.t0:10.6f} {direction} {data!r}\n")
        except OSError as exc:
            self.close()
            raise write_error(f"--wire-log {self.path}: cannot write: {exc.strerror or exc}", exc) from None

    def close(self) -> None:
        """Close the log file (safe to call twice)."""
        if not self.f.closed:
            try:
                self.f.close()
            except OSError:
                pass


def open_port(url: str, *, baudrate: int, timeout_s: float = 0.0) -> serial.SerialBase:
    """Open ``url`` (a path or any pyserial URL, armsim:// included) exclusively where the platform can
    (pyserial's ``exclusive``: other programs cannot open a device path at the same time); LinkError
    naming the port if it fails."""
    options = {"baudrate": baudrate, "timeout": timeout_s, "write_timeout": 2.0, "exclusive": True}
    try:
        if is_simulator(url):
            return open_simulator(url, **options)
        return serial.serial_for_url(url, **options)
    except BadSimURL as exc:
        raise BadInputError(f"port {url!r}: {exc}") from None
    except (serial.SerialException, OSError, ValueError) as exc:
        text = str(exc)
        if "exclusively lock" in text:
            raise LinkError(f"cannot open port {url!r}: another program has it open ({text})") from None
        raise LinkError(f"cannot open port {url!r}: {text}") from None


# --- the registry --------------------------------------------------------------------------------------------

_BACKENDS: dict[str, str] = {
    "armctl": "armctl.bus.armproto.backend:ArmProtocolBackend",
    "firmata": "armctl.bus.firmata:FirmataBackend",
    "feetech": "armctl.bus.feetech.backend:FeetechBackend",
    "dynamixel": "armctl.bus.dynamixel.backend:DynamixelBackend",
    "pca9685": "armctl.bus.pca9685.backend:PCA9685Backend",
}


def register_backend(name: str, target: str | type[Backend]) -> None:
    """Make a backend available by ``name`` (``--backend NAME``): a Backend subclass, or its import path
    ``"package.module:Class"`` (imported on first use, so unused backends cost nothing at start-up)."""
    _BACKENDS[name] = target


def backend_names() -> list[str]:
    """Names of the registered backends."""
    return list(_BACKENDS)


def backend_class(name: str) -> type[Backend]:
    """The Backend subclass registered as ``name``; BadInputError listing the others if there is none."""
    target = _BACKENDS.get(name)
    if target is None:
        raise BadInputError(f"no backend {name!r}; backends: {', '.join(_BACKENDS)}")
    if isinstance(target, str):
        module, _, cls = target.partition(":")
        target = getattr(importlib.import_module(module), cls)
        _BACKENDS[name] = target
    return target


def readdress(cal, field_name: str):
    """``cal`` with every servo's ``channel`` replaced by its ``field_name`` (e.g. ``pin``)."""
    return replace(
        cal,
        joints=tuple(replace(s, channel=getattr(s, field_name)) for s in cal.joints),
        gripper=None if cal.gripper is None else replace(cal.gripper, channel=getattr(cal.gripper, field_name)),
    )
