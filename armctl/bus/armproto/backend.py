"""Backend for our protocol (docs/protocol.md), versions 1 and 2, over any pyserial port or URL.

The board's handshake says which version it speaks and how many channels it has; every line after it
is written and read in that version (widths in microseconds in version 1, in ticks in version 2), so a
version 1 board gets exactly the bytes it always got.

Pipelined, go-back-N: moves are sent as long as the board has room (every
reply carries ``expect`` and ``free``), naks and timeouts resend from the
board's ``expect``, duplicates are the board's problem (it acks them without
running them). Every wait is bounded; every failure is a LinkError.
"""

from __future__ import annotations

import math
import os
import time
from collections import deque

import serial

from armctl.bus import codec
from armctl.bus.armproto.link import ArmLink, Sent
from armctl.bus.backend import (
    FRAME_S,
    Backend,
    BoardInfo,
    BoardLimitsError,
    BoardStatus,
    Capabilities,
    WireLog,
    board_limits_us,
    open_port,
)
from armctl.errors import LinkError, ProtocolError

DEFAULT_BAUD = 115200
POLL_SLICE_S = 0.02  # while waiting on the board: how often replies are read and the tick runs (once a frame)
SLOT_MARGIN_FRAMES = 0.5  # ask for a freed slot half a frame after it is due: the board's frame edge may be late
REFILL_SLOTS = 4  # while the board's queue is full, ask again once this many slots are due to be free ...
LOW_WATER_S = 0.3  # ... but before less than this much motion is left queued (board time) ...
LOW_WATER_HOST_S = 0.15  # ... or than the host may need to refill it (a board run faster than real time)
ANCHOR_STALE_S = 0.1  # while keeping the queue short (a feed hold's lead), re-anchor the played estimate this often


# A short queue (a feed hold's lead, ``wait_queued``) the host failed to refill in time: the board ran dry (its
# ``empty`` counter went up while the host was feeding it). The queue kept ahead then grows by LEAD_GROW_FRAMES,
# up to LEAD_MAX_S (what armctl kept before), and shrinks back by LEAD_SHRINK_FRAMES_S a second without one.
LEAD_GROW_FRAMES = 5.0
LEAD_MAX_S = 0.3
LEAD_SHRINK_FRAMES_S = 0.5
FAST_BOARD_RATE = 1.5  # a board this many times faster than real time is a simulator: it gets LEAD_MAX_S
FEED_SETTLE_S = 0.06  # a run-out the host chose (the end of a motion, a hold) shows up this late, at most

FACTORY_LIMITS_US = (500.0, 2500.0)  # a board's stored limits before anyone calibrated it
REANCHOR_S = 0.1  # queued_frames(): re-anchor the played-frames estimate on a status at least this often


class ArmProtocolBackend(ArmLink, Backend):
    """Our firmware or the simulated arm, through ``serial.serial_for_url``."""

    name = "armctl"
    simulator = "armsim"

    def __init__(
        self,
        port: str,
        *,
        baudrate: int = DEFAULT_BAUD,
        connect_timeout_s: float = 4.0,
        reply_timeout_s: float = 0.25,
        max_resends: int = 8,
        watchdog_s: float = 1.0,
        wire_log: str | None = None,
    ):
        self.port = port
        self.baudrate = baudrate
        self.connect_timeout_s = connect_timeout_s
        self.reply_timeout_s = reply_timeout_s
        self.max_resends = max_resends
        self.watchdog_s = watchdog_s
        self.wire_log_path = wire_log
        self.ser: serial.SerialBase | None = None
        self.log: WireLog | None = None
        self.info: BoardInfo | None = None
        self.version: int | None = None  # the board's protocol version, from its handshake
        self._rx = bytearray()
        self._next = 0
        self._out: deque[Sent] = deque()  # sequenced lines sent and not yet acknowledged
        self._expect = 0
        self._free = 0
        self._queued: deque[int] = deque()  # frames of acked moves the board has not started (estimate)
        self._sent_frames = 0
        self._anchor: tuple[float, float] | None = None  # (host time, frames played then) from the last status
        self._next_poll_t = 0.0  # while the board's queue is full: when a slot is due to free (host time)
        self._last_sent_t = 0.0
        self._resends = 0
        self._resent_for: int | None = None
        self._pending_imm: dict[str, Sent] = {}
        self._replies: dict[str, object] = {}
        self._garbage = bytearray()
        self._dead: LinkError | None = None
        self.stats = {"resends": 0, "naks": 0, "bad_lines": 0}
        self.bytes_out = 0
        self._fd = None
        self._time_scale = 1.0
        self._watchdog_fired = False
        self._watchdog_board_s = 0.0
        self._streaming = False
        self._full_wait = False
        self._srtt = 0.05
        self._limits_seq: int | None = None
        self.lead_extra = 0.0  # frames kept queued beyond what wait_queued is asked for (after underruns)
        self.underruns = 0  # times the board ran dry while the host fed it (wait_queued)
        self._feeding_since: float | None = None  # host time the current feeding (wait_queued) began
        self._empty_seen: tuple[float, int] | None = None  # (host time, the board's empty counter) last heard

    # --- lifecycle ---------------------------------------------------------------------------------

    @classmethod
    def create(cls, port: str, cal, *, wire_log=None, watchdog_s: float = 1.0, calibrating: bool = False):
        """Our firmware or the simulator on ``port``; servos by channel (the calibration's ``channel``). The
        board's stored limits apply while calibrating too (the calibration opens them up itself)."""
        return cls(port, wire_log=wire_log, watchdog_s=watchdog_s)

    def open(self) -> BoardInfo:
        self.log = WireLog(self.wire_log_path) if self.wire_log_path else None
        self.ser = open_port(self.port, baudrate=self.baudrate)
        # A simulated board also measures where its joints are (an encoder on every joint): the port offers
        # it, the backend passes it on.
        self.caps = Capabilities(
            reports_pulses=True,
            timed_moves=True,
            stores_limits=True,
            measures_positions=callable(getattr(self.ser, "measured_angles", None)),
        )
        self.measured_by = "simulated servos" if self.caps.measures_positions else ""
        self._fd = None  # a POSIX port or pty: waited on with select (Windows' select takes sockets only)
        if os.name == "posix":
            try:
                self._fd = self.ser.fileno()
            except (AttributeError, OSError, ValueError, serial.SerialException):
                self._fd = None
        self._time_scale = float(getattr(self.ser, "rate", 1.0))  # armsim runs its clock faster
        self._board_rate = self._time_scale  # board seconds per host second, measured from its frame counter
        self._clock_ref: tuple[float, int] | None = None
        self._rate_samples = 0  # board clock measurements so far (until there are two, its pace is unknown)
        try:
            self.info = self._handshake()
            self.runs_on_frames = math.inf  # no watchdog: the board plays everything it was sent
            if self.watchdog_s:
                self._arm_watchdog()
                self.flush()
                self.runs_on_frames = self._watchdog_board_s / FRAME_S  # then it holds (mode H), drops its queue
        except BaseException:
            self.close()
            raise
        return self.info

    def _arm_watchdog(self) -> None:
        """Send ``W``: the board holds its pulses and drops its queue after ``watchdog_s`` of silence."""
        self._watchdog_board_s = min(65.0, max(0.05, self.watchdog_s * self._time_scale))
        self._sequenced(codec.watchdog(self._next, self._watchdog_board_s, mode="H"), 0)
        self._watchdog_fired = False

    def close(self) -> None:
        if self.ser is not None:
            try:
                if self._dead is None and self.info is not None and self.watchdog_s:
                    self._sequenced(codec.watchdog(self._next, 0), 0)
                    self.flush(timeout_s=1.0)
            except LinkError:
                pass
            try:
                self.ser.close()
            except (serial.SerialException, OSError):
                pass
            self.ser = None
        if self.log is not None:
            self.log.close()

    # --- raw I/O -----------------------------------------------------------------------------------

    def _handshake(self) -> BoardInfo:
        deadline = time.monotonic() + self.connect_timeout_s
        try:
            self.ser.reset_input_buffer()
        except (serial.SerialException, OSError) as exc:
            raise LinkError(f"cannot use port {self.port!r}: {exc}") from None
        hello = None
        next_try = 0.0
        while hello is None:
            now = time.monotonic()
            if now > deadline:
                break
            if now >= next_try:
                self._write(codec.hello(0))
                next_try = now + 0.3
            self._read_some(0.02)
            hello = self._replies.pop("H", None)
        if hello is None:
            if self._garbage or self._rx:
                sample = bytes(self._garbage[:40] or self._rx[:40])
                raise ProtocolError(
                    f"the device on {self.port} answers, but not in the armctl protocol (e.g. "
                    f"{sample!r}): wrong baud rate or firmware? For StandardFirmata use "
                    "--backend firmata"
                )
            raise LinkError(
                f"no answer from a board on {self.port} within {self.connect_timeout_s:g} s: is it "
                "connected, powered and running armctl firmware?"
            )
        if hello.protocol not in codec.VERSIONS:
            raise ProtocolError(
                f"the board on {self.port} ({hello.firmware}) speaks protocol version "
                f"{hello.protocol}, this armctl speaks {' and '.join(map(str, codec.VERSIONS))}: update one of them"
            )
        if hello.channels > codec.max_channels(hello.protocol):
            raise ProtocolError(
                f"the board on {self.port} ({hello.firmware}) reports {hello.channels} channels: protocol version "
                f"{hello.protocol} lines carry at most {codec.max_channels(hello.protocol)} (docs/protocol.md, "
                "section 1): its firmware does not fit its own protocol"
            )
        if hello.firmware.endswith("-nochip"):  # our PCA9685 build found no chip when it started (protocol.md 11)
            raise LinkError(
                f"the board on {self.port} runs {hello.firmware.removesuffix('-nochip')}, but no PCA9685 answered "
                "it when it started: check the chip's wiring (SDA to A4, SCL to A5, VCC, GND), its address pads and "
                "the build's PCA9685_ADDR (the board restarts, and looks again, each time its port is opened)"
            )
        self.version = hello.protocol
        self._next = 1
        self._expect, self._free = 1, hello.depth
        info = BoardInfo(
            firmware=hello.firmware,
            protocol=hello.protocol,
            channels=hello.channels,
            depth=hello.depth,
            boot=hello.boot,
            limits_us=tuple((lo / 2, hi / 2) for lo, hi in hello.limits_ticks),
        )
        self.info = info
        st = self.status()
        info.values = st.values
        return info

    # --- Backend -----------------------------------------------------------------------------------

    def move(self, frames: int, values: dict[int, float | None]) -> None:
        ticks = [None] * self.info.channels
        for ch, us in values.items():
            if us is not None:
                ticks[ch] = int(round(us * codec.TICKS_PER_US))
        if not self._streaming and self.watchdog_s and time.monotonic() - self._last_sent_t > self.watchdog_s / 2:
            self.status()  # quiet for a while: hear a watchdog that fired while the arm stood still as such
        if self._watchdog_fired:  # it fired while the arm stood still: on again before anything moves
            self._arm_watchdog()
        data = codec.move(self._next, frames, ticks, version=self.version)
        deadline = time.monotonic() + max(5.0, frames * 0.02 * 4)
        while self._credit() <= 0 or len(self._out) >= 32:
            now = time.monotonic()
            if now > deadline:
                raise LinkError(f"the board on {self.port} stopped taking moves (queue full for too long)")
            if not self._out:
                self._poll_when_due(now)
            self._service(min(POLL_SLICE_S, max(0.0005, self._next_poll_t - now)))
            self._waiting()
        self._streaming = True
        self._sequenced(data, frames)
        self._service(0.0)

    def flush(self, *, timeout_s: float = 10.0) -> None:
        """Block until every line sent has been acknowledged."""
        deadline = time.monotonic() + timeout_s
        while self._out or self._pending_imm:
            if time.monotonic() > deadline:
                raise LinkError(f"the board on {self.port} did not acknowledge within {timeout_s:g} s")
            self._service(0.005)

    def drain(self, *, timeout_s: float | None = None) -> None:
        """Block until the board has played every move: it is asked when its queue is due to be done (from
        ``left``), not over and over."""
        self._feeding_since = None  # the queue runs out now: the host means it to
        self.flush()
        budget = timeout_s if timeout_s is not None else 10.0 + (sum(self._queued) + 20) * 0.02 * 2
        deadline = time.monotonic() + budget
        while True:
            st = self.status()
            if st.left_frames == 0:
                self._streaming = False
                return
            start = time.monotonic()
            until = min(start + st.left_frames * FRAME_S / self._board_rate, start + self._keepalive_s(), deadline)
            while (now := time.monotonic()) < until:
                self._waiting()
                self._service(min(POLL_SLICE_S, until - now))
            if time.monotonic() > deadline:
                raise LinkError(f"the board on {self.port} did not finish its moves within {budget:g} s")

    def _measure_clock(self, now: float, frame: int) -> None:
        """How fast the board's frames go against the host's clock (a real board: 1; a simulator run faster
        than real time: more), from its frame counter, so waits are timed on the board's clock."""
        if self._clock_ref is None:
            self._clock_ref = (now, frame)
            return
        t0, f0 = self._clock_ref
        frames = (frame - f0) % 2**32
        if frames < 10 or now <= t0:  # too short to tell (a frame is the resolution; Windows' monotonic clock
            return  # before Python 3.13 ticks every 15.6 ms, in which a fast simulator plays frames)
        rate = frames * FRAME_S / (now - t0)
        if 0.02 < rate < 500:
            self._board_rate = 0.5 * self._board_rate + 0.5 * rate
            self._rate_samples += 1
        self._clock_ref = (now, frame)

    def _refill_due_s(self, left_frames: int) -> float:
        """Queue full, ``left_frames`` to play: seconds until it is worth asking again. Slots free as the
        board starts the queued moves, whose lengths we know (the rest of ``left`` is the executing move):
        ask when ``REFILL_SLOTS`` are free, but while at least ``LOW_WATER_S`` of motion is still queued."""
        queued = list(self._queued)
        current = max(left_frames - sum(queued), 0)
        due = current + sum(queued[: REFILL_SLOTS - 1])
        low_water = max(LOW_WATER_S, LOW_WATER_HOST_S * self._board_rate) / FRAME_S  # frames to keep queued
        due = min(due, max(current, left_frames - low_water))
        return (due + SLOT_MARGIN_FRAMES) * FRAME_S / self._board_rate

    def _keepalive_s(self) -> float:
        """The longest the host stays silent while it waits: a third of the board's watchdog."""
        return self.watchdog_s / 3 if self.watchdog_s else 1.0

    def _poll_when_due(self, now: float) -> None:
        """Ask for the status when a queue slot is due to free (or the watchdog needs feeding)."""
        if "Q" in self._pending_imm:
            return
        if now >= self._next_poll_t or now - self._last_sent_t >= self._keepalive_s():
            self._immediate("Q")

    def stop(self) -> None:
        self._streaming = False
        self._feeding_since = None
        self._out.clear()
        self._queued.clear()
        self._immediate("X")
        ack = self._wait_reply("X", 2.0)
        self._next = ack.expect
        self._anchor = (time.monotonic(), float(self._sent_frames))  # nothing is left to play

    def drop_waiting(self) -> bool:
        """The base's contract: a stop (``X``) drops what waits and ends the move that plays."""
        if self.queued_frames() < 1:
            return False
        self.stop()
        return True

    def status(self) -> BoardStatus:
        self._immediate("Q")
        st = self._wait_reply("Q", 2.0)
        return BoardStatus(
            values=tuple(None if w is None else w / 2 for w in st.widths_ticks),
            left_frames=st.left_frames,
            counters=dict(st.counters),
            frame=st.frame,
        )

    def set_limits(self, channel: int, lo_us: float, hi_us: float) -> None:
        """Send ``L``: the board stores ``channel``'s range (0.5 us steps, inside lo_us..hi_us) and
        refuses widths outside it. BoardLimitsError if the board rejects it (its servo is held
        outside the new range, or the range is invalid)."""
        lo, hi = math.ceil(lo_us * codec.TICKS_PER_US - 1e-6), math.floor(hi_us * codec.TICKS_PER_US + 1e-6)
        self.flush()
        self._limits_seq = self._next
        try:
            self._sequenced(codec.limits(self._next, channel, lo, hi, version=self.version), 0)
            self.flush()
            rejected = self._replies.pop("L", None)
        finally:
            self._limits_seq = None
        if rejected is not None:
            held = self.status().values
            now = held[channel] if channel < len(held) else None
            why = (
                f"its servo is held at {now:g} us, outside the new range"
                if now is not None and not lo / 2 <= now <= hi / 2
                else "the range is invalid (500 <= lo < hi <= 2500 us) or a queued move lies outside it"
            )
            raise BoardLimitsError(
                f"the board on {self.port} refused limits {lo / 2:g}..{hi / 2:g} us for channel {channel} "
                f"({rejected.reason}): {why}"
            )
        if self.info is not None and channel < len(self.info.limits_us):
            lims = list(self.info.limits_us)
            lims[channel] = (lo / 2, hi / 2)
            self.info.limits_us = tuple(lims)

    def sync_limits(self, cal) -> None:
        """The board's stored pulse limits against the calibration, before anything moves: a channel at the
        factory range (never calibrated) gets the calibration's; any other difference raises
        BoardLimitsError (exit 4) naming the channel, both ranges and the fix."""
        info = self.info
        if not self.caps.stores_limits or info is None or not info.limits_us:
            return
        for s in cal.servos:
            if s.channel >= len(info.limits_us):
                raise BoardLimitsError(
                    f"the board has {info.channels} channels; servo {s.name!r} needs channel {s.channel}"
                )
            want = board_limits_us(s)
            have = tuple(float(v) for v in info.limits_us[s.channel])
            if have == want:
                continue
            if have == FACTORY_LIMITS_US:
                self.set_limits(s.channel, *want)
                continue
            raise BoardLimitsError(
                f"the board stores {have[0]:g}..{have[1]:g} us for channel {s.channel} ({s.name}) but the calibration "
                f"{cal.source} says {want[0]:g}..{want[1]:g} us: run 'armctl calibrate --push-limits' to write this "
                "calibration's limits to the board, or pass the calibration that matches it"
            )

    def wait_queued(self, frames: float) -> None:
        """Until at most ``frames`` (frames of real time: on a board run faster than real time, that many times
        its rate, so the host has as long to refill it) are left to play of what was sent, from the played
        estimate (``played_frames``), re-anchored by a status every ``ANCHOR_STALE_S``. More is kept after the
        board ran dry while fed (``lead_extra``, see ``note_empty``), and ``LEAD_MAX_S`` on a simulator run
        faster than real time."""
        if self._feeding_since is None:
            self._feeding_since = time.monotonic()
        # in host time: what the host needs to refill it (a board run faster than real time plays more frames)
        most = max(float(frames), LEAD_MAX_S / FRAME_S)
        if self._board_rate > FAST_BOARD_RATE or self._rate_samples < 2:
            # a simulator run faster than real time, at the pace its host allows (no one waits on its hold, and
            # its pace jumps with the machine's load), or a board whose pace is not measured yet (just connected)
            lead = most
        else:
            lead = min(float(frames) + self.lead_extra, most)  # (more after underruns)
        keep = lead * max(1.0, self._board_rate)
        deadline = time.monotonic() + 10.0 + (self._sent_frames - self.played_frames()) * FRAME_S * 2
        while True:
            self._service(0.0)
            left = self._sent_frames - self.played_frames()
            if left <= keep:
                return
            now = time.monotonic()
            if now > deadline:
                raise LinkError(f"the board on {self.port} stopped playing its moves")
            self._keep_alive(now)
            self._waiting()
            self._service(min(POLL_SLICE_S, max(0.0005, (left - keep) * FRAME_S / self._board_rate)))

    def note_empty(self, count: int, now: float) -> None:
        """The board's ``empty`` counter, from a status: while the host feeds a short queue (``wait_queued``), a
        rise is an underrun, and the queue kept ahead grows (``lead_extra``); without one it shrinks back."""
        last, self._empty_seen = self._empty_seen, (now, count)
        since = self._feeding_since
        if last is None or since is None or last[0] < since + FEED_SETTLE_S:
            return  # not feeding, or a run-out of before it began may still show
        if count != last[1]:
            self.underruns += 1
            self.lead_extra = min(self.lead_extra + LEAD_GROW_FRAMES, LEAD_MAX_S / FRAME_S)
        else:
            self.lead_extra = max(0.0, self.lead_extra - LEAD_SHRINK_FRAMES_S * (now - last[0]))

    def idle(self, seconds: float) -> None:
        """Read replies for ``seconds``, asking for the status when the watchdog needs feeding."""
        self._feeding_since = None  # the board may run dry now: the host means it to
        end = time.monotonic() + seconds
        while (now := time.monotonic()) < end:
            self._keep_alive(now)
            self._waiting()
            self._service(min(POLL_SLICE_S, end - now))

    def _keep_alive(self, now: float) -> None:
        """A status request when the host has been quiet for a third of the watchdog, or the played estimate is
        ``ANCHOR_STALE_S`` old (it is timed on the board's clock, measured from these replies: a board run faster
        than real time would otherwise look slower than it is, and run dry)."""
        if "Q" in self._pending_imm:
            return
        stale = self._anchor is None or now - self._anchor[0] > ANCHOR_STALE_S
        if now - self._last_sent_t >= self._keepalive_s() or stale:
            self._immediate("Q")

    def silent_frames(self) -> float:
        return max(0.0, (time.monotonic() - self._last_sent_t) * self._board_rate / FRAME_S)

    def played_frames(self) -> int:
        """Frames played so far: from the last status (frames accepted minus ``left``) and the time since,
        never past what the board acknowledged; before any status, counted by whole moves."""
        acked = self._sent_frames - sum(s.frames for s in self._out)
        if self._anchor is None:
            return max(0, acked - sum(self._queued))
        t, played = self._anchor
        est = played + (time.monotonic() - t) * self._board_rate / FRAME_S
        return int(max(0.0, min(float(acked), est)))

    def queued_frames(self) -> float:
        """Frames sent and not yet played (estimate, see ``played_frames``). Reads the acknowledgements that came in
        first: the estimate never runs past them, and a caller that only sends (a follow) would wait forever; and asks
        for the status now and then (``REANCHOR_S``), so the estimate does not drift from the board's clock."""
        self._service(0.0)
        now = time.monotonic()
        if "Q" not in self._pending_imm and (self._anchor is None or now - self._anchor[0] > REANCHOR_S):
            self._immediate("Q")
        return float(max(0, self._sent_frames - self.played_frames()))

    def measured(self, *, settle_s: float = 0.0) -> dict[int, float]:
        if not self.caps.measures_positions or self.ser is None:
            return {}
        try:
            return dict(self.ser.measured_angles(settle_s=settle_s))
        except (serial.SerialException, OSError) as exc:
            raise LinkError(f"lost the link to {self.port}: {exc}") from None
