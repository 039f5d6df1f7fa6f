"""Finding codes are named by constants, not string literals, outside ``mqtool/findings``.

``mqtool.findings.code_ids`` has a constant per code (generated from ``mqtool.findings.CODES`` by
``scripts/gen_docs.py``; ``tests/test_docs.py`` fails when it is stale).  This test finds, by
walking every module's AST, the string literals outside ``mqtool/findings`` that equal a finding
code, and fails on any: the debt issue 27 paid off (the ratchet that listed the modules still
naming codes by literals shrank to nothing and went).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from mqtool.findings import CODES, code_ids

PACKAGE = Path(__file__).resolve().parents[1] / "mqtool"

def _code_literals(path: Path) -> int:
    tree = ast.parse(path.read_text(), filename=str(path))
    in_fstring = {id(part) for node in ast.walk(tree) if isinstance(node, ast.JoinedStr) for part in node.values}
    return sum(
        1
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in CODES and id(node) not in in_fstring
    )


def _modules() -> list[Path]:
    return [p for p in sorted(PACKAGE.rglob("*.py")) if "findings" not in p.relative_to(PACKAGE).parts[:1]]


@pytest.mark.parametrize("path", _modules(), ids=lambda p: p.relative_to(PACKAGE).as_posix())
def test_finding_codes_are_named_by_constants(path: Path) -> None:
    name = path.relative_to(PACKAGE).as_posix()
    found = _code_literals(path)
    assert found == 0, f"{name} names {found} finding code(s) by string literal: use mqtool.findings.code_ids"


def test_every_code_has_its_constant() -> None:
    constants = {value for key, value in vars(code_ids).items() if key.isupper()}
    assert constants == set(CODES)
    assert all(getattr(code_ids, code.replace("-", "_")) == code for code in CODES)
