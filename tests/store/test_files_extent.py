"""``store.files.nonzero_extent``: the one "only zeros follow" rule, on sparse files (holes are
skipped with ``SEEK_DATA``, never read) and on the same bytes written out in full, and through a
reader that is not a file (no ``SEEK_DATA``: every byte is read)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mqtool.store.files import CHUNK_SIZE, ReadOnlyFile, nonzero_extent

SIZE = 3 * CHUNK_SIZE + 12345


class _Bytes:
    """A reader over bytes in memory (as a zip entry's reader is): no file descriptor."""

    def __init__(self, data: bytes) -> None:
        self.data, self.size, self.path = data, len(data), "mem"

    def pread(self, position: int, size: int) -> bytes:
        return self.data[position : position + size]


def _sparse(path: Path, size: int, writes: list[tuple[int, bytes]]) -> Path:
    with open(path, "wb") as f:
        f.truncate(size)  # all hole
        for pos, data in writes:
            f.seek(pos)
            f.write(data)
    return path


def _expected(data: bytes, start: int, stop: int | None) -> tuple[int, int] | None:
    end = len(data) if stop is None else min(stop, len(data))
    hits = [i for i in range(start, end) if data[i]] if end - start < 4096 else None
    if hits is not None:
        return (hits[0], hits[-1] + 1) if hits else None
    part = data[start:end]
    stripped = part.lstrip(b"\0")
    if not stripped:
        return None
    return start + len(part) - len(stripped), start + len(part.rstrip(b"\0"))


@settings(max_examples=40, deadline=None)
@given(
    writes=st.lists(st.tuples(st.integers(0, SIZE - 8), st.binary(min_size=1, max_size=8)), max_size=4),
    start=st.integers(0, SIZE),
    stop=st.one_of(st.none(), st.integers(0, SIZE + 10)),
)
def test_sparse_file_reads_as_its_bytes(tmp_path_factory, writes, start, stop):
    path = _sparse(tmp_path_factory.mktemp("f") / "sparse", SIZE, writes)
    data = path.read_bytes()
    expected = _expected(data, start, stop)
    with ReadOnlyFile(path) as f:
        assert nonzero_extent(f, start, stop) == expected
    assert nonzero_extent(_Bytes(data), start, stop) == expected
    full = path.with_name("full")
    full.write_bytes(data)  # the same bytes with no hole
    with ReadOnlyFile(full) as f:
        assert nonzero_extent(f, start, stop) == expected


@pytest.mark.skipif(not hasattr(os, "SEEK_DATA"), reason="no SEEK_DATA on this platform")
def test_holes_are_not_read(tmp_path, monkeypatch):
    """A gigabyte of hole after a few bytes of garbage costs no read of the hole."""
    path = _sparse(tmp_path / "big", 1 << 30, [(100, b"\x01\x02"), ((1 << 30) - 3, b"\x07")])
    reads: list[int] = []
    real = ReadOnlyFile.pread

    def counting(self, position, size):
        reads.append(size)
        return real(self, position, size)

    monkeypatch.setattr(ReadOnlyFile, "pread", counting)
    with ReadOnlyFile(path) as f:
        assert nonzero_extent(f, 0) == (100, (1 << 30) - 2)
    assert sum(reads) <= 4 * CHUNK_SIZE  # the two data extents' chunks, not 128 of them
