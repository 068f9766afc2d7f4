"""Sizes the issue of the package tree set: no module over 600 lines, no function over 80 lines, except those
named in pyproject.toml ([tool.armctl.sizes]) with the reason. McCabe complexity is ruff's C901 (pyproject.toml)."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    tomllib = None

import pytest

REPO = Path(__file__).resolve().parents[1]
PACKAGE = REPO / "armctl"
MAX_MODULE_LINES = 600
MAX_FUNCTION_LINES = 80


def exceptions() -> dict[str, str]:
    if tomllib is None:
        pytest.skip("tomllib needs Python 3.11")
    data = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    return data["tool"]["armctl"]["sizes"]


def too_big() -> list[str]:
    out = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(REPO).as_posix()
        text = path.read_text(encoding="utf-8")
        if len(text.splitlines()) > MAX_MODULE_LINES:
            out.append(rel)
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                if node.end_lineno - node.lineno + 1 > MAX_FUNCTION_LINES:
                    out.append(f"{rel}::{node.name}")
    return out


def test_no_module_or_function_too_long_unless_named_with_a_reason():
    named = exceptions()
    found = too_big()
    unnamed = [f for f in found if f not in named]
    assert not unnamed, (
        f"over {MAX_MODULE_LINES} lines (a module) or {MAX_FUNCTION_LINES} (a function); split it, or name it "
        f"with the reason in pyproject.toml [tool.armctl.sizes]: {unnamed}"
    )
    stale = [k for k in named if k not in found]
    assert not stale, f"named in pyproject.toml [tool.armctl.sizes] but no longer too long (remove them): {stale}"
    assert all(len(why.split()) >= 4 for why in named.values()), "each exception says why"
