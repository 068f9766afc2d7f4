"""CLI commands that only compute: ``ik``, ``fk`` and ``workspace``."""

from __future__ import annotations

import math
import sys

import numpy as np

from armctl.cli import add_command
from armctl.cli.common import binary_stdout, orientation_args, orientation_options, target_args, tool_orientation
from armctl.core.units import parse_float, parse_mass
from armctl.errors import BadInputError, JointLimitError, UnreachableError
from armctl.model.arm import Arm, load_arm

IK_EPILOG = """\
units: X, Y (and Z) in metres, or with a unit (500mm, 50cm, 0.5m); angles in degrees.
Arms on a rotating base (mearm, eezybot-mk2, braccio, so101) take X Y Z: x, y on the table from the base, z up.
examples:
  armctl ik 0.5 0.4                      # seed-3link, damped least squares from home
  armctl ik 500mm 400mm --phi 30 --json  # 3-link arm with the tool at 30 deg
  armctl --arm seed-2link ik 0.5 0.4 --method analytic --from 45 -90
  armctl --arm mearm ik 150mm 40mm 20mm  # base, shoulder, elbow angles
  printf '0.5,0.4\\n0.6,0.1,20\\n' | armctl ik --targets -
  printf '150mm,40mm,20mm\\n0.1,0.1,0.05\\n' | armctl --arm mearm ik --targets -   # x,y,z on a base
  armctl --arm so101 ik 0.2 0.05 0.05 --phi -60 --roll 45   # an arm with a wrist roll: the jaws turned 45 deg
  armctl --arm so101 ik 0.2 0.05 0.02 --down --yaw 35       # jaws straight down, closing along yaw 35 deg
exit codes: 0 reached, 2 bad input, 3 unreachable or outside the joint limits"""


IK_DESCRIPTION = "Solve joint angles that put the tool point on X Y (X Y Z on an arm with a rotating base)."


FK_DESCRIPTION = (
    "Where the tool is for the joint angles Q1 Q2 [Q3] (degrees); QBASE Q1 Q2 [Q3] on an arm "
    "with a rotating base (base first); QBASE Q1 Q2 Q3 QROLL on an arm with a wrist roll (the roll last)."
)


WORKSPACE_DESCRIPTION = (
    "Show the arm: links (m), reach annulus (m), joint limits (deg), "
    "joint speed limits (deg/s) and acceleration limits (deg/s^2), home pose."
)


def register(sub, parents) -> None:
    p = add_command(sub, "ik", parents=parents, description=IK_DESCRIPTION, epilog=IK_EPILOG)
    p.add_argument("x", nargs="?", metavar="X", help="target x (m, or with a unit: 500mm)")
    p.add_argument("y", nargs="?", metavar="Y", help="target y (m, or with a unit)")
    p.add_argument("z", nargs="?", metavar="Z", help="target z, height (m, or with a unit): arms on a base only")
    p.add_argument(
        "--phi",
        metavar="DEG",
        help="tool angle in degrees (3-link arms): from the x axis; on a base, the pitch from the horizontal",
    )
    orientation_options(p)
    p.add_argument(
        "--method",
        default="dls",
        choices=["dls", "analytic", "newton", "broyden"],
        help="solver (default dls: damped least squares with adaptive damping)",
    )
    p.add_argument("--from", dest="q_from", nargs="+", metavar="Q", help="start pose in degrees (default: home)")
    p.add_argument(
        "--targets",
        metavar="FILE.csv",
        help="solve many targets: one 'x,y[,phi_deg]' a line (an arm on a base: 'x,y,z[,phi_deg]'; with a wrist "
        "roll: 'x,y,z[,phi_deg[,roll_deg]]', or the columns a header names), - for stdin",
    )
    p.add_argument("--json", action="store_true", help="print JSON instead of text")
    p.set_defaults(func=cmd_ik)

    p = add_command(
        sub,
        "fk",
        parents=parents,
        description=FK_DESCRIPTION,
        epilog="example:\n  armctl fk 45 -90 -45\n  armctl --arm seed-2link fk 0 90 --json\n"
        "  armctl --arm mearm fk 20 90 0       # base, shoulder, forearm (from the horizontal)\n"
        "exit codes: 0 ok, 2 bad input, 3 outside the joint limits",
    )
    p.add_argument("q", nargs="+", metavar="Q", help="joint angle in degrees, one per joint")
    p.add_argument(
        "--payload",
        metavar="MASS",
        help="a part in the jaws (50g, 0.05kg): the holding torques and each servo's margin count it (default: the "
        "arm file's payload_g)",
    )
    p.add_argument("--json", action="store_true", help="print JSON instead of text")
    p.set_defaults(func=cmd_fk)

    p = add_command(
        sub,
        "workspace",
        parents=parents,
        description=WORKSPACE_DESCRIPTION,
        epilog="example:\n  armctl --arm seed-2link workspace --json\n"
        "  armctl --arm braccio workspace --payload 50g   # where each servo can hold the arm with a 50 g part",
    )
    p.add_argument(
        "--payload",
        metavar="MASS",
        help="a part in the jaws (50g, 0.05kg) for where each servo can hold the arm (default: the arm file's "
        "payload_g)",
    )
    p.add_argument("--json", action="store_true", help="print JSON instead of text")
    p.set_defaults(func=cmd_workspace)


def _angles(values, arm: Arm, what: str) -> np.ndarray:
    if len(values) != arm.n:
        order = " (base first)" if arm.has_base else ""
        if arm.roll is not None:
            order = " (base first, the wrist roll last)"
        raise BadInputError(f"{what}: arm '{arm.name}' has {arm.n} joints{order}, got {len(values)} angles")
    return np.radians([parse_float(v, what=f"{what} angle {i + 1}") for i, v in enumerate(values)])


def _deg(q) -> list[float]:
    return [round(float(v), 6) for v in np.degrees(q)]


def _result_dict(res, target, phi) -> dict:
    d = {
        "ok": bool(res.ok),
        "target_m": [float(v) for v in target],
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
    from armctl.ik import redundancy, solve

    arm = load_arm(args.arm)
    if args.targets is not None:
        if args.x is not None:
            raise BadInputError("give either X Y or --targets FILE, not both")
        return _ik_batch(args, arm)
    target = target_args(args, arm, "armctl ik 0.5 0.4")
    phi = None if args.phi is None else math.radians(parse_float(args.phi, what="--phi"))
    q0 = None if args.q_from is None else _angles(args.q_from, arm, "--from")
    phi, roll, yaw = orientation_args(args, arm, target, phi, q0)
    if phi is not None and arm.n_links != 3:
        raise BadInputError(f"--phi needs a 3-link arm; '{arm.name}' has {arm.n_links} links")
    criterion, shown_phi = None, phi
    if arm.n_links == 3:
        criterion = redundancy.CRITERION_PHI if phi is not None else redundancy.CRITERION_NEAREST
    if phi is None and arm.n_links == 3 and q0 is None and args.method == "dls":
        # redundant: the tool angle whose pose sits furthest inside the limits and from singularity (at the roll)
        best = redundancy.best_free_pose(arm, target, roll=_search_roll(arm, roll))
        if best is not None:
            criterion, shown_phi = redundancy.CRITERION_BEST, best[1]
            res = solve(arm, target, phi=best[1], q0=best[0], method=args.method, roll=roll)
    if criterion != redundancy.CRITERION_BEST:
        res = solve(arm, target, phi=phi, q0=q0, method=args.method, roll=roll)
    q = ", ".join(f"{v:.3f}" for v in np.degrees(res.q))
    if args.json:
        d = _result_dict(res, target, shown_phi)
        if criterion is not None:
            d["criterion"] = criterion
        d.update(tool_orientation(arm, res.q))
        if yaw is not None:
            d["yaw_deg"] = round(math.degrees(yaw), 6)
        print(_json(d))
    elif res.ok:
        how = (
            f", tool angle {math.degrees(shown_phi):.2f} deg: {criterion}"
            if criterion == redundancy.CRITERION_BEST
            else ""
        )
        if yaw is not None:
            how += f"; roll {math.degrees(res.q[-1]):.3f} deg: the jaws along yaw {math.degrees(yaw):g} deg"
        print(f"q = [{q}] deg   ({res.method}, {res.iterations} iterations, error {res.error_m:.2e} m{how})")
    if res.ok:
        return 0
    where = "(" + ", ".join(f"{v:.4f}" for v in target) + ")"
    message = (
        f"target {where} m: {res.reason}; closest pose q = [{q}] deg leaves the tool {res.error_m * 1000:.1f} mm away"
    )
    if res.shortfall_m > 0:
        raise UnreachableError(message, target=target, shortfall_m=res.shortfall_m)
    raise JointLimitError(message)


def _search_roll(arm: Arm, roll: float | None) -> float | None:
    """The roll (rad) of a pose from home for ``roll`` (None: home's): its whole turn nearest home's roll."""
    if arm.roll is None:
        return None
    from armctl.ik.roll import roll_turn

    i = arm.roll_index
    home = float(np.clip(arm.home_rad[i], arm.q_min[i], arm.q_max[i]))
    return home if roll is None else roll_turn(arm, roll, home)


def _ik_batch(args, arm: Arm) -> int:
    from armctl.cli import ik_targets as it

    if args.phi is not None:
        last = f"'{','.join(arm.point_words)},phi_deg'"
        raise BadInputError(f"--phi does not apply to --targets: give each target's tool angle as {last}")
    for opt, what in (("roll", "--roll"), ("yaw", "--yaw"), ("down", "--down")):
        if getattr(args, opt):
            raise BadInputError(f"{what} does not apply to --targets: give each target's roll as a roll_deg column")
    roll_check = None
    if arm.roll is not None:
        from armctl.ik.roll import check_roll

        def roll_check(r: float) -> None:
            check_roll(arm, r)

    src = it.TargetSource(args.targets)
    lay = it.Layout.of(arm.dim, arm.roll is not None, arm.name)
    try:
        checked = it.check_all(src, arm.n_links, lay, roll_check)  # every line, before anything is written
    finally:
        src.close()
    try:
        q0 = None if args.q_from is None else _angles(args.q_from, arm, "--from")
        if checked.with_phi and arm.n_links != 3:
            raise BadInputError(
                f"{src.name}:{checked.first_phi_line}: phi_deg given but arm '{arm.name}' has {arm.n_links} links"
            )
        batch = args.method == "dls" and checked.with_phi in (0, checked.rows)
        out = binary_stdout()
        has_roll = arm.roll is not None
        out.write(b"[" if args.json else it.csv_header(arm.n, arm.dim, has_roll))
        failed, first = 0, True
        for chunk in checked.chunks():
            res = it.solve_chunk(arm, chunk, method=args.method, batch=batch, q0=q0)
            failed += int(np.count_nonzero(~res.ok))
            if args.json:
                out.write((b"" if first else b", ") + it.json_rows(chunk, res, args.method, has_roll))
            else:
                out.write(it.csv_rows(chunk, res, has_roll))
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


def cmd_fk(args) -> int:
    from armctl.model.kinematics import arm_manipulability, arm_points, tool_pitch, tool_point
    from armctl.model.workspace import check_joint_limits

    arm = load_arm(args.arm)
    q = _angles(args.q, arm, "fk")
    payload = _payload(args, arm)
    check_joint_limits(arm, q)
    from armctl.model.statics import gravity_torque

    torque = gravity_torque(arm, q, payload)
    tool = tool_point(arm, q)
    joints = arm_points(arm, q)
    w = float(arm_manipulability(arm, q))
    phi = math.degrees(float(tool_pitch(arm, q)))
    if args.json:
        d = {"q_deg": _deg(q), "tool_m": [float(v) for v in tool], "joints_m": joints.tolist(), "manipulability": w}
        if arm.n_links == 3:
            d["phi_deg"] = round(phi, 6)
        if arm.parallelogram:
            from armctl.model.kinematics import link_angle

            d["link_angle_deg"] = round(math.degrees(float(link_angle(arm, q))), 6)
        d.update(tool_orientation(arm, q))
        d.update(_holding_dict(arm, torque, payload))
        print(_json(d))
        return 0
    extra = f", tool angle {phi:.2f} deg" if arm.n_links == 3 else ""
    if arm.roll is not None:
        rpy = tool_orientation(arm, q)["tool_rpy_deg"]
        extra += f", roll {math.degrees(q[-1]):.2f} deg (tool rpy {', '.join(f'{v:.2f}' for v in rpy)} deg)"
    unit = f"m^{arm.dim}"
    print(f"tool at ({', '.join(f'{v:.4f}' for v in tool)}) m{extra}; manipulability {w:.4g} {unit}")
    chain = arm.chain_names
    elbows = joints[-arm.n_links : -1]  # the drawn points end with the shoulder, the elbows and the tool
    for i, p in enumerate(elbows):
        print(f"  joint {i + 2} ({chain[i + 1]}) at ({', '.join(f'{v:.4f}' for v in p)}) m")
    print("\n".join(_holding_lines(arm, torque, payload)))
    return 0


def _payload(args, arm: Arm) -> float:
    """``--payload`` (kg), else the arm file's ``payload_g``."""
    return arm.drive.payload_kg if args.payload is None else parse_mass(args.payload, what="--payload")


def _holding_dict(arm: Arm, torque, payload: float) -> dict:
    """fk --json's statics: the holding torques, each servo's margin, where the masses come from, the payload."""
    from armctl.model.holding import masses_word, torque_margin

    margin = torque_margin(arm, torque)
    return {
        "gravity_torque_nm": [round(float(v), 6) for v in torque],
        "torque_margin": [None if m is None else round(m, 4) for m in margin],
        "masses": masses_word(arm),
        "payload_kg": payload,
        "torque_use": arm.drive.torque_use,
    }


def _masses_said(arm: Arm) -> str:
    from armctl.model.holding import masses_word
    from armctl.model.statics import JAWS_G, PRINTED_LINK_G_PER_MM

    if masses_word(arm) == "urdf":
        return "masses from the URDF's <inertial>s"
    return (
        f"masses estimated from the arm file: servos from the servo table, links mass_g or {PRINTED_LINK_G_PER_MM:g} "
        f"g/mm, jaws {JAWS_G:g} g"
    )


def _holding_lines(arm: Arm, torque, payload: float) -> list[str]:
    """fk's text lines of the statics: per joint the holding torque, its servo and the margin."""
    from armctl.model.holding import NOTHING_NM, torque_margin
    from armctl.model.servos import KGCM_NM

    part = f"with a {payload * 1000:g} g part" if payload else "no part in the jaws"
    if not arm.has_base:
        return [f"holding torque: none ({arm.name} works in a horizontal plane: gravity asks nothing of its servos)"]
    lines = [f"holding torque (gravity, {part}; {_masses_said(arm)}):"]
    use = arm.drive.torque_use
    for i, (v, m) in enumerate(zip(torque, torque_margin(arm, torque), strict=True)):
        servo = arm.drive.servo(i)
        line = f"  {arm.joint_names[i]:<13} {v:+.3f} N m ({abs(v) / KGCM_NM:.2f} kg.cm)"
        if servo is not None:
            line += f"; {servo.says()}"
        if m is None:
            line += ": needs nothing" if abs(v) < NOTHING_NM else ""
        else:
            line += f": margin {m:.2f}" if m < 100 else ": margin > 100"
            line += "" if m * use >= 1.0 else f", beyond torque_use {use:g}: it cannot hold this"
        lines.append(line)
    return lines


def cmd_workspace(args) -> int:
    from armctl.model.holding import hold_map

    arm = load_arm(args.arm)
    held = hold_map(arm, _payload(args, arm))
    d = _workspace_dict(arm)
    d["holding"] = _hold_dict(arm, held)
    if args.json:
        print(_json(d))
        return 0
    _print_workspace(arm, d)
    print("\n".join(_hold_lines(arm, held)))
    return 0


def _hold_dict(arm: Arm, held) -> dict:
    """workspace --json's ``holding``: where each servo holds the arm over the sampled poses."""
    return {
        "payload_kg": held.payload_kg,
        "masses": "estimated" if held.estimated else "urdf",
        "torque_use": arm.drive.torque_use,
        "poses": len(held.q),
        "all_hold_share": round(held.share_all, 6),
        "joints": [
            {
                "name": j.name,
                "servo": None if j.servo is None else j.servo.model.key,
                "limit_nm": None if j.limit_nm is None else round(j.limit_nm, 6),
                "hold_share": round(j.share, 6),
                "worst_nm": round(j.worst_nm, 6),
                "worst_q_deg": _deg(j.worst_q),
            }
            for j in held.joints
        ],
    }


def _hold_lines(arm: Arm, held) -> list[str]:
    """workspace's text lines of where each servo holds the arm."""
    from armctl.model.holding import NOTHING_NM
    from armctl.model.servos import KGCM_NM

    part = f"a {held.payload_kg * 1000:g} g part" if held.payload_kg else "no part"
    if not arm.has_base:
        return [f"holding: {arm.name} works in a horizontal plane: gravity asks nothing of its servos, with {part}"]
    use = arm.drive.torque_use
    lines = [
        f"holding the arm with {part} ({_masses_said(arm)}), over {len(held.q)} poses inside the limits; "
        f"each servo may give torque_use {use:g} of its stall torque:"
    ]
    for j in held.joints:
        if j.servo is None:
            lines.append(f"  {j.name:<13} no servo named: not checked; worst {j.worst_nm:+.3f} N m")
            continue
        if abs(j.worst_nm) < NOTHING_NM:
            lines.append(f"  {j.name:<13} needs nothing against gravity ({j.servo.says()})")
            continue
        q = ", ".join(str(round(float(v))) for v in np.degrees(j.worst_q))
        lines.append(
            f"  {j.name:<13} holds in {100 * j.share:5.1f}% of poses (up to {j.limit_nm:.3f} N m; {j.servo.says()}); "
            f"worst {j.worst_nm:+.3f} N m ({abs(j.worst_nm) / KGCM_NM:.2f} kg.cm) at q = [{q}] deg"
        )
    lines.append(f"every servo holds the arm in {100 * held.share_all:.1f}% of the poses")
    return lines


def _workspace_dict(arm: Arm) -> dict:
    """What ``armctl workspace --json`` prints."""
    from armctl.model.kinematics import tool_point

    home_tool = tool_point(arm, arm.home_rad)
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
                "max_accel_deg_s2": round(math.degrees(arm.max_accel_rad_s2[i]), 6),
            }
            for i in range(arm.n)
        ],
        "home_deg": _deg(arm.home_rad),
        "home_tool_m": home_tool.tolist(),
    }
    if arm.layered:
        d["linkage"] = arm.linkage
        if arm.parallelogram:
            d["link_angle_deg"] = [round(math.degrees(v), 6) for v in arm.link_angle_rad]
        if arm.has_base:
            d["base_offset_m"] = arm.base_offset_m
            d["shoulder_height_m"] = arm.shoulder_height_m
    if arm.gripper is not None:
        d["gripper"] = {
            "open_deg": round(math.degrees(arm.gripper.open_rad), 6),
            "closed_deg": round(math.degrees(arm.gripper.closed_rad), 6),
        }
    if arm.zones:
        from armctl.model.zones import describe

        d["zones"] = describe(arm.zones)
        d["link_radius_mm"] = arm.zones.link_radius_m * 1000
    if arm.roll is not None:
        from armctl.model.hand import describe_roll

        d["roll"] = describe_roll(arm.roll)
    if arm.urdf_map is not None:
        from armctl.model.urdf.derive import describe

        d["urdf"] = describe(arm)
    return d


def _print_workspace(arm: Arm, d: dict) -> None:
    """``armctl workspace`` as text, from ``_workspace_dict``."""
    print(f"arm {arm.name} ({arm.source}): links {', '.join(f'{v:.3f}' for v in arm.links_m)} m")
    if arm.has_base:
        print(
            f"on a rotating base: shoulder {arm.base_offset_m:.3f} m ahead of the base axis, "
            f"{arm.shoulder_height_m:.3f} m above z = 0; targets X Y Z"
        )
        print(
            f"reach: {arm.reach_min:.3f} .. {arm.reach_max:.3f} m from the shoulder, in the vertical plane at the "
            "base angle (joint limits cut it further)"
        )
    else:
        print(
            f"reach annulus: {arm.reach_min:.3f} .. {arm.reach_max:.3f} m from the base (joint limits cut it further)"
        )
    if arm.parallelogram:
        lo, hi = (math.degrees(v) for v in arm.link_angle_rad)
        print(
            "parallelogram: joint 2 is the forearm's angle from the horizontal; "
            f"upper arm to forearm {lo:g} .. {hi:g} deg"
        )
    for j in d["joints"]:
        print(
            f"  {j['name']:<10} {j['min_deg']:8.1f} .. {j['max_deg']:7.1f} deg   max {j['max_speed_deg_s']:.0f} deg/s, "
            f"{j['max_accel_deg_s2']:.0f} deg/s^2"
        )
    print(
        f"home: q = [{', '.join(f'{v:.1f}' for v in d['home_deg'])}] deg, tool at "
        f"({', '.join(f'{v:.4f}' for v in d['home_tool_m'])}) m"
    )
    if arm.zones:
        names = "; ".join(z.name for z in arm.zones.zones)
        print(f"keep-out zones (links as capsules of radius {arm.zones.link_radius_m * 1000:g} mm): {names}")
    if arm.urdf_map is not None:
        from armctl.model.urdf.derive import describe_lines

        print("\n".join(describe_lines(arm)))  # the roll among them
    elif arm.roll is not None:
        from armctl.model.hand import roll_line

        print(roll_line(arm.roll))


def _json(d: dict) -> str:
    import json  # only for --json: 'armctl ik X Y' starts without it

    return json.dumps(d)
