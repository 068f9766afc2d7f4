"""Edge validation shared by the Python API, the CLI and the web page (``armctl.model.validate``)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from armctl.errors import BadInputError, JointLimitError, UnreachableError
from armctl.model import validate
from armctl.model.arm import load_arm


@pytest.mark.parametrize("v", [1, 2.5, np.float64(0.1), np.int32(3), -4])
def test_numbers_pass_as_floats(v):
    assert validate.is_number(v)
    assert validate.number(v, "x") == float(v)


@pytest.mark.parametrize("v", [True, np.bool_(False), "0.5", None, [1.0]])
def test_what_is_not_a_number_is_refused_by_name(v):
    assert not validate.is_number(v)
    with pytest.raises(BadInputError, match=r"^x: expected a number, got "):
        validate.number(v, "x")


@pytest.mark.parametrize("v", [math.nan, math.inf, -math.inf])
def test_nan_and_infinity_are_refused(v):
    with pytest.raises(BadInputError, match="x: must be a finite number"):
        validate.number(v, "x")


def test_radians_refuse_more_than_a_turn_with_the_degrees_hint():
    assert validate.radians(-math.pi, "phi") == -math.pi
    with pytest.raises(BadInputError, match=r"phi: 90 rad is more than a turn.*math.radians\(90\) = 1.571"):
        validate.radians(90, "phi")


def test_positive_and_the_cli_reading_of_it():
    assert validate.positive(0.5, "accel") == 0.5
    with pytest.raises(BadInputError, match=r"^accel: must be > 0, got 0$"):
        validate.positive(0, "accel")
    assert validate.positive_text("50", "--speed", unit="mm/s") == 50.0
    with pytest.raises(BadInputError, match=r"^--speed: must be > 0 mm/s, got -5$"):
        validate.positive_text("-5", "--speed", unit="mm/s")
    with pytest.raises(BadInputError, match=r"^--tool-speed: must be > 0 mm/s, got '0'$"):
        validate.positive_text("0", "--tool-speed", unit="mm/s", quote=True)
    with pytest.raises(BadInputError, match="is not a number"):
        validate.positive_text("fast", "--speed")


def test_tool_speed_blend_and_fraction_ranges():
    assert validate.tool_speed(0.1) == 0.1
    with pytest.raises(BadInputError, match="mm/s given as m/s"):
        validate.tool_speed(50)
    assert validate.blend(0.01) == 0.01
    with pytest.raises(BadInputError, match=r"blend: 2 m: give 0 .. 0.5 m"):
        validate.blend(2)
    assert validate.fraction(1, "speed_fraction") == 1.0
    with pytest.raises(BadInputError, match=r"speed_fraction: must be in \(0, 1\]"):
        validate.fraction(1.5, "speed_fraction")


def test_joint_angles_count_and_unit():
    arm = load_arm("seed-3link")
    assert validate.joint_angles(arm, [30, -60, 10], degrees=True) == pytest.approx(np.radians([30, -60, 10]))
    with pytest.raises(BadInputError, match="expected 3 joint angles"):
        validate.joint_angles(arm, [0.1, 0.2])
    with pytest.raises(BadInputError, match="joint 2: 90 rad is more than a turn"):
        validate.joint_angles(arm, [0.1, 90, 0.2])


def test_points_planar_and_on_a_base():
    planar, base = load_arm("seed-3link"), load_arm("mearm")
    assert validate.point(planar, 0.4, 0.2) == (0.4, 0.2)
    with pytest.raises(BadInputError, match="vertical plane"):
        validate.point(planar, 0.4, 0.2, 0.1)
    with pytest.raises(BadInputError, match="give z"):
        validate.point(base, 0.1, 0.05)
    assert validate.point(base, 0.1, 0.05, 0.02) == (0.1, 0.05, 0.02)
    with pytest.raises(UnreachableError, match=r"millimetres given as metres.*\(0.5, 0.2\)") as err:
        validate.point(planar, 500, 200)
    assert err.value.shortfall_m > 0


def test_outside_the_limits_now_is_a_joint_limit_error():
    err = validate.outside_limits_now(": joint 1 (shoulder) is at 99.0 deg", "check the calibration", joint=0, q=[1, 2])
    assert isinstance(err, JointLimitError) and err.joint == 0
    assert (
        str(err) == "the arm is outside its joint limits now: joint 1 (shoulder) is at 99.0 deg; check the calibration"
    )
