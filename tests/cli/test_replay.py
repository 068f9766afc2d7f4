"""``armctl replay DATASET`` (issue 39, item 3): a dataset recorded by armctl itself on the simulated MeArm
(``armctl run --record-dataset``) played back on armsim://: the commanded and measured servos reproduce the
recorded actions within 0.5 deg, the arm goes from where it is to the first frame by a slow checked move (no
step faster than a speed limit), --speed stretches the time, and bad inputs (features of another arm, a bad
episode number, a missing folder, a corrupt data file, a frame outside the limits) are one line, exit 2 or 3,
nothing moves."""

from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from tests.helpers import require_module

require_module("pyarrow", "datasets are read as Parquet (armctl[dataset])")

import pyarrow.parquet as pq  # noqa: E402 (after require_module)

ROOT = Path(__file__).resolve().parents[2]
PROGRAM = """\
arm: mearm
steps:
  - {joint: {q_deg: [20, 80, -60]}}
  - {gripper: close}
  - {joint: {q_deg: [-20, 70, -50]}}
"""
DATA = "data/chunk-000/file-000.parquet"
TOL_DEG = 0.5  # the figure


def _armctl(*argv, state: Path, check: bool = False):
    env = {**os.environ, "PYTHONPATH": str(ROOT), "ARMCTL_STATE_DIR": str(state)}
    env["ARMCTL_CONFIG_DIR"] = str(state.parent / "config")  # the module's dataset is made before the autouse fixture
    p = subprocess.run([sys.executable, "-m", "armctl", *argv], env=env, capture_output=True, text=True, timeout=60)
    if check:
        assert p.returncode == 0, p.stderr[-2000:]
    return p


@pytest.fixture(scope="module")
def dataset(tmp_path_factory) -> Path:
    base = tmp_path_factory.mktemp("replay")
    prog = base / "wave.yaml"
    prog.write_text(PROGRAM)
    ds = base / "wave"
    _armctl("run", str(prog), "--record-dataset", str(ds), "--task", "wave", state=base / "state", check=True)
    return ds


def _actions(ds: Path) -> tuple[np.ndarray, np.ndarray]:
    t = pq.read_table(ds / DATA)
    return np.asarray(t.column("timestamp").to_numpy(), dtype=float), np.array(t.column("action").to_pylist())


def _one_line(p, code: int, *words) -> str:
    assert p.returncode == code, (p.returncode, p.stdout[-1000:], p.stderr[-2000:])
    assert p.stderr.count("\n") == 1 and "Traceback" not in p.stderr, p.stderr
    for w in words:
        assert w in p.stderr, (w, p.stderr)
    return p.stderr


def test_replay_reproduces_the_recorded_actions_from_a_checked_move_to_the_first_frame(dataset):
    import armctl
    from armctl import motion
    from armctl.cli import _parse
    from armctl.cli.replay import plan_replay

    T, A = _actions(dataset)
    plan = plan_replay(_parse(["--arm", "mearm", "replay", str(dataset)]))
    arm, traj, P = plan.arm, plan.traj, plan.times_s  # P: when each frame plays
    assert plan.frames == len(T) and plan.recorded_s == pytest.approx(T[-1] - T[0])
    # the recorded timing (--speed 1), a step the recording loop sampled late slowed to the speed limits
    assert plan.slowed < 0.05 * len(T) and (plan.slowed > 0 or np.allclose(P, T - T[0]))
    assert traj.duration_s == pytest.approx(P[-1], abs=traj.period_s) and P[-1] >= plan.recorded_s - 1e-9
    elsewhere = motion.JointMove(tuple(np.radians([-40.0, 60.0, -30.0])))
    with armctl.connect("mearm") as robot:
        robot.run(motion.plan_moves(arm, [elsewhere], q_start=robot.where().q_rad))
        m = robot.run(motion.Plan(traj, [], arm), wait=False)
        seen = []  # (trajectory index, commanded q, commanded gripper, time)
        while not m.done:
            q, g, _, _, index = robot.sample()
            seen.append((index, np.array(q), g, time.monotonic()))
            time.sleep(0.005)
        m.wait()
        end = robot.where(settle=True)
    first = next(k for k, s in enumerate(seen) if s[0] >= 0)
    ramp = seen[:first]  # before the episode's first sample
    play = [s for s in seen if s[0] >= 0]
    assert len(ramp) > 5 and len(play) > 20  # a move to the first frame, then the episode
    # the ramp: from the pose it was in, never a jump (no step between samples over a speed limit)
    qs, ts = np.array([s[1] for s in ramp]), np.array([s[3] for s in ramp])
    assert np.abs(qs[0] - np.radians([-40.0, 60.0, -30.0])).max() < math.radians(5)
    allowed = np.asarray(arm.max_speed_rad_s) * (np.diff(ts)[:, None] + 0.02)  # what a frame of 20 ms may add
    assert np.all(np.abs(np.diff(qs, axis=0)) <= allowed), np.degrees(np.abs(np.diff(qs, axis=0)).max(axis=0))
    assert np.abs(ramp[-1][1] - np.radians(A[0, : arm.n])).max() <= math.radians(TOL_DEG)  # it ends at frame 0
    # the episode: each commanded pose is the recorded action at its time, within 0.5 deg
    worst, gr = 0.0, arm.gripper
    for index, q, g, _ in play:
        t = index * traj.period_s
        want = [np.interp(t, P, A[:, j]) for j in range(arm.n)]
        want_g = gr.closed_rad + np.interp(t, P, A[:, arm.n]) / 100 * (gr.open_rad - gr.closed_rad)
        worst = max(worst, float(np.abs(np.degrees(q) - want).max()), abs(math.degrees(g - want_g)))
    print(f"armctl replay: {len(play)} samples, worst {worst:.3f} deg from the recorded actions; ramp {len(ramp)}")
    assert worst <= TOL_DEG, worst
    # the servos measured at the end: the last recorded action
    assert np.abs(np.degrees(end.q_rad) - A[-1, : arm.n]).max() <= TOL_DEG, (np.degrees(end.q_rad), A[-1])
    g_pct = 100 * (end.gripper_rad - arm.gripper.closed_rad) / (arm.gripper.open_rad - arm.gripper.closed_rad)
    assert abs(g_pct - A[-1, arm.n]) <= 1.0


def test_the_command_plays_it_and_speed_stretches_the_time(dataset, tmp_path):
    T, A = _actions(dataset)
    p = _armctl("replay", str(dataset), "--json", state=tmp_path / "s", check=True)  # the dataset's arm: mearm
    r = json.loads(p.stdout)
    assert r["recorded_s"] == pytest.approx(T[-1] - T[0], abs=1e-4) and r["episode_frames"] == len(T)
    assert r["duration_s"] >= r["recorded_s"] - 0.03
    assert r["slowed_steps"] > 0 or r["duration_s"] == pytest.approx(r["recorded_s"], abs=0.03)
    assert np.abs(np.array(r["q_deg"]) - A[-1, :3]).max() <= TOL_DEG
    slow = json.loads(_armctl("replay", str(dataset), "--speed", "0.5", "--dry-run", "--json", state=tmp_path).stdout)
    assert slow["slowed_steps"] <= r["slowed_steps"]
    assert slow["slowed_steps"] > 0 or slow["duration_s"] == pytest.approx(2 * r["recorded_s"], abs=0.03)
    p = _armctl("replay", str(dataset), "--speed", "0.25", state=tmp_path / "s", check=True)
    assert "replayed" in p.stdout and f"{len(T)} frames" in p.stdout
    assert _armctl("replay", str(dataset), "--speed", "1.5", state=tmp_path).returncode == 2


def _status(state: Path) -> list[float]:
    return json.loads(_armctl("--arm", "mearm", "status", "--json", state=state, check=True).stdout)["q_deg"]


def _edited(dataset: Path, tmp_path: Path, edit) -> Path:
    ds = tmp_path / "edited"
    shutil.copytree(dataset, ds)
    edit(ds / DATA)
    return ds


def _set(path: Path, frame: int, joint: int, value: float) -> None:
    """One action value of the data file changed (``value`` None: added to, else set)."""
    import pyarrow as pa

    t = pq.read_table(path)
    acts = t.column("action").to_pylist()
    acts[frame][joint] = value
    i = t.schema.get_field_index("action")
    pq.write_table(t.set_column(i, t.schema.field(i), pa.array(acts, type=t.schema.field(i).type)), path)


def test_bad_inputs_are_one_line_and_nothing_moves(dataset, tmp_path):
    state = tmp_path / "state"
    before = _status(state)
    p = _armctl("--arm", "seed-3link", "replay", str(dataset), state=state)
    _one_line(p, 2, "missing", "extra", "base.pos", "--arm")
    _one_line(_armctl("replay", str(dataset), "--episode", "4", state=state), 2, "--episode 4", "1 episode (0..0)")
    _one_line(_armctl("replay", str(tmp_path / "nope"), state=state), 2, "no such dataset folder")
    corrupt = _edited(dataset, tmp_path, lambda f: f.write_bytes(b"PAR1 not parquet at all PAR1"))
    _one_line(_armctl("replay", str(corrupt), state=state), 2, "file-000.parquet", "corrupt")
    shutil.rmtree(corrupt)
    far = _edited(dataset, tmp_path, lambda f: _set(f, 40, 1, 179.0))  # the shoulder far past its limit
    _one_line(_armctl("replay", str(far), state=state), 3, "frame 40", "shoulder", "nothing moved")
    shutil.rmtree(far)
    T, A = _actions(dataset)
    jump = _edited(dataset, tmp_path, lambda f: _set(f, 40, 0, float(A[40, 0]) + 30.0))  # base: 30 deg in 33 ms
    _one_line(_armctl("replay", str(jump), state=state), 3, "frames 39..40", "base", "deg/s", "3 times", "--speed")
    shutil.rmtree(jump)
    zone = tmp_path / "mearm-cup.yaml"  # the MeArm with a cup where the episode ends
    zone.write_text(
        (ROOT / "armctl/presets/mearm.yaml").read_text()
        + "zones:\n  boxes:\n    - {name: cup, min_mm: [110, -90, -40], max_mm: [170, -20, 40]}\n"
    )
    _one_line(_armctl("--arm", str(zone), "replay", str(dataset), state=state), 3, "box 'cup'", "of the episode")
    _one_line(_armctl("replay", str(dataset), "--payload", "500g", state=state), 3, "elbow", "500 g", "episode 0")
    assert _status(state) == before


def test_a_late_sample_of_the_recording_is_slowed_to_the_speed_limit_not_refused(dataset, tmp_path):
    """A loaded recording loop samples late: a frame repeats the one before and the next covers two steps. The
    replay plays it with that step stretched to the speed limits, and no servo step of the trajectory is faster."""
    from armctl.cli import _parse
    from armctl.cli.replay import plan_replay

    T, A = _actions(dataset)
    v = np.abs(np.diff(A[:, :3], axis=0)).max(axis=1) / np.diff(T)  # deg/s of each step, the fastest joint
    k = int(np.argmax(v)) + 1  # the frame after the fastest step
    late = _edited(dataset, tmp_path, lambda f: [_set(f, k, j, float(A[k - 1, j])) for j in range(3)])
    plan = plan_replay(_parse(["--arm", "mearm", "replay", str(late)]))
    assert plan.slowed >= 1 and plan.times_s[-1] > plan.recorded_s
    q = plan.traj.q_rad
    steps = np.abs(np.diff(q, axis=0)) / plan.traj.period_s
    assert np.all(steps <= np.asarray(plan.arm.max_speed_rad_s) * (1 + 1e-6)), np.degrees(steps.max(axis=0))


def test_a_hostile_info_json_is_one_line_in_under_a_second(tmp_path):
    """meta/info.json nested 10,000 deep, or naming a million features: one line, exit 2, at once."""
    ds = tmp_path / "ds"
    (ds / "meta").mkdir(parents=True)
    info = ds / "meta" / "info.json"
    for text, words in (
        ("[" * 10000 + "]" * 10000, ("info.json:1", "JSON nested more than")),
        (json.dumps({"features": {"action": {"names": ["x"] * 10**6}}, "total_episodes": 1}), ("(999992 more)",)),
    ):
        info.write_text(text)
        t0 = time.monotonic()
        p = _armctl("--arm", "mearm", "replay", str(ds), state=tmp_path / "s")
        took = time.monotonic() - t0
        line = _one_line(p, 2, *words)
        assert len(line) < 400, line
        print(f"hostile info.json: {took:.2f} s (python start included)")


# --- hostile and broken datasets (tiny ones, written here): one line, exit 2, in under a second ----------------

MEARM = ["base.pos", "shoulder.pos", "elbow.pos", "gripper.pos"]
SO101 = [f"{m}.pos" for m in ("shoulder_pan", "shoulder_lift", "elbow_flex", "wrist_flex", "wrist_roll", "gripper")]


def _info(names=MEARM, **over) -> dict:
    feat = {"dtype": "float32", "shape": [len(names)], "names": list(names)}
    info = {"codebase_version": "v3.0", "robot_type": "mearm", "total_episodes": 1, "fps": 30}
    info["features"] = {"observation.state": feat, "action": feat}
    return {**info, **over}


def _tiny(root: Path, *, info=None, T=None, A=None, frame_index=None, drop=()) -> Path:
    """A one-episode dataset of the MeArm in ``root``: 2 s at 30 fps, the base turning 10 deg (or ``T``, ``A``)."""
    import pyarrow as pa

    n = 61 if T is None else len(T)
    T = np.arange(n) / 30.0 if T is None else np.asarray(T, dtype=float)
    if A is None:
        A = np.column_stack([np.linspace(0, 10, n), np.full(n, 80.0), np.full(n, -60.0), np.full(n, 50.0)])
    (root / "meta").mkdir(parents=True, exist_ok=True)
    (root / "meta" / "info.json").write_text(json.dumps(_info() if info is None else info))
    (root / "data" / "chunk-000").mkdir(parents=True, exist_ok=True)
    flat = pa.array(np.asarray(A, dtype=np.float32).ravel())
    cols = {
        "timestamp": pa.array(T.astype(np.float32) if np.all(np.abs(T) < 1e30) else T),
        "frame_index": pa.array(np.arange(n) if frame_index is None else np.asarray(frame_index)),
        "episode_index": pa.array(np.zeros(n, dtype=np.int64)),
        "action": pa.FixedSizeListArray.from_arrays(flat, np.asarray(A).shape[1]),
    }
    pq.write_table(pa.table({k: v for k, v in cols.items() if k not in drop}), root / DATA)
    return root


def _run(capsys, *argv) -> tuple[int, str]:
    """``armctl ARGV`` in this process: (exit code, stderr); a traceback fails the test; under a second."""
    from armctl.cli import main
    from armctl.core import limits

    capsys.readouterr()
    t0 = time.monotonic()
    try:
        code = main(list(argv))
    finally:
        limits.reset()
    took = time.monotonic() - t0
    err = capsys.readouterr().err
    assert took < 1.0, (took, argv, err)
    return code, err


def _refused(capsys, *argv, words=(), code=2) -> str:
    got, err = _run(capsys, *argv)
    assert got == code and err.count("\n") == 1, (got, err)
    for w in words:
        assert w in err, (w, err)
    return err


def test_a_tiny_dataset_plays_so_its_breakages_are_what_is_refused(tmp_path, capsys):
    assert _run(capsys, "replay", str(_tiny(tmp_path / "ds")), "--dry-run")[0] == 0


def test_a_replay_longer_than_limit_segments_is_refused_before_it_is_made(tmp_path, capsys):
    """--speed 0.0001 made 24 GB, 0.001 a MemoryError, 1e-300 a ValueError; 1,000,000 frames passed --dry-run."""
    ds = _tiny(tmp_path / "ds")
    hint = ("episode 0", "61 frames", "limit segments=500000", "--limit segments=N")
    for speed in ("0.0001", "1e-300", "1e-320"):
        _refused(capsys, "replay", str(ds), "--speed", speed, "--dry-run", words=hint)
    assert _run(capsys, "replay", str(ds), "--speed", "0.01", "--dry-run")[0] == 0  # 200 s: 10,000 samples
    _refused(capsys, "--limit", "segments=5000", "replay", str(ds), "--speed", "0.01", "--dry-run", words=hint[:2])
    n = 1_000_000  # 9.3 h at 30 fps
    big = _tiny(tmp_path / "big", T=np.arange(n) / 30.0, A=np.tile([0.0, 80.0, -60.0, 50.0], (n, 1)))
    _refused(capsys, "replay", str(big), "--dry-run", words=("episode 0", "1000000 frames", "segments=500000"))
    T = np.arange(61) / 30.0 * 1e30  # "Maximum allowed size exceeded"
    _refused(capsys, "replay", str(_tiny(tmp_path / "far", T=T)), "--dry-run", words=("episode 0", "segments"))


@pytest.mark.parametrize(
    "edit, words",
    [
        ({"features": None}, ("no 'action' feature",)),
        ({"features": ["action"]}, ("no 'action' feature",)),
        ({"total_episodes": "many"}, ('total_episodes is "many"',)),
        ({"total_episodes": -1}, ("total_episodes is -1",)),
        ({"total_episodes": 1.5}, ("total_episodes is 1.5",)),
        ({"fps": "abc"}, ('fps is "abc"', "> 0")),
        ({"fps": 0}, ("fps is 0",)),
        ({"fps": math.nan}, ("fps is NaN",)),
        ({"fps": -30}, ("fps is -30",)),
        ({"fps": 1e308}, ("fps is 1e+308",)),
        ({"fps": None}, ("fps is null",)),
    ],
)
def test_every_field_of_info_json_replay_reads_is_checked(tmp_path, capsys, edit, words):
    ds = _tiny(tmp_path / "ds", info=_info(**edit))
    _refused(capsys, "replay", str(ds), "--dry-run", words=("info.json", *words))


def test_broken_timestamps_and_columns_are_one_line(tmp_path, capsys):
    T = np.arange(61) / 30.0
    nan = T.copy()
    nan[20] = math.nan  # crashed check_accel
    _refused(capsys, "replay", str(_tiny(tmp_path / "a", T=nan)), "--dry-run", words=("frame_index 20", "nan"))
    # reversed: was sorted silently and played backwards
    err = _refused(capsys, "replay", str(_tiny(tmp_path / "b", T=T[::-1])), "--dry-run", words=("frame_index 1",))
    assert "increase with frame_index" in err
    dup = _tiny(tmp_path / "c", frame_index=np.r_[np.arange(30), np.arange(29, 60)])
    _refused(capsys, "replay", str(dup), "--dry-run", words=("frame_index 29", "more than once"))
    # the frames stored shuffled but with increasing timestamps by frame_index: played in frame_index order
    perm = np.random.default_rng(1).permutation(61)
    A = np.column_stack([np.linspace(0, 10, 61), np.full(61, 80.0), np.full(61, -60.0), np.full(61, 50.0)])
    shuffled = _tiny(tmp_path / "d", T=T[perm], A=A[perm], frame_index=perm)
    assert _run(capsys, "replay", str(shuffled), "--dry-run")[0] == 0
    # no action column: was a 10-line Arrow schema
    err = _refused(capsys, "replay", str(_tiny(tmp_path / "e", drop=("action",))), words=("'action' column", DATA))
    assert len(err) < 300, err


def test_a_dataset_of_another_known_arm_is_refused_and_an_unknown_robot_type_named(tmp_path, capsys):
    koch = _tiny(tmp_path / "koch", info=_info(SO101, robot_type="koch"), A=np.zeros((61, 6)))
    words = ("recorded on the koch", "--arm so101", "--arm koch")
    _refused(capsys, "--arm", "so101", "replay", str(koch), "--dry-run", words=words)
    lerobot = _tiny(tmp_path / "kf", info=_info(SO101, robot_type="koch_follower"), A=np.zeros((61, 6)))
    _refused(capsys, "--arm", "so101", "replay", str(lerobot), "--dry-run", words=words)
    so = _tiny(tmp_path / "so", info=_info(SO101, robot_type="so_follower"), A=np.zeros((61, 6)))
    _refused(capsys, "--arm", "koch", "replay", str(so), "--dry-run", words=("recorded on the so101", "--arm koch"))
    words = ("recorded on the mearm", "extra base.pos", "seed-3link")  # names of another arm: both said
    _refused(capsys, "--arm", "seed-3link", "replay", str(_tiny(tmp_path / "m")), "--dry-run", words=words)
    for rt, shown in (("nosuch", '"nosuch"'), (["a", "list"], '["a", "list"]')):
        ds = _tiny(tmp_path / f"u{len(shown)}", info=_info(robot_type=rt))
        _refused(capsys, "--arm", "seed-3link", "replay", str(ds), "--dry-run", words=(shown, "seed-3link"))


def test_an_info_json_that_is_no_regular_file_is_named_without_opening_it(tmp_path, capsys):
    ds = _tiny(tmp_path / "ds")
    info = ds / "meta" / "info.json"
    info.unlink()
    info.symlink_to("/dev/zero")
    _refused(capsys, "replay", str(ds), words=("info.json", "a character device, not a regular file"))
    info.unlink()
    info.mkdir()
    _refused(capsys, "replay", str(ds), words=("info.json", "a folder, not a regular file"))
    info.rmdir()
    os.mkfifo(info)  # opening it would block: in a process of its own, with a timeout
    _one_line(_armctl("replay", str(ds), state=tmp_path / "s"), 2, "info.json", "a FIFO")
    info.unlink()
    info.write_text(json.dumps(_info()))
    (ds / DATA).unlink()
    os.mkfifo(ds / DATA)
    _one_line(_armctl("replay", str(ds), state=tmp_path / "s"), 2, "file-000.parquet", "a FIFO")
