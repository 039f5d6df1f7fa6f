"""The ``rocketmq_commitlog`` source: CommitLog message records, one row each.

A CommitLog file is planned as byte ranges of ``splitSize`` (``plan_commitlog``); a range owns the
records that start in it (the first sync point at or after its start, up to the first at or
after its stop).  The reading of a range is the store model's one CommitLog walk, read once
(``store.model.commitlog_range.read_range``: upstream ``CommitLog.checkMessageAndReturnSize``
per record, a torn tail where ``CommitLog.recoverAbnormally`` stops); this source only turns its
events into rows.  Healthy stretches come as numpy columns (the model's ``ColumnPiece``) and
``_column_batch`` builds their Arrow arrays in bulk; each record the walk's precise decoder read
(around an anomaly, or a properties map that is not its list of pairs) and each problem, damaged
and end row (``withProblems``) is built on its own, in file order.  Each row holds
``mqtool dump commitlog --jsonl``'s fields plus ``tags_code`` (what ``ConsumeQueue`` stores,
upstream ``CommitLog.checkMessageAndReturnSize``'s tagsCode) and, with ``withKeyHashes``, the
IndexFile hashes of the record's keys (upstream ``IndexService.buildKey`` / ``IndexFile.indexKeyHashMethod``).
The next Arrow batch is built while the worker ships the last (``_ahead``).
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Iterator
from typing import cast

import numpy as np
import pyarrow as pa

from mqtool.errors import StoreLayoutError, hexint
from mqtool.formats import column_ops
from mqtool.formats import segment_names as segnames
from mqtool.formats.rocketmq import columns as rcols
from mqtool.formats.rocketmq import record_fields as rfields
from mqtool.formats.rocketmq.commitlog import (
    COMPRESSION_TYPES,
    MAGIC_V1,
    MAGIC_V2,
    SYSFLAG_COMPRESSED,
    SYSFLAG_COMPRESSION_MASK,
    SYSFLAG_TRANSACTION_MASK,
    TRANSACTION_TYPES,
    MessageRecord,
)
from mqtool.formats.rocketmq.hashing import index_key_hash
from mqtool.formats.rocketmq.properties import split_keys
from mqtool.pipeline import files as fs
from mqtool.pipeline.sources.common import (
    Batches,
    FilePart,
    ReadOptions,
    Row,
    add_row,
    constant,
    end_row,
    problem_row,
    ranges,
    roots,
    with_findings,
)
from mqtool.pipeline.sources.schema import _BIN, _STR, BATCH_ROWS, PROBLEM_COLUMNS
from mqtool.store import rocketmq as rmq
from mqtool.store.model.commitlog_range import ColumnPiece, Problem, read_commitlog_range, read_range
from mqtool.store.writer import cq_tags_code


def rmq_root_dir(path: str, family: str) -> str | None:
    """``path/family`` when ``path`` is a store root holding that directory, else None."""
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
    directory = rmq_root_dir(path, "commitlog") or path
    segs = [e for e in fs.listdir(directory) if not e.is_dir and segnames.ROCKETMQ_FILE_NAME.match(e.name)]
    return sorted(segs, key=lambda e: int(e.name))


def segment_base(entry: fs.Entry) -> int:
    """The commitlog offset a CommitLog file's name says (0 for a file named otherwise)."""
    return int(entry.name) if segnames.ROCKETMQ_FILE_NAME.match(entry.name) else 0


def last_data_index(segs: list[fs.Entry]) -> int:
    """The last file whose first record header is not zeros (validate's "last file": the store's
    ``last_data_index``, through the source's file system)."""
    return rmq.last_data_index(segs, open_file=fs.open_file)


def commitlog_file_size(segs: list[fs.Entry]) -> int | None:
    """The store's CommitLog file size, as validate detects it (``rmq.detect_file_size``: the
    most common size among non-empty files)."""
    return rmq.detect_file_size(cast("list[rmq.Segment]", segs))  # it reads only ``size``


def plan_commitlog(opts: ReadOptions) -> list[FilePart]:
    """A partition per ``splitSize`` byte range of every CommitLog file of every input."""
    parts: list[FilePart] = []
    for source, root in roots(opts):
        segs = commitlog_segments(root)
        last = last_data_index(segs)
        file_size = commitlog_file_size(segs)
        for i, seg in enumerate(segs):
            for start, stop in ranges(seg.size, opts.split_size):
                parts.append(FilePart(source, seg.path, segment_base(seg), start, stop, is_last=i == last, file_size=file_size))
    return parts


def _key_hashes(rec: MessageRecord) -> list[int] | None:
    """The IndexFile hashes of the record's ``topic#key`` keys (UNIQ_KEY and KEYS); None when
    its properties could not be read."""
    if rec.dropped_properties:
        return None
    keys: list[str] = []
    if rec.uniq_key:
        keys.append(f"{rec.topic}#{rec.uniq_key}")
    keys.extend(f"{rec.topic}#{k}" for k in split_keys(rec.properties))
    return sorted({index_key_hash(k) for k in keys})


_HOST_TEXT: dict[object, str] = {}
_TAGS_CODE: dict[str | None, int] = {}
_MAGIC_TEXT = {m: hexint(m) for m in (0xDAA320A7, 0xDAA320AB)}


def _host_text(host: object) -> str:
    text = _HOST_TEXT.get(host)
    if text is None:
        if len(_HOST_TEXT) > 4096:
            _HOST_TEXT.clear()
        text = _HOST_TEXT[host] = str(host)
    return text


def _tags_code(rec: MessageRecord) -> int:
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


def commitlog_row(part: FilePart, pos: int, rec: MessageRecord, opts: ReadOptions) -> tuple[object, ...]:
    """The row of one record, in ``COMMITLOG_COLUMNS`` order: ``mqtool dump commitlog
    --jsonl``'s fields (bytes as bytes), then ``tags_code`` (and ``key_hashes``, ``row_kind``)."""
    props = rec.properties
    body = rec.body
    sys_flag = rec.sys_flag
    row: tuple[object, ...] = (
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


_RECORD_KIND: tuple[object, ...] = ("record",) + (None,) * (len(PROBLEM_COLUMNS) - 1)


def _precise_row(part: FilePart, opts: ReadOptions, kind: str, pos: int, item: object, finding: str | None = None) -> Row | None:
    """The row of one item of ``read_commitlog_range`` (None: none, a record of another topic or a
    problem without ``withProblems``): a tuple in schema order for a record, else a dict.
    ``finding``: the code a record kept despite its damage carries (its ``finding`` column)."""
    if kind == "record":
        assert isinstance(item, MessageRecord)
        if not opts.wants(item.topic):
            return None
        record = commitlog_row(part, pos, item, opts)
        # ``finding`` is the last of the problem columns
        return record[:-1] + (finding,) if finding is not None and opts.with_problems else record
    if not opts.with_problems:
        return None
    if kind == "problem":
        assert isinstance(item, Problem)
        row = problem_row(part, pos, item)
    elif kind == "damaged":
        lo, hi = cast("tuple[int, int]", item)
        return {"source": part.source, "file": part.path, "position": pos, "row_kind": "damaged", "damaged_from": lo, "damaged_to": hi}
    else:
        row = end_row(part, pos, str(item))
    row["commitlog_offset"] = part.base + pos
    return row


def read_commitlog_records(part: FilePart, opts: ReadOptions, schema: pa.Schema) -> Iterator[pa.RecordBatch]:
    """The per-record reading of a partition: every item of ``read_commitlog_range`` (the walk
    without its columns) turned into a row on its own -- the rows :func:`read_commitlog` builds
    column-wise."""
    out = Batches(schema)
    with fs.open_file(part.path) as f:
        walk = read_commitlog_range(f, part.base, part.start, part.stop, part.meta.get("is_last", False), part.meta.get("file_size"))
        for kind, pos, item, finding in with_findings(walk):
            batch = add_row(out, _precise_row(part, opts, kind, pos, item, finding))
            if batch is not None:
                yield batch
    last = out.flush()
    if last is not None:
        yield last


# The column-wise reading: healthy stretches the walk framed into numpy columns (the model's
# ``ColumnPiece``), built into Arrow arrays in bulk; the rest row by row, in file order.

_MAGIC_TEXTS = pa.array([_MAGIC_TEXT[MAGIC_V1], _MAGIC_TEXT[MAGIC_V2]])
_TRANSACTION_TEXTS = pa.array([TRANSACTION_TYPES[i << 2] for i in range(4)])
_COMPRESSION_TEXTS = pa.array([COMPRESSION_TYPES.get(i, "UNKNOWN") for i in range(8)])


def _spans(type_: pa.DataType, spans: column_ops.Spans) -> pa.Array:
    """Arrow strings or binaries over the packed values (no copy)."""
    return pa.Array.from_buffers(type_, len(spans), [None, pa.py_buffer(spans.offsets), pa.py_buffer(spans.values)])


def _strings(spans: column_ops.Spans) -> pa.Array:
    """Arrow strings over the packed values (no copy)."""
    return _spans(_STR, spans)


def _pick(texts: pa.Array, index: np.ndarray, missing: np.ndarray | None = None) -> pa.Array:
    """``texts[index]`` (null where ``missing``)."""
    return texts.take(pa.array(index, mask=missing))


def _column_batch(
    part: FilePart, opts: ReadOptions, schema: pa.Schema, shift: int, cols: rcols.CommitLogColumns, rows: np.ndarray, fields: rfields.RecordFields
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
        "source": constant(part.source, pa.string(), count),
        "file": constant(part.path, pa.string(), count),
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
        hashes = rfields.key_hash_lists(cols, rows)
        built["key_hashes"] = pa.ListArray.from_arrays(pa.array(hashes.offsets), pa.array(hashes.values))
    if opts.with_problems:
        built["row_kind"] = constant("record", pa.string(), count)
    arrays = [built[f.name] if f.name in built else pa.nulls(count, f.type) for f in schema]
    return pa.RecordBatch.from_arrays(arrays, schema=schema)


def _piece_batches(part: FilePart, opts: ReadOptions, schema: pa.Schema, piece: ColumnPiece, out: Batches) -> Iterator[pa.RecordBatch]:
    """The batches of one healthy stretch's records (the range's: ``piece.count``), built column by
    column; a record whose properties map is not its list of pairs (a name repeated) gets its row
    on its own, added to ``out`` after the rows before it."""
    pos, data, cols = piece.position, piece.data, piece.walk.columns
    wanted = np.arange(piece.count)
    if opts.topics is not None:
        keep = np.array([opts.wants(t) for t in cols.topics] or [False], dtype=bool)
        wanted = wanted[keep[cols.topic[: piece.count]]]
    while len(wanted):
        fields = rfields.record_fields(data, cols, wanted, with_body=opts.with_body, properties=piece.walk.properties)
        repeated = rfields.repeated_property_names(fields.names, fields.pair_offsets)
        cut = int(repeated[0]) if len(repeated) else len(wanted)
        if cut < len(wanted) and cut:
            fields = rfields.record_fields(data, cols, wanted[:cut], with_body=opts.with_body, properties=piece.walk.properties)
        if cut:
            last = out.flush()  # the rows before the stretch come first
            if last is not None:
                yield last
            batch = _column_batch(part, opts, schema, pos, cols, wanted[:cut], fields)
            for at in range(0, batch.num_rows, BATCH_ROWS):
                yield batch.slice(at, BATCH_ROWS)
        if cut == len(wanted):
            return
        i = int(wanted[cut])
        row = add_row(out, _precise_row(part, opts, "record", pos + int(cols.position[i]), piece.record(i)))
        if row is not None:
            yield row
        wanted = wanted[cut + 1 :]


def read_commitlog(part: FilePart, opts: ReadOptions, schema: pa.Schema) -> Iterator[pa.RecordBatch]:
    """The rows of a partition: the rows of :func:`read_commitlog_records`, built column-wise.

    One reading of the range (the store model's ``read_range``): healthy records come as column
    pieces, turned into Arrow arrays in bulk (:func:`_piece_batches`); each record the walk's
    precise decoder read, and each problem, damaged and end row, is built on its own, in file
    order."""
    out = Batches(schema)
    is_last = part.meta.get("is_last", False)
    file_size = part.meta.get("file_size")
    with fs.open_file(part.path) as f:
        kept: tuple[int, str] | None = None  # the problem a record just after it is kept despite
        for item in read_range(f, part.base, part.start, part.stop, is_last, file_size, key_hashes=opts.with_key_hashes):
            if isinstance(item, ColumnPiece):
                if item.count:
                    yield from _piece_batches(part, opts, schema, item, out)
                continue
            kind, at, value = item
            if kind == "problem" and isinstance(value, Problem) and value.kept:
                kept = (at, value.code)
            finding = kept[1] if kind == "record" and kept is not None and kept[0] == at else None
            batch = add_row(out, _precise_row(part, opts, kind, at, value, finding))
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
