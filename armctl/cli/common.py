"""What the CLI's commands share: the arm and calibration of the global options, the open Robot, the progress
line, the report printed after a move, the drive loop (open, act, report), and saving a calibration.

``armctl.cli.device`` (jog, run, home, status), ``pendant``, ``calibrate``, ``calibrate_bus``, ``draw``,
``teach``, ``follow``, ``web`` and ``ros`` import these from here, so no command module imports another's.
"""

from __future__ import annotations

import json
import math
import shutil
import sys
import time
from pathlib import Path

import numpy as np

from ..arm import Arm, load_arm
from ..calibration import Calibration, save_calibration
from ..errors import BadInputError
from ..lerobot import open_calibration


def setup(args, program_arm: str | None = None) -> tuple[Arm, Calibration]:
    """The arm (``--arm``, else the program's ``arm:``, else the default) and its calibration."""
    from . import choose_arm

    arm = load_arm(choose_arm(args, program_arm))
    cal, _, notes = open_calibration(args.calibration, arm)  # armctl's YAML, or LeRobot's (lerobot:ID, .json)
    for note in notes:
        print(f"armctl: note: {note}", file=sys.stderr)
    cal.check_arm(arm)
    return arm, cal


def open_robot(args, arm: Arm, cal: Calibration, *, calibrating: bool = False, progress=None):
    """``armctl.connect`` with the global options (--port, --backend, --watchdog) and --wire-log; ``--port
    auto`` is the one board ``armctl ports`` finds."""
    from ..robot import connect
    from .ports import resolve_port

    resolve_port(args)

    robot = connect(
        arm,
        args.port,
        args.backend,
        cal,
        wire_log=getattr(args, "wire_log", None),
        watchdog_s=args.watchdog,
        calibrating=calibrating,
        progress=progress,
    )
    if robot.recovered:
        print(f"armctl {args.command}: note: {robot.recovered}", file=sys.stderr, flush=True)
    return robot


class Progress:
    """One progress line on stderr, rewritten in place: percent, program step, time left."""

    def __init__(self, *, stream=sys.stderr, min_interval_s: float = 0.2, control=None, keys: str = ""):
        self.stream, self.min_interval_s = stream, min_interval_s
        self.control, self.keys = control, keys  # a RunControl: its state (held, override) on the line
        self._last = -math.inf
        self._width = 0

    def __call__(self, fraction: float, label: str, left_s: float) -> None:
        now = time.monotonic()
        if fraction < 1.0 and now - self._last < self.min_interval_s:
            return
        self._last = now
        text = f"[{100 * fraction:5.1f}%] {label}  {left_s:5.1f} s left"
        state = self.control.describe() if self.control is not None else ""
        if state:
            text = f"[{100 * fraction:5.1f}%] [{state}] {label}  {left_s:5.1f} s left"
        elif self.keys and fraction < 1.0:
            text += f"  ({self.keys})"
        # one line: a line longer than the terminal wraps, and the next \r would rewrite only its last part
        text = text[: max(20, shutil.get_terminal_size((120, 24)).columns - 1)]
        self.stream.write("\r" + text.ljust(self._width))
        self._width = len(text)
        self.stream.flush()

    def done(self) -> None:
        if self._width:
            self.stream.write("\n")
            self.stream.flush()
            self._width = 0


def print_report(args, report: dict, headline: str) -> None:
    if args.json:
        print(json.dumps(report, indent=1))
        return
    print(headline)
    if report.get("source") == "assumed":
        print(f"pose: not known yet ({report['detail']}); the first move sets it, then ramps slowly")
    elif report.get("tool_m") is not None:
        where = " ".join(f"{k}={v:.4f} m" for k, v in zip("xyz", report["tool_m"]))
        print(f"tool at {where} ({report['source']}: {report['detail']})")
        print("joints " + " ".join(f"{v:.2f}" for v in report["q_deg"]) + " deg")
        lag = report.get("tracking_error_deg")
        if lag:
            name = max(lag, key=lag.get)
            print(f"tracking: the servos stayed within {lag[name]:.2f} deg of the path (most behind: {name})")


def drive(args, arm: Arm, cal: Calibration, act, *, wants_progress: bool = False) -> dict:
    """Open the arm, ``act(robot)`` -> Motion (played to its end), and report where the arm ended up.
    ``wants_progress``: ``act(robot, progress)`` is given the progress line (None when not on a terminal)."""
    progress = Progress() if sys.stderr.isatty() and not args.json else None
    with open_robot(args, arm, cal, progress=progress) as robot:
        try:
            result = (act(robot, progress) if wants_progress else act(robot)).result
        finally:
            if progress is not None:
                progress.done()
        report = robot.where(settle=True).to_dict()
        report.update(
            {
                "planned_tool_m": [float(v) for v in result.planned_tool_m],
                "duration_s": float(result.duration_s),
                "frames": result.frames,
                "commands": result.commands,
                "ramp_frames": result.ramp_frames,
                "wall_s": result.wall_s,
                "port": robot.port,
                "backend": robot.backend.name,
            }
        )
        if result.tracking_error_deg is not None:
            report["tracking_error_deg"] = result.tracking_error_deg
        off = np.array(report["tool_m"]) - result.planned_tool_m
        report["error_m"] = float(np.hypot(*off) if len(off) == 2 else np.linalg.norm(off))
        return report


# --- saving a calibration (armctl calibrate, PWM and bus servos) ------------------------------------------


def save_calibration_file(cal: Calibration, out: Path, comment: str) -> Path:
    """save_calibration, with an unwritable place as one line (exit 2) naming it."""
    try:
        return save_calibration(cal, out, comment=comment)
    except OSError as exc:
        raise BadInputError(
            f"cannot save the calibration to {out}: {exc.strerror or exc}; choose another place with --out FILE"
        ) from None


def saved_line(out: Path) -> str:
    bak = Path(f"{out}.bak")
    return f"saved {out}" + (f" (previous version kept as {bak.name})" if bak.exists() else "")


def calibration_comment(what: str) -> str:
    return f"Calibration {what}, {time.strftime('%Y-%m-%d %H:%M:%S')}."
