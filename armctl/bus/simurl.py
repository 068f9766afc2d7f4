"""The error a simulator URL handler raises for a URL it cannot parse (``armsim://``, ``feetechsim://``)."""

from __future__ import annotations

from serial.serialutil import SerialException


class BadSimURL(SerialException, ValueError):
    """A simulator URL with an unknown option or a bad value: bad input (exit 2), not a link failure.

    A SerialException, so pyserial callers that catch those still do; ``open_port`` turns it into a
    BadInputError naming the URL."""
