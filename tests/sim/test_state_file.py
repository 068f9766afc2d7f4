"""The simulated servo buses' ``state=FILE`` (``feetechsim://``, ``dynamixelsim://``): a file that is not this
simulator's own state, or a place it cannot be written, is refused at open in one line naming the option, the path
and why, and left untouched; a good state file (also one written before the simulator marked its files) is kept."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from armctl.sim.dynamixelsim import DynamixelSim
from armctl.sim.feetechsim import FeetechSim
from armctl.sim.protocol_dynamixelsim import open_simulator as open_dynamixel
from armctl.sim.protocol_dynamixelsim import parse_url as parse_dynamixel
from armctl.sim.protocol_feetechsim import open_simulator as open_feetech
from armctl.sim.protocol_feetechsim import parse_url as parse_feetech
from armctl.sim.simurl import BadSimURL

SIMS = {
    "feetechsim": (FeetechSim, parse_feetech, open_feetech),
    "dynamixelsim": (DynamixelSim, parse_dynamixel, open_dynamixel),
}
OTHER = {"feetechsim": "dynamixelsim", "dynamixelsim": "feetechsim"}

LEROBOT_CAL = {
    name: {"id": i + 1, "drive_mode": 0, "homing_offset": 0, "range_min": 0, "range_max": 4095}
    for i, name in enumerate(("shoulder_pan", "shoulder_lift", "elbow_flex", "wrist_flex", "wrist_roll", "gripper"))
}

NOT_STATE = {
    "lerobot.json": json.dumps(LEROBOT_CAL).encode(),
    "program.yaml": b"version: 1\nsteps:\n  - move: [0, 0.2, 0.1]\n",
    "noise.bin": bytes(range(256)) * 3 + b"\xff\xfe\x00",
    "other.json": json.dumps({"series": "dynamixel", "servos": "all of them"}).encode(),
    "list.json": b"[1, 2, 3]",
    "bad_servo.json": json.dumps({"series": "dynamixel", "servos": [{"eeprom": "zz", "raw_steps": 1}]}).encode(),
    "deep.json": b"[" * 10_000 + b"]" * 10_000,  # json.loads recursed out of the stack (a traceback)
    "million.json": b'{"series": "sts", "servos": [' + b",".join([b"{}"] * 1_000_000) + b"]}",
}


def _state_of(scheme: str, tmp_path: Path, name: str = "made.json") -> Path:
    """A state file written by ``scheme``'s simulator (servo 1 at 1500 steps)."""
    cls, parse, _ = SIMS[scheme]
    path = tmp_path / name
    cls(parse(f"{scheme}://?ids=1,2&start=1500&state={path}")).save_state()
    return path


def _refused(scheme: str, path: Path, *, words: str) -> str:
    """Open ``scheme://`` on the state file ``path``: BadSimURL in one line naming the option and path."""
    _, _, open_url = SIMS[scheme]
    with pytest.raises(BadSimURL) as err:
        open_url(f"{scheme}://?ids=1-6&state={path}")
    message = str(err.value)
    assert "\n" not in message
    assert f"{scheme} option state={path}:" in message
    assert words in message
    return message


@pytest.mark.parametrize("scheme", SIMS)
@pytest.mark.parametrize("name", NOT_STATE)
def test_a_file_that_is_not_a_state_file_is_refused_and_kept(scheme, name, tmp_path):
    path = tmp_path / name
    path.write_bytes(NOT_STATE[name])
    _refused(scheme, path, words="; it is left as it is (give another file)")
    assert path.read_bytes() == NOT_STATE[name]
    assert sorted(p.name for p in tmp_path.iterdir()) == [name]  # no temporary left beside it


@pytest.mark.parametrize("scheme", SIMS)
def test_another_simulators_state_is_refused_and_kept(scheme, tmp_path):
    path = _state_of(OTHER[scheme], tmp_path)
    before = path.read_bytes()
    _refused(scheme, path, words=f"another simulator ({OTHER[scheme]})")
    assert path.read_bytes() == before


@pytest.mark.parametrize("scheme", SIMS)
def test_another_simulators_state_written_before_the_marker_is_refused(scheme, tmp_path):
    path = _state_of(OTHER[scheme], tmp_path)
    data = json.loads(path.read_text())
    del data["simulator"]
    path.write_text(json.dumps(data))
    _refused(scheme, path, words=f"the state of {data['series']!r} servos")
    assert json.loads(path.read_text()) == data


def test_a_feetech_state_of_another_series_is_refused(tmp_path):
    path = _state_of("feetechsim", tmp_path)
    before = path.read_bytes()
    with pytest.raises(BadSimURL, match=r"state of 'sts' servos, not the scs ones"):
        open_feetech(f"feetechsim://?ids=1&model=scs&state={path}")
    assert path.read_bytes() == before


@pytest.mark.parametrize("scheme", SIMS)
def test_a_folder_or_a_place_that_cannot_be_written_is_refused(scheme, tmp_path):
    _refused(scheme, tmp_path, words="is a folder")
    afile = tmp_path / "afile"
    afile.write_text("x")
    _refused(scheme, afile / "state.json", words=f"{afile} is not a folder")
    assert afile.read_text() == "x"
    if os.path.isdir("/proc/self"):  # a folder no file can be made in, whoever runs the test (root too)
        _refused(scheme, Path("/proc/armctl-state.json"), words="cannot write in /proc")


@pytest.mark.parametrize("scheme", SIMS)
def test_a_good_state_file_keeps_the_servos_and_is_marked(scheme, tmp_path):
    path = _state_of(scheme, tmp_path)
    data = json.loads(path.read_text())
    assert data["simulator"] == scheme
    cls, parse, _ = SIMS[scheme]
    sim = cls(parse(f"{scheme}://?ids=7&state={path}"))  # the servos keep what the file says, as real ones
    assert sorted(s.id for s in sim.servos) == [1, 2]


@pytest.mark.parametrize("scheme", SIMS)
def test_a_state_file_written_before_the_marker_is_still_read(scheme, tmp_path):
    path = _state_of(scheme, tmp_path)
    data = json.loads(path.read_text())
    del data["simulator"]
    path.write_text(json.dumps(data))
    _, _, open_url = SIMS[scheme]
    port = open_url(f"{scheme}://?ids=7&state={path}")
    assert sorted(s.id for s in port.sim.servos) == [1, 2]
    port.close()
    assert json.loads(path.read_text())["simulator"] == scheme  # written again with the marker


@pytest.mark.parametrize("scheme", SIMS)
def test_a_new_state_file_in_new_folders_and_an_empty_one_are_taken(scheme, tmp_path):
    _, _, open_url = SIMS[scheme]
    for path in (tmp_path / "a" / "b" / "bus.json", tmp_path / "empty.json"):
        if path.name == "empty.json":
            path.touch()
        port = open_url(f"{scheme}://?ids=3&state={path}")
        port.close()
        assert json.loads(path.read_text())["simulator"] == scheme


def test_armctl_refuses_it_with_exit_2(tmp_path):
    victim = tmp_path / "victim.json"
    victim.write_text(json.dumps(LEROBOT_CAL))
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    url = f"dynamixelsim://?ids=1-6&state={victim}"
    done = subprocess.run(
        [sys.executable, "-m", "armctl", "--arm", "koch", "--port", url, "status"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert done.returncode == 2, done.stderr
    assert f"dynamixelsim option state={victim}: not a dynamixelsim state file" in done.stderr
    assert json.loads(victim.read_text()) == LEROBOT_CAL
