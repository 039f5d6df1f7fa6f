"""The ``kafka_log`` source: Kafka records of every magic (v0/v1 messages, v2 batches), one row each.

A segment's byte range is read by the store model's range reading
(``store.model.framed.read_range``) under ``KAFKA_FRAMING``: the ``formats.kafka.log.LogWalker``
over each piece, a sync point where an entry decodes with a good
CRC (upstream ``FileRecords``/``LogSegment.recover`` read a log as a chain of entries: offset, size,
then the batch or message), the store's rules for a broken entry's code
(``store.kafka.entry_error_code``), a frame that holds around a failed CRC
(``store.kafka.framed_entry``) and a cut last entry that cannot be a torn write
(``store.kafka.not_a_torn_write``).  Rows carry ``dump kafka-log --records-only``'s names.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator

from mqtool.errors import MqError
from mqtool.findings.code_ids import KAFKA_LOG_GARBAGE
from mqtool.formats import segment_names as segnames
from mqtool.formats.kafka import record_batch as krb
from mqtool.formats.kafka.log import (
    HEADER_SIZE_UP_TO_MAGIC,
    LogEntry,
    LogWalker,
    decode_entry,
    peek_entry,
)
from mqtool.pipeline.sources.common import FilePart, ReadOptions
from mqtool.store import kafka as kstore
from mqtool.store.files import Readable
from mqtool.store.model.framed import Adapt, RangeFraming
from mqtool.store.rocketmq import MAX_RECORD_SIZE


def kafka_base(name: str) -> int | None:
    """The base offset of a ``.log`` segment named so (None: another file)."""
    try:
        parsed = segnames.parse_kafka_file_name(name)
    except MqError:
        return None
    return parsed.base_offset if parsed.kind == "log" and parsed.operation is None else None


def _kafka_decodes(f: Readable, pos: int) -> int | None:
    head = f.pread(pos, 17)
    if len(head) < 17:
        return None
    _offset, size, magic = peek_entry(head, 0)
    if not 0 <= magic <= 2 or size < (49 if magic == 2 else 14) or 12 + size > min(f.size - pos, MAX_RECORD_SIZE):
        return None
    try:
        decode_entry(f.pread(pos, 12 + size), 0, mode="header", check_crc=True)
    except MqError:
        return None
    return 12 + size


def _kafka_candidates(chunk: bytes) -> Iterator[int]:
    unpack = struct.Struct(">i").unpack_from
    for i in range(max(0, len(chunk) - 16)):
        if chunk[i + 16] <= 2 and unpack(chunk, i + 8)[0] >= 14:
            yield i


def _kafka_framed(data: bytes, rel: int, exc: MqError) -> tuple[object, int] | None:
    entry = kstore.framed_entry(data, rel, exc, "full")
    return (entry, entry.size) if entry is not None else None


def _kafka_item(entry: object) -> tuple[int, object, int]:
    assert isinstance(entry, LogEntry)
    return entry.position, entry, entry.size


def _kafka_torn_check(head: bytes, length: int, last: object) -> MqError | None:
    """Why an entry cut by the end of the segment cannot be a torn write (the store's rule)."""
    return kstore.not_a_torn_write(head, length, last.last_offset if isinstance(last, LogEntry) else None)


KAFKA_FRAMING = RangeFraming(
    walker=lambda data: Adapt(LogWalker(data, 0, mode="full"), _kafka_item),
    framed=_kafka_framed,
    decodes=_kafka_decodes,
    candidates=_kafka_candidates,
    classify=kstore.entry_error_code,
    region_code=KAFKA_LOG_GARBAGE,
    max_record=MAX_RECORD_SIZE,
    torn_check=_kafka_torn_check,
    judged=HEADER_SIZE_UP_TO_MAGIC,
)


def _text(value: str) -> str:
    """A header key as valid UTF-8 (undecodable bytes replaced)."""
    return value.encode("utf-8", "surrogateescape").decode("utf-8", "replace")


def kafka_rows(part: FilePart, pos: int, entry: object, opts: ReadOptions) -> Iterator[dict[str, object]]:
    """Record rows with ``dump kafka-log --records-only``'s names (``batch_position``, ``payload``)."""
    assert isinstance(entry, LogEntry)
    header = entry.header
    batch = header if isinstance(header, krb.BatchHeader) else None
    for r in entry.records or ():
        yield {
            "source": part.source,
            "file": part.path,
            "batch_position": pos,
            "topic": part.meta.get("topic"),
            "partition": part.meta.get("partition"),
            "magic": entry.magic,
            "base_offset": batch.base_offset if batch is not None else entry.offset,
            "last_offset": entry.last_offset,
            "offset": r.offset,
            "timestamp": r.timestamp,
            "timestamp_type": r.timestamp_type,
            "key_size": len(r.key) if r.key is not None else -1,
            "key": r.key,
            "value_size": len(r.value) if r.value is not None else -1,
            "payload": r.value if opts.with_body else None,
            "headers": [{"key": _text(h.key), "value": h.value} for h in r.headers],
            "sequence": r.sequence,
            "is_control": r.is_control,
            "is_transactional": batch.is_transactional if batch is not None else False,
            "producer_id": batch.producer_id if batch is not None else None,
            "producer_epoch": batch.producer_epoch if batch is not None else None,
            "compression_type": header.compression_type if header is not None else None,
        }
