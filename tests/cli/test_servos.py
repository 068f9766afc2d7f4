"""``armctl servos`` (issue 40, item 4) on the simulated Feetech bus: scan, set-id, set-baud and the one-servo-at-a-
time setup of factory-new servos, driven through its prompts (stdin) and the simulator's ``connected`` file."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from armctl.bus.feetech.client import FeetechBus
from armctl.cli import main
from tests.helpers import require_module

SO101_BACK_TO_FRONT = ["gripper", "wrist_roll", "wrist_flex", "elbow_flex", "shoulder_lift", "shoulder_pan"]


class Hands:
    """stdin for the prompts, and the hands that plug servos in between them: before answering the k-th prompt, the
    ``connected`` file is set to ``plugs[k]`` (a servo's place in ``ids``, or ``all``)."""

    def __init__(self, connected: Path, plugs: list[str], answer: str = "\n"):
        self.connected, self.plugs, self.answer = connected, list(plugs), answer
        self.prompts = 0

    def readline(self) -> str:
        if not self.plugs:
            return ""  # stdin ended
        self.connected.write_text(self.plugs.pop(0))
        self.prompts += 1
        return self.answer


def _url(tmp_path, ids: str, **extra) -> str:
    query = {"ids": ids, "state": str(tmp_path / "bus.json"), **extra}
    return "feetechsim://?" + "&".join(f"{k}={v}" for k, v in query.items())


def _scan_json(capsys, url: str, *more) -> list[dict]:
    assert main(["servos", "scan", "--port", url, "--json", *more]) == 0, capsys.readouterr().err
    return json.loads(capsys.readouterr().out)["servos"]


def _ids_bauds(servos: list[dict]) -> list[tuple[int, int]]:
    return [(s["id"], s["baud"]) for s in servos]


def test_setup_so101_gives_six_factory_new_servos_ids_1_to_6_at_the_asked_baud(tmp_path, monkeypatch, capsys):
    """The issue's done-when line: six new servos, all id 1 at 1 Mbaud, plugged in one at a time when asked."""
    connected = tmp_path / "connected"
    url = _url(tmp_path, "1,1,1,1,1,1", connected=connected)
    hands = Hands(connected, ["1", "2", "3", "4", "5", "6", "all"])  # one servo a prompt, then all of them
    monkeypatch.setattr(sys, "stdin", hands)
    assert main(["--arm", "so101", "servos", "setup", "--port", url, "--baud", "500000"]) == 0, capsys.readouterr()
    out = capsys.readouterr().out
    asked = [line for line in out.split("press Enter") if "connect only the" in line]
    assert [a.split("connect only the ")[1].split(" servo")[0] for a in asked] == SO101_BACK_TO_FRONT
    assert hands.prompts == 7 and "all 6 servos answer at their ids at 500000 baud" in out
    assert "gripper: id 1 at 1000000 baud -> id 6 at 500000 baud (sts3215, firmware 3.7)" in out
    # each servo (its place in ids) got its joint's id, at 500000 baud, kept over a power cycle (written unlocked)
    with FeetechBus(url, baudrate=500000) as bus:
        sim = bus.serial.sim
        assert [s.get("lock") for s in sim.servos] == [1] * 6  # locked again after the writes
        sim.power_cycle()
        assert [(s.id, s.baud) for s in sim.servos] == [(6, 500000), (5, 500000), (4, 500000), (3, 500000),
                                                        (2, 500000), (1, 500000)]  # fmt: skip
        assert sorted(bus.scan(range(10))) == [1, 2, 3, 4, 5, 6]
    assert _ids_bauds(_scan_json(capsys, url)) == [(i, 500000) for i in range(1, 7)]


def test_setup_refuses_two_servos_plugged_in_at_once(tmp_path, monkeypatch, capsys):
    connected = tmp_path / "connected"
    url = _url(tmp_path, "1,1,1", connected=connected)
    monkeypatch.setattr(sys, "stdin", Hands(connected, ["1,2"]))
    assert main(["--arm", "so101", "servos", "setup", "--port", url]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0
    assert "two servos (or more) answer at id 1 at 1000000 baud" in err and "connect only the gripper servo" in err
    with FeetechBus(url) as bus:
        assert [s.id for s in bus.serial.sim.servos] == [1, 1, 1]  # nothing written


def test_setup_with_no_servo_connected_says_so_in_one_line(tmp_path, monkeypatch, capsys):
    connected = tmp_path / "connected"
    monkeypatch.setattr(sys, "stdin", Hands(connected, [""]))
    assert main(["--arm", "so101", "servos", "setup", "--port", _url(tmp_path, "1", connected=connected)]) == 4
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "no servo answers at any id at any baud rate" in err
    assert "is the gripper servo connected and powered?" in err


def test_setup_refuses_a_model_armctl_does_not_know(tmp_path, monkeypatch, capsys):
    connected = tmp_path / "connected"
    url = _url(tmp_path, "1", connected=connected)
    with FeetechBus(url):
        pass  # the state file
    state = json.loads((tmp_path / "bus.json").read_text())
    eeprom = bytearray.fromhex(state["servos"][0]["eeprom"])
    eeprom[3:5] = (1234).to_bytes(2, "little")  # model_number
    state["servos"][0]["eeprom"] = eeprom.hex()
    (tmp_path / "bus.json").write_text(json.dumps(state))
    assert _scan_json(capsys, _url(tmp_path, "1"))[0]["known_model"] is False
    monkeypatch.setattr(sys, "stdin", Hands(connected, ["1"]))
    assert main(["--arm", "so101", "servos", "setup", "--port", url]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert "the gripper servo (id 1 at 1000000 baud) reports model number 1234, a model armctl does not know" in err
    before = (tmp_path / "bus.json").read_text()
    for argv in (["set-id", "1", "7"], ["set-baud", "500000", "--id", "1"]):  # set-id and set-baud: the same
        assert main(["servos", *argv, "--port", _url(tmp_path, "1"), "--yes"]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "servo 1 (id 1 at 1000000 baud) reports model number 1234" in err, err
    assert (tmp_path / "bus.json").read_text() == before  # nothing written


def test_setup_needs_a_bus_servo_arm(capsys):
    assert main(["servos", "setup"]) == 2
    assert "servos setup needs --arm ARM" in capsys.readouterr().err
    assert main(["--arm", "mearm", "servos", "setup"]) == 2
    assert "drives hobby servos, not bus servos" in capsys.readouterr().err


def test_set_id_onto_a_taken_id_is_refused_with_nothing_written(tmp_path, capsys):
    url = _url(tmp_path, "1,2")
    _scan_json(capsys, url, "--baud", "1000000")  # the state file, as the bus stands
    before = (tmp_path / "bus.json").read_text()
    assert main(["servos", "set-id", "1", "2", "--yes", "--port", url]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "id 2 is taken: a servo answers there at 1000000 baud" in err
    assert "nothing written" in err
    assert (tmp_path / "bus.json").read_text() == before
    # a taken id at another baud rate is refused as well (the two would share it once at one rate)
    with FeetechBus(url) as bus:
        bus.write(2, "baud_rate", 2)  # servo 2 to 250000 baud (lock 0: kept)
    assert main(["servos", "set-id", "1", "2", "--yes", "--port", url]) == 2
    assert "at 250000 baud" in capsys.readouterr().err


def test_set_id_asks_writes_and_reads_back(tmp_path, monkeypatch, capsys):
    url = _url(tmp_path, "1,2")
    monkeypatch.setattr(sys, "stdin", Hands(tmp_path / "unused", ["n\n"], answer="n\n"))
    assert main(["servos", "set-id", "1", "9", "--port", url]) == 2
    captured = capsys.readouterr()
    assert "write id 9 into the EEPROM of servo 1 (sts3215, 1000000 baud)? [y/N]" in captured.out
    assert "not confirmed: nothing written" in captured.err
    monkeypatch.setattr(sys, "stdin", Hands(tmp_path / "unused", ["y\n"], answer="y\n"))
    assert main(["servos", "set-id", "1", "9", "--port", url]) == 0, capsys.readouterr().err
    assert "servo 1 is now id 9 at 1000000 baud (sts3215; read back)" in capsys.readouterr().out
    assert _ids_bauds(_scan_json(capsys, url)) == [(2, 1000000), (9, 1000000)]


def test_set_id_of_two_servos_on_one_id_is_refused(tmp_path, capsys):
    url = _url(tmp_path, "3,3,4")
    assert main(["servos", "set-id", "3", "7", "--yes", "--port", url]) == 2
    err = capsys.readouterr().err
    assert "two servos (or more) answer at id 3 at 1000000 baud" in err and "connect only one of them" in err
    with FeetechBus(url) as bus:
        assert [s.id for s in bus.serial.sim.servos] == [3, 3, 4]


def test_set_baud_is_verified_at_the_new_baud(tmp_path, capsys):
    url = _url(tmp_path, "1,2")
    assert main(["servos", "set-baud", "115200", "--id", "2", "--yes", "--port", url]) == 0, capsys.readouterr().err
    assert "servo 2 now runs at 115200 baud (sts3215; read back at 115200 baud)" in capsys.readouterr().out
    with FeetechBus(url, baudrate=115200) as bus:
        assert bus.read(2, "baud_rate") == 4 and bus.scan(range(5)) == {2: 0}
        bus.serial.sim.power_cycle()
        assert bus.scan(range(5)) == {2: 0}  # kept over a power cycle: written unlocked
    # the scan finds the servos at their mixed baud rates
    assert _ids_bauds(_scan_json(capsys, url)) == [(1, 1000000), (2, 115200)]


def test_set_baud_locks_the_eeprom_again(tmp_path, capsys):
    url = _url(tmp_path, "5")
    assert main(["servos", "set-baud", "57600", "--yes", "--port", url]) == 0, capsys.readouterr().err
    with FeetechBus(url, baudrate=57600) as bus:  # the servos stayed powered between runs (the state's SRAM)
        assert bus.read(5, "lock") == 1 and bus.read(5, "torque_enable") == 0


def test_set_baud_refused_where_its_id_is_taken_at_the_new_baud(tmp_path, capsys):
    connected = tmp_path / "connected"
    url = _url(tmp_path, "1,1", connected=connected)
    connected.write_text("2")
    with FeetechBus(url) as bus:
        bus.write(1, "baud_rate", 1)  # the second servo 1 runs at 500000 baud: apart, they do not collide yet
    connected.write_text("all")
    assert main(["servos", "set-baud", "500000", "--id", "1", "--yes", "--port", url]) == 2
    err = capsys.readouterr().err
    assert "id 1 is taken: a servo answers there at 500000 baud (servo 1 at 1000000 baud would share it)" in err
    assert "nothing written" in err
    assert _ids_bauds(_scan_json(capsys, url)) == [(1, 1000000), (1, 500000)]


def test_scan_reports_two_servos_on_one_id(tmp_path, capsys):
    url = _url(tmp_path, "1,1,7", baud=500000)
    servos = _scan_json(capsys, url, "--baud", "500000")
    assert servos == [
        {
            "id": 1,
            "baud": 500000,
            "model_number": None,
            "model": None,
            "firmware": None,
            "known_model": False,
            "collision": True,
        },
        {
            "id": 7,
            "baud": 500000,
            "model_number": 777,
            "model": "sts3215",
            "firmware": "3.7",
            "known_model": True,
            "collision": False,
        },
    ]
    assert main(["servos", "scan", "--port", url, "--baud", "500000", "--ids", "1-3"]) == 0
    out = capsys.readouterr().out
    assert "  1   500000  two servos (or more) on this id: their answers collide" in out and " 7 " not in out


def test_a_baud_no_servo_answers_at_is_one_line(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    run = subprocess.run(
        [sys.executable, "-m", "armctl", "servos", "scan", "--baud", "38400", "--port", "feetechsim://"],
        capture_output=True, text=True, env=env, timeout=60,
    )  # fmt: skip
    assert run.returncode == 4, run.stderr
    assert run.stderr == "armctl servos: error: feetechsim://: no servo answers at any id at 38400 baud\n"
    assert run.stdout == ""


@pytest.mark.parametrize(
    ("argv", "match"),
    [
        (["servos", "scan", "--baud", "9600"], "baud rate 9600 is not one a feetech servo runs at"),
        (["servos", "scan", "--ids", "3-x"], "--ids '3-x': expected A-B or N"),
        (["servos", "scan", "--ids", "250-260"], "--ids '250-260': ids must be 0..252"),
        (["servos", "set-id", "1", "300", "--yes"], "NEW id 300 is outside 0..252"),
        (["servos", "set-baud", "1234", "--yes"], "BAUD 1234 is not one a feetech servo runs at"),
        (["--backend", "firmata", "servos", "scan"], "--backend firmata: armctl servos knows feetech"),
        (["servos", "scan", "--timeout-ms", "0"], "0 ms is outside 0.5..1000"),
    ],
)
def test_bad_input_is_one_line_exit_2(argv, match, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and match in err, err


def test_setup_on_a_pty_then_the_vendor_sdk_finds_ids_1_to_6(tmp_path, pty_bus):
    """The whole setup as a user runs it (a process, its prompts on stdout, Enter on stdin) on the simulator served
    on a pty; then Feetech's own SDK, not armctl, pings each id at the asked baud and reads its ID register."""
    scs = require_module("scservo_sdk", "the vendor's Feetech SDK: pip install feetech-servo-sdk")
    connected = tmp_path / "connected"
    path = pty_bus(f"feetechsim://?ids=1,1,1,1,1,1&connected={connected}")
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    argv = [sys.executable, "-m", "armctl", "--arm", "so101", "servos", "setup", "--port", path, "--baud", "250000"]
    argv += ["--timeout-ms", "60"]  # the simulator is another process: on a loaded machine it answers late
    proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env)
    out, plugged = "", 0
    while ch := proc.stdout.read(1):
        out += ch
        if out.endswith("press Enter "):  # the prompt: plug the next servo in (then all of them), press Enter
            plugged += 1
            connected.write_text(str(plugged) if plugged <= 6 else "all")
            proc.stdin.write("\n")
            proc.stdin.flush()
    assert proc.wait(30) == 0, out
    assert plugged == 7 and "all 6 servos answer at their ids at 250000 baud" in out
    port = scs.PortHandler(path)
    assert port.openPort() and port.setBaudRate(250000)
    try:
        handler = scs.PacketHandler(0)
        for servo_id in range(1, 7):
            for _ in range(3):  # the SDK's fixed wait, on a loaded machine
                model, result, error = handler.ping(port, servo_id)
                if result == scs.COMM_SUCCESS:
                    break
            assert (model, result, error) == (777, scs.COMM_SUCCESS, 0), servo_id
            value, result, _ = handler.read1ByteTxRx(port, servo_id, 5)  # ID
            assert (value, result) == (servo_id, scs.COMM_SUCCESS)
    finally:
        port.closePort()


def test_q_at_a_setup_prompt_stops_and_writes_nothing_more(tmp_path, monkeypatch, capsys):
    connected = tmp_path / "connected"
    url = _url(tmp_path, "1,1", connected=connected)
    monkeypatch.setattr(sys, "stdin", Hands(connected, ["1"], answer="q\n"))
    assert main(["--arm", "so101", "servos", "setup", "--port", url]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "servos setup: stopped (q)" in err, err
    connected.write_text("all")
    assert [s["id"] for s in _scan_json(capsys, url)] == [1]  # both still id 1: nothing written (a collision)
