"""armctl jog/run/home/status on the simulated arm, and the Firmata backend against a fake pymata4."""

from __future__ import annotations

import json

import pytest

from armctl.bus.firmata import FirmataBackend
from armctl.cli import main
from armctl.errors import LinkError

FAST = "armsim://?rate=50&seed=1"


def _json(capsys, argv):
    assert main(argv) == 0
    return json.loads(capsys.readouterr().out)


def test_jog_lands_within_a_millimetre(capsys):
    out = _json(capsys, ["--port", FAST, "jog", "0.5", "0.2", "--speed", "200", "--json"])
    assert abs(out["tool_m"][0] - 0.5) < 1e-3 and abs(out["tool_m"][1] - 0.2) < 1e-3
    assert len(out["q_deg"]) == 3 and out["source"] == "measured" and out["detail"] == "simulated servos"


def test_run_dry_run_opens_no_port(capsys):
    out = _json(capsys, ["--port", "/dev/nonexistent", "run", "examples/pick_and_place.yaml", "--dry-run", "--json"])
    assert out["dry_run"] and out["duration_s"] > 1


def test_run_on_sim_with_wire_log(tmp_path, capsys):
    log = tmp_path / "wire.log"
    out = _json(
        capsys,
        [
            "--arm",
            "seed-2link",
            "--port",
            FAST,
            "run",
            "examples/pick_and_place_2link.yaml",
            "--wire-log",
            str(log),
            "--json",
        ],
    )
    assert out["error_m"] < 1e-3
    text = log.read_text()
    # the reply may share its read with the board's boot line ("- ! BOOT ...\\n0 H armsim 2 ...")
    assert " > b'0 H *8EE8\\n'" in text and "0 H armsim 2" in text


def test_home_and_status(capsys):
    out = _json(capsys, ["--port", FAST, "home", "--json"])
    assert out["q_deg"] == pytest.approx([45, -90, -45], abs=0.1)
    st = _json(capsys, ["--port", FAST, "status", "--json"])
    assert st["firmware"] == "armsim" and st["protocol"] == 2 and "tool_m" in st


def test_watchdog_option_reaches_the_board(tmp_path, capsys):
    log = tmp_path / "wire.log"
    # armsim://?rate=50 runs its clock 50x: the board is told 50x the host's seconds (capped at 65 s)
    argv = ["--port", "armsim://?rate=1&seed=1", "--watchdog", "2.5", "status", "--json", "--wire-log", str(log)]
    _json(capsys, argv)
    sent = [line for line in log.read_text().splitlines() if " > " in line and " W " in line]
    assert " W 2500 H " in sent[0] and " W 0 H " in sent[-1], sent  # armed while open, off at close


@pytest.mark.parametrize("value", ["nan", "inf", "-1", "0.01", "66", "soon"])
def test_watchdog_option_refuses_nonsense(value, capsys):
    assert main(["--watchdog", value, "--port", "/dev/nonexistent", "status"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--watchdog" in err


def test_unreachable_jog_fails_before_any_port(capsys):
    assert main(["--port", "/dev/nonexistent", "jog", "5", "5"]) == 3
    assert "error" in capsys.readouterr().err


def test_bad_port_is_exit_4(capsys):
    assert main(["--port", "/dev/nonexistent-armctl", "status"]) == 4
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "cannot open port" in err


class FakePymata:
    def __init__(self, **kw):
        self.kw = kw
        self.calls = []

    def set_pin_mode_servo(self, pin, lo, hi):
        self.calls.append(("config", pin, lo, hi))

    def servo_write(self, pin, value):
        self.calls.append(("write", pin, value))

    def shutdown(self):
        self.calls.append(("shutdown",))

    def _stop_threads(self):
        self.calls.append(("stop threads",))

    @property
    def serial_port(self):
        calls = self.calls

        class Port:
            def close(self):
                calls.append(("close port",))

        return Port()


def test_firmata_attach_then_write_at_once_and_host_timed_frames():
    fake = {}
    clock = [0.0]

    def factory(**kw):
        fake["b"] = FakePymata(**kw)
        return fake["b"]

    def sleep(dt):
        clock[0] += dt

    b = FirmataBackend(
        "/dev/ttyFAKE",
        pins_range_us={9: (800, 2200), 10: (500, 2500)},
        pymata_factory=factory,
        clock=lambda: clock[0],
        sleep=sleep,
    )
    with b:
        b.move(1, {9: 1833, 10: 2166})
        b.move(4, {9: 1873, 10: None})
        b.drain()
    calls = fake["b"].calls
    assert fake["b"].kw["baud_rate"] == 57600 and fake["b"].kw["com_port"] == "/dev/ttyFAKE"
    assert calls[:2] == [("config", 9, 800, 2200), ("write", 9, 1833)]  # write follows attach immediately
    # attached with limits the Servo library holds, never below 544 us (a smaller value is an angle there)
    assert calls[2:4] == [("config", 10, 544, 2500), ("write", 10, 2166)]
    assert [c for c in calls if c[0] == "write" and c[1] == 9][-4:] == [
        ("write", 9, v) for v in (1843, 1853, 1863, 1873)
    ]
    times = [t for t, pin, _ in b.writes if pin == 9][-4:]
    assert [round(b_ - a, 6) for a, b_ in zip(times, times[1:], strict=False)] == [0.02, 0.02, 0.02]
    # released without pymata4's shutdown(): its system reset would detach the servos and drop the arm
    assert calls[-2:] == [("stop threads",), ("close port",)]
    assert ("shutdown",) not in calls


def test_firmata_rejects_urls():
    with pytest.raises(LinkError, match="device path"):
        FirmataBackend("armsim://", pins_range_us={9: (800, 2200)}, pymata_factory=FakePymata).open()


@pytest.mark.parametrize("command", [["run", "examples/pick_and_place.yaml"], ["jog", "0.5", "0.2"], ["home"]])
def test_unwritable_wire_log_is_exit_2_before_the_port_opens(tmp_path, capsys, command):
    state = tmp_path / "sim.json"
    port = f"armsim://?rate=50&seed=1&state={state}"
    assert main(["--port", port, *command, "--wire-log", str(tmp_path)]) == 2  # a directory
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"--wire-log {tmp_path}: cannot write" in err
    assert not state.exists()  # the simulated board was never opened
    assert main(["--port", port, "status"]) == 0 and state.exists()  # (the state file does appear on open)


@pytest.mark.parametrize("speed", ["0.0000001", "0.01"])
def test_jog_too_slow_to_time_is_refused_and_moves_nothing(tmp_path, capsys, speed):
    """A tiny --speed used to plan a one-frame jump past the joint speed limits (or hang until the watchdog)."""
    port = f"armsim://?rate=50&seed=1&state={tmp_path / 'sim.json'}"
    before = _json(capsys, ["--port", port, "status", "--json"])
    assert main(["--port", port, "jog", "0.5", "0.2", "--speed", speed]) == 3
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "jog to (0.5, 0.2) m: " in err
    after = _json(capsys, ["--port", port, "status", "--json"])
    assert after["q_deg"] == before["q_deg"] and after["widths_us"] == before["widths_us"]
