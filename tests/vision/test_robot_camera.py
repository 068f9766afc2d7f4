"""A Robot with a camera (``connect(camera=)``): parts found where they lie, picked and placed by a program's
``pick: {marker: ID}``, and a pose nothing reads seen by the camera before the first pulse."""

import math

import numpy as np
import pytest

import armctl
from armctl.errors import BadInputError
from armctl.program import load_program_text
from armctl.sim import scene
from armctl.sim.truth import Part

pytest.importorskip("cv2")

CAMERA = "simcam://?seed=3&fps=0"


def test_unknown_pose_is_seen_and_a_part_is_picked_where_it_lies():
    port = "armsim://?arm=mearm&rate=40&encoders=0&start=25,95,-15"
    with armctl.connect("mearm", port=port, camera=CAMERA) as robot:
        live = scene.latest()
        assert robot.pose_unknown == ""  # the camera said where it stands: nothing to assume
        first = robot.where().q_rad
        assert np.allclose(np.degrees(first), [25, 95, -15], atol=1.5)
        live.add_part(Part(7, 0.03, 0.13, -0.07, math.radians(40), 0.0))
        found = robot.find(marker=7)
        assert np.hypot(found.x_m - 0.13, found.y_m + 0.07) < 0.002
        assert abs(math.degrees(found.yaw_rad) - 40) < 1.5
        prog = load_program_text("arm: mearm\nsteps:\n  - pick: {marker: 7}\n  - place: {xyz_mm: [150, 60, 30]}\n")
        robot.run(prog)
        part = live.parts_now()[0]
        assert np.hypot(part.x_m - 0.150, part.y_m - 0.060) < 0.005
        with pytest.raises(BadInputError, match="marker 9 is not in view"):
            robot.find(marker=9)


def test_without_a_camera_find_and_marker_programs_are_refused():
    with armctl.connect("mearm", port="armsim://?arm=mearm&rate=40") as robot:
        with pytest.raises(BadInputError, match="no camera"):
            robot.find(marker=1)
        prog = load_program_text("arm: mearm\nsteps:\n  - pick: {marker: 7}\n")
        with pytest.raises(armctl.ConfigError, match="no camera said where it lies"):
            robot.run(prog)
