"""The import rule of design.md, enforced by walking every module's AST.

cli -> ops, store, findings, layouts, errors (and pipeline: cmd_scan imports it inside the
command only); ops -> store, formats, findings, layouts, errors; store -> formats, findings,
errors; findings -> errors; formats -> errors; pipeline -> formats, store, findings, layouts,
errors.  pyspark only inside pipeline/.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "mqtool"

ALLOWED = {
    "formats": {"formats", "errors"},
    "findings": {"findings", "errors"},
    "store": {"store", "formats", "findings", "errors"},
    "layouts": {"layouts", "store", "errors"},
    "ops": {"ops", "store", "formats", "findings", "layouts", "errors"},
    "cli": {"cli", "ops", "store", "findings", "layouts", "errors", "pipeline"},
    "pipeline": {"pipeline", "formats", "store", "findings", "layouts", "errors"},
    "errors": {"errors"},
}
HEAVY = {"pyspark", "pyarrow"}


def _modules():
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE)
        layer = rel.parts[0].removesuffix(".py") if len(rel.parts) > 1 else rel.stem
        yield path, layer


def _imports(path: Path):
    tree = ast.parse(path.read_text(), filename=str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            yield node.module


@pytest.mark.parametrize("path,layer", list(_modules()), ids=lambda v: str(v))
def test_module_respects_layers(path, layer):
    allowed = ALLOWED.get(layer)
    for name in _imports(path):
        top = name.split(".")[0]
        if top in HEAVY:
            assert layer == "pipeline", f"{path}: imports {name}; pyspark/pyarrow belong in pipeline/ only"
        if top != "mqtool" or allowed is None:
            continue
        parts = name.split(".")
        target = parts[1] if len(parts) > 1 else "mqtool"
        if target in ("__init__", "mqtool"):
            continue
        assert target in allowed, f"{path.relative_to(PACKAGE.parent)}: layer '{layer}' may not import mqtool.{target}"


BYTE_DECODING = re.compile(r"int\.from_bytes|struct\.unpack")


def test_bytes_are_decoded_only_in_formats():
    """formats/ is the one place bytes become values: every other layer calls a named peek or
    decoder there instead of reading a field a second time (``int.from_bytes``, ``struct.unpack*``)."""
    found = [
        f"{path.relative_to(PACKAGE.parent)}:{n}: {line.strip()}"
        for path, layer in _modules()
        if layer != "formats"
        for n, line in enumerate(path.read_text().splitlines(), 1)
        if BYTE_DECODING.search(line)
    ]
    assert not found, "byte decoding outside mqtool/formats/:\n" + "\n".join(found)
