"""A side's reading kept as block digests (``ops.diff.digest``): whatever pieces the reading reads a
file in -- overlapping where a piece boundary cut a record, small peeks at other places -- the
digests are those of the file's blocks, and two files differing in one byte differ in that
byte's block only."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from mqtool.ops.diff.digest import BLOCK, FileDigests, ReadDigests, digest


def _whole(data: bytes) -> FileDigests:
    held = FileDigests()
    held.add(0, data)
    return held


@st.composite
def _reading(draw: st.DrawFn) -> tuple[bytes, list[tuple[int, int]]]:
    """A file and the reads of a walk over it: pieces from the start, each starting at or before
    where the one before ended (a cut record read again), and peeks anywhere."""
    size = draw(st.integers(0, 5 * BLOCK + 999))
    data = draw(st.binary(min_size=size, max_size=size)) if size < 4096 else bytes((i * 131 + size) % 251 for i in range(size))
    reads = []
    pos = 0
    while pos < size:
        length = draw(st.integers(1, 2 * BLOCK))
        reads.append((pos, length))
        if draw(st.booleans()):
            reads.append((draw(st.integers(0, size)), draw(st.integers(1, 64))))  # a peek
        pos = max(pos + 1, pos + length - draw(st.integers(0, min(length, 300))))
    return data, reads


@settings(max_examples=60, deadline=None)
@given(_reading())
def test_reads_in_any_pieces_keep_the_blocks_of_the_whole_file(reading: tuple[bytes, list[tuple[int, int]]]) -> None:
    data, reads = reading
    digests = ReadDigests(lambda path: path.endswith(".log"))
    for pos, length in reads:
        digests.observe("x.log", pos, data[pos : pos + length])
        digests.observe("x.index", pos, data[pos : pos + length])
    held = digests.get("x.log")
    whole = _whole(data)
    if held is None:  # nothing read from the start: nothing held
        assert not data or reads[0][0] != 0
        return
    assert held.held == len(data)
    assert [held.block(i) for i in range(held.count)] == [whole.block(i) for i in range(whole.count)]
    assert [whole.block(i) for i in range(whole.count)] == [digest(data[i : i + BLOCK]) for i in range(0, len(data) - BLOCK + 1, BLOCK)]
    assert bytes(held.tail) == data[held.count * BLOCK :]
    assert digests.get("x.index") is None


@settings(max_examples=30, deadline=None)
@given(st.integers(1, 3 * BLOCK), st.data())
def test_one_changed_byte_changes_its_block_only(size: int, data: st.DataObject) -> None:
    raw = bytes(i % 253 for i in range(size))
    at = data.draw(st.integers(0, size - 1))
    changed = bytearray(raw)
    changed[at] ^= 1 << data.draw(st.integers(0, 7))
    a, b = _whole(raw), _whole(bytes(changed))
    differ = [i for i in range(a.count) if a.block(i) != b.block(i)]
    if at < a.count * BLOCK:
        assert differ == [at // BLOCK] and a.tail == b.tail
    else:
        assert differ == [] and a.tail != b.tail
        start = a.count * BLOCK
        assert a.tail_bytes(at, 1) == raw[at : at + 1] and a.tail_bytes(start - 1, 2) is None
