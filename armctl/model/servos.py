"""Servo models: what each hobby or bus servo can give (stall torque and no-load speed at its rated voltages),
what it weighs, its deadband, and where each figure comes from; and the servo an arm file picks for a joint.

A joint's ``servo:`` in an arm file (or a URDF's sidecar) names a model of ``MODELS``, optionally with the
voltage it is powered at (``servo: mg996r`` or ``servo: {model: mg996r, volts: 6}``; an arm-wide
``supply_volts:`` sets the default); ``custom`` takes its figures from the file (``stall_kgcm``,
``s_per_60deg``, ``volts``, optional ``mass_g``, ``deadband_us``). Between two rated voltages the figures are
interpolated linearly; outside them (but inside the model's operating range) they scale with the voltage, as a
DC motor's stall torque and no-load speed do. Torques in N m inside; kg.cm (kgf.cm, as servo makers give
them) only at the edges.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from armctl.errors import ConfigError

KGCM_NM = 0.0980665  # one kgf.cm in N m
#: the share of a servo's stall torque a move may ask of it, unless the arm file says otherwise
DEFAULT_TORQUE_USE = 0.6


@dataclass(frozen=True)
class Rating:
    """A servo's figures at one supply voltage: stall torque (kg.cm) and no-load time for 60 deg (s)."""

    volts: float
    stall_kgcm: float
    s_per_60deg: float


@dataclass(frozen=True)
class ServoModel:
    """One servo model of the table: ``ratings`` at rising voltages, the operating range ``volts_range`` (V),
    ``mass_g``, deadband (``deadband_us`` of pulse for a PWM servo, ``deadband_deg`` for a bus servo; None when
    the maker gives none), whether it is a ``bus`` servo, ``source``: where the figures come from, and a bus servo's
    ``protocol`` (the backend that drives it)."""

    key: str
    title: str
    ratings: tuple[Rating, ...]
    volts_range: tuple[float, float]
    mass_g: float
    deadband_us: float | None
    deadband_deg: float | None
    bus: bool
    source: str
    protocol: str | None = None  # a bus servo's: the backend that speaks it (--backend: "feetech", "dynamixel")

    def at(self, volts: float | None = None) -> Rating:
        """The figures at ``volts`` (default: the lowest rated voltage, the safe assumption)."""
        r = self.ratings
        if volts is None:
            return r[0]
        lo, hi = self.volts_range
        if not (math.isfinite(volts) and lo - 1e-9 <= volts <= hi + 1e-9):
            raise ValueError(f"the {self.title} runs on {lo:g}..{hi:g} V, not {volts:g} V")
        if volts <= r[0].volts or len(r) == 1:
            near = r[0] if volts <= r[0].volts else r[-1]
            k = volts / near.volts
            return Rating(volts, near.stall_kgcm * k, near.s_per_60deg / k)
        if volts >= r[-1].volts:
            k = volts / r[-1].volts
            return Rating(volts, r[-1].stall_kgcm * k, r[-1].s_per_60deg / k)
        for a, b in zip(r, r[1:]):
            if a.volts <= volts <= b.volts:
                f = (volts - a.volts) / (b.volts - a.volts)
                return Rating(
                    volts,
                    a.stall_kgcm + f * (b.stall_kgcm - a.stall_kgcm),
                    a.s_per_60deg + f * (b.s_per_60deg - a.s_per_60deg),
                )
        raise AssertionError("unreachable")


def _r(*rows) -> tuple[Rating, ...]:
    return tuple(Rating(*row) for row in rows)


_TOWERPRO = "TowerPro's datasheet (towerpro.com.tw)"
_ROBOTIS = "ROBOTIS e-manual"
#: every servo model armctl knows, by the key an arm file names it with
MODELS: dict[str, ServoModel] = {
    m.key: m
    for m in (
        ServoModel("sg90", "SG90", _r((4.8, 1.8, 0.10)), (4.0, 6.0), 9.0, 10.0, None, False,
                   f"{_TOWERPRO} SG90: 1.8 kgf.cm, 0.1 s/60 deg at 4.8 V, 9 g, dead band 10 us"),
        ServoModel("mg90s", "MG90S", _r((4.8, 1.8, 0.10), (6.0, 2.2, 0.08)), (4.8, 6.0), 13.4, 5.0, None, False,
                   f"{_TOWERPRO} MG90S: 1.8/2.2 kgf.cm, 0.1/0.08 s/60 deg at 4.8/6 V, 13.4 g, dead band 5 us"),
        ServoModel("mg996r", "MG996R", _r((4.8, 9.4, 0.17), (6.0, 11.0, 0.14)), (4.8, 7.2), 55.0, 5.0, None, False,
                   f"{_TOWERPRO} MG996R: 9.4/11 kgf.cm, 0.17/0.14 s/60 deg at 4.8/6 V, 55 g, dead band 5 us"),
        ServoModel("ds3218", "DS3218", _r((5.0, 19.0, 0.16), (6.8, 21.5, 0.14)), (4.8, 6.8), 60.0, 3.0, None, False,
                   "DSSERVO DS3218 datasheet: 19/21.5 kg.cm, 0.16/0.14 s/60 deg at 5/6.8 V, 60 g, dead band 3 us"),
        ServoModel("sr431", "SpringRC SR431", _r((4.8, 12.2, 0.20), (6.0, 14.5, 0.18)), (4.8, 6.0), 62.0, None, None,
                   False, "SpringRC SR431 (the Braccio's base, shoulder, elbow and wrist pitch; Arduino's Braccio "
                   "page): 12.2/14.5 kg.cm, 0.20/0.18 s/60 deg at 4.8/6 V, 62 g; no dead band published"),
        ServoModel("sr311", "SpringRC SR311", _r((4.8, 3.1, 0.14), (6.0, 3.8, 0.12)), (4.8, 6.0), 27.0, None, None,
                   False, "SpringRC SR311 (the Braccio's wrist roll and gripper; Arduino's Braccio page): "
                   "3.1/3.8 kg.cm, 0.14/0.12 s/60 deg at 4.8/6 V, 27 g; no dead band published"),
        ServoModel("sts3215", "STS3215 (7.4 V)", _r((7.4, 19.5, 0.222),), (4.0, 7.4), 55.0, None, 0.088, True,
                   "Feetech STS3215 C001 (7.4 V, 1/345): 19.5 kg.cm stall, 0.222 s/60 deg (45 rpm) at 7.4 V "
                   "(Feetech's sheet; DFRobot's ST3215 page: 19.5 kg.cm, 0.238 s/60 deg at 6 V); 55 g; dead band "
                   "1 step (0.088 deg; the CW/CCW dead zone registers 26/27)", "feetech"),
        ServoModel("sts3215-12v", "STS3215 (12 V)", _r((12.0, 30.0, 0.222),), (6.0, 12.6), 55.0, None, 0.088, True,
                   "Feetech STS3215 C018 (12 V, 1/345): 30 kg.cm stall, 45 rpm (0.222 s/60 deg) at 12 V "
                   "(Feetech's sheet, as Robonine's bench test quotes it; they measured about 35 kg.cm); 55 g",
                   "feetech"),
        ServoModel("scs0009", "SCS0009", _r((6.0, 2.3, 0.10),), (4.0, 7.4), 13.0, None, 0.29, True,
                   "Feetech SCS0009: 2.3 kg.cm stall, 0.1 s/60 deg at 6 V, 13 g (Feetech's catalogue, not yet "
                   "checked against its sheet); 1024 steps over 300 deg", "feetech"),
        # ROBOTIS Dynamixel X series: the e-manual's figures (ROBOTIS-GIT/emanual, _data/dxl_x_info.yml at 0028038,
        # the tables of emanual.robotis.com/docs/en/dxl/x/<model>/): N.m / 0.0980665 = kg.cm, 10 / rpm = s per 60 deg
        ServoModel("xl430-w250", "XL430-W250", _r((9.0, 10.2, 0.2128), (11.1, 14.28, 0.1754), (12.0, 15.3, 0.1639)),
                   (6.5, 12.0), 57.2, None, None, True,
                   f"{_ROBOTIS} XL430-W250-T: 1.0/1.4/1.5 N.m stall, 47/57/61 rpm at 9/11.1/12 V, 57.2 g",
                   "dynamixel"),
        ServoModel("xl330-m288", "XL330-M288", _r((3.7, 4.28, 0.1316), (5.0, 5.3, 0.0971), (6.0, 6.12, 0.0813)),
                   (3.7, 6.0), 18.0, None, None, True,
                   f"{_ROBOTIS} XL330-M288-T: 0.42/0.52/0.60 N.m stall, 76/103/123 rpm at 3.7/5/6 V, 18 g",
                   "dynamixel"),
        ServoModel("xl330-m077", "XL330-M077", _r((3.7, 1.84, 0.036), (5.0, 2.19, 0.0261), (6.0, 2.33, 0.0219)),
                   (3.7, 6.0), 18.0, None, None, True,
                   f"{_ROBOTIS} XL330-M077-T: 0.180/0.215/0.228 N.m stall, 278/383/456 rpm at 3.7/5/6 V, 18 g",
                   "dynamixel"),
        ServoModel("xm430-w350", "XM430-W350", _r((11.1, 38.75, 0.2326), (12.0, 41.81, 0.2174), (14.8, 48.95, 0.1754)),
                   (10.0, 14.8), 82.0, None, None, True,
                   f"{_ROBOTIS} XM430-W350-T: 3.8/4.1/4.8 N.m stall, 43/46/57 rpm at 11.1/12/14.8 V, 82 g",
                   "dynamixel"),
    )
}  # fmt: skip


@dataclass(frozen=True)
class BusProtocol:
    """What a bus servo protocol means for positions and calibrations (the one place a backend or a calibration reader
    asks): ``homing_sign`` of the Homing_Offset register (present position = actual + homing_sign * offset),
    ``homing_max`` (the register holds -homing_max..homing_max steps), and ``drive_mode_in_servo``: True when
    Drive_Mode reverses the servo's own counting (its positions already turned round, so a LeRobot calibration's
    ``drive_mode`` is not applied again), False when LeRobot applies it to the values it reads."""

    name: str
    homing_sign: int
    homing_max: int
    drive_mode_in_servo: bool


#: the bus servo protocols, by ``ServoModel.protocol``. Feetech STS: present = actual - offset, 11 bits and a sign
#: bit (armctl.bus.feetech.protocol; LeRobot's FeetechMotorsBus: apply_drive_mode = True). Dynamixel X series:
#: present = actual + offset, -1,044,479..1,044,479 (ROBOTIS e-manual, address 20), Drive_Mode bit 0 the servo's
#: "reverse mode" (LeRobot's DynamixelMotorsBus: apply_drive_mode = False).
PROTOCOLS: dict[str, BusProtocol] = {
    "feetech": BusProtocol("feetech", -1, 2047, False),
    "dynamixel": BusProtocol("dynamixel", 1, 1_044_479, True),
}


@dataclass(frozen=True)
class Servo:
    """The servo of one joint: its ``model`` at the arm's ``volts`` (None: the lowest rated)."""

    model: ServoModel
    volts: float | None = None

    @property
    def rating(self) -> Rating:
        return self.model.at(self.volts)

    @property
    def stall_nm(self) -> float:
        """Stall torque (N m) at this servo's voltage."""
        return self.rating.stall_kgcm * KGCM_NM

    @property
    def speed_rad_s(self) -> float:
        """No-load speed (rad/s) at this servo's voltage."""
        return math.radians(60.0) / self.rating.s_per_60deg

    @property
    def mass_kg(self) -> float:
        return self.model.mass_g / 1000.0

    def says(self) -> str:
        """'an MG996R gives 9.4 kg.cm at 4.8 V'."""
        r, title = self.rating, self.model.title
        word = title.split()[0]
        article = "an" if word.isupper() and word[0] in "AEFHILMNORSX" else "a"
        return f"{article} {title} gives {r.stall_kgcm:.3g} kg.cm at {r.volts:g} V"


def model_names() -> str:
    return ", ".join([*MODELS, "custom"])


def parse_servo(section, key: str = "servo", *, supply_volts: float | None = None) -> Servo | None:
    """The ``servo:`` of a joint's arm-file ``section`` (``armctl.core.config.Section``): a model's name, or a
    mapping ``{model, volts}`` (``custom``: ``stall_kgcm``, ``s_per_60deg``, ``volts``, optional ``mass_g``,
    ``deadband_us``). None when the joint names none. ConfigError naming the file, key and line."""
    if not section.has(key):
        return None
    raw = section.raw(key)
    if isinstance(raw, str):
        return _servo_named(section, key, raw, supply_volts)
    sub = section.section(key)
    name = sub.string("model")
    volts = sub.number("volts", None, lo=0.5, hi=48.0)
    if name.lower() == "custom":
        return _custom(sub, volts)
    servo = _servo_named(sub, "model", name, supply_volts if volts is None else volts)
    sub.done()
    return servo


def _servo_named(section, key: str, name: str, volts: float | None) -> Servo:
    model = MODELS.get(str(name).lower())
    if model is None:
        hint = " (a custom servo is a mapping: {model: custom, stall_kgcm, s_per_60deg, volts})"
        raise section.error(key, f"unknown servo model {name!r}; known: {model_names()}{hint}")
    try:
        model.at(volts)
    except ValueError as e:
        raise section.error(key, str(e)) from None
    return Servo(model, volts)


def _custom(sub, volts: float | None) -> Servo:
    if volts is None:
        raise sub.error("volts", "a custom servo needs the voltage its figures are for (volts)")
    stall = sub.number("stall_kgcm", lo=0.0, lo_open=True, hi=1000.0)
    t60 = sub.number("s_per_60deg", lo=0.0, lo_open=True, hi=60.0)
    mass = sub.number("mass_g", 0.0, lo=0.0, hi=10000.0)
    dead = sub.number("deadband_us", None, lo=0.0, hi=100.0)
    sub.done()
    model = ServoModel(
        "custom", "custom servo", _r((volts, stall, t60)), (volts, volts), mass, dead, None, False,
        f"the arm file ({sub.path})",
    )  # fmt: skip
    return Servo(model, volts)


def check_model(name: str) -> ServoModel:
    """The model named ``name``; ConfigError listing the known ones otherwise (for command-line options)."""
    model = MODELS.get(str(name).lower())
    if model is None:
        raise ConfigError(f"unknown servo model {name!r}; known: {model_names()}")
    return model


@dataclass(frozen=True)
class Drive:
    """How an arm's joints are driven, as its file says: one ``Servo`` (or None) per joint, base first and a wrist
    roll last; the gripper's; each link's mass as the file gives it (``link_mass_kg``, None where it gives none);
    ``torque_use``, the share of a servo's stall torque a move may ask; ``payload_kg`` carried unless a program
    says otherwise; ``max_load_pct`` and ``max_temp_c`` (bus servos: stop the arm above them; None: no watch)."""

    servos: tuple = ()
    gripper: Servo | None = None
    link_mass_kg: tuple = ()
    torque_use: float = DEFAULT_TORQUE_USE
    payload_kg: float = 0.0
    max_load_pct: float | None = None
    max_temp_c: float | None = None
    volts: float | None = None  # the arm file's supply_volts (each servo keeps its own)
    torque_check: bool = True  # False: moves are not checked against the servos' torque (armctl.motion.torque)

    @property
    def any_servo(self) -> bool:
        return any(s is not None for s in self.servos) or self.gripper is not None

    @property
    def protocol(self) -> str | None:
        """The bus all the arm's named servos speak (``ServoModel.protocol``: the backend that drives them), else
        None (no servo named, hobby servos, or several kinds)."""
        kinds = {s.model.protocol for s in (*self.servos, self.gripper) if s is not None}
        return kinds.pop() if len(kinds) == 1 else None

    def servo(self, i: int) -> Servo | None:
        """Joint ``i``'s servo (None: the file names none)."""
        return self.servos[i] if 0 <= i < len(self.servos) else None


def parse_drive(top, servos: list, masses: list, gripper: Servo | None = None, volts: float | None = None) -> Drive:
    """The arm-wide keys of an arm file or sidecar (``top``: its Section): ``torque_use`` (0..1], ``payload_g``,
    ``max_load_pct``, ``max_temp_c``; with the joints' ``servos`` and link ``masses`` (kg, None) already read."""
    use = top.number("torque_use", DEFAULT_TORQUE_USE, lo=0.0, lo_open=True, hi=1.0)
    payload = top.number("payload_g", 0.0, lo=0.0, hi=10000.0) / 1000.0
    load = top.number("max_load_pct", None, lo=0.0, lo_open=True, hi=100.0)
    temp = top.number("max_temp_c", None, lo=20.0, hi=120.0)
    return Drive(tuple(servos), gripper, tuple(masses), use, payload, load, temp, volts)


#: how a gripper closes (an arm file's or sidecar's ``gripper: {close: ...}``): to its closed angle, or until the
#: jaws meet a part, its servo's torque capped at ``max_load_pct`` (bus servos, which report their load)
GRIPPER_CLOSE = ("position", "until_contact")
DEFAULT_GRIP_LOAD_PCT = 30.0


def parse_grip(g, servo: Servo | None) -> tuple[str, float | None]:
    """A gripper mapping's ``close`` (default ``position``) and ``max_load_pct`` (with ``until_contact`` only: the
    torque cap, % of the servo's stall torque, default ``DEFAULT_GRIP_LOAD_PCT``). ConfigError naming the key for
    a cap without ``until_contact``, or ``until_contact`` on a servo that cannot report its load (a PWM model)."""
    close = g.string("close", "position", choices=GRIPPER_CLOSE)
    if close == "position":
        if g.has("max_load_pct"):
            raise g.error("max_load_pct", "caps the gripper's torque closing until contact: add close: until_contact")
        return close, None
    if servo is not None and not servo.model.bus:
        raise g.error(
            "close", f"until_contact needs a bus servo that reports its load; the gripper's is {servo.model.title}"
        )
    return close, g.number("max_load_pct", DEFAULT_GRIP_LOAD_PCT, lo=0.0, lo_open=True, hi=100.0)


def joint_drive(section, supply_volts: float | None) -> tuple[Servo | None, float | None]:
    """A joint mapping's ``servo`` and ``mass_g`` (as kg; None when not given)."""
    servo = parse_servo(section, supply_volts=supply_volts)
    mass = section.number("mass_g", None, lo=0.0, hi=10000.0)
    return servo, None if mass is None else mass / 1000.0
