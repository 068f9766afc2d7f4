"""What the simulator URL handlers (``armsim://``, ``feetechsim://``) share: the error for a URL they
cannot parse, the reading of a URL's options, and the pyserial port over a simulation that runs on
simulated time (``SimSerial``)."""

from __future__ import annotations

import math
import threading
import time
import urllib.parse
from collections.abc import Callable
from typing import Any

from serial.serialutil import PortNotOpenError, SerialBase, SerialException

from armctl.bus.simulators import BadSimURL
from armctl.sim import scene
from armctl.sim.link import LinkGone


def parse_options(
    url: str, scheme: str, options: dict[str, tuple[str, Callable[[str], Any]]], opts, expected: str
) -> tuple[Any, str]:
    """Set on ``opts`` each ``?key=value`` of ``url`` (``options``: key -> (attribute, converter));
    the last value of a repeated key wins. Returns ``(opts, host_and_path)``. BadSimURL naming the
    option (and ``expected``, the URL's form) for another scheme, an unknown key or a value the
    converter refuses (ValueError)."""
    parts = urllib.parse.urlsplit(url)
    if parts.scheme != scheme:
        raise BadSimURL(f"{url!r} is not a {scheme}:// URL; {expected}")
    for key, values in urllib.parse.parse_qs(parts.query, keep_blank_values=True).items():
        if key not in options:
            raise BadSimURL(f"unknown {scheme} option {key!r}; {expected}")
        attr, conv = options[key]
        try:
            value = conv(values[-1])
        except ValueError:
            raise BadSimURL(f"{scheme} option {key}={values[-1]!r} is not valid; {expected}") from None
        setattr(opts, attr, value)
    return opts, urllib.parse.unquote(parts.netloc + parts.path).strip("/")


# --- option values shared by the simulator URLs ---


def id_list(text: str) -> list[int]:
    """Ids ``I,J,..`` and ranges ``A-B``, in order (ValueError for anything else)."""
    out: list[int] = []
    for part in text.split(","):
        part = part.strip()
        if not part:
            continue
        if "-" in part:
            a, b = part.split("-", 1)
            out.extend(range(int(a), int(b) + 1))
        else:
            out.append(int(part))
    return out


def float_list(text: str) -> list[float]:
    """Numbers separated by commas."""
    return [float(v) for v in text.split(",") if v.strip()]


def per_id(*convert):
    """A parser of ``id:value[:value...]`` items separated by commas: {id: value} (one value) or {id: (values)};
    ValueError for an item with another count of values."""

    def parse(text: str) -> dict:
        out = {}
        for part in text.split(","):
            if part.strip():
                servo_id, *values = part.split(":")
                if len(values) != len(convert):
                    raise ValueError(part)
                got = tuple(f(v) for f, v in zip(convert, values))
                out[int(servo_id)] = got if len(got) > 1 else got[0]
        return out

    return parse


def flag(text: str) -> bool:
    """An on/off option: 1/true/yes/on (or empty) and 0/false/no/off."""
    if text.lower() in ("1", "true", "yes", "on", ""):
        return True
    if text.lower() in ("0", "false", "no", "off"):
        return False
    raise ValueError(text)


#: the URL options both bus simulators (feetechsim://, dynamixelsim://) take: option -> (field, converter); each adds
#: its own (a Feetech's ``plug``, ``physics``; a Dynamixel's ``modes``)
BUS_OPTIONS = {
    "ids": ("ids", id_list),
    "model": ("model", str),
    "baud": ("baud", int),
    "rate": ("rate", float),
    "start": ("start_steps", float_list),
    "speed": ("speed_steps_s", float),
    "accel": ("accel_steps_s2", float),
    "volts": ("volts", float),
    "temp": ("temp_c", float),
    "drop": ("drop", float),
    "corrupt": ("corrupt", float),
    "delay": ("delay_ms", float),
    "disconnect": ("disconnect", int),
    "seed": ("seed", int),
    "echo": ("echo", flag),
    "missing": ("missing", id_list),
    "stall": ("stall", id_list),
    "garble": ("garble", id_list),
    "stops": ("stops", per_id(float, float)),  # id:lo:hi mechanical stops, steps
    "state": ("state", str),
    "offsets": ("offsets", per_id(int)),  # id:homing offset
    "limits": ("limits", per_id(int, int)),  # id:Min_Position_Limit:Max_Position_Limit
    "hand": ("hand", str),
    "connected": ("connected", str),
    "arm": ("arm", str),
    "cal": ("cal", str),
    "truth": ("truth", str),
}


def check_bus_options(opts, bad: Callable[[str], Exception]) -> None:
    """A servo bus simulator's link and physics options (``drop``, ``corrupt``, ``rate``, ``speed``, ``accel``,
    ``volts`` (None: the servos' own), ``temp``, ``delay``); ``bad(message)`` is the error raised."""
    for name in ("drop", "corrupt"):
        if not 0.0 <= getattr(opts, name) <= 1.0:
            raise bad(f"{name} must be a probability 0..1")
    for name, value in (("rate", opts.rate), ("speed", opts.speed_steps_s), ("accel", opts.accel_steps_s2)):
        if not (value > 0 and math.isfinite(value)):
            raise bad(f"{name} must be > 0")
    volts_ok = opts.volts is None or 0 < opts.volts < 30
    if not (volts_ok and -40 <= opts.temp_c <= 100 and 0 <= opts.delay_ms < 10_000):
        raise bad("volts must be 0..30 V, temp -40..100 degC, delay 0..10000 ms")


class SimSerial(SerialBase):
    """A pyserial port over a simulation (``self.sim``) that keeps its own simulated clock, ``rate``
    simulated seconds a wall second from the moment the port opened.

    The simulation gives ``pump(t)``, ``host_read(t, size)``, ``host_write(data, t)``, ``waiting(t)``,
    ``next_arrival_s()``, ``drop_pending_output()``, ``save_state()`` and ``gone`` (the link was cut:
    it raises ``link_gone`` from then on). A subclass names itself (``scheme``) and builds it
    (``_open_sim``, returning the simulation and its rate)."""

    scheme = "sim"
    link_gone: type[Exception] = Exception
    #: the shortest sleep while a read waits for bytes (s of wall time)
    min_wait_s = 0.0001
    #: whether the simulation still runs after its link was cut (a board the host lost goes on playing)
    runs_when_gone = True

    def __init__(self, *args, **kwargs):
        self.sim = None
        #: held while the simulation runs (the port's user and the scene, e.g. a simulated camera's thread)
        self.lock = threading.RLock()
        self._t0 = 0.0
        self._rate = 1.0
        super().__init__(*args, **kwargs)

    def _open_sim(self):
        """The simulation for ``self.portstr``, and its rate."""
        raise NotImplementedError

    @classmethod
    def open_url(cls, url: str, **port_options) -> SimSerial:
        """The port ``url``, opened (``port_options``: pyserial's), as ``serial.serial_for_url`` opens it."""
        port = cls(None, **port_options)
        port.port = url
        port.open()
        return port

    def open(self):
        if self.is_open:
            raise SerialException("Port is already open.")
        if self._port is None:
            raise SerialException("Port must be configured before it can be used.")
        self.sim, self._rate = self._open_sim()
        self._t0 = time.monotonic()
        self.is_open = True
        scene.register(self.sim, self.sim_time_s, lock=self.lock)  # a simulated arm (with an arm model) is live
        self.reset_input_buffer()

    def sim_time_s(self) -> float:
        """Simulated seconds since the port was opened (the simulated hardware was powered); the wall time the
        simulation spent computing a physics plant (its ``compute_wall_s``) does not count."""
        return (time.monotonic() - self._t0 - getattr(self.sim, "compute_wall_s", 0.0)) * self._rate

    @property
    def rate(self) -> float:
        return self._rate

    def _pump(self) -> None:
        with self.lock:
            if self.runs_when_gone or not self.sim.gone:
                self.sim.pump(self.sim_time_s())

    def close(self):
        if self.is_open and self.sim is not None:
            self._pump()
            self.sim.save_state()
            scene.drop(self.sim)
        self.is_open = False

    def _reconfigure_port(self):
        pass

    def _check(self):
        if not self.is_open:
            raise PortNotOpenError()

    def _gone(self, exc: Exception) -> SerialException:
        return SerialException(f"{self.scheme}: {exc}")

    @property
    def in_waiting(self):
        self._check()
        try:
            with self.lock:
                return self.sim.waiting(self.sim_time_s())
        except self.link_gone as exc:
            raise self._gone(exc) from None

    def read(self, size=1):
        self._check()
        deadline = None if self._timeout is None else time.monotonic() + self._timeout
        out = bytearray()
        while len(out) < size:
            try:
                with self.lock:
                    now = self.sim_time_s()
                    out += self.sim.host_read(now, size - len(out))
            except self.link_gone as exc:
                raise self._gone(exc) from None
            if len(out) >= size:
                break
            remaining = math.inf if deadline is None else deadline - time.monotonic()
            if remaining <= 0:
                break
            wait = (self.sim.next_arrival_s() - now) / self._rate
            time.sleep(max(self.min_wait_s, min(remaining, wait, 0.02)))
        return bytes(out)

    def write(self, data):
        self._check()
        data = bytes(data)
        try:
            with self.lock:
                self.sim.host_write(data, self.sim_time_s())
        except self.link_gone as exc:
            raise self._gone(exc) from None
        return len(data)

    def reset_input_buffer(self):
        self._check()
        self._pump()
        self.sim.drop_pending_output()

    def reset_output_buffer(self):
        self._check()

    @property
    def out_waiting(self):
        return 0

    def flush(self):
        self._check()

    def cancel_read(self):
        pass

    def cancel_write(self):
        pass


class BusSimSerial(SimSerial):
    """A simulated servo bus behind a pyserial port (``feetechsim://``, ``dynamixelsim://``): the link runs at the
    rate the host sets on the port. A subclass gives ``scheme``, ``from_url`` (the URL's options) and
    ``sim_class`` (the bus simulator, built from them)."""

    link_gone = LinkGone
    min_wait_s = 0.00005
    runs_when_gone = False  # the adapter was pulled: nothing more reaches the servos, nothing to run
    sim_class: type

    def from_url(self, url):
        raise NotImplementedError

    def _open_sim(self):
        try:
            sim = self.sim_class(self.from_url(self.portstr))
        except BadSimURL:
            raise
        except ValueError as exc:  # the arm, its calibration or its truth file: bad input
            raise BadSimURL(f"{self.scheme}: {exc}") from exc
        sim.host_baud = self._baudrate
        return sim, sim.opts.rate

    def _reconfigure_port(self):
        if self.sim is not None:
            self.sim.host_baud = self._baudrate
