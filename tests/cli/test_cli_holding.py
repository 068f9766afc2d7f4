"""Can each servo hold the arm? ``fk``'s torque margins and where the masses come from, ``workspace --payload``'s
share of poses each servo holds with its worst pose, the plot's shading, and their bad inputs (one line, exit 2)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from armctl.cli import main
from armctl.model.arm import load_arm
from armctl.model.holding import hold_map
from armctl.model.servos import KGCM_NM
from armctl.model.statics import gravity_torque
from tests.helpers import require_module


def _fk(capsys, *args):
    code = main(list(args))
    out = capsys.readouterr()
    return code, out.out, out.err


def test_fk_json_gives_each_servos_margin_and_where_the_masses_come_from(capsys):
    code, out, _ = _fk(capsys, "--arm", "braccio", "fk", "0", "20", "0", "0", "--payload", "50g", "--json")
    d = json.loads(out)
    want = gravity_torque(load_arm("braccio"), np.radians([0, 20, 0, 0]), 0.05)
    assert code == 0 and d["masses"] == "estimated" and d["payload_kg"] == 0.05 and d["torque_use"] == 0.6
    assert d["gravity_torque_nm"] == pytest.approx(want, abs=1e-6)
    # the SR431's datasheet 12.2 kg.cm at 4.8 V over the torque needed; the base needs nothing
    assert d["torque_margin"][0] is None
    assert d["torque_margin"][1:] == pytest.approx([12.2 * KGCM_NM / abs(v) for v in want[1:]], rel=1e-3)
    code, out, _ = _fk(capsys, "--arm", "so101", "fk", "0", "0", "0", "0", "0", "--json")
    d = json.loads(out)
    assert d["masses"] == "urdf" and d["payload_kg"] == 0.0
    assert d["torque_margin"][1] == pytest.approx(19.5 * KGCM_NM / d["gravity_torque_nm"][1], rel=1e-3)
    code, out, _ = _fk(capsys, "--arm", "seed-3link", "fk", "0", "0", "0", "--payload", "1kg", "--json")
    d = json.loads(out)
    assert d["gravity_torque_nm"] == [0.0, 0.0, 0.0] and d["torque_margin"] == [None, None, None]


def test_fk_prints_the_margins_and_the_servo_that_cannot_hold(capsys):
    code, out, _ = _fk(capsys, "--arm", "braccio", "fk", "0", "20", "0", "0", "--payload", "50g")
    lines = out.splitlines()
    assert code == 0 and any("with a 50 g part" in line and "estimated" in line for line in lines)
    shoulder = next(line for line in lines if line.strip().startswith("shoulder"))
    assert "SR431 gives 12.2 kg.cm at 4.8 V" in shoulder and "margin 1.3" in shoulder and "cannot hold" in shoulder
    assert "cannot hold" not in next(line for line in lines if line.strip().startswith("wrist"))
    code, out, _ = _fk(capsys, "--arm", "seed-2link", "fk", "0", "0", "--payload", "50g")
    assert code == 0 and "horizontal plane" in out


def test_the_arm_files_payload_is_the_default(tmp_path, capsys):
    text = open(load_arm("braccio").source).read().replace("name: braccio", "name: loaded\npayload_g: 120")
    path = tmp_path / "loaded.yaml"
    path.write_text(text)
    q = np.radians([0, 30, -20, 10])
    code, out, _ = _fk(capsys, "--arm", str(path), "fk", "0", "30", "-20", "10", "--json")
    d = json.loads(out)
    assert code == 0 and d["payload_kg"] == 0.12
    assert d["gravity_torque_nm"] == pytest.approx(gravity_torque(load_arm("braccio"), q, 0.12), abs=1e-6)
    code, out, _ = _fk(capsys, "--arm", str(path), "fk", "0", "30", "-20", "10", "--payload", "0g", "--json")
    assert json.loads(out)["payload_kg"] == 0.0


def test_workspace_says_where_each_servo_holds_the_arm(capsys):
    code, out, _ = _fk(capsys, "--arm", "braccio", "workspace", "--payload", "50g", "--json")
    h = json.loads(out)["holding"]
    arm = load_arm("braccio")
    assert code == 0 and h["payload_kg"] == 0.05 and h["masses"] == "estimated" and h["poses"] > 10_000
    shoulder = h["joints"][1]
    assert shoulder["servo"] == "sr431" and shoulder["limit_nm"] == pytest.approx(0.6 * 12.2 * KGCM_NM)
    # the worst pose is what the statics give there, and more than the servo may give: not held everywhere
    worst = gravity_torque(arm, np.radians(shoulder["worst_q_deg"]), 0.05)[1]
    assert worst == pytest.approx(shoulder["worst_nm"], abs=1e-5) and abs(worst) > shoulder["limit_nm"]
    assert 0.5 < shoulder["hold_share"] < 1.0 and h["all_hold_share"] <= shoulder["hold_share"]
    # the share, counted again over poses sampled independently
    rng = np.random.default_rng(99)
    q = rng.uniform(arm.q_min, arm.q_max, size=(20_000, arm.n))
    share = np.mean(np.abs(gravity_torque(arm, q, 0.05)[:, 1]) <= shoulder["limit_nm"])
    assert share == pytest.approx(shoulder["hold_share"], abs=0.02)
    # a heavier part: fewer poses held; none: every one
    assert hold_map(arm, 0.2).joints[1].share < shoulder["hold_share"] < hold_map(arm, 0.0).joints[1].share <= 1.0
    code, out, _ = _fk(capsys, "--arm", "braccio", "workspace", "--payload", "50g")
    assert code == 0 and "shoulder      holds in  " in out and "every servo holds the arm in" in out
    assert "base          needs nothing against gravity" in out


@pytest.mark.parametrize(
    "args, why",
    [
        (["--arm", "braccio", "workspace", "--payload", "-5g"], "a mass is 0..10 kg"),
        (["--arm", "braccio", "workspace", "--payload", "50"], "give its unit"),
        (["--arm", "braccio", "fk", "0", "20", "0", "0", "--payload", "11kg"], "a mass is 0..10 kg"),
        (["plot", "examples/pick_and_place_braccio.yaml", "-o", "x.png", "--payload", "lots"], "give its unit"),
    ],
)
def test_bad_payloads_are_one_line(args, why, capsys):
    assert main(args) == 2
    err = capsys.readouterr().err
    assert why in err and err.count("\n") == 1


def test_the_side_view_is_shaded_where_a_servo_cannot_hold(tmp_path, capsys):
    from armctl.core.paths import PACKAGE_DIR
    from armctl.motion.holdplot import hold_masks

    arm = load_arm("braccio")
    box = (-0.45, 0.45, -0.4, 0.5)
    held, unheld = hold_masks(arm, box, 0.05, samples=20_000, bins=60)
    xs = np.linspace(box[0], box[1], 61)
    far = (xs[:-1] + xs[1:]) / 2 > 0.40
    near_axis = np.abs((xs[:-1] + xs[1:]) / 2) < 0.05
    assert unheld[:, far].any() and not unheld[:, near_axis].any()  # out at full reach, not straight up
    held0, unheld0 = hold_masks(arm, box, 0.0, samples=20_000, bins=60)
    assert unheld0.sum() < unheld.sum()
    require_module("matplotlib", "plots are drawn with matplotlib (armctl[plot])")
    program = PACKAGE_DIR.parent / "examples" / "pick_and_place_braccio.yaml"
    out = tmp_path / "p.png"
    assert main(["plot", str(program), "-o", str(out), "--payload", "50g"]) == 0 and out.stat().st_size > 10_000
