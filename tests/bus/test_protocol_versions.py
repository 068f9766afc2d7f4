"""The host speaks both protocol versions; the simulated board speaks the one its URL asks for.

Version 1 boards (4 channels, widths in microseconds) get the bytes they always got; version 2 boards
(ours: 8 channels, widths in ticks) get version 2 lines; the handshake says which, and how many
channels. A board whose channel count its version cannot carry, or a version this host does not
speak, is refused at connect with one line naming it.
"""

from __future__ import annotations

import pytest
import serial

import armctl
from armctl.bus import codec
from armctl.bus.armproto.backend import ArmProtocolBackend

FAST = "armsim://?rate=50&seed=1"


def _sent_moves(backend: ArmProtocolBackend) -> list[bytes]:
    return [line for line in backend.ser.sim.sent_lines if b" M " in line]


@pytest.fixture(autouse=True)
def _record_host_lines(monkeypatch):
    """Keep every host line the simulated board receives (``sim.sent_lines``)."""
    from armctl.sim.armsim import SimArm

    original = SimArm.host_write

    def host_write(self, data, t):
        self.__dict__.setdefault("sent_lines", [])
        self.sent_lines += data.splitlines(keepends=True)
        return original(self, data, t)

    monkeypatch.setattr(SimArm, "host_write", host_write)


@pytest.mark.parametrize(
    ("query", "version", "channels", "line"),
    [
        ("&protocol=1", 1, 4, b"M 3 1500.5 - 2499.5 -"),
        ("", 2, 8, b"M 3 3001 - 4999 - - - - 3000"),
        ("&protocol=2&channels=6", 2, 6, b"M 3 3001 - 4999 - - 3000"),
    ],
)
def test_each_version_gets_its_own_lines(query, version, channels, line):
    with ArmProtocolBackend(FAST + query, watchdog_s=0) as b:
        assert (b.version, b.info.protocol, b.info.channels) == (version, version, channels)
        assert len(b.info.limits_us) == channels and b.info.limits_us[0] == (500, 2500)
        widths = {0: 1500.5, 2: 2499.5} | ({channels - 1: 1500} if channels > 4 else {})
        b.move(3, widths)
        b.drain()
        st = b.status()
        assert st.values[0] == 1500.5 and st.values[2] == 2499.5 and len(st.values) == channels
        sent = _sent_moves(b)
        b.set_limits(1, 600.5, 2400)
        assert b.info.limits_us[1] == (600.5, 2400)
        limits_line = b.ser.sim.sent_lines[-1]
    assert len(sent) == 1 and sent[0].split(b" *")[0].endswith(line), sent
    assert limits_line.split(b" *")[0].endswith(b"L 1 600.5 2400" if version == 1 else b"L 1 1201 4800")


def test_a_robot_runs_on_both_versions_alike():
    """The same moves on a version 1 and a version 2 board: the same pulses, the same pose."""
    poses, pulses = [], []
    for query in ("&protocol=1", "&protocol=2"):
        with armctl.connect("seed-3link", FAST + query) as robot:
            robot.move_to(0.5, 0.2, speed=0.3)
            robot.gripper("close")
            poses.append(robot.where(settle=True).tool_m)
            pulses.append(robot.board_status().values[:4])
            assert robot.backend.info.channels == (4 if query.endswith("1") else 8)
    assert pulses[0] == pulses[1]
    assert poses[0] == pytest.approx(poses[1], abs=1e-9)


@pytest.mark.parametrize(
    ("url", "match"),
    [
        ("armsim://?protocol=3", "protocol must be one of 1, 2, got 3"),
        ("armsim://?protocol=1&channels=5", r"channels must be 1..4 \(what protocol 1 lines carry\), got 5"),
        ("armsim://?channels=10", r"channels must be 1..9 \(what protocol 2 lines carry\), got 10"),
        ("armsim://?protocol=x", "protocol='x' is not valid"),
    ],
)
def test_armsim_refuses_a_version_or_channel_count_it_cannot_be(url, match):
    with pytest.raises(serial.SerialException, match=match):
        serial.serial_for_url(url)


def test_a_calibration_beyond_version_1_channels_is_named(tmp_path):
    from armctl.calibration.servo import find_calibration

    cal = find_calibration("seed-3link").read_text().replace("channel: 3", "channel: 6")
    path = tmp_path / "cal.yaml"
    path.write_text(cal)
    with pytest.raises(serial.SerialException, match="uses channel 6: protocol version 1 lines carry channels 0..3"):
        serial.serial_for_url(f"armsim://?protocol=1&cal={path}")
    with serial.serial_for_url(f"armsim://?cal={path}") as port:  # version 2 carries it
        assert port.sim.board.channels == 8


def test_the_default_simulated_board_is_ours_in_the_newest_version():
    with serial.serial_for_url("armsim://?rate=20", timeout=1) as port:
        boot = f"{port.sim.board.boot:04X}"
        assert port.readline() == codec.encode(None, "!", "BOOT", "armsim", codec.PROTOCOL_VERSION, boot)
        port.write(codec.hello(0))
        assert port.readline().startswith(b"0 H armsim 2 8 16 20000 " + boot.encode() + b" 1000:5000 ")
