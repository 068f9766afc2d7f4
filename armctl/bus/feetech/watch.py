"""Moved to ``armctl.bus.watch`` (bus-neutral: the Feetech and Dynamixel backends share it); its names still import
from here."""

from armctl.core.lazy import reexport

__getattr__, __dir__ = reexport(__name__, "armctl.bus.watch")
