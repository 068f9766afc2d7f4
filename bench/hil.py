"""Hardware-in-the-loop benchmark on the virtual Uno: our firmware versus stock StandardFirmata, and our
firmware's PCA9685 build driving a virtual PCA9685 on the Uno's TWI bus.

    python bench/hil.py [--program examples/pick_and_place.yaml] [--arm seed-3link] [--backend all] [--json]
    python bench/hil.py --arm mearm --program examples/pick_and_place_mearm.yaml --backend pca9685

Runs ``armctl run`` on the program on a virtual Uno paced to wall time:
on our firmware (timed, buffered moves, pulses from the Uno's timer pins), on StandardFirmata
(host-timed servo writes through pymata4), and on our firmware's PCA9685 build (the same protocol; the
chip makes the pulses, in 4.88 us counts at 50 Hz). From the simulator's pulse log
(widths from cycle counts) it reports, side by side:

- timing: for every frame the board outputs while the arm moves, which
  instant of the plan its pulses show, against the frame's own time (the
  constant start offset removed); p50/p99/max of the deviation and the
  number of frames more than one 20 ms frame late;
- path error: distance of the tool (pulses -> calibration -> FK; a base arm's
  x, y, z) from the planned path, max and p99, and the final pose error;
- command rate: commands per second sent during the run (sustained average and
  the busiest second) and, for our protocol, the share of the 115200 baud link.

Needs: make -C tools; make -C firmware; tools/fetch_firmata.sh (npm); pymata4.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
sys.path.insert(0, str(ROOT))
import hil_compare as hc  # noqa: E402
from virtual_uno import (  # noqa: E402
    FIRMWARE_HEX,
    FIRMWARE_PCA9685_HEX,
    PCA9685_PINS,
    VirtualUno,
    build_firmware,
    build_tools,
    fetch_firmata,
)

from armctl.calibration.servo import find_calibration, load_calibration  # noqa: E402
from armctl.model.arm import load_arm  # noqa: E402
from armctl.model.kinematics import tool_point  # noqa: E402
from armctl.program import load_program, plan_program  # noqa: E402

FRAME_US = 20000.0
LINK_BYTES_S = 11520.0  # 115200 baud at 10 bits a byte


def run(backend: str, hex_path: Path, arm_name: str, program: Path, workdir: Path, *, column: str = "") -> dict:
    wire = workdir / f"wire-{column or backend}.log"
    pca = 0x40 if column == "pca9685" else None
    with VirtualUno(hex_path, reset_on_open=True, pca9685=pca) as uno:
        t0 = time.monotonic()
        proc = subprocess.run(
            [
                sys.executable,
                "-m",
                "armctl",
                "--arm",
                arm_name,
                "--backend",
                backend,
                "--port",
                uno.pty,
                "run",
                str(program),
                "--json",
                "--wire-log",
                str(wire),
            ],
            capture_output=True,
            text=True,
            cwd=ROOT,
            timeout=600,
            # a state folder of its own: a pty path is reused, and a pose stored for it by another run (or
            # another board) would make this run start with a ramp that is no part of the plan
            env=dict(os.environ, ARMCTL_STATE_DIR=str(workdir / f"state-{column or backend}")),
        )
        wall = time.monotonic() - t0
        if proc.returncode != 0:
            raise SystemExit(f"armctl run --backend {backend} failed:\n{proc.stderr[-2000:]}")
        return {
            "pulses": uno.pulses(),
            "slips": len(uno.events("slip")),
            "wire": wire,
            "wall_s": wall,
            "report": json.loads(proc.stdout),
        }


def timing(frames: list[hc.Frame], planned_us: np.ndarray, *, min_speed_us: float = 10.0, window: int = 10) -> dict:
    """For every measured frame while the arm moves: how far from its planned instant the board shows it.

    The board's frame j should show plan sample j + offset (one constant
    offset for the whole run: when streaming started). Each frame's pulses
    are located on the planned pulse trajectory within +-``window`` frames of
    that sample (interpolated between samples); the deviation is how many
    frames (as ms) early or late they are. Frames where the plan moves less
    than ``min_speed_us`` over two frames are skipped (their time cannot be
    told from their pulses).
    """
    w = np.array([[np.nan if x is None else x for x in f.widths_us[: planned_us.shape[1]]] for f in frames])
    n, m = len(w), len(planned_us)
    speed = np.zeros(m)
    speed[1:-1] = np.abs(planned_us[2:] - planned_us[:-2]).max(axis=1)

    def err(off):
        j = np.arange(max(0, -off), min(n, m - off))
        return np.nanmedian(np.abs(w[j] - planned_us[j + off]).max(axis=1))

    offset = min(range(-50, 51), key=err)
    seg = planned_us[1:] - planned_us[:-1]
    seg2 = np.maximum((seg**2).sum(axis=1), 1e-12)
    devs = []
    for j in range(n):
        e = j + offset
        if not 1 <= e < m - 1 or np.isnan(w[j]).any() or speed[e] < min_speed_us:
            continue
        lo, hi = max(0, e - window), min(m - 1, e + window)
        s = np.clip(((w[j] - planned_us[lo:hi]) * seg[lo:hi]).sum(axis=1) / seg2[lo:hi], 0.0, 1.0)
        d = np.abs(planned_us[lo:hi] + s[:, None] * seg[lo:hi] - w[j]).max(axis=1)
        i = int(np.argmin(d))
        devs.append((e - (lo + i + s[i])) * FRAME_US / 1000.0)  # > 0: the board shows an older sample: late
    dev = np.array(devs)
    if not len(dev):
        return {"frames": 0}
    return {
        "frames": len(dev),
        "offset_frames": offset,
        "dev_p50_ms": float(np.percentile(np.abs(dev), 50)),
        "dev_p99_ms": float(np.percentile(np.abs(dev), 99)),
        "dev_max_ms": float(np.abs(dev).max()),
        "late_by_more_than_a_frame": int((dev > FRAME_US / 1000.0).sum()),
        "early_by_more_than_a_frame": int((dev < -FRAME_US / 1000.0).sum()),
    }


def command_rate(wire: Path, backend: str) -> dict:
    times, nbytes = [], 0
    for line in wire.read_text(encoding="ascii").splitlines():
        f = line.split(None, 2)
        if len(f) != 3 or f[1] != ">":
            continue
        data = f[2]
        if backend == "firmata":
            if "servo_write" in data:
                times.append(float(f[0]))
        else:
            import ast

            b = ast.literal_eval(data)
            nbytes += len(b)
            times += [float(f[0])] * b.count(b" M ")
    if not times:
        return {}
    times = np.array(times)
    dur = max(times[-1] - times[0], 1e-9)
    busiest = max(int(((times >= s) & (times < s + 1.0)).sum()) for s in times)
    out = {"commands": len(times), "per_s": len(times) / dur, "busiest_1s": busiest}
    if backend != "firmata":
        out["link_share"] = nbytes / dur / LINK_BYTES_S
    return out


def analyse(res: dict, backend: str, arm, cal, traj, *, column: str = "") -> dict:
    if column == "pca9685":
        pins = [PCA9685_PINS[s.channel] for s in cal.servos]
    else:
        pins = [s.channel + 9 for s in cal.servos] if backend == "armctl" else [s.pin for s in cal.servos]
    frames = hc.frames_from_pulses(res["pulses"], pins)
    frames = hc.from_first_pulse(frames)
    if backend == "firmata":  # the attach transient (1500 us) until every servo has its start pulse
        start = next(i for i, f in enumerate(frames) if all(w is not None for w in f.widths_us))
        frames = frames[start + 2 :]
    planned_us = cal.joints_to_values(traj.q_rad)
    if cal.gripper is not None:
        planned_us = np.column_stack([planned_us, cal.gripper_value(traj.gripper_rad)])
    nj = len(cal.joints)
    w = np.array([[np.nan if x is None else x for x in f.widths_us[:nj]] for f in frames])
    w = w[~np.isnan(w).any(axis=1)]
    pts = hc.tool_points(w, cal, arm)  # a base arm's (x, y, z) too
    dev = hc.distance_to_path(pts, hc.planned_path(traj.q_rad, arm))
    out = {
        "timing": timing(frames, planned_us),
        "path_max_mm": float(dev.max() * 1e3),
        "path_p99_mm": float(np.percentile(dev, 99) * 1e3),
        "final_mm": float(np.linalg.norm(pts[-1] - tool_point(arm, traj.q_rad[-1])) * 1e3),
        "rate": command_rate(res["wire"], backend),
        "wall_s": res["wall_s"],
        "sim_slips": res["slips"],
    }
    if backend == "armctl":
        commanded = hc.commanded_frames(hc.host_bytes_from_wire_log(res["wire"]))
        # exact to the cycle on the timer pins; to half a count (2.44 us) on the PCA9685
        tol = 2.45 if column == "pca9685" else 0.07
        ok, late, worst, where = hc.match_with_holds([f.widths_us for f in frames], commanded, tol_us=tol)
        out.update({"commanded_match": ok, "underrun_frames": late, "pulse_vs_commanded_max_us": worst})
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--program", default=str(ROOT / "examples" / "pick_and_place.yaml"))
    ap.add_argument("--arm", default="seed-3link")
    ap.add_argument("--backend", choices=["all", "both", "armctl", "firmata", "pca9685"], default="all")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)

    for ok, why in (build_tools(), build_firmware()):
        if not ok:
            raise SystemExit(why)
    arm = load_arm(args.arm)
    cal = load_calibration(find_calibration(arm.name))
    traj = plan_program(load_program(args.program), arm).trajectory
    results = {}
    with tempfile.TemporaryDirectory() as d:
        if args.backend in ("all", "both", "armctl"):
            results["armctl"] = analyse(
                run("armctl", FIRMWARE_HEX, args.arm, Path(args.program), Path(d)), "armctl", arm, cal, traj
            )
        if args.backend in ("all", "both", "firmata"):
            hex_path, why = fetch_firmata()
            if hex_path is None:
                raise SystemExit(why)
            results["firmata"] = analyse(
                run("firmata", hex_path, args.arm, Path(args.program), Path(d)), "firmata", arm, cal, traj
            )
        if args.backend in ("all", "pca9685"):
            res = run("armctl", FIRMWARE_PCA9685_HEX, args.arm, Path(args.program), Path(d), column="pca9685")
            results["pca9685"] = analyse(res, "armctl", arm, cal, traj, column="pca9685")
    if args.json:
        print(json.dumps(results, indent=1))
        return 0
    names = list(results)
    rows = [
        ("frames timed (arm moving)", lambda r: r["timing"]["frames"], "{}"),
        ("  timing |dev| p50 (ms)", lambda r: r["timing"].get("dev_p50_ms"), "{:.2f}"),
        ("  timing |dev| p99 (ms)", lambda r: r["timing"].get("dev_p99_ms"), "{:.2f}"),
        ("  timing |dev| max (ms)", lambda r: r["timing"].get("dev_max_ms"), "{:.2f}"),
        ("  > 1 frame late", lambda r: r["timing"].get("late_by_more_than_a_frame"), "{}"),
        ("  > 1 frame early", lambda r: r["timing"].get("early_by_more_than_a_frame"), "{}"),
        ("path error max (mm)", lambda r: r["path_max_mm"], "{:.3f}"),
        ("path error p99 (mm)", lambda r: r["path_p99_mm"], "{:.3f}"),
        ("final pose error (mm)", lambda r: r["final_mm"], "{:.3f}"),
        ("commands sent", lambda r: r["rate"].get("commands"), "{}"),
        ("  sustained (per s)", lambda r: r["rate"].get("per_s"), "{:.1f}"),
        ("  busiest second", lambda r: r["rate"].get("busiest_1s"), "{}"),
        ("  share of 115200 link", lambda r: r["rate"].get("link_share"), "{:.1%}"),
        ("pulses = commanded", lambda r: r.get("commanded_match"), "{}"),
        ("  worst pulse error (us)", lambda r: r.get("pulse_vs_commanded_max_us"), "{:.3f}"),
        ("  underrun frames", lambda r: r.get("underrun_frames"), "{}"),
        ("wall time (s)", lambda r: r["wall_s"], "{:.1f}"),
        ("simulator slips", lambda r: r["sim_slips"], "{}"),
    ]
    print(f"{args.program} on {args.arm}, virtual Uno paced to wall time")
    print(f"{'':30s}" + "".join(f"{n:>14s}" for n in names))
    for label, get, fmt in rows:
        cells = []
        for n in names:
            v = get(results[n])
            cells.append("-" if v is None else fmt.format(v))
        print(f"{label:30s}" + "".join(f"{c:>14s}" for c in cells))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
