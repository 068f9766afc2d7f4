"""I2C buses for the boards that hang off one (the PCA9685): Linux's i2c-dev interface through smbus2,
and the simulated bus (``armctl.sim.pca9685_sim``), behind one small interface. The URLs that name them
(opened by ``armctl.bus.pca9685.backend.open_i2c``)::

    i2c:///dev/i2c-1?address=0x40[,0x41..]&osc_hz=25000000     a bus device of this machine
    pca9685sim://?address=0x40&...                              the simulated chip (armctl.sim.pca9685_sim)

``address``: the chips' 7-bit addresses (0x40..0x7F; a board with no address pads bridged is 0x40), several
for more than 16 servos (channel n is channel n % 16 of the (n // 16)-th address). ``osc_hz``: the chip's
oscillator as trimmed for this board (nominal 25 MHz; boards run 23-27 MHz: measure one pulse and set it).

Only plain I2C transactions are used (``write``, ``write_read`` with a repeated start, ``probe`` by a
one-byte read as ``i2cdetect -r`` does): no SMBus quick-writes that some devices take as commands.
"""

from __future__ import annotations

import errno
import glob
import os
from abc import ABC, abstractmethod

from armctl.errors import LinkError

ADDRESS_RANGE = (0x03, 0x77)  # 7-bit addresses a device may have (0x00-0x02, 0x78-0x7F are reserved)
I2C_SLAVE = 0x0703  # i2c-dev ioctl: the address of later reads/writes; EBUSY when a kernel driver owns it


class I2CNack(LinkError):
    """Nothing acknowledged at an address (or a register): no device, or a device that refused."""

    def __init__(self, address: int, why: str):
        super().__init__(f"I2C address 0x{address:02x}: {why}")
        self.address = address


def parse_addresses(text: str) -> list[int]:
    """``0x40`` or ``0x40,0x41`` (hex or decimal) -> [0x40, 0x41]; ValueError if one is no 7-bit address or
    one repeats."""
    out = []
    for part in text.split(","):
        part = part.strip()
        if not part:
            continue
        a = int(part, 0)
        if not 0 <= a <= 0x7F:
            raise ValueError(f"{part} is no 7-bit I2C address")
        if a in out:
            raise ValueError(f"address 0x{a:02x} given twice")
        out.append(a)
    if not out:
        raise ValueError("no address")
    return out


class I2CBus(ABC):
    """A bus we are master of: plain I2C transactions to 7-bit addresses."""

    path: str = ""

    @abstractmethod
    def write(self, address: int, data: bytes) -> None:
        """One write transaction: START, address+W, ``data``, STOP. I2CNack if nobody acknowledges."""

    @abstractmethod
    def write_read(self, address: int, data: bytes, n: int) -> bytes:
        """Write ``data`` then read ``n`` bytes (repeated start, one STOP)."""

    @abstractmethod
    def probe(self, address: int) -> bool:
        """True if a device acknowledges ``address`` (a one-byte read, which changes nothing)."""

    def busy(self, address: int) -> bool:
        """True if a kernel driver owns ``address`` (``i2cdetect`` shows ``UU``): not ours to talk to."""
        return False

    def close(self) -> None:  # noqa: B027 - nothing to release by default
        """Release the bus (safe to call twice)."""


class LinuxI2C(I2CBus):
    """A Linux i2c-dev bus (``/dev/i2c-N``) through smbus2's I2C_RDWR (plain I2C, no 32-byte SMBus limit)."""

    def __init__(self, device: str):
        self.path = device
        if not os.path.exists(device):  # first: I2C not enabled is the likelier news (and Windows has no such bus)
            raise LinkError(self._no_bus(device))
        try:
            import smbus2
        except ImportError:
            raise LinkError(
                f"{device}: the pca9685 backend needs smbus2 on this machine: pip install 'armctl[pi]'"
            ) from None
        self._smbus2 = smbus2
        try:
            self.bus = smbus2.SMBus(device)
        except FileNotFoundError:
            raise LinkError(self._no_bus(device)) from None
        except PermissionError:
            raise LinkError(
                f"permission denied opening {device}: add yourself to group i2c (sudo adduser $USER i2c), then log "
                "in again"
            ) from None
        except OSError as exc:
            raise LinkError(f"cannot open {device}: {exc.strerror or exc}") from None

    @staticmethod
    def _no_bus(device: str) -> str:
        found = ", ".join(list_buses()) or "none"
        return (
            f"no I2C bus {device} (buses here: {found}); on a Raspberry Pi enable I2C (raspi-config, Interface "
            "Options, I2C; or dtparam=i2c_arm=on in config.txt) and reboot"
        )

    def _rdwr(self, address: int, *msgs) -> None:
        try:
            self.bus.i2c_rdwr(*msgs)
        except OSError as exc:
            if exc.errno in (errno.ENXIO, errno.EREMOTEIO, errno.EIO):
                raise I2CNack(address, f"no acknowledge on {self.path}") from None
            raise LinkError(f"I2C transfer to 0x{address:02x} on {self.path} failed: {exc.strerror or exc}") from None

    def write(self, address: int, data: bytes) -> None:
        self._rdwr(address, self._smbus2.i2c_msg.write(address, bytes(data)))

    def write_read(self, address: int, data: bytes, n: int) -> bytes:
        w = self._smbus2.i2c_msg.write(address, bytes(data))
        r = self._smbus2.i2c_msg.read(address, n)
        self._rdwr(address, w, r)
        return bytes(r)

    def busy(self, address: int) -> bool:
        """I2C_RDWR reaches an address whatever owns it; I2C_SLAVE (as i2cdetect uses) says EBUSY when a kernel
        driver does (a device-tree overlay's RTC, or the pwm-pca9685 driver on the very board)."""
        import fcntl

        try:
            fcntl.ioctl(self.bus.fd, I2C_SLAVE, address)
        except OSError as exc:
            return exc.errno == errno.EBUSY
        return False

    def probe(self, address: int) -> bool:
        try:
            self._rdwr(address, self._smbus2.i2c_msg.read(address, 1))
        except I2CNack:
            return False
        return True

    def close(self) -> None:
        bus, self.bus = getattr(self, "bus", None), None
        if bus is not None:
            bus.close()


def list_buses() -> list[str]:
    """The i2c-dev bus devices of this machine (``/dev/i2c-*``), in number order."""

    def num(p: str) -> int:
        tail = p.rsplit("-", 1)[-1]
        return int(tail) if tail.isdigit() else 1 << 30

    return sorted(glob.glob("/dev/i2c-*"), key=num)
