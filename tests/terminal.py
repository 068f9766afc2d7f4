"""A child process on a pseudo-terminal that a test reads and types into (POSIX: os.openpty)."""

from __future__ import annotations

import os
import re
import select
import signal
import subprocess
import time

CLEAR = b"\x1b[H\x1b[2J"


class Term:
    """A child process on a pseudo-terminal; the test reads its screen and types keys."""

    def __init__(self, argv, *, cwd, env):
        self.master, slave = os.openpty()
        self.proc = subprocess.Popen(
            argv, stdin=slave, stdout=slave, stderr=slave, cwd=cwd, env=env, start_new_session=True
        )
        os.close(slave)
        self.out = b""

    def _pump(self, wait_s: float) -> None:
        if select.select([self.master], [], [], wait_s)[0]:
            try:
                self.out += os.read(self.master, 65536)
            except OSError:  # EIO: the child closed the terminal
                time.sleep(wait_s)

    def screen(self) -> str:
        return self.out.rsplit(CLEAR, 1)[-1].decode("utf-8", "replace")

    def wait(self, pattern: str, timeout_s: float = 30.0) -> re.Match:
        deadline = time.monotonic() + timeout_s
        while True:
            m = re.search(pattern, self.screen())
            if m:
                return m
            if time.monotonic() > deadline:
                raise AssertionError(f"waited for {pattern!r}; screen:\n{self.screen()[-2000:]}")
            if self.proc.poll() is not None:
                self._pump(0.05)
                m = re.search(pattern, self.screen())
                if m:
                    return m
                raise AssertionError(f"exited {self.proc.returncode} waiting for {pattern!r}:\n{self.screen()[-2000:]}")
            self._pump(0.05)

    def send(self, keys: str | bytes) -> None:
        os.write(self.master, keys.encode() if isinstance(keys, str) else keys)

    def finish(self, timeout_s: float = 20.0) -> int:
        deadline = time.monotonic() + timeout_s
        while self.proc.poll() is None and time.monotonic() < deadline:
            self._pump(0.05)
        self._pump(0.05)
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            raise AssertionError("the calibration did not exit")
        os.close(self.master)
        return self.proc.returncode
