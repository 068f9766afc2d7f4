"""CLI commands that only compute: ``ik``, ``fk`` and ``workspace``."""

from __future__ import annotations

import argparse
import json
import math
import sys

import numpy as np

from ..arm import Arm, load_arm
from ..errors import BadInputError, JointLimitError, UnreachableError
from ..units import parse_float, parse_length

IK_EPILOG = """\
units: X and Y in metres, or with a unit (500mm, 50cm, 0.5m); angles in degrees.
examples:
  armctl ik 0.5 0.4                      # seed-3link, damped least squares from home
  armctl ik 500mm 400mm --phi 30 --json  # 3-link arm with the tool at 30 deg
  armctl --arm seed-2link ik 0.5 0.4 --method analytic --from 45 -90
  printf '0.5,0.4\\n0.6,0.1,20\\n' | armctl ik --targets -
exit codes: 0 reached, 2 bad input, 3 unreachable or outside the joint limits"""


def register(sub, parents) -> None:
    p = sub.add_parser(
        "ik",
        parents=parents,
        help="joint angles for a tool point (inverse kinematics)",
        description="Solve joint angles that put the tool point on X Y.",
        epilog=IK_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("x", nargs="?", metavar="X", help="target x (m, or with a unit: 500mm)")
    p.add_argument("y", nargs="?", metavar="Y", help="target y (m, or with a unit)")
    p.add_argument("--phi", metavar="DEG", help="tool angle from the x axis in degrees (3-link arms)")
    p.add_argument(
        "--method",
        default="dls",
        choices=["dls", "analytic", "newton", "broyden"],
        help="solver (default dls: damped least squares with adaptive damping)",
    )
    p.add_argument("--from", dest="q_from", nargs="+", metavar="Q", help="start pose in degrees (default: home)")
    p.add_argument("--targets", metavar="FILE.csv", help="solve many targets: one 'x,y[,phi_deg]' a line, - for stdin")
    p.add_argument("--json", action="store_true", help="print JSON instead of text")
    p.set_defaults(func=cmd_ik)

    p = sub.add_parser(
        "fk",
        parents=parents,
        help="tool point for joint angles (forward kinematics)",
        description="Where the tool is for the joint angles Q1 Q2 [Q3] (degrees).",
        epilog="example:\n  armctl fk 45 -90 -45\n  armctl --arm seed-2link fk 0 90 --json\n"
        "exit codes: 0 ok, 2 bad input, 3 outside the joint limits",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("q", nargs="+", metavar="Q", help="joint angle in degrees, one per joint")
    p.add_argument("--json", action="store_true", help="print JSON instead of text")
    p.set_defaults(func=cmd_fk)

    p = sub.add_parser(
        "workspace",
        parents=parents,
        help="reach, joint limits and speeds of the arm",
        description="Show the arm: links (m), reach annulus (m), joint limits (deg), "
        "joint speed limits (deg/s), home pose.",
        epilog="example:\n  armctl --arm seed-2link workspace --json",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--json", action="store_true", help="print JSON instead of text")
    p.set_defaults(func=cmd_workspace)


def _angles(values, arm: Arm, what: str) -> np.ndarray:
    if len(values) != arm.n:
        raise BadInputError(f"{what}: arm '{arm.name}' has {arm.n} joints, got {len(values)} angles")
    return np.radians([parse_float(v, what=f"{what} angle {i + 1}") for i, v in enumerate(values)])


def _deg(q) -> list[float]:
    return [round(float(v), 6) for v in np.degrees(q)]


def _result_dict(res, target, phi) -> dict:
    d = {
        "ok": bool(res.ok),
        "target_m": [float(target[0]), float(target[1])],
        "q_deg": _deg(res.q),
        "error_m": float(res.error_m),
        "iterations": int(res.iterations),
        "fk_evals": int(res.fk_evals),
        "method": res.method,
    }
    if phi is not None:
        d["phi_deg"] = round(math.degrees(phi), 6)
    if not res.ok:
        d["reason"] = res.reason
        d["shortfall_m"] = float(res.shortfall_m)
    return d


def cmd_ik(args) -> int:
    from ..ik import solve

    arm = load_arm(args.arm)
    if args.targets is not None:
        if args.x is not None:
            raise BadInputError("give either X Y or --targets FILE, not both")
        return _ik_batch(args, arm)
    if args.x is None or args.y is None:
        raise BadInputError("missing target: give X Y (e.g. 'armctl ik 0.5 0.4') or --targets FILE.csv")
    target = (parse_length(args.x, what="X"), parse_length(args.y, what="Y"))
    phi = None if args.phi is None else math.radians(parse_float(args.phi, what="--phi"))
    q0 = None if args.q_from is None else _angles(args.q_from, arm, "--from")
    if phi is not None and arm.n != 3:
        raise BadInputError(f"--phi needs a 3-link arm; '{arm.name}' has {arm.n} links")
    res = solve(arm, target, phi=phi, q0=q0, method=args.method)
    q = ", ".join(f"{v:.3f}" for v in np.degrees(res.q))
    if args.json:
        print(json.dumps(_result_dict(res, target, phi)))
    elif res.ok:
        print(f"q = [{q}] deg   ({res.method}, {res.iterations} iterations, error {res.error_m:.2e} m)")
    if res.ok:
        return 0
    message = (
        f"target ({target[0]:.4f}, {target[1]:.4f}) m: {res.reason}; closest pose q = [{q}] deg "
        f"leaves the tool {res.error_m * 1000:.1f} mm away"
    )
    if res.shortfall_m > 0:
        raise UnreachableError(message, target=target, shortfall_m=res.shortfall_m)
    raise JointLimitError(message)


def _ik_batch(args, arm: Arm) -> int:
    from . import ik_targets as it

    if args.phi is not None:
        raise BadInputError("--phi does not apply to --targets: give each target's tool angle as 'x,y,phi_deg'")
    src = it.TargetSource(args.targets)
    try:
        checked = it.check_all(src, arm.n)  # every line, before anything is written
    finally:
        src.close()
    try:
        q0 = None if args.q_from is None else _angles(args.q_from, arm, "--from")
        if checked.with_phi and arm.n != 3:
            raise BadInputError(
                f"{src.name}:{checked.first_phi_line}: phi_deg given but arm '{arm.name}' has {arm.n} links"
            )
        batch = args.method == "dls" and checked.with_phi in (0, checked.rows)
        out = _binary_stdout()
        out.write(b"[" if args.json else it.csv_header(arm.n))
        failed, first = 0, True
        for chunk in checked.chunks():
            res = it.solve_chunk(arm, chunk, method=args.method, batch=batch, q0=q0)
            failed += int(np.count_nonzero(~res.ok))
            if args.json:
                out.write((b"" if first else b", ") + it.json_rows(chunk, res, args.method))
            else:
                out.write(it.csv_rows(chunk, res))
            first = False
        if args.json:
            out.write(b"]\n")
        out.flush()
    finally:
        checked.close()
    if failed:
        print(f"armctl ik: {failed} of {checked.rows} targets not reached (see ok=0 rows)", file=sys.stderr)
        return 3
    return 0


def _binary_stdout():
    """Standard output for bytes (after whatever was printed as text)."""
    sys.stdout.flush()
    buf = getattr(sys.stdout, "buffer", None)
    if buf is not None:
        return buf

    class _Text:  # a text-only stdout (tests, redirect_stdout): decode
        @staticmethod
        def write(b: bytes) -> None:
            sys.stdout.write(b.decode("ascii"))

        @staticmethod
        def flush() -> None:
            sys.stdout.flush()

    return _Text


def cmd_fk(args) -> int:
    from ..kinematics import fk, joint_positions, manipulability
    from ..workspace import check_joint_limits

    arm = load_arm(args.arm)
    q = _angles(args.q, arm, "fk")
    check_joint_limits(arm, q)
    tool = fk(arm.links_m, q)
    joints = joint_positions(arm.links_m, q)
    w = float(manipulability(arm.links_m, q))
    phi = math.degrees(float(np.sum(q)))
    if args.json:
        d = {"q_deg": _deg(q), "tool_m": [float(v) for v in tool], "joints_m": joints.tolist(), "manipulability": w}
        if arm.n == 3:
            d["phi_deg"] = round(phi, 6)
        print(json.dumps(d))
    else:
        extra = f", tool angle {phi:.2f} deg" if arm.n == 3 else ""
        print(f"tool at ({tool[0]:.4f}, {tool[1]:.4f}) m{extra}; manipulability {w:.4f} m^2")
        for i, (px, py) in enumerate(joints[1:-1]):
            print(f"  joint {i + 2} ({arm.joint_names[i + 1]}) at ({px:.4f}, {py:.4f}) m")
    return 0


def cmd_workspace(args) -> int:
    from ..kinematics import fk

    arm = load_arm(args.arm)
    home_tool = fk(arm.links_m, arm.home_rad)
    d = {
        "arm": arm.name,
        "source": arm.source,
        "links_m": arm.links_m.tolist(),
        "reach_min_m": arm.reach_min,
        "reach_max_m": arm.reach_max,
        "joints": [
            {
                "name": arm.joint_names[i],
                "min_deg": round(math.degrees(arm.q_min[i]), 6),
                "max_deg": round(math.degrees(arm.q_max[i]), 6),
                "max_speed_deg_s": round(math.degrees(arm.max_speed_rad_s[i]), 6),
            }
            for i in range(arm.n)
        ],
        "home_deg": _deg(arm.home_rad),
        "home_tool_m": home_tool.tolist(),
    }
    if arm.gripper is not None:
        d["gripper"] = {
            "open_deg": round(math.degrees(arm.gripper.open_rad), 6),
            "closed_deg": round(math.degrees(arm.gripper.closed_rad), 6),
        }
    if args.json:
        print(json.dumps(d))
        return 0
    print(f"arm {arm.name} ({arm.source}): links {', '.join(f'{v:.3f}' for v in arm.links_m)} m")
    print(f"reach annulus: {arm.reach_min:.3f} .. {arm.reach_max:.3f} m from the base (joint limits cut it further)")
    for j in d["joints"]:
        print(
            f"  {j['name']:<10} {j['min_deg']:8.1f} .. {j['max_deg']:7.1f} deg   max {j['max_speed_deg_s']:.0f} deg/s"
        )
    print(
        f"home: q = [{', '.join(f'{v:.1f}' for v in d['home_deg'])}] deg, tool at "
        f"({home_tool[0]:.4f}, {home_tool[1]:.4f}) m"
    )
    return 0
