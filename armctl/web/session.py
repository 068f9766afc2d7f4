"""Who controls the arm: one page at a time, kept alive by its event stream and heartbeats.

A page claims control (``claim``) and gets a session id; it must then hold an
event stream open and send a heartbeat every 100 ms (``HEARTBEAT_MS`` in static/app.js). When the
stream closes (page closed, tab crashed, network gone) the server stops the
arm at once and frees control; when heartbeats stop for ``timeout_s`` while
the arm moves (a link that died silently), ``silent`` gives the reason to stop.
"""

from __future__ import annotations

import secrets
import threading
import time

HEARTBEAT_TIMEOUT_S = 0.3
#: A claim whose page never opens its event stream expires after this long.
CLAIM_GRACE_S = 3.0


class Control:
    """The single-controller lease. Thread-safe; times are ``time.monotonic()`` seconds."""

    def __init__(self, *, timeout_s: float = HEARTBEAT_TIMEOUT_S):
        self.timeout_s = timeout_s
        self._lock = threading.Lock()
        self._holder: str | None = None
        self._streams = 0
        self._since = 0.0
        self._beat = 0.0

    def _alive(self, now: float) -> bool:
        if self._holder is None:
            return False
        return self._streams > 0 or now - self._since < CLAIM_GRACE_S

    def claim(self) -> str | None:
        """A new session id if nobody holds control (or the holder's page is gone), else None."""
        now = time.monotonic()
        with self._lock:
            if self._alive(now):
                return None
            self._holder = secrets.token_urlsafe(12)
            self._streams, self._since, self._beat = 0, now, now
            return self._holder

    def holds(self, session: str | None) -> bool:
        """True if ``session`` is the controlling one (constant-time compare)."""
        with self._lock:
            return self._holder is not None and session is not None and secrets.compare_digest(session, self._holder)

    def held(self) -> bool:
        """True if some live page holds control."""
        with self._lock:
            return self._alive(time.monotonic())

    def beat(self, session: str) -> bool:
        """Record a heartbeat (any request) from ``session``; False if it does not hold control."""
        if not self.holds(session):
            return False
        with self._lock:
            self._beat = time.monotonic()
        return True

    def stream_opened(self, session: str) -> bool:
        """The controlling page opened its event stream; False if ``session`` does not hold control."""
        if not self.holds(session):
            return False
        with self._lock:
            self._streams += 1
            self._beat = time.monotonic()
        return True

    def stream_closed(self, session: str) -> bool:
        """The controlling page's stream ended: control is freed. True if it was the controller's last stream."""
        with self._lock:
            if self._holder is None or session != self._holder:
                return False
            self._streams -= 1
            if self._streams > 0:
                return False
            self._holder = None
            return True

    def silent(self) -> str | None:
        """Why the arm must stop because the controlling page went quiet, or None (called while moving)."""
        now = time.monotonic()
        with self._lock:
            if self._holder is None:
                return "no page controls the arm"
            quiet = now - self._beat
            if quiet > self.timeout_s:
                return f"no heartbeat from the page for {quiet * 1000:.0f} ms"
        return None
