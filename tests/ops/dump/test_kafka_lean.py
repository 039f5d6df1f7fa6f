"""``dump kafka-log --deep`` in JSON: the lean reading (``LogDump.lean`` + ``record_columns`` +
``run_lines``) writes exactly the rows of the precise reading (``LogDump`` + ``batch_row`` /
``record_row`` + ``dumps``), with the same problems and file ends, on generated segments with
compressed and control batches, headers, null keys and values, LogAppendTime, and damage; the
column framer gives each batch the precise walk's records or refuses it, whatever the batches
framed with it in the same call."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mqtool.cli.app import run
from mqtool.cli.render import BodyDecode, dumps
from mqtool.cli.rows_kafka import batch_row, record_row
from mqtool.cli.rows_kafka_columns import item_lines, run_lines
from mqtool.errors import MqError
from mqtool.formats.checksums import crc32c
from mqtool.formats.kafka import compression
from mqtool.formats.kafka import record_batch as rb
from mqtool.formats.kafka import record_columns as rcol
from mqtool.ops.dump import kafka as ops
from mqtool.store.files import read_in_pieces

PROJECT_ROOT = Path(__file__).resolve().parents[3]
FIXTURE = PROJECT_ROOT / "fixtures" / "kafka-logs"
T0 = 1_700_000_000_000

# --- the framers -----------------------------------------------------------------------------------

_BLOB = st.one_of(st.none(), st.binary(max_size=40))
_HEADER_KEY = st.one_of(st.sampled_from(["trace-id", "", "k", 'q"uote', "t\\ab", "\u00e9\u4e2d", "ctl\x01"]), st.text(max_size=6))
_RECORD = st.builds(
    rb.Record,
    offset_delta=st.one_of(st.integers(0, 300), st.integers(-(1 << 31), (1 << 31) - 1)),
    timestamp_delta=st.one_of(st.integers(-5, 5000), st.integers(-(1 << 63), (1 << 63) - 1)),
    key=_BLOB,
    value=_BLOB,
    headers=st.lists(st.builds(rb.RecordHeader, _HEADER_KEY, _BLOB), max_size=3).map(tuple),
    attributes=st.integers(0, 127),
)


def _as_records(data: bytes, c: rcol.RecordColumns, first: int = 0, count: int | None = None, header: int = 0) -> list[rb.Record]:
    """Records ``first`` .. ``first + count`` of the columns as ``Record``s (their headers from
    header ``header`` on)."""

    def blob(at: int, n: int) -> bytes | None:
        return None if n < 0 else data[at : at + n]

    out, h = [], header
    for i in range(first, len(c) if count is None else first + count):
        headers = []
        for _ in range(int(c.header_count[i])):
            key = data[c.header_key_at[h] : c.header_key_at[h] + c.header_key_len[h]].decode("utf-8", "surrogateescape")
            headers.append(rb.RecordHeader(key, blob(int(c.header_value_at[h]), int(c.header_value_len[h]))))
            h += 1
        out.append(
            rb.Record(
                int(c.offset_delta[i]), int(c.timestamp_delta[i]), blob(int(c.key_at[i]), int(c.key_len[i])),
                blob(int(c.value_at[i]), int(c.value_len[i])), tuple(headers),
            )
        )  # fmt: skip
    if count is None:
        assert h == len(c.header_key_at)
    return out


def _precise(data: bytes, count: int) -> list[rb.Record] | None:
    try:
        return [r.__class__(r.offset_delta, r.timestamp_delta, r.key, r.value, r.headers) for r in rb.iter_records(data, count)]
    except MqError:
        return None


def _check_framer(spans: list[tuple[bytes, int]]) -> list[bool]:
    """Frame the spans (record bytes, count) in one call: each accepted span has the records the
    precise walk gives (attributes aside: dump does not show them); a span the precise walk
    rejects is never accepted.  Returns which spans were accepted."""
    data = b"".join(d for d, _ in spans)
    starts, ends, at = [], [], 0
    for d, _ in spans:
        starts.append(at)
        at += len(d)
        ends.append(at)
    accepted, columns = rcol.frame_records(data, starts, ends, [n for _, n in spans])
    first = header = 0
    for (d, n), ok in zip(spans, accepted):
        precise = _precise(d, n)
        if not ok:
            continue
        assert precise is not None, "the framer accepted what the precise walk rejects"
        records = _as_records(data, columns, first, n, header)
        assert records == precise
        first += n
        header += sum(len(r.headers) for r in records)
    assert first == len(columns) and header == len(columns.header_key_at)
    return accepted


def _healthy(records: list[rb.Record]) -> bool:
    """Records the framer never refuses (short timestamp deltas)."""
    return all(-(1 << 62) <= r.timestamp_delta < 1 << 62 for r in records)


@settings(max_examples=300, deadline=None)
@given(records=st.lists(_RECORD, min_size=1, max_size=8), cut=st.integers(0, 1 << 16), flip=st.tuples(st.integers(0, 1 << 16), st.integers(1, 255)))
def test_framer_gives_the_precise_records_or_refuses(records, cut, flip):
    data = b"".join(rb.encode_record(r) for r in records)
    assert _check_framer([(data, len(records))]) == [True] or not _healthy(records)
    damaged = bytearray(data)
    damaged[flip[0] % len(data)] ^= flip[1]
    spans = [(data, len(records) + 1), (data, len(records) - 1), (data[: cut % len(data)], len(records)), (bytes(damaged), len(records)), (data, len(records))]
    accepted = _check_framer(spans)
    assert accepted[-1] or not _healthy(records)  # a healthy batch after damaged ones is framed still
    assert not accepted[0] and not accepted[1]  # a count that does not fill the bytes exactly


@settings(max_examples=200, deadline=None)
@given(data=st.binary(min_size=0, max_size=64), count=st.integers(-1, 10))
def test_framer_refuses_what_the_precise_walk_rejects(data, count):
    _check_framer([(data, count)])
    _check_framer([(data, count), (b"\x10\x00\x00\x00\x02k\x02v\x00", 1)])


def test_framer_on_a_large_batch_and_many_headers():
    records = [
        rb.Record(i, i * 7, str(i).encode() if i % 3 else None, bytes(i % 300) if i % 5 else None,
                  tuple(rb.RecordHeader(f"h{j}", b"v" * j if j % 2 else None) for j in range(i % 4)))
        for i in range(3000)
    ]  # fmt: skip
    data = b"".join(rb.encode_record(r) for r in records)
    accepted, columns = rcol.frame_records(data, [0], [len(data)], [len(records)])
    assert accepted == [True] and _as_records(data, columns) == records
    many = [rb.Record(0, 0, None, b"v", tuple(rb.RecordHeader(f"h{j}", b"x") for j in range(rcol.MAX_COLUMN_HEADERS + 1)))]
    few = [rb.Record(0, 0, None, b"v", tuple(rb.RecordHeader(f"h{j}", b"x") for j in range(rcol.MAX_COLUMN_HEADERS)))]
    assert _check_framer([(rb.encode_record(many[0]), 1), (rb.encode_record(few[0]), 1)]) == [False, True]


# --- the lean reading against the precise one ---------------------------------------------------------


def _batch(draw, base: int, kind: str) -> rb.RecordBatch:
    if kind == "control":
        marker = rb.control_record(draw(st.sampled_from([rb.ABORT, rb.COMMIT])), rb.EndTransactionMarker(0, 5))
        return rb.build_batch([marker], base_offset=base, base_timestamp=T0, is_control=True, is_transactional=True, producer_id=3, producer_epoch=0)
    records = draw(st.lists(_RECORD.map(lambda r: rb.Record(0, r.timestamp_delta % 100000, r.key, r.value, r.headers)), min_size=1, max_size=6))
    records = [rb.Record(i * draw(st.sampled_from([1, 1, 2])), r.timestamp_delta, r.key, r.value, r.headers) for i, r in enumerate(records)]
    codec = compression.GZIP if kind == "gzip" else compression.NONE
    append = kind == "log-append"
    return rb.build_batch(
        records, base_offset=base, base_timestamp=T0 + base % 100_000, compression_type=codec, timestamp_type=rb.LOG_APPEND_TIME if append else rb.CREATE_TIME,
        log_append_time=T0 + 10 * (base % 100_000) if append else None, producer_id=draw(st.sampled_from([-1, 7])), producer_epoch=0,
        base_sequence=draw(st.sampled_from([-1, 0, (1 << 31) - 3])),
    )  # fmt: skip


@st.composite
def segments(draw) -> bytes:
    """A segment's bytes: batches of several kinds, maybe damaged (a CRC flip, records broken under
    a right CRC, a torn tail, garbage)."""
    data = bytearray()
    base = draw(st.sampled_from([0, 1000, (1 << 63) - 50]))
    for kind in draw(st.lists(st.sampled_from(["plain", "plain", "plain", "gzip", "control", "log-append"]), min_size=1, max_size=7)):
        batch = _batch(draw, base, kind)
        encoded = bytearray(rb.encode_batch(batch))
        damage = draw(st.sampled_from(["none"] * 6 + ["crc", "records"]))
        if damage != "none" and len(encoded) > rb.RECORD_BATCH_OVERHEAD:
            at = draw(st.integers(rb.RECORD_BATCH_OVERHEAD, len(encoded) - 1))
            encoded[at] ^= draw(st.integers(1, 255))
            if damage == "records":  # the CRC made right again: only the records are wrong
                encoded[rb.CRC_POSITION : rb.CRC_POSITION + 4] = crc32c(bytes(encoded[rb.ATTRIBUTES_POSITION :])).to_bytes(4, "big")
        data += encoded
        base = min(batch.header.last_offset + 1, (1 << 63) - 10)
    tail = draw(st.sampled_from(["", "torn", "zeros", "garbage"]))
    if tail == "torn":
        data += bytes(rb.encode_batch(_batch(draw, base, "plain")))[:-3]
    elif tail == "zeros":
        data += bytes(100)
    elif tail == "garbage":
        data += b"\x00" * 8 + b"\x00\x00\x00\x05garbage!"
    return bytes(data)


def _precise_lines(engine: ops.LogDump, decode: BodyDecode, records_only: bool) -> list[str]:
    lines = []
    for item in engine:
        if not records_only:
            lines.append(dumps(batch_row(item, decode=decode, table=False)))
        for record in item.records or ():
            lines.append(dumps(record_row(item.batch, item.target.topic, item.target.partition_id, record, decode=decode, table=False, finding=item.finding)))
    return lines


def _lean_lines(engine: ops.LogDump, decode: BodyDecode, records_only: bool) -> list[str]:
    text = b"".join(
        run_lines(item, decode=decode, records_only=records_only) if isinstance(item, ops.RecordRun) else item_lines(item, decode=decode, records_only=records_only)
        for item in engine.lean()
    )
    assert text == b"" or text.endswith(b"\n")
    return text.decode("utf-8", "surrogateescape").split("\n")[:-1]


def _state(engine: ops.LogDump) -> tuple:
    ends = [(e.path, e.entries, e.end.position, e.end.kind, e.size, type(e.end.error), str(e.end.error)) for e in engine.ends]
    return [(type(p), str(p)) for p in engine.problems], ends, engine.bytes_done


def _same(path: Path, decode: BodyDecode = BodyDecode.base64, records_only: bool = False, **options) -> list[str]:
    """The lean reading's lines are the precise reading's; through the store model's reading
    (files read whole with the checks: ``model_reading``) both are the same again, with the same
    problems and ends, and the findings are those of a reading of their own."""
    opts = ops.LogDumpOptions(deep=True, **options)
    engines = [ops.LogDump(ops.log_targets(path), opts) for _ in range(2)]
    precise = _precise_lines(engines[0], decode, records_only)
    lean = _lean_lines(engines[1], decode, records_only)
    assert lean == precise
    assert _state(engines[1]) == _state(engines[0])
    if ops.model_reading(path, opts, ops.log_targets(path)) is not None:
        through = [ops.LogDump(ops.log_targets(path), opts, reading=ops.model_reading(path, opts, ops.log_targets(path))) for _ in range(2)]
        assert _precise_lines(through[0], decode, records_only) == precise
        assert _lean_lines(through[1], decode, records_only) == precise
        for engine in through:
            assert _state(engine) == _state(engines[0])
            assert engine.findings(path) == ops.findings_on_path(path)
    return lean


@pytest.mark.parametrize("decode", list(BodyDecode))
def test_fixture_rows_are_the_precise_rows(decode):
    assert len(_same(FIXTURE, decode)) > 100
    _same(FIXTURE, decode, records_only=True)
    _same(FIXTURE, decode, decoder="none")


@pytest.mark.parametrize(
    "options",
    [{"from_offset": 5}, {"from_offset": 40}, {"since_ms": T0 + 50, "until_ms": T0 + 300}, {"max_bytes": 3000}, {"check_crc": False}],
)
def test_fixture_filters_select_the_precise_rows(options):
    _same(FIXTURE, **options)
    _same(FIXTURE, records_only=True, decoder="none", **options)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(
    data=segments(),
    decode=st.sampled_from(list(BodyDecode)),
    records_only=st.booleans(),
    pieces=st.sampled_from([None, 61, 200, 1000]),
    filters=st.sampled_from([{}, {}, {"from_offset": 1003}, {"since_ms": T0 + 1002, "until_ms": T0 + 50000}, {"check_crc": False}]),
    run_records=st.sampled_from([2, 8192]),
)
def test_generated_segment_rows_are_the_precise_rows(tmp_path_factory, monkeypatch, data, decode, records_only, pieces, filters, run_records):
    root = tmp_path_factory.mktemp("kafka") / "topic-0"
    root.mkdir()
    (root / "00000000000000000000.log").write_bytes(data)
    monkeypatch.setattr(ops, "RUN_RECORDS", run_records)
    with read_in_pieces(pieces or (1 << 30)):
        _same(root / "00000000000000000000.log", decode, records_only, **filters)
        _same(root, decode, records_only, **filters)  # the partition: through the model's reading


# --- the command ---------------------------------------------------------------------------------------


def _precise_cli(path: Path, options: ops.LogDumpOptions, decode: BodyDecode, records_only: bool, limit: int | None) -> list[str]:
    lines = _precise_lines(ops.LogDump(ops.log_targets(path), options), decode, records_only)
    return lines if limit is None else lines[:limit]


@pytest.mark.parametrize("limit", [None, 0, 1, 2, 7, 40, 10_000])
@pytest.mark.parametrize("extra", [[], ["--records-only"], ["--decode", "hex"], ["--no-decoders", "--from-offset", "30"]])
def test_cli_jsonl_is_the_precise_rows(capsysbinary, limit, extra):
    args = ["dump", "kafka-log", str(FIXTURE), "--deep", "--jsonl", *extra] + ([] if limit is None else ["--limit", str(limit)])
    code = run(args)
    out, _ = capsysbinary.readouterr()
    options = ops.LogDumpOptions(
        deep=True, decoder="none" if "--no-decoders" in extra else "auto", from_offset=30 if "--from-offset" in extra else None
    )
    decode = BodyDecode.hex if "hex" in extra else BodyDecode.base64
    expected = _precise_cli(FIXTURE, options, decode, "--records-only" in extra, limit)
    assert out.decode("utf-8").split("\n")[:-1] == expected
    assert code == 0
    code = run([*args[:4], "--json", *args[5:]])
    out, _ = capsysbinary.readouterr()
    assert [dumps(row) for row in json.loads(out)] == expected
