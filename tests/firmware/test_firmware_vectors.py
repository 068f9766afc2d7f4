"""The protocol test vectors of version 2 (tests/vectors/v2/*.txt) against our firmware on the virtual Uno.

The same files run against the Python board in test_protocol_vectors.py: the
firmware and the simulated arm must answer byte for byte alike. (The version 1
files run on the Python board only: our firmware speaks version 2.)

The virtual Uno runs in --control mode: simulated time advances only when
the transport says so, so "~ N" steps exactly N servo frames like the Python
runner's virtual clock. The link is made fast (--uart-byte-us) so that the
lines between two "~" steps fit in one 20 ms frame, as they do (instantly) in
the Python runner; everything else is the real firmware on a cycle-accurate
ATmega328P.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests import protocol_vectors as vectors
from tools.virtual_uno import BINARY

ROOT = Path(__file__).resolve().parents[2]

VECTOR_DIR = Path(__file__).resolve().parents[1] / "vectors" / "v2"
FILES = vectors.vector_files(VECTOR_DIR)
FRAME_US = 20000.0
PHASE_US = 1000.0  # where in each frame the runner acts (the Python runner: 5 ms after boot)
UART_BYTE_US = 4.0


class ControlledUno:
    """A VectorTransport on ``virtual_uno --control``: exact simulated time, bytes over stdin/stdout."""

    def __init__(self, hex_path: Path, *, uart_byte_us: float = UART_BYTE_US):
        self.proc = subprocess.Popen(
            [str(BINARY), str(hex_path), "--control", "--uart-byte-us", str(uart_byte_us)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            bufsize=1,
        )
        assert self._line() == "CONTROL"
        self.protocol = 2  # what our firmware speaks (the runner checks each file's %protocol against it)
        self.t_us = 0.0
        self.timer_us: float | None = None
        self.rx = bytearray()
        self.frames = 0
        # Boot: run until the firmware has started its frame timer, then to PHASE_US into frame 0.
        while self.timer_us is None:
            self.run(1000.0)
            assert self.t_us < 1e6, "the firmware never started its frame timer (Timer2)"
        self.until(self.timer_us + PHASE_US)

    def _line(self) -> str:
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError(f"virtual_uno exited: {self.proc.stderr.read()}")
        return line.rstrip("\n")

    def _cmd(self, text: str) -> None:
        self.proc.stdin.write(text + "\n")
        self.proc.stdin.flush()
        while True:
            line = self._line()
            if line.startswith("timer2 "):  # the firmware's frame clock (Timer2, 4 ms periods)
                self.timer_us = float(line.split()[1])
            elif line.startswith("timer"):
                pass
            elif line.startswith("rx "):
                self.rx += bytes.fromhex(line[3:])
            elif line.startswith("t "):
                self.t_us = float(line.split()[1])
                return
            elif line == "ok":
                return
            else:
                raise RuntimeError(f"virtual_uno: {line}")

    def run(self, us: float) -> None:
        self._cmd(f"run {us:.4f}")

    def until(self, t_us: float) -> None:
        self._cmd(f"until {t_us:.4f}")

    # --- VectorTransport ---
    def send(self, data: bytes) -> None:
        self._cmd("tx " + data.hex())

    def read_line(self, timeout_s: float) -> bytes | None:
        # Simulated time, not wall time: a reply takes ~1-2 ms here; "<none" looks for 3 ms.
        budget_us = 3000.0 if timeout_s < 0.1 else 15000.0
        if b"\n" not in self.rx:
            self._cmd(f"line {budget_us:.4f}")
        nl = self.rx.find(b"\n")
        if nl < 0:
            return None
        line = bytes(self.rx[: nl + 1])
        del self.rx[: nl + 1]
        return line

    def wait_frames(self, frames: int) -> None:
        self.frames += frames
        target = self.timer_us + self.frames * FRAME_US + PHASE_US
        assert self.t_us < target, (
            f"the exchanges before this step took until {self.t_us:.0f} us, past {target:.0f} us: "
            "the vector does not fit the frame at this link speed"
        )
        self.until(target)

    def close(self) -> None:
        if self.proc.poll() is None:
            try:
                self.proc.stdin.write("quit\n")
                self.proc.stdin.flush()
            except BrokenPipeError:
                pass
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        for f in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            f.close()


def test_there_are_vectors():
    assert len(FILES) >= 10


@pytest.mark.parametrize("path", FILES, ids=[p.stem for p in FILES])
def test_vector_on_firmware(firmware_hex, path):
    uno = ControlledUno(firmware_hex)
    try:
        vectors.run(vectors.load(path), uno)
        # nothing left over: the firmware sent no line the vector did not expect
        assert uno.read_line(0.01) is None
    finally:
        uno.close()


def test_runner_catches_a_wrong_reply(firmware_hex, tmp_path):
    bad = tmp_path / "bad.txt"
    bad.write_text("%protocol 2\n> 0 H *8EE8\n< 0 A 1 16 *0000\n")
    uno = ControlledUno(firmware_hex)
    try:
        with pytest.raises(AssertionError, match="bad.txt:3"):
            vectors.run(vectors.load(bad), uno)
    finally:
        uno.close()
