"""Finding codes are named by constants, not string literals, outside ``mqtool/findings``.

``mqtool.findings.code_ids`` has a constant per code (generated from ``mqtool.findings.CODES`` by
``scripts/gen_docs.py``; ``tests/test_docs.py`` fails when it is stale).  This test finds, by
walking every module's AST, the string literals outside ``mqtool/findings`` that equal a finding
code, and holds the modules to ``LITERALS_TODAY``: the debt issue 27 pays off.  It fails when a
module not listed names a code by a literal, when a listed module has more than it had, and when
a listed count is stale (the module has fewer now: lower it, so the list only shrinks).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from mqtool.findings import CODES, code_ids

PACKAGE = Path(__file__).resolve().parents[1] / "mqtool"

#: modules that still name finding codes by string literals, and how many they have
LITERALS_TODAY: dict[str, int] = {
    "pipeline/jobs.py": 45,
    "pipeline/walk.py": 4,
}


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
    allowed = LITERALS_TODAY.get(name, 0)
    assert found <= allowed, f"{name} names {found} finding code(s) by string literal (at most {allowed}): use mqtool.findings.code_ids"
    assert found == allowed, f"{name} has {found} code literal(s) now, fewer than the {allowed} listed: lower LITERALS_TODAY"


def test_every_code_has_its_constant() -> None:
    constants = {value for key, value in vars(code_ids).items() if key.isupper()}
    assert constants == set(CODES)
    assert all(getattr(code_ids, code.replace("-", "_")) == code for code in CODES)


def test_listed_modules_exist() -> None:
    assert [m for m in LITERALS_TODAY if not (PACKAGE / m).is_file()] == []
