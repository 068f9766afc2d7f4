"""The pose of the arm as read from the board: ``Pose`` (what ``Robot.where()`` returns)."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from armctl.errors import BadInputError, JointLimitError, PoseUnknownError
from armctl.model.kinematics import tool_pitch, tool_point
from armctl.model.validate import joint_angles, outside_limits_now


@dataclass(frozen=True)
class Pose:
    """Where the arm is: joint angles (rad, base first on a base arm), tool point (m: x, y; x, y, z on a
    base arm), tool angle (rad; on a base arm the pitch from the horizontal), gripper (rad).

    ``source`` says how it is known: ``"measured"`` (servo positions measured by the hardware or the
    simulator), ``"commanded"`` (the pulses the board outputs, or for boards that cannot report them the
    last ones sent), ``"assumed"`` (servos without pulses yet: the pose the user said the arm stands at, else
    the pose stored for this port when the arm was last left, else the measured one; the first motion starts
    by setting it) or ``"unknown"`` (servos without pulses, none of those: every angle NaN, ``detail`` says
    why; nothing moves until the pose is given, ``assume_pose``). ``detail`` says it in words;
    ``values`` are the servo values (us) of the pose per servo, joints then gripper (None: the servo has
    none): what the board outputs, or for a measured pose the values that mean it by the calibration.
    """

    q_rad: np.ndarray
    tool_m: np.ndarray
    phi_rad: float
    gripper_rad: float | None
    source: str
    detail: str
    values: tuple[float | None, ...] = ()
    roll_rad: float | None = None  # the wrist roll (rad) on an arm with one, else None

    @property
    def roll(self) -> float | None:
        """The wrist roll (rad, as ``move_to(roll=)`` takes it) on an arm with one, else None."""
        return self.roll_rad

    @property
    def measured(self) -> bool:
        """True if measured by the hardware or the simulator (not taken from commanded pulses)."""
        return self.source == "measured"

    @property
    def q_deg(self) -> list[float]:
        """Joint angles in degrees."""
        return [math.degrees(v) for v in self.q_rad]

    @property
    def tool_mm(self) -> list[float]:
        """Tool point in millimetres."""
        return [float(v) * 1000 for v in self.tool_m]

    @property
    def known(self) -> bool:
        """False when the pose is unknown (``source == "unknown"``: its numbers are NaN)."""
        return self.source != "unknown"

    def to_dict(self) -> dict:
        """JSON-ready: ``tool_m``, ``q_deg``, ``phi_deg``, ``gripper_deg``, ``source``, ``detail``, ``values``
        (``tool_m``, ``q_deg``, ``phi_deg`` None when the pose is unknown)."""
        if not self.known:
            return {
                "tool_m": None,
                "q_deg": None,
                "phi_deg": None,
                "gripper_deg": None,
                "source": self.source,
                "detail": self.detail,
                "values": list(self.values),
            }
        return {
            "tool_m": [float(v) for v in self.tool_m],
            "q_deg": self.q_deg,
            "phi_deg": math.degrees(self.phi_rad),
            "gripper_deg": None if self.gripper_rad is None else math.degrees(self.gripper_rad),
            **({} if self.roll_rad is None else {"roll_deg": math.degrees(self.roll_rad)}),
            "source": self.source,
            "detail": self.detail,
            "values": list(self.values),
        }

    def __repr__(self) -> str:
        if not self.known:
            return f"Pose(unknown: {self.detail})"
        where = ", ".join(f"{v:.1f}" for v in self.tool_mm)
        joints = ", ".join(f"{v:.1f}" for v in self.q_deg)
        g = "" if self.gripper_rad is None else f", gripper={math.degrees(self.gripper_rad):.1f} deg"
        r = "" if self.roll_rad is None else f", roll={math.degrees(self.roll_rad):.1f} deg"
        return (
            f"Pose(tool=({where}) mm, phi={math.degrees(self.phi_rad):.1f} deg{r}, joints=[{joints}] deg{g}, "
            f"{self.source})"
        )

    def _repr_html_(self) -> str:
        """A small table in Jupyter: the tool point (mm), tool angle and joints (deg), gripper, source."""
        from html import escape

        axes = "xyz"[: len(self.tool_mm)]
        rows = [(f"tool {a}", f"{v:.1f} mm") for a, v in zip(axes, self.tool_mm)]
        rows.append(("tool angle (phi)", f"{math.degrees(self.phi_rad):.1f} deg"))
        rows += [(f"joint {i + 1}", f"{v:.2f} deg") for i, v in enumerate(self.q_deg)]
        if self.gripper_rad is not None:
            rows.append(("gripper", f"{math.degrees(self.gripper_rad):.1f} deg"))
        rows.append(("source", f"{self.source}: {self.detail}"))
        body = "".join(
            f"<tr><th style='text-align:left'>{escape(k)}</th><td style='text-align:right'>{escape(v)}</td></tr>"
            for k, v in rows
        )
        return f"<table class='armctl-pose'><caption>Pose</caption>{body}</table>"

    def __str__(self) -> str:
        if not self.known:
            return f"pose unknown ({self.detail})"
        where = ", ".join(f"{v:.1f}" for v in self.tool_mm)
        g = "" if self.gripper_rad is None else f", gripper {math.degrees(self.gripper_rad):.1f} deg"
        joints = " ".join(f"{v:.2f}" for v in self.q_deg)
        return f"tool at ({where}) mm, joints {joints} deg{g} ({self.source}: {self.detail})"


@dataclass(frozen=True)
class Assumed:
    """The user's word of where the arm stands (``assume_pose``): joint angles (rad), gripper (rad, NaN: open),
    and how it was named (``"home"``, ``"start"``, a pose name, ``"joint angles"``)."""

    q_rad: np.ndarray
    gripper_rad: float
    name: str


def assumed_pose(arm, spec) -> Assumed | None:
    """``assume_pose`` as given: None, ``"home"``, an ``Assumed``, or the joint angles (rad; one more value: the
    gripper's angle). BadInputError naming what is wrong (a joint outside its limits, a gripper past open or closed)."""
    if spec is None or isinstance(spec, Assumed):
        return spec
    if isinstance(spec, str):
        if spec.strip().lower() == "home":
            return Assumed(np.array(arm.home_rad, dtype=float), math.nan, "home")
        raise BadInputError(f"assume_pose: 'home' or the joint angles (rad), got {spec!r}")
    try:
        values = [float(v) for v in spec]
    except (TypeError, ValueError):
        raise BadInputError(f"assume_pose: 'home' or the joint angles (rad), got {spec!r}") from None
    g = math.nan
    if arm.gripper is not None and len(values) == arm.n + 1:
        g = values.pop()
        if not (
            math.isfinite(g)
            and min(arm.gripper.open_rad, arm.gripper.closed_rad) - 1e-9
            <= g
            <= max(arm.gripper.open_rad, arm.gripper.closed_rad) + 1e-9
        ):
            raise BadInputError(f"assume_pose: gripper angle {math.degrees(g):g} deg is not between open and closed")
    q = np.asarray(joint_angles(arm, values), dtype=float)
    for i, v in enumerate(q):
        if not arm.q_min[i] - 1e-9 <= v <= arm.q_max[i] + 1e-9:
            raise BadInputError(
                f"assume_pose: joint {i + 1} at {math.degrees(v):g} deg is outside its limits "
                f"{math.degrees(arm.q_min[i]):g}..{math.degrees(arm.q_max[i]):g} deg"
            )
    return Assumed(q, g, "joint angles")


def unknown_line(why: str) -> str:
    """The one line that refuses to move an arm whose pose is unknown (``why``: the file and what is wrong)."""
    return (
        f"the arm's pose is unknown: {why}; its servos lost their pulses and this board cannot read where they "
        "are, so nothing moved: say where the arm stands with --assume-pose home|start|NAME|q0,q1,q2 (degrees; "
        "Python: armctl.connect(..., assume_pose='home'))"
    )


def _snap_to_limits(q: float, lo: float, hi: float, servo) -> float:
    """A joint angle read back from a pulse, moved onto its limit when it lies outside by less than one
    pulse step: a pose commanded right at a limit comes back from the board's 0.5 us resolution up to
    half a step beyond it, and the next move would refuse to start from there."""
    step = math.radians(servo.resolution / servo.per_deg)
    if lo - step <= q < lo:
        return float(lo)
    if hi < q <= hi + step:
        return float(hi)
    return q


TURN_RAD = 2.0 * math.pi


def on_grid(servo, value: float) -> float:
    """``value`` on the servo's resolution (our firmware's 0.5 us, a bus servo's step)."""
    return float(np.round(value / servo.resolution) * servo.resolution)


def on_grid_toward(servo, prev: float, value: float) -> float:
    """``value`` on the servo's resolution, rounded towards ``prev`` (the value the servo holds): a step
    cut to the speed limit never grows past it by the rounding."""
    r = servo.resolution
    base = float(np.round(prev / r) * r)
    n = (value - base) / r
    n = math.floor(n + 1e-9) if n >= 0 else math.ceil(n - 1e-9)
    return base + n * r


def declared_value(servo, angle: float, clamp: bool) -> float:
    v = float(servo.value(angle))
    if clamp:
        v = min(max(v, servo.lo), servo.hi)
    return on_grid(servo, v)


class BoardPose:
    """The pose of ``owner``'s arm (a Robot: ``arm``, ``calibration``, ``backend``) as read from its board:
    held (the values the servos hold now), assumed (servos without pulses: the pose stored for the port when
    the arm was last left, else home) or measured (servos that measure). Reads the board: call it from the
    thread that owns the board (``armctl.robot.runner``); the ``*_playing`` readers only read what ``player``
    (the playback running) keeps, without a word to the board."""

    def __init__(self, owner, store, assumed: Assumed | None = None):
        self.owner, self.store = owner, store
        #: why the arm, measured where it is, stood outside its range at the last ``start_state`` (a
        #: JointLimitError), else None: only a motion that brings it back is played (``Calibration.check_escape``)
        self.outside = None
        #: The user's word of where the arm stands (``assume_pose``): servos without pulses are set to it.
        self.assumed = assumed
        self._basis_words = ""

    def basis(self) -> tuple[np.ndarray, float, tuple]:
        """(joint angles rad, gripper rad (NaN: open), servo values or ()) that servos without pulses are set
        to: the pose the user said the arm stands at, else the pose stored for the port when the arm was last
        left (if it can be trusted: ``PoseStore.checked``), else, on a board that can read where its servos are,
        the measured pose. PoseUnknownError (one line naming the file and what is wrong with it) otherwise:
        setting any other pose would jump the arm there."""
        owner = self.owner
        if self.assumed is not None:
            self._basis_words = f"the pose you said the arm stands at ({self.assumed.name})"
            return self.assumed.q_rad, self.assumed.gripper_rad, ()
        stored, why = self.store.checked(owner.calibration)
        if stored is not None:
            self._basis_words = "the pose stored when this arm was last left here"
            return stored.q_rad, stored.gripper_rad, stored.values
        be, arm = owner.backend, owner.arm
        if be.caps.measures_positions:  # ask the board, not its kind: it reads where its servos are
            got = be.measured()
            angles = [got.get(s.channel) for s in owner.calibration.servos]
            if all(a is not None and math.isfinite(a) for a in angles[: arm.n]):
                self._basis_words = f"the pose measured by {be.measured_by or 'the board'} ({why})"
                g = angles[arm.n] if len(angles) > arm.n and angles[arm.n] is not None else math.nan
                return np.array(angles[: arm.n], dtype=float), float(g), ()
        raise PoseUnknownError(unknown_line(why), why=why)

    def angles(self, values) -> np.ndarray:
        """Joint angles (rad) for servo values (joints first), each snapped onto its limit when it lies
        beyond by less than one pulse step (see ``_snap_to_limits``)."""
        arm = self.owner.arm
        return np.array(
            [
                _snap_to_limits(float(s.angle_rad(v)), arm.q_min[i], arm.q_max[i], s)
                for i, (s, v) in enumerate(zip(self.owner.calibration.joints, values))
            ]
        )

    def from_values(self, values, source: str, detail: str) -> Pose:
        """The pose that servo ``values`` (joints, then gripper; servo units) mean by the calibration."""
        cal, arm = self.owner.calibration, self.owner.arm
        g = None
        if cal.gripper is not None and len(values) > arm.n and values[arm.n] is not None:
            g = float(cal.gripper.angle_rad(values[arm.n]))
        return self.pose(self.angles(values), g, source, detail, values)

    def pose(self, q, g: float | None, source: str, detail: str, values=()) -> Pose:
        arm, cal = self.owner.arm, self.owner.calibration
        if not values:  # measured angles: the servo values that mean them
            values = [float(s.value(a)) for s, a in zip(cal.joints, q)]
            if cal.gripper is not None:
                values.append(None if g is None else float(cal.gripper.value(g)))
        return Pose(
            q_rad=np.asarray(q, dtype=float),
            tool_m=tool_point(arm, q),
            phi_rad=math.remainder(float(tool_pitch(arm, q)), TURN_RAD),  # -pi..pi: 384.5 deg is 24.5
            gripper_rad=g,
            source=source,
            detail=detail,
            values=tuple(None if v is None else float(v) for v in values),
            roll_rad=None if arm.roll is None else float(np.asarray(q, dtype=float)[arm.roll_index]),
        )

    def measured(self, settle: bool) -> Pose | None:
        """The measured pose, if the backend measures (values: what the servos are commanded, if known)."""
        be, arm = self.owner.backend, self.owner.arm
        if not be.caps.measures_positions:
            return None
        got = be.measured(settle_s=10.0 if settle else 0.0)
        angles = [got.get(s.channel) for s in self.owner.calibration.servos]
        if any(a is None for a in angles[: arm.n]):
            return None
        g = angles[arm.n] if len(angles) > arm.n else None
        return self.pose(angles[: arm.n], g, "measured", be.measured_by)

    def idle(self, settle: bool) -> Pose:
        """Where the arm is, no motion playing: measured, else held, else assumed."""
        measured = self.measured(settle)
        if measured is not None:
            return measured
        try:
            q, g, declare, held = self.start_state(check=False)
        except PoseUnknownError as exc:
            return self.unknown_pose(exc.why)
        if not declare:
            return self.from_values(held, "commanded", self._commanded_detail())
        servos = self.owner.calibration.servos
        values = [held[i] if held[i] is not None else declare[s.channel] for i, s in enumerate(servos)]
        return self.from_values(values, "assumed", f"servos without pulses yet: {self._basis_words}")

    def unknown_pose(self, why: str) -> Pose:
        """A Pose whose numbers are NaN, source ``"unknown"``, ``detail`` ``why``."""
        n = self.owner.arm.n
        nan = np.full(n, np.nan)
        return Pose(nan, np.full(len(tool_point(self.owner.arm, np.zeros(n))), np.nan), math.nan, None, "unknown", why)

    def unknown(self) -> str:
        """Why the pose of servos without pulses is unknown ("" when it is known: every servo has its pulses, or
        the user said where the arm stands, or a pose is stored that can be trusted, or the board measures)."""
        try:
            self.start_state(check=False)
        except PoseUnknownError as exc:
            return exc.why
        return ""

    def _commanded_detail(self) -> str:
        return "pulses the board outputs" if self.owner.backend.caps.reports_pulses else "pulses last sent"

    def playing(self, player) -> Pose:
        """Where the arm is while ``player`` plays: measured, else the pulses of the frame being played."""
        measured = self.measured(False)
        if measured is not None:
            return measured
        by_ch = player.playing_values() if player is not None else {}
        values = [by_ch.get(s.channel) for s in self.owner.calibration.servos]
        if any(v is None for v in values[: self.owner.arm.n]):
            return self.idle(False)
        return self.from_values(values, "commanded", "pulses the board is playing (estimate)")

    def held_or_assumed(self) -> Pose:
        """The pose the board holds (servos without pulses: the pose they will be set to, ``"assumed"``)."""
        try:
            _, _, declare, held = self.start_state(check=False)
        except PoseUnknownError as exc:
            return self.unknown_pose(exc.why)
        servos = self.owner.calibration.servos
        values = [h if h is not None else declare.get(s.channel) for h, s in zip(held, servos)]
        if declare:
            return self.from_values(values, "assumed", f"servos without pulses yet: {self._basis_words}, set first")
        return self.from_values(values, "commanded", self._commanded_detail())

    # --- samples for recording ------------------------------------------------------------------------------

    def sample_from(self, values: dict, index: int):
        cal, n, be = self.owner.calibration, self.owner.arm.n, self.owner.backend
        if any(values.get(s.channel) is None for s in cal.joints):  # servos without pulses yet: nothing to record
            q, g = np.full(n, np.nan), math.nan
        else:
            q = np.array([float(s.angle_rad(values[s.channel])) for s in cal.joints])
            gv = values.get(cal.gripper.channel) if cal.gripper is not None else None
            g = float(cal.gripper.angle_rad(gv)) if gv is not None else math.nan
        got = be.last_measured() if be.caps.measures_positions else {}
        qm = gm = None
        if got and all(s.channel in got for s in cal.joints):
            qm = np.array([got[s.channel] for s in cal.joints])
            gm = got.get(cal.gripper.channel) if cal.gripper is not None else None
        return q, g, qm, (math.nan if gm is None else float(gm)), index

    def sample_playing(self, player, follow=None):
        """A sample while ``player`` plays, or ``follow`` (a FollowMotion, fed frame by frame: no player) does."""
        if player is None:
            if follow is not None:  # the pose last commanded
                q, g = follow.end_q_rad, follow.end_gripper_rad
                cal = self.owner.calibration
                values = {s.channel: float(s.value(a)) for s, a in zip(cal.joints, q)}
                if cal.gripper is not None and math.isfinite(g):
                    values[cal.gripper.channel] = float(cal.gripper.value(g))
                return self.sample_from(values, -1)
            return self.sample_idle()
        frame = player.frames_played()
        values = player.values_at(frame)
        i, tau = player.position_at(frame)  # (time-scaled while held or overridden: frames are not samples)
        part = player.parts[i] if player.parts else None
        index = -1 if part is None or (len(player.parts) > 1 and i == 0) else min(len(part.us) - 1, int(tau))
        return self.sample_from(values, int(index))

    def sample_idle(self):
        held = self.held()
        values = {s.channel: h for s, h in zip(self.owner.calibration.servos, held) if h is not None}
        return self.sample_from(values, -1)

    # --- the pose a motion starts from --------------------------------------------------------------------

    def held(self) -> list[float | None]:
        """What each servo (joints, then gripper) holds now, in servo units; None where it has nothing."""
        be, servos = self.owner.backend, self.owner.calibration.servos
        st = be.status()
        held = [st.values[s.channel] if s.channel < len(st.values) else None for s in servos]
        if not be.caps.reports_pulses and be.caps.measures_positions:
            measured = be.measured()  # bus servos: where each one is, is what it holds
            held = [
                h if h is not None or measured.get(s.channel) is None else float(s.value(measured[s.channel]))
                for h, s in zip(held, servos)
            ]
        return held

    def start_state(self, *, check: bool = True, clamp: bool = False):
        """(q_rad, gripper_rad, values to declare {address: units}, held values per servo) for the pose the
        arm is in now, read fresh from the board. Servos without pulses get ``basis()`` declared (a stored pose:
        its servo values, else its angles); PoseUnknownError when there is none. ``check``: PulseLimitError if a
        declared pulse lies outside the calibration; ``clamp``: move it inside instead (calibrating)."""
        arm, cal = self.owner.arm, self.owner.calibration
        servos = cal.servos
        held = self.held()
        want = [None] * len(servos)  # per servo: the angle to declare if it has no pulse, or a stored value
        if all(h is not None for h in held):
            q_decl, g_decl, stored_values = np.array(arm.home_rad), math.nan, ()  # (nothing is declared)
        else:
            q_decl, g_decl, stored_values = self.basis()
        if arm.gripper is not None and not math.isfinite(g_decl):
            g_decl = arm.gripper.open_rad
        stored_values = stored_values if len(stored_values) == len(servos) else ()
        declare: dict[int, float] = {}
        for i, s in enumerate(servos):
            if held[i] is not None:
                continue
            if stored_values and stored_values[i] is not None:
                v = float(stored_values[i])  # what the servo physically held: exact, whatever the calibration
                want[i] = on_grid(s, min(max(v, s.lo), s.hi) if clamp else v)
            else:
                angle = q_decl[i] if i < arm.n else (g_decl if math.isfinite(g_decl) else 0.0)
                want[i] = declared_value(s, angle, clamp)
            declare[s.channel] = want[i]
        values = [h if h is not None else w for h, w in zip(held, want)]
        q = self.angles(values)
        g = float("nan")
        if cal.gripper is not None and arm.gripper is not None:
            g = float(cal.gripper.angle_rad(values[len(cal.joints)]))
        self.outside = None
        if check:
            try:
                self.check_current(q, values)
                cal.check_values(np.array([s.value(q[i]) for i, s in enumerate(cal.joints)]))
            except JointLimitError as exc:
                if not self.owner.backend.caps.measures_positions:
                    raise
                # measured there (moved by hand, pushed, left by another program): as from a keep-out zone,
                # a motion that only brings it back is allowed, anything else is refused saying so
                self.outside = exc
        return q, g, declare, held

    def check_current(self, q, values) -> None:
        """JointLimitError naming the first joint that is now (measured, or as the board holds it) outside its
        calibrated range or the arm's limits: the arm has to be put back first (measured there, by a motion that
        only brings it back: ``start_state`` keeps the error in ``outside`` instead of raising it)."""
        arm, measured = self.owner.arm, self.owner.backend.caps.measures_positions
        fix = "check the calibration, then move again"
        if measured:
            fix = (
                "bring it back with a move toward its range (armctl home, robot.home(), a joint move; from outside, "
                "only such a move is allowed) or by hand (torque off: robot.release(), armctl teach)"
            )
        for i, s in enumerate(self.owner.calibration.joints):
            v, deg = values[i], math.degrees(q[i])
            lo, hi = math.degrees(arm.q_min[i]), math.degrees(arm.q_max[i])
            if v is not None and not s.lo - 1e-6 <= v <= s.hi + 1e-6:
                where = f"{v:.0f} {s.unit}, outside the calibrated {s.lo:g}..{s.hi:g} {s.unit}"
            elif not lo - 1e-9 <= deg <= hi + 1e-9:
                where = f"outside its limits {lo:g}..{hi:g} deg"
            else:
                continue
            raise outside_limits_now(f": joint {i + 1} ({s.name}) is at {deg:.1f} deg ({where})", fix, joint=i, q=q)
