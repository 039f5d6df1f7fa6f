"""Every CommitLog reading gives one answer whatever the size of the pieces it reads a file in.

A piece boundary may fall anywhere: between records, inside a body, or 1-7 bytes into a record's
header, where TOTALSIZE's high bytes are zeros (it then reads like a zero tail) and its low bytes
are not (an anomaly).  Each reader is run with pieces that end at every offset of the first bytes
of several records (``store.files.read_in_pieces``: one setting for every walk, no module
patched) and must give exactly what it gives with one piece holding the whole file: the store
walk, the healthy-file columns, validate (fast and precise), dump (lean and precise), and the
Spark walk and column-wise read.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mqtool.formats.rocketmq import commitlog as cl
from mqtool.ops.dump import rocketmq as ops_dump
from mqtool.ops.validate import ValidateOptions
from mqtool.ops.validate.rocketmq import validate_rocketmq
from mqtool.store.files import ReadOnlyFile, read_in_pieces
from mqtool.store.model import commitlog as model_cl
from mqtool.store.model.commitlog_walk import FileRecords

PROJECT_ROOT = Path(__file__).resolve().parents[2]
STORE = PROJECT_ROOT / "fixtures" / "rocketmq-store"
WHOLE = 1 << 30


def _positions(path: Path) -> list[int]:
    with ReadOnlyFile(path) as f:
        return [pos for pos, _ in FileRecords(f)]


def _cuts(path: Path, records: slice = slice(1, 6), depth: int = 9) -> list[int]:
    """Piece sizes whose first boundary falls 0..depth-1 bytes into each chosen record."""
    return [pos + k for pos in _positions(path)[records] for k in range(depth) if pos + k >= 64]


def _walk(path: Path, base: int, last: bool) -> tuple[object, ...]:
    with ReadOnlyFile(path) as f:
        walk = FileRecords(f, last=last, base=base)
        got = [(pos, r.queue_offset, r.total_size) for pos, r in walk]
        end = walk.end
        return (got, (end.kind, end.position) if end else None, walk.failed_at, str(walk.error))


def _columns(path: Path, base: int, last: bool) -> tuple[object, ...] | None:
    with ReadOnlyFile(path) as f:
        cols = model_cl.read_file_columns(f, base, file_size=f.size, is_last=last)
    if cols is None:
        return None
    return (list(cols.columns.position), (cols.end.kind, cols.end.position))


def _validate(root: Path, fast: bool) -> dict[str, object]:
    report = validate_rocketmq(root, ValidateOptions(fast=fast)).to_dict()
    report.pop("bytes_checked", None)
    return report


def _dump(root: Path, lean: bool) -> tuple[object, ...]:
    engine = ops_dump.CommitLogDump(ops_dump.commitlog_files(root), ops_dump.RecordFilter(), None, directory=ops_dump.commitlog_directory(root))
    rows: list[object] = []
    if lean:
        for item in engine.lean():
            if isinstance(item, ops_dump.ColumnChunk):
                rows += [int(item.walk.columns.position[r]) + item.offset for r in item.rows]
            else:
                rows.append(item[0].position)
    else:
        rows = [loc.position for loc, _rec in engine]
    ends = [(str(e.path), (e.end.kind, e.end.position, e.end.length) if e.end else None, e.records, str(e.end.error if e.end else None), e.torn) for e in engine.ends]
    return (rows, ends, [f.to_dict() for f in engine.findings])


def _readers(root: Path) -> dict[str, object]:
    files = sorted((root / "commitlog").iterdir())
    out: dict[str, object] = {}
    for i, path in enumerate(files):
        last = i == len(files) - 1
        out[f"walk {path.name}"] = _walk(path, int(path.name), last)
        out[f"columns {path.name}"] = _columns(path, int(path.name), last)
    for fast in (True, False):
        out[f"validate fast={fast}"] = _validate(root, fast)
    for lean in (True, False):
        out[f"dump lean={lean}"] = _dump(root, lean)
    return out


def _assert_piece_independent(root: Path, pieces: list[int]) -> dict[str, object]:
    with read_in_pieces(WHOLE):
        whole = _readers(root)
    for piece in pieces:
        with read_in_pieces(piece):
            got = _readers(root)
        for name, value in whole.items():
            assert got[name] == value, (name, piece)
    return whole


def test_the_fixture_reads_the_same_at_every_header_alignment():
    whole = _assert_piece_independent(STORE, _cuts(STORE / "commitlog" / "00000000000000016384"))
    assert whole["columns 00000000000000016384"] is not None  # healthy: the fast path takes the file
    assert whole["validate fast=True"]["ok"] is True  # type: ignore[index]


def _damaged_copy(tmp_path: Path, kind: str, at: int) -> Path:
    root = tmp_path / kind
    shutil.copytree(STORE, root)
    path = root / "commitlog" / "00000000000000016384"
    data = bytearray(path.read_bytes())
    positions = _positions(STORE / "commitlog" / "00000000000000016384")
    rec = positions[at % len(positions)]
    if kind == "body-crc":
        data[rec + 200] ^= 0x41
    elif kind == "totalsize":
        data[rec + 2] ^= 0x10
    elif kind == "magic":
        data[rec + 5] ^= 0x01
    elif kind == "queue-offset":
        data[rec + 27] ^= 0x01
    path.write_bytes(bytes(data))
    return root


@pytest.mark.parametrize("kind", ["body-crc", "totalsize", "magic", "queue-offset"])
def test_damage_reads_the_same_at_every_header_alignment(tmp_path, kind):
    root = _damaged_copy(tmp_path, kind, 7)
    whole = _assert_piece_independent(root, _cuts(STORE / "commitlog" / "00000000000000016384", slice(5, 10), 9))
    assert whole["validate fast=True"]["ok"] is False  # type: ignore[index]


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(piece=st.integers(64, 20000), kind=st.sampled_from(["healthy", "body-crc", "totalsize", "magic", "queue-offset"]), at=st.integers(0, 10**6))
def test_pieces_of_any_size_read_as_one(tmp_path_factory, piece, kind, at):
    root = STORE if kind == "healthy" else _damaged_copy(tmp_path_factory.mktemp("s"), kind, at)
    _assert_piece_independent(root, [piece])


def _generated_last_file(tmp_path: Path, tail: str) -> Path:
    """A store whose one CommitLog file is the newest: records, then a zero tail or a torn record."""
    from mqtool.formats import segment_names as segnames

    data = bytearray()
    for i in range(60):
        rec = cl.MessageRecord(topic="T", body=bytes([i]) * (i * 13 % 300), properties={"KEYS": f"k{i}"}, queue_id=0, queue_offset=i)
        data += cl.encode_message(cl.with_offsets(rec, queue_offset=i, physical_offset=len(data)))
    if tail == "torn":
        data += cl.encode_message(cl.with_offsets(rec, queue_offset=60, physical_offset=len(data)))[:50]
    size = 32768
    data += bytes(size - len(data))
    root = tmp_path / tail
    (root / "commitlog").mkdir(parents=True)
    (root / "commitlog" / segnames.rocketmq_file_name(0)).write_bytes(bytes(data))
    return root


@pytest.mark.parametrize("tail", ["zeros", "torn"])
def test_the_newest_file_ends_the_same_at_every_alignment(tmp_path, tail):
    root = _generated_last_file(tmp_path, tail)
    path = root / "commitlog" / "00000000000000000000"
    positions = _positions(path)
    end = positions[-1] + 200
    pieces = [p + k for p in positions[-4:] for k in range(9)] + list(range(end, end + 60, 7))
    _assert_piece_independent(root, pieces)


# --- the Spark readers ---------------------------------------------------------------------------


def _spark_rows(root: Path, reader_name: str) -> list[tuple[object, ...]]:
    pa = pytest.importorskip("pyarrow")
    pytest.importorskip("pyspark")
    from mqtool.pipeline import sources as S

    opts = S.parse_options({"path": str(root), "withProblems": "true"})
    schema = S.arrow_schema(S._columns(S.COMMITLOG_COLUMNS, opts, "commitlog"))
    reader = getattr(S, reader_name)
    batches = [b for part in S.plan_commitlog(opts) for b in reader(part, opts, schema)]
    table = pa.Table.from_batches(batches, schema=schema)
    return list(zip(*(table[name].to_pylist() for name in table.schema.names)))


@pytest.mark.parametrize("reader", ["read_commitlog_records", "read_commitlog"])
@pytest.mark.parametrize("kind", ["healthy", "body-crc", "totalsize"])
def test_the_spark_readers_read_the_same_at_every_header_alignment(tmp_path, reader, kind):
    root = STORE if kind == "healthy" else _damaged_copy(tmp_path, kind, 7)
    with read_in_pieces(WHOLE):
        whole = _spark_rows(root, reader)
    assert len(whole) >= 245
    for piece in _cuts(STORE / "commitlog" / "00000000000000016384", slice(5, 10), 9):
        with read_in_pieces(piece):
            assert _spark_rows(root, reader) == whole, piece
