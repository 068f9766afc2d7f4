"""Pick-and-place programs: a YAML file of named poses and steps, checked whole, planned into one Trajectory.

``load_program(path)`` reads and validates the format (ConfigError naming the
file, line and step); ``plan_program(program, arm)`` resolves every pose on the
arm and plans every move (MotionError naming file, line and step for anything
the arm cannot do). Nothing is returned until the whole program has planned,
so a program that fails in its last step never half-runs. The format is
documented in docs/programs.md.

The package: ``load`` reads and checks the format (Program, Settings, Pose, Step; load_program, with_blend);
``plan`` unrolls the loops (expand) and plans the moves on an arm (plan_program).
"""

from __future__ import annotations

from armctl.program.edit import blend_option, markers_of, with_blend, with_parts
from armctl.program.load import (
    MAX_BLEND_M,
    MAX_MOVES,
    MIN_SEGMENT_M,
    SETTINGS_KEYS,
    STEP_ACTIONS,
    STEP_KEYS,
    MarkerRef,
    Pose,
    Program,
    Settings,
    Step,
    load_program,
    load_program_text,
    parse_program,
)
from armctl.program.plan import episode_of_steps, expand, plan_program, pose_of, pose_target, step_move

__all__ = [
    "MAX_BLEND_M",
    "MAX_MOVES",
    "MIN_SEGMENT_M",
    "SETTINGS_KEYS",
    "STEP_ACTIONS",
    "STEP_KEYS",
    "MarkerRef",
    "Pose",
    "Program",
    "Settings",
    "Step",
    "episode_of_steps",
    "expand",
    "load_program",
    "load_program_text",
    "markers_of",
    "parse_program",
    "plan_program",
    "pose_of",
    "pose_target",
    "step_move",
    "blend_option",
    "with_blend",
    "with_parts",
]
