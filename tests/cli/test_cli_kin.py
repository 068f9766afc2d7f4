"""The ik, fk and workspace commands as a user runs them: output, errors, exit codes."""

import io
import json
import math
import os
import re
import subprocess
import sys

import pytest

from armctl.cli import main


def run(capsys, *argv, stdin=None, monkeypatch=None):
    if stdin is not None:
        monkeypatch.setattr(sys, "stdin", io.StringIO(stdin))
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_ik_text_and_json(capsys):
    code, out, err = run(capsys, "ik", "0.5", "0.4")
    assert code == 0 and out.startswith("q = [") and err == ""
    code, out, _ = run(capsys, "ik", "500mm", "40cm", "--json")
    d = json.loads(out)
    assert code == 0 and d["ok"] and d["method"] == "dls" and len(d["q_deg"]) == 3
    assert d["error_m"] < 1e-6 and d["iterations"] >= 0 and "shortfall_m" not in d


def test_ik_each_method_and_start_pose(capsys):
    for method in ("analytic", "newton", "broyden", "dls"):
        code, out, _ = run(
            capsys, "--arm", "seed-2link", "ik", "0.5", "0.4", "--method", method, "--from", "45", "-90", "--json"
        )
        d = json.loads(out)
        assert code == 0 and d["method"] == method
        assert d["q_deg"] == pytest.approx([59.0991, -48.1897], abs=1e-3)


def test_ik_with_tool_angle(capsys):
    code, out, _ = run(capsys, "ik", "0.5", "0.4", "--phi", "30", "--json")
    d = json.loads(out)
    assert code == 0 and sum(d["q_deg"]) == pytest.approx(30.0) and d["phi_deg"] == 30.0


def test_unreachable_exit_3_with_shortfall(capsys):
    code, out, err = run(capsys, "ik", "1.2", "0", "--json")
    d = json.loads(out)
    assert code == 3 and not d["ok"] and d["shortfall_m"] == pytest.approx(0.30)
    assert err.count("\n") == 1 and "300.0 mm outside the reach" in err
    code, out, err = run(capsys, "ik", "1.2", "0")
    assert code == 3 and out == "" and "armctl ik: error: target (1.2000, 0.0000) m" in err


@pytest.mark.parametrize(
    "argv, fragment",
    [
        (["ik", "nan", "0.1"], "X: cannot read 'nan'"),
        (["ik", "0.5", "inf"], "Y: cannot read 'inf'"),
        (["ik", "1e308", "1e308"], "X: '1e308' is 1e+308 m, beyond any arm"),
        (["ik", "0.5", "1e400"], "Y: '1e400' is inf m, beyond any arm"),
        (["jog", "2km", "0"], "X: cannot read '2km'"),
        (["jog", "1001", "0"], "X: '1001' is 1e+03 m, beyond any arm"),
        (["ik", "0.5"], "missing target"),
        (["ik", "0.5", "0.4", "--method", "magic"], "invalid choice: 'magic'"),
        (["ik", "0.5", "0.4", "--from", "1", "2"], "--from: arm 'seed-3link' has 3 joints, got 2"),
        (["--arm", "seed-2link", "ik", "0.5", "0.4", "--phi", "10"], "--phi needs a 3-link arm"),
        (["ik", "0.5", "0.4", "--phi", "nan"], "--phi: 'nan' is not a finite number"),
        (["fk", "10", "20"], "has 3 joints, got 2 angles"),
        (["fk", "10", "x", "3"], "fk angle 2: 'x' is not a number"),
        (["--arm", "nope", "workspace"], "no arm preset or file named 'nope'"),
        (["ik", "0.5", "0.4", "--targets", "t.csv"], "either X Y or --targets"),
    ],
)
def test_bad_input_exit_2_one_line(capsys, argv, fragment):
    code, out, err = run(capsys, *argv)
    assert code == 2 and out == ""
    assert fragment in err and err.count("\n") == 1


def test_fk_outside_limits_exit_3(capsys):
    code, out, err = run(capsys, "fk", "0", "170", "0")
    assert code == 3 and out == "" and "joint 2 (elbow) at 170.00 deg is outside its limits" in err


def test_fk_json(capsys):
    code, out, _ = run(capsys, "--arm", "seed-2link", "fk", "0", "90", "--json")
    d = json.loads(out)
    assert code == 0 and d["tool_m"] == pytest.approx([0.4, 0.3])
    assert d["manipulability"] == pytest.approx(0.12) and len(d["joints_m"]) == 3


def test_workspace(capsys):
    code, out, _ = run(capsys, "--arm", "seed-2link", "workspace", "--json")
    d = json.loads(out)
    assert code == 0 and d["reach_max_m"] == pytest.approx(0.7) and d["reach_min_m"] == pytest.approx(0.1)
    assert [j["max_speed_deg_s"] for j in d["joints"]] == [120, 150]
    assert [j["max_accel_deg_s2"] for j in d["joints"]] == [1200, 1500]  # the default: full speed in 0.1 s
    code, out, _ = run(capsys, "workspace")
    assert code == 0 and "reach annulus" in out and "1800 deg/s^2" in out


def test_batch_targets_from_stdin_and_file(capsys, monkeypatch, tmp_path):
    code, out, err = run(capsys, "ik", "--targets", "-", stdin="x,y\n0.5,0.4\n0.6,0.1,20\n", monkeypatch=monkeypatch)
    lines = out.strip().splitlines()
    assert code == 0 and lines[0].startswith("x_m,y_m,ok,q1_deg") and len(lines) == 3
    row = lines[2].split(",")
    assert row[2] == "1" and sum(float(v) for v in row[3:6]) == pytest.approx(20.0, abs=1e-4)
    f = tmp_path / "t.csv"
    f.write_text("0.5,0.4\n2,0\n")
    code, out, err = run(capsys, "ik", "--targets", str(f), "--json")
    rows = json.loads(out)
    assert code == 3 and rows[0]["ok"] and not rows[1]["ok"] and rows[1]["shortfall_m"] == pytest.approx(1.1)
    assert "1 of 2 targets not reached" in err


def test_batch_bad_line_names_file_and_line(capsys, tmp_path):
    f = tmp_path / "t.csv"
    f.write_text("0.5,0.4\n\n0.5,abc\n")
    code, out, err = run(capsys, "ik", "--targets", str(f))
    assert code == 2 and out == "" and f"{f}:3: y: cannot read 'abc'" in err
    f.write_text("")
    code, out, err = run(capsys, "ik", "--targets", str(f))
    assert code == 2 and "no targets" in err
    code, out, err = run(capsys, "ik", "--targets", str(tmp_path / "missing.csv"))
    assert code == 2 and "cannot read" in err


def test_batch_targets_mistakes_are_one_line_with_the_line(capsys, monkeypatch, tmp_path):
    f = tmp_path / "t.csv"
    f.write_bytes(b"0.5,0.4\n\xff\xfe0.6,0.1\n")
    code, out, err = run(capsys, "ik", "--targets", str(f))
    assert code == 2 and out == "" and err.count("\n") == 1 and f"{f}: cannot read: not UTF-8" in err
    f.write_text("0.5,0.4\n# a comment\n0.6,0.1,20\n")
    code, out, err = run(capsys, "--arm", "seed-2link", "ik", "--targets", str(f))
    assert code == 2 and out == "" and f"{f}:3: phi_deg given but arm 'seed-2link' has 2 links" in err
    # --phi would be silently ignored for every target: refused instead
    code, out, err = run(capsys, "ik", "--targets", "-", "--phi", "20", stdin="0.5,0.4\n", monkeypatch=monkeypatch)
    assert code == 2 and out == "" and "--phi does not apply to --targets" in err


def test_help_for_every_command_explains_units():
    for cmd in ("ik", "fk", "workspace"):
        out = subprocess.run([sys.executable, "-m", "armctl", cmd, "--help"], capture_output=True, text=True)
        assert out.returncode == 0 and "example" in out.stdout


def test_console_script_runs():
    out = subprocess.run(["armctl", "ik", "0.5", "0.4", "--json"], capture_output=True, text=True)
    assert out.returncode == 0 and json.loads(out.stdout)["ok"]
    assert math.isfinite(json.loads(out.stdout)["error_m"])


def test_malformed_arm_yaml_exit_2_names_file_and_line(capsys, tmp_path):
    bad = tmp_path / "arm.yaml"
    bad.write_text("name: x\nlinks_m: [0.4, 0.3\njoints: []\n")
    code, out, err = run(capsys, "--arm", str(bad), "ik", "0.5", "0.4")
    assert code == 2 and out == "" and err.count("\n") == 1
    assert f"{bad}:" in err and "YAML syntax error" in err


# --- ik --targets in bulk: byte for byte what the line-by-line implementation wrote ---------------


def _reference_ik_targets(arm_name, text, *, method="dls", json_out=False, name="t.csv"):
    """The implementation before bulk I/O (read whole, parse and print line by line), kept as the
    reference: (exit code, stdout, stderr)."""
    import numpy as np

    from armctl.core.units import parse_float, parse_length
    from armctl.errors import BadInputError
    from armctl.ik import solve, solve_batch
    from armctl.model.arm import load_arm

    arm = load_arm(arm_name)
    d = arm.dim  # coordinates a line: x, y (planar) or x, y, z (on a base)
    form = "'x,y' or 'x,y,phi_deg'" if d == 2 else "'x,y,z' or 'x,y,z,phi_deg'"
    out, err = io.StringIO(), io.StringIO()
    try:
        rows, phis = [], []
        for lineno, line in enumerate(text.splitlines(), 1):
            t = line.split("#", 1)[0].strip()
            if not t:
                continue
            fields = [f.strip() for f in t.split(",")]
            if fields[0].lower() in ("x", "x_m"):
                continue
            if len(fields) not in (d, d + 1):
                raise BadInputError(f"{name}:{lineno}: expected {form}, found {line.strip()!r}")
            try:
                pt = tuple(parse_length(f, what=w) for f, w in zip(fields, "xyz"[:d]))
                phi = math.radians(parse_float(fields[d], what="phi_deg")) if len(fields) > d else None
            except BadInputError as exc:
                raise BadInputError(f"{name}:{lineno}: {exc}") from None
            rows.append(pt)
            phis.append(phi)
        if not rows:
            raise BadInputError(f"{name}: no targets (expected one {form} a line)")
        targets = np.array(rows)
        with_phi = [p is not None for p in phis]
        if method == "dls" and (all(with_phi) or not any(with_phi)):
            res = solve_batch(arm, targets, phi=np.array(phis, dtype=float) if any(with_phi) else None)
            results = [
                (bool(res.ok[i]), res.q[i], float(res.error_m[i]), float(res.shortfall_m[i]), res.reasons[i],
                 int(res.iterations[i]))
                for i in range(len(targets))
            ]  # fmt: skip
        else:
            results = []
            for t, p in zip(targets, phis):
                r = solve(arm, t, phi=p, method=method)
                results.append((r.ok, r.q, r.error_m, r.shortfall_m, r.reason, r.iterations))
        if json_out:
            objs = []
            for t, p, (ok, q, e, short, reason, its) in zip(targets, phis, results):
                d = {"ok": ok, "target_m": t.tolist(), "q_deg": [round(float(v), 6) for v in np.degrees(q)],
                     "error_m": f"@{e:.3e}@", "iterations": its, "method": method}  # fmt: skip
                if p is not None:
                    d["phi_deg"] = round(math.degrees(p), 6)
                if arm.roll is not None:  # (an arm with a wrist roll: its angle, the pose's last)
                    d["roll_deg"] = round(math.degrees(float(q[-1])), 6)
                if not ok:
                    d.update(reason=reason, shortfall_m=short)
                objs.append(d)
            print(re.sub(r'"@([^@]*)@"', r"\1", json.dumps(objs)), file=out)
        else:
            xyz = ",".join(f"{c}_m" for c in "xyz"[:d])
            roll = ",roll_deg" if arm.roll is not None else ""
            print(f"{xyz},ok,{','.join(f'q{i + 1}_deg' for i in range(arm.n))}{roll},error_m,shortfall_m", file=out)
            for t, (ok, q, e, short, _r, _i) in zip(targets, results):
                qs = ",".join(f"{v:.6f}" for v in np.degrees(q))
                qs += f",{math.degrees(q[-1]):.6f}" if arm.roll is not None else ""
                ts = ",".join(f"{v:.6f}" for v in t)
                print(f"{ts},{int(ok)},{qs},{e:.3e},{short:.6f}", file=out)
        failed = sum(1 for r in results if not r[0])
        if failed:
            print(f"armctl ik: {failed} of {len(results)} targets not reached (see ok=0 rows)", file=err)
            return 3, out.getvalue(), err.getvalue()
        return 0, out.getvalue(), ""
    except BadInputError as exc:
        return 2, "", f"armctl ik: error: {exc}\n"


def _mixed_targets(seed, count, *, phi=False):
    """Reachable, unreachable and limit-blocked targets in assorted spellings, with a header,
    comments, blank lines and units here and there."""
    import numpy as np

    from armctl.model.arm import load_arm
    from armctl.model.kinematics import fk

    arm = load_arm("seed-3link")
    rng = np.random.default_rng(seed)
    pts = fk(arm.links_m, rng.uniform(arm.q_min, arm.q_max, size=(count, 3)))
    pts[rng.random(count) < 0.1] *= 1.6  # out of reach
    blocked = [(-0.6, 0.1), (-0.55, -0.3), (-0.7, 0.2)]  # inside the reach, behind the shoulder
    lines = ["x_m,y_m" + (",phi_deg" if phi else "")]
    for i, (x, y) in enumerate(pts.tolist()):
        if i % 40 == 7:
            x, y = blocked[(i // 40) % 3]
        tail = f",{rng.uniform(-180, 180):.3f}" if phi else ""
        style = i % 23
        if style == 3:
            lines.append(f"{x * 1000:.3f}mm, {y * 100:.4f}cm{tail}")
        elif style == 5:
            lines.append(f"  {x:.9f} ,\t{y:.2e}{tail}   # note")
        elif style == 9:
            lines += ["", "# a comment line", "   "]
            lines.append(f"{x!r},{y!r}{tail}")
        elif style == 11:
            lines.append(f"{x:+.4f},{y:.0f}.{tail}")
        elif style == 13:
            lines.append(f"-0,{y:.6f}{tail}")
        else:
            lines.append(f"{x:.6f},{y:.6f}{tail}")
    return "\n".join(lines) + "\n"


def _same_as_reference(
    capsys, monkeypatch, tmp_path, text, *argv, arm="seed-3link", method="dls", crlf=False, rows=True
):
    f = tmp_path / "t.csv"
    f.write_bytes(text.replace("\n", "\r\n").encode() if crlf else text.encode())
    for json_out in (False, True):
        want = _reference_ik_targets(arm, text, method=method, json_out=json_out, name=str(f))
        if rows:  # a file meant to be solved: some rows reached, some not
            assert want[0] == 3 and want[1].count("true") + want[1].count(",1,") > 10, want[2]
        extra = ["--json"] if json_out else []
        got = run(capsys, "--arm", arm, "ik", "--targets", str(f), "--method", method, *argv, *extra)
        assert got == want


@pytest.fixture
def small_chunks(monkeypatch):
    """Blocks of 300 bytes and chunks of 7 rows: every boundary case on a small file."""
    from armctl.cli import ik_targets

    monkeypatch.setattr(ik_targets, "BLOCK_BYTES", 300)
    monkeypatch.setattr(ik_targets, "SOLVE_ROWS", 7)
    monkeypatch.setattr(ik_targets, "SPOOL_BYTES", 1000)


@pytest.mark.parametrize("chunked", [False, True])
def test_bulk_targets_byte_identical_to_line_by_line(capsys, monkeypatch, tmp_path, chunked, request):
    if chunked:
        request.getfixturevalue("small_chunks")
    _same_as_reference(capsys, monkeypatch, tmp_path, _mixed_targets(1, 300))


def test_bulk_targets_with_tool_angles_and_crlf(capsys, monkeypatch, tmp_path, small_chunks):
    _same_as_reference(capsys, monkeypatch, tmp_path, _mixed_targets(2, 120, phi=True), crlf=True)


def test_bulk_targets_mixed_angles_and_other_methods(capsys, monkeypatch, tmp_path, small_chunks):
    text = _mixed_targets(3, 60, phi=True)
    lines = text.splitlines()
    lines[5] = lines[5].rsplit(",", 1)[0]  # one row without a tool angle: row by row with solve()
    _same_as_reference(capsys, monkeypatch, tmp_path, "\n".join(lines))
    two = "\n".join(ln for ln in _mixed_targets(4, 60).splitlines() if "mm" not in ln)
    _same_as_reference(capsys, monkeypatch, tmp_path, two, arm="seed-2link", method="analytic")


def _base_targets(arm_name, seed, count, *, phi=False):
    """Targets for an arm on a base, in the spellings of ``_mixed_targets``: reachable ones (fk of random
    poses), some out of reach, some on the base axis."""
    import numpy as np

    from armctl.model.arm import load_arm
    from armctl.model.kinematics import tool_point

    arm = load_arm(arm_name)
    rng = np.random.default_rng(seed)
    lines = ["x_m,y_m,z_m" + (",phi_deg" if phi else "")]
    for i in range(count):
        x, y, z = tool_point(arm, rng.uniform(arm.q_min, arm.q_max)).tolist()
        if i % 10 == 3:
            x, y, z = 2 * x, 2 * y, z  # out of reach
        if i % 31 == 5:
            x, y = 0.0, 0.0  # on the base axis
        tail = f",{rng.uniform(-90, 90):.3f}" if phi else ""
        style = i % 7
        if style == 2:
            lines.append(f"{x * 1000:.3f}mm, {y * 100:.4f}cm, {z:.6f}m{tail}")
        elif style == 4:
            lines += ["", "# a comment", f"  {x!r} ,\t{y!r},{z!r}{tail}   # note"]
        else:
            lines.append(f"{x:.6f},{y:.6f},{z:.6f}{tail}")
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("arm", ["mearm", "eezybot-mk2", "braccio", "so101"])
def test_bulk_targets_on_a_base_arm_byte_identical_to_line_by_line(capsys, monkeypatch, tmp_path, small_chunks, arm):
    """x,y,z lines for an arm on a base, in bulk and in chunks: what the line-by-line reference writes."""
    _same_as_reference(capsys, monkeypatch, tmp_path, _base_targets(arm, 5, 90), arm=arm)


def test_bulk_targets_on_a_base_arm_with_tool_angles_and_mistakes(capsys, monkeypatch, tmp_path, small_chunks):
    _same_as_reference(capsys, monkeypatch, tmp_path, _base_targets("braccio", 6, 60, phi=True), arm="braccio")
    lines = _base_targets("braccio", 7, 40, phi=True).splitlines()
    lines[9] = lines[9].rsplit(",", 1)[0]  # one row without a tool angle: row by row with solve()
    _same_as_reference(capsys, monkeypatch, tmp_path, "\n".join(lines) + "\n", arm="braccio")
    for bad in ("0.1,0.1\n", "0.1,0.1,0.1,0.1,0.1\n", "0.1,0.1,nan\n", "0.1,0.1,0.05,20\n"):
        text = "0.1,0.1,0.05\n" * 40 + bad  # the last: a tool angle on the MeArm's 2-link chain
        f = tmp_path / "bad.csv"
        f.write_text(text)
        code, out, err = run(capsys, "--arm", "mearm", "ik", "--targets", str(f))
        assert (code, out) == (2, "") and err.startswith(f"armctl ik: error: {f}:41: "), err
        if bad != "0.1,0.1,0.05,20\n":
            assert err == _reference_ik_targets("mearm", text, name=str(f))[2]


@pytest.mark.parametrize(
    "text",
    [
        "0.5,0.4\n" * 50 + "0.5,0.4,1,2\n",
        "0.5,0.4\n" * 50 + "0.5,\n",
        "0.5,0.4\n" * 50 + "1e400,0\n",
        "0.5,0.4\n" * 50 + "1001,0\n",
        "0.5,0.4\n" * 50 + "0.5,0.4,nan\n",
        "0.5,0.4\n" * 50 + "0.5,0.4,1e400\n",
        "0.5,0.4\n" * 50 + "0.5 0.4\n",
        "0.5,0.4\n" * 30 + "0.5,0.4\r0.6,0.1\n" + "0.5,0.4\n" * 30 + "x,y,z\n",  # lone CR: a line break
        "0.5,0.4\n" * 30 + "0.5,0.4\x0c0.6,0.1e\n",  # form feed: a line break too
        "0.5,0.4\n" * 30 + "0.5,\u00a00.4\n0.6;0.1\n",  # non-ASCII blank, then a bad line
        "# only comments\n\n   \nx,y\n",
    ],
)
def test_bulk_targets_mistakes_as_line_by_line(capsys, monkeypatch, tmp_path, small_chunks, text):
    _same_as_reference(capsys, monkeypatch, tmp_path, text, rows=False)


def test_bulk_targets_not_utf8_wins_over_an_earlier_bad_line(capsys, monkeypatch, tmp_path, small_chunks):
    f = tmp_path / "t.csv"
    f.write_bytes(b"0.5,0.4\nbad\n" + b"0.5,0.4\n" * 100 + b"\xff\n")
    code, out, err = run(capsys, "ik", "--targets", str(f))
    assert (code, out) == (2, "") and err == f"armctl ik: error: {f}: cannot read: not UTF-8 text (byte 812)\n"
    code, out, err = run(capsys, "ik", "--targets", "-", stdin="0.5,0.4\n" * 100 + "0.5,x\n", monkeypatch=monkeypatch)
    assert (code, out) == (2, "") and err == "armctl ik: error: <stdin>:101: y: cannot read 'x' as a length; " + (
        "write metres like 0.5 or use a unit: 500mm, 50cm, 0.5m\n"
    )


def test_bulk_targets_from_a_pipe(tmp_path):
    text = "0.5,0.4\n0.6,0.1\n" * 20
    want = _reference_ik_targets("seed-3link", text, name="<stdin>")
    stdin_path = [["--targets", "/dev/stdin"]] if os.path.exists("/dev/stdin") else []  # not on Windows
    for argv in (["--targets", "-"], *stdin_path):
        p = subprocess.run(
            [sys.executable, "-m", "armctl", "ik", *argv], input=text.encode(), capture_output=True, check=False
        )
        assert (p.returncode, p.stdout.decode(), p.stderr.decode()) == want


def test_ik_does_not_load_the_streaming_stack():
    code = (
        "import sys; from armctl.cli import main; main(['ik', '0.5', '0.4']); main(['--help'])\n"
        "bad = [m for m in sys.modules if m.split('.')[0] in ('serial', 'pymata4') or m.startswith("
        "('armctl.robot', 'armctl.bus', 'armctl.cli.device', 'armctl.cli.web', 'armctl.teleop', "
        "'armctl.cli.calibrate', 'armctl.motion', 'armctl.calibration', 'armctl.dataset', 'armctl.sim', "
        "'armctl.program', 'armctl.cli.draw', 'armctl.cli.motion', 'armctl.cli.ik_targets', 'armctl.model.urdf')) "
        "or m in ('json', 'csv')]\n"
        "print(bad)"
    )
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert p.returncode == 0 and p.stdout.strip().splitlines()[-1] == "[]", p.stdout + p.stderr


def test_help_lines_match_each_command_module(capsys):
    """armctl.cli.COMMANDS gives --help without importing the modules: its lines must be theirs (each module's
    parser takes its line from there through add_command; one written with sub.add_parser(help=...) fails here)."""
    import argparse

    from armctl.cli import COMMANDS, build_parser

    full = build_parser()
    sub = next(a for a in full._actions if isinstance(a, argparse._SubParsersAction))
    assert {c.dest: c.help for c in sub._choices_actions} == {k: v[1] for k, v in COMMANDS.items()}
    assert list(sub.choices) == list(COMMANDS)
    for cmd in COMMANDS:
        with pytest.raises(SystemExit):
            full.parse_args([cmd, "--help"])
        eager = capsys.readouterr().out
        assert main([cmd, "--help"]) == 0
        assert capsys.readouterr().out == eager
    with pytest.raises(SystemExit):
        full.parse_args(["--help"])
    eager = capsys.readouterr().out
    assert main(["--help"]) == 0 and capsys.readouterr().out == eager
