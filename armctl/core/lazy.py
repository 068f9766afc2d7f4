"""Names a package re-exports from one of its modules, imported on first use (so ``import armctl.robot.state``
does not load the whole Robot), and the module paths armctl had before its packages (``MOVED``), which still
import: ``import armctl.arm`` gives the very module ``armctl.model.arm``."""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys

# old module -> new module (the package tree of 0.3; docs/architecture.md)
MOVED = {
    "armctl.units": "armctl.core.units",
    "armctl.numtext": "armctl.core.numtext",
    "armctl.paths": "armctl.core.paths",
    "armctl.config": "armctl.core.config",
    "armctl.stopsignals": "armctl.core.stopsignals",
    "armctl.limits": "armctl.core.limits",
    "armctl.terminal": "armctl.core.terminal",
    "armctl.holders": "armctl.core.holders",
    "armctl.tracebacks": "armctl.core.tracebacks",
    "armctl.kinematics": "armctl.model.kinematics",
    "armctl.arm": "armctl.model.arm",
    "armctl.workspace": "armctl.model.workspace",
    "armctl.zones": "armctl.model.zones",
    "armctl.capsule": "armctl.model.capsule",
    "armctl.validate": "armctl.model.validate",
    "armctl.urdf": "armctl.model.urdf.derive",
    "armctl.urdf_parse": "armctl.model.urdf.parse",
    "armctl.branch_ik": "armctl.ik.branch",
    "armctl.redundancy": "armctl.ik.redundancy",
    "armctl._ikcore": "armctl.ik._core",
    "armctl.trajectory": "armctl.motion.trajectory",
    "armctl.plot": "armctl.motion.plot",
    "armctl.draw": "armctl.program.draw",
    "armctl.recording": "armctl.program.recording",
    "armctl.lerobot": "armctl.calibration.lerobot",
    "armctl.calibrate": "armctl.calibration.procedures",
    "armctl.nudge": "armctl.calibration.nudge",
    "armctl.bus.armlink": "armctl.bus.armproto.link",
    "armctl.bus.codec": "armctl.bus.armproto.codec",
    "armctl.bus.feetech_backend": "armctl.bus.feetech.backend",
    "armctl.bus.feetech_protocol": "armctl.bus.feetech.protocol",
    "armctl.bus.pca9685_chip": "armctl.bus.pca9685.chip",
    "armctl.bus.i2c": "armctl.bus.pca9685.i2c",
    "armctl.leader": "armctl.teleop.leader",
    "armctl.follow": "armctl.teleop.follow",
    "armctl.dataset_files": "armctl.dataset.files",
    "armctl.dataset_stats": "armctl.dataset.stats",
    "armctl.dataset_recorder": "armctl.dataset.recorder",
    "armctl.dataset_commit": "armctl.dataset.commit",
    "armctl.camera": "armctl.dataset.camera",
    "armctl.runner": "armctl.robot.runner",
    "armctl.pose": "armctl.robot.pose",
    "armctl.journal": "armctl.robot.journal",
    "armctl.restart": "armctl.robot.restart",
    "armctl.lifecycle": "armctl.robot.lifecycle",
    "armctl.handles": "armctl.robot.handles",
    "armctl.opening": "armctl.robot.opening",
    "armctl.interrupts": "armctl.robot.interrupts",
    "armctl.boardaccess": "armctl.robot.boardaccess",
    "armctl.watch": "armctl.robot.watch",
    "armctl.followplay": "armctl.robot.followplay",
    "armctl.runcontrol": "armctl.robot.runcontrol",
    "armctl.state": "armctl.robot.state",
    "armctl.stream": "armctl.robot.stream",
}
# old modules that became packages of the same name re-export the old module's names (reexport below):
# armctl.calibration, armctl.dataset, armctl.robot, armctl.bus.armproto, armctl.bus.feetech, armctl.bus.pca9685


def reexport(package: str, module: str):
    """``__getattr__`` and ``__dir__`` for ``package``: its unknown attributes are looked up in ``module`` (a
    submodule's full name), imported on first use."""

    def __getattr__(name: str):
        if name.startswith("__"):
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        try:
            return getattr(importlib.import_module(module), name)
        except AttributeError:
            raise AttributeError(f"module {package!r} has no attribute {name!r}") from None

    def __dir__():
        return sorted(set(vars(sys.modules[package])) | set(dir(importlib.import_module(module))))

    return __getattr__, __dir__


class _Alias(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds an old module path (``MOVED``) and gives the module at its new path: one module, two names."""

    def __init__(self):
        self._specs = {}

    def find_spec(self, fullname, path=None, target=None):
        if fullname not in MOVED:
            return None
        return importlib.util.spec_from_loader(fullname, self)

    def create_module(self, spec):
        module = importlib.import_module(MOVED[spec.name])
        self._specs[spec.name] = module.__spec__
        return module

    def exec_module(self, module):
        # already run under its new name; the import system has just given it the old name's spec: give it back
        module.__spec__ = self._specs.pop(module.__spec__.name, module.__spec__)


def install_aliases() -> None:
    if not any(isinstance(f, _Alias) for f in sys.meta_path):
        sys.meta_path.append(_Alias())
