"""How fast the physics plant runs: the SO-101 scene without cameras on one core, against real time and against
MuJoCo's own step, in the same run.

    python bench/physics.py                  # the SO-101 pick and place, once (21 s simulated)
    python bench/physics.py --repeats 3 --scene my_scene.yaml

examples/pick_and_place_so101.yaml is planned (armctl's own planner) and streamed into
``armctl.sim.physics.plant.Plant`` as the simulators do: each 20 ms sample commands every joint and the gripper at its
time; the plant steps (2 ms) in between. The scene is the program's three 20 mm cubes on a table (or ``--scene``).
Timed on this process's clock, pinned to one CPU: each ``advance`` of one 20 ms frame (10 steps, the servo model
in Python each step) and, on a copy of the same model replaying the same controls, MuJoCo's ``mj_step`` alone
(the physics without armctl's servo model). Printed: p50/p99/max per step of each, their ratio (what the servo model
adds), and the real-time factor (simulated s / wall s; issue 38 asks for at least 5x). Nothing is asserted: the
figures depend on the machine and its load (the ratios less so).

Cameras (``--frames N`` of each, default 60; 0: none): the same scene seen by a camera at 320x240 and at 640x480
(``armctl.sim.physics.camera.PhysicsCamera``, headless: EGL, or OSMesa; the GL renderer's name is printed, e.g.
llvmpipe: software), the arm moving through the program between frames. Per frame: ``PhysicsCamera.render`` (the
scene updated, drawn, read back: what ``physicscam://`` and a dataset get) and, beside it, MuJoCo's own
``Renderer.render`` alone (drawn and read back, the scene as it was); p50/p99/max ms, the frame rate at p50 and
p99, and its ratio to what issue 38 asks (10 frames/s at 320x240, 3 at 640x480).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from armctl.model.arm import load_arm  # noqa: E402
from armctl.program import load_program, plan_program  # noqa: E402
from armctl.sim.physics.plant import Plant, import_mujoco  # noqa: E402
from armctl.sim.physics.scenefile import load_scene, parse_scene  # noqa: E402

PROGRAM = ROOT / "examples" / "pick_and_place_so101.yaml"
CUBES = {  # the program's three parts: 20 mm cubes where it picks them (x, y mm, yaw deg)
    "part1": (160, -150, 0),
    "part2": (190, -120, 35),
    "part3": (220, -90, -60),
}


def _scene(path):
    if path:
        return load_scene(path)
    parts = [
        {"name": n, "shape": "box", "size_m": [0.02] * 3, "mass_g": 10, "at_m": [x / 1000, y / 1000, 0], "yaw_deg": yaw}
        for n, (x, y, yaw) in CUBES.items()
    ]
    return parse_scene({"table": {"size_m": [0.8, 0.8, 0.02], "center_m": [0.2, 0.0]}, "parts": parts}, "<bench>")


def _run(arm, scene, traj):
    """One playback: (seconds per step of each frame's advance, the controls after each step, simulated s, wall s)."""
    plant = Plant(arm, scene)
    steps = round(0.02 / plant.model.opt.timestep)
    per_step, ctrls = [], []
    wall0 = time.perf_counter()
    for k, t in enumerate(traj.t_s):
        for i, v in enumerate(traj.q_rad[k]):
            plant.command(i, v)
        if not np.isnan(traj.gripper_rad[k]):
            plant.command_gripper(traj.gripper_rad[k])
        t0 = time.perf_counter()
        plant.advance(t + 0.02)
        per_step.append((time.perf_counter() - t0) / steps)
        ctrls.append(plant.data.ctrl.copy())
    return per_step, ctrls, plant, time.perf_counter() - wall0


def _mj_alone(arm, scene, ctrls, steps):
    """MuJoCo's mj_step on a fresh plant's model and data (the same start), replaying each frame's last controls
    without armctl's servo model: seconds per step."""
    mj = import_mujoco()
    fresh = Plant(arm, scene)
    m, d = fresh.model, fresh.data
    out = []
    for c in ctrls:
        d.ctrl[:] = c
        t0 = time.perf_counter()
        for _ in range(steps):
            mj.mj_step(m, d)
        out.append((time.perf_counter() - t0) / steps)
    return out


def _stats(ts):
    a = np.array(ts) * 1e6
    return np.percentile(a, 50), np.percentile(a, 99), a.max()


CAMERA_SIZES = ((320, 240, 10.0), (640, 480, 3.0))  # width, height, frames/s issue 38 asks for


def _gl_renderer() -> str:
    """The GL renderer's name (llvmpipe, softpipe: software), with a context current; "?" if it cannot be read."""
    try:
        from OpenGL import GL

        name = GL.glGetString(GL.GL_RENDERER)
        return name.decode() if isinstance(name, bytes) else str(name)
    except Exception:  # noqa: BLE001 (PyOpenGL missing or no context: the figures stand without the name)
        return "?"


def _camera_frames(arm, scene, traj, width, height, frames):
    """(armctl's render s, MuJoCo's Renderer.render s, per frame; the GL renderer) for one camera size, the arm
    moving through the program between frames."""
    from armctl.sim.physics.camera import PhysicsCamera
    from armctl.sim.physics.scenefile import SceneCamera

    plant = Plant(arm, scene)
    cam = PhysicsCamera(plant.model, plant.data, SceneCamera("bench", (0.6, -0.3, 0.4), (0.15, 0.0, 0.05), 55.0,
                                                             width, height))  # fmt: skip
    ours, theirs, gl = [], [], "?"
    try:
        cam.render()  # (warm up: llvmpipe compiles its shaders on the first frame)
        for k in np.linspace(0, len(traj.t_s) - 1, frames).astype(int):
            for i, v in enumerate(traj.q_rad[k]):
                plant.command(i, v)
            plant.advance(traj.t_s[k] + 0.02)
            t0 = time.perf_counter()
            cam.render()
            t1 = time.perf_counter()
            with cam._lock:
                cam.renderer._gl_context.make_current()
                t2 = time.perf_counter()
                cam.renderer.render()
                t3 = time.perf_counter()
                gl = _gl_renderer() if gl == "?" else gl
            ours.append(t1 - t0)
            theirs.append(t3 - t2)
    finally:
        cam.close()
    return ours, theirs, gl


def _cameras(arm, scene, traj, frames) -> None:
    print(f"\ncameras, {frames} frames each (ms per frame; frames/s at p50, p99; their ratios to issue 38's)")
    print(f"{'size':<9} {'what':<24} {'p50':>7} {'p99':>7} {'max':>7} {'fps p50':>8} {'fps p99':>8} {'ratios':>12}")
    for width, height, asked in CAMERA_SIZES:
        ours, theirs, gl = _camera_frames(arm, scene, traj, width, height, frames)
        for what, ts in (("PhysicsCamera.render", ours), ("mujoco Renderer.render", theirs)):
            p50, p99, top = (v / 1000.0 for v in _stats(ts))
            ratio = f"{1000 / p50 / asked:.1f}x {1000 / p99 / asked:.1f}x" if what.startswith("Physics") else ""
            print(f"{width}x{height:<5} {what:<24} {p50:7.2f} {p99:7.2f} {top:7.2f} {1000 / p50:8.1f} "
                  f"{1000 / p99:8.1f} {ratio:>12}")  # fmt: skip
    print(f"GL renderer: {gl} (MUJOCO_GL={os.environ.get('MUJOCO_GL')})")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeats", type=int, default=1)
    ap.add_argument("--scene", help="a scene file (default: the program's three cubes)")
    ap.add_argument("--frames", type=int, default=60, help="camera frames of each size (default 60; 0: none)")
    args = ap.parse_args()
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[0]})
    arm = load_arm("so101")
    scene = _scene(args.scene)
    traj = plan_program(load_program(PROGRAM), arm).trajectory
    plant_steps, mj_steps, sim_s, wall_s = [], [], 0.0, 0.0
    for _ in range(args.repeats):
        per_step, ctrls, plant, wall = _run(arm, scene, traj)
        plant_steps += per_step
        sim_s, wall_s = sim_s + plant.time_s, wall_s + wall
        mj_steps += _mj_alone(arm, scene, ctrls, round(0.02 / plant.model.opt.timestep))
    p, m = _stats(plant_steps), _stats(mj_steps)
    print(f"SO-101, {len(scene.parts)} parts, no cameras, one core; {sim_s:.1f} s simulated, step "
          f"{plant.model.opt.timestep * 1000:g} ms")  # fmt: skip
    print(f"{'per step':<28} {'p50 us':>8} {'p99 us':>8} {'max us':>8}")
    print(f"{'Plant.advance (servo model)':<28} {p[0]:8.1f} {p[1]:8.1f} {p[2]:8.1f}")
    print(f"{'mujoco.mj_step alone':<28} {m[0]:8.1f} {m[1]:8.1f} {m[2]:8.1f}")
    print(f"ratio plant / mj_step (p50): {p[0] / m[0]:.2f}x")
    print(f"real-time factor: {sim_s / wall_s:.1f}x (whole playback, streaming included; issue 38: >= 5x)")
    print(f"real-time factor of mj_step alone (p50): {plant.model.opt.timestep / (m[0] * 1e-6):.1f}x")
    where = ", ".join(
        f"{n} ({', '.join(f'{v * 1000:.0f}' for v in w['at_m'])})" for n, w in plant.world()["parts"].items()
    )
    print(f"where the parts ended (x, y, z mm of their undersides): {where}")
    if args.frames > 0:
        _cameras(arm, scene, traj, args.frames)


if __name__ == "__main__":
    main()
