"""``mqtool lag``: how far each consumer group is behind, offline, one module per layout with
consumer offsets on disk (``rocketmq``: ``config/consumerOffset.json`` against the ConsumeQueues,
as ``mqadmin consumerProgress`` shows it; ``kafka``: ``__consumer_offsets`` against the
partitions' log end offsets, as ``kafka-consumer-groups --describe`` shows it).

A row per group, topic and queue (partition): the committed offset (the next message the group
reads), the queue's first and next offsets on disk, the lag in messages (``log end - committed``,
never negative: a committed offset ahead of the log is a finding, not a negative lag), how many
of those are gone (committed below the first offset on disk: expired or deleted unconsumed),
the bytes of the unconsumed messages still on disk and the store time of the oldest of them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mqtool.findings import Finding
from mqtool.layouts import Layout, for_layout


@dataclass(frozen=True)
class LagRow:
    group: str
    topic: str
    queue: int  # RocketMQ queue id, Kafka partition
    committed_offset: int
    log_start_offset: int | None  # None: the queue / partition is not in the store
    log_end_offset: int | None
    lag_messages: int | None
    expired_messages: int  # committed below the first offset on disk: gone unconsumed
    lag_bytes: int | None
    oldest_unconsumed_timestamp: int | None  # ms since the epoch (store / record timestamp)
    note: str | None = None


@dataclass
class LagReport:
    layout: str
    root: str  # the store root (RocketMQ) or the path given (Kafka: a log dir)
    #: where the committed offsets were read (consumerOffset.json, the __consumer_offsets dir)
    offsets_from: str | None
    rows: list[LagRow] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)

    @property
    def queue_key(self) -> str:
        return "partition" if self.layout == Layout.KAFKA.value else "queue_id"

    def totals(self) -> list[dict[str, Any]]:
        """Per group and topic: the summed lag in messages and bytes of the queues whose lag is
        known, how many queues it is unknown for (``unknown_queues``: not in the store), the
        oldest unconsumed time.  An unknown lag is never counted as 0: with no queue's lag known,
        ``lag_messages`` and ``lag_bytes`` are None."""
        out: dict[tuple[str, str], dict[str, Any]] = {}
        for r in self.rows:
            t = out.setdefault(
                (r.group, r.topic),
                {
                    "group": r.group,
                    "topic": r.topic,
                    "lag_messages": None,
                    "unknown_queues": 0,
                    "expired_messages": 0,
                    "lag_bytes": None,
                    "oldest_unconsumed_timestamp": None,
                },
            )
            if r.lag_messages is None:
                t["unknown_queues"] += 1
            else:
                t["lag_messages"] = (t["lag_messages"] or 0) + r.lag_messages
            t["expired_messages"] += r.expired_messages
            if r.lag_bytes is not None:
                t["lag_bytes"] = (t["lag_bytes"] or 0) + r.lag_bytes
            if r.oldest_unconsumed_timestamp is not None:
                old = t["oldest_unconsumed_timestamp"]
                t["oldest_unconsumed_timestamp"] = r.oldest_unconsumed_timestamp if old is None else min(old, r.oldest_unconsumed_timestamp)
        return list(out.values())

    def row_dict(self, r: LagRow) -> dict[str, Any]:
        return {
            "group": r.group,
            "topic": r.topic,
            self.queue_key: r.queue,
            "committed_offset": r.committed_offset,
            "log_start_offset": r.log_start_offset,
            "log_end_offset": r.log_end_offset,
            "lag_messages": r.lag_messages,
            "expired_messages": r.expired_messages,
            "lag_bytes": r.lag_bytes,
            "oldest_unconsumed_timestamp": r.oldest_unconsumed_timestamp,
            "note": r.note,
        }

    def to_dict(self) -> dict[str, Any]:
        return {
            "layout": self.layout,
            "root": self.root,
            "offsets_from": self.offsets_from,
            "lag": [self.row_dict(r) for r in self.rows],
            "totals": self.totals(),
            "findings": [f.to_dict() for f in self.findings],
        }


def counts(committed: int, start: int, end: int) -> tuple[int, int, int]:
    """(lag in messages, of them gone from disk, the first offset still to read on disk) of a
    group at ``committed`` on a queue holding ``[start, end)``."""
    lag = max(0, end - committed)
    expired = max(0, min(start, end) - committed)
    return lag, expired, max(committed, start)


def lag_functions() -> dict[Layout, Callable[[str | Path], LagReport]]:
    """layout -> function(path) -> LagReport (imported here, not at the top: ``mqtool --help``
    does not load the layouts' modules).  Jafka and MetaQ keep consumer offsets in ZooKeeper,
    not on disk: they have no entry."""
    from mqtool.ops.lag import kafka as lag_kafka
    from mqtool.ops.lag import rocketmq as lag_rocketmq

    return {Layout.ROCKETMQ: lag_rocketmq.rocketmq_lag, Layout.KAFKA: lag_kafka.kafka_lag}


def store_lag(path: str | Path, layout: str) -> LagReport:
    return for_layout(lag_functions(), layout, "lag")(path)


__all__ = ["LagReport", "LagRow", "counts", "lag_functions", "store_lag"]
