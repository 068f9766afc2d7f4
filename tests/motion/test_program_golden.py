"""Golden test: the planned output of a small program must not change unnoticed.

A change in planning that moves any sample by more than 1e-6 deg (or 1e-7 m)
fails here; if the change is intended, regenerate the golden file with
``ARMCTL_UPDATE_GOLDEN=1 pytest tests/motion/test_program_golden.py`` and review the diff.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest

from armctl.cli import main

GOLDEN = Path(__file__).resolve().parents[1] / "golden"
PROGRAM = GOLDEN / "small_program.yaml"
EXPECTED = GOLDEN / "small_program.json"


def planned(capsys) -> dict:
    code = main(["--arm", "seed-3link", "plan", str(PROGRAM), "--json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    doc = json.loads(out)
    doc["program"] = PROGRAM.name  # not the absolute path of this checkout
    return doc


def test_small_program_matches_golden(capsys):
    doc = planned(capsys)
    if os.environ.get("ARMCTL_UPDATE_GOLDEN") == "1":
        EXPECTED.write_text(json.dumps(doc, indent=1) + "\n")
        pytest.skip("golden file rewritten")
    want = json.loads(EXPECTED.read_text())
    assert doc["steps"] == want["steps"]
    assert doc["period_s"] == want["period_s"] and doc["joint_names"] == want["joint_names"]
    assert len(doc["samples"]) == len(want["samples"])
    for key, atol in (("t_s", 1e-9), ("q_deg", 1e-6), ("tool_m", 1e-7), ("gripper_deg", 1e-6), ("step", 0)):
        got = np.array([s[key] for s in doc["samples"]], dtype=float)
        exp = np.array([s[key] for s in want["samples"]], dtype=float)
        assert np.allclose(got, exp, rtol=0, atol=atol), key
    assert np.allclose(doc["points_m"], want["points_m"], rtol=0, atol=1e-7)
    for key in ("duration_s", "segments", "samples"):
        assert doc["summary"][key] == pytest.approx(want["summary"][key])
    assert np.allclose(doc["summary"]["peak_joint_speed_deg_s"], want["summary"]["peak_joint_speed_deg_s"], atol=1e-4)


def test_golden_is_sane():
    """What the golden file itself says: starts at home at rest, ends above the part, inside the limits."""
    want = json.loads(EXPECTED.read_text())
    s = want["summary"]
    assert want["samples"][0]["q_deg"] == pytest.approx([45, -90, -45])
    assert want["samples"][-1]["tool_m"] == pytest.approx([0.52, -0.19], abs=1e-6)
    assert all(p <= lim for p, lim in zip(s["peak_joint_speed_deg_s"], s["joint_speed_limit_deg_s"], strict=True))
    assert s["max_path_deviation_m"] < 1e-5


# --- plan --json / --csv written in bulk: the same bytes as json.dump and csv.writer wrote ---------


def _reference_outputs(program: Path, arm: str) -> tuple[str, str]:
    """What plan --json and --csv - wrote value by value before bulk output (kept as the reference)."""
    import csv
    import io

    from armctl.cli.motion import plan_json, samples_table
    from armctl.model.arm import load_arm
    from armctl.program import load_program, plan_program

    plan = plan_program(load_program(program), load_arm(arm))
    doc = io.StringIO()
    json.dump(plan_json(plan, str(program)), doc, indent=None, separators=(",", ":"))
    doc.write("\n")
    header, rows = samples_table(plan)
    table = io.StringIO()
    w = csv.writer(table, lineterminator="\n")
    w.writerow(header)
    w.writerows(rows)
    return doc.getvalue(), table.getvalue()


def _no_gripper_arm(tmp_path) -> str:
    arm = tmp_path / "arm.yaml"
    text = (Path(__file__).parents[2] / "armctl" / "presets" / "seed-2link.yaml").read_text()
    arm.write_text(text.replace("name: seed-2link", "name: bare").split("gripper:")[0])
    return str(arm)


@pytest.mark.parametrize("case", ["repeat", "example-3link", "example-2link", "no-gripper", "mearm", "eezybot"])
def test_bulk_plan_output_is_byte_identical(capsys, monkeypatch, tmp_path, case):
    from armctl.cli import motion as cli_motion

    monkeypatch.setattr(cli_motion, "CHUNK", 97)  # many chunks, a short last one
    examples = Path(__file__).parents[2] / "examples"
    program, arm = {
        "repeat": (tmp_path / "p.yaml", "seed-3link"),
        "example-3link": (examples / "pick_and_place.yaml", "seed-3link"),
        "example-2link": (examples / "pick_and_place_2link.yaml", "seed-2link"),
        "no-gripper": (tmp_path / "p.yaml", None),
        "mearm": (examples / "pick_and_place_mearm.yaml", "mearm"),  # x, y, z points
        "eezybot": (examples / "pick_and_place_eezybot.yaml", "eezybot-mk2"),
    }[case]
    if case == "repeat":
        text = PROGRAM.read_text().replace("steps:\n", "steps:\n  - repeat: 12\n    steps:\n", 1)
        lines = text.split("steps:\n", 1)
        body = "".join("      " + ln.lstrip() + "\n" for ln in lines[1].splitlines()[2:])
        program.write_text(lines[0] + "steps:\n  - repeat: 12\n    steps:\n" + body)
    if case == "no-gripper":
        arm = _no_gripper_arm(tmp_path)
        program.write_text(
            "poses:\n  a: {xy_mm: [450, 100]}\n  b: {xy_mm: [300, 350]}\n"
            "steps:\n  - {joint: a}\n  - {line: b, speed_mm_s: 80}\n  - wait_s: 0.3\n  - {line: a}\n"
        )
    want_json, want_csv = _reference_outputs(program, arm)
    assert main(["--arm", arm, "plan", str(program), "--json"]) == 0
    out, _ = capsys.readouterr()
    assert len(json.loads(out)["samples"]) > 3 * 97 and out == want_json
    assert main(["--arm", arm, "plan", str(program), "--csv", "-"]) == 0
    out, _ = capsys.readouterr()
    assert out == want_csv
    assert main(["--arm", arm, "plan", str(program), "--csv", str(tmp_path / "o.csv")]) == 0
    assert (tmp_path / "o.csv").read_text() == want_csv
    if case == "repeat":
        assert json.loads(want_json)["samples"][-1]["step"] > 50
