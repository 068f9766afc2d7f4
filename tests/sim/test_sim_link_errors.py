"""Bounded, clear errors: bad port, garbage, silent board, protocol mismatch; the armsim URL."""

from __future__ import annotations

import os
import pty
import threading
import time

import pytest
import serial

import armctl.bus  # noqa: F401  registers armsim://
from armctl.bus import codec
from armctl.bus.armproto.backend import ArmProtocolBackend
from armctl.errors import BadInputError, LinkError, ProtocolError


def _timed(fn):
    t0 = time.monotonic()
    try:
        fn()
    finally:
        elapsed = time.monotonic() - t0
    return elapsed


def test_bad_port():
    b = ArmProtocolBackend("/dev/does-not-exist-armctl")
    with pytest.raises(LinkError, match="cannot open port '/dev/does-not-exist-armctl'"):
        b.open()


def test_unknown_armsim_option_names_the_form():  # bad input (exit 2), not a link failure
    with pytest.raises(BadInputError, match=r"unknown armsim option 'speed'.*armsim://\[ARM\]\[\?rate="):
        ArmProtocolBackend("armsim://?speed=3").open()


class _FakeBoard:
    """A pty whose far end answers with ``reply(line)`` (or nothing)."""

    def __init__(self, reply):
        self.master, slave = pty.openpty()
        self.path = os.ttyname(slave)
        self._slave = slave
        self.reply = reply
        self.stop = False
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self):
        import select

        buf = b""
        while not self.stop:
            r, _, _ = select.select([self.master], [], [], 0.05)
            if not r:
                continue
            try:
                buf += os.read(self.master, 1024)
            except OSError:
                return
            while b"\n" in buf:
                line, buf = buf.split(b"\n", 1)
                out = self.reply(line)
                if out:
                    os.write(self.master, out)

    def close(self):
        self.stop = True
        self.thread.join(1)
        os.close(self.master)
        os.close(self._slave)


@pytest.mark.parametrize(
    ("reply", "error", "match"),
    [
        (lambda line: None, LinkError, r"no answer from a board on .* within 1 s"),
        (lambda line: b"\x00\xf9garbage\xff\n", ProtocolError, r"answers, but not in the armctl protocol"),
        (
            lambda line: codec.encode(0, "H", "future-fw", 3, 4, 16, 20000, "0001", *["1000:5000"] * 4),
            ProtocolError,
            r"speaks protocol version 3, this armctl speaks 1 and 2",
        ),
        (  # a version 1 status line holds 4 channels in its 128 bytes
            lambda line: codec.encode(0, "H", "odd-fw", 1, 5, 16, 20000, "0001", *["500:2500"] * 5),
            ProtocolError,
            r"reports 5 channels: protocol version 1 lines carry at most 4",
        ),
        (  # a version 2 move line holds 9 widths in its 64 bytes
            lambda line: codec.encode(0, "H", "odd-fw", 2, 10, 16, 20000, "0001", *["1000:5000"] * 10),
            ProtocolError,
            r"reports 10 channels: protocol version 2 lines carry at most 9",
        ),
    ],
)
def test_bad_boards_fail_within_bounded_time(reply, error, match):
    fake = _FakeBoard(reply)
    try:
        b = ArmProtocolBackend(fake.path, connect_timeout_s=1.0)
        elapsed = _timed(lambda: pytest.raises(error, b.open).match(match))
        assert elapsed < 5.0  # bounded (1 s budget plus slack for a noisy machine)
    finally:
        fake.close()


def test_silent_board_mid_run_is_a_link_error():
    """A board that stops answering after the handshake: resends, then a LinkError, bounded."""
    b = ArmProtocolBackend("armsim://?rate=20&drop=1.0")
    with pytest.raises(LinkError):
        b.open()  # every line lost: the handshake itself times out
    b2 = ArmProtocolBackend("armsim://?rate=20", reply_timeout_s=0.05)
    b2.open()
    try:
        b2.ser.sim.opts.drop = 1.0  # the cable goes bad after connecting
        t0 = time.monotonic()
        with pytest.raises(LinkError, match="no progress|did not acknowledge|no answer"):
            for _ in range(100):
                b2.move(1, {0: 1500})
            b2.flush()
        assert time.monotonic() - t0 < 10
    finally:
        b2._dead = b2._dead or LinkError("x")
        b2.close()


def test_board_reset_mid_run_is_detected():
    b = ArmProtocolBackend("armsim://?rate=20")
    b.open()
    try:
        b.move(1, {0: 1500})
        b.flush()
        sim = b.ser.sim
        # the board reboots: new state, new boot id, banner on the wire
        from armctl.sim.board import Board

        sim.board = Board(channels=4, boot=(b.info.boot + 1) & 0xFFFF, on_pulse=sim._on_pulse)
        sim.board.advance_to(0)
        sim._to_host_schedule(sim.board.banner(), sim.now)
        with pytest.raises(LinkError, match="reset"):
            for _ in range(20):
                b.move(1, {0: 1500})
            b.flush()
    finally:
        b.close()


def test_armsim_is_a_plain_pyserial_port():
    s = serial.serial_for_url("armsim://seed-2link?rate=10&boot=3F2A", timeout=1)
    s.write(codec.hello(0))
    assert s.readline() == codec.encode(None, "!", "BOOT", "armsim", 2, "3F2A")  # the board just reset
    assert s.readline().startswith(b"0 H armsim 2 8 16 20000 3F2A 1000:5000 ")
    s.close()
