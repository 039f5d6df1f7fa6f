"""``mqtool dump``: every field of every record of one file family, streamed."""

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, TypedDict

import typer

from mqtool.cli.common import broker_settings, choose_columns, finish_dump, renderer
from mqtool.cli.exit_codes import ExitCode
from mqtool.cli.options import (
    INT,
    BodyDecode,
    BrokerConfigOpt,
    ColumnsOpt,
    DecodeOpt,
    DumpPathArg,
    FormatOpt,
    IndexNumOpt,
    IndexSlotsOpt,
    JsonlOpt,
    JsonOpt,
    LimitOpt,
    OutputFormat,
    QueueOpt,
    TopicOpt,
    flag,
)
from mqtool.cli.render import Column, Renderer, markup, styled
from mqtool.cli.times import iso_ms, parse_time

if TYPE_CHECKING:
    from rich.console import Console

    from mqtool.ops.dump import rocketmq as ops_dump

SinceOpt = Annotated[str | None, typer.Option("--since", help="Store time >= this (ms since epoch or ISO-8601).")]
UntilOpt = Annotated[str | None, typer.Option("--until", help="Store time <= this (ms since epoch or ISO-8601).")]

COMMITLOG_COLUMNS = [
    Column("commitlog_offset", "OFFSET", 14, ">"),
    Column("topic", "TOPIC", 24),
    Column("queue_id", "QID", 4, ">"),
    Column("queue_offset", "QOFFSET", 9, ">"),
    Column("total_size", "SIZE", 7, ">"),
    Column("store_time", "STORE TIME", 29),
    Column("tags", "TAGS", 12),
    Column("keys", "KEYS", 20),
    Column("body", "BODY"),
]


def dump_commitlog(
    path: DumpPathArg,
    topic: TopicOpt = None,
    queue_id: QueueOpt = None,
    from_offset: Annotated[int | None, typer.Option("--from-offset", min=0, metavar=INT, help="Start at this commitlog offset.")] = None,
    limit: LimitOpt = None,
    since: SinceOpt = None,
    until: UntilOpt = None,
    key: Annotated[str | None, typer.Option("--key", help="Only records with this KEYS token or UNIQ_KEY.")] = None,
    tag: Annotated[str | None, typer.Option("--tag", help="Only records whose TAGS is this tag.")] = None,
    decode: DecodeOpt = BodyDecode.base64,
    uncompress: Annotated[bool, flag("--uncompress", help="Show compressed bodies uncompressed.")] = False,
    no_crc: Annotated[bool, flag("--no-crc", help="Do not verify body CRCs while reading.")] = False,
    fmt: FormatOpt = OutputFormat.table,
    as_json: JsonOpt = False,
    columns: ColumnsOpt = None,
    as_jsonl: JsonlOpt = False,
) -> int:
    """CommitLog records: every header field, properties, keys, tags, msgId and body."""
    from mqtool.cli.rows import message_row
    from mqtool.ops.dump import rocketmq as ops_dump

    out = renderer(fmt, as_json, as_jsonl)
    choose_columns(out, columns)
    flt = ops_dump.RecordFilter(
        topic=topic,
        queue_id=queue_id,
        from_offset=from_offset,
        since_ms=parse_time(since, "--since"),
        until_ms=parse_time(until, "--until"),
        key=key,
        tag=tag,
    )
    files = ops_dump.commitlog_files(path)
    engine = ops_dump.CommitLogDump(files, flt, limit, check_crc=not no_crc, directory=ops_dump.commitlog_directory(path))
    table = out.fmt is OutputFormat.table
    body_mode = decode if not table or decode is not BodyDecode.base64 else BodyDecode.utf8

    if not table and not uncompress:  # the lean reading: the same rows, written as JSON text
        out.stream_encoded(_commitlog_json(out, engine, body_mode))
        return _finish_commitlog(out, engine)

    def rows() -> Iterator[dict[str, object]]:
        with out.progress(engine.total_bytes, "dump commitlog", streaming=True) as advance:
            done = 0
            for loc, record in engine:
                row = message_row(
                    record,
                    file=str(loc.path),
                    position=loc.position,
                    address=loc.address,
                    decode=body_mode,
                    uncompress=uncompress,
                    finding=loc.finding,
                )
                if table:
                    row["store_time"] = iso_ms(record.store_timestamp)
                    if loc.finding is not None:  # a record kept despite damage: marked, its code first
                        row["body"] = f"[{loc.finding}] {row['body']}"
                advance(engine.bytes_done - done)
                done = engine.bytes_done
                yield row

    out.stream(rows(), COMMITLOG_COLUMNS)
    return _finish_commitlog(out, engine)


#: Rows per write of the lean JSON output (about 9 MiB with 1 KiB bodies).
JSON_BATCH = 4096


def _commitlog_json(out: Renderer, engine: "ops_dump.CommitLogDump", decode: BodyDecode) -> Iterator[bytes]:
    """The JSON lines of every row of ``engine.lean()`` (UTF-8), in batches: healthy runs
    through ``column_lines``, a record the precise decoder read through ``record_line``."""
    from mqtool.cli.rows import column_lines, record_line
    from mqtool.ops.dump import rocketmq as ops_dump
    from mqtool.ops.dump.heap import keep_batch_buffers

    keep_batch_buffers()  # the batches' buffers stay on the heap: a tenth less CPU (ops.dump.heap)
    with out.progress(engine.total_bytes, "dump commitlog", streaming=True) as advance:
        done = 0
        for item in engine.lean():
            advance(engine.bytes_done - done)
            done = engine.bytes_done
            if isinstance(item, ops_dump.ColumnChunk):
                for start in range(0, len(item), JSON_BATCH):
                    yield column_lines(item.part(start, start + JSON_BATCH), decode)
            else:
                yield record_line(*item, decode)


def _finish_commitlog(out: Renderer, engine: "ops_dump.CommitLogDump") -> int:
    # validate's findings (code, file, position) for every gap and damage the walk met; a torn
    # tail is a warning (exit 0), as in validate
    damaged = out.findings(engine.findings)
    return finish_dump(out, engine.problems, extra_failures=damaged)


CQ_COLUMNS = [
    Column("topic", "TOPIC", 24),
    Column("queue_id", "QID", 4, ">"),
    Column("queue_offset", "QOFFSET", 10, ">"),
    Column("commitlog_offset", "COMMITLOG OFFSET", 16, ">"),
    Column("size", "SIZE", 10, ">"),
    Column("tags_code", "TAGS CODE", 20, ">"),
    Column("kind", "KIND"),
]


def dump_consumequeue(
    path: DumpPathArg,
    topic: TopicOpt = None,
    queue_id: QueueOpt = None,
    from_offset: Annotated[int | None, typer.Option("--from-offset", min=0, metavar=INT, help="Start at this queue offset.")] = None,
    limit: LimitOpt = None,
    fmt: FormatOpt = OutputFormat.table,
    as_json: JsonOpt = False,
    columns: ColumnsOpt = None,
    as_jsonl: JsonlOpt = False,
    rocksdb: Annotated[bool, typer.Option("--rocksdb", help="Read the RocksDB ConsumeQueue (storeType=defaultRocksDB) where consumequeue/ also holds files.")] = False,
) -> int:
    """ConsumeQueue units: queue offset, commitlog offset, size, tagsCode (fillers and ext addresses marked).

    A RocksDB ConsumeQueue (5.2+) is read read-only (needs the rocksdb extra); its rows add store_timestamp and key."""
    from mqtool.ops.dump import rocketmq as ops_dump

    out = renderer(fmt, as_json, as_jsonl)
    choose_columns(out, columns)
    db = ops_dump.rocksdb_cq_dir(path, prefer_rocksdb=rocksdb)
    if db is not None:
        rocks = ops_dump.RocksQueueDump(db, topic, queue_id, from_offset, limit)
        out.stream(iter(rocks), ROCKS_CQ_COLUMNS)
        return finish_dump(out, [], extra_failures=out.findings(rocks.findings))
    targets = ops_dump.consumequeue_targets(path, topic=topic, queue_id=queue_id)
    engine = ops_dump.QueueDump(targets, from_offset, limit)

    def rows() -> Iterator[dict[str, object]]:
        for target, qu in engine:
            unit = qu.unit
            kind = "filler" if unit.is_filler else ("ext-address" if unit.has_ext_address else "message")
            yield {
                "file": str(qu.segment.path),
                "position": qu.position,
                "topic": target.topic,
                "queue_id": target.queue_id,
                "queue_offset": qu.queue_offset,
                "commitlog_offset": unit.commitlog_offset,
                "size": unit.size,
                "tags_code": unit.tags_code,
                "ext_offset": unit.ext_offset,
                "kind": kind,
            }

    out.stream(rows(), CQ_COLUMNS)
    # validate's findings (code, file, position) for the queues walked: a file of the wrong size, a
    # missing file, an invalid unit (an error: the broker ends the queue there), a partial unit
    damaged = out.findings(ops_dump.consumequeue_findings(path, engine))
    return finish_dump(out, [], extra_failures=damaged)


ROCKS_CQ_COLUMNS = [*CQ_COLUMNS[:-1], Column("store_timestamp", "STORE TIMESTAMP", 15, ">"), Column("kind", "KIND")]


INDEX_COLUMNS = [
    Column("number", "ENTRY", 9, ">"),
    Column("slot", "SLOT", 9, ">"),
    Column("key_hash", "KEY HASH", 11, ">"),
    Column("commitlog_offset", "COMMITLOG OFFSET", 16, ">"),
    Column("time", "TIME", 29),
    Column("prev_index", "PREV", 9, ">"),
    Column("file", "FILE"),
]


INDEX_HEADER_COLUMNS = [
    Column("begin_time", "BEGIN TIME", 29),
    Column("end_time", "END TIME", 29),
    Column("begin_commitlog_offset", "BEGIN OFFSET", 14, ">"),
    Column("end_commitlog_offset", "END OFFSET", 14, ">"),
    Column("used_slots", "SLOTS USED", 15, ">"),
    Column("entries", "ENTRIES", 9, ">"),
    Column("file", "FILE"),
]


def header_row(p: Path, h: "ops_dump.IndexHeader", geo: "ops_dump.IndexGeometry", *, table: bool = False) -> dict[str, object]:
    """One IndexFile header: the documented ``"record": "header"`` object, or a table row."""
    if table:
        return {
            "begin_time": iso_ms(h.begin_timestamp),
            "end_time": iso_ms(h.end_timestamp),
            "begin_commitlog_offset": h.begin_phy_offset,
            "end_commitlog_offset": h.end_phy_offset,
            "used_slots": f"{h.hash_slot_count}/{geo.hash_slot_num}",
            "entries": max(h.index_count - 1, 0),
            "file": str(p),
        }
    return {
        "record": "header",
        "file": str(p),
        "begin_timestamp": h.begin_timestamp,
        "end_timestamp": h.end_timestamp,
        "begin_commitlog_offset": h.begin_phy_offset,
        "end_commitlog_offset": h.end_phy_offset,
        "hash_slot_count": h.hash_slot_count,
        "index_count": h.index_count,
        "hash_slot_num": geo.hash_slot_num,
        "index_num": geo.index_num,
    }


def dump_index(
    path: DumpPathArg,
    limit: LimitOpt = None,
    header_only: Annotated[bool, flag("--header-only", help="Only the 40-byte headers.")] = False,
    index_slots: IndexSlotsOpt = None,
    index_num: IndexNumOpt = None,
    config: BrokerConfigOpt = None,
    fmt: FormatOpt = OutputFormat.table,
    as_json: JsonOpt = False,
    columns: ColumnsOpt = None,
    as_jsonl: JsonlOpt = False,
) -> int:
    """IndexFile headers and entries (key hash, slot, commitlog offset, time, previous entry)."""
    from mqtool.ops.dump import rocketmq as ops_dump

    out = renderer(fmt, as_json, as_jsonl)
    choose_columns(out, columns)
    targets = ops_dump.index_targets(path)
    # a store's IndexFiles: entries are checked against where its CommitLog's valid data ends
    extent = None if header_only else ops_dump.index_extent(path)
    cfg = broker_settings(config)
    index_slots, index_num = index_slots or cfg.index_hash_slot_num, index_num or cfg.index_num
    engine = ops_dump.IndexDump(targets, index_slots, index_num, limit, headers_only=header_only, extent=extent)
    table = out.fmt is OutputFormat.table

    if header_only:  # the headers are the rows, on stdout in every format (--limit counts files)
        for _ in engine:
            pass
        headers = engine.headers if limit is None else engine.headers[:limit]
        out.stream((header_row(*h, table=table) for h in headers), INDEX_HEADER_COLUMNS)
        return finish_dump(out, engine.problems)

    def rows() -> Iterator[dict[str, object]]:
        seen = 0
        for row in engine:
            while seen < len(engine.headers):
                if not table:
                    yield header_row(*engine.headers[seen])
                seen += 1
            if header_only:
                continue
            yield {
                "record": "entry",
                "file": str(row.path),
                "position": row.position,
                "number": row.number,
                "slot": row.slot,
                "key_hash": row.entry.key_hash,
                "commitlog_offset": row.entry.phy_offset,
                "time_diff": row.entry.time_diff,
                "timestamp": row.timestamp,
                "prev_index": row.entry.prev_index,
                **({"time": iso_ms(row.timestamp)} if table else {}),  # table only: JSON has timestamp
            }
        if not table:
            for h in engine.headers[seen:]:
                yield header_row(*h)

    out.stream(rows(), INDEX_COLUMNS)
    if table:
        for p, h, geo in engine.headers:
            out.warn(
                f"{p}: {max(h.index_count - 1, 0)} entries, {h.hash_slot_count} used slots of {geo.hash_slot_num}, "
                f"time {iso_ms(h.begin_timestamp)} .. {iso_ms(h.end_timestamp)}, commitlog {h.begin_phy_offset} .. {h.end_phy_offset}"
            )
    return finish_dump(out, engine.problems, extra_failures=out.findings(engine.findings))


def dump_checkpoint(
    path: DumpPathArg,
    fmt: FormatOpt = OutputFormat.table,
    as_json: JsonOpt = False,
    as_jsonl: JsonlOpt = False,
) -> int:
    """The checkpoint file: flush timestamps (and 5.x offsets) with the recovery bounds derived from them."""
    from mqtool.ops.dump import rocketmq as ops_dump

    out = renderer(fmt, as_json, as_jsonl)
    cp_path, cp = ops_dump.read_checkpoint(path)
    fields: dict[str, int | None] = {
        "physic_msg_timestamp": cp.physic_msg_timestamp,
        "logics_msg_timestamp": cp.logics_msg_timestamp,
        "index_msg_timestamp": cp.index_msg_timestamp,
        "master_flushed_offset": cp.master_flushed_offset,
        "confirm_phy_offset": cp.confirm_phy_offset,
        "min_timestamp": cp.min_timestamp(),
        "min_timestamp_index": cp.min_timestamp_index(),
    }
    doc: dict[str, object] = {"file": str(cp_path), **fields}

    def table(console: "Console") -> None:
        console.print(markup("[bold]{}[/bold] {}", f"{'file':<24}", doc["file"]))
        for k, v in fields.items():
            shown = f"{v}  ({iso_ms(v)})" if k.endswith("timestamp") or k.startswith("min_timestamp") else v
            console.print(markup("[bold]{}[/bold] {}", f"{k:<24}", shown))

    out.document(doc, table)
    return ExitCode.OK


class ConfigDoc(TypedDict):
    """One config file of ``dump config``: its path and its JSON content."""

    file: str
    content: object


def dump_config(
    path: DumpPathArg,
    fmt: FormatOpt = OutputFormat.table,
    as_json: JsonOpt = False,
    as_jsonl: JsonlOpt = False,
) -> int:
    """config/*.json as JSON (fastjson's unquoted integer keys made valid)."""
    from mqtool.errors import MqError
    from mqtool.ops.dump import rocketmq as ops_dump

    out = renderer(fmt, as_json, as_jsonl)
    docs: list[ConfigDoc] = []
    problems: list[MqError] = []
    for p in ops_dump.config_files(path):
        try:
            docs.append(ConfigDoc(file=str(p), content=ops_dump.read_config(p)))
        except MqError as exc:
            problems.append(exc)

    def table(console: "Console") -> None:
        from rich.json import JSON

        for d in docs:
            console.print(styled(d["file"], "bold"))
            console.print(JSON.from_data(d["content"]))

    out.document(docs, table)
    return finish_dump(out, problems)
