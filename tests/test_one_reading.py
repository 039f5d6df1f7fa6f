"""One reading of the store: no module outside the store model walks log bytes itself.

The design says one walker per file family, in the store model, reads a log file and judges its
bytes; commands (``ops/``, ``cli/``) and Spark sources (``pipeline/``) take their answer from it.
This test finds, by walking every module's AST, the ones that call a record walker, a framing
or decoding function of a log file, or a store walk that yields raw records, and fails on any
(issue 27 paid off the list of modules that still did, ``WALKING_TODAY``, down to none).
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
def test_no_consumer_walks_log_bytes(path: Path) -> None:
    rel = str(path.relative_to(PACKAGE))
    used = _walkers_used(path)
    assert not used, f"{rel} walks log bytes itself with {sorted(used)}: take the answer from the store model's walker"


def test_the_store_model_holds_the_walkers() -> None:
    """The walks consumers are moved to exist in the store layer (the list is not trivially empty)."""
    store = {name for p in (PACKAGE / "store").rglob("*.py") for name in _walkers_used(p)}
    assert {"CommitLogFileWalk", "LogFileWalk", "SegmentWalk"} <= store
