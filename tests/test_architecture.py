"""The shape of the package: no import cycle in armctl, and no module importing one of a higher layer.

The layer order lives in one place, the table in docs/architecture.md ("Layers"); this test reads it from
there. Imports are read from the source with ast (module-level and function-local ones alike; nothing is
imported or run). A module that matches no row of the table fails too: put a new module in its layer.
"""

from __future__ import annotations

import ast
import fnmatch
import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PACKAGE = REPO / "armctl"
DOC = REPO / "docs" / "architecture.md"


def layer_table(text: str) -> list[tuple[str, list[str]]]:
    """Rows ``| N | name | patterns |`` of the Layers table, lowest layer first."""
    section = text.split("## Layers", 1)[1].split("\n## ", 1)[0]
    rows = []
    for line in section.splitlines():
        m = re.match(r"\|\s*(\d+)\s*\|\s*([\w -]+?)\s*\|(.*)\|\s*$", line)
        if m:
            rows.append((int(m.group(1)), m.group(2), re.findall(r"`([\w.*]+)`", m.group(3))))
    assert [r[0] for r in rows] == list(range(len(rows))), "layers numbered 0, 1, 2, ... in order"
    return [(name, patterns) for _, name, patterns in rows]


def module_name(path: Path) -> str:
    parts = list(path.relative_to(REPO).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def modules() -> dict[str, Path]:
    return {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def imports(name: str, path: Path, known: set[str]) -> list[tuple[str, int]]:
    """(module of armctl, line) for each import in the file, resolved to the longest known module."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                stem = ".".join(base + ([node.module] if node.module else []))
            else:
                stem = node.module or ""
            # `from pkg import name`: name is a submodule when one exists, else an attribute of pkg
            targets = [f"{stem}.{a.name}" if f"{stem}.{a.name}" in known else stem for a in node.names]
        else:
            continue
        for target in targets:
            while target and target not in known:
                target = target.rpartition(".")[0]
            if target and target != name:
                found.append((target, node.lineno))
    return found


def layer_of(name: str, table) -> int | None:
    """The layer of the most specific pattern matching the module (longest pattern wins)."""
    best = None
    for rank, (_, patterns) in enumerate(table):
        for pattern in patterns:
            if fnmatch.fnmatchcase(name, pattern) and (best is None or len(pattern) > best[1]):
                best = (rank, len(pattern))
    return None if best is None else best[0]


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected groups of more than one module (Tarjan), each sorted."""
    index, low, stack, on, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                out.append(sorted(group))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


@pytest.fixture(scope="module")
def graph():
    mods = modules()
    known = set(mods)
    return {m: imports(m, p, known) for m, p in mods.items()}


def test_no_import_cycle(graph):
    found = cycles({m: {t for t, _ in edges} for m, edges in graph.items()})
    assert not found, "import cycles in armctl: " + "; ".join(" <-> ".join(c) for c in found)


def test_every_module_has_a_layer():
    table = layer_table(DOC.read_text(encoding="utf-8"))
    missing = [m for m in modules() if layer_of(m, table) is None]
    assert not missing, f"modules in no layer of {DOC.name} (add them to its Layers table): {', '.join(missing)}"


def test_no_lower_layer_imports_an_upper_one(graph):
    table = layer_table(DOC.read_text(encoding="utf-8"))
    wrong = []
    for name, edges in graph.items():
        mine = layer_of(name, table)
        for target, line in edges:
            theirs = layer_of(target, table)
            if mine is not None and theirs is not None and theirs > mine:
                wrong.append(
                    f"{name} ({table[mine][0]}) imports {target} ({table[theirs][0]}) at {graph_file(name)}:{line}"
                )
    assert not wrong, "upward imports:\n" + "\n".join(wrong)


def graph_file(name: str) -> str:
    return str(modules()[name].relative_to(REPO))


def test_the_check_sees_a_cycle_and_an_upward_import(tmp_path):
    """The checker itself: a cycle and an upward import in a made-up graph are found."""
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    table = layer_table("## Layers\n| 0 | low | `p.low*` |\n| 1 | high | `p.high` `p.high.*` |\n")
    assert layer_of("p.low.x", table) == 0 and layer_of("p.high.y", table) == 1 and layer_of("p.other", table) is None
