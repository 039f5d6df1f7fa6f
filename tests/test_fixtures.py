"""The bundled fixtures are exactly what their generators write (no hand-edited bytes)."""

from __future__ import annotations

import importlib.util

from tests.conftest import FIXTURES


def _load(name: str):
    spec = importlib.util.spec_from_file_location(name, FIXTURES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _tree(root):
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_rocketmq_fixture_is_reproducible(tmp_path):
    _load("generate").build_rocketmq_store(tmp_path / "store")
    assert _tree(tmp_path / "store") == _tree(FIXTURES / "rocketmq-store")
