"""Talking to the board, the host side: protocol codec, backends, the port opener. It knows nothing of the
arm model; the simulated boards live in ``armctl.sim``, found by URL scheme (``bus.simulators``).

Importing this package registers the simulators' URLs (``armsim://``, ``feetechsim://``) with pyserial, so
``serial.serial_for_url("armsim://?arm=seed-3link")`` opens a simulated arm.
"""

from __future__ import annotations

import serial

if "armctl.sim" not in serial.protocol_handler_packages:
    serial.protocol_handler_packages.append("armctl.sim")
