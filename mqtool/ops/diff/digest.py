"""What a side's one reading read, kept as block digests: diff compares them instead of the bytes.

Each side of a diff is read once, by the store model's reading that states its findings (the
findings validate reports).  ``ReadDigests`` watches that reading (``store.files.observe_reads``)
and keeps, per log file, a digest of each ``BLOCK`` bytes from the start of the file, in file
order -- the reading reads a file in pieces, from its start, and may read a record a piece
boundary cuts again: the bytes before what is already held are not taken twice -- and the bytes
after the last whole block (a file's last, partial block).  Two files of the two sides holding
the same bytes at the same positions have the same digests; where the digests differ, the two
blocks are read again to find the first differing byte, and where the reading did not read a
block (past the end the model read to), the comparison reads it.

The digest is SHA-1 cut to 64 bits (``SIZE``), 8 bytes per 64 KiB block: 12.5 MB of digests for 100 GiB of
log, whatever the size of a file, and at most one block's bytes per file (its tail).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass, field

#: Bytes per digest (a file's blocks start at its multiples).
BLOCK = 1 << 16


#: Bytes of a digest.
SIZE = 8


def digest(data: bytes | bytearray | memoryview) -> bytes:
    return hashlib.sha1(data).digest()[:SIZE]


@dataclass
class FileDigests:
    """One file's blocks as its reading read them: ``block(i)`` is the digest of bytes
    ``[i * BLOCK, (i + 1) * BLOCK)`` (``blocks`` holds them one after the other); ``tail`` the
    bytes read after the last whole block."""

    blocks: bytearray = field(default_factory=bytearray)
    tail: bytearray = field(default_factory=bytearray)

    @property
    def count(self) -> int:
        """Whole blocks held."""
        return len(self.blocks) // SIZE

    @property
    def held(self) -> int:
        """Bytes from the file's start the reading read (as digests, then ``tail``)."""
        return self.count * BLOCK + len(self.tail)

    def add(self, position: int, data: bytes) -> None:
        held = self.held
        if position > held or position + len(data) <= held:
            return  # past a hole (a read ahead: not in file order) or already held
        view = memoryview(data)[held - position :]
        if self.tail:
            need = BLOCK - len(self.tail)
            self.tail += view[:need]
            view = view[need:]
            if len(self.tail) < BLOCK:
                return
            self.blocks += digest(self.tail)
            self.tail = bytearray()
        whole = len(view) // BLOCK * BLOCK
        for at in range(0, whole, BLOCK):
            self.blocks += digest(view[at : at + BLOCK])
        self.tail = bytearray(view[whole:])

    def block(self, index: int) -> bytes | None:
        return bytes(self.blocks[index * SIZE : (index + 1) * SIZE]) if index < self.count else None

    def tail_bytes(self, position: int, size: int) -> bytes | None:
        """Bytes ``[position, position + size)`` of the file if the tail holds all of them."""
        start = self.count * BLOCK
        if position < start or position + size > start + len(self.tail):
            return None
        return bytes(self.tail[position - start : position - start + size])


class ReadDigests:
    """The observer of a side's reading (``observe_reads(digests.observe)``): the digests of the
    files ``wanted`` says are the log's; ``progress(n)`` is told of each ``n`` bytes newly held."""

    def __init__(self, wanted: Callable[[str], bool], progress: Callable[[int], object] | None = None) -> None:
        self.wanted = wanted
        self.progress = progress
        self.files: dict[str, FileDigests] = {}

    def observe(self, path: str, position: int, data: bytes) -> None:
        if not self.wanted(path):
            return
        held = self.files.get(path)
        if held is None:
            if position != 0:
                return  # a file's blocks are taken from its start
            held = self.files[path] = FileDigests()
        before = held.held
        held.add(position, data)
        if self.progress is not None and held.held > before:
            self.progress(held.held - before)

    def get(self, path: str) -> FileDigests | None:
        return self.files.get(path)
