"""One reading of the store: which modules outside the store model still walk log bytes themselves.

The design says one walker per file family, in the store model, reads a log file and judges its
bytes; commands (``ops/``, ``cli/``) and Spark sources (``pipeline/``) take their answer from it.
This test finds, by walking every module's AST, the ones that call a record walker, a framing
or decoding function of a log file, or a store walk that yields raw records, and holds them to
``WALKING_TODAY``: the debt issue 27 pays off.  It fails when a module not listed starts walking
log bytes, when a listed module uses a walker it did not use, and when a listed entry is stale
(the module stopped: remove it from the list, so the list only shrinks).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "mqtool"

#: What walks or judges log bytes: the formats' record walkers, framing and decoding functions,
#: and the store's raw walks (they hand records to a consumer that judges them again).
WALKERS = frozenset(
    {
        # store walks over raw records
        "CommitLogFileWalk",
        "LogFileWalk",
        "SegmentWalk",
        "read_file_columns",
        "find_next_record",
        "read_entry_at",
        "next_message",
        # formats walkers, framers and decoders of log entries
        "RecordWalker",
        "LogWalker",
        "MessageWalker",
        "walk_columns",
        "frame_records",
        "decode_message",
        "decode_entry",
        "decode_batch",
        "iter_entries",
        "iter_log_records",
        "iter_records",
        "peek_entry",
        "peek_record",
        # the Spark pipeline's own walks
        "walk_commitlog",
        "walk_framed",
    }
)

#: Modules of ops/, cli/ and pipeline/ that walk log bytes today, and with what.
WALKING_TODAY: dict[str, frozenset[str]] = {}


def _consumer_modules() -> list[Path]:
    return [p for layer in ("ops", "cli", "pipeline") for p in sorted((PACKAGE / layer).rglob("*.py"))]


def _walkers_used(path: Path) -> frozenset[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Attribute) and node.attr in WALKERS:
            found.add(node.attr)
        elif isinstance(node, ast.Name) and node.id in WALKERS:
            found.add(node.id)
        elif isinstance(node, ast.alias) and node.name in WALKERS:
            found.add(node.name)
    return frozenset(found)


@pytest.mark.parametrize("path", _consumer_modules(), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_no_new_consumer_walks_log_bytes(path: Path) -> None:
    rel = str(path.relative_to(PACKAGE))
    used = _walkers_used(path)
    allowed = WALKING_TODAY.get(rel, frozenset())
    assert used <= allowed, f"{rel} walks log bytes itself with {sorted(used - allowed)}: take the answer from the store model's walker"


@pytest.mark.parametrize("rel", sorted(WALKING_TODAY))
def test_the_list_of_walking_consumers_only_shrinks(rel: str) -> None:
    path = PACKAGE / rel
    used = _walkers_used(path) if path.exists() else frozenset()
    stale = WALKING_TODAY[rel] - used
    assert not stale, f"{rel} no longer uses {sorted(stale)}: remove it from WALKING_TODAY"


def test_the_store_model_holds_the_walkers() -> None:
    """The walks consumers are moved to exist in the store layer (the list is not trivially empty)."""
    store = {name for p in (PACKAGE / "store").rglob("*.py") for name in _walkers_used(p)}
    assert {"CommitLogFileWalk", "LogFileWalk", "SegmentWalk"} <= store
