"""Module docstrings are self-contained: they cite upstream classes, never documents outside this
repository (the reference specs' section numbers, the design notes)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "mqtool"
OUTSIDE = re.compile(r"spec [A-Z]\d|§|design\.md|shared/|\bspec/")


@pytest.mark.parametrize("path", sorted(PACKAGE.rglob("*.py")), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_docstrings_cite_nothing_outside_the_repository(path: Path) -> None:
    tree = ast.parse(path.read_text())
    nodes = [tree, *(n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)))]
    for node in nodes:
        doc = ast.get_docstring(node) or ""
        assert not OUTSIDE.search(doc), f"{path.name}: {getattr(node, 'name', 'module')} docstring cites {OUTSIDE.search(doc).group(0)!r}"
    comments = [line for line in path.read_text().splitlines() if line.lstrip().startswith("#")]
    assert not any(OUTSIDE.search(line) for line in comments), f"{path.name}: a comment cites a document outside the repository"
