"""Run inside LeRobot's virtualenv by tests/lerobot/test_lerobot_dynamixel.py: LeRobot's own Koch follower and
``DynamixelMotorsBus`` (over ROBOTIS's SDK) against the simulated Dynamixel bus on the pty given as argv[1]:
connect, calibrate (LeRobot's steps: extended position mode, half-turn homings, ranges of motion recorded while a
scripted hand turns the joints; its prompts answered), configure, read, move. Prints one JSON line of what it saw.
"""

from __future__ import annotations

import builtins
import json
import sys
import time
from pathlib import Path

import lerobot.motors.motors_bus as motors_bus
from lerobot.robots.koch_follower import KochFollower, KochFollowerConfig

port, calibration_dir, record_s = sys.argv[1], Path(sys.argv[2]), float(sys.argv[3])
builtins.input = lambda prompt="": print(prompt, flush=True) or ""  # every prompt answered with Enter
started: list[float] = []


def enter_pressed() -> bool:  # LeRobot's "press Enter to stop recording", after record_s seconds
    started.append(started[0] if started else time.monotonic())
    return time.monotonic() - started[0] > record_s


motors_bus.enter_pressed = enter_pressed
robot = KochFollower(KochFollowerConfig(port=port, id="sim_koch", calibration_dir=calibration_dir))
robot.connect(calibrate=False)
bus = robot.bus
seen = {"models": {m: bus.read("Model_Number", m, normalize=False) for m in bus.motors}}
robot.calibrate()
seen["calibrated"] = robot.is_calibrated
seen["calibration"] = {m: vars(c) for m, c in robot.calibration.items()}
seen["file"] = json.loads((calibration_dir / "sim_koch.json").read_text())
robot.configure()
seen["modes"] = {m: bus.read("Operating_Mode", m, normalize=False) for m in bus.motors}
seen["raw"] = bus.sync_read("Present_Position", normalize=False)
seen["observation"] = {k: float(v) for k, v in robot.get_observation().items()}
bus.write("Torque_Enable", "elbow_flex", 1)
goal = {"elbow_flex.pos": 20.0}
robot.send_action(goal)
time.sleep(1.5)
seen["after_move"] = float(robot.get_observation()["elbow_flex.pos"])
robot.disconnect()
print("RESULT " + json.dumps(seen), flush=True)
