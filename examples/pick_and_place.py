"""Pick three parts from a row and stack them: examples/pick_and_place.yaml written with the Python API.

    python examples/pick_and_place.py                   # on the simulated arm
    python examples/pick_and_place.py /dev/ttyACM0      # on a board running our firmware

Units are SI: metres, radians, seconds. x runs along the table, y up; the table top is at y = -0.28 m.
"""

import math
import sys
import time

import armctl

DOWN = math.radians(-90)  # tool angle: the gripper points straight down
PARTS = [(0.48, -0.25), (0.55, -0.25), (0.62, -0.25)]  # grip points, 30 mm above the table
STACK = [(0.34, -0.25), (0.34, -0.22), (0.34, -0.19)]  # each part lands 30 mm above the previous one
ABOVE = 0.08  # approach and leave 80 mm above


def main(port: str | None = None) -> None:
    with armctl.connect("seed-3link", port) as robot:
        robot.gripper("open")
        for (px, py), (sx, sy) in zip(PARTS, STACK):
            robot.move_to(px, py + ABOVE, phi=DOWN, path="joint")  # above the part, all joints at once
            robot.move_to(px, py, phi=DOWN, speed=0.06)  # straight down
            robot.gripper("close")
            time.sleep(0.2)
            robot.move_to(px, py + ABOVE, phi=DOWN, speed=0.10)  # lift
            robot.move_to(sx, sy + ABOVE, phi=DOWN, speed=0.15)  # over the stack
            robot.move_to(sx, sy, phi=DOWN, speed=0.05)  # put down
            robot.gripper("open")
            time.sleep(0.2)
            robot.move_to(sx, sy + ABOVE, phi=DOWN, speed=0.10)  # clear the stack
        robot.move_joints([45, -90, -45], degrees=True, speed_fraction=0.6)  # park
        print(robot.where(settle=True))


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else None)
