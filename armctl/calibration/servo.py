"""Servo calibration: joint angle <-> servo value, per servo.

Two kinds of servo, one linear mapping. A hobby (PWM) servo is driven by a pulse width in
microseconds: per servo the board channel (our protocol) and Arduino pin (Firmata), the pulse at joint
angle 0, microseconds per degree, direction (+1/-1) and the safe min/max pulse::

    pulse_us = zero_us + direction * us_per_deg * degrees(angle_rad)

A serial bus servo (Feetech STS/SCS) is driven by a goal position in steps (4096 a turn) and reports
where it is: per servo its bus ``id``, ``zero_steps``, ``steps_per_deg``, ``direction`` and the safe
``min_steps``/``max_steps``. Code above the calibration uses the unit-free names every servo has:
``value(angle)``, ``angle_rad(value)``, ``lo``/``hi``, ``per_deg``, ``resolution`` and ``unit``; the YAML
keys name their unit. Angles in radians inside, degrees in the YAML file.

A bus servo that is no joint of the arm model (the SO-101's wrist roll: it turns the jaws about the tool
point, which stays where it is) can be held at one position: ``hold: [{name, id, position_steps,
speed_deg_s}]``. The backend brings it there at ``speed_deg_s`` when the arm first moves and keeps it there.

Files are strict YAML, saved atomically with the previous version kept as ``<file>.bak``. Where
they are looked up and saved: ``find_calibration`` and ``save_path_for``.

The names live in ``maps`` (the servo maps and ``Calibration``), ``files`` (our YAML files) and ``adjust``
(calibrations made from others); they are imported from here, as they were before the split.
"""

from armctl.calibration.adjust import (
    SERVOKIT_ACTUATION_RANGE_DEG,
    narrowed,
    replace_servo,
    servokit_servo,
    with_servo,
    within_calibration,
)
from armctl.calibration.files import (
    MAX_BUS_ID,
    calibration_file,
    calibration_places,
    find_calibration,
    is_shipped,
    load_calibration,
    parse_calibration,
    save_calibration,
    save_path_for,
    to_yaml,
)
from armctl.calibration.maps import (
    DEFAULT_PWM_HZ,
    FORMAT_VERSION,
    MAX_PWM_CHANNEL,
    PULSE_RANGE_US,
    STEP_RANGE,
    STEPS_PER_TURN,
    BusServoCal,
    Calibration,
    HeldServo,
    ServoCal,
    whole_turn_refusal,
)

__all__ = [
    "FORMAT_VERSION",
    "PULSE_RANGE_US",
    "DEFAULT_PWM_HZ",
    "MAX_PWM_CHANNEL",
    "STEPS_PER_TURN",
    "STEP_RANGE",
    "ServoCal",
    "BusServoCal",
    "whole_turn_refusal",
    "HeldServo",
    "Calibration",
    "MAX_BUS_ID",
    "parse_calibration",
    "load_calibration",
    "calibration_places",
    "calibration_file",
    "find_calibration",
    "is_shipped",
    "save_path_for",
    "to_yaml",
    "save_calibration",
    "narrowed",
    "within_calibration",
    "SERVOKIT_ACTUATION_RANGE_DEG",
    "servokit_servo",
    "with_servo",
    "replace_servo",
]
