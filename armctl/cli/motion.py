"""``armctl plan`` and ``armctl plot``: plan a pick-and-place program, print or draw it.

Both check the whole program first; on any error they print one line and
write nothing (no table, no CSV, no picture). ``--json`` and ``--csv`` are
written in bulk (``armctl.core.numtext``), CHUNK samples at a time: the same bytes
as ``json.dump`` and ``csv.writer`` wrote value by value.
"""

from __future__ import annotations

import csv
import io
import json
import math
from pathlib import Path

import numpy as np

from armctl.cli import add_command
from armctl.cli.common import binary_stdout
from armctl.cli.draw import add_drawing_options
from armctl.core.units import parse_mass
from armctl.errors import BadInputError
from armctl.model.kinematics import tool_point

CHUNK = 1 << 16  # samples formatted at a time

PLAN_EPILOG = """\
units: time in s, joint and gripper angles in deg, tool x/y (x/y/z on a base arm) in m, speeds in deg/s.
examples:
  armctl plan examples/pick_and_place.yaml                # table + summary
  armctl plan examples/pick_and_place.yaml --summary      # summary only
  armctl plan examples/pick_and_place.yaml --json > plan.json
  armctl --arm seed-2link plan examples/pick_and_place_2link.yaml --csv plan.csv
program format: docs/programs.md"""

PLOT_EPILOG = """\
draws the workspace and the path (m), the arm at several poses, and each joint's speed (deg/s)
against its limit. Needs matplotlib: pip install -e '.[plot]'
example:
  armctl plot examples/pick_and_place.yaml -o pick.png"""


PLAN_DESCRIPTION = (
    "Check a pick-and-place program (YAML) whole on the arm and plan it, then print the\n"
    "timed joint trajectory sampled every period (default 20 ms): time, joint angles, gripper,\n"
    "tool x/y, and a summary (duration, segments, peak joint speeds vs limits, worst path deviation).\n"
    "On any error: one line naming file, line and step, exit 2 (format) or 3 (motion), no output."
)


PLOT_DESCRIPTION = "Plan a program (as 'armctl plan' does, checked whole) and draw it to a PNG or SVG file."


def register(subparsers, parents) -> None:
    p = add_command(subparsers, "plan", parents=parents, description=PLAN_DESCRIPTION, epilog=PLAN_EPILOG)
    p.add_argument("program", metavar="PROGRAM.yaml", help="the program file (or a drawing: .svg, .gcode)")
    out = p.add_mutually_exclusive_group()
    out.add_argument(
        "--json",
        action="store_true",
        help="print JSON: {samples: [{t_s, q_deg, gripper_deg, tool_m, step}], steps, summary}",
    )
    out.add_argument(
        "--csv", metavar="FILE", help="write the samples as CSV to FILE (- for stdout) and print the summary"
    )
    out.add_argument("--summary", action="store_true", help="print only the summary")
    p.add_argument("--blend", metavar="MM", help="pass corners within MM mm (as 'armctl run --blend')")
    add_drawing_options(p)
    p.set_defaults(func=cmd_plan)

    q = add_command(subparsers, "plot", parents=parents, description=PLOT_DESCRIPTION, epilog=PLOT_EPILOG)
    q.add_argument("program", metavar="PROGRAM.yaml", help="the program file (or a drawing: .svg, .gcode)")
    q.add_argument("-o", "--output", metavar="FILE.png|svg", required=True, help="picture to write (.png or .svg)")
    q.add_argument("--poses", type=int, default=6, metavar="N", help="how many arm poses to draw (default 6)")
    q.add_argument("--blend", metavar="MM", help="pass corners within MM mm (as 'armctl run --blend')")
    q.add_argument(
        "--payload",
        metavar="MASS",
        help="a part in the jaws (50g) for the side view's shading of where a servo cannot hold the arm (default: "
        "the arm file's payload_g)",
    )
    add_drawing_options(q)
    q.set_defaults(func=cmd_plot)


def _plan(args):
    from armctl.cli import choose_arm
    from armctl.model.arm import load_arm
    from armctl.program import load_program, plan_program, with_blend
    from armctl.program.draw import is_drawing

    if is_drawing(args.program):  # armctl draw's plan, shown before drawing
        from armctl.cli.draw import plan_from_args

        return plan_from_args(args, load_arm(choose_arm(args))).plan
    _no_drawing_options(args)
    prog = with_blend(load_program(args.program), getattr(args, "blend", None))
    return plan_program(prog, load_arm(choose_arm(args, prog.arm_ref)))


def _no_drawing_options(args) -> None:
    given = [o for o in ("plane", "fit", "pen_up", "pen", "speed", "tolerance") if getattr(args, o, None) is not None]
    if given:
        raise BadInputError(f"--{given[0].replace('_', '-')} places a drawing (.svg, .gcode), not a program")


def _tool(arm, q):
    return tool_point(arm, q)


def samples_table(plan, *, rows: bool = True) -> tuple[list[str], list[list]]:
    """Header and rows (``rows``: else no rows) of the sampled trajectory (s, deg, m)."""
    arm, tr = plan.arm, plan.trajectory
    header = ["t_s", *(f"{n}_deg" for n in arm.joint_names)]
    if arm.gripper is not None:
        header.append("gripper_deg")
    header += [f"{w}_m" for w in arm.point_words] + ["step"]
    if not rows:
        return header, []
    tool = _tool(arm, tr.q_rad)
    qd = np.degrees(tr.q_rad)
    gd = np.degrees(tr.gripper_rad)
    rows = []
    for i in range(len(tr)):
        row = [round(float(tr.t_s[i]), 6), *(round(float(v), 4) for v in qd[i])]
        if arm.gripper is not None:
            row.append(round(float(gd[i]), 4))
        row += [round(float(v), 6) for v in tool[i]] + [int(tr.step[i]) + 1]
        rows.append(row)
    return header, rows


def plan_json(plan, program: str) -> dict:
    """The plan as a JSON-ready dict: samples, steps, points and summary."""
    arm, tr = plan.arm, plan.trajectory
    tool = _tool(arm, tr.q_rad)
    qd = np.degrees(tr.q_rad)
    samples = []
    for i in range(len(tr)):
        s = {
            "t_s": round(float(tr.t_s[i]), 6),
            "q_deg": [round(float(v), 6) for v in qd[i]],
            "tool_m": [round(float(v), 7) for v in tool[i]],
            "step": int(tr.step[i]) + 1,
        }
        if arm.gripper is not None:
            s["gripper_deg"] = round(math.degrees(float(tr.gripper_rad[i])), 6)
        samples.append(s)
    return {
        "program": program,
        "arm": arm.name,
        "period_s": tr.period_s,
        "joint_names": list(arm.joint_names),
        "steps": list(tr.steps),
        "samples": samples,
        "points_m": [[round(float(v), 7) for v in p] for p in tr.points_m],
        "summary": plan.summary(),
    }


def _json_floats(x, decimals: int):
    """What json.dumps writes for round(v, decimals) of each value (NaN, Infinity for non-finite)."""
    from armctl.core import numtext as nt

    x = np.asarray(x, dtype=float)
    f = nt.round_repr(x, decimals)
    bad = np.flatnonzero(~np.isfinite(x))
    return f.patched(bad, [json.dumps(float(v)) for v in x[bad]]) if bad.size else f


def write_plan_json(plan, program: str, out) -> None:
    """``plan_json(plan, program)`` as compact JSON and a newline, written to the binary ``out`` in
    chunks: byte for byte what ``json.dump(..., separators=(",", ":"))`` writes."""
    from armctl.core import numtext as nt

    arm, tr = plan.arm, plan.trajectory
    head = {
        "program": program,
        "arm": arm.name,
        "period_s": tr.period_s,
        "joint_names": list(arm.joint_names),
        "steps": list(tr.steps),
    }
    out.write(json.dumps(head, separators=(",", ":"))[:-1].encode("ascii") + b',"samples":[')
    grip = arm.gripper is not None
    for i in range(0, len(tr), CHUNK):
        j = min(i + CHUNK, len(tr))
        k = j - i
        q = tr.q_rad[i:j]
        tool = _tool(arm, q)
        qd = np.degrees(q)
        fields = [nt.literal('{"t_s":', k), _json_floats(tr.t_s[i:j], 6), nt.literal(',"q_deg":[', k)]
        for c in range(qd.shape[1]):
            fields += [nt.literal(",", k)] if c else []
            fields.append(_json_floats(qd[:, c], 6))
        fields += [nt.literal('],"tool_m":[', k), _json_floats(tool[:, 0], 7)]
        for c in range(1, tool.shape[1]):
            fields += [nt.literal(",", k), _json_floats(tool[:, c], 7)]
        fields += [
            nt.literal('],"step":', k),
            nt.ints(tr.step[i:j] + 1),
        ]
        if grip:
            fields += [nt.literal(',"gripper_deg":', k), _json_floats(np.degrees(tr.gripper_rad[i:j]), 6)]
        fields.append(nt.literal("},", k))
        text = nt.join(fields)
        out.write(text[:-1] if j == len(tr) else text)
    out.write(b'],"points_m":[')
    pts = np.asarray(tr.points_m, dtype=float).reshape(-1, arm.dim)
    for i in range(0, len(pts), CHUNK):
        p = pts[i : i + CHUNK]
        k = len(p)
        parts = [nt.literal("[", k), _json_floats(p[:, 0], 7)]
        for c in range(1, arm.dim):
            parts += [nt.literal(",", k), _json_floats(p[:, c], 7)]
        text = nt.join([*parts, nt.literal("],", k)])
        out.write(text[:-1] if i + CHUNK >= len(pts) else text)
    out.write(b'],"summary":' + json.dumps(plan.summary(), separators=(",", ":")).encode("ascii") + b"}\n")


def write_samples_csv(plan, out) -> int:
    """``samples_table(plan)`` as CSV (header, then one line a sample) to the binary ``out``, in
    chunks: byte for byte what ``csv.writer(lineterminator="\\n")`` writes. Returns the sample count."""
    from armctl.core import numtext as nt

    arm, tr = plan.arm, plan.trajectory
    header, _ = samples_table(plan, rows=False)
    buf = io.StringIO()
    csv.writer(buf, lineterminator="\n").writerow(header)  # names may need quoting
    out.write(buf.getvalue().encode("utf-8"))
    for i in range(0, len(tr), CHUNK):
        j = min(i + CHUNK, len(tr))
        k = j - i
        q = tr.q_rad[i:j]
        tool = _tool(arm, q)
        qd = np.degrees(q)
        comma = nt.literal(",", k)
        fields = [nt.round_repr(tr.t_s[i:j], 6)]
        for c in range(qd.shape[1]):
            fields += [comma, nt.round_repr(qd[:, c], 4)]
        if arm.gripper is not None:
            fields += [comma, nt.round_repr(np.degrees(tr.gripper_rad[i:j]), 4)]
        for c in range(tool.shape[1]):
            fields += [comma, nt.round_repr(tool[:, c], 6)]
        fields.append(comma)
        fields += [nt.ints(tr.step[i:j] + 1), nt.literal("\n", k)]
        out.write(nt.join(fields))
    return len(tr)


def summary_lines(plan) -> list[str]:
    """The human summary: duration, segments, peak joint speeds vs limits, path deviation."""
    s = plan.summary()
    lines = [
        f"duration {s['duration_s']:.2f} s, {len(plan.moves)} moves, {s['segments']} segments, "
        f"{s['samples']} samples every {1000 * s['period_s']:.0f} ms"
    ]
    for name, peak, lim in zip(
        s["joint_names"], s["peak_joint_speed_deg_s"], s["joint_speed_limit_deg_s"], strict=True
    ):
        lines.append(f"  {name:<10} peak {peak:7.1f} deg/s of {lim:.0f} deg/s ({100 * peak / lim:3.0f}%)")
    if "peak_gripper_speed_deg_s" in s:
        lines.append(
            f"  {'gripper':<10} peak {s['peak_gripper_speed_deg_s']:7.1f} deg/s of "
            f"{s['gripper_speed_limit_deg_s']:.0f} deg/s"
        )
    lines.append(f"worst path deviation from the straight lines {1000 * s['max_path_deviation_m']:.4f} mm")
    if s["slowed_by_joint_limits"]:
        lines.append(
            f"slowed down by joint speed limits in {len(s['slowed_by_joint_limits'])} move(s): "
            + "; ".join(s["slowed_by_joint_limits"][:3])
            + ("; ..." if len(s["slowed_by_joint_limits"]) > 3 else "")
        )
    if plan.torque is not None:
        lines.append(plan.torque.line())  # the most a servo is asked (armctl.motion.torque), or why not checked
    return lines


def cmd_plan(args) -> int:
    plan = _plan(args)  # everything is checked before anything is printed or written
    if args.json:
        out = binary_stdout()
        write_plan_json(plan, args.program, out)
        out.flush()
        return 0
    if args.csv:
        if args.csv == "-":
            out = binary_stdout()
            write_samples_csv(plan, out)
            out.flush()
            return 0
        tmp = io.BytesIO() if len(plan.trajectory) <= CHUNK else None
        try:
            if tmp is not None:  # small: one write, as before
                count = write_samples_csv(plan, tmp)
                Path(args.csv).write_bytes(tmp.getvalue())
            else:
                with open(args.csv, "wb") as fh:
                    count = write_samples_csv(plan, fh)
        except OSError as exc:
            raise BadInputError(f"cannot write {args.csv}: {exc.strerror or exc}") from None
        print(f"wrote {count} samples to {args.csv}")
    elif not args.summary:
        header, rows = samples_table(plan)
        widths = [max(len(h), 9) for h in header]
        print("  ".join(h.rjust(w) for h, w in zip(header, widths, strict=True)))
        for row in rows:
            d = plan.arm.dim
            cells = [
                f"{row[0]:.3f}",
                *(f"{v:.3f}" for v in row[1 : -1 - d]),
                *(f"{v:.4f}" for v in row[-1 - d : -1]),
                str(row[-1]),
            ]
            print("  ".join(c.rjust(w) for c, w in zip(cells, widths, strict=True)))
        print()
    print("\n".join(summary_lines(plan)))
    return 0


def cmd_plot(args) -> int:
    from armctl.motion.plot import plot_plan, require_matplotlib

    suffix = Path(args.output).suffix.lower()
    if suffix not in (".png", ".svg"):
        raise BadInputError(f"--output must end in .png or .svg, got {args.output!r}")
    if args.poses < 1:
        raise BadInputError(f"--poses must be >= 1, got {args.poses}")
    payload = None if args.payload is None else parse_mass(args.payload, what="--payload")
    require_matplotlib()
    plan = _plan(args)
    title = f"{Path(args.program).name} on {plan.arm.name}"
    plot_plan(plan, args.output, title=title, poses=args.poses, payload_kg=payload)
    print(f"wrote {args.output}")
    return 0
