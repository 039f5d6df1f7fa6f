"""The CommitLog source builds its next Arrow batch while the worker ships the last one
(``sources.commitlog._ahead``): the same batches in the same order, an error raised where the read
raised it, and a consumer that stops early stops the builder and closes what it reads."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest

pa = pytest.importorskip("pyarrow")
pytest.importorskip("pyspark")

from mqtool.pipeline import sources as S  # noqa: E402

from tests.pipeline import damage  # noqa: E402


def _batch(i: int) -> pa.RecordBatch:
    return pa.RecordBatch.from_pydict({"n": pa.array([i, i + 1], type=pa.int64())})


def test_the_same_batches_in_order():
    batches = [_batch(i) for i in range(50)]
    for depth in (1, 3):
        assert [b.to_pydict() for b in S._ahead(iter(batches), depth)] == [b.to_pydict() for b in batches]
    assert list(S._ahead(iter([]))) == []


def test_an_error_reaches_the_consumer_after_the_batches_before_it():
    def failing() -> Iterator[pa.RecordBatch]:
        yield _batch(0)
        yield _batch(1)
        raise OSError("disk gone")

    seen = []
    with pytest.raises(OSError, match="disk gone"):
        for batch in S._ahead(failing()):
            seen.append(batch["n"][0].as_py())
    assert seen == [0, 1]


def test_a_consumer_that_stops_stops_the_builder_and_closes_the_read():
    closed = threading.Event()
    built = []

    def endless() -> Iterator[pa.RecordBatch]:
        try:
            i = 0
            while True:
                built.append(i)
                yield _batch(i)
                i += 1
        finally:
            closed.set()

    ahead = S._ahead(endless())
    assert next(ahead)["n"][0].as_py() == 0
    ahead.close()
    assert closed.wait(5), "the builder did not stop"
    assert len(built) <= 4  # the one taken, one in the slot, one being handed over


def test_the_source_reads_what_read_commitlog_reads():
    opts = S.parse_options({"path": str(damage.STORE), "withProblems": "true", "splitSize": "5001"})
    schema = S.arrow_schema(S._columns(S.COMMITLOG_COLUMNS, opts, "commitlog"))
    parts = S.plan_commitlog(opts)
    assert S.READERS["commitlog"] is S.read_commitlog_ahead and len(parts) > 1
    direct = pa.Table.from_batches([b for p in parts for b in S.read_commitlog(p, opts, schema)], schema=schema)
    ahead = pa.Table.from_batches([b for p in parts for b in S.read_commitlog_ahead(p, opts, schema)], schema=schema)
    assert ahead.num_rows > 0 and ahead.equals(direct)
