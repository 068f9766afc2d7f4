"""`armctl run` after an unclean stop with no terminal (a service, a cron job: stdin not a TTY). It used to start
over at step 1 and open the gripper at the start pose, dropping the part it carried. Now it does not guess: one
line naming --resume, --from-step and --restart, exit 2, nothing sent; with any of them it runs."""

from __future__ import annotations

import dataclasses
import io
import math
import time
from pathlib import Path

import pytest

import armctl
from armctl.cli import main
from armctl.robot.state import PoseStore, RunStore

ROOT = Path(__file__).resolve().parents[2]
PROGRAM = ROOT / "examples" / "pick_and_place.yaml"


@pytest.fixture(autouse=True)
def _dirs(tmp_path, monkeypatch):
    monkeypatch.setattr("sys.stdin", io.StringIO(""))  # not a terminal


def _crashed_mid_carry(port: str) -> None:
    """Run the program until it carries the first part, then leave the state files as a kill leaves them: the pose
    journal unclean, the run record 'running'."""
    with armctl.connect("seed-3link", port) as robot:
        m = robot.run(PROGRAM, wait=False)
        closed = robot.arm.gripper.closed_rad

        def carrying():
            g = robot.where().gripper_rad
            return g is not None and abs(g - closed) < math.radians(1)

        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and not carrying():
            time.sleep(0.02)
        assert carrying(), "the first part was never picked"
        robot.stop("test")
        with pytest.raises(armctl.StopRequested):
            m.wait()
        url, arm = robot.port, robot.arm
    store = PoseStore(url, arm)
    stored = store.load()
    store.save(stored.q_rad, stored.gripper_rad, stored.values, clean=False, cal=stored.cal)
    store.close()
    runs = RunStore(url, arm)
    runs.save(dataclasses.replace(runs.load(), status="running"))
    runs.close()


def _moves(wire: Path) -> int:
    return sum(1 for line in wire.read_text().splitlines() if " > " in line and " M " in line) if wire.exists() else 0


def test_without_a_terminal_it_refuses_naming_the_options_and_moves_nothing(tmp_path, capsys):
    port = f"armsim://?rate=20&seed=1&state={tmp_path / 'sim.json'}"
    _crashed_mid_carry(port)
    wire = tmp_path / "wire.txt"
    code = main(["--port", port, "run", str(PROGRAM), "--wire-log", str(wire)])
    err = [line for line in capsys.readouterr().err.strip().splitlines() if "error" in line]
    assert code == 2 and len(err) == 1, err
    assert all(opt in err[0] for opt in ("--resume", "--from-step", "--restart")) and "gripper is closed" in err[0]
    assert _moves(wire) == 0


@pytest.mark.parametrize("how", [["--resume"], ["--from-step", "1"], ["--restart"]])
def test_each_option_goes_on(tmp_path, capsys, how):
    port = f"armsim://?rate=20&seed=1&state={tmp_path / 'sim.json'}"
    _crashed_mid_carry(port)
    code = main(["--port", port, "run", str(PROGRAM), *how, "--json"])
    assert code == 0, capsys.readouterr().err
