"""What the Robot asks of bus servos as they move (``watch_limits``): the arm file's ``max_load_pct`` and
``max_temp_c`` (``Arm.drive``), the gripper's ``close: until_contact`` with its torque cap, and the load the model
expects of each joint servo to hold the pose (``armctl.model.statics.gravity_torque`` over the servo's stall
torque), which the stop's line gives beside the load the servo reports. The backend does the watching
(``armctl.bus.feetech.watch``)."""

from __future__ import annotations

import numpy as np

from armctl.bus.feetech.watch import GripLimits, WatchLimits
from armctl.errors import BadInputError
from armctl.model.statics import gravity_torque


def watch_limits(arm, cal) -> WatchLimits | None:
    """The limits for ``arm`` driven by calibration ``cal`` (addressed by the backend), or None: nothing to watch."""
    drive, g = arm.drive, arm.gripper
    grip = None
    if g is not None and g.close == "until_contact" and cal.gripper is not None:
        s = cal.gripper
        closing = 1 if float(s.value(g.closed_rad)) > float(s.value(g.open_rad)) else -1
        grip = GripLimits(s.channel, closing, float(g.max_load_pct), float(s.per_deg))
    limits = WatchLimits(
        None if drive is None else drive.max_load_pct,
        None if drive is None else drive.max_temp_c,
        grip,
        expectation(arm, cal),
    )
    return limits if limits.active else None


def expectation(arm, cal):
    """A function of the joints' angles by servo address (rad) giving each joint servo's expected load (fraction of
    its stall torque) to hold the arm there with the arm file's payload; None without masses or servo models."""
    drive = arm.drive
    if drive is None:
        return None
    try:
        gravity_torque(arm, arm.home_rad)
    except BadInputError:  # an arm statics cannot weigh (no masses)
        return None
    stall = [None if drive.servo(i) is None else drive.servo(i).stall_nm for i in range(arm.n)]
    if not any(stall):
        return None
    ids = [s.channel for s in cal.joints]

    def expect(angles: dict[int, float]) -> dict[int, float]:
        if any(i not in angles for i in ids):
            return {}
        tau = gravity_torque(arm, np.array([angles[i] for i in ids]), drive.payload_kg)
        return {i: abs(float(t)) / st for i, t, st in zip(ids, tau, stall) if st}

    return expect
