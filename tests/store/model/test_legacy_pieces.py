"""The Jafka and MetaQ segment reading gives one answer whatever the size of the pieces it reads a file in.

The store model's reading of a segment (``store.model.legacy.read_segment``: every message, how
the file ends, what the broker's recovery does with it) reads the file in pieces of
``store.files.piece_size()`` bytes; a message that a piece boundary cuts -- anywhere, including
inside its 4-byte length, whose high bytes are zeros -- is the reading's business alone.
Hypothesis builds segments of messages of any sizes, so message starts fall at every offset
relative to the piece, healthy or damaged at a drawn place (a flipped byte, a cut, zeros, garbage
after the end), and the result with pieces from 64 bytes to a few KiB must be the result with one
piece holding the whole file: the same messages, valid end, recovery end and findings (code,
position, length, message).  Healthy segments: every message, no error or warning.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mqtool.formats import jafka as jf
from mqtool.formats import metaq as mq
from mqtool.formats import segment_names as segnames
from mqtool.store.files import read_in_pieces
from mqtool.store.model.legacy import SegmentResult, SegmentTask, read_segment

WHOLE = 1 << 30


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


def _damage(data: bytes, kind: str, at: int) -> bytes:
    if kind == "healthy" or not data:
        return data
    pos = at % len(data)
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
    task = SegmentTask(layout, str(path), 0, None, True, last, True)
    with read_in_pieces(piece):
        res: SegmentResult = read_segment(task)
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


def _path(tmp_path: Path, layout: str) -> Path:
    name = segnames.jafka_file_name(0) if layout == "jafka" else segnames.metaq_file_name(0)
    return tmp_path / name


@pytest.mark.parametrize("layout", ["jafka", "metaq"])
def test_every_alignment_of_a_piece_boundary_inside_a_message_header(tmp_path: Path, layout: str) -> None:
    """A piece ending 0..40 bytes into each of several messages (the zeros of the length's high
    bytes, the checksum, the payload) changes nothing."""
    data, positions = _segment(layout, [5, 1, 300, 40, 0, 77] * 5)
    path = _path(tmp_path, layout)
    path.write_bytes(data)
    whole = _read(path, layout, WHOLE, last=True)
    assert whole[0] == len(positions) and whole[2] == len(data)
    assert [f for f in whole[7] if f["severity"] in ("error", "warning")] == []  # type: ignore[attr-defined]
    for p in positions[2:9]:
        for k in range(0, 41):
            if p + k >= 64:
                assert _read(path, layout, p + k, last=True) == whole, (p, k)


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
        assert [f for f in whole[7] if f["severity"] in ("error", "warning")] == []  # type: ignore[attr-defined]
    assert _read(path, layout, piece, last=last) == whole
