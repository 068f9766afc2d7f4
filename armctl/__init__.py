"""armctl: drive a hobby 2- or 3-link servo arm from a PC.

Layers, each importing only the ones below it: arm (geometry, limits) ->
kinematics -> workspace -> ik -> motion/program -> calibration -> bus
(backends) -> stream -> session -> cli/web. SI units inside.
"""

__version__ = "0.1.0"
