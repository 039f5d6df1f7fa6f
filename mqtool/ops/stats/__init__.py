"""stats: per topic/queue (or partition) numbers of a store, in one streaming pass.

Every record is read once, in file order, in bounded chunks; what is kept per queue is a few
counters, the largest size, and two HyperLogLog sketches (TAGS and KEYS), so memory depends on
the number of queues, not on the number of messages:

* ``messages``, ``bytes`` (bytes of the records on disk), first/last store time (the smallest
  and largest timestamp met), write rate over that retained window, the largest message;
* distinct TAGS and KEYS estimated with HyperLogLog (Flajolet, Fusy, Gandouet, Meunier 2007;
  64-bit BLAKE2b hashes, 2**12 registers = 4 KiB per sketch, relative standard error
  1.04/sqrt(4096) = 1.6 %; up to 256 distinct values the hashes themselves are kept (2 KiB at
  most), as in HyperLogLog++'s sparse mode, so small counts are exact);
* the store-wide top-N largest messages (a bounded heap);
* disk usage: the store's files (apparent and allocated bytes) and the file system's, with a
  forecast: at the write rate of the last 24 h of data (the 24 h before the newest record, per
  minute), how long until the disk reaches the clean threshold -- RocketMQ's
  ``diskMaxUsedSpaceRatio`` 75 % (used ratio computed as the broker does), 100 % (full) for the
  other layouts, or ``threshold``.

What a layout offers: RocketMQ -- every CommitLog record by topic and queue id (transactional
PREPARED/ROLLBACK records included, as in the CommitLog); TAGS and KEYS properties; store
timestamps.  Kafka -- records by partition (control records not counted as messages; ``bytes``
are the batches' bytes); record keys; record timestamps (CreateTime or LogAppendTime).  Jafka
and MetaQ -- messages by partition (compressed Jafka wrappers opened); MetaQ attributes count as
tags; their messages carry no time, so times and rates come from segment modification times
(each segment's bytes dated at its mtime).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from mqtool.ops.clean import DiskProbe, statvfs_usage
from mqtool.ops.stats.aggregates import LargeMessage, LifetimeBytes, Progress, RecentBytes, StatsOptions, StoreStats, Top, UnitStats
from mqtool.ops.stats.hyperloglog import HyperLogLog

__all__ = [
    "HyperLogLog",
    "LargeMessage",
    "LifetimeBytes",
    "RecentBytes",
    "StatsOptions",
    "StoreStats",
    "UnitStats",
    "input_size",
    "store_stats",
    "tree_usage",
]


def tree_usage(root: Path) -> tuple[int, int]:
    """(apparent bytes, allocated bytes) of the regular files under ``root`` (symlinks not followed)."""
    apparent = allocated = 0
    if root.is_file():
        st = root.stat()
        return st.st_size, st.st_blocks * 512
    for dirpath, _dirnames, filenames in os.walk(root):
        for name in filenames:
            try:
                st = os.lstat(os.path.join(dirpath, name))
            except OSError:
                continue
            if not os.path.islink(os.path.join(dirpath, name)):
                apparent += st.st_size
                allocated += st.st_blocks * 512
    return apparent, allocated


def store_stats(
    path: str | Path,
    layout: str,
    options: StatsOptions | None = None,
    *,
    probe: DiskProbe = statvfs_usage,
    progress: Progress | None = None,
    validation: Any = None,
) -> StoreStats:
    """Stats of the store at ``path`` (``layout`` from ``store.layout.detect_layout``).
    ``validation``: RocketMQ, a validation of the store that counted its records
    (``ValidationReport.rows``, made with ``ValidateOptions.rows = rocketmq.record_count(options)``):
    its counts and findings are taken, the CommitLog is not read again."""
    path = Path(path)
    if options is None:
        options = StatsOptions()
    report: Progress = progress or (lambda n: None)
    stats = StoreStats(layout, str(path))
    top = Top(options.top)
    if layout == "rocketmq":
        from mqtool.ops.stats.rocketmq import rocketmq_stats

        counted = (validation.rows, validation.findings) if validation is not None and validation.options.rows is not None else None
        root = rocketmq_stats(path, stats, top, options, report, counted)
    elif layout == "kafka":
        from mqtool.ops.stats.kafka import kafka_stats

        root = kafka_stats(path, stats, top, options, report)
    elif layout in ("jafka", "metaq"):
        from mqtool.ops.stats.legacy import legacy_stats

        root = legacy_stats(path, stats, top, options, report, layout)
    else:
        from mqtool.errors import UnsupportedFormatError

        raise UnsupportedFormatError(f"`mqtool stats` does not handle the {layout} layout", expected="rocketmq, kafka, jafka or metaq", found=layout)
    stats.root = str(root)
    stats.largest = top.items()
    stats.store_bytes, stats.store_allocated_bytes = tree_usage(root)
    if options.threshold is not None:
        stats.threshold, stats.threshold_name = options.threshold, "threshold"
    try:
        stats.disk = probe(root if root.is_dir() else root.parent)
    except OSError as exc:
        stats.problems.append(f"{root}: disk usage unavailable: {exc.strerror or exc}")
    return stats


def input_size(path: str | Path, layout: str) -> int:
    """Bytes the stats pass will read (for a progress bar)."""
    root = Path(path)
    if layout == "rocketmq":
        from mqtool.store import rocketmq as rmq
        from mqtool.store.root_rocketmq import find_rocketmq_root

        found = find_rocketmq_root(root)
        return sum(s.size for s in rmq.open_store(found).commitlog) if found else 0
    return tree_usage(root)[0]
