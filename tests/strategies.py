"""Hypothesis strategies shared by the format, store and ops tests."""

from __future__ import annotations

from hypothesis import strategies as st

from mqtool.formats.rocketmq.commitlog import (
    MAGIC_V1,
    MAGIC_V2,
    SYSFLAG_BORNHOST_V6,
    SYSFLAG_STOREHOST_V6,
    HostAddress,
    MessageRecord,
)

INT32 = st.integers(-(2**31), 2**31 - 1)
INT64 = st.integers(-(2**63), 2**63 - 1)
UINT16 = st.integers(0, 2**16 - 1)

ipv4 = st.tuples(*[st.integers(0, 255)] * 4).map(lambda t: ".".join(map(str, t)))
ipv6 = st.ip_addresses(v=6).map(str)

prop_text = st.text(
    alphabet=st.characters(blacklist_characters="\x00\x01\x02", blacklist_categories=("Cs",)), min_size=1, max_size=12
)
properties = st.dictionaries(prop_text, prop_text, max_size=5)


@st.composite
def hosts(draw, v6: bool) -> HostAddress:
    return HostAddress(draw(ipv6 if v6 else ipv4), draw(INT32))


@st.composite
def message_records(draw, *, max_body: int = 256) -> MessageRecord:
    born_v6 = draw(st.booleans())
    store_v6 = draw(st.booleans())
    other_flags = draw(st.integers(0, 0x7FF)) & ~(SYSFLAG_BORNHOST_V6 | SYSFLAG_STOREHOST_V6)
    sys_flag = other_flags | (SYSFLAG_BORNHOST_V6 if born_v6 else 0) | (SYSFLAG_STOREHOST_V6 if store_v6 else 0)
    magic = draw(st.sampled_from([MAGIC_V1, MAGIC_V2]))
    topic_max = 127 if magic == MAGIC_V1 else 300
    topic = draw(st.text(st.characters(blacklist_categories=("Cs",)), max_size=40).filter(lambda t: len(t.encode()) <= topic_max))
    return MessageRecord(
        topic=topic,
        body=draw(st.binary(max_size=max_body)),
        properties=draw(properties),
        queue_id=draw(INT32),
        flag=draw(INT32),
        queue_offset=draw(INT64),
        physical_offset=draw(INT64),
        sys_flag=sys_flag,
        born_timestamp=draw(INT64),
        born_host=draw(hosts(born_v6)),
        store_timestamp=draw(INT64),
        store_host=draw(hosts(store_v6)),
        reconsume_times=draw(INT32),
        prepared_transaction_offset=draw(INT64),
        magic_code=magic,
    )
