"""The ``--deep`` checks of a Kafka segment: every record of a batch, as the store model's walk
reads the batch (``kafka_segment``'s checker) or, for a big segment read over several processes,
over one range of it (:func:`check_range`, a ``DeepRangeTask``).

A v2 batch's records are decompressed (``DefaultRecordBatch``: gzip, snappy, lz4, zstd, within
``max_decompressed_size``) and walked (``record_scan``, the compiled walk when asked, else the
records decoded one by one): a records count that is not negative, record offset deltas that
increase up to ``lastOffsetDelta``, a ``maxTimestamp`` equal to the largest record timestamp
(``CREATE_TIME`` batches), control records that decode.  A v0/v1 wrapper's inner messages are
decompressed (``AbstractLegacyRecordBatch``): increasing inner offsets, the last the wrapper's
own, after the entry before it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

from mqtool.errors import MqError, UnsupportedFormatError
from mqtool.findings import Finding
from mqtool.findings.code_ids import (
    KAFKA_LOG_COMPRESSION,
    KAFKA_LOG_RECORD_OFFSET,
    KAFKA_LOG_RECORDS,
    KAFKA_LOG_TIMESTAMP,
    KAFKA_LOG_UNSUPPORTED,
)
from mqtool.formats.kafka import compression, record_scan
from mqtool.formats.kafka import legacy as klegacy
from mqtool.formats.kafka import record_batch as rb
from mqtool.formats.kafka.log import decode_entry, records_of_message
from mqtool.store import kafka as ks
from mqtool.store.files import ReadOnlyFile

if TYPE_CHECKING:
    from mqtool.store.model.kafka_segment import DeepRangeTask, SegmentResult, SegmentTask

#: The smallest ``batchLength`` of a v2 batch (its header after the length field).
V2_MIN_LENGTH = rb.RECORD_BATCH_OVERHEAD - rb.LOG_OVERHEAD  # 49


class RecordChecks:
    """The record checks of one segment's batches (findings and the records counted on ``res``)."""

    def __init__(self, task: SegmentTask, res: SegmentResult) -> None:
        self.t = task
        self.res = res
        self.path = task.log
        self.base = task.base_offset

    def find(self, code: str, position: int | None, message: str, **kw: Any) -> None:
        self.res.findings.append(Finding(code, self.path, position, message, **kw))

    def v2(self, pos: int, buf: bytes, rel: int, size: int, attrs: int, lod: int, base_ts: int, max_ts: int, count: int) -> None:
        res = self.res
        if count < 0:
            self.find(KAFKA_LOG_RECORDS, pos + rb.RECORDS_COUNT_POSITION, f"expected a records count >= 0, found {count}")
            return
        if count == 0:
            return
        codec = attrs & rb.COMPRESSION_CODEC_MASK
        start, stop = rel + rb.RECORDS_POSITION, rel + size
        data = buf
        if codec != compression.NONE:
            try:
                compression.check_codec(codec)
                data = compression.decompress(codec, memoryview(buf)[start:stop], magic=2, max_size=self.t.max_decompressed_size)
            except UnsupportedFormatError as exc:
                self.find(KAFKA_LOG_UNSUPPORTED, pos, f"records not checked: {exc.reason}")
                return
            except MqError as exc:
                self.find(
                    KAFKA_LOG_COMPRESSION,
                    pos + rb.RECORDS_POSITION + (exc.position or 0),
                    f"{compression.CODEC_NAMES.get(codec, codec)} records of the batch at {pos} do not decompress: {exc.reason}",
                )
                return
            start, stop = 0, len(data)
        control = attrs & rb.CONTROL_FLAG_MASK
        try:
            if control:
                raise record_scan.RecordScanUnsure
            first, last, max_delta, increasing = record_scan.scan_records(data, start, stop, count, compiled=self.t.compiled_walk)
        except record_scan.RecordScanUnsure:
            try:
                records = list(rb.iter_records(memoryview(data)[start:stop], count, 0))
                if control:
                    for r in records:
                        rb.decode_control_record(r)
            except MqError as exc:
                if codec:
                    at = f"at byte {exc.position} of the decompressed records: " if exc.position is not None else ""
                    self.find(KAFKA_LOG_RECORDS, pos, f"batch at {pos} ({count} records): {at}{exc.reason}")
                else:
                    where = pos + rb.RECORDS_POSITION + (exc.position or 0)
                    self.find(KAFKA_LOG_RECORDS, where, f"batch at {pos} ({count} records): {exc.reason}")
                return
            deltas = [r.offset_delta for r in records]
            first, last = deltas[0], deltas[-1]
            increasing = all(b > a for a, b in zip(deltas, deltas[1:])) and first >= 0
            max_delta = max(r.timestamp_delta for r in records)
        res.records += count
        if not increasing:
            self.find(KAFKA_LOG_RECORD_OFFSET, pos, f"batch at {pos}: expected record offset deltas >= 0 and increasing, found them out of order")
        elif last > lod:
            self.find(
                KAFKA_LOG_RECORD_OFFSET,
                pos + 23,
                f"batch at {pos}: expected lastOffsetDelta >= the last record's offset delta {last}, found {lod}",
            )
        if not attrs & rb.TIMESTAMP_TYPE_MASK and not control and base_ts + max_delta != max_ts:
            self.find(
                KAFKA_LOG_TIMESTAMP,
                pos + 35,
                f"batch at {pos}: expected maxTimestamp {base_ts + max_delta} (its largest record timestamp), found {max_ts}",
            )

    def legacy(self, pos: int, message: klegacy.LegacyRecord, prior: int | None, last: int) -> None:
        if not message.is_compressed:
            self.res.records += 1
            return
        try:
            inner = records_of_message(message, 0, max_size=self.t.max_decompressed_size)
        except UnsupportedFormatError as exc:
            self.find(KAFKA_LOG_UNSUPPORTED, pos, f"wrapper not checked: {exc.reason}")
            return
        except MqError as exc:
            code = KAFKA_LOG_COMPRESSION if exc.kind == "compression" else KAFKA_LOG_RECORDS
            self.find(code, pos, f"wrapper at {pos} (offset {last}): {exc.reason}")
            return
        self.res.records += len(inner)
        offsets = [r.offset for r in inner]
        if any(b <= a for a, b in zip(offsets, offsets[1:])):
            self.find(KAFKA_LOG_RECORD_OFFSET, pos, f"wrapper at {pos}: expected increasing inner offsets, found {offsets[:8]}")
        elif offsets[-1] != last:
            self.find(KAFKA_LOG_RECORD_OFFSET, pos, f"wrapper at {pos}: expected the wrapper offset to be its last inner offset {offsets[-1]}, found {last}")
        elif prior is not None and offsets[0] <= prior:
            self.find(KAFKA_LOG_RECORD_OFFSET, pos, f"wrapper at {pos}: expected inner offsets after {prior}, found {offsets[0]}")
        elif prior is None and self.t.named and offsets[0] < self.base:
            self.find(KAFKA_LOG_RECORD_OFFSET, pos, f"wrapper at {pos}: expected inner offsets >= the segment's base offset {self.base}, found {offsets[0]}")


def check_range(task: DeepRangeTask, seg: SegmentTask, f: ReadOnlyFile, res: SegmentResult, chunk: int) -> None:
    """The ``--deep`` checks of the entries starting in ``[task.start, task.stop)`` of ``f``, read
    ``chunk`` bytes at a time (``seg``: the segment's task, for how records are read).  The
    segment's own task does every other check: a batch whose header or CRC does not read is left
    to it."""
    checks = RecordChecks(seg, res)
    prev_last = task.prior
    walk = ks.LogFileWalk(f, task.start, mode="framing", limit=task.stop, chunk=chunk)
    for pos, entry in walk:
        buf, rel = walk.buffer, pos - walk.buffer_start
        prior = prev_last
        if entry.magic == 2:
            size = entry.size
            if size - 12 < V2_MIN_LENGTH:
                continue
            h = rb.peek_v2_header(buf, rel)
            if not rb.crc_matches(buf, rel, size, h.crc):
                continue  # reported by the segment's own task
            base, lod = h.base_offset, h.last_offset_delta
            checks.v2(pos, buf, rel, size, h.attributes, lod, h.base_timestamp, h.max_timestamp, h.records_count)
            last = base + lod
        else:
            try:
                # a v0/v1 entry's header is its shallow message
                message = cast(klegacy.LegacyRecord, decode_entry(buf, rel, mode="header").header)
            except MqError:
                continue
            last = message.offset
            checks.legacy(pos, message, prior, last)
        if prior is None or last > prior:
            prev_last = last
