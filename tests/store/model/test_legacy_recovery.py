"""The brokers' recovery loop over a last segment, from the reading or walked on its own.

``store.model.legacy.tail_from_reading`` takes where Jafka's or MetaQ's recovery stops from the
store model's reading of the last segment (validate's, which recover's plan shares); MetaQ's loop
through zero headers (empty messages) runs inside that reading.  ``recovery_tail`` walks the
segment on its own.  Hypothesis builds last segments with zero runs, damage and torn tails at
drawn places, read in pieces of a drawn size: both give the same tail, and the reading answers
for every MetaQ segment whose valid data stops at zeros (no second walk).
"""

from __future__ import annotations

from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mqtool.formats import jafka as jf
from mqtool.formats import metaq as mq
from mqtool.formats import segment_names as segnames
from mqtool.store.legacy import Segment
from mqtool.store.model import legacy as lm


def _message(layout: str, i: int, size: int) -> bytes:
    payload = bytes((i * 17 + k) % 251 for k in range(size))
    return jf.encode_message(jf.Message(payload)) if layout == "jafka" else mq.encode_message(mq.make_message(1000 + i, payload, None))


@st.composite
def _segments(draw: st.DrawFn) -> tuple[str, bytes]:
    layout = draw(st.sampled_from(["jafka", "metaq"]))
    out = bytearray()
    for i in range(draw(st.integers(1, 12))):
        part = draw(st.sampled_from(["message", "message", "zeros", "flip", "torn"]))
        if part == "zeros":
            out += bytes(draw(st.sampled_from([20, 40, 60, 7, 33, 100])))
        elif part == "flip":
            message = bytearray(_message(layout, i, draw(st.integers(1, 90))))
            message[draw(st.integers(0, len(message) - 1))] ^= 0x21
            out += message
        elif part == "torn":
            message = _message(layout, i, draw(st.integers(1, 90)))
            out += message[: draw(st.integers(1, len(message) - 1))]
        else:
            out += _message(layout, i, draw(st.integers(0, 300)))
    return layout, bytes(out)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(segment=_segments(), piece=st.sampled_from([64, 300, 1 << 30]))
def test_the_reading_tells_where_recovery_stops(tmp_path: Path, segment: tuple[str, bytes], piece: int) -> None:
    layout, data = segment
    name = segnames.jafka_file_name(0) if layout == "jafka" else segnames.metaq_file_name(0)
    path = tmp_path / name
    path.write_bytes(data)
    seg = Segment(path, 0, len(data), len(data))
    res = lm.read_segment(lm.SegmentTask(layout, str(path), 0, None, True, True, True, piece=piece))
    alone = lm.recovery_tail(layout, seg, piece=piece)
    from_reading = lm.tail_from_reading(layout, res, seg)
    if layout == "metaq" and res.end_kind == "zeros":
        assert from_reading is not None
    if from_reading is not None:
        assert from_reading == alone
