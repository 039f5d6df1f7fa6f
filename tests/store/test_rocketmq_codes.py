"""``broken_record_code``: a broken CommitLog record's code comes from its error's ``kind``, and
each kind of damage keeps the code it had when codes were read off the message text."""

from __future__ import annotations

import struct
from typing import Callable

import pytest

from mqtool.errors import MqError
from mqtool.formats.rocketmq.commitlog import RecordWalker, body_position, decode_message
from mqtool.store import rocketmq as rmq
from tests.conftest import FIXTURES

RAW = (FIXTURES / "rocketmq-store" / "commitlog" / "00000000000000000000").read_bytes()
POS, REC = list(RecordWalker(RAW))[3]
RECORD = RAW[POS : POS + REC.total_size]
BODY = body_position(REC.sys_flag)
TOPIC = BODY + len(REC.body) + 1  # magic v1: a 1-byte TOPICLEN


def _patch(at: int, data: bytes) -> bytes:
    return RECORD[:at] + data + RECORD[at + len(data) :]


DAMAGE: dict[str, tuple[Callable[[], bytes], str]] = {
    "magic": (lambda: _patch(4, b"\x12\x34\x56\x78"), "RMQ-CL-MAGIC"),
    "TOTALSIZE below the minimum": (lambda: _patch(0, struct.pack(">i", 20)), "RMQ-CL-SIZE"),
    "negative BODYLEN": (lambda: _patch(BODY - 4, struct.pack(">i", -1)), "RMQ-CL-SIZE"),
    "TOTALSIZE not its fields' sum": (lambda: _patch(0, struct.pack(">i", REC.total_size + 1)) + b"\x02", "RMQ-CL-SIZE"),
    "body byte": (lambda: _patch(BODY, bytes([RECORD[BODY] ^ 0xFF])), "RMQ-CL-BODY-CRC"),
    "BODYLEN past the record": (lambda: _patch(BODY - 4, struct.pack(">i", REC.total_size)), "RMQ-CL-TRUNCATED"),
    "topic not UTF-8": (lambda: _patch(TOPIC, b"\xff"), "RMQ-CL-ENCODING"),
}


@pytest.mark.parametrize("damage", sorted(DAMAGE))
def test_each_damage_keeps_its_code(damage):
    hurt, code = DAMAGE[damage]
    with pytest.raises(MqError) as info:
        decode_message(hurt(), 0)
    assert rmq.broken_record_code(info.value) == code
    assert rmq.broken_record_code(info.value.at("commitlog/x", 4096)) == code  # kept when located


def test_the_code_does_not_read_the_words():
    from mqtool.errors import CorruptDataError

    assert rmq.broken_record_code(CorruptDataError("magic UTF-8", expected="magic", found="UTF-8")) == "RMQ-CL-SIZE"
    assert rmq.broken_record_code(CorruptDataError(expected="TOTALSIZE", found="1", kind="magic")) == "RMQ-CL-MAGIC"
