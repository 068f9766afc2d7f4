"""Edge validation, shared by the Python API (``armctl.robot.robot``), the CLI and the web page: numbers, angles in
radians, points, speeds; and the one builder of each refusal message, so a refusal reads the same wherever
it is made. What passes is an SI float (metres, radians, seconds); what fails is a ``BadInputError`` naming
what and why (a target millimetres given as metres: ``UnreachableError``; an arm outside its joint limits:
``JointLimitError``). Text (CLI arguments) is read by ``armctl.core.units`` first."""

from __future__ import annotations

import math
import numbers

import numpy as np

from armctl.core.units import parse_float
from armctl.errors import BadInputError, JointLimitError, UnreachableError

TURN_RAD = 2.0 * math.pi
MAX_SPEED_M_S = 2.0  # a tool speed above this is a unit mistake (mm/s given where m/s go), not a wish
FAR_REACHES = 100.0  # a target this many reaches away is millimetres given as metres, not a miss
MAX_BLEND_M = 0.5


# --- the refusals, one builder each ------------------------------------------------------------------------


def not_a_number(what: str, v) -> BadInputError:
    return BadInputError(f"{what}: expected a number, got {v!r}")


def not_finite(what: str, v) -> BadInputError:
    return BadInputError(f"{what}: must be a finite number, got {v!r}")


def must_be_positive(what: str, got, unit: str = "") -> BadInputError:
    """``WHAT: must be > 0 [UNIT], got GOT`` (``got`` as the user wrote it)."""
    return BadInputError(f"{what}: must be > 0{' ' + unit if unit else ''}, got {got}")


def more_than_a_turn(what: str, f: float) -> BadInputError:
    return BadInputError(
        f"{what}: {f:g} rad is more than a turn; angles here are in radians: degrees given as radians? "
        f"{f:g} deg is math.radians({f:g}) = {math.radians(f):.4g} (or degrees=True where the method takes it)"
    )


def outside_limits_now(where: str, fix: str, *, joint: int | None = None, q=None) -> JointLimitError:
    """The arm is outside its joint limits where it is now (no target can fix that): ``where`` says which
    joint (``": joint 2 (elbow) is at ..."``) or the pose (``" (10.0, 20.0 deg)"``), ``fix`` what to do."""
    return JointLimitError(
        f"the arm is outside its joint limits now{where}; {fix}",
        joint=joint,
        q=None if q is None else np.asarray(q, dtype=float),
    )


# --- numbers --------------------------------------------------------------------------------------------


def is_number(v) -> bool:
    """A real number, not a bool (True and "0.5" are mistakes in a program or a request, not values)."""
    return isinstance(v, numbers.Real) and not isinstance(v, (bool, np.bool_))


def number(v, what: str) -> float:
    """``v`` as a finite float; BadInputError naming ``what`` otherwise."""
    if not is_number(v):
        raise not_a_number(what, v)
    f = float(v)
    if not math.isfinite(f):
        raise not_finite(what, v)
    return f


def radians(v, what: str) -> float:
    """An angle in radians: more than a turn either way is refused (degrees given where radians go)."""
    f = number(v, what)
    if abs(f) > TURN_RAD + 1e-9:
        raise more_than_a_turn(what, f)
    return f


def positive(v, what: str) -> float:
    f = number(v, what)
    if f <= 0:
        raise must_be_positive(what, repr(v))
    return f


def positive_text(text, what: str, *, unit: str = "", quote: bool = False) -> float:
    """A CLI argument read as a number > 0 (in ``unit``, named in the refusal); ``quote``: show it quoted."""
    v = parse_float(text, what=what)
    if v <= 0:
        raise must_be_positive(what, repr(text) if quote else text, unit)
    return v


def fraction(v, what: str) -> float:
    """A fraction in (0, 1]."""
    f = number(v, what)
    if not 0 < f <= 1:
        raise BadInputError(f"{what}: must be in (0, 1], got {f!r}")
    return f


def tool_speed(v) -> float:
    """A tool speed in m/s (> 0, at most MAX_SPEED_M_S: more is mm/s given as m/s)."""
    f = positive(v, "speed")
    if f > MAX_SPEED_M_S:
        raise BadInputError(
            f"speed: {v:g} m/s is faster than {MAX_SPEED_M_S:g} m/s; speeds here are in m/s: mm/s given "
            f"as m/s? {v:g} mm/s is speed={v / 1000:g}"
        )
    return f


def blend(v) -> float:
    """A blend distance in metres, 0 .. MAX_BLEND_M."""
    b = number(v, "blend")
    if not 0.0 <= b <= MAX_BLEND_M:
        raise BadInputError(f"blend: {b:g} m: give 0 .. {MAX_BLEND_M:g} m (metres, as every length here)")
    return b


# --- joint angles and points ------------------------------------------------------------------------------


def joint_angles(arm, q, *, degrees: bool = False) -> np.ndarray:
    """``q`` (rad, or degrees) as ``arm.n`` joint angles in radians; BadInputError for a bad angle or count."""
    check = number if degrees else radians
    items = list(q) if isinstance(q, (list, tuple)) else np.atleast_1d(q).tolist()
    vals = [check(v, f"joint {i + 1}") for i, v in enumerate(items)]
    if len(vals) != arm.n:
        raise BadInputError(f"expected {arm.n} joint angles for arm {arm.name!r}, got {len(vals)}")
    return np.radians(vals) if degrees else np.array(vals)


def point(arm, x, y, z=None) -> tuple[float, ...]:
    """A target point (m): x, y on a planar arm, x, y, z on an arm with a rotating base (required there,
    refused on a planar arm); UnreachableError with a hint for millimetres given as metres."""
    if arm.has_base and z is None:
        raise BadInputError(f"arm {arm.name!r} stands on a rotating base: give z (the height, m) too: move_to(x, y, z)")
    if not arm.has_base and z is not None:
        raise BadInputError(f"arm {arm.name!r} works in a vertical plane (no base): give x and y, not z")
    if z is None:
        p = number(x, "x"), number(y, "y")
    else:
        p = number(x, "x"), number(y, "y"), number(z, "z")
    check_not_far(arm, p)
    return p


def check_not_far(arm, p) -> None:
    """UnreachableError with a hint for a target more than FAR_REACHES reaches away (millimetres given as
    metres: move_to(500, 200) meant 0.5, 0.2)."""
    reach = arm.extent_m
    dist = math.hypot(*p)
    if dist <= FAR_REACHES * reach:
        return
    from armctl.model.workspace import shortfall

    got = ", ".join(f"{v:g}" for v in p)
    meant = ", ".join(f"{v / 1000:g}" for v in p)
    raise UnreachableError(
        f"target ({got}) m is {dist:g} m away, {dist / reach:.0f} times the reach of arm {arm.name!r} "
        f"({1000 * reach:.0f} mm): millimetres given as metres? lengths here are in metres: "
        f"({got}) mm is ({meant})",
        target=np.array(p),
        shortfall_m=shortfall(arm, np.array(p)),
    )
