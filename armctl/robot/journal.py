"""The crash journal of an open Robot, written by its motion runner (``armctl.robot.runner``) as it plays: once a
frame the pose the board would stop in if this program died now (marked unclean, with how long the board
plays on), the pose played now for watchers, the program step playing (fsynced); at the end of a motion the
pose the board holds, clean. The files are ``armctl.robot.state``'s."""

from __future__ import annotations

import math
import time

from armctl.bus.backend import FRAME_S
from armctl.robot.restart import step_start as restart_step_start
from armctl.robot.state import LiveStore, PoseStore, RunRecord, RunStore, cal_digest, suspect

JOURNAL_PERIOD_S = 0.02  # while moving, the pose the board would stop in is journaled once a frame


class Journal:
    """The stored pose (``store``), the live pose (for watchers) and the program progress of ``owner``'s arm
    on its port (``owner``: the Robot; its ``arm``, ``calibration`` and ``backend`` are read when used)."""

    def __init__(self, owner, port: str, store: PoseStore | None = None):
        self.owner = owner
        self.store = store or PoseStore(port, owner.arm)
        self.runs = RunStore(port, owner.arm)
        self.live = LiveStore(port, owner.arm)  # the pose played now, for watchers (armctl web --watch)
        self._journaled = 0.0
        self._cal: tuple[object, str] | None = None  # (calibration, its digest), stored with every pose

    @property
    def files(self) -> tuple:
        """The open state files (for a finalizer, which must not hold the Robot)."""
        return self.store, self.live, self.runs

    def recovered(self) -> str | None:
        """One line if the last run on this port ended without a clean stop, else None."""
        stored = self.store.load()
        if stored is None or stored.clean:
            return None
        why = suspect(stored)
        if why:
            return (
                f"the last run on this port ended without a clean stop, but its journal {self.store.path} is suspect: "
                f"{why}: its pose is not used"
            )
        if self.store.checked(self.owner.calibration)[0] is None:
            return "the last run on this port ended without a clean stop, and the pose it journaled cannot be trusted"
        age = time.time() - stored.time_s
        when = f" {age:.0f} s ago" if 0 <= age < 36000 else ""
        return (
            f"the last run on this port ended without a clean stop{when} (killed, or the link or the PC went "
            "down): starting from the pose it journaled while moving"
        )

    def start(self) -> None:
        """A motion starts playing: journal its first frame at once."""
        self._journaled = 0.0

    def due(self, now: float) -> bool:
        """True (and the clock reset) once a frame has passed since the last journal entry."""
        if now - self._journaled < JOURNAL_PERIOD_S:
            return False
        self._journaled = now
        return True

    def playing(self, player, start: list, m=None) -> None:
        """Once a frame while ``player`` plays: store, marked unclean, the pose the board would stop in if this
        program died now (what it was sent, played on for ``backend.runs_on_frames``; see ``armctl.robot.state``).
        ``start``: each servo's value before the motion (for servos it leaves alone)."""
        if player is None or not self.due(time.monotonic()):
            return
        be, servos = self.owner.backend, self.owner.calibration.servos
        played = player.frames_played()
        # the board's watchdog runs from the last byte it heard: with the queue full the host may have been
        # quiet for a third of it already, and the board stops that much sooner than "now + watchdog"
        runs_on = max(0.0, be.runs_on_frames - be.silent_frames())
        frame = min(player.frames_sent, played + runs_on)
        if m is not None and m.program is not None:
            self.record_step(m, player, int(frame), "running")
        by_ch = player.values_at(frame)
        values = [by_ch.get(s.channel, v) for s, v in zip(servos, start)]
        if any(v is None for v in values[: self.owner.arm.n]):
            return
        self.store_pose(values, clean=False, hold_in_s=(frame - played) * FRAME_S)
        now_ch = player.values_at(played)
        self.store_pose([now_ch.get(s.channel, v) for s, v in zip(servos, start)], clean=False, live=True)

    def record_step(self, m, player, frame: int, status: str, *, force: bool = False) -> None:
        """Record (fsynced, so it survives a power cut) the program step that sent frame ``frame`` plays, when
        it changes (``force``: always, e.g. at the end, with ``status``)."""
        pr = m.program
        part, idx = player.step_at(frame) if player.parts else (0, 0)
        if len(player.parts) > 1 and part == 0:  # the ramp to the start
            k = pr.first_step
        else:
            k = max(pr.first_step, idx - pr.offset)
        if k == m.step_recorded and not force:
            return
        m.step_recorded = k
        start = restart_step_start(pr.plan.trajectory, k)
        rec = RunRecord(pr.program, pr.digest, k, pr.steps, status, float(pr.plan.trajectory.gripper_rad[start]))
        try:
            self.runs.save(rec)
        except OSError:
            pass

    def store_pose(self, values, *, clean: bool, hold_in_s: float = 0.0, live: bool = False) -> None:
        """Store the pose servo ``values`` mean (best effort: the state folder was writable at connect, and the
        motion matters more than its record); ``live``: publish it as the pose played now (for watchers)."""
        cal, n = self.owner.calibration, self.owner.arm.n
        q = [float(s.angle_rad(v)) for s, v in zip(cal.joints, values)]  # no fk: this runs 50 Hz
        grip = cal.gripper
        g = math.nan if grip is None or len(values) <= n or values[n] is None else grip.angle_rad(values[n])
        if self._cal is None or self._cal[0] is not cal:
            self._cal = (cal, cal_digest(cal))
        try:
            if live:
                self.live.save(q, float(g), values, clean=clean)
            else:
                self.store.save(q, float(g), values, clean=clean, durable=clean, hold_in_s=hold_in_s, cal=self._cal[1])
        except OSError:
            pass

    def remember(self, held) -> None:
        """Store the pose the board holds (``held``: per servo, None where it has no pulse) as this port's last
        pose, clean (for a board that forgets it on reset). Servos without pulses: nothing is stored, the
        journal of an unclean end stays."""
        if not any(v is None for v in held[: self.owner.arm.n]):
            self.store_pose(held, clean=True)
            self.store_pose(held, clean=True, live=True)

    def close(self) -> None:
        self.store.close()
        self.runs.close()
        self.live.close()
