"""The ``kafka_log`` source: Kafka records of every magic (v0/v1 messages, v2 batches), one row each.

A segment's byte range is read by the store model (``store.model.framed.read_range`` under
``store.model.kafka_reads.KAFKA_RANGE``: the entries of the range, the findings of its broken
entries, where its data ends); this module names a partition's ``.log`` segments and turns each
entry's records into rows with ``dump kafka-log --records-only``'s names.
"""

from __future__ import annotations

from collections.abc import Iterator

from mqtool.errors import MqError
from mqtool.formats import segment_names as segnames
from mqtool.formats.kafka import record_batch as krb
from mqtool.formats.kafka.log import LogEntry
from mqtool.pipeline.sources.common import FilePart, ReadOptions
from mqtool.store.model import kafka_reads as kr

#: the store model's range framing, read by ``pipeline.sources.framed.read_framed``
KAFKA_FRAMING = kr.KAFKA_RANGE


def kafka_base(name: str) -> int | None:
    """The base offset of a ``.log`` segment named so (None: another file)."""
    try:
        parsed = segnames.parse_kafka_file_name(name)
    except MqError:
        return None
    return parsed.base_offset if parsed.kind == "log" and parsed.operation is None else None


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
