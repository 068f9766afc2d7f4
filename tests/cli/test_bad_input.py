"""Every bad input through the command line: one clear line, the documented exit code, nothing moved,
no file changed.

Each row is a command line (``{port}``: a simulated arm whose servos are kept in a state file, ``{tmp}``:
this test's folder, with ready-made files in it) and what must come of it. For every row: the exit code,
exactly one line on stderr containing the fragment, no servo of the simulated arm moved, and no file in
the folder changed (calibrations, programs, points files, the user's config folder).
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

from armctl.cli import main
from armctl.core.paths import PRESET_CALIBRATION_DIR, PRESET_DIR
from tests.cli.roll_arm import write_roll_arm

ROOT = Path(__file__).resolve().parents[2]
PROGRAM = ROOT / "examples" / "pick_and_place.yaml"
SEED3 = PRESET_CALIBRATION_DIR / "seed-3link.yaml"
SEED2 = PRESET_CALIBRATION_DIR / "seed-2link.yaml"
UNWRITABLE = "/proc/armctl-cannot-write-here"  # no one, root included, can create anything under /proc
if sys.platform == "win32":  # a folder under a file: Windows has no /proc (and the CI user is an administrator)
    UNWRITABLE = str(Path(__file__).resolve() / "armctl-cannot-write-here")

ROWS = [
    # global options
    ("unknown arm", ["--arm", "nope", "status"], 2, "no arm preset or file named 'nope'"),
    ("missing arm file", ["--arm", "{tmp}/missing.yaml", "status"], 2, "missing.yaml"),
    ("malformed arm file", ["--arm", "{tmp}/bad.yaml", "status"], 2, "bad.yaml"),
    ("empty port", ["--port", "", "status"], 2, "--port: empty"),
    ("blank port", ["--port", "  ", "jog", "0.5", "0.2"], 2, "--port: empty"),
    ("no such device", ["--port", "/dev/nonexistent-armctl", "status"], 4, "cannot open port"),
    ("unknown backend", ["--port", "{port}", "--backend", "nope", "status"], 2, "no backend 'nope'"),
    ("firmata on a URL", ["--port", "{port}", "--backend", "firmata", "status"], 4, "device path"),
    ("missing calibration", ["--calibration", "{tmp}/missing.yaml", "status"], 2, "missing.yaml"),
    ("2-link calibration", ["--calibration", str(SEED2), "--port", "{port}", "home"], 2, "for arm 'seed-2link'"),
    ("calibration of another arm", ["--calibration", "{tmp}/other-arm.yaml", "--port", "{port}", "home"], 2, "'other'"),
    ("watchdog nan", ["--watchdog", "nan", "--port", "{port}", "status"], 2, "--watchdog"),
    # simulator URL options
    ("armsim depth 0", ["--port", "armsim://?depth=0", "status"], 2, "depth must be"),
    ("armsim channels 0", ["--port", "armsim://?channels=0", "status"], 2, "channels must be"),
    ("armsim baud", ["--port", "armsim://?baud=-5", "status"], 2, "baud must be"),
    ("armsim slew", ["--port", "armsim://?slew=0", "status"], 2, "slew must be"),
    ("armsim delay", ["--port", "armsim://?delay=-1", "status"], 2, "delay must be"),
    ("armsim disconnect", ["--port", "armsim://?disconnect=-1", "status"], 2, "disconnect must be"),
    ("armsim offset", ["--port", "armsim://?offset=a", "status"], 2, "offset='a' is not valid"),
    ("armsim offset nan", ["--port", "armsim://?offset=nan", "status"], 2, "offset"),
    ("armsim start count", ["--port", "armsim://?start=1,2,3,4,5,6", "status"], 2, "start"),
    ("armsim scale 0", ["--port", "armsim://?scale=0", "status"], 2, "scale"),
    ("armsim flip", ["--port", "armsim://?flip=7", "status"], 2, "flip"),
    ("armsim arm", ["--port", "armsim://?arm=nope", "status"], 2, "nope"),
    ("armsim state in a file", ["--port", "armsim://?state={tmp}/afile/x.json", "status"], 2, "state"),
    ("armsim option", ["--port", "armsim://?bogus=1", "status"], 2, "unknown armsim option 'bogus'"),
    ("armsim rate", ["--port", "armsim://?rate=abc", "status"], 2, "rate='abc' is not valid"),
    ("feetechsim rate", ["--arm", "so101", "--port", "feetechsim://?rate=abc", "status"], 2, "rate='abc'"),
    ("feetechsim, PWM calibration", ["--port", "feetechsim://", "status"], 2, "--backend feetech"),
    ("armsim, bus calibration", ["--arm", "so101", "--port", "armsim://", "status"], 2, "--backend armctl"),
    # jog
    ("jog unreachable", ["--port", "{port}", "jog", "5", "5"], 3, "beyond the outer reach"),
    ("jog outside the joint limits", ["--port", "{port}", "jog", "-0.5", "-0.5"], 3, "joint limits"),
    ("jog nan", ["--port", "{port}", "jog", "nan", "0"], 2, "X"),
    ("jog one number", ["--port", "{port}", "jog", "0.5"], 2, "Y"),
    ("jog speed 0", ["--port", "{port}", "jog", "0.5", "0.2", "--speed", "0"], 2, "--speed"),
    ("jog speed negative", ["--port", "{port}", "jog", "0.5", "0.2", "--speed", "-3"], 2, "--speed"),
    ("jog speed text", ["--port", "{port}", "jog", "0.5", "0.2", "--speed", "fast"], 2, "--speed"),
    ("jog phi nan", ["--port", "{port}", "jog", "0.5", "0.2", "--phi", "nan"], 2, "--phi"),
    ("jog phi on 2 links", ["--arm", "seed-2link", "--port", "{port}", "jog", "0.5", "0.2", "--phi", "10"], 2, "--phi"),
    ("jog wire log a folder", ["--port", "{port}", "jog", "0.5", "0.2", "--wire-log", "{tmp}"], 2, "--wire-log"),
    ("jog wire log disk full", ["--port", "{port}", "jog", "0.5", "0.2", "--wire-log", "/dev/full"], 5, "--wire-log"),
    # arms on a rotating base, parallelogram linkages
    ("jog 2 numbers on a base arm", ["--arm", "mearm", "--port", "{port}", "jog", "0.15", "0.04"], 2, "give X Y Z"),
    ("jog 3 numbers on a planar arm", ["--port", "{port}", "jog", "0.5", "0.2", "0.1"], 2, "give X Y, got 3"),
    ("ik 2 numbers on a base arm", ["--arm", "mearm", "ik", "0.15", "0.04"], 2, "give X Y Z"),
    ("ik 3 numbers on a planar arm", ["ik", "0.5", "0.4", "0.1"], 2, "give X Y, got 3 numbers"),
    ("fk 2 angles on a base arm", ["--arm", "mearm", "fk", "90", "0"], 2, "has 3 joints (base first)"),
    ("fk outside the coupled limits", ["--arm", "mearm", "fk", "0", "140", "-30"], 3, "upper arm and forearm"),
    (
        "jog base arm unreachable",
        ["--arm", "mearm", "--port", "{port}", "jog", "0.5", "0", "0"],
        3,
        "outside the reach",
    ),
    ("jog base arm behind its base", ["--arm", "mearm", "--port", "{port}", "jog", "-0.15", "0", "0"], 3, "mearm"),
    ("jog base arm z nan", ["--arm", "mearm", "--port", "{port}", "jog", "0.15", "0", "nan"], 2, "Z"),
    (
        "jog phi on a base arm of 2 links",
        ["--arm", "mearm", "--port", "{port}", "jog", "0.15", "0", "0", "--phi", "0"],
        2,
        "--phi",
    ),
    (
        "parallelogram with 3 links",
        ["--arm", "{tmp}/para3.yaml", "--port", "{port}", "jog", "0.1", "0", "0"],
        2,
        "2 links",
    ),
    ("link angle over 180", ["--arm", "{tmp}/la200.yaml", "--port", "{port}", "jog", "0.1", "0", "0"], 2, "0..180"),
    ("link angle below 0", ["--arm", "{tmp}/la-10.yaml", "--port", "{port}", "jog", "0.1", "0", "0"], 2, "0..180"),
    ("run xy points on a base arm", ["--port", "{port}", "run", "{tmp}/mearm-xy.yaml"], 2, "write xyz_mm: [x, y, z]"),
    ("run xyz points on a planar arm", ["--port", "{port}", "run", "{tmp}/planar-xyz.yaml"], 2, "write xy_mm: [x, y]"),
    ("run 2-value offset on a base arm", ["--port", "{port}", "run", "{tmp}/mearm-offset.yaml"], 2, "[dx, dy, dz]"),
    ("run base arm target out of reach", ["--port", "{port}", "run", "{tmp}/mearm-far.yaml"], 3, "mearm-far.yaml"),
    (
        "check height nothing reaches",
        ["--arm", "mearm", "--port", "{port}", "calibrate", "--check", "--height", "300mm"],
        2,
        "--height 300 mm",
    ),
    ("check height on a planar arm", ["--port", "{port}", "calibrate", "--check", "--height", "0.1"], 2, "--height"),
    (
        "check height nan",
        ["--arm", "mearm", "--port", "{port}", "calibrate", "--check", "--height", "nan"],
        2,
        "--height",
    ),
    ("ik targets file of x,y on a base arm", ["--arm", "mearm", "ik", "--targets", "{tmp}/xy.csv"], 2, "'x,y,z'"),
    # the wrist roll ({tmp}/rollarm.yaml: tests/cli/roll_arm.py)
    (
        "ik roll on an arm without one",
        ["--arm", "mearm", "ik", "0.15", "0", "0", "--roll", "9"],
        2,
        "arm 'mearm' has no wrist roll",
    ),
    (
        "ik roll outside its limits",
        ["--arm", "{tmp}/rollarm.yaml", "ik", "0.2", "0", "0", "--roll", "170"],
        2,
        "-157.0, 163.0",
    ),
    ("ik roll nan", ["--arm", "{tmp}/rollarm.yaml", "ik", "0.2", "0", "0", "--roll", "nan"], 2, "--roll: 'nan'"),
    ("ik yaw inf", ["--arm", "{tmp}/rollarm.yaml", "ik", "0.2", "0", "0", "--down", "--yaw", "inf"], 2, "--yaw: 'inf'"),
    (
        "ik yaw without down",
        ["--arm", "{tmp}/rollarm.yaml", "ik", "0.2", "0", "0", "--yaw", "30"],
        2,
        "--yaw needs --down",
    ),
    ("ik down without a base", ["ik", "0.5", "0.4", "--down"], 2, "arm 'seed-3link' has no rotating base"),
    (
        "ik targets roll outside",
        ["--arm", "{tmp}/rollarm.yaml", "ik", "--targets", "{tmp}/roll.csv"],
        2,
        "roll.csv:2: roll_deg",
    ),
    (
        "jog roll on an arm without one",
        ["--arm", "mearm", "--port", "{port}", "jog", "0.15", "0", "0", "--roll", "9"],
        2,
        "arm 'mearm' has no wrist roll",
    ),
    (
        "jog roll outside its limits",
        ["--arm", "{tmp}/rollarm.yaml", "--calibration", "{tmp}/rollcal.yaml", "--port", "{port}", "jog", "0.2", "0.1"]
        + ["0.05", "--roll", "170"],
        2,
        "--roll: roll 170.0 deg is outside the limits of 'wrist_roll'",
    ),
    (
        "jog roll nan",
        ["--arm", "{tmp}/rollarm.yaml", "--calibration", "{tmp}/rollcal.yaml", "--port", "{port}", "jog", "0.2", "0.1"]
        + ["0.05", "--roll", "nan"],
        2,
        "--roll: 'nan' is not a finite number",
    ),
    # run
    ("run missing program", ["--port", "{port}", "run", "{tmp}/missing.yaml"], 2, "missing.yaml"),
    ("run malformed program", ["--port", "{port}", "run", "{tmp}/bad.yaml"], 2, "bad.yaml"),
    ("run a folder", ["--port", "{port}", "run", "{tmp}"], 2, "{tmp}"),
    ("run not UTF-8", ["--port", "{port}", "run", "{tmp}/binary.yaml"], 2, "binary.yaml"),
    ("run unreachable pose", ["--port", "{port}", "run", "{tmp}/unreachable.yaml"], 3, "unreachable.yaml"),
    ("run for another arm", ["--arm", "seed-3link", "--port", "{port}", "run", "{tmp}/two.yaml"], 2, "seed-2link"),
    ("run wire log disk full", ["--port", "{port}", "run", str(PROGRAM), "--wire-log", "/dev/full"], 5, "--wire-log"),
    # calibrate
    ("check side 0", ["--port", "{port}", "calibrate", "--check", "--side", "0"], 2, "--side"),
    ("check side negative", ["--port", "{port}", "calibrate", "--check", "--side", "-0.05"], 2, "--side"),
    ("check side nan", ["--port", "{port}", "calibrate", "--check", "--side", "nan"], 2, "--side"),
    ("check centre unreachable", ["--port", "{port}", "calibrate", "--check", "--center", "2", "0"], 3, "2"),
    ("check speed 0", ["--port", "{port}", "calibrate", "--check", "--speed", "0"], 2, "--speed"),
    ("record joint 9", ["calibrate", "--joint", "9", "--angle", "0", "--us", "1500"], 2, "--joint"),
    ("record pulse 3000", ["calibrate", "--joint", "1", "--angle", "0", "--us", "3000"], 2, "--us"),
    ("record angle nan", ["calibrate", "--joint", "1", "--angle", "nan", "--us", "1500"], 2, "--angle"),
    ("record range reversed", ["calibrate", "--joint", "1", "--min-us", "900", "--max-us", "800"], 2, "min"),
    (
        "points folder is a file",
        ["calibrate", "--joint", "1", "--angle", "0", "--us", "1500", "--points", "{tmp}/afile/p.yaml"],
        2,
        "afile",
    ),
    (
        "points folder unwritable",
        ["calibrate", "--joint", "1", "--angle", "0", "--us", "1500", "--points", f"{UNWRITABLE}/p.yaml"],
        2,
        UNWRITABLE,
    ),
    ("points file malformed", ["calibrate", "--fit", "--points", "{tmp}/bad.yaml"], 2, "bad.yaml"),
    ("fit with no points file", ["calibrate", "--fit", "--points", "{tmp}/missing.yaml"], 2, "missing.yaml"),
    (
        "fit into an unwritable folder",
        ["calibrate", "--fit", "--points", "{tmp}/points.yaml", "--out", f"{UNWRITABLE}/c.yaml"],
        2,
        UNWRITABLE,
    ),
    (
        "fit into a file's folder",
        ["calibrate", "--fit", "--points", "{tmp}/points.yaml", "--out", "{tmp}/afile/c.yaml"],
        2,
        "afile",
    ),
    (
        "fit residual nan",
        ["calibrate", "--fit", "--points", "{tmp}/points.yaml", "--max-residual-deg", "nan"],
        2,
        "nan",
    ),
    ("compare a missing file", ["calibrate", "--compare", "{tmp}/missing.yaml", str(SEED3)], 2, "missing.yaml"),
    ("show a malformed file", ["calibrate", "--show", "{tmp}/bad.yaml"], 2, "bad.yaml"),
    ("interactive without a terminal", ["--port", "{port}", "calibrate"], 2, "terminal"),
    # plan, plot, web
    ("plan csv into a file's folder", ["plan", str(PROGRAM), "--csv", "{tmp}/afile/x.csv"], 2, "afile"),
    ("plot into a file's folder", ["plot", str(PROGRAM), "-o", "{tmp}/afile/x.png"], 2, "afile"),
    ("web listen malformed", ["--port", "{port}", "web", "--listen", "nope"], 2, "--listen"),
    ("web listen port", ["--port", "{port}", "web", "--listen", "127.0.0.1:99999"], 2, "--listen"),
]

ENV_ROWS = [
    ("state folder is a file", {"ARMCTL_STATE_DIR": "{tmp}/afile"}, ["status"], 2, "state folder"),
    ("state folder unwritable", {"ARMCTL_STATE_DIR": UNWRITABLE}, ["jog", "0.5", "0.2"], 5, "state folder"),
    (
        "home is a file",
        {"HOME": "{tmp}/afile", "ARMCTL_STATE_DIR": None, "XDG_STATE_HOME": None},
        ["status"],
        2,
        "afile",
    ),
    (
        "config folder unwritable",
        {"ARMCTL_CONFIG_DIR": UNWRITABLE},
        ["calibrate", "--joint", "1", "--angle", "0", "--us", "1500"],
        2,
        UNWRITABLE,
    ),
]


@pytest.fixture
def folder(tmp_path, monkeypatch):
    """The test's folder, with the files the rows name; the user's folders inside it."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "afile").write_text("a file where a folder should be\n")
    (tmp_path / "bad.yaml").write_text("name: [unclosed\n")
    (tmp_path / "binary.yaml").write_bytes(b"\xff\xfe\x00steps: []\n")
    other = SEED3.read_text().replace("arm: seed-3link", "arm: other")
    (tmp_path / "other-arm.yaml").write_text(other)
    (tmp_path / "unreachable.yaml").write_text(
        "arm: seed-3link\nposes:\n  far: {xy_mm: [2000, 0]}\nsteps:\n  - {line: far}\n"
    )
    (tmp_path / "two.yaml").write_text("arm: seed-2link\nposes:\n  p: {xy_mm: [500, 100]}\nsteps:\n  - {line: p}\n")
    mearm = (PRESET_DIR / "mearm.yaml").read_text()
    (tmp_path / "para3.yaml").write_text(mearm.replace("links_m: [0.080, 0.080]", "links_m: [0.08, 0.08, 0.03]"))
    (tmp_path / "la200.yaml").write_text(mearm.replace("link_angle_deg: [30, 150]", "link_angle_deg: [30, 200]"))
    (tmp_path / "la-10.yaml").write_text(mearm.replace("link_angle_deg: [30, 150]", "link_angle_deg: [-10, 150]"))
    (tmp_path / "mearm-xy.yaml").write_text("arm: mearm\nposes:\n  p: {xy_mm: [150, 20]}\nsteps:\n  - {line: p}\n")
    (tmp_path / "planar-xyz.yaml").write_text(
        "arm: seed-3link\nposes:\n  p: {xyz_mm: [500, 100, 20]}\nsteps:\n  - {line: p}\n"
    )
    (tmp_path / "mearm-offset.yaml").write_text(
        "arm: mearm\nposes:\n  p: {xyz_mm: [150, 20, 0]}\nsteps:\n  - {line: p, offset_mm: [0, 10]}\n"
    )
    (tmp_path / "mearm-far.yaml").write_text("arm: mearm\nposes:\n  p: {xyz_mm: [400, 0, 0]}\nsteps:\n  - {line: p}\n")
    (tmp_path / "xy.csv").write_text("0.15,0.02,0.0\n0.15,0.02\n")
    write_roll_arm(tmp_path)
    (tmp_path / "roll.csv").write_text("x,y,z,roll_deg\n0.2,0.1,0.05,-170\n")
    (tmp_path / "points.yaml").write_text(
        "arm: seed-3link\npoints:\n  - {joint: 1, angle_deg: 0, us: 1500}\n  - {joint: 1, angle_deg: 90, us: 2166}\n"
    )
    return tmp_path


def _fill(text: str, folder: Path, port: str) -> str:
    return text.replace("{tmp}", str(folder)).replace("{port}", port)


def _files(folder: Path) -> dict[str, str]:
    """Content hash of every file the user owns in the folder (the state folder is armctl's own)."""
    out = {}
    for p in folder.rglob("*"):
        if p.is_file() and "state" not in p.relative_to(folder).parts:
            out[str(p)] = hashlib.sha1(p.read_bytes()).hexdigest()
    return out


def _servos(state: Path):
    return json.loads(state.read_text())["q_rad"] if state.exists() else None


def _check(folder: Path, argv: list[str], code: int, fragment: str, capsys, env: dict | None = None) -> None:
    state = folder / "sim.json"
    port = f"armsim://?rate=50&seed=1&state={state}"
    home = [math.radians(a) for a in (45, -90, -45, 60)]  # seed-3link at home, gripper open
    state.write_text(json.dumps({"q_rad": home, "limits_us": [[500, 2500]] * 4}))
    argv = [_fill(a, folder, port) for a in argv]
    before_files, before_servos = _files(folder), _servos(state)
    if env is None:
        got = main(argv)
        err = capsys.readouterr().err
    else:  # environment rows: a fresh process with exactly that environment
        full = dict(os.environ)
        for k, v in env.items():
            if v is None:
                full.pop(k, None)
            else:
                full[k] = _fill(v, folder, port)
        proc = subprocess.run(
            [sys.executable, "-m", "armctl", "--port", port, *argv],
            capture_output=True,
            text=True,
            cwd=folder,
            env=full,
            timeout=120,
        )
        got, err = proc.returncode, proc.stderr
    assert got == code, f"exit {got}, expected {code}: {err}"
    assert err.count("\n") == 1 and err.endswith("\n"), f"not one line: {err!r}"
    assert _fill(fragment, folder, port) in err, err
    assert "Traceback" not in err
    assert _servos(state) == before_servos, "a servo moved"
    assert _files(folder) == before_files, "a file changed"


@pytest.mark.parametrize(("argv", "code", "fragment"), [r[1:] for r in ROWS], ids=[r[0] for r in ROWS])
def test_bad_input_is_one_line_and_moves_nothing(folder, argv, code, fragment, capsys):
    _check(folder, argv, code, fragment, capsys)


@pytest.mark.parametrize(("env", "argv", "code", "fragment"), [r[1:] for r in ENV_ROWS], ids=[r[0] for r in ENV_ROWS])
def test_bad_environment_is_one_line_and_moves_nothing(folder, env, argv, code, fragment, capsys):
    if sys.platform == "win32" and "HOME" in env:
        pytest.skip("Windows finds the user's folders by the shell's known folders, not $HOME")
    _check(folder, argv, code, fragment, capsys, env=env)
