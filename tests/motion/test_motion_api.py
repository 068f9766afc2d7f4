"""The motion package's seams are public names: no module imports another's ``_private`` name from motion (inside
armctl/, tests/ or bench/), and ``motion.__all__`` lists no underscore name (issue 35)."""

from __future__ import annotations

import ast
from pathlib import Path

import armctl.motion

ROOT = Path(__file__).resolve().parents[2]


def private_motion_imports(root: Path) -> list[str]:
    """``file:line name`` for every ``from armctl.motion[...] import _name`` (or a relative import inside
    armctl/motion/) under ``root``'s armctl/, tests/ and bench/."""
    found = []
    for folder in ("armctl", "tests", "bench"):
        for path in sorted((root / folder).rglob("*.py")):
            inside = path.parent == root / "armctl" / "motion"
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if not isinstance(node, ast.ImportFrom):
                    continue
                if not ((node.module or "").startswith("armctl.motion") or (node.level and inside)):
                    continue
                for alias in node.names:
                    if alias.name.startswith("_") and not alias.name.startswith("__"):
                        found.append(f"{path.relative_to(root)}:{node.lineno} {alias.name}")
    return found


def test_no_private_names_imported_from_motion():
    assert private_motion_imports(ROOT) == []


def test_the_check_sees_a_private_import(tmp_path):
    (tmp_path / "bench").mkdir()
    (tmp_path / "bench" / "x.py").write_text("from armctl.motion.timing import _hidden\nfrom armctl.motion import ok\n")
    (tmp_path / "armctl" / "motion").mkdir(parents=True)
    (tmp_path / "armctl" / "motion" / "y.py").write_text("from .refusals import _other\n")
    assert private_motion_imports(tmp_path) == ["armctl/motion/y.py:1 _other", "bench/x.py:1 _hidden"]


def test_motion_all_is_public_and_importable():
    assert [n for n in armctl.motion.__all__ if n.startswith("_")] == []
    for name in armctl.motion.__all__:
        assert getattr(armctl.motion, name) is not None
