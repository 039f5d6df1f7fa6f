"""What every data source shares: its options, its input partitions, its Arrow batches, and the
rows a walk's problems and ends become.

``parse_options`` reads the options of ``spark.read.format(NAME)`` (documented in
``mqtool.pipeline.sources``) into a ``ReadOptions``; a planner turns them into ``FilePart``
partitions (a byte range of one file, or a group of files), and a reader turns one partition into
Arrow record batches through ``Batches``.  The store model's range reading of a file
(``store.model.commitlog_range``, ``store.model.framed``; types named in ``pipeline.walk``) yields ``("record", ...)``,
``("problem", ...)`` and ``("end", ...)`` items: ``with_findings`` pairs each record with the code
of the problem it was kept despite (a frame that holds around a failed checksum), and
``problem_row`` / ``end_row`` are the rows ``withProblems`` adds for the others.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import InputPartition

from mqtool.errors import StoreLayoutError
from mqtool.pipeline import files as fs
from mqtool.pipeline.sources.schema import BATCH_ROWS, DEFAULT_SPLIT_SIZE
from mqtool.pipeline.walk import Event, Problem

#: A row: a tuple in schema order, or a dict by column name (absent columns are null).
Row = tuple[object, ...] | dict[str, object]

# --- options ---------------------------------------------------------------------------------


def _flag(options: Mapping[str, str], name: str, default: bool) -> bool:
    value = options.get(name)
    if value is None:
        return default
    text = str(value).strip().lower()
    if text in ("true", "1", "yes"):
        return True
    if text in ("false", "0", "no"):
        return False
    raise ValueError(f"option {name}: expected true or false, found {value!r}")


@dataclass(frozen=True)
class ReadOptions:
    paths: tuple[str, ...]
    with_body: bool = True
    topics: frozenset[str] | None = None
    split_size: int = DEFAULT_SPLIT_SIZE
    with_problems: bool = False
    with_key_hashes: bool = False
    source: str | None = None
    #: ``progressFile``: a local file where the planner and each partition say what they have
    #: read (``mqtool.pipeline.progress``); scan passes one on ``local`` masters
    progress_file: str | None = None
    #: ``(label, path)`` pairs from the ``sources`` option: several stores in one read, each
    #: with its own ``source`` label (the same path may appear under two labels).
    labeled: tuple[tuple[str, str], ...] = ()

    def wants(self, topic: str | None) -> bool:
        return self.topics is None or topic in self.topics


def parse_options(options: Mapping[str, str]) -> ReadOptions:
    """The options of a read (``spark.read.format(NAME).option(...)``): see ``mqtool.pipeline.sources``."""
    paths: list[str] = []
    raw_paths = options.get("paths")
    if raw_paths:
        try:
            loaded = json.loads(raw_paths)
            paths.extend([loaded] if isinstance(loaded, str) else loaded)
        except ValueError:
            paths.extend(p for p in raw_paths.split(",") if p)
    if options.get("path"):
        paths.append(options["path"])
    labeled: list[tuple[str, str]] = []
    if options.get("sources"):
        pairs = json.loads(options["sources"])
        if not isinstance(pairs, list) or not all(isinstance(p, list) and len(p) == 2 and all(isinstance(x, str) for x in p) for p in pairs):
            raise ValueError("option sources: expected a JSON list of [label, path] pairs, found " + options["sources"][:200])
        labeled = [(label, path) for label, path in pairs]
    if not paths and not labeled:
        raise ValueError("no path: use .load(PATH), .load([PATH, ...]), .option('path', PATH) or .option('sources', ...)")
    topic = options.get("topic")
    split = int(options.get("splitSize") or DEFAULT_SPLIT_SIZE)
    if split <= 0:
        raise ValueError(f"option splitSize: expected a positive number of bytes, found {split}")
    return ReadOptions(
        paths=tuple(paths),
        with_body=_flag(options, "withBody", True),
        topics=frozenset(t.strip() for t in topic.split(",") if t.strip()) if topic else None,
        split_size=split,
        with_problems=_flag(options, "withProblems", False),
        with_key_hashes=_flag(options, "withKeyHashes", False),
        source=options.get("source"),
        progress_file=options.get("progressFile") or None,
        labeled=tuple(labeled),
    )


def roots(opts: ReadOptions) -> list[tuple[str, str]]:
    """``(source label, path)`` for every path and glob match."""
    out: list[tuple[str, str]] = []
    for pattern in opts.paths:
        matches = fs.expand(pattern)
        if not matches:
            raise StoreLayoutError("no such file or directory", path=pattern)
        out.extend((opts.source or m, m) for m in matches)
    for label, pattern in opts.labeled:
        matches = fs.expand(pattern)
        if not matches:
            raise StoreLayoutError("no such file or directory", path=pattern)
        out.extend((label if len(matches) == 1 else f"{label}:{m}", m) for m in matches)
    return out


# --- partitions and batches ------------------------------------------------------------------


class FilePart(InputPartition):
    """A byte range ``[start, stop)`` of one file (or a group of small files, ``members``)."""

    def __init__(self, source: str, path: str, base: int = 0, start: int = 0, stop: int = 0, **meta: Any) -> None:
        super().__init__(path)
        self.source = source
        self.path = path
        self.base = base
        self.start = start
        self.stop = stop
        self.meta = meta

    def __repr__(self) -> str:
        return f"FilePart({self.path!r}, {self.start}, {self.stop})"


def ranges(size: int, split: int) -> list[tuple[int, int]]:
    """``[start, stop)`` byte ranges of at most ``split`` bytes covering ``size`` bytes."""
    if size <= 0:
        return []
    return [(s, min(s + split, size)) for s in range(0, size, split)]


class Batches:
    """Accumulates rows (tuples in schema order, or dicts) and cuts Arrow record batches; the
    rows are transposed into columns in C (``zip(*rows)``) when a batch is cut."""

    def __init__(self, schema: pa.Schema, rows: int = BATCH_ROWS) -> None:
        self.schema = schema
        self.names = schema.names
        self.rows_per_batch = rows
        self.rows: list[tuple[object, ...]] = []

    def add(self, row: dict[str, object]) -> pa.RecordBatch | None:
        get = row.get
        return self.add_tuple(tuple([get(name) for name in self.names]))

    def add_tuple(self, row: tuple[object, ...]) -> pa.RecordBatch | None:
        self.rows.append(row)
        return self.flush() if len(self.rows) >= self.rows_per_batch else None

    def flush(self) -> pa.RecordBatch | None:
        if not self.rows:
            return None
        columns = zip(*self.rows)
        self.rows = []
        arrays = [pa.array(col, type=f.type) for col, f in zip(columns, self.schema)]
        return pa.RecordBatch.from_arrays(arrays, schema=self.schema)


def problem_row(part: FilePart, pos: int, problem: Problem) -> dict[str, object]:
    """The ``problem`` row of a problem a walk met at ``pos``."""
    return {
        "source": part.source,
        "file": part.path,
        "position": problem.position if problem.position is not None else pos,
        "row_kind": "problem",
        "problem_code": problem.code,
        "problem_message": problem.message,
        "problem_length": problem.length,
        "damaged_from": problem.damaged[0] if problem.damaged else None,
        "damaged_to": problem.damaged[1] if problem.damaged else None,
        "problem_at": pos,
        "problem_ignored": problem.ignored,
    }


def end_row(part: FilePart, pos: int, kind: str) -> dict[str, object]:
    """The ``end`` row of a walk that reached the end of the data at ``pos`` (``kind``: what follows)."""
    return {"source": part.source, "file": part.path, "position": pos, "row_kind": "end", "problem_message": kind}


def add_row(out: Batches, row: Row | None) -> pa.RecordBatch | None:
    """Add ``row`` (None: nothing) to ``out``; a batch when one is full."""
    if row is None:
        return None
    return out.add_tuple(row) if isinstance(row, tuple) else out.add(row)


def with_findings(walk: Iterator[Event]) -> Iterator[tuple[str, int, object, str | None]]:
    """The items of a walk, each record with the code of the problem it was kept despite (the
    ``kept`` problem just before it, at its position), else None."""
    kept: tuple[int, str] | None = None
    for kind, pos, item in walk:
        if kind == "problem" and isinstance(item, Problem) and item.kept:
            kept = (pos, item.code)
        yield kind, pos, item, (kept[1] if kind == "record" and kept is not None and kept[0] == pos else None)


def constant(value: object, type_: pa.DataType, count: int) -> pa.Array:
    """An Arrow array of ``count`` times ``value``."""
    return pa.repeat(pa.scalar(value, type=type_), count)
