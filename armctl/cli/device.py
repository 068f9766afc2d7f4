"""``armctl jog``, ``run``, ``home`` and ``status``: drive the arm on a board (default: the simulated arm).

Everything is checked before the first servo command: the program or target
is planned, every pulse is mapped through the calibration and checked against
min/max. On the simulated arm the tool point printed is measured from the
simulated servos; on a real board it is computed from the pulses it holds.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

import numpy as np

from .. import motion
from ..arm import Arm
from ..calibration import Calibration
from ..errors import BadInputError
from ..kinematics import fk
from ..session import home_move, jog_move, load_arm_and_calibration, open_backend, pose_report
from ..stream import Progress, Streamer, prepare
from ..units import parse_float, parse_length

EPILOG = """\
port: a device path (/dev/ttyACM0) or any pyserial URL (socket://host:port, rfc2217://, spy://...);
default: the simulated arm, armsim://<arm> (it keeps its pose between runs; see docs/protocol.md).
examples:
  armctl run examples/pick_and_place.yaml
  armctl jog 0.5 0.2 --phi -30 --speed 50
  armctl --port /dev/ttyACM0 home
  armctl --backend firmata --port /dev/ttyACM0 run examples/pick_and_place.yaml"""


def register(sub, parents) -> None:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--json", action="store_true", help="print JSON (tool_m, q_deg, ...) instead of text")
    common.add_argument("--wire-log", metavar="FILE", help="write every byte sent and received, with times, to FILE")
    fmt = argparse.RawDescriptionHelpFormatter
    p = sub.add_parser(
        "jog",
        parents=parents + [common],
        epilog=EPILOG,
        formatter_class=fmt,
        help="move the tool in a straight line to X Y",
        description="Move the tool point in a straight line from where the arm is to (X, Y).",
    )
    p.add_argument("x", metavar="X", help="target x (m, or with a unit: 500mm)")
    p.add_argument("y", metavar="Y", help="target y (m, or with a unit)")
    p.add_argument("--phi", metavar="DEG", help="tool angle at the target, degrees (3-link arms)")
    p.add_argument(
        "--speed",
        metavar="MM_S",
        default=str(motion.DEFAULT_SPEED_M_S * 1000),
        help=f"tool speed along the line, mm/s (default {motion.DEFAULT_SPEED_M_S * 1000:g})",
    )
    p.set_defaults(func=cmd_jog)
    p = sub.add_parser(
        "run",
        parents=parents + [common],
        epilog=EPILOG,
        formatter_class=fmt,
        help="run a YAML program on the arm",
        description="Check and plan a program, then ramp from the current pose to its start and play it on the board.",
    )
    p.add_argument("program", metavar="PROGRAM.yaml")
    p.add_argument("--dry-run", action="store_true", help="check and plan everything, open no port")
    p.set_defaults(func=cmd_run)
    p = sub.add_parser(
        "home",
        parents=parents + [common],
        epilog=EPILOG,
        formatter_class=fmt,
        help="move slowly to the arm's home pose",
    )
    p.set_defaults(func=cmd_home)
    p = sub.add_parser(
        "status",
        parents=parents + [common],
        epilog=EPILOG,
        formatter_class=fmt,
        help="show the board and the pose it holds",
    )
    p.set_defaults(func=cmd_status)


# --- setup ---------------------------------------------------------------------------------------------------


def _setup(args, program_arm: str | None = None) -> tuple[Arm, Calibration, Path]:
    from . import choose_arm

    return load_arm_and_calibration(choose_arm(args, program_arm), args.calibration)


def _backend(args, arm: Arm, cal: Calibration, cal_path: Path):
    return open_backend(args.port, args.backend, arm, cal, cal_path, wire_log=args.wire_log, watchdog_s=args.watchdog)


def _progress(args) -> Progress:
    return Progress(enabled=sys.stderr.isatty() and not args.json)


def _print(args, report: dict, headline: str) -> None:
    if args.json:
        print(json.dumps(report, indent=1))
        return
    print(headline)
    if report.get("tool_m") is not None:
        x, y = report["tool_m"]
        print(f"tool at x={x:.4f} m y={y:.4f} m (from {report['measured']})")
        print("joints " + " ".join(f"{v:.2f}" for v in report["q_deg"]) + " deg")
    else:
        print(f"pose: {report['measured']}")


def _stream(args, arm, cal, cal_path, plan_after_connect) -> dict:
    backend, bcal, port = _backend(args, arm, cal, cal_path)
    with backend:
        streamer = Streamer(backend, arm, bcal, progress=_progress(args), port_key=port)
        traj = plan_after_connect(streamer)
        pulses = prepare(traj, bcal)  # checks every pulse before anything moves
        t0 = time.monotonic()
        result = streamer.play(traj, pulses)
        wall = time.monotonic() - t0
        report = pose_report(backend, arm, bcal, settle=True)
        planned = fk(arm.links_m, traj.q_rad[-1])
        report.update(
            {
                "planned_tool_m": [float(v) for v in planned],
                "duration_s": float(traj.duration_s),
                "frames": result.frames,
                "commands": result.commands,
                "ramp_frames": result.ramp_frames,
                "wall_s": wall,
                "port": port,
                "backend": backend.name,
            }
        )
        if report["tool_m"] is not None:
            report["error_m"] = float(np.hypot(*(np.array(report["tool_m"]) - planned)))
        return report


# --- commands ------------------------------------------------------------------------------------------------


def cmd_jog(args) -> int:
    arm, cal, cal_path = _setup(args)
    target = np.array([parse_length(args.x, what="X"), parse_length(args.y, what="Y")])
    phi = None if args.phi is None else math.radians(parse_float(args.phi, what="--phi"))
    speed = parse_float(args.speed, what="--speed") / 1000.0
    if speed <= 0:
        raise BadInputError(f"--speed: must be > 0 mm/s, got {args.speed}")
    if phi is not None and arm.n != 3:
        raise BadInputError("--phi needs a 3-link arm")
    motion.solve_pose(arm, target, phi, arm.home_rad)  # unreachable targets fail before any port is opened

    report = _stream(args, arm, cal, cal_path, lambda streamer: streamer.plan_from_here([jog_move(target, phi, speed)]))
    _print(args, report, f"jogged to ({target[0]:g}, {target[1]:g}) m in {report['duration_s']:.2f} s")
    return 0


def cmd_home(args) -> int:
    arm, cal, cal_path = _setup(args)

    report = _stream(args, arm, cal, cal_path, lambda streamer: streamer.plan_from_here([home_move(arm)]))
    _print(args, report, f"home in {report['duration_s']:.2f} s")
    return 0


def cmd_run(args) -> int:
    from ..program import load_program, plan_program

    prog = load_program(args.program)
    arm, cal, cal_path = _setup(args, prog.arm_ref)
    plan = plan_program(prog, arm)
    traj = plan.trajectory
    cal_for_check = cal
    prepare(traj, cal_for_check)  # every pulse checked before a port is opened
    if args.dry_run:
        end = fk(arm.links_m, traj.q_rad[-1])
        report = {
            "dry_run": True,
            "duration_s": float(traj.duration_s),
            "samples": len(traj),
            "steps": len(traj.steps),
            "planned_tool_m": [float(v) for v in end],
            "tool_m": [float(v) for v in end],
            "q_deg": [math.degrees(v) for v in traj.q_rad[-1]],
        }
        if args.json:
            print(json.dumps(report, indent=1))
        else:
            print(
                f"{args.program}: OK, {len(traj.steps)} steps, {traj.duration_s:.2f} s, every pulse within the "
                f"calibrated range (dry run: no port opened)"
            )
        return 0
    report = _stream(args, arm, cal, cal_path, lambda streamer: traj)
    _print(args, report, f"ran {args.program}: {len(traj.steps)} steps, {report['duration_s']:.2f} s")
    return 0


def cmd_status(args) -> int:
    arm, cal, cal_path = _setup(args)
    backend, bcal, port = _backend(args, arm, cal, cal_path)
    with backend:
        st = backend.status()
        report = pose_report(backend, arm, bcal, settle=False)
        info = backend.info
        report.update(
            {
                "port": port,
                "backend": backend.name,
                "firmware": info.firmware,
                "protocol": info.protocol,
                "channels": info.channels,
                "depth": info.depth,
                "widths_us": list(st.widths_us),
                "counters": st.counters,
                "frame": st.frame,
            }
        )
    headline = (
        f"{info.firmware} (protocol {info.protocol}) on {port}: {info.channels} channels, "
        f"pulses {' '.join('-' if w is None else f'{w:g}' for w in st.widths_us)} us"
    )
    _print(args, report, headline)
    return 0
