"""Who keeps an object alive, and whether anyone can still use it that way.

Python keeps objects alive that nobody can use any more: the last error (``sys.last_value``,
``sys.last_traceback``, ``sys.last_exc``: its frames' locals), the prompt's ``_`` and IPython's output history
(``_``, ``Out[3]``: a ``Motion`` shown holds its Robot), and an object's own worker thread. ``holders(obj)``
walks back from ``obj`` along ``gc.get_referrers`` and every thread's stack (whose locals the garbage collector
does not see) to what holds it, and says for each way whether it can still be used: a variable, the locals of
code running now (``usable``; ``live`` in another thread) or something that cannot be followed (usable: in
doubt, it is). ``connect()`` asks it about a Robot of this very process that has the port it wants.
"""

from __future__ import annotations

import gc
import inspect
import re
import sys
import threading
import types
from collections import deque
from dataclasses import dataclass

from armctl.core.tracebacks import ipython

# names under which an interactive Python keeps the values it showed (python's `_`, IPython's `_`, `__`,
# `___`, `_12`, `Out`, `_oh`): values nobody named
_HISTORY = re.compile(r"_{1,3}|_\d+|_oh|Out")
_LAST_ERROR = ("last_exc", "last_value", "last_traceback", "last_type")
# IPython's records of a cell run (ExecutionResult.error_in_exec: the last error; .result: the value shown)
_SHELL_RECORDS = {("IPython.core.interactiveshell", n) for n in ("ExecutionResult", "ExecutionInfo")}
OWN = "its own worker"  # its worker thread, its finalizer
UNSEEN = "something armctl cannot see"  # held from outside the garbage collector's sight: a C extension
HISTORY = "the output history"  # what an interactive Python keeps of the values it showed
MAX_DEPTH = 40  # steps back from the object (a traceback through armctl is about 15 deep)
MAX_WIDTH = 20_000  # objects at one step back: more is not a way anyone means to hold it


@dataclass(frozen=True)
class Holder:
    """One way ``obj`` is held: ``what`` says it in words (``the variable 'm'``, ``the last error's
    traceback``); ``reach`` is the Python that gets ``obj`` from there (``m.robot``; None when there is none);
    ``name`` the variable it starts from; ``usable``: a person or code running now can still use it; ``live``:
    code running now in another thread."""

    what: str
    usable: bool
    reach: str | None = None
    name: str | None = None
    live: bool = False


def holders(obj, *, own=()) -> list[Holder]:
    """The ways ``obj`` is held, one per variable, stack frame, history or thread that holds it (directly or
    through anything else). ``own``: what belongs to ``obj`` and ends with it (not usable): its worker threads
    (their stacks, and what the garbage collector cannot see while one runs: its value stack), other objects
    (the arguments of its finalizer)."""
    gc.collect()
    threads = [t for t in own if isinstance(t, threading.Thread)]
    own_threads = {t.ident for t in threads}
    own_ids = {id(o) for o in own if o is not None and not isinstance(o, threading.Thread)}
    running = any(t.is_alive() for t in threads)
    stacks = _stack_locals(own_threads)
    spaces = _namespaces()
    shell = _shell_objects()
    found: list[Holder] = []
    links: dict[int, tuple] = {}  # node -> (node, what it holds on the way, how)
    ours = {id(links), id(stacks), id(found), *map(id, stacks.values())}  # this walk's own containers

    def link(r, child, how) -> None:
        entry = links[id(r)] = (r, child, how)
        ours.add(id(entry))

    link(obj, None, None)
    level = [obj]
    try:
        for _depth in range(MAX_DEPTH):
            if not level:
                return _unique(found)
            if len(level) > MAX_WIDTH:
                break
            args = tuple(level)
            refs = gc.get_referrers(*args)
            ids = {id(n) for n in args}
            nxt = []
            ours.update((id(refs), id(args), id(level), id(nxt)))
            held_by: set[int] = set()
            for r in refs:
                if id(r) in ours or _is_args(r, args):
                    continue
                held = _held(r, ids, links)
                if not held:
                    continue
                held_by.update(map(id, held))
                if id(r) in stacks:  # a running frame's locals (below)
                    continue
                if id(r) in spaces:  # a namespace: every name in it that holds one
                    found.extend(_names(r, held, links, spaces[id(r)]))
                    continue
                if id(r) in links:
                    continue
                how = _how(r, held[0])
                link(r, held[0], how)
                holder = _root(r, own_ids, own_threads, shell)
                if holder is not None:
                    found.append(holder)
                else:
                    nxt.append(r)
            for (loc, frame, ident), key in _frame_holds(stacks, ids, links, link):
                held_by.add(id(links[id(loc)][1]))
                found.append(_frame_holder(frame, ident, key, links, loc))
            for node in args:
                if id(node) not in held_by:
                    lone = _lone(node, running)
                    if lone is not None:
                        found.append(lone)
            del args, refs
            level = nxt
        found.append(Holder("more references than armctl follows", usable=True))
        return _unique(found)
    finally:
        level.clear()
        links.clear()
        stacks.clear()


# --- the roots: where a chain of references starts ---------------------------------------------------------


def _names(space: dict, held: list, links, kind: tuple[str, str]) -> list[Holder]:
    """The holders in namespace ``space`` (``kind``: its prefix and kind): one per name holding a node of
    ``held``."""
    prefix, kind = kind
    out = []
    for key, v in list(space.items()):
        if not any(v is h for h in held):
            continue
        if kind == "sys" and key in _LAST_ERROR:
            out.append(Holder("the last error's traceback", usable=False))
        elif kind == "builtins" and key == "_":
            out.append(Holder("the prompt's _ (the last value shown)", usable=False))
        elif kind == "main" and _HISTORY.fullmatch(str(key)):
            out.append(Holder(HISTORY, usable=False, name=str(key)))
        else:
            name = f"{prefix}{key}"
            out.append(Holder(f"the variable {name!r}", usable=True, reach=_reach(v, links, name), name=name))
    return out


def _root(r, own: set[int], own_threads: set[int], shell: set[int]) -> Holder | None:
    """The holder ``r`` is if a chain starts there (what belongs to the object, a thread, a shell's records),
    else None."""
    if id(r) in own:
        return Holder(OWN, usable=False)
    if isinstance(r, threading.Thread):
        if r.ident in own_threads:
            return Holder(OWN, usable=False)
        if r.is_alive():
            return Holder(f"the thread {r.name!r} (running)", usable=True, live=True)
        return None
    if id(r) in shell or (getattr(type(r), "__module__", ""), type(r).__name__) in _SHELL_RECORDS:
        return Holder(HISTORY, usable=False)  # its display hook's _, its Out, its last result and error
    return None


def _frame_holder(frame, ident, key, links, loc) -> Holder:
    """A local variable ``key`` of ``frame``, running now in thread ``ident``."""
    code = frame.f_code
    where = f"{code.co_name}() at {code.co_filename}:{frame.f_lineno}"
    reach = _reach(links[id(loc)][1], links, key)
    if ident == threading.get_ident():
        return Holder(f"the variable {key!r} in {where}", usable=True, reach=reach, name=key)
    thread = threading._active.get(ident)  # noqa: SLF001 - the one map from a running thread's id to its Thread
    tname = thread.name if thread is not None else str(ident)
    return Holder(f"the thread {tname!r}, running {where} with it as {key!r}", usable=True, live=True)


def _lone(node, running: bool) -> Holder | None:
    """A node nothing the garbage collector sees holds: the error being handled here; while the object's own
    worker runs, its value stack (the collector never sees one); else something armctl cannot see (a C
    extension, another thread's error)."""
    if node is sys.exc_info()[1]:
        return Holder("the error being handled", usable=False)
    if isinstance(node, types.FrameType | types.TracebackType) or _is_module_dict(node):
        return None  # a frame running now (its locals are read from the stacks), a module's namespace
    if running:
        return Holder(OWN, usable=False)
    return Holder(f"{UNSEEN} (a {type(node).__name__})", usable=True)


# --- following references back ------------------------------------------------------------------------------


def _held(r, ids: set[int], links) -> list:
    """The nodes of the level being followed that ``r`` holds."""
    return [links[id(x)][0] for x in gc.get_referents(r) if id(x) in ids]


def _how(r, child) -> tuple:
    """How ``r`` holds ``child``: ("key", k) in a dict, ("attr", name), ("index", i), ("dict",) as its
    ``__dict__``, ("local", name) in a frame that ended, ("?",) otherwise."""
    if isinstance(r, dict):
        for k, v in list(r.items()):
            if v is child:
                return ("key", k)
        return ("?",)
    if isinstance(r, list | tuple | deque):
        for i, v in enumerate(list(r)):
            if v is child:
                return ("index", i)
        return ("?",)
    if isinstance(r, types.FrameType):
        for k, v in list(r.f_locals.items()):
            if v is child:
                return ("local", k)
        return ("?",)
    if isinstance(r, types.MethodType) and r.__self__ is child:
        return ("attr", "__self__")
    attrs = _instance_dict(r)
    if attrs is child:
        return ("dict",)
    if attrs is not None:
        for k, v in list(attrs.items()):
            if v is child:
                return ("attr", k)
    return ("?",)


def _reach(node, links, name: str) -> str | None:
    """The Python that gets the object from the variable ``name`` holding ``node``, or None."""
    expr, attr_next = name, False
    while node is not None:
        _, child, how = links[id(node)]
        if child is None:
            return expr
        kind = how[0]
        if kind == "attr":
            expr += f".{how[1]}"
        elif kind == "dict":
            attr_next = True
            node = child
            continue
        elif kind == "key" and attr_next and isinstance(how[1], str):
            expr += f".{how[1]}"
        elif kind in ("key", "index"):
            expr += f"[{how[1]!r}]"
        else:
            return None
        attr_next = False
        node = child
    return expr


def _frame_holds(stacks, ids: set[int], links, link):
    """The running frames whose locals hold a node of the level: ((locals, frame, thread id), name) each."""
    out = []
    for key_id, (loc, frame, ident) in list(stacks.items()):
        if key_id in links:
            continue
        for k, v in list(loc.items()):
            if id(v) in ids:
                link(loc, links[id(v)][0], ("key", k))
                out.append(((loc, frame, ident), k))
                break
    return out


def _stack_locals(own: set[int]) -> dict[int, tuple]:
    """Every running function frame's locals, by the id of its locals dict: (locals, frame, thread id), each
    thread's outermost frame first (the code that called armctl before armctl's own); not armctl's own frames
    in this thread (this very walk, the connect() asking), not ``own`` threads."""
    out: dict[int, tuple] = {}
    here = threading.get_ident()
    for ident, top in sys._current_frames().items():  # noqa: SLF001 - the one way to read other threads' stacks
        if ident in own:
            continue
        frames = []
        frame = top
        while frame is not None:
            ours = ident == here and frame.f_globals.get("__name__", "").partition(".")[0] == "armctl"
            if not ours and frame.f_code.co_flags & inspect.CO_OPTIMIZED:
                frames.append(frame)
            frame = frame.f_back
        for frame in reversed(frames):
            loc = frame.f_locals
            out[id(loc)] = (loc, frame, ident)
    return out


def _namespaces() -> dict[int, tuple[str, str]]:
    """The dicts a chain of references starts from, by id: every module's namespace (``main`` for the one a
    person types into: ``__main__``, IPython's), ``sys`` and ``builtins`` (for ``sys.last_*`` and ``_``)."""
    out: dict[int, tuple[str, str]] = {}
    for name, mod in list(sys.modules.items()):
        space = getattr(mod, "__dict__", None)
        if isinstance(space, dict):
            kind = {"__main__": "main", "sys": "sys", "builtins": "builtins"}.get(name, "module")
            out[id(space)] = ("" if kind == "main" else f"{name}.", kind)
    shell = ipython()
    if shell is not None:
        for space in (shell.user_ns, shell.user_global_ns):
            out[id(space)] = ("", "main")
    return out


def _shell_objects() -> set[int]:
    """IPython's own records by id (the shell, its history and display hook): a chain starting there is its
    output history or its last error."""
    shell = ipython()
    if shell is None:
        return set()
    parts = [shell, getattr(shell, "displayhook", None), getattr(shell, "history_manager", None)]
    return {id(p) for p in parts if p is not None}


def _instance_dict(r) -> dict | None:
    try:
        d = object.__getattribute__(r, "__dict__")
    except (AttributeError, TypeError):
        return None
    return d if isinstance(d, dict) else None


def _is_module_dict(node) -> bool:
    return isinstance(node, dict) and isinstance(node.get("__name__"), str) and "__builtins__" in node


def _is_args(r, args: tuple) -> bool:
    """The tuple of arguments ``gc.get_referrers`` itself was called with."""
    return type(r) is tuple and len(r) == len(args) and all(a is b for a, b in zip(r, args))


def _unique(found: list[Holder]) -> list[Holder]:
    out: list[Holder] = []
    for h in found:
        if h not in out:
            out.append(h)
    return out
