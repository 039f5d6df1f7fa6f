"""The Kafka broker's load path, by broker version: which broker mqtool models, what a gap between
segments means for a topic, and what the broker's next start would read, cut and delete.

**Index files at load.**  ``LogLoader.loadSegmentFiles`` opens every segment and calls
``LogSegment.sanityCheck``:

* Kafka before 2.3.0 checked the offset index, the time index and the transaction index there
  (``OffsetIndex.sanityCheck``/``TimeIndex.sanityCheck``: a size that is not a multiple of the
  entry size, a last entry below the base offset, a last timestamp below the first); a
  ``CorruptIndexException`` made the loader recover that segment and rebuild its indexes, at every
  start, below the recovery point too;
* 2.3.0 and later (apache/kafka 2932d32afb, KAFKA-7283, "skip sanity check for segments below
  recovery point") check only the transaction index (``TransactionIndex.sanityCheck``: an aborted
  transaction whose last offset is below the segment's base offset).  An odd-size ``.index`` or
  ``.timeindex`` is kept: ``AbstractIndex`` maps it and counts ``length / entrySize`` whole
  entries (``createMappedBuffer`` rounds the position down), so the trailing bytes are never read;
  it is rebuilt only when ``LogSegment.recover`` runs on the segment (it ``reset``s every index),
  which after a clean shutdown it does not.  Only ``kafka-dump-log --index-sanity-check``
  (``DumpLogSegments``) still throws ``CorruptIndexException`` on it.

In every version a ``.log`` without its ``.index`` (``NoSuchFileException``) or with a failing
``.txnindex`` is recovered at load, wherever it is; a missing ``.timeindex`` is created empty.

**Recovery** (``LogLoader.recoverLog``): with ``.kafka_cleanshutdown`` in the log dir
(``LogManager.loadLogs``) nothing more is recovered ("normal"); without it ("abnormal") every
segment from the one holding the partition's recovery point (``recovery-point-offset-checkpoint``;
0 without an entry, or when the file does not read) goes through ``LogSegment.recover`` in order,
and the first one it truncates has every later segment deleted.  Then a log end offset below the
log start offset checkpoint deletes every segment (``deleteSegmentsIfLogStartGreaterThanLogEnd``).
Since 2.8.0 (be4c4528694, KAFKA-10471) the marker is deleted as loading starts, so a crash during
loading makes the next start abnormal.  Since 3.0.0 (a3930aad6c3, "Assume unclean shutdown for
metadata log") the KRaft metadata log ``__cluster_metadata`` is opened by ``KafkaMetadataLog`` with
``lastShutdownClean = false`` and recovery point 0: it is recovered from its first segment at
every start, marker or not.

**A gap between segments.**  ``LogLoader`` does not check that segments are contiguous, and
``LocalLog.read`` moves on to the next segment when a fetch offset is past the end of the one
holding it: a consumer at a missing offset is served the next one silently.  Compaction
(``cleanup.policy`` containing ``compact``, ``LogCleaner``) leaves such gaps; a ``delete``-policy
topic never does (``UnifiedLog.roll`` starts the next segment at the log end offset), so there a gap
is data lost.  A KRaft cluster keeps topic configs in its metadata log (``ConfigRecord`` of
resource type TOPIC, and the cluster default ``log.cleanup.policy`` of resource type BROKER with
an empty name), read here from the newest snapshot and the log; a ZooKeeper cluster keeps them in
ZooKeeper, so the policy is unknown.  ``__consumer_offsets`` and ``__transaction_state`` are
always compacted.

**The version modelled** is chosen by ``--broker-version X.Y.Z``, else the store's marks (files and
fields that only newer brokers write; a lowest version, so they choose the newest model), else the
newest.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from mqtool.errors import CorruptDataError, MqError
from mqtool.findings import Finding, Severity, code_ids
from mqtool.formats.kafka import checkpoint_file as cpf
from mqtool.formats.kafka import index as kidx
from mqtool.formats.kafka import internal_topics as it
from mqtool.formats.kafka import txn_index as ktxn
from mqtool.store import kafka as ks
from mqtool.store.files import ReadOnlyFile, read_small_file

#: what validate's KAFKA-INDEX-SIZE says the broker does with an odd-size .index or .timeindex
INDEX_SIZE_CONSEQUENCE = (
    "the broker (2.3.0+, LogSegment.sanityCheck) does not check it at load: AbstractIndex counts the whole entries and never "
    "reads the trailing bytes, and LogSegment.recover rebuilds the index when it recovers the segment (after an unclean shutdown, "
    "from the recovery point on); Kafka before 2.3.0 rebuilt it at load; only kafka-dump-log --index-sanity-check throws "
    "CorruptIndexException"
)


def no_index_consequence(offset_index_missing: bool) -> str:
    """What the broker does with a ``.log`` missing its ``.index`` (recovers the segment at load) or
    only its ``.timeindex`` (``LogSegment.sanityCheck`` creates it empty; rebuilt only when the
    segment is recovered), for validate's KAFKA-FILE-NO-INDEX."""
    if offset_index_missing:
        return "the broker recovers the segment at load to rebuild its indexes (LogLoader.loadSegmentFiles, in every version)"
    return (
        "the broker creates an empty .timeindex at load (LogSegment.sanityCheck) and rebuilds it only when it recovers the segment "
        "(after an unclean shutdown, from the recovery point on): until then a time lookup in this segment finds no entry"
    )


#: the first version that skips the offset and time index sanity checks at load (KAFKA-7283)
INDEX_CHECK_SKIPPED_SINCE = (2, 3, 0)
#: the first version that recovers the KRaft metadata log at every start (a3930aad6c3)
METADATA_LOG_RECOVERED_SINCE = (3, 0, 0)
OLD_MODEL = "0.11-2.2"
MID_MODEL = "2.3-2.8"
NEW_MODEL = "3.0+"

_VERSION = re.compile(r"^(\d+)\.(\d+)(?:\.(\d+))?$")


def parse_version(text: str) -> tuple[int, int, int]:
    """``X.Y.Z`` (or ``X.Y``) as a tuple; CorruptDataError naming the text otherwise."""
    m = _VERSION.match(text.strip())
    if m is None:
        raise CorruptDataError(expected="a Kafka version X.Y.Z (e.g. 2.2.1 or 3.7.0)", found=repr(text))
    return int(m.group(1)), int(m.group(2)), int(m.group(3) or 0)


def _text(version: tuple[int, int, int]) -> str:
    return ".".join(str(p) for p in version)


@dataclass(frozen=True)
class KafkaBroker:
    """The Kafka broker whose load mqtool models: ``model`` (``0.11-2.2``, ``2.3-2.8``, ``3.0+``),
    ``version`` (exact when known, else the model's range), ``source`` and ``evidence``."""

    model: str
    version: str
    source: str
    evidence: tuple[str, ...] = field(default_factory=tuple)

    @property
    def checks_indexes_at_load(self) -> bool:
        """Before 2.3.0: odd or inconsistent offset/time indexes are rebuilt at every start."""
        return self.model == OLD_MODEL

    @property
    def recovers_metadata_log(self) -> bool:
        """3.0.0+: ``__cluster_metadata`` is recovered from offset 0 at every start."""
        return self.model == NEW_MODEL

    def to_dict(self) -> dict[str, object]:
        return {"broker_version": self.version, "broker_model": self.model, "source": self.source, "evidence": list(self.evidence)}

    def describe(self) -> str:
        more = f"; {', '.join(self.evidence)}" if self.evidence else ""
        return f"Kafka {self.version} ({self.source}{more})"


def model_for(version: tuple[int, int, int], *, exact: bool, source: str, evidence: Iterable[str] = ()) -> KafkaBroker:
    """The model of ``version`` (a lowest version, not ``exact``, chooses the newest model)."""
    if not exact:
        return KafkaBroker(NEW_MODEL, NEW_MODEL, source, tuple(evidence))
    model = OLD_MODEL if version < INDEX_CHECK_SKIPPED_SINCE else MID_MODEL if version < METADATA_LOG_RECOVERED_SINCE else NEW_MODEL
    return KafkaBroker(model, _text(version), source, tuple(evidence))


def store_marks(store: ks.KafkaStore) -> list[tuple[str, tuple[int, int, int]]]:
    """What in the store shows a broker of at least some version wrote it."""
    found: list[tuple[str, tuple[int, int, int]]] = []
    meta = store.log_dir_file(cpf.META_PROPERTIES)
    if meta is not None:
        try:
            props = cpf.decode_meta_properties(read_small_file(meta, 1 << 20))
            if props.version == 1:
                found.append(("meta.properties version 1 (KRaft)", (2, 8, 0)))
            if props.directory_id is not None:
                found.append(("directory.id in meta.properties", (3, 7, 0)))
        except (MqError, UnicodeDecodeError, ValueError):
            pass
    clean = store.log_dir_file(cpf.CLEAN_SHUTDOWN)
    if clean is not None:
        try:
            if cpf.decode_clean_shutdown(read_small_file(clean, 1 << 20)).broker_epoch is not None:
                found.append((".kafka_cleanshutdown holds the broker epoch", (3, 7, 0)))
        except (MqError, UnicodeDecodeError, ValueError):
            pass
    if any(p.partition_metadata is not None for p in store.partitions):
        found.append(("partition.metadata", (2, 8, 0)))
    if any(p.suffix == "stray" for p in store.partitions):
        found.append(("a -stray partition dir", (3, 7, 0)))
    return found


def resolve_broker(store: ks.KafkaStore, version: str | None = None) -> KafkaBroker:
    """``version`` (``--broker-version``), else the store's marks, else the newest model."""
    if version is not None:
        return model_for(parse_version(version), exact=True, source="--broker-version")
    marks = store_marks(store)
    if marks:
        best = max(v for _what, v in marks)
        evidence = [f"{what} ({_text(v)}+)" for what, v in marks]
        return model_for(best, exact=False, source=f"store marks of {_text(best)}+, newest model assumed", evidence=evidence)
    return model_for(METADATA_LOG_RECOVERED_SINCE, exact=False, source="no version given and no marks in the store: the newest model")


# --- topic cleanup policies from the KRaft metadata log ---------------------------------------------

#: ConfigResource types of ``ConfigRecord`` (upstream ``ConfigResource.Type``)
_TOPIC, _BROKER = 2, 4
COMPACTED_INTERNAL = (ks.CONSUMER_OFFSETS, ks.TRANSACTION_STATE)


@dataclass
class TopicPolicies:
    """``cleanup.policy`` per topic as the KRaft metadata log states it (``source`` names where
    it was read; ``available`` is False without a readable metadata log)."""

    topics: dict[str, str] = field(default_factory=dict)
    cluster_default: str | None = None
    available: bool = False
    source: str = "no KRaft metadata log in this log dir: a ZooKeeper cluster keeps topic configs in ZooKeeper"

    def policy(self, topic: str | None) -> tuple[str | None, str]:
        """(policy or None when unknown, where it comes from)."""
        if topic in COMPACTED_INTERNAL:
            return "compact", f"{topic} is always compacted"
        if topic == ks.CLUSTER_METADATA:
            return "delete", "the metadata log is never compacted (snapshots replace its head)"
        if topic is not None and topic in self.topics:
            return self.topics[topic], f"the topic's cleanup.policy in {self.source}"
        if self.available and self.cluster_default is not None:
            return self.cluster_default, f"the cluster's log.cleanup.policy in {self.source}"
        if self.available:
            return None, f"{self.source} sets no cleanup.policy for the topic, so the broker's log.cleanup.policy applies, unknown here"
        return None, self.source


def _metadata_values(part: ks.KafkaPartition) -> Iterator[bytes]:
    """Record values of the newest KRaft snapshot of ``part``, then of its log from the snapshot's
    end offset on (``KafkaRaftClient`` replays them in this order)."""
    start = 0
    snapshots = sorted(part.kraft_snapshots, key=lambda p: p.name)
    if snapshots:
        newest = snapshots[-1]
        try:
            start = int(newest.name.split("-", 1)[0])
        except ValueError:
            start = 0
        yield from _values_of(newest, 0)
    for seg in part.log_segments():
        assert seg.log is not None
        yield from _values_of(seg.log, start)


def _values_of(path: Path, from_offset: int) -> Iterator[bytes]:
    try:
        with ReadOnlyFile(path) as f:
            for _pos, entry in ks.LogFileWalk(f, 0, mode="full", check_crc=True):
                for record in entry.records or ():
                    value = getattr(record, "value", None)
                    if value is not None and record.offset >= from_offset and not getattr(entry.header, "is_control_batch", False):
                        yield bytes(value)
    except MqError:
        return


def topic_policies(store: ks.KafkaStore) -> TopicPolicies:
    """The cleanup policies the KRaft metadata log of ``store``'s log dir states."""
    parts = [p for p in store.partitions if p.topic == ks.CLUSTER_METADATA and p.suffix is None]
    if not parts and store.log_dir is not None and store.kind != "log-dir":
        try:
            parts = [p for p in ks.open_kafka(store.log_dir).partitions if p.topic == ks.CLUSTER_METADATA and p.suffix is None]
        except MqError:
            parts = []
    if not parts:
        return TopicPolicies()
    out = TopicPolicies(available=True, source="the KRaft metadata log __cluster_metadata")
    names: dict[str, str] = {}
    for value in _metadata_values(parts[0]):
        try:
            record = it.decode_metadata_record(value)
            if record.name in ("ConfigRecord", "TopicRecord", "RemoveTopicRecord"):
                payload = it.decode_metadata_payload(record)
                if isinstance(payload, it.ConfigRecord):
                    if payload.name == "cleanup.policy" and payload.resource_type == _TOPIC:
                        if payload.value is None:
                            out.topics.pop(payload.resource_name, None)
                        else:
                            out.topics[payload.resource_name] = payload.value
                    elif payload.name == "log.cleanup.policy" and payload.resource_type == _BROKER and payload.resource_name == "":
                        out.cluster_default = payload.value
                elif isinstance(payload, it.TopicRecord):
                    names[payload.topic_id] = payload.name
                elif isinstance(payload, it.RemoveTopicRecord):
                    gone = names.pop(payload.topic_id, None)
                    if gone is not None:
                        out.topics.pop(gone, None)
        except MqError:
            continue
    return out


class LazyPolicies:
    """``topic_policies(store)``, read the first time a gap asks (a store without gaps between
    segments never reads its metadata log for it)."""

    def __init__(self, store: ks.KafkaStore) -> None:
        self.store = store
        self._policies: TopicPolicies | None = None

    def get(self) -> TopicPolicies:
        if self._policies is None:
            self._policies = topic_policies(self.store)
        return self._policies


def segment_gap_finding(topic: str | None, prev_path: str, prev_last: int, path: str, base: int, policies: LazyPolicies, prev_end: str | None = "eof") -> Finding:
    """The finding for offsets ``prev_last + 1 .. base - 1`` in no segment between ``prev_path``
    and ``path``: KAFKA-OFFSET-GAP (info) for a compacted topic, or after a segment whose valid data
    ends early (``prev_end`` other than ``eof``: its own finding names the damage the offsets went
    with); KAFKA-SEGMENT-MISSING for a ``delete`` topic (error) or one whose policy is unknown
    (warning)."""
    details: dict[str, object] = {"missing_from": prev_last + 1, "missing_to": base}
    span = f"offsets {prev_last + 1}..{base - 1} are in no segment (after {Path(prev_path).name})"
    if prev_end != "eof":
        return Finding(
            code_ids.KAFKA_OFFSET_GAP,
            path,
            None,
            f"{span}; {Path(prev_path).name} ends in {prev_end} data, not at its last batch: its finding names what was lost",
            details=details,
        )
    policy, source = policies.get().policy(topic)
    if policy is not None and "compact" in policy:
        return Finding(code_ids.KAFKA_OFFSET_GAP, path, None, f"{span}; the topic is compacted ({source}): compaction leaves such gaps", details=details)
    consequence = (
        "the broker loads the partition with the gap (LogLoader does not check it) and a fetch from a missing offset is served "
        f"from {base} on (LocalLog.read moves to the next segment): consumers skip them silently; mqtool cannot rebuild them"
    )
    if policy is None:
        return Finding(
            code_ids.KAFKA_SEGMENT_MISSING,
            path,
            None,
            f"{span}: a deleted segment, unless the topic is compacted; its cleanup.policy is unknown: {source}; if it is delete, {consequence}",
            severity=Severity.warning,
            details={**details, "cleanup_policy": None},
        )
    return Finding(
        code_ids.KAFKA_SEGMENT_MISSING,
        path,
        None,
        f"{span}: the topic's cleanup.policy is {policy} ({source}), which leaves no gaps (unless the topic was compacted before): a segment is lost; {consequence}",
        details={**details, "cleanup_policy": policy},
    )


# --- the restart preview ----------------------------------------------------------------------------


@dataclass(frozen=True)
class SegmentRead:
    """What ``LogSegment.recover`` reads of one segment: its ``size``, where valid batches end
    (``valid_bytes``) and the records of its valid batches (``records``)."""

    size: int
    valid_bytes: int
    records: int


#: (partition, segment) -> what recovery reads of it (None: the segment cannot be read)
SegmentReader = Callable[[ks.KafkaPartition, ks.KafkaSegment], SegmentRead | None]


def _txnindex_fails(seg: ks.KafkaSegment) -> bool:
    """``TransactionIndex.sanityCheck``: an aborted transaction whose last offset is below the
    segment's base offset (or entries that do not read)."""
    if seg.txnindex is None or seg.txnindex_size == 0:
        return False
    try:
        with ReadOnlyFile(seg.txnindex) as f:
            walk = ks.IndexFileWalk(f, "txnindex", seg.base_offset)
            for _pos, entry in walk:
                if isinstance(entry, ktxn.AbortedTxn) and entry.last_offset < seg.base_offset:
                    return True
            return walk.error is not None
    except MqError:
        return True


def _index_fails(seg: ks.KafkaSegment) -> bool:
    """Before 2.3.0: ``OffsetIndex``/``TimeIndex.sanityCheck`` at load (the sizes: a size that is
    not a multiple of the entry size)."""
    return seg.index_size % kidx.OFFSET_ENTRY_SIZE != 0 or seg.timeindex_size % kidx.TIME_ENTRY_SIZE != 0


def _relative(store: ks.KafkaStore, path: Path) -> str:
    base = store.log_dir if store.log_dir is not None else store.root.parent if store.kind == "segment" else store.root
    try:
        return str(path.relative_to(base))
    except ValueError:
        return str(path)


def recovery_points(store: ks.KafkaStore) -> dict[tuple[str, int], int]:
    """``recovery-point-offset-checkpoint`` (empty when absent or unreadable: the broker then
    recovers from 0)."""
    path = store.log_dir_file(cpf.RECOVERY_POINT_OFFSET_CHECKPOINT)
    if path is None:
        return {}
    try:
        return cpf.decode_offset_checkpoint(read_small_file(path, 256 << 20)).as_dict()
    except (MqError, UnicodeDecodeError, ValueError):
        return {}


def restart_preview(
    store: ks.KafkaStore, broker: KafkaBroker, read: SegmentReader, speed: float | None, count: Callable[[Path, int], tuple[int, bool]] | None = None
) -> dict[str, object]:
    """What ``broker``'s next start does to ``store``: per partition where its recovery starts,
    the ``.log`` bytes ``LogSegment.recover`` reads (``scan_bytes``: each recovery of a segment
    reads it to its valid end), what it cuts and deletes, and how long the reading takes at
    ``speed`` bytes per second (measured on the caller's own reading of the log).  A log end below
    the log start offset checkpoint (every segment deleted) is not previewed: ``recover``'s plan
    states it.  ``count(log, position)``: the records of the valid batches from ``position`` on
    (``kafka_recovery.count_valid_from``, or the caller's, which counted them already)."""
    from mqtool.store.model.kafka_recovery import count_valid_from

    valid_from = count or count_valid_from

    clean = store.log_dir_file(cpf.CLEAN_SHUTDOWN) is not None
    rps = recovery_points(store)
    starts: list[dict[str, object]] = []
    recovered: list[str] = []
    cut: list[dict[str, object]] = []
    deleted: list[str] = []
    totals = {"scan": 0, "bytes": 0, "records": 0}
    incomplete = False

    def recover(seg: ks.KafkaSegment, got: SegmentRead, already_cut: bool) -> bool:
        """One ``LogSegment.recover`` of ``seg``: reads it to its valid end; True when it cuts."""
        nonlocal incomplete
        assert seg.log is not None
        totals["scan"] += got.valid_bytes
        recovered.append(_relative(store, seg.log))
        if got.valid_bytes >= got.size or already_cut:
            return False
        n, complete = valid_from(seg.log, got.valid_bytes)
        incomplete |= not complete
        totals["records"] += n
        totals["bytes"] += got.size - got.valid_bytes
        cut.append({"file": _relative(store, seg.log), "position": got.valid_bytes, "length": got.size - got.valid_bytes})
        return True

    for part in store.partitions:
        if part.suffix == "delete" or store.kind == "segment":
            continue  # LogLoader does not recover a partition being deleted
        segments = part.log_segments()
        key = part.key
        always = part.topic == ks.CLUSTER_METADATA and broker.recovers_metadata_log
        rp = 0 if always else rps.get(key, 0) if key is not None else 0
        abnormal = always or not clean
        first: tuple[ks.KafkaSegment, str] | None = None
        cut_at_load: set[int] = set()
        # LogLoader.loadSegmentFiles: segments recovered wherever they are (nothing after them deleted)
        for seg in segments:
            why = None
            if seg.index is None:
                why = "no .index"
            elif _txnindex_fails(seg):
                why = "a .txnindex that fails its sanity check"
            elif broker.checks_indexes_at_load and _index_fails(seg):
                why = "an index that fails its sanity check (before 2.3.0)"
            got = read(part, seg) if why is not None else None
            if got is None:
                continue
            if recover(seg, got, False):
                cut_at_load.add(seg.base_offset)
            if first is None:
                first = (seg, f"{why}: LogLoader.loadSegmentFiles recovers the segment at load")
        # LogLoader.recoverLog: from the segment holding the recovery point, until one is cut
        if abnormal and segments:
            index = max([i for i, seg in enumerate(segments) if seg.base_offset <= rp], default=0)
            for i in range(index, len(segments)):
                seg = segments[i]
                got = read(part, seg)
                if got is None:
                    break
                if first is None or seg.base_offset <= first[0].base_offset:
                    rule = (
                        "the metadata log is recovered from offset 0 at every start (KafkaMetadataLog, 3.0.0+)"
                        if always
                        else "the segment holding the recovery point (LogLoader.recoverLog)"
                    )
                    first = (seg, rule)
                if seg.base_offset in cut_at_load:
                    totals["scan"] += got.valid_bytes  # read again, already cut at load
                    recovered.append(_relative(store, seg.log))  # type: ignore[arg-type]
                    continue
                if recover(seg, got, False):
                    for later in segments[i + 1 :]:  # every later segment is deleted
                        assert later.log is not None
                        more = read(part, later)
                        totals["records"] += more.records if more is not None else 0
                        totals["bytes"] += later.log_size
                        deleted.append(_relative(store, later.log))
                    break
        starts.append(
            {
                "directory": part.name,
                "recovery_point": rps.get(key) if key is not None and not always else (0 if always else None),
                "file": _relative(store, first[0].log) if first is not None and first[0].log is not None else None,
                "base_offset": first[0].base_offset if first is not None else None,
                "rule": first[1] if first is not None else "clean shutdown: the broker recovers nothing",
            }
        )
    scan = totals["scan"]
    seconds: float | None
    if scan == 0:
        seconds = 0.0
    else:
        seconds = round(scan / speed, 3) if speed else None
    return {
        **broker.to_dict(),
        "recovery": "normal" if clean else "abnormal",
        "starts_at": starts,
        "scan_bytes": scan,
        "drops": {"records": totals["records"], "records_complete": not incomplete, "bytes": totals["bytes"], "cut": cut, "files_deleted": deleted},
        "rebuilds": {"segments_recovered": recovered},
        "read_bytes_per_second": int(speed) if speed else None,
        "estimated_seconds": seconds,
    }


class Stopwatch:
    """Bytes read and seconds spent by a caller's own reading of the log: the read speed the
    restart estimate uses (pages the OS already caches read faster: an upper bound then)."""

    def __init__(self) -> None:
        self.bytes = 0
        self.seconds = 0.0

    def time(self, size: int, started: float) -> None:
        self.bytes += size
        self.seconds += time.perf_counter() - started

    @property
    def speed(self) -> float | None:
        return self.bytes / self.seconds if self.bytes and self.seconds > 0 else None

    def device_speed(self, root: Path) -> float | None:
        """The speed of the device holding ``root`` as first measured in this process (every
        estimate of one run uses one figure, so two plans of one store agree), else ``speed``."""
        try:
            device = os.stat(root).st_dev
        except OSError:
            return self.speed
        if _SPEEDS.get(device) is None:
            _SPEEDS[device] = self.speed
        return _SPEEDS[device]


#: the read speed measured per device (``st_dev``), first figure of the process
_SPEEDS: dict[int, float | None] = {}


__all__ = [
    "INDEX_SIZE_CONSEQUENCE",
    "no_index_consequence",
    "KafkaBroker",
    "LazyPolicies",
    "SegmentRead",
    "Stopwatch",
    "TopicPolicies",
    "model_for",
    "parse_version",
    "recovery_points",
    "resolve_broker",
    "restart_preview",
    "segment_gap_finding",
    "store_marks",
    "topic_policies",
]
