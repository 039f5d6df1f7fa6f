"""RocketMQ IndexFile (``IndexFile``/``IndexHeader``/``IndexService``): the message-key hash index.

All integers big-endian.  A file is a 40-byte header, ``hashSlotNum`` 4-byte slots, then
``indexNum`` 20-byte entries: size ``40 + 4*hashSlotNum + 20*indexNum`` (defaults 5,000,000 and
20,000,000 → 420,000,040 bytes).  Header::

    pos  size  field            meaning
    0    8     beginTimestamp   store time (ms) of the first entry (or inherited, see below)
    8    8     endTimestamp     store time of the newest entry
    16   8     beginPhyOffset   CommitLog offset of the first entry
    24   8     endPhyOffset     CommitLog offset of the newest entry
    32   4     hashSlotCount    slots that went from empty to used
    36   4     indexCount       next entry number; starts at 1 (entry 0 is never used); a
                                stored value <= 0 is read as 1

Slot ``s`` at ``40 + 4*s`` holds the newest entry number of its chain (0 = empty).  Entry ``n`` at
``40 + 4*hashSlotNum + 20*n``::

    pos  size  field            meaning
    0    4     keyHash          abs(String.hashCode(key)), Integer.MIN_VALUE → 0
    4    8     phyOffset        CommitLog offset of the message
    12   4     timeDiff         (storeTimestamp - beginTimestamp) / 1000, clamped to [0, 2^31-1]
    16   4     prevIndex        previous entry number in the same slot (0 = end of chain)

Keys are ``topic#UNIQ_KEY`` and ``topic#key`` for every KEYS token; slot = keyHash % hashSlotNum.
A new file inherits the previous file's endPhyOffset/endTimestamp as begin *and* end values; the
first ``putKey`` overwrites the begin values.  Files are named by their creation time
``yyyyMMddHHmmssSSS`` in the broker's local time zone (``segment_names.rocketmq_index_file_name``).

No checksum.  Partial writes: ``putKey`` writes the entry, then the slot, then the header fields
(each straight into the mapped file), and the file is mapped at full size, so unwritten space is
zeros.  A crash can leave the header one step behind the slots and entries; RocketMQ deletes
every index file newer than the checkpoint's ``indexMsgTimestamp`` after a crash, so in practice
only full files survive one.  A chain is always built towards older entries (``prevIndex`` <
entry number), which is what ``iter_chain`` checks.
"""

from __future__ import annotations

import array
import itertools
import struct
import sys
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

from mqtool.errors import (
    CorruptDataError,
    MqError,
    TruncatedDataError,
    UnsupportedFormatError,
)
from mqtool.formats._binary import I32, Buffer, need
from mqtool.formats.rocketmq.hashing import index_key_hash

_LONG_MIN = -(1 << 63)
_INT_MAX = (1 << 31) - 1

INDEX_HEADER = struct.Struct(">qqqqii")
INDEX_HEADER_SIZE = INDEX_HEADER.size  # 40
HASH_SLOT = I32
HASH_SLOT_SIZE = HASH_SLOT.size  # 4
INDEX_ENTRY = struct.Struct(">iqii")
INDEX_ENTRY_SIZE = INDEX_ENTRY.size  # 20
# Header field positions (upstream ``beginTimestampIndex`` ... ``indexCountIndex``).
BEGIN_TIMESTAMP_POSITION = 0
END_TIMESTAMP_POSITION = struct.calcsize(">q")  # 8
BEGIN_PHY_OFFSET_POSITION = struct.calcsize(">qq")  # 16
END_PHY_OFFSET_POSITION = struct.calcsize(">qqq")  # 24
HASH_SLOT_COUNT_POSITION = struct.calcsize(">qqqq")  # 32
INDEX_COUNT_POSITION = struct.calcsize(">qqqqi")  # 36
#: Where prevIndex sits inside an entry.
PREV_INDEX_POSITION = struct.calcsize(">iqi")  # 16
_LONG = struct.Struct(">q")

DEFAULT_HASH_SLOT_NUM = 5_000_000
DEFAULT_INDEX_NUM = 20_000_000
#: ``maxMsgsNumBatch``: the broker caps a key query at this many offsets.
DEFAULT_MAX_MSGS_NUM_BATCH = 64
#: ``invalidIndex``: an empty slot / the end of a chain.
INVALID_INDEX = 0


def _java_long(value: int) -> int:
    """Wrap ``value`` to a signed 64-bit long, as Java arithmetic does."""
    value &= (1 << 64) - 1
    return value - (1 << 64) if value >> 63 else value


def _java_int(value: int) -> int:
    """Wrap ``value`` to a signed 32-bit int."""
    value &= 0xFFFFFFFF
    return value - (1 << 32) if value >> 31 else value


def _java_div(a: int, b: int) -> int:
    """Java integer division (truncates toward zero)."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b > 0) else -q


def _check_range(name: str, value: int, bits: int) -> None:
    low, high = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
    if not isinstance(value, int) or not low <= value <= high:
        raise ValueError(f"{name} {value!r} does not fit a signed {bits}-bit field")


# --- header and entries --------------------------------------------------------------------


@dataclass(frozen=True)
class IndexHeader:
    begin_timestamp: int = 0
    end_timestamp: int = 0
    begin_phy_offset: int = 0
    end_phy_offset: int = 0
    hash_slot_count: int = 0
    index_count: int = 1

    @property
    def effective_index_count(self) -> int:
        """``IndexHeader.load``: a stored indexCount <= 0 is read as 1."""
        return self.index_count if self.index_count > 0 else 1

    @property
    def entry_count(self) -> int:
        """Entries in use (numbers 1 .. effective_index_count - 1)."""
        return self.effective_index_count - 1


@dataclass(frozen=True)
class IndexEntry:
    key_hash: int
    phy_offset: int
    time_diff: int
    prev_index: int

    def timestamp(self, begin_timestamp: int) -> int:
        """``beginTimestamp + timeDiff*1000`` (what ``selectPhyOffset`` compares), Java long."""
        return _java_long(begin_timestamp + self.time_diff * 1000)


def decode_index_header(buf: Buffer, position: int = 0) -> IndexHeader:
    need(buf, position, INDEX_HEADER_SIZE, "IndexFile header")
    return IndexHeader(*INDEX_HEADER.unpack_from(buf, position))


def encode_index_header(header: IndexHeader) -> bytes:
    for name, bits in (
        ("begin_timestamp", 64),
        ("end_timestamp", 64),
        ("begin_phy_offset", 64),
        ("end_phy_offset", 64),
        ("hash_slot_count", 32),
        ("index_count", 32),
    ):
        _check_range(name, getattr(header, name), bits)
    return INDEX_HEADER.pack(
        header.begin_timestamp,
        header.end_timestamp,
        header.begin_phy_offset,
        header.end_phy_offset,
        header.hash_slot_count,
        header.index_count,
    )


def decode_index_entry(buf: Buffer, position: int) -> IndexEntry:
    need(buf, position, INDEX_ENTRY_SIZE, "IndexFile entry")
    return IndexEntry(*INDEX_ENTRY.unpack_from(buf, position))


def encode_index_entry(entry: IndexEntry) -> bytes:
    for name, bits in (("key_hash", 32), ("phy_offset", 64), ("time_diff", 32), ("prev_index", 32)):
        _check_range(name, getattr(entry, name), bits)
    return INDEX_ENTRY.pack(entry.key_hash, entry.phy_offset, entry.time_diff, entry.prev_index)


# --- geometry ------------------------------------------------------------------------------


def index_file_size(hash_slot_num: int = DEFAULT_HASH_SLOT_NUM, index_num: int = DEFAULT_INDEX_NUM) -> int:
    return INDEX_HEADER_SIZE + hash_slot_num * HASH_SLOT_SIZE + index_num * INDEX_ENTRY_SIZE


@dataclass(frozen=True)
class IndexGeometry:
    """``maxHashSlotNum`` / ``maxIndexNum`` of one file, and the positions they imply."""

    hash_slot_num: int = DEFAULT_HASH_SLOT_NUM
    index_num: int = DEFAULT_INDEX_NUM

    def __post_init__(self) -> None:
        if self.hash_slot_num <= 0 or self.index_num <= 0:
            raise ValueError(f"hash_slot_num and index_num must be positive: {self.hash_slot_num}, {self.index_num}")

    @property
    def size(self) -> int:
        return index_file_size(self.hash_slot_num, self.index_num)

    @property
    def entries_position(self) -> int:
        return INDEX_HEADER_SIZE + self.hash_slot_num * HASH_SLOT_SIZE

    def slot_position(self, slot: int) -> int:
        return INDEX_HEADER_SIZE + slot * HASH_SLOT_SIZE

    def entry_position(self, number: int) -> int:
        return self.entries_position + number * INDEX_ENTRY_SIZE

    def slot_of(self, key: str) -> int:
        return index_key_hash(key) % self.hash_slot_num


#: Geometries tried by ``infer_index_geometry`` before the 1:4 rule: the defaults, then the ones
#: RocketMQ's own tests use (their files turn up in forks; the real pr6495 fixture is 100/400).
KNOWN_INDEX_GEOMETRIES: tuple[tuple[int, int], ...] = (
    (DEFAULT_HASH_SLOT_NUM, DEFAULT_INDEX_NUM),
    (100, 400),
    (100, 1_000),
    (10_000, 10_000),
    (100, 8),
)


def check_index_geometry(length: int, hash_slot_num: int, index_num: int) -> IndexGeometry:
    """The geometry ``(hash_slot_num, index_num)`` if a file of ``length`` bytes has its size."""
    geometry = IndexGeometry(hash_slot_num, index_num)
    if length != geometry.size:
        cls = TruncatedDataError if length < geometry.size else CorruptDataError
        raise cls(
            position=min(length, geometry.size),
            expected=f"{geometry.size} bytes (IndexFile of {hash_slot_num} slots, {index_num} entries)",
            found=f"{length} bytes",
        )
    return geometry


def _length_candidates(length: int, candidates: Iterable[tuple[int, int]]) -> list[IndexGeometry]:
    """The ``candidates`` of ``length`` bytes in order, then the 1:4 rule
    (``indexNum = 4 * hashSlotNum``: ``length = 40 + 84 * hashSlotNum``)."""
    body = length - INDEX_HEADER_SIZE
    matches = [IndexGeometry(s, n) for s, n in candidates if index_file_size(s, n) == length]
    if body > 0 and body % 84 == 0:
        ratio = IndexGeometry(body // 84, body // 84 * 4)
        if ratio not in matches:
            matches.append(ratio)
    return matches


def _header_fits(header: IndexHeader | None, geometry: IndexGeometry) -> bool:
    if header is None:
        return True
    return header.index_count <= geometry.index_num and 0 <= header.hash_slot_count <= geometry.hash_slot_num


def infer_index_geometry(
    length: int,
    header: IndexHeader | None = None,
    *,
    hash_slot_num: int | None = None,
    index_num: int | None = None,
    candidates: Iterable[tuple[int, int]] = KNOWN_INDEX_GEOMETRIES,
) -> IndexGeometry:
    """Work out ``(hash_slot_num, index_num)`` for a file of ``length`` bytes.

    The header does not record the geometry, so:

    1. Explicit values always win: both given → they must match ``length`` exactly; one given →
       the other is solved from ``length`` (it must come out a positive whole number).
    2. Otherwise the ``candidates`` (defaults first) whose size equals ``length``, then the 1:4
       ratio every upstream configuration uses (``indexNum = 4 * hashSlotNum``:
       ``length = 40 + 84 * hashSlotNum``).
    3. A geometry is accepted only if ``header`` (when given) fits it: ``indexCount <=
       indexNum`` and ``0 <= hashSlotCount <= hashSlotNum``.

    Raises ``TruncatedDataError`` for a file shorter than the header, ``CorruptDataError`` when
    explicit values or every length match disagree with the header, and
    ``UnsupportedFormatError`` when nothing matches (pass the broker's ``maxHashSlotNum`` and
    ``maxIndexNum``).
    """
    if length < INDEX_HEADER_SIZE:
        raise TruncatedDataError(position=0, expected=f"an IndexFile of at least {INDEX_HEADER_SIZE} bytes", found=f"{length} bytes")
    body = length - INDEX_HEADER_SIZE
    if hash_slot_num is not None and index_num is None:
        rest = body - hash_slot_num * HASH_SLOT_SIZE
        if rest <= 0 or rest % INDEX_ENTRY_SIZE:
            raise CorruptDataError(
                position=0,
                expected=f"40 + 4*{hash_slot_num} + 20*indexNum bytes",
                found=f"{length} bytes",
            )
        index_num = rest // INDEX_ENTRY_SIZE
    elif index_num is not None and hash_slot_num is None:
        rest = body - index_num * INDEX_ENTRY_SIZE
        if rest <= 0 or rest % HASH_SLOT_SIZE:
            raise CorruptDataError(
                position=0,
                expected=f"40 + 4*hashSlotNum + 20*{index_num} bytes",
                found=f"{length} bytes",
            )
        hash_slot_num = rest // HASH_SLOT_SIZE
    if hash_slot_num is not None and index_num is not None:
        geometry = check_index_geometry(length, hash_slot_num, index_num)
        if not _header_fits(header, geometry):
            assert header is not None
            raise CorruptDataError(
                position=HASH_SLOT_COUNT_POSITION,
                expected=f"hashSlotCount <= {geometry.hash_slot_num} and indexCount <= {geometry.index_num}",
                found=f"hashSlotCount {header.hash_slot_count}, indexCount {header.index_count}",
            )
        return geometry
    matches = _length_candidates(length, candidates)
    for geometry in matches:
        if _header_fits(header, geometry):
            return geometry
    if matches:
        assert header is not None
        raise CorruptDataError(
            position=HASH_SLOT_COUNT_POSITION,
            expected=f"a header that fits {matches[0].hash_slot_num} slots / {matches[0].index_num} entries",
            found=f"hashSlotCount {header.hash_slot_count}, indexCount {header.index_count}",
        )
    raise UnsupportedFormatError(
        "cannot infer the IndexFile geometry from its length; give the broker's maxHashSlotNum and maxIndexNum (dump index --index-hash-slots N --index-num N)",
        expected="a length of 40 + 4*hashSlotNum + 20*indexNum for a known configuration",
        found=f"{length} bytes",
    )


#: ``(position, size) -> bytes`` of a file ``detect_index_geometry`` does not hold in memory (a
#: pread: fewer bytes only at the end of the file).
ReadAt = Callable[[int, int], bytes]

#: Slot tables up to this many bytes are read whole to confirm a geometry (every slot value is
#: an entry number below indexCount, and the used ones number hashSlotCount).
SLOT_TABLE_CHECK_BYTES = 1 << 20
#: Geometries the content search tries below the end of the run of slot-like words.
SEARCH_CANDIDATES = 32
#: Most bytes the content search reads looking for the end of the slot table: 16,777,216 slots,
#: over three times the default 5,000,000 (a larger table is left to the length rules and flags).
SEARCH_SCAN_BYTES = 1 << 26
_SCAN_FIRST_CHUNK = 1 << 12  # bytes of the first read while looking for the end of the slot table
_SCAN_CHUNK = 1 << 20  # ... and of the largest


@dataclass(frozen=True)
class GeometryEvidence:
    """What an IndexFile's bytes say about one candidate geometry (``IndexFile.putKey`` facts).

    A candidate is considered only if the header fits it (``indexCount <= indexNum``,
    ``hashSlotCount <= hashSlotNum``) and entry #0 is zeros while entry #1 is a written first
    entry (``putKey`` never writes entry #0; entry #1 has prevIndex 0 and a non-negative key
    hash and time diff).  Its time diff is not always 0: ``putKey`` measures it from the
    beginTimestamp a new file inherited from the previous one, before it sets beginTimestamp.
    An entry #1 that is all zeros (key hash 0 at CommitLog offset 0) cannot be told from an
    unwritten one, so such a file is left to the length rules.  Then:

    - ``begin``: entry #1 holds the header's beginPhyOffset;
    - ``end``: entry #indexCount-1 holds endPhyOffset (and links to an older entry);
    - ``first_slot``: the slot of entry #1's key hash is used (1 .. indexCount-1);
    - ``last_slot``: the slot of entry #indexCount-1's key hash names it (the newest entry heads
      its chain);
    - ``slot_table``: every slot is 0 .. indexCount-1 and hashSlotCount of them are used, or
      None when the table is larger than ``SLOT_TABLE_CHECK_BYTES`` (not read).
    """

    geometry: IndexGeometry
    begin: bool
    end: bool
    first_slot: bool
    last_slot: bool
    slot_table: bool | None

    @property
    def held(self) -> int:
        """How many of the four point facts hold."""
        return self.begin + self.end + self.first_slot + self.last_slot

    @property
    def confirmed(self) -> bool:
        """Every fact holds: the bytes were written with this geometry."""
        return self.held == 4 and self.slot_table is not False


def _as_reader(data: ReadAt | Buffer) -> ReadAt:
    if callable(data):
        return data
    view = memoryview(data)
    return lambda position, size: bytes(view[position : position + size])


def _read_exact(read: ReadAt, position: int, size: int) -> bytes | None:
    data = read(position, size)
    return data if len(data) == size else None


def _slot_words(raw: bytes) -> array.array[int]:
    words = array.array("I")  # unsigned: a negative value reads as >= 2^31, above any indexCount
    words.frombytes(raw)
    if sys.byteorder == "little":
        words.byteswap()
    return words


def index_geometry_evidence(data: ReadAt | Buffer, header: IndexHeader, geometry: IndexGeometry) -> GeometryEvidence | None:
    """The facts of ``GeometryEvidence`` for ``geometry``, or None when it is not a candidate.

    Reads entries #0, #1 and #indexCount-1, two slots and (when small) the slot table."""
    read = _as_reader(data)
    count = header.effective_index_count
    if count <= 1 or count > geometry.index_num or not 0 <= header.hash_slot_count <= geometry.hash_slot_num:
        return None
    slots = geometry.hash_slot_num
    head = _read_exact(read, geometry.entry_position(0), 2 * INDEX_ENTRY_SIZE)
    if head is None or any(head[:INDEX_ENTRY_SIZE]) or not any(head[INDEX_ENTRY_SIZE:]):
        return None
    key_hash, phy_offset, time_diff, prev_index = INDEX_ENTRY.unpack_from(head, INDEX_ENTRY_SIZE)
    if key_hash < 0 or time_diff < 0 or prev_index != INVALID_INDEX:
        return None
    last = count - 1
    if last == 1:
        last_entry: tuple[int, int, int, int] | None = (key_hash, phy_offset, time_diff, prev_index)
    else:
        raw = _read_exact(read, geometry.entry_position(last), INDEX_ENTRY_SIZE)
        last_entry = INDEX_ENTRY.unpack(raw) if raw is not None else None
    last_ok = last_entry is not None and last_entry[0] >= 0 and last_entry[2] >= 0 and 0 <= last_entry[3] < last

    def slot_value(slot_hash: int) -> int | None:
        raw = _read_exact(read, geometry.slot_position(slot_hash % slots), HASH_SLOT_SIZE)
        return HASH_SLOT.unpack(raw)[0] if raw is not None else None

    first_value = slot_value(key_hash)
    begin = phy_offset == header.begin_phy_offset
    end = last_ok and last_entry is not None and last_entry[1] == header.end_phy_offset
    first_slot = first_value is not None and 0 < first_value < count
    last_slot = last_ok and last_entry is not None and slot_value(last_entry[0]) == last
    table: bool | None = None
    if begin and end and first_slot and last_slot and slots * HASH_SLOT_SIZE <= SLOT_TABLE_CHECK_BYTES:
        raw = _read_exact(read, INDEX_HEADER_SIZE, slots * HASH_SLOT_SIZE)
        values = _slot_words(raw) if raw is not None else None
        table = values is not None and max(values) < count and slots - values.count(0) == header.hash_slot_count
    return GeometryEvidence(geometry, begin, end, first_slot, last_slot, table)


def _split_candidates(length: int, header: IndexHeader, below_word: int) -> Iterator[IndexGeometry]:
    """Geometries of ``length`` bytes with hashSlotNum <= ``below_word`` - 5, largest first, at
    most ``SEARCH_CANDIDATES`` of them, that the header fits."""
    body = length - INDEX_HEADER_SIZE
    if body <= 0 or body % HASH_SLOT_SIZE:
        return
    words = body // HASH_SLOT_SIZE  # hashSlotNum + 5 * indexNum
    per_entry = INDEX_ENTRY_SIZE // HASH_SLOT_SIZE  # 5
    most = min(below_word - per_entry, words - per_entry * header.effective_index_count)
    if most < 1:
        return
    slots = most - (most - words) % per_entry  # the largest slot count <= most that splits the length
    least = max(1, header.hash_slot_count)
    for _ in range(SEARCH_CANDIDATES):
        if slots < least:
            return
        yield IndexGeometry(slots, (words - slots) // per_entry)
        slots -= per_entry


def _end_of_slot_words(read: ReadAt, length: int, index_count: int) -> int:
    """The number of the first 4-byte word after the header that cannot be a slot (not 0 ..
    ``index_count``-1), or where looking further cannot matter.  A healthy file's slot table
    and entry #0 are slot-like, so its hashSlotNum is at most this minus 5 (entry #1's key hash
    is usually the word found); no split leaves room for ``index_count`` entries after a slot
    table longer than ``words - 5*index_count``, so the scan stops 5 words past that."""
    words = (length - INDEX_HEADER_SIZE) // HASH_SLOT_SIZE
    per_entry = INDEX_ENTRY_SIZE // HASH_SLOT_SIZE
    total = max(0, min(words, words - per_entry * index_count + per_entry, SEARCH_SCAN_BYTES // HASH_SLOT_SIZE))
    word = 0
    chunk = _SCAN_FIRST_CHUNK  # doubling: a small table costs one small read, a large one few reads
    while word < total:
        size = min(chunk, (total - word) * HASH_SLOT_SIZE)
        chunk = min(2 * chunk, _SCAN_CHUNK)
        raw = _read_exact(read, INDEX_HEADER_SIZE + word * HASH_SLOT_SIZE, size)
        if raw is None:
            return word
        values = _slot_words(raw)
        if max(values) >= index_count:
            return word + next(i for i, value in enumerate(values) if value >= index_count)
        word += len(values)
    return total


def detect_index_geometry(
    data: ReadAt | Buffer,
    length: int | None = None,
    *,
    hash_slot_num: int | None = None,
    index_num: int | None = None,
    candidates: Iterable[tuple[int, int]] = KNOWN_INDEX_GEOMETRIES,
) -> IndexGeometry:
    """``(hash_slot_num, index_num)`` of an IndexFile, read from its own bytes.

    ``data`` is the file's bytes or a ``ReadAt`` (then ``length`` is the file size).  The header
    does not record the geometry, but ``IndexFile.putKey`` leaves facts that do
    (``GeometryEvidence``): entry #1 sits right after the slot table and carries beginPhyOffset
    with prevIndex 0, entry #indexCount-1 carries endPhyOffset and heads its slot's chain, and
    every slot names an entry below indexCount.  So:

    1. Explicit values win (``infer_index_geometry`` rules and errors).
    2. A geometry of ``candidates``/the 1:4 rule with this length that every fact confirms.
    3. Otherwise the run of slot-like words from the header on bounds the slot table: up to
       ``SEARCH_CANDIDATES`` splits of the length below its end (looked for in at most
       ``SEARCH_SCAN_BYTES``) are tried, largest first; the first every fact confirms is the
       geometry.  Only a few entries and slots are read per
       candidate (the slot table too when it is at most ``SLOT_TABLE_CHECK_BYTES``).
    4. Otherwise (damage, or an empty file: indexCount <= 1 leaves nothing to read) the length
       rules of ``infer_index_geometry``; when they find nothing, the candidate with the most
       facts, if at least two hold (a damaged header or slot table of an unlisted geometry);
       else ``infer_index_geometry``'s error.
    """
    read = _as_reader(data)
    if length is None:
        if callable(data):
            raise TypeError("detect_index_geometry needs the length with a ReadAt")
        length = len(memoryview(data))
    if length < INDEX_HEADER_SIZE or hash_slot_num is not None or index_num is not None:
        header = decode_index_header(read(0, INDEX_HEADER_SIZE)) if length >= INDEX_HEADER_SIZE else None
        return infer_index_geometry(length, header, hash_slot_num=hash_slot_num, index_num=index_num, candidates=candidates)
    header = decode_index_header(read(0, INDEX_HEADER_SIZE))
    candidates = tuple(candidates)
    count = header.effective_index_count
    partial: list[GeometryEvidence] = []
    if count > 1:
        tried: set[IndexGeometry] = set()
        for geometry in _length_candidates(length, candidates):
            tried.add(geometry)
            evidence = index_geometry_evidence(read, header, geometry)
            if evidence is not None and evidence.confirmed:
                return geometry
            if evidence is not None:
                partial.append(evidence)
        for geometry in _split_candidates(length, header, _end_of_slot_words(read, length, count)):
            if geometry in tried:
                continue
            evidence = index_geometry_evidence(read, header, geometry)
            if evidence is not None and evidence.confirmed:
                return geometry
            if evidence is not None:
                partial.append(evidence)
    try:
        return infer_index_geometry(length, header, candidates=candidates)
    except MqError as exc:
        best = max(partial, key=lambda e: e.held, default=None)  # max keeps the first of equals
        if best is not None and best.held >= 2:
            return best.geometry
        if count > 1 and isinstance(exc, UnsupportedFormatError):
            raise UnsupportedFormatError(
                "cannot infer the IndexFile geometry from its length or its entries; "
                "give the broker's maxHashSlotNum and maxIndexNum (dump index --index-hash-slots N --index-num N)",
                expected=f"entries #1 .. #{count - 1} (indexCount {header.index_count}) after a slot table, in a length of 40 + 4*hashSlotNum + 20*indexNum",
                found=f"{length} bytes that no such split fits",
            ) from None
        raise


def _geometry_for(buf: Buffer, hash_slot_num: int, index_num: int) -> IndexGeometry:
    geometry = IndexGeometry(hash_slot_num, index_num)
    need(buf, 0, geometry.size, f"IndexFile of {hash_slot_num} slots and {index_num} entries")
    return geometry


# --- writer --------------------------------------------------------------------------------


class IndexWriter:
    """``IndexFile.putKey`` over a caller-supplied writable buffer of at least the file size.

    The header is loaded from the buffer (``IndexHeader.load``: indexCount <= 0 → 1) and kept in
    memory; every change is written straight through to the buffer, field by field, exactly when
    the broker writes it.  ``write_header()`` is ``updateByteBuffer`` (flush/shutdown).
    """

    def __init__(
        self,
        buf: bytearray | memoryview,
        hash_slot_num: int = DEFAULT_HASH_SLOT_NUM,
        index_num: int = DEFAULT_INDEX_NUM,
    ) -> None:
        view = memoryview(buf)
        if view.readonly:
            raise TypeError("IndexWriter needs a writable buffer (bytearray, writable memoryview or mmap)")
        self.geometry = _geometry_for(view, hash_slot_num, index_num)
        self._buf = view
        header = decode_index_header(view)
        self._begin_timestamp = header.begin_timestamp
        self._end_timestamp = header.end_timestamp
        self._begin_phy_offset = header.begin_phy_offset
        self._end_phy_offset = header.end_phy_offset
        self._hash_slot_count = header.hash_slot_count
        self._index_count = header.effective_index_count

    # header write-through (positions derived from the header Struct)
    def _put_long(self, position: int, value: int) -> None:
        _LONG.pack_into(self._buf, position, value)

    def _set_begin(self, phy_offset: int, timestamp: int) -> None:
        self._begin_phy_offset = phy_offset
        self._put_long(BEGIN_PHY_OFFSET_POSITION, phy_offset)
        self._begin_timestamp = timestamp
        self._put_long(BEGIN_TIMESTAMP_POSITION, timestamp)

    def _set_end(self, phy_offset: int, timestamp: int) -> None:
        self._end_phy_offset = phy_offset
        self._put_long(END_PHY_OFFSET_POSITION, phy_offset)
        self._end_timestamp = timestamp
        self._put_long(END_TIMESTAMP_POSITION, timestamp)

    @property
    def header(self) -> IndexHeader:
        """The in-memory header (what the broker would flush)."""
        return IndexHeader(
            self._begin_timestamp,
            self._end_timestamp,
            self._begin_phy_offset,
            self._end_phy_offset,
            self._hash_slot_count,
            self._index_count,
        )

    @property
    def is_full(self) -> bool:
        """``isWriteFull``: indexCount >= indexNum."""
        return self._index_count >= self.geometry.index_num

    def write_header(self) -> None:
        """``IndexHeader.updateByteBuffer``: write every in-memory header field."""
        h = self.header
        INDEX_HEADER.pack_into(
            self._buf,
            0,
            h.begin_timestamp,
            h.end_timestamp,
            h.begin_phy_offset,
            h.end_phy_offset,
            h.hash_slot_count,
            h.index_count,
        )

    def inherit(self, prev_end_phy_offset: int, prev_end_timestamp: int) -> None:
        """The ``IndexFile`` constructor: a new file starts from the previous file's end values
        (each only when > 0), as both its begin and end."""
        _check_range("prev_end_phy_offset", prev_end_phy_offset, 64)
        _check_range("prev_end_timestamp", prev_end_timestamp, 64)
        if prev_end_phy_offset > 0:
            self._begin_phy_offset = self._end_phy_offset = prev_end_phy_offset
            self._put_long(BEGIN_PHY_OFFSET_POSITION, prev_end_phy_offset)
            self._put_long(END_PHY_OFFSET_POSITION, prev_end_phy_offset)
        if prev_end_timestamp > 0:
            self._begin_timestamp = self._end_timestamp = prev_end_timestamp
            self._put_long(BEGIN_TIMESTAMP_POSITION, prev_end_timestamp)
            self._put_long(END_TIMESTAMP_POSITION, prev_end_timestamp)

    def put_key(self, key: str, phy_offset: int, store_timestamp: int) -> bool:
        """``putKey``; False when the file is full (nothing written)."""
        _check_range("phy_offset", phy_offset, 64)
        _check_range("store_timestamp", store_timestamp, 64)
        index_count = self._index_count
        if index_count >= self.geometry.index_num:
            return False
        geometry = self.geometry
        buf = self._buf
        key_hash = index_key_hash(key)
        slot_position = geometry.slot_position(key_hash % geometry.hash_slot_num)
        (slot_value,) = HASH_SLOT.unpack_from(buf, slot_position)
        if slot_value <= INVALID_INDEX or slot_value > index_count:
            slot_value = INVALID_INDEX
        begin = self._begin_timestamp
        time_diff = _java_div(_java_long(store_timestamp - begin), 1000)
        if begin <= 0:
            time_diff = 0
        elif time_diff > _INT_MAX:
            time_diff = _INT_MAX
        elif time_diff < 0:
            time_diff = 0
        INDEX_ENTRY.pack_into(buf, geometry.entry_position(index_count), key_hash, phy_offset, time_diff, slot_value)
        HASH_SLOT.pack_into(buf, slot_position, index_count)
        if index_count <= 1:
            self._set_begin(phy_offset, store_timestamp)
        if slot_value == INVALID_INDEX:
            self._hash_slot_count = _java_int(self._hash_slot_count + 1)
            I32.pack_into(buf, HASH_SLOT_COUNT_POSITION, self._hash_slot_count)
        self._index_count = index_count + 1
        I32.pack_into(buf, INDEX_COUNT_POSITION, self._index_count)
        self._set_end(phy_offset, store_timestamp)
        return True


# --- readers -------------------------------------------------------------------------------


def read_slot(buf: Buffer, slot: int, hash_slot_num: int = DEFAULT_HASH_SLOT_NUM) -> int:
    """The raw value of slot ``slot`` (newest entry number of its chain, 0 = empty)."""
    if not 0 <= slot < hash_slot_num:
        raise ValueError(f"slot {slot} outside 0..{hash_slot_num - 1}")
    position = INDEX_HEADER_SIZE + slot * HASH_SLOT_SIZE
    need(buf, position, HASH_SLOT_SIZE, "IndexFile hash slot")
    value: int
    (value,) = HASH_SLOT.unpack_from(buf, position)
    return value


def select_phy_offsets(
    buf: Buffer,
    key: str,
    max_num: int,
    begin: int,
    end: int,
    hash_slot_num: int = DEFAULT_HASH_SLOT_NUM,
    index_num: int = DEFAULT_INDEX_NUM,
) -> list[int]:
    """``IndexFile.selectPhyOffset``: CommitLog offsets of entries whose key hash matches ``key``
    and whose time (``beginTimestamp + timeDiff*1000``) lies in ``[begin, end]``, newest first
    (the offsets of :func:`select_entries`)."""
    return [phy_offset for _number, phy_offset in select_entries(buf, key, max_num, begin, end, hash_slot_num, index_num)]


def select_entries(
    buf: Buffer,
    key: str,
    max_num: int,
    begin: int,
    end: int,
    hash_slot_num: int = DEFAULT_HASH_SLOT_NUM,
    index_num: int = DEFAULT_INDEX_NUM,
) -> list[tuple[int, int]]:
    """``IndexFile.selectPhyOffset`` keeping where each offset comes from: ``(entry number,
    CommitLog offset)`` of entries whose key hash matches ``key`` and whose time
    (``beginTimestamp + timeDiff*1000``) lies in ``[begin, end]``, newest first.

    Nothing when the slot is <= 0 or > indexCount, or indexCount <= 1.  The walk stops on a
    negative timeDiff, after ``max_num`` offsets, or when prevIndex is <= 0, > indexCount, equal
    to the current entry, or the entry is older than ``begin``.  Hash collisions are returned too
    (callers compare the messages' keys).

    Where RocketMQ would loop forever (a chain with a cycle longer than one entry) this raises
    ``CorruptDataError`` at the entry that closes the loop, unless ``max_num`` is reached first
    (RocketMQ would return there too).  A link to an entry outside the buffer raises
    ``TruncatedDataError`` (RocketMQ logs the exception and returns what it collected).
    """
    geometry = _geometry_for(buf, hash_slot_num, index_num)
    header = decode_index_header(buf)
    index_count = header.effective_index_count
    key_hash = index_key_hash(key)
    (slot_value,) = HASH_SLOT.unpack_from(buf, geometry.slot_position(key_hash % hash_slot_num))
    found: list[tuple[int, int]] = []
    if slot_value <= INVALID_INDEX or slot_value > index_count or index_count <= 1:
        return found
    begin_timestamp = header.begin_timestamp
    size = len(buf)
    entries_position = geometry.entries_position
    number = slot_value
    # Brent's cycle detection: O(1) memory, finds a loop within a few laps of it.
    tortoise, power, lam = number, 1, 0
    while True:
        if len(found) >= max_num:
            break
        position = entries_position + number * INDEX_ENTRY_SIZE
        if position + INDEX_ENTRY_SIZE > size:
            raise TruncatedDataError(
                position=position,
                expected=f"IndexFile entry #{number} (linked from the chain of key {key!r})",
                found=f"{max(size - position, 0)} bytes before the end of data",
            )
        key_hash_read, phy_offset, time_diff, prev_index = INDEX_ENTRY.unpack_from(buf, position)
        if time_diff < 0:
            break
        time_read = _java_long(begin_timestamp + time_diff * 1000)
        if key_hash == key_hash_read and begin <= time_read <= end:
            found.append((number, phy_offset))
        if prev_index <= INVALID_INDEX or prev_index > index_count or prev_index == number or time_read < begin:
            break
        number = prev_index
        if number == tortoise:
            raise CorruptDataError(
                "IndexFile chain loops",
                position=position + PREV_INDEX_POSITION,
                expected="a prevIndex chain that ends",
                found=f"entry #{number} reached twice",
            )
        lam += 1
        if lam == power:
            tortoise, power, lam = number, power * 2, 0
    return found


def iter_chain(
    buf: Buffer,
    slot: int,
    hash_slot_num: int = DEFAULT_HASH_SLOT_NUM,
    index_num: int = DEFAULT_INDEX_NUM,
) -> Iterator[tuple[int, IndexEntry]]:
    """``(entry number, IndexEntry)`` along slot ``slot``'s chain, newest first.

    Structural walk for validate/dump: every link must point at an older, written entry
    (``0 < prevIndex < number``; ``putKey`` only ever links backwards), so a cycle or a forward
    link is ``CorruptDataError`` at the position of the entry holding the bad prevIndex (or of
    the slot, for a slot value outside ``0..indexCount-1``).
    """
    geometry = _geometry_for(buf, hash_slot_num, index_num)
    header = decode_index_header(buf)
    index_count = header.effective_index_count
    written = min(index_count, geometry.index_num)  # entries 1 .. written-1 exist
    slot_value = read_slot(buf, slot, hash_slot_num)
    if slot_value == INVALID_INDEX:
        return
    if not 0 < slot_value < written:
        raise CorruptDataError(
            f"slot {slot} links outside the written entries",
            position=geometry.slot_position(slot),
            expected=f"an entry number in 1..{written - 1} (indexCount {header.index_count})",
            found=str(slot_value),
        )
    number = slot_value
    while True:
        position = geometry.entry_position(number)
        entry = IndexEntry(*INDEX_ENTRY.unpack_from(buf, position))
        yield number, entry
        prev = entry.prev_index
        if prev == INVALID_INDEX:
            return
        if not 0 < prev < number:
            raise CorruptDataError(
                "IndexFile chain link does not point at an older entry" + (" (a cycle)" if prev >= number else ""),
                position=position + PREV_INDEX_POSITION,
                expected=f"prevIndex 0 or 1..{number - 1}",
                found=str(prev),
            )
        number = prev


def iter_entries(buf: Buffer, hash_slot_num: int = DEFAULT_HASH_SLOT_NUM, index_num: int = DEFAULT_INDEX_NUM) -> Iterator[tuple[int, IndexEntry]]:
    """``(entry number, IndexEntry)`` for every used entry 1 .. indexCount-1, in write order."""
    geometry = _geometry_for(buf, hash_slot_num, index_num)
    header = decode_index_header(buf)
    index_count = header.effective_index_count
    if index_count > geometry.index_num:
        raise CorruptDataError(
            position=INDEX_COUNT_POSITION,
            expected=f"indexCount <= indexNum {geometry.index_num}",
            found=str(header.index_count),
        )
    start = geometry.entry_position(1)
    stop = geometry.entry_position(index_count)
    for number, raw in enumerate(INDEX_ENTRY.iter_unpack(memoryview(buf)[start:stop]), start=1):
        yield number, IndexEntry(*raw)


def iter_used_slots(buf: Buffer, hash_slot_num: int = DEFAULT_HASH_SLOT_NUM) -> Iterator[tuple[int, int]]:
    """``(slot, value)`` for every non-zero slot (raw values, including out-of-range ones)."""
    stop = INDEX_HEADER_SIZE + hash_slot_num * HASH_SLOT_SIZE
    need(buf, 0, stop, f"IndexFile header and {hash_slot_num} hash slots")
    # Slots are mostly zero: select the non-zero ones in C (array + itertools.compress), a
    # block at a time so memory stays bounded for 5,000,000-slot files.
    block = 1 << 18  # slots per block (1 MiB)
    view = memoryview(buf)
    for first in range(0, hash_slot_num, block):
        count = min(block, hash_slot_num - first)
        start = INDEX_HEADER_SIZE + first * HASH_SLOT_SIZE
        values = array.array("i")
        values.frombytes(view[start : start + count * HASH_SLOT_SIZE])
        if sys.byteorder == "little":
            values.byteswap()
        for slot in itertools.compress(range(first, first + count), values):
            yield slot, values[slot - first]


__all__ = [
    "INDEX_HEADER",
    "INDEX_HEADER_SIZE",
    "HASH_SLOT_SIZE",
    "INDEX_ENTRY",
    "INDEX_ENTRY_SIZE",
    "DEFAULT_HASH_SLOT_NUM",
    "DEFAULT_INDEX_NUM",
    "DEFAULT_MAX_MSGS_NUM_BATCH",
    "INVALID_INDEX",
    "KNOWN_INDEX_GEOMETRIES",
    "IndexHeader",
    "IndexEntry",
    "IndexGeometry",
    "decode_index_header",
    "encode_index_header",
    "decode_index_entry",
    "encode_index_entry",
    "index_file_size",
    "check_index_geometry",
    "infer_index_geometry",
    "ReadAt",
    "SLOT_TABLE_CHECK_BYTES",
    "SEARCH_CANDIDATES",
    "SEARCH_SCAN_BYTES",
    "GeometryEvidence",
    "index_geometry_evidence",
    "detect_index_geometry",
    "IndexWriter",
    "read_slot",
    "select_phy_offsets",
    "select_entries",
    "iter_chain",
    "iter_entries",
    "iter_used_slots",
]
