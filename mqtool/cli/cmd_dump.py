"""``mqtool dump``: every field of every record of one file family, streamed."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from mqtool.cli.app import app
from mqtool.cli.common import DecodeOpt, FormatOpt, JsonlOpt, JsonOpt, renderer
from mqtool.cli.exit_codes import ExitCode
from mqtool.cli.render import BodyDecode, Column, OutputFormat
from mqtool.cli.rows import iso_ms, message_row, parse_time
from mqtool.ops import dump as ops_dump

dump_app = typer.Typer(help="Dump the records of a file family (streaming; every field in JSON).", no_args_is_help=True)
app.add_typer(dump_app, name="dump")

PathArg = Annotated[Path, typer.Argument(help="A store root, the family's directory, or one file.")]
LimitOpt = Annotated[Optional[int], typer.Option("--limit", min=0, help="Stop after this many rows.")]
TopicOpt = Annotated[Optional[str], typer.Option("--topic", help="Only this topic.")]
QueueOpt = Annotated[Optional[int], typer.Option("--queue-id", help="Only this queue id.")]
SinceOpt = Annotated[Optional[str], typer.Option("--since", help="Store time >= this (ms since epoch or ISO-8601).")]
UntilOpt = Annotated[Optional[str], typer.Option("--until", help="Store time <= this (ms since epoch or ISO-8601).")]

COMMITLOG_COLUMNS = [
    Column("commitlog_offset", "OFFSET", 14, ">"),
    Column("topic", "TOPIC", 24),
    Column("queue_id", "QID", 4, ">"),
    Column("queue_offset", "QOFFSET", 9, ">"),
    Column("total_size", "SIZE", 7, ">"),
    Column("store_time", "STORE TIME", 23),
    Column("tags", "TAGS", 12),
    Column("keys", "KEYS", 20),
    Column("body", "BODY"),
]


@dump_app.command("commitlog")
def dump_commitlog(
    path: PathArg,
    topic: TopicOpt = None,
    queue_id: QueueOpt = None,
    from_offset: Annotated[
        Optional[int], typer.Option("--from-offset", min=0, help="Start at this commitlog offset.")
    ] = None,
    limit: LimitOpt = None,
    since: SinceOpt = None,
    until: UntilOpt = None,
    key: Annotated[Optional[str], typer.Option("--key", help="Only records with this KEYS token or UNIQ_KEY.")] = None,
    decode: DecodeOpt = BodyDecode.base64,
    uncompress: Annotated[bool, typer.Option("--uncompress", help="Show compressed bodies uncompressed.")] = False,
    no_crc: Annotated[bool, typer.Option("--no-crc", help="Do not verify body CRCs while reading.")] = False,
    fmt: FormatOpt = OutputFormat.table,
    as_json: JsonOpt = False,
    as_jsonl: JsonlOpt = False,
) -> int:
    """CommitLog records: every header field, properties, keys, tags, msgId and body."""
    out = renderer(fmt, as_json, as_jsonl)
    flt = ops_dump.RecordFilter(
        topic=topic,
        queue_id=queue_id,
        from_offset=from_offset,
        since_ms=parse_time(since, "--since"),
        until_ms=parse_time(until, "--until"),
        key=key,
    )
    files = ops_dump.commitlog_files(path)
    engine = ops_dump.CommitLogDump(files, flt, limit, check_crc=not no_crc)
    table = out.fmt is OutputFormat.table
    body_mode = decode if not table or decode is not BodyDecode.base64 else BodyDecode.utf8

    def rows():
        with out.progress(engine.total_bytes, "dump commitlog", streaming=True) as advance:
            done = 0
            for loc, record in engine:
                row = message_row(
                    record, file=str(loc.path), position=loc.position, address=loc.address, decode=body_mode, uncompress=uncompress
                )
                if table:
                    row["store_time"] = iso_ms(record.store_timestamp)
                advance(engine.bytes_done - done)
                done = engine.bytes_done
                yield row

    out.stream(rows(), COMMITLOG_COLUMNS)
    return _finish(out, engine.problems)


def _finish(out, problems) -> int:
    for problem in problems:
        out.error(str(problem))
    if problems:
        out.warn("the data stops being valid at the position(s) above; `mqtool validate` explains the damage")
        return ExitCode.FINDINGS
    return ExitCode.OK
