"""``store.model.queue_offsets.count_records_in``: the records a CommitLog file wholly after the
valid end holds (what recover's plan says deleting it drops), counted from the file's one reading.

The truth is known by construction: a file of ``n`` records, ``k`` of them damaged (a body byte
flipped: the frame holds, the record does not decode; a MAGICCODE overwritten: the frame breaks
and the reading resynchronises at the next record), holds ``n - k`` decodable records.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mqtool.formats.rocketmq import commitlog as cl
from mqtool.store import rocketmq as rmq
from mqtool.store.files import ReadOnlyFile
from mqtool.store.model.queue_offsets import count_records_after, count_records_in
from mqtool.store.writer import StoreWriter, WriterConfig

FILE_SIZE = 64 * 1024


def _file(root: Path, bodies: list[int]) -> tuple[Path, list[int]]:
    with StoreWriter(root, WriterConfig(commitlog_file_size=FILE_SIZE, cq_file_size=60 * 20, enable_index=False)) as w:
        for i, n in enumerate(bodies):
            w.append(cl.MessageRecord(topic="T", queue_id=i % 3, body=bytes([65 + i % 26]) * n, properties={"KEYS": f"k{i}"}))
    path = rmq.list_segments(root / "commitlog")[0].path
    return path, [pos for pos, _ in cl.RecordWalker(path.read_bytes(), 0)]


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    bodies=st.lists(st.integers(1, 600), min_size=3, max_size=40),
    damaged=st.sets(st.integers(0, 39), max_size=5),
    magic=st.booleans(),
)
def test_the_count_is_the_records_that_decode(tmp_path_factory: pytest.TempPathFactory, bodies: list[int], damaged: set[int], magic: bool) -> None:
    path, positions = _file(tmp_path_factory.mktemp("store"), bodies)
    hit = sorted(i for i in damaged if i < len(positions))
    data = bytearray(path.read_bytes())
    for i in hit:
        if magic:
            data[positions[i] + 4 : positions[i] + 8] = b"\x01\x02\x03\x04"
        else:
            data[positions[i] + cl.body_position(0)] ^= 0xFF
    path.write_bytes(bytes(data))
    with ReadOnlyFile(path) as f:
        assert count_records_in(f, 0) == len(positions) - len(hit)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(bodies=st.lists(st.integers(1, 600), min_size=4, max_size=40), cut=st.integers(0, 38), damaged=st.sets(st.integers(0, 39), max_size=4))
def test_the_records_a_cut_drops_are_those_after_it_that_decode(tmp_path_factory: pytest.TempPathFactory, bodies: list[int], cut: int, damaged: set[int]) -> None:
    """What a cut at a broken record drops (``count_records_after``): the records after it that decode."""
    path, positions = _file(tmp_path_factory.mktemp("store"), bodies)
    cut = min(cut, len(positions) - 1)
    hit = sorted({cut} | {i for i in damaged if cut < i < len(positions)})
    data = bytearray(path.read_bytes())
    for i in hit:
        data[positions[i] + cl.body_position(0)] ^= 0xFF
    path.write_bytes(bytes(data))
    with ReadOnlyFile(path) as f:
        assert count_records_after(f, 0, positions[cut]) == len(positions) - cut - len(hit)
