"""stats of a Jafka or MetaQ store: every message of every live segment by partition, from the
legacy store model's one reading (``store.model.legacy``); compressed Jafka wrappers are opened,
MetaQ attributes count as tags; the messages carry no time, so times and rates come from the
segments' modification times (each segment's bytes dated at its mtime).
"""

from __future__ import annotations

import functools
import os
from pathlib import Path

from mqtool.errors import MqError
from mqtool.findings import Finding
from mqtool.ops.stats.aggregates import LargeMessage, Progress, StatsOptions, StoreStats, Top, UnitStats, state_findings


def legacy_stats(path: Path, stats: StoreStats, top: Top, options: StatsOptions, progress: Progress, layout: str) -> Path:
    """Every message of every live segment, from the store model's one reading
    (``store.model.legacy.read_store``: each log byte read once); a message whose frame holds but
    whose checksum fails is counted, and counted apart in ``damaged_messages``; the gaps and
    damage the reading finds are stated as validate states them (``ops.log_findings.select``)."""
    from mqtool.formats import jafka as jf
    from mqtool.formats import metaq as mq
    from mqtool.store import jafka as sj
    from mqtool.store import metaq as sm
    from mqtool.store.model import legacy as lm

    if layout == "jafka":
        data = sj.open_jafka(path)
        snappy = jf.CODEC_SNAPPY in sj.dialect_of(data).codecs
    else:
        data = sm.open_metaq(path)
        snappy = False
    stats.time_source = "segment modification times (the messages carry no time)"
    own: list[tuple[str, int | None, str]] = []  # the rows' own problems: (path, position, text)
    found: list[Finding] = []
    reading = lm.plan_reading(data, layout)
    found.extend(reading.files)
    units: dict[int, UnitStats] = {}
    for task, part in reading.tasks:
        if task.archive is not None:
            continue  # live segments only
        unit = units.get(id(part))
        if unit is None:
            unit = units[id(part)] = UnitStats(part.topic, part.partition, part.name)
        seg_path = Path(task.path)
        mtime_ms = int(os.stat(seg_path).st_mtime * 1000)
        seg_bytes = 0
        scan = lm.SegmentScan(task)
        for scanned in scan:
            pos, message, damaged = scanned.position, scanned.message, scanned.code is not None
            offset = task.start_offset + pos
            if layout == "jafka":
                assert isinstance(message, jf.Message)  # the scan of a Jafka segment
                size_on_disk = message.serialized_size
                unit.bytes += size_on_disk
                seg_bytes += size_on_disk
                if message.compressed:
                    try:
                        inner_messages = [m.message for m in jf.iter_wrapper(message, snappy=snappy) if not m.message.compressed]
                    except MqError as exc:
                        if not damaged:
                            located = exc.at(seg_path, pos)
                            own.append((str(located.path), located.position, str(located)))
                        inner_messages = []  # a wrapper that does not inflate: its finding says so
                else:
                    inner_messages = [message]
                for inner in inner_messages:
                    if damaged:
                        stats.damaged_messages += 1
                    size = len(inner.payload)
                    unit.add(size, None)
                    top.offer(size, functools.partial(LargeMessage, size, unit.name, part.topic, part.partition, offset, None))
            else:
                if damaged:
                    stats.damaged_messages += 1
                assert isinstance(message, mq.Message)  # the scan of a MetaQ segment
                unit.bytes += message.size
                seg_bytes += message.size
                # a malformed attribute block leaves the whole data as payload (its METAQ-ATTRIBUTE finding says so)
                raw_attribute, payload, _ = sm.split_message(message)
                size = len(payload)
                attribute = None if raw_attribute is None else raw_attribute.decode("utf-8", "replace")
                unit.add(size, None, (attribute,) if attribute is not None else ())
                top.offer(size, functools.partial(LargeMessage, size, unit.name, part.topic, part.partition, offset, None))
        found.extend(scan.result.findings)
        if scan.reader_error is not None:
            located = scan.reader_error
            own.append((str(located.path or seg_path), located.position, str(located)))
        progress(scan.result.size)
        unit.segment_times.append((seg_bytes, mtime_ms))
        stats.recent.add(mtime_ms, seg_bytes)
    found.extend(reading.closing)
    for part in data.partitions:
        unit = units.get(id(part)) or UnitStats(part.topic, part.partition, part.name)
        if unit.segment_times:
            times = [t for _, t in unit.segment_times]
            unit.first_timestamp, unit.last_timestamp = min(times), max(times)
        stats.units.append(unit)
    state_findings(stats, path, layout, own, options, found)
    return Path(data.root)
