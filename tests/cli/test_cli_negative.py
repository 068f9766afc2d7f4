"""Negative numbers and lengths (-40mm, -0.1, -.5, -1e-3) are values wherever a coordinate or angle goes, run as a
user types them (a real ``armctl`` process); real options still work and a real typo is still refused."""

import json
import subprocess
import sys

import pytest


def armctl(*argv):
    p = subprocess.run([sys.executable, "-m", "armctl", *argv], capture_output=True, text=True, timeout=60)
    return p.returncode, p.stdout, p.stderr


def test_jog_with_negative_lengths_and_units():
    code, out, err = armctl("--arm", "mearm", "jog", "150mm", "-40mm", "50mm", "--json")
    assert code == 0, err
    assert json.loads(out)["tool_m"] == pytest.approx([0.15, -0.04, 0.05], abs=1.5e-3)


@pytest.mark.parametrize(
    "argv, want",
    [
        (["--arm", "mearm", "ik", "150mm", "-40mm", "50mm", "--json"], None),
        (["--arm", "mearm", "ik", "0.15", "-0.04", "0.05", "--json"], None),
        (["--arm", "mearm", "ik", "15cm", "-4cm", "-.5cm", "--json"], None),
        (["ik", "0.5", "-4e-1", "--phi", "-30", "--json"], None),
        (["ik", "-0.3", "0.4", "--from", "120", "-40", "-20", "--json"], None),
    ],
)
def test_ik_takes_negative_values(argv, want):
    code, out, err = armctl(*argv)
    assert code == 0, err
    d = json.loads(out)
    assert d["ok"]
    coords = [a for a in argv[argv.index("ik") + 1 :] if not a.startswith("--")][: len(d["target_m"])]
    from armctl.core.units import parse_length

    assert d["target_m"] == pytest.approx([parse_length(c) for c in coords])


def test_fk_takes_negative_angles():
    code, out, err = armctl("--arm", "mearm", "fk", "-20", "90", "-10.5", "--json")
    assert code == 0, err
    assert json.loads(out)["q_deg"] == [-20.0, 90.0, -10.5]


def test_options_and_typos_still_options():
    code, out, err = armctl("ik", "0.5", "-0.4", "--bogus")
    assert code == 2 and "unrecognized arguments: --bogus" in err
    code, out, err = armctl("ik", "0.5", "0.4", "-x")
    assert code == 2 and "-x" in err
    code, out, err = armctl("plot", "examples/pick_and_place.yaml", "-o")
    assert code == 2 and "-o" in err
