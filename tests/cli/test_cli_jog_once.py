"""One ``armctl --arm mearm jog 150mm 40mm 20mm`` (the simulated arm, no port) loads the arm and its calibration
once, parses each YAML file once and solves its end pose once (issue 22).

The calls are counted with a profile hook on the functions' code objects, found through their public import
paths (``armctl.model.arm.load_arm``, ``armctl.motion.solve_pose``, ...): the count holds wherever a function is
moved to and whoever calls it, in any thread (the Robot plans and plays in its own). The simulated board
builds its own arm and calibration from its URL (it stands for the arm on the table, which knows nothing of
the host's objects): its loads are counted apart, and its YAML reads are no second parse.
"""

from __future__ import annotations

import inspect
import sys
import threading
from collections import Counter
from pathlib import Path

import armctl.calibration.servo
import armctl.core.config
import armctl.ik
import armctl.model.arm
import armctl.motion
from armctl.cli import main


def _simulator(module: str) -> bool:
    """A module of the simulated boards (armctl.bus.sim, armctl.bus.protocol_armsim, armctl.sim.*, ...)."""
    return any("sim" in part for part in module.split(".")[1:])


class CallCounter:
    """Counts calls of the watched functions (all threads) while active; ``calls[name]`` by the host,
    ``sim[name]`` by the simulators, ``paths`` the files each YAML parse read."""

    def __init__(self, watched: dict):
        self.codes = {inspect.unwrap(f).__code__: name for name, f in watched.items() if f is not None}
        self.calls: Counter = Counter()
        self.sim: Counter = Counter()
        self.paths: Counter = Counter()

    def _hook(self, frame, event, arg):
        if event != "call":
            return
        name = self.codes.get(frame.f_code)
        if name is None:
            return
        caller = frame.f_back.f_globals.get("__name__", "") if frame.f_back is not None else ""
        (self.sim if _simulator(caller) else self.calls)[name] += 1
        if name == "parse_yaml":
            self.paths[str(Path(str(frame.f_locals.get("path"))).resolve())] += 1

    def __enter__(self):
        threading.setprofile(self._hook)
        sys.setprofile(self._hook)
        return self

    def __exit__(self, *exc):
        sys.setprofile(None)
        threading.setprofile(None)


def test_one_jog_loads_the_arm_and_calibration_once_and_solves_its_end_once(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    watched = {
        "load_arm": armctl.model.arm.load_arm,
        "load_calibration": armctl.calibration.servo.load_calibration,
        "parse_yaml": armctl.core.config.load_yaml_text,  # the parse itself (load_yaml_file reads, then this)
        "solve_pose": armctl.motion.solve_pose,  # an end pose: IK with every limit checked
        "ik_solve": getattr(armctl.ik, "solve", None),  # the IK dispatch
    }
    with CallCounter(watched) as count:
        code = main(["--arm", "mearm", "jog", "150mm", "40mm", "20mm"])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "jogged to (0.15, 0.04, 0.02) m" in out
    assert count.calls["load_arm"] == 1, count.calls
    assert count.calls["load_calibration"] == 1, count.calls
    assert count.sim["load_arm"] <= 1 and count.sim["load_calibration"] <= 1, count.sim  # the simulated board's
    # each file parsed at most once, the board's reads too (none at all if an earlier test parsed them already)
    assert max(count.paths.values(), default=0) <= 1, count.paths
    assert count.calls["solve_pose"] + count.sim["solve_pose"] == 1, count.calls
    assert count.calls["ik_solve"] <= 1, count.calls
