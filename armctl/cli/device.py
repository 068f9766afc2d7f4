"""``armctl jog``, ``run``, ``home`` and ``status``: drive the arm on a board (default: the simulated arm).

Thin callers of ``armctl.robot.robot``. Everything is checked before a port is opened: the target or program
is planned and every pulse mapped through the calibration and checked against min/max. On the simulated
arm the tool point printed is measured from the simulated servos; on a real board it is computed from the
pulses it holds.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time

import numpy as np

from armctl import motion
from armctl.cli import add_command
from armctl.cli.common import (
    arm_camera_options,
    assumed_from_args,
    camera_watch,
    drive,
    open_robot,
    orientation_args,
    orientation_options,
    parts_not_placed,
    payload_arg,
    print_report,
    raise_dataset_error,
    setup,
    sim_ports,
    simulated_world,
    split_cameras,
    target_args,
    tool_orientation,
    torque_options,
)
from armctl.core.units import parse_float
from armctl.errors import BadInputError, StopRequested, ToolOffPlanError
from armctl.model.kinematics import tool_point
from armctl.model.validate import positive_text
from armctl.robot.restart import gripper_word

EPILOG = """\
port: a device path (/dev/ttyACM0) or any pyserial URL (socket://host:port, rfc2217://, spy://...);
default: the backend's simulated board (armsim:// for hobby servos, feetechsim:// for bus servos); it keeps
its pose between runs (see docs/protocol.md).
examples:
  armctl run examples/pick_and_place.yaml
  armctl jog 0.5 0.2 --phi -30 --speed 50
  armctl jog --record poses.yaml               # the keyboard pendant; Enter records a pose
  armctl --arm mearm jog 150mm 40mm 20mm      # an arm on a rotating base: X Y Z
  armctl --arm so101 jog 0.2 0.05 0.05 --phi -90 --roll 30   # an arm with a wrist roll: the jaws turned 30 deg
  armctl --port /dev/ttyACM0 home
  armctl --backend firmata --port /dev/ttyACM0 run examples/pick_and_place.yaml"""


def register(sub, parents) -> None:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--json", action="store_true", help="print JSON (tool_m, q_deg, ...) instead of text")
    common.add_argument("--wire-log", metavar="FILE", help="write every byte sent and received, with times, to FILE")
    _register_jog(sub, parents + [common])
    _register_run(sub, parents + [common])
    p = add_command(sub, "home", parents=parents + [common], epilog=EPILOG)
    p.set_defaults(func=cmd_home)
    p = add_command(sub, "status", parents=parents + [common], epilog=EPILOG)
    p.set_defaults(func=cmd_status)


JOG_DESCRIPTION = (
    "Move the tool point in a straight line from where the arm is to (X, Y), or (X, Y, Z) on an "
    "arm with a rotating base. Without a target: a full-screen keyboard pendant (arrows move, [ ] step, "
    "< > speed, , . tool angle, o c gripper, h home, Space stop, Enter record, u undo, q quit; a held key "
    "moves until released)."
)


def _register_jog(sub, parents) -> None:
    from armctl.cli.gamepad import HELP as GAMEPAD_HELP

    p = add_command(sub, "jog", parents=parents, epilog=EPILOG + "\n" + GAMEPAD_HELP, description=JOG_DESCRIPTION)
    p.add_argument("x", metavar="X", nargs="?", help="target x (m, or with a unit: 500mm); none: the pendant")
    p.add_argument("y", metavar="Y", nargs="?", help="target y (m, or with a unit)")
    p.add_argument("z", nargs="?", metavar="Z", help="target z, height (m, or with a unit): arms on a base only")
    p.add_argument("--phi", metavar="DEG", help="tool angle at the target, degrees (3-link arms)")
    orientation_options(p)
    p.add_argument(
        "--speed",
        metavar="MM_S",
        help=f"tool speed along the line, mm/s (default {motion.DEFAULT_SPEED_M_S * 1000:g}; pendant: 25; "
        "gamepad: 50, at full deflection)",
    )
    torque_options(p)
    p.add_argument("--record", metavar="FILE.yaml", help="pendant: Enter records the pose into this program file")
    p.add_argument("--step", metavar="MM", help="pendant: the step of one key press at start, mm (default 1)")
    p.add_argument(
        "--release-ms",
        metavar="MS",
        help="pendant: a held key counts as released this long after its last repeat (default: twice the "
        "terminal's repeat interval, 50..250 ms)",
    )
    p.add_argument("--gamepad", action="store_true", help="jog with a gamepad (SDL; pip install 'armctl[gamepad]')")
    p.add_argument("--device", metavar="N|NAME", help="--gamepad: the gamepad's SDL index or part of its name")
    p.set_defaults(func=cmd_jog)


RUN_DESCRIPTION = (
    "Check and plan a program, then ramp from the current pose to its start and play it on the board. "
    "On a terminal: Space holds (decelerates along the path and holds), Enter or r resumes, + and - change the "
    "speed override (10..200 %, never past a joint speed limit), q stops (resume later with --resume)."
)


def _register_run(sub, parents) -> None:
    p = add_command(sub, "run", parents=parents, epilog=EPILOG, description=RUN_DESCRIPTION)
    p.add_argument("program", metavar="PROGRAM.yaml")
    p.add_argument("--dry-run", action="store_true", help="check and plan everything, open no port")
    start = p.add_mutually_exclusive_group()
    start.add_argument(
        "--resume",
        action="store_true",
        help="continue the last run of this program on this port at the step it was in when it stopped (or was "
        "killed, or the PC lost power), with the gripper as it was",
    )
    start.add_argument(
        "--from-step",
        metavar="N|NAME",
        help="start at step N (as 'armctl plan' numbers them, loops unrolled) or the step named NAME: the gripper "
        "is set as the program has it there, then a slow checked move goes to that step's start",
    )
    start.add_argument(
        "--restart",
        action="store_true",
        help="after an unclean stop (a kill, a power cut, a lost link), start over at step 1 without asking (the "
        "gripper turns to the program's start state at its start pose: a part it holds is let go there); without "
        "a terminal a run after an unclean stop needs --restart, --resume or --from-step",
    )
    p.add_argument(
        "--blend",
        metavar="MM",
        help="pass the corners between consecutive line and joint steps within MM millimetres instead of stopping "
        "(the program's blend_mm; steps with their own blend_mm keep it; default 0: stop at every corner)",
    )
    torque_options(p)
    from armctl.cli.dataset_options import dataset_options

    dataset_options(p, follow=False)  # --record-dataset: each run (each pass of a top-level repeat) an episode
    arm_camera_options(p)
    p.set_defaults(func=cmd_run)


# --- commands ------------------------------------------------------------------------------------------------


def cmd_jog(args) -> int:
    if args.gamepad or args.device is not None:
        if not args.gamepad:
            raise BadInputError("--device picks the gamepad of --gamepad: give --gamepad too")
        if args.x is not None:
            raise BadInputError("--gamepad jogs without a target: drop X Y [Z], or --gamepad to move to it")
        from armctl.cli.gamepad import cmd_gamepad

        return cmd_gamepad(args)
    if args.x is None:
        if args.phi is not None:
            raise BadInputError("--phi needs a target (armctl jog X Y --phi DEG); the pendant turns it with , and .")
        for opt in ("roll", "down", "yaw"):
            if getattr(args, opt):
                raise BadInputError(
                    f"--{opt} needs a target (armctl jog X Y Z --{opt}{'' if opt == 'down' else ' DEG'})"
                )
        from armctl.cli.pendant import cmd_pendant

        return cmd_pendant(args)
    if args.y is None:
        raise BadInputError("jog needs both X and Y (or no target at all for the keyboard pendant)")
    for opt in ("record", "step", "release_ms"):
        if getattr(args, opt) is not None:
            raise BadInputError(f"--{opt.replace('_', '-')} is for the pendant (armctl jog without a target)")
    arm, cal = setup(args)
    target = np.array(target_args(args, arm, "armctl jog 0.5 0.2"))
    phi = None if args.phi is None else math.remainder(math.radians(parse_float(args.phi, what="--phi")), 2 * math.pi)
    speed = positive_text(args.speed or str(motion.DEFAULT_SPEED_M_S * 1000), "--speed", unit="mm/s") / 1000.0
    phi, roll, yaw = orientation_args(args, arm, target, phi, arm.home_rad)  # --roll, --down [--yaw]
    if phi is not None and arm.n_links != 3:
        raise BadInputError("--phi needs a 3-link arm")
    where = "(" + ", ".join(f"{v:g}" for v in target) + ")"
    label = f"jog to {where} m"
    # unreachable targets fail before any port is opened (at the roll asked, or home's); the Robot checks the pose
    # again from where the arm is (its roll kept when none is asked)
    q_end = motion.solve_pose(arm, target, phi, arm.home_rad, roll=roll)

    def act(robot):
        move = {"reach_q": q_end} if roll is None else {"reach_q": q_end, "roll": roll}
        now = robot.where() if yaw is not None else None
        if now is not None and now.known:  # --yaw: of the two rolls, the one nearest the arm's own
            from armctl.ik.roll import grasp_roll

            move["roll"] = grasp_roll(arm, target, yaw, now.q_rad)
        return robot.move_to(*target, phi=phi, speed=speed, label=label, **move)

    report = drive(args, arm, cal, act)
    print_report(args, report, f"jogged to {where} m in {report['duration_s']:.2f} s")
    return 0


def cmd_home(args) -> int:
    arm, cal = setup(args)
    report = drive(args, arm, cal, lambda robot: robot.home())
    print_report(args, report, f"home in {report['duration_s']:.2f} s")
    return 0


def cmd_run(args) -> int:
    from armctl.program import load_program, markers_of, plan_program, with_blend
    from armctl.program.payload import with_payload
    from armctl.robot.stream import prepare

    prog = with_payload(with_blend(load_program(args.program), args.blend), payload_arg(args))
    arm, cal = setup(args, prog.arm_ref)
    split_cameras(args)
    if markers_of(prog):
        return _run_seeing_parts(args, arm, cal, prog)
    plan = plan_program(prog, arm)
    traj = plan.trajectory
    prepare(traj, cal)  # every pulse checked before a port is opened
    if args.from_step is not None:
        from armctl.robot.restart import find_step

        find_step(prog, plan, args.from_step)  # a step that does not exist fails before a port is opened
    args.assumed_q = assumed_from_args(args, arm, program=prog, plan=plan)  # start, a pose NAME: the program's
    if args.dry_run:
        end = tool_point(arm, traj.q_rad[-1])
        report = {
            "dry_run": True,
            "duration_s": float(traj.duration_s),
            "samples": len(traj),
            "steps": len(traj.steps),
            "planned_tool_m": [float(v) for v in end],
            "tool_m": [float(v) for v in end],
            "q_deg": [math.degrees(v) for v in traj.q_rad[-1]],
            "torque_share": None if plan.torque is None or plan.torque.joint is None else plan.torque.share,
        }
        if args.json:
            print(json.dumps(report, indent=1))
        else:
            print(
                f"{args.program}: OK, {len(traj.steps)} steps, {traj.duration_s:.2f} s, every pulse within the "
                f"calibrated range (dry run: no port opened)"
            )
            print(plan.torque.line())
        return 0
    if args.record_dataset is None:
        if args.camera or args.task:
            raise BadInputError("--task and --camera are for recording: give --record-dataset DIR too")
        return _run_with_keys(args, arm, cal, prog, traj)
    if args.resume or args.from_step is not None:
        raise BadInputError("--record-dataset records whole runs: not with --resume or --from-step")
    from armctl.cli.dataset_options import cameras_need_port, open_dataset, saved_text
    from armctl.program import episode_of_steps

    source = "measured" if cal.unit == "steps" or args.port is None else "commanded"
    # a camera of the simulator (simcam://, physicscam://) opens once its port has: the dataset then, before a move
    held = [None if cameras_need_port(args) else open_dataset(args, arm, cal, state_source=source)]
    episode_of_sample = np.asarray(episode_of_steps(prog), dtype=int)[np.asarray(traj.step, dtype=int)]

    def act(robot):
        held[0] = held[0] or open_dataset(args, arm, cal, state_source=source)
        return _run_recording(robot, plan, held[0], episode_of_sample, args, prog)

    try:
        report = drive(args, arm, cal, act)
    except BaseException:
        if held[0] is not None:
            held[0].close(save=False)  # a run that failed or was stopped: its episode is no demonstration
        raise
    recorder = held[0]
    recorder.close(save=True)
    report["episodes_saved"] = recorder.saved
    report["dataset"] = str(recorder.writer.root)
    headline = f"ran {args.program}: {len(traj.steps)} steps, {report['duration_s']:.2f} s; {saved_text(recorder)}"
    print_report(args, report, headline)
    return parts_not_placed(report)


def _run_recording(robot, plan, recorder, episode_of_sample, args, prog):
    """Play ``plan`` while sampling the arm into ``recorder``: one episode per value of ``episode_of_sample``
    (the run, or each pass of a top-level repeat), from the program's first sample (not the ramp to it)."""
    if robot.recovered:  # a recording starts over: said (asked on a terminal, refused without --restart)
        _after_unclean_stop(args, robot, prog, robot.prepare_run(prog), may_resume=False)
    recorder.writer.extra["state_source"] = "measured" if robot.backend.caps.measures_positions else "commanded"
    m = robot.run(plan, wait=False)
    episode = None
    period = 0.25 / recorder.fps
    while not m.done:
        try:
            q, g, qm, gm, index = robot.sample()
        except Exception:  # noqa: BLE001 - the motion's own error is the one to report (wait() below)
            if m.done:
                break
            raise
        t = time.monotonic()
        if index >= 0:
            ep = int(episode_of_sample[index])
            if ep != episode:
                if episode is not None:
                    recorder.save_episode()
                recorder.start_episode(args.task)
                episode = ep
            recorder.feed(t, q, g, qm, gm)
        raise_dataset_error(robot, m, recorder)  # a camera gone, a full disk: stop the run now and say why
        time.sleep(period)
    m.wait()
    return m


def _run_with_keys(args, arm, cal, prog, traj) -> int:
    """``armctl run`` on the board: from the start, ``--resume`` or ``--from-step``, with the run keys on a
    terminal (Space hold, Enter resume, +/- speed override, q stop)."""
    from armctl.cli.runkeys import HELP, RunKeys

    planned = {"steps": len(traj.steps) if traj is not None else 0}

    def act(robot, progress):
        if progress is not None:
            progress.control, progress.keys = robot.control, HELP
        pr = robot.prepare_run(prog, from_step=args.from_step, resume=args.resume)
        planned["steps"] = len(pr.plan.trajectory.steps)
        if args.resume or args.from_step is not None:
            print(f"armctl run: {pr.describe}", file=sys.stderr, flush=True)
        elif robot.recovered:
            pr = _after_unclean_stop(args, robot, prog, pr)
        keys = RunKeys(robot.control, lambda: robot.stop("q pressed"))
        watch = camera_watch(args, robot)
        try:
            with keys, watch:
                return robot.run(pr)
        except (KeyboardInterrupt, StopRequested) as exc:
            rec = robot.last_run()
            if rec is None or rec.status == "done":
                raise
            hint = f"in step {rec.step + 1} of {rec.steps}: 'armctl run {args.program} --resume' goes on from there"
            if isinstance(exc, StopRequested) and keys.stopped:
                raise StopRequested(f"stopped with q {hint}; the arm holds its pose") from None
            if isinstance(exc, StopRequested) and getattr(watch, "tripped", None):
                raise ToolOffPlanError(f"{watch.tripped}: stopped {hint}") from None
            if isinstance(exc, KeyboardInterrupt):
                exc.hint = hint  # on the one line armctl.cli.main says
            raise

    report = drive(args, arm, cal, act, wants_progress=True)
    print_report(args, report, f"ran {args.program}: {planned['steps']} steps, {report['duration_s']:.2f} s")
    return parts_not_placed(report)


def _run_seeing_parts(args, arm, cal, prog) -> int:
    """``armctl run`` of a program whose picks and places name markers: planned once the camera has said where
    the parts lie (the port and the camera open first), then run as any other."""
    from armctl.program import markers_of

    ids = ", ".join(str(m.marker_id) for m in markers_of(prog))
    if args.arm_camera is None:
        raise BadInputError(
            f"{args.program}: its pick/place steps find markers {ids} with a camera: give --camera SRC (a camera "
            "number, or simcam:// with the simulated arm)"
        )
    if args.dry_run or args.record_dataset is not None:
        raise BadInputError(f"{args.program}: a program that finds its parts by camera runs without --dry-run and "
                            "--record-dataset (where the parts lie is known once the camera looks)")  # fmt: skip
    args.assumed_q = assumed_from_args(args, arm)
    return _run_with_keys(args, arm, cal, prog, None)


def _after_unclean_stop(args, robot, prog, pr, *, may_resume: bool = True):
    """The last run on this port ended without a clean stop: say (on a terminal: ask) what this run does with
    the gripper before anything moves. Returns the run to play (from the start, or resumed)."""
    rec = robot.last_run()
    g_now = robot.commanded_pose().gripper_rad
    g_start = float(pr.trajectory.gripper_rad[0])
    same = rec is not None and rec.digest == pr.digest and rec.status != "done"
    where = f" in step {rec.step + 1} of {rec.steps}" if same else ""
    same = same and may_resume

    def word(g: float) -> str:
        return gripper_word(robot.arm, g)

    grips = robot.arm.gripper is not None and g_now is not None and math.isfinite(g_start)
    if not grips:
        plan = "this run starts over at step 1"
    elif abs(g_now - g_start) < math.radians(2):
        plan = f"this run starts over at step 1; the gripper stays {word(g_now)}"
    else:
        plan = (
            f"the gripper is {word(g_now)}: this run starts over at step 1 and turns it {word(g_start)} at the "
            "program's start pose, after the arm has moved there"
        )
    if not (args.restart or sys.stdin.isatty()):  # a service, a cron job: nobody to ask, so no guess
        gripper = f" (the gripper is {word(g_now)})" if grips else ""
        turn = f", turning the gripper {word(g_start)} at the start pose" if grips else ""
        over = f"--restart (start over at step 1{turn})"
        options = f"--resume (go on there, the gripper as it is), --from-step N|NAME, or {over}" if may_resume else over
        raise BadInputError(
            f"the last run on this port stopped uncleanly{where}{gripper} and there is no terminal to ask: nothing "
            f"moved; give {options}"
        )
    hint = f"; 'armctl run {args.program} --resume' would go on{where} with the gripper as it is" if same else ""
    line = f"armctl run: the last run on this port stopped uncleanly{where}: {plan}{hint}"
    if args.restart or not grips:
        print(line if not args.restart else f"armctl run: --restart: {plan}", file=sys.stderr, flush=True)
        return pr
    choices = "Enter: start over, r: resume there instead, q: quit" if same else "Enter: start over, q: quit"
    print(f"{line}\n{choices}? ", end="", file=sys.stderr, flush=True)
    answer = sys.stdin.readline().strip().lower()
    if answer.startswith("q"):
        raise KeyboardInterrupt
    if answer.startswith("r") and same:
        pr = robot.prepare_run(prog, resume=True)
        print(f"armctl run: {pr.describe}", file=sys.stderr, flush=True)
    return pr


def simulated_true_tool_m(backend) -> list[float] | None:
    """Where a simulated arm's tool really is (m), asked of the backend's port object, duck-typed (armsim's
    and feetechsim's pyserial port has ``.sim``; pca9685sim's bus is the simulation); None on a real board."""
    for port in sim_ports(backend):
        sim = getattr(port, "sim", port)
        sim = getattr(sim, "scene_arm", None) or sim  # live: run up to its clock first
        ask = getattr(sim, "true_tool_m", None)
        if callable(ask) and getattr(sim, "arm", None) is not None:
            return [float(v) for v in ask()]
    return None


def cmd_status(args) -> int:
    arm, cal = setup(args)
    with open_robot(args, arm, cal, moves=False) as robot:
        restored = robot.hold_stored_pose()  # a board that reset on open holds the arm again, no motion
        st = robot.board_status()
        report = robot.where().to_dict()
        info = robot.info
        # exactly the arm's servos (a held one too), not every slot of the board's list: a bus's is indexed by
        # servo id from 0 (ids 1..6 gave 7 widths), a board's by its channel (8 for a 4-servo arm)
        every = (*robot.calibration.servos, *robot.calibration.held)
        report.update(
            {
                "port": robot.port,
                "backend": robot.backend.name,
                "firmware": info.firmware,
                "protocol": info.protocol,
                "channels": info.channels,
                "depth": info.depth,
                "servo_channels": [s.channel for s in every],  # the channel (PWM) or id (bus) of each width
                "widths_us": [st.values[s.channel] if s.channel < len(st.values) else None for s in every],
                "counters": st.counters,
                "frame": st.frame,
                "restored": sorted(restored),
            }
        )
        if st.servos:  # bus servos report their own state; a held servo (no joint) has held_at_steps
            report["servos"] = [{"name": s.name, "id": s.channel, **st.servos[s.channel]} for s in every]
        if arm.urdf_map is not None and report.get("source") != "assumed" and report.get("q_deg") is not None:
            from armctl.model.urdf.derive import (
                urdf_angles,  # an arm from a URDF: its joint angles, as LeRobot reads them (degrees)
            )

            q = urdf_angles(arm, [math.radians(v) for v in report["q_deg"]])
            report["urdf_deg"] = {name: math.degrees(v) for name, v in q.items()}
        q_now = None if report.get("q_deg") is None else np.radians(report["q_deg"])
        report.update(tool_orientation(arm, q_now))  # tool_rpy_deg, tool_R (arm frame); roll_deg on a roll arm
        true_tool = simulated_true_tool_m(robot.backend)
        if true_tool is not None:  # a simulator: where its tool really is (its truth file applied)
            report["true_tool_m"] = true_tool
        world = simulated_world(robot.backend)
        if world is not None:  # a physics simulator: its parts, contacts, the servos' true angles
            report["world"] = world
    held = [st.values[s.channel] if s.channel < len(st.values) else None for s in robot.calibration.servos]
    what = "pulses" if robot.calibration.unit == "us" else "goals"
    headline = (
        f"{info.firmware} (protocol {info.protocol}) on {robot.port}: {info.channels} channels, {what} "
        + " ".join(f"{s.name} {'-' if w is None else f'{w:g}'}" for s, w in zip(robot.calibration.servos, held))
        + f" {robot.calibration.unit}"
    )
    print_report(args, report, headline)
    if restored and not args.json:
        print(
            f"the board had no pulses on {len(restored)} servo(s) (it reset when its port opened): set to the pose "
            "stored when the arm was last left here, so they hold it (nothing moved)"
        )
    if not args.json:
        if "urdf_deg" in report:
            angles = " ".join(f"{n} {v:.2f}" for n, v in report["urdf_deg"].items())
            print(f"URDF joint angles {angles} deg")
        for sv in report.get("servos", ()):
            goal = "-" if sv["goal_steps"] is None else f"{sv['goal_steps']:.0f}"
            print(
                f"  {sv['name']:<14} id {sv['id']:<3} position {sv['position_steps']:>4} goal {goal:>4} steps  "
                f"torque {'on ' if sv['torque'] else 'off'}  load {100 * sv['load_fraction']:5.1f} %  "
                f"{sv['voltage_v']:.1f} V  {sv['temperature_c']} degC"
                + ("" if sv["errors"] == "no error" else f"  {sv['errors']}")
                + (f"  held at {sv['held_at_steps']:.0f}" if "held_at_steps" in sv else "")
                + (f"  (model: {100 * sv['expected_load_fraction']:.0f} %)" if "expected_load_fraction" in sv else "")
            )
    return 0
