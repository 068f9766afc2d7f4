"""The link layer of our protocol's backend (armproto.ArmProtocolBackend): writing lines, reading and
handling replies, acks and naks, the board's credit (``expect``/``free``), go-back-N resends, waits for a
reply. A mixin: the state it works on (the port, the sequence numbers, the sent lines, the credit) is the
backend's, set up in its ``__init__``."""

from __future__ import annotations

import select
import time
from collections import deque
from dataclasses import dataclass

import serial

from armctl.bus import codec
from armctl.errors import LinkError, ProtocolError

GATHER_BYTES = 24  # a reply line arriving a byte at a time (a UART): read it in pieces of this many bytes


@dataclass
class Sent:
    seq: int
    data: bytes
    frames: int  # 0 for non-move lines
    sent_at: float = 0.0
    resent: bool = False


class ArmLink:
    """Send lines and read replies, acks, naks and credit (see the module docstring)."""

    def _write(self, data: bytes) -> None:
        if self._dead is not None:
            raise self._dead
        try:
            self.ser.write(data)
        except (serial.SerialException, OSError) as exc:
            self._dead = LinkError(f"lost the link to {self.port}: {exc}")
            raise self._dead from None
        self.bytes_out += len(data)
        self._last_sent_t = time.monotonic()
        if self.log:
            self.log.record(">", data)

    def _read_some(self, wait_s: float) -> None:
        """Read what has arrived, waiting up to ``wait_s`` for the first byte, and handle whole lines."""
        if self._dead is not None:
            raise self._dead
        try:
            n = self.ser.in_waiting
            if not n and wait_s > 0:
                if self._fd is not None:  # a real port or pty: wait in select, the port stays non-blocking
                    t0 = time.monotonic()
                    select.select([self._fd], [], [], wait_s)
                    n = self.ser.in_waiting
                    data = self.ser.read(n) if n else b""
                    if data and b"\n" not in data:  # a line arriving byte by byte: let more of it come first
                        gather = GATHER_BYTES * 10.0 / max(self.baudrate, 1200) / self._time_scale
                        time.sleep(max(0.0, min(gather, t0 + wait_s - time.monotonic())))
                        n = self.ser.in_waiting
                        data += self.ser.read(n) if n else b""
                else:  # URL handlers: changing their timeout is cheap
                    self.ser.timeout = wait_s
                    data = self.ser.read(1)
                    self.ser.timeout = 0
                    n = self.ser.in_waiting
                    data += self.ser.read(n) if n else b""
            else:
                data = self.ser.read(n) if n else b""
        except (serial.SerialException, OSError) as exc:
            self._dead = LinkError(f"lost the link to {self.port}: {exc}")
            raise self._dead from None
        if self.log:
            self.log.record("<", data)
        self._rx += data
        while True:
            nl = self._rx.find(b"\n")
            if nl < 0:
                if len(self._rx) > 4 * codec.BOARD_LINE_MAX:
                    self._garbage += self._rx[-64:]
                    self._rx.clear()
                break
            line = bytes(self._rx[: nl + 1])
            del self._rx[: nl + 1]
            self._handle(line)

    def _handle(self, line: bytes) -> None:
        try:
            reply = codec.parse_reply(line, version=self.version or codec.PROTOCOL_VERSION)
        except ProtocolError:
            self.stats["bad_lines"] += 1
            if len(self._garbage) < 256:
                self._garbage += line[:64]
            return
        if isinstance(reply, codec.Ack):
            self._on_ack(reply)
        elif isinstance(reply, codec.Nak):
            self._on_nak(reply)
        elif isinstance(reply, codec.Reject):
            if self._limits_seq is not None and reply.seq == self._limits_seq:  # see set_limits
                self._replies["L"] = reply
                self._on_ack(codec.Ack(reply.seq, reply.expect, reply.free))
                return
            self._fail(
                ProtocolError(
                    f"board rejected a command ({reply.reason}): an armctl bug, please report it with --wire-log"
                )
            )
        elif isinstance(reply, codec.Hello):
            self._replies["H"] = reply
            self._pending_imm.pop("H", None)
        elif isinstance(reply, codec.Status):
            self._check_boot(reply.boot)
            self._replies["Q"] = reply
            self._pending_imm.pop("Q", None)
            self._update_credit(reply.expect, reply.free)
            # frames played when the board answered: everything it accepted (seq < expect) minus what is left
            unaccepted = sum(s.frames for s in self._out if (s.seq - reply.expect) % codec.SEQ_MOD < 128)
            now = time.monotonic()
            self._measure_clock(now, reply.frame)
            self._anchor = (now, float(self._sent_frames - unaccepted - reply.left_frames))
            if "empty" in reply.counters:
                self.note_empty(reply.counters["empty"], now)
            self._next_poll_t = now + (self._refill_due_s(reply.left_frames) if reply.free == 0 else 0.0)
        elif isinstance(reply, codec.Event):
            if reply.name == "BOOT" and self.info is not None:
                self._fail(LinkError("the board reset itself (boot event); the servos may have gone limp"))
            elif reply.name == "WDOG" and (self._streaming or any(s.frames for s in self._out)):
                self._fail(
                    LinkError(
                        f"the board's watchdog fired: it heard nothing from us for {self.watchdog_s:g} s and stopped"
                    )
                )
            elif reply.name == "WDOG":  # idle (the arm held still): harmless, but the board turned it off
                self._watchdog_fired = True

    def _fail(self, exc: LinkError) -> None:
        if self._dead is None:
            self._dead = exc
        raise self._dead

    def _check_boot(self, boot: int) -> None:
        if self.info is not None and self.info.boot is not None and boot != self.info.boot:
            self._fail(LinkError(f"the board was reset (boot id {boot:04X}, was {self.info.boot:04X})"))

    # --- acks, naks, credit ------------------------------------------------------------------------

    def _update_credit(self, expect: int, free: int) -> None:
        self._expect, self._free = expect, free
        # moves the board holds in its queue: the newest (depth - free) acked moves
        held = (self.info.depth if self.info else 0) - free
        acked_frames = [s for s in self._queued]
        while len(acked_frames) > max(held, 0):
            acked_frames.pop(0)
        self._queued = deque(acked_frames)

    def _on_ack(self, ack: codec.Ack) -> None:
        imm = self._pending_imm.get("X")
        if imm is not None and ack.seq == imm.seq and not any(s.seq == ack.seq for s in self._out):
            self._pending_imm.pop("X")
            self._replies["X"] = ack
            self._update_credit(ack.expect, ack.free)
            return
        progressed = False
        now = time.monotonic()
        while self._out and (ack.seq - self._out[0].seq) % codec.SEQ_MOD < 128:
            done = self._out.popleft()
            if not done.resent and done.seq == ack.seq:  # Karn: time only lines sent once
                self._srtt = 0.875 * self._srtt + 0.125 * (now - done.sent_at)
            if done.frames:
                self._queued.append(done.frames)
            progressed = True
        if progressed:
            self._resends = 0
            self._resent_for = None
        expect = ack.expect
        self._update_credit(expect, ack.free)

    def _on_nak(self, nak: codec.Nak) -> None:
        self.stats["naks"] += 1
        if nak.reason == "SYNC":
            self._fail(LinkError("the board lost its session (it was reset, or another program talked to it)"))
        # everything before expect was accepted
        while (
            self._out
            and (nak.expect - self._out[0].seq) % codec.SEQ_MOD not in (0,)
            and (nak.expect - self._out[0].seq) % codec.SEQ_MOD < 128
        ):
            done = self._out.popleft()
            if done.frames:
                self._queued.append(done.frames)
        self._update_credit(nak.expect, nak.free)
        if nak.reason == "FULL":
            self._resent_for = nak.expect  # wait for room; resend happens in _service when credit shows
            self._full_wait = True
            return
        if self._resent_for == nak.expect:
            return
        self._resend_all(nak.expect)

    def _resend_all(self, expect: int | None = None) -> None:
        self._resends += 1
        self.stats["resends"] += 1
        if self._resends > self.max_resends:
            self._fail(
                LinkError(
                    f"no progress talking to the board on {self.port} after {self.max_resends} "
                    "resends: the link is too noisy or the board stopped answering"
                )
            )
        self._resent_for = expect
        now = time.monotonic()
        data = b"".join(s.data for s in self._out)
        for s in self._out:
            s.sent_at = now
            s.resent = True
        for s in self._pending_imm.values():
            data += s.data
            s.sent_at = now
        if data:
            self._write(data)

    def _credit(self) -> int:
        in_flight = sum(1 for s in self._out if s.frames and (s.seq - self._expect) % codec.SEQ_MOD < 128)
        return self._free - in_flight

    def _timeout_s(self) -> float:
        """Resend timeout: a few round trips (measured), plus the time to send what is in flight."""
        pending = sum(len(s.data) for s in self._out) + 64
        wire = 2 * pending * 10.0 / max(self.baudrate, 1200) / self._time_scale
        return min(self.reply_timeout_s, max(0.02, 4 * self._srtt)) + wire

    def _service(self, wait_s: float) -> None:
        """Read replies for up to ``wait_s`` and resend on timeout."""
        self._read_some(wait_s)
        now = time.monotonic()
        oldest = min([s.sent_at for s in self._out] + [s.sent_at for s in self._pending_imm.values()], default=None)
        if self._full_wait and self._out:
            if self._credit() > 0 or (now - oldest) > self._timeout_s():
                self._full_wait = False
                self._resent_for = None
                self._resend_all(self._expect)
            else:
                self._poll_when_due(now)
            return
        if oldest is not None and now - oldest > self._timeout_s():
            self._resent_for = None
            self._resend_all(self._expect)

    # --- sending -----------------------------------------------------------------------------------

    def _sequenced(self, data: bytes, frames: int) -> None:
        sent = Sent(self._next, data, frames, time.monotonic())
        self._out.append(sent)
        self._next = (self._next + 1) % codec.SEQ_MOD
        if frames:
            self._sent_frames += frames
        self._write(data)

    def _immediate(self, kind: str) -> Sent:
        data = codec.encode(self._next, kind)
        sent = Sent(self._next, data, 0, time.monotonic())
        self._pending_imm[kind] = sent
        self._replies.pop(kind, None)
        self._write(data)
        return sent

    def _wait_reply(self, kind: str, timeout_s: float):
        deadline = time.monotonic() + timeout_s
        while kind not in self._replies:
            if time.monotonic() > deadline:
                raise LinkError(f"no answer from the board on {self.port} within {timeout_s:g} s")
            self._service(0.01)
        return self._replies.pop(kind)
