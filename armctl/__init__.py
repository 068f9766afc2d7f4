"""armctl: drive a hobby 2- or 3-link servo arm from a PC.

    import armctl
    with armctl.connect("seed-3link") as robot:    # no port: the simulated arm
        robot.move_to(0.5, 0.2)                      # metres, a straight line
        robot.gripper("close")
        print(robot.where())

``connect`` and the ``Robot`` it returns are in ``armctl.robot``; errors in ``armctl.errors``.
Layers, each importing only the ones below it: arm (geometry, limits) -> kinematics -> workspace -> ik
-> motion/program -> calibration -> bus (backends) -> stream (playback) -> robot -> cli/web. SI units
inside. ``armctl.connect`` is imported on first use, so the command line starts without the serial stack.
"""

__version__ = "0.2.0"

_LAZY = {
    "connect": "robot",
    "Robot": "robot",
    "Pose": "robot",
    "Motion": "robot",
    "MoveResult": "robot",
    "open_leader": "leader",
    "DatasetWriter": "dataset",
}
__all__ = ["connect", "Robot", "Pose", "Motion", "MoveResult", "open_leader", "DatasetWriter", "__version__"]


def __getattr__(name):
    if name in _LAZY:
        from importlib import import_module

        value = getattr(import_module(f".{_LAZY[name]}", __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'armctl' has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(__all__))
