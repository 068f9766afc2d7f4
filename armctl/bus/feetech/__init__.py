"""Feetech serial bus servos: the protocol's constants, tables and packets (``protocol``), the bus client
``FeetechBus`` and its errors (``client``), the backend (``backend``). ``from armctl.bus.feetech import
FeetechBus`` still works (the names of ``client``)."""

from armctl.core.lazy import reexport

__getattr__, __dir__ = reexport(__name__, "armctl.bus.feetech.client")
