"""PySpark Python data sources (Spark 4 ``pyspark.sql.datasource``), one per file family.

==========================  ============================================================
format name                 rows
==========================  ============================================================
``rocketmq_commitlog``      CommitLog message records (the fields of ``dump commitlog``)
``rocketmq_consumequeue``   ConsumeQueue units (the fields of ``dump consumequeue``)
``rocketmq_index``          IndexFile entries (the entry rows of ``dump index``)
``kafka_log``               Kafka records of every magic (v0/v1 messages, v2 batches)
``jafka_log``               Jafka messages (gzip wrappers expanded)
``metaq_log``               MetaQ messages (``.meta``, ``.meta.arc`` and ``.meta.zip``)
==========================  ============================================================

``spark.read.format(NAME).load(PATH)`` (or ``.load([PATH, ...])``, or ``.option("path", ...)``):
a store root / log dir / data dir, a family directory, one file, or a glob of any of them; a
local path or any URI pyarrow opens (``hdfs://``, ``s3://``, ``file://``).  Every row carries
``source``: the path it was found under (or the ``source`` option).

Options (all optional): ``withBody`` (default true: bodies, values, payloads), ``topic``
(a comma-separated list; ``topic = ...`` and ``topic IN (...)`` filters are pushed down too:
ConsumeQueue, Kafka, Jafka and MetaQ skip whole directories, the CommitLog skips building
rows), ``splitSize`` (bytes per input partition, default 128 MiB: a bigger segment is read as
byte ranges starting on record boundaries), ``source`` (the label for ``source``), ``sources``
(a JSON list of ``[label, path]`` pairs: several stores in one read), and for
``mqtool scan``: ``withProblems`` (extra ``row_kind`` = ``problem`` / ``end`` / ``damaged`` rows
with the validate code of every broken record, each file's end of data, and the commitlog
offsets a file cut short lacks), ``withKeyHashes``
(``key_hashes``: the IndexFile hashes of the record's keys) and ``progressFile`` (a local file
where the read says which store files it has finished: ``mqtool.pipeline.progress``).

Rows are built by the same ``formats`` decoders as the CLI and shipped as Arrow record batches.

This package holds the ``DataSource`` classes and their readers; each family's planning and
reading is a module of its own: ``commitlog`` (CommitLog), ``rocketmq_derived`` (ConsumeQueue,
IndexFile), ``kafka``, ``legacy`` (Jafka, MetaQ) over ``framed`` (partition directories and the
walk of a segment), with ``schema`` (the columns) and ``common`` (options, partitions, batches,
problem rows).  The names other modules use are importable from here.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

import pyarrow as pa
from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition

if TYPE_CHECKING:
    from pyspark.sql.datasource import Filter

try:  # filter pushdown arrived in Spark 4.1
    from pyspark.sql.datasource import EqualTo, In
except ImportError:  # pragma: no cover - depends on the installed pyspark
    EqualTo = In = None  # type: ignore[assignment,misc]

from mqtool.formats.rocketmq import consume_queue as cqf
from mqtool.pipeline.progress import record_done, record_plan
from mqtool.pipeline.sources.commitlog import (
    _ahead,
    commitlog_file_size,
    commitlog_row,
    commitlog_segments,
    last_data_index,
    plan_commitlog,
    read_commitlog,
    read_commitlog_ahead,
    read_commitlog_records,
    segment_base,
)
from mqtool.pipeline.sources.common import Batches, FilePart, ReadOptions, parse_options
from mqtool.pipeline.sources.framed import plan_partitioned, read_framed
from mqtool.pipeline.sources.kafka import KAFKA_FRAMING, kafka_base, kafka_rows
from mqtool.pipeline.sources.legacy import (
    JAFKA_FRAMING,
    METAQ_FRAMING,
    jafka_base,
    jafka_rows,
    metaq_base,
    metaq_rows,
)
from mqtool.pipeline.sources.rocketmq_derived import (
    plan_consumequeue,
    plan_index,
    read_consumequeue,
    read_index,
)
from mqtool.pipeline.sources.schema import (
    BATCH_ROWS,
    COMMITLOG_COLUMNS,
    CONSUMEQUEUE_COLUMNS,
    DEFAULT_SPLIT_SIZE,
    INDEX_COLUMNS,
    JAFKA_COLUMNS,
    KAFKA_COLUMNS,
    KEY_HASHES,
    METAQ_COLUMNS,
    PROBLEM_COLUMNS,
    RECORD_PROBLEM_COLUMNS,
    ROW_EQUIVALENT_BYTES,
    Column,
    arrow_schema,
    ddl,
)

__all__ = [
    "BATCH_ROWS",
    "COMMITLOG_COLUMNS",
    "CONSUMEQUEUE_COLUMNS",
    "DEFAULT_SPLIT_SIZE",
    "FORMAT_NAMES",
    "INDEX_COLUMNS",
    "JAFKA_COLUMNS",
    "JAFKA_FRAMING",
    "KAFKA_COLUMNS",
    "KAFKA_FRAMING",
    "KEY_HASHES",
    "METAQ_COLUMNS",
    "METAQ_FRAMING",
    "PLANNERS",
    "PROBLEM_COLUMNS",
    "READERS",
    "RECORD_PROBLEM_COLUMNS",
    "ROW_EQUIVALENT_BYTES",
    "SOURCES",
    "Batches",
    "FilePart",
    "ReadOptions",
    "_ahead",
    "_columns",
    "arrow_schema",
    "commitlog_file_size",
    "commitlog_row",
    "commitlog_segments",
    "cqf",
    "ddl",
    "last_data_index",
    "parse_options",
    "plan_commitlog",
    "plan_consumequeue",
    "plan_index",
    "read_commitlog",
    "read_commitlog_ahead",
    "read_commitlog_records",
    "segment_base",
]


# --- the DataSource classes ---------------------------------------------------------------------


def _topic_values(flt: Filter) -> frozenset[str] | None:
    """The topics a ``topic = ...`` or ``topic IN (...)`` filter keeps (None: another filter)."""
    if EqualTo is not None and isinstance(flt, EqualTo) and flt.attribute == ("topic",) and isinstance(flt.value, str):
        return frozenset([flt.value])
    if In is not None and isinstance(flt, In) and flt.attribute == ("topic",) and all(isinstance(v, str) for v in flt.value):
        return frozenset(flt.value)
    return None


class _Reader(DataSourceReader):
    """Plans partitions with ``plan(opts)`` and reads one with ``read_part(part, opts, schema)``."""

    family: str = ""

    def __init__(self, opts: ReadOptions, columns: list[Column]) -> None:
        self.opts = opts
        self.columns = columns

    def pushFilters(self, filters: list[Filter]) -> Iterator[Filter]:
        for flt in filters:
            values = _topic_values(flt)
            if values is None:
                yield flt
                continue
            current = self.opts.topics
            topics = values if current is None else current & values
            self.opts = ReadOptions(**{**self.opts.__dict__, "topics": topics})

    def partitions(self) -> Sequence[InputPartition]:
        parts = PLANNERS[self.family](self.opts) or [FilePart("", "", 0, 0, 0, empty=True)]
        if self.opts.progress_file:
            record_plan(self.opts.progress_file, [part_files(part) for part in parts])
            for index, part in enumerate(parts):
                part.meta["progress_index"] = index
        return parts

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        assert isinstance(partition, FilePart)
        if partition.meta.get("empty"):
            batches: Iterator[pa.RecordBatch] = iter(())
        else:
            batches = READERS[self.family](partition, self.opts, arrow_schema(self.columns))
        index = partition.meta.get("progress_index")
        if self.opts.progress_file and index is not None:
            return _reporting(batches, self.opts.progress_file, index)
        return batches


def part_files(part: FilePart) -> list[str]:
    """The store files a partition reads (a part of one, one, or a group of ConsumeQueue files)."""
    if part.meta.get("empty"):
        return []
    if "queues" in part.meta:
        return [path for _topic, _qid, segs, _ext in part.meta["queues"] for path, _base, _size in segs]
    return [part.path]


def _reporting(batches: Iterator[pa.RecordBatch], progress_file: str, index: int) -> Iterator[pa.RecordBatch]:
    """``batches``, then the partition's line in the progress file once they are all read."""
    yield from batches
    record_done(progress_file, index)


def _columns(base: list[Column], opts: ReadOptions, family: str) -> list[Column]:
    """A family's columns with the ones its options add (``key_hashes``, the problem columns)."""
    cols = list(base)
    if family == "commitlog" and opts.with_key_hashes:
        cols.append(KEY_HASHES)
    if opts.with_problems and family in ("commitlog", "kafka", "jafka", "metaq"):
        cols.extend(PROBLEM_COLUMNS)
    return cols


class _Source(DataSource):
    """A family's source: its columns (with the options' extra ones) and its reader."""

    family = ""
    short_name = ""
    base_columns: list[Column] = []

    @classmethod
    def name(cls) -> str:
        return cls.short_name

    def schema(self) -> str:
        return ddl(_columns(self.base_columns, parse_options(self.options), self.family))

    def reader(self, schema: Any) -> DataSourceReader:
        opts = parse_options(self.options)
        return _READER_CLASSES[self.family](opts, _columns(self.base_columns, opts, self.family))


class CommitLogSource(_Source):
    """``rocketmq_commitlog``: one row per CommitLog message record."""

    family, short_name, base_columns = "commitlog", "rocketmq_commitlog", COMMITLOG_COLUMNS


class ConsumeQueueSource(_Source):
    """``rocketmq_consumequeue``: one row per ConsumeQueue unit (fillers marked)."""

    family, short_name, base_columns = "consumequeue", "rocketmq_consumequeue", CONSUMEQUEUE_COLUMNS


class IndexSource(_Source):
    """``rocketmq_index``: one row per used IndexFile entry."""

    family, short_name, base_columns = "index", "rocketmq_index", INDEX_COLUMNS


class KafkaSource(_Source):
    """``kafka_log``: one row per Kafka record (v0/v1 wrappers and v2 batches expanded)."""

    family, short_name, base_columns = "kafka", "kafka_log", KAFKA_COLUMNS


class JafkaSource(_Source):
    """``jafka_log``: one row per Jafka message (wrappers, then their inner messages)."""

    family, short_name, base_columns = "jafka", "jafka_log", JAFKA_COLUMNS


class MetaqSource(_Source):
    """``metaq_log``: one row per MetaQ message (live segments and archives)."""

    family, short_name, base_columns = "metaq", "metaq_log", METAQ_COLUMNS


def _reader_class(family: str, pushdown: bool) -> type[_Reader]:
    """The reader class of a family (without ``pushFilters`` where Spark has no filter pushdown)."""
    attrs: dict[str, object] = {"family": family}
    if not pushdown:
        attrs["pushFilters"] = DataSourceReader.pushFilters
    return type(f"{family.title()}Reader{'' if pushdown else 'NoPushdown'}", (_Reader,), attrs)


_READER_CLASSES = {family: _reader_class(family, EqualTo is not None) for family in ("commitlog", "consumequeue", "index", "kafka", "jafka", "metaq")}

PLANNERS: dict[str, Callable[[ReadOptions], list[FilePart]]] = {
    "commitlog": plan_commitlog,
    "consumequeue": plan_consumequeue,
    "index": plan_index,
    "kafka": lambda o: plan_partitioned(o, kafka_base),
    "jafka": lambda o: plan_partitioned(o, jafka_base),
    "metaq": lambda o: plan_partitioned(o, metaq_base, lambda name: not name.endswith(".zip")),
}

READERS: dict[str, Callable[[FilePart, ReadOptions, pa.Schema], Iterator[pa.RecordBatch]]] = {
    "commitlog": read_commitlog_ahead,
    "consumequeue": read_consumequeue,
    "index": read_index,
    "kafka": lambda p, o, s: read_framed(p, o, s, KAFKA_FRAMING, kafka_rows),
    "jafka": lambda p, o, s: read_framed(p, o, s, JAFKA_FRAMING, jafka_rows),
    "metaq": lambda p, o, s: read_framed(p, o, s, METAQ_FRAMING, metaq_rows),
}


SOURCES = (CommitLogSource, ConsumeQueueSource, IndexSource, KafkaSource, JafkaSource, MetaqSource)
FORMAT_NAMES = tuple(s.short_name for s in SOURCES)
