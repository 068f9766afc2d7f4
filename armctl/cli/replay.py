"""``armctl replay DATASET``: play a recorded episode's actions on the arm (LeRobot v3.0 datasets, written by
``armctl follow/run --record-dataset`` or by LeRobot's ``lerobot-record``: the same format).

The episode's ``action`` column (its names in ``meta/info.json``'s features) is turned back into joint angles by
the arm's own feature mapping (``armctl.dataset.recorder.ArmFeatures.pose``), timed at the recorded timestamps
times 1/--speed and checked whole before a port is opened: every frame inside the joint (and gripper) limits, every
step between frames under the joint speed limits (a step up to RETIME_MAX over them, the recording loop's jitter, is
slowed to them), the changes of speed over 0.1 s under the acceleration limits, the
whole swept arm out of the keep-out zones, the servos' torque. The Robot then moves from the pose the arm is in to
the first frame with a slow checked joint move (never a jump) and plays the episode.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from armctl.cli import add_command
from armctl.cli.common import drive, print_report, setup, torque_options
from armctl.errors import BadInputError, JointLimitError, MotionError

EXAMPLES = """\
examples:
  armctl replay ~/datasets/wave                         # episode 0, as recorded, on the dataset's arm
  armctl --arm so101 replay ~/datasets/wave --episode 3 --speed 0.5
  armctl replay ~/datasets/wave --json"""

DESCRIPTION = (
    "Play a recorded episode's actions (a LeRobot v3.0 dataset from armctl or lerobot-record) on the arm: checked "
    "whole first (limits, speed, acceleration, zones, torque), then a slow checked move from where the arm is to "
    "the first frame, then the episode at its recorded timing times 1/--speed (a step of the recording faster than a "
    "speed limit, by up to 3 times: a late sample, is slowed to it). The arm: --arm, else the one the "
    "dataset names (its robot_type: an armctl arm, or LeRobot's so_follower: so101, koch_follower: koch); its "
    "features must match, and a dataset of another arm is refused. An episode of more frames, or 20 ms samples at "
    "--speed, than limit segments is refused (armctl --limit segments=N)."
)

#: The accelerations are checked with this slack over the limit, on the speeds over ACCEL_WINDOW_S: a recording's
#: frames are follow targets sampled with the recording loop's jitter; their changes of speed are the servos' to smooth.
ACCEL_SLACK = 2.0
ACCEL_WINDOW_S = 0.1
#: A step between frames up to this many times a speed limit is slowed to the limit (a late sample of the
#: recording loop covers two or three periods); a faster one is refused.
RETIME_MAX = 3.0
#: A frame this close outside a limit (rad) is played at the limit: a recording's rounding (float32, a gripper
#: measured a hair past its end), far below the 0.5 deg a replay is held to.
LIMIT_TOL_RAD = math.radians(0.1)


def register(sub, parents) -> None:
    p = add_command(sub, "replay", parents=parents, epilog=EXAMPLES, description=DESCRIPTION)
    p.add_argument("dataset", metavar="DATASET", help="the dataset's folder (meta/info.json, data/, ...)")
    p.add_argument("--episode", metavar="N", default="0", help="the episode to play (default 0)")
    p.add_argument(
        "--speed",
        metavar="FACTOR",
        default="1",
        help="play at this fraction of the recorded speed, 0 < FACTOR <= 1 (default 1: the recorded timing)",
    )
    p.add_argument("--dry-run", action="store_true", help="read and check the episode, open no port")
    p.add_argument("--json", action="store_true", help="print JSON (tool_m, q_deg, ...) instead of text")
    p.add_argument("--wire-log", metavar="FILE", help="write every byte sent and received, with times, to FILE")
    torque_options(p)
    p.set_defaults(func=cmd_replay)


# --- the dataset -----------------------------------------------------------------------------------------------


#: fps a dataset may say it was recorded at: a LeRobot dataset's is a camera's or a control loop's (30, 50, ...).
FPS_MAX = 1000.0
#: LeRobot's robot names (a dataset's ``robot_type``) of the arms armctl has presets for.
LEROBOT_ARMS = {
    "so_follower": "so101",
    "so101_follower": "so101",
    "so100_follower": "so101",
    "koch_follower": "koch",
    "omx_follower": "omx",
}
#: The columns of a data file replay reads (``frame_index`` orders the frames when present).
COLUMNS = ("timestamp", "episode_index", "action")


def regular_file(path: Path, what: str) -> bool:
    """True for a regular file, False when there is nothing at ``path``; BadInputError (one line) for anything else
    there (a folder, a FIFO, a device, a broken link), found by ``os.stat``: nothing opened (a FIFO would block)."""
    import os
    import stat

    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        if os.path.islink(path):
            raise BadInputError(f"{path}: the {what} is a broken symbolic link") from None
        return False
    except OSError as exc:
        raise BadInputError(f"{path}: cannot read the {what} ({exc.strerror or exc})") from None
    if stat.S_ISREG(mode):
        return True
    kinds = ((stat.S_ISDIR, "a folder"), (stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISCHR, "a character device"))
    kind = next(
        (k for test, k in kinds + ((stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket")) if test(mode)),
        "not a file",
    )
    raise BadInputError(f"{path}: the {what} is {kind}, not a regular file")


def _number(info: dict, key: str, path: Path, *, whole: bool, lo: float, hi: float, hint: str) -> float:
    """``info[key]``: a number (a whole one if ``whole``) in lo..hi (lo excluded when whole is False); one line."""
    v = info.get(key)
    ok = isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and lo <= v <= hi
    if ok and whole:
        ok = isinstance(v, int) or float(v).is_integer()
    if ok and not whole:
        ok = v > lo
    if not ok:
        shown = json.dumps(v)[:40] if key in info else "missing"
        raise BadInputError(f"{path}: {key} is {shown}: {hint}")
    return v


def read_info(root: Path) -> dict:
    """``meta/info.json`` of the dataset in ``root``; BadInputError (one line) for a missing folder or file, or one
    that is not a LeRobot dataset's (every field replay reads checked for its type and range)."""
    if not root.is_dir():
        what = "is a file, not a dataset folder" if root.exists() else "no such dataset folder"
        raise BadInputError(f"{root}: {what} (a LeRobot dataset: meta/info.json, data/, ...)")
    from armctl.core.limits import json_depth_ok, read_utf8

    path = root / "meta" / "info.json"
    if not regular_file(path, "dataset's meta/info.json"):
        raise BadInputError(f"{root}: not a LeRobot dataset (no meta/info.json)")
    text = read_utf8(path, what="dataset's meta/info.json")  # the size cap, UTF-8: one line naming the file
    json_depth_ok(text, path=path)  # nesting refused before json.loads recurses into it
    try:
        info = json.loads(text)
    except (json.JSONDecodeError, RecursionError) as exc:
        raise BadInputError(f"{path}: unreadable ({exc})") from None
    if not isinstance(info, dict):
        raise BadInputError(f"{path}: not a JSON object (a LeRobot dataset's info: fps, features, ...)")
    features = info.get("features")
    action = features.get("action") if isinstance(features, dict) else None
    if not isinstance(action, dict) or not isinstance(action.get("names"), list):
        raise BadInputError(f"{path}: no 'action' feature with names: not a dataset of actions to replay")
    _number(info, "total_episodes", path, whole=True, lo=0, hi=2**53, hint="a number of episodes (0, 1, ...)")
    if "fps" in info:  # not needed to replay (the timestamps are), but a dataset that says nonsense is refused
        _number(info, "fps", path, whole=False, lo=0, hi=FPS_MAX, hint=f"frames a second, > 0 and <= {FPS_MAX:g}")
    return info


def action_names(info: dict) -> list[str]:
    names = info["features"]["action"]["names"]
    return [str(n) for n in names]


def _file_frames(f: Path, pq, episode: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(rows, timestamps, frame indexes) of ``episode`` in data file ``f``; BadInputError naming a missing column."""
    if not regular_file(f, "data file"):
        raise BadInputError(f"{f}: the data file is gone")
    names = pq.ParquetFile(f).schema_arrow.names
    missing = [c for c in COLUMNS if c not in names]
    if missing:
        raise BadInputError(
            f"{f}: no {', '.join(repr(c) for c in missing)} column (a LeRobot data file has {', '.join(COLUMNS)})"
        )
    cols = ["timestamp", "episode_index"] + (["frame_index"] if "frame_index" in names else [])
    table = pq.read_table(f, columns=cols)
    rows = np.flatnonzero(np.asarray(table.column("episode_index").to_numpy(), dtype=np.int64) == episode)
    ts = np.asarray(table.column("timestamp").to_numpy(), dtype=float)[rows]
    fi = np.asarray(table.column("frame_index").to_numpy(), dtype=np.int64)[rows] if "frame_index" in cols else None
    return rows, ts, fi


def _episode_rows(root: Path, files: list, pq, episode: int):
    """[(file, rows)], timestamps, frame indexes (None when a file has none) of ``episode``, file by file."""
    where, t, fis = [], [], []
    for f in files:
        try:
            rows, ts, fi = _file_frames(f, pq, episode)
        except BadInputError:
            raise
        except Exception as exc:  # noqa: BLE001 - pyarrow's errors for a damaged file are of many types
            raise BadInputError(f"{f}: corrupt or unreadable data file ({type(exc).__name__}: {exc})") from None
        if len(rows):
            where.append((f, rows))
            t.append(ts)
            fis.append(fi)
    if not where:
        raise BadInputError(f"--episode {episode}: no frames of it in {root / 'data'}")
    has_fi = all(fi is not None for fi in fis)
    return where, np.concatenate(t), (np.concatenate(fis) if has_fi else None)


def check_samples(episode: int, frames: int, recorded_s: float, played_s: float, period_s: float) -> None:
    """LimitError (limit ``segments``) for an episode whose frames, or whose samples played at ``period_s`` over
    ``played_s`` (recorded_s / --speed, steps slowed), pass the limit: refused before anything that size is made."""
    from armctl.core import limits

    cap = limits.get("segments")
    samples = played_s / period_s if math.isfinite(played_s) else math.inf
    if frames > cap or not samples <= cap:
        plays = f"plays in {played_s:.6g} s" if math.isfinite(played_s) else "a --speed so small it never ends"
        raise limits.LimitError(
            f"episode {episode}: {frames} frames, {recorded_s:.6g} s recorded, {plays} "
            f"({min(samples, 1e300):.3g} samples of {period_s * 1000:g} ms): over the limit of {cap} frames "
            "and samples",
            limit="segments",
        )


def _ordered(T: np.ndarray, fi, episode: int) -> np.ndarray:
    """The frames' order (by frame_index, else as stored); BadInputError naming the first frame whose timestamp is
    not finite or not after the one before (a reversed or shuffled recording is not played backwards)."""
    order = np.arange(len(T)) if fi is None else np.argsort(fi, kind="stable")
    label = (lambda k: f"frame_index {int(fi[order[k]])}") if fi is not None else (lambda k: f"frame {k}")
    t = T[order]
    bad = np.flatnonzero(~np.isfinite(t))
    if len(bad):
        raise BadInputError(f"episode {episode}: {label(int(bad[0]))}'s timestamp is {t[bad[0]]} (not a number of s)")
    if fi is not None and len(fi) > 1 and np.any(np.diff(fi[order]) == 0):
        k = int(np.flatnonzero(np.diff(fi[order]) == 0)[0]) + 1
        raise BadInputError(f"episode {episode}: {label(k)} appears more than once")
    back = np.flatnonzero(np.diff(t) <= 0)
    if len(back):
        k = int(back[0]) + 1
        raise BadInputError(
            f"episode {episode}: {label(k)}'s timestamp {t[k]:g} s is not after the frame before's ({t[k - 1]:g} s): "
            "the timestamps must increase with frame_index"
        )
    return order


def read_episode(root: Path, info: dict, episode: int, period_s: float = 0.02) -> tuple[np.ndarray, np.ndarray]:
    """(timestamps (s, from 0), actions (frames, features)) of ``episode``, in frame_index order; BadInputError for
    a bad episode number (saying how many there are), a corrupt data file (naming it), timestamps that do not
    increase with frame_index; LimitError for more frames than limit ``segments`` (before the actions are read)."""
    from armctl.dataset.files import need_pyarrow

    _, pq = need_pyarrow()
    files = sorted((root / "data").glob("chunk-*/file-*.parquet"))
    count = int(info.get("total_episodes") or 0)
    if not 0 <= episode < count:
        have = f"{count} episode{'s' if count != 1 else ''} (0..{count - 1})" if count else "no episodes"
        raise BadInputError(f"--episode {episode}: {root} has {have}")
    where, T, fi = _episode_rows(root, files, pq, episode)
    order = _ordered(T, fi, episode)
    T = T[order]
    check_samples(episode, len(T), float(T[-1] - T[0]), float(T[-1] - T[0]), period_s)
    a = []
    for f, rows in where:
        try:
            a.extend(pq.read_table(f, columns=["action"]).column("action").take(rows).to_pylist())
        except Exception as exc:  # noqa: BLE001 - pyarrow's errors for a damaged file are of many types
            raise BadInputError(f"{f}: corrupt or unreadable data file ({type(exc).__name__}: {exc})") from None
    try:
        values = np.array(a, dtype=float)
    except (ValueError, TypeError):
        raise BadInputError(f"{root / 'data'}: episode {episode}'s actions are not rows of numbers") from None
    return T - T[0], values[order]


def _few(names: list, shown: int = 8) -> str:
    """``names`` joined, the first ``shown`` of a long list and how many more."""
    more = f", ... ({len(names) - shown} more)" if len(names) > shown else ""
    return ", ".join(str(n) for n in names[:shown]) + more


def check_names(have: list[str], want: tuple[str, ...], arm_name: str, root: Path, note: str = "") -> None:
    """BadInputError (one line) unless the dataset's action names are the arm's, naming the missing and extra."""
    if list(have) == list(want):
        return
    missing = [n for n in want if n not in have]
    extra = [n for n in have if n not in want]
    parts = []
    if missing:
        parts.append(f"missing {_few(missing)}")
    if extra:
        parts.append(f"extra {_few(extra)}")
    if not parts:
        parts.append(f"in another order ({_few(list(have))}; arm: {', '.join(want)})")
    raise BadInputError(
        f"{root}{note}: its action features do not match those of arm {arm_name!r}: {'; '.join(parts)} (give the arm "
        "it was recorded on with --arm)"
    )


def default_arm(info: dict) -> str | None:
    """The arm the dataset says it was recorded on: its ``robot_type`` when that is an armctl arm or LeRobot's name
    for one (LEROBOT_ARMS: so_follower is the so101, koch_follower the koch), else None."""
    from armctl.core.paths import preset_names

    rt = info.get("robot_type")
    if not isinstance(rt, str):
        return None
    return LEROBOT_ARMS.get(rt, rt if rt in preset_names() else None)


def robot_note(info: dict, arm_name: str) -> str:
    """What a refusal says of the dataset's robot_type: the other arm it names, or that it is no arm armctl knows
    ("" when it is ``arm_name`` or there is none)."""
    was = default_arm(info)
    if was is not None:
        return f" (recorded on the {was})" if was != arm_name else ""
    if info.get("robot_type") is None:
        return ""
    return f" (its robot_type {json.dumps(info['robot_type'])[:60]} is no arm armctl knows)"


def check_robot(info: dict, arm_name: str, root: Path) -> None:
    """BadInputError (one line) when the dataset names an arm armctl knows (its robot_type) other than ``arm_name``:
    the same joint names on another arm are other angles. An arm of the user's own (not a preset: a variant of the
    recorded arm, its own URDF or YAML) is theirs to answer for."""
    from armctl.core.paths import preset_names

    was = default_arm(info)
    if was is not None and was != arm_name and arm_name in preset_names():
        raise BadInputError(
            f"{root}: recorded on the {was} (robot_type {info['robot_type']!r}); --arm {arm_name} is another arm: "
            f"its angles are not the {was}'s (give --arm {was}, or leave --arm out)"
        )


# --- the checked trajectory ------------------------------------------------------------------------------------


def frames_pose(feats, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The frames' joint angles (frames, n; rad) and gripper angles (frames,; rad, NaN: none)."""
    qs, gs = [], []
    for v in values:
        q, g, _ = feats.pose(v)
        qs.append(q)
        gs.append(g)
    return np.array(qs, dtype=float), np.array(gs, dtype=float)


def _first_over(over: np.ndarray) -> tuple[int, int] | None:
    """(the first row with a value over 1, its largest column), None if there is none."""
    rows = np.flatnonzero(over.max(axis=1) > 1 + 1e-9)
    return None if not len(rows) else (int(rows[0]), int(np.argmax(over[rows[0]])))


def check_limits(arm, Q, G, T) -> None:
    """JointLimitError naming the first frame outside the joint (or gripper) limits."""
    from armctl.model.kinematics import limit_excess, limit_names

    ex = limit_excess(arm, Q)
    bad = np.argwhere(ex > LIMIT_TOL_RAD)
    if len(bad):
        k, j = (int(v) for v in bad[0])
        at = ""
        if j < arm.n:  # a joint (else a linkage's limit, of two joints together)
            lo, hi = math.degrees(arm.q_min[j]), math.degrees(arm.q_max[j])
            at = f" (at {math.degrees(Q[k, j]):.1f} deg; limits {lo:g}..{hi:g} deg)"
        raise JointLimitError(
            f"frame {k} (t = {T[k]:.2f} s): {limit_names(arm)[j]} is {math.degrees(ex[k, j]):.2f} deg outside its "
            f"limits{at}; nothing moved"
        )
    gr = arm.gripper
    if gr is not None and np.all(np.isfinite(G)):
        lo, hi = sorted((gr.closed_rad, gr.open_rad))
        out = np.flatnonzero((G < lo - LIMIT_TOL_RAD) | (G > hi + LIMIT_TOL_RAD))
        if len(out):
            k = int(out[0])
            raise JointLimitError(
                f"frame {k} (t = {T[k]:.2f} s): gripper at {math.degrees(G[k]):.1f} deg is outside "
                f"{math.degrees(lo):g}..{math.degrees(hi):g} deg; nothing moved"
            )


def retime(arm, Q, T) -> tuple[np.ndarray, int]:
    """(the frames' play times, how many steps were slowed): a step between frames faster than a joint's speed limit
    by at most RETIME_MAX (a recording's jitter: a late sample covers two periods) is stretched to take the time the
    limit needs; a faster one is a MotionError naming it (no servo steps faster than its limit)."""
    if len(T) < 2:
        return T, 0
    dt = np.diff(T)
    if np.any(dt <= 0):
        k = int(np.flatnonzero(dt <= 0)[0]) + 1
        raise BadInputError(f"frame {k}: its timestamp {T[k]:g} s is not after the frame before's")
    vmax = np.asarray(arm.max_speed_rad_s, dtype=float)
    need = (np.abs(np.diff(Q, axis=0)) / vmax).max(axis=1)  # the time each step takes at the limits
    over = need / dt
    bad = np.flatnonzero(over > RETIME_MAX + 1e-9)
    if len(bad):
        k = int(bad[0])
        v = np.abs(Q[k + 1] - Q[k]) / dt[k]
        j = int(np.argmax(v / vmax))
        raise MotionError(
            f"frames {k}..{k + 1} (t = {T[k]:.2f} s): {arm.joint_names[j]} at {math.degrees(v[j]):.1f} deg/s, "
            f"over {RETIME_MAX:g} times its {math.degrees(vmax[j]):g} deg/s limit; a lower --speed plays it slower"
        )
    played = np.concatenate([[0.0], np.cumsum(np.maximum(dt, need))])
    return played, int(np.count_nonzero(over > 1 + 1e-9))


def check_accel(arm, Q, T) -> None:
    """MotionError naming the first change of speed over ACCEL_SLACK times a joint's acceleration limit, judged on
    the speeds over ACCEL_WINDOW_S (a recording's frame-to-frame jitter is not the motion)."""
    if len(T) < 3:
        return
    w = max(1, math.ceil(ACCEL_WINDOW_S / float(np.median(np.diff(T))) - 1e-9))
    if len(T) < 2 * w + 1:
        return
    v = (Q[w:] - Q[:-w]) / (T[w:] - T[:-w])[:, None]  # mean speeds over w steps
    c = (T[w:] + T[:-w]) / 2.0
    acc = (v[w:] - v[:-w]) / (c[w:] - c[:-w])[:, None]
    first = _first_over(np.abs(acc) / (ACCEL_SLACK * np.asarray(arm.max_accel_rad_s2, dtype=float)))
    if first is not None:
        k, j = first
        raise MotionError(
            f"frame {k + w} (t = {T[k + w]:.2f} s): {arm.joint_names[j]} changes speed at "
            f"{math.degrees(abs(acc[k, j])):.0f} deg/s^2, over {ACCEL_SLACK:g} times its "
            f"{math.degrees(arm.max_accel_rad_s2[j]):g} deg/s^2 limit; a lower --speed plays it slower"
        )


def _smoothed(q: np.ndarray, w: int) -> np.ndarray:
    """``q`` (N, n) averaged over ``w`` samples about each (the ends held)."""
    if w <= 1 or len(q) < 3:
        return q
    pad = np.concatenate([np.repeat(q[:1], w // 2, axis=0), q, np.repeat(q[-1:], w - 1 - w // 2, axis=0)])
    c = np.cumsum(np.vstack([np.zeros((1, q.shape[1])), pad]), axis=0)
    return (c[w:] - c[:-w]) / w


def episode_trajectory(arm, Q, G, T, period_s: float, label: str = "the episode"):
    """The frames (at times ``T``) interpolated at ``period_s``, checked against the zones and the torque."""
    from armctl.motion.torque import accelerations, check_torque
    from armctl.motion.trajectory import Trajectory

    duration = float(T[-1])
    frames = max(1, math.ceil(duration / period_s - 1e-9))
    ts = np.arange(frames + 1) * period_s
    tq = np.minimum(ts, duration)
    if len(T) == 1:
        q_s, g_s = np.repeat(Q[:1], len(ts), axis=0), np.full(len(ts), G[0])
    else:
        q_s = np.column_stack([np.interp(tq, T, Q[:, j]) for j in range(arm.n)])
        g_s = np.interp(tq, T, G) if np.all(np.isfinite(G)) else np.full(len(ts), math.nan)
    traj = Trajectory(
        t_s=ts, q_rad=q_s, gripper_rad=g_s, step=np.zeros(len(ts), dtype=int), steps=[label], period_s=period_s
    )
    if arm.zones:
        from armctl.model.kinematics import tool_point
        from armctl.model.zones import first_violation, refusal

        v = first_violation(arm, arm.zones, q_s)
        if v is not None:
            t = float(min(v.at, len(ts) - 1)) * period_s
            p = ", ".join(f"{x:.3f}" for x in tool_point(arm, v.q))
            raise refusal(arm, arm.zones, v, f"at t = {t:.2f} s of the episode (tool at ({p}) m)")
    # the torque at the accelerations of the motion smoothed over ACCEL_WINDOW_S, as check_accel judges them: a
    # recording's frame-to-frame changes of speed are the servos' to smooth, not torque they give
    w = max(1, round(ACCEL_WINDOW_S / period_s))
    check_torque(arm, traj, qdd=accelerations(_smoothed(q_s, w), period_s))
    return traj


def parse_speed(text: str) -> float:
    try:
        s = float(text)
    except ValueError:
        s = math.nan
    if not (math.isfinite(s) and 0 < s <= 1):
        raise BadInputError(f"--speed {text}: a fraction of the recorded speed, 0 < FACTOR <= 1")
    return s


def parse_episode(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise BadInputError(f"--episode {text}: an episode number (0, 1, ...)") from None


# --- the command -----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ReplayPlan:
    """A replay checked whole: the trajectory to play and what it was made from."""

    arm: object
    cal: object
    traj: object
    frames: int
    recorded_s: float  # the episode's recorded length
    times_s: np.ndarray  # when each frame plays (s from the first): recorded / --speed, slowed steps stretched
    slowed: int  # steps between frames slowed to the speed limits (a recording's jitter)


def plan_replay(args) -> ReplayPlan:
    """Everything checked before a port opens."""
    from armctl.dataset.recorder import arm_features
    from armctl.motion.trajectory import DEFAULT_PERIOD_S

    speed = parse_speed(args.speed)
    episode = parse_episode(args.episode)
    root = Path(args.dataset).expanduser()
    info = read_info(root)
    arm, cal = setup(args, default_arm(info))
    feats = arm_features(arm, cal)
    check_names(action_names(info), feats.names, arm.name, root, robot_note(info, arm.name))
    check_robot(info, arm.name, root)  # the same names on another arm: other angles
    T, values = read_episode(root, info, episode, DEFAULT_PERIOD_S)
    check_samples(episode, len(T), float(T[-1]), float(T[-1]) / speed, DEFAULT_PERIOD_S)  # before T / speed
    if values.ndim != 2 or values.shape[1] != len(feats.names) or not np.all(np.isfinite(values)):
        raise BadInputError(f"{root}: episode {episode}'s actions are not {len(feats.names)} finite numbers a frame")
    Q, G = frames_pose(feats, values)
    if arm.gripper is None:
        G = np.full(len(T), math.nan)
    check_limits(arm, Q, G, T)
    Q = np.clip(Q, arm.q_min, arm.q_max)  # onto the limits, within LIMIT_TOL_RAD of them (check_limits)
    if arm.gripper is not None and np.all(np.isfinite(G)):
        G = np.clip(G, *sorted((arm.gripper.closed_rad, arm.gripper.open_rad)))
    Ts, slowed = retime(arm, Q, T / speed)
    check_samples(episode, len(T), float(T[-1]), float(Ts[-1]), DEFAULT_PERIOD_S)  # the slowed steps stretched
    check_accel(arm, Q, Ts)
    traj = episode_trajectory(arm, Q, G, Ts, DEFAULT_PERIOD_S, f"episode {episode}")
    return ReplayPlan(arm, cal, traj, len(T), float(T[-1]), Ts, slowed)


def cmd_replay(args) -> int:
    from armctl import motion
    from armctl.model.kinematics import tool_point

    plan = plan_replay(args)
    arm, cal, traj, frames, recorded_s = plan.arm, plan.cal, plan.traj, plan.frames, plan.recorded_s
    from armctl.robot.stream import prepare

    prepare(traj, cal)  # every pulse checked before a port is opened
    what = f"{args.dataset} episode {args.episode}: {frames} frames, {recorded_s:.2f} s recorded"
    if plan.slowed:
        what += f", {plan.slowed} step{'s' if plan.slowed != 1 else ''} slowed to the speed limits"
    if args.dry_run:
        end = tool_point(arm, traj.q_rad[-1])
        report = {
            "dry_run": True,
            "frames": frames,
            "recorded_s": recorded_s,
            "duration_s": float(traj.duration_s),
            "slowed_steps": plan.slowed,
            "tool_m": [float(v) for v in end],
            "q_deg": [math.degrees(v) for v in traj.q_rad[-1]],
        }
        if args.json:
            print(json.dumps(report, indent=1))
        else:
            print(f"{what}, plays in {traj.duration_s:.2f} s: OK, every frame checked (dry run: no port opened)")
        return 0
    report = drive(args, arm, cal, lambda robot: robot.run(motion.Plan(traj, [], arm)))
    report["recorded_s"] = recorded_s
    report["episode_frames"] = frames
    report["slowed_steps"] = plan.slowed
    print_report(args, report, f"replayed {what}, in {report['duration_s']:.2f} s")
    return 0
