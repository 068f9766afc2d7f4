"""Strict YAML reading shared by the arm, program and calibration files.

YAML mappings and lists are loaded as ``LineDict``/``LineList``, which remember
the 1-based line of every key and item, so an error can name file, line and key.
``Section`` reads one mapping: typed getters with bounds, and ``done()`` rejects
any key that was not read (a typo is an error, not a silent default).
"""

from __future__ import annotations

import copy
import math
import re
import threading
from pathlib import Path
from typing import Any

import yaml

from armctl.core import limits
from armctl.errors import ConfigError


class LineDict(dict):
    """A dict that knows the line of itself (``line``) and of each key."""

    line: int | None = None
    key_lines: dict

    def line_of(self, key) -> int | None:
        return self.key_lines.get(key, self.line)


class LineList(list):
    """A list that knows the line of itself and of each item."""

    line: int | None = None
    item_lines: list


# libyaml's parser where PyYAML has it (its wheels do): the same documents, nodes and line marks as the pure-Python
# one, about ten times faster, so a large file is read (or refused) in a fraction of a second.
_PARSER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _Loader(_PARSER):
    pass


def _construct_mapping(loader, node):
    loader.flatten_mapping(node)
    out = LineDict()
    out.line = node.start_mark.line + 1
    out.key_lines = {}
    for key_node, value_node in node.value:
        key = loader.construct_object(key_node, deep=True)
        try:
            hash(key)
        except TypeError:
            raise ConfigError(
                f"a key must be plain text, found {_kind(key)} {key!r}", line=key_node.start_mark.line + 1
            ) from None
        if key in out:
            raise ConfigError(f"duplicate key {key!r}", line=key_node.start_mark.line + 1)
        out[key] = loader.construct_object(value_node, deep=True)
        out.key_lines[key] = key_node.start_mark.line + 1
    return out


def _construct_sequence(loader, node):
    out = LineList(loader.construct_object(child, deep=True) for child in node.value)
    out.line = node.start_mark.line + 1
    out.item_lines = [child.start_mark.line + 1 for child in node.value]
    return out


def _kind(value) -> str:
    """What a YAML value is, in the words of the file format (not Python's class names)."""
    if value is None:
        return "nothing"
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, str):
        return "text"
    if isinstance(value, bool):
        return "true/false"
    if isinstance(value, (int, float)):
        return "a number"
    return type(value).__name__


def _float(value) -> float:
    """float(value), with an integer too large for a float read as infinite (then refused as not finite)."""
    try:
        return float(value)
    except OverflowError:
        return math.inf if value > 0 else -math.inf


# YAML 1.1 (PyYAML) reads 1e-3 and 1.5e3 as text: its floats need a dot and a signed exponent
# (1.0e-3, 1.5e+3). Read every exponent form as a number, as YAML 1.2 and other tools do.
_Loader.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(r"^[-+]?(?:[0-9][0-9_]*(?:\.[0-9_]*)?|\.[0-9_]+)[eE][-+]?[0-9]+$"),
    list("-+0123456789."),
)


def _construct_int(loader, node):
    """YAML's int, with a number too long for Python (over 4300 digits) a ConfigError naming the line."""
    try:
        return yaml.constructor.SafeConstructor.construct_yaml_int(loader, node)
    except ValueError:
        raise ConfigError(
            f"a whole number of {len(node.value)} characters is too long to read", line=node.start_mark.line + 1
        ) from None


_Loader.add_constructor("tag:yaml.org,2002:int", _construct_int)
_Loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)
_Loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_SEQUENCE_TAG, _construct_sequence)


def _check_size(root: yaml.Node, path) -> None:
    """Refuse a document whose values, aliases expanded, exceed ``yaml_nodes`` or nest deeper than ``nesting``.

    Counted on the composed node graph, where an alias is the same node object used again, before anything is
    built: each node's expanded size and depth once (memoised by identity), so a 600-byte alias bomb that would
    unroll to millions of values costs microseconds to refuse. An alias inside itself is refused too."""
    max_nodes, max_depth = limits.get("yaml_nodes"), limits.get("nesting")
    size: dict[int, int] = {}
    depth: dict[int, int] = {}
    on_path: set[int] = set()
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    while stack:
        node, children_done = stack.pop()
        key = id(node)
        if children_done:
            on_path.discard(key)
            kids = _children(node)
            size[key] = 1 + sum(size[id(k)] for k in kids)
            depth[key] = 1 + max((depth[id(k)] for k in kids), default=0)
            line = node.start_mark.line + 1
            if size[key] > max_nodes:
                raise limits.LimitError(
                    f"this value holds more than {max_nodes} values with its aliases expanded",
                    limit="yaml_nodes",
                    path=path,
                    line=line,
                )
            if depth[key] > max_depth:
                raise limits.LimitError(
                    f"values nested more than {max_depth} deep", limit="nesting", path=path, line=line
                )
            continue
        if key in size:
            continue
        if key in on_path:
            raise ConfigError("an alias refers to the value that contains it", path=path, line=node.start_mark.line + 1)
        on_path.add(key)
        stack.append((node, True))
        stack.extend((k, False) for k in _children(node) if id(k) not in size)


def _children(node: yaml.Node) -> list:
    if isinstance(node, yaml.SequenceNode):
        return node.value
    if isinstance(node, yaml.MappingNode):
        return [n for pair in node.value for n in pair]
    return []


def _prescan(text: str, path) -> None:
    """Count the document's values and nesting from the parser's events, before any node is built: a file of a
    million steps is refused after the first ``yaml_nodes`` of them, in little time and memory."""
    max_nodes, max_depth = limits.get("yaml_nodes"), limits.get("nesting")
    count = depth = 0
    scanner = _PARSER(text)
    try:
        while scanner.check_event():
            event = scanner.get_event()
            if isinstance(event, (yaml.ScalarEvent, yaml.AliasEvent)):
                count += 1
            elif isinstance(event, yaml.CollectionStartEvent):
                count += 1
                depth += 1
                if depth > max_depth:
                    line = event.start_mark.line + 1
                    raise limits.LimitError(
                        f"values nested more than {max_depth} deep", limit="nesting", path=path, line=line
                    )
            elif isinstance(event, yaml.CollectionEndEvent):
                depth -= 1
            else:
                continue
            if count > max_nodes:
                line = event.start_mark.line + 1
                raise limits.LimitError(
                    f"the document holds more than {max_nodes} values", limit="yaml_nodes", path=path, line=line
                )
    finally:
        scanner.dispose()


def load_yaml_text(text: str, path: str | Path = "<string>") -> Any:
    """Parse YAML text into LineDict/LineList; errors name ``path`` and line. The text, its values (aliases
    expanded) and its nesting are bounded (``armctl.core.limits``): a document over a limit is refused unbuilt."""
    if len(text) > limits.get("file_bytes"):
        raise limits.LimitError(f"the file has {len(text)} characters", limit="file_bytes", path=path)
    try:
        _prescan(text, path)
        loader = _Loader(text)
        try:
            node = loader.get_single_node()
            if node is None:
                return None
            _check_size(node, path)
            return loader.construct_document(node)
        finally:
            loader.dispose()
    except ConfigError as exc:
        raise _with_path(exc, path) from None
    except RecursionError:
        raise ConfigError("values nested more deeply than the parser can read (about 1000 levels)", path=path) from None
    except yaml.reader.ReaderError as exc:  # a control character or bad encoding: its str() is two lines
        line = text.count("\n", 0, exc.position) + 1
        char = chr(exc.character) if isinstance(exc.character, int) else exc.character
        raise ConfigError(f"not a text file: character {char!r} is not allowed in YAML", path=path, line=line) from None
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark else None
        problem = exc.problem or exc.context or "syntax error"
        if "maximum nesting depth" in problem:  # libyaml's own bound, whatever --limit nesting says
            why = "values nested more deeply than the parser can read (1000 levels)"
            raise ConfigError(why, path=path, line=line) from None
        raise ConfigError(f"YAML syntax error: {problem}", path=path, line=line) from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"YAML error: {exc}", path=path) from None


def _with_path(exc: ConfigError, path) -> ConfigError:
    """``exc`` (raised without a file) again, naming ``path``, of the same class."""
    if exc.path is not None:
        return exc
    if isinstance(exc, limits.LimitError):
        out = limits.LimitError.__new__(limits.LimitError)
        ConfigError.__init__(out, exc.reason, path=path, key=exc.key, line=exc.line)
        out.limit = exc.limit
        return out
    return ConfigError(exc.reason, path=path, key=exc.key, line=exc.line)


# Parsed files, by (path, text): the same file read again with the same text is not parsed again (one jog reads
# the arm and its calibration, and the simulated board reads them too). Keyed by the text itself, so a file that
# changed (a calibration just saved, a program just recorded) is always parsed anew.
_PARSED: dict[tuple[str, str], Any] = {}
_PARSED_MAX = 32
_PARSED_LOCK = threading.Lock()


def load_yaml_file(path: str | Path) -> Any:
    """Read and parse a YAML file; a missing or unreadable file is a ConfigError. A file read before with the
    same text is not parsed again: the caller gets its own copy of the document parsed then."""
    p = Path(path)
    text = limits.read_utf8(p)
    key = (str(p), text)
    with _PARSED_LOCK:
        doc = _PARSED.get(key)
    if doc is None:  # (an empty file parses to None: parsed again each time, which costs nothing)
        doc = load_yaml_text(text, p)  # a ConfigError is raised, not kept
        with _PARSED_LOCK:
            if len(_PARSED) >= _PARSED_MAX:
                _PARSED.pop(next(iter(_PARSED)))
            _PARSED[key] = doc
    return copy.deepcopy(doc)  # LineDict/LineList with their lines; the caller may change its copy


class Section:
    """Typed, bounded access to one YAML mapping; unknown keys are errors."""

    def __init__(self, data: Any, *, path, key: str = "", line: int | None = None):
        self.path = path
        self.key = key
        if not isinstance(data, dict):
            raise ConfigError(
                f"expected a mapping (key: value lines), found {_kind(data)}",
                path=path,
                key=key or None,
                line=getattr(data, "line", None) or line,
            )
        self.data = data
        self.line = getattr(data, "line", line)
        self._read: set = set()

    def _name(self, key) -> str:
        return f"{self.key}.{key}" if self.key else str(key)

    def line_of(self, key) -> int | None:
        if isinstance(self.data, LineDict):
            return self.data.line_of(key)
        return self.line

    def error(self, key, message: str) -> ConfigError:
        return ConfigError(
            message,
            path=self.path,
            key=self._name(key) if key is not None else (self.key or None),
            line=self.line_of(key) if key is not None else self.line,
        )

    def has(self, key) -> bool:
        return key in self.data

    def raw(self, key, default: Any = ..., *, required: bool = True) -> Any:
        self._read.add(key)
        if key not in self.data:
            if default is not ... or not required:
                return None if default is ... else default
            raise self.error(None, f"missing required key '{self._name(key)}'")
        return self.data[key]

    def number(
        self, key, default: Any = ..., *, lo: float | None = None, hi: float | None = None, lo_open: bool = False
    ) -> float:
        value = self.raw(key, default)
        if value is default and default is not ...:
            return value
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise self.error(key, f"expected a number, found {value!r}")
        value = _float(value)
        if not math.isfinite(value):
            raise self.error(key, f"expected a finite number, found {value!r}")
        if lo is not None and (value <= lo if lo_open else value < lo):
            raise self.error(key, f"{value:g} is out of range: must be {'>' if lo_open else '>='} {lo:g}")
        if hi is not None and value > hi:
            raise self.error(key, f"{value:g} is out of range: must be <= {hi:g}")
        return value

    def numbers(self, key, default: Any = ..., *, count: int | tuple[int, ...] | None = None) -> list[float]:
        value = self.raw(key, default)
        if value is default and default is not ...:
            return value
        if not isinstance(value, list):
            raise self.error(key, f"expected a list of numbers like [1, 2], found {value!r}")
        counts = (count,) if isinstance(count, int) else count
        if counts is not None and len(value) not in counts:
            want = " or ".join(str(c) for c in counts)
            raise self.error(key, f"expected {want} numbers, found {len(value)}")
        out = []
        for item in value:
            if isinstance(item, bool) or not isinstance(item, (int, float)) or not math.isfinite(_float(item)):
                raise self.error(key, f"expected finite numbers, found {item!r}")
            out.append(_float(item))
        return out

    def string(self, key, default: Any = ..., *, choices: tuple[str, ...] | None = None) -> str:
        value = self.raw(key, default)
        if value is default and default is not ...:
            return value
        if not isinstance(value, str):
            raise self.error(key, f"expected text, found {value!r}")
        if choices is not None and value not in choices:
            raise self.error(key, f"{value!r} is not one of: {', '.join(choices)}")
        return value

    def section(self, key, *, required: bool = True) -> Section | None:
        value = self.raw(key, required=required)
        if value is None and not required:
            return None
        return Section(value, path=self.path, key=self._name(key), line=self.line_of(key))

    def items(self, key) -> list:
        value = self.raw(key)
        if not isinstance(value, list):
            raise self.error(key, f"expected a list, found {_kind(value)}")
        return value

    def done(self) -> None:
        unknown = [k for k in self.data if k not in self._read]
        if unknown:
            k = unknown[0]
            known = ", ".join(sorted(str(x) for x in self._read))
            raise self.error(k, f"unknown key '{self._name(k)}' (known keys here: {known})")
