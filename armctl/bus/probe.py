"""Which serial ports have a board on them, and which firmware it runs: what ``armctl ports`` and
``--port auto`` use.

``candidates()`` lists the serial ports (pyserial's ``list_ports``) and marks those that look like a
board: a USB serial device (Arduino, CH340, FTDI, CP210x, Prolific, ... or a ttyACM/ttyUSB name).
``probe(port)`` identifies what is on one port in bounded time, sending nothing a board of the other
kind could act on:

1. The port's lock is taken first (``armctl.bus.portlock``): a port another armctl holds is reported as
   in use and never opened. Then it is opened exclusively at 115200 baud. **Opening a Uno's port
   resets it**, so every step below waits for a board that is starting up.
2. Listen (``BOOT_WAIT_S``): our firmware announces itself after a reset (``- ! BOOT ...``). Any line of
   our protocol means our firmware: it is asked for its handshake (``H``).
3. Else switch the open port to 57600 baud (no reset) and ask for Firmata's version (``VERSION_QUERY``,
   once a second) until ``FIRMATA_WAIT_S`` after opening: StandardFirmata blinks for about 2 s after a
   reset before it answers. Our firmware ignores these bytes (its lines carry a checksum); Firmata is never
   sent our text at the wrong speed, where a garbled byte could be a pin command.
4. Else back to 115200 baud and ask for our handshake (a board that did not reset, a simulator on a pty).
5. Else, with no board of ours or Firmata there, switch to 1 Mbaud and ping Feetech bus servo ids
   ``FEETECH_IDS`` (a bus servo adapter: the SO-100/SO-101's, ids 1-6 on the arm, 1 out of the box),
   each once with a short timeout: the ids that answer, and their models.
6. Else Dynamixel bus servos: a Protocol 2.0 broadcast ping at 57600 baud (the factory's), then 1 Mbaud.

A simulated servo bus (``feetechsim://``, ``dynamixelsim://``) has no Arduino to wait for: only 5 and 6 are asked.

A port with nothing on it takes about ``FIRMATA_WAIT_S + HELLO_WAIT_S`` and the pings (6 s);
``probe_all`` probes ports in parallel, so many ports take no longer than one.
"""

from __future__ import annotations

import re
import threading
import time
import urllib.parse
from dataclasses import asdict, dataclass

import serial

from armctl.bus import codec
from armctl.bus.armproto.backend import DEFAULT_BAUD
from armctl.bus.backend import open_port
from armctl.bus.firmata import FIRMATA_BAUD, VERSION_QUERY, FirmataListener
from armctl.bus.portlock import PortLock
from armctl.bus.simulators import is_bus_simulator, scheme_backend
from armctl.core import stopsignals
from armctl.errors import ArmctlError, LinkError, ProtocolError

BOOT_WAIT_S = 1.6  # a Uno's reset and bootloader (~1 s), then our firmware's start (~0.3 s)
FIRMATA_WAIT_S = 4.5  # from opening: bootloader, then StandardFirmata's ~2.1 s version blink
FIRMATA_QUERY_PERIOD_S = 1.0
HELLO_WAIT_S = 1.2
HELLO_PERIOD_S = 0.3
FEETECH_IDS = range(0, 21)  # bus servo ids pinged (an arm's are 1-6; a new servo is 1)
FEETECH_PING_S = 0.02  # per id, beyond the bytes' time: a USB adapter's latency (FTDI's timer: 16 ms)
DYNAMIXEL_BAUDS = (57_600, 1_000_000)  # the factory's, and LeRobot's Koch arms'
DYNAMIXEL_PING_S = 0.25  # a broadcast ping: every servo answers, each after its 0.5 ms return delay

# USB vendor ids of boards and of the USB serial chips on Arduino-compatible boards.
BOARD_VIDS = {
    0x2341: "Arduino",
    0x2A03: "Arduino (arduino.org)",
    0x1A86: "QinHeng CH340/CH341",
    0x0403: "FTDI",
    0x10C4: "Silicon Labs CP210x",
    0x067B: "Prolific PL2303",
    0x239A: "Adafruit",
    0x1B4F: "SparkFun",
    0x2E8A: "Raspberry Pi (RP2040)",
    0x303A: "Espressif",
}
BOARD_NAMES = ("ttyACM", "ttyUSB", "cu.usbmodem", "cu.usbserial", "cu.wchusbserial")


@dataclass
class PortInfo:
    """A serial port as listed: ``device`` path, ``usb_id`` ("2341:0043" or None), ``description``,
    ``serial_number``, and whether it ``looks_like_board``."""

    device: str
    usb_id: str | None = None
    description: str = ""
    serial_number: str | None = None
    looks_like_board: bool = True


@dataclass
class PortReport:
    """What ``probe`` found on a port.

    ``found``: ``"armctl"`` (our firmware or the simulator), ``"firmata"`` (StandardFirmata), ``"feetech"``
    (Feetech bus servos answering pings at 1 Mbaud, or the simulated bus), ``"in use"``
    (another armctl holds it), ``"busy"`` (another program has it open), ``"no answer"``, ``"unknown"``
    (bytes in no protocol we know), ``"not probed"`` (not a board) or ``"error"``. ``detail`` says it in
    words; ``backend`` is the ``--backend`` that drives it (None if not a board of ours);
    ``reset_seen``: the board restarted when the port opened (True), answered at once (False), or unknown
    (None); ``seconds``: how long the probe took."""

    port: str
    usb_id: str | None
    description: str
    found: str
    detail: str
    backend: str | None = None
    reset_seen: bool | None = None
    seconds: float = 0.0

    def to_dict(self) -> dict:
        """JSON-ready."""
        return asdict(self)


def is_i2c(device: str) -> bool:
    """True for an I2C bus (``/dev/i2c-N``, ``i2c://...``, ``pca9685sim://``): probed for PCA9685 boards."""
    return device.startswith("/dev/i2c-") or scheme_backend(device) == "pca9685"


def probe_i2c(info: PortInfo) -> PortReport:
    """What answers at 0x40..0x7F on an I2C bus; ``found`` "pca9685" (its port: the i2c:// URL that drives
    it) when one PCA9685 or more answer."""
    from armctl.bus.pca9685.backend import open_i2c, scan

    t0 = time.monotonic()
    device = info.device
    url = device if "://" in device else f"i2c://{device}"

    def report(found: str, detail: str, port: str = device, backend=None) -> PortReport:
        what = info.description or "I2C bus"
        return PortReport(port, None, what, found, detail, backend, None, time.monotonic() - t0)

    try:
        port = open_i2c(url)
    except ArmctlError as exc:
        return report("error", str(exc))
    try:
        found = scan(port.bus, port.osc_hz)
    finally:
        port.bus.close()
    if not found:
        return report("no answer", "nothing answers at 0x40..0x7F")
    detail = "; ".join(f"0x{a:02x} {what}" for a, what, _ in found)
    boards = [a for a, _, is_pca in found if is_pca]
    if not boards:
        return report("unknown", detail)
    base = url.split("?", 1)[0]
    query = urllib.parse.parse_qs(urllib.parse.urlsplit(url).query)
    query["address"] = [",".join(f"0x{a:02x}" for a in boards)]
    drive = base + "?" + "&".join(f"{k}={v[-1]}" for k, v in query.items())
    return report("pca9685", detail, drive, "pca9685")


def candidates() -> list[PortInfo]:
    """The serial ports pyserial lists, each marked whether it looks like a board, then the I2C buses
    (``/dev/i2c-*``), probed for PCA9685 boards."""
    from serial.tools import list_ports

    from armctl.bus.pca9685.i2c import list_buses

    out = []
    for p in sorted(list_ports.comports(), key=lambda p: p.device):
        usb = None if p.vid is None else f"{p.vid:04x}:{p.pid:04x}"
        looks = p.vid in BOARD_VIDS or any(n in p.device for n in BOARD_NAMES)
        desc = p.description if p.description and p.description != "n/a" else (BOARD_VIDS.get(p.vid) or "")
        out.append(PortInfo(p.device, usb, desc, p.serial_number, looks))
    out += [PortInfo(bus, None, "I2C bus", None, True) for bus in list_buses()]
    return out


class _Port:
    """The open port with what arrived on it, read in whole lines for our protocol."""

    def __init__(self, ser):
        self.ser = ser
        self.rx = bytearray()
        self.sample = bytearray()  # the first bytes received, for "unknown" answers

    def read(self, wait_s: float) -> bytes:
        deadline = time.monotonic() + wait_s
        while True:
            n = self.ser.in_waiting
            if n:
                data = self.ser.read(n)
                if len(self.sample) < 32:
                    self.sample += data[: 32 - len(self.sample)]
                return data
            if time.monotonic() >= deadline:
                return b""
            time.sleep(0.005)

    def lines(self, data: bytes) -> list:
        """Replies of our protocol in ``data`` (whole lines; the rest is kept for the next call)."""
        self.rx += data
        out = []
        while True:
            nl = self.rx.find(b"\n")
            if nl < 0:
                if len(self.rx) > 512:
                    del self.rx[:-64]
                return out
            line = bytes(self.rx[: nl + 1])
            del self.rx[: nl + 1]
            try:
                out.append(codec.parse_reply(line))
            except (ProtocolError, ValueError):
                continue


def _handshake(port: _Port, wait_s: float) -> codec.Hello | None:
    """Our handshake: ``H`` every ``HELLO_PERIOD_S`` until a reply or ``wait_s``."""
    deadline = time.monotonic() + wait_s
    port.ser.write(b"\n")  # ends whatever half line the board holds (e.g. Firmata queries)
    next_hello = 0.0
    while time.monotonic() < deadline:
        if time.monotonic() >= next_hello:
            port.ser.write(codec.hello(0))
            next_hello = time.monotonic() + HELLO_PERIOD_S
        for reply in port.lines(port.read(0.02)):
            if isinstance(reply, codec.Hello):
                return reply
    return None


def set_pulses(ser, hello: codec.Hello, widths_us: dict[int, float], *, timeout_s: float = 1.0) -> bool:
    """Right after ``identify`` found our firmware on open ``ser``: set channel -> width (us) in one frame (the
    first sequenced line of the session). True once the board acknowledged it."""
    ticks: list = [None] * hello.channels
    for ch, us in widths_us.items():
        if 0 <= ch < hello.channels:
            ticks[ch] = int(round(us * codec.TICKS_PER_US))
    ser.write(codec.move(1, 1, ticks, version=hello.protocol))
    port = _Port(ser)
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        for r in port.lines(port.read(0.05)):
            if isinstance(r, codec.Ack) and r.seq == 1:
                return True
            if isinstance(r, (codec.Nak, codec.Reject)):
                return False
    return False


def _ours(hello: codec.Hello) -> str:
    text = f"{hello.firmware} (armctl protocol {hello.protocol}, {hello.channels} channels)"
    if hello.protocol not in codec.VERSIONS:
        text += f": this armctl speaks protocol {' and '.join(map(str, codec.VERSIONS))}, update one of them"
    return text


def identify(ser, hello_out: list | None = None, *, board: bool = True) -> tuple[str, str, str | None, bool | None]:
    """Steps 2-6 of the module docstring on ``ser``, an open pyserial port at 115200 baud opened just now.
    Returns (found, detail, backend, reset_seen); our firmware's handshake is appended to ``hello_out``.
    ``board=False``: the port cannot be an Arduino (a simulated servo bus): only the bus servos are asked."""
    if board:
        found = _identify_board(ser, hello_out)
        if found is not None:
            return found
    # 5. Feetech bus servos, at 1 Mbaud
    servos = _feetech_servos(ser)
    if servos:
        return "feetech", servos, "feetech", None
    # 6. Dynamixel bus servos (Protocol 2.0), at the factory's 57600 baud and at 1 Mbaud
    servos = _dynamixel_servos(ser)
    if servos:
        return "dynamixel", servos, "dynamixel", None
    return "no answer", "no answer at 115200 (armctl), 57600 (Firmata, Dynamixel) nor 1 Mbaud (bus servos)", None, None


def _identify_board(ser, hello_out: list | None) -> tuple[str, str, str | None, bool | None] | None:
    """Steps 2-4: our firmware or Firmata on an Arduino (None: neither, and nothing else answered)."""
    t0 = time.monotonic()
    port = _Port(ser)
    # 2. our firmware announces itself after a reset
    while time.monotonic() - t0 < BOOT_WAIT_S:
        replies = port.lines(port.read(0.05))
        if replies:
            boot = any(isinstance(r, codec.Event) and r.name == "BOOT" for r in replies)
            hello = _handshake(port, HELLO_WAIT_S)
            if hello is not None:
                if hello_out is not None:
                    hello_out.append(hello)
                return "armctl", _ours(hello), "armctl", boot
            return "unknown", "lines in the armctl protocol, but no answer to the handshake", None, boot
    # 3. Firmata, at its own speed
    ser.baudrate = FIRMATA_BAUD
    ser.reset_input_buffer()
    listener = FirmataListener()
    first_query = time.monotonic()
    next_query = 0.0
    answered = None
    queries = 0
    while time.monotonic() - t0 < FIRMATA_WAIT_S:
        if time.monotonic() >= next_query and answered is None:
            # The newline is a stray data byte to Firmata (ignored); our firmware answers the line it ends.
            ser.write(VERSION_QUERY + b"\n")
            queries += 1
            next_query = time.monotonic() + FIRMATA_QUERY_PERIOD_S
        data = port.read(0.05)
        listener.feed(data)
        v = listener.version
        if v is not None:
            answered = answered or time.monotonic()
            if v.firmware is not None or time.monotonic() - answered > 0.3:  # the name follows the version
                while more := port.read(0.1):  # an announcement comes with the answers it held back
                    listener.feed(more)
                # More reports than queries: one came unasked, as StandardFirmata does when it starts.
                reset = True if listener.reports > queries else (False if answered - first_query < 0.3 else None)
                return "firmata", v.describe(), "firmata", reset
        elif port.lines(data):  # a pty, where speeds mean nothing: our protocol answering
            break
    # 4. our handshake, for a board that did not reset
    ser.baudrate = DEFAULT_BAUD
    hello = _handshake(port, HELLO_WAIT_S)
    if hello is not None:
        return "armctl", _ours(hello), "armctl", False
    if port.sample:
        return "unknown", f"answers, but in no protocol armctl knows (first bytes {bytes(port.sample)!r})", None, None
    return None


def _feetech_servos(ser) -> str | None:
    """The Feetech servos answering a ping on ``ser`` (switched to 1 Mbaud), in words; None if none does."""
    from armctl.bus.feetech.client import MODEL_NAMES, FeetechBus, ServoError

    bus = FeetechBus("probe", timeout_s=FEETECH_PING_S, retries=0).adopt(ser)
    found = bus.scan(FEETECH_IDS, timeout_s=FEETECH_PING_S)
    if not found:
        return None
    models = {}
    for i in found:
        try:
            models[i] = bus.read(i, "model_number")
        except ServoError:
            models[i] = None
    names = sorted({MODEL_NAMES.get(m, f"model {m}").upper() for m in models.values() if m is not None})
    ids = ", ".join(map(str, found))
    return f"Feetech bus servos{' ' + ', '.join(names) if names else ''}: id{'s' if len(found) > 1 else ''} {ids}"


def _dynamixel_servos(ser) -> str | None:
    """The Dynamixel servos answering a broadcast ping (at ``DYNAMIXEL_BAUDS``), in words; None if none does."""
    from armctl.bus.dynamixel.protocol import BROADCAST_ID, MODEL_NUMBERS, Packet, ping_packet, take_packet

    for baud in DYNAMIXEL_BAUDS:
        ser.baudrate = baud
        ser.reset_input_buffer()
        ser.write(ping_packet(BROADCAST_ID))
        buf, found, deadline = bytearray(), {}, time.monotonic() + DYNAMIXEL_PING_S
        while time.monotonic() < deadline:
            buf += ser.read(ser.in_waiting or 1)
            while (item := take_packet(buf)) is not None:
                if isinstance(item, Packet) and item.status and len(item.params) >= 2:
                    found[item.id] = int.from_bytes(item.params[:2], "little")
        if found:
            known = {n: m.name.upper() for n, m in MODEL_NUMBERS.items()}
            names = sorted({known.get(n, f"model {n}") for n in found.values()})
            ids = ", ".join(map(str, sorted(found)))
            return f"Dynamixel bus servos {', '.join(names)}: id{'s' if len(found) > 1 else ''} {ids} at {baud} baud"
    return None


def probe(info: PortInfo | str, *, on_reset=None) -> PortReport:
    """Identify what is on one port (see the module docstring). Never raises for the port's sake: what
    went wrong is in the report. ``on_reset(device, ser, hello)``: called, the port still open, for our
    firmware when it reset on open (its servos lost their pulses); the words it returns join the detail."""
    if isinstance(info, str):
        info = PortInfo(info)
    if is_i2c(info.device):
        return probe_i2c(info)
    t0 = time.monotonic()

    def report(found: str, detail: str, backend=None, reset=None) -> PortReport:
        return PortReport(
            info.device, info.usb_id, info.description, found, detail, backend, reset, time.monotonic() - t0
        )

    lock = PortLock(info.device)
    try:
        lock.acquire()
    except LinkError as exc:
        holder = re.search(r"in use by (.*?)(: one program|$)", str(exc))
        return report("in use", f"in use by {holder.group(1)}" if holder else str(exc))
    except ArmctlError as exc:
        return report("error", str(exc))
    try:
        try:
            ser = open_port(info.device, baudrate=DEFAULT_BAUD)
        except LinkError as exc:
            text = str(exc)
            return report("busy" if "another program" in text else "error", text)
        try:
            hello: list = []
            found, detail, backend, reset = identify(ser, hello, board=not is_bus_simulator(info.device))
            if on_reset is not None and found == "armctl" and reset and hello:
                note = on_reset(info.device, ser, hello[0])
                if note:
                    detail += f"; {note}"
        except (serial.SerialException, OSError) as exc:
            return report("error", f"the port failed while probing: {exc}")
        finally:
            try:
                ser.close()
            except (serial.SerialException, OSError):
                pass
        return report(found, detail, backend, reset)
    finally:
        lock.release()


def probe_all(ports: list[PortInfo], *, on_reset=None) -> list[PortReport]:
    """``probe`` every port that looks like a board (in parallel); the others are reported as not probed."""
    results: dict[int, PortReport] = {}

    def run(i: int, info: PortInfo) -> None:
        results[i] = probe(info, on_reset=on_reset)

    threads = []
    for i, info in enumerate(ports):
        if not info.looks_like_board:
            results[i] = PortReport(
                info.device,
                info.usb_id,
                info.description,
                "not probed",
                "not a USB serial board; name it to probe it (armctl ports PORT)",
            )
            continue
        t = threading.Thread(target=run, args=(i, info), name=f"armctl-probe-{info.device}", daemon=True)
        t.start()
        threads.append(t)
    for t in threads:
        stopsignals.join(t)  # Ctrl-C stops a long probe on Windows too
    return [results[i] for i in range(len(ports))]
