"""stats of a Kafka log directory: every record of every ``.log`` segment by partition, from the
Kafka store model's one reading (``store.model.kafka.read_store_entries``); control records are
not counted as messages, ``bytes`` are the batches' bytes, times are the records' timestamps
(CreateTime or LogAppendTime), keys are the records' keys.
"""

from __future__ import annotations

import functools
from pathlib import Path

from mqtool.findings import Finding
from mqtool.ops.stats.aggregates import LargeMessage, Progress, StatsOptions, StoreStats, Top, UnitStats, state_findings
from mqtool.store.files import ReadOnlyFile


def kafka_stats(path: Path, stats: StoreStats, top: Top, options: StatsOptions, progress: Progress) -> Path:
    """Every record of every ``.log`` segment, from the store model's one reading
    (``store.model.kafka.read_store_entries``: each log byte read once); the records of a batch
    whose frame holds but whose CRC fails are counted, and counted apart in ``damaged_messages``
    (kafka-dump-log lists them too); a broken entry ends its segment's count, as a walk that stops
    there does.  The gaps and damage the reading finds are stated as validate states them."""
    from mqtool.errors import UnsupportedFormatError
    from mqtool.ops import log_findings
    from mqtool.store import kafka as kstore
    from mqtool.store.model import kafka as km

    store = kstore.open_kafka(path)
    stats.time_source = "record timestamps"
    own: list[tuple[str, int | None, str]] = []  # the walk's own problems: (path, position, text)
    found: list[Finding] = []
    units = {str(part.path): UnitStats(part.topic, part.partition, part.name) for part in store.partitions}
    segments = {str(seg.log): (part, seg is part.log_segments()[-1]) for part in store.partitions for seg in part.log_segments()}
    stopped: set[str] = set()
    undecoded: list[Finding] = []
    done = 0
    for item in km.read_store_entries(store, km.EntryDecode("full", options.check_crc), checks=log_findings.LOG):
        if isinstance(item, km.Placed):
            found.append(item.finding)
            continue
        if isinstance(item, km.PartitionRead):
            continue
        log = item.task.log
        if isinstance(item, km.SegmentRead):
            found.extend(item.result.findings)
            if log not in segments:
                continue
            if item.first_walk is None:  # the file could not be read: the error it raises, as a reader's own
                ReadOnlyFile(Path(log)).close()
            progress(item.result.size - done)
            done = 0
            stats.findings.extend(undecoded)  # a codec not installed: no damage, but not counted
            undecoded = []
            walk = item.first_walk
            if walk is not None and walk.error is None and not segments[log][1] and walk.end is not None:
                data_end = walk.end
                size = item.result.size
                if data_end.kind in ("partial", "zeros") and data_end.position < size:
                    # only the active segment can end in a torn write or pre-allocated zeros
                    what = "a cut entry" if data_end.kind == "partial" else "zero bytes"
                    own.append(
                        (
                            log,
                            data_end.position,
                            f"{log}:{data_end.position}: expected the segment to end after its last entry (a segment before the last is complete), "
                            f"found {what} ({size - data_end.position} bytes; recovery truncates here and deletes every later segment)",
                        )
                    )
            continue
        if log not in segments or item.resumed or log in stopped:
            continue
        part, _last = segments[log]
        entry, error = item.entry, item.error
        if entry is None:  # a broken entry: the count of this segment stops here
            stopped.add(log)
            if error is not None:
                own.append((str(error.path), error.position, str(error)))
            continue
        unit = units[str(part.path)]
        unit.bytes += entry.size
        share = entry.size
        damaged = error is not None and not isinstance(error, UnsupportedFormatError)  # kept despite its CRC
        if isinstance(error, UnsupportedFormatError):
            undecoded.append(Finding(kstore.entry_error_code(error), log, item.position, f"records not counted: {error.reason}"))
        for rec in entry.records or ():
            if rec.is_control:
                continue
            if damaged:
                stats.damaged_messages += 1
            size = len(rec.key or b"") + len(rec.value or b"") + sum(len(h.key) + len(h.value or b"") for h in rec.headers)
            keys = (rec.key,) if rec.key is not None else ()
            unit.add(size, rec.timestamp, (), keys)
            if rec.timestamp is not None and rec.timestamp >= 0:
                stats.recent.add(rec.timestamp, share)
                share = 0
            top.offer(
                size,
                functools.partial(LargeMessage, size, unit.name, part.topic, part.partition, rec.offset, rec.timestamp),
            )
        end = item.position + entry.size
        if end - done >= 1 << 20:
            progress(end - done)
            done = end
    stats.units.extend(units.values())
    state_findings(stats, path, "kafka", own, options, found)
    return Path(store.root)
