"""Run the simulated arm on a pseudo-terminal, so any serial program can talk to it.

    python -m armctl.bus.sim_pty [ARMSIM_URL]      e.g. "armsim://seed-3link?baud=115200"

Prints the pty path (e.g. /dev/pts/5) on stdout, then serves until killed
(Ctrl-C). The link model emulates the baud rate's byte time in both
directions (``baud=`` option, default 115200), whatever speed the pty runs.
"""

from __future__ import annotations

import os
import select
import sys
import time
import tty

from .protocol_armsim import parse_url
from .sim import SimArm


class PtySim:
    """A SimArm served on a pty; ``path`` is what clients open."""

    def __init__(self, url: str = "armsim://"):
        self.sim = SimArm(parse_url(url))
        self.rate = self.sim.opts.rate
        self.master, self.slave = os.openpty()
        tty.setraw(self.slave)
        self.path = os.ttyname(self.slave)
        self.t0 = time.monotonic()

    def now_s(self) -> float:
        return (time.monotonic() - self.t0) * self.rate

    def serve(self, *, until: float | None = None) -> None:
        """Move bytes both ways until ``until`` (monotonic time) or forever."""
        while until is None or time.monotonic() < until:
            now = self.now_s()
            wait = (self.sim.next_arrival_s() - now) / self.rate
            wait = max(0.0, min(wait, 0.01))
            r, _, _ = select.select([self.master], [], [], wait)
            if r:
                try:
                    data = os.read(self.master, 4096)
                except OSError:
                    data = b""
                if data:
                    self.sim.host_write(data, self.now_s())
            out = self.sim.host_read(self.now_s())
            if out:
                os.write(self.master, out)

    def close(self) -> None:
        for fd in (self.master, self.slave):
            try:
                os.close(fd)
            except OSError:
                pass


def main(argv=None) -> int:
    args = sys.argv[1:] if argv is None else argv
    sim = PtySim(args[0] if args else "armsim://")
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
