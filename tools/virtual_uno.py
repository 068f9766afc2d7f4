"""Start, talk to and stop the virtual Uno (tools/build/virtual_uno) from Python.

Used by the hardware-in-the-loop tests and bench/hil.py::

    from tools.virtual_uno import VirtualUno, build_tools, fetch_firmata  # tests; bench: tools/ on sys.path
    with VirtualUno(hex_path, reset_on_open=True) as uno:
        ser = serial.Serial(uno.pty, 115200)
        ...
        pulses = uno.pulses(pin=9)      # list of Pulse(t_us, pin, width_us, mono_s)

Times in the pulse log are simulated microseconds since the simulator started
(``t_us``) and the host's ``time.monotonic()`` when the record was written
(``mono_s``); widths are microseconds at 1/16 us resolution.
"""

from __future__ import annotations

import os
import select
import shutil
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

TOOLS = Path(__file__).resolve().parent
ROOT = TOOLS.parent
BINARY = TOOLS / "build" / "virtual_uno"
FIRMWARE_HEX = ROOT / "firmware" / "build" / "armctl.hex"
#: Our firmware's PCA9685 build (``make -C firmware pca9685``): channels 0-7 on a PCA9685 on TWI.
FIRMWARE_PCA9685_HEX = ROOT / "firmware" / "build" / "armctl-pca9685.hex"
#: The pulse-log "pin" of each output of a virtual PCA9685 (``VirtualUno(pca9685=0x40)``): 100 + output.
PCA9685_PINS = tuple(100 + n for n in range(16))
#: The Arduino pin of each channel of our firmware (firmware/main.c): 0-3 on D9-D12, 4-6 on D5-D7, 7 on D8.
ARMCTL_PINS = (9, 10, 11, 12, 5, 6, 7, 8)


@dataclass(frozen=True)
class Pulse:
    """One high pulse: rising edge at ``t_us`` (simulated), ``width_us`` long, on Arduino pin ``pin``."""

    t_us: float
    pin: int
    width_us: float
    mono_s: float


@dataclass(frozen=True)
class Event:
    """A simulator event: ``reset <reason>``, ``open``, ``close``, ``slip <ms>``, ``halt``, ``exit``."""

    t_us: float
    mono_s: float
    name: str
    detail: str


def _run_make(directory: Path) -> tuple[bool, str]:
    if shutil.which("make") is None:
        return False, "make not found"
    proc = subprocess.run(["make", "-s", "-C", str(directory)], capture_output=True, text=True)
    return proc.returncode == 0, proc.stdout + proc.stderr


def build_tools() -> tuple[bool, str]:
    """Build the virtual Uno; return (ok, reason-if-not)."""
    if not Path("/usr/include/simavr/sim_avr.h").exists():
        return False, "libsimavr-dev not installed (/usr/include/simavr/sim_avr.h missing)"
    ok, out = _run_make(TOOLS)
    return (ok and BINARY.exists()), out


def build_firmware() -> tuple[bool, str]:
    """Build firmware/build/armctl.hex (and armctl-pca9685.hex); return (ok, reason-if-not)."""
    if shutil.which("avr-gcc") is None:
        return False, "avr-gcc not installed (apt-get install gcc-avr avr-libc binutils-avr)"
    ok, out = _run_make(ROOT / "firmware")
    return (ok and FIRMWARE_HEX.exists()), out


def fetch_firmata() -> tuple[Path | None, str]:
    """Return the cached StandardFirmata .hex for the Uno, fetching it with npm if needed."""
    cache = Path(os.environ.get("ARMCTL_FIRMATA_CACHE", ROOT / ".cache" / "firmata"))
    hex_path = cache / "StandardFirmata.cpp.hex"
    if hex_path.is_file() and hex_path.stat().st_size > 0:
        return hex_path, ""
    proc = subprocess.run(
        ["sh", str(TOOLS / "fetch_firmata.sh"), str(cache)], capture_output=True, text=True, timeout=300
    )
    if proc.returncode == 0 and hex_path.is_file():
        return hex_path, ""
    return None, f"could not fetch StandardFirmata: {proc.stderr.strip() or proc.stdout.strip()}"


class VirtualUno:
    """A virtual Uno subprocess running ``hex_path`` with UART0 on a pseudo-terminal.

    ``free_run`` runs as fast as the host allows (no wall-time pacing); ``speed``
    scales the pace otherwise. ``pca9685``: a virtual PCA9685 at that I2C address on the TWI bus, its
    outputs logged as pins 100-115 (``PCA9685_PINS``); ``pca9685_held`` (PRE_SCALE, [counts of outputs 0..])
    starts it awake, as another program left it. ``reset_on_open`` resets the MCU whenever a
    client opens the port, like a real Uno's DTR auto-reset.
    """

    def __init__(
        self,
        hex_path: str | os.PathLike,
        *,
        free_run: bool = False,
        speed: float = 1.0,
        reset_on_open: bool = False,
        max_pulse_us: float = 4000.0,
        uart_log: bool = False,
        workdir: str | os.PathLike | None = None,
        pca9685: int | None = None,
        pca9685_osc_hz: float = 25e6,
        pca9685_held: tuple[int, list[int]] | None = None,
    ) -> None:
        self.hex_path = Path(hex_path)
        self.free_run = free_run
        self.speed = speed
        self.reset_on_open = reset_on_open
        self.max_pulse_us = max_pulse_us
        self.pca9685, self.pca9685_osc_hz = pca9685, pca9685_osc_hz
        self.pca9685_held = pca9685_held
        self._own_dir = workdir is None
        self.workdir = Path(workdir or tempfile.mkdtemp(prefix="virtual_uno-"))
        self.pulse_log = self.workdir / "pulses.log"
        self.uart_log = self.workdir / "uart.log" if uart_log else None
        self.stderr_log = self.workdir / "stderr.log"
        self.pty: str = ""
        self.proc: subprocess.Popen | None = None

    def start(self, timeout_s: float = 10.0) -> VirtualUno:
        """Start the simulator; return once the pty exists (``self.pty``)."""
        cmd = [str(BINARY), str(self.hex_path), "--pulse-log", str(self.pulse_log)]
        cmd += ["--max-pulse-us", str(self.max_pulse_us)]
        if self.free_run:
            cmd.append("--free-run")
        else:
            cmd += ["--speed", str(self.speed)]
        if self.reset_on_open:
            cmd.append("--reset-on-open")
        if self.uart_log:
            cmd += ["--uart-log", str(self.uart_log)]
        if self.pca9685 is not None:
            cmd += ["--pca9685", hex(self.pca9685), "--pca9685-osc", repr(self.pca9685_osc_hz)]
            if self.pca9685_held is not None:
                pre, counts = self.pca9685_held
                cmd += ["--pca9685-held", f"{pre}:" + ",".join(str(c) for c in counts)]
        self._stderr = open(self.stderr_log, "wb")
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=self._stderr, text=True)
        # the first line is "PTY <path>"; wait for it no longer than timeout_s (a simulator that hangs before it
        # would otherwise hang the caller)
        ready, _, _ = select.select([self.proc.stdout], [], [], timeout_s)
        line = self.proc.stdout.readline() if ready else ""
        if not line.startswith("PTY "):
            self.stop()
            raise RuntimeError(f"virtual_uno did not start: {line!r} {self.stderr_log.read_text()}")
        self.pty = line.split(None, 1)[1].strip()
        return self

    def reset(self) -> None:
        """Reset the MCU now (like pressing the reset button)."""
        assert self.proc is not None
        self.proc.send_signal(signal.SIGUSR1)

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def stop(self) -> int | None:
        """Stop the simulator (SIGTERM, then SIGKILL); return its exit code."""
        rc = None
        if self.proc is not None:
            if self.proc.poll() is None:
                self.proc.terminate()
                try:
                    self.proc.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    self.proc.kill()
                    self.proc.wait()
            rc = self.proc.returncode
            if self.proc.stdout:
                self.proc.stdout.close()
            self._stderr.close()
            self.proc = None
        return rc

    def cleanup(self) -> None:
        if self._own_dir:
            shutil.rmtree(self.workdir, ignore_errors=True)

    def __enter__(self) -> VirtualUno:
        return self.start() if self.proc is None else self

    def __exit__(self, *exc) -> None:
        self.stop()
        if exc[0] is None:
            self.cleanup()

    # --- the pulse log ---
    def records(self) -> tuple[list[Pulse], list[Event]]:
        """Parse the pulse log written so far."""
        pulses: list[Pulse] = []
        events: list[Event] = []
        try:
            text = self.pulse_log.read_text()
        except FileNotFoundError:
            return pulses, events
        lines = text.split("\n")[:-1]  # drop a half-written last line
        for line in lines:
            f = line.split()
            if not f or f[0].startswith("#"):
                continue
            if f[0] == "P" and len(f) == 5:
                pulses.append(Pulse(float(f[1]), int(f[2]), float(f[3]), float(f[4])))
            elif f[0] == "E" and len(f) >= 4:
                events.append(Event(float(f[1]), float(f[2]), f[3], " ".join(f[4:])))
        return pulses, events

    def pulses(self, pin: int | None = None) -> list[Pulse]:
        """All logged pulses (or those on Arduino pin ``pin``), in time order."""
        ps = self.records()[0]
        return [p for p in ps if pin is None or p.pin == pin]

    def events(self, name: str | None = None) -> list[Event]:
        evs = self.records()[1]
        return [e for e in evs if name is None or e.name == name]

    def wait_for(self, predicate, timeout_s: float, poll_s: float = 0.02):
        """Poll ``predicate(self)`` until it returns something truthy; return that or None on timeout."""
        deadline = time.monotonic() + timeout_s
        while True:
            got = predicate(self)
            if got or time.monotonic() > deadline:
                return got
            time.sleep(poll_s)
