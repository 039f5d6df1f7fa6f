"""``mqtool dump kafka-*``: Kafka segment, index and checkpoint families."""

from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Literal, Protocol, TypeVar, cast

import typer

from mqtool.cli.common import finish_dump, renderer
from mqtool.cli.exit_codes import ExitCode
from mqtool.cli.options import INT, BodyDecode, DecodeOpt, FormatOpt, JsonlOpt, JsonOpt, LimitOpt, OutputFormat, PartitionOpt, flag
from mqtool.cli.render import render_generic
from mqtool.cli.times import parse_time
from mqtool.findings import not_stated

if TYPE_CHECKING:
    from rich.console import Console

    from mqtool.cli.render import Renderer
    from mqtool.errors import MqError
    from mqtool.findings import Finding
    from mqtool.ops.dump import kafka as ops_kafka

KafkaPathArg = Annotated[Path, typer.Argument(help="A Kafka log dir, a partition dir, or one file.")]
TopicOpt = Annotated[str | None, typer.Option("--topic", help="Only partitions of this topic (PATH a log dir).")]


KAFKA_HINT = "`mqtool validate` explains the damage (and what Kafka's recovery would do with it)"


T = TypeVar("T")
IndexKind = Literal["index", "timeindex", "txnindex"]


class _IndexEnd(Protocol):
    """How an index file's entries end, as ``ops.dump.kafka.IndexDump.ends`` holds it (a
    ``formats.kafka.index.DataEnd``, typed ``object`` there)."""

    @property
    def kind(self) -> str: ...
    @property
    def position(self) -> int: ...
    @property
    def length(self) -> int: ...


def _limited(rows: Iterable[T], limit: int | None) -> Iterator[T]:
    if limit is None:
        yield from rows
        return
    if limit == 0:
        return
    for n, row in enumerate(rows, 1):
        yield row
        if n >= limit:
            return


def dump_kafka_log(
    path: KafkaPathArg,
    deep: Annotated[
        bool,
        flag(
            "--deep-iteration",
            "--deep",
            help="Also one row per record after its batch row (kafka-dump-log --deep-iteration): offset, timestamp, sequence, headers with values, key and payload.",
        ),
    ] = False,
    records_only: Annotated[bool, flag("--records-only", help="Only the record rows (implies --deep-iteration); what a consumer would see.")] = False,
    topic: TopicOpt = None,
    partition: PartitionOpt = None,
    from_offset: Annotated[int | None, typer.Option("--from-offset", min=0, metavar=INT, help="Start at this offset (the .index finds where to start reading).")] = None,
    since: Annotated[str | None, typer.Option("--since", help="Timestamp >= this (ms since epoch or ISO-8601).")] = None,
    until: Annotated[str | None, typer.Option("--until", help="Timestamp <= this (ms since epoch or ISO-8601).")] = None,
    max_bytes: Annotated[
        int | None, typer.Option("--max-bytes", min=0, metavar=INT, help="Read only the first N bytes of each .log (entries that end within them).")
    ] = None,
    limit: LimitOpt = None,
    offsets_decoder: Annotated[bool, flag("--offsets-decoder", help="Decode keys and values as __consumer_offsets records (implies --deep-iteration).")] = False,
    transaction_log_decoder: Annotated[
        bool, flag("--transaction-log-decoder", help="Decode keys and values as __transaction_state records (implies --deep-iteration).")
    ] = False,
    metadata_decoder: Annotated[
        bool,
        flag("--cluster-metadata-decoder", help="Decode values as KRaft __cluster_metadata records (implies --deep-iteration)."),
    ] = False,
    # kafka-dump-log's older spelling, accepted but not listed (both names in one help cell
    # crowded the options table)
    metadata_decoder_alias: Annotated[bool, typer.Option("--metadata-decoder", hidden=True)] = False,
    no_decoders: Annotated[bool, flag("--no-decoders", help="Do not decode internal topics automatically (by partition dir name).")] = False,
    no_crc: Annotated[bool, flag("--no-crc", help="Do not report CRC mismatches as problems (is_valid still shows them).")] = False,
    decode: DecodeOpt = BodyDecode.base64,
    fmt: FormatOpt = OutputFormat.table,
    as_json: JsonOpt = False,
    as_jsonl: JsonlOpt = False,
) -> int:
    """Batches of .log segments with every field kafka-dump-log prints (and records with --deep-iteration).

    PATH is a log dir, a partition dir, a segment, a KRaft .checkpoint snapshot or any file
    holding Kafka record batches / messages (magic 0, 1, 2). __consumer_offsets,
    __transaction_state and __cluster_metadata records are decoded automatically in their
    partition dirs. A CRC mismatch shows as is_valid false and exit code 1; a broken entry
    framing ends the walk of that file."""
    from mqtool.cli.rows_kafka import LOG_COLUMNS, batch_row, record_row
    from mqtool.ops.dump import kafka as ops

    out = renderer(fmt, as_json, as_jsonl)
    metadata_decoder = metadata_decoder or metadata_decoder_alias
    choices: tuple[tuple[ops_kafka.Decoder, bool], ...] = (("offsets", offsets_decoder), ("transaction-log", transaction_log_decoder), ("metadata", metadata_decoder))
    chosen = [name for name, flag in choices if flag]
    if len(chosen) > 1 or (chosen and no_decoders):
        raise typer.BadParameter("give at most one of --offsets-decoder, --transaction-log-decoder, --cluster-metadata-decoder, --no-decoders")
    decoder: ops_kafka.Decoder = chosen[0] if chosen else ("none" if no_decoders else "auto")
    deep = deep or records_only or bool(chosen)
    options = ops.LogDumpOptions(
        deep=deep,
        from_offset=from_offset,
        since_ms=parse_time(since, "--since"),
        until_ms=parse_time(until, "--until"),
        max_bytes=max_bytes,
        check_crc=not no_crc,
        decoder=decoder,
    )
    targets = ops.log_targets(path, topic=topic, partition=partition)
    if not targets:
        out.warn(f"no .log segment under {path}" + (" for the --topic/--partition given" if topic is not None or partition is not None else ""))
    # through the store model's reading when it reads the files whole: one reading for the rows
    # and validate's findings on them
    engine = ops.LogDump(targets, options, reading=ops.model_reading(path, options, targets, topic=topic, partition=partition))
    table = out.fmt is OutputFormat.table
    mode = BodyDecode.utf8 if table and decode is BodyDecode.base64 else decode

    if deep and not table:  # the lean reading: the same rows, written as JSON text
        out.stream_encoded(_limited_lines(_log_json(out, engine, mode, records_only), limit))
        return _finish_log(out, engine, path, topic, partition, no_crc, max_bytes)

    def rows() -> Iterator[dict[str, object]]:
        with out.progress(engine.total_bytes, "dump kafka-log", streaming=True) as advance:
            done = 0
            for item in engine:
                if not records_only:
                    yield batch_row(item, decode=mode, table=table)
                for record in item.records or ():
                    yield record_row(item.batch, item.target.topic, item.target.partition_id, record, decode=mode, table=table, finding=item.finding)
                advance(engine.bytes_done - done)
                done = engine.bytes_done

    out.stream(_limited(rows(), limit), LOG_COLUMNS)
    return _finish_log(out, engine, path, topic, partition, no_crc, max_bytes)


def _log_json(out: "Renderer", engine: "ops_kafka.LogDump", decode: BodyDecode, records_only: bool) -> Iterator[bytes]:
    """The JSON lines of every row of ``engine.lean()`` (UTF-8), a run or an entry at a time:
    healthy runs through ``run_lines``, entries of the precise reading through ``item_lines``."""
    from mqtool.cli.rows_kafka_columns import item_lines, run_lines
    from mqtool.ops.dump import kafka as ops

    with out.progress(engine.total_bytes, "dump kafka-log", streaming=True) as advance:
        done = 0
        for item in engine.lean():
            if isinstance(item, ops.RecordRun):
                yield run_lines(item, decode=decode, records_only=records_only)
            else:
                yield item_lines(item, decode=decode, records_only=records_only)
            advance(engine.bytes_done - done)
            done = engine.bytes_done


def _limited_lines(texts: Iterable[bytes], limit: int | None) -> Iterator[bytes]:
    """The first ``limit`` lines of the texts (JSON lines: a JSON text holds no raw newline);
    stops taking texts as soon as it has them, as ``_limited`` stops taking rows."""
    if limit is None:
        yield from texts
        return
    left = limit
    if left == 0:
        return
    for text in texts:
        lines = text.count(b"\n")
        if lines < left:
            yield text
            left -= lines
            continue
        end = -1
        for _ in range(left):
            end = text.index(b"\n", end + 1)
        yield text[: end + 1]
        return


def _finish_log(out: "Renderer", engine: "ops_kafka.LogDump", path: Path, topic: str | None, partition: int | None, no_crc: bool, max_bytes: int | None) -> int:
    # every gap and damage in the partitions read, as validate states it (CODE path:position:
    # message), after the walk's own lines (with --no-crc, as stats --no-crc, only the walk's)
    findings: list[Finding] = [] if no_crc else engine.findings(path, topic=topic, partition=partition)
    for dumped in engine.ends:
        end, size = dumped.end, dumped.size
        if end.kind == "partial":
            out.warn(f"{dumped.path}:{end.position}: {size - end.position} bytes of a partial entry at the end (torn tail)")
        elif end.kind == "zeros":
            out.warn(f"{dumped.path}:{end.position}: {size - end.position} zero bytes after the last entry (pre-allocated segment)")
        elif end.kind == "stop":
            out.warn(f"{dumped.path}: stopped at {end.position} (--max-bytes {max_bytes}); {size - end.position} bytes not read")
    damaged = out.findings(findings)
    return finish_dump(out, not_stated(list[object](engine.problems), findings), extra_failures=damaged, hint=KAFKA_HINT)


def _index_family(
    kind: IndexKind, path: Path, topic: str | None, partition: int | None, verify: bool, limit: int | None, fmt: OutputFormat, as_json: bool, as_jsonl: bool
) -> int:
    from mqtool.cli import rows_kafka
    from mqtool.cli.rows_kafka import index_row
    from mqtool.ops.dump import kafka as ops

    columns = {"index": rows_kafka.INDEX_COLUMNS, "timeindex": rows_kafka.TIMEINDEX_COLUMNS, "txnindex": rows_kafka.TXNINDEX_COLUMNS}[kind]
    out = renderer(fmt, as_json, as_jsonl)
    engine = ops.IndexDump(ops.index_targets(path, kind, topic=topic, partition=partition), kind, verify=verify)
    table = out.fmt is OutputFormat.table
    out.stream(_limited((index_row(r, kind, table=table) for r in engine), limit), columns)
    for file, count, stated_end in engine.ends:
        end = cast("_IndexEnd | None", stated_end)  # IndexDump.ends types the DataEnd as object
        if end is not None and end.kind == "zeros" and end.length:
            out.warn(f"{file}:{end.position}: {end.length} bytes of unused zero slots after {count} entries (pre-allocated index)")
        elif end is not None and end.kind == "partial":
            out.warn(f"{file}:{end.position}: {end.length} trailing bytes shorter than an entry")
        if count == 0 and (end is None or end.kind == "eof"):
            out.warn(f"{file} is empty.")
    if verify and engine.mismatches:
        out.error(f"{engine.mismatches} entr{'y' if engine.mismatches == 1 else 'ies'} do not match the log (see the verify field)")
    return finish_dump(out, engine.problems, extra_failures=engine.mismatches, hint=KAFKA_HINT)


VerifyOpt = Annotated[
    bool,
    flag("--verify", help="Check every entry against the .log (adds a verify field; exit 1 on a mismatch)."),
]


def dump_kafka_index(
    path: KafkaPathArg,
    topic: TopicOpt = None,
    partition: PartitionOpt = None,
    verify: Annotated[
        bool,
        flag(
            "--verify",
            help="Check every entry against the .log: exact (the batch's last offset), within (its first offset, Kafka <= 0.10), "
            "multi-batch (the last batch of the same append), mismatch, not-a-batch, past-end. Exit 1 on a mismatch.",
        ),
    ] = False,
    limit: LimitOpt = None,
    fmt: FormatOpt = OutputFormat.table,
    as_json: JsonOpt = False,
    as_jsonl: JsonlOpt = False,
) -> int:
    """Offset index entries (.index): offset, relative offset and log position, up to the zero tail."""
    return _index_family("index", path, topic, partition, verify, limit, fmt, as_json, as_jsonl)


def dump_kafka_timeindex(
    path: KafkaPathArg,
    topic: TopicOpt = None,
    partition: PartitionOpt = None,
    verify: VerifyOpt = False,
    limit: LimitOpt = None,
    fmt: FormatOpt = OutputFormat.table,
    as_json: JsonOpt = False,
    as_jsonl: JsonlOpt = False,
) -> int:
    """Time index entries (.timeindex): timestamp and offset (--verify: the batch holding the offset has that max timestamp)."""
    return _index_family("timeindex", path, topic, partition, verify, limit, fmt, as_json, as_jsonl)


def dump_kafka_txnindex(
    path: KafkaPathArg,
    topic: TopicOpt = None,
    partition: PartitionOpt = None,
    verify: VerifyOpt = False,
    limit: LimitOpt = None,
    fmt: FormatOpt = OutputFormat.table,
    as_json: JsonOpt = False,
    as_jsonl: JsonlOpt = False,
) -> int:
    """Aborted transactions (.txnindex): producer, first/last offset, last stable offset (--verify: an ABORT marker is there)."""
    return _index_family("txnindex", path, topic, partition, verify, limit, fmt, as_json, as_jsonl)


def dump_kafka_snapshot(
    path: KafkaPathArg,
    topic: TopicOpt = None,
    partition: PartitionOpt = None,
    limit: LimitOpt = None,
    fmt: FormatOpt = OutputFormat.table,
    as_json: JsonOpt = False,
    as_jsonl: JsonlOpt = False,
) -> int:
    """Producer-state snapshots (.snapshot): one row per producer, as kafka-dump-log prints them."""
    from mqtool.cli.rows_kafka import SNAPSHOT_COLUMNS, snapshot_row
    from mqtool.ops.dump import kafka as ops

    out = renderer(fmt, as_json, as_jsonl)
    problems: list[MqError] = []
    targets = ops.index_targets(path, "snapshot", topic=topic, partition=partition)
    table = out.fmt is OutputFormat.table
    out.stream(_limited((snapshot_row(r, table=table) for r in ops.snapshot_rows(targets, problems)), limit), SNAPSHOT_COLUMNS)
    return finish_dump(out, problems, hint=KAFKA_HINT)


def dump_kafka_checkpoint(
    path: KafkaPathArg,
    topic: TopicOpt = None,
    partition: PartitionOpt = None,
    fmt: FormatOpt = OutputFormat.table,
    as_json: JsonOpt = False,
    as_jsonl: JsonlOpt = False,
) -> int:
    """Checkpoint and state files: offset checkpoints, leader epochs, meta.properties and the like.

    The four offset checkpoints (recovery point, high watermark, log start, cleaner offset),
    leader-epoch-checkpoint, partition.metadata, meta.properties, .kafka_cleanshutdown,
    quorum-state and stray *.tmp files, as one document; a file that does not parse has an
    error field (exit 1)."""
    from mqtool.ops.dump import kafka as ops

    out = renderer(fmt, as_json, as_jsonl)
    docs = [ops.read_checkpoint_file(p, topic=topic, partition=partition) for p in ops.checkpoint_files(path)]
    docs = ops.partition_filter(docs, topic, partition)
    doc = {"files": docs}

    def table(console: "Console") -> None:
        for d in docs:
            render_generic(console, {k: v for k, v in d.items() if k not in ("file",)}, str(d["file"]))  # "file" is the path as text

    out.document(doc, table)
    errors = [str(d["error"]) for d in docs if "error" in d]  # "error" is the message as text
    for error in errors:
        out.error(error)
    return ExitCode.FINDINGS if errors else ExitCode.OK
