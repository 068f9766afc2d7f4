"""Golden wire tests for a base arm and a bus arm: what reaches the board must not change unnoticed.

The seed-3link golden (tests/golden/pick_and_place.moves, in test_robot.py) covers a planar arm on a version 1
board. These cover the other two kinds of arm: the MeArm (a rotating base, four servos and the gripper) on our
version 2 protocol, and the SO-101 (Feetech bus servos) on the simulated bus. Only what the plan decides is
compared (the sequenced move lines; the goal positions of the SYNC WRITE packets), not what depends on timing
(status requests, resends). If a change is intended, regenerate with
``ARMCTL_UPDATE_GOLDEN=1 pytest tests/bus/test_wire_golden.py`` and review the diff.
"""

from __future__ import annotations

import os
from pathlib import Path

import armctl
from armctl.bus.feetech.client import SYNC_WRITE

ROOT = Path(__file__).resolve().parents[2]
GOLDEN = ROOT / "tests" / "golden"


def _check(name: str, got: bytes) -> None:
    path = GOLDEN / name
    if os.environ.get("ARMCTL_UPDATE_GOLDEN") == "1":
        path.write_bytes(got)
    assert got == path.read_bytes(), f"what {name} holds changed ({len(got)} bytes now)"


def _moves_sent(wire_log: Path) -> bytes:
    """The sequenced move lines the host sent, each once (a resend of a line counts once)."""
    import ast

    out, expect = [], None
    for line in wire_log.read_text().splitlines():
        parts = line.split(None, 2)
        if len(parts) != 3 or parts[1] != ">":
            continue
        for chunk in ast.literal_eval(parts[2]).split(b"\n"):
            fields = chunk.split(b" ")
            if len(fields) < 3 or fields[1] in (b"H", b"Q", b"X"):
                continue
            seq = int(fields[0])
            if expect is not None and seq != expect:
                continue
            expect = (seq + 1) % 256
            if fields[1] == b"M":
                out.append(chunk + b"\n")
    return b"".join(out)


def test_a_base_arm_sends_the_same_moves(tmp_path):
    log = tmp_path / "wire.log"
    with armctl.connect("mearm", "armsim://?rate=20&seed=1", wire_log=log) as robot:
        robot.run(ROOT / "examples" / "pick_and_place_mearm.yaml")
    moves = _moves_sent(log)
    assert moves.count(b"\n") > 50
    _check("pick_and_place_mearm.moves", moves)


SO101_PROGRAM = """\
arm: so101
settings: {speed_mm_s: 120, accel_mm_s2: 600}
poses:
  home: {q_deg: [0, 76, -74, -5, 0]}
  part: {xyz_mm: [190, -120, 12], phi_deg: -90}
  slot: {xyz_mm: [180, 60, 32], phi_deg: -90}
start: home
steps:
  - gripper: open
  - {joint: part, offset_mm: [0, 0, 30]}
  - {line: part}
  - gripper: close
  - {line: slot, offset_mm: [0, 0, 30]}
  - {line: slot}
  - gripper: open
  - {joint: home}
"""


def test_a_bus_arm_sends_the_same_goal_positions(tmp_path):
    program = tmp_path / "so101.yaml"
    program.write_text(SO101_PROGRAM)
    with armctl.connect("so101", "feetechsim://") as robot:
        robot.run(program)
        packets = [p for _, p in robot.backend.bus.serial.sim.log if p.code == SYNC_WRITE]
    lines = [f"{p.id} {p.params.hex()}\n" for p in packets]
    assert len(lines) > 50
    _check("so101_pick.syncwrite", "".join(lines).encode())
