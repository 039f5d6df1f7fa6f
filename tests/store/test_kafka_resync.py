"""``store.kafka.resync``: the one rule by which a reading of a ``.log`` resumes after damage
(validate's segment walk, recover's count of what a cut drops).  Against the rule stated
position by position -- the first position at or after the start, before the limit, where an
entry of one of the magics starts whose size and CRC hold and whose offset continues ``after`` --
whatever the piece size and wherever garbage and zero runs lie."""

from __future__ import annotations

from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mqtool.errors import MqError
from mqtool.formats.kafka import record_batch as rb
from mqtool.formats.kafka.log import peek_entry
from mqtool.store import kafka as ks
from mqtool.store.files import ReadOnlyFile


def _batch(offset: int, n: int) -> bytes:
    records = [rb.Record(offset_delta=i, timestamp_delta=i, key=b"k", value=b"v" * (7 * i + 3)) for i in range(n)]
    return rb.encode_batch(rb.build_batch(records, base_offset=offset, base_timestamp=1_700_000_000_000))


def _rule(f: ReadOnlyFile, start: int, limit: int | None, magics: tuple[int, ...], after: int | None) -> int | None:
    end = f.size if limit is None else min(limit, f.size)
    for q in range(start, end):
        head = f.pread(q, 17)
        if len(head) < 17:
            return None
        offset, size, magic = peek_entry(head)
        if magic not in magics or size < 14 or q + 12 + size > f.size or (after is not None and offset <= after):
            continue
        try:
            ks.read_entry_at(f, q, mode="header")
        except MqError:
            continue
        return q
    return None


_DAMAGE = st.one_of(
    st.binary(min_size=1, max_size=300),
    st.integers(1, 400).map(bytes),  # a zero run
    st.tuples(st.integers(1, 200), st.binary(min_size=1, max_size=40)).map(lambda t: bytes(t[0]) + t[1]),
)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    counts=st.lists(st.integers(1, 4), min_size=1, max_size=6),
    damage=st.lists(st.tuples(st.integers(0, 6), _DAMAGE), max_size=3),
    start=st.integers(0, 1200),
    limit=st.one_of(st.none(), st.integers(0, 2000)),
    magics=st.sampled_from([(0, 1, 2), (2,), (0, 1)]),
    after=st.one_of(st.none(), st.integers(0, 12)),
    chunk=st.sampled_from([None, 17, 61, 200, 1000]),
    first=st.one_of(st.none(), st.integers(1, 700)),
)
def test_resync_is_the_rule_whatever_the_piece(tmp_path, counts, damage, start, limit, magics, after, chunk, first) -> None:
    parts, offset = [], 0
    for n in counts:
        parts.append(_batch(offset, n))
        offset += n
    for where, junk in sorted(damage, reverse=True):
        parts.insert(min(where, len(parts)), junk)
    path = Path(tmp_path) / "00000000000000000000.log"
    path.write_bytes(b"".join(parts))
    with ReadOnlyFile(path) as f:
        start = min(start, f.size)
        expected = _rule(f, start, limit, magics, after)
        assert ks.resync(f, start, limit=limit, magics=magics, after=after, chunk=chunk, first=first) == expected


def test_resync_skips_a_zero_run_in_one_read(tmp_path) -> None:
    """A pre-allocated zero tail before the next entry is passed over at memory speed: the file is
    read about once, not once per candidate."""
    from mqtool.store.files import count_reads

    path = tmp_path / "00000000000000000000.log"
    tail = _batch(5, 3)
    path.write_bytes(_batch(0, 5) + bytes(3 << 20) + tail)
    with ReadOnlyFile(path) as f, count_reads() as reads:
        at = ks.resync(f, 1, after=4)
    assert at == path.stat().st_size - len(tail)
    assert sum(reads.values()) <= path.stat().st_size + 4096, dict(reads)
