"""``dump commitlog`` in JSON: the lean reading (``CommitLogDump.lean`` + ``column_lines``) writes
exactly the rows of the precise reading (``CommitLogDump`` + ``message_row`` + ``dumps``), with
the same findings and file ends, on the fixture and on generated CommitLogs with damage."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mqtool.cli.app import run
from mqtool.cli.render import BodyDecode, dumps
from mqtool.cli.rows import column_lines, message_row
from mqtool.formats import segment_names as segnames
from mqtool.formats.rocketmq import commitlog as cl
from mqtool.ops.dump import heap
from mqtool.ops.dump import rocketmq as ops_dump
from mqtool.store.files import read_in_pieces
from tests.strategies import message_records

PROJECT_ROOT = Path(__file__).resolve().parents[2]
STORE = PROJECT_ROOT / "fixtures" / "rocketmq-store"
FILE_SIZE = 4096


def _precise(engine: ops_dump.CommitLogDump, decode: BodyDecode) -> list[str]:
    return [
        dumps(message_row(rec, file=str(loc.path), position=loc.position, address=loc.address, decode=decode))
        for loc, rec in engine
    ]


def _split(text: bytes) -> list[str]:
    """JSON lines as the rows' texts (a JSON text holds no raw newline)."""
    assert text == b"" or text.endswith(b"\n")
    return text.decode("utf-8").split("\n")[:-1]


def _lean(engine: ops_dump.CommitLogDump, decode: BodyDecode) -> list[str]:
    lines: list[str] = []
    for item in engine.lean():
        if isinstance(item, ops_dump.ColumnChunk):
            lines += _split(column_lines(item.part(0, 3), decode) + column_lines(item.part(3, len(item)), decode))  # batches join up
        else:
            loc, rec = item
            lines.append(dumps(message_row(rec, file=str(loc.path), position=loc.position, address=loc.address, decode=decode)))
    return lines


def _both(path: Path, decode: BodyDecode = BodyDecode.base64, **options) -> tuple[list[str], ops_dump.CommitLogDump, list[str], ops_dump.CommitLogDump]:
    limit = options.pop("limit", None)
    check_crc = options.pop("check_crc", True)
    engines = [
        ops_dump.CommitLogDump(
            ops_dump.commitlog_files(path), ops_dump.RecordFilter(**options), limit, check_crc=check_crc,
            directory=ops_dump.commitlog_directory(path),
        )
        for _ in range(2)
    ]
    return _precise(engines[0], decode), engines[0], _lean(engines[1], decode), engines[1]


def _end(dumped: ops_dump.FileDumped) -> tuple:
    """A file's end, its error by type and text (exceptions compare by identity)."""
    end = dumped.end
    where = (end.kind, end.position, end.length, end.unit) if end is not None else None
    error = end.error if end is not None else None
    return (dumped.path, where, dumped.records, type(error), str(error), dumped.torn)


def _same(path: Path, decode: BodyDecode = BodyDecode.base64, **options) -> list[str]:
    precise, p_engine, lean, l_engine = _both(path, decode, **options)
    assert lean == precise
    assert l_engine.findings == p_engine.findings
    assert [_end(e) for e in l_engine.ends] == [_end(e) for e in p_engine.ends]
    return lean


@pytest.mark.parametrize("decode", list(BodyDecode))
def test_fixture_rows_are_the_precise_rows(decode):
    assert len(_same(STORE, decode)) == 245


@pytest.mark.parametrize(
    "options",
    [
        {"topic": "OrderTopic", "queue_id": 1, "limit": 3},
        {"from_offset": 16384, "limit": 1},
        {"from_offset": 300},
        {"key": "KEY42"},
        {"since_ms": 1700000002000, "until_ms": 1700000002100},
        {"limit": 0},
        {"limit": 7},
        {"check_crc": False},
    ],
)
def test_fixture_filters_select_the_precise_rows(options):
    _same(STORE, **options)


def test_small_chunks_read_the_same():
    """Records cut by the piece's end (headers cut within their first 8 bytes too) are read
    again from their start, never taken for the end of the data."""
    expected = _same(STORE)
    for chunk in (97, 300, 1000, 4099):
        with read_in_pieces(chunk):
            assert _same(STORE) == expected


def _write_store(root: Path, data: bytes) -> Path:
    (root / "commitlog").mkdir(parents=True)
    (root / "commitlog" / segnames.rocketmq_file_name(0)).write_bytes(data)
    return root


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    records=st.lists(message_records(max_body=200), min_size=1, max_size=8),
    odd=st.lists(st.sampled_from(["plain", "plain", "plain", "physical", "crc-property"]), min_size=1, max_size=4),
    flip=st.one_of(st.none(), st.tuples(st.integers(0, FILE_SIZE - 1), st.integers(1, 255))),
    chunk=st.sampled_from([None, 64, 150, 512]),
    decode=st.sampled_from(list(BodyDecode)),
)
def test_generated_commitlog_rows_are_the_precise_rows(tmp_path_factory, records, odd, flip, chunk, decode):
    data = bytearray()
    for i, rec in enumerate(records):
        kind = odd[i % len(odd)]
        if kind != "physical":  # a PHYSICALOFFSET that is not the address: the precise decoder reads it
            rec = cl.with_offsets(rec, queue_offset=i, physical_offset=len(data))
        encoded = cl.encode_message(rec, append_crc_property=kind == "crc-property")
        if len(data) + len(encoded) > FILE_SIZE - 8:
            break
        data += encoded
    data += bytes(FILE_SIZE - len(data))  # the newest file: zeros after its data
    if flip is not None:
        data[flip[0]] ^= flip[1]
    root = _write_store(tmp_path_factory.mktemp("store"), bytes(data))
    with read_in_pieces(chunk or (1 << 30)):
        _same(root, decode)
        _same(root, decode, check_crc=False)
        _same(root, decode, limit=2, from_offset=100)


def test_a_finding_inside_the_last_row_of_a_limit_is_named(tmp_path):
    """The limit's last row breaks its queue's QUEUEOFFSET sequence: the finding's position is the
    field inside the record (+20), past the record's start, and both readings name it (the lean one
    used to cut its findings at the row's start).  Found by hypothesis."""
    data = bytearray()
    for i, (topic, properties) in enumerate([("", {}), ("0", {}), ("", {}), ("0", {"0": "0"})]):
        rec = cl.with_offsets(cl.MessageRecord(topic=topic, body=b"", properties=properties), queue_offset=i, physical_offset=len(data))
        data += cl.encode_message(rec)
    data += bytes(FILE_SIZE - len(data))
    root = _write_store(tmp_path / "s", bytes(data))
    _, engine, _, _ = _both(root, limit=2, from_offset=100)
    assert [(x.code, x.details) for x in engine.findings][-1] == ("RMQ-CL-QUEUE-OFFSET", {"topic": "0", "queue_id": 0})
    _same(root, limit=2, from_offset=100)
    _same(root, limit=2, from_offset=1)


def test_cli_output_errors_and_exit_code_are_the_precise_ones(capsys, tmp_path):
    """``--uncompress`` takes the precise path (the fixture has no compressed body)."""
    shutil.copytree(STORE, tmp_path / "s")
    files = sorted((tmp_path / "s" / "commitlog").iterdir())
    with open(files[0], "r+b") as f:
        f.seek(1000)
        f.write(b"\xff")
    results = []
    for extra in ([], ["--uncompress"]):
        for fmt in ("--jsonl", "--json"):
            code = run(["dump", "commitlog", str(tmp_path / "s"), fmt, *extra])
            out, err = capsys.readouterr()
            results.append((fmt, code, out, err))
    assert results[0][1] == 1 and "RMQ-" in results[0][3]
    assert results[:2] == results[2:]


# KEYS-like values: tokens (some empty: runs of spaces) joined by a space, with spaces around
_KEY_TEXT = st.tuples(
    st.sampled_from(["", " ", "  "]),
    st.lists(st.sampled_from(["", "a", "b1", "\u00e9\u4e2d", 'q"', "t\\", "\t"]), min_size=1, max_size=4).map(" ".join),
    st.sampled_from(["", " "]),
).map("".join).filter(bool)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    records=st.lists(message_records(max_body=64), min_size=1, max_size=12),
    keys=st.lists(st.one_of(st.none(), _KEY_TEXT), min_size=1, max_size=12),
    tags=st.lists(st.one_of(st.none(), _KEY_TEXT), min_size=1, max_size=3),
    decode=st.sampled_from(list(BodyDecode)),
    kept=st.booleans(),
)
def test_column_lines_are_the_precise_lines(tmp_path_factory, records, keys, tags, decode, kept):
    """The text ``column_lines`` builds a column at a time is ``dumps(message_row(...))`` for
    every field: integers over their whole range (negative, INT64_MIN), columns of one value and
    of many, KEYS split on runs of spaces (leading, trailing, only spaces), values with bytes JSON
    escapes (those rows take the precise path), non-ASCII text -- with the bodies put in either
    way (``kept``: ``ops.dump.heap.buffers_kept``)."""
    data = bytearray()
    for i, rec in enumerate(records):
        props = dict(rec.properties) if i % 4 == 3 else {}  # (their random text is mostly escapes)
        for name, values in (("KEYS", keys), ("TAGS", tags)):
            if values[i % len(values)] is not None:
                props[name] = values[i % len(values)]
        if i == 0:
            rec = replace(rec, flag=-(1 << 31), born_timestamp=-(1 << 63), queue_id=0)
        rec = replace(rec, properties=props)
        data += cl.encode_message(cl.with_offsets(rec, queue_offset=rec.queue_offset, physical_offset=len(data)))
    root = _write_store(tmp_path_factory.mktemp("store"), bytes(data))
    with _buffers_kept(kept):
        precise, _, lean, _ = _both(root, decode)
    assert lean == precise


@contextmanager
def _buffers_kept(kept: bool) -> Iterator[None]:
    """``column_lines`` as after ``ops.dump.heap.keep_batch_buffers`` took effect (its bodies put in
    by formatting the batch's text) or not (the text's pieces and the bodies joined)."""
    was = heap._kept
    heap._kept = kept
    try:
        yield
    finally:
        heap._kept = was


@pytest.mark.parametrize("kept", [True, False])
@pytest.mark.parametrize("decode", list(BodyDecode))
def test_percent_signs_read_the_same_either_way(tmp_path, decode, kept):
    """Text holding ``%`` (the mark a formatting puts the bodies in at) in topics, properties,
    keys and bodies, and a row that takes the precise path (a quote in TAGS) in the second batch:
    the same lines whichever way the bodies are put in."""
    data = bytearray()
    for i in range(40):
        props = {"KEYS": f"k%s{i} %d", "TAGS": "%%" if i != 20 else 'a"b', "UNIQ_KEY": f"{i:032X}", "X%": "%(x)s"}
        rec = cl.MessageRecord(topic=f"T%s{i % 3}%d", queue_id=i % 2, body=b"%s %d %% body" * (i % 5) + bytes([i]), properties=props)
        data += cl.encode_message(cl.with_offsets(rec, queue_offset=i // 2, physical_offset=len(data)))
    root = _write_store(tmp_path, bytes(data))
    with _buffers_kept(kept):
        assert len(_same(root, decode)) == 40


def test_a_long_properties_value_splits_the_batch(tmp_path, monkeypatch):
    """A record whose PROPERTIES are long would pad every row of its batch to their width: the
    batch is done in parts, and the text is the same."""
    from mqtool.cli import rows

    data = bytearray()
    for i in range(9):
        props = {"KEYS": f"k{i} x", "TAGS": "T"} | ({"LONG": "v" * 3000} if i == 4 else {})
        data += cl.encode_message(cl.with_offsets(cl.MessageRecord(topic="T", body=b"b" * i, properties=props), queue_offset=i, physical_offset=len(data)))
    root = _write_store(tmp_path, bytes(data))
    whole = _same(root)
    calls: list[int] = []
    real = rows.column_lines

    def counted(chunk, decode):
        calls.append(len(chunk))
        return real(chunk, decode)

    monkeypatch.setattr(rows, "MATRIX_BUDGET", 3100 * 2)
    monkeypatch.setattr(rows, "column_lines", counted)
    engine = ops_dump.CommitLogDump(ops_dump.commitlog_files(root), ops_dump.RecordFilter(), None)
    (chunk,) = list(engine.lean())
    assert _split(rows.column_lines(chunk, BodyDecode.base64)) == whole
    assert calls[0] == 9 and 2 in calls  # split down to the long record's part
