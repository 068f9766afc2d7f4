"""Finding the board: ``armctl ports`` and ``--port auto`` against ptys serving the simulated arm and
the virtual Uno (our firmware, stock StandardFirmata); ports another armctl holds are left alone. And
Firmata's start-up, which waits for the board's answer instead of pymata4's fixed 4 s."""

from __future__ import annotations

import json
import os
import threading
import time

import pytest

import armctl
from armctl.bus import probe
from armctl.bus.firmata import QUERY_AFTER_S, VERSION_QUERY, FirmataListener, wait_for_firmata
from armctl.cli import main
from armctl.sim.pty import PtySim

# StandardFirmata's announcement after reset: protocol version 2.5, then "StandardFirmata.ino" 2.5.
NAME = "StandardFirmata.ino"
ANNOUNCE = bytes([0xF9, 2, 5, 0xF0, 0x79, 2, 5]) + b"".join(bytes([ord(c), 0]) for c in NAME) + b"\xf7"


@pytest.fixture
def sim_pty():
    def start(url: str = "armsim://seed-3link?seed=1"):
        pty = PtySim(url)
        threading.Thread(target=pty.serve, daemon=True).start()
        made.append(pty)
        return pty

    made: list[PtySim] = []
    yield start
    for pty in made:
        pty.closed = True
        time.sleep(0.02)
        pty.close()


def _ports_json(capsys, *ports) -> list[dict]:
    assert main(["ports", "--json", *ports]) == 0
    return json.loads(capsys.readouterr().out)


# --- Firmata's answers, and waiting for them ----------------------------------------------------------------


def test_the_listener_finds_firmatas_reports_among_other_bytes_in_any_split():
    noise = bytes([0x90, 0x01, 0x00, 0xE3, 0x10, 0x02, 0x42])  # a digital and an analog report, a stray byte
    stream = noise + ANNOUNCE + noise
    for cut in range(1, len(stream)):
        lst = FirmataListener()
        lst.feed(stream[:cut])
        lst.feed(stream[cut:])
        v = lst.version
        assert v.protocol == "2.5" and v.firmware == NAME and v.firmware_version == "2.5", cut
        assert lst.at_boundary
    half = FirmataListener()
    half.feed(ANNOUNCE[:9])
    assert not half.at_boundary and half.version.firmware is None


class FakeUno:
    """A port on a Uno that resets when opened: silent during StandardFirmata's version blink, then its
    announcement and one answer for every query it buffered. Time is the test's."""

    def __init__(self, *, up_at_s: float | None):
        self.t = 0.0
        self.up_at = up_at_s
        self.writes: list[tuple[float, bytes]] = []
        self.out = bytearray()
        self.announced = False
        self.pending = 0

    def clock(self):
        return self.t

    def sleep(self, s):
        self.t += s

    def write(self, data):
        self.writes.append((self.t, bytes(data)))
        self.pending += data.count(VERSION_QUERY)

    def _run(self):
        if self.up_at is not None and self.t >= self.up_at:
            if not self.announced:
                self.out += ANNOUNCE
                self.announced = True
            while self.pending:
                self.out += ANNOUNCE
                self.pending -= 1

    @property
    def in_waiting(self):
        self._run()
        return len(self.out)

    def read(self, n):
        data = bytes(self.out[:n])
        del self.out[:n]
        return data

    def reset_input_buffer(self):
        self.out.clear()


def test_start_up_ends_when_the_board_answers_not_after_a_fixed_sleep():
    uno = FakeUno(up_at_s=2.1)
    version, waited = wait_for_firmata(uno, max_s=4.0, clock=uno.clock, sleep=uno.sleep)
    assert version.firmware == NAME
    assert 2.1 <= waited < 2.2  # the board's answer, plus reading what it sent after
    assert uno.writes and all(t >= QUERY_AFTER_S for t, _ in uno.writes)  # nothing during the reset
    assert uno.out == b""  # every answer was read: the next reader starts at a message boundary


def test_a_board_that_did_not_reset_answers_the_first_query():
    uno = FakeUno(up_at_s=0.0)
    uno.announced = True  # it announced itself long ago
    version, waited = wait_for_firmata(uno, max_s=4.0, clock=uno.clock, sleep=uno.sleep)
    assert version.protocol == "2.5" and QUERY_AFTER_S <= waited < QUERY_AFTER_S + 0.1


def test_no_answer_gives_up_after_the_longest_wait():
    uno = FakeUno(up_at_s=None)
    version, waited = wait_for_firmata(uno, max_s=4.0, clock=uno.clock, sleep=uno.sleep)
    assert version is None and waited == pytest.approx(4.0, abs=0.01)
    assert 3 <= len(uno.writes) <= 5  # a query a second


# --- armctl ports ------------------------------------------------------------------------------------------


def test_ports_identifies_the_simulated_arm_on_a_pty(sim_pty, capsys):
    pty = sim_pty()
    got = _ports_json(capsys, pty.path)
    assert got == [
        {
            "port": pty.path,
            "usb_id": None,
            "description": "",
            "found": "armctl",
            "detail": "armsim (armctl protocol 2, 8 channels)",
            "backend": "armctl",
            "reset_seen": got[0]["reset_seen"],  # the simulator sends its boot line when it starts, which
            "seconds": got[0]["seconds"],  # may be just after the port was opened: either is right here
        }
    ]
    assert main(["ports", pty.path]) == 0
    out = capsys.readouterr()
    assert f"{pty.path}" in out.out and "armsim (armctl protocol 2, 8 channels)" in out.out
    assert "resets an Arduino Uno" in out.err


def test_ports_identifies_feetech_bus_servos_on_a_pty(sim_pty, capsys):
    """The simulated bus answers neither our handshake nor Firmata: the pings at 1 Mbaud find its servos."""
    pty = sim_pty("feetechsim://?ids=1,2,3,4,6,9")
    (got,) = _ports_json(capsys, pty.path)
    assert got["found"] == "feetech" and got["backend"] == "feetech"
    assert got["detail"] == "Feetech bus servos STS3215: ids 1, 2, 3, 4, 6, 9"
    assert main(["ports", pty.path]) == 0
    assert "Feetech bus servos STS3215: ids 1, 2, 3, 4, 6, 9" in capsys.readouterr().out


def test_ports_identifies_dynamixel_bus_servos_on_a_pty(sim_pty, capsys):
    """Neither our handshake, Firmata nor Feetech pings: a Protocol 2.0 broadcast ping finds the Dynamixel servos."""
    pty = sim_pty("dynamixelsim://?ids=1,2,5&model=xl430,5:xl330-m288")
    (got,) = _ports_json(capsys, pty.path)
    assert got["found"] == "dynamixel" and got["backend"] == "dynamixel"
    assert got["detail"] == "Dynamixel bus servos XL330-M288, XL430-W250: ids 1, 2, 5 at 57600 baud"
    pty = sim_pty("dynamixelsim://?ids=3&baud=1000000")
    (got,) = _ports_json(capsys, pty.path)
    assert got["detail"] == "Dynamixel bus servos XL430-W250: id 3 at 1000000 baud"


@pytest.mark.parametrize(
    "url, detail",
    [
        ("feetechsim://?ids=1-3", "Feetech bus servos STS3215: ids 1, 2, 3"),
        ("dynamixelsim://?ids=1-3", "Dynamixel bus servos XL430-W250: ids 1, 2, 3 at 57600 baud"),
    ],
)
def test_a_simulated_bus_url_is_asked_for_servos_only(url, detail, monkeypatch, capsys):
    """No Arduino sits behind a simulated bus: no Uno reset is waited for (nor announced), only the servos pinged."""

    def no_board(*args):
        raise AssertionError("a simulated bus was probed for an Arduino")

    monkeypatch.setattr(probe, "_identify_board", no_board)
    assert main(["ports", url]) == 0
    out = capsys.readouterr()
    assert detail in out.out and "resets an Arduino" not in out.err


def test_a_port_another_armctl_holds_is_reported_and_not_opened(sim_pty, capsys):
    pty = sim_pty()
    with armctl.connect("seed-3link", pty.path, assume_pose="home") as robot:  # a pty: nothing reads the servos
        robot.move_joints([40, -80, -45], degrees=True)
        sent = pty.sim.host_bytes
        (got,) = _ports_json(capsys, pty.path)
        assert got["found"] == "in use" and f"pid {os.getpid()}" in got["detail"]
        assert pty.sim.host_bytes == sent  # not a byte went to the board
        robot.move_joints([45, -90, -45], degrees=True)  # and the first program did not notice


def test_a_port_with_nothing_on_it_answers_nothing(capsys):
    master, slave = os.openpty()
    try:
        (got,) = _ports_json(capsys, os.ttyname(slave))
    finally:
        os.close(master)
        os.close(slave)
    assert got["found"] == "no answer" and got["backend"] is None
    pings = len(probe.FEETECH_IDS) * probe.FEETECH_PING_S
    assert got["seconds"] < probe.FIRMATA_WAIT_S + probe.HELLO_WAIT_S + pings + 1.0


def test_the_listed_ports_that_look_like_boards_are_probed(monkeypatch, sim_pty, capsys):
    pty = sim_pty()
    listed = [probe.PortInfo(pty.path, "2341:0043", "Arduino Uno"), probe.PortInfo("/dev/ttyS0", None, "", None, False)]
    monkeypatch.setattr(probe, "candidates", lambda: listed)
    assert main(["ports"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["port", "usb", "id", "device", "what", "answered"]
    assert "2341:0043" in lines[1] and "Arduino Uno" in lines[1] and "armsim" in lines[1]
    assert "/dev/ttyS0" in lines[2] and "not probed" in lines[2]


# --- --port auto -------------------------------------------------------------------------------------------


def test_port_auto_uses_the_one_board_found(monkeypatch, sim_pty, capsys):
    pty = sim_pty()
    monkeypatch.setattr(probe, "candidates", lambda: [probe.PortInfo(pty.path, "1a86:7523", "USB Serial")])
    assert main(["--port", "auto", "status", "--json"]) == 0
    out = capsys.readouterr()
    assert json.loads(out.out)["port"] == pty.path
    assert f"--port auto: {pty.path}: armsim" in out.err


def test_port_auto_drives_the_bus_servos_found_with_the_feetech_backend(monkeypatch, sim_pty, capsys):
    pty = sim_pty("feetechsim://?ids=1-6&start=2048,2048,2050,2048,2048,2731")
    monkeypatch.setattr(probe, "candidates", lambda: [probe.PortInfo(pty.path, "1a86:55d3", "USB Single Serial")])
    assert main(["--arm", "so101", "--port", "auto", "status", "--json"]) == 0
    out = capsys.readouterr()
    report = json.loads(out.out)
    assert report["port"] == pty.path and report["backend"] == "feetech" and report["source"] == "measured"
    assert f"--port auto: {pty.path}: Feetech bus servos" in out.err
    assert main(["--port", "auto", "status"]) == 2  # seed-3link's calibration is for hobby servos: refused
    assert "feetech backend drives serial bus servos" in capsys.readouterr().err


def test_port_auto_with_none_or_many_boards_says_which_and_exits_4(monkeypatch, sim_pty, capsys):
    a, b = sim_pty(), sim_pty()
    monkeypatch.setattr(probe, "candidates", lambda: [probe.PortInfo(a.path), probe.PortInfo(b.path)])
    assert main(["--port", "auto", "status"]) == 4
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert err.startswith("armctl status: error: --port auto: 2 boards found") and a.path in err and b.path in err
    monkeypatch.setattr(probe, "candidates", lambda: [])
    assert main(["--port", "auto", "home"]) == 4
    assert "no board found (no serial ports)" in capsys.readouterr().err


# --- the virtual Uno: our firmware and stock StandardFirmata ----------------------------------------------


def test_ports_identifies_both_firmwares_on_virtual_unos_that_reset_on_open(firmata_hex, firmware_hex, capsys):
    from tools.virtual_uno import VirtualUno

    with VirtualUno(firmata_hex, reset_on_open=True) as fm, VirtualUno(firmware_hex, reset_on_open=True) as ours:
        got = {r["port"]: r for r in _ports_json(capsys, fm.pty, ours.pty)}
        opened = [e.name for e in fm.events() if e.name == "open"]
    f, o = got[fm.pty], got[ours.pty]
    assert f["found"] == "firmata" and f["backend"] == "firmata" and f["reset_seen"] is True
    assert f["detail"].startswith("StandardFirmata.ino 2.") and "(Firmata protocol 2." in f["detail"]
    assert o["found"] == "armctl" and o["detail"].startswith("armctl-fw (armctl protocol 2") and o["reset_seen"]
    assert opened == ["open"]  # opened once: the speed changed on the open port, no second reset
    print(f"probe: StandardFirmata {f['seconds']:.2f} s, our firmware {o['seconds']:.2f} s")


def test_port_auto_picks_the_firmata_backend_and_firmata_starts_on_the_boards_answer(firmata_hex, monkeypatch, capsys):
    from tools.virtual_uno import VirtualUno

    with VirtualUno(firmata_hex, reset_on_open=True) as uno:
        monkeypatch.setattr(probe, "candidates", lambda: [probe.PortInfo(uno.pty, "2341:0043", "Arduino Uno")])
        assert main(["--port", "auto", "--assume-pose", "home", "home", "--json"]) == 0
        out = capsys.readouterr()
        assert json.loads(out.out)["backend"] == "firmata"
        t0 = time.monotonic()
        with armctl.connect("seed-3link", uno.pty, "firmata") as robot:
            started = time.monotonic() - t0
            version, waited = robot.backend.board.armctl_start
            robot.move_joints([40, -80, -45], degrees=True)
    assert version.firmware == NAME and waited < robot.backend.arduino_wait_s  # the answer ended the wait
    print(f"Firmata start: {started:.2f} s (waited {waited:.2f} s for the board; pymata4 alone sleeps 4 s)")
