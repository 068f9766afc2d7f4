"""``armctl follow --leader PORT``: a leader arm moved by hand drives the follower (the global --arm, --port,
--calibration), optionally recording LeRobot dataset episodes (``--record-dataset DIR --task TEXT``).

A thin caller of ``Robot.follow`` (``armctl.teleop.follow`` maps, the Robot limits and streams). Everything is
checked before a servo moves: the leader's and follower's arms and calibrations, the mapping, the cameras
(each opened and read once), the dataset folder (another robot's or fps is refused). Keys (a terminal):
Enter starts and ends an episode, ``d`` discards the one being recorded, ``q`` ends the follow (also
Ctrl-C, SIGTERM: the follower stops under control and holds; an episode being recorded is saved). Without
a terminal (a pipe, a service) an empty line is Enter and ``d`` a discard, and the first episode starts by
itself once the follower has caught up with the leader.
"""

from __future__ import annotations

import json
import math
import os
import sys
import threading
import time
from types import SimpleNamespace

from armctl.cli import add_command
from armctl.core.units import parse_float, parse_length
from armctl.errors import BadInputError, LinkError
from armctl.model.validate import positive_text

EPILOG = """\
keys: Enter start/end an episode (--record-dataset)   d discard the episode   q quit (Ctrl-C also)
units: --rate Hz, --max-lag-deg deg, --offset lengths (m, or 20mm), --scale a ratio, --episode-s s.
examples:
  armctl --arm so101 --port /dev/ttyACM0 follow --leader /dev/ttyACM1
  armctl --arm so101 follow --leader 'feetechsim://?hand=examples/hand_so101.csv'     # both simulated
  armctl --arm mearm --port /dev/ttyACM0 follow --leader /dev/ttyACM1 --map tool --offset 0,0,20mm
  armctl --arm so101 follow --leader /dev/ttyACM1 --record-dataset demos --task "pick the cube" \\
      --camera front=/dev/video0 --episode-s 20 --episodes 10"""
STATUS_S = 0.2


DESCRIPTION = (
    "Read a leader arm's positions (bus servos, torque off) every frame and drive the arm (the "
    "follower: --arm, --port, --calibration) to match, inside its joint, speed and reach limits; starts with "
    "a slow ramp, stops under control (Ctrl-C, q, SIGTERM, a lost leader: exit 4), the arm holds."
)


def register(sub, parents) -> None:
    p = add_command(sub, "follow", parents=parents, epilog=EPILOG, description=DESCRIPTION)
    p.add_argument("--leader", required=True, metavar="PORT", help="the leader arm's port (or feetechsim://?...)")
    p.add_argument(
        "--leader-arm",
        metavar="NAME|PATH",
        help="the leader's arm model (default: the follower's leader preset, koch-leader for a koch, else so101)",
    )
    p.add_argument(
        "--leader-calibration",
        metavar="FILE|lerobot:ID",
        help="the leader's servo calibration (default: as for the follower, by the leader arm's name)",
    )
    p.add_argument(
        "--map",
        choices=("joints", "tool"),
        default="joints",
        help="joints: joint to joint (the same model); tool: the tool point and pitch (any pair), the wrist roll when "
        "both arms have one (else the follower keeps its roll), gripper by fraction",
    )
    p.add_argument("--scale", metavar="RATIO", help="--map tool: leader tool offsets times this (default: reach ratio)")
    p.add_argument("--offset", metavar="X,Y[,Z]", help="--map tool: added to the follower's tool point (m or mm)")
    p.add_argument("--rate", default="50", metavar="HZ", help="frames a second: leader reads, follower steps (50)")
    p.add_argument(
        "--max-lag-deg", metavar="DEG", help="stop (exit 3) if a joint lags the leader by more (default: no limit)"
    )
    p.add_argument("--duration", metavar="S", help="stop after S seconds (default: until q, Ctrl-C, SIGTERM)")
    p.add_argument("--json", action="store_true", help="print the summary as JSON")
    p.add_argument("--wire-log", metavar="FILE", help="write the follower's bytes, with times, to FILE")
    from armctl.cli.common import torque_options

    torque_options(p)  # a goal or step asking a servo too much: the follower holds (the status says why)
    from armctl.cli.dataset_options import dataset_options

    dataset_options(p, follow=True)
    p.set_defaults(func=cmd_follow)


class Keys:
    """Keys from the terminal (``armctl.core.terminal``, every OS; Ctrl-C there is an interrupt, a terminal that went
    away is ``q``) or lines from a pipe: ``get()`` -> "enter", "d", "q" or None."""

    def __init__(self, stream=sys.stdin):
        self.stream = stream
        self.events: list[str] = []
        self.term = None
        try:
            fd = stream.fileno()
            self.tty = os.isatty(fd)
        except (AttributeError, OSError, ValueError):
            fd, self.tty = None, False
        if self.tty:
            from armctl.core.terminal import Terminal

            self.term = Terminal(fullscreen=False, fd_in=fd, out=sys.stderr)
        elif fd is not None:
            threading.Thread(target=self._lines, name="armctl-follow-keys", daemon=True).start()

    def _lines(self) -> None:
        try:
            for line in self.stream:
                word = line.strip().lower()
                self.events.append("enter" if word == "" else word[:1])
        except (OSError, ValueError):
            pass

    def get(self) -> str | None:
        if self.term is not None:
            key = self.term.key(0.0)
            if key == "ctrl-c":
                raise KeyboardInterrupt
            return {"ctrl-d": "q", "escape": None}.get(key, key.lower() if key else None)
        return self.events.pop(0) if self.events else None

    def close(self) -> None:
        if self.term is not None:
            self.term.restore()
            self.term = None


def _offset(text: str | None):
    if text is None:
        return None
    parts = [p for p in text.replace(" ", "").split(",")]
    return [parse_length(p, what="--offset") for p in parts]


def _positive(text, what: str) -> float | None:
    return None if text is None else positive_text(text, what)


def default_leader(arm) -> str:
    """The leader arm when --leader-arm is not given: the preset ``<arm>-leader`` where there is one (koch:
    koch-leader), else the SO-101 (a leader of the same model, or any arm following its tool point)."""
    from armctl.core.paths import preset_names

    name = f"{arm.name}-leader"
    return name if name in preset_names() else "so101"


def cmd_follow(args) -> int:
    from armctl.calibration.lerobot import open_calibration
    from armctl.cli.common import open_robot, setup
    from armctl.model.arm import load_arm
    from armctl.teleop.follow import Teleop
    from armctl.teleop.leader import check_leader, open_leader

    arm, cal = setup(args)
    leader_arm = load_arm(args.leader_arm or default_leader(arm))
    leader_cal, _, notes = open_calibration(args.leader_calibration, leader_arm)  # YAML, lerobot:ID or .json
    for note in notes:
        print(f"armctl: note: leader: {note}", file=sys.stderr)
    check_leader(leader_arm, leader_cal)
    rate, scale, offset, max_lag, duration, episode_s, episodes = _numbers(args)
    opts = dict(map=args.map, rate_hz=rate, scale=scale, offset_m=offset, max_lag_deg=max_lag)
    Teleop(SimpleNamespace(arm=leader_arm), arm, **opts)  # the mapping checked before any port is opened
    source = "measured" if cal.unit == "steps" or (args.port is None and cal.unit == "us") else "commanded"
    from armctl.cli.dataset_options import open_dataset

    recorder = open_dataset(args, arm, cal, state_source=source)
    keys = None
    try:
        leader = open_leader(leader_arm, args.leader, leader_cal)
        with leader, open_robot(args, arm, cal) as robot:
            if recorder is not None:
                measures = robot.backend.caps.measures_positions
                recorder.writer.extra["state_source"] = "measured" if measures else "commanded"

            def on_frame(t, q, g, target, measured):
                if recorder is None:
                    return
                qm = gm = None
                if measured and all(s.channel in measured for s in robot.calibration.joints):
                    qm = [measured[s.channel] for s in robot.calibration.joints]
                    gs = robot.calibration.gripper
                    gm = measured.get(gs.channel) if gs is not None else None
                held_cmd = target.held_cmd_steps or None
                held_meas = None
                if held_cmd:
                    ids = {h.id: h.name for h in robot.calibration.held}
                    held_meas = {ids[i]: v for i, v in robot.backend.held_steps().items() if i in ids} or None
                recorder.feed(t, q, g, qm, math.nan if gm is None else gm, held_cmd, held_meas)

            keys = Keys()
            m = robot.follow(
                leader,
                map=args.map,
                rate_hz=rate,
                scale=scale,
                offset=offset,
                max_lag_deg=max_lag,
                on_frame=on_frame,
            )
            summary = _loop(args, robot, m, recorder, keys, duration, episode_s, episodes)
    except BaseException:
        if keys is not None:
            keys.close()
        if recorder is not None:
            try:
                recorder.close(save=True)
            except Exception:  # noqa: BLE001 - the first error is the one to report
                pass
        raise
    keys.close()
    if recorder is not None:
        recorder.close(save=True)
    _print_summary(args, summary, leader_arm.name, recorder)
    return 0


def _numbers(args) -> tuple:
    """--rate, --scale, --offset, --max-lag-deg, --duration, --episode-s and --episodes, each checked."""
    rate = parse_float(args.rate, what="--rate")
    scale = None if args.scale is None else parse_float(args.scale, what="--scale")
    offset = _offset(args.offset)
    max_lag = _positive(args.max_lag_deg, "--max-lag-deg")
    duration = _positive(args.duration, "--duration")
    episode_s = _positive(getattr(args, "episode_s", None), "--episode-s")
    episodes = None
    if args.episodes is not None:
        episodes = parse_float(args.episodes, what="--episodes")
        if episodes != int(episodes) or episodes < 1:
            raise BadInputError(f"--episodes: a whole number >= 1, got {args.episodes}")
    if (episode_s or episodes) and args.record_dataset is None:
        raise BadInputError("--episode-s and --episodes are for recording: give --record-dataset DIR too")
    return rate, scale, offset, max_lag, duration, episode_s, episodes


def _print_summary(args, summary: dict, leader_name: str, recorder) -> None:
    """The end of ``armctl follow``: one line, or the summary as JSON; with the dataset's episodes if recorded."""
    from armctl.cli.dataset_options import saved_text

    if recorder is not None:
        summary["episodes_saved"] = recorder.saved
        summary["episodes_discarded"] = recorder.discarded
        summary["dataset"] = str(recorder.writer.root)
    if args.json:
        print(json.dumps({**summary, "leader_arm": leader_name}, indent=1))
        return
    line = (
        f"followed the {leader_name} for {summary['wall_s']:.1f} s: {summary['frames']} frames at "
        f"{summary['rate_hz']:.1f} Hz, {summary['clamped_frames']} clamped"
    )
    if recorder is not None:
        line += f"; {saved_text(recorder)}"
    print(line)


def _loop(args, robot, m, recorder, keys, duration, episode_s, episodes) -> dict:
    """Keys, status line and episodes while the follow runs; returns the summary once it is stopped."""
    from armctl.cli.common import raise_dataset_error

    tp = m.teleop
    st = tp.status
    t0 = time.monotonic()
    status = _StatusLine(st, recorder) if sys.stderr.isatty() and not args.json else None
    ep = None if recorder is None else _Episodes(recorder, args.task, episode_s, episodes, auto=not keys.tty)
    stop_reason = None
    try:
        while not m.done:
            now = time.monotonic()
            key = keys.get()
            stop_reason = "q pressed" if key == "q" else None
            if ep is not None:
                stop_reason = (None if key == "q" else ep.on_key(key, now)) or stop_reason
                stop_reason = ep.tick(now, st.ramping) or stop_reason
            if duration is not None and now - t0 >= duration:
                stop_reason = f"--duration {duration:g} s"
            raise_dataset_error(robot, m, recorder)  # a camera gone, a full disk: stop now, say why
            if stop_reason:
                robot.stop(stop_reason)
                break
            if status is not None:
                status.show(now)
            time.sleep(0.02)
        try:
            m.wait()
        except Exception as exc:  # noqa: BLE001 - a stop we asked for is the normal end
            if stop_reason is None or not exc.__class__.__name__ == "StopRequested":
                if recorder is not None and isinstance(exc, LinkError):
                    recorder.discard_episode()  # a lost leader mid-episode: not a demonstration
                raise
    finally:
        if status is not None:
            status.end()
    wall = time.monotonic() - t0
    res_frames = st.frames
    return {
        "frames": res_frames,
        "wall_s": wall,
        "rate_hz": st.rate_hz,
        "rate_asked_hz": tp.rate_hz,
        "clamped_frames": st.clamped_frames,
        "lag_deg": st.lag_deg,
        "stopped": stop_reason,
        "leader": m.teleop.leader.port,
        "port": robot.port,
    }


class _Episodes:
    """The episodes of ``--record-dataset`` while the follow runs: Enter starts and saves one, d discards it,
    --episode-s saves it after so long, --episodes stops after so many. Without a terminal (``auto``) or with
    --episode-s an episode starts by itself once the follower has caught up (without --episode-s only the first)."""

    def __init__(self, recorder, task: str, episode_s: float | None, episodes: float | None, *, auto: bool):
        self.recorder, self.task, self.episode_s, self.episodes = recorder, task, episode_s, episodes
        self.auto = episode_s is not None or auto
        self.t0 = None  # when the episode being recorded started
        self.saves = 0

    def on_key(self, key: str | None, now: float) -> str | None:
        """Enter or d; the reason to stop the follow, if that was the last episode."""
        if key == "enter":
            if self.recorder.recording:
                return self._save()
            self._start(now)
        elif key == "d" and self.recorder.recording:
            self.recorder.discard_episode()
            self.t0 = None
        return None

    def tick(self, now: float, ramping: bool) -> str | None:
        """An episode started or ended by itself; the reason to stop the follow, if that was the last episode."""
        rec = self.recorder
        if self.auto and not rec.recording and not ramping and self.t0 is None:
            if self.episodes is None or self.saves < self.episodes:
                self._start(now)
                self.auto = self.episode_s is not None  # without --episode-s: only the first starts by itself
        if self.episode_s is not None and rec.recording and self.t0 and now - self.t0 >= self.episode_s:
            return self._save()
        return None

    def _start(self, now: float) -> None:
        self.recorder.start_episode(self.task)
        self.t0 = now

    def _save(self) -> str | None:
        self.recorder.save_episode()
        self.t0 = None
        self.saves += 1
        if self.episodes is not None and self.saves >= self.episodes:
            return f"{self.episodes:g} episodes recorded"
        return None


class _StatusLine:
    """The follow's status line on stderr (a terminal), rewritten in place every STATUS_S."""

    def __init__(self, status, recorder):
        self.status, self.recorder = status, recorder
        self.width = 0
        self.last = 0.0

    def show(self, now: float) -> None:
        if now - self.last < STATUS_S:
            return
        self.last = now
        text = self.status.line()
        if self.recorder is not None:
            rec = self.recorder
            text += f"  [{'REC ' + str(rec.frames()) if rec.recording else 'not recording'}]"
        sys.stderr.write("\r" + text.ljust(self.width))
        sys.stderr.flush()
        self.width = len(text)

    def end(self) -> None:
        if self.width:
            sys.stderr.write("\n")
            sys.stderr.flush()
