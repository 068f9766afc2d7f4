"""armctl: drive a hobby 2- or 3-link servo arm from a PC.

    import armctl
    with armctl.connect("seed-3link") as robot:    # no port: the simulated arm
        robot.move_to(0.5, 0.2)                      # metres, a straight line
        robot.gripper("close")
        print(robot.where())

``connect`` and the ``Robot`` it returns are in ``armctl.robot``; errors in ``armctl.errors``, also here
(``armctl.UnreachableError``, ``armctl.JointLimitError``, ``armctl.LinkError``, ...).
One package per layer, lowest first, each importing only its own and lower ones: ``core`` (units, paths,
config, limits, stop signals) -> ``model`` (kinematics, the arm, URDF, zones, workspace, validation) -> ``ik``
-> ``motion`` -> ``program`` (programs, drawings, recordings) -> ``calibration`` -> ``bus`` (backends) ->
``sim`` (simulators) -> ``teleop`` -> ``dataset`` -> ``robot`` -> the apps (``cli``, ``web``, ``ros``); the table
is docs/architecture.md, checked by tests/test_architecture.py. SI units inside. The module paths before the
packages (``armctl.arm``, ``armctl.kinematics``, ...) still import (``armctl.core.lazy.MOVED``).
``armctl.connect`` is imported on first use, so the command line starts without the serial stack.
"""

__version__ = "0.2.0"

_LAZY = {
    "connect": "robot",
    "Robot": "robot",
    "Pose": "robot",
    "Motion": "robot",
    "MoveResult": "robot",
    "Watch": "robot",  # an arm another armctl drives, watched without opening its port
    "open_leader": "teleop.leader",
    "ToolTarget": "teleop.tooltarget",  # an end-effector target streamed to Robot.follow
    "DatasetWriter": "dataset",
}
# the exception tree (armctl.errors), so a notebook can write ``except armctl.UnreachableError``
_ERRORS = (
    "ArmctlError",
    "BadInputError",
    "ConfigError",
    "MotionError",
    "UnreachableError",
    "JointLimitError",
    "PulseLimitError",
    "ZoneError",
    "LinkError",
    "ProtocolError",
    "ToolOffPlanError",
    "StopRequested",
)
_LAZY.update(dict.fromkeys(_ERRORS, "errors"))
__all__ = [
    "connect",
    "Robot",
    "Pose",
    "Motion",
    "MoveResult",
    "Watch",
    "open_leader",
    "ToolTarget",
    "DatasetWriter",
    *_ERRORS,
    "__version__",
]


from armctl.core.lazy import install_aliases  # noqa: E402

install_aliases()  # the module paths before the packages (armctl.arm, armctl.kinematics, ...) still import


def __getattr__(name):
    if name in _LAZY:
        from importlib import import_module

        value = getattr(import_module(f".{_LAZY[name]}", __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'armctl' has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(__all__))
