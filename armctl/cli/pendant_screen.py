"""The keyboard pendant's screen (``armctl jog`` without a target): the key help, the joint table with its
bars, the state lines; ``Screen`` is the part of ``armctl.cli.pendant.Pendant`` that draws it.
"""

from __future__ import annotations

import math
import os

NEAR_LIMIT_DEG = 5.0
KEY_NAMES = {"right": "Right", "left": "Left", "up": "Up", "down": "Down", "pgup": "PgUp", "pgdn": "PgDn"}


def help_lines(arm, width: int, *, recording: bool, prompt: bool = False) -> list[str]:
    """Every key that does something on this arm, wrapped to ``width``: z keys on an arm with a rotating base,
    the tool angle on 3 links, the roll on an arm with one, the gripper where there is one."""
    if prompt:
        items = ["type the pose name", "Enter record it", "Backspace delete", "Esc cancel"]
    else:
        items = ["arrows x/y", *(["PgUp/PgDn z"] if "z" in arm.point_words else [])]
        items += ["(hold: moves at the speed shown)", "[ ] step", "< > speed"]
        if arm.n_links == 3:
            items.append(", . tool angle")
        if arm.roll is not None:
            items.append("; ' roll")
        if arm.gripper is not None:
            items.append("o/c gripper open/close")
        items += ["h home", "Space stop"]
        items += ["Enter record pose", "u undo record"] if recording else ["Enter/u record (needs --record)"]
        items += ["q quit (the arm holds)", "Ctrl-C quit"]
    lines, line, first = [], "keys: ", True
    for item in items:
        if not first and len(line) + 3 + len(item) > width:
            lines.append(line)
            line, first = "      ", True
        line += item if first else "   " + item
        first = False
    return lines + [line]


def bar(value: float, lo: float, hi: float, width: int = 28, *, mark_ends: bool = True) -> str:
    """A text bar of ``width`` cells from ``lo`` to ``hi`` with ``|`` at ``value`` (``!`` within 5 of an end,
    with ``mark_ends``)."""
    frac = 0.0 if hi <= lo else min(1.0, max(0.0, (value - lo) / (hi - lo)))
    at = min(width - 1, int(frac * width))
    near = mark_ends and min(value - lo, hi - value) < NEAR_LIMIT_DEG
    return "[" + "." * at + ("!" if near else "|") + "." * (width - 1 - at) + "]"


class Screen:
    """The pendant's screen: mixed into ``Pendant``, whose state it reads."""

    def screen(self, width: int = 100, height: int = 24) -> list[str]:
        """The lines to draw, each at most ``width`` characters (80 columns fit the whole table), at most
        ``height`` lines (blank spacer lines go first when the terminal is short)."""
        r, arm, pose = self.robot, self.arm, self.pose
        head = f"armctl jog: arm {arm.name} on "
        room = max(10, width - len(head) - len(r.backend.name) - 3)  # "PORT (backend)" fills the line
        port = r.port if len(r.port) <= room else r.port[: room - 3] + "..."
        lines = [f"{head}{port} ({r.backend.name})"]
        wide = width >= 110
        if pose is not None:
            phi = f"  tool angle {math.degrees(pose.phi_rad):6.1f} deg" if arm.n_links == 3 else ""
            source = f"  ({pose.source}: {pose.detail})" if wide else ""  # narrow: on the state line
            lines.append(f"tool    {xyz_text(pose.tool_mm, 7)}{phi}{source}")
        if self.target is not None:
            point, tphi, troll = self.target
            phi = f"  tool angle {math.degrees(tphi):6.1f} deg" if tphi is not None else ""
            phi += f"  roll {math.degrees(troll):6.1f} deg" if troll is not None else ""
            lines.append(f"target  {xyz_text([v * 1000 for v in point], 7)}{phi}")
        state = "moving" if self._pending() else "idle"
        if self.held:
            state = f"held {KEY_NAMES.get(self.held, self.held)}"
        turn = f" / {self.turn_step_deg():g} deg" if arm.n_links == 3 else ""
        source = f"   pose {pose.source}" if pose is not None and not wide else ""
        lines.append(f"step {self.step_mm:g} mm{turn}   speed {self.speed_mm_s:g} mm/s   {state}{source}")
        lines.append("")
        if pose is not None:
            lines += self._joint_rows(pose, width)
        lines.append("")
        if self.recorder is not None:
            recent = ", ".join(self.recorded[-6:]) or "none yet"
            lines += _wrap(f"recording into {self.recorder.path}: this session {recent}", width)
        if self.prompt is not None:
            lines.append(f"pose name: {self.prompt}_")
        tag = {"refused": "! ", "error": "!! "}.get(self.message.kind, "")
        lines += _wrap(tag + self.message.text, width)
        lines.append("")
        lines += help_lines(arm, width, recording=self.recorder is not None, prompt=self.prompt is not None)
        while len(lines) > height and "" in lines:
            lines.remove("")
        return [line[:width] for line in lines[-height:]] if len(lines) > height else lines

    def _joint_rows(self, pose, width: int) -> list[str]:
        """The joint table: angle, a bar between the limits, the servo's value and safe range; the bar as wide
        as the terminal leaves room for (8..28 cells)."""
        r, arm = self.robot, self.arm
        servos = r.calibration.servos
        column = "pulse" if r.calibration.unit == "us" else "position"
        names = list(arm.joint_names) + (["gripper"] if arm.gripper is not None else [])
        nw = max(len(n) for n in names) + 1
        rows = []
        for i in range(arm.n):
            lo, hi = math.degrees(arm.q_min[i]), math.degrees(arm.q_max[i])
            rows.append((f"{i + 1} {arm.joint_names[i]:<{nw}}", pose.q_deg[i], lo, hi, i, True))
        if arm.gripper is not None and pose.gripper_rad is not None:
            lo, hi = sorted((math.degrees(arm.gripper.closed_rad), math.degrees(arm.gripper.open_rad)))
            rows.append((f"  {'gripper':<{nw}}", math.degrees(pose.gripper_rad), lo, hi, arm.n, False))
        tails = []
        for _name, _q, _lo, hi, i, _ends in rows:
            s = servos[i] if i < len(servos) else None
            tails.append(f" {hi:<4.0f}" + (f"{_value(pose.values, i, s)} {_range(s)}" if s is not None else ""))
        fixed = 2 + nw + 8 + 1 + 5 + 1 + 2 + max(len(t) for t in tails)  # the bar's brackets too
        cells = max(8, min(28, width - fixed))
        out = [f"{'joint':<{2 + nw}}{'angle':>7}  {'limits (deg)':<{cells + 14}}{column:>8}       safe range"]
        for (name, q, lo, _hi, _i, ends), tail in zip(rows, tails):
            out.append(f"{name}{q:7.1f}° {lo:5.0f} {bar(q, lo, _hi, cells, mark_ends=ends)}{tail}")
        return out


def _value(values, i: int, servo) -> str:
    """Servo ``i``'s value in its own unit (a PWM pulse in us, a bus servo's position in steps)."""
    v = values[i] if i < len(values) else None
    text = "-" if v is None else f"{v:.{1 if servo.resolution < 1 else 0}f}"
    return f"{text:>8} {servo.unit:<5}"


def _range(servo) -> str:
    """The servo's calibrated safe range in its own unit."""
    return f"{servo.lo:g}..{servo.hi:g} {servo.unit}"


def _wrap(text: str, width: int) -> list[str]:
    """``text`` cut into lines of at most ``width`` characters (at spaces where it can), the later ones
    indented by two."""
    out = []
    while len(text) > width:
        cut = text.rfind(" ", 3, width)
        cut = width if cut < 3 else cut
        out.append(text[:cut])
        text = "  " + text[cut:].lstrip()
    return out + [text]


def xyz_text(point_mm, width: int = 8) -> str:
    """ "x  500.0 mm   y  200.0 mm" (and z on an arm with a rotating base)."""
    return "  ".join(f"{a} {v:{width}.1f} mm" for a, v in zip("xyz", point_mm))


def screen_size() -> tuple[int, int]:
    """The terminal's width less one (120 if it does not say; at least 60) and its height (24 if it does not
    say; at least 16)."""
    try:
        cols, rows = os.get_terminal_size()
    except OSError:
        cols = rows = 0
    return (max(60, cols - 1) if cols else 120), (max(16, rows) if rows else 24)
