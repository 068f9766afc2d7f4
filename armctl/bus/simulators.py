"""The simulated boards, by URL scheme: one table, so the host side never imports a simulator.

``SIMULATORS`` maps a port scheme (``armsim``) to the module that simulates it (``armctl.sim.protocol_armsim``),
imported only when a port of that scheme is opened. Such a module offers:

- ``open_simulator(url, **port_options)``: the opened simulator (a pyserial port for serial boards, an
  ``I2CBus`` for the PCA9685 chip); ``BadSimURL`` for a URL it cannot take;
- ``simulator_url(arm, cal_path, state_path)``: the URL of a simulated board for ``arm`` and the calibration
  in ``cal_path``, keeping its servos in ``state_path`` between runs (a backend's default port).

``SIMULATOR_UNITS`` says what servos each simulates ("us": hobby PWM servos, "steps": bus servos), so a
simulator of other servos than the calibration's is refused at once (it would only time out);
``PORT_SCHEMES`` names the ports only one backend can open (``i2c``: pca9685). ``register_simulator`` adds
a scheme. Importing ``armctl.bus`` also lets ``serial.serial_for_url`` open the pyserial ones
(``armctl.sim.protocol_<scheme>``).
"""

from __future__ import annotations

import importlib

from serial.serialutil import SerialException

from armctl.errors import BadInputError


class BadSimURL(SerialException, ValueError):
    """A simulator URL with an unknown option or a bad value: bad input (exit 2), not a link failure.

    A SerialException, so pyserial callers that catch those still do; ``open_port`` turns it into a
    BadInputError naming the URL."""


#: Port scheme -> the module simulating it (see the module note).
SIMULATORS: dict[str, str] = {}
#: Simulator scheme -> the servos it simulates, in the calibration's unit ("us", "steps").
SIMULATOR_UNITS: dict[str, str] = {}
#: Port schemes only one backend can open, and that backend (the default when no --backend is given).
PORT_SCHEMES: dict[str, str] = {"i2c": "pca9685"}


def register_simulator(scheme: str, module: str, *, unit: str, backend: str | None = None) -> None:
    """Make ``scheme://`` ports open the simulator in ``module`` (its import path), which simulates servos
    driven in ``unit``; ``backend``: the only backend that can drive it (None: any of that unit)."""
    SIMULATORS[scheme] = module
    SIMULATOR_UNITS[scheme] = unit
    if backend is not None:
        PORT_SCHEMES[scheme] = backend


#: a bus simulator's servos: (what they are, the backend that drives them, the presets built on them)
SIMULATOR_BUSES = {
    "feetechsim": ("Feetech bus", "feetech", "so101"),
    "dynamixelsim": ("Dynamixel bus", "dynamixel", "koch or --arm omx"),
}

register_simulator("armsim", "armctl.sim.protocol_armsim", unit="us")
register_simulator("feetechsim", "armctl.sim.protocol_feetechsim", unit="steps")
register_simulator("dynamixelsim", "armctl.sim.protocol_dynamixelsim", unit="steps")
register_simulator("pca9685sim", "armctl.sim.pca9685_sim", unit="us", backend="pca9685")


def url_scheme(url) -> str:
    """The scheme of a port (``armsim``), lower case; "" for a device path."""
    return str(url).split("://", 1)[0].lower() if url is not None and "://" in str(url) else ""


def is_simulator(url) -> bool:
    """True if ``url`` names a simulated board."""
    return url_scheme(url) in SIMULATORS


def is_bus_simulator(url) -> bool:
    """True if ``url`` names a simulated servo bus (no Arduino behind it: nothing resets on open)."""
    return SIMULATOR_UNITS.get(url_scheme(url)) == "steps"


def _module(scheme: str):
    try:
        return importlib.import_module(SIMULATORS[scheme])
    except KeyError:
        raise BadSimURL(f"no simulator {scheme}://; simulators: {', '.join(SIMULATORS)}") from None


def open_simulator(url: str, **port_options):
    """Open the simulated board ``url`` names (``port_options``: pyserial's, for serial boards)."""
    return _module(url_scheme(url)).open_simulator(url, **port_options)


def simulator_url(scheme: str, arm, cal_path, state_path) -> str | None:
    """The ``scheme://`` URL of a simulated board for ``arm`` with the calibration in ``cal_path``, keeping its
    servos in ``state_path`` (see the module note); None if there is no such simulator."""
    if scheme not in SIMULATORS:
        return None
    return _module(scheme).simulator_url(arm, cal_path, state_path)


def check_simulator_port(url: str, backend) -> None:
    """BadInputError, at once, if ``url`` simulates another kind of servo than ``backend`` (a Backend class)
    drives (it would only time out): e.g. ``feetechsim://`` with a PWM calibration, which picks the armctl
    backend."""
    scheme = url_scheme(url)
    if not scheme and str(url).startswith("/dev/i2c-"):  # not a serial port: armctl would try it as one
        raise BadInputError(f"port {url} is an I2C bus: give it as --port 'i2c://{url}?address=0x40' (PCA9685 boards)")
    owner = PORT_SCHEMES.get(scheme)
    if owner is not None and owner != backend.name:
        raise BadInputError(
            f"port {scheme}:// is an I2C bus for PCA9685 boards: use --backend {owner}, not {backend.name}"
        )
    if backend.name in PORT_SCHEMES.values() and owner is None:
        raise BadInputError(
            f"the {backend.name} backend drives PCA9685 boards on an I2C bus: give --port "
            f"i2c:///dev/i2c-1?address=0x40 (or pca9685sim:// for the simulated board), not {url!r}"
        )
    unit = SIMULATOR_UNITS.get(scheme)
    bus = SIMULATOR_BUSES.get(scheme)
    if unit == backend.servo_unit and bus is not None and bus[1] != backend.name:
        other = next((s for s, b in SIMULATOR_BUSES.items() if b[1] == backend.name), None)
        raise BadInputError(
            f"port {scheme}:// simulates {bus[0]} servos, which the {backend.name} backend does not speak: give "
            f"{f'--port {other}:// ' if other else ''}for the arm's servos, or an arm of {bus[0]} servos "
            f"(--arm {bus[2]})"
        )
    if unit is None or unit == backend.servo_unit:
        return
    if unit == "steps":
        title, name, arms = SIMULATOR_BUSES.get(scheme, ("bus", "feetech", "so101"))
        raise BadInputError(
            f"port {scheme}:// simulates {title} servos, which the {backend.name} backend does not drive: give "
            f"an arm of them (--arm {arms}) or a bus-servo calibration (in steps) and --backend {name}"
        )
    raise BadInputError(
        f"port {scheme}:// simulates hobby (PWM) servos, which the {backend.name} backend does not drive: give a "
        "hobby-servo calibration (in us) and --backend armctl, or use feetechsim:// for bus servos"
    )


def scheme_backend(url) -> str | None:
    """The backend that must open ``url`` because of its scheme (``i2c://``: pca9685), or None."""
    return PORT_SCHEMES.get(url_scheme(url)) if url is not None and "://" in str(url) else None
