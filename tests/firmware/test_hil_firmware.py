"""Our firmware on the virtual Uno, through its pseudo-terminal like a real board.

No pulses before a position; widths exact; the watchdog when the host goes
silent; corrupt lines naked and resent, never executed (also with the real
host backend through a link that corrupts bytes); a reset mid-run detected.
Pulses are measured by the simulator from cycle counts (1/16 us).
"""

from __future__ import annotations

import os
import random
import select
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import serial

from tools import hil_compare as hc
from tools.virtual_uno import ARMCTL_PINS, VirtualUno

from armctl.bus import codec

ROOT = Path(__file__).resolve().parents[2]

PINS = list(ARMCTL_PINS)  # channels 0..7
NONE4 = [None] * 4  # channels 4..7 left alone


class Link:
    """Lines of our protocol over the virtual Uno's pty."""

    def __init__(self, pty: str):
        self.ser = serial.Serial(pty, 115200, timeout=0.05)
        self.buf = b""

    def send(self, line: bytes) -> None:
        self.ser.write(line)

    def line(self, timeout_s: float = 3.0) -> bytes | None:
        deadline = time.monotonic() + timeout_s
        while b"\n" not in self.buf:
            if time.monotonic() > deadline:
                return None
            self.buf += self.ser.read(256)
        line, _, self.buf = self.buf.partition(b"\n")
        return line + b"\n"

    def reply(self, timeout_s: float = 3.0, *, skip_boot: bool = True):
        while True:
            raw = self.line(timeout_s)
            assert raw is not None, "no reply from the firmware"
            r = codec.parse_reply(raw)
            if skip_boot and isinstance(r, codec.Event) and r.name == "BOOT":
                continue
            return r

    def query(self, seq: int) -> codec.Status:
        self.send(codec.query(seq))
        r = self.reply()
        assert isinstance(r, codec.Status), r
        return r

    def wait_frames(self, seq: int, n: int, timeout_s: float = 10.0) -> int:
        start = self.query(seq).frame
        deadline = time.monotonic() + timeout_s
        while True:
            f = self.query(seq).frame
            if f - start >= n:
                return f
            assert time.monotonic() < deadline, "the firmware's frame counter stopped"
            time.sleep(0.01)

    def close(self) -> None:
        self.ser.close()


@pytest.fixture
def board(firmware_hex):
    uno = VirtualUno(firmware_hex, reset_on_open=True, free_run=True, uart_log=True).start()
    link = Link(uno.pty)
    link.send(codec.hello(0))
    assert isinstance(link.reply(), codec.Hello)
    yield uno, link
    link.close()
    uno.stop()
    uno.cleanup()


def test_no_pulses_until_the_host_sets_a_position(board):
    uno, link = board
    link.wait_frames(1, 10)
    assert uno.pulses() == [], "pulses before any position was set"
    link.send(codec.move(1, 50, [None, 2 * 1234, None, None, *NONE4]))  # only channel 1, 50 frames
    assert isinstance(link.reply(), codec.Ack)
    link.wait_frames(2, 5)
    pulses = uno.pulses()
    assert {p.pin for p in pulses} == {10}, "a channel without a position pulsed"
    # no ramp from some default: the very first pulse is the position (a channel with no width starts at its end)
    assert pulses[0].width_us == pytest.approx(1234.0, abs=0.07)


def test_widths_are_exact(board):
    uno, link = board
    targets = [1000.0, 1500.5, 2000.0, 2499.5, 2500.0, 500.0, 1234.5, 1999.5]
    link.send(codec.move(1, 1, [int(w * 2) for w in targets]))
    assert isinstance(link.reply(), codec.Ack)
    link.wait_frames(2, 20)
    for pin, w in zip(PINS, targets):
        got = [p.width_us for p in uno.pulses(pin)]
        assert len(got) >= 15
        # measured from cycle counts: exact to the simulator's 1/16 us resolution
        assert max(abs(g - w) for g in got) <= 0.07, (pin, w, sorted(set(got)))


def _last_host_byte_us(uno) -> float:
    """Simulated time (us) at which the last host byte reached the AVR's UART."""
    t = 0.0
    for line in uno.uart_log.read_text().splitlines():
        f = line.split()
        if len(f) == 3 and f[1] == "<":
            t = float(f[0])
    return t


@pytest.mark.parametrize("mode", ["O", "H"])
def test_watchdog_fires_when_the_host_goes_silent(board, mode):
    uno, link = board
    link.send(codec.move(1, 1, [3000, 3000, None, None, *NONE4]))
    assert isinstance(link.reply(), codec.Ack)
    link.send(codec.watchdog(2, 0.1, mode=mode))
    assert isinstance(link.reply(), codec.Ack)
    # now silence: the board must notice on its own
    event = link.reply(timeout_s=10.0)
    assert isinstance(event, codec.Event) and event.name == "WDOG", event
    silent_from = _last_host_byte_us(uno)
    link.wait_frames(3, 10)  # (this query is after the event)
    pulses = [p for p in uno.pulses(9)]
    before = [p for p in pulses if p.t_us < silent_from + 100_000]
    assert before, "no pulses before the watchdog"
    if mode == "O":
        # pulses stop within a frame of the 100 ms deadline (+1.5 ms to the first edge)
        after = [p for p in pulses if p.t_us > silent_from + 100_000 + 20_000 + 1_500]
        assert after == [], f"pulses {after[0].t_us - silent_from:.0f} us after the last line"
        st = link.query(3)
        assert st.widths_ticks[:2] == (None, None) and st.counters["wdog"] == 1
    else:
        after = [p for p in pulses if p.t_us > silent_from + 150_000]
        assert after and all(abs(p.width_us - 1500.0) <= 0.07 for p in after), "hold mode must keep pulsing"
        st = link.query(3)
        assert st.widths_ticks[:2] == (3000, 3000) and st.counters["wdog"] == 1


def test_a_corrupt_line_is_naked_resent_and_never_executed(board):
    uno, link = board
    good = codec.move(1, 1, [2 * 1600, None, None, None, *NONE4])
    bad = good.replace(b"3200", b"4200")  # one field changed on the wire, CRC unchanged
    link.send(bad)
    nak = link.reply()
    assert isinstance(nak, codec.Nak) and nak.reason == "CRC" and nak.expect == 1
    link.wait_frames(1, 3)
    assert uno.pulses() == [], "the corrupt line was executed"
    link.send(good)  # the resend
    ack = link.reply()
    assert isinstance(ack, codec.Ack) and (ack.seq, ack.expect) == (1, 2)
    link.send(good)  # a duplicate (as after a lost ack): acknowledged, not executed twice
    ack = link.reply()
    assert isinstance(ack, codec.Ack) and (ack.seq, ack.expect) == (1, 2)
    link.wait_frames(2, 5)
    widths = {p.width_us for p in uno.pulses()}
    assert widths == {1600.0}, widths
    st = link.query(2)
    assert st.counters["crc"] == 1 and st.counters["dup"] == 1


class CorruptingRelay:
    """A pty for the host, relayed to the virtual Uno's pty, flipping random bits in both directions."""

    def __init__(self, board_pty: str, *, p_host: float, p_board: float, seed: int = 5):
        self.master, slave = os.openpty()
        self.path = os.ttyname(slave)
        import tty

        tty.setraw(slave)
        os.close(slave)
        os.set_blocking(self.master, False)  # nobody reading the host's side (closed, or stalled): bytes are lost,
        # as on a wire, and the relay never blocks (it once could, and then close() waited on it for ever)
        self.board = serial.Serial(board_pty, 115200, timeout=0, write_timeout=1.0)
        self.lost = 0
        self.rng = random.Random(seed)
        self.p = {"host": p_host, "board": p_board}
        self.flipped = {"host": 0, "board": 0}
        self.stop = False
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _mangle(self, data: bytes, who: str) -> bytes:
        out = bytearray(data)
        for i in range(len(out)):
            if self.rng.random() < self.p[who]:
                out[i] ^= 1 << self.rng.randrange(7)
                self.flipped[who] += 1
        return bytes(out)

    def _run(self) -> None:
        bfd = self.board.fileno()
        while not self.stop:
            r, _, _ = select.select([self.master, bfd], [], [], 0.05)
            if self.master in r:
                try:
                    data = os.read(self.master, 4096)
                except OSError:
                    data = b""
                if data:
                    try:
                        self.board.write(self._mangle(data, "host"))
                    except serial.SerialTimeoutException:
                        self.lost += len(data)
            if bfd in r:
                data = self.board.read(4096)
                if data:
                    try:
                        os.write(self.master, self._mangle(data, "board"))
                    except BlockingIOError:
                        self.lost += len(data)

    def close(self) -> None:
        self.stop = True
        self.thread.join(timeout=10)
        assert not self.thread.is_alive(), "the relay thread did not stop"
        self.board.close()
        os.close(self.master)


def test_host_backend_through_a_corrupting_link_never_plays_a_wrong_pulse(firmware_hex, tmp_path):
    from armctl.bus.armproto.backend import ArmProtocolBackend

    wire = tmp_path / "wire.log"
    with VirtualUno(firmware_hex, free_run=True) as uno:
        relay = CorruptingRelay(uno.pty, p_host=0.002, p_board=0.001)
        try:
            # the free-running board's clock is ~6x wall time: 10 simulated seconds of watchdog is ~1.6 s
            # of host time, so a stall of the host on a busy machine is not mistaken for a dead link
            be = ArmProtocolBackend(relay.path, wire_log=str(wire), reply_timeout_s=0.1, watchdog_s=10.0)
            with be:
                for k in range(300):
                    ramp = 1200 + 2 * k
                    be.move(
                        1 + k % 3,
                        {0: ramp, 1: 2700 - ramp, 2: 1500 + (k % 7), 3: 1000 + k}
                        | {4: 2200 - k, 5: 600 + 5 * k, 6: 1800 - (k % 11), 7: ramp + 0.5},
                    )
                be.drain(timeout_s=60)
                st = be.status()
            stats = dict(be.stats)
        finally:
            relay.close()
        pulses = uno.pulses()
    assert relay.flipped["host"] > 5, relay.flipped  # the link really was bad
    assert st.counters["crc"] > 0
    commanded = hc.commanded_frames(hc.host_bytes_from_wire_log(wire))
    frames = hc.from_first_pulse(hc.frames_from_pulses(pulses, PINS))
    ok, late, worst, where = hc.match_with_holds([f.widths_us for f in frames], commanded, tol_us=0.07)
    # every frame is a commanded frame, in order (resends may make the board wait: held frames)
    assert ok, f"{where} (link: {relay.flipped}, host: {stats})"
    assert worst <= 0.07


def test_a_reset_mid_run_is_detected_and_nothing_more_is_sent(firmware_hex, tmp_path):
    program = ROOT / "examples" / "pick_and_place.yaml"
    with VirtualUno(firmware_hex, reset_on_open=True) as uno:
        proc = subprocess.Popen(
            [sys.executable, "-m", "armctl", "--arm", "seed-3link", "--port", uno.pty, "--assume-pose", "home"]
            + ["run", str(program)],
            cwd=ROOT,
            env=dict(os.environ, ARMCTL_STATE_DIR=str(tmp_path / "state")),  # pty paths are reused: no stale pose
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            # let it play for a while, then press the reset button
            assert uno.wait_for(lambda u: len(u.pulses(9)) >= 50, 60.0), "the run never started"
            uno.reset()
            out, err = proc.communicate(timeout=60)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.communicate()
        resets = [e for e in uno.events("reset") if e.detail == "signal"]
        assert len(resets) == 1
        time.sleep(0.3)
        after = [p for p in uno.pulses() if p.t_us > resets[0].t_us]
    assert proc.returncode != 0, f"armctl run did not notice the reset:\n{out}\n{err}"
    assert "reset" in err.lower() or "boot" in err.lower(), err
    # the rebooted firmware has no positions, and the host set none: no pulses after the reset
    assert after == [], f"{len(after)} pulses after the reset"
