"""Talking to the board: protocol codec, backends, and the simulated arm.

Importing this package registers the ``armsim://`` URL with pyserial, so
``serial.serial_for_url("armsim://?arm=seed-3link")`` opens a simulated arm.
"""

from __future__ import annotations

import serial

if "armctl.sim" not in serial.protocol_handler_packages:
    serial.protocol_handler_packages.append("armctl.sim")
