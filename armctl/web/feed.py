"""The page's state with a version number, and a wait for its next change (event streams sleep on it)."""

from __future__ import annotations

import threading


class ChangeFeed:
    """Mixin of the server's controllers: ``state()`` and ``wait_change()`` over ``_state``/``_version``.

    ``_lock`` is a Condition: whoever bumps ``_version`` under it calls ``_changed()``, which wakes every
    stream waiting in ``wait_change``. Streams then cost nothing while the arm rests (no polling)."""

    def _init_feed(self, state: dict) -> None:
        self._lock = threading.Condition()
        self._version = 0
        self._state = state

    def _changed(self) -> None:
        """Call with ``_lock`` held, after changing ``_state``."""
        self._version += 1
        self._lock.notify_all()

    def _update(self, **changes) -> None:
        """Change the state; a new version (and the streams woken) only if a value differs, so an arm at rest
        whose pose is read ten times a second sends nothing."""
        with self._lock:
            if any(k not in self._state or self._state[k] != v for k, v in changes.items()):
                self._state.update(changes)
                self._changed()

    def state(self) -> tuple[dict, int]:
        """(a copy of the page's state, its version)."""
        with self._lock:
            return dict(self._state), self._version

    def wait_change(self, version: int, timeout: float) -> tuple[dict, int]:
        """The state once its version is not ``version`` any more, or after ``timeout`` s, whichever is first."""
        with self._lock:
            self._lock.wait_for(lambda: self._version != version, timeout)
            return dict(self._state), self._version

    def wake_streams(self) -> None:
        """Wake every waiting stream (the server is closing)."""
        with self._lock:
            self._lock.notify_all()
