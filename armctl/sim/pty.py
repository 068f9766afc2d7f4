"""Run the simulated arm (or a simulated Feetech servo bus) on a pseudo-terminal, so any serial program can talk to it.

    python -m armctl.bus.sim_pty [ARMSIM_URL]      e.g. "armsim://seed-3link?baud=115200"
    python -m armctl.bus.sim_pty FEETECHSIM_URL    e.g. "feetechsim://?ids=1-6"
    python -m armctl.bus.sim_pty DYNAMIXELSIM_URL  e.g. "dynamixelsim://?ids=1-6&model=xl430"

POSIX only (Linux, macOS): Windows has no pseudo-terminals, and says so (exit 2).
Prints the pty path (e.g. /dev/pts/5) on stdout, then serves until killed
(Ctrl-C). The link model emulates the baud rate's byte time in both
directions (``baud=`` option, default 115200), whatever speed the pty runs.
The Feetech and Dynamixel buses run at whatever baud rate the client sets on the pty (any rate, the
non-standard ones pyserial sets with BOTHER too: 14400, 128000, 250000; servos at
another rate do not answer); ``disconnect=N`` closes the pty. A bad URL or argument: one line on stderr,
exit 2.
"""

from __future__ import annotations

import os
import select
import struct
import sys
import time
import urllib.parse

try:
    import fcntl
    import termios
    import tty
except ImportError:  # Windows: no pseudo-terminals
    if __name__ == "__main__":
        print(
            "python -m armctl.bus.sim_pty: pseudo-terminals are POSIX (Linux, macOS); on Windows give armctl the "
            "simulator itself (--port armsim://..., feetechsim://...)",
            file=sys.stderr,
        )
        sys.exit(2)
    raise

from armctl.sim.armsim import SimArm
from armctl.sim.feetechsim import FeetechSim
from armctl.sim.link import LinkGone
from armctl.sim.protocol_armsim import parse_url
from armctl.sim.servobus import ServoBusSim

# termios speed constants -> baud, for where TCGETS2 is missing (a rate set with BOTHER keeps the last known one)
_PTY_BAUDS = {
    getattr(termios, f"B{n}"): n
    for n in (4800, 9600, 19200, 38400, 57600, 115200, 230400, 460800, 500_000, 576000, 921600, 1_000_000, 2_000_000)
    if hasattr(termios, f"B{n}")
}
# Linux's TCGETS2 (asm-generic: x86, arm): struct termios2 holds the speeds as numbers, BOTHER rates included
# (pyserial sets 14400, 128000, 250000 that way); both speeds are at byte 36 of its 44 bytes
_TCGETS2 = 0x802C542A


def pty_baud(fd: int, last: int) -> int:
    """The baud rate the client last set on the pty ``fd`` (``last`` if it cannot be told)."""
    try:
        speed = struct.unpack_from("II", fcntl.ioctl(fd, _TCGETS2, bytes(44)), 36)[1]
        if speed > 0:
            return speed
    except (OSError, struct.error):
        pass
    return _PTY_BAUDS.get(termios.tcgetattr(fd)[5], last)


def _make_sim(url: str):
    if urllib.parse.urlsplit(url).scheme == "feetechsim":
        from armctl.sim.protocol_feetechsim import parse_url as parse_feetech_url

        return FeetechSim(parse_feetech_url(url))
    if urllib.parse.urlsplit(url).scheme == "dynamixelsim":
        from armctl.sim.dynamixelsim import DynamixelSim
        from armctl.sim.protocol_dynamixelsim import parse_url as parse_dynamixel_url

        return DynamixelSim(parse_dynamixel_url(url))
    return SimArm(parse_url(url))


class PtySim:
    """A SimArm (or FeetechSim) served on a pty; ``path`` is what clients open."""

    def __init__(self, url: str = "armsim://"):
        self.sim = _make_sim(url)
        self.rate = self.sim.opts.rate
        self.master, self.slave = os.openpty()
        tty.setraw(self.slave)
        self.path = os.ttyname(self.slave)
        self.t0 = time.monotonic()
        self.closed = False

    def now_s(self) -> float:
        return (time.monotonic() - self.t0) * self.rate

    def serve(self, *, until: float | None = None) -> None:
        """Move bytes both ways until ``until`` (monotonic time), forever, or until the link is pulled."""
        while not self.closed and (until is None or time.monotonic() < until):
            now = self.now_s()
            wait = (self.sim.next_arrival_s() - now) / self.rate
            wait = max(0.0, min(wait, 0.01))
            r, _, _ = select.select([self.master], [], [], wait)
            try:
                if r:
                    try:
                        data = os.read(self.master, 4096)
                    except OSError:
                        data = b""
                    if data and isinstance(self.sim, ServoBusSim):  # the rate the client set
                        self.sim.host_baud = pty_baud(self.slave, self.sim.host_baud)
                    if data:
                        self.sim.host_write(data, self.now_s())
                out = self.sim.host_read(self.now_s())
            except LinkGone:  # disconnect=N: the port goes away
                self.close()
                return
            if out:
                os.write(self.master, out)

    def close(self) -> None:
        self.closed = True
        for fd in (self.master, self.slave):
            try:
                os.close(fd)
            except OSError:
                pass


def main(argv=None) -> int:
    """Serve the URL given on a pty until killed. Exit 2 with one line for bad arguments or a bad URL."""
    import argparse

    from armctl.sim.simurl import BadSimURL

    parser = argparse.ArgumentParser(
        prog="python -m armctl.bus.sim_pty",
        description="Serve the simulated arm (armsim://) or a simulated Feetech servo bus (feetechsim://) on a "
        "pseudo-terminal; prints the pty path, then serves until killed (Ctrl-C).",
        epilog="examples: python -m armctl.bus.sim_pty 'armsim://seed-3link?baud=115200'   "
        "python -m armctl.bus.sim_pty 'feetechsim://?ids=1-6'",
    )
    parser.add_argument("url", nargs="?", default="armsim://", help="the simulator URL (default armsim://)")
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    scheme = urllib.parse.urlsplit(args.url).scheme
    if scheme not in ("armsim", "feetechsim", "dynamixelsim"):
        parser.exit(
            2,
            f"{parser.prog}: error: {args.url!r} is not a simulator URL: armsim://, feetechsim:// or dynamixelsim://\n",
        )
    try:
        sim = PtySim(args.url)
    except (BadSimURL, ValueError) as exc:
        parser.exit(2, f"{parser.prog}: error: {exc}\n")
    print(sim.path, flush=True)
    try:
        sim.serve()
    except KeyboardInterrupt:
        pass
    finally:
        sim.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
