"""Parsing of lengths and angles at the edges (CLI, YAML). Inside: SI units."""

from __future__ import annotations

import math
import re

from armctl.errors import BadInputError

MAX_LENGTH_M = 1000.0  # a coordinate or length beyond this is a typo, not a target
_LENGTH_UNITS = {"": 1.0, "m": 1.0, "cm": 0.01, "mm": 0.001}
_NUMBER_UNIT = re.compile(r"^\s*([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)\s*([a-zA-Z]*)\s*$")


def parse_length(text: str, *, what: str = "length") -> float:
    """Parse '0.5', '0.5m', '50cm' or '500mm' into metres; reject NaN/inf and beyond 1 km."""
    m = _NUMBER_UNIT.match(str(text))
    if not m or m.group(2).lower() not in _LENGTH_UNITS:
        raise BadInputError(
            f"{what}: cannot read {text!r} as a length; write metres like 0.5 or use a unit: 500mm, 50cm, 0.5m"
        )
    value = float(m.group(1)) * _LENGTH_UNITS[m.group(2).lower()]
    if not abs(value) <= MAX_LENGTH_M:  # also 1e400, read as infinite
        raise BadInputError(f"{what}: {text!r} is {value:.3g} m, beyond any arm (at most {MAX_LENGTH_M:g} m)")
    return value


MAX_MASS_KG = 10.0  # a hobby arm's payload beyond this is a typo
_MASS_UNITS = {"g": 0.001, "kg": 1.0}


def parse_mass(text: str, *, what: str = "mass") -> float:
    """Parse '50g' or '0.05kg' into kilograms (the unit is required: '50' could be either); 0..10 kg."""
    m = _NUMBER_UNIT.match(str(text))
    if not m or m.group(2).lower() not in _MASS_UNITS:
        raise BadInputError(f"{what}: cannot read {text!r} as a mass; give its unit: 50g or 0.05kg")
    value = float(m.group(1)) * _MASS_UNITS[m.group(2).lower()]
    if not 0.0 <= value <= MAX_MASS_KG:
        raise BadInputError(f"{what}: {text!r} is {value:g} kg: a mass is 0..{MAX_MASS_KG:g} kg")
    return value


def parse_float(text: str, *, what: str) -> float:
    """Parse a finite float, naming ``what`` in the error."""
    try:
        value = float(text)
    except (TypeError, ValueError):
        raise BadInputError(f"{what}: {text!r} is not a number") from None
    if not math.isfinite(value):
        raise BadInputError(f"{what}: {text!r} is not a finite number")
    return value
