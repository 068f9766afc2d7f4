"""armctl calibrate driven as a user would, in a real terminal (a pty), against a simulated arm whose
servos have a hidden offset, scale and a reversed direction: after calibrating, jogs land within 1 mm
(measured from the simulated servos); Ctrl-C or q mid-way leaves the old calibration byte-identical."""

from __future__ import annotations

import json
import math
import os
import re
import shutil
import signal
import sys
from pathlib import Path
from urllib.parse import urlencode

import pytest

from armctl.bus.armproto.codec import TICKS_PER_US
from armctl.calibration.servo import load_calibration
from armctl.cli import main
from armctl.core.paths import PRESET_CALIBRATION_DIR
from armctl.model.arm import load_arm
from tests.terminal import Term

REPO = Path(__file__).resolve().parents[2]
NOMINAL = PRESET_CALIBRATION_DIR / "seed-3link.yaml"
OFFSET_DEG = [3.0, -4.0, -2.5, 1.5]  # hidden errors, per servo (shoulder, elbow, wrist, gripper)
SCALE = [1.06, 0.95, 0.97, 1.04]
FLIP = [1]  # the elbow servo turns the other way than the example calibration says


def true_us(i: int, angle_deg: float) -> float:
    """The pulse that really puts servo ``i`` of the simulated arm at ``angle_deg`` (what a user finds by eye)."""
    s = load_calibration(NOMINAL).servos[i]
    sign = -1.0 if i in FLIP else 1.0
    return float(s.pulse_us(math.radians(angle_deg - OFFSET_DEG[i]) * SCALE[i] * sign))


def sim_url(tmp_path: Path, **extra) -> str:
    q = {
        "rate": "50",
        "seed": "3",
        "cal": str(NOMINAL),  # the simulated servos stay the same whatever file we calibrate into
        "offset": ",".join(map(str, OFFSET_DEG)),
        "scale": ",".join(map(str, SCALE)),
        "flip": ",".join(map(str, FLIP)),
        "state": str(tmp_path / "sim-state.json"),
    }
    q.update(extra)
    return "armsim://?" + urlencode(q)


def keys_for(delta_us: float) -> str:
    """The keys a user presses to move the pulse by ``delta_us``: ]/[ 100 us, K/J 10 us, k/j 0.5 us."""
    out, d = [], round(delta_us * 2) / 2
    for step, up, down in ((100.0, "]", "["), (10.0, "K", "J"), (0.5, "k", "j")):
        n = int(abs(d) // step)
        out.append((up if d > 0 else down) * n)
        d = round(d - math.copysign(n * step, d), 1)
    return "".join(out)


def pulse_on_screen(t: Term) -> float:
    return float(t.wait(r"pulse (\d+(?:\.\d)?) us").group(1))


def nudge_to(t: Term, target_us: float) -> float:
    target = round(target_us * 2) / 2
    t.send(keys_for(target - pulse_on_screen(t)))
    t.wait(rf"pulse {target:.1f} us")
    t.send("\r")
    return target


def start(tmp_path: Path, cal: Path, port: str) -> Term:
    env = dict(os.environ, ARMCTL_STATE_DIR=str(tmp_path / "state"), PYTHONPATH=str(REPO), TERM="xterm")
    argv = [sys.executable, "-m", "armctl", "--calibration", str(cal), "--port", port, "calibrate"]
    argv += ["--wire-log", str(tmp_path / "wire.log")]
    return Term(argv, cwd=tmp_path, env=env)


def move_speeds_deg_s(wire_log: Path) -> dict[int, list[float]]:
    """Per channel, the speed (deg/s by the old calibration's 7.4 us/deg) of every move sent (protocol
    version 2: widths in ticks of 0.5 us)."""
    last: dict[int, float] = {}
    out: dict[int, list[float]] = {ch: [] for ch in range(4)}
    for m in re.finditer(r"> b'\d+ M (\d+) ([^*]+)\*", wire_log.read_text()):
        frames = int(m.group(1))
        for ch, w in enumerate(m.group(2).split()):
            if w == "-":
                continue
            if ch in last:
                out[ch].append(abs(float(w) - last[ch]) / TICKS_PER_US / 7.4 / (frames * 0.02))
            last[ch] = float(w)
    return out


@pytest.fixture
def cal_file(tmp_path):
    path = tmp_path / "seed-3link.yaml"
    shutil.copy(NOMINAL, path)
    return path


def test_calibrate_in_a_terminal_then_jogs_land_within_a_millimetre(tmp_path, cal_file, monkeypatch, capsys):
    arm = load_arm("seed-3link")
    port = sim_url(tmp_path)
    t = start(tmp_path, cal_file, port)
    t.wait("keys: k/j or Right/Left")
    for i in range(3):
        for k in range(3):
            m = t.wait(rf"(?i)joint {i + 1} \(\w+\) of 3, channel {i}: reference pose {k + 1} of 3")
            assert m
            angle = float(t.wait(r"target (-?\d+(?:\.\d+)?) deg").group(1))
            t.send("g")  # go to where the old calibration thinks the pose is, then nudge the rest of the way
            guess = float(load_calibration(NOMINAL).servos[i].pulse_us(math.radians(angle)))
            t.wait(rf"pulse {round(guess * 2) / 2:.1f} us")
            nudge_to(t, true_us(i, angle))
        fit = t.wait(r"fit from 3 points\s+zero ([\d.]+) us, ([\d.]+) us/deg, direction ([+-]1), residual rms ([\d.]+)")
        assert float(fit.group(4)) < 0.1
        t.send("y")
        lo_deg, hi_deg = math.degrees(arm.q_min[i]) - 2.5, math.degrees(arm.q_max[i]) + 2.5  # the "mechanical" ends
        ends = sorted(min(max(true_us(i, a), 505.0), 2495.0) for a in (lo_deg, hi_deg))
        t.wait("safe range, end 1 of 2")
        nudge_to(t, ends[0])
        t.wait("safe range, end 2 of 2")
        nudge_to(t, ends[1])
    for which in ("open", "closed"):
        t.wait(rf"Gripper, channel 3: {which}")
        angle = float(t.wait(r"target (-?\d+(?:\.\d+)?) deg").group(1))
        nudge_to(t, true_us(3, angle))
    t.wait("Calibration finished")
    t.send("y")
    assert t.finish() == 0, t.out.decode(errors="replace")[-2000:]

    new = load_calibration(cal_file)
    speeds = move_speeds_deg_s(tmp_path / "wire.log")
    for i in range(3):  # every nudge kept the joint under its speed limit (true us/deg of the simulated servo)
        assert max(speeds[i]) / SCALE[i] <= math.degrees(arm.max_speed_rad_s[i]) + 1e-6
        assert max(speeds[i]) > 0
    assert (tmp_path / "seed-3link.yaml.bak").read_bytes() == NOMINAL.read_bytes()
    assert new.joints[1].direction == 1  # found the reversed elbow
    assert new.joints[0].us_per_deg == pytest.approx(7.4 * 1.06, rel=2e-3)
    state = json.loads((tmp_path / "sim-state.json").read_text())
    assert state["limits_us"][0] == [new.joints[0].min_us, new.joints[0].max_us]  # written to the board

    capsys.readouterr()
    for x, y in [(0.5, 0.2), (0.6, -0.1), (0.3, 0.45), (0.7, 0.25), (0.45, 0.0)]:
        rc = main(["--calibration", str(cal_file), "--port", port, "jog", str(x), str(y), "--speed", "300", "--json"])
        cap = capsys.readouterr()
        assert rc == 0, cap.err
        out = json.loads(cap.out)
        err_mm = 1000 * math.hypot(out["tool_m"][0] - x, out["tool_m"][1] - y)
        assert err_mm < 1.0, (x, y, err_mm)


@pytest.mark.parametrize("key", [b"\x03", b"q"])
def test_quit_mid_way_leaves_the_calibration_untouched(tmp_path, cal_file, key):
    before = cal_file.read_bytes()
    t = start(tmp_path, cal_file, sim_url(tmp_path, limits="800:2200,500:2500,500:2500,1250:1850"))
    t.wait("reference pose 1 of 3")
    nudge_to(t, true_us(0, 0.0))
    t.wait("reference pose 2 of 3")
    t.send("]]K")  # half-way through a nudge to the next pose
    t.wait(r"recorded: 0 deg")
    t.send(key)
    assert t.finish() == 130
    text = t.out.decode(errors="replace")
    assert "nothing saved" in text
    assert cal_file.read_bytes() == before
    assert not (tmp_path / "seed-3link.yaml.bak").exists()
    assert list(tmp_path.glob(".seed-3link.yaml.*")) == []  # no temp file left either
    board = json.loads((tmp_path / "sim-state.json").read_text())
    assert board["limits_us"][0] == [800, 2200]  # opened up while calibrating, put back on quit


def test_needs_a_terminal(tmp_path, cal_file, capsys):
    assert main(["--calibration", str(cal_file), "--port", sim_url(tmp_path), "calibrate"]) == 2
    assert "needs a terminal" in capsys.readouterr().err


def test_an_inconsistent_fit_is_refused_on_screen_and_can_be_redone(tmp_path, cal_file):
    before = cal_file.read_bytes()
    t = start(tmp_path, cal_file, sim_url(tmp_path))
    for k, angle in enumerate((0.0, 90.0, -90.0)):
        t.wait(f"reference pose {k + 1} of 3")
        nudge_to(t, true_us(0, angle + (6.0 if angle == 90 else 0.0)))  # "90 deg" judged 6 deg too far
    screen = t.wait(r"the fit is refused").string
    assert "do not lie on one line" in screen and "record the points again" in screen
    assert "r record the reference poses again" in screen
    t.send("r")
    t.wait(r"reference pose 1 of 3")
    t.send(b"\x03")
    assert t.finish() == 130
    assert cal_file.read_bytes() == before


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP])
def test_a_signal_mid_way_is_a_controlled_stop_with_its_exit_code(tmp_path, cal_file, sig):
    """systemd, `timeout` or a closed SSH session: the same stop as Ctrl-C, then exit 128 + the signal."""
    before = cal_file.read_bytes()
    t = start(tmp_path, cal_file, sim_url(tmp_path, limits="800:2200,500:2500,500:2500,1250:1850"))
    t.wait("reference pose 1 of 3")
    t.send("]]]]]")  # nudging: moves queued on the board
    t.wait(r"pulse \d+(\.\d)? us")
    os.kill(t.proc.pid, sig)
    assert t.finish() == 128 + sig
    assert f"stopped by {signal.Signals(sig).name}" in t.out.decode(errors="replace")
    assert cal_file.read_bytes() == before
    assert " X " in (tmp_path / "wire.log").read_text()  # the board was told to stop
    board = json.loads((tmp_path / "sim-state.json").read_text())
    assert board["limits_us"][0] == [800, 2200]  # opened up while calibrating, put back
