"""The RocketMQ broker's start-up recovery, by broker version: which broker mqtool models, and
where that broker's recovery starts.

``DefaultMessageStore.load`` -> ``recover`` first recovers every ConsumeQueue
(``ConsumeQueue.recover``: from each queue's third-last file, unit by unit, to the first unit
whose offset is negative or whose size is not positive), takes the highest ``offset + size`` any
queue reached (``ConsumeQueueStore.getMaxPhyOffsetInConsumeQueue``, -1 with no unit), and then
recovers the CommitLog:

* after a clean shutdown (no ``abort`` file), ``CommitLog.recoverNormally``

  - RocketMQ 4.x up to 5.3.1 start at the third-last CommitLog file (the first one with fewer
    than three files);
  - 5.3.2 and later (apache/rocketmq commit 9a891f1d49, "multiple patches during long running
    tests for LMQ over RocksDB", #8915) start at the newest CommitLog file whose first offset is
    at or below that ConsumeQueue maximum (the first file when none is), and dispatch the records
    after the maximum during the scan;

* after a crash (``abort`` present), ``CommitLog.recoverAbnormally``, the same in every version
  modelled here: from the newest file whose first record's store time is at or before the
  checkpoint's ``getMinTimestamp`` (physic and logics time, minus 3 s); before it,
  ``IndexService.load`` destroys every IndexFile whose end timestamp is later than the
  checkpoint's ``indexMsgTimestamp``.

Either scan stops at the first record that fails (``checkMessageAndReturnSize`` with
``checkCRCOnRecover``): that is the valid end, and ``truncateDirtyFiles`` cuts what follows.

The version modelled is chosen, in this order, by ``--broker-version X.Y.Z``; by the broker.conf
given with ``--config`` (a version in ``rocketmqHome``, or keys that exist only from a version on:
``store.broker_config``); by the store's own marks of 5.x (files that only 5.x brokers write,
``store_marks``); else the newest model.  Marks and keys give a lowest version, so they choose the
newest model unless they name an exact version: the choice says where it came from, so an
operator running 4.x-5.3.1 on a store without marks sees that the newest rule was assumed.
"""

from __future__ import annotations

import dataclasses
import os
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from mqtool.errors import CorruptDataError, MqError
from mqtool.findings import Finding
from mqtool.findings.code_ids import RMQ_CL_NO_BLANK, RMQ_CL_VALID_END
from mqtool.formats.rocketmq import checkpoint as cpf
from mqtool.formats.rocketmq import consume_queue as cqf
from mqtool.formats.rocketmq.commitlog import MESSAGE_MAGICS, decode_message, peek_record
from mqtool.store import rocketmq as rmq
from mqtool.store.files import ReadOnlyFile, is_directory, read_small_file

#: The first version whose clean-shutdown recovery starts at the ConsumeQueue maximum (#8915).
CQ_MAX_RULE_SINCE = (5, 3, 2)

_VERSION = re.compile(r"^(\d+)\.(\d+)(?:\.(\d+))?$")


def parse_version(text: str) -> tuple[int, int, int]:
    """``X.Y.Z`` (or ``X.Y``) as a tuple; CorruptDataError naming the text otherwise."""
    m = _VERSION.match(text.strip())
    if m is None:
        raise CorruptDataError(expected="a RocketMQ version X.Y.Z (e.g. 4.9.8 or 5.3.3)", found=repr(text))
    return int(m.group(1)), int(m.group(2)), int(m.group(3) or 0)


def version_text(version: tuple[int, int, int]) -> str:
    return ".".join(str(part) for part in version)


@dataclass(frozen=True)
class VersionHint:
    """One piece of evidence of the broker's version: ``what`` (a file, a config key) shows
    ``version`` exactly (``exact``) or as the lowest possible one."""

    what: str
    version: tuple[int, int, int]
    exact: bool = False

    def text(self) -> str:
        return f"{self.what} ({version_text(self.version)}{'' if self.exact else '+'})"


@dataclass(frozen=True)
class BrokerModel:
    """The broker whose start-up recovery mqtool models.

    ``model``: ``"4.x-5.3.1"`` (``normal_start`` ``"third-last"``) or ``"5.3.2+"``
    (``"consume-queue-max"``); ``version``: the version modelled, exact when it is known, else the
    model's range; ``source``: where the choice came from; ``evidence``: the marks or keys seen."""

    model: str
    normal_start: str
    version: str
    source: str
    evidence: tuple[str, ...] = field(default_factory=tuple)

    @property
    def starts_at_cq_max(self) -> bool:
        return self.normal_start == "consume-queue-max"

    def to_dict(self) -> dict[str, object]:
        return {"broker_version": self.version, "broker_model": self.model, "source": self.source, "evidence": list(self.evidence)}

    def describe(self) -> str:
        """One line for tables: the version modelled and why."""
        more = f"; {', '.join(self.evidence)}" if self.evidence else ""
        return f"RocketMQ {self.version} ({self.source}{more})"

    def normal_start_index(self, bases: Sequence[int], cq_max_physic_offset: int) -> int:
        """The index in ``bases`` (the first offsets of the CommitLog files the broker loads, in
        order) where ``CommitLog.recoverNormally`` starts."""
        if not bases:
            return 0
        if not self.starts_at_cq_max:
            return max(0, len(bases) - 3)
        index = len(bases) - 1
        while index > 0 and bases[index] > cq_max_physic_offset:
            index -= 1
        return index


OLD_MODEL = "4.x-5.3.1"
NEW_MODEL = "5.3.2+"


def model_for(version: tuple[int, int, int], *, exact: bool, source: str, evidence: Iterable[str] = ()) -> BrokerModel:
    """The model of ``version`` (a lowest version, when not ``exact``, chooses the newest model
    it allows: the newest)."""
    new = version >= CQ_MAX_RULE_SINCE or not exact
    return BrokerModel(
        NEW_MODEL if new else OLD_MODEL,
        "consume-queue-max" if new else "third-last",
        version_text(version) if exact else NEW_MODEL,
        source,
        tuple(evidence),
    )


#: files only 5.x brokers write, with the version that began writing them (paths relative to
#: the store root; upstream ``TimerMessageStore``, ``BrokerPathConfigHelper``, ``ConfigStorage``)
STORE_MARKS: tuple[tuple[str, tuple[int, int, int]], ...] = (
    ("config/rdb", (5, 3, 2)),  # ConfigStorage (configManagerVersion=v2), new in 5.3.2
    ("config/transactionMetrics", (5, 2, 0)),
    ("timerwheel", (5, 0, 0)),
    ("timerlog", (5, 0, 0)),
    ("config/timercheck", (5, 0, 0)),
    ("config/timermetrics", (5, 0, 0)),
    ("config/topicQueueMapping.json", (5, 0, 0)),
    ("config/consumerOrderInfo.json", (5, 0, 0)),
    ("batchconsumequeue", (5, 0, 0)),
    ("consumequeue/CURRENT", (5, 2, 0)),  # a RocksDB ConsumeQueue (storeType=defaultRocksDB, RocksDBConsumeQueueStore)
)


def store_marks(root: Path) -> list[VersionHint]:
    """What in the store shows a 5.x broker wrote it: the files of ``STORE_MARKS`` that exist,
    an ``abort`` file holding a pid (5.0.0+) and a checkpoint whose 5.x fields are in use."""
    found = [VersionHint(name, since) for name, since in STORE_MARKS if (root / name).exists() or is_directory(root / name)]
    abort = root / "abort"
    if abort.is_file():
        try:
            if cpf.decode_abort(read_small_file(abort, 4096)) is not None:
                found.append(VersionHint("abort holds the broker pid", (5, 0, 0)))
        except MqError:
            pass
    checkpoint = root / "checkpoint"
    if checkpoint.is_file():
        try:
            cp = cpf.decode_checkpoint(read_small_file(checkpoint, 1 << 20))
            if cp.confirm_phy_offset:
                found.append(VersionHint("checkpoint confirmPhyOffset in use", (5, 1, 1)))
            elif cp.master_flushed_offset:
                found.append(VersionHint("checkpoint masterFlushedOffset in use", (5, 0, 0)))
        except MqError:
            pass
    return found


def resolve_broker(root: Path, version: str | None = None, config_hints: Sequence[VersionHint] = (), config_path: str | None = None) -> BrokerModel:
    """The broker to model for the store at ``root``: ``version`` (``--broker-version``), else the
    broker.conf's hints (``BrokerSettings.version_hints``), else the store's marks, else the
    newest.  ``version`` that is not X.Y.Z raises CorruptDataError."""
    if version is not None:
        return model_for(parse_version(version), exact=True, source="--broker-version")
    if config_hints:
        where = f"--config {config_path}" if config_path else "--config"
        exact = [h for h in config_hints if h.exact]
        if exact:
            return model_for(exact[0].version, exact=True, source=where, evidence=[exact[0].text()])
        best = max(config_hints, key=lambda h: h.version)
        return model_for(best.version, exact=False, source=f"{where}: keys of {version_text(best.version)}+", evidence=[h.text() for h in config_hints])
    marks = store_marks(root)
    if marks:
        best = max(marks, key=lambda h: h.version)
        return model_for(
            best.version,
            exact=False,
            source=f"store marks of {version_text(best.version)}+, newest model assumed",
            evidence=[h.text() for h in marks],
        )
    return model_for(CQ_MAX_RULE_SINCE, exact=False, source="no version given and no marks of 5.x in the store: the newest model")


def consume_queue_max_physic_offset(store: rmq.RocketMQStore) -> int:
    """``ConsumeQueueStore.getMaxPhyOffsetInConsumeQueue`` after ``ConsumeQueue.recover``: for
    each queue, from its third-last file, the ``offset + size`` of the last unit before the first
    unit whose offset is negative or size not positive (a file walked to its end leads to the
    next one); the highest of all queues, -1 when no queue has a unit."""
    highest = -1
    for topic, queue_id in store.queues():
        segments = store.cq_segments(topic, queue_id)
        for seg in segments[max(0, len(segments) - 3) :]:
            try:
                with ReadOnlyFile(seg.path) as f:
                    data = f.read_all()
            except MqError:
                break
            count, end = cqf.peek_valid_units(data)
            if end is not None:
                highest = max(highest, end)
            if not data or count * cqf.CQ_UNIT_SIZE != len(data):
                break
    return highest


def first_record_timestamp(seg: rmq.Segment) -> int | None:
    """STORETIMESTAMP of the file's first record when it is a message (``recoverAbnormally``'s
    ``isMappedFileMatchedRecover`` test); None when it is not."""
    try:
        with ReadOnlyFile(seg.path) as f:
            head = f.pread(0, 4096)
            total, magic = peek_record(head)  # fewer than 8 bytes: TruncatedDataError, None below
            if magic not in MESSAGE_MAGICS or total <= 0:
                return None
            if total > len(head):
                head = f.pread(0, total)
        return decode_message(head, 0, check_crc=False).store_timestamp
    except MqError:
        return None


def recovery_start_index(store: rmq.RocketMQStore, segments: Sequence[rmq.Segment], mode: str, broker: BrokerModel, cq_max: int) -> int:
    """The index in ``segments`` (the CommitLog files holding bytes) where the modelled broker's
    recovery starts: ``normal`` by ``BrokerModel.normal_start_index``; ``abnormal`` at the newest
    file whose first record's store time is at or before the checkpoint's ``getMinTimestamp``
    (the first file when none is, or when the checkpoint is unreadable: all zeros)."""
    if mode == "normal":
        return broker.normal_start_index([s.base for s in segments], cq_max)
    cp = None
    if store.checkpoint_path.exists():
        try:
            cp = cpf.decode_checkpoint(read_small_file(store.checkpoint_path, 1 << 20))
        except MqError:
            cp = None
    bound = cp.min_timestamp() if cp is not None else 0
    for i in range(len(segments) - 1, -1, -1):
        ts = first_record_timestamp(segments[i])
        if ts is not None and ts != 0 and ts <= bound:
            return i
    return 0


#: what validate says of damage in a CommitLog file, true only when the broker's recovery reads
#: that file (``store.model.rocketmq.no_blank_finding``, validate's RMQ-CL-VALID-END)
_CLAIMS = {
    RMQ_CL_VALID_END: "(a broken record: the broker's recovery and `mqtool recover` stop there)",
    RMQ_CL_NO_BLANK: ": the broker's recovery stops here and drops every later file",
}


def as_the_broker_sees_it(store: rmq.RocketMQStore, broker: BrokerModel, findings: Sequence[Finding]) -> tuple[dict[str, object], list[Finding]]:
    """The broker modelled, the recovery its next start runs (by ``abort``) and where it starts,
    as validate's ``facts["broker"]``; and ``findings`` with what they say of "the broker's
    recovery" made true for that broker: damage in a CommitLog file before the recovery's first
    file is not read by it (5.3.2+ after a clean shutdown usually starts at the last file), so
    the broker keeps those records, and so does ``mqtool recover``."""
    mode = "abnormal" if store.has_abort else "normal"
    segments = [s for s in store.commitlog if s.size > 0]
    start = recovery_start_index(store, segments, mode, broker, consume_queue_max_physic_offset(store)) if segments else 0
    first = segments[start] if segments else None
    facts: dict[str, object] = {
        **broker.to_dict(),
        "recovery": mode,
        "recovery_starts_at": {"file": f"commitlog/{first.name}", "commitlog_offset": first.base} if first is not None else None,
    }
    if first is None:
        return facts, list(findings)
    unread = {str(s.path) for s in segments[:start]}
    out = []
    for f in findings:
        claim = _CLAIMS.get(f.code)
        if claim is not None and f.path in unread and claim in f.message:
            if f.code == RMQ_CL_VALID_END:
                said = (
                    f"(a broken record before the file RocketMQ {broker.version}'s {mode} recovery starts at, {first.name}: "
                    "the broker does not read it and keeps these records, and so does `mqtool recover`)"
                )
            else:
                said = f": RocketMQ {broker.version}'s {mode} recovery starts at {first.name}, after this file, and does not read it"
            f = dataclasses.replace(f, message=f.message.replace(claim, said))
        out.append(f)
    return facts, out


#: bytes ``measure_read_speed`` reads at most (a small timed read of the store's own files)
SPEED_SAMPLE = 32 << 20
_CHUNK = 1 << 20


#: the speed measured per device (``st_dev``), once per process: every estimate of one run uses
#: the same figure, so two reports of one store in one process agree
_SPEEDS: dict[int, float | None] = {}


def read_speed(paths: Sequence[Path]) -> float | None:
    """The read speed of the device holding ``paths[0]``, measured once per process on ``paths``
    (``measure_read_speed``)."""
    if not paths:
        return None
    try:
        device = os.stat(paths[0]).st_dev
    except OSError:
        return None
    if device not in _SPEEDS:
        _SPEEDS[device] = measure_read_speed(paths)
    return _SPEEDS[device]


def device_speed(root: Path, read_bytes: int, seconds: float, paths: Sequence[Path]) -> float | None:
    """The read speed of the device holding ``root``: the first figure of the process; else the
    speed of the caller's own reading of the log (``read_bytes`` judged in ``seconds``: a recover
    plan's reading of the recovery window, decoding included, as the broker's recovery reads), kept
    for the rest of the process; else, when that read nothing, a timed read of ``paths``
    (``read_speed``)."""
    try:
        device = os.stat(root).st_dev
    except OSError:
        return None
    if _SPEEDS.get(device) is None and read_bytes > 0 and seconds > 0:
        _SPEEDS[device] = read_bytes / seconds
    if _SPEEDS.get(device) is not None:
        return _SPEEDS[device]
    return read_speed(paths)


def measure_read_speed(paths: Sequence[Path], budget: int = SPEED_SAMPLE) -> float | None:
    """Bytes per second of a sequential read of up to ``budget`` bytes of ``paths`` (in order, 1 MiB
    at a time), as the broker's recovery reads them; None when nothing could be read.  Pages the
    OS already caches read faster than the disk: the figure is an upper bound then."""
    import time

    done = 0
    started = time.perf_counter()
    for path in paths:
        try:
            with ReadOnlyFile(path) as f:
                pos = 0
                while done < budget and pos < f.size:
                    chunk = f.pread(pos, min(_CHUNK, budget - done))
                    if not chunk:
                        break
                    pos += len(chunk)
                    done += len(chunk)
        except MqError:
            continue
        if done >= budget:
            break
    elapsed = time.perf_counter() - started
    return done / elapsed if done and elapsed > 0 else None


__all__ = [
    "BrokerModel",
    "NEW_MODEL",
    "OLD_MODEL",
    "VersionHint",
    "as_the_broker_sees_it",
    "consume_queue_max_physic_offset",
    "device_speed",
    "first_record_timestamp",
    "measure_read_speed",
    "read_speed",
    "recovery_start_index",
    "model_for",
    "parse_version",
    "resolve_broker",
    "store_marks",
]
