"""Hostile and huge input files, as an attacker or a careless user would hand them to the command line: YAML alias
bombs of several shapes, deep nesting, huge counts, huge files, non-UTF-8 bytes, truncation, NaN, JSON nested
100k deep, drawings of a million segments. Each is refused with one line naming the file (and the line and the
limit where there is one), exit 2, quickly, in little memory, and nothing moved (the simulated board was never
opened: no state file appears). README "Limits" lists the caps; ``--limit NAME=N`` raises one."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

HEAD = (
    "arm: seed-3link\nposes:\n  a: {xy_mm: [480, -150], phi_deg: -90}\n  b: {xy_mm: [500, -150], phi_deg: -90}\n"
    "start: a\n"
)


def _alias_bomb(levels: int = 7) -> str:
    text = HEAD + "steps:\n  - &s0 {repeat: 1, steps: [{joint: a}, {joint: b}]}\n"
    for k in range(1, levels):
        text += f"  - &s{k} {{repeat: 1, steps: [{', '.join([f'*s{k - 1}'] * 10)}]}}\n"
    return text


def _list_bomb() -> str:  # the classic "billion laughs" on a plain list, in a pose's numbers
    text = "arm: seed-3link\nlol0: &l0 [1, 1, 1, 1, 1, 1, 1, 1, 1, 1]\n"
    for k in range(1, 9):
        text += f"lol{k}: &l{k} [{', '.join([f'*l{k - 1}'] * 10)}]\n"
    return text + "steps: [{wait_s: 1}]\n"


def _merge_bomb() -> str:
    text = HEAD + "x0: &m0 {k0: 1, k1: 2}\n"
    for k in range(1, 10):
        text += f"x{k}: &m{k} {{<<: [{', '.join([f'*m{k - 1}'] * 10)}], z: 1}}\n"
    return text + "steps: [{joint: a}]\n"


def _write(tmp_path: Path, name: str, content) -> Path:
    p = tmp_path / name
    if isinstance(content, bytes):
        p.write_bytes(content)
    else:
        p.write_text(content, encoding="utf-8")
    return p


# name -> (file name, content builder, extra CLI words before the file, what the one line must say)
PROGRAMS = {
    "alias bomb (repeat)": ("bomb.yaml", _alias_bomb, "yaml_nodes"),
    "alias bomb (lists)": ("lol.yaml", _list_bomb, "yaml_nodes"),
    "merge-key bomb": ("merge.yaml", _merge_bomb, "yaml_nodes"),
    "alias inside itself": ("self.yaml", lambda: "arm: seed-3link\nsteps: &a [*a]\n", "refers to the value"),
    "deep nesting": ("deep.yaml", lambda: "arm: seed-3link\nsteps: " + "[" * 100_000 + "]" * 100_000, "nesting"),
    "a million steps": ("many.yaml", lambda: "arm: seed-3link\nsteps:\n" + "  - {wait_s: 0.01}\n" * 1_000_000, "yaml"),
    "repeat a billion times": (
        "rep.yaml",
        lambda: HEAD + "steps:\n  - repeat: 1000000000\n    steps: [{joint: a}]\n",
        "limit moves",
    ),
    "nested repeats": (
        "rep3.yaml",
        lambda: (
            HEAD
            + "steps:\n  - repeat: 1000\n    steps:\n      - repeat: 1000\n        steps:\n"
            + "          - repeat: 1000\n            steps: [{joint: a}, {joint: b}]\n"
        ),
        "limit moves",
    ),
    "fine lines": (
        "fine.yaml",
        lambda: (
            "arm: seed-3link\nsettings: {segment_mm: 0.01}\nposes:\n  a: {xy_mm: [300, -150], phi_deg: -90}\n"
            "  b: {xy_mm: [650, -150], phi_deg: -90}\nstart: a\n"
            "steps:\n  - repeat: 50\n    steps: [{line: b}, {line: a}]\n"
        ),
        "limit segments",
    ),
    "over the file size": ("big.yaml", lambda: "arm: seed-3link\n# " + "x" * (17 * 1024 * 1024) + "\n", "file_bytes"),
    "not UTF-8": ("bin.yaml", lambda: b"arm: seed-3link\nsteps: [{wait_s: 1}]\n# \xff\xfe\x00\n", "UTF-8"),
    "random bytes": ("rnd.yaml", lambda: bytes(range(256)) * 40, "UTF-8"),
    "truncated": ("cut.yaml", lambda: HEAD + "steps: [{joint: a}, {line: [1, 2", "YAML syntax error"),
    "NaN": ("nan.yaml", lambda: HEAD + "steps: [{wait_s: .nan}]\n", "finite"),
    "huge integer": ("int.yaml", lambda: HEAD + "steps: [{wait_s: 1" + "0" * 5000 + "}]\n", "too long to read"),
}


# The child reports its own peak memory (VmHWM: this process image's high-water mark, which starts afresh at exec;
# ru_maxrss from wait4 would count the pytest process it was forked from).
_WRAP = """import atexit, runpy, sys
out = sys.argv.pop(1)
def peak():
    try:
        with open('/proc/self/status') as f:
            kb = [line.split()[1] for line in f if line.startswith('VmHWM')][0]
    except (OSError, IndexError):
        kb = '0'
    with open(out, 'w') as f:
        f.write(kb)
atexit.register(peak)
sys.argv[0] = 'armctl'
runpy.run_module('armctl', run_name='__main__')
"""


def _run(args: list[str], tmp_path: Path, timeout: float = 60.0) -> tuple[int, str, float, float]:
    """(exit code, stderr, wall seconds, peak memory MB) of ``python -m armctl ARGS`` on the simulated arm."""
    env = dict(os.environ, ARMCTL_STATE_DIR=str(tmp_path / "state"), PYTHONPATH=str(ROOT))
    env.pop("ARMCTL_LIMITS", None)
    peak_file = tmp_path / "peak_kb"
    t0 = time.monotonic()
    r = subprocess.run(
        [sys.executable, "-c", _WRAP, str(peak_file), *args],
        env=env,
        cwd=tmp_path,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        timeout=timeout,
    )
    took = time.monotonic() - t0
    peak_mb = int(peak_file.read_text() or 0) / 1024 if peak_file.exists() else 0.0
    return r.returncode, r.stderr, took, peak_mb


def _refused(code, err, took, peak_mb, *, says: str, path: Path, exit_code: int = 2) -> None:
    lines = err.strip().splitlines()
    assert code == exit_code, err
    assert len(lines) == 1 and "Traceback" not in err, err
    assert str(path.name) in lines[0] and says in lines[0], lines[0]
    # generous guards for a shared 2-core machine; the figures themselves are in the issue note
    assert took < 20.0, f"{took:.1f} s"  # unrefused, these take minutes or run out of memory
    assert peak_mb < 100, f"{peak_mb:.0f} MB"


@pytest.mark.parametrize("case", list(PROGRAMS))
def test_hostile_program_is_refused_in_one_line_and_moves_nothing(tmp_path, case):
    name, build, says = PROGRAMS[case]
    path = _write(tmp_path, name, build())
    code, err, took, peak = _run(["run", str(path)], tmp_path)
    _refused(code, err, took, peak, says=says, path=path)
    state = tmp_path / "state"
    assert not state.exists() or not list(state.glob("armsim-*")), "the simulated board was opened"
    print(f"{case}: {took:.2f} s, {peak:.0f} MB")


def test_a_limit_raised_on_the_command_line_lets_a_real_program_through(tmp_path):
    path = _write(tmp_path, "rep.yaml", HEAD + "steps:\n  - repeat: 120\n    steps: [{joint: a}, {joint: b}]\n")
    code, err, *_ = _run(["--limit", "moves=200", "plan", str(path)], tmp_path)
    assert code == 2 and "more than 200 moves" in err and "--limit moves=N" in err
    code, err, *_ = _run(["--limit", "moves=300", "plan", str(path)], tmp_path)
    assert code == 0, err
    code, err, *_ = _run(["plan", "--limit", "moves=many", str(path)], tmp_path)
    assert code == 2 and "expected a whole number" in err and len(err.strip().splitlines()) == 1


def test_a_lerobot_calibration_nested_100k_deep_is_one_line(tmp_path):
    path = _write(tmp_path, "deep.json", '{"a":' * 100_000 + "1" + "}" * 100_000)
    code, err, took, peak = _run(["--arm", "so101", "--calibration", str(path), "home"], tmp_path)
    _refused(code, err, took, peak, says="JSON nested more than 64 deep", path=path)


def _gcode_lines() -> str:
    return "G21\nG90\n" + "".join(f"G1 X{i % 50} Y{i % 37}\n" for i in range(1_000_000))


def _svg_path() -> str:
    pts = " ".join(f"L{i % 97} {i % 89}" for i in range(1_000_000))
    return f'<svg xmlns="http://www.w3.org/2000/svg" width="100" height="100"><path d="M0 0 {pts}"/></svg>'


def _svg_curves(curve: str, n: int) -> str:
    path = " ".join([curve] * n)
    return f'<svg xmlns="http://www.w3.org/2000/svg" width="100" height="100"><path d="M10 10 {path}"/></svg>'


def _svg_circles() -> str:
    circles = "".join(f'<circle cx="{i % 97}" cy="{i % 89}" r="0.1"/>' for i in range(100_000))
    return f'<svg xmlns="http://www.w3.org/2000/svg" width="100" height="100">{circles}</svg>'


@pytest.mark.parametrize(
    "name,build,says",
    [
        ("big.gcode", _gcode_lines, "limit moves"),
        ("path.svg", _svg_path, "limit moves"),
        ("circles.svg", _svg_circles, "limit moves"),
        ("nul.gcode", lambda: "G1 X1 Y1\n" + "\x00" * 10, "cannot read"),
        ("loops.svg", lambda: _svg_curves("c 1e9 1e9 -1e9 1e9 0 0", 2000), "limit moves"),  # each flattens huge
        ("small_loops.svg", lambda: _svg_curves("c 20 20 -20 20 0 0", 3000), "limit moves"),
        ("far.svg", lambda: _svg_curves("c 1e9 1e9 -1e9 1e9 1e9 0", 1), "far beyond its reach"),
        ("arcs.gcode", lambda: "G21\nG90\nG0 X50 Y0\n" + "G2 X50 Y0 I-50 J0\n" * 5000, "limit moves"),
    ],
)
def test_huge_drawings_are_refused_before_they_are_parsed(tmp_path, name, build, says):
    path = _write(tmp_path, name, build())
    code, err, took, peak = _run(["--arm", "mearm", "draw", str(path), "--plane", "xy@0mm", "--dry-run"], tmp_path)
    _refused(code, err, took, peak, says=says, path=path, exit_code=3 if "reach" in says else 2)
    print(f"{name}: {took:.2f} s, {peak:.0f} MB")
