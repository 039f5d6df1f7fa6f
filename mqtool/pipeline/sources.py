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
"""

from __future__ import annotations

import json
import queue
import struct
import threading
from collections.abc import Generator, Iterator
from dataclasses import dataclass
from typing import cast

import numpy as np
import pyarrow as pa
from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition

try:  # filter pushdown arrived in Spark 4.1
    from pyspark.sql.datasource import EqualTo, In
except ImportError:  # pragma: no cover - depends on the installed pyspark
    EqualTo = In = None  # type: ignore[assignment,misc]

from mqtool.errors import MqError, StoreLayoutError, hexint
from mqtool.formats import jafka as jf
from mqtool.formats import metaq as mq
from mqtool.formats import segment_names as segnames
from mqtool.formats.kafka import checkpoint_file as kcp
from mqtool.formats.kafka import record_batch as krb
from mqtool.formats.kafka.log import LogWalker, decode_entry, peek_entry
from mqtool.formats.rocketmq import columns as rcols
from mqtool.formats.rocketmq import consume_queue as cqf
from mqtool.formats.rocketmq import index_file as idxf
from mqtool.formats.rocketmq.commitlog import (
    COMPRESSION_TYPES,
    MAGIC_V1,
    MAGIC_V2,
    SYSFLAG_COMPRESSED,
    SYSFLAG_COMPRESSION_MASK,
    SYSFLAG_TRANSACTION_MASK,
    TRANSACTION_TYPES,
)
from mqtool.formats.rocketmq.hashing import index_key_hash
from mqtool.formats.rocketmq.properties import split_keys
from mqtool.pipeline import files as fs
from mqtool.pipeline.progress import record_done, record_plan
from mqtool.pipeline.walk import Framing, Problem, walk_commitlog, walk_framed
from mqtool.store import jafka as sjafka
from mqtool.store import kafka as kstore
from mqtool.store import metaq as smetaq
from mqtool.store import rocketmq as rmq
from mqtool.store.files import piece_size
from mqtool.store.legacy import framed_message
from mqtool.store.rocketmq import MAX_RECORD_SIZE, find_next_record
from mqtool.store.writer import cq_tags_code

DEFAULT_SPLIT_SIZE = 128 << 20
#: ConsumeQueue units and IndexFile entries are 20 bytes each but cost a task about as much per
#: row as a CommitLog record does: their partitions are sized in rows, as many rows as a
#: ``splitSize`` of records of this many bytes (131,072 rows at the default 128 MiB), so they
#: spread over the cores like the CommitLog read (by bytes, 450,000 used entries of one IndexFile
#: were one partition, one task).
ROW_EQUIVALENT_BYTES = 1024
BATCH_ROWS = 4096

# --- schemas: (name, Spark DDL type, Arrow type) ---------------------------------------------

_STR, _LONG, _INT, _BOOL, _BIN = pa.string(), pa.int64(), pa.int32(), pa.bool_(), pa.binary()
_T = {"string": _STR, "long": _LONG, "int": _INT, "boolean": _BOOL, "binary": _BIN}


def _col(name: str, ddl: str, arrow: pa.DataType | None = None) -> tuple[str, str, pa.DataType]:
    return name, ddl, arrow if arrow is not None else _T[ddl]


PROBLEM_COLUMNS = [
    _col("row_kind", "string"),
    _col("problem_code", "string"),
    _col("problem_message", "string"),
    _col("problem_length", "long"),
    _col("damaged_from", "long"),
    _col("damaged_to", "long"),
    _col("problem_at", "long"),  # where the walk met it (the record's start; ``position`` is the finding's)
    _col("problem_ignored", "string"),  # what the broker does with bytes it loses nothing by (``Problem.ignored``)
    _col("finding", "string"),  # record rows: the code of the finding a record kept despite its damage carries (last: ``_precise_row``)
]
#: the problem columns a record row keeps in the datasets ``mqtool scan`` writes
RECORD_PROBLEM_COLUMNS = ("finding",)

COMMITLOG_COLUMNS = [
    _col("source", "string"),
    _col("file", "string"),
    _col("position", "long"),
    _col("commitlog_offset", "long"),
    _col("total_size", "int"),
    _col("magic_code", "string"),
    _col("version", "int"),
    _col("body_crc", "long"),
    _col("queue_id", "int"),
    _col("flag", "int"),
    _col("queue_offset", "long"),
    _col("physical_offset", "long"),
    _col("sys_flag", "int"),
    _col("transaction_type", "string"),
    _col("compression", "string"),
    _col("born_timestamp", "long"),
    _col("born_host", "string"),
    _col("store_timestamp", "long"),
    _col("store_host", "string"),
    _col("reconsume_times", "int"),
    _col("prepared_transaction_offset", "long"),
    _col("topic", "string"),
    _col("tags", "string"),
    _col("keys", "array<string>", pa.list_(_STR)),
    _col("uniq_key", "string"),
    _col("msg_id", "string"),
    _col("properties", "map<string,string>", pa.map_(_STR, _STR)),
    _col("body_size", "int"),
    _col("body", "binary"),
    _col("tags_code", "long"),
]
KEY_HASHES = _col("key_hashes", "array<int>", pa.list_(_INT))

CONSUMEQUEUE_COLUMNS = [
    _col("source", "string"),
    _col("file", "string"),
    _col("position", "long"),
    _col("topic", "string"),
    _col("queue_id", "int"),
    _col("queue_offset", "long"),
    _col("commitlog_offset", "long"),
    _col("size", "int"),
    _col("tags_code", "long"),
    _col("ext_offset", "long"),
    _col("kind", "string"),
    # tagsCode read from ConsumeQueueExt for an ext address (null: none, or no ext directory)
    _col("ext_tags_code", "long"),
    # an ext address whose ConsumeQueueExt directory exists but holds no unit there
    _col("ext_missing", "boolean"),
]

INDEX_COLUMNS = [
    _col("source", "string"),
    _col("file", "string"),
    _col("position", "long"),
    _col("number", "int"),
    _col("slot", "int"),
    _col("key_hash", "int"),
    _col("commitlog_offset", "long"),
    _col("time_diff", "int"),
    _col("timestamp", "long"),
    _col("prev_index", "int"),
]

_HEADERS = pa.list_(pa.struct([pa.field("key", _STR), pa.field("value", _BIN)]))
KAFKA_COLUMNS = [
    _col("source", "string"),
    _col("file", "string"),
    _col("batch_position", "long"),
    _col("topic", "string"),
    _col("partition", "int"),
    _col("magic", "int"),
    _col("base_offset", "long"),
    _col("last_offset", "long"),
    _col("offset", "long"),
    _col("timestamp", "long"),
    _col("timestamp_type", "string"),
    _col("key_size", "int"),
    _col("key", "binary"),
    _col("value_size", "int"),
    _col("payload", "binary"),
    _col("headers", "array<struct<key:string,value:binary>>", _HEADERS),
    _col("sequence", "int"),
    _col("is_control", "boolean"),
    _col("is_transactional", "boolean"),
    _col("producer_id", "long"),
    _col("producer_epoch", "int"),
    _col("compression_type", "int"),
]

JAFKA_COLUMNS = [
    _col("source", "string"),
    _col("file", "string"),
    _col("position", "long"),
    _col("topic", "string"),
    _col("partition", "int"),
    _col("offset", "long"),
    _col("next_offset", "long"),
    _col("kind", "string"),
    _col("depth", "int"),
    _col("inner_index", "int"),
    _col("inner_position", "long"),
    _col("length", "int"),
    _col("magic", "int"),
    _col("attribute", "int"),
    _col("codec", "string"),
    _col("crc", "long"),
    _col("payload_size", "int"),
    _col("payload", "binary"),
]

METAQ_COLUMNS = [
    _col("source", "string"),
    _col("file", "string"),
    _col("position", "long"),
    _col("topic", "string"),
    _col("partition", "int"),
    _col("offset", "long"),
    _col("next_offset", "long"),
    _col("msg_len", "int"),
    _col("checksum", "long"),
    _col("id", "long"),
    _col("flag", "int"),
    _col("attribute", "string"),
    _col("payload_size", "int"),
    _col("payload", "binary"),
]


def ddl(columns) -> str:
    return ", ".join(f"`{name}` {type_}" for name, type_, _ in columns)


def arrow_schema(columns) -> pa.Schema:
    return pa.schema([pa.field(name, arrow) for name, _, arrow in columns])


# --- options ---------------------------------------------------------------------------------


def _flag(options, name: str, default: bool) -> bool:
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


def parse_options(options) -> ReadOptions:
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
            raise ValueError('option sources: expected a JSON list of [label, path] pairs, found ' + options["sources"][:200])
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


def _roots(opts: ReadOptions) -> list[tuple[str, str]]:
    """``(source label, path)`` for every path and glob match."""
    out = []
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

    def __init__(self, source: str, path: str, base: int = 0, start: int = 0, stop: int = 0, **meta) -> None:
        super().__init__(path)
        self.source = source
        self.path = path
        self.base = base
        self.start = start
        self.stop = stop
        self.meta = meta

    def __repr__(self) -> str:
        return f"FilePart({self.path!r}, {self.start}, {self.stop})"


def _ranges(size: int, split: int) -> list[tuple[int, int]]:
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
        self.rows: list[tuple] = []

    def add(self, row: dict) -> pa.RecordBatch | None:
        get = row.get
        return self.add_tuple(tuple([get(name) for name in self.names]))

    def add_tuple(self, row: tuple) -> pa.RecordBatch | None:
        self.rows.append(row)
        return self.flush() if len(self.rows) >= self.rows_per_batch else None

    def flush(self) -> pa.RecordBatch | None:
        if not self.rows:
            return None
        columns = zip(*self.rows)
        self.rows = []
        arrays = [pa.array(col, type=f.type) for col, f in zip(columns, self.schema)]
        return pa.RecordBatch.from_arrays(arrays, schema=self.schema)


def _problem_row(part: FilePart, pos: int, problem: Problem) -> dict:
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


def _end_row(part: FilePart, pos: int, kind: str) -> dict:
    return {"source": part.source, "file": part.path, "position": pos, "row_kind": "end", "problem_message": kind}


# --- RocketMQ ---------------------------------------------------------------------------------


def _rmq_root_dir(path: str, family: str) -> str | None:
    entry = fs.stat_path(path)
    if entry is None or not entry.is_dir:
        return None
    sub = fs.join(path, family)
    sub_entry = fs.stat_path(sub)
    return sub if sub_entry is not None and sub_entry.is_dir else None


def commitlog_segments(path: str) -> list[fs.Entry]:
    """CommitLog files for a store root, a ``commitlog/`` directory or one file (by offset)."""
    entry = fs.stat_path(path)
    if entry is None:
        raise StoreLayoutError("no such file or directory", path=path)
    if not entry.is_dir:
        return [entry]
    directory = _rmq_root_dir(path, "commitlog") or path
    segs = [e for e in fs.listdir(directory) if not e.is_dir and segnames.ROCKETMQ_FILE_NAME.match(e.name)]
    return sorted(segs, key=lambda e: int(e.name))


def _segment_base(entry: fs.Entry) -> int:
    return int(entry.name) if segnames.ROCKETMQ_FILE_NAME.match(entry.name) else 0


def _last_data_index(segs: list[fs.Entry]) -> int:
    """The last file whose first record header is not zeros (validate's "last file")."""
    for i in range(len(segs) - 1, -1, -1):
        if segs[i].size == 0:
            continue
        try:
            with fs.open_file(segs[i].path) as f:
                if f.pread(0, 8).strip(b"\x00"):
                    return i
        except MqError:
            return i
    return -1


def commitlog_file_size(segs: list[fs.Entry]) -> int | None:
    """The store's CommitLog file size, as validate detects it (``rmq.detect_file_size``: the
    most common size among non-empty files)."""
    return rmq.detect_file_size(cast("list[rmq.Segment]", segs))  # it reads only ``size``


def plan_commitlog(opts: ReadOptions) -> list[FilePart]:
    parts = []
    for source, root in _roots(opts):
        segs = commitlog_segments(root)
        last = _last_data_index(segs)
        file_size = commitlog_file_size(segs)
        for i, seg in enumerate(segs):
            for start, stop in _ranges(seg.size, opts.split_size):
                parts.append(FilePart(source, seg.path, _segment_base(seg), start, stop, is_last=i == last, file_size=file_size))
    return parts


def _key_hashes(rec) -> list[int] | None:
    if rec.dropped_properties:
        return None
    keys = []
    if rec.uniq_key:
        keys.append(f"{rec.topic}#{rec.uniq_key}")
    keys.extend(f"{rec.topic}#{k}" for k in split_keys(rec.properties))
    return sorted({index_key_hash(k) for k in keys})


_HOST_TEXT: dict = {}
_TAGS_CODE: dict = {}
_MAGIC_TEXT = {m: hexint(m) for m in (0xDAA320A7, 0xDAA320AB)}


def _host_text(host) -> str:
    text = _HOST_TEXT.get(host)
    if text is None:
        if len(_HOST_TEXT) > 4096:
            _HOST_TEXT.clear()
        text = _HOST_TEXT[host] = str(host)
    return text


def _tags_code(rec) -> int:
    """``cq_tags_code`` cached per TAGS value (delayed messages depend on their store time)."""
    if rec.topic == "SCHEDULE_TOPIC_XXXX":
        return cq_tags_code(rec)
    tags = rec.properties.get("TAGS")
    code = _TAGS_CODE.get(tags)
    if code is None:
        if len(_TAGS_CODE) > 65536:
            _TAGS_CODE.clear()
        code = _TAGS_CODE[tags] = cq_tags_code(rec)
    return code


def commitlog_row(part: FilePart, pos: int, rec, opts: ReadOptions) -> tuple:
    """The row of one record, in ``COMMITLOG_COLUMNS`` order: ``mqtool dump commitlog
    --jsonl``'s fields (bytes as bytes), then ``tags_code`` (and ``key_hashes``, ``row_kind``)."""
    props = rec.properties
    body = rec.body
    sys_flag = rec.sys_flag
    row = (
        part.source,
        part.path,
        pos,
        part.base + pos,
        rec.total_size,
        _MAGIC_TEXT.get(rec.magic_code) or hexint(rec.magic_code),
        rec.version,
        rec.body_crc,
        rec.queue_id,
        rec.flag,
        rec.queue_offset,
        rec.physical_offset,
        sys_flag,
        rec.transaction_type,
        rec.compression_type if sys_flag & 1 else None,
        rec.born_timestamp,
        _host_text(rec.born_host),
        rec.store_timestamp,
        _host_text(rec.store_host),
        rec.reconsume_times,
        rec.prepared_transaction_offset,
        rec.topic,
        props.get("TAGS"),
        rec.keys,
        props.get("UNIQ_KEY"),
        rec.msg_id,
        props,
        len(body),
        body if opts.with_body else None,
        _tags_code(rec),
    )
    if opts.with_key_hashes:
        row += (_key_hashes(rec),)
    if opts.with_problems:
        row += _RECORD_KIND
    return row


_RECORD_KIND = ("record",) + (None,) * (len(PROBLEM_COLUMNS) - 1)


def _precise_row(part: FilePart, opts: ReadOptions, kind: str, pos: int, item: object, finding: str | None = None) -> tuple | dict | None:
    """The row of one item of ``walk_commitlog`` (None: none, a record of another topic or a
    problem without ``withProblems``): a tuple in schema order for a record, else a dict.
    ``finding``: the code a record kept despite its damage carries (its ``finding`` column)."""
    if kind == "record":
        if not opts.wants(item.topic):  # type: ignore[attr-defined]
            return None
        row = commitlog_row(part, pos, item, opts)
        return row[:-1] + (finding,) if finding is not None and opts.with_problems else row
    if not opts.with_problems:
        return None
    if kind == "problem":
        row = _problem_row(part, pos, item)  # type: ignore[arg-type]
        row["commitlog_offset"] = part.base + pos
        return row
    if kind == "damaged":
        lo, hi = item  # type: ignore[misc]
        return {"source": part.source, "file": part.path, "position": pos, "row_kind": "damaged", "damaged_from": lo, "damaged_to": hi}
    row = _end_row(part, pos, item)  # type: ignore[arg-type]
    row["commitlog_offset"] = part.base + pos
    return row


def _add(out: Batches, row: tuple | dict | None) -> pa.RecordBatch | None:
    if row is None:
        return None
    return out.add_tuple(row) if isinstance(row, tuple) else out.add(row)


def _with_findings(walk: Iterator[tuple[str, int, object]]) -> Iterator[tuple[str, int, object, str | None]]:
    """The items of a walk, each record with the code of the problem it was kept despite (the
    ``kept`` problem just before it, at its position), else None."""
    kept: tuple[int, str] | None = None
    for kind, pos, item in walk:
        if kind == "problem" and item.kept:  # type: ignore[attr-defined]
            kept = (pos, item.code)  # type: ignore[attr-defined]
        yield kind, pos, item, (kept[1] if kind == "record" and kept is not None and kept[0] == pos else None)


def read_commitlog_records(part: FilePart, opts: ReadOptions, schema: pa.Schema) -> Iterator[pa.RecordBatch]:
    """The per-record reading of a partition: every item of ``walk_commitlog`` decoded and turned
    into a row on its own (what :func:`read_commitlog` falls back to where the fast walk stops)."""
    out = Batches(schema)
    with fs.open_file(part.path) as f:
        walk = walk_commitlog(f, part.base, part.start, part.stop, part.meta.get("is_last", False), part.meta.get("file_size"))
        for kind, pos, item, finding in _with_findings(walk):
            batch = _add(out, _precise_row(part, opts, kind, pos, item, finding))
            if batch is not None:
                yield batch
    last = out.flush()
    if last is not None:
        yield last


# The column-wise reading: healthy stretches framed by ``walk_columns`` into numpy columns and
# built into Arrow arrays in bulk; the per-record path takes over wherever the fast walk stops.

_MAGIC_TEXTS = pa.array([_MAGIC_TEXT[MAGIC_V1], _MAGIC_TEXT[MAGIC_V2]])
_TRANSACTION_TEXTS = pa.array([TRANSACTION_TYPES[i << 2] for i in range(4)])
_COMPRESSION_TEXTS = pa.array([COMPRESSION_TYPES.get(i, "UNKNOWN") for i in range(8)])
#: After the fast walk refused a stretch's first record, the per-record path reads at least this
#: many records (doubling on each such refusal, up to the cap) before the fast walk tries again.
_PRECISE_RECORDS = 64
_PRECISE_RECORDS_CAP = 1 << 20
#: Bytes a fast stretch reads past its range's stop (a longer record there is read whole next).
_PAST_STOP = 64 << 10


def _spans(type_: pa.DataType, spans: rcols.Spans) -> pa.Array:
    """Arrow strings or binaries over the packed values (no copy)."""
    return pa.Array.from_buffers(type_, len(spans), [None, pa.py_buffer(spans.offsets), pa.py_buffer(spans.values)])


def _strings(spans: rcols.Spans) -> pa.Array:
    return _spans(_STR, spans)


def _constant(value: object, type_: pa.DataType, count: int) -> pa.Array:
    return pa.repeat(pa.scalar(value, type=type_), count)


def _pick(texts: pa.Array, index: np.ndarray, missing: np.ndarray | None = None) -> pa.Array:
    """``texts[index]`` (null where ``missing``)."""
    return texts.take(pa.array(index, mask=missing))


def _column_batch(
    part: FilePart, opts: ReadOptions, schema: pa.Schema, shift: int, cols: rcols.CommitLogColumns, rows: np.ndarray, fields: rcols.RecordFields
) -> pa.RecordBatch:
    """The rows of records ``rows`` of a fast walk (positions ``shift`` + the walk's), column by
    column: the values ``commitlog_row`` gives for them, built in bulk."""
    count = len(rows)
    position = cols.position[rows] + shift
    sys_flag = cols.sys_flag[rows]
    hosts = pa.array(fields.hosts, type=_STR)
    values = _strings(fields.values)
    v2 = fields.magic == MAGIC_V2
    built = {
        "source": _constant(part.source, pa.string(), count),
        "file": _constant(part.path, pa.string(), count),
        "position": pa.array(position),
        "commitlog_offset": pa.array(position + part.base),
        "total_size": pa.array(cols.size[rows]),
        "magic_code": _pick(_MAGIC_TEXTS, v2.astype(np.int8)),
        "version": pa.array(np.where(v2, 2, 1).astype(np.int32)),
        "body_crc": pa.array(fields.body_crc),
        "queue_id": pa.array(cols.queue_id[rows]),
        "flag": pa.array(fields.flag),
        "queue_offset": pa.array(cols.queue_offset[rows]),
        "physical_offset": pa.array(fields.physical_offset),
        "sys_flag": pa.array(sys_flag),
        "transaction_type": _pick(_TRANSACTION_TEXTS, (sys_flag & SYSFLAG_TRANSACTION_MASK) >> 2),
        "compression": _pick(_COMPRESSION_TEXTS, (sys_flag & SYSFLAG_COMPRESSION_MASK) >> 8, (sys_flag & SYSFLAG_COMPRESSED) == 0),
        "born_timestamp": pa.array(fields.born_timestamp),
        "born_host": _pick(hosts, fields.born_host),
        "store_timestamp": pa.array(cols.store_timestamp[rows]),
        "store_host": _pick(hosts, fields.store_host),
        "reconsume_times": pa.array(fields.reconsume_times),
        "prepared_transaction_offset": pa.array(fields.prepared_transaction_offset),
        "topic": _pick(pa.array(cols.topics, type=_STR), cols.topic[rows]),
        "tags": _pick(values, fields.tags_pair, fields.tags_pair < 0),
        "keys": pa.ListArray.from_arrays(pa.array(fields.token_offsets), _strings(fields.key_tokens)),
        "uniq_key": _pick(values, fields.uniq_pair, fields.uniq_pair < 0),
        "msg_id": _strings(fields.msg_id),
        "properties": pa.MapArray.from_arrays(pa.array(fields.pair_offsets), _strings(fields.names), values),
        "body_size": pa.array(fields.body_size),
        "body": _spans(_BIN, fields.body) if fields.body is not None else pa.nulls(count, _BIN),
        "tags_code": pa.array(cols.tags_code[rows]),
    }
    if opts.with_key_hashes:
        hashes = rcols.key_hash_lists(cols, rows)
        built["key_hashes"] = pa.ListArray.from_arrays(pa.array(hashes.offsets), pa.array(hashes.values))
    if opts.with_problems:
        built["row_kind"] = _constant("record", pa.string(), count)
    arrays = [built[f.name] if f.name in built else pa.nulls(count, f.type) for f in schema]
    return pa.RecordBatch.from_arrays(arrays, schema=schema)


@dataclass(frozen=True)
class _FastEnd:
    """How a fast stretch ended: ``done`` (a record at or after the range's stop: the range is
    read), else the per-record path goes on from ``last`` (the stretch's last record, None: none)
    and reads at least up to ``refused`` (where the fast walk stopped)."""

    done: bool
    last: int | None
    refused: int


def _fast_stretch(f, part: FilePart, opts: ReadOptions, schema: pa.Schema, pos: int, is_last: bool) -> Generator[pa.RecordBatch, None, _FastEnd]:
    """Batches of the healthy records from the record at ``pos`` on, chunk by chunk, as long as
    the fast walk frames them (chunks continue exactly as ``walk_commitlog``'s do)."""
    last: int | None = None
    want = 0
    piece = piece_size()
    while True:
        # up to a piece, no further past the range's stop than a record needs to be seen whole
        data = f.pread(pos, want or min(piece, max(part.stop - pos, 0) + _PAST_STOP))
        want = 0
        walk = rcols.walk_columns(data, part.base + pos, key_hashes=opts.with_key_hashes)
        cols = walk.columns
        count = int(np.searchsorted(cols.position, part.stop - pos))  # the records before the range's stop
        done = count < len(cols)
        refused: int | None = None
        if count:
            wanted = np.arange(count)
            if opts.topics is not None:
                keep = np.array([opts.wants(t) for t in cols.topics] or [False], dtype=bool)
                wanted = wanted[keep[cols.topic[:count]]]
            fields = rcols.record_fields(data, cols, wanted, with_body=opts.with_body, properties=walk.properties)
            repeated = rcols.repeated_property_names(fields.names, fields.pair_offsets)
            if len(repeated):  # a map that is not its list of pairs: the per-record path reads it
                count = int(wanted[repeated[0]])
                done, refused = False, pos + int(cols.position[count])
                wanted = wanted[: repeated[0]]
                fields = rcols.record_fields(data, cols, wanted, with_body=opts.with_body, properties=walk.properties)
            if len(wanted):
                batch = _column_batch(part, opts, schema, pos, cols, wanted, fields)
                for at in range(0, batch.num_rows, BATCH_ROWS):
                    yield batch.slice(at, BATCH_ROWS)
            if count:
                last = pos + int(cols.position[count - 1])
        if done:
            return _FastEnd(True, last, pos + int(cols.position[count]))
        if refused is not None:
            return _FastEnd(False, last, refused)
        stop = walk.stop
        if rmq.piece_goes_on(stop.kind, stop.position, len(data), pos + len(data) < f.size) and not (
            stop.kind == "partial" and stop.length > MAX_RECORD_SIZE
        ):
            if stop.kind == "partial" and stop.position == 0:
                want = max(stop.length, piece)
            pos += stop.position
            continue
        return _FastEnd(False, last, pos + stop.position)


def read_commitlog(part: FilePart, opts: ReadOptions, schema: pa.Schema) -> Iterator[pa.RecordBatch]:
    """The rows of a partition: the rows of :func:`read_commitlog_records`, built column-wise.

    Healthy records are framed by ``walk_columns`` and turned into Arrow arrays in bulk; where
    the fast walk stops (a record that is not healthy, a properties map that is not its list of
    pairs, the end of the data) ``walk_commitlog`` goes on from the stretch's last record, so
    problem, damaged and end rows are exactly its own, and the fast walk takes over again at the
    next record that is a sync point past the place it stopped.  ``walk_commitlog`` started at a
    record reads from there exactly as it does after reaching that record (its chunks start on
    records; a sync point is where ``find_next_record`` finds one)."""
    out = Batches(schema)
    is_last = part.meta.get("is_last", False)
    file_size = part.meta.get("file_size")
    with fs.open_file(part.path) as f:
        pos = find_next_record(f, part.base, part.start) if part.start else 0  # type: ignore[arg-type]  # reads like ReadOnlyFile
        precise_records = 0
        while pos is not None:
            end = yield from _fast_stretch(f, part, opts, schema, pos, is_last)
            if end.done:
                break
            precise_records = 0 if end.last is not None else min(max(_PRECISE_RECORDS, 2 * precise_records), _PRECISE_RECORDS_CAP)
            restart = end.last if end.last is not None else pos
            pos = None
            seen = 0
            for kind, at, item, finding in _with_findings(walk_commitlog(f, part.base, restart, part.stop, is_last, file_size)):
                if kind == "record":
                    if at == end.last:  # the fast stretch's row
                        continue
                    if at > end.refused and seen >= precise_records and item.physical_offset == part.base + at:  # type: ignore[attr-defined]
                        pos = at  # a sync point: the fast walk again
                        break
                    seen += 1
                batch = _add(out, _precise_row(part, opts, kind, at, item, finding))
                if batch is not None:
                    yield batch
            last = out.flush()
            if last is not None:
                yield last


def _ahead(batches: Iterator[pa.RecordBatch], depth: int = 1) -> Iterator[pa.RecordBatch]:
    """``batches``, built by a thread up to ``depth`` batches ahead of the consumer.

    The Python worker ships each batch to the JVM over a socket, and that write waits while the
    JVM turns the batch before into rows: building the next batch meanwhile keeps the decode
    going through the wait (the write waits without the GIL).  An error in ``batches`` is raised
    again in the consumer; a consumer that stops early (``limit``) stops the thread, which then
    closes ``batches`` (its files)."""
    slots: queue.Queue[tuple[bool, pa.RecordBatch | BaseException | None]] = queue.Queue(maxsize=depth)
    abandoned = threading.Event()

    def put(item: tuple[bool, pa.RecordBatch | BaseException | None]) -> bool:
        while not abandoned.is_set():
            try:
                slots.put(item, timeout=0.05)
                return True
            except queue.Full:
                continue
        return False

    def produce() -> None:
        try:
            for batch in batches:
                if not put((True, batch)):
                    return
            put((False, None))
        except BaseException as exc:  # noqa: BLE001 - handed to the consumer, raised there
            put((False, exc))
        finally:
            close = getattr(batches, "close", None)
            if close is not None:
                close()

    threading.Thread(target=produce, name="mqtool-read-ahead", daemon=True).start()
    try:
        while True:
            more, item = slots.get()
            if more:
                yield cast("pa.RecordBatch", item)
            elif item is None:
                return
            else:
                raise cast(BaseException, item)
    finally:
        abandoned.set()


def read_commitlog_ahead(part: FilePart, opts: ReadOptions, schema: pa.Schema) -> Iterator[pa.RecordBatch]:
    """:func:`read_commitlog`, one batch built ahead (:func:`_ahead`): what the source reads."""
    return _ahead(read_commitlog(part, opts, schema))


# ConsumeQueue ------------------------------------------------------------------------------


def consumequeue_queues(path: str, topics: frozenset[str] | None) -> list[tuple[str | None, int | None, list[fs.Entry], str | None]]:
    """``(topic, queue id, segment files, ext dir)`` for a store root, ``consumequeue/``, a topic
    dir, a queue dir or one file."""
    entry = fs.stat_path(path)
    if entry is None:
        raise StoreLayoutError("no such file or directory", path=path)
    parts = path.rstrip("/").split("/")
    if not entry.is_dir:
        qid = int(parts[-2]) if len(parts) >= 2 and parts[-2].lstrip("-").isdigit() else None
        topic = parts[-3] if qid is not None and len(parts) >= 3 else None
        return [(topic, qid, [entry], None)]
    root_cq = _rmq_root_dir(path, "consumequeue")
    if root_cq is not None:
        path, parts = root_cq, root_cq.rstrip("/").split("/")
    children = fs.listdir(path)
    segs = [c for c in children if not c.is_dir and segnames.ROCKETMQ_FILE_NAME.match(c.name)]
    if segs:  # a queue directory
        qid = int(parts[-1]) if parts[-1].lstrip("-").isdigit() else None
        topic = parts[-2] if len(parts) >= 2 else None
        return [(topic, qid, sorted(segs, key=lambda e: int(e.name)), _ext_dir(path, topic, qid))]
    dirs = [c for c in children if c.is_dir]
    if dirs and all(c.name.lstrip("-").isdigit() for c in dirs):  # a topic directory
        topic_dirs = [(parts[-1], path)]
    else:
        topic_dirs = [(c.name, c.path) for c in dirs]
    out = []
    for topic, tdir in topic_dirs:
        if topics is not None and topic not in topics:
            continue
        for q in fs.listdir(tdir):
            if q.is_dir and q.name.lstrip("-").isdigit():
                qsegs = sorted((e for e in fs.listdir(q.path) if not e.is_dir and segnames.ROCKETMQ_FILE_NAME.match(e.name)), key=lambda e: int(e.name))
                out.append((topic, int(q.name), qsegs, _ext_dir(q.path, topic, int(q.name))))
    return out


def _ext_dir(queue_dir: str, topic: str | None, qid: int | None) -> str | None:
    """``<root>/consumequeue_ext/<topic>/<qid>`` when the queue is ``<root>/consumequeue/<topic>/<qid>``."""
    parts = queue_dir.rstrip("/").split("/")
    if topic is None or qid is None or len(parts) < 3 or parts[-3] != "consumequeue":
        return None
    ext = "/".join([*parts[:-3], "consumequeue_ext", topic, str(qid)])
    entry = fs.stat_path(ext)
    return ext if entry is not None and entry.is_dir else None


def _split_rows(opts: ReadOptions) -> int:
    """Rows of 20-byte units or entries per partition (see ``ROW_EQUIVALENT_BYTES``)."""
    return max(1, opts.split_size // ROW_EQUIVALENT_BYTES)


def plan_consumequeue(opts: ReadOptions) -> list[FilePart]:
    """One partition per group of queues of about ``splitSize / ROW_EQUIVALENT_BYTES`` units
    (a queue is never split: its end is where the first file that does not end full stops)."""
    parts: list[FilePart] = []
    budget = _split_rows(opts) * cqf.CQ_UNIT_SIZE
    for source, root in _roots(opts):
        group: list = []
        size = 0
        for topic, qid, segs, ext in consumequeue_queues(root, opts.topics):
            if not opts.wants(topic):
                continue
            group.append((topic, qid, [(s.path, int(s.name) if segnames.ROCKETMQ_FILE_NAME.match(s.name) else 0, s.size) for s in segs], ext))
            size += sum(s.size for s in segs)
            if size >= budget:
                parts.append(FilePart(source, root, queues=group))
                group, size = [], 0
        if group:
            parts.append(FilePart(source, root, queues=group))
    return parts


class _ExtUnits:
    def __init__(self, directory: str) -> None:
        self.segments = sorted(
            ((int(e.name), e) for e in fs.listdir(directory) if not e.is_dir and segnames.ROCKETMQ_FILE_NAME.match(e.name)), key=lambda t: t[0]
        )
        self._cache: tuple[str, bytes] | None = None

    def tags_code(self, ext_offset: int) -> int | None:
        for base, entry in reversed(self.segments):
            if base <= ext_offset < base + entry.size:
                if self._cache is None or self._cache[0] != entry.path:
                    with fs.open_file(entry.path) as f:
                        self._cache = (entry.path, f.read_all())
                try:
                    return cqf.decode_cq_ext_unit(self._cache[1], ext_offset - base).tags_code
                except MqError:
                    return None
        return None


def _cq_batch(
    part: FilePart,
    schema: pa.Schema,
    topic: str | None,
    qid: int | None,
    path: str,
    base: int,
    start: int,
    units: np.ndarray,
    ext: _ExtUnits | None,
) -> pa.RecordBatch:
    """The rows of ConsumeQueue units ``units`` (``cq_units``, the first at position ``start``
    of the file named ``base``), built a column at a time; ext addresses are read unit by unit."""
    count = len(units)
    position = start + np.arange(count, dtype=np.int64) * cqf.CQ_UNIT_SIZE
    offset = units["offset"].astype(np.int64)
    size = units["size"].astype(np.int32)
    tags = units["tags_code"].astype(np.int64)
    ext_address = tags <= cqf.EXT_MAX_ADDRESS
    filler = (offset == 0) & (size == cqf.FILLER_SIZE) & (tags == 0)
    kind = np.where(filler, 0, np.where(ext_address, 1, 2))
    ext_tags = pa.nulls(count, pa.int64())
    ext_missing = np.zeros(count, dtype=bool)
    with_ext = np.flatnonzero(ext_address)
    if ext is not None and len(with_ext):
        found = [ext.tags_code(cqf.undecorate_ext_address(int(tags[i]))) for i in with_ext.tolist()]
        values = np.zeros(count, dtype=np.int64)
        mask = np.ones(count, dtype=bool)
        for i, code in zip(with_ext.tolist(), found):
            if code is None:
                ext_missing[i] = True
            else:
                values[i], mask[i] = code, False
        ext_tags = pa.array(values, mask=mask)
    columns = {
        "source": _constant(part.source, pa.string(), count),
        "file": _constant(path, pa.string(), count),
        "position": pa.array(position),
        "topic": _constant(topic, pa.string(), count),
        "queue_id": _constant(qid, pa.int32(), count),
        "queue_offset": pa.array((base + position) // cqf.CQ_UNIT_SIZE),
        "commitlog_offset": pa.array(offset),
        "size": pa.array(size),
        "tags_code": pa.array(tags),
        "ext_offset": pa.array(np.where(ext_address, tags - (-(1 << 63)), 0), mask=~ext_address),
        "kind": pa.array(["filler", "ext-address", "message"]).take(pa.array(kind)),
        "ext_tags_code": ext_tags,
        "ext_missing": pa.array(ext_missing),
    }
    return pa.RecordBatch.from_arrays([columns[name].cast(f.type) for name, f in zip(schema.names, schema)], schema=schema)


def read_consumequeue(part: FilePart, opts: ReadOptions, schema: pa.Schema) -> Iterator[pa.RecordBatch]:
    """The units of each queue of the partition, file after file until the queue's data ends
    (the first unit that is not one, as the broker and ``dump consumequeue`` see it)."""
    for topic, qid, segs, ext_dir in part.meta["queues"]:
        ext = _ExtUnits(ext_dir) if ext_dir else None
        for path, base, size in segs:
            if size == 0:
                continue
            with fs.open_file(path) as f:
                data = f.read_all()
            units = rcols.cq_units(data)
            ends = np.flatnonzero((units["offset"] < 0) | (units["size"] <= 0))
            kept = int(ends[0]) if len(ends) else len(units)
            for first in range(0, kept, BATCH_ROWS):
                yield _cq_batch(part, schema, topic, qid, path, base, first * cqf.CQ_UNIT_SIZE, units[first : min(first + BATCH_ROWS, kept)], ext)
            if kept < len(units) or len(data) % cqf.CQ_UNIT_SIZE:
                break  # the queue ends in this file


# IndexFile ---------------------------------------------------------------------------------


def index_files(path: str) -> list[fs.Entry]:
    entry = fs.stat_path(path)
    if entry is None:
        raise StoreLayoutError("no such file or directory", path=path)
    if not entry.is_dir:
        return [entry]
    directory = _rmq_root_dir(path, "index") or path
    return [e for e in fs.listdir(directory) if not e.is_dir]


def plan_index(opts: ReadOptions) -> list[FilePart]:
    """Ranges of ``splitSize / ROW_EQUIVALENT_BYTES`` used entries per partition."""
    parts = []
    per_part = _split_rows(opts)
    for source, root in _roots(opts):
        for entry in index_files(root):
            with fs.open_file(entry.path) as f:
                try:
                    header = idxf.decode_index_header(f.pread(0, idxf.INDEX_HEADER_SIZE))
                    geo = idxf.detect_index_geometry(f.pread, f.size)  # what validate/query read (IndexFileView)
                except MqError:
                    continue  # not an IndexFile (validate reports RMQ-IDX-GEOMETRY)
            count = min(header.effective_index_count, geo.index_num)
            for first in range(1, max(count, 1), per_part):
                parts.append(
                    FilePart(
                        source,
                        entry.path,
                        0,
                        first,
                        min(first + per_part, count),
                        slots=geo.hash_slot_num,
                        entries_position=geo.entries_position,
                        begin_timestamp=header.begin_timestamp,
                    )
                )
    return parts


def read_index(part: FilePart, opts: ReadOptions, schema: pa.Schema) -> Iterator[pa.RecordBatch]:
    """The used entries ``start .. stop`` of an IndexFile, a column at a time."""
    slots = part.meta["slots"]
    begin = part.meta["begin_timestamp"]
    entries_at = part.meta["entries_position"]
    size = idxf.INDEX_ENTRY_SIZE
    with fs.open_file(part.path) as f:
        for first in range(part.start, part.stop, BATCH_ROWS):
            stop = min(first + BATCH_ROWS, part.stop)
            entries = rcols.index_entries(f.pread(entries_at + first * size, (stop - first) * size))
            count = len(entries)
            number = np.arange(first, first + count, dtype=np.int64)
            key_hash = entries["key_hash"].astype(np.int32)
            time_diff = entries["time_diff"].astype(np.int64)
            columns = {
                "source": _constant(part.source, pa.string(), count),
                "file": _constant(part.path, pa.string(), count),
                "position": pa.array(entries_at + number * size),
                "number": pa.array(number.astype(np.int32)),
                "slot": pa.array(np.where(key_hash >= 0, key_hash % slots, -1).astype(np.int32)),
                "key_hash": pa.array(key_hash),
                "commitlog_offset": pa.array(entries["phy_offset"].astype(np.int64)),
                "time_diff": pa.array(time_diff.astype(np.int32)),
                # beginTimestamp + timeDiff * 1000 as a Java long (``IndexEntry.timestamp``)
                "timestamp": pa.array(np.int64(begin) + time_diff * 1000),
                "prev_index": pa.array(entries["prev_index"].astype(np.int32)),
            }
            yield pa.RecordBatch.from_arrays([columns[name].cast(field.type) for name, field in zip(schema.names, schema)], schema=schema)
            if count < stop - first:
                break  # the file is shorter than its header says


# --- Kafka, Jafka, MetaQ: partition directories ------------------------------------------------


def _partition_of(name: str) -> tuple[str, int] | None:
    """``topic-N`` → (topic, N) (Kafka's rule; deleted/future/stray replicas are skipped)."""
    try:
        parsed = kcp.parse_partition_dir_name(name)
    except MqError:
        return None
    return None if parsed.suffix else (parsed.topic, parsed.partition)


def partition_files(path: str, accept, topics: frozenset[str] | None) -> list[tuple[str | None, int | None, list[tuple[fs.Entry, int]]]]:
    """``(topic, partition, [(segment file, base offset)])`` for a log/data dir, a partition dir
    or one file; ``accept(name)`` gives a segment's base offset (None: not a segment)."""
    entry = fs.stat_path(path)
    if entry is None:
        raise StoreLayoutError("no such file or directory", path=path)
    name = path.rstrip("/").rsplit("/", 1)[-1]
    if not entry.is_dir:
        parent = path.rstrip("/").rsplit("/", 2)
        owner = _partition_of(parent[-2]) if len(parent) >= 2 else None
        base = accept(name)
        return [(owner[0] if owner else None, owner[1] if owner else None, [(entry, base or 0)])]

    def segments(directory: str) -> list[tuple[fs.Entry, int]]:
        found = []
        for e in fs.listdir(directory):
            if not e.is_dir:
                base = accept(e.name)
                if base is not None:
                    found.append((e, base))
        return sorted(found, key=lambda t: (t[1], t[0].name))

    own = segments(path)
    owner = _partition_of(name)
    if own or owner is not None:
        if topics is not None and (owner is None or owner[0] not in topics):
            return []
        return [(owner[0] if owner else None, owner[1] if owner else None, own)]
    out = []
    for child in fs.listdir(path):
        if not child.is_dir:
            continue
        owner = _partition_of(child.name)
        if owner is None or (topics is not None and owner[0] not in topics):
            continue
        out.append((owner[0], owner[1], segments(child.path)))
    return out


def plan_partitioned(opts: ReadOptions, accept, splittable=lambda name: True) -> list[FilePart]:
    parts = []
    for source, root in _roots(opts):
        for topic, partition, segs in partition_files(root, accept, opts.topics):
            for entry, base in segs:
                ranges = _ranges(entry.size, opts.split_size) if splittable(entry.name) else ([(0, entry.size)] if entry.size else [])
                for start, stop in ranges:
                    parts.append(FilePart(source, entry.path, base, start, stop, topic=topic, partition=partition))
    return parts


class _Adapt:
    """A formats walker whose items become ``(position, item, size)``."""

    def __init__(self, walker, unpack) -> None:
        self.walker = walker
        self.unpack = unpack

    def __iter__(self):
        for item in self.walker:
            yield self.unpack(item)

    @property
    def failed_at(self):
        return self.walker.failed_at

    @property
    def end(self):
        return self.walker.end


# Kafka


def _kafka_base(name: str) -> int | None:
    try:
        parsed = segnames.parse_kafka_file_name(name)
    except MqError:
        return None
    return parsed.base_offset if parsed.kind == "log" and parsed.operation is None else None


def _kafka_decodes(f, pos: int) -> int | None:
    head = f.pread(pos, 17)
    if len(head) < 17:
        return None
    _offset, size, magic = peek_entry(head, 0)
    if not 0 <= magic <= 2 or size < (49 if magic == 2 else 14) or 12 + size > min(f.size - pos, MAX_RECORD_SIZE):
        return None
    try:
        decode_entry(f.pread(pos, 12 + size), 0, mode="header", check_crc=True)
    except MqError:
        return None
    return 12 + size


def _kafka_candidates(chunk: bytes) -> Iterator[int]:
    unpack = struct.Struct(">i").unpack_from
    for i in range(max(0, len(chunk) - 16)):
        if chunk[i + 16] <= 2 and unpack(chunk, i + 8)[0] >= 14:
            yield i


def _kafka_framed(data: bytes, rel: int, exc: MqError) -> tuple[object, int] | None:
    entry = kstore.framed_entry(data, rel, exc, "full")
    return (entry, entry.size) if entry is not None else None


KAFKA_FRAMING = Framing(
    walker=lambda data: _Adapt(LogWalker(data, 0, mode="full"), lambda e: (e.position, e, e.size)),
    framed=_kafka_framed,
    decodes=_kafka_decodes,
    candidates=_kafka_candidates,
    classify=kstore.entry_error_code,
    region_code="KAFKA-LOG-GARBAGE",
    torn_check=lambda head, length, last: kstore.not_a_torn_write(head, length, last.last_offset if last is not None else None),
    judged=kstore.HEADER_SIZE_UP_TO_MAGIC,
)


def _text(value: str) -> str:
    return value.encode("utf-8", "surrogateescape").decode("utf-8", "replace")


def kafka_rows(part: FilePart, pos: int, entry, opts: ReadOptions) -> Iterator[dict]:
    """Record rows with ``dump kafka-log --records-only``'s names (``batch_position``, ``payload``)."""
    header = entry.header
    v2 = isinstance(header, krb.BatchHeader)
    for r in entry.records or ():
        yield {
            "source": part.source,
            "file": part.path,
            "batch_position": pos,
            "topic": part.meta.get("topic"),
            "partition": part.meta.get("partition"),
            "magic": entry.magic,
            "base_offset": header.base_offset if v2 else entry.offset,
            "last_offset": entry.last_offset,
            "offset": r.offset,
            "timestamp": r.timestamp,
            "timestamp_type": r.timestamp_type,
            "key_size": len(r.key) if r.key is not None else -1,
            "key": r.key,
            "value_size": len(r.value) if r.value is not None else -1,
            "payload": r.value if opts.with_body else None,
            "headers": [{"key": _text(h.key), "value": h.value} for h in r.headers],
            "sequence": r.sequence,
            "is_control": r.is_control,
            "is_transactional": header.is_transactional if v2 else False,
            "producer_id": header.producer_id if v2 else None,
            "producer_epoch": header.producer_epoch if v2 else None,
            "compression_type": header.compression_type,
        }


# Jafka


def _jafka_base(name: str) -> int | None:
    try:
        return segnames.parse_jafka_file_name(name)
    except MqError:
        return None


def _jafka_decodes(f, pos: int) -> int | None:
    head = f.pread(pos, 5)
    if len(head) < 5:
        return None
    length, magic = jf.peek_message(head)
    if magic not in jf.MAGICS:
        return None
    if length <= jf.HEADER_SIZES[magic] or 4 + length > min(f.size - pos, MAX_RECORD_SIZE):
        return None
    try:
        jf.decode_message(f.pread(pos, 4 + length), 0)
    except MqError:
        return None
    return 4 + length


def _jafka_candidates(chunk: bytes) -> Iterator[int]:
    for i in range(max(0, len(chunk) - 4)):
        if chunk[i + 4] <= 1 and chunk[i] == 0:
            yield i


def _legacy_framed(framing):
    def framed(data: bytes, rel: int, exc: MqError) -> tuple[object, int] | None:
        message = framed_message(framing, data, rel, exc)
        return (message, framing.overhead + framing.peek_length(data, rel)) if message is not None else None

    return framed


JAFKA_FRAMING = Framing(
    walker=lambda data: _Adapt(jf.MessageWalker(data), lambda t: (t[0], t[1], t[1].serialized_size)),
    framed=_legacy_framed(sjafka.FRAMING),
    decodes=_jafka_decodes,
    candidates=_jafka_candidates,
    classify=sjafka.error_code,
    region_code="JAFKA-UNREADABLE-REGION",
    judged=jf.MIN_HEADER_SIZE,
)


def _jafka_inner(message: jf.Message, depth: int, counter: list[int]) -> Iterator[tuple[jf.Message, int, int, int]]:
    """``(message, depth, inner index, position in the inflated set)``, depth-first."""
    for position, inner in jf.iter_inner_messages(message):
        index = counter[0]
        counter[0] += 1
        yield inner, depth, index, position
        if inner.compressed:
            yield from _jafka_inner(inner, depth + 1, counter)


def jafka_rows(part: FilePart, pos: int, message: jf.Message, opts: ReadOptions) -> Iterator[dict]:
    """``dump jafka``'s rows: the message (or wrapper), then a wrapper's inner messages with
    the offsets a consumer sees (all but the last report the wrapper's start)."""
    offset = part.base + pos
    after = offset + message.serialized_size

    def row(m: jf.Message, kind: str, depth: int, next_offset: int | None, index=None, inner_pos=None) -> dict:
        return {
            "source": part.source,
            "file": part.path,
            "position": pos,
            "topic": part.meta.get("topic"),
            "partition": part.meta.get("partition"),
            "offset": offset,
            "next_offset": next_offset,
            "kind": kind,
            "depth": depth,
            "inner_index": index,
            "inner_position": inner_pos,
            "length": m.size,
            "magic": m.magic,
            "attribute": m.attributes,
            "codec": jf.CODEC_NAMES.get(m.compression_codec, str(m.compression_codec)),
            "crc": m.crc,
            "payload_size": len(m.payload),
            "payload": m.payload if opts.with_body else None,
        }

    if not message.compressed:
        yield row(message, "message", 0, after)
        return
    yield row(message, "wrapper", 0, after)
    inner = list(_jafka_inner(message, 1, [0]))
    leaves = [i for i, t in enumerate(inner) if not t[0].compressed]
    last_leaf = leaves[-1] if leaves else -1
    for i, (m, depth, index, inner_pos) in enumerate(inner):
        nxt = None if m.compressed else (after if i == last_leaf else offset)
        yield row(m, "inner", depth, nxt, index, inner_pos)


# MetaQ


def _metaq_base(name: str) -> int | None:
    try:
        return segnames.parse_metaq_file_name(name).start_offset
    except MqError:
        return None


def _metaq_decodes(f, pos: int) -> int | None:
    head = f.pread(pos, mq.HEADER_LEN)
    if len(head) < mq.HEADER_LEN:
        return None
    msg_len = mq.peek_length(head)
    if msg_len <= 0 or mq.HEADER_LEN + msg_len > min(f.size - pos, MAX_RECORD_SIZE):
        return None
    try:
        mq.decode_message(f.pread(pos, mq.HEADER_LEN + msg_len), 0)
    except MqError:
        return None
    return mq.HEADER_LEN + msg_len


def _metaq_candidates(chunk: bytes) -> Iterator[int]:
    for i in range(max(0, len(chunk) - mq.HEADER_LEN)):
        if chunk[i] == 0:  # msgLen < 16 MiB: its first byte is zero
            yield i


METAQ_FRAMING = Framing(
    walker=lambda data: _Adapt(mq.MessageWalker(data), lambda t: (t[0], t[1], t[1].size)),
    framed=_legacy_framed(smetaq.FRAMING),
    decodes=_metaq_decodes,
    candidates=_metaq_candidates,
    classify=smetaq.error_code,
    region_code="METAQ-UNREADABLE-REGION",
    judged=mq.HEADER_LEN,
)


def metaq_rows(part: FilePart, pos: int, message: mq.Message, opts: ReadOptions) -> Iterator[dict]:
    try:
        attribute, payload = message.attribute_text, message.payload
    except MqError:  # a malformed attribute block: the DATA is kept whole as the payload
        attribute, payload = None, message.data
    yield {
        "source": part.source,
        "file": part.path,
        "position": pos,
        "topic": part.meta.get("topic"),
        "partition": part.meta.get("partition"),
        "offset": part.base + pos,
        "next_offset": part.base + pos + message.size,
        "msg_len": len(message.data),
        "checksum": message.checksum,
        "id": message.id,
        "flag": message.flag,
        "attribute": attribute,
        "payload_size": len(payload),
        "payload": payload if opts.with_body else None,
    }


class _MemoryFile:
    """An inflated ``.meta.zip`` segment with ``ReadOnlyFile``'s read interface."""

    def __init__(self, path: str, data: bytes) -> None:
        self.path = path
        self.data = data
        self.size = len(data)

    def pread(self, position: int, size: int) -> bytes:
        return self.data[position : position + max(0, size)]

    def close(self) -> None:
        self.data = b""

    def __enter__(self) -> _MemoryFile:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _open_segment(path: str):
    if path.endswith(".meta.zip"):
        with fs.open_file(path) as f:
            raw = f.read_all(mq.MAX_SEGMENT_SIZE)
        name = path.rstrip("/").rsplit("/", 1)[-1]
        return _MemoryFile(path, mq.decode_zip_archive(raw, expected_name=name[: -len(".zip")]))
    return fs.open_file(path)


def read_framed(part: FilePart, opts: ReadOptions, schema: pa.Schema, framing: Framing, rows) -> Iterator[pa.RecordBatch]:
    out = Batches(schema)
    try:
        f = _open_segment(part.path)
    except MqError as exc:
        if opts.with_problems:
            out.add(_problem_row(part, 0, Problem(framing.region_code, exc.position, str(exc))))
            yield out.flush()
        return
    with f:
        stop = part.stop if part.stop < f.size else f.size
        finding: tuple[int, str] | None = None  # (position, code) of the record kept next despite its damage
        for kind, pos, item in walk_framed(framing, f, part.start, stop):
            if kind == "record":
                code = finding[1] if finding is not None and finding[0] == pos else None
                for row in rows(part, pos, item, opts):
                    if opts.with_problems:
                        row["row_kind"] = "record"
                        row["finding"] = code
                    batch = out.add(row)
                    if batch is not None:
                        yield batch
                continue
            if kind == "problem" and item.kept:  # type: ignore[attr-defined]
                finding = (pos, item.code)  # type: ignore[attr-defined]
            if not opts.with_problems:
                continue
            row = _problem_row(part, pos, item) if kind == "problem" else _end_row(part, pos, item)  # type: ignore[arg-type]
            row["topic"] = part.meta.get("topic")
            row["partition"] = part.meta.get("partition")
            if "batch_position" in out.names:
                row["batch_position"] = row.pop("position")
            batch = out.add(row)
            if batch is not None:
                yield batch
    last = out.flush()
    if last is not None:
        yield last


# --- the DataSource classes ---------------------------------------------------------------------


def _topic_values(flt) -> frozenset[str] | None:
    if EqualTo is not None and isinstance(flt, EqualTo) and flt.attribute == ("topic",) and isinstance(flt.value, str):
        return frozenset([flt.value])
    if In is not None and isinstance(flt, In) and flt.attribute == ("topic",) and all(isinstance(v, str) for v in flt.value):
        return frozenset(flt.value)
    return None


class _Reader(DataSourceReader):
    """Plans partitions with ``plan(opts)`` and reads one with ``read_part(part, opts, schema)``."""

    family: str = ""

    def __init__(self, opts: ReadOptions, columns: list) -> None:
        self.opts = opts
        self.columns = columns

    def pushFilters(self, filters):
        for flt in filters:
            values = _topic_values(flt)
            if values is None:
                yield flt
                continue
            current = self.opts.topics
            topics = values if current is None else current & values
            self.opts = ReadOptions(**{**self.opts.__dict__, "topics": topics})

    def partitions(self):
        parts = PLANNERS[self.family](self.opts) or [FilePart("", "", 0, 0, 0, empty=True)]
        if self.opts.progress_file:
            record_plan(self.opts.progress_file, [part_files(part) for part in parts])
            for index, part in enumerate(parts):
                part.meta["progress_index"] = index
        return parts

    def read(self, partition):
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


def _columns(base: list, opts: ReadOptions, family: str) -> list:
    cols = list(base)
    if family == "commitlog" and opts.with_key_hashes:
        cols.append(KEY_HASHES)
    if opts.with_problems and family in ("commitlog", "kafka", "jafka", "metaq"):
        cols.extend(PROBLEM_COLUMNS)
    return cols


class _Source(DataSource):
    family = ""
    short_name = ""
    base_columns: list = []

    @classmethod
    def name(cls) -> str:
        return cls.short_name

    def schema(self):
        return ddl(_columns(self.base_columns, parse_options(self.options), self.family))

    def reader(self, schema):
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


def _reader_class(family: str, pushdown: bool) -> type:
    attrs = {"family": family}
    if not pushdown:
        attrs["pushFilters"] = DataSourceReader.pushFilters
    return type(f"{family.title()}Reader{'' if pushdown else 'NoPushdown'}", (_Reader,), attrs)


_READER_CLASSES = {family: _reader_class(family, EqualTo is not None) for family in ("commitlog", "consumequeue", "index", "kafka", "jafka", "metaq")}

PLANNERS = {
    "commitlog": plan_commitlog,
    "consumequeue": plan_consumequeue,
    "index": plan_index,
    "kafka": lambda o: plan_partitioned(o, _kafka_base),
    "jafka": lambda o: plan_partitioned(o, _jafka_base),
    "metaq": lambda o: plan_partitioned(o, _metaq_base, lambda name: not name.endswith(".zip")),
}

READERS = {
    "commitlog": read_commitlog_ahead,
    "consumequeue": read_consumequeue,
    "index": read_index,
    "kafka": lambda p, o, s: read_framed(p, o, s, KAFKA_FRAMING, kafka_rows),
    "jafka": lambda p, o, s: read_framed(p, o, s, JAFKA_FRAMING, jafka_rows),
    "metaq": lambda p, o, s: read_framed(p, o, s, METAQ_FRAMING, metaq_rows),
}

SOURCES = (CommitLogSource, ConsumeQueueSource, IndexSource, KafkaSource, JafkaSource, MetaqSource)
FORMAT_NAMES = tuple(s.short_name for s in SOURCES)
