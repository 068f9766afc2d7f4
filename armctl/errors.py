"""One exception tree for armctl.

Every class also inherits the builtin it resembles, so callers that only know
Python's builtins (``ValueError``, ``OSError``) still catch the right thing.
The CLI maps each family to its own exit code (see ``armctl.cli``).
"""

from __future__ import annotations


class ArmctlError(Exception):
    """Base of every error armctl raises on purpose."""

    exit_code = 1


class BadInputError(ArmctlError, ValueError):
    """Input that is malformed: NaN, wrong count, unknown name, bad unit."""

    exit_code = 2


class ConfigError(BadInputError):
    """A YAML file (arm, program, calibration) that does not validate.

    ``path`` is the file, ``key`` the dotted key path, ``line`` the 1-based
    line in the file when known.
    """

    def __init__(self, message: str, *, path=None, key=None, line=None):
        self.path = None if path is None else str(path)
        self.key = key
        self.line = line
        where = []
        if self.path:
            where.append(self.path if line is None else f"{self.path}:{line}")
        if key:
            where.append(f"key '{key}'")
        prefix = ", ".join(where)
        super().__init__(f"{prefix}: {message}" if prefix else message)
        self.reason = message


class PoseUnknownError(BadInputError):
    """Servos that lost their pulses (a board that reset when its port opened) on a board that cannot read
    where they are, and no pose armctl can trust (the stored one missing or corrupt): nothing moves until the
    user says where the arm stands (``--assume-pose``, ``connect(assume_pose=...)``). Exit 2, like a missing
    option. ``why``: the file and what is wrong with it."""

    def __init__(self, message: str, *, why: str = ""):
        super().__init__(message)
        self.why = why or message


class MotionError(ArmctlError, ValueError):
    """A target or motion the arm cannot do (reach, joint limit, speed)."""

    exit_code = 3


class UnreachableError(MotionError):
    """Target outside the reach annulus; ``shortfall_m`` says by how much."""

    def __init__(self, message: str, *, target=None, shortfall_m: float = 0.0):
        super().__init__(message)
        self.target = target
        self.shortfall_m = float(shortfall_m)


class JointLimitError(MotionError):
    """A pose that needs a joint outside its angle limits."""

    def __init__(self, message: str, *, joint: int | None = None, q=None):
        super().__init__(message)
        self.joint = joint
        self.q = q


class ZoneError(MotionError):
    """A move that would take a link into a keep-out zone (``armctl.model.zones``): ``zone`` and ``link`` name
    them, ``fraction`` is how far along the move (0..1), ``point_m`` the tool point there and ``depth_m`` how
    deep the link would go."""

    def __init__(
        self, message: str, *, zone: str = "", link: str = "", fraction: float = 0.0, point_m=None, depth_m: float = 0.0
    ):
        super().__init__(message)
        self.zone = zone
        self.link = link
        self.fraction = float(fraction)
        self.point_m = point_m
        self.depth_m = float(depth_m)


class TorqueLimitError(MotionError):
    """A move that would ask a servo for more than ``torque_use`` of its stall torque (``armctl.motion.torque``):
    ``joint`` (its index), ``step`` (the trajectory's step index), ``t_s`` (when), ``need_nm`` (the torque needed,
    ``hold_nm`` of it against gravity), ``stall_nm`` (the servo's) and ``payload_kg`` (carried there)."""

    def __init__(self, message: str, *, joint: int | None = None, step: int = 0, t_s: float = 0.0, need_nm: float = 0.0,
                 hold_nm: float = 0.0, stall_nm: float = 0.0, payload_kg: float = 0.0):  # fmt: skip
        super().__init__(message)
        self.joint, self.step, self.t_s = joint, step, float(t_s)
        self.need_nm, self.hold_nm, self.stall_nm, self.payload_kg = need_nm, hold_nm, stall_nm, payload_kg


class PulseLimitError(JointLimitError):
    """A joint angle that needs a servo pulse outside the calibrated min/max pulse."""


class LinkError(ArmctlError, OSError):
    """The serial link or the board failed: bad port, timeout, lost link."""

    exit_code = 4


class ToolOffPlanError(LinkError):
    """The camera saw the tool off the plan for longer than its watch allows (``armctl.robot.camwatch``): a
    stalled or slipping servo, a collision. The arm was stopped and holds its pose; the run can be resumed."""


class ProtocolError(LinkError):
    """The board answered, but not in the protocol we speak (garbage, bad checksum, wrong version)."""


class StorageError(ArmctlError, OSError):
    """A file could not be written: a read-only folder, a full disk, a file size limit (what was saved before
    is kept; the message says what)."""

    exit_code = 5


def write_error(message: str, exc: OSError) -> ArmctlError:
    """The error for a file or folder that could not be written (``exc`` why): bad input (exit 2) when the path
    names a folder where a file goes or a file where a folder goes; else storage (exit 5: read-only, full, missing)."""
    bad_path = isinstance(exc, (IsADirectoryError, NotADirectoryError, FileExistsError))
    return (BadInputError if bad_path else StorageError)(message)


class StopRequested(ArmctlError):
    """Motion was stopped on request (the web page's stop button, a closed page): like Ctrl-C, not a fault."""

    exit_code = 130


class Terminated(KeyboardInterrupt):
    """SIGTERM or SIGHUP arrived (systemd, ``timeout``, a closed SSH session; on Windows Ctrl-Break or the
    console window closed: ``armctl.core.stopsignals``): handled exactly like Ctrl-C, a controlled stop, then
    exit ``exit_code`` (128 + the signal number: 143, 129, 149; 129 for a closed console)."""

    def __init__(self, signum: int, *, name: str | None = None, exit_code: int | None = None):
        from armctl.core.stopsignals import signal_name

        super().__init__(name or signal_name(signum))
        self.signum = signum
        self.exit_code = 128 + signum if exit_code is None else exit_code
