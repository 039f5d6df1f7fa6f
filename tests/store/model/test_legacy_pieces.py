"""The Jafka and MetaQ segment reading gives one answer whatever the size of the pieces it reads a file in.

The family's one piece loop (``store.model.framed.PieceWalk``) reads a segment in pieces whose size
is its parameter: ``SegmentTask.piece`` for the store model's reading of a segment
(``store.model.legacy.read_segment``: every message, how the file ends, what the broker's recovery
does with it), ``piece`` for the range reading the Spark sources split a file with
(``store.model.framed.read_range`` under ``JAFKA_RANGE`` / ``METAQ_RANGE``).  A message that a piece
boundary cuts -- anywhere, including inside its 4-byte length, whose high bytes are zeros -- is the
walk's business alone.  Hypothesis builds segments of messages of any sizes, so message starts fall
at every offset relative to the piece, healthy or damaged at a drawn place (a flipped byte, a cut,
zeros, garbage after the end), and the result with pieces from 64 bytes up to the default piece
size (``store.files.piece_size()``: the segment then starts with filler messages that bring a
piece's end into the drawn messages) must be the result with one piece holding the whole file: the
same messages, valid end, recovery end and findings (code, position, length, message).  Healthy
segments: every message, no error or warning.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mqtool.formats import jafka as jf
from mqtool.formats import metaq as mq
from mqtool.formats import segment_names as segnames
from mqtool.formats.data_end import DataEnd
from mqtool.store.files import ReadOnlyFile, piece_size
from mqtool.store.model.framed import RangeProblem, read_range
from mqtool.store.model.legacy import JAFKA_RANGE, METAQ_RANGE, MemoryFile, SegmentResult, SegmentTask, read_segment

WHOLE = 1 << 30
DEFAULT = piece_size()
#: the largest filler message's payload
FILLER = 1 << 20


def _message(layout: str, i: int, size: int) -> bytes:
    payload = bytes((i * 31 + k) % 251 for k in range(size))
    return jf.encode_message(jf.Message(payload)) if layout == "jafka" else mq.encode_message(mq.make_message(1000 + i, payload, None))


def _segment(layout: str, sizes: list[int]) -> tuple[bytes, list[int]]:
    out = bytearray()
    positions = []
    for i, size in enumerate(sizes):
        positions.append(len(out))
        out += _message(layout, i, size)
    return bytes(out), positions


def _filler(layout: str, total: int) -> bytes:
    """Messages of exactly ``total`` bytes (``total`` 0 or at least a message's overhead)."""
    overhead = len(_message(layout, 0, 0))
    out = bytearray()
    rest = total
    while rest:
        take = min(rest, FILLER + overhead)
        if 0 < rest - take < overhead:
            take -= overhead
        out += _message(layout, 7 + len(out), take - overhead)
        rest -= take
    assert len(out) == total
    return bytes(out)


def _damage(data: bytes, kind: str, at: int, lo: int = 0) -> bytes:
    """``data`` damaged by ``kind`` at a place drawn by ``at`` in ``data[lo:]``."""
    if kind == "healthy" or len(data) <= lo:
        return data
    pos = lo + at % (len(data) - lo)
    if kind == "flip":
        return data[:pos] + bytes([data[pos] ^ 0x5A]) + data[pos + 1 :]
    if kind == "cut":
        return data[: len(data) - 1 - at % 40]
    if kind == "zeros":
        return data[:pos] + bytes(min(len(data) - pos, at % 300 + 1)) + data[pos + at % 300 + 1 :]
    if kind == "garbage":
        return data + bytes(at % 90) + bytes((at * 7 + i) % 251 | 1 for i in range(at % 300 + 20))
    raise AssertionError(kind)


def _read(path: Path, layout: str, piece: int, *, last: bool) -> tuple[object, ...]:
    res: SegmentResult = read_segment(SegmentTask(layout, str(path), 0, None, True, last, True, piece=piece))
    return (
        res.records,
        res.inner,
        res.valid_end,
        res.recovery_end,
        res.recovery_crash,
        res.empty_messages,
        res.lost,
        [f.to_dict() for f in res.findings],
    )


def _ranges(path: Path, layout: str, piece: int, splits: list[int]) -> list[object]:
    """The events of the range reading of the file cut at ``splits``, in pieces of ``piece`` bytes."""
    framing = JAFKA_RANGE if layout == "jafka" else METAQ_RANGE
    events: list[object] = []
    with ReadOnlyFile(path) as f:
        bounds = [0, *sorted({s % max(f.size, 1) for s in splits} - {0}), f.size]
        for start, stop in zip(bounds, bounds[1:]):
            for event in read_range(framing, f, start, stop, piece=piece):
                if isinstance(event, RangeProblem | DataEnd):
                    events.append(event)
                else:
                    at, message = event
                    events.append((at, message))
    return events


def _path(tmp_path: Path, layout: str) -> Path:
    name = segnames.jafka_file_name(0) if layout == "jafka" else segnames.metaq_file_name(0)
    return tmp_path / name


def _clean(result: tuple[object, ...]) -> bool:
    return [f for f in result[7] if f["severity"] in ("error", "warning")] == []  # type: ignore[attr-defined]


@pytest.mark.parametrize("layout", ["jafka", "metaq"])
def test_every_alignment_of_a_piece_boundary_inside_a_message_header(tmp_path: Path, layout: str) -> None:
    """A piece ending 0..40 bytes into each of several messages (the zeros of the length's high
    bytes, the checksum, the payload) changes nothing."""
    data, positions = _segment(layout, [5, 1, 300, 40, 0, 77] * 5)
    path = _path(tmp_path, layout)
    path.write_bytes(data)
    whole = _read(path, layout, WHOLE, last=True)
    assert whole[0] == len(positions) and whole[2] == len(data)
    assert _clean(whole)
    ranges = _ranges(path, layout, WHOLE, [])
    assert [e[0] for e in ranges if isinstance(e, tuple)] == positions
    for p in positions[2:9]:
        for k in range(0, 41):
            if p + k >= 64:
                assert _read(path, layout, p + k, last=True) == whole, (p, k)
                assert _ranges(path, layout, p + k, []) == ranges, (p, k)


def test_a_whole_piece_is_one_read(tmp_path: Path) -> None:
    """The reference reading is one piece: with ``piece`` the walk reads pieces of that size from
    its first (the small first piece that grows is the default piece size's, for readers that stop
    early), so a piece bigger than the file reads it at once."""
    from mqtool.store.files import count_reads

    data = _filler("metaq", 3 << 20)
    path = _path(tmp_path, "metaq")
    path.write_bytes(data)
    with count_reads() as reads:
        res = read_segment(SegmentTask("metaq", str(path), 0, None, True, True, True, piece=WHOLE))
    assert res.valid_end == len(data) and sum(reads.values()) == len(data)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    layout=st.sampled_from(["jafka", "metaq"]),
    sizes=st.lists(st.integers(0, 700), min_size=1, max_size=30),
    piece=st.integers(64, 4096),
    kind=st.sampled_from(["healthy", "healthy", "flip", "cut", "zeros", "garbage"]),
    at=st.integers(0, 10**6),
    last=st.booleans(),
)
def test_pieces_of_any_size_read_as_one(tmp_path: Path, layout: str, sizes: list[int], piece: int, kind: str, at: int, last: bool) -> None:
    data, positions = _segment(layout, sizes)
    path = _path(tmp_path, layout)
    path.write_bytes(_damage(data, kind, at))
    whole = _read(path, layout, WHOLE, last=last)
    if kind == "healthy":
        assert whole[0] == len(positions) and whole[2] == len(data)
        assert _clean(whole)
    assert _read(path, layout, piece, last=last) == whole


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    layout=st.sampled_from(["jafka", "metaq"]),
    sizes=st.lists(st.integers(0, 700), min_size=1, max_size=12),
    piece=st.sampled_from([300, 4096, 64 << 10, 1 << 20, DEFAULT]),
    shift=st.integers(0, 3000),
    kind=st.sampled_from(["healthy", "healthy", "flip", "cut", "zeros", "garbage"]),
    at=st.integers(0, 10**6),
    last=st.booleans(),
)
def test_pieces_up_to_the_default_read_as_one(tmp_path: Path, layout: str, sizes: list[int], piece: int, shift: int, kind: str, at: int, last: bool) -> None:
    """Filler messages bring the end of the first piece ``shift`` bytes before the end of
    the filler, into the drawn messages, for pieces up to the default size; the damage is drawn
    among the drawn messages."""
    overhead = len(_message(layout, 0, 0))
    lead = max(0, piece - shift)
    lead = 0 if lead < overhead else lead
    filler = _filler(layout, lead)
    data, positions = _segment(layout, sizes)
    path = _path(tmp_path, layout)
    path.write_bytes(_damage(filler + data, kind, at, len(filler)))
    whole = _read(path, layout, WHOLE, last=last)
    if kind == "healthy":
        assert whole[2] == len(filler) + len(data)
        assert _clean(whole)
    assert _read(path, layout, piece, last=last) == whole


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    layout=st.sampled_from(["jafka", "metaq"]),
    sizes=st.lists(st.integers(0, 700), min_size=1, max_size=30),
    piece=st.integers(300, 4096),
    splits=st.lists(st.integers(0, 10**6), max_size=3),
    kind=st.sampled_from(["healthy", "healthy", "flip", "cut", "zeros", "garbage"]),
    at=st.integers(0, 10**6),
)
def test_the_range_reading_in_pieces_of_any_size_reads_as_one(tmp_path: Path, layout: str, sizes: list[int], piece: int, splits: list[int], kind: str, at: int) -> None:
    """The Spark sources' range reading (``read_range``), the file cut into ranges or not: the
    same messages, problems (code, position) and ends as with one piece; healthy: every message
    once, no problem."""
    data, positions = _segment(layout, sizes)
    path = _path(tmp_path, layout)
    path.write_bytes(_damage(data, kind, at))
    whole = _ranges(path, layout, WHOLE, splits)
    if kind == "healthy":
        assert [e[0] for e in whole if isinstance(e, tuple)] == positions
        assert not [e for e in whole if isinstance(e, RangeProblem)]
    assert _ranges(path, layout, piece, splits) == whole


def test_memory_file_reads_as_the_file(tmp_path: Path) -> None:
    """An inflated ``.meta.zip`` (``MemoryFile``) is read by the same walk: the same events."""
    data, _ = _segment("metaq", [3, 500, 20, 0, 90] * 4)
    path = _path(tmp_path, "metaq")
    path.write_bytes(data)
    expected = _ranges(path, "metaq", 333, [])
    got = list(read_range(METAQ_RANGE, MemoryFile(str(path), data), 0, len(data), piece=333))
    assert [e if isinstance(e, RangeProblem | DataEnd) else tuple(e) for e in got] == expected


@pytest.mark.parametrize("layout", ["jafka", "metaq"])
def test_a_length_beyond_what_is_read_is_one_answer(tmp_path: Path, layout: str) -> None:
    """A damaged length larger than mqtool reads, running past the end of the file: the range
    reading states it as SIZE at the message, whether the message ends the only piece or a piece
    ends inside it."""
    data, _ = _segment(layout, [40, 291])
    path = _path(tmp_path, layout)
    first = len(_message(layout, 0, 40))
    path.write_bytes(_damage(data, "flip", first))  # the second message's length: 0x5A......
    whole = _ranges(path, layout, WHOLE, [])
    assert [(e.code, e.position) for e in whole if isinstance(e, RangeProblem)] == [(f"{layout.upper()}-SIZE", first)]
    assert whole[-1] == DataEnd("size", first)
    for piece in (64, 100, 300):
        assert _ranges(path, layout, piece, []) == whole, piece
