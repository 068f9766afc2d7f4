"""``armctl servos --backend dynamixel`` (issue 40, item 4) on ``dynamixelsim://``: the same setup, ids and baud
rates as on Feetech (tests/cli/test_servos.py), with Dynamixel's facts: new servos are id 1 at 57600 baud, the
baud register is a code (3: 1 Mbaud), no lock register, EEPROM writable with the torque off only."""

from __future__ import annotations

import json
import sys

from armctl.bus.dynamixel.client import DynamixelBus
from armctl.cli import main
from tests.cli.test_servos import SO101_BACK_TO_FRONT, Hands

BACKEND = ["--backend", "dynamixel"]


def _url(tmp_path, ids: str, **extra) -> str:
    query = {"ids": ids, "state": str(tmp_path / "bus.json"), **extra}
    return "dynamixelsim://?" + "&".join(f"{k}={v}" for k, v in query.items())


def _scan(capsys, url: str, *more) -> list[tuple[int, int, str]]:
    assert main([*BACKEND, "servos", "scan", "--port", url, "--json", *more]) == 0, capsys.readouterr().err
    return [(s["id"], s["baud"], s["model"]) for s in json.loads(capsys.readouterr().out)["servos"]]


def test_setup_six_factory_new_dynamixels_ends_with_ids_1_to_6_at_1_mbaud(tmp_path, monkeypatch, capsys):
    connected = tmp_path / "connected"
    url = _url(tmp_path, "1,1,1,1,1,1", connected=connected)
    hands = Hands(connected, ["1", "2", "3", "4", "5", "6", "all"])
    monkeypatch.setattr(sys, "stdin", hands)
    argv = ["--arm", "so101", *BACKEND, "servos", "setup", "--port", url, "--baud", "1000000"]
    assert main(argv) == 0, capsys.readouterr()
    out = capsys.readouterr().out
    asked = [line.split("connect only the ")[1].split(" servo")[0] for line in out.split("press Enter")[:-1][:6]]
    assert asked == SO101_BACK_TO_FRONT and hands.prompts == 7
    assert "gripper: id 1 at 57600 baud -> id 6 at 1000000 baud (xl430-w250, firmware 46)" in out
    assert "all 6 servos answer at their ids at 1000000 baud" in out
    with DynamixelBus(url, baudrate=1_000_000) as bus:
        assert [(s.id, s.get("baud_rate")) for s in bus.serial.sim.servos] == [(i, 3) for i in (6, 5, 4, 3, 2, 1)]
        assert bus.check_ids(range(1, 7)) == dict.fromkeys(range(1, 7), 1060)  # XL430-W250
    assert _scan(capsys, url, "--baud", "1000000") == [(i, 1_000_000, "xl430-w250") for i in range(1, 7)]


def test_set_id_refused_onto_a_taken_id_and_set_baud_verified(tmp_path, capsys):
    url = _url(tmp_path, "1,2", model="xl330-m288")
    assert main([*BACKEND, "servos", "set-id", "1", "2", "--yes", "--port", url]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "id 2 is taken: a servo answers there at 57600 baud" in err
    assert main([*BACKEND, "servos", "set-id", "1", "7", "--yes", "--port", url]) == 0, capsys.readouterr().err
    assert "servo 1 is now id 7 at 57600 baud (xl330-m288; read back)" in capsys.readouterr().out
    # an XL330's baud table stops at 4 Mbaud (an XL430's has 4.5): refused before any write, in one line
    assert main([*BACKEND, "servos", "set-baud", "4500000", "--id", "7", "--yes", "--port", url]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "servo 7 (XL330-M288) does not run at 4500000 baud, only at 57600" in err, err
    assert main([*BACKEND, "servos", "set-baud", "1000000", "--id", "7", "--yes", "--port", url]) == 0
    assert "servo 7 now runs at 1000000 baud" in capsys.readouterr().out
    with DynamixelBus(url, baudrate=1_000_000) as bus:
        assert bus.read(7, "baud_rate") == 3 and bus.read(7, "torque_enable") == 0
    assert _scan(capsys, url, "--baud", "57600", "1000000") == [(2, 57600, "xl330-m288"), (7, 1_000_000, "xl330-m288")]


def test_two_dynamixels_on_one_id_reported_and_refused(tmp_path, capsys):
    url = _url(tmp_path, "1,1,4")
    assert main([*BACKEND, "servos", "scan", "--port", url, "--baud", "57600", "--ids", "0-9"]) == 0
    out = capsys.readouterr().out
    assert "  1    57600  two servos (or more) on this id: their answers collide" in out
    assert "  4    57600  xl430-w250  46" in out
    assert main([*BACKEND, "servos", "set-id", "1", "9", "--yes", "--port", url]) == 2
    assert "two servos (or more) answer at id 1 at 57600 baud" in capsys.readouterr().err
    assert main([*BACKEND, "servos", "scan", "--port", url, "--baud", "115200"]) == 4
    assert capsys.readouterr().err.strip().endswith("no servo answers at any id at 115200 baud")


def test_the_koch_sets_up_on_dynamixels_without_being_told(tmp_path, monkeypatch, capsys):
    """``--arm koch servos setup``: the bus the Koch's servos speak (Dynamixel), no --backend; the Koch's ids. A servo
    of another model than the Koch has at a joint (an XL330 where its shoulder has an XL430) is refused, nothing
    written to it; --any-model takes it."""
    connected = tmp_path / "connected"
    url = _url(tmp_path, "1,1,1,1,1,1", connected=connected, model="xl330-m288")  # six XL330s: no XL430 shoulder
    monkeypatch.setattr(sys, "stdin", Hands(connected, ["1", "2", "3", "4", "5"]))
    assert main(["--arm", "koch", "servos", "setup", "--port", url, "--baud", "1000000"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "the shoulder_lift servo (id 1 at 57600 baud) is a XL330-M288" in err, err
    assert "the arm has a XL430-W250 there" in err
    url = _url(tmp_path / "fresh", "1,1,1,1,1,1", connected=connected, model="xl330-m288")  # six new ones again
    (tmp_path / "fresh").mkdir()
    monkeypatch.setattr(sys, "stdin", Hands(connected, ["1", "2", "3", "4", "5", "6", "all"]))
    argv = ["--arm", "koch", "servos", "setup", "--port", url, "--baud", "1000000", "--any-model"]
    assert main(argv) == 0, capsys.readouterr()
    assert "all 6 servos answer at their ids at 1000000 baud" in capsys.readouterr().out
    with DynamixelBus(url, baudrate=1_000_000) as bus:
        assert sorted(s.id for s in bus.serial.sim.servos) == [1, 2, 3, 4, 5, 6]


def test_a_simulated_bus_of_the_other_maker_is_one_line(capsys):
    """--backend feetech on dynamixelsim:// (and the reverse) would time out at every baud: exit 2 at once."""
    for backend, port in (("feetech", "dynamixelsim://"), ("dynamixel", "feetechsim://")):
        assert main(["--backend", backend, "servos", "scan", "--port", port]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and f"{port} simulates" in err and f"not {backend}" in err, err
