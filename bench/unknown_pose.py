"""What a lost or corrupt pose file, and a journal whose times cannot be true, do to the next run.

    python bench/unknown_pose.py

1. The simulated arm (armsim://, in this process) is left at (-60, 60, -40) deg; its pose file is then
   overwritten by random bytes, truncated, or removed (a new PC); the next ``move_to`` runs on a board that
   reset when its port opened. Printed: the largest first-pulse jump of a joint (deg, from where the simulated
   servo stood to its first pulse), or the refusal. Once on the simulator with joint encoders (it can say
   where the arm is), once with ``encoders=0`` (a real Uno's PWM servos: nothing reads them).
2. A crash journal dated 10^9 s in the future, or claiming the board plays on for 10^9 s: the wall time of
   ``armctl status``.

Runs on armctl versions before the check too (then ``encoders=0`` is refused as an unknown option, and the
arm is not told where it stands).
"""

from __future__ import annotations

import math
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def _connect(port: str, **kw):
    import armctl

    try:
        return armctl.connect("seed-3link", port, **kw)
    except TypeError:  # an armctl without assume_pose
        return armctl.connect("seed-3link", port)


def jump(case: str, encoders: str) -> str:
    tmp = Path(tempfile.mkdtemp())
    os.environ["ARMCTL_STATE_DIR"] = str(tmp / "state")
    port = f"armsim://?rate=20&seed=1&state={tmp / 'sim.json'}{encoders}"
    try:
        with _connect(port, assume_pose="home") as robot:  # the simulated arm starts at home
            robot.move_joints([-60, 60, -40], degrees=True, speed_fraction=1.0)
            path = robot._journal.store.path
    except Exception as exc:  # noqa: BLE001 - reported as it is
        return f"{type(exc).__name__}: {str(exc)[:90]}"
    if case == "random bytes":
        path.write_bytes(os.urandom(1024))
    elif case == "truncated":
        path.write_bytes(path.read_bytes()[:100])
    else:
        path.unlink()
    try:
        with _connect(port) as robot:
            sim = robot.backend.ser.sim
            before = {ch: s.angle_rad(sim.now) for ch, s in sim.servos.items()}
            robot.move_to(0.4, 0.1)
            first = {}
            for _, ch, w in sim.pulses:
                first.setdefault(ch, w)
            worst = 0.0
            for s in robot.calibration.joints:
                servo = sim.servos[s.channel]
                a = servo.sign * float(servo.cal.angle_rad(first[s.channel])) / servo.scale + servo.offset_rad
                worst = max(worst, abs(math.degrees(a - before[s.channel])))
            return f"first-pulse jump {worst:.1f} deg"
    except Exception as exc:  # noqa: BLE001
        return f"refused ({type(exc).__name__}): {str(exc)[:70]}..."


def status_wait(kind: str) -> str:
    import armctl.robot.state as st
    from armctl.model.arm import load_arm

    tmp = Path(tempfile.mkdtemp())
    env = dict(os.environ, ARMCTL_STATE_DIR=str(tmp / "state"))
    os.environ.update(env)
    port = f"armsim://?rate=20&seed=1&state={tmp / 'sim.json'}"
    cmd = [sys.executable, "-m", "armctl", "--port", port]
    subprocess.run([*cmd, "jog", "0.4", "0.1"], env=env, check=True, capture_output=True)
    arm = load_arm("seed-3link")
    with _connect(port) as robot:
        url = robot.port
    store = st.PoseStore(url, arm)
    old = store.load()
    real = st.time.time
    if kind == "future":
        st.time.time = lambda: real() + 1e9
    store.save(old.q_rad, old.gripper_rad, old.values, clean=False, hold_in_s=0.5 if kind == "future" else 1e9)
    st.time.time = real
    store.close()
    t0 = time.monotonic()
    res = subprocess.run([*cmd, "status"], env=env, capture_output=True, text=True, timeout=300)
    return f"armctl status took {time.monotonic() - t0:.1f} s (exit {res.returncode})"


def main() -> None:
    for encoders, what in (("", "simulator with encoders"), ("&encoders=0", "encoders=0 (an Uno's PWM servos)")):
        for case in ("random bytes", "truncated", "empty state folder"):
            print(f"{what:34} {case:18} {jump(case, encoders)}")
    for kind, what in (("future", "journal dated 1e9 s ahead"), ("play", "journal playing on 1e9 s")):
        print(f"{what:34} {status_wait(kind)}")


if __name__ == "__main__":
    main()
