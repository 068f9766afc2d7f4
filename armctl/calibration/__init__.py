"""Joint angle <-> servo value: the servo maps and our calibration files (``servo``), LeRobot's calibration
files (``lerobot``), and the procedures that make a calibration on a real arm (``procedures``, ``nudge``).
``from armctl.calibration import Calibration`` still works (the names of ``servo``)."""

from armctl.core.lazy import reexport

__getattr__, __dir__ = reexport(__name__, "armctl.calibration.servo")
