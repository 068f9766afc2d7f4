"""``armctl calibrate`` interactive on PWM servos: the screens, the keys and the fits of one session
(``Workflow``), its terminal, and ``Quit``. ``armctl.cli.calibrate_bus`` builds the bus servos' workflow on
this one; ``armctl.cli.calibrate`` opens the arm and runs them.
"""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path

import numpy as np

from armctl.calibration import procedures as cb
from armctl.calibration.servo import Calibration
from armctl.core import terminal
from armctl.model.arm import Arm

# --- the terminal --------------------------------------------------------------------------------------------


class Quit(Exception):
    """The user left (q, Ctrl-C): hold the servos, save nothing."""


STEPS_US = {
    "k": 0.5,
    "right": 0.5,
    "j": -0.5,
    "left": -0.5,
    "K": 10.0,
    "up": 10.0,
    "J": -10.0,
    "down": -10.0,
    "]": 100.0,
    "pgup": 100.0,
    "[": -100.0,
    "pgdn": -100.0,
}
KEEPALIVE_S = 0.25


def key_help(step_us: float) -> list[str]:
    """The nudge keys; k/j move one step of the board's grid (``step_us``: 0.5 us on our firmware, one 4.88 us
    count on a PCA9685 at 50 Hz), the others as near 10 and 100 us as the grid allows."""

    def near(us: float) -> str:
        n = round(us / step_us) or 1
        return f"{n * step_us:.3g}"

    return [
        f"keys: k/j or Right/Left +/-{step_us:.3g} us (one board step)   K/J or Up/Down +/-{near(10)} us   "
        f"]/[ or PgUp/PgDn +/-{near(100)} us",
    ]


class Terminal(terminal.Terminal):
    """calibrate's screen (``armctl.core.terminal``: every OS): not the alternate screen, so its last screen stays
    when it ends; the end of input reads as Ctrl-C (quit, save nothing)."""

    def __init__(self):
        super().__init__(fullscreen=False)

    def key(self, timeout_s: float | None = None) -> str | None:
        k = super().key(timeout_s)
        return "ctrl-c" if k == "ctrl-d" else k

    def draw(self, lines: list[str]) -> None:
        """Clear the screen, then draw (a screen at a time, as scrolled-back text reads too)."""
        self._write("\x1b[H\x1b[2J" + "\r\n".join(lines) + "\r\n")


# --- the interactive workflow --------------------------------------------------------------------------------


class Workflow:
    """One interactive session: the screens, the keys, the fits.

    Every pose it puts the arm in is a whole pose inside the arm's own limits (``pose_for``, ``room_pose``,
    ``home_after`` of ``armctl.calibration.procedures``, reached one servo at a time by ``path_between``): on a
    parallelogram arm the partner joint moves along so the linkage never binds."""

    #: the servos are driven (the Nudger); False where the user moves them by hand (bus servos)
    moves_servos = True

    def __init__(
        self,
        term: Terminal,
        nudger: cb.Nudger,
        arm: Arm,
        cal: Calibration,
        *,
        header: str,
        out: Path,
        margin_deg: float,
        max_residual_deg: float,
    ):
        self.term, self.n, self.arm, self.old = term, nudger, arm, cal
        self.header, self.out, self.margin_deg, self.max_residual = header, out, margin_deg, max_residual_deg
        self.new = cal
        self.unit = cal.unit  # us (pulses) or steps (bus servo positions)
        self.address = "channel" if cal.unit == "us" else "id"
        self.notes: list[str] = []
        self.points: list[str] = []

    def _key(self) -> str:
        while True:
            k = self.term.key(KEEPALIVE_S)
            if k is not None:
                break
            self.n.robot.board_status()  # the board's watchdog must hear from us while the user thinks
        if k in ("q", "Q", "ctrl-c"):
            raise Quit(k)
        return k

    def _screen(self, body: list[str], keys: list[str]) -> None:
        self.term.draw([self.header, ""] + body + [""] + keys + [""] + self.notes[-6:])

    def _nudge_until_enter(
        self, index: int, body: list[str], *, estimate, goto_us: float | None, allow_skip: bool
    ) -> float | None:
        """Nudge servo ``index`` until Enter; returns the pulse (us), or None if skipped."""
        keys = key_help(self.n.step(index)) + [
            "      "
            + ("g go to the estimate   " if goto_us is not None else "")
            + "Enter record   "
            + ("s skip this joint (keep its old calibration)   " if allow_skip else "")
            + "q or Ctrl-C quit, nothing saved"
        ]
        while True:
            us = self.n.pulse(index)
            est, how = estimate(us)
            stop = [f"  {self.n.note}"] if self.n.note else []  # the board cannot send the pulse asked for
            self._screen(body + [f"  pulse {us:.1f} us   estimated angle {est:.1f} deg ({how})", *stop], keys)
            k = self._key()
            if k == "enter":
                return us
            if k == "s" and allow_skip:
                return None
            if k == "g" and goto_us is not None:
                self.n.go(index, goto_us)
            elif k in STEPS_US:
                self.n.nudge(index, STEPS_US[k])

    def _pose(self) -> np.ndarray:
        """The joint angles (rad) the arm is in now, by the best mapping known for each servo."""
        return np.array([float(s.angle_rad(self.n.pulse(j))) for j, s in enumerate(self.new.joints)])

    def _put(self, q) -> None:
        """Take the arm to pose ``q`` (rad) one servo at a time, every pose on the way inside the arm's limits;
        each pulse by the best mapping known, inside that servo's calibrated range."""
        if not self.moves_servos:
            return
        prev = self._pose()
        for x in cb.path_between(self.arm, prev, q):
            for j in np.flatnonzero(np.abs(x - prev) > 1e-12):
                s = self.new.joints[j]
                self.n.go(int(j), min(max(float(s.value(x[j])), s.lo), s.hi))
            prev = x

    def _place_for(self, index: int, angle_deg: float) -> None:
        """Before reference pose ``angle_deg`` of joint ``index``: move the other joints where that pose is
        inside the arm's limits (a parallelogram's partner), leaving the joint itself to the user where it can."""
        if not self.moves_servos:
            return
        now = self._pose()
        target = cb.pose_for(self.arm, index, math.radians(angle_deg), now)
        if target is None:
            return
        keep = target.copy()
        keep[index] = now[index]
        self._put(keep if self.arm.within_limits(keep) else target)

    def _ask(self, body: list[str], keys: str, allowed: str) -> str:
        self._screen(body, [keys])
        while True:
            k = self._key()
            if k == "enter":
                k = allowed[0]
            if k and k.lower() in allowed:  # a key, not a refresh tick ("" is in every string)
                return k.lower()

    def _record_poses(self, index: int, refs, heading) -> list[tuple[float, float]] | None:
        """Nudge servo ``index`` to each reference pose and record (angle deg, pulse us); None if skipped.

        ``heading(k, ref)`` gives the first screen lines for pose ``k``; the old calibration estimates
        the angle and ``g`` goes to its guess of the pose."""
        old = self.old.servos[index]
        recorded: list[tuple[float, float]] = []
        for k, ref in enumerate(refs):
            if index < len(self.old.joints):
                self._place_for(index, ref.angle_deg)
            body = heading(k, ref) + [f"  target {ref.angle_deg:g} deg"]
            body += [f"  recorded: {a:g} deg at {p:g} {self.unit}" for a, p in recorded]
            us = self._nudge_until_enter(
                index,
                body,
                estimate=lambda u: (math.degrees(float(old.angle_rad(u))), "by the old calibration"),
                goto_us=float(old.value(math.radians(ref.angle_deg))),
                allow_skip=True,
            )
            if us is None:
                return None
            recorded.append((ref.angle_deg, us))
        return recorded

    def joint(self, index: int) -> None:
        old = self.old.servos[index]
        label = cb.servo_label(self.old, index)
        refs = cb.reference_poses(self.arm, index)
        title = f"{label[0].upper()}{label[1:]} of {len(self.old.joints)}, {self.address} {old.channel}"
        while True:
            recorded = self._record_poses(
                index, refs, lambda k, ref: [f"{title}: reference pose {k + 1} of {len(refs)}", f"  Put {ref.text}."]
            )
            if recorded is None:
                self.notes.append(f"{label}: skipped, old calibration kept")
                return
            try:
                fit = cb.fit_points(
                    [a for a, _ in recorded],
                    [p for _, p in recorded],
                    label=label,
                    max_residual_deg=self.max_residual,
                    kind=type(old),
                )
            except cb.FitError as exc:
                self._ask(
                    [f"{title}: the fit is refused", f"  {exc}"],
                    "keys: r record the reference poses again   q or Ctrl-C quit, nothing saved",
                    "r",
                )
                continue
            answer = self._ask(
                [f"{title}: fit from {len(recorded)} points", "  " + fit.describe()[0]]
                + ["  " + s for s in fit.describe()[1:]],
                "keys: y or Enter accept and go on to the safe range   r record again   "
                "q or Ctrl-C quit, nothing saved",
                "yr",
            )
            if answer == "y":
                break
        self.n.us_per_deg[index] = fit.per_deg
        self.new = cb._with(self.new, index, cb.servo_from_fit(old, fit, lo=old.lo, hi=old.hi))  # (range: below)
        est = lambda u: (fit.angle_deg(u), "by the new fit")  # noqa: E731
        margin_us = self.margin_deg * fit.per_deg
        ends = []
        for k in range(2):
            if self.moves_servos:  # a parallelogram's partner out of the way (lower pulses: lower angles if +1)
                toward = -1 if (k == 0) == (fit.direction > 0) else 1
                self._put(cb.room_pose(self.arm, index, toward, self._pose()))
            body = [f"{title}: safe range, end {k + 1} of 2", *self._end_text(k, margin_us)]
            body += [f"  first end at {ends[0]:g} {self.unit}"] if ends else []
            us = self._nudge_until_enter(index, body, estimate=est, goto_us=None, allow_skip=False)
            ends.append(us)
            self.n.go(index, us + (margin_us if k == 0 else -margin_us))
        try:
            lo, hi = cb.safe_range(*ends, per_deg=fit.per_deg, margin_deg=self.margin_deg, kind=type(old))
        except cb.FitError as exc:
            self.notes.append(f"{label}: {exc}; old range kept")
            lo, hi = old.lo, old.hi
        servo = cb.servo_from_fit(old, fit, lo=lo, hi=hi)
        self.new = cb._with(self.new, index, servo)
        a, b = (math.degrees(v) for v in servo.angle_range_rad())
        u = self.unit
        self.notes.append(f"{label}: {fit.describe()[0]}; safe {lo:g}..{hi:g} {u} = {a:.1f}..{b:.1f} deg")
        self.points.append(
            f"{label}: "
            + ", ".join(f"{x:g} deg at {p:g} {u}" for x, p in recorded)
            + f"; ends {ends[0]:g}, {ends[1]:g} {u}"
        )
        jmin, jmax = math.degrees(self.arm.q_min[index]), math.degrees(self.arm.q_max[index])
        if a > jmin + 0.05 or b < jmax - 0.05:
            self.notes.append(
                f"  note: the arm file allows {jmin:g}..{jmax:g} deg; targets outside {a:.1f}..{b:.1f} deg "
                "will be refused"
            )
        if self.moves_servos:  # back to its home angle (a parallelogram's partner too), inside the new range
            self._put(cb.home_after(self.arm, index, self._pose()))

    def _end_text(self, k: int, margin: float) -> list[str]:
        """How to find mechanical end ``k`` (0: low, 1: high)."""
        way, keys = (("LOWER", "j/J/["), ("HIGHER", "k/K/]"))[k]
        return [
            f"  Nudge to {way} pulses ({keys}) slowly until the joint reaches its mechanical end or touches",
            f"  something, then press Enter. The tool backs off {self.margin_deg:g} deg ({margin:.1f} {self.unit}).",
        ]

    def _move_text(self, what: str) -> str:
        return f"  Nudge to the {what}."

    def gripper(self) -> None:
        index = len(self.old.joints)
        old = self.old.gripper
        recorded = self._record_poses(
            index,
            cb.gripper_poses(self.arm),
            lambda k, ref: [
                f"Gripper, {self.address} {old.channel}: {'open' if k == 0 else 'closed'} ({k + 1} of 2)",
                self._move_text(ref.text),
            ],
        )
        if recorded is None:
            self.notes.append("gripper: skipped, old calibration kept")
            return
        try:
            fit = cb.fit_points([a for a, _ in recorded], [p for _, p in recorded], label="gripper", kind=type(old))
        except cb.FitError as exc:
            self.notes.append(f"gripper: {exc}; old calibration kept")
            return
        servo = cb.gripper_from_fit(old, fit)
        self.new = cb._with(self.new, index, servo)
        u = self.unit
        self.notes.append(f"gripper: open {recorded[0][1]:g} {u}, closed {recorded[1][1]:g} {u}; {fit.describe()[0]}")
        self.points.append(f"gripper: open at {recorded[0][1]:g} {u}, closed at {recorded[1][1]:g} {u}")
        self.n.go(index, recorded[0][1])

    def held(self) -> None:
        """Servos held at one position (bus servos only: see the bus workflow)."""

    def run(self) -> Calibration | None:
        for i in range(len(self.old.joints)):
            self.joint(i)
        if self.old.gripper is not None and self.arm.gripper is not None:
            self.gripper()
        self.held()
        lines, _ = cb.compare_lines(self.old, replace(self.new, source="this session (not saved yet)"), self.arm)
        body = ["Calibration finished. Old (A) against new (B):"] + ["  " + s for s in lines]
        limits = " and write the limits to the board" if self.unit == "us" else ""
        answer = self._ask(
            body,
            f"keys: y save to {self.out} (the old file is kept as {Path(self.out).name}.bak){limits}   "
            "q or Ctrl-C quit, nothing saved",
            "y",
        )
        return self.new if answer == "y" else None
