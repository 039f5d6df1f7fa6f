"""The Kafka segment reading gives one answer whatever the size of the pieces it reads the ``.log`` in.

The reading (``store.model.kafka.check_segment``) reads a segment in pieces of ``SegmentTask.piece``
bytes; a batch that a piece boundary cuts -- anywhere, including inside the first bytes of its
header, whose base offset's high bytes are zeros -- is the reading's business alone.  Each case
compares the result with pieces of every alignment against one piece holding the whole file: the
same entries, records, valid end, end kind and findings (code and position).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mqtool.formats.kafka import record_batch as rb
from mqtool.store.model.kafka import SegmentTask, check_segment

WHOLE = 1 << 30


def _segment(sizes: list[list[int]], base: int = 0) -> tuple[bytes, list[int]]:
    """A healthy v2 segment: one batch per entry of ``sizes`` (its records' value sizes)."""
    out = bytearray()
    positions = []
    offset = base
    for values in sizes:
        records = [rb.Record(offset_delta=i, timestamp_delta=i, key=b"k%d" % i, value=bytes([65 + i % 26]) * n) for i, n in enumerate(values)]
        batch = rb.build_batch(records, base_offset=offset, base_timestamp=1_700_000_000_000 + offset)
        positions.append(len(out))
        out += rb.encode_batch(batch)
        offset += len(values)
    return bytes(out), positions


def _read(path: Path, piece: int, base: int = 0) -> tuple[object, ...]:
    res = check_segment(SegmentTask(str(path.parent), str(path), base, indexes=False, piece=piece))
    return (
        res.entries,
        res.records,
        res.valid_end,
        res.end_kind,
        res.first_offset,
        res.last_offset,
        sorted((f.code, f.position, f.length) for f in res.findings),
    )


def _healthy(findings: object) -> bool:
    """Only the information every last segment carries: where its valid data ends."""
    return {code for code, _pos, _len in findings} <= {"KAFKA-LOG-VALID-END"}  # type: ignore[attr-defined]


def _damage(data: bytes, kind: str, at: int) -> bytes:
    if kind == "healthy":
        return data
    if kind == "zero-tail":
        return data + bytes(3000)
    if kind == "zeros-then-garbage":
        return data + bytes(at % 700 + 1) + b"\x07" * 9
    if kind == "garbage":
        return data + bytes((at * 7 + i) % 251 | 1 for i in range(at % 300 + 20))
    if kind == "torn":
        return data[: len(data) - 1 - at % 40]
    if kind == "flip":
        pos = at % len(data)
        return data[:pos] + bytes([data[pos] ^ 0x5A]) + data[pos + 1 :]
    raise AssertionError(kind)


@pytest.mark.parametrize("base", [0, 32026, 2**40])
def test_every_alignment_of_a_piece_boundary_inside_a_batch_header(tmp_path, base):
    """A piece boundary 0..80 bytes into each of the first batches (the zeros of a base offset's
    high bytes, the size, the CRC, the attributes, the records) changes nothing."""
    data, positions = _segment([[20], [1, 1], [300, 2, 40], [5]] * 6, base)
    path = tmp_path / f"{base:020d}.log"
    path.write_bytes(data)
    whole = _read(path, WHOLE, base)
    assert whole[3] == "eof" and whole[2] == len(data) and _healthy(whole[6])
    for p in positions[1:8]:
        for k in range(0, 81):
            assert _read(path, p + k, base) == whole, (p, k)


@pytest.mark.parametrize("kind", ["zero-tail", "zeros-then-garbage", "garbage", "torn"])
def test_every_alignment_of_a_damaged_end(tmp_path, kind):
    data, _positions = _segment([[10], [1, 2], [70]] * 5)
    damaged = _damage(data, kind, 333)
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(damaged)
    whole = _read(path, WHOLE)
    assert not _healthy(whole[6]), kind  # every one of these ends is a finding
    for cut in range(len(data) - 90, len(damaged)):
        assert _read(path, cut) == whole, (kind, cut)


def test_a_real_offset_header_cut_after_its_zeros_is_no_zero_tail(tmp_path):
    """The defect of a real KRaft capture: a piece ending 1-11 bytes into a batch header (offset
    32026's high bytes and the size's are zeros) was taken for a zero tail, then garbage."""
    data, positions = _segment([[73]] * 40, 32026)
    path = tmp_path / "00000000000000032026.log"
    path.write_bytes(data)
    for k in range(1, 12):
        res = check_segment(SegmentTask(str(tmp_path), str(path), 32026, indexes=False, piece=positions[20] + k))
        assert (res.end_kind, res.valid_end, res.entries) == ("eof", len(data), 40), k
        assert [f.code for f in res.findings] == ["KAFKA-LOG-VALID-END"], k


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    sizes=st.lists(st.lists(st.integers(0, 400), min_size=1, max_size=3), min_size=1, max_size=25),
    base=st.sampled_from([0, 7, 32026, 2**33]),
    piece=st.integers(17, 4096),
    kind=st.sampled_from(["healthy", "healthy", "zero-tail", "zeros-then-garbage", "garbage", "torn", "flip"]),
    at=st.integers(0, 10**6),
)
def test_pieces_of_any_size_read_as_one(tmp_path, sizes, base, piece, kind, at):
    data, _positions = _segment(sizes, base)
    data = _damage(data, kind, at)
    path = tmp_path / f"{base:020d}.log"
    path.write_bytes(data)
    whole = _read(path, WHOLE, base)
    if kind == "healthy":
        assert whole[3] == "eof" and _healthy(whole[6])
    assert _read(path, piece, base) == whole
