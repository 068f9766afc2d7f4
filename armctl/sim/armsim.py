"""The simulated arm: our board (``Board``) behind a modelled serial link, driving modelled servos.

``SimArm`` is transport-free: the pyserial URL handler (``protocol_armsim``)
and the pseudo-terminal runner (``pty``) both feed it bytes and ask it for
bytes, giving it the simulated time. Times here are simulated seconds; the
``rate`` option only maps them to wall time.

- Link: each byte takes 10 bit times at ``baud`` in each direction, plus
  ``delay``; whole lines are dropped or get one bit flipped with probability
  ``drop``/``corrupt`` (both directions); after ``disconnect`` host bytes the
  link is gone.
- Boot: the port opening is the board's reset (a Uno resets on DTR). The board
  sends its ``- ! BOOT`` line ``BOOT_S`` after it, when its UART is ready, and
  reads host bytes from then on (earlier ones wait), so the banner comes before
  any reply, as on the firmware.
- Servos: each channel's horn moves toward the commanded pulse at ``slew``
  deg/s (converted to us/s with the servo's us per degree); without pulses it
  stays where it is. Joint angles come from the pulse through the calibration,
  bent by hidden ``offset``/``scale``/``flip`` errors (for calibration tests), then by the ``truth`` file
  (``armctl.sim.truth``: zero offsets, pulse-to-angle bow, backlash, true link lengths), as a real arm is.
"""

from __future__ import annotations

import copy
import json
import math
import random
import time
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from armctl.bus import codec
from armctl.calibration.servo import Calibration, find_calibration, load_calibration
from armctl.model.arm import Arm, load_arm
from armctl.sim.board import DEFAULT_LIMITS_TICKS, FIRMWARE_CHANNELS, Board
from armctl.sim.link import LinkOptions, OverLink, TimedLink
from armctl.sim.physics.servos import physics_world, pwm_servo
from armctl.sim.pwm_servo import PwmServo
from armctl.sim.truth import TrueArmView, load_truth, true_arm

#: pulse changes ``SimArm.pulses`` keeps, the newest (about 0.1 KiB each: 2 MB full; a board moving four
#: channels every 20 ms frame logs 200 a second, so this is the last 100 s of a long follow or stream)
PULSES_KEPT = 20_000


@dataclass
class SimOptions(LinkOptions):
    """Every simulator option, as given in the ``armsim://`` URL (units in the names; the link's in ``LinkOptions``)."""

    arm: str = "seed-3link"
    cal: str | None = None
    rate: float = 1.0
    baud: int = 115200
    depth: int = 16
    protocol: int = codec.PROTOCOL_VERSION
    channels: int | None = None  # None: our firmware's count in that protocol version (4, 8)
    slew_deg_s: float = 400.0
    offset_deg: list[float] = field(default_factory=list)
    scale: list[float] = field(default_factory=list)
    flip: list[int] = field(default_factory=list)
    start_deg: list[float] | None = None
    state: str | None = None
    boot: int | None = None
    encoders: int = 1  # 0: nothing reads where the servos are (a real Uno's PWM servos)
    limits_us: list[tuple[float, float]] | None = None
    stall: tuple[str, float] | None = None  # (joint name or "gripper", simulated s): that servo jams then
    truth: str | None = None  # the truth file (armctl.sim.truth): how the real arm differs from the believed
    physics: int = 0  # 1: the servos move a physics plant (armctl.sim.physics), the world of ``scene``
    scene: str | None = None  # the physics scene file (armctl.sim.physics.scenefile)
    speed: float | None = None  # physics=1's name of rate, as given


class SimArm(TrueArmView, OverLink):
    """A simulated board and arm; feed it host bytes with ``host_write`` and read ``host_read``."""

    BOOT_S = 0.05  # simulated seconds from reset (the port opening) to the board's UART being ready
    SAVE_PERIOD_S = 0.1  # wall seconds between two writes of the state file while the host streams

    def __init__(self, opts: SimOptions | None = None, *, arm: Arm | None = None, cal: Calibration | None = None):
        self.opts = o = opts or SimOptions()
        self.arm = arm or load_arm(o.arm)
        self.cal = cal or load_calibration(find_calibration(self.arm.name, o.cal))
        if self.cal.unit != "us":
            raise ValueError(
                f"armsim simulates hobby (PWM) servos; calibration {self.cal.source} is for bus servos "
                "(feetechsim:// simulates those)"
            )
        self.physics = physics_world(o, self.arm, self.cal)  # None: the kinematic servo model
        self.truth = load_truth(o.truth, self.arm, self.cal) if o.truth else None
        self.true_arm = true_arm(self.arm, self.truth)
        self.scene_arm = None  # the scene's view of this arm while its port is open (armctl.sim.scene)
        self.rng = random.Random(o.seed)
        channels = max(FIRMWARE_CHANNELS[o.protocol] if o.channels is None else o.channels, self.cal.channel_count)
        if channels > codec.max_channels(o.protocol):
            raise ValueError(
                f"calibration {self.cal.source} uses channel {self.cal.channel_count - 1}: protocol version "
                f"{o.protocol} lines carry channels 0..{codec.max_channels(o.protocol) - 1} (protocol=2 carries more)"
            )
        #: the board's pulse changes, in order: (simulated time, channel, width us or None), the last ``PULSES_KEPT``
        self.pulses: deque[tuple[float, int, float | None]] = deque(maxlen=PULSES_KEPT)
        self.board = Board(
            protocol=o.protocol,
            channels=channels,
            depth=o.depth,
            boot=o.boot if o.boot is not None else self.rng.getrandbits(16),
            on_pulse=self._on_pulse,
        )
        self.board.limits = self._start_limits(channels)
        self._saved_limits = list(self.board.limits)
        self._saved_wall = -math.inf
        self.byte_s = 0.0 if o.baud <= 0 else 10.0 / o.baud
        self.link = TimedLink(o, self.rng, "board")
        self.writes_after_disconnect = 0
        self._tx_line = bytearray()
        self._tx_free_s = 0.0
        self._rx_free_s = 0.0
        self._to_board: list[tuple[float, int, bytes]] = []
        self.now = 0.0
        self.servos: dict[int, PwmServo] = {}
        self._check_options(len(self.cal.servos))
        start = self._start_pose()
        n = self.arm.n
        true_servos = self.truth.servos(self.cal) if self.truth else {}
        for i, s in enumerate(self.cal.servos):
            sign = -1.0 if i in o.flip else 1.0
            scale = o.scale[i] if i < len(o.scale) else 1.0
            offset = math.radians(o.offset_deg[i]) if i < len(o.offset_deg) else 0.0
            servo = pwm_servo(self.physics, i if i < n else None, s, sign, scale, offset, o.slew_deg_s * s.us_per_deg)
            servo.p_us = servo.us_for_angle(start[i] if i < n else start[n])
            servo.truth = true_servos.get(s.channel)
            if o.stall is not None and o.stall[0] == s.name:
                servo.stall_at_s = o.stall[1]
            self.servos[s.channel] = servo
        if self.physics is not None:
            self.physics.start(start[:n], start[n] if self.arm.gripper is not None else None)
        self._to_host_schedule(self.board.banner(), self.BOOT_S)

    # --- state ---------------------------------------------------------------------------------

    def _check_options(self, servos: int) -> None:
        """ValueError naming the option when a per-servo option does not fit this arm, or the state file
        cannot be written."""
        o = self.opts
        for name, values in (("offset", o.offset_deg), ("scale", o.scale), ("start", o.start_deg or [])):
            if len(values) > servos:
                raise ValueError(f"option {name} gives {len(values)} values; this arm has {servos} servos")
        names = [s.name for s in self.cal.servos]
        if o.stall is not None and o.stall[0] not in names:
            raise ValueError(
                f"option stall={o.stall[0]}@{o.stall[1]:g}: no servo {o.stall[0]!r}; servos: {', '.join(names)}"
            )
        bad_flip = [i for i in o.flip if not 0 <= i < servos]
        if bad_flip:
            raise ValueError(f"option flip={bad_flip[0]}: servos are numbered 0..{servos - 1}")
        if o.state:
            path = Path(o.state)
            try:
                path.parent.mkdir(parents=True, exist_ok=True)
                with open(path, "ab"):
                    pass
            except OSError as exc:
                raise ValueError(f"option state={o.state}: cannot write it ({exc.strerror or exc})") from None

    def _start_pose(self) -> list[float]:
        o = self.opts
        grip = self.arm.gripper.open_rad if self.arm.gripper is not None else 0.0
        pose = [*map(float, self.arm.home_rad), grip]
        if o.state and Path(o.state).is_file():
            try:
                saved = json.loads(Path(o.state).read_text(encoding="utf-8"))["q_rad"]
                if len(saved) == len(pose):
                    pose = [float(v) for v in saved]
            except (ValueError, KeyError, TypeError):
                pass
        if o.start_deg is not None:
            for i, v in enumerate(o.start_deg[: len(pose)]):
                pose[i] = math.radians(v)
        return pose

    def _start_limits(self, channels: int) -> list[tuple[int, int]]:
        """Per-channel limits (ticks) at boot: the ``limits`` option, else those stored in the ``state``
        file (the board's EEPROM), else the protocol's defaults."""
        lims = [DEFAULT_LIMITS_TICKS] * channels
        o = self.opts
        if o.state and Path(o.state).is_file():
            try:
                saved = json.loads(Path(o.state).read_text(encoding="utf-8")).get("limits_us", [])
                for ch, (lo, hi) in enumerate(saved[:channels]):
                    lims[ch] = (round(float(lo) * 2), round(float(hi) * 2))
            except (ValueError, KeyError, TypeError, AttributeError):
                pass
        for ch, (lo, hi) in enumerate((o.limits_us or [])[:channels]):
            lims[ch] = (round(lo * 2), round(hi * 2))
        return lims

    def save_state(self, *, host_gone: bool = False) -> None:
        """Write the servo positions and the board's limits to the ``state`` file (the arm stays where it
        is between runs; the limits persist like the firmware's EEPROM). ``host_gone``: the positions the
        servos end in if the host went silent now (the board plays its queue until its watchdog fires),
        written while the host streams, so a host killed outright leaves the arm where a real one stops."""
        if not self.opts.state:
            return
        if host_gone:
            q = self._angles_after(self._widths_when_host_gone())
        else:
            q = self._angles_after([])  # (before the truth: they give the pulses back when read)
        self._saved_wall = time.monotonic()
        path = Path(self.opts.state)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        limits = [[lo / 2, hi / 2] for lo, hi in self.board.limits]
        tmp.write_text(json.dumps({"q_rad": q, "limits_us": limits}), encoding="utf-8")
        tmp.replace(path)
        self._saved_limits = list(self.board.limits)

    def _widths_when_host_gone(self) -> list[int | None]:
        """Per channel, the width (ticks; None: no pulse) the board holds once it has played its queue up
        to its watchdog (to the queue's end with no watchdog set), hearing nothing more."""
        keep = self.board.on_pulse
        self.board.on_pulse = None  # (the copy must not call back into this simulator)
        try:
            board = copy.deepcopy(self.board)
        finally:
            self.board.on_pulse = keep
        if board.wdog_deadline is not None:
            board.advance_to(board.wdog_deadline + board.frame_s)
        else:
            left = sum(m.frames for m in board.queue) + (board.cur.frames - board.cur.done if board.cur else 0)
            board.advance_to(board.now + (left + 2) * board.frame_s)
        return list(board.out)

    def _angles_after(self, widths: list[int | None]) -> list[float]:
        """Joint angles (then the gripper's, 0 without one) the servos settle at, holding ``widths``."""
        out = []
        for s in self.cal.servos:
            servo, w = self.servos[s.channel], widths[s.channel] if s.channel < len(widths) else None
            held = servo.position_us(self.now) if w is None else w / 2.0
            out.append(servo.hidden_rad(held))
        return out if self.cal.gripper is not None else [*out, 0.0]

    def _on_pulse(self, t: float, channel: int, ticks: int | None) -> None:
        width = None if ticks is None else ticks / 2.0
        self.pulses.append((t, channel, width))
        if self.scene_arm is not None:  # the scene sees the motion so far before it changes
            self.scene_arm.observe(t)
        servo = self.servos.get(channel)
        if servo is not None and width is not None:
            servo.command(t, width)
        elif servo is not None:
            servo.command(t, None)

    # --- what the arm does ---------------------------------------------------------------------

    def q_rad(self, t: float | None = None) -> np.ndarray:
        """True joint angles (rad) of the simulated arm at simulated time ``t`` (default now)."""
        t = self.now if t is None else t
        return np.array([self.servos[s.channel].angle_rad(t) for s in self.cal.joints])

    def gripper_rad(self, t: float | None = None) -> float:
        """True gripper angle (rad)."""
        if self.cal.gripper is None:
            return float("nan")
        return self.servos[self.cal.gripper.channel].angle_rad(self.now if t is None else t)

    def angles_rad(self, t: float | None = None) -> dict[int, float]:
        """channel -> each servo's true joint (or gripper) angle (rad) at simulated time ``t`` (default now)."""
        t = self.now if t is None else t
        return {ch: float(servo.angle_rad(t)) for ch, servo in self.servos.items()}

    def tool_m(self, t: float | None = None) -> np.ndarray:
        """True tool point (x, y; x, y, z on a base arm) in metres, from the simulated servo positions."""
        return self.true_tool_m(t)

    def _true_servo_rad(self, servo_cal, t: float) -> float:
        return self.servos[servo_cal.channel].angle_rad(t)

    @property
    def compute_wall_s(self) -> float:
        """Wall seconds spent computing the physics (0 without): the port's clock stands still meanwhile."""
        return 0.0 if self.physics is None else self.physics.compute_wall_s

    def world(self) -> dict | None:
        """The physics plant's world now (``PhysicsWorld.world``), None without ``physics=1``."""
        return None if self.physics is None else self.physics.world()

    def settle_s(self) -> float:
        """Simulated seconds until every servo reaches its commanded pulse (and the queue is played)."""
        queue_s = self.board.left_frames * self.board.frame_s
        return queue_s + max((s.settle_s(self.now) for s in self.servos.values()), default=0.0)

    # --- link ----------------------------------------------------------------------------------

    def _to_host_schedule(self, data: bytes, t: float) -> None:
        for line in data.splitlines(keepends=True):
            self._rx_free_s = max(t, self._rx_free_s) + len(line) * self.byte_s
            self.link.send_to_host(line, self._rx_free_s)

    def host_write(self, data: bytes, t: float) -> None:
        """Bytes the host writes at simulated time ``t``; raises LinkGone once disconnected."""
        if self.link.gone:
            self.writes_after_disconnect += 1
            raise self.link.gone_error()
        self.pump(t)
        data = self.link.cut(data)
        start = max(t, self._tx_free_s)
        for i, byte in enumerate(data):
            self._tx_line.append(byte)
            if byte == 0x0A:
                line = self.link.fault(bytes(self._tx_line), "board")
                self._tx_line.clear()
                if line is not None:
                    arrival = max(start + (i + 1) * self.byte_s + self.link.delay_s, self.BOOT_S)  # read once booted
                    self.link.deliver(self._to_board, arrival, line)
        self._tx_free_s = start + len(data) * self.byte_s
        self.link.check()

    def pump(self, t: float) -> None:
        """Run the board and the link up to simulated time ``t``."""
        heard = False
        while True:
            t_line = self._to_board[0][0] if self._to_board else math.inf
            t_board = self.board.next_event_s()
            t_next = min(t_line, t_board)
            if t_next > t:
                break
            if t_line <= t_board:
                _, _, line = self._to_board.pop(0)
                out = self.board.receive(line, t_line)
                heard = True
            else:
                out = self.board.advance_to(t_board)
            if out:
                self._to_host_schedule(out, t_next)
        self.board.advance_to(t)
        self.now = max(self.now, t)
        if self.physics is not None:
            self.physics.advance(self.now)
        if self.board.limits != self._saved_limits:
            self.save_state()  # an L command: written through at once, like EEPROM
        elif heard and time.monotonic() - self._saved_wall >= self.SAVE_PERIOD_S:
            self.save_state(host_gone=True)

    def next_arrival_s(self) -> float:
        """Simulated time at which something may next reach the host (inf if nothing pending)."""
        cands = [self.link.next_to_host_s()]
        if self._to_board:
            cands.append(self._to_board[0][0])
        if self.board.wdog_deadline is not None:
            cands.append(self.board.wdog_deadline)
        return min(cands)
