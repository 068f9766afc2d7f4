"""The shape of the package: one folder per layer, no import cycle in armctl, no module importing one of a
higher layer, and no loose modules beyond the entry points.

The layer order lives in one place, the table in docs/architecture.md ("Layers"), one row per package; this
test reads it from there. A module belongs to the row naming its package (or, for the few loose modules, the
module itself). Imports are read from the source with ast (module-level and function-local ones alike; nothing
is imported or run). A module in no row fails too: put a new module in its layer's package.
"""

from __future__ import annotations

import ast
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


def extensions() -> set[str]:
    """The C extensions (``armctl/ik/_core.c`` is ``armctl.ik._core``): imported like modules, importing nothing."""
    return {module_name(p) for p in PACKAGE.rglob("*.c")}


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


def layer_of(name: str, table, packages: set[str] | None = None) -> int | None:
    """The layer of the row naming the module or the package it is in (the longest name wins). A package's name
    covers its modules; a loose module's name covers only itself."""
    packages = PACKAGES if packages is None else packages
    best = None
    for rank, (_, names) in enumerate(table):
        for entry in names:
            inside = entry in packages and entry != "armctl" and name.startswith(entry + ".")
            if (name == entry or inside) and (best is None or len(entry) > best[1]):
                best = (rank, len(entry))
    return None if best is None else best[0]


PACKAGES = {module_name(p.parent) for p in PACKAGE.rglob("__init__.py")}
LOOSE_ALLOWED = 5  # the entry points and the exception tree: armctl, __main__, errors


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
    known = set(mods) | extensions()
    return {m: imports(m, p, known) for m, p in mods.items()} | {m: [] for m in extensions()}


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


def test_the_tree_is_the_layer_table():
    """``ls armctl`` shows the architecture: every package directly under armctl is a row of the table, and at
    most a handful of modules sit loose beside them."""
    table = layer_table(DOC.read_text(encoding="utf-8"))
    rows = {entry for _, names in table for entry in names}
    top = {module_name(p) for p in PACKAGE.iterdir() if (p / "__init__.py").exists()}
    assert top <= rows, f"packages in no row of {DOC.name}: {sorted(top - rows)}"
    loose = sorted(p.name for p in PACKAGE.glob("*.py"))
    assert len(loose) <= LOOSE_ALLOWED, f"loose modules in armctl/ (move them into their layer's package): {loose}"


def test_no_package_imports_upward_or_in_a_circle(graph):
    """The same, one level up: collapsed to top-level packages, the import graph has no cycle across layers."""
    table = layer_table(DOC.read_text(encoding="utf-8"))

    def top(m):
        return ".".join(m.split(".")[:2])

    packs: dict[str, set[str]] = {}
    for name, edges in graph.items():
        packs.setdefault(top(name), set()).update(top(t) for t, _ in edges if top(t) != top(name))
    for p in {t for ts in packs.values() for t in ts}:
        packs.setdefault(p, set())
    across = [c for c in cycles(packs) if len({layer_of(p, table) for p in c}) > 1]
    assert not across, "package cycles across layers: " + "; ".join(" <-> ".join(c) for c in across)


def graph_file(name: str) -> str:
    path = modules().get(name)
    return str(path.relative_to(REPO)) if path else name


def test_the_check_sees_a_cycle_and_an_upward_import(tmp_path):
    """The checker itself: a cycle and an upward import in a made-up graph are found."""
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    table = layer_table("## Layers\n| 0 | low | `p.low` `p.x` |\n| 1 | high | `p.high` |\n")
    packages = {"p.low", "p.high"}
    assert layer_of("p.low.x", table, packages) == 0 and layer_of("p.high.y", table, packages) == 1
    assert layer_of("p.x", table, packages) == 0 and layer_of("p.x.y", table, packages) is None
    assert layer_of("p.other", table, packages) is None
