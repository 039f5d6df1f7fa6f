"""Metrics for monitoring: a command's JSON document as Prometheus metrics.

``--format openmetrics`` prints them in the OpenMetrics text format; ``--metrics-file PATH``
writes them in the Prometheus text format node_exporter's textfile collector reads, atomically
(``prometheus_client.write_to_textfile``: a temporary file renamed over PATH), beside the
command's usual output.  Both are built by ``prometheus_client`` from the same document ``--json``
prints, so their counts are ``--json``'s.

Every command's metrics carry ``command`` and ``store`` labels, with
``mqtool_last_run_timestamp_seconds`` and ``mqtool_exit_status``.  Per command:

* validate: ``mqtool_findings{code,severity,family}``, ``mqtool_bytes_checked``,
  ``mqtool_records_checked`` and ``mqtool_files_checked``;
* stats: ``mqtool_topic_bytes{topic}``, ``mqtool_topic_messages{topic}``, ``mqtool_store_bytes``
  and ``mqtool_hours_to_disk_threshold`` (absent when the store does not grow);
* clean: ``mqtool_clean_files{kind}`` and ``mqtool_clean_bytes`` the plan (or the run) deletes,
  and ``mqtool_clean_groups_losing_data`` (``--allow-unconsumed``);
* lag: ``mqtool_lag_messages``, ``mqtool_lag_bytes``, ``mqtool_lag_expired_messages``,
  ``mqtool_committed_offset``, ``mqtool_log_end_offset`` and
  ``mqtool_oldest_unconsumed_timestamp_seconds``, each by ``group``, ``topic`` and ``queue``.
"""

import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from prometheus_client import CollectorRegistry

#: Names of the metrics (the documentation test reads this).
METRICS = (
    "mqtool_last_run_timestamp_seconds",
    "mqtool_exit_status",
    "mqtool_findings",
    "mqtool_bytes_checked",
    "mqtool_records_checked",
    "mqtool_files_checked",
    "mqtool_topic_bytes",
    "mqtool_topic_messages",
    "mqtool_store_bytes",
    "mqtool_hours_to_disk_threshold",
    "mqtool_clean_files",
    "mqtool_clean_bytes",
    "mqtool_clean_groups_losing_data",
    "mqtool_lag_messages",
    "mqtool_lag_bytes",
    "mqtool_lag_expired_messages",
    "mqtool_committed_offset",
    "mqtool_log_end_offset",
    "mqtool_oldest_unconsumed_timestamp_seconds",
)


class _Builder:
    def __init__(self, command: str, store: str) -> None:
        from prometheus_client import CollectorRegistry

        self.registry = CollectorRegistry()
        self.base = {"command": command, "store": store}
        self.gauges: dict[str, Any] = {}

    def gauge(self, name: str, doc: str, value: float, **labels: object) -> None:
        from prometheus_client import Gauge

        metric = self.gauges.get(name)
        if metric is None:
            metric = self.gauges[name] = Gauge(name, doc, (*self.base, *labels), registry=self.registry)
        metric.labels(**self.base, **{k: str(v) for k, v in labels.items()}).set(value)


def build(command: str, doc: dict[str, Any], exit_status: int, *, store: str | None = None) -> "CollectorRegistry":
    """The metrics of ``command``'s JSON document ``doc`` and its exit status."""
    b = _Builder(command, str(store if store is not None else doc.get("root") or doc.get("path") or ""))
    b.gauge("mqtool_last_run_timestamp_seconds", "When this run of mqtool ended.", time.time())
    b.gauge("mqtool_exit_status", "The exit status of this run (see mqtool --help).", exit_status)
    {"validate": _validate, "stats": _stats, "clean": _clean, "lag": _lag}[command](b, doc)
    return b.registry


def _validate(b: _Builder, doc: dict[str, Any]) -> None:
    counts = Counter((f["code"], f["severity"], f["family"]) for f in doc.get("findings", []))
    for (code, severity, family), n in sorted(counts.items()):
        b.gauge("mqtool_findings", "Findings of validate, by code and severity.", n, code=code, severity=severity, family=family)
    if not counts:  # a clean run still says so
        b.gauge("mqtool_findings", "Findings of validate, by code and severity.", 0, code="", severity="error", family="")
    b.gauge("mqtool_bytes_checked", "Bytes of data files validate read.", doc.get("bytes_checked") or 0)
    files = doc.get("files", [])
    b.gauge("mqtool_files_checked", "Files validate read.", len(files))
    records = doc.get("facts", {}).get("records")
    if records is None:
        records = sum(f.get("records") or 0 for f in files)
    b.gauge("mqtool_records_checked", "Records (messages, batches' records) validate read.", records)


def _stats(b: _Builder, doc: dict[str, Any]) -> None:
    for t in doc.get("topics", []):
        b.gauge("mqtool_topic_bytes", "Bytes of a topic's messages.", t["bytes"], topic=t["topic"])
        b.gauge("mqtool_topic_messages", "Messages of a topic.", t["messages"], topic=t["topic"])
    disk = doc.get("disk") or {}
    if disk.get("store_bytes") is not None:
        b.gauge("mqtool_store_bytes", "Bytes of the store's data.", disk["store_bytes"])
    if disk.get("hours_to_threshold") is not None:
        b.gauge("mqtool_hours_to_disk_threshold", "Hours until the disk reaches the clean threshold at the recent write rate.", disk["hours_to_threshold"])


def _clean(b: _Builder, doc: dict[str, Any]) -> None:
    plan = doc.get("plan", doc)  # --apply wraps the plan
    kinds = Counter(str(s.get("details", {}).get("kind", "other")) for s in plan.get("steps", []) if s.get("action") == "remove")
    for kind, n in sorted(kinds.items()):
        b.gauge("mqtool_clean_files", "Files clean deletes (the plan, or this run with --apply), by kind.", n, kind=kind)
    if not kinds:
        b.gauge("mqtool_clean_files", "Files clean deletes (the plan, or this run with --apply), by kind.", 0, kind="")
    b.gauge("mqtool_clean_bytes", "Bytes clean frees.", plan.get("bytes_cut") or 0)
    facts = plan.get("facts", {})
    losing = set(facts.get("unconsumed_deleted_for") or [])
    for p in facts.get("partitions", []) if isinstance(facts.get("partitions"), list) else []:
        losing.update(p.get("unconsumed_deleted_for") or [])
    b.gauge("mqtool_clean_groups_losing_data", "Consumer groups whose unconsumed data clean deletes (--allow-unconsumed).", len(losing))


def _lag(b: _Builder, doc: dict[str, Any]) -> None:
    queue_key = "partition" if doc.get("layout") == "kafka" else "queue_id"
    for r in doc.get("lag", []):
        labels = {"group": r["group"], "topic": r["topic"], "queue": r[queue_key]}
        b.gauge("mqtool_committed_offset", "A group's committed offset.", r["committed_offset"], **labels)
        b.gauge("mqtool_lag_expired_messages", "Messages gone from disk before the group read them.", r["expired_messages"], **labels)
        if r["log_end_offset"] is not None:
            b.gauge("mqtool_log_end_offset", "The queue's (partition's) next offset on disk.", r["log_end_offset"], **labels)
        if r["lag_messages"] is not None:
            b.gauge("mqtool_lag_messages", "Messages the group has not consumed.", r["lag_messages"], **labels)
        if r["lag_bytes"] is not None:
            b.gauge("mqtool_lag_bytes", "Bytes of the messages the group has not consumed.", r["lag_bytes"], **labels)
        if r["oldest_unconsumed_timestamp"] is not None:
            b.gauge("mqtool_oldest_unconsumed_timestamp_seconds", "Store time of the oldest unconsumed message.", r["oldest_unconsumed_timestamp"] / 1000, **labels)


def openmetrics(registry: "CollectorRegistry") -> str:
    """The OpenMetrics text exposition of ``registry`` (ends in ``# EOF``)."""
    from prometheus_client.openmetrics.exposition import generate_latest

    # the OpenMetrics exposition module has no annotations: its function typed by what it returns (UTF-8 bytes)
    exposition: Callable[[CollectorRegistry], bytes] = generate_latest
    return exposition(registry).decode("utf-8")


def write_file(path: Path, registry: "CollectorRegistry") -> None:
    """``registry`` in the Prometheus text format at ``path``, written atomically (a temporary
    file beside it, renamed over it): node_exporter's textfile collector never reads half a file."""
    from prometheus_client import write_to_textfile

    write_to_textfile(str(path), registry)


__all__ = ["METRICS", "build", "openmetrics", "write_file"]
