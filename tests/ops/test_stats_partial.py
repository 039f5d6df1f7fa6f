"""``StatsPartial.merge``: the stats of several files counted apart and merged in file order are
the stats of one pass over all their messages (units, sketches, bytes by minute and by hour, the
largest messages with their ties), whatever the split -- what lets validate's workers count a
file each for ``report`` and ``stats`` (issue 27: one reading)."""

from __future__ import annotations

import functools

from hypothesis import example, given, settings
from hypothesis import strategies as st

from mqtool.ops.stats.aggregates import HOUR_MS, LargeMessage, LifetimeBytes, StatsPartial

#: (topic, queue, size, timestamp, tag, key)
message = st.tuples(
    st.sampled_from(["A", "B", "C"]),
    st.integers(0, 2),
    st.integers(1, 40),
    st.integers(0, 3 * 24 * HOUR_MS),
    st.sampled_from(["", "t1", "t2", "t3"]),
    st.text("abcdef", max_size=3),
)


def _count(part: StatsPartial, messages: list[tuple[str, int, int, int, str, str]], first: int) -> None:
    from mqtool.ops.stats.aggregates import UnitStats

    for n, (topic, queue, size, ts, tag, key) in enumerate(messages, first):
        unit = part.units.get((topic, queue))
        if unit is None:
            unit = part.units[(topic, queue)] = UnitStats(topic, queue, f"{topic}/{queue}")
        unit.bytes += size
        unit.add(size, ts, (tag,) if tag else (), (key,) if key else ())
        part.recent.add(ts, size)
        part.top.offer(size, functools.partial(LargeMessage, size, unit.name, topic, queue, n, ts))
        if size % 7 == 0:
            part.damaged_messages += 1


def _view(part: StatsPartial) -> tuple[object, ...]:
    units = {
        k: (u.messages, u.bytes, u.first_timestamp, u.last_timestamp, u.max_size, u.tags.estimate() if u.tags else 0, u.keys.estimate() if u.keys else 0)
        for k, u in part.units.items()
    }
    recent = part.recent
    return (units, recent.last_day(), recent.oldest, recent.newest, recent.lifetime.to_dict(), part.top.items(), part.damaged_messages)


@settings(max_examples=150, deadline=None)
@given(st.lists(message, max_size=120), st.lists(st.integers(0, 120), max_size=4), st.integers(0, 6))
def test_merged_partials_are_one_pass(messages, cuts, top_n) -> None:
    whole = StatsPartial(top_n)
    _count(whole, messages, 0)
    edges = sorted({0, len(messages), *(min(c, len(messages)) for c in cuts)})
    merged = StatsPartial(top_n)
    for a, b in zip(edges, edges[1:]):
        part = StatsPartial(top_n)
        _count(part, messages[a:b], a)
        merged.merge(part)
    assert _view(merged) == _view(whole)


@given(st.lists(st.integers(0, 1 << 40), max_size=300), st.integers(0, 300))
@example([i * 2 * HOUR_MS for i in range(9)], 0)  # buckets two apart: one widening merges none
def test_lifetime_buckets_merge_to_the_same_width(stamps, cut) -> None:
    """The narrowest width keeping at most MAX_BUCKETS buckets, whatever was added first."""
    LifetimeBytes.MAX_BUCKETS = 8  # small, so widening happens  (restored below)
    try:
        whole, left, right = LifetimeBytes(), LifetimeBytes(), LifetimeBytes()
        for ts in stamps:
            whole.add(ts, 1)
        for ts in stamps[:cut]:
            left.add(ts, 1)
        for ts in stamps[cut:]:
            right.add(ts, 1)
        left.merge(right)
        assert left.to_dict() == whole.to_dict()
    finally:
        LifetimeBytes.MAX_BUCKETS = 20_000
