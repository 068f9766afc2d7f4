"""Moving single servos by hand (the calibration's nudging): ``Nudger`` moves one servo in timed steps that keep it
under the joint's speed limit; the CLI (``armctl.cli.calibrate``) puts keys and a screen around it. Pulses in
microseconds."""

from __future__ import annotations

import math

NUDGE_SPEED_FRACTION = 0.5  # of the joint's speed limit: room for a us/deg estimate off by up to 2x


def board_step(robot, servo) -> float:
    """The smallest pulse change (us) the board of ``robot`` makes on ``servo``: the backend's own step where it
    has one (a PCA9685's count, 4.88 us at 50 Hz), else the calibration's (our firmware's 0.5 us ticks)."""
    step = robot.backend.value_step(servo.channel)
    return float(step) if step else float(servo.resolution)


def on_grid(us: float, step: float, lo: float, hi: float) -> float:
    """``us`` rounded to the board's grid of ``step`` us, inside ``lo``..``hi`` (on the grid too)."""
    first, last = math.ceil(lo / step - 1e-9), math.floor(hi / step + 1e-9)
    return min(max(round(us / step), first), last) * step


class Nudger:
    """Moves single servos of an open ``robot`` in timed steps under the joint speed limit.

    ``values`` holds the pulse (us) each servo (joints, then the gripper) was last commanded to. A step of
    d us becomes one move of ceil(|d| / us_per_deg / (speed * 20 ms)) frames, with the speed
    ``NUDGE_SPEED_FRACTION`` of the joint's limit and ``us_per_deg`` the current best estimate for the servo.
    Pulses stay on the board's grid (``step``): a nudge smaller than one step moves one step.
    """

    def __init__(self, robot, values: list[float]):
        self.robot, self.arm, self.cal = robot, robot.arm, robot.calibration
        self.steps = [board_step(robot, s) for s in self.cal.servos]
        self.values = [float(v) for v in values]
        self.us_per_deg = {i: s.per_deg for i, s in enumerate(self.cal.servos)}
        self.moves = 0
        #: why the last target was not sent as asked (the board cannot send it), else ""
        self.note = ""

    def speed_deg_s(self, index: int) -> float:
        """The nudge speed (deg/s) for servo ``index``."""
        if index < self.arm.n:
            limit = math.degrees(self.arm.max_speed_rad_s[index])
        elif self.arm.gripper is not None:
            limit = math.degrees(self.arm.gripper.max_speed_rad_s)
        else:
            limit = 90.0
        return NUDGE_SPEED_FRACTION * limit

    def frames_for(self, index: int, delta_us: float) -> int:
        """Frames (the board's, 20 ms) a move of ``delta_us`` must take for servo ``index`` to stay under its speed."""
        deg = abs(delta_us) / self.us_per_deg[index]
        return max(1, math.ceil(deg / (self.speed_deg_s(index) * self.robot.backend.frame_s) - 1e-9))

    def pulse(self, index: int) -> float:
        return self.values[index]

    def step(self, index: int) -> float:
        """The board's pulse step (us) for servo ``index``: the smallest nudge."""
        return self.steps[index]

    def go(self, index: int, target_us: float) -> float:
        """Move servo ``index`` to ``target_us`` on the board's grid (``step``), clamped to what the board can send
        it (the backend's ``value_range``: 500..2500 us, StandardFirmata 544..2500); returns it. A target the board
        cannot send leaves the reason in ``note`` (one line; "" when the last target was sent as asked)."""
        servo = self.cal.servos[index]
        step = self.steps[index]
        lo, hi = self.robot.backend.value_range(servo)
        wanted = round(target_us / step) * step
        target = on_grid(wanted, step, lo, hi)
        self.note = self.robot.backend.beyond_note(servo, wanted)
        delta = target - self.values[index]
        if delta:
            self.robot.move_servo(index, target, self.frames_for(index, delta))
            self.values[index] = target
            self.moves += 1
        return target

    def nudge(self, index: int, delta_us: float) -> float:
        """Move servo ``index`` by ``delta_us`` in whole board steps (at least one); returns the new pulse."""
        step = self.steps[index]
        n = 0 if not delta_us else (round(delta_us / step) or int(math.copysign(1, delta_us)))
        return self.go(index, round(self.pulse(index) / step) * step + n * step)
