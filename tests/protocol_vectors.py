"""Protocol test vectors: a file format and a runner shared by the simulator and the firmware tests.

A vector file (``tests/vectors/*.txt``) is a script of host bytes in and board
lines out, run against a fresh board:

    # comment (also after two spaces at the end of any line)
    %protocol 2            the protocol version the file is written in (default 1: files from before
                           version 2); the board under test speaks it, with our firmware's channel count
    %exact-frames          needs a transport that can step frames exactly (not wall-clock sleeps)
    > 0 H *8EE8            send this text plus "\\n", byte for byte (the CRC is part of the text)
    >cr 0 H *8EE8          send this text plus "\r\n" (as a serial monitor does)
    >hex 30 20 48 0a       send raw bytes (hex)
    < 0 A 1 16 *2A59       the next board line must be exactly this
    < ? H ? 1 4 16 ...     "?" matches any one field; then the CRC must be written "*????"
                           and only its validity is checked
    <none                  no board line is waiting
    ~ 3                    let 3 frames (20 ms each) pass

A BOOT event that arrives before the first board line is matched is ignored, unless that line
is itself a BOOT event (``< - ! BOOT ...``).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from armctl.bus import codec
from armctl.sim.board import Board


class VectorTransport(Protocol):
    """What the runner needs from a board under test."""

    def send(self, data: bytes) -> None: ...

    def read_line(self, timeout_s: float) -> bytes | None: ...

    def wait_frames(self, frames: int) -> None: ...


@dataclass(frozen=True)
class Step:
    line: int
    op: str  # "send", "expect", "none", "wait"
    data: bytes = b""
    frames: int = 0


@dataclass
class VectorFile:
    path: Path
    steps: list[Step]
    exact_frames: bool
    protocol: int = 1


def load(path: str | Path) -> VectorFile:
    """Parse a vector file."""
    p = Path(path)
    steps, exact, protocol = [], False, 1
    for n, raw in enumerate(p.read_text(encoding="ascii").splitlines(), start=1):
        text = raw.split("  #", 1)[0].rstrip() if not raw.startswith("#") else ""
        if not text:
            continue
        if text == "%exact-frames":
            exact = True
        elif text.startswith("%protocol "):
            protocol = int(text.split()[1])
            if protocol not in codec.VERSIONS:
                raise ValueError(f"{p}:{n}: protocol version {protocol} is not one of {codec.VERSIONS}")
        elif text.startswith(">hex "):
            steps.append(Step(n, "send", bytes.fromhex(text[5:])))
        elif text.startswith(">cr "):
            steps.append(Step(n, "send", text[4:].encode("ascii") + b"\r\n"))
        elif text.startswith("> "):
            steps.append(Step(n, "send", text[2:].encode("ascii") + b"\n"))
        elif text == "<none":
            steps.append(Step(n, "none"))
        elif text.startswith("< "):
            steps.append(Step(n, "expect", text[2:].encode("ascii")))
        elif text.startswith("~ "):
            steps.append(Step(n, "wait", frames=int(text[2:])))
        else:
            raise ValueError(f"{p}:{n}: cannot read vector line {raw!r}")
    return VectorFile(p, steps, exact, protocol)


def _matches(expected: bytes, got: bytes) -> bool:
    if b"?" not in expected:
        return expected == got
    exp_fields = expected.split(b" ")
    got_fields = got.split(b" ")
    if len(exp_fields) != len(got_fields):
        return False
    for e, g in zip(exp_fields[:-1], got_fields[:-1], strict=True):
        if e != b"?" and e != g:
            return False
    try:
        codec.split_line(got)
    except codec.CrcError:
        return False
    except Exception:
        pass
    return exp_fields[-1] == b"*????" or exp_fields[-1] == got_fields[-1]


def run(vector: VectorFile, transport: VectorTransport, *, reply_timeout_s: float = 0.5) -> None:
    """Run one vector file; AssertionError names file:line and both lines on the first mismatch.

    A transport with a ``protocol`` attribute must speak the file's version (ValueError if not)."""
    spoken = getattr(transport, "protocol", vector.protocol)
    if spoken != vector.protocol:
        raise ValueError(f"{vector.path.name} is protocol version {vector.protocol}, the board speaks {spoken}")
    matched_any = False
    for step in vector.steps:
        where = f"{vector.path.name}:{step.line}"
        if step.op == "send":
            transport.send(step.data)
        elif step.op == "wait":
            transport.wait_frames(step.frames)
        elif step.op == "none":
            got = transport.read_line(0.05)
            assert got is None, f"{where}: expected no board line, got {got!r}"
        else:
            got = transport.read_line(reply_timeout_s)
            boot_wanted = step.data.startswith(b"- ! BOOT ")
            while got is not None and not matched_any and not boot_wanted and got.startswith(b"- ! BOOT "):
                got = transport.read_line(reply_timeout_s)
            assert got is not None, f"{where}: expected {step.data!r}, board sent nothing"
            got = got.rstrip(b"\n")
            assert _matches(step.data, got), f"{where}: expected {step.data!r}\n{' ' * len(where)}       got {got!r}"
            matched_any = True


class BoardTransport:
    """Runs vectors on ``Board`` in virtual time: every byte arrives instantly, frames step exactly.

    Without a ``board``, a fresh one speaking ``protocol`` (default 1, like a vector file without a
    ``%protocol`` line) with our firmware's channel count for it."""

    def __init__(self, board: Board | None = None, *, protocol: int = 1, start_s: float = 0.005):
        self.board = board or Board(protocol=protocol, boot=0x3F2A)
        self.protocol = self.board.protocol
        self.t = start_s
        self._out = bytearray(self.board.banner())

    def send(self, data: bytes) -> None:
        self._out += self.board.receive(data, self.t)

    def read_line(self, timeout_s: float) -> bytes | None:
        self._out += self.board.advance_to(self.t)
        nl = self._out.find(b"\n")
        if nl < 0:
            return None
        line = bytes(self._out[: nl + 1])
        del self._out[: nl + 1]
        return line

    def wait_frames(self, frames: int) -> None:
        self.t += frames * self.board.frame_s
        self._out += self.board.advance_to(self.t)


def vector_files(directory: str | Path) -> list[Path]:
    """Every ``*.txt`` vector file in ``directory``, sorted."""
    return sorted(Path(directory).glob("*.txt"))
