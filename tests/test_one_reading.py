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
        "FileRecords",
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
        # the derived files' and archives' decoders (ConsumeQueue, ConsumeQueueExt, IndexFile, .meta.zip)
        "CqWalker",
        "cq_units",
        "decode_cq_unit",
        "decode_cq_ext_unit",
        "decode_index_header",
        "index_entries",
        "decode_zip_archive",
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
    assert {"FileRecords", "LogFileWalk", "SegmentWalk"} <= store


#: Modules of ops/ and pipeline/ that read store bytes without judging them, and why: the only
#: places outside store/ that call ``pread`` / ``read_all`` / ``iter_chunks``.  Everything that
#: reads to decide what the bytes are goes through the store model.
RAW_READERS = {
    "ops/diff/bytelog.py": "diff compares two logs' bytes block by block",
    "pipeline/files.py": "the Spark sources' file system adapter (local files and pyarrow URIs) is what pread is",
}

_RAW_READS = frozenset({"pread", "read_all", "iter_chunks"})


def _raw_reads(path: Path) -> bool:
    tree = ast.parse(path.read_text(), filename=str(path))
    return any(isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr in _RAW_READS for n in ast.walk(tree))


@pytest.mark.parametrize("path", _consumer_modules(), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_no_consumer_reads_store_bytes_to_judge_them(path: Path) -> None:
    rel = str(path.relative_to(PACKAGE))
    if rel in RAW_READERS:
        assert _raw_reads(path), f"{rel} no longer reads bytes itself: remove it from RAW_READERS"
        return
    assert not _raw_reads(path), f"{rel} reads store bytes itself (pread/read_all/iter_chunks): take them from the store model"


#: The loops that read a log file in pieces (``store.files.piece_size`` / ``CHUNK_SIZE``), one
#: per file family, and why each is one: every other reader of a log takes its bytes from these.
PIECE_LOOPS = {
    "store/model/commitlog_walk.py": (
        "the CommitLog's one walk: the column walk over healthy records, the precise decoder around an anomaly, "
        "and its recovery reading (FileRecords: the broker's normal recovery, reading on from the walk's handover)"
    ),
    "store/rocketmq.py": "find_next_record's sync search (the walk's resynchronisation after a broken record)",
    "store/kafka.py": "a Kafka .log: LogFileWalk and its one resync",
    "store/model/framed.py": "the length-framed logs (Jafka, MetaQ; Kafka's Spark ranges): PieceWalk and its one search",
    "store/legacy.py": "a MetaQ .meta.zip archive's inflated stream (read as the segment it holds)",
    "store/model/compaction.py": "the 5.x compaction store's batch ConsumeQueue files",
    "store/model/timer.py": "the 5.x timer store's timerlog and timerwheel",
    "store/files.py": "where the piece size is defined, and the zero-tail search every walk shares (nonzero_extent)",
    "ops/diff/bytelog.py": "compares two logs' bytes block by block (RAW_READERS)",
}

#: Modules that only choose the piece size a walk above reads with (they hand it over, read nothing).
PIECE_SIZE_CHOSEN = {
    "store/model/kafka.py": "validate's Kafka tasks: LogFileWalk's piece for a deep reading",
    "store/model/kafka_segment.py": "a segment task's LogFileWalk piece",
}

_PIECE_NAMES = frozenset({"piece_size", "CHUNK_SIZE"})


def _reads_in_pieces(path: Path) -> bool:
    tree = ast.parse(path.read_text(), filename=str(path))
    return any(
        (isinstance(n, ast.Name) and n.id in _PIECE_NAMES)
        or (isinstance(n, ast.Attribute) and n.attr in _PIECE_NAMES)
        or (isinstance(n, ast.alias) and n.name in _PIECE_NAMES)
        for n in ast.walk(tree)
    )


def test_logs_are_read_in_pieces_by_one_loop_per_family() -> None:
    """A module that reads a log in pieces is one of the listed loops (issue 27: the CommitLog had
    six, the range reading of the Spark source and the record readers of the model among them)."""
    found = {str(p.relative_to(PACKAGE)) for p in sorted(PACKAGE.rglob("*.py")) if _reads_in_pieces(p)}
    listed = set(PIECE_LOOPS) | set(PIECE_SIZE_CHOSEN)
    assert found - listed == set(), "these read a log in pieces besides the one loop of their family"
    assert listed - found == set(), "these no longer read in pieces: remove them from PIECE_LOOPS"
