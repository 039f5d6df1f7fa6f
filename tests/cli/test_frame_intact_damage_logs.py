"""Damage that leaves a Kafka batch's or a Jafka / MetaQ message's frame intact (issue 30): every
framed record comes through, with its finding.

On a copy of each fixture with one payload byte flipped inside a batch or message (its CRC fails,
its lengths hold, its records still decode) -- KAFKA-LOG-CRC, JAFKA-CRC, METAQ-CRC -- ``dump``,
``stats``, ``scan`` and ``query`` list as many records as on the healthy copy, the damaged ones
carry the finding's code, and the finding is stated once on stderr.  The counts are each reader's
own on the healthy copy (a Kafka dump row per record, stats' messages without control records, a
scan row per record), never numbers written here."""

from __future__ import annotations

import json
import shutil
import struct
from collections.abc import Callable
from pathlib import Path

import pytest

from mqtool.cli.app import run
from mqtool.formats import jafka as jf
from mqtool.formats import metaq as mq
from mqtool.formats.kafka.log import LogWalker
from tests.conftest import FIXTURES


def mqtool(capsys, *args: object) -> tuple[int, str, str]:
    code = run([str(a) for a in args])
    out, err = capsys.readouterr()
    return code, out, err


def _flip(path: Path, position: int) -> None:
    raw = bytearray(path.read_bytes())
    raw[position] ^= 0x01
    path.write_bytes(bytes(raw))


def kafka_damage(root: Path) -> tuple[Path, int, list[int]]:
    """A value byte of the last record of the 5th batch of orders-0's first segment: (file,
    batch position, the offsets of its records)."""
    path = root / "orders-0" / "00000000000000000000.log"
    batch = list(LogWalker(path.read_bytes(), mode="full"))[4]
    _flip(path, batch.position + batch.size - 5)  # the last record's value (it has headers: before them)
    return path, batch.position, [r.offset for r in batch.records or ()]


def _message_positions(path: Path, walker: Callable) -> list[int]:
    return [pos for pos, _m in walker(path.read_bytes())]


def jafka_damage(root: Path) -> tuple[Path, int, list[int]]:
    """The last payload byte of the 4th (uncompressed) message of a segment."""
    path = root / "orders-0" / "00000000000000000771.jafka"
    data = path.read_bytes()
    pos, message = list(jf.MessageWalker(data))[3]
    assert not message.compressed
    _flip(path, pos + message.serialized_size - 1)
    return path, pos, [771 + pos]


def metaq_damage(root: Path) -> tuple[Path, int, list[int]]:
    """The last DATA byte of the 4th message of a segment."""
    path = root / "trade-1" / "00000000000000000000.meta"
    data = path.read_bytes()
    pos, message = list(mq.MessageWalker(data))[3]
    (length,) = struct.unpack_from(">i", data, pos)
    _flip(path, pos + mq.HEADER_LEN + length - 1)
    return path, pos, [pos]


LAYOUTS = {
    "kafka": (FIXTURES / "kafka-logs", kafka_damage, "KAFKA-LOG-CRC", ("dump", "kafka-log", "--deep", "--records-only")),
    "jafka": (FIXTURES / "jafka-data", jafka_damage, "JAFKA-CRC", ("dump", "jafka")),
    "metaq": (FIXTURES / "metaq-data", metaq_damage, "METAQ-CRC", ("dump", "metaq")),
}


@pytest.fixture(params=list(LAYOUTS))
def stores(request, tmp_path):
    layout = request.param
    pristine, damage, code, dump = LAYOUTS[layout]
    healthy = tmp_path / "healthy"
    damaged = tmp_path / "damaged"
    shutil.copytree(pristine, healthy)
    shutil.copytree(pristine, damaged)
    path, position, offsets = damage(damaged)
    return layout, healthy, damaged, path, position, offsets, code, dump


def _one_line(err: str, code: str) -> list[str]:
    return [line for line in err.splitlines() if f" {code} " in line]


def test_validate_names_the_damage_once(stores, capsys):
    _layout, _healthy, damaged, path, _position, _offsets, code, _dump = stores
    rc, out, _err = mqtool(capsys, "validate", damaged, "--json")
    errors = [(f["code"], Path(f["path"]).name) for f in json.loads(out)["findings"] if f["severity"] == "error"]
    assert rc == 1 and errors == [(code, path.name)]


def test_dump_lists_every_framed_record(stores, capsys):
    layout, healthy, damaged, path, position, _offsets, code, dump = stores
    rc, out, _err = mqtool(capsys, *dump, healthy, "--jsonl")
    expected = [json.loads(line) for line in out.splitlines()]
    assert rc == 0 and expected
    for fmt in ("--jsonl", "--json"):
        rc, out, err = mqtool(capsys, *dump, damaged, fmt)
        rows = [json.loads(line) for line in out.splitlines()] if fmt == "--jsonl" else json.loads(out)
        assert rc == 1 and len(rows) == len(expected), (layout, fmt)
        # one line per finding, from the one reading: no second CRC line of the dump's own
        assert len(_one_line(err, code)) == 1 and len([line for line in err.splitlines() if "error:" in line]) == 1, err
        where = "batch_position" if layout == "kafka" else "position"
        marked = {(Path(r["file"]).name, r[where]) for r in rows if r.get("finding") == code}
        assert marked == {(path.name, position)}, (layout, fmt)
        assert all(r.get("finding") in (None, code) for r in rows)
    rc, out, _err = mqtool(capsys, *dump, damaged)  # the table marks the rows
    assert f"[{code}]" in out


def test_stats_counts_every_framed_record(stores, capsys):
    layout, healthy, damaged, _path, _position, offsets, code, _dump = stores
    _rc, out, _err = mqtool(capsys, "stats", healthy, "--json")
    expected = json.loads(out)["totals"]["messages"]
    rc, out, err = mqtool(capsys, "stats", damaged, "--json")
    totals = json.loads(out)["totals"]
    assert rc == 1
    assert totals["messages"] == expected
    assert totals["damaged_messages"] == len(offsets)
    assert len(_one_line(err, code)) == 1, err


def test_query_finds_the_damaged_record(stores, capsys):
    layout, _healthy, damaged, path, _position, offsets, code, _dump = stores
    topic, partition = path.parent.name.rsplit("-", 1)
    for offset in offsets:
        rc, out, err = mqtool(capsys, "query", damaged, "--topic", topic, "--partition", partition, "--offset", offset, "--json")
        rows = json.loads(out)
        assert rows and rows[0]["offset"] == offset and rows[0].get("finding") == code, (layout, offset, rows)
        assert rc == 1 and len(_one_line(err, code)) == 1, err


def test_scan_exports_every_framed_record(stores):
    pa = pytest.importorskip("pyarrow")
    pytest.importorskip("pyspark")
    from mqtool.pipeline import sources as S

    layout, healthy, damaged, path, position, _offsets, code, _dump = stores
    where = "batch_position" if layout == "kafka" else "position"
    base = {"kafka": S.KAFKA_COLUMNS, "jafka": S.JAFKA_COLUMNS, "metaq": S.METAQ_COLUMNS}[layout]

    def table(root: Path, **options: str):
        opts = S.parse_options({"path": str(root), "withProblems": "true", **options})
        schema = S.arrow_schema(S._columns(base, opts, layout))
        batches = [b for part in S.PLANNERS[layout](opts) for b in S.READERS[layout](part, opts, schema)]
        return pa.Table.from_batches(batches, schema=schema).to_pylist()

    expected = [r for r in table(healthy) if r["row_kind"] == "record"]
    for options in ({}, {"splitSize": "1000"}):
        rows = table(damaged, **options)
        records = [r for r in rows if r["row_kind"] == "record"]
        assert len(records) == len(expected), (layout, options)
        marked = {(Path(r["file"]).name, r[where]) for r in records if r["finding"] is not None}
        assert marked == {(path.name, position)}, (layout, options)
        assert {r["finding"] for r in records} == {None, code}
        assert [r["problem_code"] for r in rows if r["row_kind"] == "problem"] == [code]
