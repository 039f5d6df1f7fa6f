"""The data sources' codes for broken Kafka, Jafka and MetaQ records come from the error's
``kind`` (``mqtool.errors.KINDS``): each kind of damage gets the code validate gives it.  No
SparkSession: the store model's range reading is called directly on one damaged segment."""

from __future__ import annotations

import shutil
import struct
from pathlib import Path
from typing import Callable

import pytest

from mqtool.formats.checksums import crc32c
from mqtool.formats.kafka import record_batch as rb
from tests.conftest import FIXTURES

pytest.importorskip("pyspark")


def _patch(raw: bytes, at: int, data: bytes) -> bytes:
    return raw[:at] + data + raw[at + len(data) :]


def _flip(raw: bytes, at: int) -> bytes:
    return _patch(raw, at, bytes([raw[at] ^ 0xFF]))


def _walk_codes(framing, path: Path) -> list[str]:
    from mqtool.store.files import ReadOnlyFile
    from mqtool.store.model.framed import RangeProblem, read_range

    with ReadOnlyFile(path) as f:
        return [event.code for event in read_range(framing, f, 0, f.size) if isinstance(event, RangeProblem)]


def _validate_codes(validate, directory: Path) -> set[str]:
    from mqtool.ops.validate import ValidateOptions

    return {f.code for f in validate(directory, ValidateOptions()).findings if f.level.name in ("error", "warning")}


# --- Kafka -----------------------------------------------------------------------------------------

KAFKA_LOG = FIXTURES / "kafka-logs" / "orders-0" / "00000000000000000000.log"


def _kafka_entry(raw: bytes, number: int) -> int:
    from mqtool.formats.kafka.log import LogWalker

    return [e.position for e in LogWalker(raw, 0, mode="header")][number]


def _recrc(raw: bytes, at: int) -> bytes:
    size = 12 + struct.unpack_from(">i", raw, at + 8)[0]
    crc = crc32c(raw[at + rb.ATTRIBUTES_POSITION : at + size])
    return _patch(raw, at + rb.CRC_POSITION, struct.pack(">I", crc))


def _codec(raw: bytes, at: int) -> bytes:
    attrs = struct.unpack_from(">h", raw, at + rb.ATTRIBUTES_POSITION)[0]
    return _recrc(_patch(raw, at + rb.ATTRIBUTES_POSITION, struct.pack(">h", (attrs & ~7) | 5)), at)


def _gzip_without_magic(raw: bytes, at: int) -> bytes:
    """A batch that says gzip (codec 1) over records that are not a gzip stream."""
    attrs = struct.unpack_from(">h", raw, at + rb.ATTRIBUTES_POSITION)[0]
    return _recrc(_patch(raw, at + rb.ATTRIBUTES_POSITION, struct.pack(">h", (attrs & ~7) | 1)), at)


KAFKA_DAMAGE: dict[str, tuple[Callable[[bytes, int], bytes], str]] = {
    "magic": (lambda raw, at: _patch(raw, at + 16, bytes([7])), "KAFKA-LOG-MAGIC"),
    "crc": (lambda raw, at: _flip(raw, at + rb.RECORDS_POSITION + 3), "KAFKA-LOG-CRC"),
    "entry size": (lambda raw, at: _patch(raw, at + 8, struct.pack(">i", 5)), "KAFKA-LOG-SIZE"),
    "unknown codec": (_codec, "KAFKA-LOG-COMPRESSION"),
    "not a gzip stream": (_gzip_without_magic, "KAFKA-LOG-COMPRESSION"),
}


@pytest.mark.parametrize("damage", sorted(KAFKA_DAMAGE))
def test_kafka_codes_from_kinds(tmp_path, damage):
    from mqtool.ops.validate.kafka import validate_kafka
    from mqtool.pipeline.sources import KAFKA_FRAMING

    hurt, code = KAFKA_DAMAGE[damage]
    raw = KAFKA_LOG.read_bytes()
    part = tmp_path / "orders-0"
    part.mkdir()
    (part / KAFKA_LOG.name).write_bytes(hurt(raw, _kafka_entry(raw, 3)))
    assert _walk_codes(KAFKA_FRAMING, part / KAFKA_LOG.name)[0] == code
    assert code in _validate_codes(lambda d, o: validate_kafka(d, o.__class__(deep=True)), part)


# --- Jafka and MetaQ -------------------------------------------------------------------------------


def _copy_part(src: Path, tmp_path: Path) -> Path:
    dest = tmp_path / src.parent.name
    shutil.copytree(src.parent, dest)
    return dest / src.name


JAFKA_SEGMENT = FIXTURES / "jafka-data" / "orders-0" / "00000000000000000000.jafka"
JAFKA_DAMAGE: dict[str, tuple[Callable[[bytes, int], bytes], str]] = {
    "magic": (lambda raw, at: _patch(raw, at + 4, bytes([6])), "JAFKA-MAGIC"),
    "crc": (lambda raw, at: _flip(raw, at + 4 + 6 + 2), "JAFKA-CRC"),
    # a LENGTH below the magic-1 header: the length is what broke (was JAFKA-MAGIC, from the
    # words "magic 1 header" in the message; validate says JAFKA-SIZE)
    "length below the header": (lambda raw, at: _patch(raw, at, struct.pack(">i", 5)), "JAFKA-SIZE"),
}


@pytest.mark.parametrize("damage", sorted(JAFKA_DAMAGE))
def test_jafka_codes_from_kinds(tmp_path, damage):
    from mqtool.formats import jafka as jf
    from mqtool.ops.validate.legacy import validate_jafka
    from mqtool.pipeline.sources import JAFKA_FRAMING

    hurt, code = JAFKA_DAMAGE[damage]
    path = _copy_part(JAFKA_SEGMENT, tmp_path)
    raw = path.read_bytes()
    at = [p for p, _m in jf.MessageWalker(raw)][2]
    path.write_bytes(hurt(raw, at))
    assert _walk_codes(JAFKA_FRAMING, path)[0] == code
    assert code in _validate_codes(validate_jafka, path.parent)


METAQ_SEGMENT = FIXTURES / "metaq-data" / "trade-0" / "00000000000000001602.meta"
METAQ_DAMAGE: dict[str, tuple[Callable[[bytes, int], bytes], str]] = {
    "crc": (lambda raw, at: _flip(raw, at + 20 + 2), "METAQ-CRC"),
    "msgLen": (lambda raw, at: _patch(raw, at, struct.pack(">i", -5)), "METAQ-SIZE"),
}


@pytest.mark.parametrize("damage", sorted(METAQ_DAMAGE))
def test_metaq_codes_from_kinds(tmp_path, damage):
    from mqtool.formats import metaq as mq
    from mqtool.ops.validate.legacy import validate_metaq
    from mqtool.pipeline.sources import METAQ_FRAMING

    hurt, code = METAQ_DAMAGE[damage]
    path = _copy_part(METAQ_SEGMENT, tmp_path)
    raw = path.read_bytes()
    at = [p for p, _m in mq.MessageWalker(raw)][1]
    path.write_bytes(hurt(raw, at))
    assert _walk_codes(METAQ_FRAMING, path)[0] == code
    assert code in _validate_codes(validate_metaq, path.parent)
