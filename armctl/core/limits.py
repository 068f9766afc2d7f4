"""Size limits on everything that comes in from a file or a network, one table.

A hostile or broken input (a YAML alias bomb, JSON nested thousands deep, a program that repeats a move a
billion times, a drawing of a million segments) is refused while it is read, in well under a second and with
little memory, instead of being expanded first and counted after. Each limit has a name; a user whose real
program needs more raises it for one command with ``armctl --limit NAME=VALUE`` (repeatable), for a shell
with ``ARMCTL_LIMITS="NAME=VALUE,NAME=VALUE"``, or from Python with ``armctl.core.limits.set_limit(NAME, VALUE)``.

The refusal names the file, the line where known, the limit and how to raise it (``LimitError``, exit 2).
"""

from __future__ import annotations

import contextlib
import contextvars
import os
import re
import threading
import time
from dataclasses import dataclass

from armctl.errors import ConfigError


@dataclass(frozen=True)
class Limit:
    default: int
    what: str  # what is counted, as a refusal says it


LIMITS: dict[str, Limit] = {
    "file_bytes": Limit(16 * 1024 * 1024, "bytes in one file (program, arm, calibration, URDF, SVG, G-code, JSON)"),
    "yaml_nodes": Limit(200_000, "values in one YAML document, aliases counted each time they are used"),
    "nesting": Limit(64, "levels of nesting in one YAML or JSON document"),
    "moves": Limit(25_000, "moves in one program or drawing, repeat and for_each expanded"),
    "segments": Limit(500_000, "line segments and timed samples in one planned program or drawing"),
    "body_bytes": Limit(256 * 1024, "bytes in one program sent by the web page (other API bodies: 4 KiB)"),
}

_values: dict[str, int] = {}
_lock = threading.Lock()
ENV = "ARMCTL_LIMITS"


class LimitError(ConfigError):
    """An input larger than a named limit (``limit``): refused before it is expanded (exit 2)."""

    def __init__(self, message: str, *, limit: str, path=None, key=None, line=None):
        hint = f" (limit {limit}={get(limit)}; raise it with armctl --limit {limit}=N)"
        super().__init__(message + hint, path=path, key=key, line=line)
        self.limit = limit


def _check(name: str, value) -> int:
    if name not in LIMITS:
        raise ConfigError(f"unknown limit {name!r} (known: {', '.join(LIMITS)})")
    try:
        number = int(str(value).strip().replace("_", ""))
    except ValueError:
        raise ConfigError(f"limit {name}: expected a whole number, found {value!r}") from None
    if number < 1:
        raise ConfigError(f"limit {name}: must be >= 1, found {number}")
    return number


def parse_settings(text: str, *, where: str) -> dict[str, int]:
    """``NAME=VALUE[,NAME=VALUE...]`` into a dict; a bad entry is a ConfigError naming ``where``."""
    out: dict[str, int] = {}
    for part in text.split(","):
        if not part.strip():
            continue
        name, sep, value = part.partition("=")
        if not sep:
            raise ConfigError(f"{where}: expected NAME=VALUE, found {part.strip()!r} (limits: {', '.join(LIMITS)})")
        try:
            out[name.strip()] = _check(name.strip(), value)
        except ConfigError as exc:
            raise ConfigError(f"{where}: {exc.reason}") from None
    return out


def set_limit(name: str, value: int) -> None:
    """Raise (or lower) limit ``name`` for this process."""
    number = _check(name, value)
    with _lock:
        _values[name] = number


def get(name: str) -> int:
    """The limit in force: ``set_limit``, else ``$ARMCTL_LIMITS``, else the default."""
    with _lock:
        if name in _values:
            return _values[name]
    env = os.environ.get(ENV)
    if env:
        value = parse_settings(env, where=f"${ENV}").get(name)
        if value is not None:
            return value
    return LIMITS[name].default


YIELD_EVERY_S = 0.005  # within a time budget, planning pauses this often ...
YIELD_S = 0.001  # ... for this long (a sixth of the time: the server's other threads get the interpreter)
_deadline: contextvars.ContextVar = contextvars.ContextVar("armctl_time_budget", default=None)


@contextlib.contextmanager
def time_budget(seconds: float, what: str):
    """Within this block, ``check_time`` refuses once ``seconds`` have passed (a server planning a page's
    program: the work is cut off between moves, not left to run)."""
    token = _deadline.set([time.monotonic() + seconds, seconds, what, time.monotonic()])
    try:
        yield
    finally:
        _deadline.reset(token)


def check_time(where: str) -> None:
    """LimitError if the ``time_budget`` around this call has run out (nothing when there is none)."""
    budget = _deadline.get()
    if budget is None:
        return
    now = time.monotonic()
    if now - budget[3] > YIELD_EVERY_S:  # a server's planning thread leaves its other threads (heartbeats, stops)
        time.sleep(YIELD_S)  # the interpreter for a moment: they wait milliseconds, not the whole plan
        budget[3] = now = time.monotonic()
    if now > budget[0]:
        raise ConfigError(f"{where}: {budget[2]} took longer than {budget[1]:g} s; refused (split the program)")


def reset() -> None:
    """Every limit back to its default (tests)."""
    with _lock:
        _values.clear()


def read_bytes(path, *, what: str = "file") -> bytes:
    """The bytes of ``path``, refused past ``file_bytes`` without reading more than that (a missing or unreadable
    file is a ConfigError naming it)."""
    cap = get("file_bytes")
    try:
        with open(path, "rb") as f:
            data = f.read(cap + 1)
    except FileNotFoundError:
        why = "file not found" if what == "file" else f"cannot read the {what}: file not found"
        raise ConfigError(why, path=path) from None
    except IsADirectoryError:
        raise ConfigError(f"is a folder, not a {what}", path=path) from None
    except OSError as exc:
        raise ConfigError(f"cannot read the {what}: {exc.strerror or exc}", path=path) from None
    if len(data) > cap:
        raise LimitError(f"the {what} is larger than {cap} bytes", limit="file_bytes", path=path)
    return data


def read_utf8(path, *, what: str = "file") -> str:
    """``read_bytes`` decoded as UTF-8; bytes that are not UTF-8 are refused naming the line."""
    data = read_bytes(path, what=what)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise ConfigError(
            f"not a UTF-8 text file: byte 0x{data[exc.start]:02x} cannot start a character", path=path, line=line
        ) from None


_JSON_TOKENS = re.compile(r'"(?:[^"\\]|\\.)*"|[\[\]{}]')


def json_depth_ok(text: str | bytes, *, path=None) -> None:
    """Refuse JSON nested deeper than ``nesting`` before ``json.loads`` recurses into it: one scan of the text (in
    C, by a regular expression), brackets inside strings ignored."""
    if isinstance(text, bytes):
        text = text.decode("utf-8", errors="replace")
    cap = get("nesting")
    depth = 0
    for m in _JSON_TOKENS.finditer(text):
        ch = m.group()
        if ch in "[{":
            depth += 1
            if depth > cap:
                line = text.count("\n", 0, m.start()) + 1
                raise LimitError(f"JSON nested more than {cap} deep", limit="nesting", path=path, line=line)
        elif ch in "]}":
            depth -= 1
