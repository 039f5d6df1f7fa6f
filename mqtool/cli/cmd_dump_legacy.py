"""``mqtool dump jafka`` and ``mqtool dump metaq``."""

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from mqtool.cli.common import finish_dump, renderer
from mqtool.cli.options import INT, BodyDecode, DecodeOpt, FormatOpt, JsonlOpt, JsonOpt, LimitOpt, OutputFormat, PartitionOpt, TopicOpt, flag
from mqtool.cli.render import Renderer
from mqtool.findings import not_stated

if TYPE_CHECKING:
    from mqtool.ops.dump import legacy as ops

FromOffsetOpt = Annotated[
    int | None,
    typer.Option("--from-offset", min=0, metavar=INT, help="Start at this offset (a byte offset of the partition, like a consumer fetch)."),
]


def _body_mode(out: Renderer, decode: BodyDecode) -> BodyDecode:
    """Tables show text unless another --decode was asked for (as ``dump commitlog`` does)."""
    return BodyDecode.utf8 if out.fmt is OutputFormat.table and decode is BodyDecode.base64 else decode


def dump_jafka(
    path: Annotated[Path, typer.Argument(help="A Jafka data dir (log.dir), a <topic>-<partition> directory, or one .jafka file.")],
    topic: TopicOpt = None,
    partition: PartitionOpt = None,
    from_offset: FromOffsetOpt = None,
    limit: LimitOpt = None,
    shallow: Annotated[bool, flag("--shallow", help="Do not expand gzip wrappers into their inner messages (as Jafka's Dumper).")] = False,
    decode: DecodeOpt = BodyDecode.base64,
    fmt: FormatOpt = OutputFormat.table,
    as_json: JsonOpt = False,
    as_jsonl: JsonlOpt = False,
) -> int:
    """Jafka messages: offset, position, LENGTH, magic, attribute/codec, CRC (checked), payload; gzip
    wrappers followed by their inner messages with the offsets consumers see.

    Exit 0 when every message is intact, 1 when damage was met (listed on stderr), 3 when PATH is
    not a Jafka store."""
    from mqtool.cli.rows_legacy import JAFKA_COLUMNS, jafka_row, table_row
    from mqtool.ops.dump import legacy as ops
    from mqtool.store.jafka import open_jafka

    out = renderer(fmt, as_json, as_jsonl)
    engine = ops.JafkaDump(open_jafka(path), topic, partition, from_offset, limit, deep=not shallow)
    mode = _body_mode(out, decode)
    table = out.fmt is OutputFormat.table

    def rows() -> Iterator[dict[str, Any]]:
        with out.progress(engine.total_bytes, "dump jafka", streaming=True) as advance:
            done = 0
            for item in engine:
                row = jafka_row(item, mode)
                if table:
                    table_row(row, "jafka")
                advance(engine.bytes_done - done)
                done = engine.bytes_done
                yield row

    out.stream(rows(), JAFKA_COLUMNS)
    return _finish(out, path, engine)


def dump_metaq(
    path: Annotated[Path, typer.Argument(help="A MetaQ data dir (dataPath), a <topic>-<partition> directory, or one .meta/.meta.arc/.meta.zip file.")],
    topic: TopicOpt = None,
    partition: PartitionOpt = None,
    from_offset: FromOffsetOpt = None,
    limit: LimitOpt = None,
    archives: Annotated[bool, flag("--archives/--no-archives", help="Also read .meta.arc and .meta.zip archives (the older offsets).")] = True,
    decode: DecodeOpt = BodyDecode.base64,
    fmt: FormatOpt = OutputFormat.table,
    as_json: JsonOpt = False,
    as_jsonl: JsonlOpt = False,
) -> int:
    """MetaQ messages: offset, position, msgLen, checksum (checked), id (with its IdWorker broker id and
    sequence), flag, attribute, payload; archives (.meta.zip inflated on the fly) in offset order.

    Exit 0 when every message is intact, 1 when damage was met (listed on stderr), 3 when PATH is
    not a MetaQ store."""
    from mqtool.cli.rows_legacy import METAQ_COLUMNS, metaq_row, table_row
    from mqtool.ops.dump import legacy as ops
    from mqtool.store.metaq import open_metaq

    out = renderer(fmt, as_json, as_jsonl)
    engine = ops.MetaqDump(open_metaq(path), topic, partition, from_offset, limit, archives=archives)
    mode = _body_mode(out, decode)
    table = out.fmt is OutputFormat.table

    def rows() -> Iterator[dict[str, Any]]:
        with out.progress(engine.total_bytes, "dump metaq", streaming=True) as advance:
            done = 0
            for item in engine:
                row = metaq_row(item, mode)
                if table:
                    table_row(row, "metaq")
                advance(engine.bytes_done - done)
                done = engine.bytes_done
                yield row

    out.stream(rows(), METAQ_COLUMNS)
    return _finish(out, path, engine)


def _finish(out: Renderer, path: Path, engine: "ops.JafkaDump | ops.MetaqDump") -> int:
    """Every gap and damage in what was dumped as validate states it (CODE path:position:
    message: the findings of the store model's reading the dump consumed), besides the rows' own
    lines."""
    findings = engine.findings
    damaged = out.findings(findings)
    return finish_dump(
        out,
        not_stated(list[object](engine.problems), findings),
        notes=engine.notes,
        extra_failures=damaged,
        hint="the data is damaged at the position(s) above; `mqtool validate` explains the damage",
    )
