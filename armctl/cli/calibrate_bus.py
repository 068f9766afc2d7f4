"""``armctl calibrate`` on bus servos (Feetech): the torque goes off, you move each joint by hand.

The same screens and fits as the PWM workflow (``armctl.cli.calibrate``), but the servo says where it
is: for each reference pose you put the joint there by hand and press Enter, and the position it reports
is recorded (live on the screen while you move it); the safe range is the two mechanical ends you move it
to. Positions are in steps. The servos' EEPROM is not touched unless ``--write-offsets`` asks for it:
then each joint's homing offset is set so that its zero angle reads 2048, as LeRobot's calibration does.
armctl does not need that (the calibration file maps any position), and EEPROM writes change the servo
for every other program that drives it, so it is the user's choice.
"""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path

from armctl.calibration.servo import STEP_RANGE, Calibration
from armctl.cli.calibrate_flow import Quit, Terminal, Workflow
from armctl.cli.common import calibration_comment, save_calibration_file, saved_line
from armctl.errors import BadInputError, LinkError
from armctl.model.arm import Arm

REFRESH_S = 0.1  # the live position on the screen


class HandGuide:
    """The Workflow's servo driver when the servos are moved by hand: reads where they are, moves nothing."""

    def __init__(self, robot):
        self.robot, self.arm, self.cal = robot, robot.arm, robot.calibration
        self.us_per_deg = {i: s.per_deg for i, s in enumerate(self.cal.servos)}  # the Workflow's name for it
        self.note = ""  # (the Workflow's: nothing is sent, so nothing is cut short)

    def pulse(self, index: int) -> float:
        """Where servo ``index`` is now (steps), measured."""
        return float(self.robot.where().values[index])

    def go(self, index: int, target: float) -> float:
        """Nothing: the torque is off, the user moves the arm."""
        return target

    def held_position(self, servo_id: int) -> float:
        """Where held servo ``servo_id`` is now (steps), measured."""
        return float(self.robot.call(lambda backend: backend.held_positions())[servo_id])


class BusWorkflow(Workflow):
    """The calibration screens for servos moved by hand (see the module docstring)."""

    moves_servos = False  # the user holds every pose: the screens name them

    def _key(self) -> str:
        """The next key: the screen (fit, refusal, save) waits for the user as long as it takes."""
        while True:
            k = self._poll()
            if k:
                return k

    def _poll(self) -> str:
        """The key pressed within ``REFRESH_S``, or "" (then the live position is redrawn)."""
        k = self.term.key(REFRESH_S)
        if k in ("q", "Q", "ctrl-c"):
            raise Quit(k)
        return k or ""

    def _nudge_until_enter(self, index, body, *, estimate, goto_us, allow_skip):
        keys = [
            "keys: move the joint by hand (the torque is off)   Enter record   "
            + ("s skip this joint (keep its old calibration)   " if allow_skip else "")
            + "q or Ctrl-C quit, nothing saved"
        ]
        while True:
            steps = self.n.pulse(index)
            est, how = estimate(steps)
            self._screen(body + [f"  position {steps:.0f} steps   estimated angle {est:.1f} deg ({how})"], keys)
            k = self._poll()
            if k == "enter":
                return self.n.pulse(index)
            if k == "s" and allow_skip:
                return None

    def held(self) -> None:
        """Each held servo (no joint: the SO-101's wrist roll): turned by hand to where it is to stay, Enter
        records that position; s keeps the old one."""
        held = list(self.new.held)
        for k, h in enumerate(held):
            body = [
                f"Held servo {h.name}, id {h.id} (no joint of the arm: armctl keeps it at one position)",
                "",
                "  Turn it by hand to where it should stay (a wrist roll: the jaws level), then press Enter.",
            ]
            keys = [
                f"keys: move it by hand   Enter record   s keep {h.position_steps:g} steps   "
                "q or Ctrl-C quit, nothing saved"
            ]
            while True:
                steps = self.n.held_position(h.id)
                self._screen([*body, f"  position {steps:.0f} steps (held now at {h.position_steps:g})"], keys)
                key = self._poll()
                if key == "enter":
                    held[k] = replace(h, position_steps=float(round(self.n.held_position(h.id))))
                    self.points.append(f"{h.name}: held at {held[k].position_steps:g} steps")
                    break
                if key == "s":
                    break
        self.new = replace(self.new, held=tuple(held))

    def _end_text(self, k: int, margin: float) -> list[str]:
        return [
            f"  Move the joint by hand to its {('one', 'other')[k]} mechanical end (as far as it goes, or until it",
            f"  touches something), then press Enter. armctl keeps {self.margin_deg:g} deg ({margin:.0f} steps) away.",
        ]

    def _move_text(self, what: str) -> str:
        return f"  Move it by hand to the {what}."


def interactive(args, robot, arm: Arm, cal: Calibration, *, out: Path, margin_deg: float, max_residual: float) -> int:
    """The whole bus-servo session on an open ``robot`` whose servos can be released."""
    if args.write_offsets and not args.force:
        _refuse_foreign_offsets(robot)
    robot.release()
    term = Terminal()
    flow = BusWorkflow(
        term,
        HandGuide(robot),
        arm,
        robot.calibration,
        header=f"armctl calibrate: arm {arm.name}, {robot.info.firmware} on "
        + (robot.port if len(robot.port) <= 60 else robot.port[:57] + "...")
        + " (torque off: move the arm by hand)",
        out=out,
        margin_deg=margin_deg,
        max_residual_deg=max_residual,
    )
    try:
        try:
            new = flow.run()
        except KeyboardInterrupt as exc:
            raise Quit("ctrl-c") from exc
        if new is None:
            raise Quit("q")
    except Quit as quit:
        term.restore()
        from armctl.errors import Terminated

        if isinstance(quit.__cause__, Terminated):
            raise quit.__cause__ from None
        print(f"armctl calibrate: quit: nothing saved ({out} unchanged); the servos are limp", file=sys.stderr)
        from armctl.cli import EXIT_INTERRUPTED

        return EXIT_INTERRUPTED
    finally:
        term.restore()
    saved = replace(new, source=str(out))
    if args.write_offsets:
        saved = _write_offsets(robot, saved, flow.notes)
    comment = (
        calibration_comment("recorded by armctl calibrate, the joints moved by hand") + "\n" + "\n".join(flow.points)
    )
    out = save_calibration_file(saved, out, comment)
    robot.use_calibration(saved, out)
    print("\n".join(flow.notes))
    print(saved_line(out) + "; the servos are limp (torque off) until the next move")
    return 0


def _refuse_foreign_offsets(robot) -> None:
    """``--write-offsets`` without ``--force`` on servos whose EEPROM already holds homing offsets (LeRobot's
    calibration writes them): BadInputError (exit 2) saying what LeRobot would do afterwards; nothing written."""
    offsets = robot.call(lambda backend: dict(backend.homing_offsets))
    names = {s.id: s.name for s in (*robot.calibration.servos, *robot.calibration.held)}
    carried = {i: v for i, v in sorted(offsets.items()) if v}
    if not carried:
        return
    listed = ", ".join(f"{i} ({names.get(i, '?')}) {v:+d}" for i, v in carried.items())
    raise BadInputError(
        f"--write-offsets: servos {listed} already carry homing offsets in their EEPROM (LeRobot's calibration "
        "writes them); changing them makes LeRobot call the arm uncalibrated at its next connect, and pressing "
        "ENTER there writes its own offsets back, shifting this calibration by the difference. armctl does not "
        "need them: leave --write-offsets out, or pass --force to write anyway; nothing was changed"
    )


def _write_offsets(robot, cal: Calibration, notes: list[str]) -> Calibration:
    """Set each joint's homing offset (servo EEPROM) so that its zero angle reads 2048 steps, and shift the
    calibration to match. A joint whose range would leave 0..4095, or whose offset would pass the
    register's +-2047, keeps its offset (noted)."""
    joints = []
    offsets = {}
    for s in cal.servos:
        delta = round(s.zero_steps - 2048)
        lo, hi = s.min_steps - delta, s.max_steps - delta
        if not (STEP_RANGE[0] <= lo and hi <= STEP_RANGE[1]):
            notes.append(f"{s.name}: offset not written (its range would leave 0..4095 steps)")
            joints.append(s)
            continue
        offsets[s.id] = delta
        joints.append(replace(s, zero_steps=s.zero_steps - delta, min_steps=lo, max_steps=hi))  # offset: below
    try:
        written = robot.call(lambda backend: backend.add_homing_offsets(offsets))
    except (LinkError, BadInputError) as exc:
        notes.append(f"homing offsets not written: {exc}")
        return cal
    shifted = {s.id: replace(s, homing_offset=written.get(s.id)) for s in joints}  # what the EEPROM holds now
    out = [shifted[s.id] if s.id in written else s for s in cal.servos]
    for s in cal.servos:
        if s.id in written:
            notes.append(f"{s.name}: homing offset {written[s.id]:+d} steps written (zero now reads 2048)")
    n = len(cal.joints)
    return replace(cal, joints=tuple(out[:n]), gripper=out[n] if cal.gripper is not None else None)
