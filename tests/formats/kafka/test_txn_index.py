""".txnindex codec: spec vector, walker ends, sanity checks, round trips, hostile bytes."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mqtool.errors import CorruptDataError, MqError, TruncatedDataError
from mqtool.formats.kafka import txn_index as tx
from tests.conftest import real_path

SPEC_ENTRY = bytes.fromhex(
    "0000" "00000000000003e8" "000000000000000a" "0000000000000014" "000000000000000a"
)


def test_spec_vector():
    txn = tx.AbortedTxn(producer_id=1000, first_offset=10, last_offset=20, last_stable_offset=10)
    assert len(SPEC_ENTRY) == tx.ENTRY_SIZE == 34
    assert tx.encode_aborted_txn(txn) == SPEC_ENTRY
    assert tx.decode_aborted_txn(SPEC_ENTRY) == txn


def test_field_positions_follow_upstream():
    assert (tx.PRODUCER_ID_POSITION, tx.FIRST_OFFSET_POSITION, tx.LAST_OFFSET_POSITION, tx.LAST_STABLE_OFFSET_POSITION) == (
        2,
        10,
        18,
        26,
    )


def test_unknown_version_is_corrupt():
    for version in (1, -1, 0x0100):
        raw = struct.pack(">h", version) + SPEC_ENTRY[2:]
        with pytest.raises(CorruptDataError) as info:
            tx.decode_aborted_txn(b"\xff" * 34 + raw, 34)
        assert info.value.position == 34


def test_short_entry():
    with pytest.raises(TruncatedDataError):
        tx.decode_aborted_txn(SPEC_ENTRY[:33])


def _entries(n: int) -> list[tx.AbortedTxn]:
    return [tx.AbortedTxn(7 + i, 100 * i, 100 * i + 50, 100 * i) for i in range(n)]


def test_walker_ends():
    data = tx.encode_txn_index(_entries(3))
    contents = tx.decode_txn_index(data)
    assert contents.entries == tuple(_entries(3))
    assert contents.end == tx.DataEnd("eof", 102)
    # a trailing fragment is ignored by the broker: partial end
    assert tx.decode_txn_index(data + SPEC_ENTRY[:10]).end == tx.DataEnd("partial", 102, 10)
    # zero tail (file system extended the file after a crash)
    assert tx.decode_txn_index(data + bytes(70)).end == tx.DataEnd("zeros", 102, 70)
    assert tx.decode_txn_index(data + bytes(5)).end == tx.DataEnd("zeros", 102, 5)
    assert tx.decode_txn_index(b"") == tx.TxnIndexContents((), tx.DataEnd("eof", 0))


def test_walker_sanity_checks():
    data = tx.encode_txn_index(_entries(3))
    with pytest.raises(CorruptDataError) as info:
        tx.decode_txn_index(data, base_offset=60)
    assert info.value.position == tx.LAST_OFFSET_POSITION  # first entry's lastOffset 50 < 60
    assert len(tx.decode_txn_index(data, base_offset=50).entries) == 3
    unordered = tx.encode_aborted_txn(_entries(2)[1]) + tx.encode_aborted_txn(_entries(1)[0])
    walker = tx.TxnIndexWalker(unordered)
    with pytest.raises(CorruptDataError) as info:
        list(walker)
    assert info.value.position == 34 + tx.LAST_OFFSET_POSITION
    assert walker.count == 1


def test_encoder_refuses_unordered_and_out_of_range():
    with pytest.raises(ValueError):
        tx.encode_txn_index([_entries(2)[1], _entries(1)[0]])
    with pytest.raises(ValueError):
        tx.encode_aborted_txn(tx.AbortedTxn(2**63, 0, 1, 0))


def test_collect_aborted_txns():
    entries = [tx.AbortedTxn(1, 0, 10, 0), tx.AbortedTxn(2, 5, 30, 11), tx.AbortedTxn(3, 40, 50, 60)]
    result = tx.collect_aborted_txns(entries, fetch_offset=12, upper_bound_offset=45)
    assert result.aborted_transactions == (entries[1], entries[2])
    assert result.is_complete
    result = tx.collect_aborted_txns(entries[:2], fetch_offset=0, upper_bound_offset=100)
    assert result == tx.TxnIndexSearchResult(tuple(entries[:2]), False)


INT64 = st.integers(-(2**63), 2**63 - 1)


@st.composite
def txn_lists(draw):
    lasts = sorted(draw(st.sets(st.integers(1, 2**63 - 1), max_size=20)))
    return [tx.AbortedTxn(draw(INT64), draw(INT64), last, draw(INT64)) for last in lasts]


@given(txn_lists())
def test_round_trip(entries):
    data = tx.encode_txn_index(entries)
    assert tx.decode_txn_index(data).entries == tuple(entries)
    for txn in entries:
        assert tx.decode_aborted_txn(tx.encode_aborted_txn(txn)) == txn


@given(st.binary(max_size=300), st.integers(0, 100), st.one_of(st.none(), st.integers(0, 2**40)))
def test_arbitrary_bytes_raise_only_mq_errors(blob, start, base):
    walker = tx.TxnIndexWalker(blob, min(start, len(blob)), base_offset=base)
    try:
        for _ in walker:
            pass
        assert walker.end is not None
    except MqError:
        pass
    try:
        tx.decode_aborted_txn(blob)
    except MqError:
        pass


def test_every_real_txnindex_decodes():
    # INDEX.md: no real transactional segment was found; any that gets added is decoded here.
    root = real_path("kafka")
    for path in root.rglob("*.txnindex"):
        tx.decode_txn_index(path.read_bytes())
